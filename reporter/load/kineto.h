/* Reads a PyTorch profiler (Kineto) trace, .json or .json.gz, into a
 * reporter GPU timeline (model.h). `ringside import-kineto` converts such
 * traces through it; the analyses then treat them like ringside's own. */
#ifndef RSR_KINETO_H
#define RSR_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

#define RSR_KINETO_ERRORS(X) \
    X(OK,        "ok") \
    X(OPEN,      "cannot open") \
    X(READ,      "read error") \
    X(GZIP,      "corrupt gzip data") \
    X(TRUNCATED, "cut short") \
    X(JSON,      "malformed JSON") \
    X(NOT_TRACE, "not a PyTorch profiler trace") \
    X(NOMEM,     "out of memory")

enum rsr_kineto_err {
#define RSR_KINETO_ERR_ENUM(name, msg) RSR_KINETO_ERR_##name,
    RSR_KINETO_ERRORS(RSR_KINETO_ERR_ENUM)
#undef RSR_KINETO_ERR_ENUM
};

/* The message for an error code; never NULL. */
const char *rsr_kineto_strerror(int err);

/* Streams the trace at path (gzip or plain JSON, told apart by content)
 * through a callback JSON parser into m, which the caller has initialised
 * and owns; the whole text is never held in memory. It takes:
 *   - GPU work: events of cat "kernel", "gpu_memcpy", "gpu_memset", with
 *     stream, device, correlation, bytes, and for NCCL kernels the
 *     collective ("Collective name", "In/Out msg nelems", "dtype",
 *     "Group size", "Process Group Name"/"Ranks");
 *   - launches: cat "cuda_runtime" and "cuda_driver" events that carry a
 *     correlation;
 *   - identity from "distributedInfo" (rank, world_size) and the host pid;
 *   - launch geometry: kernels' "grid", "block", "registers per thread" and
 *     "shared memory", kept once per distinct launch (m->geoms, functions),
 *     and the GPUs of "deviceProperties" (m->devices), from which each
 *     kernel op gets its occupancy figures (occupancy.h); none without them.
 * It then keeps what HTA analyses, so that figures agree with it: when the
 * trace holds two or more profiler steps ("ProfilerStep#N"), only launches
 * that began before the last step began, and only GPU work launched by
 * those (the last step is cut off when the profiler stops); the rest is
 * counted in m->dropped. Times are rounded inward to whole microseconds
 * as HTA does (see kineto.c). The model is finished (rsr_model_finish).
 *
 * Returns RSR_KINETO_ERR_OK, or a code with one line in msg (msglen bytes,
 * may be 0) naming the file and where: "t.json.gz: byte 5120: malformed
 * JSON: invalid object key". On error m holds what was read so far; the
 * caller frees it with rsr_model_free either way. */
int rsr_kineto_load(const char *path, struct rsr_model *m, char *msg, size_t msglen);

/* What a trace says beyond the model: the realtime clock at its time zero.
 * Kineto writes "baseTimeNanoseconds" (since PyTorch 2.2): realtime ns =
 * base_time_ns + ts in ns; older traces write ts as realtime us already. */
struct rsr_kineto_info {
    int has_base_time;
    int64_t base_time_ns;
};

/* rsr_kineto_load, also filling *info (zeroed first) when info is not NULL. */
int rsr_kineto_load_info(const char *path, struct rsr_model *m, struct rsr_kineto_info *info,
                         char *msg, size_t msglen);

/* One process of a job's trace, as its "ringside" object lists it. */
struct rsr_kineto_proc {
    int64_t pid;            /* the events' "pid" */
    int32_t rank, world_size;
    int64_t os_pid;
    int64_t wall_start_ns, wall_end_ns;  /* what the process's model spanned, 0: not said */
};

/* Reads a trace that may hold several processes. A whole job's trace.json
 * from rsr_perfetto_write lists its processes in a top-level "ringside"
 * object; each gets a model of its own (events of other pids are counted in
 * the first model's dropped, and there is no profiler-step cut); any other
 * trace gives one model, as rsr_kineto_load_info does. On success *models
 * is a malloc'd array of *n finished, malloc'd models, freed with
 * rsr_kineto_free_job; on error *models is NULL, *n 0, and msg as above. */
int rsr_kineto_load_job(const char *path, struct rsr_model ***models, size_t *n,
                        struct rsr_kineto_info *info, char *msg, size_t msglen);
void rsr_kineto_free_job(struct rsr_model **models, size_t n);

#endif
