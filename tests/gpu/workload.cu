/* The real-GPU workload of `make gpu-check`, through the real CUDA runtime and
 * driver: kernels that spin for a known number of SM clock cycles with chosen launch
 * geometry (every SM, a quarter of the SMs, many waves, two streams at once, many tiny
 * launches), copies of known sizes, and, when built with -DHAVE_NCCL, a one-rank NCCL
 * all-reduce. Its own truth goes to the file argv[1], one JSON object per line: the
 * device, every kernel launch (geometry, the occupancy calculator's blocks per SM, its
 * cudaEvent times), every copy and the all-reduce. tests/gpu/check.py holds the
 * agent's trace and ringside's report against it. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <cuda_runtime.h>
#ifdef HAVE_NCCL
#include <nccl.h>
#endif

/* A failed CUDA call ends the run with the call, where it was and the runtime's words. */
#define CK(call) ck((call), #call, __LINE__)
static void ck(cudaError_t e, const char *what, int line)
{
    if (e == cudaSuccess)
        return;
    std::fprintf(stderr, "workload: line %d: %s: %s (%s)\n", line, what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    std::exit(1);
}

__device__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

/* One name per role, so that launches can be counted by name; extern "C" keeps the
 * names as written (no C++ mangling) in the trace and the report. */
extern "C" __global__ void spin_full(long long cycles) { spin(cycles); }
extern "C" __global__ void spin_quarter(long long cycles) { spin(cycles); }
extern "C" __global__ void spin_waves(long long cycles) { spin(cycles); }
extern "C" __global__ void spin_side(long long cycles) { spin(cycles); }
extern "C" __global__ void spin_tiny(long long cycles) { spin(cycles); }

enum { K_FULL, K_QUARTER, K_WAVES, K_SIDE, K_TINY, NKERNELS };
static const struct {
    const char *name;
    void (*fn)(long long);
} kernels[NKERNELS] = {
    { "spin_full", spin_full },   { "spin_quarter", spin_quarter }, { "spin_waves", spin_waves },
    { "spin_side", spin_side },   { "spin_tiny", spin_tiny },
};

/* What the truth file needs of every operation; kept until the end, when the events
 * are read (an untimed launch has no events). */
struct op {
    int kernel;              /* -1: a copy */
    dim3 grid, block;
    size_t smem;
    int blocks_per_sm;
    double target_ms;
    const char *dir;         /* copies: htod, dtoh, dtod */
    size_t bytes;
    int stream;              /* 0: the legacy default stream, 1 and 2: the workload's own */
    cudaEvent_t start, end;
};

#define MAX_OPS 512
static struct op ops[MAX_OPS];
static int nops;
static cudaStream_t streams[3];
static struct {
    int sms, clock_khz, max_threads_per_sm;
} dev;

static struct op *op_new(int stream, int timed)
{
    if (nops == MAX_OPS) {
        std::fprintf(stderr, "workload: more than %d operations\n", MAX_OPS);
        std::exit(1);
    }
    struct op *o = &ops[nops++];
    *o = op{};
    o->stream = stream;
    if (timed) {
        CK(cudaEventCreate(&o->start));
        CK(cudaEventCreate(&o->end));
        CK(cudaEventRecord(o->start, streams[stream]));
    }
    return o;
}

static void op_done(struct op *o)
{
    if (o->end)
        CK(cudaEventRecord(o->end, streams[o->stream]));
}

/* Launches kernel k to spin for ms milliseconds of the peak SM clock in every block;
 * ms <= 0: a warm-up (1000 cycles, untimed), which loads the kernel's module so that
 * no timed launch waits for it. */
static void launch(int k, dim3 grid, dim3 block, size_t smem, int stream, double ms)
{
    int bps;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (const void *)kernels[k].fn,
                                                     (int)(block.x * block.y * block.z), smem));
    long long cycles = ms > 0 ? (long long)(ms * dev.clock_khz) : 1000;
    void *args[] = { &cycles };
    /* Its start event goes last, right before the launch. */
    struct op *o = op_new(stream, ms > 0);
    o->kernel = k;
    o->grid = grid;
    o->block = block;
    o->smem = smem;
    o->blocks_per_sm = bps;
    o->target_ms = ms > 0 ? ms : 0;
    CK(cudaLaunchKernel((const void *)kernels[k].fn, grid, block, args, smem, streams[stream]));
    op_done(o);
}

static void copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, const char *dir,
                 int stream)
{
    struct op *o = op_new(stream, 1);
    o->kernel = -1;
    o->dir = dir;
    o->bytes = bytes;
    if (stream == 0)
        CK(cudaMemcpy(dst, src, bytes, kind));
    else
        CK(cudaMemcpyAsync(dst, src, bytes, kind, streams[stream]));
    op_done(o);
}

