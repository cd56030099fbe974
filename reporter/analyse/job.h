/* A job as the analyses leave it (analyse.h runs them in order): the
 * models on one time line and each analysis' result. The findings
 * (findings.h) read all of it. */
#ifndef RSR_JOB_H
#define RSR_JOB_H

#include <stddef.h>

#include "reporter/analyse/align.h"
#include "reporter/analyse/collectives.h"
#include "reporter/analyse/critpath.h"
#include "reporter/analyse/ends.h"
#include "reporter/load/gpu_breakdown.h"
#include "reporter/analyse/groups.h"
#include "reporter/analyse/hang.h"
#include "reporter/load/kernels.h"
#include "reporter/analyse/memory.h"
#include "reporter/load/model.h"
#include "reporter/analyse/nodes.h"
#include "reporter/analyse/steps.h"
#include "reporter/analyse/storage.h"
#include "reporter/analyse/timeline.h"

struct rsr_finding;

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
    struct rsr_mem_job memory;          /* GPU memory: peaks, leaks, the out-of-memory */
    struct rsr_finding *findings;       /* most severe first */
    size_t n_findings;
};

#endif
