/* GPU memory across the job (docs/analyses.md, 'GPU memory'): each
 * process's peak and the step it falls in, its peak per step, memory that
 * grows step after step (a leak: how fast, and the step at which the device
 * is full at that rate), and the allocation that failed and ended it (out
 * of memory), from each model's memory figures (load/memory.h) and the
 * job's steps. */
#ifndef RSR_ANALYSE_MEMORY_H
#define RSR_ANALYSE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/analyse/steps.h"
#include "reporter/load/model.h"

/* Per-step peaks a process keeps at most: the job's steps, or the largest
 * of each run of step_run consecutive ones. */
#define RSR_MEM_STEPS 256

/* A leak: the program's bytes held at the end of each training step (after
 * the first tenth, warm-up) grow by at least RSR_LEAK_MIN_BYTES over the
 * steps, steadily (r^2 of the line through them RSR_LEAK_R2 or more). */
#define RSR_LEAK_MIN_BYTES (32ull << 20)
#define RSR_LEAK_R2 0.8
#define RSR_LEAK_MIN_STEPS 4

struct rsr_mem_proc {
    int has;                    /* the model has memory figures */
    long peak_step;             /* the step its peak falls in (0-based), -1: none */
    uint64_t *step_peak;        /* [RSR_MEM_STEPS]: the most held in each step (or run of step_run); NULL without figures */
    uint32_t n_step_peak, step_run;
    /* the leak's line: bytes a step, its r^2, the steps it is drawn over;
     * leak set when it is one (above) */
    double grow_per_step, grow_r2;
    size_t grow_steps;
    int leak;
    /* the step at which its device is full at that rate (0-based; -1: not
     * known: no device total, or memory that does not grow) */
    double full_at_step;
    /* its out-of-memory: the failed call that was not got past (an index into
     * its memory's fails; -1: none), the step it fell in (-1: none known),
     * the retries before it that got past (count, ns) */
    int fatal;
    long fatal_step;
    uint64_t retries_before;
    int64_t retry_ns_before;
};

struct rsr_mem_job {
    struct rsr_mem_proc *procs; /* [n], the models' order */
    size_t n;
    int any;                    /* some model has memory figures */
    long peak_model;            /* the model with the largest peak, -1: none */
    long oom_model;             /* the first out-of-memory by time, -1: none */
    long leak_model;            /* the fastest-growing leak, -1: none */
};

/* Fills out from the models and the steps (before their digest). Returns
 * 0, or -1 when out of memory. */
int rsr_memory_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                       struct rsr_mem_job *out);

void rsr_mem_job_free(struct rsr_mem_job *m);

#endif
