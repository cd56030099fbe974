/* The simulated NCCL (build/sim/libnccl.so.2): nccl.h's API on the simulated GPU.
 * A collective is launched, through the driver's cuLaunchKernel as the real NCCL's
 * kernels are, as an external operation of the GPU model: when this rank's stream
 * reaches it, the rank publishes that time in the communicator's shared memory; the
 * collective starts at the latest of all ranks' times and lasts
 *     SIMNCCL_ALPHA_US + bytes x factor / SIMNCCL_BW_GBS
 * (bytes and factor as nccl-tests count them: 2(n-1)/n for AllReduce, (n-1)/n for
 * AllGather, ReduceScatter, AlltoAll, Gather, Scatter, 1 for Broadcast, Reduce and
 * Send/Recv). A rank that dies or never comes fails the operation after
 * SIMNCCL_TIMEOUT_S (default 60; at once when its process is gone).
 * Defaults: SIMNCCL_ALPHA_US 10, SIMNCCL_BW_GBS 100, read at communicator creation.
 * SIMNCCL_ENQUEUE_US (default 0): the host time each call spends, spinning, before
 * it launches its kernel, as the real NCCL's enqueue does (several us a call).
 * Sends and receives between ncclGroupStart and ncclGroupEnd become one operation
 * per communicator and stream that starts when all their peers are ready.
 * Each communicator holds device memory for its buffers from its creation to its
 * destruction, as the real library's do: NCCL_BUFFSIZE (bytes, default 4 MiB, as
 * NCCL's) x SIMNCCL_CHANNELS x its peers (nranks - 1, at least 1), taken through
 * simgpu_internal_alloc so that no cuMem* hook sees it. A creation the device has no
 * room for fails with ncclUnhandledCudaError, after the rank has joined: its peers
 * find it gone at their first collective rather than wait for it to join. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "tools/sim/simnccl.h"

#define SIM_NCCL_ID_MAGIC "SIMNCCL1"
#define SIM_NCCL_CHECK_NS 100000000u   /* how often a waiting rank checks that its peers live */

#define SIM_NCCL_ERRORS(X)                                                           \
    X(ncclSuccess, "no error")                                                      \
    X(ncclUnhandledCudaError, "unhandled cuda error")                               \
    X(ncclSystemError, "unhandled system error")                                    \
    X(ncclInternalError, "internal error")                                          \
    X(ncclInvalidArgument, "invalid argument")                                      \
    X(ncclInvalidUsage, "invalid usage")                                            \
    X(ncclRemoteError, "remote process exited or there was a network error")        \
    X(ncclInProgress, "NCCL operation in progress")

/* The collectives: truth "op", kernel name, and the nccl-tests factors. */
enum sim_nccl_coll_id {
    SIM_NCCL_ALLREDUCE, SIM_NCCL_ALLGATHER, SIM_NCCL_REDUCESCATTER, SIM_NCCL_BROADCAST,
    SIM_NCCL_REDUCE, SIM_NCCL_ALLTOALL, SIM_NCCL_GATHER, SIM_NCCL_SCATTER, SIM_NCCL_NCOLLS
};

static const struct sim_nccl_coll_info {
    const char *op, *kernel;
    int bytes_times_n;   /* nccl-tests counts the whole buffer: count x nranks */
    int busbw;           /* 2: 2(n-1)/n, 1: (n-1)/n, 0: 1 */
    int has_root;
} sim_nccl_colls[SIM_NCCL_NCOLLS] = {
    [SIM_NCCL_ALLREDUCE] = { "AllReduce", "ncclDevKernel_AllReduce_RING_LL", 0, 2, 0 },
    [SIM_NCCL_ALLGATHER] = { "AllGather", "ncclDevKernel_AllGather_RING_LL", 1, 1, 0 },
    [SIM_NCCL_REDUCESCATTER] = { "ReduceScatter", "ncclDevKernel_ReduceScatter_RING_LL", 1, 1, 0 },
    [SIM_NCCL_BROADCAST] = { "Broadcast", "ncclDevKernel_Broadcast_RING_LL", 0, 0, 1 },
    [SIM_NCCL_REDUCE] = { "Reduce", "ncclDevKernel_Reduce_RING_LL", 0, 0, 1 },
    [SIM_NCCL_ALLTOALL] = { "AlltoAll", "ncclDevKernel_AlltoAll", 1, 1, 0 },
    [SIM_NCCL_GATHER] = { "Gather", "ncclDevKernel_Gather", 1, 1, 1 },
    [SIM_NCCL_SCATTER] = { "Scatter", "ncclDevKernel_Scatter", 1, 1, 1 },
};

static const struct { const char *name; unsigned size; } sim_nccl_types[ncclNumTypes] = {
    [ncclInt8] = { "int8", 1 }, [ncclUint8] = { "uint8", 1 }, [ncclInt32] = { "int32", 4 },
    [ncclUint32] = { "uint32", 4 }, [ncclInt64] = { "int64", 8 }, [ncclUint64] = { "uint64", 8 },
    [ncclFloat16] = { "float16", 2 }, [ncclFloat32] = { "float32", 4 },
    [ncclFloat64] = { "float64", 8 }, [ncclBfloat16] = { "bfloat16", 2 },
    [ncclFloat8e4m3] = { "float8e4m3", 1 }, [ncclFloat8e5m2] = { "float8e5m2", 1 },
};

/* One send or receive. */
struct sim_nccl_p2p {
    int peer, send;
    uint64_t k;          /* its number among this pair's sends (or receives) */
    uint64_t count, bytes;
    ncclDataType_t type;
};

/* An operation handed to the GPU model; freed by its release callback. */
struct sim_nccl_op {
    struct ncclComm *comm;
    int coll;            /* enum sim_nccl_coll_id, or -1 for sends and receives */
    uint64_t seq, count, bytes, dur_ns;
    ncclDataType_t type;
    int root;
    int published;
    int graph_template;  /* captured into a graph: never runs, copied by each replay */
    uint64_t deadline_ns, next_check_ns;
    int n;
    struct sim_nccl_p2p p2p[];
};

