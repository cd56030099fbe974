/* The cross-rank critical path of every step, by cause, and what removing
 * each cause would give back (docs/analyses.md, 'The critical path').
 *
 * A step of a data-parallel job ends when its last rank has done its own
 * work and the collectives that wait for it are through: the rank whose
 * own work W_r (its GPU compute and copies, and the GPU's idle time while
 * its host did something else) ends last, counted from the rank's own
 * start of the step (a rank still finishing the step before starts late),
 * is the path, with the transfer no compute hid on that rank. A rank that waits inside a collective for a
 * later one is not on the path: the path goes through the late rank, and
 * its own time is split by what its GPU and host did (steps.c hands each
 * rank's step counters, summary.h, to rsr_cp_fold as the ranks are folded
 * in, one at a time). The idle time is given to what the host did, in this
 * order, each at most what is left: writing a checkpoint, loading data
 * (reading while the GPU idled, and the main thread's waits whose stacks
 * say data loading, waits.h), writing other files, sleeping, waiting on a
 * lock, waiting on another process or the network, returning from a sync
 * that waited for the GPU; what is left is the host's own CPU work
 * (launching, Python).
 *
 * The gains are what-ifs, re-timed per step as the ranks are folded, with
 * F_r the end of rank r's own work (its start plus W_r): without a host
 * cause c, the step's own work ends at max over ranks of (F_r - c_r) (a
 * rank that spent less time on c may now be the last); with the
 * ranks' compute like the fastest rank's, at max over ranks of
 * (F_r - compute_r) + that compute (a straggler's excess goes, and with it
 * every rank's); with
 * communication overlapped, the transfer shrinks by at most the compute on
 * that rank that it does not already hide behind; an evaluation step goes
 * whole. Each gain is at most its cause's part of the path, so no two
 * causes claim the same time and the gains never add up to more than the
 * step. Memory: a few numbers per step (kept with the step, steps.h) and
 * per rank and cause. */
#ifndef RSR_CRITPATH_H
#define RSR_CRITPATH_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/analyse/cp_step.h"
#include "reporter/load/waits.h"

/* The job's path: per step, the parts of its time and the gains. */
struct rsr_critpath {
    int have;                   /* 0: no steps, or none with a rank's counters */
    unsigned how;               /* RSR_CP_NO_IMBALANCE */
    size_t steps;               /* steps on the path (every phase) */
    double per_step_ms;         /* the steps' headline (steps.h per_step_ms) */
    /* per step, adding up to per_step_ms: each step's path, in proportion
     * to the headline's stretch (the ranks' steps overlap where one rank
     * began the next step while another ended this one) */
    double part_ms[RSR_CP_NPARTS];
    double gain_ms[RSR_CP_NGAIN];   /* per step */
    /* the rank a cause lies on, when one holds 60% or more of it (of the
     * ranks' own parts added up over their steps; a straggler's compute:
     * of the gain, from the rank that was the path); else -1 */
    int32_t gain_rank[RSR_CP_NGAIN];
    double gain_rank_share[RSR_CP_NGAIN];
    /* What the host was doing in a part the host's own (checkpoint and
     * other writes, data loading, its CPU work; a rank without GPU work:
     * its compute and a slower rank's compute too): the heaviest stacks
     * of that kind (waits.h's top: I/O, DataLoader waits, CPU) of the rank
     * the part lies on (gain_rank, else the rank with the most of it),
     * folded, root first; "" when none. frames_rank: that rank (-1: none). */
    int32_t frames_rank[RSR_CP_NPARTS];
    char frames[RSR_CP_NPARTS][RSR_TOP_STACKS][sizeof ((struct rsr_top_stack *)0)->text];
};

struct rsr_steps;
struct rsr_model;

/* The job's path from its steps (rsr_steps_analyse over models[0..n),
 * before the digest). 0, or -1 when out of memory. */
int rsr_critpath_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                         struct rsr_critpath *out);

/* The cause with the largest gain of those that lie on rank (gain_rank),
 * or -1: none. */
int rsr_critpath_rank_cause(const struct rsr_critpath *cp, int32_t rank);

#endif
