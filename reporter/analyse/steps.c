/* Training steps from the repetition of each process's work, and the job's
 * steps across ranks (see steps.h for the method). A source of steps is
 * anything that gives a process a list of steps with the counters
 * (summary.h) at their ends: here the period of its collectives or
 * kernels; ranges named by the program (NVTX, Kineto's ProfilerStep) give
 * such a list directly. */
#include "reporter/analyse/steps.h"
#include "reporter/load/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rsr_step_phase_name(int phase)
{
    static const char *const names[] = {
#define RSR_STEP_PHASE_NAME(name, text) text,
        RSR_STEP_PHASES(RSR_STEP_PHASE_NAME)
#undef RSR_STEP_PHASE_NAME
    };
    return phase >= 0 && phase < RSR_NPHASES ? names[phase] : "?";
}

/* ---- one process: the period finder ---- */

static double log_gap(int64_t g)
{
    return log2(1.0 + (double)(g > 0 ? g : 0) / 1000.0);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Otsu's threshold on the sorted values v[0..nv), or INFINITY when the two
 * classes' means are less than a factor 4 apart (2 on log_gap). */
static double otsu(const double *v, size_t nv)
{
    double tot = 0, sum0 = 0, best = 0, sep = 0, thr = INFINITY;
    for (size_t i = 0; i < nv; i++)
        tot += v[i];
    for (size_t k = 1; k < nv; k++) {
        sum0 += v[k - 1];
        if (v[k - 1] == v[k])
            continue;
        double w0 = (double)k / (double)nv, m0 = sum0 / (double)k, m1 = (tot - sum0) / (double)(nv - k);
        double var = w0 * (1 - w0) * (m1 - m0) * (m1 - m0);
        if (var > best) {
            best = var;
            sep = m1 - m0;
            thr = (v[k - 1] + v[k]) / 2;
        }
    }
    return sep < 2 ? INFINITY : thr;
}

/* How regular the marks above thr are: the share of the distances between
 * consecutive ones that is their commonest distance (0 with fewer than
 * RSR_STEPS_MIN of them). */
static double regularity(const int64_t *gap, size_t m, double thr)
{
    size_t *count = calloc(m + 1, sizeof *count), last = SIZE_MAX, nd = 0, mode = 0;
    if (!count)
        return 0;
    for (size_t i = 0; i < m; i++) {
        if (log_gap(gap[i]) <= thr)
            continue;
        if (last != SIZE_MAX && ++count[i - last] > count[mode])
            mode = i - last;
        nd += last != SIZE_MAX;
        last = i;
    }
    double r = nd + 1 >= RSR_STEPS_MIN ? (double)count[mode] / (double)nd : 0;
    free(count);
    return r;
}

/* A lower threshold is taken over Otsu's when the marks above it are this
 * much more regular (share of the commonest distance). */
#define STEPS_LOWER_REGULAR 0.2

/* The threshold (on log_gap) that splits gap[0..m) into short and long:
 * Otsu's method, or INFINITY when the two classes' means are less than a
 * factor 4 apart (no long gaps then). On a busy host a few marks wait
 * milliseconds for the CPU: Otsu's split can then fall between the steps'
 * own long gaps (tens of microseconds in a short step) and those, whose
 * marks come at random; Otsu's split of the short class is taken instead
 * when the marks above it are much more regular. -1 when out of memory. */
static int gap_threshold(const int64_t *gap, size_t m, double *thr)
{
    *thr = INFINITY;
    if (m < 3)
        return 0;
    double *v = malloc(m * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < m; i++)
        v[i] = log_gap(gap[i]);
    qsort(v, m, sizeof *v, cmp_double);
    *thr = otsu(v, m);
    if (isfinite(*thr)) {
        size_t k = 0;
        while (k < m && v[k] <= *thr)
            k++;
        double lower = otsu(v, k);
        if (isfinite(lower) && regularity(gap, m, lower) >= regularity(gap, m, *thr) + STEPS_LOWER_REGULAR)
            *thr = lower;
    }
    free(v);
    return 0;
}

/* A signature: the keys of one step from its first mark, and whether its
 * first mark must have a long gap (when its key alone does not tell it). */
struct sig {
    size_t period;
    uint32_t *key;
    int unique, rule;
    double score;
};

/* The view of a subsequence of m marks: element i is mark idx[i] (idx
 * NULL: mark i). Learning looks at its first min(m, RSR_STEPS_LEARN)
 * elements alone: gap holds theirs, by position. */
struct seq {
    const uint32_t *key;
    const uint8_t *bit;
    const int64_t *gap;
    const size_t *idx;
    size_t m;
};

static size_t mark_of(const struct seq *q, size_t i)
{
    return q->idx ? q->idx[i] : i;
}

static uint64_t sym(const struct seq *q, size_t i)
{
    size_t e = mark_of(q, i);
    return (uint64_t)q->key[e] * 2 + q->bit[e];
}

struct whash {
    uint64_t h;
    size_t pos;
};

static int cmp_whash(const void *pa, const void *pb)
{
    const struct whash *a = pa, *b = pb;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* The share of s[0..nn) that agrees with the symbol p further on. */
static double agreement(const uint64_t *s, size_t nn, size_t p)
{
    size_t agree = 0;
    for (size_t i = 0; i + p < nn; i++)
        agree += s[i] == s[i + p];
    return (double)agree / (double)(nn - p);
}

/* Learns the signature of q (steps.h). Returns 1 found, 0 none, -1 out of memory. */
static int learn(const struct seq *q, struct sig *g)
{
    memset(g, 0, sizeof *g);
    size_t nn = q->m < RSR_STEPS_LEARN ? q->m : RSR_STEPS_LEARN;
    size_t pmax = nn / RSR_STEPS_MIN;
    if (pmax > RSR_STEPS_MAX_PERIOD)
        pmax = RSR_STEPS_MAX_PERIOD;
    if (!pmax)
        return 0;
    uint64_t *s = malloc(nn * sizeof *s);
    double *score = malloc((pmax + 1) * sizeof *score);
    if (!s || !score) {
        free(s);
        free(score);
        return -1;
    }
    for (size_t i = 0; i < nn; i++)
        s[i] = sym(q, i);
    /* steps begin at long gaps: the commonest distance between two marks
     * with long gaps is the period, when the symbols agree at it */
    size_t P = 0, *dist = calloc(pmax + 1, sizeof *dist), last = SIZE_MAX, mode = 0;
    if (!dist) {
        free(s);
        free(score);
        return -1;
    }
    for (size_t i = 0; i < nn; i++) {
        if (!q->bit[mark_of(q, i)])
            continue;
        if (last != SIZE_MAX && i - last <= pmax && ++dist[i - last] > dist[mode])
            mode = i - last;
        last = i;
    }
    free(dist);
    if (mode && (score[mode] = agreement(s, nn, mode)) >= 0.6)
        P = mode;
    /* else the smallest period nearly as good as the best (one that
     * agrees 0.9 or more is: no later one can beat it by 0.1) */
    double best = 0;
    size_t upto = pmax;
    for (size_t p = 1; p <= upto && !P; p++) {
        score[p] = agreement(s, nn, p);
        if (score[p] > best)
            best = score[p];
        if (score[p] >= 0.9)
            upto = p;
    }
    for (size_t p = 1; p <= upto && !P; p++)
        if (score[p] >= 0.6 && score[p] >= best - 0.1)
            P = p;
    if (!P) {
        free(s);
        free(score);
        return 0;
    }
    g->score = score[P];
    free(score);

    /* the most frequent window of P symbols, and its first occurrence */
    size_t nw = nn - P + 1;
    struct whash *w = malloc(nw * sizeof *w);
    uint64_t *hp = malloc(nw * sizeof *hp);
    int64_t *vals = malloc((nw / P + 1) * sizeof *vals);
    double *ones = calloc(P, sizeof *ones);
    int64_t *med = malloc(P * sizeof *med);
    g->key = malloc(P * sizeof *g->key);
    if (!w || !hp || !vals || !ones || !med || !g->key) {
        free(w), free(hp), free(vals), free(ones), free(med), free(s);
        free(g->key);
        g->key = NULL;
        return -1;
    }
    for (size_t p = 0; p < nw; p++) {
        uint64_t h = 1469598103934665603ull;
        for (size_t k = 0; k < P; k++)
            h = (h ^ s[p + k]) * 1099511628211ull;
        w[p] = (struct whash){ h, p };
        hp[p] = h;
    }
    qsort(w, nw, sizeof *w, cmp_whash);
    size_t run_best = 0, p0 = 0;
    uint64_t hbest = 0;
    for (size_t a = 0, b; a < nw; a = b) {
        for (b = a; b < nw && w[b].h == w[a].h; b++)
            ;
        if (b - a > run_best || (b - a == run_best && w[a].pos < p0)) {
            run_best = b - a;
            p0 = w[a].pos;
            hbest = w[a].h;
        }
    }
    /* per position in the window: the median gap and the share of long
     * gaps over its non-overlapping occurrences */
    size_t nocc = 0;
    for (size_t j = 0; j < P; j++) {
        size_t k = 0;
        for (size_t p = 0; p < nw;) {
            if (hp[p] != hbest) {
                p++;
                continue;
            }
            vals[k++] = q->gap[p + j];
            ones[j] += q->bit[mark_of(q, p + j)];
            p += P;
        }
        nocc = k;
        qsort(vals, k, sizeof *vals, cmp_i64);
        med[j] = vals[k / 2];
    }
    /* on a tie, the position of the sequence's first mark: the work
     * begins with a step */
    size_t js = (P - p0 % P) % P;
    for (size_t j = 0; j < P; j++)
        if (med[j] > med[js])
            js = j;
    int other_short = 0;
    for (size_t k = 0; k < P; k++) {
        g->key[k] = q->key[mark_of(q, p0 + (js + k) % P)];
        other_short |= k != js && 2 * ones[k] < (double)nocc;
    }
    g->period = P;
    g->unique = 1;
    for (size_t k = 1; k < P; k++)
        g->unique &= g->key[k] != g->key[0];
    g->rule = !g->unique && 2 * ones[js] > (double)nocc && other_short;
    free(w), free(hp), free(vals), free(ones), free(med), free(s);
    return 1;
}

/* When the marks are the signature's keys repeated from the first mark to
 * the last, whole, the steps begin at the first mark, whatever the gaps
 * said: a pipeline stage's longest wait is inside its step (for the stage
 * before it), and the rotation at it would leave a step in two pieces, one
 * at each end. */
static void whole_from_start(const uint32_t *key, size_t n, struct sig *g)
{
    size_t P = g->period;
    if (!P || n % P || n < RSR_STEPS_MIN * P)
        return;
    for (size_t i = P; i < n; i++)
        if (key[i] != key[i % P])
            return;
    int same = 1;
    for (size_t k = 0; k < P && same; k++)
        same = g->key[k] == key[k];
    if (same)
        return;
    memcpy(g->key, key, P * sizeof *key);
    g->unique = 1;
    for (size_t k = 1; k < P; k++)
        g->unique &= g->key[k] != g->key[0];
    g->rule = 0;
}

/* Whether the keys from i of a run [.., end) are a step of g's. */
static int keys_match(const struct sig *g, const uint32_t *key, size_t i, size_t end)
{
    if (i + g->period > end)
        return 0;
    for (size_t k = 0; k < g->period; k++)
        if (key[i + k] != g->key[k])
            return 0;
    return 1;
}

/* Whether the marks from i of a run [.., end) are a step of g. */
static int match(const struct sig *g, const uint32_t *key, const uint8_t *bit, size_t i, size_t end)
{
    return keys_match(g, key, i, end) && (!g->rule || bit[i]);
}

/* Steps in a row whose first marks may lack their long gap. */
#define STEPS_BRIDGE 8

/* Whether a step of g begins at i though its first mark lacks the long gap
 * the rule wants, the scan being in phase (a step of g ended at i): the
 * host was ahead (the batch was ready, a sync returned at once) or a busy
 * machine stretched the other gaps. It does when g's keys go on from i,
 * step after step, to a step whose first mark has its long gap, or to the
 * run's end, within STEPS_BRIDGE steps; an extra mark (a bucket more)
 * puts the phase off and the long gaps then fall elsewhere. */
static int bridged(const struct sig *g, const uint32_t *key, const uint8_t *bit, size_t i, size_t end)
{
    for (int k = 0; k <= STEPS_BRIDGE; k++, i += g->period) {
        if (k > 0 && i == end)
            return 1;
        if (!keys_match(g, key, i, end))
            return 0;
        if (k > 0 && bit[i])
            return 1;
    }
    return 0;
}

/* The steps of g the scan finds in key[0..n). */
static size_t matches(const struct sig *g, const uint32_t *key, const uint8_t *bit, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n;)
        if (match(g, key, bit, i, n))
            m++, i += g->period;
        else
            i++;
    return m;
}

/* When the first marks are one step of g begun elsewhere (a rotation of
 * its keys) and the steps begun there are STEPS_FIRST_MORE or more than
 * g's, the steps begin at the first mark: the work begins with a step. A
 * pipeline stage with evaluation or checkpoints between its steps: its
 * longest gaps, waiting for the stage before, lie inside its steps, and
 * the steps cut there break at every evaluation. */
#define STEPS_FIRST_MORE 2
static int from_first(const uint32_t *key, const uint8_t *bit, size_t n, struct sig *g)
{
    size_t P = g->period, r = 0;
    if (!P || n < RSR_STEPS_MIN * P)
        return 0;
    for (; r < P; r++) {
        size_t k = 0;
        while (k < P && key[k] == g->key[(r + k) % P])
            k++;
        if (k == P)
            break;
    }
    if (r == 0 || r == P)
        return 0;
    struct sig h = *g;
    h.key = malloc(P * sizeof *h.key);
    if (!h.key)
        return -1;
    memcpy(h.key, key, P * sizeof *key);
    h.unique = 1;
    for (size_t k = 1; k < P; k++)
        h.unique &= h.key[k] != h.key[0];
    h.rule = 0;
    if (matches(&h, key, bit, n) >= matches(g, key, bit, n) + STEPS_FIRST_MORE) {
        free(g->key);
        *g = h;
    } else {
        free(h.key);
    }
    return 0;
}

/* The marks' codes in rsr_steps_find_in: which signature's step each
 * begins or continues (0: none). */
enum { U_NONE, U_TRAIN, U_EVAL, U_IN_TRAIN, U_IN_EVAL };

int rsr_steps_find_in(const struct rsr_steps_src *src, struct rsr_steps_found *out,
                      int (*emit)(void *ctx, const struct rsr_step_seg *seg), void *ectx)
{
    memset(out, 0, sizeof *out);
    size_t n = src->n;
    if (n < RSR_STEPS_MIN)
        return 0;
    const uint32_t *key = src->key;
    size_t nl = n < RSR_STEPS_LEARN ? n : RSR_STEPS_LEARN;
    int rc = -1;
    uint8_t *bit = malloc(n), *used = calloc(n, 1);
    int64_t *gl = malloc(nl * sizeof *gl);
    size_t *idx = NULL;
    struct sig g1 = { 0 }, g2 = { 0 };
    double thr;
    if (!bit || !used || !gl)
        goto done;
    /* the threshold from the first marks' gaps, every mark's bit from it */
    for (size_t i = 0; i < nl; i++)
        if (src->gap(src->ctx, i, &gl[i]) != 0)
            goto done;
    if (gap_threshold(gl, nl, &thr) != 0)
        goto done;
    for (size_t i = 0; i < n; i++) {
        int64_t g;
        if (i < nl)
            g = gl[i];
        else if (src->gap(src->ctx, i, &g) != 0)
            goto done;
        bit[i] = log_gap(g) > thr;
    }
    struct seq q = { key, bit, gl, NULL, n };
    int r = learn(&q, &g1);
    if (r <= 0) {
        rc = r;
        goto done;
    }
    whole_from_start(key, n, &g1);
    if (from_first(key, bit, n, &g1) != 0)
        goto done;
    double w1 = 0;
    for (size_t i = 0, in_phase = SIZE_MAX; i < n;) {
        if (!match(&g1, key, bit, i, n) && !(g1.rule && i == in_phase && bridged(&g1, key, bit, i, n))) {
            i++;
            continue;
        }
        in_phase = i + g1.period;
        if (!out->n_train++)
            for (size_t k = 0; k < g1.period; k++)
                w1 += src->weight(src->ctx, i + k, key[i + k]);
        used[i] = U_TRAIN;
        memset(used + i + 1, U_IN_TRAIN, g1.period - 1);
        i += g1.period;
    }
    if (out->n_train < RSR_STEPS_MIN) {
        out->n_train = 0;
        rc = 0;
        goto done;
    }
    /* the marks left: a second signature (learnt on the first of them),
     * then runs of their own */
    size_t m = 0, ml;
    for (size_t i = 0; i < n; i++)
        m += !used[i];
    ml = m < RSR_STEPS_LEARN ? m : RSR_STEPS_LEARN;
    idx = malloc((ml ? ml : 1) * sizeof *idx);
    if (!idx)
        goto done;
    for (size_t i = 0, k = 0; k < ml; i++)
        if (!used[i]) {
            idx[k] = i;
            if (src->gap(src->ctx, i, &gl[k]) != 0)
                goto done;
            k++;
        }
    size_t covered = out->n_train * g1.period;
    struct seq q2 = { key, bit, gl, idx, m };
    r = m >= RSR_STEPS_MIN ? learn(&q2, &g2) : 0;
    if (r < 0)
        goto done;
    size_t n2 = 0;
    double w2 = 0;
    for (size_t i = 0; r > 0 && i < n;) {
        size_t end = i;
        while (end < n && !used[end])
            end++;
        while (i < end) {
            if (!match(&g2, key, bit, i, end)) {
                i++;
                continue;
            }
            if (!n2++)
                for (size_t k = 0; k < g2.period; k++)
                    w2 += src->weight(src->ctx, i + k, key[i + k]);
            used[i] = U_EVAL;
            memset(used + i + 1, U_IN_EVAL, g2.period - 1);
            i += g2.period;
        }
        i = end + 1;
    }
    int phase2 = w2 < w1 ? RSR_PHASE_EVAL : RSR_PHASE_OTHER;
    if (n2 && w2 < w1)
        covered += n2 * g2.period;
    /* every step in order: the signatures' and each run of marks left */
    for (size_t i = 0; i < n;) {
        struct rsr_step_seg sg = { i, 0, RSR_PHASE_OTHER };
        if (used[i] == U_TRAIN)
            sg.n = g1.period, sg.phase = RSR_PHASE_TRAIN;
        else if (used[i] == U_EVAL)
            sg.n = g2.period, sg.phase = (uint8_t)phase2;
        else
            while (i + sg.n < n && !used[i + sg.n])
                sg.n++;
        if (emit && emit(ectx, &sg) != 0)
            goto done;
        out->n_segs++;
        i += sg.n;
    }
    out->period = g1.period;
    out->anchor_key = g1.key[0];
    out->anchor_unique = g1.unique;
    out->score = g1.score;
    out->covered = (double)covered / (double)n;
    rc = 0;
done:
    if (rc != 0 || !out->period) {
        out->n_segs = out->n_train = 0;
        out->period = 0;
    }
    free(g1.key);
    free(g2.key);
    free(bit);
    free(used);
    free(gl);
    free(idx);
    return rc;
}

/* rsr_steps_find over arrays: its source and its segments' sink. */
struct arrays {
    const int64_t *gap;
    const double *weight;
    struct rsr_steps_found *f;
    size_t cap;
};

static int arrays_gap(void *ctx, size_t i, int64_t *gap)
{
    *gap = ((const struct arrays *)ctx)->gap[i];
    return 0;
}

static double arrays_weight(void *ctx, size_t i, uint32_t key)
{
    (void)key;
    return ((const struct arrays *)ctx)->weight[i];
}

static int arrays_seg(void *ctx, const struct rsr_step_seg *seg)
{
    struct arrays *a = ctx;
    struct rsr_steps_found *f = a->f;
    if (f->n_segs == a->cap) {
        size_t c = a->cap ? a->cap * 2 : 64;
        void *p = realloc(f->segs, c * sizeof *f->segs);
        if (!p)
            return -1;
        f->segs = p;
        a->cap = c;
    }
    f->segs[f->n_segs] = *seg;
    return 0;
}

int rsr_steps_find(const uint32_t *key, const int64_t *gap, const double *weight, size_t n,
                   struct rsr_steps_found *out)
{
    struct arrays a = { gap, weight, out, 0 };
    struct rsr_steps_src src = { n, key, arrays_gap, arrays_weight, &a };
    int rc = rsr_steps_find_in(&src, out, arrays_seg, &a);
    if (rc != 0 || !out->period) {
        free(out->segs);
        out->segs = NULL;
    }
    return rc;
}

void rsr_steps_found_free(struct rsr_steps_found *f)
{
    free(f->segs);
    memset(f, 0, sizeof *f);
}

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

enum step_source { SRC_COLLECTIVES, SRC_KERNELS, SRC_NVTX, SRC_KINETO, SRC_N };

static const char *const source_name[SRC_N] = { "collectives", "kernels", "nvtx", "kineto" };

/* A process's steps as they are made (proc_take): counted, and folded
 * into the job's steps when job is set. */
struct proc {
    size_t model;
    size_t n;
    double conf;
    int src;                    /* enum step_source */
    struct rsr_steps *job;      /* the job's steps; NULL: count only */
    int first;                  /* the first process folded: each step starts afresh */
    const struct rsr_model *m;
    size_t bur;                 /* fold_one's place in the checkpoint bursts */
    struct rsr_cp_typical typ;  /* its steps without a checkpoint so far (critpath.h) */
    double loader[RSR_HOST_NCLASSES];   /* loader_shares */
};

static void fold_one(struct rsr_step *t, const struct pstep *x, struct proc *p);

static void proc_take(struct proc *p, const struct pstep *x)
{
    if (p->job && p->n < p->job->n)
        fold_one(rsr_step_mut(p->job, p->n), x, p);
    p->n++;
}

static struct rsr_step_counters sub(const struct rsr_step_counters *a, const struct rsr_step_counters *b)
{
    struct rsr_step_counters d = { a->busy - b->busy, a->compute - b->compute, a->comm - b->comm,
                                   a->cc - b->cc, a->io - b->io, a->wait - b->wait, { 0 },
                                   a->read_ext - b->read_ext, a->sync_gap - b->sync_gap };
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
 * began, whichever is latest. */
static int64_t last_edge(const struct rsr_summary *s, int64_t start)
{
    int64_t end = s->host_end_ns > s->gpu.end_ns ? s->host_end_ns : s->gpu.end_ns;
    for (size_t b = 0; b < s->n_bursts; b++)
        if (s->bursts[b].start_ns >= start && s->bursts[b].end_ns > end)
            end = s->bursts[b].end_ns;
    return end;
}

/* Turns the steps (segments of marks) of a process into its steps with
 * their counters, one at a time, in order (rsr_steps_find_in's emit). */
struct seg_steps {
    struct proc *p;
    struct marks *mk;
    size_t k, bur;
    int64_t next_start;
};

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
    ps.end = c->next_start = b ? step_edge(s, b, &c->bur) : last_edge(s, start);
    if (ps.end < ps.start)
        ps.end = ps.start;
    ps.phase = g->phase;
    ps.d = sub(b ? &b->c : &s->end_counters, &c0);
    ps.d_start = a->t;
    ps.colls = s->n_cmarks ? (uint32_t)g->n : 0;
    ps.d_end = b ? b->t : ps.end > a->t ? ps.end : a->t;
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

/* A process's steps, from its collectives or else its kernels. 1: found,
 * 0: none (*kind says which marks were looked at: 0 none, 1 kernels, 2
 * collectives), -1: out of memory or the spill file could not be read. */
static int proc_find(struct proc *p, const struct rsr_summary *s, int *kind)
{
    struct marks mk = { .s = s, .n = s->n_cmarks ? s->n_cmarks : s->n_kmarks };
    *kind = s->n_cmarks ? 2 : mk.n || s->kmark_state == RSR_KMARK_NONE ? 1 : 0;
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

/* proc_find over the marks in mk, at least RSR_STEPS_MIN of them. */
static int proc_find_marks(struct proc *p, struct marks *mk)
{
    const struct rsr_summary *s = mk->s;
    size_t nm = mk->n;
    struct seg_steps c = { p, mk, 0, 0, 0 };
    p->src = s->n_cmarks ? SRC_COLLECTIVES : SRC_KERNELS;
    if (!s->n_cmarks && s->kmark_state == RSR_KMARK_ANCHOR) {
        /* one kernel per step (summary.h) */
        for (size_t i = 0; i < nm; i++) {
            struct rsr_step_seg g = { i, 1, RSR_PHASE_TRAIN };
            if (seg_step(&c, &g) != 0)
                return -1;
        }
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
    free(key);
    if (rc != 0)
        return -1;
    if (!f.period)
        return 0;
    p->conf = f.score * f.covered;
    return 1;
}

int rsr_step_range_name(const char *name)
{
    return name && (strcasestr(name, "step") || strcasestr(name, "iter"));
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
    qsort(v, n, sizeof *v, cmp_double);
    return quantile(v, n, 0.5);
}

/* The share of the GPU idle in each host class's main-thread waits that
 * were data loading (the summary's wait stacks against the ones the
 * symboliser called data loading, waits.h). */
static void loader_shares(const struct rsr_model *m, double *share)
{
    double all[RSR_HOST_NCLASSES] = { 0 }, loading[RSR_HOST_NCLASSES] = { 0 };
    const struct rsr_summary *s = m->sum;
    for (size_t i = 0; s && i < s->n_wstacks; i++) {
        const struct rsr_wait_stack *w = &s->wstacks[i];
        if (w->cls >= RSR_HOST_NCLASSES)
            continue;
        all[w->cls] += (double)w->idle_ns;
        for (uint32_t k = 0; k < m->waits.n_loader_stacks; k++)
            if (m->waits.loader_stacks[k] == w->stack && w->stack) {
                loading[w->cls] += (double)w->idle_ns;
                break;
            }
    }
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        share[k] = all[k] > 0 ? loading[k] / all[k] : 0;
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
    struct rsr_cp_in in = { m->rank, &x->d, x->d_start, x->d_end, ckpt, x->colls, { 0 } };
    memcpy(in.loader, p->loader, sizeof in.loader);
    struct rsr_cp_rank cr;
    rsr_cp_rank_of(&cr, &in, x->phase == RSR_PHASE_TRAIN ? &p->typ : NULL);
    if (x->phase == RSR_PHASE_TRAIN && p->job->rank_parts)
        for (int k = 0; k < RSR_CP_NPARTS; k++)
            p->job->rank_parts[p->model * RSR_CP_NPARTS + (size_t)k] += cr.part[k];
    rsr_cp_fold(&t->path, &cr, first);
}

/* A job step's figures from the sums fold_one left over np processes.
 * The spread of GPU busy time is the busiest rank's less the mean rank's
 * (a median would need every rank's figure for every step at once). */
static void fold_finish(struct rsr_step *st, size_t np)
{
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
    } else if (st->idle_ms - med_idle >= 0.5 * excess)
        sl->cause = "launch_gaps";
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
 * of its work. As proc_find. */
static int proc_get(struct proc *p, struct rsr_model *m, size_t i, int *kind, struct rsr_steps *job, int first)
{
    memset(p, 0, sizeof *p);
    p->model = i;
    p->job = job;
    p->first = first;
    p->m = m;
    *kind = 0;
    if (!m->sum)
        return 0;
    if (job)
        loader_shares(m, p->loader);
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
    if (!fd || !counts)
        goto done;
    for (size_t i = 0; i < n; i++) {
        struct proc p;
        int kind;
        int r = proc_get(&p, models[i], i, &kind, NULL, 0);
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
                 !looked ? "no GPU work to find steps in"
                 : looked & 2 ? "no repeating sequence of collectives (fewer than 3 repetitions)"
                              : "no repeating sequence of kernels (fewer than 3 repetitions in the first "
                                "4096 kernels)");
        goto done;
    }
    /* the step count most processes agree on; the others are left out */
    qsort(counts, np, sizeof *counts, cmp_size);
    size_t mode = counts[0], best = 0;
    for (size_t a = 0, b; a < np; a = b) {
        for (b = a; b < np && counts[b] == counts[a]; b++)
            ;
        if (b - a > best)
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
        int got = proc_get(&p, models[fd[r].model], fd[r].model, &kind, out, folded == 0);
        if (got > 0 && p.n == mode) {
            folded++;
            out->in_steps[fd[r].model] = 1;
        }
        if (got < 0) {
            rc = -1;
            goto done;
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
