/* NCCL groups as jobs issue them, one rank per process (RANK, WORLD_SIZE as
 * simlaunch sets them), for test_nccl_groups: ITERS times, an AllReduce of
 * its own, a coalesced AllReduce (three in one group), an all-to-all as
 * grouped sends and receives with every other rank, a ring exchange (send
 * to the next rank, receive from the previous one in one group) and a group
 * of an AllReduce and an AllGather; rank 1 sleeps SLEEP_MS before each
 * all-to-all, so that the others wait for it there. The unique id travels
 * through the file ID_FILE (rank 0 writes it). Prints what it did:
 * iters=N single=N coalesced=N alltoall=N ring=N mixed=N (groups, and calls
 * of their own). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>
#include <nccl.h>

#define NCCL_FNS(X)                                                                              \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclAllReduce) X(ncclAllGather) \
    X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)
#define CU_FNS(X) X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) \
    X(cuStreamCreate) X(cuMemAlloc) X(cuStreamSynchronize)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    NCCL_FNS(MEMBER) CU_FNS(MEMBER)
#undef MEMBER
} f;

static void die(const char *what, int r)
{
    fprintf(stderr, "nccl_groups: %s failed (%d)\n", what, r);
    exit(1);
}

#define CHECK(call)                                  \
    do {                                             \
        int r_ = (int)(call);                        \
        if (r_ != 0)                                 \
            die(#call, r_);                          \
    } while (0)

static void get_id(ncclUniqueId *id, int rank, const char *path)
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

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nccl_groups ID_FILE ITERS SLEEP_MS\n");
        return 2;
    }
    int iters = atoi(argv[2]), sleep_ms = atoi(argv[3]);
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
    CHECK(f.cuMemAlloc(&a, 64 << 20));
    CHECK(f.cuMemAlloc(&b, 64 << 20));
    void *pa = (void *)(uintptr_t)a, *pb = (void *)(uintptr_t)b;
    cudaStream_t cs = (cudaStream_t)s;

    ncclUniqueId id;
    get_id(&id, rank, argv[1]);
    ncclComm_t comm;
    CHECK(f.ncclCommInitRank(&comm, n, id, rank));
    int single = 0, coalesced = 0, alltoall = 0, ring = 0, mixed = 0;
    for (int it = 0; it < iters; it++) {
        CHECK(f.ncclAllReduce(pa, pb, 1 << 20, ncclFloat32, ncclSum, comm, cs));
        single++;
        CHECK(f.ncclGroupStart());
        CHECK(f.ncclAllReduce(pa, pb, 1 << 18, ncclFloat32, ncclSum, comm, cs));
        CHECK(f.ncclAllReduce(pa, pb, 1 << 19, ncclFloat32, ncclSum, comm, cs));
        CHECK(f.ncclAllReduce(pa, pb, 3 << 18, ncclFloat32, ncclSum, comm, cs));
        CHECK(f.ncclGroupEnd());
        coalesced++;
        if (rank == 1) {
            struct timespec d = { sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000 };
            nanosleep(&d, NULL);
        }
        CHECK(f.ncclGroupStart());
        for (int p = 0; p < n; p++) {
            if (p == rank)
                continue;
            CHECK(f.ncclSend(pa, 1 << 18, ncclFloat32, p, comm, cs));
            CHECK(f.ncclRecv(pb, 1 << 18, ncclFloat32, p, comm, cs));
        }
        CHECK(f.ncclGroupEnd());
        alltoall++;
        CHECK(f.ncclGroupStart());
        CHECK(f.ncclSend(pa, 1 << 17, ncclFloat32, (rank + 1) % n, comm, cs));
        CHECK(f.ncclRecv(pb, 1 << 17, ncclFloat32, (rank + n - 1) % n, comm, cs));
        CHECK(f.ncclGroupEnd());
        ring++;
        CHECK(f.ncclGroupStart());
        CHECK(f.ncclAllReduce(pa, pb, 1 << 16, ncclFloat32, ncclSum, comm, cs));
        CHECK(f.ncclAllGather(pa, pb, 1 << 14, ncclFloat32, comm, cs));
        CHECK(f.ncclGroupEnd());
        mixed++;
        CHECK(f.cuStreamSynchronize(s));
    }
    CHECK(f.ncclCommDestroy(comm));
    if (rank == 0)
        unlink(argv[1]);
    printf("iters=%d single=%d coalesced=%d alltoall=%d ring=%d mixed=%d\n", iters, single, coalesced, alltoall,
           ring, mixed);
    return 0;
}
