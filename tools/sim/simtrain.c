/* simtrain: a data-parallel training loop for the simulated GPU and NCCL, with the
 * knobs the tests and demos turn (see --help). It reaches the driver the way the
 * CUDA runtime does (dlopen libcuda.so.1, then cuGetProcAddress_v2 for every entry
 * point) and links NCCL normally. Kernel durations follow tools/sim/simgpu.h: the first
 * kernel parameter is a uint64_t of nanoseconds. Ranks come from torchrun's
 * variables; rank 0 publishes the NCCL unique id in a file (see sim_train_rendezvous).
 * Its device memory (the memory options) is counted as the agent's hooks see it: what
 * it holds through cuMemAlloc, a PyTorch-like caching allocator's blocks included. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>
#include <nccl.h>

#define MIB 1048576.0
#define SIM_TRAIN_BATCH_BYTES (256u << 10)   /* one batch read from the data file */
#define SIM_TRAIN_DATA_BATCHES 4             /* the data file holds this many */

/* The driver entry points simtrain uses; each member is named after the versioned
 * function cuda.h maps the plain name to, and looked up by the plain name. */
#define SIM_TRAIN_DRIVER(X) \
    X(cuInit) X(cuGetErrorName) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain)               \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuModuleLoadData)                  \
    X(cuModuleGetFunction) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)   \
    X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventRecord) X(cuEventDestroy)             \
    X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost)      \
    X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuDeviceGetAttribute)                    \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch) \
    X(cuGraphDestroy) X(cuGraphExecDestroy)
/* Looked up only with a memory option, so that a run without one makes the calls
 * it always made. */
#define SIM_TRAIN_DRIVER_MEM(X) X(cuMemGetInfo)

static struct {
#define SIM_TRAIN_MEMBER(fn) __typeof__(fn) *fn;
    SIM_TRAIN_DRIVER(SIM_TRAIN_MEMBER)
    SIM_TRAIN_DRIVER_MEM(SIM_TRAIN_MEMBER)
#undef SIM_TRAIN_MEMBER
} drv;

/* --host-wait's kinds. */
enum sim_train_wait { SIM_TRAIN_WAIT_NONE, SIM_TRAIN_WAIT_SLEEP, SIM_TRAIN_WAIT_COND, SIM_TRAIN_WAIT_POLL,
                      SIM_TRAIN_WAIT_WRITE };

struct sim_train_opts {
    long steps, layers, ckpt_every, seed, kernels, eval_every, eval_steps, kernel_blocks;
    double seconds;               /* --seconds: train until then (one rank only) */
    const char *progress;         /* --progress FILE: the steps so far, every 100 */
    double fwd_us, bwd_us, bucket_mb, data_us, ckpt_mb, bw_gbs, drift_pct;
    int overlap;
    int graph, graph_nccl;   /* --graph, --graph-nccl */
    int no_step_sync;        /* --no-step-sync */
    const char *ckpt_dir;
    long straggler_rank;
    double straggler_factor;
    long slow_data_rank;
    double slow_data_us;
    int host_wait;                /* --host-wait's kind (enum sim_train_wait), 0: none */
    double host_wait_us;
    long host_work_rank;          /* --host-work */
    double host_work_us;
    long stall_rank, stall_step;
    double stall_s;
    long crash_rank, crash_step;  /* --crash */
    long desync_rank, desync_step;        /* --desync */
    double timeout_s;             /* --timeout-s; 0: none */
    long devices;
    long tp, pp, microbatches;    /* --tp, --pp, --microbatches */
    double act_mb;                /* --act-mb */
    int pp_inner;                 /* --order tp-pp-dp: pipeline inside data parallel */
    long stage_slow;              /* --stage-slow S:F: stage S's kernels F times longer */
    double stage_slow_factor;
    double leak_mb;               /* --leak-mb */
    double layer_act_mb;          /* --layer-act-mb */
    long act_cycle;               /* --act-cycle */
    int cache;                    /* --cache */
};

#define SIM_TRAIN_MAX_DEVICES 8
#define SIM_TRAIN_GRAPH_WARMUP 3   /* --graph: steps run eagerly before the capture */

static int sim_train_rank;
static char sim_train_layout[256];   /* --tp/--pp: the truth's layout line, less pid and rank */

static const char sim_train_usage[] =
    "usage: simtrain [options]\n"
    "A data-parallel training loop on the simulated GPU (LD_LIBRARY_PATH=build/sim).\n"
    "Ranks come from RANK, WORLD_SIZE, LOCAL_RANK (torchrun; simlaunch sets them).\n"
    "  --steps N             training steps (default 10)\n"
    "  --seconds S           train for S seconds instead (one rank only: ranks would\n"
    "                        not agree on the last step), at most --steps if given\n"
    "  --progress FILE       write the steps done so far to FILE every 100 steps\n"
    "                        (make soak's bytes per step)\n"
    "  --kernels-per-layer K each layer's forward and backward pass as K kernels of\n"
    "                        fwd-us/K and bwd-us/K (default 1): more launches per step\n"
    "  --layers L            layers: one forward and one backward kernel each, and one\n"
    "                        gradient bucket each (default 4)\n"
    "  --fwd-us U            forward kernel duration in microseconds (default 200)\n"
    "  --bwd-us U            backward kernel duration (default 400); optimizer_step\n"
    "                        lasts --fwd-us / 2\n"
    "  --kernel-blocks N     launch the compute kernels with N blocks of 256 threads\n"
    "                        (default: one block per SM of the device)\n"
    "  --bucket-mb B         gradient bucket size in MiB, AllReduce'd as float32 (default 25)\n"
    "  --overlap             AllReduce each bucket on a communication stream as soon as\n"
    "                        its backward kernel is done (default)\n"
    "  --no-overlap          AllReduce every bucket after the backward pass, on the\n"
    "                        compute stream\n"
    "  --data-us U           data loading per step: sleep U microseconds, then read a\n"
    "                        256 KiB batch from a real file and copy it to the device\n"
    "                        (default 0: no data loading), all in sim_train_load_batch\n"
    "                        (as a DataLoader's frames are in a PyTorch stack)\n"
    "  --no-step-sync        the host does not wait for each step's GPU work (it waits\n"
    "                        once, after the last step; checkpoints still wait): the\n"
    "                        same loop without its once-a-step GPU-to-CPU sync\n"
    "  --ckpt-every K        checkpoint every K steps (default 0: never)\n"
    "  --ckpt-mb M           checkpoint size in MiB: copied DtoH, then written with\n"
    "                        write() and fsync() (default 16)\n"
    "  --ckpt-dir DIR        where checkpoints (ckpt-rank<R>-step<S>.bin) and the data\n"
    "                        file go (default .)\n"
    "  --straggler R:F       rank R's kernels last F times longer\n"
    "  --slow-data R:U       rank R alone loads data U microseconds longer each step:\n"
    "                        it reads its data file (64 KiB at a time, from the start\n"
    "                        again at its end) until U us have passed, after any\n"
    "                        --data-us loading\n"
    "  --host-work R:U       rank R alone spends U microseconds of CPU on its host each\n"
    "                        step before launching it (sim_train_host_work: Python\n"
    "                        overhead, preprocessing on the training thread)\n"
    "  --host-wait K:U       every rank's training thread, each step before launching\n"
    "                        it, outside data loading (sim_train_host_wait): sleeps U us\n"
    "                        (K sleep), waits U us on a condition variable nobody\n"
    "                        signals (cond), polls a pipe nobody writes for U us (poll),\n"
    "                        or writes U KiB to a log file and fsyncs it (write)\n"
    "  --stall R:S:SEC       rank R sleeps SEC seconds before step S's first\n"
    "                        collective (steps count from 0)\n"
    "  --crash R:S           rank R dies of SIGSEGV before step S's first collective\n"
    "                        (a write through a null pointer in sim_train_crash)\n"
    "  --desync R:S          rank R calls step S's first AllReduce with half the\n"
    "                        elements: the others' calls never meet it (a desync)\n"
    "  --timeout-s T         a collective that has not finished after T seconds fails\n"
    "                        (SIMNCCL_TIMEOUT_S) and the rank aborts (SIGABRT), as\n"
    "                        PyTorch's NCCL watchdog does\n"
    "  --eval-every E        after every E training steps, --eval-steps evaluation\n"
    "                        steps: the forward kernels, then an AllReduce of 16\n"
    "                        floats of metrics on the compute stream (default 0: none)\n"
    "  --eval-steps K        evaluation steps each time (default 2)\n"
    "  --drift PCT           kernels slow down linearly over the training steps, the\n"
    "                        last step's PCT% longer than the first's (default 0)\n"
    "  --bw-gbs G            simulated NCCL bus bandwidth in GB/s (sets SIMNCCL_BW_GBS)\n"
    "  --devices N           spread each rank's layers over N devices (LOCAL_RANK*N on),\n"
    "                        each its primary context, compute stream and module, in\n"
    "                        blocks of consecutive layers (a pipeline): each hand-over\n"
    "                        an event the next device's stream waits for; NCCL, the\n"
    "                        optimizer, data and checkpoints on the first (default 1)\n"
    "  --graph               after three warm-up steps (as PyTorch's CUDA graphs want),\n"
    "                        capture the forward and backward passes into a CUDA graph\n"
    "                        once and replay it with cuGraphLaunch in every later step\n"
    "                        (fewer than four steps: none is captured); the AllReduces and the\n"
    "                        optimizer run after it as without --graph. The kernels'\n"
    "                        durations are those at the capture (--drift stops there)\n"
    "  --graph-nccl          --graph with the whole step in the graph: the AllReduces\n"
    "                        (on the communication stream with --overlap) and the\n"
    "                        optimizer too\n"
    "  --tp T                tensor parallel: T ranks share each layer; after each\n"
    "                        micro-batch's forward and backward kernels of a layer,\n"
    "                        an AllReduce of --act-mb on the group's communicator\n"
    "  --pp P                pipeline parallel: the layers in P stages of consecutive\n"
    "                        layers, micro-batches scheduled one forward, one backward\n"
    "                        (1F1B, Megatron's), activations and their gradients sent\n"
    "                        with ncclSend/ncclRecv between neighbouring stages. The\n"
    "                        rest of the world is data parallel: each stage's buckets\n"
    "                        AllReduce'd over its replicas after the last backward.\n"
    "                        Ranks as Megatron lays them out: tensor, then data, then\n"
    "                        pipeline (rank = tp + T x (dp + D x pp)); each group a\n"
    "                        communicator split from the world's (ncclCommSplit,\n"
    "                        groups of one rank not made). WORLD_SIZE a multiple of T x P\n"
    "  --microbatches M      micro-batches per step with --pp (default 2 x P, or 1):\n"
    "                        each layer's kernels last --fwd-us / M and --bwd-us / M\n"
    "  --act-mb A            activations per micro-batch in MiB, sent between stages\n"
    "                        and AllReduce'd in a tensor-parallel group (default 4)\n"
    "  --stage-slow S:F      the kernels of pipeline stage S (from 0) last F times longer\n"
    "  --order O             how ranks are laid out, innermost first: tp-dp-pp (default,\n"
    "                        Megatron's) or tp-pp-dp (rank = tp + T x (pp + P x dp): a\n"
    "                        node holds whole pipelines, data parallel crosses nodes)\n"
    "  --leak-mb M           every training step allocates M MiB more (cuMemAlloc in\n"
    "                        sim_train_leak) and never frees it\n"
    "  --layer-act-mb A      each layer's forward pass allocates A MiB of activations\n"
    "                        (sim_train_act_alloc), freed after that layer's backward\n"
    "                        (default 0: none; 16 with --cache); not with --graph,\n"
    "                        --tp or --pp\n"
    "  --act-cycle K         step S's activations are (1 + S mod K) x --layer-act-mb a\n"
    "                        layer, as batches of varying length make them (default 1)\n"
    "  --cache               the per-step allocations (--layer-act-mb, --leak-mb) go\n"
    "                        through a caching allocator, as PyTorch's (sim_cache_alloc):\n"
    "                        sizes rounded up to 512 bytes, from 1 MiB on to 2 MiB; a\n"
    "                        freed block stays cached and serves the next request of its\n"
    "                        size; when cuMemAlloc runs out of memory, the device's cached\n"
    "                        blocks are freed (cuMemFree) and the call tried once more\n"
    "                        (none cached: no retry). The cache is emptied at the end.\n"
    "                        A per-step allocation that finds the device full (after\n"
    "                        the retry) ends the rank with status 1 and, on stderr,\n"
    "                        \"simtrain: CUDA out of memory at step S: tried to allocate\n"
    "                        X MiB; N MiB free of T MiB\" (S from 0); the other ranks\n"
    "                        fail their next collective\n"
    "  --seed S              seed of the data and checkpoint contents (default 1)\n"
    "  --help                this text\n"
    "Environment: SIMTRAIN_CONFIG=\"OPTIONS\" adds options after the command line's, as a\n"
    "configuration file would (the run changes, its command line does not).\n"
    "SIMTRAIN_POLL_US=U (default 20): the sleep between polls of a non-blocking\n"
    "communicator that said ncclInProgress (a program slower to poll: a loaded host).\n"
    "SIMTRAIN_EVENTS=FILE appends, at exit, one JSON line per checkpoint\n"
    "(rank, step, start_ns before its file is opened, end_ns after it is closed) and\n"
    "one for main (start_ns on entry, end_ns before return), CLOCK_MONOTONIC ns.\n"
    "With SIMGPU_TRUTH=FILE (\"%p\": the pid), it appends at exit one line per step,\n"
    "{\"pid\",\"rank\",\"kind\":\"step\",\"index\" (steps of both phases in the loop's order),\n"
    "\"phase\":\"train\"|\"eval\",\"start_ns\",\"end_ns\"}, on the simulator's clock: a training\n"
    "step from the start of its data loading to the end of its checkpoint, if any.\n"
    "With --tp or --pp, first a line of the rank's place: {\"pid\",\"rank\",\"kind\":\"layout\",\n"
    "\"tp\",\"dp\",\"pp\" (its index in each), \"tp_size\",\"dp_size\",\"pp_size\",\"microbatches\"}.\n"
    "With a memory option (--leak-mb, --layer-act-mb, --cache; it sets SIMGPU_TRUTH_MEMORY=1,\n"
    "the simulator's device_memory lines) or SIMGPU_TRUTH_MEMORY=1, each step line holds\n"
    "\"live_bytes\" too, the device memory the program held through cuMemAlloc at the step's\n"
    "end (with --cache, \"cached_bytes\": the part of it cached), and then come\n"
    "{\"pid\",\"rank\",\"kind\":\"train_memory\",\"peak_bytes\",\"peak_index\" (the step line\n"
    "it fell in; null: none),\"peak_ns\" (when the allocation that reached it returned),\n"
    "\"leak_bytes_per_step\",\"cache_retries\" (allocations that succeeded once the cache was\n"
    "freed),\"cache_retry_ns\" (their time, from the failed call's start to the retry's end)}\n"
    "and, after an out-of-memory end,\n"
    "{\"pid\",\"rank\",\"kind\":\"oom\",\"step\",\"index\" (its step line's, had it ended),\n"
    "\"bytes\" (asked),\"free_bytes\",\"total_bytes\" (cuMemGetInfo's then),\"ns\"}.\n";

