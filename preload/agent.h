/* Internal interface of libagent.so, the in-process agent: settings and
 * identity, the per-thread record buffers that hooks append to, the writer
 * thread that turns them into trace chunks, and the fd table of the I/O
 * hooks. Only the hooks themselves are exported (agent.map). */
#ifndef RS_AGENT_H
#define RS_AGENT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "formats/trace.h"

#define RS_EXPORT __attribute__((visibility("default")))
#define RS_TLS __attribute__((tls_model("initial-exec")))
#define RS_LIKELY(x) __builtin_expect(!!(x), 1)
#define RS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- what every hook reads before it records ----
 * Together in one cache line, so that a hook loads one line of the agent's
 * globals rather than five: a 64-byte pwrite in one process, hook over the
 * bare call about 2 ns less (medians of 25-41 interleaved runs, five runs,
 * quiet and busy host alike). Written at start-up, then wait_ticks once per
 * writer pass (as when it had a line of its own) and the rest seldom. */
struct __attribute__((aligned(64))) rs_hot {
    _Atomic int on;           /* recording: cleared when the agent disables itself or has finished */
    _Atomic int started;      /* the writer runs (or could not be started): rs_agent_start */
    int tsc_on;               /* ticks are TSC counts (clock.c) */
    int io_active;            /* the fd table is up: the I/O hooks record (fdtab.c) */
    _Atomic int cancel_seen;  /* the program has called pthread_cancel (hook_io.c) */
    int prefetchw;            /* the CPU has PREFETCHW (ring.c, rs_prefetch_write) */
    uint64_t wait_ticks;      /* wait-sample threshold in ticks (sample.h); UINT64_MAX: none */
    _Atomic uint32_t *fdtab;  /* fd -> file entry (fdtab.c) */
    size_t fdtab_n;           /* entries in fdtab */
};
extern struct rs_hot rs_hot;

/* ---- settings (config.c): read once from the environment ---- */

struct rs_settings {
    int disable, io, cuda, nccl;
    int gpu_timing;          /* 1 in N launches timed; 0: none */
    int sample_hz;
    size_t buffer_bytes;
    unsigned flush_ms;
    int log;                 /* 0 silent, 1 notices, 2 debug */
    char out[PATH_MAX];      /* output root, absolute */
    char exclude[1024];      /* ':'-separated path prefixes */
    char series[128];        /* RINGSIDE_SERIES: the run history's series ("": by the command line) */
    /* RINGSIDE_TEST_CLOCK_SKEW_US, for tests only: the file looks as if
     * written on a host whose realtime clock is off by this much and whose
     * monotonic clock has another origin (see writer.c, test_skew). */
    int test_skew;
    long test_skew_us;
    /* RINGSIDE_TEST_NO_TSC, for tests only: hooks time with CLOCK_MONOTONIC,
     * as on a host whose clocksource is not the TSC (clock.c). */
    int test_no_tsc;
    int test_gpu_raw_start;      /* GPU starts as the start events say (gpu-check's calibration) */
    long wait_us;            /* RINGSIDE_WAIT_US: shortest blocking call with a wait stack */
    long gpu_stack_every;    /* RINGSIDE_GPU_STACK_EVERY: 1 timed launch in N; 0 off */
    /* RINGSIDE_MEM_STACK_MB: an allocation this large or larger always has
     * its stack taken; RINGSIDE_MEM_SAMPLE_MB: a smaller one of b bytes with
     * probability b / (that many MiB) (hook_cuda.c); 0: none */
    long mem_stack_mb, mem_sample_mb;
    /* RINGSIDE_HANG_S: a collective in flight, or a wait, this many seconds
     * makes the writer note the process stuck (writer.c); 0 off */
    long hang_s;
    int own_fds;             /* RINGSIDE_OWN_FDS: the writer keeps its own fd table (writer.c) */
    int metrics_hz;          /* RINGSIDE_METRICS_HZ: node counter samples a second; 0 off (metrics.c) */
    /* RINGSIDE_TEST_SYSFS, for tests only: the node counters are read
     * under this folder instead of / ("" : the real ones; metrics.c). */
    char test_sysfs[PATH_MAX];
};

/* Who this process is; lives while the process runs, goes to Meta. */
struct rs_identity {
    char host[256];
    char job[256];
    int pid, ppid;
    int rank, local_rank, world_size, parent_rank;
    int role;                /* enum rsf_role */
    int argc;
    char **argv;
    uint64_t start_mono, start_real;
};

extern struct rs_settings rs_cfg;
extern struct rs_identity rs_id;

/* Writes out everything recorded and the end mark; recording stops (exit,
 * _exit, a fatal signal, or a part of the program the agent cannot follow). */
