/* The writer thread: drains the per-thread buffers, turns records into
 * trace chunks (strings and file names defined once, events as struct
 * vectors), compresses each chunk into one LZ4 frame and appends it to this
 * process's file, at least every RINGSIDE_FLUSH_MS/2 and whenever asked
 * (exit, exec, fatal signals). Any failure to write turns tracing off with
 * one notice; the file keeps every whole frame written before. */
#include "preload/agent.h"
#include "preload/rangew.h"
#include "preload/sample.h"
#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IO_CAP 21845u            /* about 1 MiB of events per chunk */
#define SETTLE_NS 2000000000u    /* at the end, how long to wait for GPU times */
#define STR_TABLE_MIN 1024u

struct held_gpu {
    struct rsf_gpu_event e;
    struct rsf_launch geom;
    uint32_t pair, anchor;
    uint32_t stack;              /* gpu sample's stack, weighted once timed */
    uint32_t ret_ns;             /* the real launch call's own time */
};

/* The stack of the last gpu sample record per thread, for the GPU record
 * that follows it on that thread. */
#define GPU_STACK_SLOTS 64
struct gpu_stack {
    uint32_t tid, stack;
};
static struct gpu_stack gpu_stacks[GPU_STACK_SLOTS];

static uint32_t take_gpu_stack(uint32_t tid)
{
    struct gpu_stack *e = &gpu_stacks[tid % GPU_STACK_SLOTS];
    uint32_t st = e->tid == tid ? e->stack : 0;
    e->tid = e->stack = 0;
    return st;
}
struct held_coll {
    struct rsf_coll_event e;
    uint32_t pair, anchor;
    uint64_t group;          /* its NCCL group (0: none) */
    uint64_t enqueued_ns;    /* its GPU start is not before this (0: no bound) */
    int copied;              /* written in flight by the hang watch */
};

/* State that lives only while the process runs: what has been defined in
 * this file so far, and the chunk being assembled. */
struct wstate {
    int fd;                      /* trace file, -1 until the first chunk */
    char path[PATH_MAX];
    uint32_t seq;
    uint64_t recorded;           /* events written (or about to be) */
    int broken;                  /* writing failed: drop everything */
    off_t good_size;             /* file size after the last whole frame */
    int touched;                 /* an event other than closing an inherited fd */
    int ended;                   /* the end chunk is written: what follows is ended too */

    /* strings: id -> text, and a hash set to find ids */
    char **str;                  /* str[id], id from 1 */
    uint32_t nstr, str_cap;
    uint32_t *hash;              /* slots hold ids, 0 empty */
    uint32_t hash_cap;
    uint32_t chunk_str_base;     /* first id defined in the current chunk */

    uint32_t *file_path;         /* file id -> string id */
    uint32_t file_cap;
    uint32_t *tids;              /* threads already named in this file */
    uint32_t ntids, tid_cap;

    struct rsf_io_event *io;
    uint32_t nio;
    struct rsf_file_ref *files;
    uint32_t nfiles, files_cap;
    struct rsf_thread_ref *threads;
    uint32_t nthreads, threads_cap;

    /* CUDA and NCCL events of the chunk being assembled */
    struct rsf_gpu_event *gpu;
    uint32_t ngpu, gpu_cap;
    struct rsf_launch *launches; /* gpu[i]'s geometry; any_launch: some is not all zero */
    uint32_t launches_cap;
    int any_launch;
    struct rsf_function *functions;
    uint32_t nfunctions, functions_cap;
    struct rsf_device *devices;
    uint32_t ndevices, devices_cap;
    struct rsf_series *series;
    uint32_t nseries, series_cap;
    struct rsf_point *points;
    uint32_t npoints, points_cap;
    struct rsf_graph_node *gnodes;       /* CUDA graphs' captured nodes and edges */
    uint32_t ngnodes, gnodes_cap;
    struct rsf_graph_edge *gedges;
    uint32_t ngedges, gedges_cap;
    struct rsf_mark *marks;             /* fatal signals, stuck calls (agent.c) */
    uint32_t nmarks, marks_cap;
    struct rsf_sync_event *syncs;
    uint32_t nsyncs, syncs_cap;
    struct rsf_coll_event *colls;
    uint32_t ncolls, colls_cap;
    struct rsf_coll_group *coll_groups; /* colls[i]'s group; any_group: some is not 0 */
    uint32_t coll_groups_cap;
    int any_group;
    struct rsf_comm_event *comms;
    uint32_t ncomms, comms_cap;
    struct rsf_mem_event *mems;
    uint32_t nmems, mems_cap;
    struct rsf_mem_info *mem_info; /* mems[i]'s */
    uint32_t mem_info_cap;
    /* events whose GPU times are not known yet (timing pair pending) */
    struct held_gpu *held_gpu;
    uint32_t nheld_gpu, held_gpu_cap;
    struct held_coll *held_coll;
    uint32_t nheld_coll, held_coll_cap;

    uint8_t *enc;                /* encoded chunk (8-byte aligned) */
    size_t enc_cap;
    uint8_t *frame;
    size_t frame_cap;
    LZ4F_cctx *cctx;
    uint64_t last_emit;
    struct rs_tick_map map;      /* for the records being drained */
};

static struct wstate w;
static pthread_t writer_thread;
static _Atomic int writer_running;
/* Flush requests: the count of requests << 32, | 1 while one asks for the
 * end chunk. One word, so that the writer takes a request and whether it
 * is final at once: with two, a pass could serve the request of an exit
 * (done_seq) before its final flag was set, and the process end without
 * its end mark. */
#define REQ_ONE (1ull << 32)
#define REQ_FINAL 1ull
static _Atomic uint64_t req_word;
static _Atomic uint32_t done_seq;
/* rs_writer_sync_modules' requests, and the last one a pass has served
 * (futex word). */
static _Atomic uint32_t mod_req, mod_done;
static _Atomic int resumed;        /* an exec failed: recording goes on after the end chunk */
static int fork_image;             /* a forked child's image, not exec'd since */
static _Atomic int at_exec;        /* its final flush before an exec is under way */

/* ---- the writer's own fd table ----
 * While more than one thread shares a process's fd table, the kernel takes
 * and drops a reference on the file in every read and write (fdget), which
 * it skips while the table has one user; the agent's writer thread would
 * put that cost (about 20 ns) on every call of a single-threaded program.
 * So the writer starts by giving itself its own copy of the table (unshare
 * CLONE_FILES) and closing every fd in that copy, so that it holds nothing
 * of the program's open (a pipe the program closes reads as closed at once);
 * 0, 1 and 2 of its copy are /dev/null, and its notices reach the program's
 * stderr through a pidfd (log.c). The trace file then lives where the
 * program's fd games cannot reach it. The CUDA driver's fds are in the
 * program's table only, so before the writer first calls the driver it is
 * replaced by a thread that shares the table (rs_writer_share), which opens
 * the trace file again. RINGSIDE_OWN_FDS=0: the writer always shares. */
static _Atomic int table_own;      /* the running writer has its own fd table */
static _Atomic int stop_req;       /* rs_writer_share: the writer is to end */
static _Atomic uint32_t started;   /* the writer set its table up (futex word) */
_Atomic int rs_have_file;
static _Atomic uint32_t ended;     /* a writer left at stop_req (futex word) */
static int reopen;                 /* the trace file is to be opened again */
static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;

