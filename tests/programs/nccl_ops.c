/* An NCCL workload for the capture tests, one rank per process (RANK,
 * WORLD_SIZE as simlaunch sets them): every collective with its own count,
 * type and root, a group of sends and receives around a ring, a group of two
 * AllReduces, a communicator split by rank parity with a collective on it,
 * then finalize and destroy. The unique id travels through the file argv[1]
 * (nccl_prog.h). ncclBcast is called too: NCCL makes it an ncclBroadcast
 * through its exported symbol, which must not count twice.
 * Prints calls=N (collective and point-to-point calls made). With
 * non-blocking communicators (SIMNCCL_NONBLOCKING=1), a call that returns
 * ncclInProgress is followed by polling ncclCommGetAsyncError until the
 * communicator is ready, as PyTorch does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "nccl_prog.h"

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
    CUstream s;
    void *pa, *pb;
    nccl_prog_open("nccl_ops", &s, &pa, &pb, 1 << 20);
    ncclUniqueId id;
    nccl_prog_id(&id, rank, argv[1]);
    ncclComm_t comm = NULL, sub = NULL;
    cur = &comm;
    NCHECK(f.ncclCommInitRank(&comm, n, id, rank));
    cudaStream_t cs = (cudaStream_t)s;
    COLL(f.ncclAllReduce(pa, pb, 1000, ncclFloat32, ncclSum, comm, cs));
    COLL(f.ncclAllGather(pa, pb, 500, ncclFloat16, comm, cs));
    COLL(f.ncclReduceScatter(pa, pb, 250, ncclInt32, ncclMax, comm, cs));
    COLL(f.ncclBroadcast(pa, pb, 300, ncclInt8, 1 % n, comm, cs));
    COLL(f.ncclBcast(pa, 320, ncclInt8, 0, comm, cs));
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
