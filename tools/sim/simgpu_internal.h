/* Internal state of the simulated CUDA driver, shared by its files: the handle
 * structures behind cuda.h's opaque types, the operation graph of the time model
 * (simgpu_model.c), the truth writer (simgpu_truth.c) and the settings read at
 * cuInit. Not installed; libnccl uses only simgpu.h. */
#ifndef SIMGPU_INTERNAL_H
#define SIMGPU_INTERNAL_H

/* cuda.h then declares every versioned, legacy and _ptsz/_ptds name, so each
 * definition here is checked against the real prototype. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <pthread.h>
#include <stdint.h>
#include "tools/sim/simgpu.h"

#define SIM_EXPORT __attribute__((visibility("default")))

/* Every handle starts with a magic word, so a stale or foreign handle is an
 * error code rather than a crash in the common cases. */
enum sim_magic {
    SIM_MAGIC_CTX = 0x5c7c7001, SIM_MAGIC_STREAM, SIM_MAGIC_EVENT, SIM_MAGIC_MODULE,
    SIM_MAGIC_FUNC, SIM_MAGIC_GRAPH, SIM_MAGIC_EXEC, SIM_MAGIC_LIBRARY, SIM_MAGIC_DEAD,
    SIM_MAGIC_NODE
};

enum sim_kind { SIM_MARK, SIM_KERNEL, SIM_MEMCPY, SIM_MEMSET, SIM_EXT };

/* How a kernel's blocks sit on the SMs (simgpu_occupancy.c's model). */
struct sim_geom {
    uint64_t blocks, waves;
    unsigned threads_per_block, blocks_per_sm;
    double sm_coverage, occupancy;     /* 0..1 */
};

/* One operation of the model. Its dependencies are the previous operation on its
 * stream and, for a stream wait, the awaited event's operation. It is resolved
 * once its start and end are known; until then it sits on the unresolved list.
 * References: the stream's tail, events, dependent operations, the unresolved list. */
struct sim_op {
    struct sim_op *next, *prev;   /* unresolved list, in creation order */
    struct sim_op *deps[2];
    int refs;
    int resolved, failed;
    uint64_t graph;               /* replayed from the graph of this id (simgpu_graph.c); 0: not */
    enum sim_kind kind;
    uint64_t launch_ns, dur_ns, start_ns, end_ns;
    uint64_t ready_ns;            /* external: when its stream reached it */
    uint64_t stream_id, bytes;
    int device;
    const char *name;             /* lives as long as the process */
    const char *direction;
    const struct sim_ext_ops *ext;
    void *ext_arg;
    struct sim_geom geom;         /* kernels */
};

/* A set of graph nodes, by index in their graph (simgpu_graph.c). */
struct sim_deps {
    size_t *idx;
    size_t n, cap;
};
struct sim_capture;

/* A context's streams and events carry its generation: a primary context
 * reset (or released by its last user) starts a new one, and what the old
 * one made is gone with it, as a destroyed context's is. */

struct CUctx_st {
    enum sim_magic magic;
    int device;
    unsigned flags;
    unsigned gen;
    struct CUstream_st *legacy;   /* the legacy default stream */
};

struct CUstream_st {
    enum sim_magic magic;
    struct CUctx_st *ctx;
    unsigned gen;                 /* the context's when made */
    uint64_t id;
    unsigned flags;
    int priority;
    struct sim_op *tail;          /* last operation, NULL when none yet */
    struct sim_capture *capture;  /* the capture sequence it is part of, or NULL */
    struct sim_deps capture_deps; /* in it: the nodes its next captured work depends on */
    struct CUstream_st *next_all, *prev_all;  /* every stream of the process */
};

struct CUevent_st {
    enum sim_magic magic;
    struct CUctx_st *ctx;         /* current when it was made */
    unsigned gen;
    unsigned flags;
    struct sim_op *op;            /* the record's marker; NULL before the first record */
    uint64_t capture_id;          /* last recorded in this capture sequence; 0: not captured */
    struct sim_deps capture_deps; /* the nodes it stands for there */
};

struct CUfunc_st {
    enum sim_magic magic;
    const char *name;
    struct CUmod_st *module;
    const struct sim_ext_ops *ext;
    struct CUfunc_st *next;
};

struct CUkern_st {
    struct CUfunc_st func;        /* first, so a CUkernel launches as a CUfunction */
};

struct CUmod_st {
    enum sim_magic magic;
    struct CUfunc_st *funcs;      /* functions made by cuModuleGetFunction */
};

struct CUlib_st {
    enum sim_magic magic;
    struct CUmod_st *module;
};

/* What a launch, copy or memset asks of a stream: queued at once, or captured
 * into a graph node and replayed by cuGraphLaunch. */
struct sim_node {
    enum sim_kind kind;
    const char *name, *direction;
    uint64_t dur_ns, bytes;
    void *dst;
    const void *src;
    int fill;
    unsigned fill_size;           /* memset element size; 0 for a copy */
    struct sim_geom geom;         /* kernels and collectives */
    const struct sim_ext_ops *ext;    /* SIM_EXT: the library's operation */
    void *ext_arg;                /* in a graph: the template each replay copies */
};

