/* A process's GPU memory from its allocation calls (memory.h). */
#include "reporter/load/memory.h"

#include <stdlib.h>
#include <string.h>

#include "reporter/base/array.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t block_hash(uint64_t ptr, int vmm)
{
    return mix(ptr ^ (vmm ? 0x9e3779b97f4a7c15ull : 0));
}

static uint64_t block_hash_of(const void *ctx, size_t i)
{
    const struct rsr_mem_block *b = &((const struct rsr_memlive *)ctx)->blocks[i];
    return block_hash(b->ptr, b->vmm);
}

static uint64_t stack_hash_of(const void *ctx, size_t i)
{
    return mix(((const struct rsr_memlive *)ctx)->stacks[i].stack + 1);
}

/* The block at ptr (of the handle kind vmm), or NULL; with add, made (not
 * live) when there is none (NULL then only when out of memory). An address
 * freed and allocated again is the same block: one per address seen. */
static struct rsr_mem_block *block_at(struct rsr_memlive *l, uint64_t ptr, int vmm, int add)
{
    struct rsr_probe p = rsr_table_probe(&l->by_ptr, block_hash(ptr, vmm));
    for (long i; (i = rsr_table_next(&l->by_ptr, &p)) >= 0;)
        if (l->blocks[i].ptr == ptr && l->blocks[i].vmm == vmm)
            return &l->blocks[i];
    if (!add || RSR_GROW(l->blocks, l->capblocks, l->nblocks + 1, 256) != 0)
        return NULL;
    l->blocks[l->nblocks] = (struct rsr_mem_block){ .ptr = ptr, .vmm = (uint8_t)vmm };
    if (rsr_table_put(&l->by_ptr, &p, l->nblocks, 512, block_hash_of, l) != 0)
        return NULL;
    return &l->blocks[l->nblocks++];
}

static struct rsr_mem_stack *stack_of(struct rsr_memlive *l, uint32_t stack)
{
    struct rsr_probe p = rsr_table_probe(&l->by_stack, mix(stack + 1));
    for (long i; (i = rsr_table_next(&l->by_stack, &p)) >= 0;)
        if (l->stacks[i].stack == stack)
            return &l->stacks[i];
    if (RSR_GROW(l->stacks, l->capstacks, l->nstacks + 1, 64) != 0)
        return NULL;
    l->stacks[l->nstacks] = (struct rsr_mem_stack){ .stack = stack };
    if (rsr_table_put(&l->by_stack, &p, l->nstacks, 128, stack_hash_of, l) != 0)
        return NULL;
    return &l->stacks[l->nstacks++];
}

/* Each stack's bytes at the peak, taken once the peak is passed (a copy
 * per peak rather than per call). */
const char *rsr_mem_pool_name(int pool)
{
    static const char *const names[RSR_NPOOLS] = { "cuMemAlloc", "cuMemAllocAsync", "cuMemCreate",
                                                   "cuMemAllocManaged" };
    return pool >= 0 && pool < RSR_NPOOLS ? names[pool] : "?";
}

const char *rsr_mem_call_name(unsigned kind)
{
    switch (kind) {
    case RSF_MEM_ALLOC_MANAGED: return "cuMemAllocManaged";
    case RSF_MEM_ALLOC_ASYNC: return "cuMemAllocAsync";
    case RSF_MEM_VMM_CREATE: return "cuMemCreate";
    case RSF_MEM_ALLOC_HOST: return "cuMemHostAlloc";
    default: return "cuMemAlloc";
    }
}

static void take_peak(struct rsr_memlive *l)
{
    if (!l->peak_open)
        return;
    memcpy(l->pool_at_peak, l->pool_live, sizeof l->pool_at_peak);
    l->weight_at_peak = 0;
    for (size_t i = 0; i < l->nstacks; i++) {
        l->stacks[i].at_peak = l->stacks[i].live;
        l->weight_at_peak += l->stacks[i].live;
    }
    l->peak_open = 0;
}

void rsr_memlive_meta(struct rsr_memlive *l, const struct rsf_chunk *c)
{
    const char *always = c->meta ? rsf_meta_setting(c->meta, "mem_stack_mb") : NULL;
    const char *every = c->meta ? rsf_meta_setting(c->meta, "mem_sample_mb") : NULL;
    if (always)
        l->always = (uint64_t)strtoull(always, NULL, 10) << 20;
    if (every)
        l->every = (uint64_t)strtoull(every, NULL, 10) << 20;
}

