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

#include "reporter/load/summary.h"

/* The parts of the path; the first RSR_CP_NGAIN are removable causes with
 * a what-if gain of their own. */
#define RSR_CP_PARTS(X) \
    X(CHECKPOINT,   "checkpoint",   "checkpoint writes") \
    X(DATA,         "data_loading", "data loading") \
    X(FILE_IO,      "file_io",      "other file I/O") \
    X(SLEEP,        "sleep",        "host sleeps") \
    X(LOCK,         "lock",         "host lock waits") \
    X(WAIT,         "host_wait",    "host waits on another process") \
    X(SYNC,         "sync",         "GPU-to-CPU syncs") \
    X(HOST,         "host",         "host CPU work (launches, Python)") \
    X(TRANSFER,     "transfer",     "exposed communication") \
    X(IMBALANCE,    "imbalance",    "a slower rank's kernels") \
    X(EVAL,         "evaluation",   "evaluation steps") \
    X(COMPUTE,      "compute",      "compute") \
    X(COPIES,       "copies",       "copies and memsets")

enum rsr_cp_part {
#define RSR_CP_ENUM(id, name, text) RSR_CP_##id,
    RSR_CP_PARTS(RSR_CP_ENUM)
#undef RSR_CP_ENUM
    RSR_CP_NPARTS
};
/* the host classes, whose gains are re-timed as max over ranks of W - c */
#define RSR_CP_NHOST (RSR_CP_HOST + 1)
/* every part before COMPUTE has a gain */
#define RSR_CP_NGAIN RSR_CP_COMPUTE

/* report.json's name of a part ("data_loading"), and as users read it. */
const char *rsr_cp_part_name(int part);
const char *rsr_cp_part_text(int part);

/* One rank's step as the path sees it: its parts (ns; IMBALANCE and EVAL
 * 0), its own work W (every part but the transfer), and the compute the
 * transfer could still hide behind. */
struct rsr_cp_rank {
    int32_t rank;
    int64_t start;
    double part[RSR_CP_NPARTS];
    double w;
    double hideable;
};

/* A rank's training steps without a checkpoint so far: their copies, sync
 * and host parts added up. A checkpoint's step takes more of them than
 * the rank's typical step (the copy of the state to the host, the sync
 * that waits for it, the host's serialising) and that excess is the
 * checkpoint's too. */
struct rsr_cp_typical {
    double copies, sync, host;
    uint64_t n;
};

/* What rsr_cp_rank_of takes of a rank's step: its counters' differences
 * d over [start, end); whether one of its checkpoint writes lies in the
 * step (then its writes' idle is the checkpoint's); how many collectives
 * it ran (0: not known); and the share of each host class of its main
 * thread's waits that were data loading (0..1). */
struct rsr_cp_in {
    int32_t rank;
    const struct rsr_step_counters *d;
    int64_t start, end;
    int ckpt;
    uint32_t colls;
    double loader[RSR_HOST_NCLASSES];
};

/* A rank's step; typ (NULL: none) the rank's typical training step so far,
 * which a training step without a checkpoint joins. The transfer overlap
 * could hide is at most the compute not already beside it, and never the
 * step's last collective (the mean collective's time: the last bucket of
 * gradients is reduced after the last backward kernel). */
void rsr_cp_rank_of(struct rsr_cp_rank *x, const struct rsr_cp_in *in, struct rsr_cp_typical *typ);

/* A step's path as the ranks are folded in: the latest rank's parts, the
 * latest end F of the ranks' own work (ns from base, the first rank's
 * start) and its rank, per host cause max over ranks of F - c, max over
 * ranks of F - compute and the least compute. */
struct rsr_step_path {
    double part[RSR_CP_NPARTS];     /* the latest rank's */
    double hideable;
    int64_t base;
    double f1;
    int32_t r1;
    double rest[RSR_CP_NHOST];
    double rest_compute, c_min;
    uint32_t ranks;
};

void rsr_cp_fold(struct rsr_step_path *p, const struct rsr_cp_rank *x, int first);

/* How the job's steps are read (rsr_critpath.how): a compute excess that
 * moves from rank to rank (the fewest ranks holding 80% of its gain are
 * more than half of them) is jitter, not a straggler: compute
 * (NO_IMBALANCE). */
enum { RSR_CP_NO_IMBALANCE = 1 };

/* The step's gains (ns) per part from its folded path (eval: the step is
 * an evaluation step: all of it is EVAL's, the latest rank's own time in
 * it, len_ns without one) into
 * gain[RSR_CP_NGAIN], and its parts into part[RSR_CP_NPARTS] (NULL: not
 * wanted), read as how says. Returns the path's length: its parts added
 * up. */
double rsr_cp_step(const struct rsr_step_path *p, int eval, unsigned how, double len_ns, double *gain, double *part);

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
