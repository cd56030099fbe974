/* GPU memory across the job (memory.h). */
#include "reporter/analyse/memory.h"
#include "reporter/load/memory.h"

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

/* The line through the bytes held at the end of each training step after
 * the first tenth: its slope a step and r^2. */
static void growth(const struct rsr_memory *mem, const struct rsr_steps *steps, struct rsr_mem_proc *p)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    size_t k = 0;
    for (size_t i = steps->n / 10; i < steps->n; i++) {
        const struct rsr_step *s = rsr_step_get(steps, i);
        if (s->phase != RSR_PHASE_TRAIN)
            continue;
        double x = (double)i, y = (double)rsr_memory_live_at(mem, s->end_ns);
        sx += x, sy += y, sxx += x * x, sxy += x * y, syy += y * y;
        k++;
    }
    p->grow_steps = k;
    if (k < RSR_LEAK_MIN_STEPS)
        return;
    double vx = sxx - sx * sx / (double)k, vy = syy - sy * sy / (double)k, cxy = sxy - sx * sy / (double)k;
    if (vx <= 0)
        return;
    p->grow_per_step = cxy / vx;
    p->grow_r2 = vy > 0 ? cxy * cxy / (vx * vy) : 0;
    p->leak = p->grow_per_step > 0 && p->grow_r2 >= RSR_LEAK_R2 &&
              p->grow_per_step * (double)k >= (double)RSR_LEAK_MIN_BYTES;
}

/* The failed call that ended the process: its last one, when no retry got
 * past it; the retries before it that did. */
static void fatal(const struct rsr_memory *mem, const struct rsr_steps *steps, struct rsr_mem_proc *p)
{
    p->fatal = -1;
    p->fatal_step = -1;
    if (!mem->nfails || mem->fails[mem->nfails - 1].retried)
        return;
    p->fatal = (int)mem->nfails - 1;
    const struct rsr_mem_fail *f = &mem->fails[p->fatal];
    p->retries_before = mem->retried;
    p->retry_ns_before = mem->retry_ns;
    long s = steps->n ? rsr_steps_at(steps, f->ns) : -1;
    if (s < 0 && steps->n && f->ns >= rsr_step_get(steps, steps->n - 1)->end_ns)
        s = (long)steps->n; /* in the step after the last one found: the one it never finished */
    p->fatal_step = s;
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
            p->peak_step = mem->peak ? rsr_steps_at(steps, mem->peak_ns) : -1;
            step_peaks(mem, steps, p);
            growth(mem, steps, p);
        }
        fatal(mem, steps, p);
        if (p->grow_per_step > 0 && mem->total) {
            /* what the device has left, as the driver says (other processes and
             * libraries included), else as the program's own bytes say */
            uint64_t held = mem->used_max ? mem->used_max : mem->end_live;
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
    free(m->procs);
    memset(m, 0, sizeof *m);
}
