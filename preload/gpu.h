/* Private interface of the agent's CUDA and NCCL parts (hook_cuda.c,
 * hook_nccl.c, gputime.c): the real driver functions they call, stream ids,
 * and the pool of GPU timing event pairs. Uses cuda.h's types, so it is kept
 * out of agent.h, which every agent file includes. */
#ifndef RS_GPU_H
#define RS_GPU_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "preload/agent.h"

/* The real driver functions the agent itself calls (never its wrappers);
 * NULL until rs_cuda_ready() found them. */
struct rs_cuda_real {
    __typeof__(cuEventCreate) *event_create;
    __typeof__(cuEventRecord) *event_record;
    __typeof__(cuEventRecord_ptsz) *event_record_ptsz;
    __typeof__(cuEventQuery) *event_query;
    __typeof__(cuEventElapsedTime) *elapsed;
    __typeof__(cuStreamCreate) *stream_create;
    __typeof__(cuStreamGetId) *stream_get_id;
    __typeof__(cuStreamGetId_ptsz) *stream_get_id_ptsz;
    __typeof__(cuStreamIsCapturing) *is_capturing;
    __typeof__(cuStreamIsCapturing_ptsz) *is_capturing_ptsz;
    __typeof__(cuCtxGetCurrent) *ctx_get_current;
    __typeof__(cuCtxSetCurrent) *ctx_set_current;
    __typeof__(cuCtxGetDevice) *ctx_get_device;
    __typeof__(cuMemGetInfo_v2) *mem_get_info;
    __typeof__(cuCtxPushCurrent_v2) *ctx_push;
    __typeof__(cuCtxPopCurrent_v2) *ctx_pop;
    __typeof__(cuCtxSynchronize) *ctx_sync;
    __typeof__(cuStreamGetCtx) *stream_get_ctx;
    __typeof__(cuFuncGetName) *func_get_name;
    __typeof__(cuKernelGetName) *kernel_get_name;
    __typeof__(cuDriverGetVersion) *driver_version;
    __typeof__(cuThreadExchangeStreamCaptureMode) *exchange_capture_mode;
    __typeof__(cuPointerGetAttribute) *pointer_attr;
    __typeof__(cuArray3DGetDescriptor_v2) *array3d_desc;
    __typeof__(cuFuncGetAttribute) *func_get_attribute;
    __typeof__(cuKernelGetAttribute) *kernel_get_attribute;
    __typeof__(cuDeviceGetAttribute) *device_get_attribute;
    __typeof__(cuDeviceGetName) *device_get_name;
    __typeof__(cuDeviceGetUuid) *device_get_uuid;
    __typeof__(cuDeviceGetPCIBusId) *device_get_pci_bus_id;
    __typeof__(cuStreamGetCaptureInfo_v3) *capture_info_v3;
    __typeof__(cuStreamGetCaptureInfo_v3_ptsz) *capture_info_v3_ptsz;
    __typeof__(cuStreamGetCaptureInfo_v2) *capture_info_v2;
    __typeof__(cuStreamGetCaptureInfo_v2_ptsz) *capture_info_v2_ptsz;
};
extern struct rs_cuda_real rs_cu;

/* The next definition of a driver function: dlsym(RTLD_NEXT), else the
 * already loaded libcuda.so.1. NULL when there is none. */
void *rs_cuda_sym(const char *name);
/* The next definition of name after the agent (dlsym(RTLD_NEXT)), and the
 * C library's dlsym itself (the agent interposes dlsym). */
void *rs_cuda_sym_next(const char *name);
void *rs_dlsym_real(void *handle, const char *name);
/* 1 once the driver's functions the agent needs are resolved and the program
 * has called cuInit; 0 while not (yet), -1 when CUDA capture is off. */
int rs_cuda_ready(void);
/* The driver's memory figure of the calling thread's device (cuMemGetInfo:
 * the series gpu_mem_used and gpu_mem_total), when force or 100 ms have
 * passed since the last; nothing before the driver is ready, without a
 * current context, or while a stream is being captured (hook_cuda.c). The
 * caller holds rs_th.guard. */
void rs_mem_info_tick(int force);

/* Streams being captured into graphs anywhere in the process right now. */
extern _Atomic int rs_captures;

/* The id of stream s as cuStreamGetId gives it (per-thread default stream
 * when ptsz and s is 0), or the handle's value when the driver has none.
 * Cached per handle (cuStreamDestroy forgets it). */
uint64_t rs_stream_id(CUstream s, int ptsz);

/* Whether p, what dlsym found for the NCCL function name, may be given out:
 * not when it is the agent's wrapper and no real NCCL is loaded behind it. */
int rs_nccl_present(const char *name, void *p);
/* What dlsym gives for the NCCL function name when p is the definition found
 * without the agent: the agent's wrapper when p is the real function it wraps,
 * else p. */
void *rs_nccl_wrapper(const char *name, void *p);

/* ---- launched functions and devices (gpuinfo.c) ---- */