static void json_str(FILE *f, const char *s)
{
    std::fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            std::fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            std::fprintf(f, "\\u%04x", *s);
        else
            std::fputc(*s, f);
    }
    std::fputc('"', f);
}

static double ms_between(cudaEvent_t a, cudaEvent_t b)
{
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

/* Event times in ms from base, null for untimed launches. */
static void write_op(FILE *f, const struct op *o, cudaEvent_t base)
{
    if (o->kernel >= 0) {
        std::fprintf(f, "{\"type\":\"kernel\",\"name\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
                        "\"dyn_smem\":%zu,\"stream\":%d,\"sms\":%d,\"blocks_per_sm\":%d,"
                        "\"max_threads_per_sm\":%d,\"target_ms\":%.4f",
                     kernels[o->kernel].name, o->grid.x, o->grid.y, o->grid.z, o->block.x, o->block.y,
                     o->block.z, o->smem, o->stream, dev.sms, o->blocks_per_sm, dev.max_threads_per_sm,
                     o->target_ms);
    } else {
        std::fprintf(f, "{\"type\":\"copy\",\"dir\":\"%s\",\"bytes\":%zu,\"stream\":%d", o->dir, o->bytes,
                     o->stream);
    }
    if (o->start)
        std::fprintf(f, ",\"start_ms\":%.6f,\"end_ms\":%.6f,\"event_ms\":%.6f}\n", ms_between(base, o->start),
                     ms_between(base, o->end), ms_between(o->start, o->end));
    else
        std::fputs(",\"start_ms\":null,\"end_ms\":null,\"event_ms\":null}\n", f);
}

#ifdef HAVE_NCCL
#define NCK(call) nck((call), #call, __LINE__)
static void nck(ncclResult_t r, const char *what, int line)
{
    if (r == ncclSuccess)
        return;
    std::fprintf(stderr, "workload: line %d: %s: %s\n", line, what, ncclGetErrorString(r));
    std::exit(1);
}

/* One rank on device 0: ncclCommInitAll, one out-of-place sum of count floats on stream 1. */
static void all_reduce(FILE *truth, size_t count)
{
    int devs[1] = { 0 }, version = 0;
    ncclComm_t comm;
    float *send, *recv;
    NCK(ncclGetVersion(&version));
    NCK(ncclCommInitAll(&comm, 1, devs));
    CK(cudaMalloc(&send, count * sizeof(float)));
    CK(cudaMalloc(&recv, count * sizeof(float)));
    CK(cudaMemsetAsync(send, 0, count * sizeof(float), streams[1]));
    NCK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, streams[1]));
    CK(cudaStreamSynchronize(streams[1]));
    ncclResult_t async;
    NCK(ncclCommGetAsyncError(comm, &async));
    NCK(async);
    NCK(ncclCommDestroy(comm));
    CK(cudaFree(send));
    CK(cudaFree(recv));
    std::fprintf(truth, "{\"type\":\"allreduce\",\"count\":%zu,\"bytes\":%zu,\"datatype\":\"float\","
                        "\"nranks\":1,\"nccl_version\":%d}\n",
                 count, count * sizeof(float), version);
}
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: workload TRUTH.jsonl\n");
        return 2;
    }
    FILE *truth = std::fopen(argv[1], "w");
    if (!truth) {
        std::perror(argv[1]);
        return 1;
    }
    double t_start = now_s();
    int ndev = 0, runtime = 0, driver = 0;
    CK(cudaDriverGetVersion(&driver));
    CK(cudaRuntimeGetVersion(&runtime));
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaDeviceGetAttribute(&dev.sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&dev.clock_khz, cudaDevAttrClockRate, 0));
    CK(cudaDeviceGetAttribute(&dev.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
    if (dev.sms < 4 || dev.clock_khz <= 0) {
        std::fprintf(stderr, "workload: device 0 reports %d SMs at %d kHz: cannot size the kernels\n",
                     dev.sms, dev.clock_khz);
        return 1;
    }
    int nccl = 0;
#ifdef HAVE_NCCL
    nccl = 1;
#endif
    std::fprintf(truth, "{\"type\":\"device\",\"name\":");
    json_str(truth, prop.name);
    std::fprintf(truth, ",\"devices\":%d,\"cc\":\"%d.%d\",\"sms\":%d,\"clock_khz\":%d,"
                        "\"max_threads_per_sm\":%d,\"runtime_version\":%d,\"driver_version\":%d,"
                        "\"nccl\":%s,\"pid\":%d}\n",
                 ndev, prop.major, prop.minor, dev.sms, dev.clock_khz, dev.max_threads_per_sm, runtime,
                 driver, nccl ? "true" : "false", (int)getpid());

    streams[0] = 0;
    CK(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&streams[2], cudaStreamNonBlocking));
    cudaEvent_t base;
    CK(cudaEventCreate(&base));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(base, streams[1]));

    const int sms = dev.sms;
    const dim3 full_grid(sms, 4), full_block(256), quarter_grid(sms / 4), quarter_block(32, 8);
    const dim3 tiny_grid(1), tiny_block(32), side_block(256);
    /* spin_waves: 32 KiB of dynamic shared memory per block, so that shared memory, not
     * threads, bounds the blocks per SM; six full waves of them. */
    const size_t waves_smem = 32 << 10;
    int waves_bps;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&waves_bps, (const void *)spin_waves, 256, waves_smem));
    if (waves_bps < 1) {
        std::fprintf(stderr, "workload: spin_waves fits no block of 256 threads and %zu bytes per SM\n",
                     waves_smem);
        return 1;
    }
    const dim3 waves_grid(6 * waves_bps * sms), waves_block(256);

    /* Warm-ups: each kernel once with the geometry and stream of its timed launches. */
    launch(K_FULL, full_grid, full_block, 0, 1, 0);
    launch(K_QUARTER, quarter_grid, quarter_block, 0, 1, 0);
    launch(K_WAVES, waves_grid, waves_block, waves_smem, 1, 0);
    launch(K_SIDE, quarter_grid, side_block, 0, 2, 0);
    launch(K_TINY, tiny_grid, tiny_block, 0, 1, 0);
    CK(cudaDeviceSynchronize());

    /* Copies: pageable host to device (cudaMemcpy, legacy stream), pinned device to
     * host and device to device (asynchronous, stream 1); sizes no library picks. */
    const size_t h2d = (24u << 20) + 4096, d2h = (8u << 20) + 12288, d2d = (6u << 20) + 8192;
    char *pageable = (char *)std::malloc(h2d), *pinned, *da, *db;
    if (!pageable) {
        std::fprintf(stderr, "workload: out of memory\n");
        return 1;
    }
    std::memset(pageable, 1, h2d);
    CK(cudaMallocHost(&pinned, d2h));
    CK(cudaMalloc(&da, h2d));
    CK(cudaMalloc(&db, d2d));
    copy(da, pageable, h2d, cudaMemcpyHostToDevice, "htod", 0);
    /* A pageable copy may return before its DMA ends; the others read what it wrote. */
    CK(cudaDeviceSynchronize());
    copy(pinned, da, d2h, cudaMemcpyDeviceToHost, "dtoh", 1);
    copy(db, da, d2d, cudaMemcpyDeviceToDevice, "dtod", 1);
    CK(cudaDeviceSynchronize());

    for (int i = 0; i < 5; i++)
        launch(K_FULL, full_grid, full_block, 0, 1, 2.0);
    for (int i = 0; i < 5; i++)
        launch(K_QUARTER, quarter_grid, quarter_block, 0, 1, 2.0);
    for (int i = 0; i < 3; i++)
        launch(K_WAVES, waves_grid, waves_block, waves_smem, 1, 0.5);
    CK(cudaDeviceSynchronize());

    /* Two streams at once: a quarter of the SMs each, so half of them busy together. */
    for (int i = 0; i < 3; i++) {
        launch(K_QUARTER, quarter_grid, quarter_block, 0, 1, 4.0);
        launch(K_SIDE, quarter_grid, side_block, 0, 2, 4.0);
        CK(cudaDeviceSynchronize());
    }

    for (int i = 0; i < 200; i++)
        launch(K_TINY, tiny_grid, tiny_block, 0, 1, 0.01);
    CK(cudaDeviceSynchronize());

    for (int i = 0; i < nops; i++)
        write_op(truth, &ops[i], base);
#ifdef HAVE_NCCL
    all_reduce(truth, (size_t)1 << 20);
#endif
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < nops; i++) {
        if (ops[i].start) {
            CK(cudaEventDestroy(ops[i].start));
            CK(cudaEventDestroy(ops[i].end));
        }
    }
    CK(cudaEventDestroy(base));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFreeHost(pinned));
    std::free(pageable);
    CK(cudaStreamDestroy(streams[1]));
    CK(cudaStreamDestroy(streams[2]));
    std::fprintf(truth, "{\"type\":\"end\",\"ops\":%d,\"wall_s\":%.3f}\n", nops, now_s() - t_start);
    if (std::fclose(truth) != 0) {
        std::perror(argv[1]);
        return 1;
    }
    std::printf("workload: %s, %d SMs at %d MHz: %d operations%s in %.2f s\n", prop.name, dev.sms,
                dev.clock_khz / 1000, nops, nccl ? " and a one-rank all-reduce" : "", now_s() - t_start);
    return 0;
}