/* Graphs, captured nodes and executable graphs: simgpu_graph.c. */
struct CUgraphNode_st {
    enum sim_magic magic;
    struct CUgraph_st *graph;
    size_t index;
    struct sim_node p;
    struct sim_deps deps;         /* earlier nodes of the same graph */
    int has_succ;                 /* another node depends on it */
};

struct CUgraph_st {
    enum sim_magic magic;
    uint64_t id;                  /* the truth file's "graph" */
    struct CUgraphNode_st **nodes;
    size_t n, cap;
};

struct CUgraphExec_st {
    enum sim_magic magic;
    struct CUgraph_st *graph;     /* its own copy of what it was made from */
};

/* Settings, read once by cuInit. */
struct sim_settings {
    int devices;
    uint64_t mem_bytes;
    uint64_t ctx_bytes;     /* SIMGPU_CTX_MB: each live context's reserve */
    uint64_t kernel_ns;
    double copy_gbs, dtod_gbs;
    int rank;                     /* $RANK, -1 when unset */
    int sms, regs, static_smem;   /* SIMGPU_SMS, SIMGPU_REGS, SIMGPU_STATIC_SMEM */
    uint64_t pickup_ns;           /* SIMGPU_PICKUP_NS: handover to the earliest start */
    uint64_t kernel_gap_ns;       /* SIMGPU_KERNEL_GAP_NS: a kernel after other work */
    unsigned record_hold_every;   /* SIMGPU_RECORD_HOLD=N:US: every Nth cuEventRecord */
    uint64_t record_hold_ns;      /* holds its thread US after the event is on the stream */
    int truth_memory;             /* SIMGPU_TRUTH_MEMORY=1: the device_memory lines */
    int pid;                      /* the process that read them: a forked child's copy of
                                     the memory counts is not its own */
};

extern struct sim_settings sim_cfg;
extern pthread_mutex_t sim_lock;

/* SMs (simgpu_occupancy.c): a launch's geometry in the model; an operation
 * whose times are decided, into the record simgpu_activity reads (sim_lock
 * held). */
void sim_geometry(const unsigned dims[6], unsigned smem_dyn, struct sim_geom *g);
void sim_activity_add(const struct sim_op *op);

/* The driver version played (simgpu_version.c): SIMGPU_DRIVER_VERSION, else
 * SIM_DRIVER_VERSION_DEFAULT. */
#define SIM_DRIVER_VERSION_DEFAULT 13000
int sim_driver_version(void);
/* X(name, CUDA version that added it): the exports newer than CUDA 12.0, each
 * implemented as sim_impl_<name> and exported through simgpu_version.c. */
#define SIM_NEWER_EXPORTS(X)                                                                \
    X(cuFuncGetName, 12030) X(cuKernelGetName, 12030) X(cuCtxCreate_v4, 12050)             \
    X(cuCtxSynchronize_v2, 13000) X(cuEventElapsedTime_v2, 12080)                           \
    X(cuStreamGetDevice, 12080) X(cuStreamGetDevice_ptsz, 12080)                            \
    X(cuStreamGetCaptureInfo_v3, 12030) X(cuStreamGetCaptureInfo_v3_ptsz, 12030)
#define SIM_IMPL_DECL(name, since) __typeof__(name) sim_impl_##name;
SIM_NEWER_EXPORTS(SIM_IMPL_DECL)
#undef SIM_IMPL_DECL

/* Driver state (simgpu_api.c). */
CUresult sim_check_init(void);           /* CUDA_ERROR_NOT_INITIALIZED before cuInit */
CUresult sim_check_fds(void);            /* the caller's fd table holds the driver's file */
struct CUctx_st *sim_current_ctx(void);  /* the calling thread's, or NULL */
/* CUDA_SUCCESS while context c of generation gen lives, else
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, said on stderr (what, in a line with
 * "destroyed context"): the real driver's behaviour there is undefined. */
CUresult sim_check_alive(const struct CUctx_st *c, unsigned gen, const char *what);
int sim_is_device_ptr(uintptr_t p);      /* 1 inside a cuMemAlloc block */
/* A block of device (host: pinned host) memory, as cuMemAlloc / cuMemAllocHost
 * give; its free (CUDA_ERROR_INVALID_VALUE: not one of these). */
CUresult sim_alloc_new(void **p, size_t bytes, int host);
CUresult sim_alloc_free(uintptr_t base, int host);

/* Device memory (simgpu_api.c), per device, under sim_lock: what is held there,
 * by part, and the most that was. */
/* a context's own state: SIMGPU_CTX_MB (default 0, so that what no hook sees
 * is NCCL's alone; 512 is about a real one's) */
