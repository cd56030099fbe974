/* The streaming summary of one process (see summary.h). Records come in
 * start order, so every union of intervals (GPU busy, per class, reads) is
 * one open interval and a running total; the idle time inside a read or a
 * write burst is B(end) - B(start), where B(t) is the GPU busy time before
 * t, taken at the moment the stream passes t (before any op that starts
 * later is added). Step marks take all the counters (summary.h) the same
 * way: a collective's mark when the stream passes its start, with the
 * longest GPU idle gap seen since the previous one (its counters taken as
 * the op that ends it comes); a kernel's as it comes. Each mark is 128
 * bytes: memory grows with collectives (as the tuples do) and, without
 * them, with steps (a kernel per step once the first RSR_STEP_LEARN
 * kernels gave the period).
 *
 * Tuples are kept in memory up to run_max, collective marks (four times a
 * tuple's size) up to half as many: past that, the settled head of each array (tuples whose every edge has
 * been answered, marks given their counters) goes to the spill file as a
 * sorted run, and at the end the runs are merged there into one sorted
 * stretch, so that a long job's summary holds a bounded number of them
 * while it is built (a long-running collective holds back the head until
 * it ends). */
#include "reporter/load/summary.h"
#include "reporter/load/period.h"
#include "reporter/base/array.h"
#include "reporter/base/table.h"
#include "formats/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One running union of intervals given in start order. Touching intervals
 * merge, as in HTA. */
struct uni {
    int open;
    int64_t s, e;
    int64_t total;          /* closed intervals */
};

/* Adds [s, e); returns 1 when that closed the open interval (then *cs, *ce
 * are the closed one). */
static int uni_add(struct uni *u, int64_t s, int64_t e, int64_t *cs, int64_t *ce)
{
    if (u->open && s <= u->e) {
        if (e > u->e)
            u->e = e;
        return 0;
    }
    int closed = u->open;
    if (closed) {
        *cs = u->s, *ce = u->e;
        u->total += u->e - u->s;
    }
    u->open = 1, u->s = s, u->e = e;
    return closed;
}

static int64_t uni_len(const struct uni *u)
{
    return u->total + (u->open ? u->e - u->s : 0);
}

/* A union of what the host did (rsr_host_class) with the GPU's idle time
 * inside its closed intervals; busy_start: the GPU busy time before the
 * open interval's start. */
struct idle_uni {
    struct uni u;
    int64_t busy_start, idle_ns;
    int64_t all_ns;         /* its closed intervals' whole length, the GPU's idle or not */
};

struct stream_state {
    struct rsr_stream_idle idle;
    int64_t prev_end;
};

/* A written path's totals and its open burst. */
struct path_state {
    uint32_t path;          /* 0: empty slot */
    int have_burst;
    size_t burst;           /* index in bursts while have_burst */
    uint64_t rd, wr;
};

/* A pending look-up: of B at a burst's end, or of a collective's step
 * mark (mark set: burst is then the mark's index). */
struct query {
    int64_t t;
    size_t burst;
    int mark;           /* 0: a burst's end; 1: a collective's mark; or a range's end: */
};

/* ... or the k-th edge of a collective's eighths (QUERY_COLL_EDGE + k:
 * burst is then the tuple's index). */
enum { QUERY_RANGE_START = 2, QUERY_RANGE_END = 3, QUERY_COLL_EDGE = 4 };

/* Sorted stretches of an array written to the spill file. */
struct runs {
    struct run {
        uint64_t off;
        size_t n;
    } *v;
    size_t n, cap;
};

/* Tuples and collective marks in memory at most, each, before the settled
 * ones go to the spill file (see the top); tests make it small. */
static size_t run_max = (size_t)1 << 17;

void rsr_summary_run_max(size_t n)
{
    run_max = n < 4 ? 4 : n;
}

/* Collective marks in memory at most (see the top). */
static size_t marks_max(void)
{
    return run_max / 2 < 4 ? 4 : run_max / 2;
}

static int spill_reserve(size_t len, uint64_t *off);
static int spill_put(const void *p, size_t len, uint64_t off);
static int spill_write(const void *p, size_t len, uint64_t *off);
static int spill_read(void *p, size_t len, uint64_t off);

struct rsr_acc {
    int failed;
    int64_t kernel_wait_ns, short_ns;   /* gpu_breakdown.h, kernels.h */
    uint64_t min_count;
    int64_t pos;                    /* start of the last record given */
    int64_t start;                  /* the first record's time (rsr_acc_new) */
    uint64_t late;

    /* GPU */
    struct uni all, comp, comm, mem, cc;
    int have_op;
    int64_t lo, hi;                 /* first op start, last op end so far */
    uint64_t n_ops;
    struct stream_state *streams;
    size_t n_streams, cap_streams, last_stream;
    struct rsr_kernel_stat *stats;
    size_t n_stats, cap_stats;
    size_t *slot;                   /* name id -> 1 + index in stats */
    size_t n_slot;
    uint64_t n_compute, n_short;
    int64_t short_sum_ns;
    /* kernels running now, for SM activity (sm_sweep): their ends and SM
     * coverage (-1: no geometry), swept up to sm_t */
    struct sm_run {
        int64_t end;
        float cov, occ;
    } *runs;
    size_t n_runs, cap_runs;
    int64_t sm_t;
    double sm_active_ns, occupancy_ns;
    int64_t no_geom_ns;

    /* data loading: the open union of reads, its B at start */
    struct uni reads;
    int64_t reads_busy_start;
    int64_t read_ns, read_idle_ns, tail_ns;
    uint64_t read_bytes;

    /* checkpoint bursts */
    struct path_state *paths;
    size_t n_paths, cap_paths;      /* cap: power of two */
    struct rsr_burst *bursts;
    unsigned char *closed;          /* per burst: closed and too small (dead) = 2, closed = 1 */
    size_t n_bursts, cap_bursts, n_dead;
    struct query *heap;
    size_t n_heap, cap_heap;

    /* step marks (summary.h): the I/O union, the longest GPU idle gap
     * since the last collective mark, the marks' capacities */
    struct uni ios;
    int64_t gap_len, gap_end, gap_host;
    int64_t sync_end;           /* the latest end of a host synchronisation so far */
    int64_t sync_start;         /* that one's start */
    int64_t sync_gap;           /* rsr_step_counters.sync_gap */
    /* communication that held work back (rsr_step_counters.blocking):
     * the last CO_RING stretches of communication alone on the GPU (cc
     * less compute), settled up to co_pos as ops arrive; the time up to
     * which waiting work has been counted */
#define CO_RING 256
    struct { int64_t s, e; } co[CO_RING];
    uint64_t n_co;
    int64_t co_pos;
    int64_t pend_done, blocking;
    int64_t setup_end;              /* the last communicator made (RSR_HWAIT_SETUP) */
    struct idle_uni host[RSR_HOST_NCLASSES];
    /* the main thread's wait the stream is in (one at a time: a thread
     * blocks in one call), its GPU idle to go to its stack's entry */
    struct {
        int open;
        int64_t s, e, busy_start;
        uint32_t stack;
        uint8_t cls;
    } hw;
    size_t cap_wstacks, last_wstack;
    /* the classes' idle (and reading's, last) at the last idle gap's end,
     * the rest of gaps each class held (rsr_step_counters: in host[], and
     * read_ext); class_adds counts the intervals the
     * classes and the reads took, class_adds_seen its value then */
    int64_t gap_prev[RSR_HOST_NCLASSES + 1], gap_ext[RSR_HOST_NCLASSES + 1];
    uint64_t class_adds, class_adds_seen;
    int64_t ends_min;           /* ends_update */
    int64_t recent_sync[RSR_SYNC_RECENT][2];    /* the last ones' start and end, a ring */
    uint64_t n_recent;
    struct rsr_step_counters gap_c;
    size_t cap_cmarks, cap_kmarks, cap_ranges;
    int64_t kmark_end;              /* latest end of a marked kernel */
    int wmark_pending;              /* the last wait mark's counters wait for the stream to reach its end */
    int is_rank;                    /* rsr_acc_set_rank */
    size_t n_answered;              /* collective marks given their counters */

    /* fine bins */
    int64_t fine_start, fine_bin;   /* fine_bin: 1 << fine_shift ns */
    int fine_shift;
    double *fine[RSR_FINE_NSERIES];

    uint64_t n_syncs;
    int64_t sync_blocked;

    /* per tuple, the compute time before its last edge answered */
    int64_t *coll_cover;
    size_t cap_cover;

    /* out.colls holds the tuples from colls_base on, out.cmarks the marks
     * from marks_base on (the rest are in the runs); per tuple in memory,
     * the edges answered so far, per mark whether it has its counters;
     * the in-memory counts at which to try to spill again; no_spill: a
     * write failed, keep everything in memory */
    size_t colls_base, marks_base;
    uint8_t *coll_edges, *mark_done;
    size_t cap_edges, cap_done;
    struct runs coll_runs, mark_runs;
    size_t colls_check, marks_check;
    int no_spill;

    struct rsr_summary out;         /* keys and colls, built as they come */
    struct rsr_table keys;          /* a collective key's hash -> its index in out.keys */
};

void rsr_acc_set_rank(struct rsr_acc *a, int is_rank)
{
    a->is_rank = is_rank;
}

struct rsr_acc *rsr_acc_new(int64_t start_ns)
{
    struct rsr_acc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->pos = INT64_MIN;
    a->ends_min = INT64_MAX;
    a->start = start_ns;
    a->kernel_wait_ns = RSR_KERNEL_WAIT_NS;
    a->short_ns = RSR_SHORT_KERNEL_NS;
    a->min_count = RSR_SHORT_KERNEL_MIN_COUNT;
    a->fine_start = start_ns;
    a->fine_shift = 10;
    a->fine_bin = (int64_t)1 << a->fine_shift;
    a->colls_check = run_max;
    a->marks_check = marks_max();
    for (int k = 0; k < RSR_FINE_NSERIES; k++) {
        a->fine[k] = calloc(RSR_FINE_BINS, sizeof(double));
        if (!a->fine[k]) {
            for (int j = 0; j < k; j++)
                free(a->fine[j]);
            free(a);
            return NULL;
        }
    }
    return a;
}

/* ---- fine bins ---- */

/* Widens the bins (pairs merged) until t fits. */
static void fine_reach(struct rsr_acc *a, int64_t t)
{
    while (t >= a->fine_start + a->fine_bin * RSR_FINE_BINS) {
        for (int k = 0; k < RSR_FINE_NSERIES; k++) {
            double *v = a->fine[k];
            for (size_t i = 0; i < RSR_FINE_BINS / 2; i++)
                v[i] = v[2 * i] + v[2 * i + 1];
            memset(v + RSR_FINE_BINS / 2, 0, RSR_FINE_BINS / 2 * sizeof *v);
        }
        a->fine_bin = (int64_t)1 << ++a->fine_shift;
    }
}

/* Spreads amount over [s, e) in proportion; a point (e <= s) goes to s's bin. */
static void fine_spread(struct rsr_acc *a, int series, int64_t s, int64_t e, double amount)
{
    if (s < a->fine_start)
        s = a->fine_start;
    if (e < s)
        e = s;
    fine_reach(a, e);
    double *v = a->fine[series];
    int64_t k = (s - a->fine_start) >> a->fine_shift;
    /* a point, or [s, e) inside one bin (most ops): all of it there */
    if (e == s || ((e - 1 - a->fine_start) >> a->fine_shift) == k) {
        v[k] += amount;
        return;
    }
    for (int64_t lo = s; lo < e; k++) {
        int64_t be = a->fine_start + (k + 1) * a->fine_bin;
        int64_t x = e < be ? e : be;
        v[k] += amount * (double)(x - lo) / (double)(e - s);
        lo = x;
    }
}

/* ---- the stream's position and B(t) ---- */

/* GPU busy time before t, for t at or after the position. */
static int64_t busy_before(const struct rsr_acc *a, int64_t t)
{
    int64_t b = a->all.total;
    if (a->all.open && t > a->all.s)
        b += (t < a->all.e ? t : a->all.e) - a->all.s;
    return b;
}

