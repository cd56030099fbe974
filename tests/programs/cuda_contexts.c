/* A driver API workload over several contexts for the device tests, reaching
 * the driver through cuGetProcAddress_v2 as the CUDA runtime does. argv[1]:
 * "switch": one kernel on device 0's primary context, then every later
 * kernel on device 1's only (a first launch on cuda:0 before set_device);
 * "destroy": kernels in a created context destroyed with work still queued,
 * in a second created context, on device 1's primary context reset with
 * work queued (cudaDeviceReset's call) and then used again, and after its
 * last release and a new retain. Kernels last argv[2] microseconds (default
 * 2000; tools/sim/simgpu.h: the first parameter is the duration in ns). Prints
 * kernels=N. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "cuda_prog.h"

#define DRIVER(X)                                                                                  \
    X(cuInit, 12000) X(cuDeviceGet, 12000) X(cuDevicePrimaryCtxRetain, 12000)                     \
    X(cuDevicePrimaryCtxRelease, 12000) X(cuDevicePrimaryCtxReset, 12000) X(cuCtxSetCurrent, 12000) \
    X(cuCtxDestroy, 12000) X(cuModuleLoadData, 12000)                       \
    X(cuModuleGetFunction, 12000) X(cuStreamCreate, 12000) X(cuStreamDestroy, 12000)              \
    X(cuLaunchKernel, 12000) X(cuStreamSynchronize, 12000)

static struct {
#define MEMBER(fn, v) __typeof__(fn) *fn;
    DRIVER(MEMBER)
#undef MEMBER
    CUresult (*ctx_create)(CUcontext *, unsigned int, CUdevice);   /* cuCtxCreate of 11.0 (_v2) */
} d;

static uint64_t kernel_ns = 2000000;
static int kernels;

static void resolve(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(cuGetProcAddress_v2) *gpa = h ? (__typeof__(cuGetProcAddress_v2) *)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa)
        die("dlopen libcuda.so.1 / cuGetProcAddress_v2", 0);
    CUdriverProcAddressQueryResult st;
#define GET(fn, v)                                                              \
    if (gpa(#fn, (void **)&d.fn, v, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !d.fn) \
        die("cuGetProcAddress " #fn, 0);
    DRIVER(GET)
#undef GET
    if (gpa("cuCtxCreate", (void **)&d.ctx_create, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
        die("cuGetProcAddress cuCtxCreate", 0);
}

/* n kernels named name on a stream of the current context (0: the legacy one). */
static void launch(const char *name, CUstream s, int n)
{
    CUmodule mod;
    CUfunction f;
    static const char image[] = "cuda_contexts kernels";
    CU(d.cuModuleLoadData(&mod, image));
    CU(d.cuModuleGetFunction(&f, mod, name));
    for (int i = 0; i < n; i++, kernels++) {
        void *params[] = { &kernel_ns };
        CU(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
    }
}

static void run_switch(void)
{
    CUcontext c0, c1;
    CUdevice d0, d1;
    CUstream s0, s1;
    CU(d.cuDeviceGet(&d0, 0));
    CU(d.cuDeviceGet(&d1, 1));
    CU(d.cuDevicePrimaryCtxRetain(&c0, d0));
    CU(d.cuCtxSetCurrent(c0));
    CU(d.cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    launch("first_on_dev0", s0, 1);
    CU(d.cuStreamSynchronize(s0));
    CU(d.cuDevicePrimaryCtxRetain(&c1, d1));
    CU(d.cuCtxSetCurrent(c1));
    CU(d.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    launch("work_on_dev1", s1, 20);
    launch("legacy_on_dev1", NULL, 5);
    CU(d.cuStreamSynchronize(s1));
    CU(d.cuStreamSynchronize(NULL));
    CU(d.cuStreamDestroy(s1));
    CU(d.cuCtxSetCurrent(c0));
    CU(d.cuStreamDestroy(s0));
    CU(d.cuDevicePrimaryCtxRelease(d1));
    CU(d.cuDevicePrimaryCtxRelease(d0));
}

static void run_destroy(void)
{
    CUcontext c, p;
    CUdevice d0, d1;
    CUstream s;
    CU(d.cuDeviceGet(&d0, 0));
    CU(d.cuDeviceGet(&d1, 1));
    for (int round = 0; round < 2; round++) {
        CU(d.ctx_create(&c, 0, d0));
        CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        launch(round ? "created_ctx_b" : "created_ctx_a", s, 5);
        CU(d.cuCtxDestroy(c));   /* work still queued: the driver finishes it */
    }
    CU(d.cuDevicePrimaryCtxRetain(&p, d1));
    CU(d.cuCtxSetCurrent(p));
    CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    launch("before_reset", s, 5);
    CU(d.cuDevicePrimaryCtxReset(d1));
    CU(d.cuCtxSetCurrent(p));
    CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    launch("after_reset", s, 5);
    CU(d.cuStreamSynchronize(s));
    CU(d.cuStreamDestroy(s));
    CU(d.cuDevicePrimaryCtxRelease(d1));   /* the last: the context resets */
    CU(d.cuDevicePrimaryCtxRetain(&p, d1));
    CU(d.cuCtxSetCurrent(p));
    launch("after_release", NULL, 3);
    CU(d.cuStreamSynchronize(NULL));
    CU(d.cuDevicePrimaryCtxRelease(d1));
}

int main(int argc, char **argv)
{
    prog_name = "cuda_contexts";
    if (argc < 2 || (strcmp(argv[1], "switch") != 0 && strcmp(argv[1], "destroy") != 0)) {
        fprintf(stderr, "usage: cuda_contexts switch|destroy [kernel-us]\n");
        return 2;
    }
    if (argc > 2)
        kernel_ns = (uint64_t)(atof(argv[2]) * 1000);
    resolve();
    CU(d.cuInit(0));
    if (strcmp(argv[1], "switch") == 0)
        run_switch();
    else
        run_destroy();
    printf("kernels=%d\n", kernels);
    return 0;
}
