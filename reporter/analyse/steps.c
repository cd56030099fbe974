/* Training steps from the repetition of each process's work, and the job's
 * steps across ranks (see steps.h for the method). A source of steps is
 * anything that gives a process a list of steps with the counters
 * (summary.h) at their ends: here the period of its collectives or
 * kernels; ranges named by the program (NVTX, Kineto's ProfilerStep) give
 * such a list directly. */
#include "reporter/analyse/steps.h"
#include "reporter/load/memory.h"
#include "reporter/load/summary.h"
#include "reporter/load/period.h"
#include "reporter/base/order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one process: its steps with their counters ---- */

struct pstep {
    int64_t start, end;
    uint8_t phase;
    struct rsr_step_counters d;
    /* where the counters d were taken: a step begins where the host
     * returned from its sync or a checkpoint ended, its counters at the
     * mark after the GPU's idle gap (the critical path, critpath.h, needs
     * the two to agree) */
    int64_t d_start, d_end;
    uint32_t colls;             /* collectives in it (0: not known) */
};

enum step_source { SRC_COLLECTIVES, SRC_KERNELS, SRC_NVTX, SRC_KINETO, SRC_WAITS, SRC_N };

static const char *const source_name[SRC_N] = { "collectives", "kernels", "nvtx", "kineto", "waits" };

/* A process's steps as they are made (proc_take): counted, and folded
 * into the job's steps when job is set. */
struct proc {
    size_t model;
    size_t n;
    double conf;
    int src;                    /* enum step_source */
    struct rsr_steps *job;      /* the job's steps; NULL: count only */
    int first;                  /* the first process folded: each step starts afresh */
    /* fold each step into the job's step that begins nearest it (within
     * half that step, and as long within half) rather than by its index:
     * a rank whose steps are from its waits and that has fewer or more
     * than the others (a step's wait under the agent's threshold made two
     * steps one); at: the job's step to look from (steps come in order) */
    int by_time;
    size_t at;
    const struct rsr_model *m;
    size_t bur;                 /* fold_one's place in the checkpoint bursts */
    struct rsr_cp_typical typ;  /* its steps without a checkpoint so far (critpath.h) */
    double loader[RSR_HOST_NCLASSES];   /* stack_shares: data loading's */
    double coll[RSR_HOST_NCLASSES];     /* and a collective's, for a process without GPU work */
    int cpu;                            /* its steps are from its waits: no GPU work */
    double starved;                     /* rsr_cp_in's */
    int64_t broke;              /* when a rank ran out of GPU memory and ended the job (0: none) */
};

static void fold_one(struct rsr_step *t, const struct pstep *x, struct proc *p);

static void proc_take(struct proc *p, const struct pstep *x)
{
    if (p->job && p->by_time) {
        /* the job's steps have their starts from the processes folded by
         * index, all before this one */
        size_t n = p->job->n;
        while (p->at + 1 < n && rsr_step_get(p->job, p->at + 1)->start_ns <= x->start)
            p->at++;
        size_t best = p->at;
        if (best + 1 < n && rsr_step_get(p->job, best + 1)->start_ns - x->start <
                                x->start - rsr_step_get(p->job, best)->start_ns)
            best++;
        const struct rsr_step *t = best < n ? rsr_step_get(p->job, best) : NULL;
        int64_t len = t ? t->end_ns - t->start_ns : 0, d = t ? x->start - t->start_ns : 0;
        int64_t dl = t ? (x->end - x->start) - len : 0;
        /* the same step: it begins, and lasts, within half of it (two
         * steps made one are in neither) */
        if (t && (d < 0 ? -d : d) <= len / 2 && (dl < 0 ? -dl : dl) <= len / 2) {
            fold_one(rsr_step_mut(p->job, best), x, p);
            p->at = best + 1;
        }
    } else if (p->job && p->n < p->job->n) {
        fold_one(rsr_step_mut(p->job, p->n), x, p);
    }
    p->n++;
}

static struct rsr_step_counters sub(const struct rsr_step_counters *a, const struct rsr_step_counters *b)
{
    struct rsr_step_counters d = { a->busy - b->busy, a->compute - b->compute, a->comm - b->comm,
                                   a->cc - b->cc, a->io - b->io, a->wait - b->wait, { 0 },
                                   a->read_ext - b->read_ext, a->sync_gap - b->sync_gap,
                                   a->blocking - b->blocking };
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        d.host[k] = a->host[k] - b->host[k];
    return d;
}

/* The steps of segments segs over marks mk[0..nm) of summary s. */
/* A process's step marks, read a block at a time (summary.h: the
 * collective marks may be in the spill file) so that no more than a block
 * of them is held: kernel marks are always in memory. */
#define MARK_BLOCK 1024
struct marks {
    const struct rsr_summary *s;
    const struct rsr_step_mark *mem;    /* all of them; NULL: read through blk */
    size_t n;
    struct rsr_step_mark *blk;
    size_t at, len;                     /* blk holds [at, at + len) */
};

/* Mark i (< m->n), or NULL when it cannot be read. Valid until the next
 * call; reading in order reads each block once. */
static const struct rsr_step_mark *mark_at(struct marks *m, size_t i)
{
    if (m->mem)
        return &m->mem[i];
    if (i < m->at || i >= m->at + m->len) {
        size_t k = m->n - i < MARK_BLOCK ? m->n - i : MARK_BLOCK;
        if (rsr_summary_cmarks_read(m->s, i, k, m->blk) != 0)
            return NULL;
        m->at = i;
        m->len = k;
    }
    return &m->blk[i - m->at];
}

