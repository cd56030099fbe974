/* report.json: one key after another, straight to a FILE, in the order of
 * the schema (formats/report.schema.json). The report command (report.c) decides
 * what is loaded and analysed; this file only says it. */
#include "reporter/out/report_json.h"
#include "reporter/base/json.h"
#include "reporter/load/summary.h"
#include "reporter/base/units.h"
#include "reporter/out/compile_json.h"
#include "formats/rsf_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *role_name(int r)
{
    return r == RSF_ROLE_RANK ? "rank" : r == RSF_ROLE_CHILD ? "child" : "other";
}

static void io_json(FILE *f, const struct rsr_input *in)
{
    uint64_t rb = 0, wb = 0, rns = 0, wns = 0;
    for (uint32_t i = 0; i < in->nfiles; i++) {
        rb += in->files[i].read_bytes;
        wb += in->files[i].write_bytes;
        rns += in->files[i].read_ns;
        wns += in->files[i].write_ns;
    }
    fprintf(f, "\"io\":{\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64 ",\"read_s\":", rb, wb);
    rsr_json_num(f, rns / 1e9);
    fputs(",\"write_s\":", f);
    rsr_json_num(f, wns / 1e9);
    fputs(",\"files\":[", f);
    for (uint32_t i = 0; i < in->nfiles; i++) {
        const struct rsr_file_io *s = &in->files[i];
        fputs(i ? ",{\"path\":" : "{\"path\":", f);
        rsr_json_str(f, s->path);
        fprintf(f, ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64 ",\"ops\":%" PRIu64 ",\"time_s\":",
                s->read_bytes, s->write_bytes, s->ops);
        rsr_json_num(f, s->time_ns / 1e9);
        putc('}', f);
    }
    fputs("]}", f);
}

/* Where process i's records end on the job's time line, and the share of
 * the job's wall time up to there (ends.h). */
static void trace_end_json(FILE *f, const struct rsr_job *j, size_t i)
{
    const struct rsr_model *m = j->models[i];
    int64_t t0 = j->storage.job_start_ns, t1 = j->storage.job_end_ns;
    if (!m->wall_end_ns || t1 <= t0)
        return;
    fprintf(f, ",\"ends_early\":%s", m->early_end_ns ? "true" : "false");
    rsr_json_num_key(f, "ends_s", (double)(m->wall_end_ns - t0) / 1e9);
    rsr_json_num_key(f, "covers_pct", rsr_ends_covers_pct(m->wall_end_ns, t0, t1));
}

static void trace_json(FILE *f, const struct rsr_input *in, const struct rsr_job *j, size_t at)
{
    fputs("\"trace\":{\"file\":", f);
    rsr_json_str(f, in->file);
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"chunks\":%u,\"complete\":%s,\"cut_short\":%s,"
               "\"unread_bytes\":%" PRIu64 ",\"recorded\":%" PRIu64 ",\"errors\":[",
            in->walk.file_size, in->walk.nchunks,
            in->walk.saw_end && !in->walk.nproblems && !in->open_failed ? "true" : "false",
            in->walk.cut_short || (!in->walk.saw_end && !in->open_failed) ? "true" : "false",
            in->walk.bad_bytes, in->recorded);
    for (uint32_t i = 0; i < in->walk.nproblems && i < RSR_MAX_PROBLEMS; i++) {
        const struct rsr_problem *p = &in->walk.problems[i];
        fprintf(f, "%s{\"offset\":%" PRIu64 ",\"error\":", i ? "," : "", p->offset);
        rsr_json_str(f, rsf_strerror(p->err));
        putc('}', f);
    }
    if (in->open_failed) {
        fprintf(f, "%s{\"offset\":0,\"error\":", in->walk.nproblems ? "," : "");
        rsr_json_str(f, strerror(in->open_failed));
        putc('}', f);
    }
    putc(']', f);
    if (j && at < j->n)
        trace_end_json(f, j, at);
    putc('}', f);
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
static void why_frames(FILE *f, const struct rsr_proc_waits *pw, int kind)
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
    fputs(",\"frames\":[", f);
    for (int i = 0; t && i < RSR_TOP_STACKS && t[i].ns; i++) {
        if (i)
            putc(',', f);
        rsr_json_str(f, t[i].text);
    }
    putc(']', f);
}

/* A straggler's why (collectives.h); the kernels with their mean run on
 * every rank, for the page's table. */
static void why_json(FILE *f, const struct rsr_job *j, const struct rsr_straggler *s)
{
    const struct rsr_straggler_why *w = &s->why;
    fprintf(f, ",\"why\":{\"kind\":\"%s\"", rsr_why_kind_name(w->kind));
    rsr_json_num_key(f, "share_pct", w->share_pct);
    rsr_json_num_key(f, "excess_us", w->excess_us);
    fputs(",\"detail\":", f);
    rsr_json_str(f, w->detail);
    why_frames(f, s->model < j->n ? &j->models[s->model]->waits : NULL, w->kind);
    fputs(",\"kernels\":[", f);
    for (size_t k = 0; k < w->n_kernels; k++) {
        const struct rsr_why_kernel *x = &w->kernels[k];
        fputs(k ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, x->name);
        rsr_json_num_key(f, "straggler_us", x->straggler_us);
        rsr_json_num_key(f, "others_us", x->others_us);
        fputs(",\"by_rank\":[", f);
        int first = 1;
        for (size_t i = 0; i < j->n; i++) {
            if (isnan(x->mean_us[i]))
                continue;
            fprintf(f, "%s{\"rank\":", first ? "" : ",");
            rsr_json_int_or_null(f, j->models[i]->rank);
            rsr_json_num_key(f, "mean_us", x->mean_us[i]);
            putc('}', f);
            first = 0;
        }
        fputs("]}", f);
    }
    fputs("]}", f);
}

