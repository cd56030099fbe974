/* The per-process GPU timeline (see model.h): growable record arrays, the
 * string intern table, the ordering the analyses rely on, and the naming of
 * kernel classes and collectives shared by every loader. */
#include "reporter/load/model.h"
#include "reporter/base/array.h"
#include "reporter/base/intern.h"

#include <stdlib.h>
#include <string.h>

/* Strings are packed into blocks that double from the first size up to
 * the most (a longer string gets a block of its own): a process with few
 * names, of which a job may have thousands, holds little. */
#define RSR_STR_BLOCK_FIRST 1024
#define RSR_STR_BLOCK (64 * 1024)

size_t rsr_model_records_bytes(const struct rsr_model *m)
{
    const struct rsr_strtab *t = &m->strings;
    size_t b = m->cap_ops * sizeof *m->ops + m->cap_launches * sizeof *m->launches +
               m->cap_colls * sizeof *m->colls + m->cap_io * sizeof *m->io + m->cap_syncs * sizeof *m->syncs +
               m->cap_hwaits * sizeof *m->hwaits +
               m->cap_clocks * sizeof *m->clocks + t->cap * sizeof *t->strs + rsr_table_bytes(&t->table) +
               t->capblocks * sizeof *t->blocks + t->block_bytes + m->cap_geoms * sizeof *m->geoms +
               m->cap_functions * sizeof *m->functions + m->n_devices * sizeof *m->devices;
    return b;
}

void rsr_model_init(struct rsr_model *m)
{
    memset(m, 0, sizeof *m);
    m->rank = m->local_rank = m->world_size = m->parent_rank = -1;
    m->role = RSR_ROLE_OTHER;
}

static void strtab_free(struct rsr_strtab *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        free(t->blocks[i]);
    free(t->blocks);
    free(t->strs);
    rsr_table_free(&t->table);
}

void rsr_model_records_free(struct rsr_model *m)
{
    free(m->ops);
    free(m->launches);
    free(m->colls);
    free(m->io);
    free(m->syncs);
    free(m->hwaits);
    free(m->ranges);
    free(m->clocks);
    free(m->geoms);
    free(m->functions);
    free(m->devices);
    strtab_free(&m->strings);
    rsr_model_init(m);
}

/* The array arr (holding n of *cap elements of size elem) with room for one
 * more: the same pointer, or a reallocation twice the size, so appending n
 * records costs O(n) in all. NULL when out of memory (arr is untouched). */
/* String id's hash, for the table's moves. */
static uint64_t str_hash_of(const void *ctx, size_t id)
{
    return ((const struct rsr_strtab *)ctx)->strs[id].hash;
}

/* Copies len bytes and a NUL into block storage; NULL when out of memory. */
static char *strtab_store(struct rsr_strtab *t, const char *s, size_t len)
{
    if (t->nblocks == 0 || t->block_used + len + 1 > t->block_size) {
        size_t size = t->nblocks ? 2 * t->block_size : RSR_STR_BLOCK_FIRST;
        if (size > RSR_STR_BLOCK)
            size = RSR_STR_BLOCK;
        if (size < len + 1)
            size = len + 1;
        if (RSR_GROW(t->blocks, t->capblocks, t->nblocks + 1, 256) != 0)
            return NULL;
        char *b = malloc(size);
        if (!b)
            return NULL;
        t->blocks[t->nblocks++] = b;
        t->block_size = size;
        t->block_bytes += size;
        t->block_used = 0;
    }
    char *dst = t->blocks[t->nblocks - 1] + t->block_used;
    memcpy(dst, s, len);
    dst[len] = '\0';
    t->block_used += len + 1;
    return dst;
}

