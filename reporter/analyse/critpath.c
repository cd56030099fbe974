/* The cross-rank critical path by cause and its what-ifs (see critpath.h). */
#include "reporter/analyse/critpath.h"
#include "reporter/load/model.h"
#include "reporter/analyse/steps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The compute excess's gain per rank that was the path (the other causes
 * are placed by the ranks' own parts, part_rank). */
struct by_rank {
    double *v;      /* [rank] */
    size_t n;       /* ranks */
    int failed;
};

static void by_rank_add(struct by_rank *b, int32_t rank, double v)
{
    if (rank < 0 || v <= 0 || b->failed)
        return;
    if ((size_t)rank >= b->n) {
        size_t n = b->n ? b->n : 8;
        while (n <= (size_t)rank)
            n *= 2;
        double *w = realloc(b->v, n * sizeof *w);
        if (!w) {
            b->failed = 1;
            return;
        }
        memset(w + b->n, 0, (n - b->n) * sizeof *w);
        b->v = w;
        b->n = n;
    }
    b->v[rank] += v;
}

/* The rank that holds 60% or more of part k of the ranks' own parts, its
 * share in *share; -1: none. */
static int32_t part_rank(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps, int k,
                         double *share)
{
    double all = 0, best = 0;
    int32_t who = -1;
    size_t ranks = 0;
    for (size_t i = 0; steps->rank_parts && i < n && i < steps->n_models; i++) {
        if (!steps->in_steps[i])
            continue;
        double v = steps->rank_parts[i * RSR_CP_NPARTS + (size_t)k];
        all += v;
        ranks++;
        if (v > best)
            best = v, who = models[i]->rank;
    }
    if (ranks < 2 || all <= 0 || best < 0.6 * all)
        return -1;
    *share = best / all;
    return who;
}

/* The steps of the headline's stretch on the path, with flags how: their
 * parts and gains added up, the compute excess's by the rank that was the
 * path, the paths' length and the stretch. 0, or -1 when out of memory. */
struct sums {
    double part[RSR_CP_NPARTS], gain[RSR_CP_NGAIN], len;
    size_t steps;
    int64_t from, to;
    struct by_rank br;
};

static int add_steps(const struct rsr_steps *steps, size_t first, size_t last, unsigned how, struct sums *t)
{
    memset(t, 0, sizeof *t);
    double sp[RSR_CP_NPARTS], sg[RSR_CP_NGAIN];
    for (size_t i = first; i <= last; i++) {
        const struct rsr_step *st = rsr_step_get(steps, i);
        if (i == first)
            t->from = st->start_ns;
        if (st->end_ns > t->to)
            t->to = st->end_ns;
        if (!st->path.ranks)
            continue;
        double l = rsr_cp_step(&st->path, st->phase == RSR_PHASE_EVAL, how, (double)(st->end_ns - st->start_ns),
                               sg, sp);
        if (l <= 0)
            continue;
        t->len += l;
        t->steps++;
        for (int k = 0; k < RSR_CP_NPARTS; k++)
            t->part[k] += sp[k];
        for (int k = 0; k < RSR_CP_NGAIN; k++)
            t->gain[k] += sg[k];
        by_rank_add(&t->br, st->path.r1, sg[RSR_CP_IMBALANCE]);
    }
    return t->br.failed ? -1 : 0;
}

/* Whether the compute excess stays on the same ranks: the fewest ranks
 * that hold 80% of its gain are at most half of the ranks (one straggler,
 * a slow pipeline stage). One that moves from rank to rank is jitter. */
static int imbalance_stays(const struct sums *t, size_t ranks)
{
    double all = t->gain[RSR_CP_IMBALANCE], held = 0;
    if (all <= 0 || ranks < 2)
        return 0;
    size_t used = 0;
    unsigned char *taken = calloc(t->br.n ? t->br.n : 1, 1);
    if (!taken)
        return 1;
    while (held < 0.8 * all && used < t->br.n) {
        size_t best = SIZE_MAX;
        for (size_t r = 0; r < t->br.n; r++)
            if (!taken[r] && (best == SIZE_MAX || t->br.v[r] > t->br.v[best]))
                best = r;
        taken[best] = 1;
        held += t->br.v[best];
        used++;
    }
    free(taken);
    return 2 * used <= ranks;
}

/* The kind of stacks (waits.h's rsr_top_kind) that say what the host did
 * in part k on model m, or -1: none. */
