/* The simulated CUDA driver's stream work: streams, events, kernel launches,
 * copies and memsets (legacy, _ptsz and _ptds entry points), stream capture and
 * graph replay. Each call turns into an operation of the time model
 * (simgpu_model.c); synchronous calls then wait for its modelled end. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/sim/simgpu_internal.h"

/* The calling thread's per-thread default stream. */
static __thread struct CUstream_st *sim_ptds_stream;

/* Under sim_lock. */
static struct CUstream_st *sim_stream_new(struct CUctx_st *ctx, unsigned flags, int priority)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->magic = SIM_MAGIC_STREAM;
    s->ctx = ctx;
    s->gen = ctx->gen;
    s->id = sim_model_next_stream_id();
    s->flags = flags;
    s->priority = priority;
    sim_model_register_stream(s);
    return s;
}

/* The stream behind a handle: 0 is the legacy default stream, or the per-thread
 * one for the _ptsz/_ptds entry points (ptds). Under sim_lock. */
CUresult sim_stream_get(CUstream h, int ptds, struct CUstream_st **out)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!h)
        h = ptds ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct CUctx_st *c = sim_current_ctx();
        if (!c || c->magic != SIM_MAGIC_CTX)
            return CUDA_ERROR_INVALID_CONTEXT;
        if (h == CU_STREAM_LEGACY) {
            *out = c->legacy;
            return CUDA_SUCCESS;
        }
        if (!sim_ptds_stream || sim_ptds_stream->ctx != c || sim_ptds_stream->gen != c->gen)
            sim_ptds_stream = sim_stream_new(c, 0, 0);
        *out = sim_ptds_stream;
        return sim_ptds_stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (h->magic != SIM_MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    r = sim_check_alive(h->ctx, h->gen, "stream");
    if (r == CUDA_SUCCESS)
        *out = h;
    return r;
}

/* ---- streams ---- */

static CUresult sim_stream_create(CUstream *ph, unsigned flags, int priority)
{
    CUresult r = sim_check_init();
    struct CUctx_st *c = sim_current_ctx();
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&sim_lock);
    *ph = sim_stream_new(c, flags, priority < -5 ? -5 : priority > 0 ? 0 : priority);
    pthread_mutex_unlock(&sim_lock);
    return *ph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags)
{
    return sim_stream_create(ph, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
    return sim_stream_create(ph, flags, priority);
}

/* As on a GPU, work already queued still completes: the model keeps it. */
SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream h)
{
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD || h->magic != SIM_MAGIC_STREAM)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    sim_capture_stream_gone(h);
    sim_model_unregister_stream(h);
    sim_op_unref(h->tail);
    h->magic = SIM_MAGIC_DEAD;
    pthread_mutex_unlock(&sim_lock);
    free(h);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamDestroy(CUstream h)
{
    return cuStreamDestroy_v2(h);
}

static CUresult sim_stream_sync(CUstream h, int ptds)
{
    struct CUstream_st *s;
    struct sim_op *tail = NULL;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    if (r == CUDA_SUCCESS)
        r = sim_capture_forbid(s);
    if (r == CUDA_SUCCESS && (tail = s->tail) != NULL)
        sim_op_ref(tail);
    pthread_mutex_unlock(&sim_lock);
    return tail ? sim_model_wait(tail) : r;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream h)
{
    return sim_stream_sync(h, 0);
}

SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h)
{
    return sim_stream_sync(h, 1);
}

static CUresult sim_stream_query(CUstream h, int ptds)
{
    struct CUstream_st *s;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    if (r == CUDA_SUCCESS)
        r = sim_capture_forbid(s);
    if (r == CUDA_SUCCESS && s->tail)
        r = sim_model_query(s->tail);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamQuery(CUstream h)
{
    return sim_stream_query(h, 0);
}

SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream h)
{
    return sim_stream_query(h, 1);
}