/* Where the step that mark m begins starts, when a step ends before it:
 * for a collective, the start of the GPU idle gap before m (the end of
 * the previous step's GPU work: its optimizer), or later, where the host
 * returned from waiting for that work, or the end of a checkpoint write
 * that ran in that gap, so that a step owns its own checkpoint as the
 * program counts it. The data loading that follows in
 * the same gap goes with the step before (the trace cannot tell where on
 * the host one ends and the other begins); every step's length is the
 * same as the program's but for the jitter of that loading. Kernel marks'
 * gaps run from the previous marked kernel, not from the step's end: m's
 * own time. *bur: the first burst that may still matter (marks come in
 * order). */
static int64_t step_edge(const struct rsr_summary *s, const struct rsr_step_mark *m, size_t *bur)
{
    if (!s->n_cmarks || m->gap <= 0)
        return m->t;
    int64_t g0 = m->t - m->gap, edge = g0 + m->host_ns;
    while (*bur < s->n_bursts && s->bursts[*bur].end_ns <= g0)
        (*bur)++;
    for (size_t b = *bur; b < s->n_bursts && s->bursts[b].start_ns < m->t; b++)
        if (s->bursts[b].end_ns > edge)
            edge = s->bursts[b].end_ns < m->t ? s->bursts[b].end_ns : m->t;
    return edge;
}

/* Where a process's last step ends: the end of its GPU work (what
 * follows its last collective: the optimizer), the host's return from
 * waiting for it, or the end of a checkpoint written after that step
 * began, whichever is latest; but no later than broke, when a rank's
 * out-of-memory ended the job (what follows is the others' wait for it
 * and the next step's start, which never finished). */
static int64_t last_edge(const struct rsr_summary *s, int64_t start, int64_t broke)
{
    int64_t end = s->host_end_ns > s->gpu.end_ns ? s->host_end_ns : s->gpu.end_ns;
    for (size_t b = 0; b < s->n_bursts; b++)
        if (s->bursts[b].start_ns >= start && s->bursts[b].end_ns > end)
            end = s->bursts[b].end_ns;
    return broke > start && end > broke ? broke : end;
}

/* When a rank's fatal out-of-memory ended the job: the earliest process's
 * last failed allocation that no retry got past (memory.h); 0: none. */
static int64_t job_broke(struct rsr_model *const *models, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_memory *mem = models[i]->mem;
        if (mem && mem->nfails && !mem->fails[mem->nfails - 1].retried &&
            (!t || mem->fails[mem->nfails - 1].ns < t))
            t = mem->fails[mem->nfails - 1].ns;
    }
    return t;
}

/* Turns the steps (segments of marks) of a process into its steps with
 * their counters, one at a time, in order (rsr_steps_find_in's emit). */
struct seg_steps {
    struct proc *p;
    struct marks *mk;
    size_t k, bur;
    int64_t next_start;
    /* the first step, held until the second's length is known: it begins
     * at the host's lead (summary.h's lead_ns) when that is no more than
     * two of the second step before its GPU work (a first step's loading
     * and first calls take longer than a later one's), else at the work:
     * a longer lead is set-up (a data set read before the loop) */
    int held;
    struct pstep first, first_lead;
};

/* The first step, once the second (NULL: none) says which start it has. */
static void seg_release(struct seg_steps *c, const struct pstep *second)
{
    if (!c->held)
        return;
    c->held = 0;
    int lead = second && c->first.start - c->first_lead.start <= 2 * (second->end - second->start);
    proc_take(c->p, lead ? &c->first_lead : &c->first);
}

static int seg_step(void *ctx, const struct rsr_step_seg *g)
{
    struct seg_steps *c = ctx;
    struct marks *mk = c->mk;
    const struct rsr_summary *s = mk->s;
    size_t next = g->first + g->n;
    const struct rsr_step_mark *a = mark_at(mk, g->first);
    if (!a)
        return -1;
    /* the first step begins with its own GPU work (the end of the
     * longest idle gap before its first mark); the others where the
     * step before them ended */
    int64_t start = c->k++ ? c->next_start : a->t;
    struct rsr_step_counters c0 = a->c;
    const struct rsr_step_mark *b = next < mk->n ? mark_at(mk, next) : NULL;
    if (next < mk->n && !b)
        return -1;
    struct pstep ps;
    ps.start = start;
    ps.end = c->next_start = b ? step_edge(s, b, &c->bur) : last_edge(s, start, c->p->broke);
    if (ps.end < ps.start)
        ps.end = ps.start;
    ps.phase = g->phase;
    ps.d = sub(b ? &b->c : &s->end_counters, &c0);
    ps.d_start = a->t;
    ps.colls = s->n_cmarks ? (uint32_t)g->n : 0;
    ps.d_end = b ? b->t : ps.end > a->t ? ps.end : a->t;
    /* the lead is the host's before the process's first collective: the
     * first step's only when that step begins with it */
    if (c->k == 1 && g->first == 0 && s->lead_ns > 0 && s->lead_ns < start && ps.phase == RSR_PHASE_TRAIN) {
        c->held = 1;
        c->first = c->first_lead = ps;
        c->first_lead.start = c->first_lead.d_start = s->lead_ns;
        c->first_lead.d = sub(b ? &b->c : &s->end_counters, &s->lead_counters);
        return 0;
    }
    seg_release(c, &ps);
    proc_take(c->p, &ps);
    return 0;
}

static int marks_gap(void *ctx, size_t i, int64_t *gap)
{
    const struct rsr_step_mark *m = mark_at(ctx, i);
    if (!m)
        return -1;
    *gap = m->gap;
    return 0;
}