#define SIM_CTX_RESERVE_BYTES (sim_cfg.ctx_bytes)
enum sim_mem_part { SIM_MEM_ALLOC, SIM_MEM_CONTEXT, SIM_MEM_INTERNAL, SIM_MEM_PARTS };
struct sim_dev_mem {
    uint64_t held[SIM_MEM_PARTS], peak[SIM_MEM_PARTS];
    uint64_t used, peak_used, peak_ns;   /* all parts together */
};
/* Takes bytes of device d's memory for part: CUDA_SUCCESS, or
 * CUDA_ERROR_OUT_OF_MEMORY when they do not fit (nothing taken). */
CUresult sim_mem_take(int d, uint64_t bytes, enum sim_mem_part part);
void sim_mem_give(int d, uint64_t bytes, enum sim_mem_part part);
/* Device d's figures; NULL before cuInit or for no such device. */
const struct sim_dev_mem *sim_mem_of(int d);

/* Model (simgpu_model.c). All sim_model_* functions expect sim_lock held, except
 * sim_model_wait, which takes it itself. */
uint64_t sim_now_ns(void);
/* Appends an operation to a stream with the given second dependency (or NULL);
 * returns it with one reference for the caller, or NULL when out of memory. The
 * caller fills its duration, name, bytes... then hands it to sim_model_submit,
 * which resolves it if it can and consumes that reference. */
struct sim_op *sim_model_enqueue(struct CUstream_st *s, enum sim_kind kind, struct sim_op *also);
void sim_model_submit(struct sim_op *op);
/* A graph launch hands its nodes over together: between sim_model_hold(1) and
 * sim_model_hold(0), sim_model_submit keeps them; the second submits them. */
void sim_model_hold(int on);
void sim_op_ref(struct sim_op *op);
void sim_op_unref(struct sim_op *op);
/* A growing list of operations (the held ones, the truth file's pending ones). */
struct sim_op_list {
    struct sim_op **ops;
    size_t n, cap;
};
/* Appends op (no reference taken); -1 when out of memory. */
int sim_op_list_push(struct sim_op_list *l, struct sim_op *op);
/* Resolves what can be resolved now. */
void sim_model_progress(void);
/* Waits (lock not held) until op is resolved and its end has passed, then drops a
 * reference the caller took under sim_lock. Returns CUDA_SUCCESS, or
 * CUDA_ERROR_LAUNCH_TIMEOUT when the operation failed. */
CUresult sim_model_wait(struct sim_op *op);
/* CUDA_SUCCESS when op is resolved and over, CUDA_ERROR_NOT_READY otherwise. */
CUresult sim_model_query(struct sim_op *op);
void sim_model_register_stream(struct CUstream_st *s);
void sim_model_unregister_stream(struct CUstream_st *s);
/* Every stream of a context (NULL: all), for cuCtxSynchronize: fills up to max
 * tails, with a reference each; returns how many. */
size_t sim_model_tails(struct CUctx_st *ctx, struct sim_op **tails, size_t max);
uint64_t sim_model_next_stream_id(void);

/* Streams (simgpu_stream.c): the stream behind a handle (0: the legacy one, or
 * the per-thread one when ptds), under sim_lock. */
CUresult sim_stream_get(CUstream h, int ptds, struct CUstream_st **out);

/* Capture (simgpu_graph.c), all under sim_lock. */
/* Adds n to the graph s is being captured into (s->capture set): a node that
 * depends on s's current nodes. CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once the
 * capture is invalidated; _UNSUPPORTED for an operation that cannot be captured. */
CUresult sim_capture_add(struct CUstream_st *s, const struct sim_node *n);
/* A potentially unsafe call (a synchronisation, a query, an allocation) on
 * stream s (NULL: none in particular) by the calling thread: CUDA_SUCCESS when
 * the capture modes allow it; else CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and
 * the captures that forbid it are invalidated, as the driver does. */
CUresult sim_capture_forbid(struct CUstream_st *s);
/* cuEventRecord on a capturing stream: e stands for s's current nodes. */
CUresult sim_capture_event_record(struct CUevent_st *e, struct CUstream_st *s);
/* cuStreamWaitEvent where s is capturing or e was recorded in a capture: s
 * joins e's capture, or its nodes depend on e's too. Errors as the driver's. */
CUresult sim_capture_event_wait(struct CUstream_st *s, struct CUevent_st *e, unsigned flags);
/* The stream is being destroyed: it leaves its capture. */
void sim_capture_stream_gone(struct CUstream_st *s);
/* Moves the bytes of a copy or memset node (outside sim_lock: it may be long). */
void sim_node_apply(const struct sim_node *n);

/* Truth (simgpu_truth.c): writes the lines of a resolved operation, if SIMGPU_TRUTH is set. */
void sim_truth_write(const struct sim_op *op);
/* Writes the lines sim_truth_write keeps (sim_lock held): they are written
 * before the next handover, at waits and at exit, not after one, so that a
 * call hands its work over at its end, as the driver does. */
void sim_truth_flush(void);

#endif