static CUresult sim_stream_wait_event(CUstream h, int ptds, CUevent e, unsigned flags)
{
    struct CUstream_st *s;
    if (!e || e->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_check_alive(e->ctx, e->gen, "cuStreamWaitEvent: event");
    if (r == CUDA_SUCCESS)
        r = sim_stream_get(h, ptds, &s);
    /* A wait in or on a capture is the graph's business; an event never
     * recorded is already complete. */
    if (r == CUDA_SUCCESS && (s->capture || e->capture_id)) {
        r = sim_capture_event_wait(s, e, flags);
    } else if (r == CUDA_SUCCESS && e->op) {
        struct sim_op *mark = sim_model_enqueue(s, SIM_MARK, e->op);
        if (mark)
            sim_model_submit(mark);
        else
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags)
{
    return sim_stream_wait_event(h, 0, e, flags);
}

SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags)
{
    return sim_stream_wait_event(h, 1, e, flags);
}

/* Accessors: one per property, each on both the legacy and the per-thread name
 * (EXPORTED: the name defined, sim_impl_<name> for an export newer than 12.0). */
#define SIM_STREAM_GETTER(name, type, expr) SIM_STREAM_GETTER_AS(SIM_EXPORT, name, name, type, expr)
#define SIM_STREAM_GETTER_AS(decl, exported, name, type, expr)                   \
    static CUresult sim_##name(CUstream h, int ptds, type *out)                   \
    {                                                                             \
        struct CUstream_st *s;                                                    \
        if (!out)                                                                 \
            return CUDA_ERROR_INVALID_VALUE;                                      \
        pthread_mutex_lock(&sim_lock);                                            \
        CUresult r = sim_stream_get(h, ptds, &s);                                 \
        if (r == CUDA_SUCCESS)                                                    \
            *out = (expr);                                                        \
        pthread_mutex_unlock(&sim_lock);                                          \
        return r;                                                                 \
    }                                                                             \
    decl CUresult exported(CUstream h, type *out) { return sim_##name(h, 0, out); } \
    decl CUresult exported##_ptsz(CUstream h, type *out) { return sim_##name(h, 1, out); }

SIM_STREAM_GETTER(cuStreamGetId, unsigned long long, s->id)
SIM_STREAM_GETTER(cuStreamGetFlags, unsigned int, s->flags)
SIM_STREAM_GETTER(cuStreamGetPriority, int, s->priority)
SIM_STREAM_GETTER(cuStreamGetCtx, CUcontext, s->ctx)
SIM_STREAM_GETTER_AS(, sim_impl_cuStreamGetDevice, cuStreamGetDevice, CUdevice, s->ctx->device)

/* ---- events ---- */

SIM_EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags)
{
    CUresult r = sim_check_init();
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS || (r = sim_check_fds()) != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c = sim_current_ctx();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = SIM_MAGIC_EVENT;
    e->ctx = c;
    e->gen = c->gen;
    e->flags = flags;
    *ph = e;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    if (!e || e->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    sim_op_unref(e->op);
    e->magic = SIM_MAGIC_DEAD;
    pthread_mutex_unlock(&sim_lock);
    free(e->capture_deps.idx);
    free(e);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy(CUevent e)
{
    return cuEventDestroy_v2(e);
}

/* A record is a zero-length operation on the stream: the event's time is when
 * the stream reaches it. */
static CUresult sim_event_record(CUevent e, CUstream h, int ptds)
{
    struct CUstream_st *s;
    if (!e || e->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_check_alive(e->ctx, e->gen, "cuEventRecord: event");
    if (r == CUDA_SUCCESS)
        r = sim_stream_get(h, ptds, &s);
    /* "hEvent and hStream must be from the same context otherwise
     * CUDA_ERROR_INVALID_HANDLE is returned" (cuda.h) */
    if (r == CUDA_SUCCESS && s->ctx != e->ctx)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS && s->capture) {
        r = sim_capture_event_record(e, s);
    } else if (r == CUDA_SUCCESS) {
        struct sim_op *mark = sim_model_enqueue(s, SIM_MARK, NULL);
        if (mark) {
            e->capture_id = 0;
            sim_op_unref(e->op);
            e->op = mark;
            sim_op_ref(mark);
            sim_model_submit(mark);
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    static _Atomic unsigned records;
    if (r == CUDA_SUCCESS && sim_cfg.record_hold_every &&
        atomic_fetch_add(&records, 1) % sim_cfg.record_hold_every == sim_cfg.record_hold_every - 1) {
        struct timespec d = { (time_t)(sim_cfg.record_hold_ns / 1000000000u),
                              (long)(sim_cfg.record_hold_ns % 1000000000u) };
        while (nanosleep(&d, &d) != 0 && errno == EINTR)
            ;
    }
    return r;
}

SIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream h)
{
    return sim_event_record(e, h, 0);
}

SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h)
{
    return sim_event_record(e, h, 1);
}

SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int flags)
{
    (void)flags;
    return sim_event_record(e, h, 0);
}

SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int flags)
{
    (void)flags;
    return sim_event_record(e, h, 1);
}

SIM_EXPORT CUresult cuEventQuery(CUevent e)
{
    if (!e || e->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if (sim_check_fds() != CUDA_SUCCESS)
        return CUDA_ERROR_OPERATING_SYSTEM;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_check_alive(e->ctx, e->gen, "cuEventQuery");
    if (r == CUDA_SUCCESS)
        r = e->capture_id ? CUDA_ERROR_CAPTURED_EVENT : sim_capture_forbid(NULL);
    if (r == CUDA_SUCCESS && e->op)
        r = sim_model_query(e->op);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    struct sim_op *op = NULL;
    if (!e || e->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = e->capture_id ? CUDA_ERROR_CAPTURED_EVENT : sim_capture_forbid(NULL);
    if (r == CUDA_SUCCESS && (op = e->op) != NULL)
        sim_op_ref(op);
    pthread_mutex_unlock(&sim_lock);
    return op ? sim_model_wait(op) : r;
}

CUresult sim_impl_cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!start || !end || start->magic != SIM_MAGIC_EVENT || end->magic != SIM_MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    if (sim_check_fds() != CUDA_SUCCESS)
        return CUDA_ERROR_OPERATING_SYSTEM;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_check_alive(start->ctx, start->gen, "cuEventElapsedTime");
    if (r == CUDA_SUCCESS)
        r = sim_check_alive(end->ctx, end->gen, "cuEventElapsedTime");
    if (r == CUDA_SUCCESS && (start->ctx != end->ctx || !start->op || !end->op))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS)
        r = sim_model_query(start->op);
    if (r == CUDA_SUCCESS)
        r = sim_model_query(end->op);
    if (r == CUDA_SUCCESS)
        *ms = (float)((double)((int64_t)(end->op->end_ns - start->op->end_ns)) / 1e6);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    return sim_impl_cuEventElapsedTime_v2(ms, start, end);
}

/* ---- launches, copies and sets: queued, or captured (simgpu_graph.c) ---- */

/* Queues one operation for a node (under sim_lock); the caller moves the bytes. */
static CUresult sim_node_enqueue(struct CUstream_st *s, const struct sim_node *n, struct sim_op **keep)
{
    struct sim_op *op = sim_model_enqueue(s, n->kind, NULL);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->name = n->name;
    op->direction = n->direction;
    op->dur_ns = n->dur_ns;
    op->bytes = n->bytes;
    op->geom = n->geom;
    if (keep) {
        sim_op_ref(op);
        *keep = op;
    }
    sim_model_submit(op);
    return CUDA_SUCCESS;
}

/* Launches (kernel, copy or memset) share this path: capture it, or queue it and,
 * for the synchronous calls, wait for its end. */
static CUresult sim_submit_node(CUstream h, int ptds, const struct sim_node *n, int sync)
{
    struct CUstream_st *s;
    struct sim_op *op = NULL;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    if (r == CUDA_SUCCESS && s->capture) {
        r = sync ? sim_capture_forbid(s) : sim_capture_add(s, n);
        pthread_mutex_unlock(&sim_lock);
        return r;
    }
    if (r == CUDA_SUCCESS && sync)
        r = sim_capture_forbid(NULL);
    if (r == CUDA_SUCCESS)
        r = sim_node_enqueue(s, n, sync ? &op : NULL);
    pthread_mutex_unlock(&sim_lock);
    if (r == CUDA_SUCCESS && n->kind != SIM_KERNEL)
        sim_node_apply(n);
    return op ? sim_model_wait(op) : r;
}

/* ---- kernel launches ---- */

/* The duration convention of simgpu.h: the first kernel parameter, a uint64_t of
 * nanoseconds. */
static uint64_t sim_kernel_ns(void **params, void **extra)
{
    if (params && params[0])
        return *(const uint64_t *)params[0];
    for (size_t i = 0; extra && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER && extra[i + 1]) {
            uint64_t ns;
            memcpy(&ns, extra[i + 1], sizeof(ns));
            return ns;
        }
    }
    return sim_cfg.kernel_ns;
}

