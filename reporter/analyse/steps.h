/* Training steps, found with no code change from the repetition of each
 * process's work (the sequence of its collectives, or of its kernels when
 * it has none), then put on the job's time line across ranks with the
 * breakdown of each step, the distribution of step times, phases, slow
 * steps and their cause, and the trend. Reads the step marks of aligned
 * summaries (summary.h); report.c, findings.c and the page read the result.
 * How a process's steps are found: period.h. */
#ifndef RSR_STEPS_H
#define RSR_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/analyse/cp_step.h"
#include "reporter/load/model.h"
#include "reporter/load/period.h"

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