static int sim_train_abort_on_error;     /* --timeout-s */

static void sim_train_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void sim_train_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "simtrain: rank %d: ", sim_train_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (sim_train_abort_on_error)
        abort();    /* --timeout-s: as PyTorch's watchdog ends a rank */
    exit(1);
}

static void sim_train_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void sim_train_usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("simtrain: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(simtrain --help lists the options)\n", stderr);
    exit(2);
}

static void sim_train_cu(CUresult r, const char *what)
{
    const char *name = NULL;
    if (r == CUDA_SUCCESS)
        return;
    if (!drv.cuGetErrorName || drv.cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = "unknown CUresult";
    sim_train_die("%s: %s (%d)", what, name, (int)r);
}

/* The communicator a call that returns ncclInProgress (non-blocking
 * communicators) is polled on, as PyTorch does, until it is ready. */
static ncclComm_t *sim_train_comm;

static void sim_train_nccl(ncclResult_t r, const char *what)
{
    static long poll_ns = -1;
    if (poll_ns < 0) {
        const char *v = getenv("SIMTRAIN_POLL_US");
        poll_ns = v && *v ? (long)(atof(v) * 1000) : 20000;
        if (poll_ns < 0 || poll_ns > 999999999)
            poll_ns = 20000;
    }
    while (r == ncclInProgress && sim_train_comm && *sim_train_comm) {
        const struct timespec poll = { 0, poll_ns };
        ncclResult_t st = ncclInProgress;
        if (ncclCommGetAsyncError(*sim_train_comm, &st) != ncclSuccess)
            break;
        r = st;
        if (r == ncclInProgress)
            nanosleep(&poll, NULL);
    }
    if (r != ncclSuccess)
        sim_train_die("%s: %s", what, ncclGetErrorString(r));
}

#define CU(call) sim_train_cu(drv.call, #call)
#define NCCL(call) sim_train_nccl(call, #call)

static long sim_train_long(const char *opt, const char *s, long min)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < min)
        sim_train_usage_error("%s: '%s' is not a whole number >= %ld", opt, s, min);
    return v;
}

static double sim_train_double(const char *opt, const char *s, double min, int strict)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !*s || *end || v < min || (strict && v == min))
        sim_train_usage_error("%s: '%s' is not a number %s %g", opt, s, strict ? ">" : ">=", min);
    return v;
}

/* OPT's RANK:MICROSECONDS value (--slow-data, --host-work), more than 0
 * microseconds. */
static void sim_train_rank_us(const char *opt, char *arg, long *rank, double *us)
{
    char name[64], *colon = strchr(arg, ':');
    if (!colon)
        sim_train_usage_error("%s: '%s' is not RANK:MICROSECONDS", opt, arg);
    *colon = '\0';
    snprintf(name, sizeof name, "%s RANK", opt);
    *rank = sim_train_long(name, arg, 0);
    snprintf(name, sizeof name, "%s MICROSECONDS", opt);
    *us = sim_train_double(name, colon + 1, 0, 1);
}

/* OPT's WHICH:FACTOR value (a rank or a stage, and how many times longer
 * its kernels last). */
static void sim_train_which_factor(const char *opt, const char *which, char *arg, long *n, double *factor)
{
    char name[64], *colon = strchr(arg, ':');
    if (!colon)
        sim_train_usage_error("%s: '%s' is not %s:FACTOR", opt, arg, which);
    *colon = '\0';
    snprintf(name, sizeof name, "%s %s", opt, which);
    *n = sim_train_long(name, arg, 0);
    snprintf(name, sizeof name, "%s FACTOR", opt);
    *factor = sim_train_double(name, colon + 1, 0, 1);
}

