/* The writer's side of NVTX (nvtx.c records the calls): pairs push with
 * pop per thread and domain, and start with end by range id across
 * threads, and puts each closed range, and each mark, into the chunk's
 * Range table. Called on the writer thread only (rangew.h). */
#include "preload/rangew.h"
#include "formats/chunk.h"

#include <stdlib.h>
#include <string.h>

/* An NVTX range begun and not yet ended; in the start/end table also the
 * end of a range whose start has not been seen yet (end_ns != 0): another
 * thread may end a range before the writer has read the record of its
 * start (a thread that exits hands its last block over first). */
struct open_range {
    uint64_t id;                 /* start ranges: the range id (0: a free hash slot) */
    uint64_t start_ns, end_ns;
    uint32_t tid, end_tid, name, domain, category, level;
};

/* The push ranges open on one thread in one domain, innermost last. */
struct push_stack {
    uint32_t tid;
    const void *domain;
    struct open_range *e;
    uint32_t n, cap;
};

#define OPEN_STARTS_MAX (1u << 20) /* start ranges open at once; more are lost */


/* State that lives only while the process runs: the chunk's ranges, and
 * those still open (push/pop per thread and domain, start/end by id in an
 * open-addressed table). */
static struct {
    struct rsf_range *ranges;
    uint32_t nranges, ranges_cap;
    struct push_stack *stacks;
    uint32_t nstacks, stacks_cap;
    struct open_range *starts;
    uint32_t nstarts, starts_cap;
} rw;

/* Writes one range into the chunk, the chunk emitted first (flush) when it
 * is full. Returns 1, or 0 when out of memory. */
static uint32_t put_range(const struct open_range *o, uint64_t end_ns, uint32_t end_tid, int kind, int flags,
                          rs_flush_fn flush)
{
    if (rw.nranges >= RS_EV_CAP)
        flush();
    if (rs_grow((void **)&rw.ranges, &rw.ranges_cap, rw.nranges + 1, sizeof *rw.ranges))
        return 0;
    rw.ranges[rw.nranges++] = (struct rsf_range){
        .start_ns = o->start_ns, .end_ns = end_ns, .tid = o->tid, .end_tid = end_tid,
        .name = o->name, .domain = o->domain, .category = o->category,
        .depth = (uint16_t)o->level, .kind = (uint8_t)kind, .flags = (uint8_t)flags };
    return 1;
}

/* The push stack of (tid, domain); a new one when create. NULL when there
 * is none (or no memory). */
static struct push_stack *stack_of(uint32_t tid, const void *domain, int create)
{
    for (uint32_t i = 0; i < rw.nstacks; i++)
        if (rw.stacks[i].tid == tid && rw.stacks[i].domain == domain)
            return &rw.stacks[i];
    if (!create || rs_grow((void **)&rw.stacks, &rw.stacks_cap, rw.nstacks + 1, sizeof *rw.stacks))
        return NULL;
    struct push_stack *s = &rw.stacks[rw.nstacks++];
    *s = (struct push_stack){ .tid = tid, .domain = domain };
    return s;
}