static void gpu_json(FILE *f, const struct rsr_gpu_breakdown *b)
{
    fputs("\"gpu\":{\"span_us\":", f);
    rsr_json_num(f, ns_us(b->span_ns));
    rsr_json_num_key(f, "idle_pct", b->idle_pct);
    rsr_json_num_key(f, "compute_pct", b->compute_pct);
    rsr_json_num_key(f, "non_compute_pct", b->non_compute_pct);
    rsr_json_num_key(f, "comm_pct", b->comm_pct);
    rsr_json_num_key(f, "memcpy_pct", b->memcpy_pct);
    rsr_json_num_key(f, "comm_comp_overlap_pct", b->comm_comp_overlap_pct);
    rsr_json_num_key(f, "exposed_comm_pct", b->exposed_comm_pct);
    rsr_json_num_key(f, "sync_wait_pct", b->sync_wait_pct);
    rsr_json_num_key(f, "exposed_sync_wait_pct", b->exposed_sync_wait_pct);
    rsr_json_num_key(f, "transfer_pct", b->transfer_pct);
    fprintf(f, ",\"start_us\":%.3f", ns_us(b->start_ns));
    rsr_json_num_key(f, "busy_us", ns_us(b->busy_ns));
    rsr_json_num_key(f, "compute_us", ns_us(b->compute_ns));
    rsr_json_num_key(f, "comm_us", ns_us(b->comm_ns));
    rsr_json_num_key(f, "exposed_comm_us", ns_us(b->exposed_comm_ns));
    rsr_json_num_key(f, "sync_wait_us", ns_us(b->sync_wait_ns));
    rsr_json_num_key(f, "transfer_us", ns_us(b->transfer_ns));
    /* the GPU's use below the timeline: measured (NVML's GPM) where the
     * agent could sample it, else estimated from launch geometry */
    rsr_json_num_key(f, "busy_pct", b->busy_pct);
    rsr_json_num_key(f, "sm_activity_pct", b->gpm_n ? b->gpm_sm_active_pct : b->sm_activity_pct);
    fprintf(f, ",\"sm_activity_source\":\"%s\"", b->gpm_n ? "nvml-gpm" : "geometry");
    rsr_json_num_key(f, "sm_activity_geometry_pct", b->sm_activity_pct);
    rsr_json_num_key(f, "sm_occupancy_pct", b->gpm_n ? b->gpm_occupancy_pct : b->sm_occupancy_pct);
    rsr_json_num_key(f, "no_geometry_pct", b->no_geometry_pct);
    if (b->util_n)
        rsr_json_num_key(f, "nvml_util_pct", b->nvml_util_pct);
    /* HTA's idle split, summed over streams (more than the span with
     * several), and the busiest stream's, the one a figure per GPU uses */
    fputs(",\"idle_summed_over_streams\":{\"host_wait_us\":", f);
    rsr_json_num(f, ns_us(b->host_wait_ns));
    rsr_json_num_key(f, "kernel_wait_us", ns_us(b->kernel_wait_ns));
    rsr_json_num_key(f, "other_us", ns_us(b->other_idle_ns));
    fprintf(f, ",\"streams\":%zu}", b->n_streams);
    const struct rsr_stream_idle *s = rsr_gpu_busiest_stream(b);
    if (s) {
        fprintf(f, ",\"idle_busiest_stream\":{\"device\":%" PRId32 ",\"stream\":%" PRId32 ",\"ops\":%" PRIu64,
                s->device, s->stream, s->ops);
        rsr_json_num_key(f, "host_wait_us", ns_us(s->host_wait_ns));
        rsr_json_num_key(f, "kernel_wait_us", ns_us(s->kernel_wait_ns));
        rsr_json_num_key(f, "other_us", ns_us(s->other_ns));
        putc('}', f);
    }
    putc('}', f);
}

#define RSR_JSON_KERNELS 30

static void kernels_json(FILE *f, const struct rsr_model *m, const struct rsr_kernel_summary *k)
{
    /* the kernel table's GPU time in all, each operation counted (those
     * that overlap too): what the GPU flame graph adds up to */
    int64_t kern = 0, copies = 0;
    for (size_t i = 0; i < k->n; i++) {
        int copy = k->stats[i].cls == RSR_GPU_MEMCPY || k->stats[i].cls == RSR_GPU_MEMSET;
        *(copy ? &copies : &kern) += k->stats[i].total_ns;
    }
    fputs("\"gpu_time_us\":{\"kernels\":", f);
    rsr_json_num(f, ns_us(kern));
    rsr_json_num_key(f, "copies", ns_us(copies));
    fputs("},\"kernels\":[", f);
    for (size_t i = 0; i < k->n && i < RSR_JSON_KERNELS; i++) {
        const struct rsr_kernel_stat *s = &k->stats[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, rsr_model_str(m, s->name));
        fprintf(f, ",\"class\":\"%s\",\"count\":%" PRIu64, rsr_gpu_class_name(s->cls), s->count);
        rsr_json_num_key(f, "total_us", ns_us(s->total_ns));
        rsr_json_num_key(f, "mean_us", s->mean_ns / 1e3);
        rsr_json_num_key(f, "min_us", ns_us(s->min_ns));
        rsr_json_num_key(f, "max_us", ns_us(s->max_ns));
        fprintf(f, ",\"short_count\":%" PRIu64, s->short_count);
        fputs(",\"devices\":[", f);
        for (int d = 0, n = 0; d < 64; d++)
            if (s->devices >> d & 1)
                fprintf(f, n++ ? ",%d" : "%d", d);
        putc(']', f);
        if (s->geom_count) {
            double n = (double)s->geom_count, t = s->geom_ns > 0 ? (double)s->geom_ns : 1;
            rsr_json_num_key(f, "blocks", s->blocks_sum / n);
            rsr_json_num_key(f, "threads_per_block", s->tpb_sum / n);
            rsr_json_num_key(f, "waves", s->waves_sum / n);
            rsr_json_num_key(f, "sm_coverage_pct", 100.0 * s->coverage_ns / t);
            rsr_json_num_key(f, "occupancy_pct", 100.0 * s->occupancy_ns / t);
        }
        putc('}', f);
    }
    fputs("],\"short_kernels\":{", f);
    fprintf(f, "\"threshold_us\":%d,\"compute_runs\":%" PRIu64 ",\"short_runs\":%" PRIu64 ",\"short_us\":",
            RSR_SHORT_KERNEL_NS / 1000, k->n_compute, k->n_short);
    rsr_json_num(f, ns_us(k->short_ns));
    fputs(",\"fusion_candidates\":[", f);
    for (size_t i = 0; i < k->n_short_names && i < RSR_JSON_KERNELS; i++) {
        const struct rsr_kernel_stat *s = k->short_names[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, rsr_model_str(m, s->name));
        fprintf(f, ",\"short_count\":%" PRIu64, s->short_count);
        rsr_json_num_key(f, "short_us", ns_us(s->short_ns));
        putc('}', f);
    }
    fputs("]}", f);
}