int rsr_model_intern(struct rsr_model *m, const char *s, size_t len, uint32_t *id)
{
    struct rsr_strtab *t = &m->strings;
    if (len == 0) {
        *id = 0;
        return 0;
    }
    if (len > UINT32_MAX)
        return -1;
    if (t->n == 0) {
        /* id 0 is "", so that a zeroed record names nothing. */
        if (RSR_GROW(t->strs, t->cap, 1, 256) != 0)
            return -1;
        t->strs[0] = (struct rsr_str){ "", 0, 0 };
        t->n = 1;
    }
    uint32_t h = (uint32_t)rsr_hash_bytes(s, len, 0);
    struct rsr_probe p = rsr_table_probe(&t->table, h);
    for (long k; (k = rsr_table_next(&t->table, &p)) >= 0;) {
        const struct rsr_str *e = &t->strs[k];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0) {
            *id = (uint32_t)k;
            return 0;
        }
    }
    if (t->n >= UINT32_MAX)
        return -1;
    if (RSR_GROW(t->strs, t->cap, t->n + 1, 256) != 0)
        return -1;
    const char *copy = strtab_store(t, s, len);
    if (!copy)
        return -1;
    t->strs[t->n] = (struct rsr_str){ copy, (uint32_t)len, h };
    if (rsr_table_put(&t->table, &p, t->n, 1024, str_hash_of, t) != 0)
        return -1;
    *id = (uint32_t)t->n++;
    return 0;
}

const char *rsr_model_str(const struct rsr_model *m, uint32_t id)
{
    if (id == 0 || id >= m->strings.n)
        return "";
    return m->strings.strs[id].s;
}

struct rsr_gpu_op *rsr_model_add_op(struct rsr_model *m)
{
    if (RSR_GROW(m->ops, m->cap_ops, m->n_ops + 1, 256) != 0)
        return NULL;
    struct rsr_gpu_op *op = &m->ops[m->n_ops++];
    memset(op, 0, sizeof *op);
    op->coll = -1;
    return op;
}

struct rsr_launch *rsr_model_add_launch(struct rsr_model *m)
{
    if (RSR_GROW(m->launches, m->cap_launches, m->n_launches + 1, 256) != 0)
        return NULL;
    struct rsr_launch *l = &m->launches[m->n_launches++];
    memset(l, 0, sizeof *l);
    return l;
}

struct rsr_coll *rsr_model_add_coll(struct rsr_model *m)
{
    if (RSR_GROW(m->colls, m->cap_colls, m->n_colls + 1, 256) != 0)
        return NULL;
    struct rsr_coll *c = &m->colls[m->n_colls++];
    memset(c, 0, sizeof *c);
    c->group_size = c->rank_in_group = -1;
    c->peer = -1;
    return c;
}

struct rsr_io *rsr_model_add_io(struct rsr_model *m)
{
    if (RSR_GROW(m->io, m->cap_io, m->n_io + 1, 256) != 0)
        return NULL;
    struct rsr_io *e = &m->io[m->n_io++];
    memset(e, 0, sizeof *e);
    return e;
}

struct rsr_sync *rsr_model_add_sync(struct rsr_model *m)
{
    if (RSR_GROW(m->syncs, m->cap_syncs, m->n_syncs + 1, 256) != 0)
        return NULL;
    struct rsr_sync *e = &m->syncs[m->n_syncs++];
    memset(e, 0, sizeof *e);
    return e;
}

struct rsr_hwait *rsr_model_add_hwait(struct rsr_model *m)
{
    if (RSR_GROW(m->hwaits, m->cap_hwaits, m->n_hwaits + 1, 256) != 0)
        return NULL;
    struct rsr_hwait *e = &m->hwaits[m->n_hwaits++];
    memset(e, 0, sizeof *e);
    return e;
}

struct rsr_range *rsr_model_add_range(struct rsr_model *m)
{
    if (RSR_GROW(m->ranges, m->cap_ranges, m->n_ranges + 1, 256) != 0)
        return NULL;
    struct rsr_range *e = &m->ranges[m->n_ranges++];
    memset(e, 0, sizeof *e);
    return e;
}

struct rsr_clock *rsr_model_add_clock(struct rsr_model *m)
{
    if (RSR_GROW(m->clocks, m->cap_clocks, m->n_clocks + 1, 256) != 0)
        return NULL;
    struct rsr_clock *e = &m->clocks[m->n_clocks++];
    memset(e, 0, sizeof *e);
    return e;
}