static int allocates(unsigned k)
{
    return k == RSF_MEM_ALLOC || k == RSF_MEM_ALLOC_MANAGED || k == RSF_MEM_ALLOC_ASYNC ||
           k == RSF_MEM_VMM_CREATE || k == RSF_MEM_ALLOC_HOST;
}

static int frees(unsigned k)
{
    return k == RSF_MEM_FREE || k == RSF_MEM_FREE_ASYNC || k == RSF_MEM_VMM_RELEASE || k == RSF_MEM_FREE_HOST;
}

void rsr_memlive_event(struct rsr_memlive *l, const struct rsf_mem_event *e, const struct rsf_mem_info *mi)
{
    unsigned k = e->kind;
    int vmm = k == RSF_MEM_VMM_CREATE || k == RSF_MEM_VMM_RELEASE;
    int host = k == RSF_MEM_ALLOC_HOST || k == RSF_MEM_FREE_HOST;
    if (allocates(k)) {
        struct rsr_mem_block *b = block_at(l, e->ptr, vmm, 1);
        if (!b)
            return;
        if (b->live) /* allocated again without a free we saw: the old one is gone */
            rsr_memlive_event(l, &(struct rsf_mem_event){ .ptr = e->ptr, .kind =
                                                              (uint8_t)(host ? RSF_MEM_FREE_HOST :
                                                                        vmm ? RSF_MEM_VMM_RELEASE : RSF_MEM_FREE) },
                              NULL);
        b->bytes = e->bytes;
        b->stack = mi ? mi->stack : 0;
        /* files before MemInfo's flags: every stack taken stands for itself */
        b->sampled = mi && (mi->flags & RSF_MEMF_SAMPLED || mi->stack);
        b->weight = !b->sampled                                 ? 0
                    : (l->always && e->bytes >= l->always) || e->bytes >= l->every ? e->bytes
                                                                                : l->every;
        b->host = (uint8_t)host;
        b->pool = (uint8_t)(vmm ? RSR_POOL_VMM : k == RSF_MEM_ALLOC_ASYNC ? RSR_POOL_ASYNC
                            : k == RSF_MEM_ALLOC_MANAGED ? RSR_POOL_MANAGED : RSR_POOL_ALLOC);
        b->live = 1;
        if (host) {
            l->host_live += e->bytes;
            if (l->host_live > l->host_peak)
                l->host_peak = l->host_live;
            return;
        }
        struct rsr_mem_stack *s = b->sampled ? stack_of(l, b->stack) : NULL;
        if (s) {
            s->live += b->weight;
            s->nlive++;
        }
        l->live += e->bytes;
        l->pool_live[b->pool] += e->bytes;
        if (l->live > l->peak) {
            l->peak = l->live;
            l->peak_ns = (int64_t)e->start_ns;
            l->peak_open = 1;
        }
        return;
    }
    if (!frees(k))
        return;
    struct rsr_mem_block *b = block_at(l, e->ptr, vmm, 0);
    if (!b || !b->live)
        return;
    b->live = 0;
    if (b->host) {
        l->host_live -= b->bytes;
        return;
    }
    take_peak(l);
    struct rsr_mem_stack *s = b->sampled ? stack_of(l, b->stack) : NULL;
    if (s) {
        s->live -= b->weight;
        s->nlive--;
    }
    l->live -= b->bytes;
    l->pool_live[b->pool] -= b->bytes;
}

uint32_t rsr_memlive_growing(const struct rsr_memlive *l, uint64_t *bytes, uint32_t *blocks)
{
    const struct rsr_mem_stack *best = NULL;
    for (size_t i = 0; i < l->nstacks; i++) {
        const struct rsr_mem_stack *s = &l->stacks[i];
        if (s->nlive >= 3 && (!best || s->live > best->live))
            best = s;
    }
    if (bytes)
        *bytes = best ? best->live : 0;
    if (blocks)
        *blocks = best ? best->nlive : 0;
    return best ? best->stack : 0;
}

void rsr_memlive_end(struct rsr_memlive *l)
{
    take_peak(l);
}

void rsr_memlive_free(struct rsr_memlive *l)
{
    free(l->blocks);
    rsr_table_free(&l->by_ptr);
    free(l->stacks);
    rsr_table_free(&l->by_stack);
    memset(l, 0, sizeof *l);
}

/* ---- the timeline's bins ---- */