/* What a mark moves: a collective's bytes, 1 per kernel. */
static double marks_weight(void *ctx, size_t i, uint32_t key)
{
    const struct rsr_summary *s = ((const struct marks *)ctx)->s;
    (void)i;
    return s->n_cmarks && key < s->n_keys ? (double)s->keys[key].bytes : 1;
}

static int proc_find_marks(struct proc *p, struct marks *mk);

/* A process's steps, from its collectives or else its kernels; a rank
 * with neither, from its main thread's waits (summary.h's kmark_waits). 1:
 * found, 0: none (*kind says which marks were looked at: 0 none, 1
 * kernels, 2 collectives, 4 waits), -1: out of memory or the spill file
 * could not be read. */
static int proc_find(struct proc *p, const struct rsr_summary *s, int *kind)
{
    struct marks mk = { .s = s, .n = s->n_cmarks ? s->n_cmarks : s->n_kmarks };
    *kind = s->n_cmarks ? 2 : s->kmark_waits ? 4 : mk.n || s->kmark_state == RSR_KMARK_NONE ? 1 : 0;
    if (mk.n < RSR_STEPS_MIN)
        return 0;
    if (!s->n_cmarks)
        mk.mem = s->kmarks;
    else if (!(mk.blk = malloc(MARK_BLOCK * sizeof *mk.blk)))
        return -1;
    int rc = proc_find_marks(p, &mk);
    free(mk.blk);
    return rc;
}

/* A rank's steps from its main thread's waits (summary.h's kmark_waits):
 * a step runs from the end of one wait in the stack it waits in most (its
 * anchor: a data-parallel rank on the CPU waits once a step for its
 * gradients' all-reduce, whose end the ranks share) to the next's; what
 * comes before the first and after the last is no step, as the program
 * did not wait to end it. Confidence: the anchor's share of the waits. As
 * proc_find. */
static int proc_wait_steps(struct proc *p, struct marks *mk)
{
    const struct rsr_summary *s = mk->s;
    size_t nm = mk->n, count = nm;
    uint32_t anchor = s->kmark_anchor;
    double conf = s->kmark_score;
    if (s->kmark_state != RSR_KMARK_ANCHOR) {
        uint32_t *key = malloc(nm * sizeof *key);
        if (!key)
            return -1;
        for (size_t i = 0; i < nm; i++)
            key[i] = mk->mem[i].key;
        int rc = rsr_steps_commonest(key, nm, &anchor, &count);
        free(key);
        if (rc != 0)
            return -1;
        conf = (double)count / (double)nm;
    }
    if (count <= RSR_STEPS_MIN)
        return 0;
    struct rsr_step_mark *at = malloc(count * sizeof *at);
    if (!at)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < nm; i++)
        if (mk->mem[i].key == anchor)
            at[k++] = mk->mem[i];
    struct marks am = { .s = s, .mem = at, .n = k };
    struct seg_steps c = { .p = p, .mk = &am };
    p->src = SRC_WAITS;
    int rc = 1;
    for (size_t i = 0; i + 1 < k && rc == 1; i++) {
        struct rsr_step_seg g = { i, 1, RSR_PHASE_TRAIN };
        if (seg_step(&c, &g) != 0)
            rc = -1;
    }
    seg_release(&c, NULL);
    p->conf = conf;
    free(at);
    return rc;
}

/* proc_find over the marks in mk, at least RSR_STEPS_MIN of them. */
static int proc_find_marks(struct proc *p, struct marks *mk)
{
    const struct rsr_summary *s = mk->s;
    size_t nm = mk->n;
    struct seg_steps c = { .p = p, .mk = mk };
    if (s->kmark_waits)
        return proc_wait_steps(p, mk);
    p->src = s->n_cmarks ? SRC_COLLECTIVES : SRC_KERNELS;
    if (!s->n_cmarks && s->kmark_state == RSR_KMARK_ANCHOR) {
        /* one kernel per step (summary.h) */
        for (size_t i = 0; i < nm; i++) {
            struct rsr_step_seg g = { i, 1, RSR_PHASE_TRAIN };
            if (seg_step(&c, &g) != 0)
                return -1;
        }
        seg_release(&c, NULL);
        p->conf = s->kmark_score;
        return 1;
    }
    uint32_t *key = malloc(nm * sizeof *key);
    if (!key)
        return -1;
    for (size_t i = 0; i < nm; i++) {
        const struct rsr_step_mark *m = mark_at(mk, i);
        if (!m) {
            free(key);
            return -1;
        }
        key[i] = m->key;
    }
    struct rsr_steps_src src = { nm, key, marks_gap, marks_weight, mk };
    struct rsr_steps_found f;
    int rc = rsr_steps_find_in(&src, &f, seg_step, &c);
    seg_release(&c, NULL);
    free(key);
    if (rc != 0)
        return -1;
    if (!f.period)
        return 0;
    p->conf = f.score * f.covered;
    return 1;
}