void rsr_model_records_shift(struct rsr_model *m, int64_t d)
{
    for (size_t i = 0; i < m->n_ops; i++) {
        m->ops[i].start_ns += d;
        m->ops[i].end_ns += d;
    }
    for (size_t i = 0; i < m->n_launches; i++) {
        m->launches[i].start_ns += d;
        m->launches[i].end_ns += d;
    }
    for (size_t i = 0; i < m->n_colls; i++) {
        struct rsr_coll *c = &m->colls[i];
        if (c->launch_ns)
            c->launch_ns += d, c->call_end_ns += d;
        if (c->start_ns)
            c->start_ns += d, c->end_ns += d;
    }
    for (size_t i = 0; i < m->n_io; i++) {
        m->io[i].start_ns += d;
        m->io[i].end_ns += d;
    }
    for (size_t i = 0; i < m->n_syncs; i++) {
        m->syncs[i].start_ns += d;
        m->syncs[i].end_ns += d;
    }
    for (size_t i = 0; i < m->n_hwaits; i++) {
        m->hwaits[i].start_ns += d;
        m->hwaits[i].end_ns += d;
    }
    for (size_t i = 0; i < m->n_ranges; i++) {
        m->ranges[i].start_ns += d;
        m->ranges[i].end_ns += d;
    }
    if (m->wall_start_ns || m->wall_end_ns) {
        m->wall_start_ns += d;
        m->wall_end_ns += d;
    }
    if (m->fatal_ns)
        m->fatal_ns += d;
    m->clock_offset_ns += d;
}

static int cmp_io_start(const void *pa, const void *pb)
{
    const struct rsr_io *a = pa, *b = pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

static int cmp_sync_start(const void *pa, const void *pb)
{
    const struct rsr_sync *a = pa, *b = pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

static int cmp_hwait_start(const void *pa, const void *pb)
{
    const struct rsr_hwait *a = pa, *b = pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

/* Ranges by start, an enclosing range before what it encloses. */
static int cmp_range_start(const void *pa, const void *pb)
{
    const struct rsr_range *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
    return (a->depth > b->depth) - (a->depth < b->depth);
}

/* Colls that came without times or communicator ids (Kineto) get them:
 * times from the op that ran them, the id from the comm string, and seq
 * by order of start per communicator. */
static void finish_colls(struct rsr_model *m)
{
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        if (op->coll < 0 || (size_t)op->coll >= m->n_colls)
            continue;
        struct rsr_coll *c = &m->colls[op->coll];
        if (!c->start_ns && !c->end_ns) {
            c->start_ns = op->start_ns;
            c->end_ns = op->end_ns;
        }
    }
    int need_seq = 0;
    for (size_t i = 0; i < m->n_colls; i++) {
        struct rsr_coll *c = &m->colls[i];
        if (c->comm_id)
            continue;
        const char *s = rsr_model_str(m, c->comm);
        uint64_t h = 1469598103934665603ull;
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        h ^= (uint64_t)c->group_size * 0x9e3779b97f4a7c15ull;
        c->comm_id = h ? h : 1;
        c->seq = UINT32_MAX;
        need_seq = 1;
    }
    if (!need_seq)
        return;
    /* seq: in op start order (ops are sorted), counted per comm_id */
    struct { uint64_t id; uint32_t next; } *cnt = NULL;
    size_t ncnt = 0, capcnt = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        if (op->coll < 0 || (size_t)op->coll >= m->n_colls)
            continue;
        struct rsr_coll *c = &m->colls[op->coll];
        if (c->seq != UINT32_MAX)
            continue;
        size_t k = 0;
        while (k < ncnt && cnt[k].id != c->comm_id)
            k++;
        if (k == ncnt) {
            if (RSR_GROW(cnt, capcnt, ncnt + 1, 16) != 0)
                break;
            cnt[ncnt].id = c->comm_id;
            cnt[ncnt++].next = 0;
        }
        c->seq = cnt[k].next++;
    }
    free(cnt);
    for (size_t i = 0; i < m->n_colls; i++)
        if (m->colls[i].seq == UINT32_MAX)
            m->colls[i].seq = 0;
}

/* Start order; ties by end, then stream, so the order does not depend on
 * the order records arrived in. */
static int cmp_op_start(const void *pa, const void *pb)
{
    const struct rsr_gpu_op *a = pa, *b = pb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns)
        return a->end_ns < b->end_ns ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static int cmp_launch_corr(const void *pa, const void *pb)
{
    const struct rsr_launch *a = pa, *b = pb;
    if (a->correlation != b->correlation)
        return a->correlation < b->correlation ? -1 : 1;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

/* qsort, after a look whether the records are in order already: trace
 * files and Kineto traces mostly come in order, and sorting was most of the
 * time a report took on them. */
static void sort_records(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const char *p = base;
    size_t i = 1;
    while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0)
        i++;
    if (i < n)
        qsort(base, n, size, cmp);
}

void rsr_model_sort(struct rsr_model *m)
{
    sort_records(m->ops, m->n_ops, sizeof *m->ops, cmp_op_start);
    sort_records(m->launches, m->n_launches, sizeof *m->launches, cmp_launch_corr);
    sort_records(m->io, m->n_io, sizeof *m->io, cmp_io_start);
    sort_records(m->syncs, m->n_syncs, sizeof *m->syncs, cmp_sync_start);
    sort_records(m->hwaits, m->n_hwaits, sizeof *m->hwaits, cmp_hwait_start);
    sort_records(m->ranges, m->n_ranges, sizeof *m->ranges, cmp_range_start);
}

int rsr_model_finish(struct rsr_model *m)
{
    rsr_model_sort(m);
    finish_colls(m);
    return 0;
}

const struct rsr_launch *rsr_model_find_launch(const struct rsr_model *m, uint64_t correlation)
{
    /* Correlations are often dense (ringside files number their launches
     * 1, 2, 3...): then the launch is where its number says. */
    if (m->n_launches && correlation >= m->launches[0].correlation) {
        uint64_t i = correlation - m->launches[0].correlation;
        if (i < m->n_launches && m->launches[i].correlation == correlation &&
            (i == 0 || m->launches[i - 1].correlation != correlation))
            return &m->launches[i];
    }
    size_t lo = 0, hi = m->n_launches;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->launches[mid].correlation < correlation)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n_launches && m->launches[lo].correlation == correlation)
        return &m->launches[lo];
    return NULL;
}

