/* The steps a flame graph of part of a run covers (step_pick.h). */
#include "reporter/analyse/step_pick.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reporter/analyse/analyse.h"
#include "reporter/load/load.h"
#include "reporter/base/array.h"

struct picker {
    const struct rsr_step_pick *pick;
    struct rsr_spans *out;
    size_t cap, slow_at;
    int oom;
};

static int picked(struct picker *k, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    const struct rsr_step_pick *p = k->pick;
    if (p->kind == RSR_PICK_STEPS)
        return i >= p->first && i <= p->last;
    if (p->kind == RSR_PICK_PHASE)
        return s->phase == p->phase;
    /* the slow list is in index order */
    const struct rsr_steps *st = &job->steps;
    while (k->slow_at < st->n_slow && st->slow[k->slow_at].index < i)
        k->slow_at++;
    return k->slow_at < st->n_slow && st->slow[k->slow_at].index == i;
}

static int visit(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    struct picker *k = ctx;
    if (s->end_ns <= s->start_ns || !picked(k, i, s, job))
        return 0;
    struct rsr_spans *o = k->out;
    o->picked++;
    o->secs += (double)(s->end_ns - s->start_ns) / 1e9;
    /* steps come in time order; one that starts where the last ended (or
     * before: ranks overlap) joins it */
    if (o->n && s->start_ns <= o->v[2 * o->n - 1]) {
        if (s->end_ns > o->v[2 * o->n - 1])
            o->v[2 * o->n - 1] = s->end_ns;
        return 0;
    }
    /* two values a span: start and end */
    if (rsr_grow(&o->v, &k->cap, o->n + 1, 2 * sizeof *o->v, 64) != 0) {
        k->oom = 1;
        return -1;
    }
    o->v[2 * o->n] = s->start_ns;
    o->v[2 * o->n + 1] = s->end_ns;
    o->n++;
    return 0;
}

int rsr_step_pick(char **files, int nfiles, const struct rsr_step_pick *pick, struct rsr_spans *out)
{
    memset(out, 0, sizeof *out);
    struct rsr_input *ins = calloc((size_t)nfiles, sizeof *ins);
    struct rsr_model **models = calloc((size_t)nfiles, sizeof *models);
    out->clock = calloc((size_t)nfiles, sizeof *out->clock);
    if (!ins || !models || !out->clock) {
        free(ins), free(models);
        rsr_spans_free(out);
        fputs("ringside: out of memory\n", stderr);
        return -1;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rsr_inputs_load(ins, files, nfiles, cpus > 1 ? (int)(cpus < 16 ? cpus : 16) : 1,
                    nfiles > 1 && isatty(STDERR_FILENO), 1);
    rsr_inputs_models(ins, nfiles, models);
    struct rsr_job job;
    struct picker k = { .pick = pick, .out = out };
    int rc = rsr_job_analyse_visit(models, (size_t)nfiles, &job, visit, &k) != 0 || k.oom ? -1 : 0;
    /* each file's clock onto the time line, in the caller's order */
    for (int i = 0; i < nfiles; i++)
        for (int f = 0; f < nfiles; f++)
            if (ins[i].file && strcmp(ins[i].file, files[f]) == 0)
                out->clock[f] = models[i]->clock_offset_ns;
    const struct rsr_steps *st = &job.steps;
    out->steps = st->n;
    out->job_start = job.storage.job_start_ns;
    if (rc)
        fputs("ringside: out of memory finding the job's steps\n", stderr);
    else if (!st->source)
        rc = -1, fprintf(stderr, "ringside: no steps found: %s\n", st->why[0] ? st->why : "no repeating work");
    else if (pick->kind == RSR_PICK_STEPS && pick->first >= st->n)
        rc = -1, fprintf(stderr, "ringside: the job has %zu steps (0 to %zu): none in %zu-%zu\n", st->n,
                         st->n - 1, pick->first, pick->last);
    else if (!out->n)
        rc = -1, pick->kind == RSR_PICK_SLOW
                     ? fprintf(stderr, "ringside: no slow steps (none took %.3gx its phase's median or more) of %zu\n",
                               RSR_STEPS_SLOW_X, st->n)
                     : fprintf(stderr, "ringside: no %s step among the job's %zu\n", rsr_step_phase_name(pick->phase),
                               st->n);
    rsr_job_free(&job);
    for (int i = 0; i < nfiles; i++)
        rsr_input_free(&ins[i]);
    free(ins);
    free(models);
    if (rc)
        rsr_spans_free(out);
    return rc;
}

int rsr_slow_spans_visit(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    struct rsr_slow_spans *k = ctx;
    const struct rsr_steps *st = &job->steps;
    if (!k->chosen) {
        /* the slowest by their times the median, kept in step order */
        k->chosen = 1;
        for (size_t j = 0; j < st->n_slow; j++) {
            int at = k->n;
            if (at == RSR_SLOW_GRAPHED) {
                at = 0;
                for (int m = 1; m < k->n; m++)
                    if (st->slow[k->slow[m]].x_median < st->slow[k->slow[at]].x_median)
                        at = m;
                if (st->slow[j].x_median <= st->slow[k->slow[at]].x_median)
                    continue;
                for (int m = at; m + 1 < k->n; m++)
                    k->slow[m] = k->slow[m + 1];
                at = k->n - 1;
            } else {
                k->n++;
            }
            k->slow[at] = j;
        }
    }
    int left = 0;
    for (int m = 0; m < k->n; m++) {
        if (st->slow[k->slow[m]].index == i)
            k->spans[2 * m] = s->start_ns, k->spans[2 * m + 1] = s->end_ns;
        left += st->slow[k->slow[m]].index > i;
    }
    return left ? 0 : -1;
}

void rsr_spans_free(struct rsr_spans *s)
{
    free(s->v);
    free(s->clock);
    memset(s, 0, sizeof *s);
}