void rs_finish(void);
/* The agent starts in two steps. The constructor sets up only what costs
 * next to nothing (settings, signal handlers, this thread's sampling
 * timer): a process that records no event (a shell's helpers, a
 * launcher's) pays no more. The process's first event (rs_reserve) or, in
 * a process that only computes, the sampler's first expiry at a point
 * where the thread holds none of the C library's locks, starts the rest
 * here: the buffers, the fd table and the writer thread; the unwinder
 * loads on a thread of its own a few milliseconds on, or when a stack is
 * first wanted (sample.h, rs_sample_load_unwinder_soon). Returns 0, or -1
 * when it cannot (tracing is off). Waits while another thread starts it. */
int rs_agent_start(void);
/* The same for a first record of kind (enum rs_rec_kind): the unwinder
 * loads at once for GPU, NCCL and NVTX work, whose stacks come soon; for
 * file I/O (a shell reading its script) it waits a few milliseconds
 * (sample.h, rs_sample_load_unwinder_soon), which a short process never
 * reaches. */
int rs_agent_start_by(int kind);

/* Reads settings, identity and the output folder name. */
void rs_config_load(int argc, char **argv);
/* After fork in the child: new pid, role child, parent's rank kept. */
void rs_identity_forked(void);
/* Key/value strings of the effective settings, for Meta (n entries; a
 * "series" entry only when RINGSIDE_SERIES is set). */
int rs_config_pairs(const char **keys, const char **values, int max);

/* ---- notices (log.c): one line on stderr, prefixed "ringside:" ---- */

__attribute__((format(printf, 1, 2))) void rs_notice(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void rs_debug(const char *fmt, ...);

/* ---- cancellation ----
 * Agent code that runs on a program thread (stack unwinding, notices, the
 * exit, exec and fork paths) calls glibc functions that are cancellation
 * points: libunwind reads a pipe to test addresses, a notice writes. A
 * pthread_cancel pending on the thread must not end it in there, with a lock
 * held or a record half made; it acts at the program's next cancellation
 * point instead. */

/* A lock-free table of handles: nslots (a power of two) structs of size
 * stride at base, each with an _Atomic uintptr_t key at key_off (0: free).
 * Returns key's entry, looking at most probes places from its hash; with
 * add, a free place taken for it (kept once taken, for its next use). NULL
 * when key is 0, not there, or the places around its hash are full. */
static inline void *rs_slot(void *base, size_t stride, size_t key_off, uint32_t nslots, uint32_t probes,
                            uintptr_t key, int add)
{
    if (!key)
        return NULL;
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u);
    for (uint32_t i = 0; i < probes; i++) {
        char *e = (char *)base + (size_t)((h + i) & (nslots - 1)) * stride;
        _Atomic uintptr_t *k = (_Atomic uintptr_t *)(void *)(e + key_off);
        uintptr_t v = atomic_load_explicit(k, memory_order_acquire);
        if (v == key)
            return e;
        if (v == 0) {
            if (!add)
                return NULL;
            uintptr_t zero = 0;
            if (atomic_compare_exchange_strong(k, &zero, key) || zero == key)
                return e;
        }
    }
    return NULL;
}

static inline int rs_nocancel(void)
{
    int old = PTHREAD_CANCEL_ENABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return old;
}

static inline void rs_cancel_restore(int old)
{
    if (old == PTHREAD_CANCEL_ENABLE)
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
}

/* ---- time ---- */

static inline uint64_t rs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- hook timestamps (clock.c) ----
 * Hooks record ticks: TSC counts where the kernel's clocksource is the TSC,
 * else CLOCK_MONOTONIC ns; the writer turns them into ns. */

void rs_clock_init(void);

static inline uint64_t rs_ticks(void)
{
#if defined(__x86_64__)
    if (RS_LIKELY(rs_hot.tsc_on))
        return __builtin_ia32_rdtsc();
#endif
    return rs_now();
}

/* Ticks to ns: ns = ns + (t - tick) x ns_per_tick, anchored at a pair read
 * at one drain with the slope measured up to the next, from the pair
 * (base_tick, base_ns). */
struct rs_tick_map {
    uint64_t tick, ns;
    double ns_per_tick;
    uint64_t base_tick, base_ns;
};

void rs_tick_map_start(struct rs_tick_map *m);
/* Reads a new pair into m and the slope since prev (rate 1 without TSC). */
void rs_tick_map_update(struct rs_tick_map *m, struct rs_tick_map *prev);

static inline uint64_t rs_tick_ns(const struct rs_tick_map *m, uint64_t t)
{
    if (!rs_hot.tsc_on)
        return t;
    return m->ns + (uint64_t)(int64_t)((double)(int64_t)(t - m->tick) * m->ns_per_tick);
}

static inline uint64_t rs_tick_dur(const struct rs_tick_map *m, uint64_t d)
{
    return rs_hot.tsc_on ? (uint64_t)((double)d * m->ns_per_tick) : d;
}

/* ---- records (ring.c) ----
 * A hook reserves a record in its thread's current block, fills it and
 * commits it: no lock, no allocation, no system call. When no block is
 * free the record is dropped and counted. */

