/* All the analyses of one job, run in order on its models: clock alignment,
 * per-process GPU breakdown and kernel summary, collectives and stragglers,
 * communication groups by role,
 * storage (checkpoints, data loading), utilisation bins, steps, findings. The
 * report writers (report.c's JSON and text, html.c, perfetto.c) read it. */
#ifndef RSR_ANALYSE_H
#define RSR_ANALYSE_H

#include <stddef.h>

#include "reporter/analyse/findings.h"
#include "reporter/analyse/job.h"

/* Aligns models[0..n) (finished) in place and runs every analysis into
 * *job. Returns 0, or -1 when out of memory (what was done is in *job;
 * free it with rsr_job_free either way). */
int rsr_job_analyse(struct rsr_model *const *models, size_t n, struct rsr_job *job);

/* The same, handing each step (every phase, in time order, i its index as
 * report.json's steps count them) to visit before the steps are digested
 * (after the findings: job->steps.slow is known). visit returns 0, or -1
 * to stop visiting. */
int rsr_job_analyse_visit(struct rsr_model *const *models, size_t n, struct rsr_job *job,
                          int (*visit)(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job),
                          void *ctx);

void rsr_job_free(struct rsr_job *job);

#endif