static uint32_t id_slot(uint64_t id, uint32_t cap)
{
    return (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* Adds an open start range (o->id != 0). Returns 0, or -1 (no room). */
static int start_add(const struct open_range *o)
{
    if (rw.nstarts >= OPEN_STARTS_MAX)
        return -1;
    if ((rw.nstarts + 1) * 2 > rw.starts_cap) {
        uint32_t cap = rw.starts_cap ? rw.starts_cap * 2 : 64;
        struct open_range *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (uint32_t i = 0; i < rw.starts_cap; i++) {
            if (!rw.starts[i].id)
                continue;
            uint32_t j = id_slot(rw.starts[i].id, cap);
            while (t[j].id)
                j = (j + 1) & (cap - 1);
            t[j] = rw.starts[i];
        }
        free(rw.starts);
        rw.starts = t;
        rw.starts_cap = cap;
    }
    uint32_t j = id_slot(o->id, rw.starts_cap);
    while (rw.starts[j].id)
        j = (j + 1) & (rw.starts_cap - 1);
    rw.starts[j] = *o;
    rw.nstarts++;
    return 0;
}

/* Takes the open start range id out of the table into *o. Returns 1, or 0
 * when it is not there (its start was lost, or never ours). */
static int start_take(uint64_t id, struct open_range *o)
{
    if (!rw.starts_cap)
        return 0;
    uint32_t mask = rw.starts_cap - 1, i = id_slot(id, rw.starts_cap);
    while (rw.starts[i].id && rw.starts[i].id != id)
        i = (i + 1) & mask;
    if (!rw.starts[i].id)
        return 0;
    *o = rw.starts[i];
    /* Backward-shift deletion: later entries of the probe run move up. */
    for (uint32_t j = (i + 1) & mask; rw.starts[j].id; j = (j + 1) & mask) {
        uint32_t home = id_slot(rw.starts[j].id, rw.starts_cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            rw.starts[i] = rw.starts[j];
            i = j;
        }
    }
    rw.starts[i].id = 0;
    rw.nstarts--;
    return 1;
}

uint32_t rs_rangew_take(const struct rs_rec_hdr *h, uint32_t tid, const struct rs_tick_map *map,
                        rs_intern_fn intern, rs_flush_fn flush)
{
    const struct rs_rec_range *r = (const void *)h;
    uint64_t ts = rs_tick_ns(map, r->ts);
    struct open_range o = { .id = r->id, .start_ns = ts, .tid = tid, .category = r->category,
                            .level = h->file };
    if (h->op == RS_NVTX_PUSH || h->op == RS_NVTX_START || h->op == RS_NVTX_MARK) {
        const char *name = r->name_ptr ? r->name_ptr : r->name;
        o.name = name[0] ? intern(name) : 0;
        o.domain = r->domain ? intern(r->domain) : 0;
    }
    struct push_stack *s;
    switch (h->op) {
    case RS_NVTX_PUSH:
        if (!(s = stack_of(tid, r->domain, 1)))
            return 0;
        while (s->n && s->e[s->n - 1].level >= h->file)
            s->n--;
        if (!rs_grow((void **)&s->e, &s->cap, s->n + 1, sizeof *s->e))
            s->e[s->n++] = o;
        return 0;
    case RS_NVTX_POP:
        if (!(s = stack_of(tid, r->domain, 0)))
            return 0;
        while (s->n && s->e[s->n - 1].level > h->file)
            s->n--;
        if (s->n && s->e[s->n - 1].level == h->file) {
            s->n--;
            return put_range(&s->e[s->n], ts, tid, RSF_RANGE_PUSH, 0, flush);
        }
        return 0;
    case RS_NVTX_START: {
        struct open_range e;
        o.level = 0;
        if (start_take(r->id, &e))
            return put_range(&o, e.end_ns, e.end_tid, RSF_RANGE_START, 0, flush);
        if (start_add(&o) != 0)
            rs_ranges_lost(1);
        return 0;
    }
    case RS_NVTX_END:
        if (start_take(r->id, &o))
            return put_range(&o, ts, tid, RSF_RANGE_START, 0, flush);
        if (start_add(&(struct open_range){ .id = r->id, .end_ns = ts ? ts : 1, .end_tid = tid }) != 0)
            rs_ranges_lost(1);
        return 0;
    case RS_NVTX_MARK:
        o.level = 0;
        return put_range(&o, ts, tid, RSF_RANGE_MARK, 0, flush);
    default:
        return 0;
    }
}

uint32_t rs_rangew_close_all(rs_flush_fn flush)
{
    uint64_t now = rs_now();
    uint32_t n = 0;
    for (uint32_t i = 0; i < rw.nstacks; i++) {
        struct push_stack *s = &rw.stacks[i];
        for (uint32_t j = 0; j < s->n; j++)
            n += put_range(&s->e[j], now, s->e[j].tid, RSF_RANGE_PUSH, RSF_RANGEF_OPEN_AT_EXIT, flush);
        s->n = 0;
    }
    for (uint32_t i = 0; i < rw.starts_cap && rw.nstarts; i++)
        if (rw.starts[i].id) {
            if (!rw.starts[i].end_ns)
                n += put_range(&rw.starts[i], now, rw.starts[i].tid, RSF_RANGE_START, RSF_RANGEF_OPEN_AT_EXIT,
                               flush);
            rw.starts[i].id = 0;
            rw.nstarts--;
        }
    return n;
}

uint32_t rs_rangew_count(void)
{
    return rw.nranges;
}

void rs_rangew_fill(struct rsf_chunk *c)
{
    c->ranges = rw.ranges;
    c->nranges = rw.nranges;
}

void rs_rangew_chunk_done(void)
{
    rw.nranges = 0;
}

void rs_rangew_new_file(void)
{
    /* As the writer's own state: the parent's tables are dropped, not
     * freed (it may have been changing them when it forked). */
    memset(&rw, 0, sizeof rw);
}