/* The process's off-CPU time (waits.h): waits by reason, their causes,
 * running against blocked time per thread. Nothing without samples. */
static void waits_json(FILE *f, const struct rsr_proc_waits *w)
{
    uint64_t blocked = rsr_waits_total_ns(w);
    if (!blocked && !w->cpu_ns)
        return;
    fputs(",\"waits\":[", f);
    int first = 1;
    for (unsigned r = 0; r < RSF_WAIT_NREASONS; r++) {
        if (!w->count[r])
            continue;
        fprintf(f, "%s{\"reason\":", first ? "" : ",");
        rsr_json_str(f, rsf_wait_reason_label(r));
        fprintf(f, ",\"count\":%" PRIu64, w->count[r]);
        rsr_json_num_key(f, "total_s", (double)w->ns[r] / 1e9);
        putc('}', f);
        first = 0;
    }
    fputs("],\"wait_causes\":{", f);
    for (unsigned c = 0; c < RSR_NCAUSES; c++) {
        fprintf(f, "%s\"%s_s\":", c ? "," : "", rsr_wait_cause_name(c));
        rsr_json_num(f, (double)w->cause_ns[c] / 1e9);
    }
    putc('}', f);
    /* thread-seconds, over all threads; the most blocked thread's alone */
    rsr_json_num_key(f, "cpu_s", (double)w->cpu_ns / 1e9);
    rsr_json_num_key(f, "wait_s", (double)blocked / 1e9);
    rsr_json_num_key(f, "most_blocked_thread_s", (double)w->most_wait_ns / 1e9);
    fprintf(f, ",\"threads_sampled\":%u,\"threads\":[", w->nthreads);
    for (uint32_t t = 0; t < w->nkept; t++) {
        const struct rsr_thread_time *th = &w->threads[t];
        fprintf(f, "%s{\"tid\":%u,\"name\":", t ? "," : "", th->tid);
        rsr_json_str(f, th->name);
        rsr_json_num_key(f, "cpu_s", (double)th->cpu_ns / 1e9);
        rsr_json_num_key(f, "wait_s", (double)th->wait_ns / 1e9);
        putc('}', f);
    }
    putc(']', f);
}

/* The figures of process i that come from the analyses. */
/* A process's time in each role's calls (groups.h), where it has some. */
static void comm_roles_json(FILE *f, const struct rsr_groups *g, size_t i)
{
    if (!g->by_model || i >= g->n_models || g->wall_s <= 0)
        return;
    int first = 1;
    for (int r = 0; r < RSR_GROUP_NROLES; r++) {
        const struct rsr_role_time *t = &g->by_model[i * RSR_GROUP_NROLES + r];
        if (t->time_us <= 0)
            continue;
        fprintf(f, "%s\"%s\":{", first ? ",\"comm_by_role\":{" : ",", rsr_group_role_name(r));
        first = 0;
        fputs("\"time_pct\":", f);
        rsr_json_num(f, 100 * t->time_us / 1e6 / g->wall_s);
        rsr_json_num_key(f, "wait_pct", 100 * t->wait_us / 1e6 / g->wall_s);
        double xfer = t->time_us - t->wait_us;
        rsr_json_num_key(f, "hidden_pct_of_transfer", xfer > 0 ? 100 * t->hidden_us / xfer : 0);
        putc('}', f);
    }
    if (!first)
        putc('}', f);
}

/* A process's place in the parallel layout (groups.h), where the job is
 * more than data parallel: its index in its communicator of each role. */
static void coords_json(FILE *f, const struct rsr_groups *g, size_t i)
{
    if (!g->coords || i >= g->n_models || !g->n || (g->n == 1 && g->v[0].role == RSR_GROUP_DATA))
        return;
    int first = 1;
    for (int r = 0; r < RSR_GROUP_NROLES; r++) {
        int32_t x = g->coords[i * RSR_GROUP_NROLES + r];
        if (x < 0 || r == RSR_GROUP_WORLD || r == RSR_GROUP_OTHER)
            continue;
        fprintf(f, "%s\"%s\":%d", first ? ",\"coords\":{" : ",", rsr_group_role_name(r), (int)x);
        first = 0;
    }
    if (!first)
        putc('}', f);
}

