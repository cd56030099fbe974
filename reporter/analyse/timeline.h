/* Utilisation over time in fixed bins, per rank: GPU busy %, communication
 * bandwidth (collective bytes spread over their GPU time), storage read and
 * write bandwidth (I/O bytes spread over each call). report.json's
 * "timeline"; the HTML report draws it. Reads aligned models (align.h). */
#ifndef RSR_TIMELINE_H
#define RSR_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

/* At most this many bins; the bin is a 1-2-5 step of microseconds. */
#define RSR_TIMELINE_MAX_BINS 200

struct rsr_timeline_rank {
    size_t model;               /* index in the models given */
    int32_t rank;
    double *gpu_busy_pct, *comm_gbs, *read_mbs, *write_mbs;    /* nbins each */
    double *sm_active_pct;      /* nbins, or NULL: no launch geometry in the job */
};

struct rsr_timeline {
    int64_t start_ns;           /* job time line origin (first bin's start) */
    int64_t bin_ns;
    size_t nbins;
    struct rsr_timeline_rank *ranks;    /* rank processes (all processes if none has a rank) */
    size_t n_ranks;
};

/* Bins [start_ns, end_ns) and fills them from models[0..n). Returns 0, or
 * -1 when out of memory (then *out holds nothing to free). */
int rsr_timeline_build(struct rsr_model *const *models, size_t n, int64_t start_ns, int64_t end_ns,
                       struct rsr_timeline *out);

void rsr_timeline_free(struct rsr_timeline *t);

#endif
