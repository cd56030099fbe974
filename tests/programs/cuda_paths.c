/* A driver API workload for the capture tests, reaching the driver one of the
 * ways real programs do (argv[1]): "exported" (the symbols the dynamic linker
 * binds, as a program linked with -lcuda), "triton" (dlopen libcuda.so.1
 * locally, dlsym on its handle), "procaddr" / "procaddr1" (dlsym
 * cuGetProcAddress_v2 / cuGetProcAddress, then every entry point through it,
 * as the CUDA runtime does), with argv[2] "legacy" or "ptsz" (per-thread
 * default stream flag); argv[3] "pending": only launch a 100 ms and a 10 s kernel
 * and exit without waiting. Kernel durations follow tools/simgpu.h. Copies and
 * sets include 2D sets and 3D peer copies; waits include cuStreamWaitEvent and
 * cuCtxSynchronize_v2 (by its exported name in every mode). Prints
 * what it did: kernels=N captured=N graphs=N copies=N sets=N. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "cuda_prog.h"

#define STR2(x) #x
#define STR(x) STR2(x)

/* X(member): the member is named after the versioned function cuda.h maps the
 * plain name to; dlsym uses that name, cuGetProcAddress the plain one. */
#define DRIVER(X)                                                                                  \
    X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)             \
    X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuStreamCreate)               \
    X(cuStreamDestroy) X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuLaunchCooperativeKernel)         \
    X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoD)                 \
    X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                     \
    X(cuMemcpyDtoDAsync) X(cuMemcpyAsync) X(cuMemsetD8) X(cuMemsetD16) X(cuMemsetD32)             \
    X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuStreamSynchronize)             \
    X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventDestroy) X(cuCtxSynchronize) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiate) X(cuGraphLaunch)          \
    X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuStreamWaitEvent) X(cuMemsetD2D8) X(cuMemsetD2D8Async) \
    X(cuMemcpy3DPeer) X(cuMemcpy3DPeerAsync)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    DRIVER(MEMBER)
#undef MEMBER
    __typeof__(cuCtxSynchronize_v2) *ctx_sync_v2; /* by its exported name in every mode */
} d;

static void resolve(const char *mode, const char *flags_s)
{
    if (strcmp(mode, "exported") == 0) {
        if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL))
            die("dlopen", 0);
