/* What NVML measured of a process's GPU (the agent's gpu_util, gpu_sm_active
 * and gpu_sm_occupancy series, trace.fbs), kept as a bounded list of
 * intervals while a file streams past and then averaged over the process's
 * GPU span, beside the estimate from launch geometry. */
#ifndef RSR_GPUMETRICS_H
#define RSR_GPUMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/chunk.h"
#include "reporter/load/gpu_breakdown.h"

/* At most this many intervals per series; past it, neighbours merge. */
#define RSR_GPUM_MAX 8192

struct rsr_gpum_iv {
    int64_t t0, t1;
    double value;               /* percent */
};

struct rsr_gpum {
    /* the file's series: id -> kind + 1 (0: not a GPU series we read) and
     * the time of its last point */
    struct rsr_gpum_series {
        uint8_t kind1;
        int64_t last_ns;
    } *series;
    uint32_t n_series;
    struct rsr_gpum_list {
        struct rsr_gpum_iv *iv;
        size_t n, cap;
    } util, active, occupancy;
    int failed;
};

/* Takes a chunk's series definitions and points. */
void rsr_gpum_take(struct rsr_gpum *g, const struct rsf_chunk *c);
/* Fills b's NVML figures from the intervals within [b->start_ns, b->end_ns]. */
void rsr_gpum_finish(const struct rsr_gpum *g, struct rsr_gpu_breakdown *b);
void rsr_gpum_free(struct rsr_gpum *g);

#endif
