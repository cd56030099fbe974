/* A process's steps from the repetition of its marks (see period.h for the
 * method). */
#include "reporter/load/period.h"
#include "reporter/base/order.h"
#include "reporter/base/array.h"

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
    qsort(v, m, sizeof *v, rsr_cmp_double);
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
        qsort(vals, k, sizeof *vals, rsr_cmp_i64);
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
    if (RSR_GROW(f->segs, a->cap, f->n_segs + 1, 64) != 0)
        return -1;
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

int rsr_step_range_name(const char *name)
{
    return name && (strcasestr(name, "step") || strcasestr(name, "iter"));
}

static int cmp_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

int rsr_steps_commonest(const uint32_t *key, size_t n, uint32_t *best, size_t *count)
{
    *count = 0;
    *best = 0;
    if (!n)
        return 0;
    uint32_t *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, key, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_u32);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && v[b] == v[a]; b++)
            ;
        if (b - a > *count)
            *count = b - a, *best = v[a];
    }
    free(v);
    return 0;
}