static void process_analysis_json(FILE *f, const struct rsr_job *j, size_t i)
{
    const struct rsr_model *m = j->models[i];
    comm_roles_json(f, &j->groups, i);
    coords_json(f, &j->groups, i);
    if (j->gpu && j->gpu[i].span_ns) {
        putc(',', f);
        gpu_json(f, &j->gpu[i]);
    }
    const struct rsr_summary *sm = m->sum;
    if (j->kernels && sm && sm->n_ops) {
        putc(',', f);
        kernels_json(f, m, &j->kernels[i]);
    }
    if (j->colls.wait_us && i < j->colls.n_models) {
        rsr_json_num_key(f, "collective_wait_us", j->colls.wait_us[i]);
        rsr_json_num_key(f, "collective_us", j->colls.coll_us[i]);
    }
    if (j->storage.loading && i < j->storage.n_models) {
        const struct rsr_data_loading *d = &j->storage.loading[i];
        fputs(",\"data_loading\":{\"read_s\":", f);
        rsr_json_num(f, (double)d->read_ns / 1e9);
        rsr_json_num_key(f, "read_while_gpu_idle_s", (double)d->read_idle_ns / 1e9);
        fprintf(f, ",\"read_bytes\":%" PRIu64, d->read_bytes);
        rsr_json_num_key(f, "pct", d->pct);
        putc('}', f);
    }
    waits_json(f, &m->waits);
    fprintf(f, ",\"syncs\":{\"count\":%" PRIu64 ",\"blocked_s\":", sm ? sm->n_syncs : 0);
    rsr_json_num(f, sm ? (double)sm->sync_blocked_ns / 1e9 : 0);
    fprintf(f, "},\"memory\":{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 "}",
            m->mem_allocs, m->mem_frees, m->mem_alloc_bytes);
    fprintf(f, ",\"cuda_graphs\":{\"node_ops\":%" PRIu64 ",\"collectives\":%" PRIu64 "}", m->graph_ops,
            m->graph_colls);
    if (j->align.models && i < j->align.n) {
        fputs(",\"clock\":{\"offset_ns\":", f);
        fprintf(f, "%lld", (long long)m->clock_offset_ns);
        fprintf(f, ",\"pair_offset_ns\":%lld,\"correction_ns\":%lld,\"matched\":%" PRIu64 "}",
                (long long)j->align.models[i].pair_offset_ns, (long long)j->align.models[i].correction_ns,
                j->align.models[i].matched);
    }
}

static void values_json(FILE *f, const char *key, const double *v, size_t n)
{
    fprintf(f, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            putc(',', f);
        rsr_json_num(f, v[i]);
    }
    putc(']', f);
}

/* A step's critical path (critpath.h): "path":{"rank":R,"ms":{PART:ms}}
 * with the parts that are not 0, in proportion to its dur_ms and adding up
 * to it. */
static void step_path_json(FILE *f, const struct rsr_job *j, const struct rsr_step *x)
{
    if (!x->path.ranks)
        return;
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    double len = rsr_cp_step(&x->path, x->phase == RSR_PHASE_EVAL, j->path.how,
                             (double)(x->end_ns - x->start_ns), gain, part);
    /* the path's parts in proportion to the step's length */
    double scale = len > 0 ? (double)(x->end_ns - x->start_ns) / len : 0;
    fputs(",\"path\":{\"rank\":", f);
    rsr_json_int_or_null(f, x->path.r1);
    fputs(",\"ms\":{", f);
    for (int k = 0, n = 0; k < RSR_CP_NPARTS; k++) {
        if (part[k] <= 0)
            continue;
        fprintf(f, "%s\"%s\":", n++ ? "," : "", rsr_cp_part_name(k));
        rsr_json_num(f, part[k] * scale / 1e6);
    }
    fputs("}}", f);
}

/* "critical_path" (critpath.h): the time per step by cause on the
 * cross-rank critical path, adding up to steps.per_step_ms, each removable
 * cause with what removing it would give back; absent without steps. */
static void critpath_json(FILE *f, const struct rsr_critpath *cp)
{
    if (!cp->have)
        return;
    fputs(",\n\"critical_path\":{", f);
    fprintf(f, "\"steps\":%zu", cp->steps);
    rsr_json_num_key(f, "per_step_ms", cp->per_step_ms);
    fputs(",\"parts\":[", f);
    for (int k = 0, n = 0; k < RSR_CP_NPARTS; k++) {
        if (cp->part_ms[k] <= 0 && (k >= RSR_CP_NGAIN || cp->gain_ms[k] <= 0))
            continue;
        fprintf(f, "%s{\"cause\":\"%s\",\"text\":", n++ ? ",\n" : "\n", rsr_cp_part_name(k));
        rsr_json_str(f, rsr_cp_part_text(k));
        rsr_json_num_key(f, "ms_per_step", cp->part_ms[k]);
        rsr_json_num_key(f, "pct", cp->per_step_ms > 0 ? 100 * cp->part_ms[k] / cp->per_step_ms : 0);
        if (k < RSR_CP_NGAIN) {
            rsr_json_num_key(f, "gain_ms_per_step", cp->gain_ms[k]);
            rsr_json_num_key(f, "recoverable_pct", cp->per_step_ms > 0 ? 100 * cp->gain_ms[k] / cp->per_step_ms : 0);
            rsr_json_num_key(f, "whatif_ms_per_step", cp->per_step_ms - cp->gain_ms[k]);
            fputs(",\"rank\":", f);
            rsr_json_int_or_null(f, cp->gain_rank[k]);
        }
        putc('}', f);
    }
    fputs("]}", f);
}