static void heap_push(struct rsr_acc *a, int64_t t, size_t burst, int mark)
{
    if (RSR_GROW(a->heap, a->cap_heap, a->n_heap + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    struct query *h = a->heap;
    size_t i = a->n_heap++;
    while (i && h[(i - 1) / 2].t > t) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = (struct query){ t, burst, mark };
}

static struct query heap_pop(struct rsr_acc *a)
{
    struct query *h = a->heap, top = h[0], last = h[--a->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= a->n_heap)
            break;
        if (c + 1 < a->n_heap && h[c + 1].t < h[c].t)
            c++;
        if (h[c].t >= last.t)
            break;
        h[i] = h[c];
        i = c;
    }
    if (a->n_heap)
        h[i] = last;
    return top;
}

/* The open read union ends at reads.e: its idle share (see the file's
 * comment) once the stream is past that end. */
static void reads_close(struct rsr_acc *a)
{
    int64_t rs = a->reads.s, re = a->reads.e;
    a->read_ns += re - rs;
    if (!a->have_op || re <= a->lo)
        return; /* before the GPU's span */
    int64_t from = rs > a->lo ? rs : a->lo;
    int64_t busy_from = rs > a->lo ? a->reads_busy_start : 0;
    int64_t busy_to = busy_before(a, re);
    int64_t to = re < a->hi ? re : a->hi;
    if (to > from)
        a->read_idle_ns += (to - from) - (busy_to - busy_from);
    if (re > a->hi)
        a->tail_ns += re - (from > a->hi ? from : a->hi);
}

/* The GPU idle time inside h's open interval up to t (no later than its
 * end; t at or after the position), from the GPU's first work on. */
static int64_t iu_open_idle(const struct rsr_acc *a, const struct idle_uni *h, int64_t t)
{
    if (!h->u.open || !a->have_op)
        return 0;
    int64_t from = h->u.s > a->lo ? h->u.s : a->lo;
    int64_t busy_from = h->u.s > a->lo ? h->busy_start : 0;
    int64_t to = t < h->u.e ? t : h->u.e;
    return to > from ? (to - from) - (busy_before(a, to) - busy_from) : 0;
}

static void ends_update(struct rsr_acc *a);

static void iu_add(struct rsr_acc *a, struct idle_uni *h, int64_t s, int64_t e)
{
    a->class_adds++;
    int64_t cs, ce;
    int was_open = h->u.open;
    if (uni_add(&h->u, s, e, &cs, &ce))
        h->all_ns += ce - cs;
    if (!was_open)
        h->busy_start = busy_before(a, s);
    ends_update(a);
}

/* The open wait's GPU idle to its stack's entry (up to to, at or after the
 * position), from the first collective on (without collectives, the first
 * GPU work): the set-up's waits (rendezvous, communicators) are in no step
 * and say nothing of what the steps wait for. */
static void hw_close(struct rsr_acc *a, int64_t to)
{
    a->hw.open = 0;
    if (to > a->hw.e)
        to = a->hw.e;
    int64_t all = to > a->hw.s ? to - a->hw.s : 0, idle = 0;
    if (a->have_op && (a->n_answered || !(a->out.n_cmarks || a->marks_base))) {
        int64_t from = a->hw.s > a->lo ? a->hw.s : a->lo, busy_from = a->hw.s > a->lo ? a->hw.busy_start : 0;
        idle = to > from ? (to - from) - (busy_before(a, to) - busy_from) : 0;
    }
    if (idle < 0)
        idle = 0;
    if (idle <= 0 && all <= 0)
        return;
    struct rsr_summary *o = &a->out;
    uint32_t stack = a->hw.stack;
    size_t i = a->last_wstack;
    if (i >= o->n_wstacks || o->wstacks[i].stack != stack || o->wstacks[i].cls != a->hw.cls)
        for (i = 0; i < o->n_wstacks; i++)
            if (o->wstacks[i].stack == stack && o->wstacks[i].cls == a->hw.cls)
                break;
    if (i == o->n_wstacks) {
        if (o->n_wstacks >= RSR_WAIT_STACKS_MAX) {
            stack = 0;   /* the rest, together */
            for (i = 0; i < o->n_wstacks && !(o->wstacks[i].stack == 0 && o->wstacks[i].cls == a->hw.cls); i++)
                ;
        }
        if (i == o->n_wstacks) {
            if (RSR_GROW(o->wstacks, a->cap_wstacks, i + 1, 64) != 0) {
                a->failed = 1;
                return;
            }
            struct rsr_wait_stack *v = o->wstacks;
            v[i] = (struct rsr_wait_stack){ .stack = stack, .cls = a->hw.cls };
            o->n_wstacks++;
        }
    }
    o->wstacks[i].idle_ns += idle;
    o->wstacks[i].all_ns += all;
    a->last_wstack = i;
}

/* h's open interval ends at its end, which the stream is past. */
static void iu_close(struct rsr_acc *a, struct idle_uni *h)
{
    h->idle_ns += iu_open_idle(a, h, h->u.e);
    h->all_ns += h->u.open ? h->u.e - h->u.s : 0;
    h->u.open = 0;
}

/* Union time before t, for t at or after the position. */
static int64_t uni_before(const struct uni *u, int64_t t)
{
    int64_t b = u->total;
    if (u->open && t > u->s)
        b += (t < u->e ? t : u->e) - u->s;
    return b;
}

/* The step counters (summary.h) at t, for t at or after the position (an
 * earlier t is taken as the position). */
static void counters_at(const struct rsr_acc *a, int64_t t, struct rsr_step_counters *c)
{
    if (t < a->pos)
        t = a->pos;
    c->busy = busy_before(a, t);
    c->compute = uni_before(&a->comp, t);
    c->comm = uni_before(&a->comm, t);
    c->cc = uni_before(&a->cc, t);
    c->io = uni_before(&a->ios, t);
    c->wait = a->read_idle_ns + a->tail_ns;
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        c->host[k] = a->host[k].idle_ns + iu_open_idle(a, &a->host[k], t);
    c->sync_gap = a->sync_gap;
    c->blocking = a->blocking;
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        c->host[k] += a->gap_ext[k];
    c->read_ext = a->gap_ext[RSR_HOST_NCLASSES];
    /* the open read union's idle share so far, as reads_close counts it */
    if (a->reads.open && a->have_op && a->reads.s < t) {
        int64_t from = a->reads.s > a->lo ? a->reads.s : a->lo;
        int64_t busy_from = a->reads.s > a->lo ? a->reads_busy_start : 0;
        int64_t to = t < a->reads.e ? t : a->reads.e;
        if (to > from)
            c->wait += (to - from) - (busy_before(a, to) - busy_from);
    }
}

/* The host's counters at t (at or after the position) for a process with
 * no GPU work (summary.h's kmark_waits), as if its GPU idled throughout:
 * its main thread's waits by class, its reads (data loading) and its
 * I/O. */
static void cpu_counters(const struct rsr_acc *a, int64_t t, struct rsr_step_counters *c)
{
    memset(c, 0, sizeof *c);
    c->io = uni_before(&a->ios, t);
    c->wait = a->read_ns;
    if (a->reads.open && t > a->reads.s)
        c->wait += (t < a->reads.e ? t : a->reads.e) - a->reads.s;
    for (int k = 0; k < RSR_HOST_NCLASSES; k++) {
        const struct idle_uni *h = &a->host[k];
        c->host[k] = h->all_ns;
        if (h->u.open && t > h->u.s)
            c->host[k] += (t < h->u.e ? t : h->u.e) - h->u.s;
    }
}

static void kmarks_learn(struct rsr_acc *a);
static struct rsr_step_mark *mark_add(struct rsr_step_mark **arr, size_t *n, size_t *cap, int *failed);

/* The last wait mark's counters, once the stream is at its end (or the
 * stream ends); then, with RSR_STEP_LEARN marks, their period. */
static void wmark_settle(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    a->wmark_pending = 0;
    struct rsr_step_mark *mk = &o->kmarks[o->n_kmarks - 1];
    cpu_counters(a, mk->t, &mk->c);
    if (o->kmark_state == RSR_KMARK_LEARN && o->n_kmarks >= RSR_STEP_LEARN)
        kmarks_learn(a);
}

/* A main-thread wait [s, e) in stack, of a host class: a step mark while
 * the process has neither GPU work nor collectives (summary.h). */
static void wait_mark(struct rsr_acc *a, int64_t s, int64_t e, uint32_t stack)
{
    struct rsr_summary *o = &a->out;
    if (!a->is_rank || a->have_op || o->n_cmarks || a->marks_base || o->kmark_state == RSR_KMARK_NONE ||
        (o->kmark_state == RSR_KMARK_ANCHOR && stack != o->kmark_anchor))
        return;
    o->kmark_waits = 1;
    struct rsr_step_mark *last = o->n_kmarks ? &o->kmarks[o->n_kmarks - 1] : NULL;
    if (last && last->key == stack && s >= last->t && s - last->t < RSR_WMARK_JOIN_NS) {
        last->gap = e - (last->t - last->gap);
        last->t = e;
        a->wmark_pending = 1;
        return;
    }
    if (a->wmark_pending)
        wmark_settle(a);
    if (o->kmark_state == RSR_KMARK_NONE)
        return;
    struct rsr_step_mark *mk = mark_add(&o->kmarks, &o->n_kmarks, &a->cap_kmarks, &a->failed);
    if (!mk)
        return;
    mk->t = e;
    mk->gap = e - s;
    mk->key = stack;
    a->wmark_pending = 1;
}

/* The wait marks go when the process turns out to have GPU work or
 * collectives: its steps are found in those. */
static void wmarks_drop(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    if (!o->kmark_waits)
        return;
    free(o->kmarks);
    o->kmarks = NULL;
    o->n_kmarks = 0;
    a->cap_kmarks = 0;
    a->wmark_pending = 0;
    o->kmark_waits = 0;
    o->kmark_state = RSR_KMARK_LEARN;
    o->kmark_anchor = o->kmark_period = 0;
    o->kmark_score = 0;
}

/* A collective's mark, once the stream is at its start (see summary.h). */
static void mark_answer(struct rsr_acc *a, size_t i)
{
    struct rsr_step_mark *mk = &a->out.cmarks[i - a->marks_base];
    a->mark_done[i - a->marks_base] = 1;
    if (a->gap_len > 0) {
        mk->t = a->gap_end;
        mk->gap = a->gap_len;
        mk->host_ns = a->gap_host;
        mk->c = a->gap_c;
    } else {
        counters_at(a, mk->t, &mk->c);
        /* the first: as if the GPU had been idle before the stream began */
        if (!a->n_answered && a->have_op && mk->t > a->lo)
            mk->gap = mk->t - a->lo;
    }
    /* The first, too: the GPU had nothing to do from the process's first
     * record to its first work (the first batch loaded, say), however short
     * the idle its stream shows just before the mark. */
    if (!a->n_answered && a->have_op && a->lo - a->start > mk->gap)
        mk->gap = a->lo - a->start;
    a->gap_len = 0;
    a->n_answered++;
}

/* A collective's edge k at t (rsr_coll_tuple): the compute time before
 * it; from the second edge on, the share of the eighth it ends that
 * compute covered. */
static void coll_edge(struct rsr_acc *a, size_t i, int k, int64_t t)
{
    int64_t c = uni_before(&a->comp, t > a->pos ? t : a->pos);
    i -= a->colls_base;
    a->coll_edges[i]++;
    if (k > 0) {
        struct rsr_coll_tuple *x = &a->out.colls[i];
        int64_t len = x->end_ns - x->start_ns;
        int64_t from = x->start_ns + len * (k - 1) / RSR_COLL_PARTS, part = t - from;
        int64_t cover = c - a->coll_cover[i];
        if (cover > part)
            cover = part;
        x->hidden[k - 1] = part > 0 && cover > 0 ? (uint8_t)((255 * cover + part / 2) / part) : 0;
    }
    a->coll_cover[i] = c;
}

/* A pending look-up, now that the stream has passed its time. */
static void answer(struct rsr_acc *a, struct query q)
{
    if (q.mark >= QUERY_COLL_EDGE) {
        int k = q.mark - QUERY_COLL_EDGE;
        coll_edge(a, q.burst, k, q.t);
        if (k < RSR_COLL_PARTS) {
            const struct rsr_coll_tuple *x = &a->out.colls[q.burst - a->colls_base];
            heap_push(a, x->start_ns + (x->end_ns - x->start_ns) * (k + 1) / RSR_COLL_PARTS, q.burst,
                      QUERY_COLL_EDGE + k + 1);
        }
        return;
    }
    if (q.mark == QUERY_RANGE_START || q.mark == QUERY_RANGE_END) {
        struct rsr_step_range *r = &a->out.ranges[q.burst];
        counters_at(a, q.t, q.mark == QUERY_RANGE_START ? &r->c0 : &r->c1);
        return;
    }
    if (q.mark) {
        mark_answer(a, q.burst);
        return;
    }
    struct rsr_burst *b = &a->bursts[q.burst];
    if (b->end_ns == q.t)
        b->busy_end_ns = busy_before(a, q.t);
}

/* Moves the stream to x: everything that ends before x is settled with the
 * GPU busy time known so far (no op given yet starts after it). */
/* The earliest end of the open reads' and classes' unions (INT64_MAX:
 * none open), after one of them changed. */
static void ends_update(struct rsr_acc *a)
{
    int64_t m = a->reads.open ? a->reads.e : INT64_MAX;
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        if (a->host[k].u.open && a->host[k].u.e < m)
            m = a->host[k].u.e;
    a->ends_min = m;
}

static void advance(struct rsr_acc *a, int64_t x)
{
    /* the unions that end before x close in the order of their ends; the
     * look-ups before an end see its union open (counters_at) */
    for (; a->ends_min < x; ends_update(a)) {
        int which = -2;
        int64_t end = INT64_MAX;
        if (a->reads.open && a->reads.e < x)
            which = -1, end = a->reads.e;
        for (int k = 0; k < RSR_HOST_NCLASSES; k++)
            if (a->host[k].u.open && a->host[k].u.e < x && a->host[k].u.e < end)
                which = k, end = a->host[k].u.e;
        if (which == -2)
            break;  /* not reached: ends_min said one ends before x */
        while (a->n_heap && a->heap[0].t < end)
            answer(a, heap_pop(a));
        if (which == -1) {
            reads_close(a);
            a->reads.open = 0;
        } else {
            iu_close(a, &a->host[which]);
        }
    }
    while (a->n_heap && a->heap[0].t < x)
        answer(a, heap_pop(a));
    if (a->hw.open && a->hw.e < x)
        hw_close(a, a->hw.e);
}

/* The record's start, moved to the position when it came late. */
static int64_t enter(struct rsr_acc *a, int64_t start)
{
    if (start < a->pos) {
        a->late++;
        return a->pos;
    }
    if (a->wmark_pending && start >= a->out.kmarks[a->out.n_kmarks - 1].t)
        wmark_settle(a);
    advance(a, start);
    a->pos = start;
    return start;
}

/* ---- GPU ops ---- */

static struct stream_state *stream_of(struct rsr_acc *a, int32_t device, int32_t stream)
{
    size_t k = a->last_stream;
    if (k < a->n_streams && a->streams[k].idle.stream == stream && a->streams[k].idle.device == device)
        return &a->streams[k];
    for (k = 0; k < a->n_streams; k++)
        if (a->streams[k].idle.stream == stream && a->streams[k].idle.device == device)
            break;
    if (k == a->n_streams) {
        if (RSR_GROW(a->streams, a->cap_streams, k + 1, 64) != 0) {
            a->failed = 1;
            return NULL;
        }
        struct stream_state *s = a->streams;
        memset(&s[k], 0, sizeof s[k]);
        s[k].idle.device = device;
        s[k].idle.stream = stream;
        a->n_streams++;
    }
    a->last_stream = k;
    return &a->streams[k];
}

static void kernel_stat(struct rsr_acc *a, const struct rsr_acc_op *op, int64_t dur)
{
    if (op->name >= a->n_slot) {
        size_t old = a->n_slot;
        if (RSR_GROW(a->slot, a->n_slot, (size_t)op->name + 1, 64) != 0) {
            a->failed = 1;
            return;
        }
        size_t *p = a->slot;
        memset(p + old, 0, (a->n_slot - old) * sizeof *p);
    }
    if (!a->slot[op->name]) {
        if (RSR_GROW(a->stats, a->cap_stats, a->n_stats + 1, 64) != 0) {
            a->failed = 1;
            return;
        }
        struct rsr_kernel_stat *st = a->stats;
        memset(&st[a->n_stats], 0, sizeof st[a->n_stats]);
        st[a->n_stats].name = op->name;
        st[a->n_stats].cls = op->cls;
        st[a->n_stats].min_ns = dur;
        a->slot[op->name] = ++a->n_stats;
    }
    struct rsr_kernel_stat *s = &a->stats[a->slot[op->name] - 1];
    s->count++;
    if (op->device >= 0 && op->device < 64)
        s->devices |= 1ull << op->device;
    s->total_ns += dur;
    if (dur < s->min_ns)
        s->min_ns = dur;
    if (dur > s->max_ns)
        s->max_ns = dur;
    if (op->has_geom) {
        s->geom_count++;
        s->geom_ns += dur;
        s->blocks_sum += (double)op->blocks;
        s->tpb_sum += op->threads_per_block;
        s->waves_sum += op->waves;
        s->coverage_ns += (double)dur * op->sm_coverage;
        s->occupancy_ns += (double)dur * op->occupancy;
    }
    if (op->cls == RSR_GPU_COMPUTE) {
        a->n_compute++;
        if (dur < a->short_ns) {
            s->short_count++;
            s->short_ns += dur;
            a->n_short++;
            a->short_sum_ns += dur;
        }
    }
}

static struct rsr_step_mark *mark_add(struct rsr_step_mark **arr, size_t *n, size_t *cap, int *failed)
{
    if (RSR_GROW(*arr, *cap, *n + 1, 64) != 0) {
        *failed = 1;
        return NULL;
    }
    struct rsr_step_mark *m = *arr;
    memset(&m[*n], 0, sizeof m[*n]);
    return &m[(*n)++];
}

/* The first RSR_STEP_LEARN kernels are marked: if they repeat with a
 * kernel that begins each step once, only that kernel is marked from now
 * on (and the marks so far are thinned to it); else no kernel is. */
static void kmarks_learn(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    size_t n = o->n_kmarks;
    uint32_t *key = malloc(n * sizeof *key);
    int64_t *gap = malloc(n * sizeof *gap);
    double *w = malloc(n * sizeof *w);
    struct rsr_steps_found f = { 0 };
    int found = 0;
    if (key && gap && w) {
        for (size_t i = 0; i < n; i++) {
            key[i] = o->kmarks[i].key;
            gap[i] = o->kmarks[i].gap;
            w[i] = 1;
        }
        if (o->kmark_waits) {
            /* waits: the stack the most of them wait in (steps.c) */
            size_t count;
            if (rsr_steps_commonest(key, n, &f.anchor_key, &count) != 0)
                a->failed = 1;
            found = count > RSR_STEPS_MIN;
            f.period = 1;
            f.score = 1, f.covered = (double)count / (double)n;
        } else if (rsr_steps_find(key, gap, w, n, &f) != 0) {
            a->failed = 1;
        } else {
            found = f.period && f.anchor_unique;
        }
    } else {
        a->failed = 1;
    }
    if (found) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (o->kmarks[i].key == f.anchor_key)
                o->kmarks[k++] = o->kmarks[i];
        o->n_kmarks = k;
        o->kmark_state = RSR_KMARK_ANCHOR;
        o->kmark_anchor = f.anchor_key;
        o->kmark_period = (uint32_t)f.period;
        o->kmark_score = f.score * f.covered;
    } else {
        free(o->kmarks);
        o->kmarks = NULL;
        o->n_kmarks = 0;
        a->cap_kmarks = 0;
        o->kmark_state = RSR_KMARK_NONE;
    }
    rsr_steps_found_free(&f);
    free(key);
    free(gap);
    free(w);
}

