/* bench_launch: the launch workload of `make bench`. It reaches the simulated
 * driver as the CUDA runtime does (cuGetProcAddress_v2), then makes N
 * cuLaunchKernel calls of a kernel lasting 0 ns on one stream, synchronising
 * every 1000, and prints the time per launch of that loop alone (wall and
 * this thread's CPU), so tools/bench/bench.sh can compare runs with and without the
 * agent, with and without GPU timing. With "alloc", N cuMemAlloc_v2 and
 * cuMemFree_v2 pairs of 2 MiB instead (the caching allocators' segment
 * size), the time per pair. Usage: bench_launch N [alloc]
 * (LD_LIBRARY_PATH=build/sim). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>

#define DRIVER(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuStreamCreate) X(cuLaunchKernel) X(cuStreamSynchronize) \
    X(cuMemAlloc) X(cuMemFree)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    DRIVER(MEMBER)
#undef MEMBER
} d;

/* A thread that waits for good: with it the process is multi-threaded, as
 * every training process is, and the C library's malloc takes its locks
 * with or without the agent (whose writer thread would otherwise be the
 * difference the allocation row measures). */
static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static double now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "bench_launch: %s failed (%d)\n", what, (int)r);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long n = argc >= 2 ? strtol(argv[1], NULL, 10) : 0;
    int alloc = argc == 3 && strcmp(argv[2], "alloc") == 0;
    if (n <= 0 || argc > 3 || (argc == 3 && !alloc)) {
        fprintf(stderr, "usage: bench_launch N [alloc]\n");
        return 2;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(cuGetProcAddress_v2) *gpa = h ? (__typeof__(gpa))dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        fprintf(stderr, "bench_launch: no libcuda.so.1 with cuGetProcAddress_v2 (LD_LIBRARY_PATH=build/sim)\n");
        return 1;
    }
    CUdriverProcAddressQueryResult st;
#define RESOLVE(fn) check(gpa(#fn, (void **)&d.fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st), #fn);
    DRIVER(RESOLVE)
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    check(d.cuInit(0), "cuInit");
    check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(d.cuModuleLoadData(&mod, "bench"), "cuModuleLoadData");
    check(d.cuModuleGetFunction(&f, mod, "bench_kernel"), "cuModuleGetFunction");
    check(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    if (alloc) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) != 0) {
            fprintf(stderr, "bench_launch: pthread_create failed\n");
            return 1;
        }
        CUdeviceptr p;
        for (int i = 0; i < 1000; i++) {
            check(d.cuMemAlloc(&p, 2u << 20), "cuMemAlloc_v2");
            check(d.cuMemFree(p), "cuMemFree_v2");
        }
        double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++) {
            check(d.cuMemAlloc(&p, 2u << 20), "cuMemAlloc_v2");
            check(d.cuMemFree(p), "cuMemFree_v2");
        }
        double w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        printf("pairs=%ld wall_ns=%.1f thread_cpu_ns=%.1f\n", n, (w1 - w0) / (double)n, (c1 - c0) / (double)n);
        return 0;
    }
    uint64_t ns = 0;
    void *params[] = { &ns };
    /* warm up: first-call costs (name cache, event pool) are not the steady state */
    for (int i = 0; i < 1000; i++)
        check(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
    check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
    double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) {
        check(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
        if (i % 1000 == 999)
            check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
    }
    check(d.cuStreamSynchronize(s), "cuStreamSynchronize");
    double w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    printf("launches=%ld wall_ns=%.1f thread_cpu_ns=%.1f\n", n, (w1 - w0) / (double)n, (c1 - c0) / (double)n);
    return 0;
}
