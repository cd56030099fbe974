/* The stretches of a job that `ringside flame --steps, --slow-steps,
 * --phase` graphs: the job's steps found as the report finds them (the
 * files summarised once, then analysed), each from the first rank's start
 * to the last rank's end on the job's aligned time line. */
#ifndef RSR_STEP_PICK_H
#define RSR_STEP_PICK_H

#include <stddef.h>
#include <stdint.h>

enum rsr_pick_kind { RSR_PICK_STEPS, RSR_PICK_SLOW, RSR_PICK_PHASE };

struct rsr_step_pick {
    int kind;                   /* enum rsr_pick_kind */
    size_t first, last;         /* RSR_PICK_STEPS: step indices (report.json's), inclusive */
    int phase;                  /* RSR_PICK_PHASE: enum rsr_step_phase */
};

struct rsr_spans {
    int64_t *v;                 /* n pairs [lo, hi), sorted and apart (touching steps joined) */
    size_t n;
    int64_t *clock;             /* per file given: what takes its clock onto the time line */
    size_t picked, steps;       /* steps picked, of the job's */
    double secs;                /* the picked steps' time, s */
    int64_t job_start;          /* the job's start on the time line */
};

/* Reads files[0..nfiles) (one run's) and picks the steps pick names into
 * *out (free with rsr_spans_free). Returns 0, or -1 after printing one line
 * saying why nothing was picked (no steps found and why, a range past the
 * job's steps, no slow steps, no step of the phase) or that memory ran out. */
int rsr_step_pick(char **files, int nfiles, const struct rsr_step_pick *pick, struct rsr_spans *out);

void rsr_spans_free(struct rsr_spans *s);

/* The report's graphs of its slowest steps: the RSR_SLOW_GRAPHED steps of
 * steps.slow that took the most times their phase's median, picked by
 * rsr_slow_spans_visit (a visitor for rsr_job_analyse_visit, on a zeroed
 * struct) with their spans, in step order. */
#define RSR_SLOW_GRAPHED 3
struct rsr_slow_spans {
    int chosen, n;
    size_t slow[RSR_SLOW_GRAPHED];      /* their places in steps.slow */
    int64_t spans[2 * RSR_SLOW_GRAPHED];
};

struct rsr_job;
struct rsr_step;
int rsr_slow_spans_visit(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job);

#endif