static int cmp_range(const void *pa, const void *pb)
{
    const struct rsr_step_range *a = *(const struct rsr_step_range *const *)pa;
    const struct rsr_step_range *b = *(const struct rsr_step_range *const *)pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

static int cmp_range_tid(const void *pa, const void *pb)
{
    const struct rsr_step_range *a = *(const struct rsr_step_range *const *)pa;
    const struct rsr_step_range *b = *(const struct rsr_step_range *const *)pb;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

/* A process's steps from the ranges it marked them with: the outermost
 * step ranges, on the thread that has most of them. 1: found, 0: fewer
 * than RSR_STEPS_MIN, -1: out of memory. */
static int proc_ranges(struct proc *p, const struct rsr_model *m, const struct rsr_summary *s)
{
    if (s->n_ranges < RSR_STEPS_MIN)
        return 0;
    uint16_t depth = UINT16_MAX;
    for (size_t i = 0; i < s->n_ranges; i++)
        if (s->ranges[i].depth < depth)
            depth = s->ranges[i].depth;
    const struct rsr_step_range **v = malloc(s->n_ranges * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < s->n_ranges; i++)
        if (s->ranges[i].depth == depth)
            v[n++] = &s->ranges[i];
    /* the thread with most of them (on a tie, the one whose range came
     * first), found in runs of equal threads */
    qsort(v, n, sizeof *v, cmp_range_tid);
    size_t best = 0, best_n = 0;
    const struct rsr_step_range *best_first = NULL;
    for (size_t a = 0, b; a < n; a = b) {
        const struct rsr_step_range *first = v[a];
        for (b = a; b < n && v[b]->tid == v[a]->tid; b++)
            if (v[b] < first)
                first = v[b];
        if (b - a > best_n || (b - a == best_n && first < best_first))
            best = a, best_n = b - a, best_first = first;
    }
    memmove(v, v + best, best_n * sizeof *v);
    n = best_n;
    if (n < RSR_STEPS_MIN) {
        free(v);
        return 0;
    }
    qsort(v, n, sizeof *v, cmp_range);
    int kineto = 1;
    for (size_t i = 0; i < n; i++) {
        const char *name = rsr_model_str(m, v[i]->name);
        int eval = strcasestr(name, "eval") || strcasestr(name, "valid");
        kineto &= strncmp(name, "ProfilerStep#", 13) == 0;
        int64_t end = v[i]->end_ns > v[i]->start_ns ? v[i]->end_ns : v[i]->start_ns;
        struct pstep x = { v[i]->start_ns, end, (uint8_t)(eval ? RSR_PHASE_EVAL : RSR_PHASE_TRAIN),
                           sub(&v[i]->c1, &v[i]->c0), v[i]->start_ns, end, 0 };
        proc_take(p, &x);
    }
    free(v);
    p->src = kineto ? SRC_KINETO : SRC_NVTX;
    p->conf = 1;
    return 1;
}

/* ---- the job's steps: in memory, or in the spill file a block at a time ---- */

static size_t mem_max = 65536, block = 4096;

void rsr_steps_store_max(size_t in_memory, size_t blk)
{
    mem_max = in_memory;
    block = blk ? blk : 1;
}

/* Room for n zeroed steps in s: in memory up to mem_max, else in the spill
 * file (in memory when it cannot be written). 0, or -1 when out of memory. */
static int store_open(struct rsr_steps *s, size_t n)
{
    s->n = n;
    s->cache[0].blk = s->cache[1].blk = SIZE_MAX;
    if (n > mem_max) {
        size_t nb = (n + block - 1) / block;
        struct rsr_step *z = calloc(block, sizeof *z);
        uint64_t off = 0;
        int ok = z && rsr_spill_reserve(n * sizeof *z, &off) == 0;
        for (size_t b = 0; ok && b < nb; b++) {
            size_t k = n - b * block < block ? n - b * block : block;
            ok = rsr_spill_put(z, k * sizeof *z, off + b * block * sizeof *z) == 0;
        }
        free(z);
        if (ok) {
            s->cache[0].v = malloc(block * sizeof *s->cache[0].v);
            s->cache[1].v = malloc(block * sizeof *s->cache[1].v);
            if (!s->cache[0].v || !s->cache[1].v)
                return -1;
            s->spilled = 1;
            s->spill_off = off;
            return 0;
        }
    }
    s->steps = calloc(n ? n : 1, sizeof *s->steps);
    return s->steps ? 0 : -1;
}

static void block_flush(struct rsr_steps *s, struct rsr_step_block *c)
{
    if (!c->dirty || c->blk == SIZE_MAX)
        return;
    size_t k = s->n - c->blk * block < block ? s->n - c->blk * block : block;
    if (rsr_spill_put(c->v, k * sizeof *c->v, s->spill_off + c->blk * block * sizeof *c->v) != 0)
        s->failed = 1;
    c->dirty = 0;
}

static struct rsr_step *store_at(struct rsr_steps *s, size_t i, int dirty)
{
    if (!s->spilled)
        return &s->steps[i];
    size_t b = i / block;
    struct rsr_step_block *c = s->cache[0].blk == b ? &s->cache[0] : s->cache[1].blk == b ? &s->cache[1] : NULL;
    if (!c) {
        /* the one used least lately */
        c = s->cache[0].used <= s->cache[1].used ? &s->cache[0] : &s->cache[1];
        block_flush(s, c);
        size_t k = s->n - b * block < block ? s->n - b * block : block;
        if (rsr_spill_read(c->v, k * sizeof *c->v, s->spill_off + b * block * sizeof *c->v) != 0) {
            memset(c->v, 0, k * sizeof *c->v);
            s->failed = 1;
        }
        c->blk = b;
    }
    c->used = ++s->tick;
    c->dirty |= dirty;
    return &c->v[i - b * block];
}

/* The cache is not part of the steps' value: reading may fill it. */
const struct rsr_step *rsr_step_get(const struct rsr_steps *s, size_t i)
{
    return store_at((struct rsr_steps *)s, i, 0);
}

struct rsr_step *rsr_step_mut(struct rsr_steps *s, size_t i)
{
    return store_at(s, i, 1);
}

long rsr_steps_at(const struct rsr_steps *s, int64_t t)
{
    if (!s->n || !s->blk_start)
        return -1;
    size_t nb = (s->n + block - 1) / block;
    /* the last block starting at or before t, then the last step in it */
    size_t lo = 0, hi = nb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->blk_start[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    size_t b = lo - 1, first = b * block, end = first + block < s->n ? first + block : s->n;
    lo = first, hi = end;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rsr_step_get(s, mid)->start_ns <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > first && t < rsr_step_get(s, lo - 1)->end_ns ? (long)lo - 1 : -1;
}

static void store_free(struct rsr_steps *s)
{
    free(s->steps);
    free(s->cache[0].v);
    free(s->cache[1].v);
    free(s->blk_start);
    s->steps = NULL;
    s->cache[0].v = s->cache[1].v = NULL;
    s->cache[0].blk = s->cache[1].blk = SIZE_MAX;
    s->blk_start = NULL;
    s->spilled = 0;
}

/* ---- the job ---- */

/* The q-quantile of sorted v[0..n), interpolated between neighbours. */
static double quantile(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    double x = q * (double)(n - 1);
    size_t i = (size_t)x;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (x - (double)i) * (v[i + 1] - v[i]);
}

double rsr_steps_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, rsr_cmp_double);
    return quantile(v, n, 0.5);
}

/* The share of the GPU idle in each host class's main-thread waits that
 * were in set (the summary's wait stacks against the ones the symboliser
 * gave a cause, waits.h: data loading, a collective); for a process
 * without GPU work (cpu), of the waits' whole time. */
static void stack_shares(const struct rsr_model *m, const struct rsr_stack_set *set, int cpu, double *share)
{
    double all[RSR_HOST_NCLASSES] = { 0 }, in[RSR_HOST_NCLASSES] = { 0 };
    const struct rsr_summary *s = m->sum;
    for (size_t i = 0; s && i < s->n_wstacks; i++) {
        const struct rsr_wait_stack *w = &s->wstacks[i];
        if (w->cls >= RSR_HOST_NCLASSES)
            continue;
        double ns = (double)(cpu ? w->all_ns : w->idle_ns);
        all[w->cls] += ns;
        if (rsr_stack_set_has(set, w->stack))
            in[w->cls] += ns;
    }
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        share[k] = all[k] > 0 ? in[k] / all[k] : 0;
}

static double dur_ms(const struct rsr_step *st)
{
    return (double)(st->end_ns - st->start_ns) / 1e6;
}

/* Adds step x of a process (model m) to the job's step t (first: the
 * first process's, t starts afresh; *bur: the place in m's checkpoint
 * bursts, steps come in order). While the processes are folded in one at
 * a time (rsr_steps_analyse), a step at a time as it is found, so that no
 * process's steps are held, a step's fields hold
 * sums over the processes so far, which fold_finish turns into its
 * figures: idle_ms the processes' step time, compute_pct their compute,
 * exposed_comm_pct their exposed communication, io_ms and wait_ms their
 * I/O and data wait, idle_pct their GPU busy time, busy_spread_ms the
 * largest of those. */
static void fold_one(struct rsr_step *t, const struct pstep *x, struct proc *p)
{
    const struct rsr_model *m = p->m;
    int first = p->first;
    size_t *bur = &p->bur;
    const struct rsr_summary *s = m->sum;
    if (first) {
        memset(t, 0, sizeof *t);
        t->start_ns = INT64_MAX;
        t->end_ns = INT64_MIN;
        t->phase = x->phase;
        t->busiest_rank = -1;
        t->busy_spread_ms = -1;
    }
    if (x->start < t->start_ns)
        t->start_ns = x->start;
    if (x->end > t->end_ns)
        t->end_ns = x->end;
    t->idle_ms += (double)(x->end - x->start);
    t->compute_pct += (double)x->d.compute;
    t->exposed_comm_pct += (double)(x->d.cc - x->d.compute);
    t->io_ms += (double)x->d.io;
    t->wait_ms += (double)x->d.wait;
    t->idle_pct += (double)x->d.busy;
    if ((double)x->d.busy > t->busy_spread_ms) {
        t->busy_spread_ms = (double)x->d.busy;
        t->busiest_rank = m->rank;
    }
    /* checkpoint writes that lie mostly inside the step */
    int ckpt = 0;
    while (*bur < s->n_bursts && s->bursts[*bur].end_ns <= x->start)
        (*bur)++;
    for (size_t b = *bur; b < s->n_bursts && s->bursts[b].start_ns < x->end; b++) {
        const struct rsr_burst *bu = &s->bursts[b];
        int64_t lo = bu->start_ns > x->start ? bu->start_ns : x->start;
        int64_t hi = bu->end_ns < x->end ? bu->end_ns : x->end;
        if (hi <= lo || 2 * (hi - lo) < bu->end_ns - bu->start_ns)
            continue;
        t->checkpoint = 1;
        ckpt = 1;
        if ((double)(hi - lo) / 1e6 > t->ckpt_ms)
            t->ckpt_ms = (double)(hi - lo) / 1e6;
    }
    struct rsr_cp_in in = { m->rank, &x->d, x->d_start, x->d_end, ckpt, x->colls, { 0 }, p->starved, { 0 }, p->cpu };
    memcpy(in.loader, p->loader, sizeof in.loader);
    memcpy(in.coll, p->coll, sizeof in.coll);
    struct rsr_cp_rank cr;
    rsr_cp_rank_of(&cr, &in, x->phase == RSR_PHASE_TRAIN ? &p->typ : NULL);
    if (x->phase == RSR_PHASE_TRAIN && p->job->rank_parts)
        for (int k = 0; k < RSR_CP_NPARTS; k++)
            p->job->rank_parts[p->model * RSR_CP_NPARTS + (size_t)k] += cr.part[k];
    rsr_cp_fold(&t->path, &cr, first);
}

/* A job step's figures from the sums fold_one left over np processes (or
 * the fewer its path counted: a rank folded by time may have missed it).
 * The spread of GPU busy time is the busiest rank's less the mean rank's
 * (a median would need every rank's figure for every step at once). */
static void fold_finish(struct rsr_step *st, size_t np)
{
    if (st->path.ranks && st->path.ranks < np)
        np = st->path.ranks;
    double len = st->idle_ms, comp = st->compute_pct, exposed = st->exposed_comm_pct;
    double busy = st->idle_pct, busy_max = st->busy_spread_ms, idle = len - busy;
    st->compute_pct = st->exposed_comm_pct = st->idle_pct = 0;
    st->ranks_ns = len;
    if (len > 0) {
        st->compute_pct = 100 * comp / len;
        st->exposed_comm_pct = 100 * exposed / len;
        st->idle_pct = 100 * idle / len;
    }
    st->io_ms = st->io_ms / (double)np / 1e6;
    st->wait_ms = st->wait_ms / (double)np / 1e6;
    st->idle_ms = idle / (double)np / 1e6;
    st->busy_spread_ms = (busy_max - busy / (double)np) / 1e6;
}

/* Why step j is slow (its phase's median step is med). The job's first
 * training step, unless a checkpoint or I/O explains it, is the warm-up
 * (memory allocated, kernels compiled or tuned, communicators set up),
 * whichever rank took longest over it. */
static void slow_cause(struct rsr_step_slow *sl, const struct rsr_step *st, int first, double excess,
                       double med_io, double med_spread, double med_idle)
{
    sl->rank = -1;
    if (st->checkpoint)
        sl->cause = "checkpoint";
    else if (st->io_ms + st->wait_ms - med_io >= 0.5 * excess)
        sl->cause = "io";
    else if (first)
        sl->cause = "warm_up";
    else if (st->busy_spread_ms - med_spread >= 0.5 * excess) {
        sl->cause = "straggler";
        sl->rank = st->busiest_rank;
    } else if (st->idle_ms - med_idle >= 0.5 * excess && st->idle_pct < 100)
        sl->cause = "launch_gaps";  /* a step without GPU work has none */
    else
        sl->cause = "unknown";
}

/* The change of the least-squares line through the training steps'
 * durations (by their order among them) from the first to the last, in %
 * of its value at the first. */
static double trend(const struct rsr_steps *out)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, nn = 0;
    for (size_t i = 0; i < out->n; i++) {
        const struct rsr_step *st = rsr_step_get(out, i);
        if (st->phase != RSR_PHASE_TRAIN)
            continue;
        double y = dur_ms(st);
        sx += nn, sy += y, sxx += nn * nn, sxy += nn * y;
        nn++;
    }
    if (nn < 2)
        return 0;
    double slope = (nn * sxy - sx * sy) / (nn * sxx - sx * sx), icept = (sy - slope * sx) / nn;
    return icept > 0 ? 100 * slope * (nn - 1) / icept : 0;
}

