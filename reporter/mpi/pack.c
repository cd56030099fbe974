/* Packing loaded inputs and flame trees into bytes and back (pack.h). A
 * structure travels as its own bytes followed by the arrays it points to;
 * the reader copies the bytes and then replaces every pointer with a copy of
 * its array, so a plain field added to a structure travels with no change
 * here, and a pointer field must be named below. */
#include "reporter/mpi/pack.h"

#include <stdlib.h>
#include <string.h>

#include "reporter/load/summary.h"
#include "reporter/load/memory.h"
#include "reporter/load/nodes_load.h"
#include "reporter/base/array.h"

static void put(struct rsr_pack *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (RSR_GROW(b->p, b->cap, b->n + n, 4096) != 0) {
        b->failed = 1;
        return;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

void rsr_pack_u64(struct rsr_pack *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

/* An array of n elements of size elem: its count, then its bytes. */
static void put_array(struct rsr_pack *b, const void *p, size_t n, size_t elem)
{
    rsr_pack_u64(b, n);
    put(b, p, n * elem);
}

/* A string, or NULL (told apart from ""). */
static void put_str(struct rsr_pack *b, const char *s)
{
    if (!s) {
        rsr_pack_u64(b, UINT64_MAX);
        return;
    }
    put_array(b, s, strlen(s), 1);
}

void rsr_pack_free(struct rsr_pack *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int get(struct rsr_unpack *u, void *p, size_t n)
{
    if (u->failed || (size_t)(u->end - u->p) < n) {
        u->failed = 1;
        memset(p, 0, n);
        return -1;
    }
    if (n)
        memcpy(p, u->p, n);
    u->p += n;
    return 0;
}

uint64_t rsr_unpack_u64(struct rsr_unpack *u)
{
    uint64_t v;
    get(u, &v, sizeof v);
    return v;
}

void rsr_pack_bytes(struct rsr_pack *b, const void *p, size_t n)
{
    put(b, p, n);
}

int rsr_unpack_bytes(struct rsr_unpack *u, void *p, size_t n)
{
    return get(u, p, n);
}

/* A copy of an array put_array wrote (NULL when empty, or on failure). */
static void *get_array(struct rsr_unpack *u, size_t *n, size_t elem)
{
    uint64_t k = rsr_unpack_u64(u);
    *n = 0;
    if (u->failed || k > (uint64_t)(u->end - u->p) / elem) {
        u->failed = 1;
        return NULL;
    }
    if (!k)
        return NULL;
    void *p = malloc(k * elem);
    if (!p) {
        u->failed = 1;
        return NULL;
    }
    get(u, p, k * elem);
    *n = k;
    return p;
}

static char *get_str(struct rsr_unpack *u)
{
    uint64_t k = rsr_unpack_u64(u);
    if (k == UINT64_MAX || u->failed)
        return NULL;
    if (k > (uint64_t)(u->end - u->p)) {
        u->failed = 1;
        return NULL;
    }
    char *s = malloc(k + 1);
    if (!s) {
        u->failed = 1;
        return NULL;
    }
    get(u, s, k);
    s[k] = 0;
    return s;
}

static void pack_summary(struct rsr_pack *b, const struct rsr_summary *s)
{
    put(b, s, sizeof *s);
    put_array(b, s->gpu.streams, s->gpu.n_streams, sizeof *s->gpu.streams);
    put_array(b, s->kernels.stats, s->kernels.n, sizeof *s->kernels.stats);
    rsr_pack_u64(b, s->kernels.n_short_names);
    for (size_t i = 0; i < s->kernels.n_short_names; i++)
        rsr_pack_u64(b, (uint64_t)(s->kernels.short_names[i] - s->kernels.stats));
    put_array(b, s->keys, s->n_keys, sizeof *s->keys);
    /* The tuples may be in the spill file: read them through a cursor,
     * which gives them in order with the summary's shift applied. */
    struct rsr_coll_cursor c;
    struct rsr_coll_tuple t;
    size_t n = 0;
    rsr_pack_u64(b, s->n_colls);
    rsr_coll_cursor_open(&c, s);
    int got;
    while ((got = rsr_coll_cursor_next(&c, &t)) == 1 && n < s->n_colls) {
        put(b, &t, sizeof t);
        n++;
    }
    if (got < 0 || n != s->n_colls)
        b->failed = 1;
    put_array(b, s->bursts, s->n_bursts, sizeof *s->bursts);
    for (int k = 0; k < RSR_FINE_NSERIES; k++)
        put_array(b, s->fine[k], s->fine[k] ? RSR_FINE_BINS : 0, sizeof *s->fine[k]);
    /* The marks too may be in the spill file: as put_array lays them out,
     * a block at a time. */
    struct rsr_step_mark blk[256];
    rsr_pack_u64(b, s->n_cmarks);
    for (size_t i = 0; i < s->n_cmarks; i += sizeof blk / sizeof blk[0]) {
        size_t k = s->n_cmarks - i < sizeof blk / sizeof blk[0] ? s->n_cmarks - i : sizeof blk / sizeof blk[0];
        if (rsr_summary_cmarks_read(s, i, k, blk) != 0) {
            b->failed = 1;
            break;
        }
        put(b, blk, k * sizeof *blk);
    }
    put_array(b, s->kmarks, s->n_kmarks, sizeof *s->kmarks);
    put_array(b, s->ranges, s->n_ranges, sizeof *s->ranges);
    put_array(b, s->wstacks, s->n_wstacks, sizeof *s->wstacks);
}

static int unpack_summary(struct rsr_unpack *u, struct rsr_summary *s)
{
    size_t n;
    get(u, s, sizeof *s);
    s->gpu.streams = get_array(u, &s->gpu.n_streams, sizeof *s->gpu.streams);
    s->kernels.stats = get_array(u, &s->kernels.n, sizeof *s->kernels.stats);
    uint64_t nshort = rsr_unpack_u64(u);
    s->kernels.short_names = NULL;
    s->kernels.n_short_names = 0;
    s->keys = NULL, s->colls = NULL, s->bursts = NULL;
    s->n_keys = s->n_colls = s->n_bursts = 0;
    s->cmarks = s->kmarks = NULL;
    s->n_cmarks = s->n_kmarks = 0;
    s->ranges = NULL;
    s->n_ranges = 0;
    s->wstacks = NULL;
    s->n_wstacks = 0;
    for (int k = 0; k < RSR_FINE_NSERIES; k++)
        s->fine[k] = NULL;
    if (nshort > s->kernels.n)
        u->failed = 1;
    if (nshort && !u->failed) {
        s->kernels.short_names = malloc(nshort * sizeof *s->kernels.short_names);
        if (!s->kernels.short_names)
            u->failed = 1;
        for (uint64_t i = 0; i < nshort && !u->failed; i++) {
            uint64_t k = rsr_unpack_u64(u);
            if (k >= s->kernels.n)
                u->failed = 1;
            else
                s->kernels.short_names[s->kernels.n_short_names++] = &s->kernels.stats[k];
        }
    }
    s->keys = get_array(u, &s->n_keys, sizeof *s->keys);
    s->cap_keys = s->n_keys;
    s->colls = get_array(u, &s->n_colls, sizeof *s->colls);
    s->cap_colls = s->n_colls;
    s->spilled = 0;             /* the tuples came shifted and in memory */
    s->spill_off = 0;
    s->colls_shift_ns = 0;
    s->bursts = get_array(u, &s->n_bursts, sizeof *s->bursts);
    for (int k = 0; k < RSR_FINE_NSERIES; k++) {
        s->fine[k] = get_array(u, &n, sizeof *s->fine[k]);
        if (s->fine[k] && n != RSR_FINE_BINS)
            u->failed = 1;
    }
    s->cmarks = get_array(u, &s->n_cmarks, sizeof *s->cmarks);
    s->marks_spilled = 0;       /* the marks came shifted and in memory */
    s->marks_off = 0;
    s->marks_shift_ns = 0;
    s->kmarks = get_array(u, &s->n_kmarks, sizeof *s->kmarks);
    s->ranges = get_array(u, &s->n_ranges, sizeof *s->ranges);
    s->wstacks = get_array(u, &s->n_wstacks, sizeof *s->wstacks);
    return u->failed ? -1 : 0;
}

/* A process's node series (NULL: none), with the bins; names travel as
 * the model's string ids (the model's strings travel too, in order). */
static void nodes_pack(struct rsr_pack *b, const struct rsr_node_proc *p)
{
    rsr_pack_u64(b, p ? p->n : 0);
    for (size_t i = 0; p && i < p->n; i++) {
        rsr_pack_bytes(b, &p->s[i], sizeof p->s[i]);
        rsr_pack_bytes(b, p->s[i].bins, RSR_NODE_BINS * sizeof *p->s[i].bins);
    }
}

/* nodes_pack's bytes back into *out (NULL when none; freed by the model,
 * also after a failure). Returns 0, or -1 when the bytes are short or
 * malformed, or memory ran out. */
static int nodes_unpack(struct rsr_unpack *u, struct rsr_node_proc **out)
{
    *out = NULL;
    uint64_t n = rsr_unpack_u64(u);
    if (u->failed || n > (uint64_t)(u->end - u->p) / (sizeof(struct rsr_node_series) + RSR_NODE_BINS * sizeof(double)))
        return -1;
    if (!n)
        return 0;
    struct rsr_node_proc *p = calloc(1, sizeof *p);
    if (!p || !(p->s = calloc(n, sizeof *p->s))) {
        free(p);
        return -1;
    }
    p->cap = n;
    *out = p;
    for (; p->n < n; p->n++) {
        struct rsr_node_series *s = &p->s[p->n];
        rsr_unpack_bytes(u, s, sizeof *s);
        s->bins = malloc(RSR_NODE_BINS * sizeof *s->bins);
        if (!s->bins || rsr_unpack_bytes(u, s->bins, RSR_NODE_BINS * sizeof *s->bins) != 0 || s->bin_ns <= 0) {
            p->n++;
            return -1;
        }
    }
    return 0;
}


/* A model as the streaming loader leaves it: identity, strings, clocks,
 * counters and its summary; it has no records to send. */
static void pack_model(struct rsr_pack *b, const struct rsr_model *m)
{
    const int64_t ints[] = { m->rank, m->local_rank, m->world_size, m->pid, m->host, m->job, m->role,
                             m->wall_start_ns, m->wall_end_ns, (int64_t)m->dropped, (int64_t)m->mem_allocs,
                             (int64_t)m->mem_frees, (int64_t)m->mem_alloc_bytes, m->clock_offset_ns,
                             (int64_t)m->late, m->unclosed, m->flush_ns, (int64_t)m->graph_ops,
                             (int64_t)m->graph_colls, m->parent_rank, m->compile_kind, m->fatal_sig,
                             m->fatal_ns, m->killed_sig, m->killed_waiting, m->run_delay_ns };
    put(b, ints, sizeof ints);
    rsr_pack_u64(b, m->strings.n);
    for (size_t i = 1; i < m->strings.n; i++)
        put_array(b, m->strings.strs[i].s, m->strings.strs[i].len, 1);
    put_array(b, m->clocks, m->n_clocks, sizeof *m->clocks);
    put(b, &m->waits, sizeof m->waits);
    rsr_pack_u64(b, m->sum != NULL);
    if (m->sum)
        pack_summary(b, m->sum);
    nodes_pack(b, m->node);
    /* the memory figures: flat once the file has ended (memory.h) */
    rsr_pack_u64(b, m->mem != NULL);
    if (m->mem)
        put(b, m->mem, sizeof *m->mem);
}

static int unpack_model(struct rsr_unpack *u, struct rsr_model *m)
{
    int64_t v[26];
    get(u, v, sizeof v);
    m->rank = (int32_t)v[0], m->local_rank = (int32_t)v[1], m->world_size = (int32_t)v[2];
    m->pid = v[3], m->host = (uint32_t)v[4], m->job = (uint32_t)v[5], m->role = (uint8_t)v[6];
    m->wall_start_ns = v[7], m->wall_end_ns = v[8], m->dropped = (uint64_t)v[9];
    m->mem_allocs = (uint64_t)v[10], m->mem_frees = (uint64_t)v[11], m->mem_alloc_bytes = (uint64_t)v[12];
    m->clock_offset_ns = v[13], m->late = (uint64_t)v[14];
    m->unclosed = (uint8_t)v[15], m->flush_ns = v[16], m->graph_ops = (uint64_t)v[17];
    m->graph_colls = (uint64_t)v[18], m->parent_rank = (int32_t)v[19];
    m->compile_kind = (uint8_t)v[20];
    m->fatal_sig = (uint8_t)v[21], m->fatal_ns = v[22];
    m->killed_sig = (uint8_t)v[23], m->killed_waiting = (uint8_t)v[24];
    m->run_delay_ns = v[25];
    uint64_t nstr = rsr_unpack_u64(u);
    for (uint64_t i = 1; i < nstr && !u->failed; i++) {
        uint64_t len = rsr_unpack_u64(u);
        uint32_t id;
        if (len > (uint64_t)(u->end - u->p) || rsr_model_intern(m, (const char *)u->p, len, &id) != 0 ||
            id != i) {
            u->failed = 1;
            break;
        }
        u->p += len;
    }
    m->clocks = get_array(u, &m->n_clocks, sizeof *m->clocks);
    m->cap_clocks = m->n_clocks;
    get(u, &m->waits, sizeof m->waits);
    if (m->waits.nkept > RSR_WAIT_THREADS)
        u->failed = 1;
    for (int k = 0; k < RSR_NTOP; k++)
        for (int i = 0; i < RSR_TOP_STACKS; i++)
            if (!memchr(m->waits.top[k][i].text, 0, sizeof m->waits.top[k][i].text))
                u->failed = 1;
    if (!memchr(m->waits.where, 0, sizeof m->waits.where) || !memchr(m->waits.long_where, 0, sizeof m->waits.long_where))
        u->failed = 1;
    if (rsr_unpack_u64(u) && !u->failed) {
        m->sum = calloc(1, sizeof *m->sum);
        if (!m->sum || unpack_summary(u, m->sum) != 0)
            u->failed = 1;
    }
    if (!u->failed && nodes_unpack(u, &m->node) != 0)
        u->failed = 1;
    if (!u->failed && rsr_unpack_u64(u)) {
        if (!(m->mem = calloc(1, sizeof *m->mem)))
            u->failed = 1;
        else if (rsr_unpack_bytes(u, m->mem, sizeof *m->mem) != 0 || m->mem->nb > RSR_MEM_BUCKETS ||
                 m->mem->nfails > RSR_MEM_FAILS)
            u->failed = 1;
        else
            memset(&m->mem->live, 0, sizeof m->mem->live); /* its pointers are the sender's */
    }
    return u->failed ? -1 : 0;
}

void rsr_pack_input(struct rsr_pack *b, const struct rsr_input *in)
{
    put(b, in, sizeof *in);
    put_str(b, in->file);
    put_str(b, in->host);
    put_str(b, in->job);
    put_str(b, in->series);
    rsr_pack_u64(b, in->argc);
    for (uint32_t i = 0; i < in->argc; i++)
        put_str(b, in->argv[i]);
    rsr_pack_u64(b, in->nfiles);
    for (uint32_t i = 0; i < in->nfiles; i++) {
        put(b, &in->files[i], sizeof in->files[i]);
        put_str(b, in->files[i].path);
    }
    rsr_pack_u64(b, in->model != NULL);
    if (in->model)
        pack_model(b, in->model);
}

int rsr_unpack_input(struct rsr_unpack *u, struct rsr_input *in)
{
    get(u, in, sizeof *in);
    /* Every pointer the bytes held is the sender's: replace each. The
     * file's string table and the per-id totals stay behind; the paths of
     * the per-path totals live in strings[], which rsr_input_free frees. */
    in->file = in->host = in->job = in->series = NULL;
    in->argv = NULL, in->argc = 0;
    in->by_id = NULL, in->nids = 0;
    in->strings = NULL, in->nstrings = 0;
    in->files = NULL;
    in->model = NULL;
    memset(&in->loader, 0, sizeof in->loader);
    uint32_t nfiles = in->nfiles;
    in->nfiles = 0;
    in->file = get_str(u);
    in->host = get_str(u);
    in->job = get_str(u);
    in->series = get_str(u);
    uint64_t argc = rsr_unpack_u64(u);
    if (argc > RSR_ARGV_MAX)
        u->failed = 1;
    else if (argc && !u->failed && !(in->argv = calloc(argc, sizeof *in->argv)))
        u->failed = 1;
    for (uint32_t i = 0; i < argc && !u->failed; i++) {
        in->argv[i] = get_str(u);
        in->argc = i + 1;
    }
    if (rsr_unpack_u64(u) != nfiles)
        u->failed = 1;
    if (nfiles && !u->failed) {
        in->files = calloc(nfiles, sizeof *in->files);
        in->strings = calloc(nfiles, sizeof *in->strings);
        if (!in->files || !in->strings)
            u->failed = 1;
        else
            in->nstrings = nfiles;
    }
    for (uint32_t i = 0; i < nfiles && !u->failed; i++) {
        get(u, &in->files[i], sizeof in->files[i]);
        in->strings[i] = get_str(u);
        in->files[i].path = in->strings[i] ? in->strings[i] : "(unknown)";
        in->nfiles = i + 1;
    }
    if (rsr_unpack_u64(u) && !u->failed) {
        in->model = malloc(sizeof *in->model);
        if (!in->model) {
            u->failed = 1;
        } else {
            rsr_model_init(in->model);
            unpack_model(u, in->model);
        }
    }
    return u->failed ? -1 : 0;
}

void rsr_pack_flame(struct rsr_pack *b, const struct rsr_flame *fl)
{
    rsr_pack_u64(b, (uint64_t)fl->kind);
    rsr_pack_u64(b, fl->nprocs);
    rsr_pack_u64(b, fl->names.n);
    for (uint32_t i = 0; i < fl->names.n; i++) {
        put_str(b, rsr_intern_str(&fl->names, i));
        rsr_pack_u64(b, fl->name_class[i]);
        put_str(b, rsr_intern_str(&fl->modules, fl->name_module[i]));
    }
    put_array(b, fl->nodes, fl->nnodes, sizeof *fl->nodes);
    rsr_pack_u64(b, fl->nunnamed);
    for (uint32_t i = 0; i < fl->nunnamed; i++) {
        put_str(b, fl->unnamed[i].path);
        put_str(b, fl->unnamed[i].why);
        rsr_pack_u64(b, fl->unnamed[i].addresses);
        rsr_pack_u64(b, fl->unnamed[i].samples);
        rsr_pack_u64(b, fl->unnamed[i].weight);
    }
    rsr_pack_u64(b, fl->apart_ns);
    rsr_pack_u64(b, fl->apart_threads);
    rsr_pack_u64(b, fl->napart);
    for (uint32_t i = 0; i < fl->napart; i++) {
        put_str(b, fl->apart[i].name);
        rsr_pack_u64(b, fl->apart[i].threads);
        rsr_pack_u64(b, fl->apart[i].ns);
    }
}

int rsr_unpack_flame(struct rsr_unpack *u, struct rsr_flame *dst)
{
    struct rsr_flame src;
    rsr_flame_init(&src, (int)rsr_unpack_u64(u));
    src.nprocs = (uint32_t)rsr_unpack_u64(u);
    uint64_t nnames = rsr_unpack_u64(u);
    for (uint64_t i = 0; i < nnames && !u->failed; i++) {
        char *name = get_str(u);
        uint64_t cls = rsr_unpack_u64(u);
        char *module = get_str(u);
        if (!name || cls > RSR_FRAME_THREAD || rsr_flame_frame(&src, name, (enum rsr_frame_class)cls, module) != i)
            u->failed = 1;
        free(name);
        free(module);
    }
    size_t n;
    struct rsr_flame_node *nodes = get_array(u, &n, sizeof *nodes);
    for (size_t i = 1; i < n && !u->failed; i++)
        if (nodes[i].parent >= i || nodes[i].name >= nnames)
            u->failed = 1;
    uint64_t nunnamed = rsr_unpack_u64(u);
    for (uint64_t i = 0; i < nunnamed && !u->failed; i++) {
        char *path = get_str(u), *why = get_str(u);
        if (!path || !why) {
            u->failed = 1;
        } else {
            struct rsr_flame_unnamed *e = rsr_flame_unnamed_of(&src, path, why);
            e->addresses += rsr_unpack_u64(u);
            e->samples += rsr_unpack_u64(u);
            e->weight += rsr_unpack_u64(u);
        }
        free(path);
        free(why);
    }
    src.apart_ns = rsr_unpack_u64(u);
    src.apart_threads = (uint32_t)rsr_unpack_u64(u);
    uint64_t napart = rsr_unpack_u64(u);
    if (napart > RSR_FLAME_APART)
        u->failed = 1;
    for (uint64_t i = 0; i < napart && !u->failed; i++) {
        char *name = get_str(u);
        if (!name)
            u->failed = 1;
        else
            snprintf(src.apart[i].name, sizeof src.apart[i].name, "%s", name);
        src.apart[i].threads = (uint32_t)rsr_unpack_u64(u);
        src.apart[i].ns = rsr_unpack_u64(u);
        src.napart = (uint32_t)i + 1;
        free(name);
    }
    if (!u->failed && n) {
        free(src.nodes);
        src.nodes = nodes;
        src.nnodes = src.capnodes = (uint32_t)n;
        nodes = NULL;
        if (src.kind == dst->kind)
            rsr_flame_merge(dst, &src);
        else
            u->failed = 1;
    }
    free(nodes);
    rsr_flame_free(&src);
    return u->failed ? -1 : 0;
}
