/* Training steps, found with no code change from the repetition of each
 * process's work (the sequence of its collectives, or of its kernels when
 * it has none), then put on the job's time line across ranks with the
 * breakdown of each step, the distribution of step times, phases, slow
 * steps and their cause, and the trend. Reads the step marks of aligned
 * summaries (summary.h); report.c, findings.c and the page read the result.
 *
 * How a process's steps are found (rsr_steps_find):
 *   - each mark is a symbol: its key (collective: operation, communicator,
 *     bytes; kernel: name) and one bit, whether the GPU idle gap before it
 *     is long (the longer of two classes of gaps split by Otsu's method on
 *     their logarithms, when the classes are well apart; Otsu's split of
 *     the shorter class instead when the marks above that are much more
 *     regular: a busy host holds a few marks for milliseconds, at random),
 *     because equal buckets make equal keys and only the gaps tell where a
 *     step starts;
 *   - the period P is the commonest distance between two marks with long
 *     gaps, when symbols that far apart agree (share >= 0.6); without long
 *     gaps, the smallest period at which symbols agree nearly as often as
 *     at the best one (within 0.1, and >= 0.6). Looked for in the first
 *     RSR_STEPS_LEARN symbols, P at most a third of them;
 *   - the signature is the most frequent window of P symbols, rotated to
 *     begin at the position with the longest median gap (a step begins
 *     after the host's sync, data loading or a checkpoint), on a tie at
 *     the position of the first mark; but where the marks are its keys
 *     repeated whole from the first mark to the last, at the first mark
 *     (a pipeline stage's longest wait is inside its step); and where the
 *     first marks are one step rotated and the steps begun there are two
 *     or more more than the gaps' rotation finds, there too (a pipeline
 *     stage with evaluation or checkpoints between its steps);
 *   - the marks are scanned in order: where the next P keys are the
 *     signature's (and, when its first key is not unique in it, the first
 *     has a long gap, or the scan is in phase and the keys go on step by
 *     step to a first mark that has one, or to the end, within 8 steps),
 *     that is a training step; elsewhere one mark is
 *     skipped. A checkpoint or an evaluation between steps, jitter, or a
 *     first step that differs only leave marks unmatched;
 *   - the unmatched marks are searched the same way for a second
 *     signature: its steps are the evaluation phase when they move fewer
 *     bytes (kernels: run fewer kernels) than a training step, else
 *     "other"; each run of marks still unmatched is one step of phase
 *     "other".
 * A step runs from its first mark's time to the next mark's (the last: to
 * the end of the process's GPU work). Its confidence is the share of
 * agreeing symbols at the period times the share of marks inside training
 * and evaluation steps. */
#ifndef RSR_STEPS_H
#define RSR_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/analyse/critpath.h"
#include "reporter/load/model.h"

/* Symbols the period is looked for in, and the longest period. */
#define RSR_STEPS_LEARN 8192
#define RSR_STEPS_MAX_PERIOD 2048
/* Fewer training steps than this on a process: no steps. */
#define RSR_STEPS_MIN 3
/* A step is slow at this many times its phase's median. */
#define RSR_STEPS_SLOW_X 1.3
/* Entries of report.json's steps.series at most (report.c): beyond, each
 * is the longest step of a run of consecutive steps, as the page's step
 * chart draws them (at most as many bars). */
#define RSR_STEPS_SERIES 1500
/* Slow steps report.json lists at most (report.c): beyond, the slowest
 * (the most times their phase's median), in order; steps.slow_count says
 * how many there were. */
#define RSR_STEPS_SLOW_LISTED 1500

#define RSR_STEP_PHASES(X) \
    X(TRAIN, "train") \
    X(EVAL,  "eval") \
    X(OTHER, "other")

enum rsr_step_phase {
#define RSR_STEP_PHASE_ENUM(name, text) RSR_PHASE_##name,
    RSR_STEP_PHASES(RSR_STEP_PHASE_ENUM)
#undef RSR_STEP_PHASE_ENUM
    RSR_NPHASES
};