static void sim_train_parse(int argc, char **argv, struct sim_train_opts *o)
{
    enum { O_STEPS = 256, O_LAYERS, O_FWD, O_BWD, O_BUCKET, O_OVERLAP, O_NO_OVERLAP, O_DATA,
           O_CKPT_EVERY, O_CKPT_MB, O_CKPT_DIR, O_STRAGGLER, O_BW, O_SEED, O_HELP, O_KERNELS, O_EVAL_EVERY,
           O_EVAL_STEPS, O_DRIFT, O_KERNEL_BLOCKS, O_SLOW_DATA, O_STALL, O_CRASH, O_DESYNC, O_TIMEOUT, O_DEVICES, O_GRAPH, O_GRAPH_NCCL,
           O_SECONDS, O_PROGRESS, O_TP, O_PP, O_MICRO, O_ACT, O_STAGE_SLOW, O_ORDER, O_NO_STEP_SYNC, O_HOST_WORK, O_HOST_WAIT,
           O_LEAK, O_LAYER_ACT, O_ACT_CYCLE, O_CACHE };
    static const struct option longopts[] = {
        { "steps", required_argument, NULL, O_STEPS },
        { "seconds", required_argument, NULL, O_SECONDS },
        { "progress", required_argument, NULL, O_PROGRESS },
        { "layers", required_argument, NULL, O_LAYERS },
        { "kernels-per-layer", required_argument, NULL, O_KERNELS },
        { "fwd-us", required_argument, NULL, O_FWD },
        { "bwd-us", required_argument, NULL, O_BWD },
        { "bucket-mb", required_argument, NULL, O_BUCKET },
        { "overlap", no_argument, NULL, O_OVERLAP },
        { "no-overlap", no_argument, NULL, O_NO_OVERLAP },
        { "data-us", required_argument, NULL, O_DATA },
        { "ckpt-every", required_argument, NULL, O_CKPT_EVERY },
        { "ckpt-mb", required_argument, NULL, O_CKPT_MB },
        { "ckpt-dir", required_argument, NULL, O_CKPT_DIR },
        { "straggler", required_argument, NULL, O_STRAGGLER },
        { "slow-data", required_argument, NULL, O_SLOW_DATA },
        { "stall", required_argument, NULL, O_STALL },
        { "crash", required_argument, NULL, O_CRASH },
        { "desync", required_argument, NULL, O_DESYNC },
        { "timeout-s", required_argument, NULL, O_TIMEOUT },
        { "bw-gbs", required_argument, NULL, O_BW },
        { "seed", required_argument, NULL, O_SEED },
        { "eval-every", required_argument, NULL, O_EVAL_EVERY },
        { "eval-steps", required_argument, NULL, O_EVAL_STEPS },
        { "drift", required_argument, NULL, O_DRIFT },
        { "kernel-blocks", required_argument, NULL, O_KERNEL_BLOCKS },
        { "devices", required_argument, NULL, O_DEVICES },
        { "graph", no_argument, NULL, O_GRAPH },
        { "graph-nccl", no_argument, NULL, O_GRAPH_NCCL },
        { "no-step-sync", no_argument, NULL, O_NO_STEP_SYNC },
        { "host-work", required_argument, NULL, O_HOST_WORK },
        { "host-wait", required_argument, NULL, O_HOST_WAIT },
        { "tp", required_argument, NULL, O_TP },
        { "pp", required_argument, NULL, O_PP },
        { "microbatches", required_argument, NULL, O_MICRO },
        { "act-mb", required_argument, NULL, O_ACT },
        { "stage-slow", required_argument, NULL, O_STAGE_SLOW },
        { "order", required_argument, NULL, O_ORDER },
        { "leak-mb", required_argument, NULL, O_LEAK },
        { "layer-act-mb", required_argument, NULL, O_LAYER_ACT },
        { "act-cycle", required_argument, NULL, O_ACT_CYCLE },
        { "cache", no_argument, NULL, O_CACHE },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct sim_train_opts){
        .steps = 10, .layers = 4, .kernels = 1, .fwd_us = 200, .bwd_us = 400, .bucket_mb = 25, .overlap = 1,
        .ckpt_mb = 16, .ckpt_dir = ".", .straggler_rank = -1, .straggler_factor = 1, .seed = 1,
        .slow_data_rank = -1, .stall_rank = -1, .crash_rank = -1, .desync_rank = -1,
        .host_work_rank = -1, .devices = 1,
        .eval_steps = 2, .tp = 1, .pp = 1, .act_mb = 4, .stage_slow = -1, .stage_slow_factor = 1,
        .act_cycle = 1,
    };
    int c, overlap_set = 0, steps_set = 0, cycle_set = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case O_STEPS: o->steps = sim_train_long("--steps", optarg, 1); steps_set = 1; break;
        case O_SECONDS: o->seconds = sim_train_double("--seconds", optarg, 0, 1); break;
        case O_PROGRESS: o->progress = optarg; break;
        case O_LAYERS: o->layers = sim_train_long("--layers", optarg, 1); break;
        case O_KERNELS: o->kernels = sim_train_long("--kernels-per-layer", optarg, 1); break;
        case O_FWD: o->fwd_us = sim_train_double("--fwd-us", optarg, 0, 0); break;
        case O_BWD: o->bwd_us = sim_train_double("--bwd-us", optarg, 0, 0); break;
        case O_BUCKET: o->bucket_mb = sim_train_double("--bucket-mb", optarg, 0, 1); break;
        case O_DATA: o->data_us = sim_train_double("--data-us", optarg, 0, 0); break;
        case O_CKPT_EVERY: o->ckpt_every = sim_train_long("--ckpt-every", optarg, 0); break;
        case O_CKPT_MB: o->ckpt_mb = sim_train_double("--ckpt-mb", optarg, 0, 1); break;
        case O_CKPT_DIR: o->ckpt_dir = optarg; break;
        case O_BW: o->bw_gbs = sim_train_double("--bw-gbs", optarg, 0, 1); break;
        case O_SEED: o->seed = sim_train_long("--seed", optarg, 0); break;
        case O_EVAL_EVERY: o->eval_every = sim_train_long("--eval-every", optarg, 0); break;
        case O_EVAL_STEPS: o->eval_steps = sim_train_long("--eval-steps", optarg, 1); break;
        case O_DRIFT: o->drift_pct = sim_train_double("--drift", optarg, 0, 0); break;
        case O_KERNEL_BLOCKS: o->kernel_blocks = sim_train_long("--kernel-blocks", optarg, 1); break;
        case O_DEVICES:
            o->devices = sim_train_long("--devices", optarg, 1);
            if (o->devices > SIM_TRAIN_MAX_DEVICES)
                sim_train_usage_error("--devices: at most %d", SIM_TRAIN_MAX_DEVICES);
            break;
        case O_GRAPH: o->graph = 1; break;
        case O_TP: o->tp = sim_train_long("--tp", optarg, 1); break;
        case O_PP: o->pp = sim_train_long("--pp", optarg, 1); break;
        case O_MICRO: o->microbatches = sim_train_long("--microbatches", optarg, 1); break;
        case O_ACT: o->act_mb = sim_train_double("--act-mb", optarg, 0, 1); break;
        case O_LEAK: o->leak_mb = sim_train_double("--leak-mb", optarg, 0, 1); break;
        case O_LAYER_ACT: o->layer_act_mb = sim_train_double("--layer-act-mb", optarg, 0, 1); break;
        case O_ACT_CYCLE: o->act_cycle = sim_train_long("--act-cycle", optarg, 1); cycle_set = 1; break;
        case O_CACHE: o->cache = 1; break;
        case O_ORDER:
            if (strcmp(optarg, "tp-dp-pp") && strcmp(optarg, "tp-pp-dp"))
                sim_train_usage_error("--order: '%s' is neither tp-dp-pp nor tp-pp-dp", optarg);
            o->pp_inner = !strcmp(optarg, "tp-pp-dp");
            break;
        case O_STAGE_SLOW:
            sim_train_which_factor("--stage-slow", "STAGE", optarg, &o->stage_slow, &o->stage_slow_factor);
            break;
        case O_GRAPH_NCCL: o->graph = o->graph_nccl = 1; break;
        case O_NO_STEP_SYNC: o->no_step_sync = 1; break;
        case O_OVERLAP:
        case O_NO_OVERLAP:
            if (overlap_set && o->overlap != (c == O_OVERLAP))
                sim_train_usage_error("--overlap and --no-overlap exclude each other");
            o->overlap = c == O_OVERLAP;
            overlap_set = 1;
            break;
        case O_STRAGGLER:
            sim_train_which_factor("--straggler", "RANK", optarg, &o->straggler_rank, &o->straggler_factor);
            break;
        case O_STALL: {
            char *c1 = strchr(optarg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c1 || !c2)
                sim_train_usage_error("--stall: '%s' is not RANK:STEP:SECONDS", optarg);
            *c1 = *c2 = 0;
            o->stall_rank = sim_train_long("--stall RANK", optarg, 0);
            o->stall_step = sim_train_long("--stall STEP", c1 + 1, 0);
            o->stall_s = sim_train_double("--stall SECONDS", c2 + 1, 0, 0);
            break;
        }
        case O_CRASH:
        case O_DESYNC: {
            const char *what = c == O_CRASH ? "--crash" : "--desync";
            char *c1 = strchr(optarg, ':');
            if (!c1)
                sim_train_usage_error("%s: '%s' is not RANK:STEP", what, optarg);
            *c1 = 0;
            long r = sim_train_long(what, optarg, 0), st = sim_train_long(what, c1 + 1, 0);
            if (c == O_CRASH)
                o->crash_rank = r, o->crash_step = st;
            else
                o->desync_rank = r, o->desync_step = st;
            break;
        }
        case O_TIMEOUT:
            o->timeout_s = sim_train_double("--timeout-s", optarg, 0, 0);
            break;
        case O_HOST_WORK:
            sim_train_rank_us("--host-work", optarg, &o->host_work_rank, &o->host_work_us);
            break;
        case O_HOST_WAIT: {
            static const char *const kinds[] = { [SIM_TRAIN_WAIT_SLEEP] = "sleep", [SIM_TRAIN_WAIT_COND] = "cond",
                                                 [SIM_TRAIN_WAIT_POLL] = "poll", [SIM_TRAIN_WAIT_WRITE] = "write" };
            char *colon = strchr(optarg, ':');
            if (colon)
                *colon = '\0';
            for (int k = 1; k < (int)(sizeof kinds / sizeof kinds[0]); k++)
                if (strcmp(optarg, kinds[k]) == 0)
                    o->host_wait = k;
            if (!colon || !o->host_wait)
                sim_train_usage_error("--host-wait: '%s' is not sleep|cond|poll|write:MICROSECONDS", optarg);
            o->host_wait_us = sim_train_double("--host-wait MICROSECONDS", colon + 1, 0, 1);
            break;
        }
        case O_SLOW_DATA:
            sim_train_rank_us("--slow-data", optarg, &o->slow_data_rank, &o->slow_data_us);
            break;
        case O_HELP:
            fputs(sim_train_usage, stdout);
            exit(0);
        default:
            if (optopt)
                sim_train_usage_error("option %s needs a value, or is unknown", argv[optind - 1]);
            sim_train_usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        sim_train_usage_error("unexpected argument '%s'", argv[optind]);
    if (o->graph && o->devices > 1)
        sim_train_usage_error("--graph captures one device's stream: not with --devices %ld", o->devices);
    if (o->seconds > 0 && !steps_set)
        o->steps = LONG_MAX;
    if (o->tp > 1 || o->pp > 1) {
        if (o->graph || o->devices > 1)
            sim_train_usage_error("--tp and --pp: not with --graph, --graph-nccl or --devices");
        if (o->layers < o->pp)
            sim_train_usage_error("--pp %ld: needs at least as many --layers (%ld)", o->pp, o->layers);
    }
    if (o->stage_slow >= o->pp)
        sim_train_usage_error("--stage-slow %ld: there are %ld stages (--pp)", o->stage_slow, o->pp);
    if (!o->microbatches)
        o->microbatches = o->pp > 1 ? 2 * o->pp : 1;
    if (o->cache && o->layer_act_mb == 0)
        o->layer_act_mb = 16;
    if (o->layer_act_mb > 0 && (o->graph || o->tp > 1 || o->pp > 1))
        sim_train_usage_error("--layer-act-mb%s: not with --graph, --tp or --pp (they allocate in the passes)",
                              o->cache ? " (and --cache, which sets it)" : "");
    if (cycle_set && o->layer_act_mb == 0)
        sim_train_usage_error("--act-cycle: only with --layer-act-mb or --cache");
}

