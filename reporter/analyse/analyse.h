/* All the analyses of one job, run in order on its models: clock alignment,
 * per-process GPU breakdown and kernel summary, collectives and stragglers,
 * communication groups by role,
 * storage (checkpoints, data loading), utilisation bins, steps, findings. The
 * report writers (report.c's JSON and text, html.c, perfetto.c) read it. */
#ifndef RSR_ANALYSE_H
#define RSR_ANALYSE_H

#include <stddef.h>

#include "reporter/analyse/align.h"
#include "reporter/analyse/collectives.h"
#include "reporter/analyse/critpath.h"
#include "reporter/analyse/ends.h"
#include "reporter/analyse/findings.h"
#include "reporter/load/gpu_breakdown.h"
#include "reporter/analyse/groups.h"
#include "reporter/analyse/hang.h"
#include "reporter/load/kernels.h"
#include "reporter/load/model.h"
#include "reporter/analyse/nodes.h"
#include "reporter/analyse/steps.h"
#include "reporter/load/storage.h"
#include "reporter/analyse/timeline.h"

struct rsr_job {
    struct rsr_model *const *models;    /* the caller's, aligned in place */
    size_t n;
    struct rsr_alignment align;
    struct rsr_gpu_breakdown *gpu;      /* per model (zeroed when it has no GPU work); */
    struct rsr_kernel_summary *kernels; /* per model; both copies of the models' summaries' */
    struct rsr_coll_analysis colls;
    struct rsr_groups groups;           /* the communicators by role */
    struct rsr_storage storage;
    struct rsr_ends ends;               /* the files that end early */
    struct rsr_timeline timeline;
    struct rsr_steps steps;
    struct rsr_critpath path;           /* the steps' critical path by cause, and the what-ifs */
    struct rsr_nodes nodes;             /* the hosts' own counters, on the timeline's bins */
    struct rsr_hang hang;               /* a stuck job's verdict (kind NONE: not stuck) */
    struct rsr_finding *findings;       /* most severe first */
    size_t n_findings;
};

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