#define BYNAME(fn) if (!(*(void **)&d.fn = dlsym(RTLD_DEFAULT, STR(fn)))) die("dlsym " STR(fn), 0);
        DRIVER(BYNAME)
        if (!(*(void **)&d.ctx_sync_v2 = dlsym(RTLD_DEFAULT, "cuCtxSynchronize_v2")))
            die("dlsym cuCtxSynchronize_v2", 0);
        return;
    }
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        die("dlopen", 0);
    if (!(*(void **)&d.ctx_sync_v2 = dlsym(h, "cuCtxSynchronize_v2")))
        die("dlsym cuCtxSynchronize_v2", 0);
    if (strcmp(mode, "triton") == 0) {
#define BYHANDLE(fn) if (!(*(void **)&d.fn = dlsym(h, STR(fn)))) die("dlsym " STR(fn), 0);
        DRIVER(BYHANDLE)
        return;
    }
    cuuint64_t flags = flags_s && strcmp(flags_s, "ptsz") == 0 ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                              : CU_GET_PROC_ADDRESS_DEFAULT;
    CUdriverProcAddressQueryResult st;
    if (strcmp(mode, "procaddr") == 0) {
        __typeof__(cuGetProcAddress_v2) *gpa = (__typeof__(gpa))dlsym(h, "cuGetProcAddress_v2");
        if (!gpa)
            die("dlsym cuGetProcAddress_v2", 0);
#define BYPROC(fn)                                                                   \
        st = (CUdriverProcAddressQueryResult)-1;                                     \
        if (gpa(#fn, (void **)&d.fn, CUDA_VERSION, flags, &st) != CUDA_SUCCESS ||    \
            st != CU_GET_PROC_ADDRESS_SUCCESS)                                       \
            die("cuGetProcAddress_v2 " #fn, st);
        DRIVER(BYPROC)
        /* symbolStatus is filled for a name the driver does not have too. */
        void *none;
        st = (CUdriverProcAddressQueryResult)-1;
        if (gpa("cuNoSuchFunction", &none, CUDA_VERSION, flags, &st) == CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
            die("cuGetProcAddress_v2 of an unknown name", st);
        return;
    }
    if (strcmp(mode, "procaddr1") == 0) {
        CUresult (*gpa1)(const char *, void **, int, cuuint64_t) =
            (CUresult(*)(const char *, void **, int, cuuint64_t))dlsym(h, "cuGetProcAddress");
        if (!gpa1)
            die("dlsym cuGetProcAddress", 0);
#define BYPROC1(fn) if (gpa1(#fn, (void **)&d.fn, CUDA_VERSION, flags) != CUDA_SUCCESS) die("cuGetProcAddress " #fn, 0);
        DRIVER(BYPROC1)
        return;
    }
    die("unknown mode", 0);
}

static CUfunction fn_a, fn_b;
static int kernels, copies, sets, graphs, captured;

static void kernel(CUfunction f, CUstream s, uint64_t ns)
{
    void *params[] = { &ns };
    CU(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    kernels++;
}

int main(int argc, char **argv)
{
    prog_name = "cuda_paths";
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_paths exported|triton|procaddr|procaddr1 [legacy|ptsz [pending]]\n");
        return 2;
    }
    resolve(argv[1], argc > 2 ? argv[2] : NULL);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUstream s, s2;
    CU(d.cuInit(0));
    CU(d.cuDeviceGet(&dev, 0));
    CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(d.cuCtxSetCurrent(ctx));
    CU(d.cuModuleLoadData(&mod, "cuda_paths kernels"));
    CU(d.cuModuleGetFunction(&fn_a, mod, "paths_kernel_a"));
    CU(d.cuModuleGetFunction(&fn_b, mod, "paths_kernel_b"));
    CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU(d.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));

    if (argc > 3 && strcmp(argv[3], "pending") == 0) {
        /* exit with work in flight: 100 ms on s, 10 s on s2 */
        kernel(fn_a, s, 100000000);
        kernel(fn_b, s2, 10000000000ull);
        printf("kernels=%d\n", kernels);
        return 0;
    }

    /* kernels on a stream and on the default stream (per-thread with ptsz) */
    for (int i = 0; i < 20; i++)
        kernel(i % 2 ? fn_b : fn_a, s, 30000 + 1000 * (uint64_t)i);
    for (int i = 0; i < 5; i++)
        kernel(fn_a, NULL, 20000);
    uint64_t ns = 40000;
    void *params[] = { &ns };
    CUlaunchAttribute coop = { .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1 };
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64, .blockDimY = 1,
                           .blockDimZ = 1, .hStream = s, .attrs = &coop, .numAttrs = 1 };
    for (int i = 0; i < 3; i++, kernels++)
        CU(d.cuLaunchKernelEx(&cfg, fn_b, params, NULL));
    for (int i = 0; i < 2; i++, kernels++)
        CU(d.cuLaunchCooperativeKernel(fn_a, 1, 1, 1, 32, 1, 1, 0, s, params));

    /* copies and sets, synchronous and on s */
    size_t n = 1 << 20;
    CUdeviceptr a, b;
    void *host;
    CU(d.cuMemAlloc(&a, n));
    CU(d.cuMemAlloc(&b, n));
    CU(d.cuMemAllocHost(&host, n));
    memset(host, 7, n);
    CU(d.cuMemcpyHtoD(a, host, n)); copies++;
    CU(d.cuMemcpyDtoD(b, a, n / 2)); copies++;
    CU(d.cuMemcpyDtoH(host, b, n / 4)); copies++;
    CU(d.cuMemcpyHtoDAsync(a, host, 3000, s)); copies++;
    CU(d.cuMemcpyDtoHAsync(host, a, 5000, s)); copies++;
    CU(d.cuMemcpyDtoDAsync(b, a, 7000, s)); copies++;
    CU(d.cuMemcpyAsync(b, a, 9000, s)); copies++;
    CU(d.cuMemsetD8(a, 1, 1000)); sets++;
    CU(d.cuMemsetD16(a, 1, 1000)); sets++;
    CU(d.cuMemsetD32(a, 1, 1000)); sets++;
    CU(d.cuMemsetD8Async(a, 1, 3000, s)); sets++;
    CU(d.cuMemsetD16Async(a, 1, 3000, s)); sets++;
    CU(d.cuMemsetD32Async(a, 1, 3000, s)); sets++;
    CU(d.cuMemsetD2D8(a, 64, 1, 64, 10)); sets++;
    CU(d.cuMemsetD2D8Async(b, 128, 1, 128, 20, s)); sets++;
    CUDA_MEMCPY3D_PEER box = {
        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a, .srcContext = ctx, .srcPitch = 256,
        .srcHeight = 4, .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host, .dstContext = ctx,
        .dstPitch = 256, .dstHeight = 4, .WidthInBytes = 256, .Height = 4, .Depth = 3,
    };
    CU(d.cuMemcpy3DPeer(&box)); copies++;
    box.srcMemoryType = CU_MEMORYTYPE_HOST;
    box.srcHost = host;
    box.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    box.dstDevice = b;
    box.Depth = 2;
    CU(d.cuMemcpy3DPeerAsync(&box, s)); copies++;

    /* blocking waits: a 50 ms kernel, a 20 ms one behind an event, the context */
    kernel(fn_b, s, 50000000);
    CU(d.cuStreamSynchronize(s));
    CUevent ev;
    CU(d.cuEventCreate(&ev, CU_EVENT_DEFAULT));
    kernel(fn_a, s, 20000000);
    CU(d.cuEventRecord(ev, s));
    CU(d.cuEventSynchronize(ev));
    kernel(fn_a, s2, 10000000);
    CU(d.cuCtxSynchronize());
    /* s2 waits for an event on s (not the host); the context again, the 13.0 way */
    kernel(fn_b, s, 5000000);
    CU(d.cuEventRecord(ev, s));
    CU(d.cuStreamWaitEvent(s2, ev, 0));
    kernel(fn_a, s2, 1000000);
    CU(d.ctx_sync_v2(NULL));

    /* a graph captured from s2 (its kernels are not run then), launched twice on s */
    CUgraph g;
    CUgraphExec ge;
    CU(d.cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < 3; i++, captured++) {
        uint64_t gns = 15000;
        void *gp[] = { &gns };
        CU(d.cuLaunchKernel(fn_b, 1, 1, 1, 32, 1, 1, 0, s2, gp, NULL));
    }
    CU(d.cuStreamEndCapture(s2, &g));
    CU(d.cuGraphInstantiate(&ge, g, 0));
    for (int i = 0; i < 2; i++, graphs++)
        CU(d.cuGraphLaunch(ge, s));
    CU(d.cuStreamSynchronize(s));

    CU(d.cuGraphExecDestroy(ge));
    CU(d.cuGraphDestroy(g));
    CU(d.cuEventDestroy(ev));
    CU(d.cuMemFree(a));
    CU(d.cuMemFree(b));
    CU(d.cuMemFreeHost(host));
    CU(d.cuStreamDestroy(s));
    CU(d.cuStreamDestroy(s2));
    CU(d.cuDevicePrimaryCtxRelease(dev));
    printf("kernels=%d captured=%d graphs=%d copies=%d sets=%d\n", kernels, captured, graphs, copies, sets);
    return 0;
}
