/* Where one process's GPU time went, with HTA's definitions (docs/analyses.md,
 * 'The GPU time breakdown'): idle / compute / non-compute shares of the GPU span, the
 * shares of communication and copies, how much communication compute hides,
 * and why each stream sat idle. Reads a finished rsr_model; `ringside
 * report` writes the result as the "gpu" object of a process in report.json.
 * The streaming summary (summary.c) computes it in one pass over the
 * start-ordered ops, and holds the functions below. */
#ifndef RSR_GPU_BREAKDOWN_H
#define RSR_GPU_BREAKDOWN_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

/* HTA's default consecutive-kernel delay: a gap shorter than this between
 * two kernels on a stream, not caused by a late launch, is launch overhead. */
#define RSR_KERNEL_WAIT_NS 30000

/* Idle time of one stream, split as HTA does. Before each op but the first:
 * host wait when its launch call began after the previous op on the stream
 * ended; kernel wait when the gap is shorter than the threshold; else other. */
struct rsr_stream_idle {
    int32_t device, stream;
    uint64_t ops;
    int64_t host_wait_ns, kernel_wait_ns, other_ns;
};

/* Times are ns; percentages are of span_ns (0 when there is no GPU work). */
struct rsr_gpu_breakdown {
    int64_t start_ns, end_ns;       /* first GPU start, last GPU end */
    int64_t span_ns;                /* end_ns - start_ns */
    int64_t busy_ns;                /* union of all GPU work */
    int64_t idle_ns;                /* span - busy */
    int64_t compute_ns;             /* union of compute kernels */
    int64_t non_compute_ns;         /* span - compute - idle */
    int64_t comm_ns;                /* union of communication kernels */
    int64_t memcpy_ns;              /* union of copies and sets */
    int64_t overlap_ns;             /* union(comm) within union(compute) */
    /* comm_ns - overlap_ns, less exposed_sync_wait_ns and less the transfer
     * the last rank's compute hid (rsr_coll_split_gpu): the transfer that
     * compute does not hide. A process's collectives matched on no other
     * rank, as a one-rank Kineto trace's, wait for nobody: there it is
     * HTA's exposed communication, comm_ns - overlap_ns. */
    int64_t exposed_comm_ns;
    /* Collectives matched across ranks (collectives.h, rsr_coll_split_gpu):
     * the time this process's collectives waited for the last rank to
     * arrive, of it what compute did not hide, and the transfer (from the
     * last arrival to the end). */
    int64_t sync_wait_ns, exposed_sync_wait_ns, transfer_ns;
    double idle_pct, compute_pct, non_compute_pct, comm_pct, memcpy_pct;
    double comm_comp_overlap_pct;   /* overlap_ns / comm_ns, 0 without comm */
    double exposed_comm_pct;
    double sync_wait_pct, exposed_sync_wait_pct, transfer_pct;
    /* How much of the GPU its kernels used (docs/analyses.md, "The GPU time breakdown"):
     * kernel_busy_ns, the union of kernels (compute and communication:
     * what nvidia-smi's utilisation counts); sm_active_ns, the time
     * integral of the share of SMs holding a block, from launch geometry
     * (occupancy.h), concurrent compute kernels summed and capped at 1
     * (DCGM's SM_ACTIVE, less the collectives' kernels, which wait for
     * their peers or move data); no_geom_ns, the time some compute kernel
     * ran whose geometry is not known (it adds nothing to sm_active_ns);
     * occupancy_ns, the same integral of the share of the GPU's warp slots
     * held (DCGM's SM_OCCUPANCY). Percentages: busy, SM activity and
     * occupancy of span_ns, no_geometry of compute_ns. */
    int64_t kernel_busy_ns, no_geom_ns;
    double sm_active_ns, occupancy_ns;
    double busy_pct, sm_activity_pct, sm_occupancy_pct, no_geometry_pct;
    /* Measured by NVML where the agent sampled it, over the GPU span:
     * gpm_n > 0: GPM SM activity and occupancy; util_n > 0: utilisation. */
    double gpm_sm_active_pct, gpm_occupancy_pct, nvml_util_pct;
    uint32_t gpm_n, util_n;
    struct rsr_stream_idle *streams;    /* by device, then stream */
    size_t n_streams;
    /* Summed over all streams, as HTA counts them: with several streams
     * more than the span. Kept for the comparison with HTA; a figure per
     * GPU takes rsr_gpu_busiest_stream's instead. */
    int64_t host_wait_ns, kernel_wait_ns, other_idle_ns;
};

/* Computes the breakdown of m (finished: see rsr_model_finish) into *out,
 * which then owns the streams array; kernel_wait_ns is the consecutive-
 * kernel threshold (RSR_KERNEL_WAIT_NS for HTA's). Returns 0, or -1 when
 * out of memory (then *out holds nothing to free). */
int rsr_gpu_breakdown_compute(const struct rsr_model *m, int64_t kernel_wait_ns,
                              struct rsr_gpu_breakdown *out);

/* The stream that ran the most operations (its idle split is within the
 * span, as a figure per GPU must be), or NULL without streams. */
const struct rsr_stream_idle *rsr_gpu_busiest_stream(const struct rsr_gpu_breakdown *b);

/* Frees what a breakdown owns; it may be freed twice. */
void rsr_gpu_breakdown_free(struct rsr_gpu_breakdown *b);

#endif
