/* Storage and the GPU: checkpoints (bursts of large writes to files the
 * process never reads), their share of the job's wall time and the GPU idle
 * they cause, and data loading (reads while the GPU sits idle). Reads
 * aligned models (align.h); per-file totals are load.c's. */
#ifndef RSR_STORAGE_H
#define RSR_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"
#include "reporter/load/summary.h"

/* Bursts of one process closer than this are one checkpoint (shards). */
#define RSR_CKPT_MERGE_NS 5000000

struct rsr_checkpoint {
    size_t model;               /* index in the models given */
    int32_t rank;               /* the writer's rank, or for a process a rank
                                   started (a background checkpoint writer:
                                   torch.distributed.checkpoint's async save
                                   by process), that rank; -1: none */
    int64_t start_ns, end_ns;   /* job time line */
    uint64_t bytes;
    uint32_t files;             /* files written in it */
    int64_t gpu_stall_ns;       /* GPU idle inside the window (within its GPU span) */
    int64_t pid;                /* the process that wrote it */
    uint8_t by_child;           /* written by a process the rank started */
};


struct rsr_storage {
    struct rsr_checkpoint *ckpts;   /* by start */
    size_t n_ckpts;
    int64_t job_start_ns, job_end_ns;   /* ranks' (else all processes') wall */
    int64_t ckpt_union_ns;          /* union of all checkpoint windows */
    double checkpoint_pct;          /* ckpt_union_ns as % of the job's wall */
    struct rsr_data_loading *loading;   /* per model */
    size_t n_models;
};

/* Analyses models[0..n) into *out (which owns its arrays). Returns 0, or
 * -1 when out of memory (then *out holds nothing to free). */
int rsr_storage_analyse(struct rsr_model *const *models, size_t n, struct rsr_storage *out);

void rsr_storage_free(struct rsr_storage *s);

#endif