static int frames_kind(const struct rsr_model *m, int k)
{
    int cpu = m->sum && m->sum->kmark_waits;
    switch (k) {
    case RSR_CP_CHECKPOINT: case RSR_CP_FILE_IO:
        return RSR_TOP_IO;
    case RSR_CP_DATA:
        return RSR_TOP_DATA;
    case RSR_CP_HOST:
        return RSR_TOP_CPU;
    case RSR_CP_COMPUTE: case RSR_CP_IMBALANCE:
        return cpu ? RSR_TOP_CPU : -1;
    default:
        return -1;
    }
}

/* out's frames of part k (critpath.h). */
static void part_frames(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps, int k,
                        struct rsr_critpath *out)
{
    int32_t want = k < RSR_CP_NGAIN ? out->gain_rank[k] : -1;
    double best = 0;
    size_t who = SIZE_MAX;
    for (size_t i = 0; steps->rank_parts && i < n && i < steps->n_models; i++) {
        if (!steps->in_steps[i])
            continue;
        double v = steps->rank_parts[i * RSR_CP_NPARTS + (size_t)k];
        if (want >= 0 ? models[i]->rank == want : v > best)
            best = v, who = i;
        if (want >= 0 && who == i)
            break;
    }
    out->frames_rank[k] = -1;
    int kind = who < n ? frames_kind(models[who], k) : -1;
    if (kind < 0)
        return;
    const struct rsr_top_stack *top = models[who]->waits.top[kind];
    for (int s = 0; s < RSR_TOP_STACKS && top[s].ns; s++) {
        snprintf(out->frames[k][s], sizeof out->frames[k][s], "%s", top[s].text);
        out->frames_rank[k] = models[who]->rank;
    }
}

int rsr_critpath_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                         struct rsr_critpath *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < RSR_CP_NGAIN; k++)
        out->gain_rank[k] = -1;
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        out->frames_rank[k] = -1;
    if (!steps->n || !steps->count)
        return 0;
    /* the headline's stretch: the first training step's start to the last
     * one's end */
    size_t first = SIZE_MAX, last = 0;
    for (size_t i = 0; i < steps->n; i++) {
        const struct rsr_step *st = rsr_step_get(steps, i);
        if (st->phase == RSR_PHASE_TRAIN) {
            if (first == SIZE_MAX)
                first = i;
            last = i;
        }
    }
    if (first == SIZE_MAX)
        return 0;
    unsigned how = 0;
    struct sums t;
    if (add_steps(steps, first, last, how, &t) != 0) {
        free(t.br.v);
        return -1;
    }
    if (!imbalance_stays(&t, steps->ranks)) {
        how |= RSR_CP_NO_IMBALANCE;
        free(t.br.v);
        if (add_steps(steps, first, last, how, &t) != 0) {
            free(t.br.v);
            return -1;
        }
    }
    out->how = how;
    if (!t.steps || t.len <= 0) {
        free(t.br.v);
        return 0;
    }
    /* the paths in proportion to the headline's stretch (critpath.h) */
    double per = (double)(t.to - t.from) / t.len / (double)steps->count / 1e6;
    out->have = 1;
    out->steps = t.steps;
    out->per_step_ms = steps->per_step_ms;
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        out->part_ms[k] = t.part[k] * per;
    for (int k = 0; k < RSR_CP_NGAIN; k++) {
        out->gain_ms[k] = t.gain[k] * per;
        if (k == RSR_CP_TRANSFER || k == RSR_CP_EVAL)
            continue;
        if (k != RSR_CP_IMBALANCE) {
            out->gain_rank[k] = part_rank(models, n, steps, k, &out->gain_rank_share[k]);
            continue;
        }
        double best = 0;
        int32_t who = -1;
        for (size_t r = 0; r < t.br.n; r++)
            if (t.br.v[r] > best)
                best = t.br.v[r], who = (int32_t)r;
        if (t.gain[k] > 0 && best >= 0.6 * t.gain[k]) {
            out->gain_rank[k] = who;
            out->gain_rank_share[k] = best / t.gain[k];
        }
    }
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        if (out->part_ms[k] > 0)
            part_frames(models, n, steps, k, out);
    free(t.br.v);
    return 0;
}

int rsr_critpath_rank_cause(const struct rsr_critpath *cp, int32_t rank)
{
    int best = -1;
    for (int k = 0; k < RSR_CP_NGAIN && rank >= 0; k++)
        if (cp->gain_rank[k] == rank && cp->gain_ms[k] > 0 && (best < 0 || cp->gain_ms[k] > cp->gain_ms[best]))
            best = k;
    return best;
}
