/* Per-name summary of one process's GPU work, heaviest first, and the
 * kernels launched many times that each run only briefly: candidates for
 * fusion or CUDA graphs, where launch overhead rivals the work. Reads a
 * finished rsr_model; `ringside report` writes it as a process's "kernels"
 * list in report.json and names the short ones in its findings. The
 * streaming summary (summary.c) computes it, grouping ops by their interned
 * name, and holds the functions below. */
#ifndef RSR_KERNELS_H
#define RSR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

/* Defaults: a compute kernel under 10 us is short; a name is a candidate
 * when it ran short this many times in the trace. */
#define RSR_SHORT_KERNEL_NS 10000
#define RSR_SHORT_KERNEL_MIN_COUNT 100

struct rsr_kernel_stat {
    uint32_t name;              /* string id in the model */
    uint8_t cls;                /* enum rsr_gpu_class */
    uint64_t count;
    int64_t total_ns, min_ns, max_ns;
    double mean_ns;
    uint64_t short_count;       /* runs shorter than the threshold */
    int64_t short_ns;           /* their summed time */
    /* runs with launch geometry (occupancy.h): their count and time, sums
     * of blocks, threads per block and waves, and time-weighted sums of SM
     * coverage and theoretical occupancy (0..1) */
    uint64_t geom_count;
    int64_t geom_ns;
    double blocks_sum, tpb_sum, waves_sum, coverage_ns, occupancy_ns;
    uint64_t devices;           /* bit d: ran on device ordinal d (0..63) */
};

struct rsr_kernel_summary {
    struct rsr_kernel_stat *stats;  /* one per name, by total time, descending */
    size_t n;
    uint64_t n_compute;             /* compute kernel runs */
    uint64_t n_short;               /* of those, runs under the threshold */
    int64_t short_ns;               /* their summed time */
    const struct rsr_kernel_stat **short_names; /* the candidates, in stats, */
    size_t n_short_names;                       /* most short runs first */
};

/* Summarises every GPU op of m (kernels, copies, sets) by name into *out,
 * which then owns its arrays. Short runs are counted for compute kernels
 * only (short_ns: threshold); a name with at least min_count short runs is
 * a candidate. Returns 0, or -1 when out of memory (then *out holds nothing
 * to free). */
int rsr_kernels_summarize(const struct rsr_model *m, int64_t short_ns, uint64_t min_count,
                          struct rsr_kernel_summary *out);

/* Frees what a summary owns; it may be freed twice. */
void rsr_kernel_summary_free(struct rsr_kernel_summary *s);

#endif
