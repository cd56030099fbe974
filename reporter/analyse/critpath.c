/* The cross-rank critical path by cause and its what-ifs (see critpath.h). */
#include "reporter/analyse/critpath.h"
#include "reporter/load/model.h"
#include "reporter/analyse/steps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *rsr_cp_part_name(int part)
{
#define RSR_CP_NAME(id, name, text) name,
    static const char *const names[] = { RSR_CP_PARTS(RSR_CP_NAME) };
#undef RSR_CP_NAME
    return part >= 0 && part < RSR_CP_NPARTS ? names[part] : NULL;
}

const char *rsr_cp_part_text(int part)
{
#define RSR_CP_TEXT(id, name, text) text,
    static const char *const texts[] = { RSR_CP_PARTS(RSR_CP_TEXT) };
#undef RSR_CP_TEXT
    return part >= 0 && part < RSR_CP_NPARTS ? texts[part] : NULL;
}

static double pos(double v)
{
    return v > 0 ? v : 0;
}

/* Gives up to want of *left to the part. */
static void take(struct rsr_cp_rank *x, int part, double want, double *left)
{
    double v = want < *left ? pos(want) : *left;
    x->part[part] += v;
    *left -= v;
}

/* Moves what part k of a checkpoint's step has beyond the typical step's
 * (typ holds n steps' sum) to the checkpoint. */
static void excess_to_ckpt(struct rsr_cp_rank *x, int k, double typ_sum, uint64_t n)
{
    double v = pos(x->part[k] - (n ? typ_sum / (double)n : 0));
    x->part[k] -= v;
    x->part[RSR_CP_CHECKPOINT] += v;
}

void rsr_cp_rank_of(struct rsr_cp_rank *x, const struct rsr_cp_in *in, struct rsr_cp_typical *typ)
{
    const struct rsr_step_counters *d = in->d;
    int ckpt = in->ckpt;
    memset(x, 0, sizeof *x);
    x->rank = in->rank;
    x->start = in->start;
    double len = pos((double)(in->end - in->start)), busy = pos((double)d->busy), compute = pos((double)d->compute);
    double cc = pos((double)d->cc), comm = pos((double)d->comm);
    if (cc < compute)
        cc = compute;
    if (busy < cc)
        busy = cc;
    x->part[RSR_CP_COMPUTE] = compute;
    x->part[RSR_CP_TRANSFER] = cc - compute;
    x->part[RSR_CP_COPIES] = busy - cc;
    /* overlap hides at most the compute the transfer does not already run
     * beside, and never the last collective */
    double tail = in->colls ? comm / (double)in->colls : comm;
    x->hideable = fmin(pos(compute - (compute + comm - cc)), pos(cc - compute - tail));
    double left = pos(len - busy);
    double f[RSR_HOST_NCLASSES], h[RSR_HOST_NCLASSES];
    double loading = pos((double)d->wait) + pos((double)d->read_ext);
    for (int k = 0; k < RSR_HOST_NCLASSES; k++) {
        f[k] = in->loader[k] < 0 ? 0 : in->loader[k] > 1 ? 1 : in->loader[k];
        h[k] = pos((double)d->host[k]);
        if (k != RSR_HOST_WRITE)
            loading += f[k] * h[k];
    }
    if (ckpt)
        take(x, RSR_CP_CHECKPOINT, h[RSR_HOST_WRITE], &left);
    take(x, RSR_CP_DATA, loading, &left);
    if (!ckpt)
        take(x, RSR_CP_FILE_IO, h[RSR_HOST_WRITE], &left);
    take(x, RSR_CP_SLEEP, (1 - f[RSR_HOST_SLEEP]) * h[RSR_HOST_SLEEP], &left);
    take(x, RSR_CP_LOCK, (1 - f[RSR_HOST_LOCK]) * h[RSR_HOST_LOCK], &left);
    take(x, RSR_CP_WAIT, (1 - f[RSR_HOST_POLL]) * h[RSR_HOST_POLL], &left);
    take(x, RSR_CP_SYNC, (double)d->sync_gap, &left);
    x->part[RSR_CP_HOST] += left;
    if (typ && ckpt && typ->n) {
        excess_to_ckpt(x, RSR_CP_COPIES, typ->copies, typ->n);
        excess_to_ckpt(x, RSR_CP_SYNC, typ->sync, typ->n);
        excess_to_ckpt(x, RSR_CP_HOST, typ->host, typ->n);
    } else if (typ && !ckpt) {
        typ->copies += x->part[RSR_CP_COPIES];
        typ->sync += x->part[RSR_CP_SYNC];
        typ->host += x->part[RSR_CP_HOST];
        typ->n++;
    }
    x->w = 0;
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        if (k != RSR_CP_TRANSFER)
            x->w += x->part[k];
}

