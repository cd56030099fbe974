/* An NCCL workload for the capture tests, one rank per process (RANK,
 * WORLD_SIZE as simlaunch sets them): every collective with its own count,
 * type and root, a group of sends and receives around a ring, a group of two
 * AllReduces, a communicator split by rank parity with a collective on it,
 * then finalize and destroy. The unique id travels through the file argv[1]
 * (rank 0 writes it). NCCL is linked the way a program linked with -lnccl
 * sees it (the global symbols), the driver through cuGetProcAddress_v2.
 * Prints calls=N (collective and point-to-point calls made). With
 * non-blocking communicators (SIMNCCL_NONBLOCKING=1), a call that returns
 * ncclInProgress is followed by polling ncclCommGetAsyncError until the
 * communicator is ready, as PyTorch does. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>
#include <nccl.h>

#define NCCL_FNS(X)                                                                               \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommSplit) X(ncclCommFinalize) X(ncclCommDestroy) \
    X(ncclAllReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) X(ncclReduce)         \
    X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart)         \
    X(ncclGroupEnd) X(ncclCommGetAsyncError)
#define CU_FNS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuStreamCreate) X(cuMemAlloc) X(cuStreamSynchronize)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    NCCL_FNS(MEMBER) CU_FNS(MEMBER)
#undef MEMBER
} f;

static void die(const char *what, int r)
{
    fprintf(stderr, "nccl_ops: %s failed (%d)\n", what, r);
    exit(1);
}

#define CHECK(call)                                  \
    do {                                             \
        int r_ = (int)(call);                        \
        if (r_ != 0)                                 \
            die(#call, r_);                          \
    } while (0)

/* An NCCL call's result, once the communicator *cp is ready. */
static ncclResult_t ready(ncclResult_t r, ncclComm_t *cp)
{
    while (r == ncclInProgress && *cp) {
        struct timespec us = { 0, 10000 };
        if (f.ncclCommGetAsyncError(*cp, &r) != ncclSuccess)
            return ncclInternalError;
        if (r == ncclInProgress)
            nanosleep(&us, NULL);
    }
    return r;
}

static ncclComm_t *cur;   /* the communicator the calls below are on */
#define NCHECK(call) CHECK(ready((call), cur))

static int calls;
#define COLL(call)      \
    do {                \
        NCHECK(call);   \
        calls++;        \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nccl_ops ID_FILE\n");
        return 2;
    }
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu || !dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL))
        die("dlopen", 0);
#define NSYM(fn) if (!(*(void **)&f.fn = dlsym(RTLD_DEFAULT, #fn))) die("dlsym " #fn, 0);
    NCCL_FNS(NSYM)
    __typeof__(cuGetProcAddress_v2) *gpa = (__typeof__(gpa))dlsym(cu, "cuGetProcAddress_v2");
    CUdriverProcAddressQueryResult st;
    if (!gpa)
        die("dlsym cuGetProcAddress_v2", 0);
#define CSYM(fn) CHECK(gpa(#fn, (void **)&f.fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    CU_FNS(CSYM)

    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr a, b;
    CHECK(f.cuInit(0));
    CHECK(f.cuDeviceGet(&dev, 0));
    CHECK(f.cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(f.cuCtxSetCurrent(ctx));
    CHECK(f.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(f.cuMemAlloc(&a, 1 << 20));
    CHECK(f.cuMemAlloc(&b, 1 << 20));
    void *pa = (void *)(uintptr_t)a, *pb = (void *)(uintptr_t)b;

    ncclUniqueId id;
    if (rank == 0) {
        char tmp[4200];
        CHECK(f.ncclGetUniqueId(&id));
        snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
        FILE *o = fopen(tmp, "wb");
        if (!o || fwrite(&id, sizeof id, 1, o) != 1 || fclose(o) != 0 || rename(tmp, argv[1]) != 0)
            die("writing the id file", 0);
    } else {
        FILE *i = NULL;
        for (int t = 0; t < 3000 && !(i = fopen(argv[1], "rb")); t++) {
            struct timespec ms = { 0, 10000000 };
            nanosleep(&ms, NULL);
        }
        if (!i || fread(&id, sizeof id, 1, i) != 1)
            die("reading the id file", 0);
        fclose(i);
    }
    ncclComm_t comm = NULL, sub = NULL;
    cur = &comm;
    NCHECK(f.ncclCommInitRank(&comm, n, id, rank));
    cudaStream_t cs = (cudaStream_t)s;
    COLL(f.ncclAllReduce(pa, pb, 1000, ncclFloat32, ncclSum, comm, cs));
    COLL(f.ncclAllGather(pa, pb, 500, ncclFloat16, comm, cs));
    COLL(f.ncclReduceScatter(pa, pb, 250, ncclInt32, ncclMax, comm, cs));
    COLL(f.ncclBroadcast(pa, pb, 300, ncclInt8, 1 % n, comm, cs));
    COLL(f.ncclReduce(pa, pb, 700, ncclFloat64, ncclProd, 0, comm, cs));
    COLL(f.ncclAlltoAll(pa, pb, 100, ncclFloat32, comm, cs));
    COLL(f.ncclGather(pa, pb, 50, ncclUint8, 0, comm, cs));
    COLL(f.ncclScatter(pa, pb, 60, ncclInt64, 1 % n, comm, cs));
    CHECK(f.ncclGroupStart());
    COLL(f.ncclSend(pa, 128, ncclFloat32, (rank + 1) % n, comm, cs));
    COLL(f.ncclRecv(pb, 128, ncclFloat32, (rank + n - 1) % n, comm, cs));
    NCHECK(f.ncclGroupEnd());
    CHECK(f.ncclGroupStart());
    COLL(f.ncclAllReduce(pa, pb, 2000, ncclBfloat16, ncclMin, comm, cs));
    COLL(f.ncclAllReduce(pa, pb, 3000, ncclUint32, ncclSum, comm, cs));
    NCHECK(f.ncclGroupEnd());
    cur = &sub;
    NCHECK(f.ncclCommSplit(comm, rank % 2, rank, &sub, NULL));
    COLL(f.ncclAllReduce(pa, pb, 64, ncclFloat32, ncclSum, sub, cs));
    CHECK(f.cuStreamSynchronize(s));
    CHECK(f.ncclCommFinalize(sub));
    CHECK(f.ncclCommDestroy(sub));
    CHECK(f.ncclCommDestroy(comm));
    if (rank == 0)
        unlink(argv[1]);
    printf("calls=%d\n", calls);
    return 0;
}
