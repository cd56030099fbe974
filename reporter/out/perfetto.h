/* The Kineto-compatible export (OUT/trace.json of `ringside report`, and
 * `export perfetto -o FILE.json`): the GPU timelines of a job as PyTorch's
 * profiler (Kineto) writes them, Chrome trace-event JSON, so HTA reads it
 * (Perfetto's UI and chrome://tracing open it too), and `ringside
 * import-kineto` reads it back to the same figures. Perfetto's own format,
 * with everything else the report reads, is pftrace.c's. */
#ifndef RSR_PERFETTO_H
#define RSR_PERFETTO_H

#include <stddef.h>
#include <stdio.h>

#include "reporter/load/model.h"

/* Writes models[0..nmodels) (finished) to f as one JSON object: traceEvents
 * with a complete ("X") event per GPU op (cat "kernel", "gpu_memcpy",
 * "gpu_memset"; args device, stream, correlation, bytes, and for NCCL
 * kernels the collective as Kineto names it: "Collective name", "In msg
 * nelems", "Out msg nelems", "Group size", "dtype", "Process Group Name",
 * "Process Group Ranks") and per launch call (cat "cuda_runtime", args
 * correlation), one pid per process (its rank, else its pid), one tid per
 * stream and per host thread, with process and thread names; and
 * "distributedInfo" with the world size (and the rank when there is one
 * model, as in a Kineto trace of one rank). Times are microseconds with
 * three decimals (exact to the ns). Returns 0, or -1 when writing failed
 * (errno set by stdio). */
int rsr_perfetto_write(FILE *f, struct rsr_model *const *models, size_t nmodels);

#endif
