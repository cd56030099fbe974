/* Utilisation bins (see timeline.h): each interval adds its overlap with
 * every bin it touches, so busy time and bytes are spread in proportion. */
#include "reporter/timeline.h"
#include "formats/trace.h"

#include <stdlib.h>
#include <string.h>

static int64_t pick_bin(int64_t span)
{
    int64_t step = 1000; /* 1 us */
    static const int mult[] = { 1, 2, 5 };
    for (;;)
        for (int i = 0; i < 3; i++) {
            int64_t b = step * mult[i];
            if (span <= b * RSR_TIMELINE_MAX_BINS)
                return b;
            if (i == 2)
                step *= 10;
        }
}

/* Adds weight x (the fraction of [s, e) in each bin) times amount to v. */
static void spread(const struct rsr_timeline *t, double *v, int64_t s, int64_t e, double amount)
{
    if (e <= s) {
        int64_t k = (s - t->start_ns) / t->bin_ns;
        if (s >= t->start_ns && k < (int64_t)t->nbins)
            v[k] += amount;
        return;
    }
    int64_t lo = s > t->start_ns ? s : t->start_ns;
    int64_t hi_all = t->start_ns + t->bin_ns * (int64_t)t->nbins;
    int64_t hi = e < hi_all ? e : hi_all;
    for (int64_t k = (lo - t->start_ns) / t->bin_ns; lo < hi; k++) {
        int64_t be = t->start_ns + (k + 1) * t->bin_ns;
        int64_t x = hi < be ? hi : be;
        v[k] += amount * (double)(x - lo) / (double)(e - s);
        lo = x;
    }
}

void rsr_timeline_free(struct rsr_timeline *t)
{
    for (size_t i = 0; i < t->n_ranks; i++) {
        free(t->ranks[i].gpu_busy_pct);
        free(t->ranks[i].comm_gbs);
        free(t->ranks[i].read_mbs);
        free(t->ranks[i].write_mbs);
    }
    free(t->ranks);
    memset(t, 0, sizeof *t);
}

int rsr_timeline_build(struct rsr_model *const *models, size_t n, int64_t start_ns, int64_t end_ns,
                       struct rsr_timeline *out)
{
    memset(out, 0, sizeof *out);
    if (end_ns <= start_ns)
        return 0;
    out->start_ns = start_ns;
    out->bin_ns = pick_bin(end_ns - start_ns);
    out->nbins = (size_t)((end_ns - start_ns + out->bin_ns - 1) / out->bin_ns);
    int any_rank = 0;
    for (size_t i = 0; i < n; i++)
        any_rank |= models[i]->rank >= 0;
    out->ranks = calloc(n ? n : 1, sizeof *out->ranks);
    if (!out->ranks)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_model *m = models[i];
        if (any_rank && m->rank < 0)
            continue;
        struct rsr_timeline_rank *r = &out->ranks[out->n_ranks++];
        r->model = i;
        r->rank = m->rank;
        r->gpu_busy_pct = calloc(out->nbins, sizeof(double));
        r->comm_gbs = calloc(out->nbins, sizeof(double));
        r->read_mbs = calloc(out->nbins, sizeof(double));
        r->write_mbs = calloc(out->nbins, sizeof(double));
        if (!r->gpu_busy_pct || !r->comm_gbs || !r->read_mbs || !r->write_mbs) {
            rsr_timeline_free(out);
            return -1;
        }
        /* GPU busy: the union of ops, so overlapping streams count once */
        int64_t s = 0, e = 0;
        int open = 0;
        for (size_t k = 0; k <= m->n_ops; k++) {
            const struct rsr_gpu_op *op = k < m->n_ops ? &m->ops[k] : NULL;
            if (op && open && op->start_ns <= e) {
                if (op->end_ns > e)
                    e = op->end_ns;
                continue;
            }
            if (open)
                spread(out, r->gpu_busy_pct, s, e, (double)(e - s));
            if (!op)
                break;
            s = op->start_ns, e = op->end_ns, open = 1;
        }
        for (size_t k = 0; k < m->n_colls; k++) {
            const struct rsr_coll *c = &m->colls[k];
            if (c->end_ns)
                spread(out, r->comm_gbs, c->start_ns, c->end_ns, (double)c->bytes);
        }
        for (size_t k = 0; k < m->n_io; k++) {
            const struct rsr_io *io = &m->io[k];
            if (io->dir == RSF_DIR_READ)
                spread(out, r->read_mbs, io->start_ns, io->end_ns, (double)io->bytes);
            else if (io->dir == RSF_DIR_WRITE)
                spread(out, r->write_mbs, io->start_ns, io->end_ns, (double)io->bytes);
        }
        double bin_s = (double)out->bin_ns / 1e9;
        for (size_t b = 0; b < out->nbins; b++) {
            r->gpu_busy_pct[b] = 100.0 * r->gpu_busy_pct[b] / (double)out->bin_ns;
            r->comm_gbs[b] /= bin_s * 1e9;
            r->read_mbs[b] /= bin_s * 1e6;
            r->write_mbs[b] /= bin_s * 1e6;
        }
    }
    return 0;
}