/* A memory option is given: the per-step allocations, cuMemGetInfo, the memory truth. */
static int sim_train_mem_options(const struct sim_train_opts *o)
{
    return o->leak_mb > 0 || o->layer_act_mb > 0 || o->cache;
}

static int sim_train_env_int(const char *name, int def)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return def;
    long n = strtol(v, &end, 10);
    if (*end || n < 0)
        sim_train_die("%s=%s is not a whole number >= 0", name, v);
    return (int)n;
}

static void sim_train_load_driver(int with_mem)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        sim_train_die("dlopen libcuda.so.1: %s", dlerror());
    __typeof__(cuGetProcAddress_v2) *get_proc = (__typeof__(get_proc))dlsym(h, "cuGetProcAddress_v2");
    if (!get_proc)
        sim_train_die("libcuda.so.1 has no cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult status;
#define SIM_TRAIN_RESOLVE(fn)                                                                     \
    if (get_proc(#fn, (void **)&drv.fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=    \
            CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS)                                \
        sim_train_die("cuGetProcAddress_v2(%s, %d) failed (status %d)", #fn, CUDA_VERSION, (int)status);
    SIM_TRAIN_DRIVER(SIM_TRAIN_RESOLVE)
    if (with_mem) {
        SIM_TRAIN_DRIVER_MEM(SIM_TRAIN_RESOLVE)
    }
#undef SIM_TRAIN_RESOLVE
}

/* The NCCL unique id travels from rank 0 to the others through a file
 * ${TMPDIR:-/tmp}/simtrain-<TORCHELASTIC_RUN_ID>-<MASTER_PORT>.ncclid, written under
 * a temporary name and renamed into place; rank 0 removes it once every rank has
 * joined the communicator. */
static void sim_train_id_path(char *path, size_t len)
{
    const char *tmp = getenv("TMPDIR"), *run = getenv("TORCHELASTIC_RUN_ID"), *port = getenv("MASTER_PORT");
    char key[128];
    size_t k = 0;
    snprintf(key, sizeof(key), "%s-%s", run && *run ? run : "none", port && *port ? port : "0");
    for (k = 0; key[k]; k++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", key[k]))
            key[k] = '_';
    snprintf(path, len, "%s/simtrain-%s.ncclid", tmp && *tmp ? tmp : "/tmp", key);
}

static void sim_train_rendezvous(int rank, ncclUniqueId *id, const char *path)
{
    if (rank == 0) {
        char tmp[4200];
        NCCL(ncclGetUniqueId(id));
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, id, sizeof(*id)) != (ssize_t)sizeof(*id) || close(fd) != 0 ||
            rename(tmp, path) != 0)
            sim_train_die("cannot publish the NCCL id in %s: %s", path, strerror(errno));
        return;
    }
    const struct timespec poll = { 0, 10000000 };
    for (int tries = 0; tries < 6000; tries++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, id, sizeof(*id));
            close(fd);
            if (n == (ssize_t)sizeof(*id))
                return;
        }
        nanosleep(&poll, NULL);
    }
    sim_train_die("no NCCL id from rank 0 in %s after 60 s", path);
}

static void sim_train_fill(unsigned char *p, size_t n, long seed)
{
    uint64_t x = (uint64_t)seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (unsigned char)(x >> 56);
    }
}

static void sim_train_write_all(int fd, const unsigned char *p, size_t n, const char *path)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            sim_train_die("write %s: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
}