enum rs_rec_kind {
    RS_REC_IO = 1, RS_REC_OPEN = 2, RS_REC_FILE = 3, RS_REC_IO_LONG = 4,
    /* CUDA and NCCL (hook_cuda.c, hook_nccl.c): 16..47 */
    RS_REC_GPU = 16, RS_REC_SYNC = 17, RS_REC_MEM = 18, RS_REC_COLL = 19, RS_REC_COMM = 20,
    RS_REC_KERNEL = 21, RS_REC_FUNC = 22, RS_REC_DEVICE = 23,
    RS_REC_GRAPH_NODE = 40, RS_REC_GRAPH_EDGE = 41,     /* CUDA graphs (graphs.c) */
    RS_REC_MARK = 42,                                   /* the process's own moments (agent.c) */
    /* node and GPU counters (metrics.c, nvml.c): 24, 25 */
    RS_REC_SERIES = 24, RS_REC_POINT = 25,
    /* CPU samples (sample.h): 48..79. NVTX (nvtx.c): 80 */
    RS_REC_RANGE = 80
};

struct rs_rec_hdr {
    uint16_t size;           /* whole record, multiple of 8 */
    uint8_t kind;            /* enum rs_rec_kind */
    uint8_t op;              /* enum rsf_io_op */
    uint32_t file;           /* file id */
};

/* An I/O call. Times in records are ticks (rs_ticks); the writer converts
 * them. Nearly every call fits the short form (kind IO, 32 bytes: fewer
 * bytes for the hook to store and the writer to read); one that took 2^32
 * ticks or more, or whose result does not fit 32 bits, takes the long form
 * (kind IO_LONG). result: bytes, or -errno. */
struct rs_rec_io {
    struct rs_rec_hdr h;
    uint64_t start;
    int64_t offset;
    uint32_t dur;
    int32_t result;
};

struct rs_rec_io_long {
    struct rs_rec_hdr h;
    uint64_t start, dur;
    int64_t offset, result;
};

/* An open (kind OPEN: also an I/O event) or a file known at start (kind
 * FILE). path is relative to the file dir when dir != 0. */
struct rs_rec_open {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns;
    int64_t result;
    int32_t flags;
    uint32_t dir;
    char path[];
};

/* ---- node and GPU counters (metrics.c samples the node, nvml.c the GPU) ----
 * A series is defined once (its id unique in the process, from 1), then
 * given points; both are records of the calling thread (kinds SERIES,
 * POINT), written to the process's file as trace.fbs's Series and Point,
 * which say what each kind's values are. kind is enum rsf_series_kind, link
 * enum rsf_link_kind; name is copied; device is the GPU ordinal or -1; rate
 * in bytes per second (0: not known). The caller must hold rs_th.guard (the
 * metrics thread holds it for good). rs_series_define returns the id, or 0
 * when the record could not be made (then points for it are not recorded). */
uint32_t rs_series_define(int kind, int link, const char *name, int device, uint64_t rate);
void rs_series_point(uint32_t id, uint64_t ts_ns, uint64_t value);

/* The node sampler (metrics.c): set up at start-up when RINGSIDE_METRICS_HZ
 * is not 0, its thread started when the process's trace file is created
 * (rs_metrics_file_opened, by the writer: only a process with a file takes
 * part in the election, so one without never pays for the thread); in a
 * forked child, a thread of the child's own, not elected, once it has its
 * file; at the end (rs_finish), a last sample by the elected process, or by
 * this one when the node has no sampler any more (waits at most 200 ms). */
void rs_metrics_init(void);
/* Starts a detached thread of the agent's with every signal blocked and
 * the given stack size (util.c). 0, or -1. */
int rs_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack);
/* mkdir -p with mode 0700 (util.c): path is changed while it runs. 0 or -1. */
int rs_mkdirs(char *path);
void rs_metrics_file_opened(void);
void rs_metrics_forked(void);
/* Set once the writer has made this process's trace file (cleared in a
 * forked child): the main thread's run delay after a wait that makes no
 * file by itself (sample.c) waits for one. */
extern _Atomic int rs_have_file;
void rs_metrics_final(void);

struct rs_rec_series {
    struct rs_rec_hdr h;     /* h.op: kind, h.file: id */
    uint64_t rate;
    int32_t device;
    uint8_t link;
    uint8_t pad_[3];
    char name[];             /* NUL-terminated */
};

struct rs_rec_point {
    struct rs_rec_hdr h;     /* h.file: series id */
    uint64_t ts_ns, value;
};

#define RS_BLOCK_SIZE (64u << 10)

/* A block of the pool; blocks are numbered from 1 (0 is "none"). One cache
 * line each, as is a thread's slot: the owner stores to committed on every
 * record, and must not share that line with what the writer or other threads
 * write. */
struct __attribute__((aligned(64))) rs_block {
    _Atomic uint32_t committed; /* bytes published by the owner */
    uint32_t consumed;          /* bytes the writer has encoded (writer only) */
    uint32_t tid;
    _Atomic uint32_t next;      /* list link: index of the next block */
    uint8_t *data;
    uint32_t slot;              /* the owning thread's slot (ring.c) */
};

