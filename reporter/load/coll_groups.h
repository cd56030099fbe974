/* NCCL groups folded into the units they are on the GPU: the loader
 * (load_model.c) hands each collective record of a file here with its group
 * number (Chunk.coll_groups); a group's calls on one communicator become
 * one rsr_coll, which the summary's tuples, the collectives table and the
 * wait analysis then take as one call. */
#ifndef RSR_COLL_GROUPS_H
#define RSR_COLL_GROUPS_H

#include <stdint.h>

#include "reporter/load/model.h"

/* Units still open (groups whose calls may follow), most recent kept. */
#define RSR_GROUP_OPEN 32

/* A unit of sends and receives only is numbered by the groups of sends and
 * receives on its communicator in the process, from 0, with this bit to
 * keep the numbers apart from the communicator's collectives': every rank
 * of an all-to-all or a ring exchange counts alike. (Its calls' own numbers
 * are per peer and direction, and a rank's sends to one peer may belong to
 * groups of several kinds.) */
#define RSR_GROUP_P2P_SEQ RSR_SEQ_P2P_GROUP

struct rsr_group_fold {
    struct rsr_group_unit {
        uint64_t group, comm;
        size_t index;               /* its rsr_coll in the model's colls */
        uint64_t coll_bytes, send_bytes, recv_bytes;
        uint64_t send_peers, recv_peers;    /* peers' bits, modulo 64 */
        uint32_t n_coll, n_send, n_recv;
        uint8_t coll_op;            /* the collectives' op; RSR_COLL_GROUP when they differ */
        uint32_t p2p_seq;           /* its number if it holds sends and receives only */
        uint32_t pair_seq;          /* its number among the groups with its first call's peer */
        int32_t first_peer;
        uint32_t coll_seq;          /* the least of its collectives' */
    } open[RSR_GROUP_OPEN];
    size_t n;
    uint64_t stamp;                 /* units opened so far: open[] is a ring */
    /* groups of sends and receives only, per communicator, so far */
    struct rsr_group_count {
        uint64_t comm;
        int32_t peer;               /* -1: the communicator's count */
        uint32_t n;
    } *counts;
    size_t n_counts;
    int failed;                     /* out of memory: units numbered 0 */
};

/* Takes m->colls[m->n_colls - 1], just added, in group group (0: none) of a
 * communicator of nranks ranks (-1: not known), where this process is rank
 * (-1: not known): folds it into the open
 * unit of that group and communicator (and drops it from m->colls), or
 * opens a unit with it. The unit's span runs from its calls' earliest GPU
 * start to their latest end; its bytes are the collectives' summed plus
 * the larger of the sends' and the receives' sums (nccl-tests' count); its
 * sequence number the least of its collectives' (the first's: every rank
 * numbers its collectives alike), or for sends and receives only, as
 * RSR_GROUP_P2P_SEQ says, except a group with one peer on a communicator
 * of known size and rank: numbered among the groups between the two of
 * them, the pair folded into the number (k x n^2 + low x n + high), so
 * that a pipeline stage's groups with the stage before and the one after
 * meet their other ends alone; its op the calls' op when they share it, AlltoAll for sends and
 * receives with every other rank (more than two ranks), SendRecv for other
 * sends and receives, Group for a mix. */
void rsr_group_take(struct rsr_group_fold *g, struct rsr_model *m, uint64_t group, int32_t nranks, int32_t rank);

/* Forgets the open units (the model's colls are about to move). */
void rsr_group_close(struct rsr_group_fold *g);

/* Frees what g holds. */
void rsr_group_free(struct rsr_group_fold *g);

#endif