/* Sends and receives waiting for ncclGroupEnd, and communicators waiting to be
 * joined, per thread as NCCL groups are. */
struct sim_nccl_pending {
    struct ncclComm *comm;
    cudaStream_t stream;
    struct sim_nccl_p2p p2p;
};

static __thread struct {
    int depth;
    struct sim_nccl_pending *p2p;
    size_t n, cap;
    struct ncclComm *joins[SIM_NCCL_MAX_RANKS];
    int njoins;
} sim_nccl_group;

static struct {
    pthread_mutex_t lock;            /* guards last_error */
    char last_error[512];
    pthread_once_t once;
    ncclResult_t init_result;
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);
    CUfunction coll_funcs[SIM_NCCL_NCOLLS], p2p_func;
} sim_nccl = { .lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

static uint64_t sim_nccl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

ncclResult_t sim_nccl_error(ncclResult_t err, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&sim_nccl.lock);
    va_start(ap, fmt);
    vsnprintf(sim_nccl.last_error, sizeof(sim_nccl.last_error), fmt, ap);
    va_end(ap);
    fprintf(stderr, "simnccl: %s\n", sim_nccl.last_error);
    pthread_mutex_unlock(&sim_nccl.lock);
    return err;
}

static double sim_nccl_env(const char *name, double def)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return def;
    double d = strtod(v, &end);
    if (*end || d < 0) {
        fprintf(stderr, "simnccl: %s=%s is not a number >= 0; using %g\n", name, v, def);
        return def;
    }
    return d;
}

/* ---- the operations' side of the GPU model (called under its lock) ---- */

static enum sim_arrival sim_nccl_fail(struct sim_nccl_op *op, int missing, const char *why)
{
    struct ncclComm *c = op->comm;
    const char *what = op->coll >= 0 ? sim_nccl_colls[op->coll].op : "Send/Recv";
    if (!atomic_exchange(&c->broken, 1))
        sim_nccl_error(ncclRemoteError, "comm %s, rank %d of %d: %s #%llu: rank %d (pid %d) %s",
                      c->id, c->rank, c->nranks, what, (unsigned long long)op->seq, missing,
                      (int)atomic_load(&c->shm->pid[missing]), why);
    __atomic_store_n(&c->async_error, ncclRemoteError, __ATOMIC_RELEASE);
    return SIM_FAILED;
}

static enum sim_arrival sim_nccl_wait(struct sim_nccl_op *op, int missing)
{
    uint64_t now = sim_nccl_now_ns();
    if (now >= op->next_check_ns) {
        op->next_check_ns = now + SIM_NCCL_CHECK_NS;
        if (sim_nccl_shm_rank_dead(op->comm, missing))
            return sim_nccl_fail(op, missing, "has exited");
    }
    if (now > op->deadline_ns)
        return sim_nccl_fail(op, missing, "did not arrive before SIMNCCL_TIMEOUT_S");
    return SIM_WAITING;
}

/* What a collective call is, as one number: equal on every rank that
 * called the same thing. */
static uint64_t sim_nccl_call_sig(const struct sim_nccl_op *op)
{
    return (((uint64_t)(op->coll + 1) * 1000003u + op->count) * 1000003u + (uint64_t)op->type) * 1000003u +
           (uint64_t)(op->root + 1);
}

/* 1 with *start set once every rank has arrived; 0 with *missing a rank not there yet. */
static int sim_nccl_coll_arrive(struct sim_nccl_op *op, uint64_t ready, uint64_t *start, int *missing)
{
    struct ncclComm *c = op->comm;
    struct sim_nccl_coll_slot *s = &c->shm->coll[op->seq % SIM_NCCL_COLL_SLOTS];
    uint64_t tag = op->seq + 1, t = 0;
    if (!op->published) {
        for (int i = 0; op->seq >= SIM_NCCL_COLL_SLOTS && i < c->nranks; i++) {
            if (atomic_load(&s->done[i]) < tag - SIM_NCCL_COLL_SLOTS) {
                *missing = i;
                return 0;
            }
        }
        s->ready[c->rank] = ready;
        s->call[c->rank] = sim_nccl_call_sig(op);
        atomic_store(&s->tag[c->rank], tag);
        op->published = 1;
    }
    for (int i = 0; i < c->nranks; i++) {
        /* a rank that called something else at this number never meets
         * this call: as with the real NCCL, it waits (for the timeout) */
        if (atomic_load(&s->tag[i]) != tag || s->call[i] != s->call[c->rank]) {
            *missing = i;
            return 0;
        }
        if (s->ready[i] > t)
            t = s->ready[i];
    }
    atomic_store(&s->done[c->rank], tag);
    *start = t;
    return 1;
}

static struct sim_nccl_p2p_slot *sim_nccl_p2p_slot(struct ncclComm *c, const struct sim_nccl_p2p *e)
{
    int src = e->send ? c->rank : e->peer, dst = e->send ? e->peer : c->rank;
    return &c->shm->p2p[src][dst][e->k % SIM_NCCL_P2P_SLOTS];
}