struct __attribute__((aligned(64))) rs_thread {
    _Atomic(struct rs_block *) cur; /* written by the owner, read by the writer */
    uint32_t tid;
    _Atomic int state;              /* RS_THREAD_FREE / LIVE */
    /* Blocks of this thread handed to the writer and not drained yet: the
     * writer leaves the current block alone while there are any, so that a
     * thread's records reach it in order (NVTX pairs push with pop). */
    _Atomic uint32_t unread;
    /* The wait the thread is in (a copy of rs_th's, for the writer's hang
     * watch): its start in ticks (0: none) and reason. Owner writes. */
    _Atomic int wait_reason;
    _Atomic uint64_t wait_t0;
    /* The start the stuck handler gave the wait when it wrote its first
     * part (sample.c's rs_wait_stuck): the writer asks that wait again a
     * minute later, not at once. Owner writes. */
    _Atomic uint64_t stuck_t0;
};

/* Calls fn(arg, slot) for every live thread slot (the writer's hang watch). */
void rs_ring_threads(void (*fn)(void *arg, struct rs_thread *t), void *arg);

enum { RS_THREAD_FREE = 0, RS_THREAD_LIVE = 1 };

/* What a hook reads of this thread's agent state, in one thread-local
 * struct: a hook finds all of it through one TLS offset (one load from the
 * GOT, where separate variables took one each) in one cache line. A 64-byte
 * pwrite in one process, hook over the bare call: 18.2 -> 16.9 ns (medians
 * of 6 interleaved runs). Only the owning thread (and its signal handler)
 * touches it. */
struct __attribute__((aligned(64))) rs_thread_hot {
    /* Re-entrancy guard: set while the agent itself runs on this thread
     * (and forever on the writer thread), so its own calls are not
     * recorded. A hook must hold it from rs_reserve to rs_commit: the
     * sampling signal handler writes its record only when it finds guard
     * clear. */
    int guard;
    /* A CPU sample the handler had to keep because the thread was inside
     * the agent (frame count, 0: none; the frames are in the sampler's
     * per-thread buffer); hooks write it out after their record
     * (sample.h). */
    int sample_npending;
    /* The write cursor: where the thread's next record goes in the block it
     * holds, the block's end, and the block's committed count; all NULL
     * while it holds none. Here rather than in its rs_thread, so that the
     * hot path reads no more than this struct. */
    uint8_t *wp;
    uint8_t *wend;
    _Atomic uint32_t *wcommitted;
    /* This thread's slot, NULL until its first record. */
    struct rs_thread *self;
    /* Set while a child that shares this thread's memory runs in its place
     * (vfork, clone(CLONE_VM) without a TLS of its own: vfork.c). Such a
     * child sees this very struct and the agent's globals, so every hook
     * then calls the real function and changes no agent state; guard is
     * set with it, which the recording paths already honour. */
    int vchild;
    /* Set while the sampling signal's handler unwinds on this thread: the
     * kernel blocked every signal for the handler (its sa_mask), so the
     * unwinder's own masking around its locks (sigprocmask, two system
     * calls a lock) has nothing to do and is answered without one. */
    int all_masked;
    /* Set while libunwind runs on this thread (unwind.c): its memory
     * checks through a pipe are answered by the agent (rs_unwind_pipe_call). */
    int in_unwind;
    /* The wait this thread is in (RS_WAIT_TIMED: its reason and start in
     * ticks; 0: none), for a signal that ends the process while it waits
     * (rs_wait_interrupted): a stuck rank's last record says where.
     * in_sync: the wait is a blocking CUDA call (hook_cuda.c's SYNC_WAIT),
     * which holds guard only so that the driver's own calls go unrecorded:
     * no record is half written, and that handler may write one. */
    uint8_t wait_reason, in_sync;
    uint8_t pad_[2];
    uint64_t wait_t0;
};
_Static_assert(sizeof(struct rs_thread_hot) == 64, "rs_thread_hot: one cache line");
extern __thread struct rs_thread_hot rs_th RS_TLS;

/* Sets rs_th.guard for a record written by a function that may be called
 * with it set or not; rs_guard_restore puts back what rs_guard_hold
 * returned. The fences keep the compiler from moving the record's stores
 * outside (a signal handler is what the guard is against). */
static inline int rs_guard_hold(void)
{
    int was = rs_th.guard;
    rs_th.guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return was;
}
static inline void rs_guard_restore(int was)
{
    atomic_signal_fence(memory_order_seq_cst);
    rs_th.guard = was;
}

/* Whether this thread is a child that shares the parent's memory (above):
 * hooks that change agent state whatever guard says (the fd table, signal
 * dispositions, exit and exec) return the real call at once when it is. */
static inline int rs_in_vchild(void)
{
    return RS_UNLIKELY(rs_th.vchild);
}

/* The slow path of rs_reserve: a first record on this thread, or a full
 * block. Returns space, or NULL when the record is dropped (counted). */