/* "hang" (hang.h): a stuck job's verdict; absent when no call is stuck. */
static void hang_json(FILE *f, const struct rsr_hang *h)
{
    if (h->kind == RSR_HANG_NONE)
        return;
    char text[320];
    rsr_hang_text(h, text, sizeof text);
    fprintf(f, ",\n\"hang\":{\"kind\":\"%s\",\"text\":", rsr_hang_kind_name(h->kind));
    rsr_json_str(f, text);
    char comm[24];
    snprintf(comm, sizeof comm, "%016llx", (unsigned long long)h->comm_id);
    fputs(",\"communicator\":", f);
    rsr_json_str(f, h->seq_known ? comm : NULL);
    fputs(",\"role\":", f);
    rsr_json_str(f, h->role >= 0 ? rsr_group_role_name(h->role) : NULL);
    if (h->seq_known)
        fprintf(f, ",\"seq\":%u,\"step\":", h->seq);
    else
        fputs(",\"seq\":null,\"step\":", f);
    if (h->step >= 0)
        fprintf(f, "%lld", (long long)h->step);
    else
        fputs("null", f);
    fputs(",\"op\":", f);
    rsr_json_str(f, h->seq_known ? rsr_coll_op_name(h->op) : h->op_text);
    fprintf(f, ",\"bytes\":%llu,\"dtype\":", (unsigned long long)h->bytes);
    rsr_json_str(f, h->dtype);
    rsr_json_num_key(f, "waited_s", h->waited_s);
    const int32_t *lists[2] = { h->waiting, h->missing };
    const size_t counts[2] = { h->n_waiting, h->n_missing };
    for (int l = 0; l < 2; l++) {
        fputs(l ? "],\"missing_ranks\":[" : ",\"waiting_ranks\":[", f);
        for (size_t i = 0; i < counts[l]; i++)
            fprintf(f, "%s%d", i ? "," : "", lists[l][i]);
    }
    fprintf(f, "],\"group_size\":%d,\"ranks_without_file\":%zu,\"communicators_stuck\":%u,\"per_rank\":[",
            h->group_size, h->absent, h->comms_stuck);
    for (size_t i = 0; i < h->n_ranks; i++) {
        const struct rsr_hang_rank *r = &h->ranks[i];
        fprintf(f, "%s{\"rank\":", i ? ",\n" : "\n");
        rsr_json_int_or_null(f, r->rank);
        fprintf(f, ",\"last_seq_done\":%lld,\"last_seq_entered\":%lld,\"in_flight\":%s",
                (long long)r->last_seq_done, (long long)r->last_seq_entered, r->in_flight ? "true" : "false");
        if (r->in_flight) {
            rsr_json_num_key(f, "waited_s", r->waited_s);
            fputs(",\"op\":", f);
            rsr_json_str(f, h->seq_known ? rsr_coll_op_name(r->op) : h->op_text);
            fprintf(f, ",\"bytes\":%llu,\"differs\":%s", (unsigned long long)r->bytes, r->odd ? "true" : "false");
        } else {
            rsr_json_num_key(f, "ended_before_s", r->ended_before_s);
        }
        fprintf(f, ",\"end_mark\":%s,\"signal\":", r->unclosed ? "false" : "true");
        char sig[32];
        rsr_json_str(f, r->fatal_sig ? rsr_signal_name(r->fatal_sig, sig, sizeof sig) : NULL);
        fputs(",\"where\":{\"frames\":[", f);
        const char *w = r->where ? r->where : "";
        for (int k = 0; *w; k++) {
            const char *e = strchr(w, ';');
            size_t len = e ? (size_t)(e - w) : strlen(w);
            char frame[RSR_WHERE_TEXT];
            snprintf(frame, sizeof frame, "%.*s", (int)len, w);
            if (k)
                putc(',', f);
            rsr_json_str(f, frame);
            w += len + (e ? 1 : 0);
        }
        putc(']', f);
        rsr_json_num_key(f, "wait_s", (double)r->where_wait_ns / 1e9);
        fputs("}}", f);
    }
    fputs("]}", f);
}