void rsr_cp_fold(struct rsr_step_path *p, const struct rsr_cp_rank *x, int first)
{
    if (first) {
        memset(p, 0, sizeof *p);
        p->base = x->start;
        p->f1 = p->rest_compute = -INFINITY;
        p->c_min = INFINITY;
        p->r1 = -1;
        for (int c = 0; c < RSR_CP_NHOST; c++)
            p->rest[c] = -INFINITY;
    }
    double f = (double)(x->start - p->base) + x->w;
    if (f > p->f1) {
        p->f1 = f, p->r1 = x->rank;
        memcpy(p->part, x->part, sizeof p->part);
        p->hideable = x->hideable;
    }
    for (int c = 0; c < RSR_CP_NHOST; c++)
        if (f - x->part[c] > p->rest[c])
            p->rest[c] = f - x->part[c];
    double comp = x->part[RSR_CP_COMPUTE];
    if (f - comp > p->rest_compute)
        p->rest_compute = f - comp;
    if (comp < p->c_min)
        p->c_min = comp;
    p->ranks++;
}

double rsr_cp_step(const struct rsr_step_path *p, int eval, unsigned how, double len_ns, double *gain, double *part)
{
    memset(gain, 0, RSR_CP_NGAIN * sizeof *gain);
    if (part)
        memset(part, 0, RSR_CP_NPARTS * sizeof *part);
    if (eval) {
        /* the whole step: the latest rank's own time in it (the job's
         * step, first rank's start to last rank's end, holds the ranks'
         * skew too) */
        double all = 0;
        for (int k = 0; k < RSR_CP_NPARTS; k++)
            all += p->ranks ? p->part[k] : 0;
        if (all <= 0)
            all = pos(len_ns);
        gain[RSR_CP_EVAL] = all;
        if (part)
            part[RSR_CP_EVAL] = all;
        return all;
    }
    if (!p->ranks)
        return 0;
    double raw[RSR_CP_NPARTS];
    memcpy(raw, p->part, sizeof raw);
    for (int c = 0; c < RSR_CP_NHOST; c++)
        gain[c] = fmin(pos(p->f1 - p->rest[c]), raw[c]);
    gain[RSR_CP_TRANSFER] = fmin(raw[RSR_CP_TRANSFER], p->hideable);
    /* every rank's compute like the fastest rank's */
    if (p->ranks >= 2 && !(how & RSR_CP_NO_IMBALANCE)) {
        double excess = pos(raw[RSR_CP_COMPUTE] - p->c_min);
        gain[RSR_CP_IMBALANCE] = fmin(excess, pos(p->f1 - (p->rest_compute + p->c_min)));
        raw[RSR_CP_IMBALANCE] = gain[RSR_CP_IMBALANCE];
        raw[RSR_CP_COMPUTE] -= raw[RSR_CP_IMBALANCE];
    }
    double total = 0;
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        total += raw[k];
    if (part)
        memcpy(part, raw, sizeof raw);
    return total;
}

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

int rsr_critpath_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                         struct rsr_critpath *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < RSR_CP_NGAIN; k++)
        out->gain_rank[k] = -1;
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