void *rs_reserve_slow(size_t size, int kind);

/* The CUDA and NCCL records (kinds 16..47) carry CLOCK_MONOTONIC ns (rs_now),
 * not ticks: their host times are compared with GPU times mapped onto that
 * clock, and a launch costs far more than reading it. */

/* GPU work launched (kind GPU): h.op is enum rsf_gpu_kind, h.file the
 * timing pair (0: not timed). name: the kernel's name, text that lives as
 * long as the process (hook_cuda.c's name arena), or NULL. */
struct rs_rec_gpu {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns;   /* the launch call */
    uint64_t stream, bytes;
    const char *name;
    uint32_t anchor;             /* anchor generation of the pair */
    int16_t device;
    uint8_t dir, flags;          /* enum rsf_copy_dir, RSF_GPUF_* */
    uint32_t graph;              /* graph launches: the graph id run (graphs.c) */
    uint32_t ret_ns;             /* the real call's own time (dur_ns has our end event too) */
};

/* A kernel launch with its geometry (kind KERNEL: h.op is RSF_GPU_KERNEL):
 * the GPU record, then the launch as trace.fbs's Launch has it. */
struct rs_rec_kernel {
    struct rs_rec_gpu g;
    struct rsf_launch geom;
};

/* A launched function seen for the first time (kind FUNC): h.file is its
 * id (Launch.func); the attributes as trace.fbs's Function has them, name
 * and id filled by the writer from name_ptr (text that lives as long as the
 * process, or NULL). */
struct rs_rec_func {
    struct rs_rec_hdr h;
    const char *name_ptr;
    struct rsf_function f;
};

/* A device seen for the first time (kind DEVICE): its limits as trace.fbs's
 * Device has them; the writer interns the three texts for name, uuid, pci. */
struct rs_rec_device {
    struct rs_rec_hdr h;
    struct rsf_device d;
    char name[96], uuid[48], pci[24];
};

/* A node captured into a CUDA graph (kind GRAPH_NODE: h.op is enum
 * rsf_graph_node_kind): the node as trace.fbs has it, name and stack filled by
 * the writer (name: text that lives as long as the process, or NULL; the
 * stack from the gpu sample before it). An edge (kind GRAPH_EDGE). */
struct rs_rec_graph_node {
    struct rs_rec_hdr h;
    const char *name;
    struct rsf_graph_node n;
};
/* A note on the process itself (kind MARK): the mark as trace.fbs has it,
 * tid filled by the writer. */
struct rs_rec_mark {
    struct rs_rec_hdr h;
    struct rsf_mark m;
};
struct rs_rec_graph_edge {
    struct rs_rec_hdr h;
    struct rsf_graph_edge e;
    uint32_t pad_;
};

/* A host thread blocked on the GPU (kind SYNC): h.op is enum rsf_sync_kind. */
struct rs_rec_sync {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns, target;
};

/* A memory call (kind MEM): h.op is enum rsf_mem_kind, h.file 1 when a gpu
 * sample record with the call's stack came just before it on this thread.
 * The rest is trace.fbs's MemEvent and MemInfo. */
struct rs_rec_mem {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns, ptr, bytes, stream;
    int32_t device, result;
    uint8_t asked, sampled;
    uint8_t pad_[6];
};

/* An NCCL collective or send/receive (kind COLL): h.op is enum rsf_coll_op,
 * h.file the timing pair (0: not timed). */
struct rs_rec_coll {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns, count, bytes, comm, stream;
    uint32_t seq, anchor;
    int32_t peer;
    uint8_t datatype, redop, group, flags;
    /* the NCCL group the call was made in (0: none; a number of
     * the process's own), and for a non-blocking communicator the moment its
     * work was known to be on the stream (the GPU start is not before it; 0:
     * the call itself put it there) */
    uint64_t group_id, enqueued_ns;
};

/* A communicator's creation or end (kind COMM): h.op is enum rsf_comm_kind. */
struct rs_rec_comm {
    struct rs_rec_hdr h;
    uint64_t start_ns, dur_ns, comm, handle, parent;
    int32_t rank, nranks, device, pad_;
};

/* An NVTX call (kind RANGE, nvtx.c): h.op is enum rs_nvtx_op. Times are
 * ticks. push and pop carry the (thread, domain) nesting level in h.file;
 * start and end the range id. The name is name_ptr, text that lives as long
 * as the process (a registered string), or else the inline text in name[]
 * (NUL-terminated; none for pop and end). domain: the domain's name, text
 * that lives as long as the process, NULL for the default domain. */
enum rs_nvtx_op { RS_NVTX_PUSH, RS_NVTX_POP, RS_NVTX_START, RS_NVTX_END, RS_NVTX_MARK };

struct rs_rec_range {
    struct rs_rec_hdr h;
    uint64_t ts, id;
    const char *domain;
    const char *name_ptr;
    uint32_t category, pad_;
    char name[];
};