/* The change of the typical step: the median of the last quarter of the
 * training steps that are not slow from the first quarter's, in % of the
 * first's. Unlike the trend, a few slow steps or a warm-up do not move it.
 * v, w: room for the steps' durations. */
static double typical_change(const struct rsr_steps *out, double *v, double *w)
{
    size_t k = 0, s = 0;
    for (size_t i = 0; i < out->n; i++) {
        while (s < out->n_slow && out->slow[s].index < i)
            s++;
        const struct rsr_step *st = rsr_step_get(out, i);
        if (st->phase == RSR_PHASE_TRAIN && !(s < out->n_slow && out->slow[s].index == i))
            v[k++] = dur_ms(st);
    }
    size_t q = k / 4;
    if (q < 3)
        return 0;
    memcpy(w, v + k - q, q * sizeof *v);
    double m0 = rsr_steps_median(v, q), m1 = rsr_steps_median(w, q);
    return m0 > 0 ? 100 * (m1 - m0) / m0 : 0;
}

/* Whether st took RSR_STEPS_SLOW_X times its phase's median or more (a
 * phase with enough steps to have one). */
static int is_slow(const struct rsr_steps *out, const struct rsr_step *st)
{
    double med = out->phase_median_ms[st->phase];
    return out->phase_count[st->phase] >= RSR_STEPS_MIN && med > 0 && dur_ms(st) >= RSR_STEPS_SLOW_X * med;
}