/* "steps" (steps.h), absent when none were found (the text summary says why). */
static void steps_json(FILE *f, const struct rsr_job *j)
{
    const struct rsr_steps *st = &j->steps;
    if (!st->source)
        return;
    fprintf(f, ",\n\"steps\":{\"source\":\"%s\"", st->source);
    rsr_json_num_key(f, "confidence", st->confidence);
    fprintf(f, ",\"count\":%zu", st->count);
    rsr_json_num_key(f, "per_step_ms", st->per_step_ms);
    rsr_json_num_key(f, "span_ms", st->span_ms);
    rsr_json_num_key(f, "median_ms", st->median_ms);
    rsr_json_num_key(f, "p90_ms", st->p90_ms);
    rsr_json_num_key(f, "p99_ms", st->p99_ms);
    rsr_json_num_key(f, "max_ms", st->max_ms);
    rsr_json_num_key(f, "trend_pct", st->trend_pct);
    rsr_json_num_key(f, "typical_change_pct", st->typical_change_pct);
    fprintf(f, ",\"ranks\":%zu,\"phases\":[", st->ranks);
    for (int p = 0, k = 0; p < RSR_NPHASES; p++) {
        if (!st->phase_count[p])
            continue;
        fprintf(f, "%s{\"name\":\"%s\",\"count\":%zu", k++ ? "," : "", rsr_step_phase_name(p), st->phase_count[p]);
        rsr_json_num_key(f, "median_ms", st->phase_median_ms[p]);
        putc('}', f);
    }
    putc(']', f);
    /* At most RSR_STEPS_SERIES entries: beyond, each stands for a run of
     * series_run consecutive steps and is the longest of them, and "slow"
     * holds the slowest RSR_STEPS_SLOW_LISTED (slow_count: how many there
     * were), so that report.json does not grow with the job's length. */
    size_t run = st->series_run;
    if (run > 1)
        fprintf(f, ",\"series_run\":%zu,\"series_steps\":%zu", run, st->n);
    fputs(",\"series\":[", f);
    for (size_t a = 0; a < st->n_series; a++) {
        size_t i = st->series_index[a];
        const struct rsr_step *x = &st->series[a];
        fprintf(f, "%s{\"index\":%zu", a ? ",\n" : "\n", i);
        rsr_json_num_key(f, "start_s", (double)(x->start_ns - j->storage.job_start_ns) / 1e9);
        rsr_json_num_key(f, "dur_ms", (double)(x->end_ns - x->start_ns) / 1e6);
        fprintf(f, ",\"phase\":\"%s\"", rsr_step_phase_name(x->phase));
        rsr_json_num_key(f, "compute_pct", x->compute_pct);
        rsr_json_num_key(f, "exposed_comm_pct", x->exposed_comm_pct);
        rsr_json_num_key(f, "sync_wait_pct", x->sync_wait_pct);
        rsr_json_num_key(f, "idle_pct", x->idle_pct);
        rsr_json_num_key(f, "io_ms", x->io_ms);
        rsr_json_num_key(f, "data_wait_ms", x->wait_ms);
        rsr_json_num_key(f, "checkpoint_ms", x->ckpt_ms);
        fprintf(f, ",\"checkpoint\":%s", x->checkpoint ? "true" : "false");
        step_path_json(f, j, x);
        putc('}', f);
    }
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
    fprintf(f, "],\"slow_count\":%zu,\n\"slow\":[", st->n_slow);
    for (size_t i = 0, k = 0; i < st->n_slow && k < RSR_STEPS_SLOW_LISTED; i++) {
        const struct rsr_step_slow *x = &st->slow[i];
        if (x->x_median < bar)
            continue;
        fprintf(f, "%s{\"index\":%zu", k++ ? "," : "", x->index);
        rsr_json_num_key(f, "dur_ms", x->dur_ms);
        rsr_json_num_key(f, "x_median", x->x_median);
        fprintf(f, ",\"cause\":\"%s\",\"rank\":", x->cause);
        rsr_json_int_or_null(f, x->rank);
        if (x->graphs) {
            /* OUT/step-INDEX-KIND.svg */
            fputs(",\"graphs\":[", f);
            for (unsigned kind = 0, c = 0; kind < RSF_SAMPLE_NKINDS; kind++)
                if (x->graphs & 1u << kind)
                    fprintf(f, "%s\"%s\"", c++ ? "," : "", rsf_sample_kind_name(kind));
            putc(']', f);
        }
        putc('}', f);
    }
    fputs("]}", f);
}

/* report.json's groups (groups.h): each class of alike communicators. */
static void groups_json(FILE *f, const struct rsr_groups *gs)
{
    for (size_t i = 0; i < gs->n; i++) {
        const struct rsr_group *g = &gs->v[i];
        fprintf(f, "%s{\"role\":\"%s\",\"sharded\":%s,\"size\":%d,\"count\":%zu,\"intra_node\":%s,\"hosts\":%d",
                i ? ",\n" : "\n", rsr_group_role_name(g->role), g->sharded ? "true" : "false", g->size, g->count,
                g->intra_node ? "true" : "false", g->hosts);
        fprintf(f, ",\"rail_aligned\":%s,\"rail\":", g->rail_aligned ? "true" : "false");
        rsr_json_int_or_null(f, g->rail);
        fprintf(f, ",\"calls\":%" PRIu64, g->calls);
        rsr_json_num_key(f, "calls_per_step", g->calls_per_step);
        rsr_json_num_key(f, "time_pct", g->time_pct);
        rsr_json_num_key(f, "sync_wait_pct", g->sync_wait_pct);
        rsr_json_num_key(f, "hidden_pct", g->hidden_pct);
        rsr_json_num_key(f, "busbw_gbs", g->busbw_gbs);
        rsr_json_num_key(f, "confidence", g->confidence);
        fputs(",\"why\":", f);
        rsr_json_str(f, g->why);
        fputs(",\"ops\":[", f);
        for (size_t k = 0; k < g->n_ops; k++) {
            fprintf(f, "%s{\"op\":\"%s\",\"calls\":%" PRIu64, k ? "," : "", rsr_coll_op_name(g->ops[k].op),
                    g->ops[k].calls);
            rsr_json_num_key(f, "mean_bytes", g->ops[k].mean_bytes);
            putc('}', f);
        }
        fprintf(f, "],\"example_comm\":\"%016llx\",\"members_example\":[", (unsigned long long)g->example_comm);
        for (size_t k = 0; k < g->n_members; k++)
            fprintf(f, "%s%d", k ? "," : "", g->members[k]);
        fputs("]}", f);
    }
}

