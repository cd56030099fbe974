/* report.json: one key after another, straight to a FILE through the JSON
 * writer (json.h), in the order of the schema (formats/report.schema.json).
 * The report command (report.c) decides what is loaded and analysed; this
 * file only says it. Its top level and most of its objects are compact;
 * the long arrays have an element per line. */
#include "reporter/out/memory_json.h"
#include "reporter/out/report_json.h"
#include "reporter/base/json.h"
#include "reporter/load/summary.h"
#include "reporter/base/units.h"
#include "reporter/out/compile_json.h"
#include "reporter/out/nodes_json.h"
#include "formats/rsf_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *role_name(int r)
{
    return r == RSF_ROLE_RANK ? "rank" : r == RSF_ROLE_CHILD ? "child" : "other";
}

static void io_json(struct rsr_jw *w, const struct rsr_input *in)
{
    uint64_t rb = 0, wb = 0, rns = 0, wns = 0;
    for (uint32_t i = 0; i < in->nfiles; i++) {
        rb += in->files[i].read_bytes;
        wb += in->files[i].write_bytes;
        rns += in->files[i].read_ns;
        wns += in->files[i].write_ns;
    }
    rsr_jw_kobject(w, "io", 0);
    rsr_jw_kuint(w, "read_bytes", rb);
    rsr_jw_kuint(w, "write_bytes", wb);
    rsr_jw_knum(w, "read_s", rns / 1e9);
    rsr_jw_knum(w, "write_s", wns / 1e9);
    rsr_jw_karray(w, "files", 0);
    for (uint32_t i = 0; i < in->nfiles; i++) {
        const struct rsr_file_io *s = &in->files[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "path", s->path);
        rsr_jw_kuint(w, "read_bytes", s->read_bytes);
        rsr_jw_kuint(w, "write_bytes", s->write_bytes);
        rsr_jw_kuint(w, "ops", s->ops);
        rsr_jw_knum(w, "time_s", s->time_ns / 1e9);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* Where process i's records end on the job's time line, and the share of
 * the job's wall time up to there (ends.h). */
static void trace_end_json(struct rsr_jw *w, const struct rsr_job *j, size_t i)
{
    const struct rsr_model *m = j->models[i];
    int64_t t0 = j->storage.job_start_ns, t1 = j->storage.job_end_ns;
    if (!m->wall_end_ns || t1 <= t0)
        return;
    rsr_jw_kbool(w, "ends_early", m->early_end_ns != 0);
    rsr_jw_knum(w, "ends_s", (double)(m->wall_end_ns - t0) / 1e9);
    rsr_jw_knum(w, "covers_pct", rsr_ends_covers_pct(m->wall_end_ns, t0, t1));
}

static void trace_json(struct rsr_jw *w, const struct rsr_input *in, const struct rsr_job *j, size_t at)
{
    rsr_jw_kobject(w, "trace", 0);
    rsr_jw_kstr(w, "file", in->file);
    rsr_jw_kuint(w, "bytes", in->walk.file_size);
    rsr_jw_kuint(w, "chunks", in->walk.nchunks);
    rsr_jw_kbool(w, "complete", in->walk.saw_end && !in->walk.nproblems && !in->open_failed);
    rsr_jw_kbool(w, "cut_short", in->walk.cut_short || (!in->walk.saw_end && !in->open_failed));
    rsr_jw_kuint(w, "unread_bytes", in->walk.bad_bytes);
    rsr_jw_kuint(w, "recorded", in->recorded);
    rsr_jw_karray(w, "errors", 0);
    for (uint32_t i = 0; i < in->walk.nproblems && i < RSR_MAX_PROBLEMS; i++) {
        const struct rsr_problem *p = &in->walk.problems[i];
        rsr_jw_object(w, 0);
        rsr_jw_kuint(w, "offset", p->offset);
        rsr_jw_kstr(w, "error", rsf_strerror(p->err));
        rsr_jw_end(w);
    }
    if (in->open_failed) {
        rsr_jw_object(w, 0);
        rsr_jw_kuint(w, "offset", 0);
        rsr_jw_kstr(w, "error", strerror(in->open_failed));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    if (j && at < j->n)
        trace_end_json(w, j, at);
    rsr_jw_end(w);
}

static double ns_us(int64_t ns)
{
    return (double)ns / 1e3;
}

/* The straggler's heaviest stacks that go with why it was late (waits.h):
 * waiting for data loading, else file I/O, else running on the CPU, for
 * data loading; file I/O, else CPU, for I/O and checkpoints; the CPU for
 * host work and launch gaps. None for kernels (the kernels say it) and
 * when nothing stands out. */
static void why_frames(struct rsr_jw *w, const struct rsr_proc_waits *pw, int kind)
{
    int order[3] = { -1, -1, -1 };
    switch (kind) {
    case RSR_WHY_DATA_LOADING:
        order[0] = RSR_TOP_DATA, order[1] = RSR_TOP_IO, order[2] = RSR_TOP_CPU;
        break;
    case RSR_WHY_IO:
    case RSR_WHY_CHECKPOINT:
        order[0] = RSR_TOP_IO, order[1] = RSR_TOP_CPU;
        break;
    case RSR_WHY_HOST_COMPUTE:
    case RSR_WHY_LAUNCH_GAPS:
        order[0] = RSR_TOP_CPU;
        break;
    default:
        break;
    }
    const struct rsr_top_stack *t = NULL;
    for (int k = 0; pw && k < 3 && order[k] >= 0 && !t; k++)
        if (pw->top[order[k]][0].ns)
            t = pw->top[order[k]];
    rsr_jw_karray(w, "frames", 0);
    for (int i = 0; t && i < RSR_TOP_STACKS && t[i].ns; i++)
        rsr_jw_str(w, t[i].text);
    rsr_jw_end(w);
}

/* A straggler's why (collectives.h); the kernels with their mean run on
 * every rank, for the page's table. */
static void why_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_straggler *s)
{
    const struct rsr_straggler_why *y = &s->why;
    rsr_jw_kobject(w, "why", 0);
    rsr_jw_kstr(w, "kind", rsr_why_kind_name(y->kind));
    rsr_jw_knum(w, "share_pct", y->share_pct);
    rsr_jw_knum(w, "excess_us", y->excess_us);
    rsr_jw_kstr(w, "detail", y->detail);
    why_frames(w, s->model < j->n ? &j->models[s->model]->waits : NULL, y->kind);
    rsr_jw_karray(w, "kernels", 0);
    for (size_t k = 0; k < y->n_kernels; k++) {
        const struct rsr_why_kernel *x = &y->kernels[k];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", x->name);
        rsr_jw_knum(w, "straggler_us", x->straggler_us);
        rsr_jw_knum(w, "others_us", x->others_us);
        rsr_jw_karray(w, "by_rank", 0);
        for (size_t i = 0; i < j->n; i++) {
            if (isnan(x->mean_us[i]))
                continue;
            rsr_jw_object(w, 0);
            rsr_jw_kint_or_null(w, "rank", j->models[i]->rank);
            rsr_jw_knum(w, "mean_us", x->mean_us[i]);
            rsr_jw_end(w);
        }
        rsr_jw_end(w);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void gpu_json(struct rsr_jw *w, const struct rsr_gpu_breakdown *b)
{
    rsr_jw_kobject(w, "gpu", 0);
    rsr_jw_knum(w, "span_us", ns_us(b->span_ns));
    rsr_jw_knum(w, "idle_pct", b->idle_pct);
    rsr_jw_knum(w, "compute_pct", b->compute_pct);
    rsr_jw_knum(w, "non_compute_pct", b->non_compute_pct);
    rsr_jw_knum(w, "comm_pct", b->comm_pct);
    rsr_jw_knum(w, "memcpy_pct", b->memcpy_pct);
    rsr_jw_knum(w, "comm_comp_overlap_pct", b->comm_comp_overlap_pct);
    rsr_jw_knum(w, "exposed_comm_pct", b->exposed_comm_pct);
    rsr_jw_knum(w, "sync_wait_pct", b->sync_wait_pct);
    rsr_jw_knum(w, "exposed_sync_wait_pct", b->exposed_sync_wait_pct);
    rsr_jw_knum(w, "transfer_pct", b->transfer_pct);
    rsr_jw_kfixed(w, "start_us", ns_us(b->start_ns), 3);
    rsr_jw_knum(w, "busy_us", ns_us(b->busy_ns));
    rsr_jw_knum(w, "compute_us", ns_us(b->compute_ns));
    rsr_jw_knum(w, "comm_us", ns_us(b->comm_ns));
    rsr_jw_knum(w, "exposed_comm_us", ns_us(b->exposed_comm_ns));
    rsr_jw_knum(w, "sync_wait_us", ns_us(b->sync_wait_ns));
    rsr_jw_knum(w, "transfer_us", ns_us(b->transfer_ns));
    /* the GPU's use below the timeline: measured (NVML's GPM) where the
     * agent could sample it, else estimated from launch geometry */
    rsr_jw_knum(w, "busy_pct", b->busy_pct);
    rsr_jw_knum(w, "sm_activity_pct", b->gpm_n ? b->gpm_sm_active_pct : b->sm_activity_pct);
    rsr_jw_kstr(w, "sm_activity_source", b->gpm_n ? "nvml-gpm" : "geometry");
    rsr_jw_knum(w, "sm_activity_geometry_pct", b->sm_activity_pct);
    rsr_jw_knum(w, "sm_occupancy_pct", b->gpm_n ? b->gpm_occupancy_pct : b->sm_occupancy_pct);
    rsr_jw_knum(w, "no_geometry_pct", b->no_geometry_pct);
    if (b->util_n)
        rsr_jw_knum(w, "nvml_util_pct", b->nvml_util_pct);
    /* HTA's idle split, summed over streams (more than the span with
     * several), and the busiest stream's, the one a figure per GPU uses */
    rsr_jw_kobject(w, "idle_summed_over_streams", 0);
    rsr_jw_knum(w, "host_wait_us", ns_us(b->host_wait_ns));
    rsr_jw_knum(w, "kernel_wait_us", ns_us(b->kernel_wait_ns));
    rsr_jw_knum(w, "other_us", ns_us(b->other_idle_ns));
    rsr_jw_kuint(w, "streams", b->n_streams);
    rsr_jw_end(w);
    const struct rsr_stream_idle *s = rsr_gpu_busiest_stream(b);
    if (s) {
        rsr_jw_kobject(w, "idle_busiest_stream", 0);
        rsr_jw_kint(w, "device", s->device);
        rsr_jw_kint(w, "stream", s->stream);
        rsr_jw_kuint(w, "ops", s->ops);
        rsr_jw_knum(w, "host_wait_us", ns_us(s->host_wait_ns));
        rsr_jw_knum(w, "kernel_wait_us", ns_us(s->kernel_wait_ns));
        rsr_jw_knum(w, "other_us", ns_us(s->other_ns));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

#define RSR_JSON_KERNELS 30

static void kernels_json(struct rsr_jw *w, const struct rsr_model *m, const struct rsr_kernel_summary *k)
{
    /* the kernel table's GPU time in all, each operation counted (those
     * that overlap too): what the GPU flame graph adds up to */
    int64_t kern = 0, copies = 0;
    for (size_t i = 0; i < k->n; i++) {
        int copy = k->stats[i].cls == RSR_GPU_MEMCPY || k->stats[i].cls == RSR_GPU_MEMSET;
        *(copy ? &copies : &kern) += k->stats[i].total_ns;
    }
    rsr_jw_kobject(w, "gpu_time_us", 0);
    rsr_jw_knum(w, "kernels", ns_us(kern));
    rsr_jw_knum(w, "copies", ns_us(copies));
    rsr_jw_end(w);
    rsr_jw_karray(w, "kernels", 0);
    for (size_t i = 0; i < k->n && i < RSR_JSON_KERNELS; i++) {
        const struct rsr_kernel_stat *s = &k->stats[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", rsr_model_str(m, s->name));
        rsr_jw_kstr(w, "class", rsr_gpu_class_name(s->cls));
        rsr_jw_kuint(w, "count", s->count);
        rsr_jw_knum(w, "total_us", ns_us(s->total_ns));
        rsr_jw_knum(w, "mean_us", s->mean_ns / 1e3);
        rsr_jw_knum(w, "min_us", ns_us(s->min_ns));
        rsr_jw_knum(w, "max_us", ns_us(s->max_ns));
        rsr_jw_kuint(w, "short_count", s->short_count);
        rsr_jw_karray(w, "devices", 0);
        for (int d = 0; d < 64; d++)
            if (s->devices >> d & 1)
                rsr_jw_int(w, d);
        rsr_jw_end(w);
        if (s->geom_count) {
            double n = (double)s->geom_count, t = s->geom_ns > 0 ? (double)s->geom_ns : 1;
            rsr_jw_knum(w, "blocks", s->blocks_sum / n);
            rsr_jw_knum(w, "threads_per_block", s->tpb_sum / n);
            rsr_jw_knum(w, "waves", s->waves_sum / n);
            rsr_jw_knum(w, "sm_coverage_pct", 100.0 * s->coverage_ns / t);
            rsr_jw_knum(w, "occupancy_pct", 100.0 * s->occupancy_ns / t);
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_kobject(w, "short_kernels", 0);
    rsr_jw_kint(w, "threshold_us", RSR_SHORT_KERNEL_NS / 1000);
    rsr_jw_kuint(w, "compute_runs", k->n_compute);
    rsr_jw_kuint(w, "short_runs", k->n_short);
    rsr_jw_knum(w, "short_us", ns_us(k->short_ns));
    rsr_jw_karray(w, "fusion_candidates", 0);
    for (size_t i = 0; i < k->n_short_names && i < RSR_JSON_KERNELS; i++) {
        const struct rsr_kernel_stat *s = k->short_names[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", rsr_model_str(m, s->name));
        rsr_jw_kuint(w, "short_count", s->short_count);
        rsr_jw_knum(w, "short_us", ns_us(s->short_ns));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* The process's off-CPU time (waits.h): waits by reason, their causes,
 * running against blocked time per thread. Nothing without samples. */
static void waits_json(struct rsr_jw *w, const struct rsr_proc_waits *pw)
{
    uint64_t blocked = rsr_waits_total_ns(pw);
    if (!blocked && !pw->cpu_ns)
        return;
    rsr_jw_karray(w, "waits", 0);
    for (unsigned r = 0; r < RSF_WAIT_NREASONS; r++) {
        if (!pw->count[r])
            continue;
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "reason", rsf_wait_reason_label(r));
        rsr_jw_kuint(w, "count", pw->count[r]);
        rsr_jw_knum(w, "total_s", (double)pw->ns[r] / 1e9);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_kobject(w, "wait_causes", 0);
    for (unsigned c = 0; c < RSR_NCAUSES; c++) {
        char key[64];
        snprintf(key, sizeof key, "%s_s", rsr_wait_cause_name(c));
        rsr_jw_knum(w, key, (double)pw->cause_ns[c] / 1e9);
    }
    rsr_jw_end(w);
    /* thread-seconds, over all threads; the most blocked thread's alone */
    rsr_jw_knum(w, "cpu_s", (double)pw->cpu_ns / 1e9);
    rsr_jw_knum(w, "wait_s", (double)blocked / 1e9);
    rsr_jw_knum(w, "most_blocked_thread_s", (double)pw->most_wait_ns / 1e9);
    rsr_jw_kuint(w, "threads_sampled", pw->nthreads);
    rsr_jw_karray(w, "threads", 0);
    for (uint32_t t = 0; t < pw->nkept; t++) {
        const struct rsr_thread_time *th = &pw->threads[t];
        rsr_jw_object(w, 0);
        rsr_jw_kuint(w, "tid", th->tid);
        rsr_jw_kstr(w, "name", th->name);
        rsr_jw_knum(w, "cpu_s", (double)th->cpu_ns / 1e9);
        rsr_jw_knum(w, "wait_s", (double)th->wait_ns / 1e9);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* The figures of process i that come from the analyses. */
/* A process's time in each role's calls (groups.h), where it has some. */
static void comm_roles_json(struct rsr_jw *w, const struct rsr_groups *g, size_t i)
{
    if (!g->by_model || i >= g->n_models || g->wall_s <= 0)
        return;
    int first = 1;
    for (int r = 0; r < RSR_GROUP_NROLES; r++) {
        const struct rsr_role_time *t = &g->by_model[i * RSR_GROUP_NROLES + r];
        if (t->time_us <= 0)
            continue;
        if (first)
            rsr_jw_kobject(w, "comm_by_role", 0);
        first = 0;
        rsr_jw_kobject(w, rsr_group_role_name(r), 0);
        rsr_jw_knum(w, "time_pct", 100 * t->time_us / 1e6 / g->wall_s);
        rsr_jw_knum(w, "wait_pct", 100 * t->wait_us / 1e6 / g->wall_s);
        double xfer = t->time_us - t->wait_us;
        rsr_jw_knum(w, "hidden_pct_of_transfer", xfer > 0 ? 100 * t->hidden_us / xfer : 0);
        rsr_jw_end(w);
    }
    if (!first)
        rsr_jw_end(w);
}

/* A process's place in the parallel layout (groups.h), where the job is
 * more than data parallel: its index in its communicator of each role. */
static void coords_json(struct rsr_jw *w, const struct rsr_groups *g, size_t i)
{
    if (!g->coords || i >= g->n_models || !g->n || (g->n == 1 && g->v[0].role == RSR_GROUP_DATA))
        return;
    int first = 1;
    for (int r = 0; r < RSR_GROUP_NROLES; r++) {
        int32_t x = g->coords[i * RSR_GROUP_NROLES + r];
        if (x < 0 || r == RSR_GROUP_WORLD || r == RSR_GROUP_OTHER)
            continue;
        if (first)
            rsr_jw_kobject(w, "coords", 0);
        first = 0;
        rsr_jw_kint(w, rsr_group_role_name(r), x);
    }
    if (!first)
        rsr_jw_end(w);
}

static void process_analysis_json(struct rsr_jw *w, const struct rsr_job *j, size_t i)
{
    const struct rsr_model *m = j->models[i];
    comm_roles_json(w, &j->groups, i);
    coords_json(w, &j->groups, i);
    if (j->gpu && j->gpu[i].span_ns)
        gpu_json(w, &j->gpu[i]);
    const struct rsr_summary *sm = m->sum;
    if (j->kernels && sm && sm->n_ops)
        kernels_json(w, m, &j->kernels[i]);
    if (j->colls.wait_us && i < j->colls.n_models) {
        rsr_jw_knum(w, "collective_wait_us", j->colls.wait_us[i]);
        rsr_jw_knum(w, "collective_us", j->colls.coll_us[i]);
    }
    if (j->storage.loading && i < j->storage.n_models) {
        const struct rsr_data_loading *d = &j->storage.loading[i];
        rsr_jw_kobject(w, "data_loading", 0);
        rsr_jw_knum(w, "read_s", (double)d->read_ns / 1e9);
        rsr_jw_knum(w, "read_while_gpu_idle_s", (double)d->read_idle_ns / 1e9);
        rsr_jw_kuint(w, "read_bytes", d->read_bytes);
        rsr_jw_knum(w, "pct", d->pct);
        rsr_jw_end(w);
    }
    waits_json(w, &m->waits);
    rsr_jw_kobject(w, "syncs", 0);
    rsr_jw_kuint(w, "count", sm ? sm->n_syncs : 0);
    rsr_jw_knum(w, "blocked_s", sm ? (double)sm->sync_blocked_ns / 1e9 : 0);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "memory", 0);
    rsr_jw_kuint(w, "allocs", m->mem_allocs);
    rsr_jw_kuint(w, "frees", m->mem_frees);
    rsr_jw_kuint(w, "alloc_bytes", m->mem_alloc_bytes);
    rsr_memory_process_json(w, j, i);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "cuda_graphs", 0);
    rsr_jw_kuint(w, "node_ops", m->graph_ops);
    rsr_jw_kuint(w, "collectives", m->graph_colls);
    rsr_jw_end(w);
    if (j->align.models && i < j->align.n) {
        rsr_jw_kobject(w, "clock", 0);
        rsr_jw_kint(w, "offset_ns", m->clock_offset_ns);
        rsr_jw_kint(w, "pair_offset_ns", j->align.models[i].pair_offset_ns);
        rsr_jw_kint(w, "correction_ns", j->align.models[i].correction_ns);
        rsr_jw_kuint(w, "matched", j->align.models[i].matched);
        rsr_jw_end(w);
    }
}

static void values_json(struct rsr_jw *w, const char *key, const double *v, size_t n)
{
    rsr_jw_karray(w, key, 0);
    for (size_t i = 0; i < n; i++)
        rsr_jw_num(w, v[i]);
    rsr_jw_end(w);
}

/* A step's critical path (critpath.h): "path":{"rank":R,"ms":{PART:ms}}
 * with the parts that are not 0, in proportion to its dur_ms and adding up
 * to it. */
static void step_path_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_step *x)
{
    if (!x->path.ranks)
        return;
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    double len = rsr_cp_step(&x->path, x->phase == RSR_PHASE_EVAL, j->path.how,
                             (double)(x->end_ns - x->start_ns), gain, part);
    /* the path's parts in proportion to the step's length */
    double scale = len > 0 ? (double)(x->end_ns - x->start_ns) / len : 0;
    rsr_jw_kobject(w, "path", 0);
    rsr_jw_kint_or_null(w, "rank", x->path.r1);
    rsr_jw_kobject(w, "ms", 0);
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        if (part[k] > 0)
            rsr_jw_knum(w, rsr_cp_part_name(k), part[k] * scale / 1e6);
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* "critical_path" (critpath.h): the time per step by cause on the
 * cross-rank critical path, adding up to steps.per_step_ms, each removable
 * cause with what removing it would give back; absent without steps. */
static void critpath_json(struct rsr_jw *w, const struct rsr_critpath *cp)
{
    if (!cp->have)
        return;
    rsr_jw_line(w);
    rsr_jw_kobject(w, "critical_path", 0);
    rsr_jw_kuint(w, "steps", cp->steps);
    rsr_jw_knum(w, "per_step_ms", cp->per_step_ms);
    rsr_jw_karray(w, "parts", RSR_JW_LINES);
    for (int k = 0; k < RSR_CP_NPARTS; k++) {
        if (cp->part_ms[k] <= 0 && (k >= RSR_CP_NGAIN || cp->gain_ms[k] <= 0))
            continue;
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "cause", rsr_cp_part_name(k));
        rsr_jw_kstr(w, "text", rsr_cp_part_text(k));
        rsr_jw_knum(w, "ms_per_step", cp->part_ms[k]);
        rsr_jw_knum(w, "pct", cp->per_step_ms > 0 ? 100 * cp->part_ms[k] / cp->per_step_ms : 0);
        if (k < RSR_CP_NGAIN) {
            rsr_jw_knum(w, "gain_ms_per_step", cp->gain_ms[k]);
            rsr_jw_knum(w, "recoverable_pct", cp->per_step_ms > 0 ? 100 * cp->gain_ms[k] / cp->per_step_ms : 0);
            rsr_jw_knum(w, "whatif_ms_per_step", cp->per_step_ms - cp->gain_ms[k]);
            rsr_jw_kint_or_null(w, "rank", cp->gain_rank[k]);
        }
        if (cp->frames_rank[k] >= 0) {
            rsr_jw_kint(w, "frames_rank", cp->frames_rank[k]);
            rsr_jw_karray(w, "frames", 0);
            for (int s = 0; s < RSR_TOP_STACKS && cp->frames[k][s][0]; s++)
                rsr_jw_str(w, cp->frames[k][s]);
            rsr_jw_end(w);
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void ranks_array(struct rsr_jw *w, const char *key, const int32_t *v, size_t n)
{
    rsr_jw_karray(w, key, 0);
    for (size_t i = 0; i < n; i++)
        rsr_jw_int(w, v[i]);
    rsr_jw_end(w);
}

/* A hung rank's last stack, "a;b;c", as its frames. */
static void where_json(struct rsr_jw *w, const char *where)
{
    rsr_jw_karray(w, "frames", 0);
    for (const char *s = where ? where : ""; *s;) {
        const char *e = strchr(s, ';');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char frame[RSR_WHERE_TEXT];
        snprintf(frame, sizeof frame, "%.*s", (int)len, s);
        rsr_jw_str(w, frame);
        s += len + (e ? 1 : 0);
    }
    rsr_jw_end(w);
}

/* "hang" (hang.h): a stuck job's verdict; absent when no call is stuck. */
static void hang_json(struct rsr_jw *w, const struct rsr_hang *h)
{
    if (h->kind == RSR_HANG_NONE)
        return;
    char text[320];
    rsr_hang_text(h, text, sizeof text);
    rsr_jw_line(w);
    rsr_jw_kobject(w, "hang", 0);
    rsr_jw_kstr(w, "kind", rsr_hang_kind_name(h->kind));
    rsr_jw_kstr(w, "text", text);
    char comm[24];
    snprintf(comm, sizeof comm, "%016llx", (unsigned long long)h->comm_id);
    rsr_jw_kstr(w, "communicator", h->seq_known ? comm : NULL);
    rsr_jw_kstr(w, "role", h->role >= 0 ? rsr_group_role_name(h->role) : NULL);
    rsr_jw_kint_or_null(w, "seq", h->seq_known ? (int64_t)h->seq : -1);
    rsr_jw_kint_or_null(w, "step", h->step);
    rsr_jw_kstr(w, "op", h->seq_known ? rsr_coll_op_name(h->op) : h->op_text);
    rsr_jw_kuint(w, "bytes", h->bytes);
    rsr_jw_kstr(w, "dtype", h->dtype);
    rsr_jw_knum(w, "waited_s", h->waited_s);
    ranks_array(w, "waiting_ranks", h->waiting, h->n_waiting);
    ranks_array(w, "missing_ranks", h->missing, h->n_missing);
    rsr_jw_kint(w, "group_size", h->group_size);
    rsr_jw_kuint(w, "ranks_without_file", h->absent);
    rsr_jw_kuint(w, "communicators_stuck", h->comms_stuck);
    rsr_jw_karray(w, "per_rank", RSR_JW_LINES);
    for (size_t i = 0; i < h->n_ranks; i++) {
        const struct rsr_hang_rank *r = &h->ranks[i];
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", r->rank);
        rsr_jw_kint(w, "last_seq_done", r->last_seq_done);
        rsr_jw_kint(w, "last_seq_entered", r->last_seq_entered);
        rsr_jw_kbool(w, "in_flight", r->in_flight);
        if (r->in_flight) {
            rsr_jw_knum(w, "waited_s", r->waited_s);
            rsr_jw_kstr(w, "op", h->seq_known ? rsr_coll_op_name(r->op) : h->op_text);
            rsr_jw_kuint(w, "bytes", r->bytes);
            rsr_jw_kbool(w, "differs", r->odd);
        } else {
            rsr_jw_knum(w, "ended_before_s", r->ended_before_s);
        }
        rsr_jw_kbool(w, "end_mark", !r->unclosed);
        char sig[32];
        rsr_jw_kstr(w, "signal", r->fatal_sig ? rsr_signal_name(r->fatal_sig, sig, sizeof sig) : NULL);
        rsr_jw_kobject(w, "where", 0);
        where_json(w, r->where);
        rsr_jw_knum(w, "wait_s", (double)r->where_wait_ns / 1e9);
        rsr_jw_end(w);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* Entry a of the steps' series (steps.h), its start on the job's time line. */
static void series_step_json(struct rsr_jw *w, const struct rsr_job *j, size_t a)
{
    const struct rsr_steps *st = &j->steps;
    const struct rsr_step *x = &st->series[a];
    rsr_jw_object(w, 0);
    rsr_jw_kuint(w, "index", st->series_index[a]);
    rsr_jw_knum(w, "start_s", (double)(x->start_ns - j->storage.job_start_ns) / 1e9);
    rsr_jw_knum(w, "dur_ms", (double)(x->end_ns - x->start_ns) / 1e6);
    rsr_jw_kstr(w, "phase", rsr_step_phase_name(x->phase));
    rsr_jw_knum(w, "compute_pct", x->compute_pct);
    rsr_jw_knum(w, "exposed_comm_pct", x->exposed_comm_pct);
    rsr_jw_knum(w, "sync_wait_pct", x->sync_wait_pct);
    rsr_jw_knum(w, "idle_pct", x->idle_pct);
    rsr_jw_knum(w, "io_ms", x->io_ms);
    rsr_jw_knum(w, "data_wait_ms", x->wait_ms);
    rsr_jw_knum(w, "checkpoint_ms", x->ckpt_ms);
    rsr_jw_kbool(w, "checkpoint", x->checkpoint);
    step_path_json(w, j, x);
    rsr_jw_end(w);
}

/* "steps" (steps.h), absent when none were found (the text summary says why). */
static void steps_json(struct rsr_jw *w, const struct rsr_job *j)
{
    const struct rsr_steps *st = &j->steps;
    if (!st->source)
        return;
    rsr_jw_line(w);
    rsr_jw_kobject(w, "steps", 0);
    rsr_jw_kstr(w, "source", st->source);
    rsr_jw_knum(w, "confidence", st->confidence);
    rsr_jw_kuint(w, "count", st->count);
    rsr_jw_knum(w, "per_step_ms", st->per_step_ms);
    rsr_jw_knum(w, "span_ms", st->span_ms);
    rsr_jw_knum(w, "median_ms", st->median_ms);
    rsr_jw_knum(w, "p90_ms", st->p90_ms);
    rsr_jw_knum(w, "p99_ms", st->p99_ms);
    rsr_jw_knum(w, "max_ms", st->max_ms);
    rsr_jw_knum(w, "trend_pct", st->trend_pct);
    rsr_jw_knum(w, "typical_change_pct", st->typical_change_pct);
    rsr_jw_kuint(w, "ranks", st->ranks);
    rsr_jw_karray(w, "phases", 0);
    for (int p = 0; p < RSR_NPHASES; p++) {
        if (!st->phase_count[p])
            continue;
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", rsr_step_phase_name(p));
        rsr_jw_kuint(w, "count", st->phase_count[p]);
        rsr_jw_knum(w, "median_ms", st->phase_median_ms[p]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    /* At most RSR_STEPS_SERIES entries: beyond, each stands for a run of
     * series_run consecutive steps and is the longest of them, and "slow"
     * holds the slowest RSR_STEPS_SLOW_LISTED (slow_count: how many there
     * were), so that report.json does not grow with the job's length. */
    size_t run = st->series_run;
    if (run > 1) {
        rsr_jw_kuint(w, "series_run", run);
        rsr_jw_kuint(w, "series_steps", st->n);
    }
    rsr_jw_karray(w, "series", RSR_JW_LINES);
    for (size_t a = 0; a < st->n_series; a++)
        series_step_json(w, j, a);
    rsr_jw_end(w);
    /* the slowest RSR_STEPS_SLOW_LISTED, in order: the bar a step's times
     * its median takes to be listed */
    double bar = 0;
    if (st->n_slow > RSR_STEPS_SLOW_LISTED) {
        double *x = malloc(st->n_slow * sizeof *x);
        if (x) {
            for (size_t i = 0; i < st->n_slow; i++)
                x[i] = st->slow[i].x_median;
            rsr_steps_median(x, st->n_slow); /* sorts */
            bar = x[st->n_slow - RSR_STEPS_SLOW_LISTED];
            free(x);
        }
    }
    rsr_jw_kuint(w, "slow_count", st->n_slow);
    rsr_jw_line(w);
    rsr_jw_karray(w, "slow", 0);
    for (size_t i = 0, k = 0; i < st->n_slow && k < RSR_STEPS_SLOW_LISTED; i++) {
        const struct rsr_step_slow *x = &st->slow[i];
        if (x->x_median < bar)
            continue;
        k++;
        rsr_jw_object(w, 0);
        rsr_jw_kuint(w, "index", x->index);
        rsr_jw_knum(w, "dur_ms", x->dur_ms);
        rsr_jw_knum(w, "x_median", x->x_median);
        rsr_jw_kstr(w, "cause", x->cause);
        rsr_jw_kint_or_null(w, "rank", x->rank);
        if (x->graphs) {
            /* OUT/step-INDEX-KIND.svg */
            rsr_jw_karray(w, "graphs", 0);
            for (unsigned kind = 0; kind < RSF_SAMPLE_NKINDS; kind++)
                if (x->graphs & 1u << kind)
                    rsr_jw_str(w, rsf_sample_kind_name(kind));
            rsr_jw_end(w);
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void comm_id_json(struct rsr_jw *w, const char *key, uint64_t id)
{
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)id);
    rsr_jw_kstr(w, key, hex);
}

/* report.json's groups (groups.h): each class of alike communicators. */
static void groups_json(struct rsr_jw *w, const struct rsr_groups *gs)
{
    rsr_jw_line(w);
    rsr_jw_karray(w, "groups", RSR_JW_LINES);
    for (size_t i = 0; i < gs->n; i++) {
        const struct rsr_group *g = &gs->v[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "role", rsr_group_role_name(g->role));
        rsr_jw_kbool(w, "sharded", g->sharded);
        rsr_jw_kint(w, "size", g->size);
        rsr_jw_kuint(w, "count", g->count);
        rsr_jw_kbool(w, "intra_node", g->intra_node);
        rsr_jw_kint(w, "hosts", g->hosts);
        rsr_jw_kbool(w, "rail_aligned", g->rail_aligned);
        rsr_jw_kint_or_null(w, "rail", g->rail);
        rsr_jw_kuint(w, "calls", g->calls);
        rsr_jw_knum(w, "calls_per_step", g->calls_per_step);
        rsr_jw_knum(w, "time_pct", g->time_pct);
        rsr_jw_knum(w, "sync_wait_pct", g->sync_wait_pct);
        rsr_jw_knum(w, "hidden_pct", g->hidden_pct);
        rsr_jw_knum(w, "busbw_gbs", g->busbw_gbs);
        rsr_jw_knum(w, "confidence", g->confidence);
        rsr_jw_kstr(w, "why", g->why);
        rsr_jw_karray(w, "ops", 0);
        for (size_t k = 0; k < g->n_ops; k++) {
            rsr_jw_object(w, 0);
            rsr_jw_kstr(w, "op", rsr_coll_op_name(g->ops[k].op));
            rsr_jw_kuint(w, "calls", g->ops[k].calls);
            rsr_jw_knum(w, "mean_bytes", g->ops[k].mean_bytes);
            rsr_jw_end(w);
        }
        rsr_jw_end(w);
        comm_id_json(w, "example_comm", g->example_comm);
        ranks_array(w, "members_example", g->members, g->n_members);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* report.json's pipeline (groups.h), absent without pipeline stages. */
static void pipeline_json(struct rsr_jw *w, const struct rsr_pipeline *p)
{
    if (!p->stages)
        return;
    rsr_jw_line(w);
    rsr_jw_kobject(w, "pipeline", 0);
    rsr_jw_kint(w, "stages", p->stages);
    rsr_jw_knum(w, "microbatches", p->microbatches);
    rsr_jw_knum(w, "schedule_bubble_pct", p->schedule_bubble_pct);
    rsr_jw_knum(w, "per_step_ms", p->per_step_ms);
    rsr_jw_kint_or_null(w, "slowest", p->slowest);
    rsr_jw_knum(w, "slowest_excess_pct", p->slowest_excess_pct);
    rsr_jw_karray(w, "by_stage", 0);
    for (int32_t k = 0; k < p->stages; k++) {
        const struct rsr_pipe_stage *x = &p->by_stage[k];
        rsr_jw_object(w, 0);
        rsr_jw_kint(w, "stage", x->stage);
        rsr_jw_kuint(w, "ranks", x->ranks);
        rsr_jw_kint_or_null(w, "example_rank", x->example_rank);
        rsr_jw_knum(w, "bubble_ms_per_step", x->bubble_ms_per_step);
        rsr_jw_knum(w, "bubble_pct", x->bubble_pct);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* The groups (communicators) a straggler holds back, most waiting caused
 * first, each with its share of the waiting it caused (groups.h). */
size_t rsr_straggler_groups(const struct rsr_job *j, const struct rsr_straggler *s,
                            const struct rsr_comm_time **out, size_t cap)
{
    if (!j->colls.comm_time || s->model >= j->colls.n_models)
        return 0;
    const struct rsr_comm_time *v = j->colls.comm_time[s->model];
    size_t nv = j->colls.n_comm_time[s->model], n = 0;
    while (n < cap) {
        const struct rsr_comm_time *best = NULL;
        for (size_t k = 0; k < nv; k++) {
            int taken = 0;
            for (size_t q = 0; q < n; q++)
                taken |= out[q] == &v[k];
            if (!taken && v[k].caused_us > 0 && rsr_groups_comm(&j->groups, v[k].comm_id) &&
                (!best || v[k].caused_us > best->caused_us))
                best = &v[k];
        }
        if (!best)
            break;
        out[n++] = best;
    }
    return n;
}

static void straggler_groups_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_straggler *s)
{
    const struct rsr_comm_time *v[8];
    size_t n = rsr_straggler_groups(j, s, v, 8);
    rsr_jw_karray(w, "groups", 0);
    for (size_t i = 0; i < n; i++) {
        const struct rsr_group_comm *gc = rsr_groups_comm(&j->groups, v[i]->comm_id);
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "role", rsr_group_role_name(gc->role));
        comm_id_json(w, "comm", gc->id);
        rsr_jw_knum(w, "caused_pct", s->caused_us > 0 ? 100 * v[i]->caused_us / s->caused_us : 0);
        ranks_array(w, "members", gc->members, gc->n_members);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

static void ends_early_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_input *ins)
{
    rsr_jw_line(w);
    rsr_jw_karray(w, "ends_early", 0);
    for (size_t i = 0; i < j->ends.n; i++) {
        const struct rsr_early_end *e = &j->ends.list[i];
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", e->rank);
        rsr_jw_kint(w, "pid", j->models[e->model]->pid);
        rsr_jw_kstr(w, "file", ins[e->model].file);
        rsr_jw_knum(w, "ends_s", e->ends_s);
        rsr_jw_knum(w, "covers_pct", e->covers_pct);
        rsr_jw_kbool(w, "cut_short", e->unclosed == RSR_CUT_SHORT);
        rsr_jw_kuint(w, "unread_bytes", ins[e->model].walk.bad_bytes);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

static void collectives_json(struct rsr_jw *w, const struct rsr_job *j)
{
    rsr_jw_line(w);
    rsr_jw_karray(w, "collectives", RSR_JW_LINES);
    for (size_t i = 0; i < j->colls.n_rows; i++) {
        const struct rsr_coll_row *r = &j->colls.rows[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "op", rsr_coll_op_name(r->op));
        comm_id_json(w, "comm", r->comm_id);
        rsr_jw_kint(w, "ranks", r->ranks);
        rsr_jw_kuint(w, "bytes", r->bytes);
        rsr_jw_kuint(w, "count", r->count);
        rsr_jw_kuint(w, "group_calls", r->group_calls);
        rsr_jw_knum(w, "mean_us", r->mean_us);
        rsr_jw_knum(w, "algbw_gbs", r->algbw_gbs);
        rsr_jw_knum(w, "busbw_gbs", r->busbw_gbs);
        rsr_jw_knum(w, "mean_wait_us", r->mean_wait_us);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

static void checkpoints_json(struct rsr_jw *w, const struct rsr_job *j)
{
    rsr_jw_line(w);
    rsr_jw_karray(w, "checkpoints", 0);
    for (size_t i = 0; i < j->storage.n_ckpts; i++) {
        const struct rsr_checkpoint *c = &j->storage.ckpts[i];
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", c->rank);
        rsr_jw_knum(w, "start_s", (double)(c->start_ns - j->storage.job_start_ns) / 1e9);
        rsr_jw_knum(w, "dur_s", (double)(c->end_ns - c->start_ns) / 1e9);
        rsr_jw_kuint(w, "bytes", c->bytes);
        rsr_jw_kuint(w, "files", c->files);
        rsr_jw_knum(w, "gpu_stall_s", (double)c->gpu_stall_ns / 1e9);
        rsr_jw_kint(w, "pid", c->pid);
        rsr_jw_kstr(w, "writer", c->by_child ? "child" : "rank");
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_knum(w, "checkpoint_pct", j->storage.checkpoint_pct);
}

static void stragglers_json(struct rsr_jw *w, const struct rsr_job *j)
{
    rsr_jw_line(w);
    rsr_jw_karray(w, "stragglers", 0);
    for (size_t i = 0; i < j->colls.n_stragglers; i++) {
        const struct rsr_straggler *s = &j->colls.stragglers[i];
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", s->rank);
        rsr_jw_knum(w, "score", s->score);
        rsr_jw_knum(w, "caused_wait_us", s->caused_us);
        rsr_jw_knum(w, "excess_pct", s->excess_pct);
        rsr_jw_kuint(w, "last", s->last);
        rsr_jw_kuint(w, "calls", s->calls);
        rsr_jw_kstr(w, "phase", rsr_coll_op_name(s->worst_op));
        rsr_jw_kstr(w, "evidence", s->evidence);
        why_json(w, j, s);
        straggler_groups_json(w, j, s);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    /* the test behind the list (collectives.h), so that an empty list reads
     * as "none stands out" and says by how far */
    rsr_jw_line(w);
    rsr_jw_kobject(w, "straggler_check", 0);
    rsr_jw_kint(w, "parts", j->colls.straggler_parts);
    rsr_jw_knum(w, "min_excess_pct", RSR_STRAGGLER_MIN_PCT);
    rsr_jw_knum(w, "max_excess_pct", j->colls.max_excess_pct);
    rsr_jw_end(w);
}

static void findings_json(struct rsr_jw *w, const struct rsr_job *j)
{
    char head[400];
    if (rsr_findings_headline(j, head, sizeof head)) {
        rsr_jw_line(w);
        rsr_jw_kstr(w, "headline", head);
    }
    rsr_jw_line(w);
    rsr_jw_karray(w, "findings", RSR_JW_LINES);
    for (size_t i = 0; i < j->n_findings; i++) {
        const struct rsr_finding *x = &j->findings[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "id", x->id);
        rsr_jw_kstr(w, "severity", rsr_severity_name(x->severity));
        rsr_jw_kstr(w, "title", x->title);
        rsr_jw_kstr(w, "evidence", x->evidence);
        rsr_jw_kstr(w, "advice", x->advice);
        rsr_jw_key(w, "recoverable_pct");
        if (x->recoverable_pct >= 0)
            rsr_jw_num(w, x->recoverable_pct);
        else
            rsr_jw_null(w);
        /* its cause on the critical path and the time per step without it */
        rsr_jw_kstr(w, "cause", x->cause);
        if (x->whatif_ms >= 0)
            rsr_jw_knum(w, "whatif_ms_per_step", x->whatif_ms);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

static void timeline_json(struct rsr_jw *w, const struct rsr_timeline *t)
{
    rsr_jw_line(w);
    rsr_jw_kobject(w, "timeline", 0);
    rsr_jw_knum(w, "bin_us", (double)t->bin_ns / 1e3);
    rsr_jw_kfixed(w, "start_us", (double)t->start_ns / 1e3, 3);
    rsr_jw_karray(w, "ranks", RSR_JW_LINES);
    for (size_t i = 0; i < t->n_ranks; i++) {
        const struct rsr_timeline_rank *r = &t->ranks[i];
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", r->rank);
        values_json(w, "gpu_busy_pct", r->gpu_busy_pct, t->nbins);
        values_json(w, "comm_gbs", r->comm_gbs, t->nbins);
        values_json(w, "read_mbs", r->read_mbs, t->nbins);
        values_json(w, "write_mbs", r->write_mbs, t->nbins);
        if (r->sm_active_pct)
            values_json(w, "sm_active_pct", r->sm_active_pct, t->nbins);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void job_json(struct rsr_jw *w, const struct rsr_job *j, const struct rsr_input *ins)
{
    rsr_jw_knum(w, "skew_us", (double)j->align.max_correction_ns / 1e3);
    rsr_jw_kobject(w, "alignment", 0);
    rsr_jw_kstr(w, "method", j->align.groups ? "clock pairs + collective ends" : "clock pairs");
    rsr_jw_kuint(w, "matched_collectives", j->align.groups);
    rsr_jw_knum(w, "residual_us", (double)j->align.residual_ns / 1e3);
    rsr_jw_end(w);
    rsr_jw_kfixed(w, "start_us", (double)j->storage.job_start_ns / 1e3, 3);
    rsr_jw_knum(w, "wall_s", (double)(j->storage.job_end_ns - j->storage.job_start_ns) / 1e9);
    ends_early_json(w, j, ins);
    collectives_json(w, j);
    groups_json(w, &j->groups);
    pipeline_json(w, &j->groups.pipe);
    checkpoints_json(w, j);
    stragglers_json(w, j);
    steps_json(w, j);
    critpath_json(w, &j->path);
    hang_json(w, &j->hang);
    rsr_memory_job_json(w, j);
    findings_json(w, j);
    timeline_json(w, &j->timeline);
    rsr_jw_line(w);
    rsr_nodes_json(w, &j->nodes);
}

static void process_json(struct rsr_jw *w, struct rsr_input *ins, int n, const struct rsr_job *job, int i)
{
    const struct rsr_input *in = &ins[i];
    rsr_jw_object(w, 0);
    rsr_jw_kint_or_null(w, "rank", in->rank);
    rsr_jw_kstr(w, "role", role_name(in->role));
    rsr_jw_kint_or_null(w, "parent_rank", in->parent_rank);
    rsr_jw_kstr(w, "host", in->host);
    rsr_jw_kint(w, "pid", in->pid);
    rsr_jw_kint(w, "ppid", in->ppid);
    rsr_jw_karray(w, "argv", 0);
    for (uint32_t a = 0; a < in->argc; a++)
        rsr_jw_str(w, in->argv[a]);
    rsr_jw_end(w);
    rsr_jw_knum(w, "wall_s", in->end_mono > in->start_mono ? (in->end_mono - in->start_mono) / 1e9 : 0);
    rsr_jw_kuint(w, "dropped", in->dropped);
    rsr_compile_process_json(w, ins, n, i);
    io_json(w, in);
    trace_json(w, in, job, (size_t)i);
    if (job && (size_t)i < job->n)
        process_analysis_json(w, job, (size_t)i);
    rsr_jw_end(w);
}

int rsr_report_json(FILE *f, struct rsr_input *ins, int n, const struct rsr_job *job, rsr_report_keys_fn *keys,
                    void *arg)
{
    const char *job_name = NULL, *series = NULL;
    int world = -1;
    for (int i = 0; i < n; i++) {
        if (!job_name && ins[i].job)
            job_name = ins[i].job;
        /* the ranks come first: the first rank's RINGSIDE_SERIES */
        if (!series && ins[i].series)
            series = ins[i].series;
        if (ins[i].world_size > world)
            world = ins[i].world_size;
    }
    struct rsr_jw *w = malloc(sizeof *w);
    if (!w)
        return -1;
    rsr_jw_open(w, f, RSR_JW_JSON);
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "schema", "ringside-report/1");
    rsr_jw_kstr(w, "job", job_name);
    rsr_jw_kstr(w, "series", series);
    rsr_jw_kint_or_null(w, "world_size", world);
    if (job)
        job_json(w, job, ins);
    if (keys) {
        rsr_jw_line(w);
        keys(w, arg);
        rsr_jw_style(w, 0);
    }
    rsr_compile_job_json(w, ins, n);
    rsr_jw_line(w);
    rsr_jw_karray(w, "processes", RSR_JW_LINES);
    for (int i = 0; i < n; i++)
        process_json(w, ins, n, job, i);
    rsr_jw_line(w);
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    int rc = rsr_jw_close(w);
    free(w);
    return rc;
}