static int sim_nccl_p2p_arrive(struct sim_nccl_op *op, uint64_t ready, uint64_t *start, int *missing)
{
    struct ncclComm *c = op->comm;
    uint64_t t = ready;
    if (!op->published) {
        for (int i = 0; i < op->n; i++) {
            const struct sim_nccl_p2p *e = &op->p2p[i];
            struct sim_nccl_p2p_slot *s = sim_nccl_p2p_slot(c, e);
            uint64_t prev = e->k >= SIM_NCCL_P2P_SLOTS ? e->k + 1 - SIM_NCCL_P2P_SLOTS : 0;
            if (atomic_load(e->send ? &s->send_seen : &s->recv_seen) < prev) {
                *missing = e->peer;
                return 0;
            }
        }
        for (int i = 0; i < op->n; i++) {
            const struct sim_nccl_p2p *e = &op->p2p[i];
            struct sim_nccl_p2p_slot *s = sim_nccl_p2p_slot(c, e);
            if (e->send) {
                s->send_ready = ready;
                atomic_store(&s->send_tag, e->k + 1);
            } else {
                s->recv_ready = ready;
                atomic_store(&s->recv_tag, e->k + 1);
            }
        }
        op->published = 1;
    }
    for (int i = 0; i < op->n; i++) {
        const struct sim_nccl_p2p *e = &op->p2p[i];
        struct sim_nccl_p2p_slot *s = sim_nccl_p2p_slot(c, e);
        if (atomic_load(e->send ? &s->recv_tag : &s->send_tag) != e->k + 1) {
            *missing = e->peer;
            return 0;
        }
        uint64_t other = e->send ? s->recv_ready : s->send_ready;
        if (other > t)
            t = other;
    }
    for (int i = 0; i < op->n; i++) {
        const struct sim_nccl_p2p *e = &op->p2p[i];
        atomic_store(e->send ? &sim_nccl_p2p_slot(c, e)->recv_seen : &sim_nccl_p2p_slot(c, e)->send_seen,
                     e->k + 1);
    }
    *start = t;
    return 1;
}

static enum sim_arrival sim_nccl_arrive(void *arg, uint64_t ready, uint64_t *start, uint64_t *end)
{
    struct sim_nccl_op *op = arg;
    int missing = op->comm->rank;
    if (atomic_load(&op->comm->broken))
        return SIM_FAILED;
    int all = op->coll >= 0 ? sim_nccl_coll_arrive(op, ready, start, &missing)
                            : sim_nccl_p2p_arrive(op, ready, start, &missing);
    if (!all)
        return sim_nccl_wait(op, missing);
    *end = *start + op->dur_ns;
    /* what this rank sends and receives: a ring's share of the bytes as
     * nccl-tests counts them (the busbw factor), a send's or receive's own */
    uint64_t tx = 0, rx = 0;
    if (op->coll >= 0) {
        double n = op->comm->nranks, b = sim_nccl_colls[op->coll].busbw;
        tx = rx = (uint64_t)((double)op->bytes * (b == 2 ? 2 * (n - 1) / n : b == 1 ? (n - 1) / n : n > 1));
    }
    for (int i = 0; op->coll < 0 && i < op->n; i++)
        *(op->p2p[i].send ? &tx : &rx) += op->p2p[i].bytes;
    sim_nccl_port_add(tx, rx);
    return SIM_ARRIVED;
}

