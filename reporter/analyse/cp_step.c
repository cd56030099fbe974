/* A step's critical path by cause and its what-ifs, rank by rank (see
 * cp_step.h). */
#include "reporter/analyse/cp_step.h"

#include <math.h>
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

/* A host starved of CPU (rsr_cp_rank_of): the share of its time its main
 * thread waited for a CPU beyond its wake-ups from syncs, from which the
 * sync's gap starts to be the host's, and from which it is wholly. */
#define STARVED_FROM 0.10
#define STARVED_ALL 0.25

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
    /* communication alone on the GPU is exposed transfer while work
     * launched after it waited; while the GPU waited for the host to
     * launch more, it hid behind the host's work, which is the path */
    double transfer = fmin(cc - compute, pos((double)d->blocking));
    x->part[RSR_CP_COMPUTE] = compute;
    x->part[RSR_CP_TRANSFER] = transfer;
    x->part[RSR_CP_HOST] = cc - compute - transfer;
    x->part[RSR_CP_COPIES] = busy - cc;
    /* overlap hides at most the compute the transfer does not already run
     * beside, and never the last collective */
    double tail = in->colls ? comm / (double)in->colls : comm;
    x->hideable = fmin(pos(compute - (compute + comm - cc)), pos(transfer - tail));
    double left = pos(len - busy);
    double f[RSR_HOST_NCLASSES], h[RSR_HOST_NCLASSES];
    double loading = pos((double)d->wait) + pos((double)d->read_ext);
    for (int k = 0; k < RSR_HOST_NCLASSES; k++) {
        f[k] = in->loader[k] < 0 ? 0 : in->loader[k] > 1 ? 1 : in->loader[k];
        h[k] = pos((double)d->host[k]);
        if (in->cpu) {
            /* a collective on the CPU: the rank's transfer, or its wait
             * for a later rank (rsr_cp_step) */
            double c = in->coll[k] < 0 ? 0 : in->coll[k] > 1 ? 1 : in->coll[k];
            take(x, RSR_CP_TRANSFER, c * h[k], &left);
            h[k] *= 1 - c;
        }
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
    /* a host that woke from its sync and could not get a CPU: a wake-up
     * alone is the sync's (without the sync the host would not have had
     * to wake), but a host starved of CPU, whose main thread waited for
     * one beyond its wake-ups 10% of its time or more, is the cause: the
     * gap is the host's, wholly from 25% on */
    double starved = (in->starved - STARVED_FROM) / (STARVED_ALL - STARVED_FROM);
    take(x, RSR_CP_SYNC, pos((double)d->sync_gap) * (1 - fmin(1, pos(starved))), &left);
    /* a rank without GPU work computes on its CPU */
    x->part[in->cpu ? RSR_CP_COMPUTE : RSR_CP_HOST] += left;
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
            p->rest[c] = -INFINITY, p->host_min[c] = INFINITY;
        p->t_min = INFINITY;
    }
    for (int c = 0; c < RSR_CP_NHOST; c++) {
        p->host_sum[c] += (float)x->part[c];
        if (x->part[c] < p->host_min[c])
            p->host_min[c] = (float)x->part[c];
    }
    if (x->part[RSR_CP_TRANSFER] < p->t_min)
        p->t_min = x->part[RSR_CP_TRANSFER];
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
    double raw[RSR_CP_NPARTS], waited[RSR_CP_NHOST] = { 0 };
    memcpy(raw, p->part, sizeof raw);
    /* the latest rank's waits for later ranks, to what made them late */
    double wait = p->ranks >= 2 ? pos(raw[RSR_CP_TRANSFER] - p->t_min) : 0, more[RSR_CP_NHOST], all = 0;
    for (int c = 0; c < RSR_CP_NHOST; c++) {
        more[c] = wait > 0 ? pos((p->host_sum[c] - p->part[c]) / (p->ranks - 1) - p->host_min[c]) : 0;
        all += more[c];
    }
    for (int c = 0; c < RSR_CP_NHOST && all > 0; c++) {
        waited[c] = wait * more[c] / all;
        raw[c] += waited[c];
    }
    if (all > 0)
        raw[RSR_CP_TRANSFER] -= wait;
    for (int c = 0; c < RSR_CP_NHOST; c++)
        gain[c] = fmin(pos(p->f1 - p->rest[c]) + waited[c], raw[c]);
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
