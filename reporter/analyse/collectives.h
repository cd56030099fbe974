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

#include "reporter/load/gpu_breakdown.h"
#include "reporter/load/model.h"
#include "reporter/analyse/steps.h"

/* nccl-tests' bus bandwidth factor for op on n ranks: 2(n-1)/n for
 * AllReduce; (n-1)/n for AllGather, ReduceScatter, AlltoAll, Gather,
 * Scatter; 1 for Broadcast, Reduce, Send, Recv (and unknown ops). */
double rsr_busbw_factor(int op, int n);

/* A row's calls may be NCCL groups, each folded into one call
 * (coll_groups.h): group_calls says how many calls each holds (1: calls of
 * their own), bytes are the group's, its time from the last rank's arrival
 * at the group to the group's end, and the bandwidths follow from those. */
struct rsr_coll_row {
    uint8_t op;                 /* enum rsr_coll_op */
    uint64_t comm_id;
    int32_t ranks;              /* communicator size (ranks seen when not known) */
    uint32_t group_calls;       /* calls per group; 1: not grouped */
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
 * share, in the median part, is RSR_STRAGGLER_MIN_PCT or more, unless what
 * the others waited for it is less than twice its own wait in a pipeline's
 * sends and receives (it passes on a slow stage's delay). A pipeline's own
 * calls never count (their waits are its bubble).
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

/* Why a straggler is late: what it did more than the median of the other
 * ranks over the job (all ranks run the same calls), set against the
 * waiting it caused. Each candidate is the straggler's excess in one
 * figure of its process summary: kernels (compute kernel time), data
 * loading (reads while its GPU idled, and waits for a DataLoader), a
 * checkpoint (its checkpoint writes), io (other file I/O), launch gaps
 * (short gaps between kernels), host compute (its GPU idle waiting for
 * launches, less the data loading, checkpoint and I/O). The largest names
 * the cause when it explains RSR_WHY_MIN_SHARE % or more of the waiting;
 * else unknown. */
#define RSR_WHY_KINDS(X) X(KERNELS, "kernels") X(DATA_LOADING, "data_loading") \
    X(HOST_COMPUTE, "host_compute") X(IO, "io") X(CHECKPOINT, "checkpoint") \
    X(LAUNCH_GAPS, "launch_gaps") X(UNKNOWN, "unknown")
#define RSR_WHY_ENUM(id, name) RSR_WHY_##id,
enum rsr_why_kind { RSR_WHY_KINDS(RSR_WHY_ENUM) RSR_WHY_NKINDS };
#undef RSR_WHY_ENUM
#define RSR_WHY_MIN_SHARE 25.0
/* Kernels named where kernels are the cause: those whose mean run on the
 * straggler is RSR_WHY_SLOWER times the others' median or more. */
#define RSR_WHY_MAX_KERNELS 6
#define RSR_WHY_SLOWER 1.05

/* "kernels", "data_loading"...: report.json's why.kind. */
const char *rsr_why_kind_name(int kind);

/* A kernel slower on the straggler: its mean run on each model (NAN where
 * the model did not run it). */
struct rsr_why_kernel {
    char name[96];
    double *mean_us;            /* per model, n_models of them */
    double straggler_us, others_us; /* its mean there, the others' median */
    double excess_us;           /* (straggler - others) x the straggler's runs */
};

struct rsr_straggler_why {
    uint8_t kind;               /* enum rsr_why_kind */
    double share_pct;           /* the cause's excess, % of the waiting caused */
    double excess_us;           /* the cause's excess */
    char detail[400];
    struct rsr_why_kernel kernels[RSR_WHY_MAX_KERNELS];     /* kind kernels: slowest first */
    size_t n_kernels;
};

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
    struct rsr_straggler_why why;
};

struct rsr_coll_analysis {
    struct rsr_coll_row *rows;  /* by total time, descending */
    size_t n_rows;
    uint64_t calls;             /* collective calls (matched across ranks: one) */
    uint64_t matched;           /* of those, seen on two ranks or more */
    double *wait_us;            /* per model: time waiting for the last rank */
    double *coll_us;            /* per model: time in collectives after the last arrival */
    double *exposed_wait_us;    /* per model: of wait_us, what compute did not hide */
    double *transfer_us;        /* per model: last arrival to its own end, summed */
    /* per model: transfer its compute did not hide but the compute of the
     * rank that came last did (rsr_coll_split_gpu) */
    double *shadowed_us;
    /* per model: of wait_us, the wait in sends and receives (a pipeline's
     * bubble), and its send and receive calls (a group's calls each) */
    double *p2p_wait_us;
    uint64_t *p2p_calls;
    /* the same within the training steps (rsr_coll_step_waits) */
    double *p2p_step_wait_us;
    uint64_t *p2p_step_calls;
    /* the waits in sends and receives by the process's rank in their
     * communicator (a pipeline's stage, RSR_P2P_MAX_STAGES at most) and
     * step: [stage * p2p_nsteps + step], summed over the processes */
    double *p2p_stage_steps;
    size_t p2p_stages, p2p_nsteps;
    /* per model, its time in each communicator's calls: the wait for the
     * last rank, the transfer after it, and what of that transfer its
     * compute hid (groups.c sums them by role) */
    struct rsr_comm_time {
        uint64_t comm_id;
        double wait_us, transfer_us, hidden_us;
        double caused_us;       /* the others' mean wait in calls it came last to (as stragglers count it) */
    } **comm_time;
    size_t *n_comm_time;
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

/* Where the steps' critical path (critpath.h) puts a cause on a
 * straggler's rank, that cause is its why (the largest gain; kernels named
 * as above): the path compares the rank with the others step by step,
 * where the whole job's figures mix the steps with what lies between
 * them. 0, or -1 when out of memory. */
struct rsr_critpath;
int rsr_coll_why_from_path(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *a,
                           const struct rsr_critpath *cp);

/* Splits model i's collective time in *b (its summary's breakdown) into
 * the wait for the last rank and the transfer: sets sync_wait,
 * exposed_sync_wait and transfer, and leaves in the exposed communication
 * only the transfer that costs time: not the wait, and not transfer the
 * last rank's compute hid. Each call's transfer runs on all its ranks at
 * once, gated by the last to arrive: where that rank computes meanwhile,
 * a rank that has nothing left to compute only waits for it, and a faster
 * transfer would give it nothing (gpu_breakdown.h). */
void rsr_coll_split_gpu(const struct rsr_coll_analysis *a, size_t i, struct rsr_gpu_breakdown *b);

#define RSR_P2P_MAX_STAGES 256

/* The same split per step: merges the calls again, puts each rank's share
 * of a call in the step its arrival falls in, and sets each step's
 * sync_wait_pct (the wait for a late rank compute did not hide) and leaves
 * in its exposed_comm_pct only the transfer that costs time, both of the
 * ranks' step time. Per model, into a (the analysis of the same models),
 * the wait in sends and receives whose arrival falls in a training step,
 * and their calls (p2p_step_wait_us, p2p_step_calls), and the waits by
 * stage and step (p2p_stage_steps). Returns 0, or -1
 * when out of memory or a spill read failed. */
int rsr_coll_step_waits(struct rsr_model *const *models, size_t n, struct rsr_steps *st, struct rsr_coll_analysis *a);

#endif