int rs_writer_owns_fd(int fd)
{
    return fd >= 0 && fd == w.fd && !atomic_load_explicit(&table_own, memory_order_relaxed);
}

int rs_writer_fd(void)
{
    return atomic_load_explicit(&table_own, memory_order_relaxed) ? -1 : w.fd;
}

int rs_writer_has_file(void)
{
    return __atomic_load_n(&w.seq, __ATOMIC_RELAXED) > 0;
}

/* Held while the trace fd is written or renumbered, so a write never lands
 * on a number the program has just made name its own file. */
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER;

int rs_writer_fd_taken(int fd)
{
    /* A vfork child shares our memory but not our fd table: it must not
     * renumber the parent's trace file. Its copy goes at exec (O_CLOEXEC). */
    if (getpid() != rs_id.pid || atomic_load(&table_own))
        return 0;
    pthread_mutex_lock(&fd_lock);
    int moved = 0;
    if (fd >= 0 && fd == w.fd) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
        if (nfd < 0) {
            rs_notice("the program reuses fd %d of %s and no other fd is free: %s; tracing is off",
                      fd, w.path, strerror(errno));
            w.broken = 1;
            atomic_store(&rs_hot.on, 0);
            w.fd = -1;
        } else {
            w.fd = nfd;
            moved = 1;
        }
    }
    pthread_mutex_unlock(&fd_lock);
    return moved;
}

int rs_writer_is_self(void)
{
    return atomic_load(&writer_running) && pthread_equal(pthread_self(), writer_thread);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t val, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    /* a program thread waiting for a flush: the agent's wait, not the
     * program's (the syscall hook, hook_wait.c, leaves it alone) */
    int guard = rs_th.guard;
    rs_th.guard = 1;
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
    rs_th.guard = guard;
}

static void futex_wake_all(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The id of string s, defining it in the current chunk if new; 0 when out
 * of memory. */
static uint32_t intern(const char *s)
{
    if (w.nstr + 1 >= w.hash_cap / 2) {
        uint32_t cap = w.hash_cap ? w.hash_cap * 2 : STR_TABLE_MIN;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h)
            return 0;
        for (uint32_t id = 1; id <= w.nstr; id++) {
            uint32_t i = hash_str(w.str[id]) & (cap - 1);
            while (h[i])
                i = (i + 1) & (cap - 1);
            h[i] = id;
        }
        free(w.hash);
        w.hash = h;
        w.hash_cap = cap;
    }
    uint32_t i = hash_str(s) & (w.hash_cap - 1);
    for (; w.hash[i]; i = (i + 1) & (w.hash_cap - 1))
        if (strcmp(w.str[w.hash[i]], s) == 0)
            return w.hash[i];
    char *copy = strdup(s);
    if (!copy || rs_grow((void **)&w.str, &w.str_cap, w.nstr + 2, sizeof *w.str)) {
        free(copy);
        return 0;
    }
    uint32_t id = ++w.nstr;
    w.str[id] = copy;
    w.hash[i] = id;
    return id;
}

static void name_thread(uint32_t tid)
{
    for (uint32_t i = 0; i < w.ntids; i++)
        if (w.tids[i] == tid)
            return;
    if (rs_grow((void **)&w.tids, &w.tid_cap, w.ntids + 1, sizeof *w.tids) ||
        rs_grow((void **)&w.threads, &w.threads_cap, w.nthreads + 1, sizeof *w.threads))
        return;
    w.tids[w.ntids++] = tid;
    char p[64], name[64] = "";
    snprintf(p, sizeof p, "/proc/self/task/%u/comm", tid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof name - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        char *nl = strchr(name, '\n');
        if (nl)
            *nl = 0;
    }
    w.threads[w.nthreads++] = (struct rsf_thread_ref){ tid, name[0] ? intern(name) : 0 };
}

