/* The job's communicators told apart by what they do: tensor parallel,
 * pipeline, data parallel (or sharded data parallel: ZeRO, FSDP), expert
 * parallel, the world's. Reads the collectives' rows (collectives.h) and
 * which processes hold each communicator (their summaries' keys).
 *
 * How: every communicator with calls is put in a class with the others
 * that look the same: as many ranks, the same kind of traffic (sends and
 * receives, all-to-all, or collectives), and calls and bytes per call
 * within RSR_GROUP_SAME times of each other (the tensor-parallel groups of
 * a job are alike; so are its pipelines, its data-parallel replicas). A
 * class's role:
 *   - sends and receives (RSR_GROUP_P2P_SHARE of its calls or more):
 *     pipeline, activations and their gradients between stages;
 *   - all-to-all (half its calls or more): expert parallel;
 *   - collectives, as large as the job (every process with collectives)
 *     when smaller collective classes exist: the world's;
 *   - the other collective classes: one alone is data parallel, unless a
 *     pipeline is there and it calls at least as often per communicator as
 *     the pipeline's sends and receives (per micro-batch: tensor); of two or
 *     more, the one with the most calls per communicator is tensor
 *     parallel (an all-reduce per layer, or all-gathers and reduce-scatters
 *     with sequence parallelism) and, of the rest, the one with the largest
 *     calls is data parallel (a bucket of gradients each), others "other".
 *     Data parallel is "sharded" when all-gathers and reduce-scatters are
 *     most of its calls.
 * Each class says how sure that is (confidence 0..1, and why): structure
 * alone (sends and receives, all-to-all) is surer than frequency, and a
 * tensor-parallel class is surer the more often it calls than the data
 * parallel one and when it stays inside a node while the other crosses. */
#ifndef RSR_GROUPS_H
#define RSR_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/analyse/collectives.h"
#include "reporter/load/model.h"
#include "reporter/analyse/steps.h"

#define RSR_GROUP_SAME 1.5
#define RSR_GROUP_P2P_SHARE 0.8
#define RSR_GROUP_MAX_OPS 4

#define RSR_GROUP_ROLES(X) \
    X(TENSOR,   "tensor") \
    X(PIPELINE, "pipeline") \
    X(DATA,     "data") \
    X(EXPERT,   "expert") \
    X(WORLD,    "world") \
    X(OTHER,    "other")

enum rsr_group_role {
#define RSR_GROUP_ROLE_ENUM(name, text) RSR_GROUP_##name,
    RSR_GROUP_ROLES(RSR_GROUP_ROLE_ENUM)
#undef RSR_GROUP_ROLE_ENUM
    RSR_GROUP_NROLES
};

const char *rsr_group_role_name(int role);

/* One class of alike communicators. Times are the ranks' own: a call
 * counts on each of its ranks for its wait for the last to arrive and the
 * transfer after. */
struct rsr_group {
    uint8_t role;               /* enum rsr_group_role */
    int sharded;                /* data parallel by all-gathers and reduce-scatters */
    int32_t size;               /* ranks per communicator */
    size_t count;               /* communicators */
    int intra_node;             /* each inside one host */
    int32_t hosts;              /* the most hosts one spans */
    int rail_aligned;           /* each spans hosts with one local rank on all: one rail each */
    int32_t rail;               /* then the example's local rank (its rail); else -1 */
    uint64_t calls;             /* over its communicators */
    double calls_per_step;      /* per communicator and training step; 0: no steps */
    double time_pct;            /* of the ranks' time (processes with collectives x wall) */
    double sync_wait_pct;       /* of its time, waiting for a late rank */
    double hidden_pct;          /* of its transfer (after the last arrival), what the ranks' compute hid */
    double busbw_gbs;           /* its rows' busbw, weighted by their transfer time */
    double confidence;
    char why[240];
    struct rsr_group_op {
        uint8_t op;             /* enum rsr_coll_op */
        uint64_t calls;
        double mean_bytes;
    } ops[RSR_GROUP_MAX_OPS];   /* most calls first */
    size_t n_ops;
    int32_t *members;           /* an example: the communicator holding the lowest rank, its ranks ascending */
    size_t n_members;
    uint64_t example_comm;
};

/* A pipeline's stages (its communicators' ranks: Megatron's key is the
 * stage) and their bubble: the time each stage's ranks spend in sends and
 * receives waiting for the other end, in the median training step (a
 * stage's mean over its ranks: rsr_coll_analysis.p2p_stage_steps; without
 * steps, over the run), against the 1F1B schedule's own bubble,
 * (p - 1) / (m + p - 1) of the step, m the micro-batches: the first
 * stage's sends and receives per step over two (it sends each micro-batch's
 * activations and receives its gradients). The slowest stage is the one
 * that waits least, named when the others wait RSR_PIPE_SLOW_PCT of the
 * step or more beyond it. */
#define RSR_PIPE_SLOW_PCT 5.0

struct rsr_pipe_stage {
    int32_t stage;
    size_t ranks;               /* processes in it */
    int32_t example_rank;       /* its lowest rank */
    double bubble_ms_per_step;  /* mean over its processes */
    double bubble_pct;          /* of the time per step */
};

struct rsr_pipeline {
    int32_t stages;             /* 0: no pipeline */
    double microbatches;        /* inferred (above); 0: no steps to infer it from */
    double schedule_bubble_pct; /* the schedule's own bubble, for those */
    double per_step_ms;         /* the job's time per step the shares are of (its wall time without steps) */
    struct rsr_pipe_stage *by_stage;
    int32_t slowest;            /* the stage the others wait for; -1: none stands out */
    double slowest_excess_pct;  /* the others' mean bubble beyond the least one's, % of the step */
};

/* A process's time in one role's calls (rsr_coll_analysis.comm_time
 * summed over its communicators of that role), us. */
struct rsr_role_time {
    double time_us;             /* wait + transfer */
    double wait_us;             /* for the last rank to arrive */
    double hidden_us;           /* of the transfer, what its compute hid */
};

/* One communicator with calls: its class's role and its members. */
struct rsr_group_comm {
    uint64_t id;
    uint8_t role;
    int32_t *members;           /* global ranks, ascending */
    size_t n_members;
};

struct rsr_groups {
    struct rsr_group *v;        /* by time_pct, descending */
    size_t n;
    struct rsr_group_comm *comms;
    size_t n_comms;
    struct rsr_pipeline pipe;
    struct rsr_role_time *by_model;     /* [model * RSR_GROUP_NROLES + role] */
    /* [model * RSR_GROUP_NROLES + role]: the process's place in its
     * communicator of that role (its rank's among the members, ascending:
     * in Megatron's layout the pipeline stage, the tensor and the data
     * parallel index); -1 where it has none */
    int32_t *coords;
    size_t n_models;
    double wall_s;              /* the shares' denominator, per process */
};

/* Finds the groups of models[0..n) from their collectives' rows (the
 * analysis of the same models), steps (may have none) and the job's wall
 * time, and the pipeline's stages where there is one. Returns 0, or -1
 * when out of memory (out then holds nothing). */
int rsr_groups_find(struct rsr_model *const *models, size_t n, const struct rsr_coll_analysis *colls,
                    const struct rsr_steps *steps, double wall_s, struct rsr_groups *out);

void rsr_groups_free(struct rsr_groups *g);

/* The communicator id's entry, or NULL. */
const struct rsr_group_comm *rsr_groups_comm(const struct rsr_groups *g, uint64_t id);

#endif