static void merge_bins(struct rsr_memory *m)
{
    for (uint32_t i = 0; i < RSR_MEM_BUCKETS / 2; i++) {
        const struct rsr_mem_bucket *a = &m->b[2 * i], *b = &m->b[2 * i + 1];
        struct rsr_mem_bucket c = *a;
        if (b->set) {
            c.live_max = c.set && c.live_max > b->live_max ? c.live_max : b->live_max;
            c.live_last = b->live_last;
            c.set = 1;
        }
        if (b->used_set) {
            c.used_max = c.used_set && c.used_max > b->used_max ? c.used_max : b->used_max;
            c.used_set = 1;
        }
        m->b[i] = c;
    }
    memset(&m->b[RSR_MEM_BUCKETS / 2], 0, sizeof m->b / 2);
    m->nb = (m->nb + 1) / 2;
    m->width_ns *= 2;
}

/* The bin for time ns, the bins widened until it fits; NULL for a time
 * before the first bin (records a little out of order land in bin 0). */
static struct rsr_mem_bucket *bin(struct rsr_memory *m, int64_t ns)
{
    if (!m->width_ns) {
        m->t0_ns = ns;
        m->width_ns = 1000000; /* 1 ms to begin with */
    }
    if (ns < m->t0_ns)
        ns = m->t0_ns;
    while ((ns - m->t0_ns) / m->width_ns >= RSR_MEM_BUCKETS)
        merge_bins(m);
    uint32_t i = (uint32_t)((ns - m->t0_ns) / m->width_ns);
    if (i + 1 > m->nb)
        m->nb = i + 1;
    return &m->b[i];
}

static void note_live(struct rsr_memory *m, int64_t ns, uint64_t live)
{
    struct rsr_mem_bucket *b = bin(m, ns);
    if (!b->set || live > b->live_max)
        b->live_max = live;
    b->live_last = live;
    b->set = 1;
}

static void note_used(struct rsr_memory *m, int64_t ns, uint64_t used)
{
    struct rsr_mem_bucket *b = bin(m, ns);
    if (!b->used_set || used > b->used_max)
        b->used_max = used;
    b->used_set = 1;
    if (used > m->used_max)
        m->used_max = used;
    m->used_last = used;
    m->used_last_ns = ns;
    int64_t other = used > m->live.live ? (int64_t)(used - m->live.live) : 0;
    if (other > m->other_max)
        m->other_max = other;
}

/* A failed call's retry: the next allocation of its thread of at least its
 * size that succeeds within RSR_MEM_RETRY_NS. */
static void note_retry(struct rsr_memory *m, const struct rsf_mem_event *e)
{
    for (uint32_t i = m->nfails; i-- > 0;) {
        struct rsr_mem_fail *f = &m->fails[i];
        if (f->retried || f->tid != e->tid || e->bytes < f->asked || (int64_t)e->start_ns < f->ns ||
            (int64_t)e->start_ns - f->ns > RSR_MEM_RETRY_NS)
            continue;
        f->retried = 1;
        f->retry_ns = (int64_t)(e->start_ns + e->dur_ns) - f->ns;
        m->retried++;
        m->retry_ns += f->retry_ns;
        return;
    }
}

/* One memory call. */
static void take_call(struct rsr_memory *m, const struct rsf_mem_event *e, const struct rsf_mem_info *mi)
{
    unsigned k = e->kind;
    if (k == RSF_MEM_ALLOC_FAILED) {
        m->failed++;
        /* the first ones, and the latest in the last place */
        if (m->nfails == RSR_MEM_FAILS)
            m->nfails--;
        m->fails[m->nfails++] = (struct rsr_mem_fail){
            .ns = (int64_t)e->start_ns, .asked = e->bytes, .live = m->live.live, .tid = e->tid,
            .stack = mi ? mi->stack : 0, .result = mi ? mi->result : 0, .device = mi ? mi->device : -1,
            .asked_kind = mi ? mi->asked : 0 };
        return;
    }
    if (allocates(k)) {
        m->allocs++;
        m->alloc_bytes += e->bytes;
        if (m->device < 0 && mi && mi->device >= 0 && k != RSF_MEM_ALLOC_HOST)
            m->device = mi->device;
        if (m->nfails)
            note_retry(m, e);
    } else if (frees(k)) {
        m->frees++;
    }
    uint64_t before = m->live.live;
    rsr_memlive_event(&m->live, e, mi);
    if (m->live.live != before)
        note_live(m, (int64_t)e->start_ns, m->live.live);
}

/* One point of a series: the driver's in-use or total figure. */
static void take_point(struct rsr_memory *m, const struct rsf_point *p)
{
    if (p->series && p->series == m->used_series) {
        note_used(m, (int64_t)p->ts_ns, p->value);
    } else if (p->series && p->series == m->total_series) {
        m->total = p->value;
        /* a failure's free and total: the driver's pair read just after it
         * (in use, then total) */
        for (uint32_t f = m->nfails; f-- > 0 && !m->fails[f].total_b;)
            if (m->used_last_ns >= m->fails[f].ns && m->used_last <= p->value) {
                m->fails[f].total_b = p->value;
                m->fails[f].free_b = p->value - m->used_last;
            }
    }
}

