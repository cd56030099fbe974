/* The report command: trace discovery, parallel loading, report.json and
 * the text summary. Damaged files are reported (file, offset, bytes that
 * could not be read) and everything readable in them is still used. */
#include "reporter/report.h"
#include "reporter/unnamed.h"
#include "reporter/compile.h"
#include "reporter/flame.h"
#include "reporter/analyse.h"
#include "reporter/step_pick.h"
#include "reporter/summary.h"
#include "reporter/html.h"
#include "reporter/perfetto.h"
#include "reporter/prom.h"
#include "reporter/pftrace.h"
#include "reporter/intern.h"
#include "reporter/json.h"
#include "reporter/mpi.h"
#include "reporter/runs.h"
#include "reporter/watch.h"
#include "reporter/units.h"
#include "formats/rsf_error.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct list {
    char **v;
    int n, cap;
};

static void list_add(struct list *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = realloc(l->v, (size_t)l->cap * sizeof *l->v);
        if (!l->v) {
            fprintf(stderr, "ringside: out of memory\n");
            exit(1);
        }
    }
    l->v[l->n++] = strdup(s);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int scan(struct list *l, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        list_add(l, path);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (ends_with(e->d_name, ".trace.lz4"))
            list_add(l, sub);
        else if (depth < 1 && stat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            scan(l, sub, depth + 1);
    }
    closedir(d);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int rsr_find_traces(char **paths, int npaths, char ***files)
{
    struct list l = { 0 };
    for (int i = 0; i < npaths; i++)
        if (scan(&l, paths[i], 0) != 0)
            return -1;
    if (l.n)
        qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_str);
    *files = l.v;
    return l.n;
}

static const char *role_name(int r)
{
    return r == RSF_ROLE_RANK ? "rank" : r == RSF_ROLE_CHILD ? "child" : "other";
}