#ifdef RS_RING_CHECK
/* A checking build (-DRS_RING_CHECK; make test-build makes one in
 * build/check for test_agent_guard): a record reserved without
 * rs_th.guard, which a CPU sample's handler could then write into, says
 * which record and where from on stderr, and aborts. */
void rs_ring_check_failed(int kind) __attribute__((noinline, noreturn));
#endif

/* Space for a record of size bytes (multiple of 8) in this thread's buffer,
 * or NULL when it must be dropped (counted under kind). Inline: this is
 * every hook's hot path. Leaves errno as it was. */
static inline void *rs_reserve(size_t size, int kind)
{
    uint8_t *p = rs_th.wp;
#ifdef RS_RING_CHECK
    if (!rs_th.guard)
        rs_ring_check_failed(kind);
#endif
    /* The first event of the process starts the writer (a file's name,
     * which the constructor records for the files a process inherits, is
     * no event: a process that only has those writes nothing). */
    if (RS_UNLIKELY(!atomic_load_explicit(&rs_hot.started, memory_order_relaxed)) && kind != RS_REC_FILE) {
        rs_agent_start_by(kind);
        p = rs_th.wp;
    }
    if (RS_LIKELY((size_t)(rs_th.wend - p) >= size))
        return p;
    return rs_reserve_slow(size, kind);
}

/* How far past its last record a thread asks for its block's memory to be
 * made ready for writing: a prefetch, which never faults, even past the
 * block's end (a thread that takes a new block prefetches its start). The
 * blocks come back from the writer thread, which read them on another core,
 * and a record's store that misses the cache holds up the next locked
 * instruction, as in the system call that follows an I/O hook. A 64-byte
 * pwrite in one process on a busy host: hook over the bare call 65.4 ns ->
 * 49.5 ns (medians of 25 interleaved runs; 256 to 1024 bytes ahead alike,
 * 2048 and more worse); on a quiet host, the same 30-32 ns as without. */
#define RS_PREFETCH_AHEAD 1024

/* Asks for the cache line at p to be owned by this core, ready for a store
 * (never faults). PREFETCHW takes the line from the writer's core at once,
 * where an ordinary prefetch only reads it and the store still has to ask
 * for it: a 64-byte pwrite in one process, hook over the bare call 20.1 ->
 * 18.3 ns (medians of 6 interleaved runs, no overlap). A CPU without it
 * may fault on it (rs_hot.prefetchw is CPUID's word): those get the other. */
static inline void rs_prefetch_write(const void *p)
{
#if defined(__x86_64__)
    if (RS_LIKELY(rs_hot.prefetchw)) {
        __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
        return;
    }
#endif
    __builtin_prefetch(p, 1, 3);
}

/* Publishes this thread's records up to end (in its block) to the writer. */
static inline void rs_publish(uint8_t *end)
{
    atomic_store_explicit(rs_th.wcommitted, (uint32_t)(end - (rs_th.wend - RS_BLOCK_SIZE)),
                          memory_order_release);
    rs_prefetch_write((const void *)((uintptr_t)end + RS_PREFETCH_AHEAD));
}

/* Publishes the record last reserved on this thread. */
static inline void rs_commit(size_t size)
{
    uint8_t *end = rs_th.wp + size;
    rs_th.wp = end;
    rs_publish(end);
}

/* Sets up the block pool of rs_cfg.buffer_bytes. Returns 0, or -1 (no memory). */
int rs_ring_init(void);
/* In a forked child: forget the parent's records and threads. */
void rs_ring_reset(void);

/* Writer's side: calls fn for every committed, not yet consumed record, in
 * order per thread; blocks that are full go back to the pool afterwards. */
typedef void (*rs_rec_fn)(const struct rs_rec_hdr *rec, uint32_t tid, void *arg);
void rs_ring_drain(rs_rec_fn fn, void *arg);
/* Records dropped so far: all, I/O only, GPU (GPU, SYNC, MEM) and NCCL
 * (COLL, COMM) only. */
uint64_t rs_ring_dropped(void);
uint64_t rs_ring_dropped_io(void);
/* Sampler records (kinds 48..79) dropped for want of room. */
uint64_t rs_ring_dropped_samples(void);
uint64_t rs_ring_dropped_gpu(void);
uint64_t rs_ring_dropped_nccl(void);
/* NVTX records (kind RANGE) dropped for want of room, and the ranges the
 * NVTX callbacks did not record (nesting too deep, too many domains on a
 * thread: nvtx.c) */
uint64_t rs_ring_dropped_ranges(void);
void rs_ranges_lost(uint64_t n);
/* Futex word the writer sleeps on. A hook that fills a block wakes it once
 * 8 full blocks wait, fewer in a small pool (or none is free; ring.c,
 * rs_ring_init): a wake-up per block cost the program's threads more than
 * the writer's batches gain. */
extern _Atomic uint32_t rs_writer_wake;
extern _Atomic int rs_writer_sleeping;
void rs_writer_kick(void);