int rsr_memory_chunk(struct rsr_memory **memp, const struct rsr_memlive *sampling, const struct rsf_chunk *c)
{
    int series = 0;
    for (uint32_t i = 0; i < c->nseries; i++)
        series |= c->series[i].kind == RSF_SERIES_GPU_MEM_USED || c->series[i].kind == RSF_SERIES_GPU_MEM_TOTAL;
    struct rsr_memory *m = *memp;
    if (!m) {
        if (!c->nmems && !series)
            return 0;
        if (!(m = calloc(1, sizeof *m)))
            return -1;
        m->device = -1;
        m->other_max = -1;
        m->live.always = sampling ? sampling->always : 0;
        m->live.every = sampling ? sampling->every : 0;
        *memp = m;
    }
    for (uint32_t i = 0; i < c->nseries; i++) {
        const struct rsf_series *s = &c->series[i];
        /* the first device's: a process that allocates on one device (the usual) */
        if (m->device >= 0 && s->device != m->device)
            continue;
        if (s->kind == RSF_SERIES_GPU_MEM_USED && !m->used_series)
            m->used_series = s->id;
        else if (s->kind == RSF_SERIES_GPU_MEM_TOTAL && !m->total_series)
            m->total_series = s->id;
    }
    /* calls and the driver's figures in time order: what the program held
     * as each figure was read is what the figure is held against */
    uint32_t i = 0, k = 0;
    while (i < c->nmems || k < c->npoints) {
        if (k < c->npoints && (i == c->nmems || c->points[k].ts_ns < c->mems[i].start_ns)) {
            take_point(m, &c->points[k++]);
            continue;
        }
        take_call(m, &c->mems[i], c->mem_info ? &c->mem_info[i] : NULL);
        i++;
    }
    return 0;
}

void rsr_memory_end(struct rsr_memory *m)
{
    if (!m)
        return;
    struct rsr_memlive *l = &m->live;
    rsr_memlive_end(l);
    m->peak = l->peak;
    m->peak_ns = l->peak_ns;
    memcpy(m->peak_by_pool, l->pool_at_peak, sizeof m->peak_by_pool);
    m->end_live = l->live;
    m->host_peak = l->host_peak;
    rsr_memlive_growing(l, &m->grow_bytes, &m->grow_blocks);
    rsr_memlive_free(l);
}

void rsr_memory_shift(struct rsr_memory *m, int64_t d)
{
    if (!m)
        return;
    m->peak_ns += d;
    m->t0_ns += d;
    for (uint32_t f = 0; f < m->nfails; f++)
        m->fails[f].ns += d;
}

int64_t rsr_memory_bin_start(const struct rsr_memory *m, uint32_t i)
{
    return m->t0_ns + (int64_t)i * m->width_ns;
}

uint64_t rsr_memory_live_at(const struct rsr_memory *m, int64_t ns)
{
    if (!m || !m->width_ns || ns < m->t0_ns)
        return 0;
    int64_t at = (ns - m->t0_ns) / m->width_ns;
    for (int64_t i = at < m->nb ? at : (int64_t)m->nb - 1; i >= 0; i--)
        if (m->b[i].set)
            return m->b[i].live_last;
    return 0;
}

uint64_t rsr_memory_max_in(const struct rsr_memory *m, int64_t from, int64_t to)
{
    if (!m || !m->width_ns || to <= m->t0_ns)
        return 0;
    int64_t a = from > m->t0_ns ? (from - m->t0_ns) / m->width_ns : 0;
    int64_t z = (to - 1 - m->t0_ns) / m->width_ns;
    /* what was held coming into the span counts too */
    uint64_t most = rsr_memory_live_at(m, from);
    for (int64_t i = a; i <= z && i < (int64_t)m->nb; i++)
        if (m->b[i].set && m->b[i].live_max > most)
            most = m->b[i].live_max;
    return most;
}

size_t rsr_memory_bytes(const struct rsr_memory *m)
{
    if (!m)
        return 0;
    return sizeof *m + m->live.capblocks * sizeof *m->live.blocks + m->live.capstacks * sizeof *m->live.stacks +
           rsr_table_bytes(&m->live.by_ptr) + rsr_table_bytes(&m->live.by_stack);
}

void rsr_memory_free(struct rsr_memory *m)
{
    if (!m)
        return;
    rsr_memlive_free(&m->live);
    free(m);
}
