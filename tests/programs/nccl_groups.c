/* NCCL groups as jobs issue them, one rank per process (RANK, WORLD_SIZE as
 * simlaunch sets them), for test_nccl_groups: ITERS times, an AllReduce of
 * its own, a coalesced AllReduce (three in one group), an all-to-all as
 * grouped sends and receives with every other rank, a ring exchange (send
 * to the next rank, receive from the previous one in one group) and a group
 * of an AllReduce and an AllGather; rank 1 sleeps SLEEP_MS before each
 * all-to-all, so that the others wait for it there, and the last rank comes
late to the ring of odd iterations (its stream drained first): RING_LATE_US
in iterations 1, 5, 9..., eight times that in 3, 7, 11... The unique id travels
 * through the file ID_FILE (nccl_prog.h). Prints what it did:
 * iters=N single=N coalesced=N alltoall=N ring=N mixed=N (groups, and calls
 * of their own). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "nccl_prog.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nccl_groups ID_FILE ITERS SLEEP_MS [RING_LATE_US]\n");
        return 2;
    }
    int iters = atoi(argv[2]), sleep_ms = atoi(argv[3]), ring_late_us = argc > 4 ? atoi(argv[4]) : 0;
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    int n = atoi(getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : "1");
    CUstream s;
    void *pa, *pb;
    nccl_prog_open("nccl_groups", &s, &pa, &pb, 64 << 20);
    cudaStream_t cs = (cudaStream_t)s;
    ncclUniqueId id;
    nccl_prog_id(&id, rank, argv[1]);
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
        if (rank == n - 1 && it % 2 == 1 && ring_late_us > 0) {
            CHECK(f.cuStreamSynchronize(s));
            long us = it % 4 == 1 ? ring_late_us : 8L * ring_late_us;
            struct timespec d = { us / 1000000, us % 1000000 * 1000 };
            nanosleep(&d, NULL);
        }
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