const char *rsr_step_phase_name(int phase);

/* A run of marks that is one step. */
struct rsr_step_seg {
    size_t first, n;
    uint8_t phase;              /* enum rsr_step_phase */
};

struct rsr_steps_found {
    size_t period;              /* marks per training step; 0: no repeating structure */
    uint32_t anchor_key;        /* the key a training step begins with */
    int anchor_unique;          /* it occurs once in a training step */
    double score;               /* share of symbols one period apart that agree */
    double covered;             /* share of marks in training and evaluation steps */
    struct rsr_step_seg *segs;  /* in order; NULL when period is 0 */
    size_t n_segs, n_train;
};

/* Finds the steps of one process in its marks' keys, gaps (ns) and weights (what a mark moves: bytes,
 * or 1 per kernel), n of each, into *out (zeroed first; free with
 * rsr_steps_found_free). out->period is 0 when there is no repetition or
 * fewer than RSR_STEPS_MIN training steps. Returns 0, or -1 when out of
 * memory. */
int rsr_steps_find(const uint32_t *key, const int64_t *gap, const double *weight, size_t n,
                   struct rsr_steps_found *out);

void rsr_steps_found_free(struct rsr_steps_found *f);

/* A process's marks as rsr_steps_find_in reads them: every key in memory
 * (4 bytes a mark), the gaps and weights asked for one mark at a time,
 * in order within each pass (the marks may be read from a file a block at
 * a time): gap returns 0, or -1 when the mark cannot be read. */
struct rsr_steps_src {
    size_t n;
    const uint32_t *key;
    int (*gap)(void *ctx, size_t i, int64_t *gap);
    double (*weight)(void *ctx, size_t i, uint32_t key);
    void *ctx;
};

/* rsr_steps_find over src, in memory that grows by 6 bytes a mark (its
 * key, a bit and a code) and no more: the steps are handed to emit (when
 * not NULL) in order, as they are found, and counted in out->n_segs
 * (out->segs stays NULL). emit returns 0, or -1 to stop (then -1). */
int rsr_steps_find_in(const struct rsr_steps_src *src, struct rsr_steps_found *out,
                      int (*emit)(void *ctx, const struct rsr_step_seg *seg), void *ectx);

/* One step on the job's time line: from the first rank's start to the
 * last rank's end, with the breakdown summed over the ranks that had it. */
struct rsr_step {
    int64_t start_ns, end_ns;
    double compute_pct, exposed_comm_pct, idle_pct;     /* of the ranks' step time */
    double sync_wait_pct;       /* waiting for a late rank, not hidden (rsr_coll_step_waits) */
    double ranks_ns;            /* the ranks' step time: their steps' lengths summed */
    double io_ms, wait_ms;      /* I/O calls, data-loading wait: mean over ranks */
    double ckpt_ms;             /* checkpoint writes inside it, longest over ranks */
    double busy_spread_ms;      /* the busiest rank's GPU busy time less the mean rank's */
    double idle_ms;             /* GPU idle, mean over ranks */
    int32_t busiest_rank;
    uint8_t phase;
    uint8_t checkpoint;         /* a checkpoint write lies mostly inside it */
    struct rsr_step_path path;  /* its critical path as the ranks were folded in (critpath.h) */
};

struct rsr_step_slow {
    size_t index;
    double dur_ms;
    double x_median;
    const char *cause;          /* "checkpoint", "io", "warm_up", "straggler", "launch_gaps", "unknown" */
    int32_t rank;               /* the straggler's rank, -1 otherwise */
    unsigned graphs;            /* its flame graphs the report wrote: bit 1 << enum rsf_sample_kind */
};

