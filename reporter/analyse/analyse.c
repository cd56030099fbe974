/* Runs the analyses of a job in order (see analyse.h). */
#include "reporter/analyse/analyse.h"
#include "reporter/load/summary.h"

#include <stdlib.h>
#include <string.h>

int rsr_job_analyse(struct rsr_model *const *models, size_t n, struct rsr_job *job)
{
    return rsr_job_analyse_visit(models, n, job, NULL, NULL);
}

int rsr_job_analyse_visit(struct rsr_model *const *models, size_t n, struct rsr_job *job,
                          int (*visit)(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job),
                          void *ctx)
{
    memset(job, 0, sizeof *job);
    job->models = models;
    job->n = n;
    int rc = 0;
    if (rsr_align(models, n, &job->align) != 0)
        rc = -1;
    job->gpu = calloc(n ? n : 1, sizeof *job->gpu);
    job->kernels = calloc(n ? n : 1, sizeof *job->kernels);
    if (!job->gpu || !job->kernels)
        return -1;
    /* the summaries own what these point to */
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        if (!sm) {
            rc = -1;
            continue;
        }
        job->gpu[i] = sm->gpu;
        job->kernels[i] = sm->kernels;
    }
    if (rsr_collectives_analyse(models, n, &job->colls) != 0)
        rc = -1;
    for (size_t i = 0; i < n; i++)
        rsr_coll_split_gpu(&job->colls, i, &job->gpu[i]);
    if (rsr_storage_analyse(models, n, &job->storage) != 0)
        rc = -1;
    if (rsr_ends_find(models, n, job->storage.job_start_ns, job->storage.job_end_ns, &job->ends) != 0)
        rc = -1;
    if (rsr_timeline_build(models, n, job->storage.job_start_ns, job->storage.job_end_ns, &job->timeline) != 0)
        rc = -1;
    if (rsr_steps_analyse(models, n, &job->steps) != 0 || rsr_coll_step_waits(models, n, &job->steps, &job->colls) != 0 ||
        rsr_critpath_analyse(models, n, &job->steps, &job->path) != 0 ||
        rsr_coll_why_from_path(models, n, &job->colls, &job->path) != 0)
        rc = -1;
    if (rsr_groups_find(models, n, &job->colls, &job->steps,
                        (double)(job->storage.job_end_ns - job->storage.job_start_ns) / 1e9, &job->groups) != 0)
        rc = -1;
    if (rsr_hang_analyse(job->models, job->n, &job->steps, &job->groups, &job->hang) != 0)
        rc = -1;
    /* The last step found before a hang ends where the GPU work last ended:
     * it holds the start of the step the job hung in, which makes it slow
     * for no cause of its own. */
    if (job->hang.kind != RSR_HANG_NONE && job->steps.n && job->hang.step == (int64_t)job->steps.n)
        for (size_t i = 0; i < job->steps.n_slow; i++)
            if (job->steps.slow[i].index == job->steps.n - 1) {
                job->steps.slow[i].cause = "hang";
                job->steps.slow[i].rank = -1;
            }
    if (rsr_memory_analyse(models, n, &job->steps, &job->memory) != 0)
        rc = -1;
    if (rsr_nodes_analyse(models, n, job->timeline.start_ns, job->timeline.bin_ns, job->timeline.nbins,
                          &job->nodes) != 0)
        rc = -1;
    if (rsr_findings_make(job) != 0)
        rc = -1;
    for (size_t i = 0; visit && i < job->steps.n; i++)
        if (visit(ctx, i, rsr_step_get(&job->steps, i), job) != 0)
            break;
    /* what follows reads only the steps' series */
    if (rsr_steps_digest(&job->steps) != 0 || job->steps.failed)
        rc = -1;
    return rc;
}

void rsr_job_free(struct rsr_job *job)
{
    rsr_alignment_free(&job->align);
    free(job->gpu);
    free(job->kernels);
    rsr_coll_analysis_free(&job->colls);
    rsr_groups_free(&job->groups);
    rsr_storage_free(&job->storage);
    rsr_ends_free(&job->ends);
    rsr_timeline_free(&job->timeline);
    rsr_steps_free(&job->steps);
    rsr_nodes_free(&job->nodes);
    rsr_hang_free(&job->hang);
    rsr_mem_job_free(&job->memory);
    free(job->findings);
    memset(job, 0, sizeof *job);
}
