/* What the NCCL test programs (nccl_ops, nccl_groups) share: NCCL linked
 * the way a program linked with -lnccl sees it (the global symbols), the
 * driver through cuGetProcAddress_v2, a stream and two buffers on device 0,
 * and the unique id passed through a file (rank 0 writes it). Header only:
 * each program is one file. */
#ifndef NCCL_PROG_H
#define NCCL_PROG_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda.h>
#include <nccl.h>

#define NCCL_FNS(X)                                                                               \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommSplit) X(ncclCommFinalize) X(ncclCommDestroy) \
    X(ncclAllReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) X(ncclReduce)         \
    X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclBcast) \
    X(ncclGroupEnd) X(ncclCommGetAsyncError)
#define CU_FNS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuStreamCreate) X(cuMemAlloc) X(cuStreamSynchronize)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    NCCL_FNS(MEMBER) CU_FNS(MEMBER)
#undef MEMBER
} f;

static const char *prog_name = "nccl";

static void die(const char *what, int r)
{
    fprintf(stderr, "%s: %s failed (%d)\n", prog_name, what, r);
    exit(1);
}

#define CHECK(call)                                  \
    do {                                             \
        int r_ = (int)(call);                        \
        if (r_ != 0)                                 \
            die(#call, r_);                          \
    } while (0)

/* Loads NCCL and the driver into f; makes *s, a non-blocking stream on
 * device 0's primary context, and two buffers of bytes each. */
static void nccl_prog_open(const char *name, CUstream *s, void **pa, void **pb, size_t bytes)
{
    prog_name = name;
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu || !dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL))
        die("dlopen", 0);
#define NSYM(fn) if (!(*(void **)&f.fn = dlsym(RTLD_DEFAULT, #fn))) die("dlsym " #fn, 0);
    NCCL_FNS(NSYM)
#undef NSYM
    __typeof__(cuGetProcAddress_v2) *gpa = (__typeof__(gpa))dlsym(cu, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st;
    if (!gpa)
        die("dlsym cuGetProcAddress_v2", 0);
#define CSYM(fn) CHECK(gpa(#fn, (void **)&f.fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CU_FNS(CSYM)
#undef CSYM
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr a, b;
    CHECK(f.cuInit(0));
    CHECK(f.cuDeviceGet(&dev, 0));
    CHECK(f.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(f.cuCtxSetCurrent(ctx));
    CHECK(f.cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    CHECK(f.cuMemAlloc(&a, bytes));
    CHECK(f.cuMemAlloc(&b, bytes));
    *pa = (void *)(uintptr_t)a;
    *pb = (void *)(uintptr_t)b;
}

/* The job's unique id: made by rank 0 and written to path, read there by
 * the others (who wait up to 30 s for it). */
static void nccl_prog_id(ncclUniqueId *id, int rank, const char *path)
{
    if (rank == 0) {
        char tmp[4200];
        CHECK(f.ncclGetUniqueId(id));
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *o = fopen(tmp, "wb");
        if (!o || fwrite(id, sizeof *id, 1, o) != 1 || fclose(o) != 0 || rename(tmp, path) != 0)
            die("writing the id file", 0);
        return;
    }
    FILE *i = NULL;
    for (int t = 0; t < 3000 && !(i = fopen(path, "rb")); t++) {
        struct timespec ms = { 0, 10000000 };
        nanosleep(&ms, NULL);
    }
    if (!i || fread(id, sizeof *id, 1, i) != 1)
        die("reading the id file", 0);
    fclose(i);
}

#endif