struct rsr_steps {
    const char *source;         /* "collectives", "kernels", "nvtx", "kineto"; NULL: no steps (why says) */
    char why[200];
    double confidence;          /* 0..1 */
    /* The steps, in time order, every phase: read and written through
     * rsr_step_get and rsr_step_mut alone. In memory (steps) up to a bound,
     * beyond it in the spill file a block at a time (summary.h), so that
     * memory does not grow with the job's length; NULL once digested. */
    struct rsr_step *steps;
    size_t n;
    int spilled, failed;        /* failed: a block could not be read or written */
    uint64_t spill_off;
    struct rsr_step_block {
        struct rsr_step *v;
        size_t blk;             /* SIZE_MAX: none */
        int dirty;
        unsigned used;
    } cache[2];
    unsigned tick;
    int64_t *blk_start;         /* rsr_steps_at's index: each block's first start */
    /* The digest (rsr_steps_digest): what report.json's steps.series
     * shows, at most RSR_STEPS_SERIES steps, each the longest of a run of
     * series_run consecutive steps, with its index among the n. */
    struct rsr_step *series;
    size_t *series_index;
    size_t n_series, series_run;
    size_t count;               /* training steps */
    /* The headline: the job's time per training step, from the first
     * training step's start to the last one's end over their count, with
     * whatever lies between them (checkpoints, evaluation, data waits):
     * what a user's s/itr counts. span_ms is that time. */
    double per_step_ms, span_ms;
    double median_ms, p90_ms, p99_ms, max_ms, trend_pct;  /* training steps */
    double typical_change_pct;  /* the typical step's change over the run (steps.c) */
    size_t phase_count[RSR_NPHASES];
    double phase_median_ms[RSR_NPHASES];
    struct rsr_step_slow *slow;
    size_t n_slow;
    size_t ranks;               /* processes whose steps make the job's */
    uint8_t *in_steps;          /* [n_models]: 1 for those processes (models' order) */
    size_t n_models;
    /* [n_models * RSR_CP_NPARTS]: each process's own critical-path parts
     * (critpath.h) over its training steps, ns, as if it were the path:
     * where a cause lies, on one rank or on all */
    double *rank_parts;
};

/* Whether a range's name marks a step: "step" or "iter" in any case
 * (ProfilerStep#12, train_step, Iteration). A process with RSR_STEPS_MIN or
 * more such ranges has its steps from them, source "nvtx" ("kineto" when
 * they are all ProfilerStep#N), phase eval where the name says eval or
 * valid; else from the repetition of its work. */
int rsr_step_range_name(const char *name);

/* Finds the steps of the job in models[0..n) (aligned, summarised) into
 * *out (which then owns its arrays). Returns 0, or -1 when out of memory
 * (out then says no steps). */
int rsr_steps_analyse(struct rsr_model *const *models, size_t n, struct rsr_steps *out);

void rsr_steps_free(struct rsr_steps *s);

/* Step i (< s->n, before the digest) to read, or to change: valid until
 * the next call on s (a block of the spill file may be read in its place;
 * one that could not be read reads as zeros and sets s->failed). */
const struct rsr_step *rsr_step_get(const struct rsr_steps *s, size_t i);
struct rsr_step *rsr_step_mut(struct rsr_steps *s, size_t i);

/* The step time t falls in (steps in time order), or -1: none. */
long rsr_steps_at(const struct rsr_steps *s, int64_t t);

/* Steps a job holds in memory at most, and steps a block of the spill file
 * beyond (defaults 65536 and 4096). For tests. */
void rsr_steps_store_max(size_t in_memory, size_t block);

/* Keeps of the job's steps only what is shown of them (the series; the
 * slow steps keep their own figures) and frees the rest, so that what
 * follows the analyses (the timeline lanes, the outputs) does not hold
 * memory that grows with the job's length. Returns 0, or -1 when out of
 * memory (the steps are then left as they were). */
int rsr_steps_digest(struct rsr_steps *s);

/* The median of v[0..n) (sorted in place), interpolated between the middle
 * two; 0 when n is 0. */
double rsr_steps_median(double *v, size_t n);

/* Writes a time per step of ms milliseconds as users read it: "37.7
 * ms/step", or "2.35 s/itr" from a second up (tqdm's unit); into buf of n
 * bytes. Returns buf. */
char *rsr_steps_time_text(char *buf, size_t n, double ms);

#endif
