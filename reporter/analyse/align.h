/* Clock alignment across the processes of a job: each model is moved onto
 * one time line, first by its (monotonic, realtime) clock pairs, then by
 * collective end times (all ranks leave a collective at nearly the same
 * moment), matched across ranks by (communicator, sequence number). */
#ifndef RSR_ALIGN_H
#define RSR_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

struct rsr_align_model {
    int64_t pair_offset_ns;     /* realtime - monotonic, median of its pairs */
    int64_t correction_ns;      /* added on top of that from collective ends */
    uint64_t matched;           /* its collectives matched on another rank */
};

struct rsr_alignment {
    struct rsr_align_model *models;     /* one per model given */
    size_t n;
    uint64_t groups;            /* collectives seen on two ranks or more */
    int64_t max_correction_ns;  /* largest |correction_ns|: the skew the clock pairs left */
    int64_t residual_ns;        /* after alignment, the 95th percentile of |end - the
                                 * collective's mean end| over matched collectives */
};

/* Aligns models[0..n) (finished) in place with rsr_model_shift and says
 * how in *out (which then owns its array). Models without clock pairs
 * (Kineto) keep their times, apart from collective corrections. The
 * correction of the first model with matched collectives (lowest index) is
 * 0. Returns 0, or -1 when out of memory (models then moved by their clock
 * pairs only). */
int rsr_align(struct rsr_model *const *models, size_t n, struct rsr_alignment *out);

void rsr_alignment_free(struct rsr_alignment *a);

#endif
