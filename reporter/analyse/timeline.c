/* Utilisation bins (see timeline.h): each process's fine bins (summary.c,
 * where every interval was spread over the bins it touches in proportion)
 * are shifted onto the job's time line and re-binned the same way. */
#include "reporter/analyse/timeline.h"
#include "reporter/load/summary.h"

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

void rsr_timeline_free(struct rsr_timeline *t)
{
    for (size_t i = 0; i < t->n_ranks; i++) {
        free(t->ranks[i].gpu_busy_pct);
        free(t->ranks[i].comm_gbs);
        free(t->ranks[i].read_mbs);
        free(t->ranks[i].write_mbs);
        free(t->ranks[i].sm_active_pct);
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
    int any_rank = 0, any_sm = 0;
    for (size_t i = 0; i < n; i++) {
        any_rank |= models[i]->rank >= 0;
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        any_sm |= sm && sm->gpu.sm_active_ns > 0;
    }
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
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        if (!sm) {
            rsr_timeline_free(out);
            return -1;
        }
        rsr_summary_rebin(sm, RSR_FINE_BUSY, r->gpu_busy_pct, out->start_ns, out->bin_ns, out->nbins);
        rsr_summary_rebin(sm, RSR_FINE_COMM, r->comm_gbs, out->start_ns, out->bin_ns, out->nbins);
        rsr_summary_rebin(sm, RSR_FINE_READ, r->read_mbs, out->start_ns, out->bin_ns, out->nbins);
        rsr_summary_rebin(sm, RSR_FINE_WRITE, r->write_mbs, out->start_ns, out->bin_ns, out->nbins);
        if (any_sm) {
            r->sm_active_pct = calloc(out->nbins, sizeof(double));
            if (!r->sm_active_pct) {
                rsr_timeline_free(out);
                return -1;
            }
            rsr_summary_rebin(sm, RSR_FINE_SM, r->sm_active_pct, out->start_ns, out->bin_ns, out->nbins);
            for (size_t b = 0; b < out->nbins; b++)
                r->sm_active_pct[b] = 100.0 * r->sm_active_pct[b] / (double)out->bin_ns;
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
