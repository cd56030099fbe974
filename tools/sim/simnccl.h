/* Internal header of the simulated NCCL (build/sim/libnccl.so.2): the communicator,
 * the shared-memory segment through which the ranks of one communicator meet
 * (sim_nccl_shm.c), and the operations it hands to the simulated GPU's streams
 * (sim_nccl.c). Ranks are processes (or several ranks in one process); no data moves. */
#ifndef SIM_NCCL_H
#define SIM_NCCL_H

#include <stdatomic.h>
#include <stdint.h>
#include <nccl.h>
#include "tools/sim/simgpu.h"

/* nccl.h declares these without a prototype. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#define SIM_NCCL_MAX_RANKS   64
#define SIM_NCCL_COLL_SLOTS  64   /* collectives of one communicator in flight */
#define SIM_NCCL_P2P_SLOTS   8    /* sends from one rank to another in flight */
#define SIM_NCCL_SPLIT_SLOTS 4

/* Collective number seq uses slot seq % SIM_NCCL_COLL_SLOTS: each rank writes the
 * time its stream reached the collective, then its tag (seq + 1); once it has read
 * every rank's time it sets done (seq + 1), which frees the slot for seq + SLOTS. */
struct sim_nccl_coll_slot {
    _Atomic uint64_t tag[SIM_NCCL_MAX_RANKS];
    uint64_t ready[SIM_NCCL_MAX_RANKS];
    uint64_t call[SIM_NCCL_MAX_RANKS];      /* what each rank called: op, count, type, root (a desync differs) */
    _Atomic uint64_t done[SIM_NCCL_MAX_RANKS];
};

/* The k-th send from src to dst meets the k-th receive at dst from src. */
struct sim_nccl_p2p_slot {
    _Atomic uint64_t send_tag, recv_tag;     /* k + 1 once the ready time is written */
    _Atomic uint64_t send_seen, recv_seen;   /* k + 1 once the other side has read it */
    uint64_t send_ready, recv_ready;
};

struct sim_nccl_split_slot {
    _Atomic uint64_t tag[SIM_NCCL_MAX_RANKS];
    int32_t color[SIM_NCCL_MAX_RANKS], key[SIM_NCCL_MAX_RANKS];
};

/* The segment, all zero when created: zero is a valid empty state. */
struct sim_nccl_shm {
    _Atomic uint32_t nranks;
    _Atomic uint32_t joined;
    _Atomic int32_t pid[SIM_NCCL_MAX_RANKS];  /* 0 until that rank joined */
    struct sim_nccl_coll_slot coll[SIM_NCCL_COLL_SLOTS];
    struct sim_nccl_p2p_slot p2p[SIM_NCCL_MAX_RANKS][SIM_NCCL_MAX_RANKS][SIM_NCCL_P2P_SLOTS];
    struct sim_nccl_split_slot split[SIM_NCCL_SPLIT_SLOTS];
};

struct ncclComm {
    struct sim_nccl_shm *shm;
    char name[96];           /* shared-memory name */
    char id[17];             /* hex id in the truth file and messages */
    int rank, nranks, cudev;
    uint64_t coll_seq, split_seq;
    uint64_t send_seq[SIM_NCCL_MAX_RANKS], recv_seq[SIM_NCCL_MAX_RANKS];
    uint64_t alpha_ns, timeout_ns;
    uint64_t enqueue_ns;     /* SIMNCCL_ENQUEUE_US: host time a call spends before its kernel */
    double bw_gbs;
    atomic_int pending;      /* launched operations not yet released */
    atomic_int broken;       /* a peer died or timed out, or the comm was aborted */
    ncclResult_t async_error; /* read and written with __atomic builtins: the
                                 non-blocking thread sets it too */
    int nonblocking;         /* ncclConfig_t.blocking = 0, NCCL_COMM_BLOCKING=0 or
                                SIMNCCL_NONBLOCKING=1 (simnccl_async.c) */
    CUcontext ctx;           /* current at init: NCCL sets its device to enqueue */
    uint64_t buffer_bytes;   /* device memory its buffers hold (simgpu_internal_alloc) */
};

/* Records the message ncclGetLastError returns and prints it on stderr
 * ("sim_nccl: ..."); returns err. */
ncclResult_t sim_nccl_error(ncclResult_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* With SIMNCCL_PORT_COUNTERS=DIR, adds the bytes this rank sent and
 * received to a fake port's counters there (simnccl_port.c); else nothing. */
void sim_nccl_port_add(uint64_t tx, uint64_t rx);

/* Non-blocking communicators (simnccl_async.c). */
/* 1 if a communicator made with config (may be NULL) is non-blocking. */
int sim_nccl_async_wanted(const ncclConfig_t *config);
/* The communicator's state as ncclCommGetAsyncError reports it. */
ncclResult_t sim_nccl_async_state(const struct ncclComm *comm);
/* Queues a launch of f with op on stream for the group's thread; takes op. */
ncclResult_t sim_nccl_async_queue(void *op, CUfunction f, cudaStream_t stream, struct ncclComm *comm);
/* Queues a communicator's rendezvous with its peers for the group's thread. */
ncclResult_t sim_nccl_async_queue_join(struct ncclComm *comm);
/* 1 when something is queued for the thread. */
int sim_nccl_async_pending(void);
/* Hands what is queued to a new thread, which launches it (after
 * SIMNCCL_NONBLOCKING_DELAY_US) and then marks the communicators ready:
 * ncclInProgress, or an error when no thread could be made and the work
 * failed inline. launch: the function that puts one operation on a stream. */
ncclResult_t sim_nccl_async_flush(ncclResult_t (*launch)(void *op, CUfunction f, cudaStream_t stream));

/* Opens (creating if needed) the segment `name` and enters comm->rank in it.
 * Errors: ncclSystemError (shm_open, mmap), ncclInvalidUsage (the ranks disagree on
 * the size, or a rank joins twice). */
ncclResult_t sim_nccl_shm_attach(struct ncclComm *comm);
/* Waits until every rank has attached, up to the communicator's timeout. */
ncclResult_t sim_nccl_shm_wait_joined(struct ncclComm *comm);
void sim_nccl_shm_detach(struct ncclComm *comm);
/* 1 if rank r of comm has joined and its process is gone. */
int sim_nccl_shm_rank_dead(const struct ncclComm *comm, int r);

#endif
