/* report.json's "memory" (memory_json.h). */
#include "reporter/out/memory_json.h"
#include "reporter/load/memory.h"

/* Seconds from the job's start. */
static double job_s(const struct rsr_job *j, int64_t ns)
{
    return (double)(ns - j->storage.job_start_ns) / 1e9;
}

static void uint_or_null(struct rsr_jw *w, const char *key, uint64_t v, int known)
{
    rsr_jw_key(w, key);
    if (known)
        rsr_jw_uint(w, v);
    else
        rsr_jw_null(w);
}

static void fail_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_mem_fail *f)
{
    rsr_jw_object(w, RSR_JW_SPACED);
    rsr_jw_kfixed(w, "t_s", job_s(j, f->ns), 6);
    rsr_jw_kstr(w, "call", rsr_mem_call_name(f->asked_kind));
    rsr_jw_kuint(w, "asked_bytes", f->asked);
    rsr_jw_kint(w, "result", f->result);
    rsr_jw_kint(w, "held_bytes", (int64_t)f->live);
    uint_or_null(w, "free_bytes", f->free_b, f->total_b != 0);
    uint_or_null(w, "total_bytes", f->total_b, f->total_b != 0);
    rsr_jw_kbool(w, "retried", f->retried);
    if (f->retried)
        rsr_jw_kfixed(w, "retry_ms", (double)f->retry_ns / 1e6, 3);
    rsr_jw_end(w);
}