/* Distribution, phases, trend and slow steps of out's steps. */
static int job_stats(struct rsr_steps *out)
{
    double *v = malloc((out->n ? out->n : 1) * sizeof *v);
    double *a = malloc((out->n ? out->n : 1) * sizeof *a), *b = malloc((out->n ? out->n : 1) * sizeof *b);
    double *c = malloc((out->n ? out->n : 1) * sizeof *c);
    if (!v || !a || !b || !c) {
        free(v), free(a), free(b), free(c);
        return -1;
    }
    double med_io[RSR_NPHASES] = { 0 }, med_spread[RSR_NPHASES] = { 0 }, med_idle[RSR_NPHASES] = { 0 };
    for (int ph = 0; ph < RSR_NPHASES; ph++) {
        size_t k = 0;
        for (size_t i = 0; i < out->n; i++) {
            const struct rsr_step *st = rsr_step_get(out, i);
            if (st->phase == ph) {
                v[k] = dur_ms(st);
                a[k] = st->io_ms + st->wait_ms;
                b[k] = st->busy_spread_ms;
                c[k++] = st->idle_ms;
            }
        }
        out->phase_count[ph] = k;
        if (!k)
            continue;
        out->phase_median_ms[ph] = rsr_steps_median(v, k);
        med_io[ph] = rsr_steps_median(a, k);
        med_spread[ph] = rsr_steps_median(b, k);
        med_idle[ph] = rsr_steps_median(c, k);
        if (ph != RSR_PHASE_TRAIN)
            continue;
        out->count = k;
        out->median_ms = quantile(v, k, 0.5);
        out->p90_ms = quantile(v, k, 0.9);
        out->p99_ms = quantile(v, k, 0.99);
        out->max_ms = v[k - 1];
    }
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < out->n; i++) {
        const struct rsr_step *st = rsr_step_get(out, i);
        if (st->phase == RSR_PHASE_TRAIN) {
            if (st->start_ns < first)
                first = st->start_ns;
            if (st->end_ns > last)
                last = st->end_ns;
        }
    }
    if (out->count && last > first) {
        out->span_ms = (double)(last - first) / 1e6;
        out->per_step_ms = out->span_ms / (double)out->count;
    }
    out->trend_pct = trend(out);
    size_t nslow = 0;
    for (size_t i = 0; i < out->n; i++)
        nslow += is_slow(out, rsr_step_get(out, i));
    out->slow = malloc((nslow ? nslow : 1) * sizeof *out->slow);
    if (!out->slow) {
        free(v), free(a), free(b), free(c);
        return -1;
    }
    for (size_t i = 0, trained = 0; i < out->n; i++) {
        const struct rsr_step *st = rsr_step_get(out, i);
        int ph = st->phase, first_train = ph == RSR_PHASE_TRAIN && !trained++;
        double med = out->phase_median_ms[ph];
        if (!is_slow(out, st))
            continue;
        struct rsr_step_slow *sl = &out->slow[out->n_slow++];
        *sl = (struct rsr_step_slow){ .index = i, .dur_ms = dur_ms(st), .x_median = dur_ms(st) / med };
        slow_cause(sl, st, first_train, dur_ms(st) - med, med_io[ph], med_spread[ph], med_idle[ph]);
    }
    out->typical_change_pct = typical_change(out, v, a);
    free(v), free(a), free(b), free(c);
    return 0;
}