/* ---- writer thread (writer.c) ---- */

/* Sets name=value in the environment the program's children inherit,
 * without allocating (util.c): for the constructor alone, before the
 * program runs. Returns 0, or -1 as setenv does. */
int rs_env_put(const char *name, const char *value);
/* Grows a zero-filled array (util.c; writer thread only: it allocates) to
 * hold at least n elements of elem bytes, doubling from 64. Returns 0, or -1
 * when out of memory (the array is unchanged). */
int rs_grow(void **arr, uint32_t *cap, uint32_t n, size_t elem);

/* Starts the writer thread. Returns 0 or -1. */
int rs_writer_start(void);
/* Asks the writer to write out everything recorded so far and waits for it
 * (up to a few seconds). final: also write the end chunk (exit, exec). Safe
 * in a signal handler; returns at once on the writer thread itself. */
void rs_writer_flush(int final);
/* Before dlclose: waits until the writer has taken every record made so
 * far and polled the module map (what explains the samples in an object
 * about to go), not for a file write or GPU times. The writer never waits
 * for the loader's lock, which the caller may hold (a library constructor
 * or destructor calling dlclose). Returns at once on the writer thread. */
void rs_writer_sync_modules(void);
/* The real dlclose, without the hook's sync (the agent's own handles). */
int rs_dlclose_quiet(void *handle);
/* After a final flush, recording goes on in the same file (an exec
 * failed): the chunks that follow are not ended. */
void rs_writer_resume(void);
/* The final flush before an exec. A forked child that has not exec'd
 * before (the launcher's stretch between fork and exec) leaves no file for
 * CPU samples alone. */
void rs_writer_exec_flush(void);
/* Set once SIGTERM or SIGINT is ending the process (agent.c): the thread
 * the signal interrupted may hold the loader's lock (in dlopen or dlsym,
 * in a constructor), and waits in the handler for the last flush, so the
 * writer must not take that lock (a lookup by name, a dlopen) from then
 * on, or both wait 5 s and the trace is lost. */
extern _Atomic int rs_dying;
/* In a forked child: start over with no file and a new writer thread. */
void rs_writer_forked(void);
/* Writer thread identity, so signal code can tell. */
int rs_writer_is_self(void);
/* Before the writer first calls the CUDA driver, whose fds are in the
 * program's table only: makes the writer a thread that shares the program's
 * fd table, if it is not one. Program threads only. Returns 0, or -1 (the
 * writer could not be moved; it must not call the driver). */
int rs_writer_share(void);

/* ---- GPU timing, the writer's side (gputime.c) ---- */

/* The GPU start and end of a timing pair, on the host clock (ns). Returns 1
 * (times set, pair back in the pool), 0 (not done yet: ask again later) or
 * -1 (never: times 0, pair back in the pool). Writer thread only. */
int rs_gpu_times(uint32_t pair, uint32_t anchor, uint64_t *start, uint64_t *end);
/* Once per writer pass: renews the anchor event (about every second) and
 * grows the pool when it runs low. final: the process is ending; after
 * rs_gpu_closed() the driver is not called any more. Writer thread only. */
void rs_gpu_tick(void);
/* 1 when pending pairs must be settled now (the process is ending, or the
 * driver is gone): wait a bounded time for them, then give up. */
int rs_gpu_closing(void);
/* After the writer settled what it could at the end: no more driver calls. */
void rs_gpu_closed(void);
/* In a forked child: the parent's CUDA state is not the child's. */
void rs_gpu_forked(void);
/* CUDA driver and NCCL versions (0: unknown), for Meta: each learnt on a
 * program thread when the program first calls the library (the writer asks
 * the loader nothing). */
int rs_cuda_version(void);
int rs_nccl_version(void);

/* ---- NVTX (nvtx.c) ---- */

/* At start, on a process the agent traces: points NVTX_INJECTION64_PATH at
 * this library unless it names another one (then a notice: NVTX ranges are
 * not recorded), and sets up the arena of domain and registered names. */
void rs_nvtx_init(void);
/* Whether this copy of the agent is in the program's global symbol scope
 * (LD_PRELOAD, /etc/ld.so.preload), i.e. its hooks are the program's: not
 * when NVTX dlopen'ed it in a process that does not preload it. */
int rs_agent_in_scope(void);

/* ---- files (fdtab.c) ---- */

/* An fd's entry in the table: 0 (not a recorded file), RS_FILE_EXCLUDED, or
 * a file id, with RS_FILE_PLAIN added when the fd is a block device or a
 * regular file on a local file system: a call on it never waits
 * indefinitely (hook_io.c uses that). File ids stay below RS_FILE_PLAIN. */
#define RS_FILE_EXCLUDED UINT32_MAX
#define RS_FILE_PLAIN 0x80000000u

/* fd's entry as it stands (0 for fds outside the table). */
static inline uint32_t rs_fd_entry(int fd)
{
    if (RS_UNLIKELY(fd < 0 || (size_t)fd >= rs_hot.fdtab_n))
        return 0;
    return atomic_load_explicit(&rs_hot.fdtab[fd], memory_order_relaxed);
}