static int sim_nccl_describe(void *arg, int line, char *buf, size_t len)
{
    const struct sim_nccl_op *op = arg;
    const struct ncclComm *c = op->comm;
    char extra[32] = "";
    int n;
    if (op->coll >= 0) {
        if (line > 0)
            return -1;
        if (op->root >= 0)
            snprintf(extra, sizeof(extra), ",\"root\":%d", op->root);
        n = snprintf(buf, len,
                     ",\"rank\":%d,\"nranks\":%d,\"op\":\"%s\",\"comm\":\"%s\",\"seq\":%llu,"
                     "\"count\":%llu,\"datatype\":\"%s\",\"bytes\":%llu%s",
                     c->rank, c->nranks, sim_nccl_colls[op->coll].op, c->id,
                     (unsigned long long)op->seq, (unsigned long long)op->count,
                     sim_nccl_types[op->type].name, (unsigned long long)op->bytes, extra);
    } else {
        if (line >= op->n)
            return -1;
        const struct sim_nccl_p2p *e = &op->p2p[line];
        n = snprintf(buf, len,
                     ",\"rank\":%d,\"nranks\":%d,\"op\":\"%s\",\"comm\":\"%s\",\"seq\":%llu,"
                     "\"peer\":%d,\"count\":%llu,\"datatype\":\"%s\",\"bytes\":%llu",
                     c->rank, c->nranks, e->send ? "Send" : "Recv", c->id, (unsigned long long)e->k,
                     e->peer, (unsigned long long)e->count, sim_nccl_types[e->type].name,
                     (unsigned long long)e->bytes);
    }
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void sim_nccl_release(void *arg)
{
    struct sim_nccl_op *op = arg;
    if (!op->graph_template)
        atomic_fetch_sub(&op->comm->pending, 1);
    free(op);
}

/* A collective captured into a graph rendezvouses anew at each replay: the
 * replay's copy takes the communicator's next sequence numbers then, as the
 * program's own calls do. */
static void *sim_nccl_copy(const void *arg, int launch)
{
    const struct sim_nccl_op *t = arg;
    size_t size = sizeof(*t) + (size_t)t->n * sizeof(t->p2p[0]);
    struct sim_nccl_op *op = malloc(size);
    if (!op)
        return NULL;
    memcpy(op, t, size);
    op->graph_template = !launch;
    if (!launch)
        return op;
    struct ncclComm *c = op->comm;
    op->published = 0;
    op->deadline_ns = sim_nccl_now_ns() + c->timeout_ns;
    op->next_check_ns = 0;
    if (op->coll >= 0)
        op->seq = c->coll_seq++;
    for (int i = 0; i < op->n; i++) {
        struct sim_nccl_p2p *e = &op->p2p[i];
        e->k = e->send ? c->send_seq[e->peer]++ : c->recv_seq[e->peer]++;
    }
    if (op->coll < 0 && op->n)
        op->seq = op->p2p[0].k;
    atomic_fetch_add(&c->pending, 1);
    return op;
}

static const struct sim_ext_ops sim_nccl_coll_ops = {
    "collective", sim_nccl_arrive, sim_nccl_describe, sim_nccl_release, sim_nccl_copy
};
static const struct sim_ext_ops sim_nccl_p2p_ops = {
    "p2p", sim_nccl_arrive, sim_nccl_describe, sim_nccl_release, sim_nccl_copy
};

/* Whether stream is being captured into a graph: its operation is then a
 * template, and takes no sequence number until a replay. */
static int sim_nccl_capturing(cudaStream_t stream)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return cuStreamIsCapturing((CUstream)stream, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ---- launching ---- */

/* A driver function looked up the way the CUDA runtime does; NULL if none. */
static void *sim_nccl_proc(const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    if (cuGetProcAddress_v2(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
        return NULL;
    return fn;
}

/* The driver's functions are looked up the way the CUDA runtime does, and
 * NCCL's kernels are had from its library as the runtime has them
 * (cuLibraryLoadData, cuLibraryGetKernel, cuKernelGetFunction), so a tool that
 * watches those calls sees NCCL's kernels made and named as on a real system;
 * the simulator is then told that their launches are collectives. */
static void sim_nccl_init_once(void)
{
    static const char image[] = "simnccl device code";
    __typeof__(cuInit) *init = (__typeof__(init))sim_nccl_proc("cuInit");
    __typeof__(cuLibraryLoadData) *load = (__typeof__(load))sim_nccl_proc("cuLibraryLoadData");
    __typeof__(cuLibraryGetKernel) *get_kernel = (__typeof__(get_kernel))sim_nccl_proc("cuLibraryGetKernel");
    __typeof__(cuKernelGetFunction) *get_func = (__typeof__(get_func))sim_nccl_proc("cuKernelGetFunction");
    sim_nccl.launch = (__typeof__(sim_nccl.launch))sim_nccl_proc("cuLaunchKernel");
    if (!init || !load || !get_kernel || !get_func || !sim_nccl.launch) {
        sim_nccl.init_result = sim_nccl_error(ncclUnhandledCudaError,
                                            "cuGetProcAddress failed: not the simulated libcuda.so.1?");
        return;
    }
    CUlibrary lib;
    if (init(0) != CUDA_SUCCESS || load(&lib, image, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS) {
        sim_nccl.init_result = sim_nccl_error(ncclUnhandledCudaError, "loading NCCL's kernels failed");
        return;
    }
    for (int i = 0; i <= SIM_NCCL_NCOLLS; i++) {
        CUfunction *f = i < SIM_NCCL_NCOLLS ? &sim_nccl.coll_funcs[i] : &sim_nccl.p2p_func;
        const char *name = i < SIM_NCCL_NCOLLS ? sim_nccl_colls[i].kernel : "ncclDevKernel_SendRecv";
        CUkernel k;
        if (get_kernel(&k, lib, name) != CUDA_SUCCESS || get_func(f, k) != CUDA_SUCCESS ||
            sim_func_set_ext(*f, i < SIM_NCCL_NCOLLS ? &sim_nccl_coll_ops : &sim_nccl_p2p_ops) != CUDA_SUCCESS) {
            sim_nccl.init_result = sim_nccl_error(ncclSystemError, "out of memory");
            return;
        }
    }
}

/* NCCL's channels: SIMNCCL_CHANNELS, default 16. */
static unsigned sim_nccl_channels(void)
{
    static unsigned n;
    if (!n) {
        const char *v = getenv("SIMNCCL_CHANNELS");
        long c = v && *v ? strtol(v, NULL, 10) : 16;
        n = c >= 1 && c <= 1024 ? (unsigned)c : 16;
    }
    return n;
}

/* The device memory of a communicator of nranks' buffers (above). */
static uint64_t sim_nccl_buffer_bytes(int nranks)
{
    uint64_t buffsize = (uint64_t)sim_nccl_env("NCCL_BUFFSIZE", 4u << 20);
    return buffsize * sim_nccl_channels() * (uint64_t)(nranks > 1 ? nranks - 1 : 1);
}

/* Puts op (counted in its communicator's pending) on the stream; frees it
 * when that fails. */
static ncclResult_t sim_nccl_launch_now(void *arg, CUfunction f, cudaStream_t stream)
{
    struct sim_nccl_op *op = arg;
    void *params[1] = { &arg };
    /* On the communicator's device, whatever the caller's (NCCL sets its
     * device around the enqueue and restores the caller's), and on NCCL's
     * own thread for a non-blocking communicator. */
    CUcontext cur = NULL, popped;
    int pushed = op->comm->ctx && cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != op->comm->ctx &&
                 cuCtxPushCurrent(op->comm->ctx) == CUDA_SUCCESS;
    /* one block of 512 threads per channel, as NCCL's kernels have */
    CUresult r = sim_nccl.launch(f, sim_nccl_channels(), 1, 1, 512, 1, 1, 0, (CUstream)stream, params, NULL);
    if (pushed)
        cuCtxPopCurrent(&popped);
    if (r == CUDA_SUCCESS)
        return ncclSuccess;
    if (!op->graph_template)
        atomic_fetch_sub(&op->comm->pending, 1);
    free(op);
    return sim_nccl_error(ncclUnhandledCudaError, "cuLaunchKernel failed: CUresult %d", (int)r);
}

/* Hands op to the stream, or for a non-blocking communicator to the
 * group's thread (simnccl_async.c); frees it when that fails. */
static ncclResult_t sim_nccl_launch(struct sim_nccl_op *op, CUfunction f, cudaStream_t stream)
{
    /* the host's part of the call before the kernel is on the stream */
    for (uint64_t until = sim_nccl_now_ns() + op->comm->enqueue_ns; sim_nccl_now_ns() < until;)
        ;
    /* a graph's template never runs: its replays' copies are counted */
    if (!op->graph_template)
        atomic_fetch_add(&op->comm->pending, 1);
    if (!op->comm->nonblocking || op->graph_template)
        return sim_nccl_launch_now(op, f, stream);
    ncclResult_t r = sim_nccl_async_queue(op, f, stream, op->comm);
    if (r != ncclSuccess) {
        atomic_fetch_sub(&op->comm->pending, 1);
        free(op);
    }
    return r;
}

/* A non-blocking communicator's call outside a group is a group of its own. */
static ncclResult_t sim_nccl_async_end(const struct ncclComm *comm, ncclResult_t r)
{
    if (r != ncclSuccess || !comm->nonblocking || sim_nccl_group.depth > 0 || !sim_nccl_async_pending())
        return r;
    return sim_nccl_async_flush(sim_nccl_launch_now);
}

/* NCCL's ncclCommEnsureReady: a non-blocking communicator whose last
 * operation is still in progress cannot be used. */
static ncclResult_t sim_nccl_ready(const struct ncclComm *comm, const char *what)
{
    if (sim_nccl_async_state(comm) != ncclInProgress)
        return ncclSuccess;
    return sim_nccl_error(ncclInvalidArgument, "%s: comm %s used before its last operation returned ncclSuccess "
                          "(ncclCommGetAsyncError)", what, comm->id);
}

static ncclResult_t sim_nccl_check_comm(const struct ncclComm *comm)
{
    if (!comm || !comm->shm)
        return sim_nccl_error(ncclInvalidArgument, "invalid communicator");
    if (atomic_load(&comm->broken)) {
        ncclResult_t e = sim_nccl_async_state(comm);
        return e != ncclSuccess && e != ncclInProgress ? e : ncclInvalidUsage;
    }
    if (sim_nccl_ready(comm, "collective") != ncclSuccess)
        return ncclInvalidArgument;
    pthread_once(&sim_nccl.once, sim_nccl_init_once);
    return sim_nccl.init_result;
}

static uint64_t sim_nccl_duration(const struct ncclComm *c, uint64_t bytes, int busbw)
{
    double n = c->nranks;
    double factor = busbw == 2 ? 2 * (n - 1) / n : busbw == 1 ? (n - 1) / n : 1;
    return c->alpha_ns + (uint64_t)((double)bytes * factor / c->bw_gbs + 0.5);
}

static ncclResult_t sim_nccl_coll(enum sim_nccl_coll_id id, size_t count, ncclDataType_t type, int root,
                                 ncclComm_t comm, cudaStream_t stream)
{
    const struct sim_nccl_coll_info *info = &sim_nccl_colls[id];
    ncclResult_t r = sim_nccl_check_comm(comm);
    if (r != ncclSuccess)
        return r;
    if ((unsigned)type >= ncclNumTypes)
        return sim_nccl_error(ncclInvalidArgument, "%s: invalid datatype %d", info->op, (int)type);
    if (info->has_root && (root < 0 || root >= comm->nranks))
        return sim_nccl_error(ncclInvalidArgument, "%s: root %d out of range (%d ranks)", info->op, root,
                             comm->nranks);
    struct sim_nccl_op *op = calloc(1, sizeof(*op));
    if (!op)
        return sim_nccl_error(ncclSystemError, "out of memory");
    op->comm = comm;
    op->coll = id;
    op->count = count;
    op->type = type;
    op->root = info->has_root ? root : -1;
    op->bytes = (uint64_t)count * sim_nccl_types[type].size * (info->bytes_times_n ? (uint64_t)comm->nranks : 1);
    op->dur_ns = sim_nccl_duration(comm, op->bytes, info->busbw);
    op->deadline_ns = sim_nccl_now_ns() + comm->timeout_ns;
    op->graph_template = sim_nccl_capturing(stream);
    op->seq = op->graph_template ? 0 : comm->coll_seq++;
    r = sim_nccl_launch(op, sim_nccl.coll_funcs[id], stream);
    if (r != ncclSuccess && !op->graph_template)
        comm->coll_seq--;
    return sim_nccl_async_end(comm, r);
}

static ncclResult_t sim_nccl_p2p_launch(struct ncclComm *comm, cudaStream_t stream,
                                       const struct sim_nccl_pending *list, size_t n)
{
    uint64_t longest = 0;
    struct sim_nccl_op *op = calloc(1, sizeof(*op) + n * sizeof(op->p2p[0]));
    if (!op)
        return sim_nccl_error(ncclSystemError, "out of memory");
    op->comm = comm;
    op->coll = -1;
    op->root = -1;
    op->deadline_ns = sim_nccl_now_ns() + comm->timeout_ns;
    for (size_t i = 0; i < n; i++) {
        if (list[i].comm != comm || list[i].stream != stream)
            continue;
        op->p2p[op->n++] = list[i].p2p;
        if (list[i].p2p.bytes > longest)
            longest = list[i].p2p.bytes;
    }
    op->seq = op->p2p[0].k;
    op->dur_ns = sim_nccl_duration(comm, longest, 0);
    if ((op->graph_template = sim_nccl_capturing(stream)) != 0) {
        /* numbered at each replay: give back the numbers the calls took */
        for (int i = op->n - 1; i >= 0; i--) {
            const struct sim_nccl_p2p *e = &op->p2p[i];
            uint64_t *next = e->send ? &comm->send_seq[e->peer] : &comm->recv_seq[e->peer];
            if (*next == e->k + 1)
                *next = e->k;
        }
    }
    return sim_nccl_launch(op, sim_nccl.p2p_func, stream);
}

static ncclResult_t sim_nccl_p2p(int send, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                                cudaStream_t stream)
{
    ncclResult_t r = sim_nccl_check_comm(comm);
    if (r != ncclSuccess)
        return r;
    if ((unsigned)type >= ncclNumTypes)
        return sim_nccl_error(ncclInvalidArgument, "%s: invalid datatype %d", send ? "Send" : "Recv", (int)type);
    if (peer < 0 || peer >= comm->nranks)
        return sim_nccl_error(ncclInvalidArgument, "%s: peer %d out of range (%d ranks)",
                             send ? "Send" : "Recv", peer, comm->nranks);
    struct sim_nccl_pending p = {
        .comm = comm, .stream = stream,
        .p2p = { .peer = peer, .send = send, .count = count, .type = type,
                 .bytes = (uint64_t)count * sim_nccl_types[type].size,
                 .k = send ? comm->send_seq[peer]++ : comm->recv_seq[peer]++ },
    };
    if (sim_nccl_group.depth == 0)
        return sim_nccl_async_end(comm, sim_nccl_p2p_launch(comm, stream, &p, 1));
    if (sim_nccl_group.n == sim_nccl_group.cap) {
        size_t cap = sim_nccl_group.cap ? 2 * sim_nccl_group.cap : 16;
        struct sim_nccl_pending *a = realloc(sim_nccl_group.p2p, cap * sizeof(*a));
        if (!a)
            return sim_nccl_error(ncclSystemError, "out of memory");
        sim_nccl_group.p2p = a;
        sim_nccl_group.cap = cap;
    }
    sim_nccl_group.p2p[sim_nccl_group.n++] = p;
    return ncclSuccess;
}

/* ---- communicators ---- */

static void sim_nccl_hex_id(struct ncclComm *c)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a of the segment's name */
    for (const char *p = c->name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(c->id, sizeof(c->id), "%016llx", (unsigned long long)h);
}

/* Makes a communicator and enters it in its segment, without waiting for the others. */
static ncclResult_t sim_nccl_comm_new(ncclComm_t *out, const char *name, int nranks, int rank, int cudev,
                                     int nonblocking)
{
    if (!out)
        return sim_nccl_error(ncclInvalidArgument, "NULL communicator pointer");
    if (nranks < 1 || nranks > SIM_NCCL_MAX_RANKS)
        return sim_nccl_error(ncclInvalidArgument, "%d ranks: the simulator handles 1 to %d", nranks,
                             SIM_NCCL_MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return sim_nccl_error(ncclInvalidArgument, "rank %d out of range (%d ranks)", rank, nranks);
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (!c)
        return sim_nccl_error(ncclSystemError, "out of memory");
    snprintf(c->name, sizeof(c->name), "%s", name);
    sim_nccl_hex_id(c);
    c->rank = rank;
    c->nranks = nranks;
    c->cudev = cudev;
    c->nonblocking = nonblocking;
    if (cuCtxGetCurrent(&c->ctx) != CUDA_SUCCESS)
        c->ctx = NULL;
    c->alpha_ns = (uint64_t)(sim_nccl_env("SIMNCCL_ALPHA_US", 10) * 1000);
    c->bw_gbs = sim_nccl_env("SIMNCCL_BW_GBS", 100);
    if (c->bw_gbs <= 0)
        c->bw_gbs = 100;
    c->timeout_ns = (uint64_t)(sim_nccl_env("SIMNCCL_TIMEOUT_S", 60) * 1e9);
    c->enqueue_ns = (uint64_t)(sim_nccl_env("SIMNCCL_ENQUEUE_US", 0) * 1000);
    ncclResult_t r = sim_nccl_shm_attach(c);
    if (r != ncclSuccess) {
        free(c);
        return r;
    }
    uint64_t bytes = sim_nccl_buffer_bytes(nranks);
    CUresult cr = simgpu_internal_alloc(cudev, bytes);
    if (cr != CUDA_SUCCESS) {
        r = sim_nccl_error(ncclUnhandledCudaError, "comm %s, rank %d: %llu bytes of buffers on device %d: "
                           "Cuda failure %d '%s'", c->id, rank, (unsigned long long)bytes, cudev, (int)cr,
                           cr == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "error");
        sim_nccl_shm_detach(c);
        free(c);
        return r;
    }
    c->buffer_bytes = bytes;
    *out = c;
    return ncclSuccess;
}

static void sim_nccl_comm_free(struct ncclComm *c)
{
    simgpu_internal_free(c->cudev, c->buffer_bytes);
    sim_nccl_shm_detach(c);
    free(c);
}

/* Waits for the other ranks, now or (inside a group) at ncclGroupEnd; a
 * non-blocking communicator on the group's thread. */
static ncclResult_t sim_nccl_comm_join(ncclComm_t *out)
{
    if ((*out)->nonblocking) {
        ncclResult_t r = sim_nccl_async_queue_join(*out);
        if (r != ncclSuccess) {
            sim_nccl_comm_free(*out);
            *out = NULL;
            return r;
        }
        return sim_nccl_group.depth > 0 ? ncclSuccess : sim_nccl_async_flush(sim_nccl_launch_now);
    }
    if (sim_nccl_group.depth > 0 && sim_nccl_group.njoins < SIM_NCCL_MAX_RANKS) {
        sim_nccl_group.joins[sim_nccl_group.njoins++] = *out;
        return ncclSuccess;
    }
    ncclResult_t r = sim_nccl_shm_wait_joined(*out);
    if (r != ncclSuccess) {
        sim_nccl_comm_free(*out);
        *out = NULL;
    }
    return r;
}

static int sim_nccl_current_device(void)
{
    CUdevice d;
    return cuCtxGetDevice(&d) == CUDA_SUCCESS ? d : 0;
}

static ncclResult_t sim_nccl_id_name(const ncclUniqueId *id, char *name, size_t len)
{
    if (memcmp(id->internal, SIM_NCCL_ID_MAGIC, 8) != 0)
        return sim_nccl_error(ncclInvalidArgument, "not a unique id from this library's ncclGetUniqueId");
    int o = snprintf(name, len, "/simnccl-");
    for (int i = 8; i < 24 && o + 2 < (int)len; i++)
        o += snprintf(name + o, len - (size_t)o, "%02x", (unsigned char)id->internal[i]);
    return ncclSuccess;
}

ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return sim_nccl_error(ncclInvalidArgument, "NULL version pointer");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    if (!id)
        return sim_nccl_error(ncclInvalidArgument, "NULL unique id pointer");
    memset(id, 0, sizeof(*id));
    memcpy(id->internal, SIM_NCCL_ID_MAGIC, 8);
    if (getrandom(id->internal + 8, 16, 0) != 16) {
        uint64_t seed[2] = { sim_nccl_now_ns(), (uint64_t)getpid() };
        memcpy(id->internal + 8, seed, 16);
    }
    return ncclSuccess;
}

static ncclResult_t sim_nccl_init_rank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                      const ncclConfig_t *config)
{
    char name[64];
    ncclResult_t r = sim_nccl_id_name(&id, name, sizeof(name));
    if (r == ncclSuccess)
        r = sim_nccl_comm_new(comm, name, nranks, rank, sim_nccl_current_device(), sim_nccl_async_wanted(config));
    return r == ncclSuccess ? sim_nccl_comm_join(comm) : r;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return sim_nccl_init_rank(comm, nranks, id, rank, NULL);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    return sim_nccl_init_rank(comm, nranks, id, rank, config);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids, ncclUniqueId *ids,
                                      ncclConfig_t *config)
{
    if (nids < 1 || !ids)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommInitRankScalable: no unique id");
    return sim_nccl_init_rank(comm, nranks, ids[0], rank, config);
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    ncclUniqueId id;
    char name[64];
    ncclResult_t r = ncclGetUniqueId(&id);
    int made = 0;
    if (!comms)
        return sim_nccl_error(ncclInvalidArgument, "NULL communicator array");
    if (r == ncclSuccess)
        r = sim_nccl_id_name(&id, name, sizeof(name));
    for (; r == ncclSuccess && made < ndev; made++)
        r = sim_nccl_comm_new(&comms[made], name, ndev, made, devlist ? devlist[made] : made, 0);
    for (int i = 0; r == ncclSuccess && i < ndev; i++)
        r = sim_nccl_shm_wait_joined(comms[i]);
    if (r != ncclSuccess) {
        for (int i = 0; i < made && i < ndev; i++) {
            if (comms[i])
                sim_nccl_comm_free(comms[i]);
            comms[i] = NULL;
        }
    }
    return r;
}

/* The ranks meet in the parent's segment to trade colours and keys; each colour
 * gets a segment named after the parent, the split's number and the colour. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    ncclResult_t r = sim_nccl_check_comm(comm);
    if (r != ncclSuccess)
        return r;
    if (!newcomm)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommSplit: NULL new communicator pointer");
    uint64_t k = comm->split_seq++;
    struct sim_nccl_split_slot *s = &comm->shm->split[k % SIM_NCCL_SPLIT_SLOTS];
    s->color[comm->rank] = color;
    s->key[comm->rank] = key;
    atomic_store(&s->tag[comm->rank], k + 1);
    uint64_t deadline = sim_nccl_now_ns() + comm->timeout_ns;
    for (int i = 0; i < comm->nranks; i++) {
        const struct timespec poll = { 0, 100000 };
        while (atomic_load(&s->tag[i]) != k + 1) {
            if (sim_nccl_now_ns() > deadline || sim_nccl_shm_rank_dead(comm, i))
                return sim_nccl_error(ncclRemoteError, "comm %s: split %llu: rank %d never came",
                                     comm->id, (unsigned long long)k, i);
            nanosleep(&poll, NULL);
        }
    }
    *newcomm = NULL;
    if (color == NCCL_SPLIT_NOCOLOR)
        return ncclSuccess;
    int n = 0, me = 0;
    for (int i = 0; i < comm->nranks; i++) {
        if (s->color[i] != color)
            continue;
        n++;
        if (s->key[i] < key || (s->key[i] == key && i < comm->rank))
            me++;
    }
    char name[96];
    snprintf(name, sizeof(name), "%.60s-s%llu-c%d", comm->name, (unsigned long long)k, color);
    /* the child is non-blocking as its config says, else as its parent is */
    int nonblocking = config && config->blocking != NCCL_CONFIG_UNDEF_INT ? sim_nccl_async_wanted(config)
                                                                           : comm->nonblocking;
    r = sim_nccl_comm_new(newcomm, name, n, me, comm->cudev, nonblocking);
    return r == ncclSuccess ? sim_nccl_comm_join(newcomm) : r;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    const struct timespec poll = { 0, 100000 };
    if (!comm)
        return sim_nccl_error(ncclInvalidArgument, "invalid communicator");
    /* Pending operations end by themselves, if need be by timing out. */
    while (atomic_load(&comm->pending) > 0)
        nanosleep(&poll, NULL);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    ncclCommFinalize(comm);
    sim_nccl_comm_free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    atomic_store(&comm->broken, 1);
    return ncclCommDestroy(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    if (!comm || !err)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
    *err = sim_nccl_async_state(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommCount: NULL argument");
    if (sim_nccl_ready(comm, "ncclCommCount") != ncclSuccess)
        return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
    if (sim_nccl_ready(comm, "ncclCommCuDevice") != ncclSuccess)
        return ncclInvalidArgument;
    *device = comm->cudev;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommUserRank: NULL argument");
    if (sim_nccl_ready(comm, "ncclCommUserRank") != ncclSuccess)
        return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

/* Registration only speeds transfers up on real hardware. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    (void)buff;
    (void)size;
    if (!comm || !handle)
        return sim_nccl_error(ncclInvalidArgument, "ncclCommRegister: NULL argument");
    *handle = comm;
    return ncclSuccess;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    (void)handle;
    return comm ? ncclSuccess : sim_nccl_error(ncclInvalidArgument, "invalid communicator");
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t type,
                                      ncclScalarResidence_t residence, ncclComm_t comm)
{
    (void)scalar;
    (void)type;
    (void)residence;
    if (!op || !comm)
        return sim_nccl_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: NULL argument");
    *op = ncclNumOps;
    return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    (void)op;
    return comm ? ncclSuccess : sim_nccl_error(ncclInvalidArgument, "invalid communicator");
}

const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
#define SIM_NCCL_ERROR_TEXT(name, text) case name: return text;
    SIM_NCCL_ERRORS(SIM_NCCL_ERROR_TEXT)
#undef SIM_NCCL_ERROR_TEXT
    default:
        return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return sim_nccl.last_error;
}

/* ---- collectives and point-to-point ---- */

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    (void)op;
    return sim_nccl_coll(SIM_NCCL_ALLREDUCE, count, type, -1, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    return sim_nccl_coll(SIM_NCCL_ALLGATHER, sendcount, type, -1, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    (void)op;
    return sim_nccl_coll(SIM_NCCL_REDUCESCATTER, recvcount, type, -1, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type, int root,
                           ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    return sim_nccl_coll(SIM_NCCL_BROADCAST, count, type, root, comm, stream);
}

/* As NCCL's own: the in-place ncclBroadcast, called through the exported
 * symbol (a preloaded ncclBroadcast is what it reaches). */
ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                       cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, type, root, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    (void)op;
    return sim_nccl_coll(SIM_NCCL_REDUCE, count, type, root, comm, stream);
}

ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    return sim_nccl_coll(SIM_NCCL_ALLTOALL, count, type, -1, comm, stream);
}

ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    return sim_nccl_coll(SIM_NCCL_GATHER, count, type, root, comm, stream);
}

ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff;
    (void)recvbuff;
    return sim_nccl_coll(SIM_NCCL_SCATTER, count, type, root, comm, stream);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)sendbuff;
    return sim_nccl_p2p(1, count, type, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    (void)recvbuff;
    return sim_nccl_p2p(0, count, type, peer, comm, stream);
}

ncclResult_t ncclGroupStart(void)
{
    sim_nccl_group.depth++;
    return ncclSuccess;
}

/* The outermost ncclGroupEnd waits for the communicators made inside the group,
 * then launches the sends and receives, one operation per communicator and stream. */
ncclResult_t ncclGroupEnd(void)
{
    ncclResult_t r = ncclSuccess;
    if (sim_nccl_group.depth == 0)
        return sim_nccl_error(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--sim_nccl_group.depth > 0)
        return ncclSuccess;
    for (int i = 0; i < sim_nccl_group.njoins; i++) {
        ncclResult_t j = sim_nccl_shm_wait_joined(sim_nccl_group.joins[i]);
        if (r == ncclSuccess)
            r = j;
    }
    sim_nccl_group.njoins = 0;
    for (size_t i = 0; i < sim_nccl_group.n; i++) {
        const struct sim_nccl_pending *p = &sim_nccl_group.p2p[i];
        int first = 1;
        for (size_t j = 0; j < i && first; j++)
            first = sim_nccl_group.p2p[j].comm != p->comm || sim_nccl_group.p2p[j].stream != p->stream;
        if (!first)
            continue;
        ncclResult_t l = sim_nccl_check_comm(p->comm);
        if (l == ncclSuccess)
            l = sim_nccl_p2p_launch(p->comm, p->stream, sim_nccl_group.p2p + i, sim_nccl_group.n - i);
        if (r == ncclSuccess)
            r = l;
    }
    sim_nccl_group.n = 0;
    if (sim_nccl_async_pending()) {
        ncclResult_t a = sim_nccl_async_flush(sim_nccl_launch_now);
        if (r == ncclSuccess)
            r = a;
    }
    return r;
}

/* pnccl*: the profiling interface's names for the same functions. */
#define SIM_NCCL_PALIAS(fn) __typeof__(fn) p##fn __attribute__((alias(#fn)));
SIM_NCCL_PALIAS(ncclGetVersion)
SIM_NCCL_PALIAS(ncclGetUniqueId)
SIM_NCCL_PALIAS(ncclCommInitRank)
SIM_NCCL_PALIAS(ncclCommInitRankConfig)
SIM_NCCL_PALIAS(ncclCommInitRankScalable)
SIM_NCCL_PALIAS(ncclCommInitAll)
SIM_NCCL_PALIAS(ncclCommSplit)
SIM_NCCL_PALIAS(ncclCommFinalize)
SIM_NCCL_PALIAS(ncclCommDestroy)
SIM_NCCL_PALIAS(ncclCommAbort)
SIM_NCCL_PALIAS(ncclCommGetAsyncError)
SIM_NCCL_PALIAS(ncclCommCount)
SIM_NCCL_PALIAS(ncclCommCuDevice)
SIM_NCCL_PALIAS(ncclCommUserRank)
SIM_NCCL_PALIAS(ncclCommRegister)
SIM_NCCL_PALIAS(ncclCommDeregister)
SIM_NCCL_PALIAS(ncclRedOpCreatePreMulSum)
SIM_NCCL_PALIAS(ncclRedOpDestroy)
SIM_NCCL_PALIAS(ncclGetErrorString)
SIM_NCCL_PALIAS(ncclGetLastError)
SIM_NCCL_PALIAS(ncclAllReduce)
SIM_NCCL_PALIAS(ncclAllGather)
SIM_NCCL_PALIAS(ncclReduceScatter)
SIM_NCCL_PALIAS(ncclBroadcast)
SIM_NCCL_PALIAS(ncclBcast)
SIM_NCCL_PALIAS(ncclReduce)
SIM_NCCL_PALIAS(ncclAlltoAll)
SIM_NCCL_PALIAS(ncclGather)
SIM_NCCL_PALIAS(ncclScatter)
SIM_NCCL_PALIAS(ncclSend)
SIM_NCCL_PALIAS(ncclRecv)
SIM_NCCL_PALIAS(ncclGroupStart)
SIM_NCCL_PALIAS(ncclGroupEnd)