/* Step marks for an op at [s, e) before it joins the unions: the idle gap
 * it ends, and its kernel mark (summary.h). */
/* Idle gaps this short are the GPU's own between back-to-back work (an H200
 * begins a kernel 2 to 4 us after the work before it), not a step's edge. */
#define STEP_GAP_MIN_NS 5000

static void step_marks(struct rsr_acc *a, const struct rsr_acc_op *op, int64_t s, int64_t e)
{
    /* the process's first GPU work ends the GPU's idle since the stream
     * began: the first step's own work may begin there (a gap inside the
     * step, a late launch, is no edge) */
    int64_t idle_from = a->all.open ? a->all.e : a->start;
    if ((a->all.open || a->n_ops == 1) && s > idle_from + STEP_GAP_MIN_NS && s - idle_from > a->gap_len) {
        a->gap_len = s - idle_from;
        a->gap_end = s;
        a->gap_host = a->all.open && a->sync_end > a->all.e && a->sync_end <= s ? a->sync_end - a->all.e : 0;
        counters_at(a, s, &a->gap_c);
    }
    if (op->cls != RSR_GPU_COMPUTE && op->cls != RSR_GPU_COMM)
        return;
    struct rsr_summary *o = &a->out;
    if (o->kmark_state == RSR_KMARK_NONE || (o->kmark_state == RSR_KMARK_ANCHOR && op->name != o->kmark_anchor))
        return;
    struct rsr_step_mark *mk = mark_add(&o->kmarks, &o->n_kmarks, &a->cap_kmarks, &a->failed);
    if (mk) {
        mk->t = s;
        mk->gap = o->n_kmarks > 1 && s > a->kmark_end ? s - a->kmark_end : 0;
        mk->key = op->name;
        counters_at(a, s, &mk->c);
    }
    if (e > a->kmark_end || o->n_kmarks == 1)
        a->kmark_end = e;
    if (o->kmark_state == RSR_KMARK_LEARN && o->n_kmarks >= RSR_STEP_LEARN) {
        if (o->n_cmarks) {
            /* the steps will come from the collectives (steps.c): not
             * worth the search, the costliest part of a short trace */
            free(o->kmarks);
            o->kmarks = NULL;
            o->n_kmarks = 0;
            a->cap_kmarks = 0;
            o->kmark_state = RSR_KMARK_NONE;
        } else {
            kmarks_learn(a);
        }
    }
}

/* Sweeps SM activity up to t: between the ends of the kernels running,
 * the sum of their SM coverage (capped at 1) and of their occupancy, and
 * whether one without geometry runs. */
static void sm_sweep(struct rsr_acc *a, int64_t t)
{
    while (a->sm_t < t) {
        int64_t next = t;
        double cov = 0, occ = 0;
        int blind = 0;
        for (size_t i = 0; i < a->n_runs; i++) {
            if (a->runs[i].end < next)
                next = a->runs[i].end;
            if (a->runs[i].cov < 0)
                blind = 1;
            else {
                cov += a->runs[i].cov;
                occ += a->runs[i].occ;
            }
        }
        if (next > a->sm_t) {
            double dt = (double)(next - a->sm_t);
            a->sm_active_ns += dt * (cov < 1 ? cov : 1);
            if (cov > 0)
                fine_spread(a, RSR_FINE_SM, a->sm_t, next, dt * (cov < 1 ? cov : 1));
            a->occupancy_ns += dt * (occ < 1 ? occ : 1);
            if (blind)
                a->no_geom_ns += next - a->sm_t;
            a->sm_t = next;
        }
        size_t k = 0;
        for (size_t i = 0; i < a->n_runs; i++)
            if (a->runs[i].end > a->sm_t)
                a->runs[k++] = a->runs[i];
        a->n_runs = k;
        if (!k)
            a->sm_t = t;
    }
}