static void sim_train_sleep_us(double us)
{
    struct timespec ts = { (time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static double sim_train_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t sim_train_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct sim_train {
    struct sim_train_opts o;
    int rank, world;
    CUstream compute, comm;
    CUfunction *fwd, *bwd, optimizer;
    CUevent *bwd_done, comm_done;
    CUdeviceptr *grads, ckpt_dev, batch_dev, metrics;
    unsigned char *ckpt_host, *batch_host;
    size_t bucket_bytes, ckpt_bytes;
    ncclComm_t nccl;
    CUgraphExec graph;   /* --graph: the step captured, once */
    int data_fd;
    int wait_pipe[2];   /* --host-wait poll: a pipe nobody writes */
    CUdevice dev;
    double scale;      /* straggler factor on this rank */
    double slow_us;    /* --slow-data's extra loading on this rank, else 0 */
    double drift;      /* --drift's factor at the current training step */
    unsigned blocks;   /* compute kernels' grid: --kernel-blocks, else the SM count */
    int stall_now;     /* --stall: sleep before this step's first collective */
    int crash_now;     /* --crash: die before it */
    int desync_now;    /* --desync: call it with half the elements */
    /* --devices: each device's context, compute stream and hand-over event;
     * compute is that of device cur, the one whose context is current */
    CUcontext ctxs[SIM_TRAIN_MAX_DEVICES];
    CUdevice devs[SIM_TRAIN_MAX_DEVICES];
    CUstream computes[SIM_TRAIN_MAX_DEVICES];
    CUevent handoff[SIM_TRAIN_MAX_DEVICES];
    int *layer_dev, cur;
    /* --tp/--pp: this rank's place, its groups' communicators (NULL: a
     * group of one), its stage's layers [l0, l1), the activation buffers */
    int tp_i, dp_i, pp_i, dp_n;
    ncclComm_t tp_comm, dp_comm, pp_comm;
    long l0, l1;
    CUdeviceptr act_out, act_in;
    size_t act_bytes;
    long step;          /* the training step being run, from 0 */
    /* --layer-act-mb: each layer's activations while the step holds them,
     * and their size in this step (--act-cycle) */
    CUdeviceptr *acts;
    size_t act_step_bytes;
};

/* Work goes on device d from here: its context current, its stream waiting
 * for what the previous device did. */
static void sim_train_on(struct sim_train *t, int d)
{
    if (d == t->cur)
        return;
    CU(cuEventRecord(t->handoff[t->cur], t->compute));
    CU(cuCtxSetCurrent(t->ctxs[d]));
    CU(cuStreamWaitEvent(t->computes[d], t->handoff[t->cur], 0));
    t->cur = d;
    t->compute = t->computes[d];
}

#define SIM_TRAIN_METRICS 16   /* floats AllReduce'd by an evaluation step */

static void sim_train_kernel(struct sim_train *t, CUfunction f, double us)
{
    uint64_t ns = (uint64_t)(us * 1000 * t->scale * t->drift + 0.5);
    void *params[] = { &ns };
    CU(cuLaunchKernel(f, t->blocks, 1, 1, 256, 1, 1, 0, t->compute, params, NULL));
}

/* ---- device memory ---- */

/* What the program holds through cuMemAlloc, as the agent's hooks count it
 * (cached blocks included): now, the most it was, when, and in which step
 * line; and what an out-of-memory end met. */
static struct {
    int on;                  /* memory truth: a memory option or SIMGPU_TRUTH_MEMORY=1 */
    int cache;               /* --cache */
    uint64_t live, peak, peak_ns;
    long peak_index;         /* -1: before the first step */
    long index, begun;       /* the step line being made (-1: none), steps begun */
    uint64_t leak_bytes;     /* taken by each training step, as allocated */
    int oom;
    long oom_step, oom_index;
    uint64_t oom_bytes, oom_free, oom_total, oom_ns;
} sim_train_mem = { .peak_index = -1, .index = -1 };

static void sim_train_oom(struct sim_train *t, size_t bytes) __attribute__((noreturn));

static CUresult sim_train_mem_alloc(CUdeviceptr *p, size_t bytes)
{
    CUresult r = drv.cuMemAlloc(p, bytes);
    if (r == CUDA_SUCCESS && (sim_train_mem.live += bytes) > sim_train_mem.peak) {
        sim_train_mem.peak = sim_train_mem.live;
        sim_train_mem.peak_ns = sim_train_now_ns();
        sim_train_mem.peak_index = sim_train_mem.index;
    }
    return r;
}

static void sim_train_mem_free(CUdeviceptr p, size_t bytes)
{
    CU(cuMemFree(p));
    sim_train_mem.live -= bytes;
}

/* A buffer made at setup: running out of memory there ends the rank as any
 * failed driver call does. */
static void sim_train_buffer(CUdeviceptr *p, size_t bytes)
{
    sim_train_cu(sim_train_mem_alloc(p, bytes), "cuMemAlloc");
}

/* --cache: a caching allocator as PyTorch's, reduced to what shapes the memory
 * a profiler sees: a freed block stays allocated in the cache and serves the
 * next request of its size on its device; a cuMemAlloc that finds the device
 * full frees the device's cached blocks and is tried once more (the slow path
 * PyTorch counts as num_alloc_retries). No block is split or merged. */
struct sim_cache_block {
    CUdeviceptr p;
    size_t bytes;
    int dev;              /* t->cur when it was made */
};
static struct {
    struct sim_cache_block *free;   /* the cached blocks, in no order */
    size_t n, cap;
    uint64_t bytes;                 /* theirs together */
    long retries;                   /* allocations that succeeded once the cache was freed */
    uint64_t retry_ns;              /* their time, from the failed call's start */
} sim_cache;

/* Sizes as PyTorch's allocator rounds them: 512 bytes, 2 MiB from 1 MiB on. */
static size_t sim_cache_round(size_t bytes)
{
    size_t unit = bytes >= (1u << 20) ? (size_t)2 << 20 : 512;
    return (bytes + unit - 1) / unit * unit;
}

/* Frees the cached blocks of device dev (-1: of all). */
static void sim_cache_empty(int dev)
{
    size_t kept = 0;
    for (size_t i = 0; i < sim_cache.n; i++) {
        struct sim_cache_block b = sim_cache.free[i];
        if (dev >= 0 && b.dev != dev) {
            sim_cache.free[kept++] = b;
            continue;
        }
        sim_train_mem_free(b.p, b.bytes);
        sim_cache.bytes -= b.bytes;
    }
    sim_cache.n = kept;
}

static __attribute__((noinline)) CUdeviceptr sim_cache_alloc(struct sim_train *t, size_t bytes)
{
    size_t size = sim_cache_round(bytes);
    for (size_t i = 0; i < sim_cache.n; i++) {
        if (sim_cache.free[i].bytes == size && sim_cache.free[i].dev == t->cur) {
            CUdeviceptr p = sim_cache.free[i].p;
            sim_cache.free[i] = sim_cache.free[--sim_cache.n];
            sim_cache.bytes -= size;
            return p;
        }
    }
    CUdeviceptr p = 0;
    uint64_t t0 = sim_train_now_ns();
    CUresult r = sim_train_mem_alloc(&p, size);
    int cached = 0;
    for (size_t i = 0; i < sim_cache.n && !cached; i++)
        cached = sim_cache.free[i].dev == t->cur;
    if (r == CUDA_ERROR_OUT_OF_MEMORY && cached) {
        sim_cache_empty(t->cur);
        r = sim_train_mem_alloc(&p, size);
        if (r == CUDA_SUCCESS) {
            sim_cache.retries++;
            sim_cache.retry_ns += sim_train_now_ns() - t0;
        }
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        sim_train_oom(t, size);
    sim_train_cu(r, "cuMemAlloc");
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
    return p;
}

static void sim_cache_free(struct sim_train *t, CUdeviceptr p, size_t bytes)
{
    if (sim_cache.n == sim_cache.cap) {
        size_t cap = sim_cache.cap ? 2 * sim_cache.cap : 64;
        struct sim_cache_block *grown = realloc(sim_cache.free, cap * sizeof(*grown));
        if (!grown)
            sim_train_die("out of memory");
        sim_cache.free = grown;
        sim_cache.cap = cap;
    }
    sim_cache.free[sim_cache.n++] = (struct sim_cache_block){ p, sim_cache_round(bytes), t->cur };
    sim_cache.bytes += sim_cache_round(bytes);
}

/* A step's allocation on the current device, through the cache with --cache:
 * running out of memory ends the rank (sim_train_oom). */
static CUdeviceptr sim_train_step_alloc(struct sim_train *t, size_t bytes)
{
    CUdeviceptr p = 0;
    if (t->o.cache)
        return sim_cache_alloc(t, bytes);
    CUresult r = sim_train_mem_alloc(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        sim_train_oom(t, bytes);
    sim_train_cu(r, "cuMemAlloc");
    return p;
}

static void sim_train_step_free(struct sim_train *t, CUdeviceptr p, size_t bytes)
{
    if (t->o.cache)
        sim_cache_free(t, p, bytes);
    else
        sim_train_mem_free(p, bytes);
}

/* --layer-act-mb: a layer's activations, made by its forward pass. */
static __attribute__((noinline)) CUdeviceptr sim_train_act_alloc(struct sim_train *t)
{
    CUdeviceptr p = sim_train_step_alloc(t, t->act_step_bytes);
    __asm__ volatile("" ::: "memory");
    return p;
}

/* --leak-mb: memory a step takes and never gives back, as a list that keeps
 * each step's loss tensor (and its graph) does. */
static __attribute__((noinline)) void sim_train_leak(struct sim_train *t)
{
    (void)sim_train_step_alloc(t, (size_t)(t->o.leak_mb * MIB + 0.5));
    __asm__ volatile("" ::: "memory");
}

static volatile uintptr_t sim_train_null;

/* --crash: a write through a null pointer (SIGSEGV, a fault). */
__attribute__((noinline)) static void sim_train_crash(void)
{
    *(volatile int *)sim_train_null = 1;
}

/* What --stall, --crash and --desync do before a step's first collective:
 * the elements that collective is called with (count, or half of it). */
static size_t sim_train_first_collective(struct sim_train *t, size_t count)
{
    if (t->stall_now) {
        t->stall_now = 0;
        sim_train_sleep_us(t->o.stall_s * 1e6);
    }
    if (t->crash_now) {
        t->crash_now = 0;
        sim_train_crash();
    }
    if (t->desync_now) {
        t->desync_now = 0;
        return count / 2;
    }
    return count;
}

static void sim_train_allreduce(struct sim_train *t, int layer, CUstream s)
{
    size_t count = sim_train_first_collective(t, t->bucket_bytes / 4);
    NCCL(ncclAllReduce((void *)(uintptr_t)t->grads[layer], (void *)(uintptr_t)t->grads[layer],
                       count, ncclFloat32, ncclSum, t->nccl, s));
}

/* --slow-data: reads the data file 64 KiB at a time, over and over, until
 * slow_us have passed (a rank whose storage or decoding is slower). */
static void sim_train_read_slowly(struct sim_train *t)
{
    const size_t piece = 64u << 10, size = (size_t)SIM_TRAIN_BATCH_BYTES * SIM_TRAIN_DATA_BATCHES;
    double until = sim_train_now_s() + t->slow_us / 1e6;
    off_t off = 0;
    while (sim_train_now_s() < until) {
        if (pread(t->data_fd, t->batch_host, piece, off) != (ssize_t)piece)
            sim_train_die("reading the data file: %s", strerror(errno));
        off = (off_t)(((size_t)off + piece) % size);
    }
}

/* Which part of a step's GPU work sim_train_gpu enqueues. */
enum sim_train_part {
    SIM_TRAIN_WHOLE,    /* the passes, the AllReduces, the optimizer */
    SIM_TRAIN_PASSES,   /* the forward and backward passes only (--graph) */
    SIM_TRAIN_REST      /* what follows them: the AllReduces, the optimizer */
};

static void sim_train_gpu(struct sim_train *t, enum sim_train_part part)
{
    const struct sim_train_opts *o = &t->o;
    if (part != SIM_TRAIN_REST) {
        for (long l = 0; l < o->layers; l++) {
            sim_train_on(t, t->layer_dev[l]);
            if (t->acts)
                t->acts[l] = sim_train_act_alloc(t);
            for (long k = 0; k < o->kernels; k++)
                sim_train_kernel(t, t->fwd[l], o->fwd_us / (double)o->kernels);
        }
        for (long l = o->layers - 1; l >= 0; l--) {
            sim_train_on(t, t->layer_dev[l]);
            for (long k = 0; k < o->kernels; k++)
                sim_train_kernel(t, t->bwd[l], o->bwd_us / (double)o->kernels);
            /* freed once the backward that reads them is queued, as autograd
             * drops them: the stream's order keeps their reuse safe */
            if (t->acts)
                sim_train_step_free(t, t->acts[l], t->act_step_bytes);
            if (o->overlap && part == SIM_TRAIN_WHOLE) {
                CU(cuEventRecord(t->bwd_done[l], t->compute));
                CU(cuStreamWaitEvent(t->comm, t->bwd_done[l], 0));
                sim_train_allreduce(t, (int)l, t->comm);
            }
        }
    }
    sim_train_on(t, 0);
    if (part == SIM_TRAIN_PASSES)
        return;
    if (o->overlap) {
        if (part == SIM_TRAIN_REST) {   /* the passes ran in a graph: every bucket is ready */
            CU(cuEventRecord(t->bwd_done[0], t->compute));
            CU(cuStreamWaitEvent(t->comm, t->bwd_done[0], 0));
            for (long l = o->layers - 1; l >= 0; l--)
                sim_train_allreduce(t, (int)l, t->comm);
        }
        CU(cuEventRecord(t->comm_done, t->comm));
        CU(cuStreamWaitEvent(t->compute, t->comm_done, 0));
    } else {
        for (long l = o->layers - 1; l >= 0; l--)
            sim_train_allreduce(t, (int)l, t->compute);
    }
    sim_train_kernel(t, t->optimizer, o->fwd_us / 2);
}

/* --pp: a send to send_peer and a receive from recv_peer on the pipeline's
 * communicator (-1: none; a stage past either end: none), grouped as
 * Megatron pairs them so that neighbours never wait on each other. */
static void sim_train_p2p(struct sim_train *t, long send_peer, long recv_peer)
{
    int send = send_peer >= 0 && send_peer < t->o.pp, recv = recv_peer >= 0 && recv_peer < t->o.pp;
    if (!send && !recv)
        return;
    size_t n = t->act_bytes / 4;
    NCCL(ncclGroupStart());
    if (send)
        NCCL(ncclSend((void *)(uintptr_t)t->act_out, n, ncclFloat32, (int)send_peer, t->pp_comm, t->compute));
    if (recv)
        NCCL(ncclRecv((void *)(uintptr_t)t->act_in, n, ncclFloat32, (int)recv_peer, t->pp_comm, t->compute));
    NCCL(ncclGroupEnd());
}

/* One micro-batch through this stage's layers, forward or backward: each
 * layer's kernels, then, tensor parallel, the AllReduce of its activations. */
static void sim_train_micro(struct sim_train *t, int backward)
{
    const struct sim_train_opts *o = &t->o;
    double m = (double)o->microbatches * (double)o->kernels;
    for (long i = 0; i < t->l1 - t->l0; i++) {
        long l = backward ? t->l1 - 1 - i : t->l0 + i;
        for (long k = 0; k < o->kernels; k++)
            sim_train_kernel(t, backward ? t->bwd[l] : t->fwd[l], (backward ? o->bwd_us : o->fwd_us) / m);
        if (t->tp_comm)
            NCCL(ncclAllReduce((void *)(uintptr_t)t->act_out, (void *)(uintptr_t)t->act_out, t->act_bytes / 4,
                               ncclFloat32, ncclSum, t->tp_comm, t->compute));
    }
}

/* A step of --tp/--pp: the micro-batches in Megatron's 1F1B order (a stage
 * runs P - stage - 1 forwards before its first backward, then alternates,
 * then drains), the stage's gradient buckets AllReduce'd over its data
 * parallel replicas, the optimizer. Everything on the compute stream. */
static void sim_train_gpu3d(struct sim_train *t)
{
    const struct sim_train_opts *o = &t->o;
    long s = t->pp_i, prev = s - 1, next = s + 1, m = o->microbatches;
    long warm = o->pp - s - 1 < m ? o->pp - s - 1 : m, rest = m - warm;
    for (long i = 0; i < warm; i++) {
        sim_train_p2p(t, -1, prev);
        sim_train_micro(t, 0);
        sim_train_p2p(t, next, -1);
    }
    if (rest > 0)
        sim_train_p2p(t, -1, prev);
    for (long i = 0; i < rest; i++) {
        sim_train_micro(t, 0);
        sim_train_p2p(t, next, next);
        sim_train_micro(t, 1);
        sim_train_p2p(t, prev, i == rest - 1 ? -1 : prev);
    }
    for (long i = 0; i < warm; i++) {
        sim_train_p2p(t, -1, next);
        sim_train_micro(t, 1);
        sim_train_p2p(t, prev, -1);
    }
    if (t->dp_comm) {
        size_t count = sim_train_first_collective(t, t->bucket_bytes / 4);
        for (long l = t->l1 - 1; l >= t->l0; l--) {
            NCCL(ncclAllReduce((void *)(uintptr_t)t->grads[l], (void *)(uintptr_t)t->grads[l], count, ncclFloat32,
                               ncclSum, t->dp_comm, t->compute));
            count = t->bucket_bytes / 4;
        }
    }
    sim_train_kernel(t, t->optimizer, o->fwd_us / 2);
}

/* --tp/--pp: this rank's place and its groups, split from the world's
 * communicator in the same order on every rank. */
static void sim_train_groups(struct sim_train *t)
{
    const struct sim_train_opts *o = &t->o;
    long tp = o->tp, pp = o->pp;
    if (t->world % (tp * pp))
        sim_train_usage_error("--tp %ld --pp %ld: WORLD_SIZE %d is not a multiple of %ld", tp, pp, t->world,
                              tp * pp);
    t->dp_n = (int)(t->world / (tp * pp));
    t->tp_i = (int)(t->rank % tp);
    if (o->pp_inner) {
        t->pp_i = (int)(t->rank / tp % pp);
        t->dp_i = (int)(t->rank / (tp * pp));
    } else {
        t->dp_i = (int)(t->rank / tp % t->dp_n);
        t->pp_i = (int)(t->rank / (tp * t->dp_n));
    }
    if (t->pp_i == o->stage_slow)
        t->scale *= o->stage_slow_factor;
    snprintf(sim_train_layout, sizeof sim_train_layout,
             "\"kind\":\"layout\",\"tp\":%d,\"dp\":%d,\"pp\":%d,\"tp_size\":%ld,\"dp_size\":%d,"
             "\"pp_size\":%ld,\"microbatches\":%ld",
             t->tp_i, t->dp_i, t->pp_i, tp, t->dp_n, pp, o->microbatches);
    if (tp > 1)
        NCCL(ncclCommSplit(t->nccl, t->pp_i * t->dp_n + t->dp_i, t->tp_i, &t->tp_comm, NULL));
    if (t->dp_n > 1)
        NCCL(ncclCommSplit(t->nccl, (int)(t->pp_i * tp + t->tp_i), t->dp_i, &t->dp_comm, NULL));
    if (pp > 1)
        NCCL(ncclCommSplit(t->nccl, (int)(t->dp_i * tp + t->tp_i), t->pp_i, &t->pp_comm, NULL));
    /* the stage's layers: consecutive, the last stage takes what is left */
    long per = o->layers / pp;
    t->l0 = t->pp_i * per;
    t->l1 = t->pp_i == pp - 1 ? o->layers : t->l0 + per;
    t->act_bytes = (size_t)(o->act_mb * MIB) & ~(size_t)3;
    if (!t->act_bytes)
        t->act_bytes = 4;
    sim_train_buffer(&t->act_out, t->act_bytes);
    sim_train_buffer(&t->act_in, t->act_bytes);
}

/* --graph: the step's work captured on the compute stream (the communication
 * stream joins through the events), instantiated once. */
static void sim_train_capture(struct sim_train *t)
{
    CUgraph g;
    CU(cuStreamBeginCapture(t->compute, CU_STREAM_CAPTURE_MODE_GLOBAL));
    sim_train_gpu(t, t->o.graph_nccl ? SIM_TRAIN_WHOLE : SIM_TRAIN_PASSES);
    CU(cuStreamEndCapture(t->compute, &g));
    CU(cuGraphInstantiate(&t->graph, g, 0));
    CU(cuGraphDestroy(g));
}

/* A step's batch: --data-us's sleep, read and copy, then --slow-data's
 * reads; a function of its own (never inlined), so that the samples'
 * stacks say data loading. */
static __attribute__((noinline)) void sim_train_load_batch(struct sim_train *t, long step)
{
    const struct sim_train_opts *o = &t->o;
    if (o->data_us > 0) {
        sim_train_sleep_us(o->data_us);
        off_t off = (off_t)(step % SIM_TRAIN_DATA_BATCHES) * SIM_TRAIN_BATCH_BYTES;
        if (pread(t->data_fd, t->batch_host, SIM_TRAIN_BATCH_BYTES, off) != (ssize_t)SIM_TRAIN_BATCH_BYTES)
            sim_train_die("reading the data file: %s", strerror(errno));
        CU(cuMemcpyHtoDAsync(t->batch_dev, t->batch_host, SIM_TRAIN_BATCH_BYTES, t->compute));
    }
    if (t->slow_us > 0)
        sim_train_read_slowly(t);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

/* --host-wait: what the training thread waits on before it launches a
 * step. */
static __attribute__((noinline)) void sim_train_host_wait(struct sim_train *t)
{
    const struct sim_train_opts *o = &t->o;
    double us = o->host_wait_us;
    switch (o->host_wait) {
    case SIM_TRAIN_WAIT_SLEEP:
        sim_train_sleep_us(us);
        break;
    case SIM_TRAIN_WAIT_COND: {
        static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
        static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long long ns = (long long)until.tv_nsec + (long long)(us * 1e3);
        until.tv_sec += (time_t)(ns / 1000000000);
        until.tv_nsec = (long)(ns % 1000000000);
        pthread_mutex_lock(&mu);
        while (pthread_cond_timedwait(&cv, &mu, &until) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&mu);
        break;
    }
    case SIM_TRAIN_WAIT_POLL: {
        if (t->wait_pipe[0] < 0 && pipe2(t->wait_pipe, O_CLOEXEC) != 0)
            sim_train_die("pipe: %s", strerror(errno));
        struct pollfd pfd = { .fd = t->wait_pipe[0], .events = POLLIN };
        double until = sim_train_now_s() + us / 1e6;
        for (double left = us / 1e3; left > 0; left = (until - sim_train_now_s()) * 1e3)
            poll(&pfd, 1, (int)(left + 0.999));
        break;
    }
    case SIM_TRAIN_WAIT_WRITE: {
        char path[4200];
        snprintf(path, sizeof path, "%s/simtrain-log-rank%d.txt", o->ckpt_dir, t->rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0)
            sim_train_die("open %s: %s", path, strerror(errno));
        static unsigned char line[1024];
        memset(line, 'x', sizeof line);
        for (double k = 0; k < us; k++)
            sim_train_write_all(fd, line, sizeof line, path);
        if (fsync(fd) != 0 || close(fd) != 0)
            sim_train_die("fsync %s: %s", path, strerror(errno));
        break;
    }
    default:
        break;
    }
    __asm__ volatile("" ::: "memory");
}

/* --host-work: the CPU this rank's host spends before it launches a step. */
static __attribute__((noinline)) void sim_train_host_work(double us)
{
    double until = sim_train_now_s() + us / 1e6;
    volatile unsigned long spin = 0;
    while (sim_train_now_s() < until)
        for (int i = 0; i < 1000; i++)
            spin += (unsigned long)i;
    __asm__ volatile("" ::: "memory");
}

static void sim_train_step(struct sim_train *t, long step)
{
    const struct sim_train_opts *o = &t->o;
    sim_train_on(t, 0);
    sim_train_load_batch(t, step);
    if (o->host_work_rank == t->rank && o->host_work_us > 0)
        sim_train_host_work(o->host_work_us);
    if (o->host_wait)
        sim_train_host_wait(t);
    if (o->leak_mb > 0)
        sim_train_leak(t);
    if (t->acts)
        t->act_step_bytes = (size_t)((double)(1 + step % o->act_cycle) * o->layer_act_mb * MIB + 0.5);
    if (o->tp > 1 || o->pp > 1) {
        sim_train_gpu3d(t);
    } else if (!o->graph || step < SIM_TRAIN_GRAPH_WARMUP) {
        sim_train_gpu(t, SIM_TRAIN_WHOLE);
    } else {
        if (!t->graph)
            sim_train_capture(t);
        CU(cuGraphLaunch(t->graph, t->compute));
        if (!o->graph_nccl)
            sim_train_gpu(t, SIM_TRAIN_REST);
    }
    if (!o->no_step_sync || step == o->steps - 1)
        CU(cuStreamSynchronize(t->compute));
}

/* An evaluation step: the forward pass, then the metrics AllReduce'd. */
static void sim_train_eval(struct sim_train *t)
{
    const struct sim_train_opts *o = &t->o;
    for (long l = 0; l < o->layers; l++) {
        sim_train_on(t, t->layer_dev[l]);
        for (long k = 0; k < o->kernels; k++)
            sim_train_kernel(t, t->fwd[l], o->fwd_us / (double)o->kernels);
    }
    sim_train_on(t, 0);
    NCCL(ncclAllReduce((void *)(uintptr_t)t->metrics, (void *)(uintptr_t)t->metrics, SIM_TRAIN_METRICS,
                       ncclFloat32, ncclSum, t->nccl, t->compute));
    CU(cuStreamSynchronize(t->compute));
}

/* What SIMTRAIN_EVENTS gets: kept in memory, written once at exit. */
static struct sim_train_ckpt_log {
    long step;
    uint64_t start_ns, end_ns;
} *sim_train_ckpts;
static size_t sim_train_nckpts;

/* The steps as the program counts them, for SIMGPU_TRUTH (kept in memory,
 * written once at exit so that the trace holds no I/O of its own). */
static struct sim_train_step_log {
    uint64_t start_ns, end_ns;
    int eval;
    uint64_t live, cached;   /* device memory held at the end (sim_train_mem.on) */
} *sim_train_steps;
static size_t sim_train_nsteps;

static int sim_train_log_steps; /* SIMGPU_TRUTH is set: memory grows with the steps only then */

static void sim_train_step_begin(void)
{
    sim_train_mem.index = sim_train_mem.begun++;
    if (!sim_train_log_steps)
        return;
    void *grown = realloc(sim_train_steps, (sim_train_nsteps + 1) * sizeof(*sim_train_steps));
    if (!grown)
        sim_train_die("out of memory");
    sim_train_steps = grown;
    sim_train_steps[sim_train_nsteps].start_ns = sim_train_now_ns();
}

static void sim_train_step_end(int eval)
{
    sim_train_mem.index = -1;
    if (!sim_train_log_steps)
        return;
    sim_train_steps[sim_train_nsteps].end_ns = sim_train_now_ns();
    sim_train_steps[sim_train_nsteps].live = sim_train_mem.live;
    sim_train_steps[sim_train_nsteps].cached = sim_cache.bytes;
    sim_train_steps[sim_train_nsteps++].eval = eval;
}

/* --progress: the steps done, written over the file's start. */
static void sim_train_progress(const char *path, long steps)
{
    char line[32];
    int n = snprintf(line, sizeof(line), "%ld\n", steps);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        sim_train_die("--progress %s: %s", path, strerror(errno));
    if (pwrite(fd, line, (size_t)n, 0) != n)
        sim_train_die("--progress %s: %s", path, strerror(errno));
    close(fd);
}

/* A whole line, or the rank ends. */
static void sim_train_write_line(int fd, const char *line, int n, const char *path)
{
    if (n < 0 || write(fd, line, (size_t)n) != n)
        sim_train_die("SIMGPU_TRUTH %s: %s", path, strerror(errno));
}

/* The memory lines after the steps (sim_train_mem.on; formats in --help). */
static void sim_train_write_memory(int fd, int rank, const char *path)
{
    char line[512], peak_index[24] = "null";
    if (sim_train_mem.peak_index >= 0)
        snprintf(peak_index, sizeof peak_index, "%ld", sim_train_mem.peak_index);
    int n = snprintf(line, sizeof line,
                     "{\"pid\":%d,\"rank\":%d,\"kind\":\"train_memory\",\"peak_bytes\":%llu,\"peak_index\":%s,"
                     "\"peak_ns\":%llu,\"leak_bytes_per_step\":%llu,\"cache_retries\":%ld,\"cache_retry_ns\":%llu}\n",
                     (int)getpid(), rank, (unsigned long long)sim_train_mem.peak, peak_index,
                     (unsigned long long)sim_train_mem.peak_ns, (unsigned long long)sim_train_mem.leak_bytes,
                     sim_cache.retries, (unsigned long long)sim_cache.retry_ns);
    sim_train_write_line(fd, line, n, path);
    if (!sim_train_mem.oom)
        return;
    n = snprintf(line, sizeof line,
                 "{\"pid\":%d,\"rank\":%d,\"kind\":\"oom\",\"step\":%ld,\"index\":%ld,\"bytes\":%llu,"
                 "\"free_bytes\":%llu,\"total_bytes\":%llu,\"ns\":%llu}\n",
                 (int)getpid(), rank, sim_train_mem.oom_step, sim_train_mem.oom_index,
                 (unsigned long long)sim_train_mem.oom_bytes, (unsigned long long)sim_train_mem.oom_free,
                 (unsigned long long)sim_train_mem.oom_total, (unsigned long long)sim_train_mem.oom_ns);
    sim_train_write_line(fd, line, n, path);
}

/* SIMGPU_TRUTH's path with "%p" made the pid, as the simulator reads it. */
static void sim_train_write_steps(int rank)
{
    const char *pattern = getenv("SIMGPU_TRUTH");
    char path[4096], line[384], mem[96] = "";
    size_t o = 0;
    if (!pattern || !*pattern)
        return;
    for (const char *p = pattern; *p && o + 16 < sizeof(path); p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = '\0';
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        sim_train_die("SIMGPU_TRUTH %s: %s", path, strerror(errno));
    if (sim_train_layout[0]) {
        int n = snprintf(line, sizeof(line), "{\"pid\":%d,\"rank\":%d,%s}\n", (int)getpid(), rank,
                         sim_train_layout);
        if (write(fd, line, (size_t)n) != n)
            sim_train_die("SIMGPU_TRUTH %s: %s", path, strerror(errno));
    }
    for (size_t i = 0; i < sim_train_nsteps; i++) {
        const struct sim_train_step_log *st = &sim_train_steps[i];
        if (sim_train_mem.on)
            snprintf(mem, sizeof mem, ",\"live_bytes\":%llu", (unsigned long long)st->live);
        if (sim_train_mem.on && sim_train_mem.cache)
            snprintf(mem + strlen(mem), sizeof mem - strlen(mem), ",\"cached_bytes\":%llu",
                     (unsigned long long)st->cached);
        int n = snprintf(line, sizeof(line),
                         "{\"pid\":%d,\"rank\":%d,\"kind\":\"step\",\"index\":%zu,\"phase\":\"%s\","
                         "\"start_ns\":%llu,\"end_ns\":%llu%s}\n",
                         (int)getpid(), rank, i, st->eval ? "eval" : "train",
                         (unsigned long long)st->start_ns, (unsigned long long)st->end_ns, mem);
        sim_train_write_line(fd, line, n, path);
    }
    if (sim_train_mem.on)
        sim_train_write_memory(fd, rank, path);
    close(fd);
}

/* A step's allocation found the device full: PyTorch's message, the truth so
 * far, and the rank ends (its peers fail their next collective). */
static void sim_train_oom(struct sim_train *t, size_t bytes)
{
    size_t free_b = 0, total_b = 0;
    sim_train_mem.oom_ns = sim_train_now_ns();
    CU(cuMemGetInfo(&free_b, &total_b));
    fprintf(stderr, "simtrain: CUDA out of memory at step %ld: tried to allocate %.2f MiB; %.2f MiB free of %.2f MiB\n",
            t->step, (double)bytes / MIB, (double)free_b / MIB, (double)total_b / MIB);
    sim_train_mem.oom = 1;
    sim_train_mem.oom_step = t->step;
    sim_train_mem.oom_index = sim_train_mem.index;
    sim_train_mem.oom_bytes = bytes;
    sim_train_mem.oom_free = free_b;
    sim_train_mem.oom_total = total_b;
    sim_train_write_steps(t->rank);
    exit(1);
}

static void sim_train_write_events(int rank, uint64_t main_start, uint64_t main_end)
{
    const char *path = getenv("SIMTRAIN_EVENTS");
    if (!path || !*path)
        return;
    size_t cap = 128 * (sim_train_nckpts + 1), n = 0;
    char *buf = malloc(cap);
    if (!buf)
        sim_train_die("out of memory");
    for (size_t i = 0; i < sim_train_nckpts; i++)
        n += (size_t)snprintf(buf + n, cap - n,
                              "{\"rank\":%d,\"event\":\"checkpoint\",\"step\":%ld,\"start_ns\":%llu,\"end_ns\":%llu}\n",
                              rank, sim_train_ckpts[i].step, (unsigned long long)sim_train_ckpts[i].start_ns,
                              (unsigned long long)sim_train_ckpts[i].end_ns);
    n += (size_t)snprintf(buf + n, cap - n, "{\"rank\":%d,\"event\":\"main\",\"start_ns\":%llu,\"end_ns\":%llu}\n",
                          rank, (unsigned long long)main_start, (unsigned long long)main_end);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
        sim_train_die("SIMTRAIN_EVENTS %s: %s", path, strerror(errno));
    close(fd);
    free(buf);
}

static void sim_train_checkpoint(struct sim_train *t, long step)
{
    char path[4096];
    CU(cuMemcpyDtoHAsync(t->ckpt_host, t->ckpt_dev, t->ckpt_bytes, t->compute));
    CU(cuStreamSynchronize(t->compute));
    snprintf(path, sizeof(path), "%s/ckpt-rank%d-step%ld.bin", t->o.ckpt_dir, t->rank, step);
    void *grown = realloc(sim_train_ckpts, (sim_train_nckpts + 1) * sizeof(*sim_train_ckpts));
    if (!grown)
        sim_train_die("out of memory");
    sim_train_ckpts = grown;
    struct sim_train_ckpt_log *log = &sim_train_ckpts[sim_train_nckpts++];
    log->step = step;
    log->start_ns = sim_train_now_ns();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        sim_train_die("open %s: %s", path, strerror(errno));
    sim_train_write_all(fd, t->ckpt_host, t->ckpt_bytes, path);
    if (fsync(fd) != 0 || close(fd) != 0)
        sim_train_die("fsync %s: %s", path, strerror(errno));
    log->end_ns = sim_train_now_ns();
}

static void sim_train_setup(struct sim_train *t)
{
    const struct sim_train_opts *o = &t->o;
    CUmodule mods[SIM_TRAIN_MAX_DEVICES];
    char name[64], data_path[4096];
    int local = sim_train_env_int("LOCAL_RANK", 0);

    sim_train_load_driver(sim_train_mem_options(o));
    CU(cuInit(0));
    t->layer_dev = calloc((size_t)o->layers, sizeof(*t->layer_dev));
    if (!t->layer_dev)
        sim_train_die("out of memory");
    static const char image[] = "simtrain kernels";
    for (int d = (int)o->devices - 1; d >= 0; d--) {
        CU(cuDeviceGet(&t->devs[d], local * (int)o->devices + d));
        CU(cuDevicePrimaryCtxRetain(&t->ctxs[d], t->devs[d]));
        CU(cuCtxSetCurrent(t->ctxs[d]));
        CU(cuModuleLoadData(&mods[d], image));
        CU(cuStreamCreate(&t->computes[d], CU_STREAM_NON_BLOCKING));
        CU(cuEventCreate(&t->handoff[d], CU_EVENT_DISABLE_TIMING));
    }
    t->dev = t->devs[0];
    t->compute = t->computes[0];
    int sms = 0;
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, t->dev));
    t->blocks = o->kernel_blocks ? (unsigned)o->kernel_blocks : sms > 0 ? (unsigned)sms : 1;
    t->fwd = calloc((size_t)o->layers, sizeof(*t->fwd));
    t->bwd = calloc((size_t)o->layers, sizeof(*t->bwd));
    t->bwd_done = calloc((size_t)o->layers, sizeof(*t->bwd_done));
    t->grads = calloc((size_t)o->layers, sizeof(*t->grads));
    if (!t->fwd || !t->bwd || !t->bwd_done || !t->grads)
        sim_train_die("out of memory");
    t->bucket_bytes = (size_t)(o->bucket_mb * MIB) & ~(size_t)3;
    if (t->bucket_bytes == 0)
        t->bucket_bytes = 4;
    for (long l = 0; l < o->layers; l++) {
        int d = (int)(l * o->devices / o->layers);
        t->layer_dev[l] = d;
        CU(cuCtxSetCurrent(t->ctxs[d]));
        snprintf(name, sizeof(name), "fwd_gemm_l%ld", l);
        CU(cuModuleGetFunction(&t->fwd[l], mods[d], name));
        snprintf(name, sizeof(name), "bwd_gemm_l%ld", l);
        CU(cuModuleGetFunction(&t->bwd[l], mods[d], name));
        CU(cuEventCreate(&t->bwd_done[l], CU_EVENT_DISABLE_TIMING));
        sim_train_buffer(&t->grads[l], t->bucket_bytes);
    }
    CU(cuCtxSetCurrent(t->ctxs[0]));
    CU(cuModuleGetFunction(&t->optimizer, mods[0], "optimizer_step"));
    if (o->eval_every > 0)
        sim_train_buffer(&t->metrics, SIM_TRAIN_METRICS * sizeof(float));
    if (o->layer_act_mb > 0 && !(t->acts = calloc((size_t)o->layers, sizeof(*t->acts))))
        sim_train_die("out of memory");
    CU(cuEventCreate(&t->comm_done, CU_EVENT_DISABLE_TIMING));
    CU(cuStreamCreate(&t->comm, CU_STREAM_NON_BLOCKING));

    int loads = o->data_us > 0 || t->slow_us > 0;
    if (o->ckpt_every > 0 || loads) {
        if (mkdir(o->ckpt_dir, 0755) != 0 && errno != EEXIST)
            sim_train_die("mkdir %s: %s", o->ckpt_dir, strerror(errno));
    }
    if (o->ckpt_every > 0) {
        t->ckpt_bytes = (size_t)(o->ckpt_mb * MIB + 0.5);
        sim_train_buffer(&t->ckpt_dev, t->ckpt_bytes);
        CU(cuMemAllocHost((void **)&t->ckpt_host, t->ckpt_bytes));
        sim_train_fill(t->ckpt_host, t->ckpt_bytes, o->seed + t->rank);
        CU(cuMemcpyHtoDAsync(t->ckpt_dev, t->ckpt_host, t->ckpt_bytes, t->compute));
    }
    t->data_fd = -1;
    t->wait_pipe[0] = t->wait_pipe[1] = -1;
    if (loads) {
        size_t n = (size_t)SIM_TRAIN_BATCH_BYTES * SIM_TRAIN_DATA_BATCHES;
        unsigned char *buf = malloc(n);
        snprintf(data_path, sizeof(data_path), "%s/simtrain-data-rank%d.bin", o->ckpt_dir, t->rank);
        t->data_fd = open(data_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (!buf || t->data_fd < 0)
            sim_train_die("cannot make the data file %s: %s", data_path, strerror(errno));
        sim_train_fill(buf, n, o->seed);
        sim_train_write_all(t->data_fd, buf, n, data_path);
        free(buf);
        unlink(data_path);   /* read through the open descriptor; nothing left behind */
        CU(cuMemAllocHost((void **)&t->batch_host, SIM_TRAIN_BATCH_BYTES));
        sim_train_buffer(&t->batch_dev, SIM_TRAIN_BATCH_BYTES);
    }
}

static void sim_train_teardown(struct sim_train *t)
{
    sim_train_on(t, 0);
    CU(cuStreamSynchronize(t->compute));
    CU(cuStreamSynchronize(t->comm));
    ncclComm_t groups[] = { t->tp_comm, t->dp_comm, t->pp_comm };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        if (groups[g])
            NCCL(ncclCommDestroy(groups[g]));
    if (t->act_out) {
        sim_train_mem_free(t->act_out, t->act_bytes);
        sim_train_mem_free(t->act_in, t->act_bytes);
    }
    NCCL(ncclCommDestroy(t->nccl));
    if (t->graph)
        CU(cuGraphExecDestroy(t->graph));
    for (long l = 0; l < t->o.layers; l++) {
        CU(cuEventDestroy(t->bwd_done[l]));
        sim_train_mem_free(t->grads[l], t->bucket_bytes);
    }
    CU(cuEventDestroy(t->comm_done));
    if (t->metrics)
        sim_train_mem_free(t->metrics, SIM_TRAIN_METRICS * sizeof(float));
    if (t->ckpt_host) {
        CU(cuMemFreeHost(t->ckpt_host));
        sim_train_mem_free(t->ckpt_dev, t->ckpt_bytes);
    }
    if (t->batch_host) {
        CU(cuMemFreeHost(t->batch_host));
        sim_train_mem_free(t->batch_dev, SIM_TRAIN_BATCH_BYTES);
        close(t->data_fd);
    }
    /* the cache's blocks go back (torch.cuda.empty_cache): what stays is what
     * --leak-mb took */
    sim_cache_empty(-1);
    free(sim_cache.free);
    free(t->acts);
    CU(cuStreamDestroy(t->comm));
    for (int d = 0; d < (int)t->o.devices; d++) {
        CU(cuStreamDestroy(t->computes[d]));
        CU(cuEventDestroy(t->handoff[d]));
    }
    for (int d = 0; d < (int)t->o.devices; d++)
        CU(cuDevicePrimaryCtxRelease(t->devs[d]));
}

/* SIMTRAIN_CONFIG="--ckpt-every 4": options after the command line's, as a
 * training script's configuration file gives them: they change the run
 * and not its command line (what ringside history groups runs by). */
static char **sim_train_with_config(int *argc, char **argv)
{
    const char *cfg = getenv("SIMTRAIN_CONFIG");
    if (!cfg || !*cfg)
        return argv;
    char *words = strdup(cfg);
    char **all = calloc((size_t)*argc + strlen(cfg) / 2 + 2, sizeof *all);
    if (!words || !all)
        sim_train_die("out of memory");
    int n = 0;
    for (int i = 0; i < *argc; i++)
        all[n++] = argv[i];
    for (char *w = strtok(words, " \t"); w; w = strtok(NULL, " \t"))
        all[n++] = w;
    *argc = n;
    return all;
}

int main(int argc, char **argv)
{
    struct sim_train t = { 0 };
    char path[4096], bw[64];
    ncclUniqueId id;
    uint64_t main_start = sim_train_now_ns();

    argv = sim_train_with_config(&argc, argv);
    sim_train_parse(argc, argv, &t.o);
    t.rank = sim_train_rank = sim_train_env_int("RANK", 0);
    t.world = sim_train_env_int("WORLD_SIZE", 1);
    if (t.world < 1 || t.rank >= t.world)
        sim_train_die("RANK=%d is not below WORLD_SIZE=%d", t.rank, t.world);
    t.scale = t.o.straggler_rank == t.rank ? t.o.straggler_factor : 1;
    t.slow_us = t.o.slow_data_rank == t.rank ? t.o.slow_data_us : 0;
    t.drift = 1;
    if (t.o.bw_gbs > 0) {
        snprintf(bw, sizeof(bw), "%g", t.o.bw_gbs);
        setenv("SIMNCCL_BW_GBS", bw, 1);
    }
    if (t.o.timeout_s > 0) {
        snprintf(bw, sizeof(bw), "%g", t.o.timeout_s);
        setenv("SIMNCCL_TIMEOUT_S", bw, 1);
        sim_train_abort_on_error = 1;
    }
    if (sim_train_mem_options(&t.o))
        setenv("SIMGPU_TRUTH_MEMORY", "1", 1);
    const char *mem_truth = getenv("SIMGPU_TRUTH_MEMORY");
    sim_train_mem.on = mem_truth && !strcmp(mem_truth, "1");
    sim_train_mem.cache = t.o.cache;
    if (t.o.leak_mb > 0) {
        size_t leak = (size_t)(t.o.leak_mb * MIB + 0.5);
        sim_train_mem.leak_bytes = t.o.cache ? sim_cache_round(leak) : leak;
    }
    sim_train_setup(&t);

    sim_train_id_path(path, sizeof(path));
    if (t.world > 1)
        sim_train_rendezvous(t.rank, &id, path);
    else
        NCCL(ncclGetUniqueId(&id));
    sim_train_comm = &t.nccl;
    NCCL(ncclCommInitRank(&t.nccl, t.world, id, t.rank));
    if (t.rank == 0 && t.world > 1)
        unlink(path);
    if (t.o.tp > 1 || t.o.pp > 1)
        sim_train_groups(&t);

    if (t.o.seconds > 0 && t.world > 1)
        sim_train_usage_error("--seconds: one rank only (WORLD_SIZE is %d)", t.world);
    const char *truth = getenv("SIMGPU_TRUTH");
    sim_train_log_steps = truth && *truth;
    double t0 = sim_train_now_s();
    long done = 0;
    for (long s = 0; s < t.o.steps; s++) {
        if (t.o.seconds > 0 && sim_train_now_s() - t0 >= t.o.seconds)
            break;
        if (t.o.steps > 1 && t.o.steps < LONG_MAX)
            t.drift = 1 + t.o.drift_pct / 100 * (double)s / (double)(t.o.steps - 1);
        sim_train_step_begin();
        t.stall_now = t.o.stall_rank == t.rank && t.o.stall_step == s;
        t.crash_now = t.o.crash_rank == t.rank && t.o.crash_step == s;
        t.desync_now = t.o.desync_rank == t.rank && t.o.desync_step == s;
        t.step = s;
        sim_train_step(&t, s);
        if (t.o.ckpt_every > 0 && (s + 1) % t.o.ckpt_every == 0)
            sim_train_checkpoint(&t, s + 1);
        sim_train_step_end(0);
        for (long e = 0; t.o.eval_every > 0 && (s + 1) % t.o.eval_every == 0 && e < t.o.eval_steps; e++) {
            sim_train_step_begin();
            sim_train_eval(&t);
            sim_train_step_end(1);
        }
        done = s + 1;
        if (t.o.progress && done % 100 == 0)
            sim_train_progress(t.o.progress, done);
    }
    double dt = sim_train_now_s() - t0;
    sim_train_teardown(&t);
    if (t.o.progress)
        sim_train_progress(t.o.progress, done);
    printf("simtrain: rank %d of %d: %ld steps in %.3f s (%.3f ms/step)\n", t.rank, t.world, done, dt,
           dt * 1e3 / (double)(done ? done : 1));
    sim_train_write_events(t.rank, main_start, sim_train_now_ns());
    sim_train_write_steps(t.rank);
    free(sim_train_ckpts);
    free(sim_train_steps);
    return 0;
}
