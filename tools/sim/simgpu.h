/* The simulated GPU: conventions for programs that run on build/sim/libcuda.so.1,
 * and the small private interface (sim_ prefix, not in cuda.h) through which the
 * simulated NCCL, build/sim/libnccl.so.2, puts its collectives on the same streams.
 * GPU time is a model on the host's CLOCK_MONOTONIC; nothing runs on a device.
 *
 * THE MODEL
 *   Each stream is a queue. An operation starts at max(the time it was launched,
 *   the end of the previous operation on its stream, the events it waits on) and
 *   lasts its duration:
 *     kernel            the launching program chooses it: the FIRST KERNEL PARAMETER
 *                       is a uint64_t duration in nanoseconds, i.e. kernelParams[0]
 *                       points to a uint64_t (with `extra` and
 *                       CU_LAUNCH_PARAM_BUFFER_POINTER: the buffer's first 8 bytes).
 *                       A launch with neither lasts SIMGPU_KERNEL_NS.
 *     memcpy HtoD/DtoH  bytes / SIMGPU_COPY_GBS (GB/s, 1 GB = 1e9 bytes)
 *     memcpy DtoD, memset   bytes / SIMGPU_DTOD_GBS
 *     collective        decided by libnccl: alpha + bytes x factor / bandwidth, once
 *                       every rank's stream has reached it (see simnccl.c)
 *   Copies and memsets really move the bytes (device memory is host memory), at
 *   the call. An event record is a zero-length operation: the event's time is
 *   max(time of the record call, end of the stream's previous operation).
 *   Queries answer from the model against the clock; synchronisations really sleep
 *   until the modelled end. cuEventElapsedTime gives the model's milliseconds.
 *
 * CONTEXTS
 *   As the real driver keeps them: the current context is per thread (cuCtxSetCurrent,
 *   Push/Pop); streams and events belong to the context current when made; an event
 *   recorded on a stream of another context fails with CUDA_ERROR_INVALID_HANDLE, as
 *   does cuEventElapsedTime of two contexts' events. cuCtxDestroy, cuDevicePrimaryCtxReset
 *   and a primary context's last release end what the context made: a later use of its
 *   streams or events fails with CUDA_ERROR_CONTEXT_IS_DESTROYED and says so on stderr
 *   ("... a handle of a destroyed context"), where the real driver's behaviour is undefined.
 *
 * SIMPLIFICATIONS
 *   The legacy default stream (0 or CU_STREAM_LEGACY) is one queue per context that
 *   does not synchronise implicitly with other streams. The per-thread default
 *   stream (CU_STREAM_PER_THREAD, or 0 in the _ptsz/_ptds entry points) is one queue
 *   per thread. Kernels do not overlap on a stream and streams never contend: every
 *   stream runs as if it had the GPU alone. Stream capture records the kernels,
 *   copies, memsets and collectives as the driver does (simgpu_graph.c: capture
 *   modes, streams joined through events, invalidation); a graph launch runs each
 *   node with its duration once the nodes it depends on are done.
 *   cuPointerGetAttribute answers CU_POINTER_ATTRIBUTE_MEMORY_TYPE only, and only for
 *   the simulator's own allocations (CUDA_ERROR_INVALID_VALUE for other pointers).
 *   cuMemsetD2D* and cuMemcpy3DPeer* are one operation each, for rows laid out back to
 *   back only (pitch == row bytes; 3D: from the origin, no arrays), else
 *   CUDA_ERROR_NOT_SUPPORTED. cuCtxSynchronize_v2 is exported, but cuGetProcAddress
 *   gives the 2.0 cuCtxSynchronize for every version.
 *
 * ENVIRONMENT
 *   SIMGPU_DEVICES     number of devices (default 8)
 *   SIMGPU_MEM_MB      each device's memory in MiB (default 81920, an 80 GB device's);
 *                      SIMGPU_MEM_GB (GB of 1e9 bytes), the older name, when it is unset
 *   SIMGPU_TRUTH_MEMORY=1  the truth file gets the device_memory lines below (simtrain
 *                      sets it when given a memory option)
 *   SIMGPU_KERNEL_NS   duration of a kernel launched without parameters (default 10000)
 *   SIMGPU_COPY_GBS    host<->device copy bandwidth (default 25)
 *   SIMGPU_DTOD_GBS    device-to-device copy and memset bandwidth (default 1000)
 *   SIMGPU_TRUTH       file for the truth lines below; "%p" in it becomes the pid
 *   SIMGPU_SMS         SMs per device (default 132)
 *   SIMGPU_REGS        registers per thread of every function (default 32)
 *   SIMGPU_STATIC_SMEM static shared memory of every function, bytes (default 0)
 *   SIMGPU_DRIVER_VERSION  the driver version played (default 13000): cuDriverGetVersion
 *                      says it; entry points newer than it are absent to cuGetProcAddress
 *                      and dlsym (12020: an R535 driver, without cuFuncGetName and
 *                      cuKernelGetName)
 *
 * SMS
 *   Each device has the limits of an H100 (132 SMs of 2048 threads, 32 blocks,
 *   65536 registers and 228 KiB of shared memory, 1 KiB of it reserved per
 *   block), which cuDeviceGetAttribute and cuFuncGetAttribute report. The model
 *   (simgpu_occupancy.c) places a kernel's blocks on the SMs: blocks per SM from
 *   those limits, waves, SM coverage (the share of SMs holding a block, a wave's
 *   blocks dealt one per SM first) and occupancy. Kernels and collectives (a
 *   block of 512 threads per channel, SIMNCCL_CHANNELS, default 16) do not slow
 *   each other down whatever SMs they hold. simgpu_activity(), exported, gives
 *   per device and time window the busy time and the SM-coverage and occupancy
 *   integrals, for the stand-in NVML (simnvml.c). The devices' UUIDs are the
 *   bytes 0x5a, 0x5b... with the ordinal last, their PCI bus ids 0000:1X:00.0.
 *
 * DEVICE MEMORY
 *   Each device holds SIMGPU_MEM_MB, per process (another process's use is not seen).
 *   Taken from it: every cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged, cuMemAllocAsync
 *   and cuMemAllocFromPoolAsync block; every cuMemCreate'd physical allocation, until
 *   it is released and unmapped; SIMGPU_CTX_MB for each context alive (a primary
 *   context from its first retain to its last release, a created one until
 *   destroyed), as a real context's own state holds a few hundred MiB (512 is about
 *   one's; default 0, so that what no hook sees is NCCL's alone); and what
 *   simgpu_internal_alloc gives the stand-in NCCL. Pinned host memory is not device
 *   memory. cuMemGetInfo says the capacity and what of it is free on the current
 *   context's device; a request that does not fit fails with CUDA_ERROR_OUT_OF_MEMORY
 *   and leaves the out-pointer as it was, as the driver does (a context's retain or
 *   creation too).
 *
 * TRUTH FILE
 *   One JSON object per line and per operation, written when the model has decided
 *   its times, appended with O_APPEND in whole lines (several processes may share a
 *   file) and complete when the process exits. Fields:
 *     pid, device, stream (the id cuStreamGetId gives), kind ("kernel", "memcpy",
 *     "memset", "collective", "p2p"), name (kernel name; "memcpyHtoD"...; the NCCL
 *     kernel's name), bytes, launch_ns, start_ns, end_ns (CLOCK_MONOTONIC);
 *     rank: $RANK for kernels, copies and sets (null when unset), the rank in the
 *           communicator for collectives and p2p;
 *     for kernels and collectives' launches, their geometry in the model (SMS
 *     above): blocks, threads_per_block, blocks_per_sm, waves, sm_coverage and
 *     occupancy (0..1, the share of the GPU's warp slots held);
 *     direction ("HtoD", "DtoH", "DtoD", "HtoH") for copies; graph: for operations
 *     replayed from a graph, that graph's id (1, 2...: the graph captured or made,
 *     or the one an executable graph was last updated from; a clone has its own);
 *     for collectives and p2p: op ("AllReduce", "Send", ...), comm (hex id), nranks,
 *     seq (per communicator, from 0), count, datatype, root or peer where it has one;
 *     failed: true when the collective gave up (a rank died or timed out);
 *     ready_ns for collectives and p2p: when the stream reached it (its wait for
 *     the other ranks runs from there to start_ns).
 *   With SIMGPU_TRUTH_MEMORY=1, at exit one line per device the process used:
 *     pid, rank, device, "kind":"device_memory", capacity_bytes, context_bytes (the
 *     reserve of one context), contexts (the most alive at once; 0 without a reserve), nccl_bytes (the
 *     most simgpu_internal_alloc held at once), peak_bytes and peak_ns (the most of the
 *     device held at once, everything counted, and when it was first reached),
 *     end_bytes (what was still held at exit).
 */
