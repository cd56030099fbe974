/* One step's critical path as the ranks are folded in, one at a time: each
 * rank's step split into the parts of the path by cause, and the step's
 * what-if gains re-timed from them (the method: critpath.h; steps.c folds
 * each rank's step counters, summary.h, as it puts the steps on the job's
 * time line). */
#ifndef RSR_CP_STEP_H
#define RSR_CP_STEP_H

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
    X(IMBALANCE,    "imbalance",    "a slower rank's compute") \
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
    /* the share of the rank's time (over its whole run: a step's own
     * figure swings with the machine's load) its main thread waited for a
     * CPU beyond its wake-ups from syncs (0..1) */
    double starved;
    /* a rank without GPU work (its steps from its waits): its CPU work is
     * its compute, and the share of each host class of its main thread's
     * waits that were in a collective (0..1) is its transfer and its wait
     * for later ranks */
    double coll[RSR_HOST_NCLASSES];
    int cpu;
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
    /* the host causes' parts over the ranks: added up, and the least;
     * the least transfer (rsr_cp_step's waits for a late rank) */
    float host_sum[RSR_CP_NHOST], host_min[RSR_CP_NHOST];
    double t_min;
};

void rsr_cp_fold(struct rsr_step_path *p, const struct rsr_cp_rank *x, int first);

/* How the job's steps are read (rsr_critpath.how): a compute excess that
 * moves from rank to rank (the fewest ranks holding 80% of its gain are
 * more than half of them) is jitter, not a straggler: compute
 * (NO_IMBALANCE). */
enum { RSR_CP_NO_IMBALANCE = 1 };

/* The step's gains (ns) per part from its folded path (eval: the step is
 * an evaluation step: all of it is EVAL's, the latest rank's own time in
 * it, len_ns without one) into gain[RSR_CP_NGAIN], and its parts into
 * part[RSR_CP_NPARTS] (NULL: not wanted), read as how says. Returns the
 * path's length: its parts added up.
 *
 * The latest rank's transfer beyond the least any rank had is its wait
 * inside collectives for ranks that came later: the path goes through
 * them there, and that wait is given to the host causes by which the
 * other ranks exceeded their least (what made them late); removing such
 * a cause removes the wait with it. With no such excess it stays
 * transfer. */
double rsr_cp_step(const struct rsr_step_path *p, int eval, unsigned how, double len_ns, double *gain, double *part);

#endif
