/* The job's collectives across ranks: each NCCL call is matched on every
 * rank by (communicator, sequence number); its time runs from the GPU start
 * on the last rank to arrive to its end, and each rank's wait is how long
 * it sat in the collective before that last arrival. From those: a table
 * per (operation, communicator, size) with algbw and busbw as nccl-tests
 * computes them, the wait per rank, and the stragglers (ranks the others
 * wait for). Reads aligned models (align.h). */
#ifndef RSR_COLLECTIVES_H
#define RSR_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/model.h"

/* nccl-tests' bus bandwidth factor for op on n ranks: 2(n-1)/n for
 * AllReduce; (n-1)/n for AllGather, ReduceScatter, AlltoAll, Gather,
 * Scatter; 1 for Broadcast, Reduce, Send, Recv (and unknown ops). */
double rsr_busbw_factor(int op, int n);

struct rsr_coll_row {
    uint8_t op;                 /* enum rsr_coll_op */
    uint64_t comm_id;
    int32_t ranks;              /* communicator size (ranks seen when not known) */
    uint64_t bytes;             /* per call, as nccl-tests counts */
    uint64_t count;             /* calls */
    double mean_us;             /* last arrival to end, mean over calls */
    double algbw_gbs, busbw_gbs;
    double mean_wait_us;        /* mean over calls and ranks of the wait */
};

/* A rank the others waited for. */
struct rsr_straggler {
    int32_t rank;               /* the model's rank (-1 unknown) */
    size_t model;               /* index in the models given */
    double score;               /* its share of all the waiting, 0..1 */
    double caused_us;           /* sum over calls it came last of the others' mean wait */
    uint64_t last;              /* calls it arrived last (by more than 1 us) */
    uint64_t calls;             /* calls it took part in with others */
    uint8_t worst_op;           /* the operation where it caused most waiting */
    char evidence[256];
};

struct rsr_coll_analysis {
    struct rsr_coll_row *rows;  /* by total time, descending */
    size_t n_rows;
    uint64_t calls;             /* collective calls (matched across ranks: one) */
    uint64_t matched;           /* of those, seen on two ranks or more */
    double *wait_us;            /* per model: time waiting for the last rank */
    double *coll_us;            /* per model: time in collectives after the last arrival */
    size_t n_models;
    struct rsr_straggler *stragglers;   /* ranks that caused waiting, most first */
    size_t n_stragglers;
};

/* Analyses models[0..n) into *out (which owns its arrays). Returns 0, or
 * -1 when out of memory (then *out holds nothing to free). */
int rsr_collectives_analyse(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *out);

void rsr_coll_analysis_free(struct rsr_coll_analysis *a);

#endif