/* Describes function f (named name, text that lives as long as the process)
 * in a FUNC record, and its device in a DEVICE record the first time; the
 * caller holds rs_th.guard. Returns the function's id (Launch.func), 0 when
 * the record could not be made. */
uint32_t rs_func_describe(CUfunction f, const char *name);
/* Describes device dev in a DEVICE record the first time it is seen. */
void rs_gpu_device_seen(int dev);
/* The first device a launch described (-1: none yet). */
int rs_gpu_first_device(void);
/* In a forked child: devices are described again in its own file. */
void rs_gpuinfo_forked(void);
/* In a forked child: the launched functions are described again (hook_cuda.c). */
void rs_func_cache_forked(void);

/* ---- kernel names from the calls that make the handles (funcnames.c) ---- */

/* Notes handle (a CUfunction or CUkernel) as function name of owner (the
 * CUmodule or CUlibrary that made it); name is copied. A handle noted before
 * under another name (the driver reused it) is also forgotten by the launch
 * cache. Nothing is noted when the table or its text arena is full. */
void rs_fname_note(const void *handle, const char *name, const void *owner);
/* handle's noted name (text that lives as long as the process) and, when
 * owner is not NULL, its owner in *owner; NULL when not noted. */
const char *rs_fname_of(const void *handle, const void **owner);
/* owner (a module or library) is unloaded: forgets its handles' names here
 * and in the launch cache. */
void rs_fname_forget(const void *owner);
/* The launch cache (hook_cuda.c) forgets function f: its next launch asks
 * its name again and describes it in a new FUNC record. */
void rs_func_forget(const void *f);
/* ---- CUDA graphs (graphs.c) ---- */

/* A launch into a capture, as seen before the call: the capture, the agent's
 * graph id (0: not capturing, or not followed) and the nodes it depends on. */
#define RS_GRAPH_DEPS 32
struct rs_graph_capture {
    CUstream s;
    int ptsz;
    uint64_t capture_id;
    uint32_t gid, ndeps;
    uint32_t deps[RS_GRAPH_DEPS];
};
/* Before a call that puts work on capturing stream s. */
void rs_graph_before(struct rs_graph_capture *gc, CUstream s, int ptsz);
/* After it succeeded: its node (and edges) recorded, with the call's stack;
 * gpu_kind is enum rsf_gpu_kind, geom the kernel's geometry or NULL. */
void rs_graph_node(const struct rs_graph_capture *gc, int gpu_kind, const char *name,
                   const struct rsf_launch *geom, uint64_t bytes, int dir);
/* An NCCL call on capturing stream s (op: enum rsf_coll_op): the kernel it
 * launches is recorded as its collective node; coll_end records one without a
 * kernel where none was seen (ok: the call succeeded). */
void rs_graph_coll_begin(struct rs_graph_capture *gc, CUstream s, int op, uint64_t bytes, uint64_t comm);
void rs_graph_coll_end(const struct rs_graph_capture *gc, int ok);
/* The driver's id of s's capture (0: none), before cuStreamEndCapture; then
 * the capture is over, graph (NULL when it failed) holds its nodes. */
uint64_t rs_graph_capture_of(CUstream s, int ptsz);
void rs_graph_capture_ended(uint64_t capture_id, const void *graph);
/* made (a clone, an executable graph, one updated) runs from's nodes; a
 * destroyed graph or executable graph is forgotten. */
void rs_graph_made(const void *made, const void *from);
void rs_graph_gone(const void *h);
/* The graph id an executable graph runs (0: not known). Lock-free. */
uint32_t rs_graph_exec_gid(const void *exec);

/* ---- GPU timing (gputime.c) ---- */

/* Starts timing work about to be enqueued on stream s: takes a pair from the
 * pool and records its start event there. Returns the pair (0: not timed:
 * timing off or sampled out, pool empty, stream being captured, or an error)
 * and sets *anchor and *flags (RSF_GPUF_CAPTURED when s is being captured). */
uint32_t rs_gpu_begin(CUstream s, int ptsz, uint32_t *anchor, uint8_t *flags);
/* Records the end event of pair on s after the work was enqueued (ok) or
 * gives the pair back (!ok, or the record failed). Returns pair or 0. */
uint32_t rs_gpu_end(uint32_t pair, CUstream s, int ptsz, int ok);
/* The device of the first timing pool's context (-1 when none yet). */
extern int rs_gpu_device;
/* The device of the calling thread's current context (described the first
 * time), else rs_gpu_device: what a GPU record of this thread says. */
int rs_gpu_here(void);
/* The device of the context whose events time pair (not 0). */
int rs_gpu_pair_device(uint32_t pair);
/* Context ctx is about to be destroyed (cuCtxDestroy, a primary context's
 * reset or last release): its pool takes no more pairs, its pending ones
 * are read once its work is done, and its slot is freed; the driver frees
 * its events with the context. Program threads only, never the writer. */
void rs_gpu_ctx_gone(CUcontext ctx);

#endif