/* report.json's pipeline (groups.h), absent without pipeline stages. */
static void pipeline_json(FILE *f, const struct rsr_pipeline *p)
{
    if (!p->stages)
        return;
    fprintf(f, ",\n\"pipeline\":{\"stages\":%d", p->stages);
    rsr_json_num_key(f, "microbatches", p->microbatches);
    rsr_json_num_key(f, "schedule_bubble_pct", p->schedule_bubble_pct);
    rsr_json_num_key(f, "per_step_ms", p->per_step_ms);
    fputs(",\"slowest\":", f);
    rsr_json_int_or_null(f, p->slowest);
    rsr_json_num_key(f, "slowest_excess_pct", p->slowest_excess_pct);
    fputs(",\"by_stage\":[", f);
    for (int32_t k = 0; k < p->stages; k++) {
        const struct rsr_pipe_stage *x = &p->by_stage[k];
        fprintf(f, "%s{\"stage\":%d,\"ranks\":%zu,\"example_rank\":", k ? "," : "", x->stage, x->ranks);
        rsr_json_int_or_null(f, x->example_rank);
        rsr_json_num_key(f, "bubble_ms_per_step", x->bubble_ms_per_step);
        rsr_json_num_key(f, "bubble_pct", x->bubble_pct);
        putc('}', f);
    }
    fputs("]}", f);
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

static void straggler_groups_json(FILE *f, const struct rsr_job *j, const struct rsr_straggler *s)
{
    const struct rsr_comm_time *v[8];
    size_t n = rsr_straggler_groups(j, s, v, 8);
    fputs(",\"groups\":[", f);
    for (size_t i = 0; i < n; i++) {
        const struct rsr_group_comm *gc = rsr_groups_comm(&j->groups, v[i]->comm_id);
        fprintf(f, "%s{\"role\":\"%s\",\"comm\":\"%016llx\"", i ? "," : "", rsr_group_role_name(gc->role),
                (unsigned long long)gc->id);
        rsr_json_num_key(f, "caused_pct", s->caused_us > 0 ? 100 * v[i]->caused_us / s->caused_us : 0);
        fputs(",\"members\":[", f);
        for (size_t k = 0; k < gc->n_members; k++)
            fprintf(f, "%s%d", k ? "," : "", gc->members[k]);
        fputs("]}", f);
    }
    putc(']', f);
}

static void job_json(FILE *f, const struct rsr_job *j, const struct rsr_input *ins)
{
    rsr_json_num_key(f, "skew_us", (double)j->align.max_correction_ns / 1e3);
    fprintf(f, ",\"alignment\":{\"method\":\"%s\",\"matched_collectives\":%" PRIu64 ",\"residual_us\":",
            j->align.groups ? "clock pairs + collective ends" : "clock pairs", j->align.groups);
    rsr_json_num(f, (double)j->align.residual_ns / 1e3);
    fputs("}", f);
    fprintf(f, ",\"start_us\":%.3f", (double)j->storage.job_start_ns / 1e3);
    rsr_json_num_key(f, "wall_s", (double)(j->storage.job_end_ns - j->storage.job_start_ns) / 1e9);
    fputs(",\n\"ends_early\":[", f);
    for (size_t i = 0; i < j->ends.n; i++) {
        const struct rsr_early_end *e = &j->ends.list[i];
        fputs(i ? ",{\"rank\":" : "{\"rank\":", f);
        rsr_json_int_or_null(f, e->rank);
        fprintf(f, ",\"pid\":%lld,\"file\":", (long long)j->models[e->model]->pid);
        rsr_json_str(f, ins[e->model].file);
        rsr_json_num_key(f, "ends_s", e->ends_s);
        rsr_json_num_key(f, "covers_pct", e->covers_pct);
        fprintf(f, ",\"cut_short\":%s,\"unread_bytes\":%" PRIu64 "}", e->unclosed == RSR_CUT_SHORT ? "true" : "false",
                ins[e->model].walk.bad_bytes);
    }
    putc(']', f);

    fputs(",\n\"collectives\":[", f);
    for (size_t i = 0; i < j->colls.n_rows; i++) {
        const struct rsr_coll_row *r = &j->colls.rows[i];
        fprintf(f, "%s{\"op\":\"%s\",\"comm\":\"%016llx\",\"ranks\":%d,\"bytes\":%" PRIu64 ",\"count\":%" PRIu64,
                i ? ",\n" : "\n", rsr_coll_op_name(r->op), (unsigned long long)r->comm_id, r->ranks, r->bytes,
                r->count);
        fprintf(f, ",\"group_calls\":%u", r->group_calls);
        rsr_json_num_key(f, "mean_us", r->mean_us);
        rsr_json_num_key(f, "algbw_gbs", r->algbw_gbs);
        rsr_json_num_key(f, "busbw_gbs", r->busbw_gbs);
        rsr_json_num_key(f, "mean_wait_us", r->mean_wait_us);
        putc('}', f);
    }
    fputs("],\n\"groups\":[", f);
    groups_json(f, &j->groups);
    putc(']', f);
    pipeline_json(f, &j->groups.pipe);
    fputs(",\n\"checkpoints\":[", f);
    for (size_t i = 0; i < j->storage.n_ckpts; i++) {
        const struct rsr_checkpoint *c = &j->storage.ckpts[i];
        fputs(i ? ",{\"rank\":" : "{\"rank\":", f);
        rsr_json_int_or_null(f, c->rank);
        rsr_json_num_key(f, "start_s", (double)(c->start_ns - j->storage.job_start_ns) / 1e9);
        rsr_json_num_key(f, "dur_s", (double)(c->end_ns - c->start_ns) / 1e9);
        fprintf(f, ",\"bytes\":%" PRIu64 ",\"files\":%u", c->bytes, c->files);
        rsr_json_num_key(f, "gpu_stall_s", (double)c->gpu_stall_ns / 1e9);
        fprintf(f, ",\"pid\":%" PRId64 ",\"writer\":\"%s\"", c->pid, c->by_child ? "child" : "rank");
        putc('}', f);
    }
    fputs("]", f);
    rsr_json_num_key(f, "checkpoint_pct", j->storage.checkpoint_pct);
    fputs(",\n\"stragglers\":[", f);
    for (size_t i = 0; i < j->colls.n_stragglers; i++) {
        const struct rsr_straggler *s = &j->colls.stragglers[i];
        fputs(i ? ",{\"rank\":" : "{\"rank\":", f);
        rsr_json_int_or_null(f, s->rank);
        rsr_json_num_key(f, "score", s->score);
        rsr_json_num_key(f, "caused_wait_us", s->caused_us);
        rsr_json_num_key(f, "excess_pct", s->excess_pct);
        fprintf(f, ",\"last\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"phase\":\"%s\",\"evidence\":", s->last, s->calls,
                rsr_coll_op_name(s->worst_op));
        rsr_json_str(f, s->evidence);
        why_json(f, j, s);
        straggler_groups_json(f, j, s);
        putc('}', f);
    }
    /* the test behind the list (collectives.h), so that an empty list reads
     * as "none stands out" and says by how far */
    fprintf(f, "],\n\"straggler_check\":{\"parts\":%d", j->colls.straggler_parts);
    rsr_json_num_key(f, "min_excess_pct", RSR_STRAGGLER_MIN_PCT);
    rsr_json_num_key(f, "max_excess_pct", j->colls.max_excess_pct);
    putc('}', f);
    steps_json(f, j);
    critpath_json(f, &j->path);
    hang_json(f, &j->hang);
    char head[400];
    if (rsr_findings_headline(j, head, sizeof head)) {
        fputs(",\n\"headline\":", f);
        rsr_json_str(f, head);
    }
    fputs(",\n\"findings\":[", f);
    for (size_t i = 0; i < j->n_findings; i++) {
        const struct rsr_finding *x = &j->findings[i];
        fprintf(f, "%s{\"id\":\"%s\",\"severity\":\"%s\",\"title\":", i ? ",\n" : "\n", x->id,
                rsr_severity_name(x->severity));
        rsr_json_str(f, x->title);
        fputs(",\"evidence\":", f);
        rsr_json_str(f, x->evidence);
        fputs(",\"advice\":", f);
        rsr_json_str(f, x->advice);
        fputs(",\"recoverable_pct\":", f);
        if (x->recoverable_pct >= 0)
            rsr_json_num(f, x->recoverable_pct);
        else
            fputs("null", f);
        /* its cause on the critical path and the time per step without it */
        fputs(",\"cause\":", f);
        rsr_json_str(f, x->cause);
        if (x->whatif_ms >= 0)
            rsr_json_num_key(f, "whatif_ms_per_step", x->whatif_ms);
        putc('}', f);
    }
    const struct rsr_timeline *t = &j->timeline;
    fputs("],\n\"timeline\":{\"bin_us\":", f);
    rsr_json_num(f, (double)t->bin_ns / 1e3);
    fprintf(f, ",\"start_us\":%.3f", (double)t->start_ns / 1e3);
    fputs(",\"ranks\":[", f);
    for (size_t i = 0; i < t->n_ranks; i++) {
        const struct rsr_timeline_rank *r = &t->ranks[i];
        fputs(i ? ",\n{\"rank\":" : "\n{\"rank\":", f);
        rsr_json_int_or_null(f, r->rank);
        values_json(f, "gpu_busy_pct", r->gpu_busy_pct, t->nbins);
        values_json(f, "comm_gbs", r->comm_gbs, t->nbins);
        values_json(f, "read_mbs", r->read_mbs, t->nbins);
        values_json(f, "write_mbs", r->write_mbs, t->nbins);
        if (r->sm_active_pct)
            values_json(f, "sm_active_pct", r->sm_active_pct, t->nbins);
        putc('}', f);
    }
    fputs("]}", f);
    fputs(",\n", f);
    rsr_nodes_json(f, &j->nodes);
}

void rsr_report_json(FILE *f, struct rsr_input *ins, int n, const struct rsr_job *job, const char *extra)
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
    fputs("{\"schema\":\"ringside-report/1\",\"job\":", f);
    rsr_json_str(f, job_name);
    fputs(",\"series\":", f);
    rsr_json_str(f, series);
    fputs(",\"world_size\":", f);
    rsr_json_int_or_null(f, world);
    if (job)
        job_json(f, job, ins);
    if (extra)
        fprintf(f, ",\n%s", extra);
    rsr_compile_job_json(f, ins, n);
    fputs(",\n\"processes\":[", f);
    for (int i = 0; i < n; i++) {
        const struct rsr_input *in = &ins[i];
        fputs(i ? ",\n{\"rank\":" : "\n{\"rank\":", f);
        rsr_json_int_or_null(f, in->rank);
        fprintf(f, ",\"role\":\"%s\",\"parent_rank\":", role_name(in->role));
        rsr_json_int_or_null(f, in->parent_rank);
        fputs(",\"host\":", f);
        rsr_json_str(f, in->host);
        fprintf(f, ",\"pid\":%d,\"ppid\":%d,\"argv\":[", in->pid, in->ppid);
        for (uint32_t a = 0; a < in->argc; a++) {
            fputs(a ? "," : "", f);
            rsr_json_str(f, in->argv[a]);
        }
        fputs("],\"wall_s\":", f);
        rsr_json_num(f, in->end_mono > in->start_mono ? (in->end_mono - in->start_mono) / 1e9 : 0);
        fprintf(f, ",\"dropped\":%" PRIu64, in->dropped);
        rsr_compile_process_json(f, ins, n, i);
        putc(',', f);
        io_json(f, in);
        putc(',', f);
        trace_json(f, in, job, (size_t)i);
        if (job && (size_t)i < job->n)
            process_analysis_json(f, job, (size_t)i);
        putc('}', f);
    }
    fputs("\n]}\n", f);
}