static void json_int_or_null(FILE *f, int v)
{
    if (v < 0)
        fputs("null", f);
    else
        fprintf(f, "%d", v);
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

static void num_key(FILE *f, const char *key, double v)
{
    fprintf(f, ",\"%s\":", key);
    rsr_json_num(f, v);
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
    num_key(f, "ends_s", (double)(m->wall_end_ns - t0) / 1e9);
    num_key(f, "covers_pct", rsr_ends_covers_pct(m->wall_end_ns, t0, t1));
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
    num_key(f, "share_pct", w->share_pct);
    num_key(f, "excess_us", w->excess_us);
    fputs(",\"detail\":", f);
    rsr_json_str(f, w->detail);
    why_frames(f, s->model < j->n ? &j->models[s->model]->waits : NULL, w->kind);
    fputs(",\"kernels\":[", f);
    for (size_t k = 0; k < w->n_kernels; k++) {
        const struct rsr_why_kernel *x = &w->kernels[k];
        fputs(k ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, x->name);
        num_key(f, "straggler_us", x->straggler_us);
        num_key(f, "others_us", x->others_us);
        fputs(",\"by_rank\":[", f);
        int first = 1;
        for (size_t i = 0; i < j->n; i++) {
            if (isnan(x->mean_us[i]))
                continue;
            fprintf(f, "%s{\"rank\":", first ? "" : ",");
            json_int_or_null(f, j->models[i]->rank);
            num_key(f, "mean_us", x->mean_us[i]);
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
    num_key(f, "idle_pct", b->idle_pct);
    num_key(f, "compute_pct", b->compute_pct);
    num_key(f, "non_compute_pct", b->non_compute_pct);
    num_key(f, "comm_pct", b->comm_pct);
    num_key(f, "memcpy_pct", b->memcpy_pct);
    num_key(f, "comm_comp_overlap_pct", b->comm_comp_overlap_pct);
    num_key(f, "exposed_comm_pct", b->exposed_comm_pct);
    num_key(f, "sync_wait_pct", b->sync_wait_pct);
    num_key(f, "exposed_sync_wait_pct", b->exposed_sync_wait_pct);
    num_key(f, "transfer_pct", b->transfer_pct);
    fprintf(f, ",\"start_us\":%.3f", ns_us(b->start_ns));
    num_key(f, "busy_us", ns_us(b->busy_ns));
    num_key(f, "compute_us", ns_us(b->compute_ns));
    num_key(f, "comm_us", ns_us(b->comm_ns));
    num_key(f, "exposed_comm_us", ns_us(b->exposed_comm_ns));
    num_key(f, "sync_wait_us", ns_us(b->sync_wait_ns));
    num_key(f, "transfer_us", ns_us(b->transfer_ns));
    /* the GPU's use below the timeline: measured (NVML's GPM) where the
     * agent could sample it, else estimated from launch geometry */
    num_key(f, "busy_pct", b->busy_pct);
    num_key(f, "sm_activity_pct", b->gpm_n ? b->gpm_sm_active_pct : b->sm_activity_pct);
    fprintf(f, ",\"sm_activity_source\":\"%s\"", b->gpm_n ? "nvml-gpm" : "geometry");
    num_key(f, "sm_activity_geometry_pct", b->sm_activity_pct);
    num_key(f, "sm_occupancy_pct", b->gpm_n ? b->gpm_occupancy_pct : b->sm_occupancy_pct);
    num_key(f, "no_geometry_pct", b->no_geometry_pct);
    if (b->util_n)
        num_key(f, "nvml_util_pct", b->nvml_util_pct);
    /* HTA's idle split, summed over streams (more than the span with
     * several), and the busiest stream's, the one a figure per GPU uses */
    fputs(",\"idle_summed_over_streams\":{\"host_wait_us\":", f);
    rsr_json_num(f, ns_us(b->host_wait_ns));
    num_key(f, "kernel_wait_us", ns_us(b->kernel_wait_ns));
    num_key(f, "other_us", ns_us(b->other_idle_ns));
    fprintf(f, ",\"streams\":%zu}", b->n_streams);
    const struct rsr_stream_idle *s = rsr_gpu_busiest_stream(b);
    if (s) {
        fprintf(f, ",\"idle_busiest_stream\":{\"device\":%" PRId32 ",\"stream\":%" PRId32 ",\"ops\":%" PRIu64,
                s->device, s->stream, s->ops);
        num_key(f, "host_wait_us", ns_us(s->host_wait_ns));
        num_key(f, "kernel_wait_us", ns_us(s->kernel_wait_ns));
        num_key(f, "other_us", ns_us(s->other_ns));
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
    num_key(f, "copies", ns_us(copies));
    fputs("},\"kernels\":[", f);
    for (size_t i = 0; i < k->n && i < RSR_JSON_KERNELS; i++) {
        const struct rsr_kernel_stat *s = &k->stats[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, rsr_model_str(m, s->name));
        fprintf(f, ",\"class\":\"%s\",\"count\":%" PRIu64, rsr_gpu_class_name(s->cls), s->count);
        num_key(f, "total_us", ns_us(s->total_ns));
        num_key(f, "mean_us", s->mean_ns / 1e3);
        num_key(f, "min_us", ns_us(s->min_ns));
        num_key(f, "max_us", ns_us(s->max_ns));
        fprintf(f, ",\"short_count\":%" PRIu64, s->short_count);
        fputs(",\"devices\":[", f);
        for (int d = 0, n = 0; d < 64; d++)
            if (s->devices >> d & 1)
                fprintf(f, n++ ? ",%d" : "%d", d);
        putc(']', f);
        if (s->geom_count) {
            double n = (double)s->geom_count, t = s->geom_ns > 0 ? (double)s->geom_ns : 1;
            num_key(f, "blocks", s->blocks_sum / n);
            num_key(f, "threads_per_block", s->tpb_sum / n);
            num_key(f, "waves", s->waves_sum / n);
            num_key(f, "sm_coverage_pct", 100.0 * s->coverage_ns / t);
            num_key(f, "occupancy_pct", 100.0 * s->occupancy_ns / t);
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
        num_key(f, "short_us", ns_us(s->short_ns));
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
        num_key(f, "total_s", (double)w->ns[r] / 1e9);
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
    num_key(f, "cpu_s", (double)w->cpu_ns / 1e9);
    num_key(f, "wait_s", (double)blocked / 1e9);
    num_key(f, "most_blocked_thread_s", (double)w->most_wait_ns / 1e9);
    fprintf(f, ",\"threads_sampled\":%u,\"threads\":[", w->nthreads);
    for (uint32_t t = 0; t < w->nkept; t++) {
        const struct rsr_thread_time *th = &w->threads[t];
        fprintf(f, "%s{\"tid\":%u,\"name\":", t ? "," : "", th->tid);
        rsr_json_str(f, th->name);
        num_key(f, "cpu_s", (double)th->cpu_ns / 1e9);
        num_key(f, "wait_s", (double)th->wait_ns / 1e9);
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
        num_key(f, "wait_pct", 100 * t->wait_us / 1e6 / g->wall_s);
        double xfer = t->time_us - t->wait_us;
        num_key(f, "hidden_pct_of_transfer", xfer > 0 ? 100 * t->hidden_us / xfer : 0);
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
        num_key(f, "collective_wait_us", j->colls.wait_us[i]);
        num_key(f, "collective_us", j->colls.coll_us[i]);
    }
    if (j->storage.loading && i < j->storage.n_models) {
        const struct rsr_data_loading *d = &j->storage.loading[i];
        fputs(",\"data_loading\":{\"read_s\":", f);
        rsr_json_num(f, (double)d->read_ns / 1e9);
        num_key(f, "read_while_gpu_idle_s", (double)d->read_idle_ns / 1e9);
        fprintf(f, ",\"read_bytes\":%" PRIu64, d->read_bytes);
        num_key(f, "pct", d->pct);
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

/* "steps" (steps.h), absent when none were found (the text summary says why). */
static void steps_json(FILE *f, const struct rsr_job *j)
{
    const struct rsr_steps *st = &j->steps;
    if (!st->source)
        return;
    fprintf(f, ",\n\"steps\":{\"source\":\"%s\"", st->source);
    num_key(f, "confidence", st->confidence);
    fprintf(f, ",\"count\":%zu", st->count);
    num_key(f, "per_step_ms", st->per_step_ms);
    num_key(f, "span_ms", st->span_ms);
    num_key(f, "median_ms", st->median_ms);
    num_key(f, "p90_ms", st->p90_ms);
    num_key(f, "p99_ms", st->p99_ms);
    num_key(f, "max_ms", st->max_ms);
    num_key(f, "trend_pct", st->trend_pct);
    num_key(f, "typical_change_pct", st->typical_change_pct);
    fprintf(f, ",\"ranks\":%zu,\"phases\":[", st->ranks);
    for (int p = 0, k = 0; p < RSR_NPHASES; p++) {
        if (!st->phase_count[p])
            continue;
        fprintf(f, "%s{\"name\":\"%s\",\"count\":%zu", k++ ? "," : "", rsr_step_phase_name(p), st->phase_count[p]);
        num_key(f, "median_ms", st->phase_median_ms[p]);
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
        num_key(f, "start_s", (double)(x->start_ns - j->storage.job_start_ns) / 1e9);
        num_key(f, "dur_ms", (double)(x->end_ns - x->start_ns) / 1e6);
        fprintf(f, ",\"phase\":\"%s\"", rsr_step_phase_name(x->phase));
        num_key(f, "compute_pct", x->compute_pct);
        num_key(f, "exposed_comm_pct", x->exposed_comm_pct);
        num_key(f, "sync_wait_pct", x->sync_wait_pct);
        num_key(f, "idle_pct", x->idle_pct);
        num_key(f, "io_ms", x->io_ms);
        num_key(f, "data_wait_ms", x->wait_ms);
        num_key(f, "checkpoint_ms", x->ckpt_ms);
        fprintf(f, ",\"checkpoint\":%s}", x->checkpoint ? "true" : "false");
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
        num_key(f, "dur_ms", x->dur_ms);
        num_key(f, "x_median", x->x_median);
        fprintf(f, ",\"cause\":\"%s\",\"rank\":", x->cause);
        json_int_or_null(f, x->rank);
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
        json_int_or_null(f, g->rail);
        fprintf(f, ",\"calls\":%" PRIu64, g->calls);
        num_key(f, "calls_per_step", g->calls_per_step);
        num_key(f, "time_pct", g->time_pct);
        num_key(f, "sync_wait_pct", g->sync_wait_pct);
        num_key(f, "hidden_pct", g->hidden_pct);
        num_key(f, "busbw_gbs", g->busbw_gbs);
        num_key(f, "confidence", g->confidence);
        fputs(",\"why\":", f);
        rsr_json_str(f, g->why);
        fputs(",\"ops\":[", f);
        for (size_t k = 0; k < g->n_ops; k++) {
            fprintf(f, "%s{\"op\":\"%s\",\"calls\":%" PRIu64, k ? "," : "", rsr_coll_op_name(g->ops[k].op),
                    g->ops[k].calls);
            num_key(f, "mean_bytes", g->ops[k].mean_bytes);
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
    num_key(f, "microbatches", p->microbatches);
    num_key(f, "schedule_bubble_pct", p->schedule_bubble_pct);
    num_key(f, "per_step_ms", p->per_step_ms);
    fputs(",\"slowest\":", f);
    json_int_or_null(f, p->slowest);
    num_key(f, "slowest_excess_pct", p->slowest_excess_pct);
    fputs(",\"by_stage\":[", f);
    for (int32_t k = 0; k < p->stages; k++) {
        const struct rsr_pipe_stage *x = &p->by_stage[k];
        fprintf(f, "%s{\"stage\":%d,\"ranks\":%zu,\"example_rank\":", k ? "," : "", x->stage, x->ranks);
        json_int_or_null(f, x->example_rank);
        num_key(f, "bubble_ms_per_step", x->bubble_ms_per_step);
        num_key(f, "bubble_pct", x->bubble_pct);
        putc('}', f);
    }
    fputs("]}", f);
}

/* The groups (communicators) a straggler holds back, most waiting caused
 * first, each with its share of the waiting it caused (groups.h). */
static size_t straggler_groups(const struct rsr_job *j, const struct rsr_straggler *s,
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
    size_t n = straggler_groups(j, s, v, 8);
    fputs(",\"groups\":[", f);
    for (size_t i = 0; i < n; i++) {
        const struct rsr_group_comm *gc = rsr_groups_comm(&j->groups, v[i]->comm_id);
        fprintf(f, "%s{\"role\":\"%s\",\"comm\":\"%016llx\"", i ? "," : "", rsr_group_role_name(gc->role),
                (unsigned long long)gc->id);
        num_key(f, "caused_pct", s->caused_us > 0 ? 100 * v[i]->caused_us / s->caused_us : 0);
        fputs(",\"members\":[", f);
        for (size_t k = 0; k < gc->n_members; k++)
            fprintf(f, "%s%d", k ? "," : "", gc->members[k]);
        fputs("]}", f);
    }
    putc(']', f);
}

static void job_json(FILE *f, const struct rsr_job *j, const struct rsr_input *ins)
{
    num_key(f, "skew_us", (double)j->align.max_correction_ns / 1e3);
    fprintf(f, ",\"alignment\":{\"method\":\"%s\",\"matched_collectives\":%" PRIu64 ",\"residual_us\":",
            j->align.groups ? "clock pairs + collective ends" : "clock pairs", j->align.groups);
    rsr_json_num(f, (double)j->align.residual_ns / 1e3);
    fputs("}", f);
    fprintf(f, ",\"start_us\":%.3f", (double)j->storage.job_start_ns / 1e3);
    num_key(f, "wall_s", (double)(j->storage.job_end_ns - j->storage.job_start_ns) / 1e9);
    fputs(",\n\"ends_early\":[", f);
    for (size_t i = 0; i < j->ends.n; i++) {
        const struct rsr_early_end *e = &j->ends.list[i];
        fputs(i ? ",{\"rank\":" : "{\"rank\":", f);
        json_int_or_null(f, e->rank);
        fprintf(f, ",\"pid\":%lld,\"file\":", (long long)j->models[e->model]->pid);
        rsr_json_str(f, ins[e->model].file);
        num_key(f, "ends_s", e->ends_s);
        num_key(f, "covers_pct", e->covers_pct);
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
        num_key(f, "mean_us", r->mean_us);
        num_key(f, "algbw_gbs", r->algbw_gbs);
        num_key(f, "busbw_gbs", r->busbw_gbs);
        num_key(f, "mean_wait_us", r->mean_wait_us);
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
        json_int_or_null(f, c->rank);
        num_key(f, "start_s", (double)(c->start_ns - j->storage.job_start_ns) / 1e9);
        num_key(f, "dur_s", (double)(c->end_ns - c->start_ns) / 1e9);
        fprintf(f, ",\"bytes\":%" PRIu64 ",\"files\":%u", c->bytes, c->files);
        num_key(f, "gpu_stall_s", (double)c->gpu_stall_ns / 1e9);
        fprintf(f, ",\"pid\":%" PRId64 ",\"writer\":\"%s\"", c->pid, c->by_child ? "child" : "rank");
        putc('}', f);
    }
    fputs("]", f);
    num_key(f, "checkpoint_pct", j->storage.checkpoint_pct);
    fputs(",\n\"stragglers\":[", f);
    for (size_t i = 0; i < j->colls.n_stragglers; i++) {
        const struct rsr_straggler *s = &j->colls.stragglers[i];
        fputs(i ? ",{\"rank\":" : "{\"rank\":", f);
        json_int_or_null(f, s->rank);
        num_key(f, "score", s->score);
        num_key(f, "caused_wait_us", s->caused_us);
        num_key(f, "excess_pct", s->excess_pct);
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
    num_key(f, "min_excess_pct", RSR_STRAGGLER_MIN_PCT);
    num_key(f, "max_excess_pct", j->colls.max_excess_pct);
    putc('}', f);
    steps_json(f, j);
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
        json_int_or_null(f, r->rank);
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
    json_int_or_null(f, world);
    if (job)
        job_json(f, job, ins);
    if (extra)
        fprintf(f, ",\n%s", extra);
    rsr_compile_job_json(f, ins, n);
    fputs(",\n\"processes\":[", f);
    for (int i = 0; i < n; i++) {
        const struct rsr_input *in = &ins[i];
        fputs(i ? ",\n{\"rank\":" : "\n{\"rank\":", f);
        json_int_or_null(f, in->rank);
        fprintf(f, ",\"role\":\"%s\",\"parent_rank\":", role_name(in->role));
        json_int_or_null(f, in->parent_rank);
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

/* The headline, the job's time per training step (steps.h), with the
 * distribution of steps beside it; or, without steps, the wall time and
 * why. */
static void steps_line(FILE *f, const struct rsr_steps *st, double wall_s)
{
    if (!st->source) {
        fprintf(f, "  time per step: no steps found (%s); the job's wall time, %.2f s, is its figure\n", st->why,
                wall_s);
        return;
    }
    size_t ck = 0;
    for (size_t i = 0; i < st->n_slow; i++)
        ck += strcmp(st->slow[i].cause, "checkpoint") == 0;
    char head[48];
    fprintf(f, "  time per step: %s (%zu training steps in %.3f s, all that ran between them included)\n",
            rsr_steps_time_text(head, sizeof head, st->per_step_ms), st->count, st->span_ms / 1e3);
    fprintf(f, "  steps: median step %.1f ms, p90 %.1f ms, max %.1f ms", st->median_ms, st->p90_ms, st->max_ms);
    if (st->phase_count[RSR_PHASE_EVAL])
        fprintf(f, " (and %zu evaluation steps of %.1f ms)", st->phase_count[RSR_PHASE_EVAL],
                st->phase_median_ms[RSR_PHASE_EVAL]);
    fprintf(f, "; trend %+.1f%%; %zu slow", st->trend_pct, st->n_slow);
    if (ck)
        fprintf(f, " (%zu at a checkpoint)", ck);
    fprintf(f, "; from %s, confidence %.2f\n", st->source, st->confidence);
}

/* One line per trace file that ends early (ends.h): whose, where, how
 * much of the run it covers, and why it stops. */
static void ends_lines(FILE *f, const struct rsr_input *ins, const struct rsr_job *j, double wall)
{
    for (size_t i = 0; i < j->ends.n; i++) {
        const struct rsr_early_end *e = &j->ends.list[i];
        const struct rsr_input *in = &ins[e->model];
        if (e->rank >= 0)
            fprintf(f, "  trace ends early: rank %d's file", e->rank);
        else
            fprintf(f, "  trace ends early: process %d's file", in->pid);
        fprintf(f, " ends at %.2f s of %.2f s, covering %.1f%% of the run (", e->ends_s, wall, e->covers_pct);
        if (e->unclosed == RSR_CUT_SHORT)
            fprintf(f, "cut short: %" PRIu64 " bytes unread", in->walk.bad_bytes);
        else
            fputs("no end mark: the process was killed", f);
        fputs("); nothing after its end is counted against it\n", f);
    }
}

static void summary(FILE *f, const struct rsr_input *ins, int n, const struct rsr_job *j)
{
    int ranks = 0;
    uint64_t rb = 0, wb = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        ranks += ins[i].rank >= 0;
        dropped += ins[i].dropped;
        for (uint32_t k = 0; k < ins[i].nfiles; k++) {
            rb += ins[i].files[k].read_bytes;
            wb += ins[i].files[k].write_bytes;
        }
    }
    char r[32], w[32];
    rsr_fmt_bytes(r, sizeof r, (double)rb);
    rsr_fmt_bytes(w, sizeof w, (double)wb);
    double wall_s = (double)(j->storage.job_end_ns - j->storage.job_start_ns) / 1e9;
    fprintf(f, "ringside: %d process%s (%d rank%s), wall %.2f s; file I/O: %s read, %s written", n,
            n == 1 ? "" : "es", ranks, ranks == 1 ? "" : "s", wall_s, r, w);
    if (dropped)
        fprintf(f, "; %" PRIu64 " records dropped (memory bound)", dropped);
    fputc('\n', f);
    steps_line(f, &j->steps, wall_s);
    ends_lines(f, ins, j, wall_s);
    double idle = 0, comp = 0, comm = 0, copy = 0, exposed = 0, overlap = 0, sync_wait = 0;
    int ng = 0;
    for (size_t i = 0; j->gpu && i < j->n; i++) {
        const struct rsr_gpu_breakdown *b = &j->gpu[i];
        if (!b->span_ns)
            continue;
        idle += b->idle_pct, comp += b->compute_pct, comm += b->comm_pct, copy += b->memcpy_pct;
        exposed += b->exposed_comm_pct, overlap += b->comm_comp_overlap_pct, sync_wait += b->sync_wait_pct;
        ng++;
    }
    if (ng)
        fprintf(f, "  GPU (mean of %d): compute %.1f%%, communication %.1f%% (waiting for a late rank %.1f%%, "
                   "transfer not hidden by compute %.1f%%; hidden by compute %.1f%% of it), copies %.1f%%, "
                   "idle %.1f%%\n",
                ng, comp / ng, comm / ng, sync_wait / ng, exposed / ng, overlap / ng, copy / ng, idle / ng);
    if (j->colls.n_rows) {
        const struct rsr_coll_row *top = &j->colls.rows[0];
        double wait = 0;
        for (size_t i = 0; i < j->colls.n_models; i++)
            wait += j->colls.wait_us[i];
        char bytes[32];
        rsr_fmt_bytes(bytes, sizeof bytes, (double)top->bytes);
        fprintf(f, "  collectives: %" PRIu64 " calls; top: %s %s x %" PRIu64 " on %d ranks, busbw %.1f GB/s; "
                   "ranks waited %.1f ms in all for the last to arrive\n",
                j->colls.calls, rsr_coll_op_name(top->op), bytes, top->count, top->ranks, top->busbw_gbs,
                wait / 1e3);
    }
    if (j->groups.n > 1 || (j->groups.n == 1 && j->groups.v[0].role != RSR_GROUP_DATA)) {
        /* only where the job is more than data parallel */
        fputs("  communication groups:", f);
        for (size_t i = 0; i < j->groups.n; i++) {
            const struct rsr_group *g = &j->groups.v[i];
            fprintf(f, "%s %s %zu x %d ranks (%s, %.1f%% of the ranks' time, %.0f%% of it waiting)", i ? ";" : "",
                    rsr_group_role_name(g->role), g->count, g->size,
                    g->n_ops ? rsr_coll_op_name(g->ops[0].op) : "no calls", g->time_pct, g->sync_wait_pct);
        }
        putc('\n', f);
    }
    const struct rsr_pipeline *pp = &j->groups.pipe;
    if (pp->stages) {
        fprintf(f, "  pipeline: %d stages", pp->stages);
        if (pp->microbatches > 0)
            fprintf(f, ", %.3g micro-batches per step (the schedule's bubble %.1f%%)", pp->microbatches,
                    pp->schedule_bubble_pct);
        fputs("; bubble by stage:", f);
        for (int32_t k = 0; k < pp->stages; k++)
            fprintf(f, "%s %d: %.1f%% (%.3f ms/step)", k ? "," : "", k, pp->by_stage[k].bubble_pct,
                    pp->by_stage[k].bubble_ms_per_step);
        if (pp->slowest >= 0)
            fprintf(f, "; stage %d is the slowest: the others wait %.1f%% of the step more", pp->slowest,
                    pp->slowest_excess_pct);
        putc('\n', f);
    }
    if (j->storage.n_ckpts) {
        int64_t stall = 0;
        for (size_t i = 0; i < j->storage.n_ckpts; i++)
            stall += j->storage.ckpts[i].gpu_stall_ns;
        fprintf(f, "  checkpoints: %zu, %.1f%% of wall time; GPU idle during them %.3f s\n", j->storage.n_ckpts,
                j->storage.checkpoint_pct, (double)stall / 1e9);
    }
    rsr_compile_summary(f, ins, n);
    if (j->colls.n_stragglers) {
        const struct rsr_straggler *s = &j->colls.stragglers[0];
        fprintf(f, "  slowest rank: %d (the others waited for it %.1f%% of their time beyond an equal rank's "
                   "share; it caused %.0f%% of the waiting in collectives); why: %s",
                s->rank, s->excess_pct, 100 * s->score, rsr_why_kind_name(s->why.kind));
        if (s->why.kind != RSR_WHY_UNKNOWN)
            fprintf(f, " (%.0f%% of that waiting)", s->why.share_pct);
        for (size_t k = 0; k < s->why.n_kernels && k < 3; k++)
            fprintf(f, "%s%s x%.2f", k ? ", " : ": ", s->why.kernels[k].name,
                    s->why.kernels[k].straggler_us / s->why.kernels[k].others_us);
        const struct rsr_comm_time *held[8];
        size_t nh = j->groups.n > 1 ? straggler_groups(j, s, held, 8) : 0;
        for (size_t g = 0; g < nh; g++) {
            const struct rsr_group_comm *gc = rsr_groups_comm(&j->groups, held[g]->comm_id);
            fprintf(f, "%s%s group (ranks", g ? "; its " : "; it holds back its ", rsr_group_role_name(gc->role));
            for (size_t k = 0; k < gc->n_members && k < 16; k++)
                fprintf(f, "%s%d", k ? ", " : " ", gc->members[k]);
            fprintf(f, "%s: %.0f%% of that waiting)", gc->n_members > 16 ? "..." : "",
                    s->caused_us > 0 ? 100 * held[g]->caused_us / s->caused_us : 0);
        }
        fputc('\n', f);
    } else if (j->colls.straggler_parts) {
        fprintf(f, "  slowest rank: none stands out (no rank made the others wait %.0f%% of their time beyond an "
                   "equal rank's share; the most %.1f%%)\n",
                RSR_STRAGGLER_MIN_PCT, j->colls.max_excess_pct);
    } else if (j->colls.matched) {
        fprintf(f, "  slowest rank: too few collectives to tell (%" PRIu64 " seen on several ranks)\n",
                j->colls.matched);
    }
    if (j->align.groups)
        fprintf(f, "  clocks: aligned on %" PRIu64 " collectives; skew corrected %.1f us, residual %.1f us\n",
                j->align.groups, (double)j->align.max_correction_ns / 1e3, (double)j->align.residual_ns / 1e3);
    if (j->n_findings) {
        const char *basis = j->steps.source ? "step time" : "wall time";
        if (j->findings[0].recoverable_pct >= 0)
            fprintf(f, "findings, by what fixing them would give back (fixing the first, \"%s\", up to %.0f%% of "
                       "the %s):\n",
                    j->findings[0].title, j->findings[0].recoverable_pct, basis);
        else
            fputs("findings:\n", f);
        for (size_t i = 0; i < j->n_findings; i++) {
            const struct rsr_finding *x = &j->findings[i];
            if (x->recoverable_pct >= 0)
                fprintf(f, "  [%s] %s (up to %.0f%% of the %s): %s\n", rsr_severity_name(x->severity), x->title,
                        x->recoverable_pct, basis, x->evidence);
            else
                fprintf(f, "  [%s] %s (gain not measured): %s\n", rsr_severity_name(x->severity), x->title,
                        x->evidence);
        }
    } else {
        fputs("findings: none\n", f);
    }
}

/* One line per damaged file, on stderr. */
static void warn_damage(const struct rsr_input *in)
{
    const struct rsr_walk *w = &in->walk;
    if (in->open_failed) {
        fprintf(stderr, "ringside: %s: %s\n", in->file, strerror(in->open_failed));
        return;
    }
    for (uint32_t i = 0; i < w->nproblems && i < RSR_MAX_PROBLEMS; i++) {
        fputs("ringside: ", stderr);
        rsr_problem_print(stderr, in->file, &w->problems[i]);
    }
    if (w->cut_short || w->nproblems)
        fprintf(stderr, "ringside: %s: %s: %" PRIu64 " of %" PRIu64 " bytes could not be read\n", in->file,
                w->cut_short ? "cut short" : "damaged", w->bad_bytes, w->file_size);
    else if (!w->saw_end)
        fprintf(stderr, "ringside: %s: no end mark (the process was killed or is still running); "
                        "every chunk was read\n", in->file);
}

/* Writes path whole or not at all: into a temporary name beside it, then
 * renamed over it, so that a reader (a page reloading under --watch) never
 * sees half a file. */
static int write_file(const char *path, const char *data, size_t len)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "ringside: %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len || rename(tmp, path) != 0) {
        fprintf(stderr, "ringside: writing %s: %s\n", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return 1;
    }
    return 0;
}

/* The processes drawn in full and the stretch of the job they cover. */
struct lanes {
    size_t model[RSR_EXPORT_MAX];
    const char *why[RSR_EXPORT_MAX];
    size_t max;                     /* processes it may hold */
    size_t n;
    int64_t from_ns, to_ns;         /* job time line */
    uint64_t events, kept;          /* GPU ops and syncs of those processes: in all, in the window */
    struct rsr_input ins[RSR_EXPORT_MAX];
    struct rsr_model *models[RSR_EXPORT_MAX];
};

static void lane_add(struct lanes *l, size_t mi, const char *why)
{
    for (size_t k = 0; k < l->n; k++)
        if (l->model[k] == mi)
            return;
    if (l->n < l->max)
        l->model[l->n] = mi, l->why[l->n++] = why;
}

/* Which processes: every one in a small job; else those asked for, the
 * stragglers, the rank that waited least in collectives (the one the others
 * wait for: the slowest) and the one that waited most (the fastest), or by
 * GPU idle without collectives, and the lowest rank. */
static void lanes_pick(struct lanes *l, struct rsr_input *ins, int n, const struct rsr_job *j,
                       const struct rsr_report_opts *o)
{
    memset(l, 0, sizeof *l);
    l->max = RSR_LANES_MAX;
    if (n <= RSR_LANES_MAX && !o->nranks) {
        for (int i = 0; i < n; i++)
            lane_add(l, (size_t)i, "all");
        return;
    }
    for (int k = 0; k < o->nranks; k++)
        for (int i = 0; i < n; i++)
            if (ins[i].rank == o->ranks[k])
                lane_add(l, (size_t)i, "chosen");
    for (size_t k = 0; k < j->colls.n_stragglers; k++)
        lane_add(l, j->colls.stragglers[k].model, "straggler");
    size_t lo = SIZE_MAX, hi = SIZE_MAX, first = SIZE_MAX;
    for (int i = 0; i < n; i++) {
        /* a file that ends early waited less only for lack of time (ends.h) */
        if (ins[i].rank < 0 || !j->gpu[i].span_ns || j->models[i]->early_end_ns)
            continue;
        double v = j->colls.matched && j->colls.wait_us ? j->colls.wait_us[i] : -j->gpu[i].idle_pct;
        double vlo = lo == SIZE_MAX ? 0 : j->colls.matched && j->colls.wait_us ? j->colls.wait_us[lo] : -j->gpu[lo].idle_pct;
        double vhi = hi == SIZE_MAX ? 0 : j->colls.matched && j->colls.wait_us ? j->colls.wait_us[hi] : -j->gpu[hi].idle_pct;
        if (lo == SIZE_MAX || v < vlo)
            lo = (size_t)i;
        if (hi == SIZE_MAX || v > vhi)
            hi = (size_t)i;
        if (first == SIZE_MAX || ins[i].rank < ins[first].rank)
            first = (size_t)i;
    }
    if (lo != SIZE_MAX)
        lane_add(l, lo, "slowest");
    if (hi != SIZE_MAX)
        lane_add(l, hi, "fastest");
    if (first != SIZE_MAX)
        lane_add(l, first, "first");
}

/* Loads the lanes' processes in full over the window [from_ns, to_ns] (set
 * by the caller), cut to a stretch in its middle as long as fits when their
 * events exceed budget (0: no limit). The models are moved onto the job's
 * time line. */
static void lanes_free(struct lanes *l)
{
    for (size_t k = 0; k < l->n; k++)
        rsr_input_free(&l->ins[k]);
}

/* A stretch of len ns in the middle of [from_ns, to_ns). */
static void lanes_centre(struct lanes *l, int64_t len)
{
    int64_t mid = l->from_ns + (l->to_ns - l->from_ns) / 2;
    l->from_ns = mid - len / 2;
    l->to_ns = l->from_ns + len;
}

static void lanes_load(struct lanes *l, struct rsr_input *ins, struct rsr_model *const *models, uint64_t budget)
{
    for (size_t k = 0; k < l->n; k++) {
        const struct rsr_model *m = models[l->model[k]];
        if (m->sum)
            l->events += m->sum->n_ops + m->sum->n_syncs;
    }
    if (budget && l->events > budget && l->to_ns > l->from_ns)
        lanes_centre(l, (int64_t)((double)(l->to_ns - l->from_ns) * (double)budget / (double)l->events));
    /* Events are not spread evenly, and a record that overlaps an end of the
     * stretch is kept whole: shrink the stretch until what it holds fits. */
    for (int tries = 0;; tries++) {
        l->kept = 0;
        for (size_t k = 0; k < l->n; k++) {
            const struct rsr_model *m = models[l->model[k]];
            int64_t off = m->clock_offset_ns;
            rsr_input_load_window(&l->ins[k], ins[l->model[k]].file, l->from_ns - off, l->to_ns - off);
            if (!l->ins[k].model) {
                static struct rsr_model empty;
                l->models[k] = &empty;
                continue;
            }
            rsr_model_shift(l->ins[k].model, off);
            l->models[k] = l->ins[k].model;
            l->kept += l->models[k]->n_ops + l->models[k]->n_syncs;
        }
        if (!budget || l->kept <= budget || tries == 8 || l->to_ns - l->from_ns < 2)
            break;
        lanes_free(l);
        lanes_centre(l, (int64_t)((double)(l->to_ns - l->from_ns) * 0.95 * (double)budget / (double)l->kept));
    }
}

/* report.json's "lanes": which processes, why, the window, what was left
 * out and the command that exports the rest. */
static char *lanes_json(const struct lanes *l, struct rsr_input *ins, const struct rsr_job *j, char **paths,
                        int npaths)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("\"lanes\":{\"ranks\":[", f);
    for (size_t k = 0; k < l->n; k++) {
        fputs(k ? ",{\"rank\":" : "{\"rank\":", f);
        json_int_or_null(f, ins[l->model[k]].rank);
        fprintf(f, ",\"pid\":%d,\"why\":\"%s\"}", ins[l->model[k]].pid, l->why[k]);
    }
    fputs("]", f);
    num_key(f, "from_s", (double)(l->from_ns - j->storage.job_start_ns) / 1e9);
    num_key(f, "to_s", (double)(l->to_ns - j->storage.job_start_ns) / 1e9);
    fprintf(f, ",\"events_in_job\":%" PRIu64 ",\"events_in_window\":%" PRIu64, l->events, l->kept);
    int whole = l->from_ns <= j->storage.job_start_ns && l->to_ns >= j->storage.job_end_ns;
    fprintf(f, ",\"whole_job\":%s,\"perfetto\":\"trace.json\",\"export\":", whole ? "true" : "false");
    char cmd[1024];
    int at = snprintf(cmd, sizeof cmd, "ringside export perfetto");
    for (int i = 0; i < npaths && at < (int)sizeof cmd; i++)
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %s", paths[i]);
    if (at < (int)sizeof cmd)
        snprintf(cmd + at, sizeof cmd - (size_t)at, " --ranks RANKS [--from S --to S] -o FILE.json");
    rsr_json_str(f, cmd);
    putc('}', f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Writes OUT/name through rsr_perfetto_write; 0 or 1. */
static int write_output(const char *dir, const char *name, struct rsr_model *const *models, size_t n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) {
        fprintf(stderr, "ringside: %s: %s\n", p, strerror(errno));
        return 1;
    }
    int rc = rsr_perfetto_write(f, models, n);
    if (fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "ringside: writing %s: %s\n", p, strerror(errno));
        rc = 1;
    } else if (rc != 0) {
        fprintf(stderr, "ringside: %s could not be written\n", p);
    }
    return rc ? 1 : 0;
}

/* A job's files, streamed into summaries, in the order rsr_inputs_sort gives;
 * models[i] is ins[i]'s (an empty one where loading failed). */
struct loaded {
    char **files;
    int n;
    struct rsr_input *ins;
    struct rsr_model **models;
    int readable;               /* files with a chunk that could be read */
    struct rsr_flame *fls;      /* the flame trees by kind, when asked for */
    double peak_rss_mb;         /* the largest of any reporter process's */
    const char *more;           /* more report.json keys (--watch's), or NULL */
};

/* Which process reads which file: the largest files first, each to the
 * process with the fewest bytes so far. */
struct sized {
    off_t size;
    int i;
};

/* Largest first; equal sizes in file order, so every run shares alike. */
static int cmp_sized(const void *pa, const void *pb)
{
    const struct sized *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static void share_out(char **files, int n, int nprocs, int *owner)
{
    struct sized *v = calloc((size_t)n, sizeof *v);
    off_t *load = calloc((size_t)nprocs, sizeof *load);
    if (!v || !load) {
        for (int i = 0; i < n; i++)
            owner[i] = i % nprocs;
        free(v), free(load);
        return;
    }
    for (int i = 0; i < n; i++) {
        struct stat st;
        v[i] = (struct sized){ stat(files[i], &st) == 0 ? st.st_size : 0, i };
    }
    qsort(v, (size_t)n, sizeof *v, cmp_sized);
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int p = 1; p < nprocs; p++)
            if (load[p] < load[best])
                best = p;
        owner[v[i].i] = best;
        load[best] += v[i].size + 1;
    }
    free(v);
    free(load);
}

/* Streams this process's share of the files (all of them when it is the
 * only one) into ins[] at their places, and its flame trees into J->fls.
 * Returns 0, or -1 when out of memory. */
static int load_share(struct loaded *J, const struct rsr_mpi *mp, const int *owner, const struct rsr_report_opts *o)
{
    int mine = 0;
    for (int i = 0; i < J->n; i++)
        mine += owner[i] == mp->rank;
    char **files = calloc((size_t)mine + 1, sizeof *files);
    struct rsr_input *ins = calloc((size_t)mine + 1, sizeof *ins);
    if (!files || !ins) {
        free(files), free(ins);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < J->n; i++)
        if (owner[i] == mp->rank)
            files[k++] = J->files[i];
    rsr_inputs_load(ins, files, mine, mp->threads, mp->size == 1 && isatty(STDERR_FILENO) && J->n > 1, 1);
    k = 0;
    for (int i = 0; i < J->n; i++)
        if (owner[i] == mp->rank)
            J->ins[i] = ins[k++];
    if (J->fls) {
        struct rsr_proc_waits *waits = calloc((size_t)mine + 1, sizeof *waits);
        if (!waits) {
            free(files), free(ins);
            return -1;
        }
        rsr_flame_load_all(J->fls, files, mine, o->quiet, o->lines, waits);
        k = 0;
        for (int i = 0; i < J->n; i++)
            if (owner[i] == mp->rank) {
                if (J->ins[i].model)
                    J->ins[i].model->waits = waits[k];
                k++;
            }
        free(waits);
    }
    free(files);
    free(ins);
    return 0;
}

/* What a reporter process sends the first: one message per input it
 * loaded (its index, then the input), so that neither end holds more than
 * one input's packed summary at a time, then a last one (LAST, its peak
 * memory, its flame trees). */
#define LAST UINT64_MAX

/* The other processes' inputs and flame trees into J (on the first
 * process), each summary's tuples spilled as they would be had it loaded
 * the file itself. Returns 0, or 1 with a message. */
static int gather_shares(struct loaded *J, const struct rsr_mpi *mp, const int *owner)
{
    struct rsr_pack b = { 0 };
    int rc = 0;
    for (int left = mp->size - 1; left > 0;) {
        int from = -1;
        if (rsr_mpi_recv(mp, &b, &from) != 0) {
            fprintf(stderr, "ringside: out of memory, or MPI failed, receiving a reporter process's summaries\n");
            rsr_pack_free(&b);
            return 1;
        }
        struct rsr_unpack u = { b.p, b.p + b.n, 0 };
        uint64_t i = rsr_unpack_u64(&u);
        if (i == LAST) {
            double rss;
            uint64_t bits = rsr_unpack_u64(&u), nfl = rsr_unpack_u64(&u);
            memcpy(&rss, &bits, sizeof rss);
            if (rss > J->peak_rss_mb)
                J->peak_rss_mb = rss;
            for (uint64_t k = 0; k < nfl && J->fls && !u.failed; k++)
                if (rsr_unpack_flame(&u, &J->fls[k]) != 0)
                    u.failed = 1;
            left--;
        } else if (i >= (uint64_t)J->n || owner[i] != from || J->ins[i].file ||
                   rsr_unpack_input(&u, &J->ins[i]) != 0) {
            u.failed = 1;
        } else if (J->ins[i].model && J->ins[i].model->sum) {
            rsr_summary_spill(J->ins[i].model->sum);
        }
        if (u.failed || u.p != u.end) {
            fprintf(stderr, "ringside: reporter process %d sent summaries that do not read back "
                            "(out of memory, or a different ringside build)\n", from);
            rc = 1;
            break;
        }
    }
    rsr_pack_free(&b);
    for (int i = 0; !rc && i < J->n; i++)
        if (!J->ins[i].file) {
            fprintf(stderr, "ringside: reporter process %d did not send %s\n", owner[i], J->files[i]);
            rc = 1;
        }
    return rc;
}

/* On a process other than the first: sends what it loaded. 0, or 1 with a
 * message. */
static int send_share(const struct loaded *J, const struct rsr_mpi *mp, const int *owner)
{
    struct rsr_pack b = { 0 };
    int rc = 0;
    for (int i = 0; i < J->n && !rc; i++) {
        if (owner[i] != mp->rank)
            continue;
        b.n = 0;
        rsr_pack_u64(&b, (uint64_t)i);
        rsr_pack_input(&b, &J->ins[i]);
        if (b.failed) {
            fprintf(stderr, "ringside: reporter process %d: out of memory, or the spill file could not be "
                            "read, packing the summary of %s\n", mp->rank, J->files[i]);
            rc = 1;
        } else if (rsr_mpi_send(mp, &b) != 0) {
            fprintf(stderr, "ringside: reporter process %d: MPI failed sending its summaries\n", mp->rank);
            rc = 1;
        }
    }
    /* The last message goes even after a failure: the first process then
     * says which file it lacks instead of waiting for ever. */
    double rss = rsr_peak_rss_mb();
    uint64_t bits;
    memcpy(&bits, &rss, sizeof bits);
    b.n = 0;
    b.failed = 0;
    rsr_pack_u64(&b, LAST);
    rsr_pack_u64(&b, bits);
    size_t head = b.n;
    rsr_pack_u64(&b, J->fls ? RSR_FLAME_TREES : 0);
    for (int k = 0; J->fls && k < RSR_FLAME_TREES; k++)
        rsr_pack_flame(&b, &J->fls[k]);
    if (b.failed) {
        fprintf(stderr, "ringside: reporter process %d: out of memory packing its flame graphs\n", mp->rank);
        b.n = head < b.n ? head : b.n;
        b.failed = 0;
        rsr_pack_u64(&b, 0);
        rc = 1;
    }
    if (rsr_mpi_send(mp, &b) != 0) {
        fprintf(stderr, "ringside: reporter process %d: MPI failed sending its summaries\n", mp->rank);
        rc = 1;
    }
    rsr_pack_free(&b);
    return rc;
}

/* Finds and streams the trace files under paths (the newest run of a folder
 * of job folders, runs.h), saying on stderr what was damaged or lost; with
 * flames set, loads the flame trees too. Over MPI, every process reads its
 * share and the first gathers the rest. Returns 0 (the first process: J
 * holds the job), 1 with a message (no file, out of memory, more than one
 * run), or -1 on the other processes once their share is sent (*rc
 * then holds their exit status). */
static int job_load(struct loaded *J, char **paths, int npaths, const struct rsr_mpi *mp, int flames,
                    const struct rsr_report_opts *o, int *rc)
{
    static struct rsr_model empty;
    memset(J, 0, sizeof *J);
    if (mp->rank == 0) {
        J->n = rsr_find_traces(paths, npaths, &J->files);
        if (J->n > 0)
            rsr_runs_newest(J->files, &J->n);
        if (J->n == 0)
            fprintf(stderr, "ringside: no trace files (*.trace.lz4) in %s%s\n", paths[0],
                    npaths > 1 ? " or the other folders given" : "");
    }
    if (rsr_mpi_share_files(mp, &J->files, &J->n) != 0) {
        fprintf(stderr, "ringside: out of memory\n");
        J->n = 0;
        return 1;
    }
    if (J->n <= 0) {
        J->n = 0;
        return 1;
    }
    J->ins = calloc((size_t)J->n, sizeof *J->ins);
    J->models = calloc((size_t)J->n, sizeof *J->models);
    int *owner = calloc((size_t)J->n, sizeof *owner);
    if (flames)
        J->fls = calloc(RSR_FLAME_TREES, sizeof *J->fls);
    if (!J->ins || !J->models || !owner || (flames && !J->fls)) {
        fprintf(stderr, "ringside: out of memory\n");
        free(owner);
        return 1;
    }
    if (mp->rank == 0)
        share_out(J->files, J->n, mp->size, owner);
    rsr_mpi_share_ints(mp, owner, J->n);
    if (load_share(J, mp, owner, o) != 0) {
        fprintf(stderr, "ringside: out of memory\n");
        free(owner);
        return 1;
    }
    if (mp->rank != 0) {
        *rc = send_share(J, mp, owner);
        free(owner);
        return -1;
    }
    J->peak_rss_mb = rsr_peak_rss_mb();
    int grc = mp->size > 1 ? gather_shares(J, mp, owner) : 0;
    free(owner);
    if (grc || rsr_runs_check(J->ins, J->n))
        return 1;
    for (int i = 0; i < J->n; i++) {
        const struct rsr_input *in = &J->ins[i];
        J->readable += !in->open_failed && in->walk.nchunks > 0;
        warn_damage(in);
        if (!in->model || in->model_incomplete)
            fprintf(stderr, "ringside: %s: out of memory: the report lacks part of its events\n", in->file);
    }
    rsr_inputs_sort(J->ins, J->n);
    rsr_model_init(&empty);
    for (int i = 0; i < J->n; i++)
        J->models[i] = J->ins[i].model ? J->ins[i].model : &empty;
    return 0;
}

static void job_unload(struct loaded *J)
{
    for (int i = 0; i < J->n; i++) {
        if (J->ins)
            rsr_input_free(&J->ins[i]);
        free(J->files[i]);
    }
    for (int k = 0; J->fls && k < RSR_FLAME_TREES; k++)
        rsr_flame_free(&J->fls[k]);
    free(J->fls);
    free(J->models);
    free(J->ins);
    free(J->files);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* report.json's wait_graph_set_apart: the threads the wait flame graph
 * leaves out (flame.h), absent when none. */
static void apart_json(FILE *f, const struct rsr_flame *fl)
{
    if (!fl || !fl->apart_threads)
        return;
    fprintf(f, ", \"wait_graph_set_apart\": {\"threads\": %u", fl->apart_threads);
    num_key(f, "wait_s", (double)fl->apart_ns / 1e9);
    fputs(",\"by_name\":[", f);
    for (uint32_t i = 0; i < fl->napart; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        rsr_json_str(f, fl->apart[i].name);
        fprintf(f, ",\"threads\":%u", fl->apart[i].threads);
        num_key(f, "wait_s", (double)fl->apart[i].ns / 1e9);
        putc('}', f);
    }
    fputs("]}", f);
}

/* report.json's "reporter" key: how the report was made. */
static char *reporter_json(const struct loaded *J, const struct rsr_mpi *mp, double t0)
{
    char *s = NULL;
    double rss = rsr_peak_rss_mb();
    if (rss < J->peak_rss_mb)
        rss = J->peak_rss_mb;
    char *sym = NULL;
    size_t nsym = 0;
    FILE *mem = open_memstream(&sym, &nsym);
    if (!mem)
        return NULL;
    rsr_unnamed_json(mem, J->fls);
    apart_json(mem, J->fls ? &J->fls[RSF_SAMPLE_WAIT] : NULL);
    if (fclose(mem) != 0) {
        free(sym);
        return NULL;
    }
    if (asprintf(&s, "%s, \"reporter\": {\"version\": \"%s\", \"mpi_processes\": %d, \"peak_rss_mb\": %.1f, "
                     "\"wall_s\": %.3f}", sym, RINGSIDE_VERSION, mp->size, rss, now_s() - t0) < 0)
        s = NULL;
    free(sym);
    return s;
}

/* report.json's text: the analyses' figures, then extra (the lanes; may
 * be NULL) and the reporter key as of now. NULL when out of memory. */
static char *render_json(struct rsr_input *ins, int n, const struct rsr_job *job, const char *extra,
                         const struct loaded *J, const struct rsr_mpi *mp, double t0, size_t *len)
{
    char *how = reporter_json(J, mp, t0), *keys = NULL, *json = NULL;
    if (!how || asprintf(&keys, "%s%s%s%s%s", extra ? extra : "", extra ? ", " : "", J->more ? J->more : "",
                         J->more ? ", " : "", how) < 0) {
        free(how);
        return NULL;
    }
    free(how);
    FILE *mem = open_memstream(&json, len);
    if (!mem) {
        free(keys);
        return NULL;
    }
    rsr_report_json(mem, ins, n, job, keys);
    free(keys);
    if (fclose(mem) != 0) {
        free(json);
        return NULL;
    }
    return json;
}

/* The flame graphs of the slowest steps (step_pick.h) into OUT, each file
 * read once more for its samples in those steps; what was written is
 * marked in the steps' slow list for report.json and the page. Returns 0,
 * or -1 when a file could not be written (said). */
static int slow_graphs(const struct loaded *J, struct rsr_job *job, const struct rsr_slow_spans *slow,
                       const struct rsr_report_opts *o)
{
    if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "ringside: %s: %s\n", o->out_dir, strerror(errno));
        return -1;
    }
    char **files = rsr_xcalloc((size_t)J->n + 1, sizeof *files);
    int64_t *clock = rsr_xcalloc((size_t)J->n + 1, sizeof *clock);
    for (int i = 0; i < J->n; i++)
        files[i] = J->ins[i].file, clock[i] = J->models[i]->clock_offset_ns;
    struct rsr_flame *fls = rsr_xcalloc((size_t)slow->n * RSF_SAMPLE_NKINDS, sizeof *fls);
    rsr_flame_load_spans(fls, slow->n, slow->spans, clock, files, J->n, 1, o->lines);
    int rc = 0;
    for (int m = 0; m < slow->n; m++) {
        struct rsr_step_slow *x = &job->steps.slow[slow->slow[m]];
        char about[96];
        snprintf(about, sizeof about, " (%.4g ms, %.2gx its phase's median)", x->dur_ms, x->x_median);
        unsigned w = rsr_flame_write_step_svgs(fls + (size_t)m * RSF_SAMPLE_NKINDS, o->out_dir, x->index, about);
        if (w & RSR_FLAME_WRITE_FAILED)
            rc = -1;
        x->graphs = w & ~RSR_FLAME_WRITE_FAILED;
        for (int k = 0; k < RSF_SAMPLE_NKINDS; k++)
            rsr_flame_free(&fls[(size_t)m * RSF_SAMPLE_NKINDS + k]);
    }
    free(fls);
    free(files);
    free(clock);
    return rc;
}

/* The report of the loaded job J into o's outputs: report.json, the page,
 * the flame graphs, trace.json, --json, the text summary. Returns the exit
 * status. */
static int report_write(const struct loaded *J, char **paths, int npaths, const struct rsr_report_opts *o,
                        const struct rsr_mpi *mp, double t0)
{
    struct rsr_input *ins = J->ins;
    struct rsr_model **models = J->models;
    int n = J->n, readable = J->readable;
    struct rsr_job job;
    int tty = isatty(STDERR_FILENO);
    if (tty)
        fprintf(stderr, "ringside: analysing %d process%s", n, n == 1 ? "" : "es");
    struct rsr_slow_spans slow = { 0 };
    int arc = rsr_job_analyse_visit(models, (size_t)n, &job, rsr_slow_spans_visit, &slow);
    if (tty)
        fputs("\r\033[K", stderr);
    if (arc != 0)
        fprintf(stderr, "ringside: out of memory: some analyses are missing from the report\n");
    if (o->out_dir && J->fls && slow.n && !o->no_step_graphs && slow_graphs(J, &job, &slow, o) != 0) {
        rsr_job_free(&job);
        return 1;
    }
    struct lanes *lanes = calloc(1, sizeof *lanes);
    char *extra = NULL;
    if (lanes && o->out_dir) {
        lanes_pick(lanes, ins, n, &job, o);
        lanes->from_ns = job.storage.job_start_ns;
        lanes->to_ns = job.storage.job_end_ns;
        lanes_load(lanes, ins, models, RSR_LANES_EVENTS);
        extra = lanes_json(lanes, ins, &job, paths, npaths);
    }
    size_t len = 0;
    char *json = lanes ? render_json(ins, n, &job, extra, J, mp, t0, &len) : NULL;
    if (!json) {
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }

    int rc = readable ? 0 : 1;
    if (!readable)
        fprintf(stderr, "ringside: none of the %d trace files could be read\n", n);
    if (!rc && o->out_dir) {
        if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "ringside: %s: %s\n", o->out_dir, strerror(errno));
            rc = 1;
        } else {
            char p[4096];
            snprintf(p, sizeof p, "%s/report.json", o->out_dir);
            rc = write_file(p, json, len);
            /* The flame graphs first: index.html inlines OUT/flame-*.svg. */
            if (!rc && rsr_flame_write_svgs(J->fls, o->out_dir) < 0)
                rc = 1;
            const char *bad;
            if (!rc && rsr_html_write_dir(o->out_dir, lanes->models, lanes->n, &bad) != 0)
                rc = (fprintf(stderr, "ringside: %s: %s\n", bad, strerror(errno)), 1);
            if (!rc)
                rc = write_output(o->out_dir, "trace.json", lanes->models, lanes->n);
            /* Once more, with the peak memory and wall time of all the
             * outputs (index.html has read it by now). */
            char *last = rc ? NULL : render_json(ins, n, &job, extra, J, mp, t0, &len);
            if (last) {
                free(json);
                json = last;
                rc = write_file(p, json, len);
            }
            if (!rc && o->prom_dir && rsr_prom_write(p, o->prom_dir) != 0)
                rc = 1;
        }
    }
    free(extra);
    if (!rc && o->json_path) {
        if (strcmp(o->json_path, "-") == 0)
            rc = fwrite(json, 1, len, stdout) == len ? 0 : 1;
        else
            rc = write_file(o->json_path, json, len);
    }
    if (!rc && !o->quiet) {
        summary(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout, ins, n, &job);
        rsr_unnamed_summary(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout, J->fls, RSF_SAMPLE_NKINDS);
    }
    /* What was written is kept, but a script must not take it for whole. */
    int lacking = arc != 0;
    for (int i = 0; i < n; i++)
        lacking += !ins[i].model || ins[i].model_incomplete;
    if (!rc && lacking) {
        fprintf(stderr, "ringside: the report is incomplete: memory ran out (%s); exit status 1\n",
                arc ? "some analyses are missing" : "some processes lack part of their events");
        rc = 1;
    }
    rsr_job_free(&job);
    lanes_free(lanes);
    free(lanes);
    free(json);
    return rc;
}

static int report_run(char **paths, int npaths, const struct rsr_report_opts *o, const struct rsr_mpi *mp,
                      double t0)
{
    struct loaded J;
    int lrc = 0;
    rsr_inputs_bound(o->memory_mb);
    /* The samples always: report.json's off-CPU time and findings read
     * them (waits.h), not only the flame graphs. */
    switch (job_load(&J, paths, npaths, mp, 1, o, &lrc)) {
    case 0:
        break;
    case -1:
        job_unload(&J);
        return lrc;
    default:
        job_unload(&J);
        return 1;
    }
    int rc = report_write(&J, paths, npaths, o, mp, t0);
    job_unload(&J);
    return rc;
}

/* ---- report --watch ---- */

static volatile sig_atomic_t watch_stop;

static void on_stop(int sig)
{
    (void)sig;
    watch_stop = 1;
}

/* Ends w's inputs (moved into a job: w keeps none) and writes their
 * report with the watch key more. Run in a forked copy while the job
 * runs, and in place at its end. Returns the exit status. */
static int watch_write(struct rsr_watch *w, char **paths, int npaths, const struct rsr_report_opts *o,
                       const struct rsr_mpi *mp, double t0, const char *more)
{
    static struct rsr_model empty;
    struct loaded J = { .n = w->n, .more = more };
    int n = w->n;
    J.files = calloc((size_t)n + 1, sizeof *J.files);
    J.ins = calloc((size_t)n + 1, sizeof *J.ins);
    J.models = calloc((size_t)n + 1, sizeof *J.models);
    J.fls = calloc(RSR_FLAME_TREES, sizeof *J.fls);
    struct rsr_proc_waits *waits = calloc((size_t)n + 1, sizeof *waits);
    struct rsr_flame_feed **feeds = calloc((size_t)n + 1, sizeof *feeds);
    if (!J.files || !J.ins || !J.models || !J.fls || !waits || !feeds) {
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i++)
        feeds[i] = w->lv[i].feed;
    rsr_flame_load_feeds(J.fls, feeds, n, o->quiet, o->lines, waits);
    for (int i = 0; i < n; i++) {
        J.ins[i] = w->lv[i].in;
        memset(&w->lv[i].in, 0, sizeof w->lv[i].in);
        rsr_input_end(&J.ins[i]);
        J.files[i] = strdup(J.ins[i].file);
        if (J.ins[i].model)
            J.ins[i].model->waits = waits[i];
        J.readable += !J.ins[i].open_failed && J.ins[i].walk.nchunks > 0;
        if (!o->quiet)
            warn_damage(&J.ins[i]);
    }
    w->n = 0;
    free(waits);
    free(feeds);
    rsr_inputs_sort(J.ins, n);
    rsr_model_init(&empty);
    for (int i = 0; i < n; i++)
        J.models[i] = J.ins[i].model ? J.ins[i].model : &empty;
    J.peak_rss_mb = rsr_peak_rss_mb();
    int rc = report_write(&J, paths, npaths, o, mp, t0);
    job_unload(&J);
    return rc;
}

/* report.json's "watch" key: how this report was made while the job ran. */
static char *watch_json(const struct rsr_watch *w, const struct rsr_report_opts *o, int pass, int final)
{
    char *s = NULL;
    if (asprintf(&s, "\"watch\": {\"every_s\": %g, \"pass\": %d, \"final\": %s, \"files\": %d, "
                     "\"ended\": %d, \"read_bytes\": %llu}",
                 o->watch_s, pass, final ? "true" : "false", w->n, w->ended,
                 (unsigned long long)w->read_bytes) < 0)
        return NULL;
    return s;
}

/* Sleeps until t, or until a signal stops the watch. */
static void sleep_until(double t)
{
    for (double now = now_s(); now < t && !watch_stop; now = now_s()) {
        double d = t - now;
        struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

/* Reads the job's files as they grow and rewrites the report every
 * o->watch_s seconds (each time in a forked copy: the summaries go on
 * from where they are, never from the files' start); when every file has
 * its end mark and nothing grew for one period, or on SIGINT or SIGTERM,
 * writes the last report from everything and returns its status. */
static int watch_run(char **paths, int npaths, const struct rsr_report_opts *o, const struct rsr_mpi *mp, double t0)
{
    if (mp->size > 1) {
        fprintf(stderr, "ringside: report --watch runs as one process, not under MPI\n");
        return 2;
    }
    struct sigaction sa = { .sa_handler = on_stop };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct rsr_report_opts each = *o;
    each.quiet = 1;             /* the text summary once, at the end */
    each.no_step_graphs = 1;    /* and the slow steps' graphs */
    each.json_path = NULL;
    struct rsr_watch w = { .paths = paths, .npaths = npaths, .quiet = 1, .lines = o->lines };
    int pass = 0, waiting = 0, rc = 0;
    for (;;) {
        double next = now_s() + o->watch_s;
        int news = rsr_watch_poll(&w, 0);
        if (news < 0) {
            rc = 1;
            break;
        }
        if (watch_stop || (pass && !news && w.n && w.ended == w.n))
            break;
        if (!w.n && !waiting++ && !o->quiet)
            fprintf(stderr, "ringside: watching %s for trace files\n", paths[0]);
        if (news && w.n) {
            char *more = watch_json(&w, o, ++pass, 0);
            fflush(NULL);
            pid_t pid = more ? fork() : -1;
            if (pid == 0) {
                signal(SIGINT, SIG_DFL);
                signal(SIGTERM, SIG_DFL);
                _exit(watch_write(&w, paths, npaths, &each, mp, t0, more));
            }
            int st = 0;
            if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fprintf(stderr, "ringside: report %d of the running job failed%s\n", pass,
                        pid < 0 ? " (no process could be started for it)" : "");
            else if (!o->quiet) {
                char rb[32];
                rsr_fmt_bytes(rb, sizeof rb, (double)w.read_bytes);
                fprintf(stderr, "ringside: report %d written to %s: %d trace file%s (%d ended), %s read\n", pass,
                        o->out_dir, w.n, w.n == 1 ? "" : "s", w.ended, rb);
            }
            free(more);
        }
        sleep_until(next);
        if (watch_stop)
            break;
    }
    if (!rc) {
        /* The rest of every file, a frame left unfinished now cut short. */
        if (rsr_watch_poll(&w, 1) < 0)
            rc = 1;
        char *more = watch_json(&w, o, ++pass, 1);
        if (!w.n) {
            fprintf(stderr, "ringside: no trace files (*.trace.lz4) in %s%s\n", paths[0],
                    npaths > 1 ? " or the other folders given" : "");
            rc = 1;
        } else if (!rc) {
            rc = more ? watch_write(&w, paths, npaths, o, mp, t0, more) : 1;
        }
        free(more);
    }
    rsr_watch_free(&w);
    return rc;
}

static int export_run(char **paths, int npaths, const struct rsr_export_opts *o, const struct rsr_mpi *mp)
{
    struct loaded J;
    struct rsr_report_opts ro = { .quiet = o->quiet };
    struct lanes *l = calloc(1, sizeof *l);
    int lrc = 0, jrc = l ? job_load(&J, paths, npaths, mp, 0, &ro, &lrc) : 1;
    if (jrc != 0) {
        if (!l)
            fprintf(stderr, "ringside: out of memory\n");
        else
            job_unload(&J);
        free(l);
        return jrc < 0 ? lrc : 1;
    }
    struct rsr_input *ins = J.ins;
    struct rsr_model **models = J.models;
    int n = J.n;
    if (rsr_pftrace_wanted(o->out)) {
        int prc = rsr_pftrace_export(ins, models, n, o, mp->threads);
        free(l);
        job_unload(&J);
        return prc;
    }
    struct rsr_job job;
    int rc = 0;
    if (rsr_job_analyse(models, (size_t)n, &job) != 0)
        fprintf(stderr, "ringside: out of memory: the clocks may be aligned less well\n");
    l->max = RSR_EXPORT_MAX;
    for (int i = 0; i < n; i++) {
        int want = !o->nranks;
        for (int k = 0; k < o->nranks; k++)
            want |= ins[i].rank == o->ranks[k];
        if (want && l->n == l->max) {
            fprintf(stderr, "ringside: export: more than %d processes: choose ranks with --ranks\n", RSR_EXPORT_MAX);
            rc = 2;
            break;
        }
        if (want)
            lane_add(l, (size_t)i, "chosen");
    }
    if (!rc && !l->n) {
        fprintf(stderr, "ringside: export: none of the ranks asked for is in %s\n", paths[0]);
        rc = 1;
    }
    l->from_ns = job.storage.job_start_ns + (o->has_from ? (int64_t)(o->from_s * 1e9) : 0);
    l->to_ns = o->has_to ? job.storage.job_start_ns + (int64_t)(o->to_s * 1e9) : job.storage.job_end_ns;
    if (!rc) {
        lanes_load(l, ins, models, 0);
        FILE *f = fopen(o->out, "w");
        if (!f) {
            fprintf(stderr, "ringside: %s: %s\n", o->out, strerror(errno));
            rc = 1;
        } else {
            int wrc = rsr_perfetto_write(f, l->models, l->n);
            if (fclose(f) != 0 || wrc != 0) {
                fprintf(stderr, "ringside: writing %s: %s\n", o->out, strerror(errno ? errno : EIO));
                rc = 1;
            } else if (!o->quiet) {
                printf("ringside: %s: %zu process%s, %" PRIu64 " GPU ops and syncs, %.3f s to %.3f s of the job\n",
                       o->out, l->n, l->n == 1 ? "" : "es", l->kept,
                       (double)(l->from_ns - job.storage.job_start_ns) / 1e9,
                       (double)(l->to_ns - job.storage.job_start_ns) / 1e9);
            }
        }
    }
    rsr_job_free(&job);
    lanes_free(l);
    free(l);
    job_unload(&J);
    return rc;
}

int rsr_report_main(char **paths, int npaths, const struct rsr_report_opts *o)
{
    double t0 = now_s();
    struct rsr_mpi mp;
    if (rsr_mpi_start(&mp) != 0) {
        rsr_mpi_end(&mp);
        return 1;
    }
    int rc = o->watch_s > 0 ? watch_run(paths, npaths, o, &mp, t0) : report_run(paths, npaths, o, &mp, t0);
    rsr_mpi_end(&mp);
    return rc;
}

int rsr_export_main(char **paths, int npaths, const struct rsr_export_opts *o)
{
    struct rsr_mpi mp;
    if (rsr_mpi_start(&mp) != 0) {
        rsr_mpi_end(&mp);
        return 1;
    }
    int rc = export_run(paths, npaths, o, &mp);
    rsr_mpi_end(&mp);
    return rc;
}
