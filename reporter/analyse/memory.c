/* GPU memory across the job (memory.h). */
#include "reporter/analyse/memory.h"
#include "reporter/load/memory.h"
#include "reporter/load/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Each step's most held into p->step_peak: every step, or the largest of
 * each run of consecutive ones when they are more than RSR_MEM_STEPS. */
static void step_peaks(const struct rsr_memory *mem, const struct rsr_steps *steps, struct rsr_mem_proc *p)
{
    size_t n = steps->n;
    p->step_run = (uint32_t)((n + RSR_MEM_STEPS - 1) / RSR_MEM_STEPS);
    if (!p->step_run)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_step *s = rsr_step_get(steps, i);
        uint64_t v = rsr_memory_max_in(mem, s->start_ns, s->end_ns);
        size_t k = i / p->step_run;
        if (k >= p->n_step_peak)
            p->n_step_peak = (uint32_t)k + 1;
        if (v > p->step_peak[k])
            p->step_peak[k] = v;
    }
}

/* The line through the bytes held over the training steps after the first
 * tenth (warm-up): through the timeline's bins (what each ended with), each
 * at its step and its share of that step's time (bins rather than the
 * steps' ends: a step's end is the last rank's, and a rank may allocate for
 * its next step before it; a long step, a crash's, then counts as one). */
static void growth(const struct rsr_memory *mem, const struct rsr_steps *steps, struct rsr_mem_proc *p)
{
    size_t first = steps->n / 10, k = 0, nsteps = 0;
    for (size_t i = first; i < steps->n; i++)
        nsteps += rsr_step_get(steps, i)->phase == RSR_PHASE_TRAIN;
    int64_t from = rsr_step_get(steps, first)->start_ns, to = rsr_step_get(steps, steps->n - 1)->end_ns;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    uint64_t last = rsr_memory_live_at(mem, from);
    for (uint32_t b = 0; b < mem->nb; b++) {
        int64_t a = rsr_memory_bin_start(mem, b), z = a + mem->width_ns;
        if (mem->b[b].set)
            last = mem->b[b].live_last;
        if (a < from || z > to)
            continue;
        int64_t mid = a + mem->width_ns / 2;
        long s = rsr_steps_at(steps, mid);
        if (s < 0)
            continue;
        const struct rsr_step *st = rsr_step_get(steps, (size_t)s);
        double x = (double)s + (st->end_ns > st->start_ns ?
                                (double)(mid - st->start_ns) / (double)(st->end_ns - st->start_ns) : 0),
               y = (double)last;
        sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
        k++;
    }
    p->grow_steps = nsteps;
    if (k < RSR_LEAK_MIN_STEPS || nsteps < RSR_LEAK_MIN_STEPS)
        return;
    double n = (double)k, vx = sxx - sx * sx / n, vy = syy - sy * sy / n, cxy = sxy - sx * sy / n;
    if (vx <= 0)
        return;
    p->grow_per_step = cxy / vx;
    p->grow_r2 = vy > 0 ? cxy * cxy / (vx * vy) : 0;
    p->leak = p->grow_per_step > 0 && p->grow_r2 >= RSR_LEAK_R2 &&
              p->grow_per_step * (double)nsteps >= (double)RSR_LEAK_MIN_BYTES;
}

/* The step at time ns of process m: the one found there, or the one after
 * the last found (n) when ns comes after it. The last step found holds what
 * came after it up to the job's end (the next step's start, which never
 * finished, and the other ranks' wait for a rank that died): a time after
 * m's last collective, which lies in that step, is in the next one. -1:
 * before the first. */
static long step_of(struct rsr_model *m, const struct rsr_steps *steps, int64_t ns)
{
    if (!steps->n)
        return -1;
    long s = rsr_steps_at(steps, ns);
    if (s < 0 && ns >= rsr_step_get(steps, steps->n - 1)->end_ns)
        return (long)steps->n;
    const struct rsr_summary *sm = rsr_model_summary(m);
    struct rsr_step_mark last;
    if (s == (long)steps->n - 1 && sm && sm->n_cmarks &&
        rsr_summary_cmarks_read(sm, sm->n_cmarks - 1, 1, &last) == 0 && ns > last.t &&
        rsr_steps_at(steps, last.t) == s)
        s = (long)steps->n;
    return s;
}

/* The failed call that ended the process: its last one, when no retry got
 * past it; the retries before it that did. */
static void fatal(struct rsr_model *m, const struct rsr_steps *steps, struct rsr_mem_proc *p)
{
    const struct rsr_memory *mem = m->mem;
    p->fatal = -1;
    p->fatal_step = -1;
    if (!mem->nfails || mem->fails[mem->nfails - 1].retried)
        return;
    p->fatal = (int)mem->nfails - 1;
    const struct rsr_mem_fail *f = &mem->fails[p->fatal];
    p->retries_before = mem->retried;
    p->retry_ns_before = mem->retry_ns;
    p->fatal_step = step_of(m, steps, f->ns);
}

int rsr_memory_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                       struct rsr_mem_job *out)
{
    memset(out, 0, sizeof *out);
    out->peak_model = out->oom_model = out->leak_model = -1;
    out->n = n;
    out->procs = calloc(n ? n : 1, sizeof *out->procs);
    if (!out->procs)
        return -1;
    double fastest = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_memory *mem = models[i]->mem;
        struct rsr_mem_proc *p = &out->procs[i];
        p->peak_step = -1;
        p->fatal = -1;
        p->fatal_step = -1;
        p->full_at_step = -1;
        if (!mem || (!mem->allocs && !mem->failed))
            continue;
        p->has = 1;
        out->any = 1;
        if (steps->n) {
            if (!(p->step_peak = calloc(RSR_MEM_STEPS, sizeof *p->step_peak)))
                return -1;
            p->peak_step = mem->peak ? step_of(models[i], steps, mem->peak_ns) : -1;
            step_peaks(mem, steps, p);
            growth(mem, steps, p);
        }
        fatal(models[i], steps, p);
        if (p->leak && mem->total) {
            /* what the device has left: the program's bytes in the last step and
             * the most else the driver said was in use (the context, NCCL's
             * buffers, other processes) */
            /* the most held in the last step (its end's bin may hold the teardown's frees) */
            const struct rsr_step *last = rsr_step_get(steps, steps->n - 1);
            uint64_t held = rsr_memory_max_in(mem, last->start_ns, last->end_ns) +
                            (uint64_t)(mem->other_max > 0 ? mem->other_max : 0);
            double left = held < mem->total ? (double)(mem->total - held) : 0;
            p->full_at_step = (double)steps->n + left / p->grow_per_step;
        }
        if (out->peak_model < 0 || mem->peak > models[out->peak_model]->mem->peak)
            out->peak_model = (long)i;
        if (p->fatal >= 0 &&
            (out->oom_model < 0 ||
             mem->fails[p->fatal].ns <
                 models[out->oom_model]->mem->fails[out->procs[out->oom_model].fatal].ns))
            out->oom_model = (long)i;
        if (p->leak && p->grow_per_step > fastest) {
            fastest = p->grow_per_step;
            out->leak_model = (long)i;
        }
    }
    return 0;
}

void rsr_mem_job_free(struct rsr_mem_job *m)
{
    for (size_t i = 0; m->procs && i < m->n; i++)
        free(m->procs[i].step_peak);
    free(m->procs);
    memset(m, 0, sizeof *m);
}