void rsr_memory_process_json(struct rsr_jw *w, const struct rsr_job *j, size_t i)
{
    const struct rsr_mem_proc *p = i < j->memory.n ? &j->memory.procs[i] : NULL;
    if (!p || !p->has)
        return;
    const struct rsr_memory *m = j->models[i]->mem;
    rsr_jw_kint_or_null(w, "device", m->device);
    uint_or_null(w, "total_bytes", m->total, m->total != 0);
    rsr_jw_kuint(w, "peak_bytes", m->peak);
    rsr_jw_kfixed(w, "peak_s", m->peak ? job_s(j, m->peak_ns) : 0, 6);
    rsr_jw_kint_or_null(w, "peak_step", p->peak_step);
    rsr_jw_kobject(w, "peak_by_call", RSR_JW_SPACED);
    for (int k = 0; k < RSR_NPOOLS; k++)
        rsr_jw_kuint(w, rsr_mem_pool_name(k), m->peak_by_pool[k]);
    rsr_jw_end(w);
    rsr_jw_kuint(w, "end_bytes", m->end_live);
    rsr_jw_kuint(w, "host_pinned_peak_bytes", m->host_peak);
    rsr_jw_kuint(w, "failed", m->failed);
    uint_or_null(w, "driver_used_max_bytes", m->used_max, m->used_max != 0);
    /* the most the driver said was in use beyond the program's own bytes:
     * the context, NCCL's buffers, other processes */
    uint_or_null(w, "other_bytes", (uint64_t)(m->other_max > 0 ? m->other_max : 0), m->other_max >= 0);
    rsr_jw_karray(w, "peak_stacks", RSR_JW_LINES);
    const struct rsr_top_stack *top = j->models[i]->waits.top[RSR_TOP_MEM];
    for (int k = 0; k < RSR_TOP_STACKS && top[k].ns; k++) {
        rsr_jw_object(w, RSR_JW_SPACED);
        rsr_jw_kstr(w, "frames", top[k].text);
        rsr_jw_kuint(w, "bytes", top[k].ns);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_kobject(w, "per_step", RSR_JW_SPACED);
    rsr_jw_kuint(w, "run", p->step_run);
    rsr_jw_karray(w, "peak_bytes", 0);
    for (uint32_t k = 0; k < p->n_step_peak; k++)
        rsr_jw_uint(w, p->step_peak[k]);
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_kobject(w, "timeline", 0);
    rsr_jw_kfixed(w, "start_s", m->nb ? job_s(j, m->t0_ns) : 0, 6);
    rsr_jw_kfixed(w, "bin_s", (double)m->width_ns / 1e9, 6);
    rsr_jw_karray(w, "held_bytes", 0);
    uint64_t last = 0;
    for (uint32_t b = 0; b < m->nb; b++) {
        /* a bin without a call holds what the one before it ended with */
        rsr_jw_uint(w, m->b[b].set ? m->b[b].live_max : last);
        if (m->b[b].set)
            last = m->b[b].live_last;
    }
    rsr_jw_end(w);
    rsr_jw_karray(w, "driver_used_bytes", 0);
    for (uint32_t b = 0; b < m->nb; b++) {
        if (m->b[b].used_set)
            rsr_jw_uint(w, m->b[b].used_max);
        else
            rsr_jw_null(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_kobject(w, "growth", RSR_JW_SPACED);
    rsr_jw_knum(w, "bytes_per_step", p->grow_per_step);
    rsr_jw_kfixed(w, "r2", p->grow_r2, 3);
    rsr_jw_kuint(w, "steps", p->grow_steps);
    rsr_jw_kbool(w, "leak", p->leak);
    rsr_jw_key(w, "full_at_step");
    if (p->full_at_step >= 0)
        rsr_jw_fixed(w, p->full_at_step, 0);
    else
        rsr_jw_null(w);
    rsr_jw_kuint(w, "stack_bytes", m->grow_bytes);
    rsr_jw_kuint(w, "stack_blocks", m->grow_blocks);
    const struct rsr_top_stack *grow = &j->models[i]->waits.top[RSR_TOP_MEM_GROW][0];
    rsr_jw_kstr(w, "stack", grow->ns ? grow->text : NULL);
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_karray(w, "failures", RSR_JW_LINES);
    for (uint32_t k = 0; k < m->nfails; k++)
        fail_json(w, j, &m->fails[k]);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "retries", RSR_JW_SPACED);
    rsr_jw_kuint(w, "count", m->retried);
    rsr_jw_kfixed(w, "ms", (double)m->retry_ns / 1e6, 3);
    rsr_jw_end(w);
    if (p->fatal >= 0) {
        rsr_jw_kobject(w, "oom", RSR_JW_SPACED);
        rsr_jw_kint(w, "failure", p->fatal);
        rsr_jw_kint_or_null(w, "step", p->fatal_step);
        rsr_jw_kuint(w, "retries_before", p->retries_before);
        rsr_jw_kfixed(w, "retry_ms_before", (double)p->retry_ns_before / 1e6, 3);
        rsr_jw_end(w);
    }
}

void rsr_memory_job_json(struct rsr_jw *w, const struct rsr_job *j)
{
    const struct rsr_mem_job *mj = &j->memory;
    if (!mj->any)
        return;
    rsr_jw_line(w);
    rsr_jw_kobject(w, "memory", RSR_JW_SPACED);
    const struct rsr_model *pm = mj->peak_model >= 0 ? j->models[mj->peak_model] : NULL;
    rsr_jw_kuint(w, "peak_bytes", pm ? pm->mem->peak : 0);
    rsr_jw_kint_or_null(w, "peak_rank", pm ? pm->rank : -1);
    rsr_jw_kint_or_null(w, "peak_pid", pm ? pm->pid : -1);
    rsr_jw_kint_or_null(w, "peak_step", pm ? mj->procs[mj->peak_model].peak_step : -1);
    uint64_t retried = 0;
    for (size_t i = 0; i < j->n; i++)
        if (mj->procs[i].has)
            retried += j->models[i]->mem->retried;
    rsr_jw_kuint(w, "retries", retried);
    if (mj->oom_model >= 0) {
        const struct rsr_model *m = j->models[mj->oom_model];
        const struct rsr_mem_proc *p = &mj->procs[mj->oom_model];
        const struct rsr_mem_fail *f = &m->mem->fails[p->fatal];
        rsr_jw_kobject(w, "oom", RSR_JW_SPACED);
        rsr_jw_kint_or_null(w, "rank", m->rank);
        rsr_jw_kint(w, "pid", m->pid);
        rsr_jw_kint_or_null(w, "step", p->fatal_step);
        rsr_jw_kfixed(w, "t_s", job_s(j, f->ns), 6);
        rsr_jw_kuint(w, "asked_bytes", f->asked);
        rsr_jw_kuint(w, "held_bytes", f->live);
        uint_or_null(w, "free_bytes", f->free_b, f->total_b != 0);
        uint_or_null(w, "total_bytes", f->total_b, f->total_b != 0);
        rsr_jw_kuint(w, "retries_before", p->retries_before);
        rsr_jw_kfixed(w, "retry_ms_before", (double)p->retry_ns_before / 1e6, 3);
        rsr_jw_end(w);
    }
    if (mj->leak_model >= 0) {
        const struct rsr_model *m = j->models[mj->leak_model];
        const struct rsr_mem_proc *p = &mj->procs[mj->leak_model];
        rsr_jw_kobject(w, "leak", RSR_JW_SPACED);
        rsr_jw_kint_or_null(w, "rank", m->rank);
        rsr_jw_kint(w, "pid", m->pid);
        rsr_jw_knum(w, "bytes_per_step", p->grow_per_step);
        rsr_jw_key(w, "full_at_step");
        if (p->full_at_step >= 0)
            rsr_jw_fixed(w, p->full_at_step, 0);
        else
            rsr_jw_null(w);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}