#ifndef SIMGPU_H
#define SIMGPU_H

#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

/* What an external operation's arrive() answers. */
enum sim_arrival {
    SIM_WAITING,   /* not decided yet: ask again on the next progress pass */
    SIM_ARRIVED,   /* *start_ns and *end_ns are filled */
    SIM_FAILED     /* it will never happen: it ends at ready_ns and is marked failed */
};

/* An external operation: a launch whose times another library decides (NCCL's
 * collectives, which depend on other processes). All three callbacks run with the
 * model's lock held: they must not call into libcuda. */
struct sim_ext_ops {
    const char *kind;  /* truth "kind": "collective" or "p2p" */
    /* Called once the stream has reached the operation (ready_ns: when), then on
     * every progress pass while it answers SIM_WAITING. */
    enum sim_arrival (*arrive)(void *arg, uint64_t ready_ns, uint64_t *start_ns,
                               uint64_t *end_ns);
    /* Writes the fields of truth line `line` (0, 1, ...) that are the operation's own,
     * as `,"key":value` pairs, into buf (len bytes, NUL-terminated); returns 0, or -1
     * when there is no such line. One launch may stand for several calls (a group of
     * sends and receives): one line each. */
    int (*describe)(void *arg, int line, char *buf, size_t len);
    /* The operation is over (decided and written): free arg. */
    void (*release)(void *arg);
    /* A launch captured into a graph: the graph keeps arg as a template (released
     * with release when the graph goes). copy(arg, 0) gives another template (a
     * cloned or instantiated graph); copy(arg, 1) the operation one replay of the
     * graph runs, which takes its place among the library's operations (a
     * collective's next sequence number) at that cuGraphLaunch. NULL when out of
     * memory. An operation without copy cannot be captured
     * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED). */
    void *(*copy)(const void *arg, int launch);
};

/* Makes the launches of func (a function of a module or library) external
 * operations: launch it with cuLaunchKernel (or _ptsz) and kernelParams[0]
 * pointing to a `void *` holding the argument the callbacks receive. The launch
 * takes ownership of that argument when it returns CUDA_SUCCESS, not otherwise.
 * Errors: CUDA_ERROR_INVALID_VALUE (a NULL ops), CUDA_ERROR_INVALID_HANDLE (not a
 * function). */
CUresult sim_func_set_ext(CUfunction func, const struct sim_ext_ops *ops);

/* Device memory a library holds for itself (the stand-in NCCL's buffers), made
 * through no cu* entry point, so that a tool interposing the driver API sees none of
 * it (the share of cuMemGetInfo's figure no hook saw): bytes of device's memory are
 * taken, or given back. The driver is initialised if it was not, as a runtime's
 * first call does. Only the count changes: no memory is mapped. Errors:
 * CUDA_ERROR_OUT_OF_MEMORY (they do not fit in what is free; nothing is taken),
 * CUDA_ERROR_INVALID_DEVICE. */
CUresult simgpu_internal_alloc(int device, uint64_t bytes);
void simgpu_internal_free(int device, uint64_t bytes);

#endif