/* File id of fd if its I/O is recorded, else 0. */
static inline uint32_t rs_fd_file(int fd)
{
    uint32_t f = rs_fd_entry(fd);
    return f == RS_FILE_EXCLUDED ? 0 : f & ~RS_FILE_PLAIN;
}
/* Sets fd's entry (a value as rs_fd_entry returns). Does nothing on a
 * thread with its own fd table (rs_own_fds): its numbers are not the
 * program's. */
void rs_fd_set(int fd, uint32_t entry);
/* Set on the writer thread while its fd table is its own (writer.c). */
extern __thread int rs_own_fds RS_TLS;
/* The current directory changed: remember it for relative paths. */
void rs_cwd_changed(void);
/* Records an opened path for fd (result of an open call), returns the file
 * id assigned (0 if fd is not tracked). dirfd as for openat. */
uint32_t rs_file_opened(int op, int dirfd, const char *path, int flags, int fd,
                        uint64_t t0, uint64_t t1);
/* Why a read or write on fd waited: enum rsf_wait_reason PIPE, SOCKET, or
 * FILE for anything else. A system call: only for a call that waited. */
int rs_fd_reason(int fd);
/* Whether path (absolute) lies under one of the RINGSIDE_IO_EXCLUDE prefixes. */
int rs_io_excluded(const char *path);
/* Looks up the real functions a vfork child calls (close, dup2, chdir...)
 * now, so that such a child never does (hook_io.c). */
void rs_io_resolve_early(void);
/* At start-up: file I/O is to be recorded (rs_hot.io_active); nothing
 * else is done before the agent starts (rs_fdtab_start). */
void rs_fdtab_init(void);
/* At the agent's start: sets up the fd table and records the files already
 * open (the ones a process inherited, and any it opened before its first
 * event). Once a process (a forked child keeps its parent's). 0 or -1. */
int rs_fdtab_start(void);
/* Before the agent has started: fd has no entry, and a call on it would be
 * recorded if it names a file the I/O hooks record; then the agent starts
 * (its table then names fd) and fd's entry is returned, else 0. Each fd is
 * looked at once until it is closed or made anew (rs_fd_set). */
uint32_t rs_fd_dormant(int fd);
/* In a forked child (its writer started afresh): names the tracked files it
 * inherited again, under the same ids, for its own trace file. */
void rs_fdtab_forked(void);
/* Whether fd is the agent's own trace file (the program may not close it). */
int rs_writer_owns_fd(int fd);
/* The program is about to make fd (dup2/dup3 target) name another file: if
 * it is the trace file's number, the trace file moves to another number
 * first (or tracing stops when none is free). Returns 1 when it moved. */
int rs_writer_fd_taken(int fd);
/* The trace file's fd, -1 while there is none. */
int rs_writer_fd(void);
/* Whether this process has written a chunk to a trace file of its own
 * (any thread may ask: a hint, read without a lock). */
int rs_writer_has_file(void);

/* libunwind checks that an address can be read by writing one byte from
 * it into a pipe of its own. That pipe would sit in the program's fd
 * table, where the program may close its numbers or dup2 over them (a
 * shell does both), and the byte would land in the program's files. While
 * libunwind runs (rs_th.in_unwind), its pipe2 gets these two numbers,
 * which no file has, and a read or write on them comes here: system call
 * nr (SYS_read, SYS_write) on fd with buffer buf and length n; returns
 * what the call would (a read: empty; a write: n when buf can be read),
 * or -errno. */
#define RS_UNW_PIPE_READ (-2)
#define RS_UNW_PIPE_WRITE (-3)
long rs_unwind_pipe_call(long nr, long fd, long buf, long n);

/* The agent's own file as the loader named it (LD_PRELOAD's path, maybe
 * relative), from the loader's list of objects: no symbol scan (dladdr's).
 * NULL when not found. */
const char *rs_self_path(void);

/* Resolves the next definition of a symbol (the real function). */
void *rs_resolve(const char *name);

#define RS_REAL_DECL(name) static __typeof__(name) *real_##name
#define RS_REAL(name)                                   \
    ({                                                  \
        if (RS_UNLIKELY(real_##name == NULL))           \
            real_##name = rs_resolve(#name);            \
        real_##name;                                    \
    })

/* ---- where work started (gpustart.c; the writer thread's) ---- */

/* e's start: e->gpu_start_ns is its start event's time, e->gpu_end_ns its
 * end; ret_ns the real launch call's own time; prev_end the end of the work
 * settled before it on its stream (0: none known). */
uint64_t rs_gpu_work_start(const struct rsf_gpu_event *e, uint32_t ret_ns, uint64_t prev_end);
/* The end of the last work settled on stream (the agent's stream id), to
 * read and to set; 0 when none. */
uint64_t *rs_gpu_stream_end(uint64_t stream);

#endif