static int open_file(void)
{
    char dir[PATH_MAX], base[PATH_MAX];
    int n = snprintf(dir, sizeof dir, "%s/%s", rs_cfg.out, rs_id.job);
    if (n < 0 || (size_t)n >= sizeof dir - 64) {
        rs_notice("output folder name too long: %s; tracing is off", rs_cfg.out);
        return -1;
    }
    if (rs_mkdirs(dir) != 0) {
        rs_notice("cannot create %s: %s; tracing is off", dir, strerror(errno));
        return -1;
    }
    /* dir leaves room for the file name; the host is at most 255 bytes. */
    if (rs_id.role == RSF_ROLE_RANK)
        n = snprintf(base, sizeof base, "%.3800s/rank-%d.%.200s.%d", dir, rs_id.rank, rs_id.host, rs_id.pid);
    else
        n = snprintf(base, sizeof base, "%.3800s/proc.%.200s.%d", dir, rs_id.host, rs_id.pid);
    /* Never overwrite: an exec'd image with the same pid takes the next name. */
    for (int i = 0; i < 100; i++) {
        if (i == 0)
            snprintf(w.path, sizeof w.path, "%.4060s.trace.lz4", base);
        else
            snprintf(w.path, sizeof w.path, "%.4060s.%d.trace.lz4", base, i);
        w.fd = open(w.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (w.fd >= 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    rs_notice("cannot create %s: %s; tracing is off", w.path, strerror(errno));
    return -1;
}

/* Stops tracing after a write error, keeping the whole frames written. */
static void give_up(const char *what, int err)
{
    rs_notice("%s %s: %s; tracing is off", what, w.path, strerror(err));
    pthread_mutex_lock(&fd_lock);
    if (w.fd >= 0 && ftruncate(w.fd, w.good_size) != 0)
        rs_debug("cannot trim %s: %s", w.path, strerror(errno));
    pthread_mutex_unlock(&fd_lock);
    w.broken = 1;
    atomic_store(&rs_hot.on, 0);
}

static int write_all(const uint8_t *p, size_t n)
{
    int err = 0;
    pthread_mutex_lock(&fd_lock);
    while (n) {
        ssize_t r = w.fd >= 0 ? write(w.fd, p, n) : -1;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            err = w.fd < 0 ? EBADF : r < 0 ? errno : ENOSPC;
            break;
        }
        p += r;
        n -= (size_t)r;
    }
    pthread_mutex_unlock(&fd_lock);
    return err;
}

/* RINGSIDE_TEST_CLOCK_SKEW_US (tests only): every monotonic time in the
 * chunk moves by a large fixed offset and every realtime by the setting, as
 * if the file came from another host with its own clocks. Only the writer's
 * own buffers are touched, just before they are encoded. */
#define RS_TEST_MONO_SHIFT 1000000000000ull /* 1000 s */
static void test_skew(struct rsf_chunk *c)
{
    uint64_t mono = RS_TEST_MONO_SHIFT;
    uint64_t real = (uint64_t)(rs_cfg.test_skew_us * 1000);
    if (c->meta) {
        struct rsf_meta *m = (struct rsf_meta *)c->meta;
        m->start.mono_ns += mono;
        m->start.real_ns += real;
    }
    struct rsf_clock_pair *k = (struct rsf_clock_pair *)c->clocks;
    for (uint32_t i = 0; i < c->nclocks; i++) {
        k[i].mono_ns += mono;
        k[i].real_ns += real;
    }
#define RS_SHIFT(type, arr, n, field) \
    for (uint32_t i = 0; i < (n); i++) \
        if (((type *)(arr))[i].field) \
            ((type *)(arr))[i].field += mono
    RS_SHIFT(struct rsf_io_event, c->io, c->nio, start_ns);
    RS_SHIFT(struct rsf_gpu_event, c->gpu, c->ngpu, launch_ns);
    RS_SHIFT(struct rsf_gpu_event, c->gpu, c->ngpu, gpu_start_ns);
    RS_SHIFT(struct rsf_gpu_event, c->gpu, c->ngpu, gpu_end_ns);
    RS_SHIFT(struct rsf_sync_event, c->syncs, c->nsyncs, start_ns);
    RS_SHIFT(struct rsf_coll_event, c->colls, c->ncolls, launch_ns);
    RS_SHIFT(struct rsf_coll_event, c->colls, c->ncolls, gpu_start_ns);
    RS_SHIFT(struct rsf_coll_event, c->colls, c->ncolls, gpu_end_ns);
    RS_SHIFT(struct rsf_comm_event, c->comms, c->ncomms, start_ns);
    RS_SHIFT(struct rsf_mem_event, c->mems, c->nmems, start_ns);
    RS_SHIFT(struct rsf_sample, c->samples, c->nsamples, ts_ns);
    RS_SHIFT(struct rsf_module, c->modules, c->nmodules, ts_ns);
    RS_SHIFT(struct rsf_range, c->ranges, c->nranges, start_ns);
    RS_SHIFT(struct rsf_range, c->ranges, c->nranges, end_ns);
    RS_SHIFT(struct rsf_point, c->points, c->npoints, ts_ns);
#undef RS_SHIFT
}

static void make_room(void);

/* Writes the chunk assembled so far (and the end mark if end). */
static void emit(int end)
{
    if (w.broken)
        goto reset;
    if (end)
        w.recorded += rs_rangew_close_all(make_room);
    int events = w.nio || w.ngpu || w.nsyncs || w.ncolls || w.ncomms || w.nmems || rs_rangew_count() ||
                 w.nfunctions || w.ndevices || w.nseries || w.npoints || w.ngnodes || w.ngedges || w.nmarks;
    int empty = !events && !rs_stackw_any() && !w.nfiles && !w.nthreads && w.nstr + 1 == w.chunk_str_base;
    if (empty && w.seq > 0 && (!end || w.ended))
        return;
    /* After the end chunk (exit, a fatal signal), records other threads made
     * before recording stopped are written as ended too: a chunk without
     * the end mark after it would read as a process cut short. */
    end |= w.ended;
    /* No file until there is an event: a process that only inherited some
     * fds, or only closed them (a shell, a launcher's child between fork and
     * exec), leaves nothing behind. What is assembled waits for the first
     * event; closes that fill a whole chunk before it are let go. */
    int gpu_events = w.ngpu || w.nsyncs || w.ncolls || w.ncomms || w.nmems || w.npoints;
    /* Between fork and exec a child runs its launcher's preparation (Open
     * MPI's closes every fd up to the limit: milliseconds of CPU): an image
     * that ends so with CPU samples alone leaves no file either; the program
     * it execs gets its own. */
    int samples = atomic_load(&at_exec) ? rs_stackw_pending_but_cpu() : rs_stackw_pending();
    if (w.fd < 0 && !w.touched && !gpu_events && !samples && !rs_ring_dropped()) {
        if (w.nio == IO_CAP)
            w.nio = 0;
        if (rs_stackw_full())
            rs_stackw_drop_waits();
        return;
    }
    if (w.fd < 0) {
        if (open_file() != 0) {
            w.broken = 1;
            atomic_store(&rs_hot.on, 0);
            goto reset;
        }
        /* the node sampler's thread, for a process with a file; not at the
         * end, where it could not sample and, made from here while the
         * program's thread is stopped in a signal handler, could wait on a
         * lock that thread holds */
        if (!end)
            rs_metrics_file_opened();
        atomic_store(&rs_have_file, 1);
    }

    /* Meta goes in the first chunk only. Not built for the others: asking
     * for the NCCL version where NCCL is not loaded is a dlopen that
     * searches the library path and maps ld.so.cache, and the unmap
     * interrupts the program's threads on other CPUs to flush their TLBs
     * (a 64-byte pwrite loop: about 3 ns a call when it ran every chunk). */
    const char *keys[16], *values[16];
    struct rsf_meta meta;
    if (w.seq == 0) {
        meta = (struct rsf_meta){
            .format_version = RSF_FORMAT_VERSION, .host = rs_id.host, .pid = rs_id.pid,
            .ppid = rs_id.ppid, .rank = rs_id.rank, .local_rank = rs_id.local_rank,
            .world_size = rs_id.world_size, .parent_rank = rs_id.parent_rank,
            .role = (uint8_t)rs_id.role, .job = rs_id.job, .argv = (const char *const *)rs_id.argv,
            .argc = (uint32_t)rs_id.argc,
            .start = { rs_id.start_mono, rs_id.start_real }, .agent_version = RINGSIDE_VERSION,
            .cuda_version = rs_cuda_version(), .nccl_version = rs_nccl_version(),
        };
        meta.nsettings = (uint32_t)rs_config_pairs(keys, values, 16);
        meta.setting_keys = keys;
        meta.setting_values = values;
    }

    struct timespec mono, real;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    clock_gettime(CLOCK_REALTIME, &real);
    struct rsf_clock_pair clock = {
        (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec,
        (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec,
    };
    struct rsf_counters counters = { .recorded = w.recorded, .dropped = rs_ring_dropped(),
                                     .dropped_io = rs_ring_dropped_io(),
                                     .dropped_gpu = rs_ring_dropped_gpu(),
                                     .dropped_nccl = rs_ring_dropped_nccl(),
                                     .dropped_samples = rs_ring_dropped_samples() + rs_sample_dropped(),
                                     .dropped_ranges = rs_ring_dropped_ranges() };
    struct rsf_chunk c = {
        .seq = w.seq, .meta = w.seq == 0 ? &meta : NULL,
        .strings_base = w.chunk_str_base,
        .strings = w.str ? (const char *const *)w.str + w.chunk_str_base : NULL,
        .nstrings = w.nstr + 1 - w.chunk_str_base,
        .files = w.files, .nfiles = w.nfiles, .threads = w.threads, .nthreads = w.nthreads,
        .clocks = &clock, .nclocks = 1, .io = w.io, .nio = w.nio,
        .counters = &counters, .end = end != 0,
        .gpu = w.gpu, .ngpu = w.ngpu, .syncs = w.syncs, .nsyncs = w.nsyncs,
        .colls = w.colls, .ncolls = w.ncolls, .comms = w.comms, .ncomms = w.ncomms,
        .mems = w.mems, .nmems = w.nmems, .mem_info = w.mem_info, .nmem_info = w.nmems,
        .launches = w.any_launch ? w.launches : NULL, .nlaunches = w.any_launch ? w.ngpu : 0,
        .functions = w.functions, .nfunctions = w.nfunctions,
        .devices = w.devices, .ndevices = w.ndevices,
        .series = w.series, .nseries = w.nseries, .points = w.points, .npoints = w.npoints,
        .coll_groups = w.any_group ? w.coll_groups : NULL, .ncoll_groups = w.any_group ? w.ncolls : 0,
        .graph_nodes = w.gnodes, .ngraph_nodes = w.ngnodes, .graph_edges = w.gedges, .ngraph_edges = w.ngedges,
        .marks = w.marks, .nmarks = w.nmarks,
    };
    rs_stackw_fill(&c);
    rs_rangew_fill(&c);
    if (rs_cfg.test_skew)
        test_skew(&c);
    size_t bound = rsf_chunk_bound(&c);
    if (!bound || rsf_buf_reserve(&w.enc, &w.enc_cap, bound) ||
        rsf_buf_reserve(&w.frame, &w.frame_cap, rsf_frame_bound(bound))) {
        give_up("out of memory writing", ENOMEM);
        goto reset;
    }
    struct rsf_buf out = { w.enc, 0, w.enc_cap };
    int err = rsf_chunk_encode(&c, &out);
    size_t n = err ? 0 : rsf_frame_compress(w.cctx, out.p, out.len, w.frame, w.frame_cap);
    if (!n) {
        rs_notice("cannot encode a chunk for %s: %s; tracing is off", w.path,
                  err ? rsf_strerror(err) : "LZ4 error");
        w.broken = 1;
        atomic_store(&rs_hot.on, 0);
        goto reset;
    }
    if ((err = write_all(w.frame, n)) != 0) {
        give_up("cannot write", err);
        goto reset;
    }
    w.good_size += (off_t)n;
    w.seq++;
    w.ended = end;
reset:
    w.nio = w.nfiles = w.nthreads = 0;
    w.ngpu = w.nsyncs = w.ncolls = w.ncomms = w.nmems = 0;
    w.nfunctions = w.ndevices = w.nseries = w.npoints = 0;
    w.ngnodes = w.ngedges = 0;
    w.nmarks = 0;
    w.any_launch = 0;
    w.any_group = 0;
    rs_stackw_chunk_done();
    rs_rangew_chunk_done();
    w.chunk_str_base = w.nstr + 1;
    w.last_emit = rs_now();
}

/* Room for one more event in a chunk vector (emitting the chunk when it
 * is full); 0 when out of memory (the event is lost). */
/* The chunk is full: it goes now, and the next event starts a new one. */
static void make_room(void)
{
    emit(0);
}

#define ROOM(arr, n, cap)                                                               \
    ((w.n < RS_EV_CAP || (emit(0), 1)) &&                                                  \
     !rs_grow((void **)&w.arr, &w.cap, w.n + 1, sizeof *w.arr))

/* A GPU event and its launch geometry (NULL: none). */
static void put_gpu(const struct rsf_gpu_event *e, const struct rsf_launch *geom)
{
    if (ROOM(gpu, ngpu, gpu_cap) &&
        !rs_grow((void **)&w.launches, &w.launches_cap, w.ngpu + 1, sizeof *w.launches)) {
        w.launches[w.ngpu] = geom ? *geom : (struct rsf_launch){ 0 };
        if (geom && (geom->grid_x || geom->func))
            w.any_launch = 1;
        w.gpu[w.ngpu++] = *e;
        w.recorded++;
    }
}

/* A collective and its NCCL group (0: none). */
static void put_coll(const struct rsf_coll_event *e, uint64_t group)
{
    if (ROOM(colls, ncolls, colls_cap) &&
        !rs_grow((void **)&w.coll_groups, &w.coll_groups_cap, w.ncolls + 1, sizeof *w.coll_groups)) {
        w.coll_groups[w.ncolls].group = group;
        if (group)
            w.any_group = 1;
        w.colls[w.ncolls++] = *e;
        w.recorded++;
    }
}

static uint32_t dur32(uint64_t ns)
{
    return ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* A CUDA or NCCL record (kinds 16..47); their times are CLOCK_MONOTONIC ns
 * already (rs_now), the clock the GPU times are mapped onto. */
static void take_gpu_record(const struct rs_rec_hdr *h, uint32_t tid)
{
    w.touched = 1;
    switch (h->kind) {
    case RS_REC_GPU:
    case RS_REC_KERNEL: {
        const struct rs_rec_gpu *r = (const void *)h;
        const struct rsf_launch *geom = h->kind == RS_REC_KERNEL ? &((const struct rs_rec_kernel *)h)->geom : NULL;
        struct rsf_gpu_event e = {
            .launch_ns = r->start_ns, .stream = r->stream, .bytes = r->bytes,
            .call_ns = dur32(r->dur_ns), .tid = tid, .name = r->name ? intern(r->name) : 0,
            .device = r->device, .kind = h->op, .dir = r->dir, .flags = r->flags, .graph = r->graph,
        };
        uint32_t stack = take_gpu_stack(tid);
        if (h->file && !rs_grow((void **)&w.held_gpu, &w.held_gpu_cap, w.nheld_gpu + 1, sizeof *w.held_gpu))
            w.held_gpu[w.nheld_gpu++] = (struct held_gpu){ e, geom ? *geom : (struct rsf_launch){ 0 },
                                                           h->file, r->anchor, stack, r->ret_ns };
        else
            put_gpu(&e, geom);
        return;
    }
    case RS_REC_FUNC: {
        const struct rs_rec_func *r = (const void *)h;
        if (ROOM(functions, nfunctions, functions_cap)) {
            struct rsf_function f = r->f;
            f.id = h->file;
            f.name = r->name_ptr ? intern(r->name_ptr) : 0;
            w.functions[w.nfunctions++] = f;
        }
        return;
    }
    case RS_REC_DEVICE: {
        const struct rs_rec_device *r = (const void *)h;
        if (ROOM(devices, ndevices, devices_cap)) {
            struct rsf_device d = r->d;
            d.name = r->name[0] ? intern(r->name) : 0;
            d.uuid = r->uuid[0] ? intern(r->uuid) : 0;
            d.pci = r->pci[0] ? intern(r->pci) : 0;
            w.devices[w.ndevices++] = d;
        }
        return;
    }
    case RS_REC_SERIES: {
        const struct rs_rec_series *r = (const void *)h;
        if (ROOM(series, nseries, series_cap))
            w.series[w.nseries++] = (struct rsf_series){
                .rate = r->rate, .id = h->file, .name = r->name[0] ? intern(r->name) : 0,
                .device = r->device, .kind = h->op, .link = r->link };
        return;
    }
    case RS_REC_POINT: {
        const struct rs_rec_point *r = (const void *)h;
        if (ROOM(points, npoints, points_cap)) {
            w.points[w.npoints++] = (struct rsf_point){ .ts_ns = r->ts_ns, .value = r->value,
                                                        .series = h->file };
            w.recorded++;
        }
        return;
    }
    case RS_REC_GRAPH_NODE: {
        const struct rs_rec_graph_node *r = (const void *)h;
        uint32_t stack = take_gpu_stack(tid);
        if (ROOM(gnodes, ngnodes, gnodes_cap)) {
            struct rsf_graph_node n = r->n;
            n.name = r->name ? intern(r->name) : 0;
            n.stack = stack;
            w.gnodes[w.ngnodes++] = n;
            w.recorded++;
        }
        return;
    }
    case RS_REC_MARK: {
        const struct rs_rec_mark *r = (const void *)h;
        if (ROOM(marks, nmarks, marks_cap)) {
            struct rsf_mark m = r->m;     /* its times in ticks */
            m.ts_ns = rs_tick_ns(&w.map, m.ts_ns);
            m.since_ns = m.since_ns ? rs_tick_ns(&w.map, m.since_ns) : 0;
            m.tid = tid;
            w.marks[w.nmarks++] = m;
            w.recorded++;
        }
        return;
    }
    case RS_REC_GRAPH_EDGE: {
        const struct rs_rec_graph_edge *r = (const void *)h;
        if (ROOM(gedges, ngedges, gedges_cap)) {
            w.gedges[w.ngedges++] = r->e;
            w.recorded++;
        }
        return;
    }
    case RS_REC_SYNC: {
        const struct rs_rec_sync *r = (const void *)h;
        if (ROOM(syncs, nsyncs, syncs_cap)) {
            w.syncs[w.nsyncs++] = (struct rsf_sync_event){
                .start_ns = r->start_ns, .dur_ns = r->dur_ns,
                .target = r->target, .tid = tid, .kind = h->op };
            w.recorded++;
        }
        return;
    }
    case RS_REC_MEM: {
        const struct rs_rec_mem *r = (const void *)h;
        uint32_t stack = h->file ? take_gpu_stack(tid) : 0;
        if (ROOM(mems, nmems, mems_cap) &&
            !rs_grow((void **)&w.mem_info, &w.mem_info_cap, w.nmems + 1, sizeof *w.mem_info)) {
            w.mem_info[w.nmems] = (struct rsf_mem_info){
                .stream = r->stream, .stack = stack, .device = r->device, .result = r->result,
                .asked = r->asked, .flags = r->sampled ? RSF_MEMF_SAMPLED : 0 };
            w.mems[w.nmems++] = (struct rsf_mem_event){
                .start_ns = r->start_ns, .dur_ns = r->dur_ns,
                .ptr = r->ptr, .bytes = r->bytes, .tid = tid, .kind = h->op };
            w.recorded++;
        }
        return;
    }
    case RS_REC_COLL: {
        const struct rs_rec_coll *r = (const void *)h;
        struct rsf_coll_event e = {
            .launch_ns = r->start_ns, .count = r->count, .bytes = r->bytes,
            .comm = r->comm, .stream = r->stream, .call_ns = dur32(r->dur_ns), .tid = tid,
            .seq = r->seq, .peer = r->peer, .op = h->op, .datatype = r->datatype,
            .redop = r->redop, .group = r->group, .flags = r->flags,
        };
        if (h->file && !rs_grow((void **)&w.held_coll, &w.held_coll_cap, w.nheld_coll + 1, sizeof *w.held_coll))
            w.held_coll[w.nheld_coll++] = (struct held_coll){ e, h->file, r->anchor, r->group_id, r->enqueued_ns, 0 };
        else
            put_coll(&e, r->group_id);
        return;
    }
    case RS_REC_COMM: {
        const struct rs_rec_comm *r = (const void *)h;
        if (ROOM(comms, ncomms, comms_cap)) {
            w.comms[w.ncomms++] = (struct rsf_comm_event){
                .start_ns = r->start_ns, .dur_ns = r->dur_ns,
                .comm = r->comm, .handle = r->handle, .parent = r->parent, .tid = tid,
                .rank = r->rank, .nranks = r->nranks, .device = r->device, .kind = h->op };
            w.recorded++;
        }
        return;
    }
    default:
        return;
    }
}

/* One pass over the events waiting for GPU times: those that are known (or
 * never will be) go into the chunk; with give_up_now, the rest too, with
 * times 0. Returns how many still wait. */
#define STALLED_MAX 64

/* Streams seen not done in this pass: work on a stream completes in order,
 * so what was launched after a pending pair on it is pending too. */
struct stalled {
    uint64_t stream[STALLED_MAX];
    uint32_t n;
};

static int stalled_has(const struct stalled *st, uint64_t stream)
{
    for (uint32_t i = 0; i < st->n; i++)
        if (st->stream[i] == stream)
            return 1;
    return 0;
}

static int times_of(struct stalled *st, uint64_t stream, uint32_t pair, uint32_t anchor, uint64_t *start,
                    uint64_t *end)
{
    if (stalled_has(st, stream))
        return 0;
    int r = rs_gpu_times(pair, anchor, start, end);
    if (r == 0 && st->n < STALLED_MAX)
        st->stream[st->n++] = stream;
    return r;
}

/* Settles a held launch once its times are known (or given up on: no
 * times then); returns 0, leaving it held, while they are not. */
static int settle_gpu(struct held_gpu *g, struct stalled *st, int give_up_now)
{
    int r = give_up_now ? -1 : times_of(st, g->e.stream, g->pair, g->anchor, &g->e.gpu_start_ns,
                                         &g->e.gpu_end_ns);
    if (r == 0)
        return 0;
    if (r > 0) {
        uint64_t *prev = rs_gpu_stream_end(g->e.stream);
        if (rs_cfg.test_gpu_raw_start)
            g->e.call_ns = g->ret_ns; /* the start event as it is, and the real call's own time */
        else
            g->e.gpu_start_ns = rs_gpu_work_start(&g->e, g->ret_ns, *prev);
        *prev = g->e.gpu_end_ns;
        if (g->e.gpu_start_ns > g->e.gpu_end_ns)
            g->e.gpu_start_ns = g->e.gpu_end_ns;
    }
    if (r > 0 && g->stack && g->e.gpu_end_ns > g->e.gpu_start_ns) {
        rs_stackw_gpu_sample(g->e.launch_ns, g->e.gpu_end_ns - g->e.gpu_start_ns, g->e.tid, g->stack);
        w.recorded++;
    }
    put_gpu(&g->e, &g->geom);
    return 1;
}

/* The same for a held collective. */
static int settle_coll(struct held_coll *c, struct stalled *st, int give_up_now)
{
    int r = give_up_now ? -1 : times_of(st, c->e.stream, c->pair, c->anchor, &c->e.gpu_start_ns,
                                         &c->e.gpu_end_ns);
    if (r == 0)
        return 0;
    if (r > 0) {
        /* a non-blocking communicator's work went on the stream at
         * enqueued_ns at the latest (hook_nccl.c) */
        uint64_t floor = c->enqueued_ns > c->e.launch_ns ? c->enqueued_ns : c->e.launch_ns;
        if (c->e.gpu_start_ns < floor)
            c->e.gpu_start_ns = floor < c->e.gpu_end_ns ? floor : c->e.gpu_end_ns;
        *rs_gpu_stream_end(c->e.stream) = c->e.gpu_end_ns;
    }
    put_coll(&c->e, c->group);
    return 1;
}

/* One pass over the held launches and collectives, merged in launch order
 * (a stream's previous work must be settled first). */
static uint32_t settle_pass(int give_up_now)
{
    struct stalled st = { .n = 0 };
    uint32_t kg = 0, kc = 0, i = 0, j = 0;
    while (i < w.nheld_gpu || j < w.nheld_coll) {
        if (j >= w.nheld_coll || (i < w.nheld_gpu && w.held_gpu[i].e.launch_ns <= w.held_coll[j].e.launch_ns)) {
            struct held_gpu *g = &w.held_gpu[i++];
            if (!settle_gpu(g, &st, give_up_now))
                w.held_gpu[kg++] = *g;
        } else {
            struct held_coll *c = &w.held_coll[j++];
            if (!settle_coll(c, &st, give_up_now))
                w.held_coll[kc++] = *c;
        }
    }
    w.nheld_gpu = kg;
    w.nheld_coll = kc;
    return w.nheld_gpu + w.nheld_coll;
}

/* GPU times of the events held so far. At the end of the process (final,
 * or the CUDA exit handler asking), waits up to SETTLE_NS for the GPU, then
 * writes what is known and stops calling the driver. */
static void settle(int final)
{
    /* Dying of SIGTERM or SIGINT: the signal's handler runs on a thread of
     * the program, maybe inside the driver with its lock held, or on the
     * thread that moves the GPU's work on (the stand-in's), while it waits
     * for this flush: a driver call here could wait for it until the flush
     * times out and the end mark is lost, and the GPU times of work still
     * queued may never come. What is held is written without them, at
     * once. */
    if (final && atomic_load(&rs_dying)) {
        if (w.nheld_gpu + w.nheld_coll)
            rs_debug("dying of a signal: %u GPU events written without GPU times", w.nheld_gpu + w.nheld_coll);
        settle_pass(1);
        rs_gpu_closed();
        return;
    }
    rs_gpu_tick();
    if (!w.nheld_gpu && !w.nheld_coll && !final && !rs_gpu_closing())
        return;
    uint32_t left = settle_pass(0);
    if (!final && !rs_gpu_closing())
        return;
    uint64_t until = rs_now() + SETTLE_NS;
    while (left && rs_now() < until) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
        left = settle_pass(0);
    }
    if (left)
        rs_debug("%u GPU events without GPU times at exit", left);
    settle_pass(1);
    rs_gpu_closed();
}

static void take_record(const struct rs_rec_hdr *h, uint32_t tid, void *arg)
{
    (void)arg;
    if (w.broken)
        return;
    name_thread(tid);
    if (h->kind == RS_REC_SAMPLE && (h->op & (uint8_t)~RS_SAMPLE_NS) == RSF_SAMPLE_GPU) {
        uint32_t st = rs_stackw_gpu_stack(h, intern);
        gpu_stacks[tid % GPU_STACK_SLOTS].tid = tid;
        gpu_stacks[tid % GPU_STACK_SLOTS].stack = st;
        return;
    }
    if (h->kind >= RS_REC_SAMPLE && h->kind < RS_REC_SAMPLE + 32) {
        if (rs_stackw_take(h, tid, &w.map, intern))
            emit(0);
        w.recorded++;
        return;
    }
    if (h->kind >= 16 && h->kind < 48) {
        take_gpu_record(h, tid);
        return;
    }
    if (h->kind == RS_REC_RANGE) {
        w.touched = 1;
        w.recorded += rs_rangew_take(h, tid, &w.map, intern, make_room);
        return;
    }

    if (h->kind == RS_REC_OPEN || h->kind == RS_REC_FILE) {
        const struct rs_rec_open *o = (const void *)h;
        char full[PATH_MAX];
        const char *path = o->path;
        uint32_t dir_path = o->dir && o->dir < w.file_cap ? w.file_path[o->dir] : 0;
        if (dir_path && dir_path != RS_FILE_EXCLUDED) {
            const char *dir = w.str[dir_path];
            size_t n = strlen(dir);
            snprintf(full, sizeof full, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", o->path);
            path = full;
        }
        /* The hook cannot see where a directory fd points (hwloc reads /sys
         * through openat on "/"): the exclusions apply here to such paths. */
        uint32_t id = dir_path == RS_FILE_EXCLUDED || (dir_path && rs_io_excluded(path))
                          ? RS_FILE_EXCLUDED : intern(path);
        if (id == RS_FILE_EXCLUDED) {
            if (!rs_grow((void **)&w.file_path, &w.file_cap, h->file + 1, sizeof *w.file_path))
                w.file_path[h->file] = id;
            return;
        }
        if (!rs_grow((void **)&w.file_path, &w.file_cap, h->file + 1, sizeof *w.file_path))
            w.file_path[h->file] = id;
        if (!rs_grow((void **)&w.files, &w.files_cap, w.nfiles + 1, sizeof *w.files))
            w.files[w.nfiles++] = (struct rsf_file_ref){ h->file, id, o->flags };
        if (h->kind == RS_REC_FILE)
            return;
        w.touched = 1;
        if (w.nio == IO_CAP)
            emit(0);
        w.io[w.nio++] = (struct rsf_io_event){ .start_ns = rs_tick_ns(&w.map, o->start_ns),
                                               .dur_ns = rs_tick_dur(&w.map, o->dur_ns),
                                               .offset = -1, .result = o->result,
                                               .file = h->file, .tid = tid, .op = h->op };
        w.recorded++;
        return;
    }
    uint64_t start, dur;
    int64_t offset, result;
    if (h->kind == RS_REC_IO) {
        const struct rs_rec_io *r = (const void *)h;
        start = r->start, dur = r->dur, offset = r->offset, result = r->result;
    } else if (h->kind == RS_REC_IO_LONG) {
        const struct rs_rec_io_long *r = (const void *)h;
        start = r->start, dur = r->dur, offset = r->offset, result = r->result;
    } else {
        return;
    }
    if (h->file < w.file_cap && w.file_path[h->file] == RS_FILE_EXCLUDED)
        return;
    if (h->op != RSF_IO_CLOSE)
        w.touched = 1;
    if (w.nio == IO_CAP)
        emit(0);
    w.io[w.nio++] = (struct rsf_io_event){ .start_ns = rs_tick_ns(&w.map, start),
                                           .dur_ns = rs_tick_dur(&w.map, dur),
                                           .offset = offset, .result = result,
                                           .file = h->file, .tid = tid, .op = h->op };
    w.recorded++;
}

/* Gives the calling thread (the writer, starting) its own copy of the fd
 * table and empties it, with 0, 1 and 2 on /dev/null so that nothing the
 * writer opens takes a standard stream's number. Returns 0, or -1 with the
 * table still shared. */
static int own_table(void)
{
#ifdef SYS_close_range
    /* close_range must work (Linux 5.9) before the table is split: the copy
     * must not keep the program's files open. An empty range tests it. */
    if (syscall(SYS_close_range, ~0u, ~0u, 0) != 0 || unshare(CLONE_FILES) != 0)
        return -1;
    rs_own_fds = 1;
    syscall(SYS_close_range, 0u, ~0u, 0);
    for (int i = 0; i < 3; i++)
        if (open("/dev/null", O_RDWR) != i)
            rs_debug("writer: /dev/null did not take fd %d", i);
    return 0;
#else
    return -1;
#endif
}

/* On a writer that shares the table, where the file was open before the
 * writer's own-table predecessor ended: opens it again, appending after
 * the last whole frame. */
static void reopen_file(void)
{
    reopen = 0;
    w.fd = open(w.path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (w.fd < 0 || lseek(w.fd, w.good_size, SEEK_SET) != w.good_size) {
        rs_notice("cannot open %s again: %s; tracing is off", w.path, strerror(errno));
        if (w.fd >= 0)
            close(w.fd);
        w.fd = -1;
        w.broken = 1;
        atomic_store(&rs_hot.on, 0);
    }
}

/* ---- the hang watch ----
 * On the writer's own wake-ups, nothing more (RINGSIDE_HANG_S, 0: off): a
 * collective held for its GPU times RINGSIDE_HANG_S after its launch is
 * stuck. Then, once: a stuck mark, a copy of each such call as in flight
 * (a SIGKILL later loses nothing the verdict needs). In a rank, each
 * thread blocked in a hooked wait that long is asked where it waits (the
 * sampling signal, queued with RS_STUCK_VALUE: sample.c's rs_wait_stuck),
 * then again once a minute while that wait lasts: a rank stuck in a
 * collective's sync, and the rank the others wait for, blocked outside its
 * collectives (no mark: it is not stuck in a call of its own). */

#define HANG_AGAIN_NS 60000000000ull

static uint64_t hang_next_ns;    /* the next flush for a stuck collective's copies */
static int stuck_noted;          /* the stuck mark is written */

struct hang_look {
    uint64_t now, lim;
    int sig;
};

/* Waits a handler may cut into without the program seeing it: retried by
 * the C library (locks, conditions, joins), restarted by SA_RESTART (child
 * waits), or retried by the agent's own sleep (sample.c). Not semaphores or
 * raw futex calls, which return EINTR whatever SA_RESTART says. */
static int hang_askable(int reason)
{
    switch (reason) {
    case RSF_WAIT_LOCK: case RSF_WAIT_RWLOCK: case RSF_WAIT_CONDVAR: case RSF_WAIT_JOIN: case RSF_WAIT_CHILD:
    case RSF_WAIT_SLEEP:
        return 1;
    default:
        return 0;
    }
}

/* A thread blocked in a wait at least h->lim, or, for a wait asked about
 * already, a minute since: its start (ns), else 0. */
static uint64_t hang_wait_of(const struct hang_look *h, struct rs_thread *t)
{
    uint64_t t0 = atomic_load_explicit(&t->wait_t0, memory_order_relaxed);
    if (!t0 || !t->tid || !hang_askable(atomic_load_explicit(&t->wait_reason, memory_order_relaxed)))
        return 0;
    uint64_t ns = rs_tick_ns(&w.map, t0);
    uint64_t need = t0 == atomic_load_explicit(&t->stuck_t0, memory_order_relaxed) ? HANG_AGAIN_NS : h->lim;
    return h->now >= ns + need ? ns : 0;
}

static void hang_ask(void *arg, struct rs_thread *t)
{
    const struct hang_look *h = arg;
    if (!hang_wait_of(h, t))
        return;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = h->sig;
    si.si_code = SI_QUEUE;
    si.si_pid = rs_id.pid;
    si.si_uid = getuid();
    si.si_value.sival_int = RS_STUCK_VALUE;
    syscall(SYS_rt_tgsigqueueinfo, rs_id.pid, (pid_t)t->tid, h->sig, &si);
}

static void hang_watch(void)
{
    if (rs_cfg.hang_s <= 0 || w.broken)
        return;
    uint64_t now = rs_now(), lim = (uint64_t)rs_cfg.hang_s * 1000000000ull;
    uint64_t since = 0;
    uint32_t tid = 0;
    for (uint32_t i = 0; i < w.nheld_coll; i++) {
        struct held_coll *c = &w.held_coll[i];
        if (now < c->e.launch_ns + lim)
            continue;
        if (!since || c->e.launch_ns < since)
            since = c->e.launch_ns, tid = c->e.tid;
        if (!c->copied) {
            struct rsf_coll_event e = c->e;
            e.flags |= RSF_COLLF_IN_FLIGHT;
            put_coll(&e, c->group);
            c->copied = 1;
        }
    }
    int sig = atomic_load(&rs_sample_sig);
    struct hang_look h = { now, lim, sig };
    if (since && !stuck_noted) {
        rs_notice("a collective has been in flight %ld s: noting where each thread is (RINGSIDE_HANG_S)",
                  rs_cfg.hang_s);
        if (ROOM(marks, nmarks, marks_cap)) {
            w.marks[w.nmarks++] = (struct rsf_mark){ .ts_ns = now, .since_ns = since, .tid = tid,
                                                      .kind = RSF_MARK_STUCK };
            w.recorded++;
        }
        stuck_noted = 1;
    }
    /* in a rank, each thread blocked that long, stuck in a collective or
     * holding the others up outside one */
    if (rs_id.role == RSF_ROLE_RANK && sig > 0)
        rs_ring_threads(hang_ask, &h);
    if (since && now >= hang_next_ns) {
        hang_next_ns = now + HANG_AGAIN_NS;
        emit(0);
        w.last_emit = rs_now();
    }
}

static void *writer_main(void *arg)
{
    rs_th.guard = 1; /* the writer's own I/O is never recorded */
    prctl(PR_SET_NAME, "ringside-writer", 0, 0, 0); /* as top -H and ps -L show it */
    if (arg && own_table() == 0)
        atomic_store(&table_own, 1);
    atomic_store(&started, 1);
    futex_wake_all(&started);
    if (reopen)
        reopen_file();
    uint64_t period = (uint64_t)rs_cfg.flush_ms * 1000000u / 2;
    /* done_seq, not req_word: a flush asked for before this thread got to
     * run (a forked child that execs at once) is still pending. */
    uint32_t served = atomic_load(&done_seq);
    for (;;) {
        /* Read before stop_req: a kick after this read ends the wait below. */
        uint32_t wake = atomic_load(&rs_writer_wake);
        if (atomic_load(&stop_req)) {
            /* rs_writer_share: leave between passes, the state whole. */
            if (w.fd >= 0) {
                close(w.fd);
                w.fd = -1;
                reopen = 1;
            }
            atomic_store(&table_own, 0);
            atomic_store(&writer_running, 0);
            atomic_store(&stop_req, 0);
            atomic_store(&ended, 1);
            futex_wake_all(&ended);
            return NULL;
        }
        uint64_t now = rs_now();
        uint64_t due = w.last_emit + period, unwinder = rs_sample_writer_due();
        if (unwinder && unwinder < due)
            due = unwinder;
        if ((uint32_t)(atomic_load(&req_word) >> 32) == served && atomic_load(&mod_req) == atomic_load(&mod_done) &&
            now < due) {
            atomic_store(&rs_writer_sleeping, 1);
            futex_wait(&rs_writer_wake, wake, due - now);
            atomic_store(&rs_writer_sleeping, 0);
        }
        uint32_t mods = atomic_load(&mod_req);
        uint64_t taken = atomic_fetch_and(&req_word, ~REQ_FINAL);
        uint32_t req = (uint32_t)(taken >> 32);
        int final = (taken & REQ_FINAL) != 0;
        if (atomic_exchange(&resumed, 0))
            w.ended = 0;
        /* Records drained now were made since the last pair (nearly all):
         * convert them on the line through that pair and a new one. */
        struct rs_tick_map next;
        rs_tick_map_update(&next, &w.map);
        w.map.ns_per_tick = next.ns_per_tick;
        rs_sample_writer_tick(&w.map);
        rs_stackw_modules(intern);
        rs_ring_drain(take_record, NULL);
        w.map = next;
        if (mods != atomic_load(&mod_done)) {
            atomic_store(&mod_done, mods);
            futex_wake_all(&mod_done);
        }
        settle(final);
        if (!final)
            hang_watch();
        if (req != served || final || rs_now() >= w.last_emit + period) {
            emit(final);
            /* Also when emit found nothing to write, or no file yet: the
             * next timed pass is a period from now, not at once. */
            w.last_emit = rs_now();
        }
        if (req != served) {
            served = req;
            atomic_store(&done_seq, req);
            futex_wake_all(&done_seq);
        }
    }
    return NULL;
}

static int state_init(void)
{
    memset(&w, 0, sizeof w);
    rs_rangew_new_file();
    w.fd = -1;
    w.chunk_str_base = 1;
    w.io = malloc(IO_CAP * sizeof *w.io);
    if (!w.io || LZ4F_isError(LZ4F_createCompressionContext(&w.cctx, LZ4F_VERSION)))
        return -1;
    w.last_emit = rs_now();
    rs_tick_map_start(&w.map);
    return 0;
}

/* Waits (up to 5 s) for *word to leave 0. Returns 0, or -1 on time out. */
static int await_set(_Atomic uint32_t *word)
{
    uint64_t deadline = rs_now() + 5000000000u;
    while (!atomic_load(word)) {
        uint64_t now = rs_now();
        if (now >= deadline)
            return -1;
        futex_wait(word, 0, deadline - now < 10000000u ? deadline - now : 10000000u);
    }
    return 0;
}

/* Starts a writer thread on the state in w, with its own fd table when
 * own, and waits until it has set the table up. Returns 0 or -1. */
static int writer_start(int own)
{
    atomic_store(&started, 0);
    if (rs_thread_start(&writer_thread, writer_main, own ? (void *)1 : NULL, 256u << 10) != 0)
        return -1;
    atomic_store(&writer_running, 1);
    /* Nothing of the program's runs while the writer holds its copy of
     * the table; the wait is tens of microseconds. */
    if (await_set(&started) != 0)
        rs_debug("the writer took more than 5 s to start");
    return 0;
}

/* Set when the driver was called before the writer started: the writer
 * starts sharing the program's fd table. */
static _Atomic int share_wanted;

int rs_writer_start(void)
{
    if (state_init() != 0)
        return -1;
    pthread_mutex_lock(&share_lock);
    int r = writer_start(rs_cfg.own_fds && !atomic_load(&share_wanted));
    pthread_mutex_unlock(&share_lock);
    return r;
}

int rs_writer_share(void)
{
    if (!atomic_load(&share_wanted)) {
        pthread_mutex_lock(&share_lock);
        atomic_store(&share_wanted, 1);
        pthread_mutex_unlock(&share_lock);
    }
    if (!atomic_load(&table_own))
        return 0;
    pthread_mutex_lock(&share_lock);
    int r = 0;
    if (atomic_load(&table_own)) {
        atomic_store(&ended, 0);
        atomic_store(&stop_req, 1);
        rs_writer_kick();
        if (await_set(&ended) != 0) {
            /* Still busy: take the request back unless it was just taken. */
            int one = 1;
            if (atomic_compare_exchange_strong(&stop_req, &one, 0) || await_set(&ended) != 0) {
                rs_notice("the writer did not stop to take up the CUDA driver's files in 5 s");
                r = -1;
            }
        }
        if (r == 0 && writer_start(0) != 0) {
            rs_notice("cannot start the writer thread again; tracing is off");
            atomic_store(&rs_hot.on, 0);
            r = -1;
        }
    }
    pthread_mutex_unlock(&share_lock);
    return r;
}

void rs_writer_flush(int final)
{
    if (!atomic_load(&writer_running) || rs_writer_is_self())
        return;
    uint64_t cur = atomic_load(&req_word), next;
    do
        next = (cur + REQ_ONE) | (final ? REQ_FINAL : 0);
    while (!atomic_compare_exchange_weak(&req_word, &cur, next));
    uint32_t mine = (uint32_t)(next >> 32);
    rs_writer_kick();
    uint64_t deadline = rs_now() + 5000000000u;
    for (;;) {
        uint32_t done = atomic_load(&done_seq);
        if ((int32_t)(done - mine) >= 0)
            return;
        uint64_t now = rs_now();
        if (now >= deadline) {
            /* at the end, what is not written yet is lost: say so */
            if (final)
                rs_notice("the writer did not finish the trace file in 5 s; its last records are lost");
            else
                rs_debug("the writer did not answer a flush in 5 s");
            return;
        }
        futex_wait(&done_seq, done, 10000000u);
    }
}

void rs_writer_sync_modules(void)
{
    if (!atomic_load(&writer_running) || rs_writer_is_self())
        return;
    uint32_t mine = atomic_fetch_add(&mod_req, 1) + 1;
    rs_writer_kick();
    /* A bound only against a writer gone (the process ending under us):
     * a pass's drain takes milliseconds and waits for no other thread. */
    uint64_t deadline = rs_now() + 5000000000u;
    for (;;) {
        uint32_t done = atomic_load(&mod_done);
        if ((int32_t)(done - mine) >= 0 || !atomic_load(&writer_running))
            return;
        uint64_t now = rs_now();
        if (now >= deadline) {
            rs_debug("the writer did not answer a module sync in 5 s");
            return;
        }
        futex_wait(&mod_done, done, 10000000u);
    }
}

void rs_writer_exec_flush(void)
{
    atomic_store(&at_exec, fork_image);
    rs_writer_flush(1);
}

void rs_writer_resume(void)
{
    atomic_store(&at_exec, 0);
    atomic_store(&resumed, 1);
}

void rs_writer_forked(void)
{
    /* The parent's writer state may have been mid-update: the child's
     * start (rs_agent_start, at its first event) begins afresh and leaves
     * the parent's file and allocations alone. */
    fork_image = 1;
    atomic_store(&rs_have_file, 0);
    atomic_store(&at_exec, 0);
    atomic_store(&writer_running, 0);
    pthread_mutex_init(&fd_lock, NULL);
    pthread_mutex_init(&share_lock, NULL);
    /* The parent's trace fd is in this table only if its writer shared it. */
    if (w.fd >= 0 && !atomic_load(&table_own))
        close(w.fd);
    atomic_store(&table_own, 0);
    atomic_store(&stop_req, 0);
    atomic_store(&share_wanted, 0);
    reopen = 0;
    rs_stackw_new_file();
    atomic_store(&req_word, 0);
    atomic_store(&resumed, 0);
    atomic_store(&done_seq, 0);
    atomic_store(&mod_req, 0);
    atomic_store(&mod_done, 0);
}