static CUresult sim_launch(CUfunction f, const unsigned dims[6], unsigned smem, CUstream h, int ptds,
                           void **params, void **extra)
{
    struct CUstream_st *s;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!f || f->magic != SIM_MAGIC_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < 6; i++)
        if (dims[i] == 0)
            return CUDA_ERROR_INVALID_VALUE;
    if (!f->ext) {
        struct sim_node n = { .kind = SIM_KERNEL, .name = f->name, .dur_ns = sim_kernel_ns(params, extra) };
        sim_geometry(dims, smem, &n.geom);
        return sim_submit_node(h, ptds, &n, 0);
    }
    if (!params || !params[0])
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    r = sim_stream_get(h, ptds, &s);
    if (r == CUDA_SUCCESS && s->capture) {
        struct sim_node n = { .kind = SIM_EXT, .name = f->name, .ext = f->ext, .ext_arg = *(void **)params[0] };
        sim_geometry(dims, smem, &n.geom);
        r = sim_capture_add(s, &n);
    } else if (r == CUDA_SUCCESS) {
        struct sim_op *op = sim_model_enqueue(s, SIM_EXT, NULL);
        if (op) {
            op->name = f->name;
            op->ext = f->ext;
            op->ext_arg = *(void **)params[0];
            sim_geometry(dims, smem, &op->geom);
            sim_model_submit(op);
        } else {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                   CUstream h, void **params, void **extra)
{
    const unsigned dims[6] = { gx, gy, gz, bx, by, bz };
    return sim_launch(f, dims, shmem, h, 0, params, extra);
}

SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                        unsigned int bx, unsigned int by, unsigned int bz,
                                        unsigned int shmem, CUstream h, void **params, void **extra)
{
    const unsigned dims[6] = { gx, gy, gz, bx, by, bz };
    return sim_launch(f, dims, shmem, h, 1, params, extra);
}

