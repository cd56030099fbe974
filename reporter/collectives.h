/* The job's collectives across ranks: each NCCL call is matched on every
 * rank by (communicator, sequence number); its time runs from the GPU start
 * on the last rank to arrive to its end, and each rank's wait is how long
 * it sat in the collective before that last arrival. From those: a table
 * per (operation, communicator, size) with algbw and busbw as nccl-tests
 * computes them, the wait per rank, and the stragglers (ranks the others
 * wait for, named only when that waiting is significant: see below). Reads
 * aligned models (align.h). */
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

/* When a rank is named a straggler. Each call's waiting (the others' mean
 * wait for the last to arrive) is charged to the rank that came last; equal
 * ranks come last by chance and each is charged about 1/m of the waiting of
 * the calls it shares with m ranks (its fair share). A rank's excess is
 * what it is charged beyond its fair share. The calls are cut, in time
 * order, into up to RSR_STRAGGLER_PARTS parts of the job (at least
 * RSR_STRAGGLER_MIN_PARTS, of two calls or more), and in each part the
 * excess is taken as a share of the part's time. A rank is named when that
 * share, in the median part, is RSR_STRAGGLER_MIN_PCT or more.
 * Why: the fair share takes away the waiting that equal ranks cause among
 * themselves (gen_job's ranks, which all leave each call together however
 * scattered their arrivals, are each charged about their share); the median
 * part takes away what a few calls cause (the first ones, where the ranks'
 * start-up skew shows; a one-off stall), so the rank must hold the others
 * back through most of the job; and the bar is set above what equal ranks
 * were seen to cause by scheduling alone (simtrain on 2 ranks of a busy
 * 2-core machine, 10 to 30 steps: one rank last in most steps, up to 8% of
 * the other's time) and below what a rank with 1.5 times longer kernels
 * causes (simtrain --straggler R:1.5: 14% in `make demo`'s job, whose
 * steps also load data; 20 to 35% without). */
#define RSR_STRAGGLER_MIN_PCT 10.0
#define RSR_STRAGGLER_PARTS 10
#define RSR_STRAGGLER_MIN_PARTS 3

/* A rank the others waited for significantly (see above). */
struct rsr_straggler {
    int32_t rank;               /* the model's rank (-1 unknown) */
    size_t model;               /* index in the models given */
    double score;               /* its share of all the waiting, 0..1 */
    double caused_us;           /* sum over calls it came last of the others' mean wait */
    uint64_t last;              /* calls it arrived last (by more than 1 us) */
    uint64_t calls;             /* calls it took part in with others */
    double excess_pct;          /* the others' wait for it beyond its fair share,
                                   % of the time, in the median part of the job */
    uint8_t worst_op;           /* the operation where it caused most waiting */
    char evidence[320];
};

struct rsr_coll_analysis {
    struct rsr_coll_row *rows;  /* by total time, descending */
    size_t n_rows;
    uint64_t calls;             /* collective calls (matched across ranks: one) */
    uint64_t matched;           /* of those, seen on two ranks or more */
    double *wait_us;            /* per model: time waiting for the last rank */
    double *coll_us;            /* per model: time in collectives after the last arrival */
    size_t n_models;
    struct rsr_straggler *stragglers;   /* ranks named stragglers, most waiting caused first */
    size_t n_stragglers;
    int straggler_parts;        /* parts the calls were split into (0: too few calls) */
    double max_excess_pct;      /* the largest excess_pct of any rank, named or not */
};

/* Analyses models[0..n) into *out (which owns its arrays). Returns 0, or
 * -1 when out of memory (then *out holds nothing to free). */
int rsr_collectives_analyse(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *out);

void rsr_coll_analysis_free(struct rsr_coll_analysis *a);

#endif