enum rsr_gpu_class rsr_gpu_classify_kernel(const char *name)
{
    if (strncmp(name, "nccl", 4) == 0 || strstr(name, "ncclKernel") || strstr(name, "ncclDevKernel"))
        return RSR_GPU_COMM;
    return RSR_GPU_COMPUTE;
}

const char *rsr_gpu_class_name(int cls)
{
    static const char *const names[] = {
#define RSR_GPU_CLASS_TEXT(name, text) text,
        RSR_GPU_CLASSES(RSR_GPU_CLASS_TEXT)
#undef RSR_GPU_CLASS_TEXT
    };
    if (cls < 0 || cls >= RSR_GPU_NCLASSES)
        return "?";
    return names[cls];
}

const char *rsr_coll_op_name(int op)
{
    static const char *const names[] = {
#define RSR_COLL_OP_TEXT(name, text) text,
        RSR_COLL_OPS(RSR_COLL_OP_TEXT)
#undef RSR_COLL_OP_TEXT
    };
    if (op < 0 || op >= RSR_COLL_NOPS)
        return "?";
    return names[op];
}

enum rsr_coll_op rsr_coll_op_parse(const char *name, size_t len)
{
    /* Longer names first where one is a prefix of another ("reduce"). */
    static const struct { const char *key; enum rsr_coll_op op; } table[] = {
        { "allreduce", RSR_COLL_ALLREDUCE },         { "allgather", RSR_COLL_ALLGATHER },
        { "reducescatter", RSR_COLL_REDUCESCATTER }, { "alltoall", RSR_COLL_ALLTOALL },
        { "broadcast", RSR_COLL_BROADCAST },         { "reduce", RSR_COLL_REDUCE },
        { "gather", RSR_COLL_GATHER },               { "scatter", RSR_COLL_SCATTER },
        { "sendrecv", RSR_COLL_SENDRECV },           { "send", RSR_COLL_SEND },
        { "recv", RSR_COLL_RECV },                   { "barrier", RSR_COLL_BARRIER },
        { "group", RSR_COLL_GROUP },
    };
    char norm[32];
    size_t n = 0;
    for (size_t i = 0; i < len && n < sizeof norm - 1; i++) {
        char c = name[i];
        if (c == '_')
            continue;
        norm[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    norm[n] = '\0';
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strncmp(norm, table[i].key, strlen(table[i].key)) == 0)
            return table[i].op;
    return RSR_COLL_UNKNOWN;
}