static int cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (a > b) - (a < b);
}

/* A process's steps: the program's own marks first, then the repetition
 * of its work; folded into job (NULL: counted only) by their index, or by
 * their time (proc.by_time). As proc_find. */
static int proc_get(struct proc *p, struct rsr_model *m, size_t i, int *kind, struct rsr_steps *job, int first,
                    int64_t broke, int by_time)
{
    memset(p, 0, sizeof *p);
    p->by_time = by_time;
    p->broke = broke;
    p->model = i;
    p->job = job;
    p->first = first;
    p->m = m;
    *kind = 0;
    if (!m->sum)
        return 0;
    if (job) {
        const struct rsr_summary *s = m->sum;
        p->cpu = s->kmark_waits;
        stack_shares(m, &m->waits.loader, p->cpu, p->loader);
        if (p->cpu)
            stack_shares(m, &m->waits.coll, 1, p->coll);
        double span = (double)(s->gpu.end_ns - s->gpu.start_ns);
        double beyond = (double)(m->run_delay_ns - s->end_counters.sync_gap);
        p->starved = span > 0 && beyond > 0 ? beyond / span : 0;
    }
    int r = proc_ranges(p, m, m->sum);
    if (r == 0)
        r = proc_find(p, m->sum, kind);
    return r;
}

/* Each process's steps are found twice, one process at a time: first to
 * learn how many each has, then, for those with the count most agree on,
 * to fold them into the job's steps. Memory grows with the job's steps,
 * not with its processes times its steps. */