static CUresult sim_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, int ptds)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned dims[6] = { c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ };
    return sim_launch(f, dims, c->sharedMemBytes, c->hStream, ptds, params, extra);
}

SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    return sim_launch_ex(config, f, params, extra, 0);
}

SIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                          void **extra)
{
    return sim_launch_ex(config, f, params, extra, 1);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                              unsigned int bx, unsigned int by, unsigned int bz,
                                              unsigned int shmem, CUstream h, void **params)
{
    const unsigned dims[6] = { gx, gy, gz, bx, by, bz };
    return sim_launch(f, dims, shmem, h, 0, params, NULL);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                                   unsigned int gz, unsigned int bx, unsigned int by,
                                                   unsigned int bz, unsigned int shmem, CUstream h,
                                                   void **params)
{
    const unsigned dims[6] = { gx, gy, gz, bx, by, bz };
    return sim_launch(f, dims, shmem, h, 1, params, NULL);
}

/* ---- copies and memsets ---- */

static uint64_t sim_bytes_ns(uint64_t bytes, double gbs)
{
    return (uint64_t)((double)bytes / gbs + 0.5);   /* 1 GB/s is one byte per ns */
}

static CUresult sim_copy(void *dst, const void *src, size_t bytes, CUstream h, int ptds, int sync)
{
    static const char *const names[2][2] = { { "memcpyHtoH", "memcpyHtoD" }, { "memcpyDtoH", "memcpyDtoD" } };
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if ((!dst || !src) && bytes)
        return CUDA_ERROR_INVALID_VALUE;
    int from = sim_is_device_ptr((uintptr_t)src), to = sim_is_device_ptr((uintptr_t)dst);
    struct sim_node n = {
        .kind = SIM_MEMCPY, .name = names[from][to], .direction = names[from][to] + 6,
        .dur_ns = sim_bytes_ns(bytes, from && to ? sim_cfg.dtod_gbs : sim_cfg.copy_gbs),
        .bytes = bytes, .dst = dst, .src = src,
    };
    return sim_submit_node(h, ptds, &n, sync);
}

#define SIM_PTR(d) ((void *)(uintptr_t)(d))

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), src, bytes, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), src, bytes, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(dst, SIM_PTR(src), bytes, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(dst, SIM_PTR(src), bytes, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), src, bytes, h, 0, 0);
}

SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), src, bytes, h, 1, 0);
}

SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(dst, SIM_PTR(src), bytes, h, 0, 0);
}

SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(dst, SIM_PTR(src), bytes, h, 1, 0);
}

SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, h, 0, 0);
}

SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, h, 1, 0);
}

SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, h, 0, 0);
}

SIM_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream h)
{
    return sim_copy(SIM_PTR(dst), SIM_PTR(src), bytes, h, 1, 0);
}