/* A compute kernel from s to e joins the sweep. */
static void sm_add(struct rsr_acc *a, const struct rsr_acc_op *op, int64_t s, int64_t e)
{
    if (a->n_runs)
        sm_sweep(a, s);
    else if (s > a->sm_t)
        a->sm_t = s;
    if (e <= a->sm_t)
        return;
    if (RSR_GROW(a->runs, a->cap_runs, a->n_runs + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    struct sm_run *r = a->runs;
    r[a->n_runs++] = (struct sm_run){ e, op->has_geom ? op->sm_coverage : -1, op->has_geom ? op->warp_share : 0 };
}

struct rsr_acc_op rsr_acc_op_of(const struct rsr_gpu_op *op, int64_t launch_ns)
{
    return (struct rsr_acc_op){
        .start_ns = op->start_ns, .end_ns = op->end_ns, .launch_ns = launch_ns,
        .name = op->name, .stream = op->stream, .device = op->device, .cls = op->cls,
        .has_geom = op->has_geom, .threads_per_block = op->threads_per_block, .blocks = op->blocks,
        .sm_coverage = op->sm_coverage, .occupancy = op->occupancy, .waves = op->waves,
        .warp_share = op->warp_share,
    };
}

/* A GPU idle gap ends at s (the position): the class that held half of
 * it or more takes what no class held (rsr_step_counters.gap_ext); half
 * of what followed the return of a sync that waited for the GPU, when one
 * returned in it (a host slow to wake, on a busy node, was woken into that
 * work). */
static void gap_classes(struct rsr_acc *a, int64_t s)
{
    /* nothing the host did since the last gap: nothing held this one (the
     * common case: a GPU that idles between kernels of one launch loop) */
    int open = a->reads.open;
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        open |= a->host[k].u.open;
    if (!open && a->class_adds == a->class_adds_seen)
        return;
    a->class_adds_seen = a->class_adds;
    struct rsr_step_counters c;
    counters_at(a, s, &c);
    int64_t awake = s - (a->sync_end > a->all.e && a->sync_end <= s ? a->sync_end : a->all.e);
    int64_t now[RSR_HOST_NCLASSES + 1], gap = s - a->all.e, held = 0, top = 0;
    memcpy(now, c.host, sizeof c.host);
    now[RSR_HOST_NCLASSES] = c.wait + c.read_ext;
    int k_top = -1;
    for (int k = 0; k <= RSR_HOST_NCLASSES; k++) {
        int64_t d = now[k] - a->gap_prev[k];
        if (d > gap)
            d = gap;
        held += d > 0 ? d : 0;
        if (d > top)
            top = d, k_top = k;
    }
    memcpy(a->gap_prev, now, sizeof now);
    if (k_top >= 0 && 2 * top >= awake && gap > held) {
        a->gap_ext[k_top] += gap - held;
        a->gap_prev[k_top] += gap - held;  /* in the counters from now on */
    }
}

/* Adds [s, e) to the stretches of communication alone. */
static void co_put(struct rsr_acc *a, int64_t s, int64_t e)
{
    if (e <= s)
        return;
    if (a->n_co && a->co[(a->n_co - 1) % CO_RING].e == s) {
        a->co[(a->n_co - 1) % CO_RING].e = e;
        return;
    }
    a->co[a->n_co % CO_RING].s = s;
    a->co[a->n_co % CO_RING].e = e;
    a->n_co++;
}

/* Settles the communication-only time in [co_pos, to), to the start of an
 * op about to join the unions: only their open intervals reach past
 * co_pos (the closed ones ended before an op that came before), and no
 * later op starts before to, so the stretch is final. */
static void co_settle(struct rsr_acc *a, int64_t to)
{
    int64_t from = a->co_pos;
    if (to <= from)
        return;
    a->co_pos = to;
    if (!a->cc.open || a->cc.e <= from || a->cc.s >= to)
        return;
    int64_t cs = a->cc.s > from ? a->cc.s : from, ce = a->cc.e < to ? a->cc.e : to;
    if (!a->comp.open || a->comp.e <= cs || a->comp.s >= ce) {
        co_put(a, cs, ce);
        return;
    }
    co_put(a, cs, a->comp.s);
    co_put(a, a->comp.e, ce);
}

/* An op that starts at s, launched at launch (0: not known): the
 * communication-only time while it waited to start is communication that
 * held work back (summary.h's blocking). A launch's own latency is not
 * waiting: the wait counts from RSR_LAUNCH_LATENCY_NS after it. Ops start
 * in order, so the waits are counted once each up to pend_done; an op whose
 * launch is not known (an imported trace's, unlinked) waited as long as
 * anything could have. */
#define RSR_LAUNCH_LATENCY_NS 10000
static void count_blocking(struct rsr_acc *a, int64_t launch, int64_t s)
{
    co_settle(a, s);
    int64_t from = launch > 0 ? launch + RSR_LAUNCH_LATENCY_NS : INT64_MIN;
    if (from < a->pend_done)
        from = a->pend_done;
    if (s > a->pend_done)
        a->pend_done = s;
    /* the newest stretches back to from (the ring's oldest at most) */
    for (uint64_t k = a->n_co, n = 0; k > 0 && n < CO_RING; k--, n++) {
        int64_t cs = a->co[(k - 1) % CO_RING].s, ce = a->co[(k - 1) % CO_RING].e;
        if (ce <= from)
            break;
        a->blocking += (ce < s ? ce : s) - (cs > from ? cs : from);
    }
}

void rsr_acc_op(struct rsr_acc *a, const struct rsr_acc_op *op)
{
    int64_t dur = op->end_ns - op->start_ns;
    kernel_stat(a, op, dur);
    int64_t s = enter(a, op->start_ns), e = op->end_ns > s ? op->end_ns : s;
    a->n_ops++;
    if (!a->have_op) {
        wmarks_drop(a);
        a->have_op = 1;
        a->lo = s;
    }
    /* reads settled in the GPU's trailing gap count: the span goes on */
    a->read_idle_ns += a->tail_ns;
    a->tail_ns = 0;
    if (e > a->hi)
        a->hi = e;
    if (a->all.open && s > a->all.e)
        gap_classes(a, s);
    /* an idle gap that a host sync which waited for the GPU ended: it cost
     * the gap up to its return (the host woke that late; without it the
     * host would have been ahead of the GPU), at most the time it waited;
     * what the host did after it is the host's */
    if (a->all.open && s > a->all.e && a->sync_end > a->all.e && a->sync_end <= s && a->sync_start < a->all.e) {
        int64_t gap = a->sync_end - a->all.e, waited = a->sync_end - a->sync_start;
        a->sync_gap += gap < waited ? gap : waited;
    }
    count_blocking(a, op->launch_ns, s);
    step_marks(a, op, s, e);
    int64_t cs, ce;
    if (uni_add(&a->all, s, e, &cs, &ce))
        fine_spread(a, RSR_FINE_BUSY, cs, ce, (double)(ce - cs));
    if (op->cls == RSR_GPU_COMPUTE)
        uni_add(&a->comp, s, e, &cs, &ce);
    else if (op->cls == RSR_GPU_COMM)
        uni_add(&a->comm, s, e, &cs, &ce);
    else
        uni_add(&a->mem, s, e, &cs, &ce);
    if (op->cls == RSR_GPU_COMPUTE || op->cls == RSR_GPU_COMM)
        uni_add(&a->cc, s, e, &cs, &ce);
    /* SM activity is compute's: a collective's kernels wait for their
     * peers or move data, SMs nobody could fill with work */
    if (op->cls == RSR_GPU_COMPUTE)
        sm_add(a, op, s, e);

    /* the gap before it on its stream, as HTA splits it */
    struct stream_state *st = stream_of(a, op->device, op->stream);
    if (!st)
        return;
    if (st->idle.ops) {
        int64_t gap = s - st->prev_end;
        /* work on one stream runs in order: an overlap is clock noise */
        if (gap < 0)
            gap = 0;
        if (op->launch_ns && op->launch_ns > st->prev_end)
            st->idle.host_wait_ns += gap;
        else if (gap < a->kernel_wait_ns)
            st->idle.kernel_wait_ns += gap;
        else
            st->idle.other_ns += gap;
    }
    st->idle.ops++;
    st->prev_end = e;
}

/* ---- I/O ---- */

static int is_open(uint8_t op)
{
    return op == RSF_IO_OPEN || op == RSF_IO_OPENAT || op == RSF_IO_CREAT || op == RSF_IO_FOPEN;
}

static struct path_state *path_of(struct rsr_acc *a, uint32_t path)
{
    if (2 * (a->n_paths + 1) > a->cap_paths) {
        size_t nc = a->cap_paths ? a->cap_paths * 2 : 64;
        struct path_state *np = calloc(nc, sizeof *np);
        if (!np) {
            a->failed = 1;
            return NULL;
        }
        for (size_t i = 0; i < a->cap_paths; i++) {
            if (!a->paths[i].path)
                continue;
            size_t h = (a->paths[i].path * 2654435761u) & (nc - 1);
            while (np[h].path)
                h = (h + 1) & (nc - 1);
            np[h] = a->paths[i];
        }
        free(a->paths);
        a->paths = np;
        a->cap_paths = nc;
    }
    size_t h = (path * 2654435761u) & (a->cap_paths - 1);
    while (a->paths[h].path && a->paths[h].path != path)
        h = (h + 1) & (a->cap_paths - 1);
    if (!a->paths[h].path) {
        a->paths[h].path = path;
        a->n_paths++;
    }
    return &a->paths[h];
}

/* Drops the bursts that closed too small, when they are most of the array:
 * indices held by paths and queries are renumbered. */
static void bursts_compact(struct rsr_acc *a)
{
    size_t *map = malloc(a->n_bursts * sizeof *map);
    if (!map)
        return;
    size_t w = 0;
    for (size_t i = 0; i < a->n_bursts; i++)
        map[i] = a->closed[i] == 2 ? SIZE_MAX : w++;
    for (size_t i = 0; i < a->cap_paths; i++)
        if (a->paths[i].path && a->paths[i].have_burst)
            a->paths[i].burst = map[a->paths[i].burst];
    /* queries of dead bursts go; the others keep their times, so the heap
     * is rebuilt from the survivors in place */
    size_t q = 0;
    for (size_t i = 0; i < a->n_heap; i++)
        if (a->heap[i].mark)
            a->heap[q++] = a->heap[i];
        else if (map[a->heap[i].burst] != SIZE_MAX)
            a->heap[q++] = (struct query){ a->heap[i].t, map[a->heap[i].burst], 0 };
    a->n_heap = 0;
    for (size_t i = 0; i < q; i++)
        heap_push(a, a->heap[i].t, a->heap[i].burst, a->heap[i].mark);
    for (size_t i = 0; i < a->n_bursts; i++)
        if (map[i] != SIZE_MAX) {
            a->bursts[map[i]] = a->bursts[i];
            a->closed[map[i]] = a->closed[i];
        }
    a->n_bursts = w;
    a->n_dead = 0;
    free(map);
}

static void burst_close(struct rsr_acc *a, struct path_state *ps)
{
    size_t i = ps->burst;
    ps->have_burst = 0;
    a->closed[i] = a->bursts[i].bytes >= RSR_CKPT_MIN_BYTES ? 1 : 2;
    a->n_dead += a->closed[i] == 2;
}

void rsr_acc_io(struct rsr_acc *a, const struct rsr_io *io)
{
    int64_t s = enter(a, io->start_ns), e = io->end_ns > s ? io->end_ns : s;
    if (io->dir == RSF_DIR_READ) {
        a->read_bytes += io->bytes;
        fine_spread(a, RSR_FINE_READ, s, e, (double)io->bytes);
        int64_t cs, ce;
        /* advance() closed any union that ended before s: this read
         * extends the open one or opens a new one */
        int was_open = a->reads.open;
        a->class_adds++;
        uni_add(&a->reads, s, e, &cs, &ce);
        if (!was_open)
            a->reads_busy_start = busy_before(a, s);
        ends_update(a);
    } else if (io->dir == RSF_DIR_WRITE) {
        fine_spread(a, RSR_FINE_WRITE, s, e, (double)io->bytes);
    }
    /* writing: the writes, and the flushes and closes that wait for them */
    if (io->dir == RSF_DIR_WRITE || io->op == RSF_IO_FSYNC || io->op == RSF_IO_FDATASYNC ||
        io->op == RSF_IO_FFLUSH || io->op == RSF_IO_CLOSE || io->op == RSF_IO_FCLOSE)
        iu_add(a, &a->host[RSR_HOST_WRITE], s, e);
    if (io->dir == RSF_DIR_READ || io->dir == RSF_DIR_WRITE) {
        int64_t cs, ce;
        uni_add(&a->ios, s, e, &cs, &ce);
    }
    if (!io->path)
        return;
    struct path_state *ps = path_of(a, io->path);
    if (!ps)
        return;
    if (io->dir == RSF_DIR_READ)
        ps->rd += io->bytes;
    else if (io->dir == RSF_DIR_WRITE)
        ps->wr += io->bytes;
    if (ps->rd)
        return; /* a file the process reads is no checkpoint */
    if (ps->have_burst && is_open(io->op))
        burst_close(a, ps);
    if (!ps->have_burst) {
        if (a->n_dead > 1024 && a->n_dead * 2 > a->n_bursts)
            bursts_compact(a);
        if (RSR_GROW(a->bursts, a->cap_bursts, a->n_bursts + 1, 64) != 0) {
            a->failed = 1;
            return;
        }
        struct rsr_burst *b = a->bursts;
        size_t capc = a->cap_bursts;
        unsigned char *c = realloc(a->closed, capc);
        if (!c) {
            a->failed = 1;
            return;
        }
        a->closed = c;
        size_t i = a->n_bursts++;
        b[i] = (struct rsr_burst){ s, s, busy_before(a, s), 0, 0, io->path };
        c[i] = 0;
        ps->have_burst = 1;
        ps->burst = i;
    }
    struct rsr_burst *b = &a->bursts[ps->burst];
    if (io->dir == RSF_DIR_WRITE)
        b->bytes += io->bytes;
    if (e > b->end_ns || (e == b->end_ns && b->end_ns == b->start_ns)) {
        b->end_ns = e;
        heap_push(a, e, ps->burst, 0);
    }
}

void rsr_acc_sync(struct rsr_acc *a, const struct rsr_sync *y)
{
    int64_t start_ns = y->start_ns, end_ns = y->end_ns;
    enter(a, start_ns);
    a->n_syncs++;
    a->sync_blocked += end_ns - start_ns;
    if (y->kind == RSF_SYNC_STREAM_WAIT_EVENT || y->kind == RSF_SYNC_QUERY)
        return;
    if (end_ns > a->sync_end)
        a->sync_end = end_ns, a->sync_start = start_ns;
    a->recent_sync[a->n_recent % RSR_SYNC_RECENT][0] = start_ns;
    a->recent_sync[a->n_recent++ % RSR_SYNC_RECENT][1] = end_ns;
}

void rsr_acc_hwait(struct rsr_acc *a, const struct rsr_hwait *w)
{
    int64_t s = enter(a, w->start_ns), e = w->end_ns > s ? w->end_ns : s;
    /* the first step's lead (summary.h): the main thread's first wait
     * after its set-up, before the first collective */
    if (w->reason == RSR_HWAIT_SETUP) {
        if (!a->n_answered && s >= a->setup_end) {
            a->setup_end = s;
            a->out.lead_ns = 0;
        }
        return;
    }
    if (a->setup_end && !a->out.lead_ns && !a->n_answered && s >= a->setup_end) {
        a->out.lead_ns = s;
        counters_at(a, s, &a->out.lead_counters);
    }
    int k = rsr_host_class(w->reason);
    if (k < 0)
        return;
    wait_mark(a, s, e, w->stack);
    iu_add(a, &a->host[k], s, e);
    if (a->hw.open)     /* overlapping the last one (clocks' jitter): that one ends here */
        hw_close(a, s);
    a->hw.open = 1;
    a->hw.s = s, a->hw.e = e;
    a->hw.busy_start = busy_before(a, s);
    a->hw.stack = w->stack;
    a->hw.cls = (uint8_t)k;
}

/* ---- collectives ---- */

/* ---- runs: the settled head of a long array, spilled as it is built ---- */

typedef int (*cmp_fn)(const void *, const void *, void *);

/* Sorts arr[0, n) and appends it to the spill file as a run of r. 0, or -1
 * (r unchanged). */
static int run_write(struct runs *r, void *arr, size_t n, size_t elem, cmp_fn cmp, void *arg)
{
    if (RSR_GROW(r->v, r->cap, r->n + 1, 16) != 0)
        return -1;
    qsort_r(arr, n, elem, cmp, arg);
    uint64_t off;
    if (spill_write(arr, n * elem, &off) != 0)
        return -1;
    r->v[r->n++] = (struct run){ off, n };
    return 0;
}

/* How many of the first n flags are at least full, from the first. */
static size_t settled(const uint8_t *flag, size_t n, uint8_t full)
{
    size_t p = 0;
    while (p < n && flag[p] >= full)
        p++;
    return p;
}

static int cmp_tuple(const void *pa, const void *pb, void *arg);
static int cmp_mark(const void *pa, const void *pb, void *arg);

/* When at least half of run_max tuples at the head are settled, they go to
 * a run; else the next try is a quarter of run_max later. */
static void colls_spill(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    size_t n = o->n_colls - a->colls_base, p = settled(a->coll_edges, n, RSR_COLL_PARTS + 1);
    if (a->no_spill || p < run_max / 2) {
        a->colls_check = n + run_max / 4;
        return;
    }
    if (run_write(&a->coll_runs, o->colls, p, sizeof *o->colls, cmp_tuple, o->keys) != 0) {
        a->no_spill = 1;
        return;
    }
    memmove(o->colls, o->colls + p, (n - p) * sizeof *o->colls);
    memmove(a->coll_cover, a->coll_cover + p, (n - p) * sizeof *a->coll_cover);
    memmove(a->coll_edges, a->coll_edges + p, n - p);
    a->colls_base += p;
    a->colls_check = run_max;
}

static void marks_spill(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    size_t n = o->n_cmarks - a->marks_base, p = settled(a->mark_done, n, 1);
    if (a->no_spill || p < marks_max() / 2) {
        a->marks_check = n + marks_max() / 4;
        return;
    }
    if (run_write(&a->mark_runs, o->cmarks, p, sizeof *o->cmarks, cmp_mark, NULL) != 0) {
        a->no_spill = 1;
        return;
    }
    memmove(o->cmarks, o->cmarks + p, (n - p) * sizeof *o->cmarks);
    memmove(a->mark_done, a->mark_done + p, n - p);
    a->marks_base += p;
    a->marks_check = marks_max();
}

/* Elements of a run read at a time in a merge, and written at a time. */
#define MERGE_BLOCK 1024

/* One run's place in a merge. */
struct merge_src {
    uint64_t off;
    size_t left, at, n;
    char *buf;
};

struct run_merge {
    struct merge_src *src;
    size_t *heap, n_heap, elem;
    cmp_fn cmp;
    void *arg;
};

static int src_less(const struct run_merge *m, size_t a, size_t b)
{
    const struct merge_src *x = &m->src[a], *y = &m->src[b];
    int c = m->cmp(x->buf + x->at * m->elem, y->buf + y->at * m->elem, m->arg);
    return c < 0 || (c == 0 && a < b);
}

static void src_sift(struct run_merge *m, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, least = i;
        if (c < m->n_heap && src_less(m, m->heap[c], m->heap[least]))
            least = c;
        if (c + 1 < m->n_heap && src_less(m, m->heap[c + 1], m->heap[least]))
            least = c + 1;
        if (least == i)
            return;
        size_t t = m->heap[i];
        m->heap[i] = m->heap[least];
        m->heap[least] = t;
        i = least;
    }
}

/* Reads the next block of a source; 1, 0 when it is done, -1. */
static int src_fill(struct run_merge *m, struct merge_src *s)
{
    if (!s->left)
        return 0;
    size_t k = s->left < MERGE_BLOCK ? s->left : MERGE_BLOCK;
    if (spill_read(s->buf, k * m->elem, s->off) != 0)
        return -1;
    s->off += k * m->elem;
    s->left -= k;
    s->at = 0;
    s->n = k;
    return 1;
}

/* Merges the runs of r (each sorted by cmp) into one sorted stretch of the
 * spill file: its offset in *off. 0, or -1 (the runs are untouched). */
static int runs_merge(const struct runs *r, size_t elem, cmp_fn cmp, void *arg, uint64_t *off)
{
    struct run_merge m = { calloc(r->n, sizeof *m.src), malloc(r->n * sizeof *m.heap), 0, elem, cmp, arg };
    char *out = malloc(MERGE_BLOCK * elem);
    int rc = -1;
    size_t total = 0, done = 0, k;
    if (!m.src || !m.heap || !out)
        goto end;
    for (k = 0; k < r->n; k++) {
        total += r->v[k].n;
        m.src[k] = (struct merge_src){ r->v[k].off, r->v[k].n, 0, 0, malloc(MERGE_BLOCK * elem) };
        if (!m.src[k].buf || src_fill(&m, &m.src[k]) < 0)
            goto end;
        if (m.src[k].n)
            m.heap[m.n_heap++] = k;
    }
    for (size_t i = m.n_heap; i-- > 0;)
        src_sift(&m, i);
    /* the stretch, reserved whole, written a block at a time */
    uint64_t base;
    size_t nout = 0;
    if (spill_reserve(total * elem, &base) != 0)
        goto end;
    while (m.n_heap) {
        struct merge_src *s = &m.src[m.heap[0]];
        memcpy(out + nout * elem, s->buf + s->at * elem, elem);
        if (++nout == MERGE_BLOCK) {
            if (spill_put(out, nout * elem, base + done * elem) != 0)
                goto end;
            done += nout;
            nout = 0;
        }
        if (++s->at == s->n) {
            int got = src_fill(&m, s);
            if (got < 0)
                goto end;
            if (!got)
                m.heap[0] = m.heap[--m.n_heap];
        }
        src_sift(&m, 0);
    }
    if (nout && spill_put(out, nout * elem, base + done * elem) != 0)
        goto end;
    *off = base;
    rc = 0;
end:
    for (k = 0; m.src && k < r->n; k++)
        free(m.src[k].buf);
    free(m.src);
    free(m.heap);
    free(out);
    return rc;
}

/* At the end, when runs were spilled: the rest (n_mem at *arr, of n_all)
 * as a last run, and all merged into one sorted stretch of the spill file
 * (*off; *arr freed and NULL). Where that cannot be written, everything is
 * read back into memory, sorted (*arr, *off untouched). Returns 1 when
 * spilled, 0 when in memory, -1 when neither could be done. */
static int runs_finish(struct runs *r, void **arr, size_t n_mem, size_t n_all, size_t elem, cmp_fn cmp, void *arg,
                       uint64_t *off)
{
    if (!r->n)
        return 0;
    if ((!n_mem || run_write(r, *arr, n_mem, elem, cmp, arg) == 0) && runs_merge(r, elem, cmp, arg, off) == 0) {
        free(*arr);
        *arr = NULL;
        return 1;
    }
    char *all = malloc(n_all * elem);
    size_t at = 0;
    if (!all)
        return -1;
    for (size_t k = 0; k < r->n; k++, at += r->v[k - 1].n)
        if (spill_read(all + at * elem, r->v[k].n * elem, r->v[k].off) != 0) {
            free(all);
            return -1;
        }
    if (at < n_all)
        memcpy(all + at * elem, *arr, (n_all - at) * elem);
    qsort_r(all, n_all, elem, cmp, arg);
    free(*arr);
    *arr = all;
    return 0;
}

/* The tuples' and marks' runs, if any, finished (runs_finish). 0, or -1. */
static int runs_end(struct rsr_acc *a)
{
    struct rsr_summary *o = &a->out;
    void *arr = o->colls;
    uint64_t off;
    int r = runs_finish(&a->coll_runs, &arr, o->n_colls - a->colls_base, o->n_colls, sizeof *o->colls, cmp_tuple,
                        o->keys, &off);
    o->colls = arr;
    if (r == 0 && a->coll_runs.n)
        o->cap_colls = o->n_colls;
    if (r > 0) {
        o->spilled = 1;
        o->spill_off = off;
        o->colls_shift_ns = 0;
        o->cap_colls = 0;
    }
    arr = o->cmarks;
    int q = runs_finish(&a->mark_runs, &arr, o->n_cmarks - a->marks_base, o->n_cmarks, sizeof *o->cmarks, cmp_mark,
                        NULL, &off);
    o->cmarks = arr;
    if (q > 0) {
        o->marks_spilled = 1;
        o->marks_off = off;
        o->marks_shift_ns = 0;
    }
    return r < 0 || q < 0 ? -1 : 0;
}

static uint64_t key_hash(const struct rsr_coll_key *k)
{
    return (k->comm_id ^ k->bytes * 31 ^ k->op) * 0x9e3779b97f4a7c15ull >> 20;
}

static uint64_t key_hash_of(const void *ctx, size_t i)
{
    return key_hash(&((const struct rsr_summary *)ctx)->keys[i]);
}

static uint32_t key_of(struct rsr_acc *a, const struct rsr_coll_key *k)
{
    struct rsr_summary *o = &a->out;
    struct rsr_probe p = rsr_table_probe(&a->keys, key_hash(k));
    for (long i; (i = rsr_table_next(&a->keys, &p)) >= 0;) {
        const struct rsr_coll_key *x = &o->keys[i];
        if (x->comm_id == k->comm_id && x->bytes == k->bytes && x->op == k->op && x->group_size == k->group_size &&
            x->calls == k->calls && x->peer == k->peer && x->rank == k->rank)
            return (uint32_t)i;
    }
    if (RSR_GROW(o->keys, o->cap_keys, o->n_keys + 1, 64) != 0) {
        a->failed = 1;
        return 0;
    }
    o->keys[o->n_keys] = *k;
    if (rsr_table_put(&a->keys, &p, o->n_keys, 64, key_hash_of, o) != 0) {
        a->failed = 1;
        return 0;
    }
    return (uint32_t)o->n_keys++;
}

void rsr_acc_coll(struct rsr_acc *a, const struct rsr_coll *c, int32_t group_size)
{
    rsr_flight_take(&a->out.flights, c);
    if (!c->end_ns)
        return;
    wmarks_drop(a);
    int p2p = c->op == RSR_COLL_SEND || c->op == RSR_COLL_RECV;
    struct rsr_coll_key k = { c->comm_id, c->bytes, group_size, p2p ? c->peer : -1, c->rank_in_group, c->op,
                              (uint16_t)(c->group_calls > UINT16_MAX ? UINT16_MAX : c->group_calls ? c->group_calls : 1) };
    uint32_t key = key_of(a, &k);
    if (a->failed)
        return;
    struct rsr_summary *o = &a->out;
    size_t j = o->n_colls - a->colls_base;
    if (RSR_GROW(o->colls, o->cap_colls, j + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    struct rsr_coll_tuple *t = o->colls;
    if (RSR_GROW(a->coll_cover, a->cap_cover, j + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    if (RSR_GROW(a->coll_edges, a->cap_edges, j + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    uint8_t *ed = a->coll_edges;
    size_t i = o->n_colls++;
    t[j] = (struct rsr_coll_tuple){ c->start_ns, c->end_ns, c->seq, key, { 0 } };
    ed[j] = 0;
    /* its first edge; each answered edge asks for the next (answer) */
    heap_push(a, c->start_ns, i, QUERY_COLL_EDGE);
    fine_spread(a, RSR_FINE_COMM, c->start_ns, c->end_ns, (double)c->bytes);
    size_t m = o->n_cmarks - a->marks_base;
    if (RSR_GROW(o->cmarks, a->cap_cmarks, m + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    struct rsr_step_mark *mk = o->cmarks;
    if (RSR_GROW(a->mark_done, a->cap_done, m + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    uint8_t *done = a->mark_done;
    memset(&mk[m], 0, sizeof mk[m]);
    mk[m].t = c->start_ns;
    mk[m].key = key;
    done[m] = 0;
    heap_push(a, c->start_ns, o->n_cmarks++, 1);
    if (j + 1 >= a->colls_check)
        colls_spill(a);
    if (m + 1 >= a->marks_check)
        marks_spill(a);
}

void rsr_acc_range(struct rsr_acc *a, const struct rsr_range *r)
{
    if (a->failed)
        return;
    struct rsr_summary *o = &a->out;
    if (RSR_GROW(o->ranges, a->cap_ranges, o->n_ranges + 1, 64) != 0) {
        a->failed = 1;
        return;
    }
    struct rsr_step_range *v = o->ranges;
    v[o->n_ranges] = (struct rsr_step_range){ .start_ns = r->start_ns, .end_ns = r->end_ns, .name = r->name,
                                              .tid = r->tid, .depth = r->depth };
    heap_push(a, r->start_ns, o->n_ranges, QUERY_RANGE_START);
    heap_push(a, r->end_ns, o->n_ranges, QUERY_RANGE_END);
    o->n_ranges++;
}

/* ---- the end ---- */

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

static int cmp_stream(const void *pa, const void *pb)
{
    const struct rsr_stream_idle *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static void finish_gpu(struct rsr_acc *a, struct rsr_summary *o)
{
    struct rsr_gpu_breakdown *g = &o->gpu;
    if (!a->n_ops)
        return;
    g->start_ns = a->lo;
    g->end_ns = a->hi;
    g->span_ns = a->hi - a->lo;
    g->busy_ns = uni_len(&a->all);
    g->idle_ns = g->span_ns - g->busy_ns;
    g->compute_ns = uni_len(&a->comp);
    g->non_compute_ns = g->span_ns - g->compute_ns - g->idle_ns;
    g->comm_ns = uni_len(&a->comm);
    g->memcpy_ns = uni_len(&a->mem);
    /* |comm and compute| = |comm| + |compute| - |comm or compute| */
    g->overlap_ns = g->comm_ns + g->compute_ns - uni_len(&a->cc);
    g->exposed_comm_ns = g->comm_ns - g->overlap_ns;
    g->idle_pct = pct(g->idle_ns, g->span_ns);
    g->compute_pct = pct(g->compute_ns, g->span_ns);
    g->non_compute_pct = pct(g->non_compute_ns, g->span_ns);
    g->comm_pct = pct(g->comm_ns, g->span_ns);
    g->memcpy_pct = pct(g->memcpy_ns, g->span_ns);
    g->comm_comp_overlap_pct = pct(g->overlap_ns, g->comm_ns);
    g->exposed_comm_pct = pct(g->exposed_comm_ns, g->span_ns);
    sm_sweep(a, INT64_MAX / 2);
    g->kernel_busy_ns = uni_len(&a->cc);
    g->sm_active_ns = a->sm_active_ns;
    g->occupancy_ns = a->occupancy_ns;
    g->no_geom_ns = a->no_geom_ns;
    g->busy_pct = pct(g->kernel_busy_ns, g->span_ns);
    g->sm_activity_pct = g->span_ns > 0 ? 100.0 * g->sm_active_ns / (double)g->span_ns : 0;
    g->sm_occupancy_pct = g->span_ns > 0 ? 100.0 * g->occupancy_ns / (double)g->span_ns : 0;
    g->no_geometry_pct = pct(g->no_geom_ns, g->compute_ns);
    g->streams = malloc((a->n_streams ? a->n_streams : 1) * sizeof *g->streams);
    if (!g->streams) {
        a->failed = 1;
        return;
    }
    for (size_t k = 0; k < a->n_streams; k++) {
        g->streams[k] = a->streams[k].idle;
        g->host_wait_ns += a->streams[k].idle.host_wait_ns;
        g->kernel_wait_ns += a->streams[k].idle.kernel_wait_ns;
        g->other_idle_ns += a->streams[k].idle.other_ns;
    }
    g->n_streams = a->n_streams;
    if (a->n_streams > 1)
        qsort(g->streams, a->n_streams, sizeof *g->streams, cmp_stream);
}

static int cmp_total(const void *pa, const void *pb)
{
    const struct rsr_kernel_stat *a = pa, *b = pb;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

static int cmp_short(const void *pa, const void *pb)
{
    const struct rsr_kernel_stat *a = *(const struct rsr_kernel_stat *const *)pa;
    const struct rsr_kernel_stat *b = *(const struct rsr_kernel_stat *const *)pb;
    if (a->short_count != b->short_count)
        return a->short_count > b->short_count ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

static void finish_kernels(struct rsr_acc *a, struct rsr_summary *o)
{
    struct rsr_kernel_summary *k = &o->kernels;
    size_t n = a->n_stats;
    if (!n)
        return;
    struct rsr_kernel_stat *stats = a->stats;
    a->stats = NULL;
    for (size_t i = 0; i < n; i++)
        stats[i].mean_ns = (double)stats[i].total_ns / (double)stats[i].count;
    qsort(stats, n, sizeof *stats, cmp_total);
    k->stats = stats;
    k->n = n;
    k->n_compute = a->n_compute;
    k->n_short = a->n_short;
    k->short_ns = a->short_sum_ns;
    size_t ncand = 0;
    for (size_t i = 0; i < n; i++)
        ncand += stats[i].short_count >= a->min_count && stats[i].short_count > 0;
    if (!ncand)
        return;
    k->short_names = malloc(ncand * sizeof *k->short_names);
    if (!k->short_names) {
        a->failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (stats[i].short_count >= a->min_count && stats[i].short_count > 0)
            k->short_names[k->n_short_names++] = &stats[i];
    qsort(k->short_names, ncand, sizeof *k->short_names, cmp_short);
}

static int cmp_tuple(const void *pa, const void *pb, void *arg)
{
    const struct rsr_coll_tuple *a = pa, *b = pb;
    const struct rsr_coll_key *keys = arg;
    uint64_t ca = keys[a->key].comm_id, cb = keys[b->key].comm_id;
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->end_ns != b->end_ns)
        return a->end_ns < b->end_ns ? -1 : 1;
    return (a->key > b->key) - (a->key < b->key);
}

static int cmp_mark(const void *pa, const void *pb, void *arg)
{
    (void)arg;
    const struct rsr_step_mark *a = pa, *b = pb;
    return (a->t > b->t) - (a->t < b->t);
}

/* Marks in time order; kernel marks only where there are no collectives. */
static void finish_marks(struct rsr_summary *o)
{
    if (o->n_cmarks > 1 && !o->marks_spilled)
        qsort_r(o->cmarks, o->n_cmarks, sizeof *o->cmarks, cmp_mark, NULL);
    if (o->n_cmarks || o->kmark_state == RSR_KMARK_NONE) {
        free(o->kmarks);
        o->kmarks = NULL;
        o->n_kmarks = 0;
    }
}

/* The bursts of paths written enough and never read, in start order. */
static void finish_bursts(struct rsr_acc *a, struct rsr_summary *o)
{
    for (size_t i = 0; i < a->cap_paths; i++)
        if (a->paths[i].path && a->paths[i].have_burst)
            burst_close(a, &a->paths[i]);
    size_t w = 0;
    for (size_t i = 0; i < a->n_bursts; i++) {
        if (a->closed[i] != 1)
            continue;
        const struct path_state *ps = path_of(a, a->bursts[i].path);
        if (!ps || ps->rd || ps->wr < RSR_CKPT_MIN_BYTES)
            continue;
        a->bursts[w++] = a->bursts[i];
    }
    o->bursts = a->bursts;
    o->n_bursts = w;
    a->bursts = NULL;
}

int rsr_acc_finish(struct rsr_acc *a, struct rsr_summary *out)
{
    /* everything still pending ends at or after the position: B is known */
    while (a->n_heap)
        answer(a, heap_pop(a));
    if (runs_end(a) != 0)
        a->failed = 1;
    /* a process without GPU work: its wait marks' counters, and its end's,
     * before the unions close */
    struct rsr_step_counters cpu_end;
    if (a->wmark_pending)
        wmark_settle(a);
    if (a->out.kmark_waits)
        cpu_counters(a, INT64_MAX, &cpu_end);
    if (a->reads.open)
        reads_close(a);
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        if (a->host[k].u.open)
            iu_close(a, &a->host[k]);
    if (a->hw.open)
        hw_close(a, a->hw.e);
    struct rsr_step_counters *ec = &a->out.end_counters;
    *ec = (struct rsr_step_counters){ uni_len(&a->all), uni_len(&a->comp), uni_len(&a->comm), uni_len(&a->cc),
                                      uni_len(&a->ios), a->read_idle_ns, { 0 }, a->gap_ext[RSR_HOST_NCLASSES],
                                      a->sync_gap, a->blocking };
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        ec->host[k] = a->host[k].idle_ns + a->gap_ext[k];
    if (a->out.kmark_waits)
        *ec = cpu_end;
    if (a->all.open)
        fine_spread(a, RSR_FINE_BUSY, a->all.s, a->all.e, (double)(a->all.e - a->all.s));
    *out = a->out;
    memset(&a->out, 0, sizeof a->out);
    finish_gpu(a, out);
    finish_kernels(a, out);
    out->n_ops = a->n_ops;
    finish_bursts(a, out);
    struct rsr_data_loading *dl = &out->loading;
    dl->read_ns = a->read_ns;
    dl->read_idle_ns = a->read_idle_ns;
    dl->read_bytes = a->read_bytes;
    dl->pct = out->gpu.span_ns > 0 ? 100.0 * (double)dl->read_idle_ns / (double)out->gpu.span_ns : 0;
    out->fine_start_ns = a->fine_start;
    out->fine_bin_ns = a->fine_bin;
    for (int k = 0; k < RSR_FINE_NSERIES; k++) {
        out->fine[k] = a->fine[k];
        a->fine[k] = NULL;
    }
    if (a->sm_active_ns <= 0) {
        /* no launch geometry: no SM series to keep (a job of many ranks) */
        free(out->fine[RSR_FINE_SM]);
        out->fine[RSR_FINE_SM] = NULL;
    }
    /* A series with nothing in it is not kept either (most ranks read and
     * write no files): its readers take a missing series for zeros, and a
     * job of 1,024 ranks holds 32 KB less a rank for each. */
    for (int k = 0; k < RSR_FINE_NSERIES; k++) {
        const double *v = out->fine[k];
        size_t i = 0;
        while (v && i < RSR_FINE_BINS && v[i] == 0)
            i++;
        if (v && i == RSR_FINE_BINS) {
            free(out->fine[k]);
            out->fine[k] = NULL;
        }
    }
    out->n_syncs = a->n_syncs;
    out->sync_blocked_ns = a->sync_blocked;
    for (uint64_t k = 0; k < a->n_recent && k < RSR_SYNC_RECENT && a->all.open; k++) {
        const int64_t *y = a->recent_sync[k];
        if (y[0] <= a->all.e && y[1] >= a->all.e && y[1] > out->host_end_ns)
            out->host_end_ns = y[1];
    }
    out->late = a->late;
    finish_marks(out);
    /* in (communicator, seq) order, so that a merge reads them across ranks */
    if (out->n_colls > 1 && !out->spilled)
        qsort_r(out->colls, out->n_colls, sizeof *out->colls, cmp_tuple, out->keys);
    int rc = a->failed ? -1 : 0;
    free(a->streams);
    free(a->runs);
    free(a->stats);
    free(a->slot);
    free(a->paths);
    free(a->bursts);
    free(a->closed);
    free(a->heap);
    rsr_table_free(&a->keys);
    free(a->coll_cover);
    free(a->coll_edges);
    free(a->mark_done);
    free(a->coll_runs.v);
    free(a->mark_runs.v);
    free(a);
    return rc;
}

void rsr_summary_free(struct rsr_summary *s)
{
    rsr_gpu_breakdown_free(&s->gpu);
    rsr_kernel_summary_free(&s->kernels);
    free(s->keys);
    free(s->colls);
    free(s->bursts);
    free(s->cmarks);
    free(s->kmarks);
    free(s->ranges);
    free(s->wstacks);
    for (int k = 0; k < RSR_FINE_NSERIES; k++)
        free(s->fine[k]);
    memset(s, 0, sizeof *s);
}

void rsr_summary_shift(struct rsr_summary *s, int64_t d)
{
    if (s->gpu.span_ns || s->n_ops) {
        s->gpu.start_ns += d;
        s->gpu.end_ns += d;
    }
    s->colls_shift_ns += s->spilled ? d : 0;
    for (size_t i = 0; i < s->n_colls && !s->spilled; i++) {
        s->colls[i].start_ns += d;
        s->colls[i].end_ns += d;
    }
    for (size_t i = 0; i < s->n_bursts; i++) {
        s->bursts[i].start_ns += d;
        s->bursts[i].end_ns += d;
    }
    if (s->host_end_ns)
        s->host_end_ns += d;
    if (s->lead_ns)
        s->lead_ns += d;
    s->marks_shift_ns += s->marks_spilled ? d : 0;
    for (size_t i = 0; i < s->n_cmarks && !s->marks_spilled; i++)
        s->cmarks[i].t += d;
    for (size_t i = 0; i < s->n_kmarks; i++)
        s->kmarks[i].t += d;
    for (size_t i = 0; i < s->n_ranges; i++) {
        s->ranges[i].start_ns += d;
        s->ranges[i].end_ns += d;
    }
    s->fine_start_ns += d;
    for (uint32_t i = 0; i < s->flights.n; i++) {
        struct rsr_flight *f = &s->flights.v[i];
        if (f->done_seq >= 0)
            f->done_end_ns += d;
        for (uint32_t k = 0; k < f->n_open; k++)
            f->open[k].launch_ns += d;
    }
}

int64_t rsr_summary_idle_within(const struct rsr_summary *s, const struct rsr_burst *b0, const struct rsr_burst *b1)
{
    int64_t lo = s->gpu.start_ns, hi = s->gpu.end_ns;
    if (!s->n_ops)
        return 0;
    int64_t from = b0->start_ns > lo ? b0->start_ns : lo;
    int64_t to = b1->end_ns < hi ? b1->end_ns : hi;
    if (to <= from)
        return 0;
    int64_t busy_from = b0->start_ns > lo ? b0->busy_start_ns : 0;
    int64_t busy_to = b1->end_ns < hi ? b1->busy_end_ns : s->gpu.busy_ns;
    return (to - from) - (busy_to - busy_from);
}

void rsr_summary_rebin(const struct rsr_summary *s, int series, double *v, int64_t start_ns, int64_t bin_ns,
                       size_t nbins)
{
    const double *f = s->fine[series];
    if (!f || bin_ns <= 0)
        return;
    int64_t end_all = start_ns + bin_ns * (int64_t)nbins;
    for (size_t i = 0; i < RSR_FINE_BINS; i++) {
        if (f[i] == 0)
            continue;
        int64_t fs = s->fine_start_ns + (int64_t)i * s->fine_bin_ns, fe = fs + s->fine_bin_ns;
        int64_t lo = fs > start_ns ? fs : start_ns, hi = fe < end_all ? fe : end_all;
        for (int64_t k = (lo - start_ns) / bin_ns; lo < hi; k++) {
            int64_t be = start_ns + (k + 1) * bin_ns;
            int64_t x = hi < be ? hi : be;
            v[k] += f[i] * (double)(x - lo) / (double)(fe - fs);
            lo = x;
        }
    }
}

/* ---- the spill file and reading tuples back ---- */

static pthread_mutex_t spill_lock = PTHREAD_MUTEX_INITIALIZER;
static int spill_fd = -1;
static _Atomic uint64_t spill_end;

/* The spill file's descriptor, made on first use (tmpfile: unlinked, so
 * it goes with the process); -1 when it cannot be made. */
static int spill_file(void)
{
    pthread_mutex_lock(&spill_lock);
    if (spill_fd < 0) {
        FILE *f = tmpfile();
        if (f)
            spill_fd = fileno(f);
    }
    int fd = spill_fd;
    pthread_mutex_unlock(&spill_lock);
    return fd;
}

/* Room for len bytes at the spill file's end: its offset in *off. 0, or
 * -1 when there is no spill file. */
static int spill_reserve(size_t len, uint64_t *off)
{
    if (spill_file() < 0)
        return -1;
    *off = atomic_fetch_add(&spill_end, len);
    return 0;
}

/* Writes len bytes at p at off of the spill file (reserved). 0, or -1. */
static int spill_put(const void *p, size_t len, uint64_t off)
{
    for (size_t done = 0; done < len;) {
        ssize_t w = pwrite(spill_fd, (const char *)p + done, len - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

/* Appends len bytes at p to the spill file; its offset in *off. 0, or -1. */
static int spill_write(const void *p, size_t len, uint64_t *off)
{
    return spill_reserve(len, off) == 0 ? spill_put(p, len, *off) : -1;
}

/* Reads len bytes at off of the spill file into p. 0, or -1. */
static int spill_read(void *p, size_t len, uint64_t off)
{
    for (size_t got = 0; got < len;) {
        ssize_t r = pread(spill_fd, (char *)p + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (!r)
                errno = EIO;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

int rsr_spill_reserve(size_t len, uint64_t *off)
{
    return spill_reserve(len, off);
}

int rsr_spill_put(const void *p, size_t len, uint64_t off)
{
    return spill_put(p, len, off);
}

int rsr_spill_read(void *p, size_t len, uint64_t off)
{
    return spill_read(p, len, off);
}

int rsr_summary_spill(struct rsr_summary *s)
{
    int rc = 0;
    if (!s->spilled && s->n_colls) {
        uint64_t off;
        if (spill_write(s->colls, s->n_colls * sizeof *s->colls, &off) == 0) {
            free(s->colls);
            s->colls = NULL;
            s->cap_colls = 0;
            s->spilled = 1;
            s->spill_off = off;
            s->colls_shift_ns = 0;
        } else {
            rc = -1;
        }
    }
    if (!s->marks_spilled && s->n_cmarks) {
        uint64_t off;
        if (spill_write(s->cmarks, s->n_cmarks * sizeof *s->cmarks, &off) == 0) {
            free(s->cmarks);
            s->cmarks = NULL;
            s->marks_spilled = 1;
            s->marks_off = off;
            s->marks_shift_ns = 0;
        } else {
            rc = -1;
        }
    }
    return rc;
}

int rsr_summary_cmarks_read(const struct rsr_summary *s, size_t i, size_t n, struct rsr_step_mark *buf)
{
    if (!s->marks_spilled) {
        memcpy(buf, s->cmarks + i, n * sizeof *buf);
        return 0;
    }
    if (spill_read(buf, n * sizeof *buf, s->marks_off + i * sizeof *buf) != 0)
        return -1;
    for (size_t k = 0; k < n; k++)
        buf[k].t += s->marks_shift_ns;
    return 0;
}

int rsr_summary_unspill(struct rsr_summary *s)
{
    if (!s->spilled)
        return 0;
    struct rsr_coll_tuple *t = malloc(s->n_colls * sizeof *t);
    struct rsr_coll_cursor c;
    rsr_coll_cursor_open(&c, s);
    for (size_t i = 0; t && i < s->n_colls; i++)
        if (rsr_coll_cursor_next(&c, &t[i]) != 1) {
            free(t);
            return -1;
        }
    if (!t)
        return -1;
    s->colls = t;
    s->cap_colls = s->n_colls;
    s->spilled = 0;
    s->colls_shift_ns = 0;
    return 0;
}

size_t rsr_summary_bytes(const struct rsr_summary *s)
{
    size_t b = s->cap_keys * sizeof *s->keys + s->cap_colls * sizeof *s->colls +
               s->n_bursts * sizeof *s->bursts + s->gpu.n_streams * sizeof *s->gpu.streams +
               s->kernels.n * sizeof *s->kernels.stats + s->kernels.n_short_names * sizeof *s->kernels.short_names +
               ((s->marks_spilled ? 0 : s->n_cmarks) + s->n_kmarks) * sizeof(struct rsr_step_mark) +
               s->n_ranges * sizeof *s->ranges + s->n_wstacks * sizeof *s->wstacks;
    for (int k = 0; k < RSR_FINE_NSERIES; k++)
        b += s->fine[k] ? RSR_FINE_BINS * sizeof(double) : 0;
    return b;
}

int64_t rsr_coll_hidden_ns(const struct rsr_coll_tuple *t, int64_t to)
{
    int64_t len = t->end_ns - t->start_ns;
    if (len <= 0 || to <= t->start_ns)
        return 0;
    double hid = 0;
    for (int k = 0; k < RSR_COLL_PARTS; k++) {
        int64_t from = t->start_ns + len * k / RSR_COLL_PARTS, end = t->start_ns + len * (k + 1) / RSR_COLL_PARTS;
        if (from >= to)
            break;
        int64_t in = (to < end ? to : end) - from;
        hid += (double)in * t->hidden[k] / 255.0;
    }
    return (int64_t)(hid + 0.5);
}

void rsr_coll_cursor_open(struct rsr_coll_cursor *c, const struct rsr_summary *s)
{
    c->s = s;
    c->next = c->at = c->n = 0;
}

int rsr_coll_cursor_next(struct rsr_coll_cursor *c, struct rsr_coll_tuple *t)
{
    const struct rsr_summary *s = c->s;
    if (!s->spilled) {
        if (c->next >= s->n_colls)
            return 0;
        *t = s->colls[c->next++];
        return 1;
    }
    if (c->at == c->n) {
        size_t want = s->n_colls - c->next;
        if (!want)
            return 0;
        if (want > sizeof c->buf / sizeof c->buf[0])
            want = sizeof c->buf / sizeof c->buf[0];
        if (spill_read(c->buf, want * sizeof c->buf[0], s->spill_off + c->next * sizeof c->buf[0]) != 0)
            return -1;
        c->next += want;
        c->at = 0;
        c->n = want;
    }
    *t = c->buf[c->at++];
    t->start_ns += s->colls_shift_ns;
    t->end_ns += s->colls_shift_ns;
    return 1;
}

/* The merge's order: (communicator, seq, model). */
static int entry_less(const struct rsr_coll_entry *a, const struct rsr_coll_entry *b)
{
    if (a->k->comm_id != b->k->comm_id)
        return a->k->comm_id < b->k->comm_id;
    if (a->t.seq != b->t.seq)
        return a->t.seq < b->t.seq;
    return a->model < b->model;
}

static void merge_sift_down(struct rsr_coll_merge *m, size_t i)
{
    uint32_t *h = m->heap;
    for (;;) {
        size_t l = 2 * i + 1, least = i;
        if (l < m->n_heap && entry_less(&m->head[h[l]], &m->head[h[least]]))
            least = l;
        if (l + 1 < m->n_heap && entry_less(&m->head[h[l + 1]], &m->head[h[least]]))
            least = l + 1;
        if (least == i)
            return;
        uint32_t x = h[i];
        h[i] = h[least];
        h[least] = x;
        i = least;
    }
}

/* Reads model i's next tuple into its head: 1, 0 at its end, -1 on error. */
static int merge_advance(struct rsr_coll_merge *m, uint32_t i)
{
    const struct rsr_summary *s = m->models[i]->sum;
    int r = rsr_coll_cursor_next(&m->cur[i], &m->head[i].t);
    if (r > 0) {
        m->head[i].model = i;
        m->head[i].k = &s->keys[m->head[i].t.key];
    }
    return r;
}

int rsr_coll_merge_open(struct rsr_coll_merge *m, struct rsr_model *const *models, size_t n)
{
    memset(m, 0, sizeof *m);
    m->n = n;
    m->models = models;
    m->cur = malloc((n ? n : 1) * sizeof *m->cur);
    m->head = malloc((n ? n : 1) * sizeof *m->head);
    m->heap = malloc((n ? n : 1) * sizeof *m->heap);
    if (!m->cur || !m->head || !m->heap) {
        rsr_coll_merge_close(m);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!models[i]->sum)
            continue;
        rsr_coll_cursor_open(&m->cur[i], models[i]->sum);
        int r = merge_advance(m, (uint32_t)i);
        if (r < 0)
            m->failed = 1;
        if (r > 0)
            m->heap[m->n_heap++] = (uint32_t)i;
    }
    for (size_t i = m->n_heap / 2; i-- > 0;)
        merge_sift_down(m, i);
    return 0;
}

long rsr_coll_merge_next(struct rsr_coll_merge *m, const struct rsr_coll_entry **entries)
{
    if (m->failed)
        return -1;
    if (!m->n_heap)
        return 0;
    uint64_t comm = m->head[m->heap[0]].k->comm_id;
    uint32_t seq = m->head[m->heap[0]].t.seq;
    size_t n = 0;
    while (m->n_heap) {
        uint32_t i = m->heap[0];
        if (m->head[i].k->comm_id != comm || m->head[i].t.seq != seq)
            break;
        if (RSR_GROW(m->group, m->cap_group, n + 1, 64) != 0)
            return -1;
        m->group[n++] = m->head[i];
        int r = merge_advance(m, i);
        if (r < 0)
            return m->failed = 1, -1;
        if (r == 0)
            m->heap[0] = m->heap[--m->n_heap];
        merge_sift_down(m, 0);
    }
    *entries = m->group;
    return (long)n;
}

void rsr_coll_merge_close(struct rsr_coll_merge *m)
{
    free(m->cur);
    free(m->head);
    free(m->heap);
    free(m->group);
    memset(m, 0, sizeof *m);
}

/* ---- a whole model ---- */

int rsr_summary_of_records(const struct rsr_model *m, int64_t kernel_wait_ns, int64_t short_ns,
                           uint64_t min_count, struct rsr_summary *out)
{
    memset(out, 0, sizeof *out);
    int64_t start = INT64_MAX;
    if (m->n_ops && m->ops[0].start_ns < start)
        start = m->ops[0].start_ns;
    if (m->n_io && m->io[0].start_ns < start)
        start = m->io[0].start_ns;
    if (m->n_syncs && m->syncs[0].start_ns < start)
        start = m->syncs[0].start_ns;
    if (m->n_hwaits && m->hwaits[0].start_ns < start)
        start = m->hwaits[0].start_ns;
    for (size_t k = 0; k < m->n_colls; k++)
        if (m->colls[k].end_ns && m->colls[k].start_ns < start)
            start = m->colls[k].start_ns;
    if (start == INT64_MAX)
        start = m->wall_start_ns;
    struct rsr_acc *a = rsr_acc_new(start);
    if (!a)
        return -1;
    rsr_acc_set_rank(a, m->rank >= 0);
    a->kernel_wait_ns = kernel_wait_ns;
    a->short_ns = short_ns;
    a->min_count = min_count;
    /* collectives first: their step marks wait for the ops to pass them */
    for (size_t c = 0; c < m->n_colls; c++)
        rsr_acc_coll(a, &m->colls[c], m->colls[c].group_size);
    for (size_t r = 0; r < m->n_ranges; r++)
        if (rsr_step_range_name(rsr_model_str(m, m->ranges[r].name)))
            rsr_acc_range(a, &m->ranges[r]);
    size_t i = 0, j = 0, k = 0, h = 0;
    for (;;) {
        int64_t t_op = i < m->n_ops ? m->ops[i].start_ns : INT64_MAX;
        int64_t t_io = j < m->n_io ? m->io[j].start_ns : INT64_MAX;
        int64_t t_sy = k < m->n_syncs ? m->syncs[k].start_ns : INT64_MAX;
        int64_t t_hw = h < m->n_hwaits ? m->hwaits[h].start_ns : INT64_MAX;
        if (i >= m->n_ops && j >= m->n_io && k >= m->n_syncs && h >= m->n_hwaits)
            break;
        if (h < m->n_hwaits && t_hw < t_op && t_hw < t_io && t_hw < t_sy) {
            rsr_acc_hwait(a, &m->hwaits[h++]);
        } else if (i < m->n_ops && t_op <= t_io && t_op <= t_sy) {
            const struct rsr_gpu_op *op = &m->ops[i++];
            const struct rsr_launch *l = op->launch_ns ? NULL : rsr_model_find_launch(m, op->correlation);
            struct rsr_acc_op x = rsr_acc_op_of(op, op->launch_ns ? op->launch_ns : l ? l->start_ns : 0);
            rsr_acc_op(a, &x);
        } else if (j < m->n_io && t_io <= t_sy) {
            rsr_acc_io(a, &m->io[j++]);
        } else {
            rsr_acc_sync(a, &m->syncs[k]);
            k++;
        }
    }
    return rsr_acc_finish(a, out);
}

int rsr_summary_of_ops(const struct rsr_model *m, int64_t kernel_wait_ns, int64_t short_ns, uint64_t min_count,
                       struct rsr_summary *out)
{
    struct rsr_model ops_only = *m;
    ops_only.n_io = ops_only.n_syncs = ops_only.n_hwaits = ops_only.n_colls = ops_only.n_ranges = 0;
    return rsr_summary_of_records(&ops_only, kernel_wait_ns, short_ns, min_count, out);
}

int rsr_model_summarize(struct rsr_model *m)
{
    struct rsr_summary *s = malloc(sizeof *s);
    if (!s)
        return -1;
    int rc = rsr_summary_of_records(m, RSR_KERNEL_WAIT_NS, RSR_SHORT_KERNEL_NS, RSR_SHORT_KERNEL_MIN_COUNT, s);
    if (m->sum) {
        rsr_summary_free(m->sum);
        free(m->sum);
    }
    m->sum = s;
    m->sum->late += m->late;
    return rc;
}

struct rsr_summary *rsr_model_summary(struct rsr_model *m)
{
    if (!m->sum && rsr_model_summarize(m) != 0 && !m->sum)
        return NULL;
    return m->sum;
}

/* ---- whole-model entry points: the GPU breakdown (gpu_breakdown.h) and
 * the kernel table (kernels.h), each the one part of a summary of the ops */

int rsr_gpu_breakdown_compute(const struct rsr_model *m, int64_t kernel_wait_ns,
                              struct rsr_gpu_breakdown *out)
{
    memset(out, 0, sizeof *out);
    struct rsr_summary s;
    int rc = rsr_summary_of_ops(m, kernel_wait_ns, RSR_SHORT_KERNEL_NS, RSR_SHORT_KERNEL_MIN_COUNT, &s);
    if (rc == 0) {
        *out = s.gpu;
        memset(&s.gpu, 0, sizeof s.gpu);
    }
    rsr_summary_free(&s);
    return rc;
}

const struct rsr_stream_idle *rsr_gpu_busiest_stream(const struct rsr_gpu_breakdown *b)
{
    const struct rsr_stream_idle *best = NULL;
    for (size_t i = 0; i < b->n_streams; i++)
        if (!best || b->streams[i].ops > best->ops)
            best = &b->streams[i];
    return best;
}

void rsr_gpu_breakdown_free(struct rsr_gpu_breakdown *b)
{
    free(b->streams);
    b->streams = NULL;
    b->n_streams = 0;
}

int rsr_kernels_summarize(const struct rsr_model *m, int64_t short_ns, uint64_t min_count,
                          struct rsr_kernel_summary *out)
{
    memset(out, 0, sizeof *out);
    struct rsr_summary s;
    int rc = rsr_summary_of_ops(m, RSR_KERNEL_WAIT_NS, short_ns, min_count, &s);
    if (rc == 0) {
        *out = s.kernels;
        memset(&s.kernels, 0, sizeof s.kernels);
    }
    rsr_summary_free(&s);
    return rc;
}

void rsr_kernel_summary_free(struct rsr_kernel_summary *s)
{
    free(s->stats);
    free(s->short_names);
    s->stats = NULL;
    s->short_names = NULL;
    s->n = s->n_short_names = 0;
}