int rsr_steps_analyse(struct rsr_model *const *models, size_t n, struct rsr_steps *out)
{
    memset(out, 0, sizeof *out);
    struct found {
        size_t model, n;
        double conf;
        int src;
    } *fd = malloc((n ? n : 1) * sizeof *fd);
    size_t *counts = malloc((n ? n : 1) * sizeof *counts), np = 0;
    int rc = -1, looked = 0;
    int64_t broke = job_broke(models, n);
    if (!fd || !counts)
        goto done;
    for (size_t i = 0; i < n; i++) {
        struct proc p;
        int kind;
        int r = proc_get(&p, models[i], i, &kind, NULL, 0, broke, 0);
        looked |= kind;
        if (r < 0)
            goto done;
        if (r > 0 && p.n) {
            fd[np] = (struct found){ i, p.n, p.conf, p.src };
            counts[np++] = p.n;
        }
    }
    rc = 0;
    if (!np) {
        snprintf(out->why, sizeof out->why, "%s",
                 !looked ? "no GPU work or ranks' main-thread waits to find steps in"
                 : looked & 2 ? "no repeating sequence of collectives (fewer than 3 repetitions)"
                 : looked == 4 ? "no GPU work, and no repeating sequence of the ranks' main-thread waits (fewer "
                                 "than 3 repetitions)"
                              : "no repeating sequence of kernels (fewer than 3 repetitions in the first "
                                "4096 kernels)");
        goto done;
    }
    /* the step count most processes agree on; the others are left out
     * (ranks with steps from their waits and a count near it are folded
     * by time, below). On a tie the smaller, but for steps from waits the
     * larger: a rank whose wait in a step was under the agent's threshold
     * has one step fewer. */
    int all_waits = 1;
    for (size_t r = 0; r < np; r++)
        all_waits &= fd[r].src == SRC_WAITS;
    qsort(counts, np, sizeof *counts, cmp_size);
    size_t mode = counts[0], best = 0;
    for (size_t a = 0, b; a < np; a = b) {
        for (b = a; b < np && counts[b] == counts[a]; b++)
            ;
        if (b - a > best || (all_waits && b - a == best))
            best = b - a, mode = counts[a];
    }
    size_t by_src[SRC_N] = { 0 };
    double conf = 0;
    for (size_t r = 0; r < np; r++) {
        if (fd[r].n != mode)
            continue;
        conf += fd[r].conf;
        by_src[fd[r].src]++;
    }
    /* processes left out count as finding nothing */
    out->confidence = conf / (double)np;
    int src = 0;
    for (int k = 1; k < SRC_N; k++)
        if (by_src[k] > by_src[src])
            src = k;
    out->source = source_name[src];
    if (store_open(out, mode) != 0) {
        rc = -1;
        goto done;
    }
    out->in_steps = calloc(n, 1);
    out->rank_parts = calloc(n * RSR_CP_NPARTS, sizeof *out->rank_parts);
    if (!out->in_steps || !out->rank_parts) {
        rc = -1;
        goto done;
    }
    out->n_models = n;
    size_t folded = 0;
    for (size_t r = 0; r < np; r++) {
        if (fd[r].n != mode)
            continue;
        struct proc p;
        int kind;
        /* folded as they are found: the same steps as the count's, found
         * the same way */
        int got = proc_get(&p, models[fd[r].model], fd[r].model, &kind, out, folded == 0, broke, 0);
        if (got > 0 && p.n == mode) {
            folded++;
            out->in_steps[fd[r].model] = 1;
        }
        if (got < 0) {
            rc = -1;
            goto done;
        }
    }
    /* ranks whose steps are from their waits and whose count is off by a
     * few (two, and a tenth: waits under the agent's threshold): folded
     * by time */
    for (size_t r = 0; r < np && folded; r++) {
        size_t off = fd[r].n > mode ? fd[r].n - mode : mode - fd[r].n;
        if (fd[r].n == mode || fd[r].src != SRC_WAITS || off > 2 + mode / 10)
            continue;
        struct proc p;
        int kind;
        int got = proc_get(&p, models[fd[r].model], fd[r].model, &kind, out, 0, broke, 1);
        if (got < 0) {
            rc = -1;
            goto done;
        }
        if (got > 0) {
            folded++;
            out->in_steps[fd[r].model] = 1;
        }
    }
    out->ranks = folded;
    /* with rsr_steps_at's index: each block's first start (the starts do
     * not change after the fold) */
    out->blk_start = malloc(((mode + block - 1) / block) * sizeof *out->blk_start);
    if (!out->blk_start) {
        rc = -1;
        goto done;
    }
    for (size_t j = 0; j < mode; j++) {
        struct rsr_step *x = rsr_step_mut(out, j);
        fold_finish(x, folded);
        if (j % block == 0)
            out->blk_start[j / block] = x->start_ns;
    }
    rc = job_stats(out);
    if (out->count < RSR_STEPS_MIN && rc == 0) {
        rsr_steps_free(out);
        snprintf(out->why, sizeof out->why, "fewer than %d training steps found", RSR_STEPS_MIN);
    }
done:
    free(fd);
    free(counts);
    if (rc != 0) {
        rsr_steps_free(out);
        snprintf(out->why, sizeof out->why, "out of memory");
    }
    return rc;
}

int rsr_steps_digest(struct rsr_steps *s)
{
    if (!s->steps && !s->spilled)
        return 0;
    size_t run = (s->n + RSR_STEPS_SERIES - 1) / RSR_STEPS_SERIES, k = 0;
    if (!run)
        run = 1;
    size_t ns = (s->n + run - 1) / run;
    struct rsr_step *v = malloc((ns ? ns : 1) * sizeof *v);
    size_t *ix = malloc((ns ? ns : 1) * sizeof *ix);
    if (!v || !ix) {
        free(v), free(ix);
        return -1;
    }
    for (size_t a = 0; a < s->n; a += run) {
        size_t i = a;
        int64_t longest = INT64_MIN;
        for (size_t j = a; j < a + run && j < s->n; j++) {
            const struct rsr_step *x = rsr_step_get(s, j);
            if (x->end_ns - x->start_ns > longest)
                longest = x->end_ns - x->start_ns, i = j, v[k] = *x;
        }
        ix[k++] = i;
    }
    store_free(s);
    s->series = v;
    s->series_index = ix;
    s->n_series = k;
    s->series_run = run;
    return 0;
}

void rsr_steps_free(struct rsr_steps *s)
{
    store_free(s);
    free(s->series);
    free(s->series_index);
    free(s->slow);
    free(s->in_steps);
    free(s->rank_parts);
    memset(s, 0, sizeof *s);
}

char *rsr_steps_time_text(char *buf, size_t n, double ms)
{
    if (ms >= 1000)
        snprintf(buf, n, "%.3g s/itr", ms / 1000);
    else
        snprintf(buf, n, "%.3g ms/step", ms);
    return buf;
}