static CUresult sim_memset(CUdeviceptr dst, unsigned value, unsigned size, size_t count, CUstream h, int ptds,
                           int sync)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!dst && count)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_node n = {
        .kind = SIM_MEMSET, .name = "memset", .bytes = (uint64_t)count * size,
        .dur_ns = sim_bytes_ns((uint64_t)count * size, sim_cfg.dtod_gbs),
        .dst = SIM_PTR(dst), .fill = (int)value, .fill_size = size,
    };
    return sim_submit_node(h, ptds, &n, sync);
}

SIM_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    return sim_memset(dst, v, 1, n, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char v, size_t n)
{
    return sim_memset(dst, v, 1, n, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short v, size_t n)
{
    return sim_memset(dst, v, 2, n, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr dst, unsigned short v, size_t n)
{
    return sim_memset(dst, v, 2, n, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int v, size_t n)
{
    return sim_memset(dst, v, 4, n, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int v, size_t n)
{
    return sim_memset(dst, v, 4, n, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 1, n, h, 0, 0);
}

SIM_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 1, n, h, 1, 0);
}

SIM_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 2, n, h, 0, 0);
}

SIM_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr dst, unsigned short v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 2, n, h, 1, 0);
}

SIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 4, n, h, 0, 0);
}

SIM_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int v, size_t n, CUstream h)
{
    return sim_memset(dst, v, 4, n, h, 1, 0);
}

/* 2D sets: one operation, for rows laid out back to back (pitch == row bytes, or
 * one row); other layouts are not simulated. */
static CUresult sim_memset2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned size, size_t w, size_t h,
                             CUstream s, int ptds, int sync)
{
    if (h > 1 && pitch != w * size)
        return CUDA_ERROR_NOT_SUPPORTED;
    return sim_memset(dst, value, size, w * h, s, ptds, sync);
}

#define SIM_SET2(name, type, size, ptds)                                                          \
    SIM_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h)           \
    {                                                                                             \
        return sim_memset2d(dst, pitch, v, size, w, h, NULL, ptds, 1);                            \
    }
#define SIM_SET2_ASYNC(name, type, size, ptds)                                                    \
    SIM_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s) \
    {                                                                                             \
        return sim_memset2d(dst, pitch, v, size, w, h, s, ptds, 0);                               \
    }
SIM_SET2(cuMemsetD2D8_v2, unsigned char, 1, 0)
SIM_SET2(cuMemsetD2D8_v2_ptds, unsigned char, 1, 1)
SIM_SET2(cuMemsetD2D16_v2, unsigned short, 2, 0)
SIM_SET2(cuMemsetD2D16_v2_ptds, unsigned short, 2, 1)
SIM_SET2(cuMemsetD2D32_v2, unsigned int, 4, 0)
SIM_SET2(cuMemsetD2D32_v2_ptds, unsigned int, 4, 1)
SIM_SET2_ASYNC(cuMemsetD2D8Async, unsigned char, 1, 0)
SIM_SET2_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, 1)
SIM_SET2_ASYNC(cuMemsetD2D16Async, unsigned short, 2, 0)
SIM_SET2_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
SIM_SET2_ASYNC(cuMemsetD2D32Async, unsigned int, 4, 0)
SIM_SET2_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)

/* 3D copies between contexts: one copy, for boxes from the origin of both sides
 * laid out back to back (pitch == WidthInBytes, height == Height); no arrays. */
static CUresult sim_copy3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream s, int ptds, int sync)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    size_t rows = p->Height * p->Depth;
    if (p->srcXInBytes || p->srcY || p->srcZ || p->dstXInBytes || p->dstY || p->dstZ ||
        p->srcMemoryType == CU_MEMORYTYPE_ARRAY || p->dstMemoryType == CU_MEMORYTYPE_ARRAY ||
        (rows > 1 && (p->srcPitch != p->WidthInBytes || p->dstPitch != p->WidthInBytes)) ||
        (p->Depth > 1 && (p->srcHeight != p->Height || p->dstHeight != p->Height)))
        return CUDA_ERROR_NOT_SUPPORTED;
    const void *src = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : SIM_PTR(p->srcDevice);
    void *dst = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : SIM_PTR(p->dstDevice);
    return sim_copy(dst, src, p->WidthInBytes * rows, s, ptds, sync);
}

SIM_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    return sim_copy3d_peer(p, NULL, 0, 1);
}

SIM_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p)
{
    return sim_copy3d_peer(p, NULL, 1, 1);
}

SIM_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return sim_copy3d_peer(p, s, 0, 0);
}

SIM_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    return sim_copy3d_peer(p, s, 1, 0);
}
