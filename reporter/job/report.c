/* The report command's driver: finds the traces (discover.c), loads them in
 * parallel (shared out under MPI), writes report.json (report_json.c), the
 * page and the text summary, and runs --watch. Damaged files are reported
 * (file, offset, bytes that could not be read) and everything readable in
 * them is still used. */
#include "reporter/job/report.h"
#include "reporter/load/memory.h"
#include "reporter/out/report_json.h"
#include "reporter/mpi/share.h"
#include "reporter/out/unnamed.h"
#include "reporter/out/compile_json.h"
#include "reporter/load/flame.h"
#include "reporter/out/flame_svg.h"
#include "reporter/analyse/analyse.h"
#include "reporter/analyse/step_pick.h"
#include "reporter/load/summary.h"
#include "reporter/out/html.h"
#include "reporter/out/perfetto.h"
#include "reporter/out/prom.h"
#include "reporter/out/pftrace.h"
#include "reporter/base/intern.h"
#include "reporter/base/json.h"
#include "reporter/mpi/mpi.h"
#include "reporter/load/watch.h"
#include "reporter/base/units.h"
#include "reporter/load/process.h"
#include "formats/rsf_error.h"

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

/* The steps' critical path (critpath.h): the time per step by cause,
 * largest first. */
static void critpath_text(FILE *f, const struct rsr_critpath *cp)
{
    if (!cp->have || cp->per_step_ms <= 0)
        return;
    int order[RSR_CP_NPARTS], n = 0;
    for (int k = 0; k < RSR_CP_NPARTS; k++)
        if (cp->part_ms[k] >= 0.0005 * cp->per_step_ms)
            order[n++] = k;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && cp->part_ms[order[b]] > cp->part_ms[order[b - 1]]; b--) {
            int t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    fputs("  critical path per step:", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s %s %.2f ms (%.0f%%)", i ? "," : "", rsr_cp_part_text(order[i]), cp->part_ms[order[i]],
                100 * cp->part_ms[order[i]] / cp->per_step_ms);
    fputc('\n', f);
}

/* A stuck job's verdict (hang.h), first: what stopped it, and where each
 * rank it waits for was when its file ended. */
static void hang_lines(FILE *f, const struct rsr_hang *h)
{
    if (h->kind == RSR_HANG_NONE)
        return;
    char text[320];
    rsr_hang_text(h, text, sizeof text);
    fprintf(f, "  STUCK (%s): %s\n", rsr_hang_kind_name(h->kind), text);
    size_t shown = 0;
    for (size_t i = 0; i < h->n_ranks && shown < 8; i++) {
        const struct rsr_hang_rank *r = &h->ranks[i];
        if (r->in_flight && !r->odd && !r->fatal_sig)
            continue;
        char done[24], entered[24];
        snprintf(done, sizeof done, r->last_seq_done >= 0 ? "#%lld" : "none", (long long)r->last_seq_done);
        snprintf(entered, sizeof entered, r->last_seq_entered >= 0 ? "#%lld" : "none", (long long)r->last_seq_entered);
        if (h->seq_known)
            fprintf(f, "    rank %d: last finished %s, last entered %s", r->rank, done, entered);
        else
            fprintf(f, "    rank %d", r->rank);
        char sig[32];
        if (r->fatal_sig)
            fprintf(f, "; died of %s", rsr_signal_name(r->fatal_sig, sig, sizeof sig));
        if (r->ended_before_s >= 0.1)
            fprintf(f, "; its file ended %.1f s before the others'%s", r->ended_before_s,
                    r->unclosed ? " (no end mark)" : "");
        if (r->where && r->where[0])
            fprintf(f, "; last in %s", r->where);
        if (r->where_wait_ns)
            fprintf(f, " (%.1f s)", (double)r->where_wait_ns / 1e9);
        fputc('\n', f);
        shown++;
    }
    if (h->absent)
        fprintf(f, "    %zu of the communicator's %d ranks have no trace file\n", h->absent, h->group_size);
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
    hang_lines(f, &j->hang);
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
    if (j->memory.peak_model >= 0) {
        /* the figures report.json's "memory" gives */
        const struct rsr_model *m = j->models[j->memory.peak_model];
        const struct rsr_mem_proc *p = &j->memory.procs[j->memory.peak_model];
        char peak[32], total[32] = "", who[48], at[40] = "";
        rsr_fmt_bytes(peak, sizeof peak, (double)m->mem->peak);
        if (m->mem->total) {
            rsr_fmt_bytes(total, sizeof total, (double)m->mem->total);
            snprintf(total + strlen(total), sizeof total - strlen(total), " (%.0f%%)",
                     100.0 * (double)m->mem->peak / (double)m->mem->total);
        }
        if (m->rank >= 0)
            snprintf(who, sizeof who, "rank %d", m->rank);
        else
            snprintf(who, sizeof who, "pid %lld", (long long)m->pid);
        if (p->peak_step >= 0)
            snprintf(at, sizeof at, " at step %ld", p->peak_step);
        fprintf(f, "  GPU memory: peak %s%s%s held by the program, %s%s\n", peak, total[0] ? " of " : "", total,
                who, at);
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
        size_t nh = j->groups.n > 1 ? rsr_straggler_groups(j, s, held, 8) : 0;
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
    critpath_text(f, &j->path);
    if (j->n_findings) {
        const char *basis = j->steps.source ? "step time" : "wall time";
        char head[400];
        if (rsr_findings_headline(j, head, sizeof head))
            fprintf(f, "findings, by what removing their cause gives back (%s):\n", head);
        else
            fputs("findings:\n", f);
        for (size_t i = 0; i < j->n_findings; i++) {
            const struct rsr_finding *x = &j->findings[i];
            if (x->recoverable_pct >= 0 && x->cause)
                fprintf(f, "  [%s] %s (gives back %.0f%% of the %s): %s\n", rsr_severity_name(x->severity),
                        x->title, x->recoverable_pct, basis, x->evidence);
            else if (x->recoverable_pct >= 0)
                fprintf(f, "  [%s] %s (up to %.0f%% of the %s): %s\n", rsr_severity_name(x->severity), x->title,
                        x->recoverable_pct, basis, x->evidence);
            else
                fprintf(f, "  [%s] %s (%s): %s\n", rsr_severity_name(x->severity), x->title,
                        j->hang.kind && i == 0 ? "the job stopped here"
                        : j->path.have        ? "context"
                                              : "gain not measured",
                        x->evidence);
        }
    } else {
        fputs("findings: none\n", f);
    }
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
static void lanes_json(struct rsr_jw *w, const struct lanes *l, const struct rsr_input *ins, const struct rsr_job *j,
                       char **paths, int npaths)
{
    rsr_jw_kobject(w, "lanes", 0);
    rsr_jw_karray(w, "ranks", 0);
    for (size_t k = 0; k < l->n; k++) {
        rsr_jw_object(w, 0);
        rsr_jw_kint_or_null(w, "rank", ins[l->model[k]].rank);
        rsr_jw_kint(w, "pid", ins[l->model[k]].pid);
        rsr_jw_kstr(w, "why", l->why[k]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_knum(w, "from_s", (double)(l->from_ns - j->storage.job_start_ns) / 1e9);
    rsr_jw_knum(w, "to_s", (double)(l->to_ns - j->storage.job_start_ns) / 1e9);
    rsr_jw_kuint(w, "events_in_job", l->events);
    rsr_jw_kuint(w, "events_in_window", l->kept);
    rsr_jw_kbool(w, "whole_job", l->from_ns <= j->storage.job_start_ns && l->to_ns >= j->storage.job_end_ns);
    rsr_jw_kstr(w, "perfetto", "trace.pftrace");
    rsr_jw_kstr(w, "kineto", "trace.json");
    char cmd[1024];
    int at = snprintf(cmd, sizeof cmd, "ringside export perfetto");
    for (int i = 0; i < npaths && at < (int)sizeof cmd; i++)
        at += snprintf(cmd + at, sizeof cmd - (size_t)at, " %s", paths[i]);
    if (at < (int)sizeof cmd)
        snprintf(cmd + at, sizeof cmd - (size_t)at, " --ranks RANKS [--from S --to S] -o FILE.pftrace");
    rsr_jw_kstr(w, "export", cmd);
    rsr_jw_end(w);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* report.json's wait_graph_set_apart: the threads the wait flame graph
 * leaves out (flame.h), absent when none. Its first key is spaced as the
 * reporter's keys are, the rest compact. */
static void apart_json(struct rsr_jw *w, const struct rsr_flame *fl)
{
    if (!fl || !fl->apart_threads)
        return;
    rsr_jw_kobject(w, "wait_graph_set_apart", RSR_JW_SPACED);
    rsr_jw_kuint(w, "threads", fl->apart_threads);
    rsr_jw_style(w, 0);
    rsr_jw_knum(w, "wait_s", (double)fl->apart_ns / 1e9);
    rsr_jw_karray(w, "by_name", 0);
    for (uint32_t i = 0; i < fl->napart; i++) {
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", fl->apart[i].name);
        rsr_jw_kuint(w, "threads", fl->apart[i].threads);
        rsr_jw_knum(w, "wait_s", (double)fl->apart[i].ns / 1e9);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* report.json's "reporter" key: how the report was made. */
static void reporter_json(struct rsr_jw *w, const struct rsr_loaded *J, const struct rsr_mpi *mp, double t0)
{
    double rss = rsr_peak_rss_mb();
    if (rss < J->peak_rss_mb)
        rss = J->peak_rss_mb;
    rsr_jw_kobject(w, "reporter", RSR_JW_SPACED);
    rsr_jw_kstr(w, "version", RINGSIDE_VERSION);
    rsr_jw_kint(w, "mpi_processes", mp->size);
    rsr_jw_kfixed(w, "peak_rss_mb", rss, 1);
    rsr_jw_kfixed(w, "wall_s", now_s() - t0, 3);
    rsr_jw_end(w);
}

/* report.json's "watch" key: how this report was made while the job ran
 * (the figures as they were when it was started). */
struct watch_key {
    double every_s;
    int pass, final, files, ended;
    uint64_t read_bytes;
};

static void watch_json(struct rsr_jw *w, const struct watch_key *k)
{
    rsr_jw_kobject(w, "watch", RSR_JW_SPACED);
    rsr_jw_key(w, "every_s");
    rsr_jw_sig(w, k->every_s, 6);
    rsr_jw_kint(w, "pass", k->pass);
    rsr_jw_kbool(w, "final", k->final);
    rsr_jw_kint(w, "files", k->files);
    rsr_jw_kint(w, "ended", k->ended);
    rsr_jw_kuint(w, "read_bytes", k->read_bytes);
    rsr_jw_end(w);
}

/* The keys report.c adds to report.json (rsr_report_keys_fn): the lanes
 * (when there is a folder of outputs), compact as the analyses' keys; then,
 * spaced, the watch's, the symbols and the reporter's. */
struct report_keys {
    const struct lanes *lanes;          /* NULL: none */
    const struct rsr_input *ins;
    const struct rsr_job *job;
    char **paths;
    int npaths;
    const struct watch_key *watch;      /* NULL: not under --watch */
    const struct rsr_loaded *J;
    const struct rsr_mpi *mp;
    double t0;
};

static void report_keys(struct rsr_jw *w, void *arg)
{
    const struct report_keys *k = arg;
    if (k->lanes)
        lanes_json(w, k->lanes, k->ins, k->job, k->paths, k->npaths);
    rsr_jw_style(w, RSR_JW_SPACED);
    if (k->watch)
        watch_json(w, k->watch);
    rsr_unnamed_json(w, k->J->fls);
    apart_json(w, k->J->fls ? &k->J->fls[RSF_SAMPLE_WAIT] : NULL);
    reporter_json(w, k->J, k->mp, k->t0);
}

/* report.json's text: the analyses' figures, then the keys of k as of now.
 * NULL when out of memory. */
static char *render_json(struct rsr_input *ins, int n, const struct rsr_job *job, struct report_keys *k, size_t *len)
{
    char *json = NULL;
    FILE *mem = open_memstream(&json, len);
    if (!mem)
        return NULL;
    int rc = rsr_report_json(mem, ins, n, job, report_keys, k);
    if (fclose(mem) != 0 || rc != 0) {
        free(json);
        return NULL;
    }
    return json;
}

/* The flame graphs of the slowest steps (step_pick.h) into OUT, each file
 * read once more for its samples in those steps; what was written is
 * marked in the steps' slow list for report.json and the page. Returns 0,
 * or -1 when a file could not be written (said). */
static int slow_graphs(const struct rsr_loaded *J, struct rsr_job *job, const struct rsr_slow_spans *slow,
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

/* Closes the report's protobuf trace with the lanes' processes over their
 * stretch (for the whole job, every record). Returns 0, or 1 having said why. */
static int pftrace_lanes(struct rsr_pftrace *pf, const struct lanes *l, struct rsr_input *ins,
                         struct rsr_model **models, const struct rsr_job *job)
{
    int n = (int)job->n;
    unsigned char *chosen = calloc((size_t)n + 1, 1);
    struct rsr_pftrace_pick pick = { chosen, INT64_MIN, INT64_MAX };
    for (size_t k = 0; chosen && l && k < l->n; k++)
        chosen[l->model[k]] = 1;
    if (l && (l->from_ns > job->storage.job_start_ns || l->to_ns < job->storage.job_end_ns)) {
        pick.from_ns = l->from_ns;
        pick.to_ns = l->to_ns;
    }
    /* one writer thread: the same bytes every time, with or without MPI */
    if (!chosen) {
        rsr_pftrace_discard(pf);
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }
    int rc = rsr_pftrace_close(pf, ins, models, job, &pick, 1);
    free(chosen);
    return rc;
}

/* The analyses' steps to the slow steps' spans and the protobuf trace. */
struct both_visits {
    struct rsr_slow_spans *slow;
    struct rsr_pftrace *pf;
    int slow_done;
};

static int both_visit(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    struct both_visits *b = ctx;
    if (!b->slow_done && rsr_slow_spans_visit(b->slow, i, s, job) != 0)
        b->slow_done = 1;
    if (b->pf)
        return rsr_pftrace_visit_step(b->pf, i, s, job);
    return b->slow_done ? -1 : 0;
}

/* The report of the loaded job J into o's outputs: report.json (with the
 * watch key when watch is not NULL), the page, the flame graphs,
 * trace.json, --json, the text summary. Returns the exit status. */
static int report_write(const struct rsr_loaded *J, char **paths, int npaths, const struct rsr_report_opts *o,
                        const struct rsr_mpi *mp, double t0, const struct watch_key *watch)
{
    struct rsr_input *ins = J->ins;
    struct rsr_model **models = J->models;
    int n = J->n, readable = J->readable;
    struct rsr_job job;
    int tty = isatty(STDERR_FILENO);
    if (tty)
        fprintf(stderr, "ringside: analysing %d process%s", n, n == 1 ? "" : "es");
    struct rsr_slow_spans slow = { 0 };
    /* OUT/trace.pftrace: the job's steps as the analyses find them, then
     * the lanes' processes over the lanes' stretch */
    struct both_visits bv = { &slow, NULL, 0 };
    if (o->out_dir && !o->running && (mkdir(o->out_dir, 0755) == 0 || errno == EEXIST)) {
        char pf[4096];
        snprintf(pf, sizeof pf, "%s/trace.pftrace", o->out_dir);
        struct rsr_export_opts eo = { .out = pf, .quiet = 1 };
        if (!(bv.pf = rsr_pftrace_open(&eo, n)))
            return 1;
    }
    int arc = rsr_job_analyse_visit(models, (size_t)n, &job, both_visit, &bv);
    if (tty)
        fputs("\r\033[K", stderr);
    if (arc != 0)
        fprintf(stderr, "ringside: out of memory: some analyses are missing from the report\n");
    if (o->out_dir && J->fls && slow.n && !o->running && slow_graphs(J, &job, &slow, o) != 0) {
        if (bv.pf)
            rsr_pftrace_discard(bv.pf);
        rsr_job_free(&job);
        return 1;
    }
    struct lanes *lanes = calloc(1, sizeof *lanes);
    struct report_keys keys = { NULL, ins, &job, paths, npaths, watch, J, mp, t0 };
    if (lanes && o->out_dir) {
        lanes_pick(lanes, ins, n, &job, o);
        lanes->from_ns = job.storage.job_start_ns;
        lanes->to_ns = job.storage.job_end_ns;
        lanes_load(lanes, ins, models, RSR_LANES_EVENTS);
        keys.lanes = lanes;
    }
    if (bv.pf && pftrace_lanes(bv.pf, lanes, ins, models, &job) != 0) {
        rsr_job_free(&job);
        return 1;
    }
    size_t len = 0;
    char *json = lanes ? render_json(ins, n, &job, &keys, &len) : NULL;
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
            char *last = rc ? NULL : render_json(ins, n, &job, &keys, &len);
            if (last) {
                free(json);
                json = last;
                rc = write_file(p, json, len);
            }
            if (!rc && o->prom_dir && rsr_prom_write(p, o->prom_dir) != 0)
                rc = 1;
        }
    }
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
    struct rsr_loaded J;
    int lrc = 0;
    rsr_inputs_bound(o->memory_mb);
    /* The samples always: report.json's off-CPU time and findings read
     * them (waits.h), not only the flame graphs. */
    switch (rsr_job_load(&J, paths, npaths, mp, 1, o->quiet, o->lines, &lrc)) {
    case 0:
        break;
    case -1:
        rsr_job_unload(&J);
        return lrc;
    default:
        rsr_job_unload(&J);
        return 1;
    }
    int rc = report_write(&J, paths, npaths, o, mp, t0, NULL);
    rsr_job_unload(&J);
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
 * report with the watch key k. Run in a forked copy while the job runs,
 * and in place at its end. Returns the exit status. */
static int watch_write(struct rsr_watch *w, char **paths, int npaths, const struct rsr_report_opts *o,
                       const struct rsr_mpi *mp, double t0, const struct watch_key *k)
{
    struct rsr_loaded J = { .n = w->n };
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
            rsr_warn_damage(&J.ins[i]);
    }
    w->n = 0;
    free(waits);
    free(feeds);
    rsr_inputs_models(J.ins, n, J.models);
    J.peak_rss_mb = rsr_peak_rss_mb();
    int rc = report_write(&J, paths, npaths, o, mp, t0, k);
    rsr_job_unload(&J);
    return rc;
}

/* The watch key's figures of pass, now. */
static struct watch_key watch_now(const struct rsr_watch *w, const struct rsr_report_opts *o, int pass, int final)
{
    struct watch_key k = { o->watch_s, pass, final, w->n, w->ended, w->read_bytes };
    return k;
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
    each.running = 1;    /* nor the slow steps' graphs and trace.pftrace */
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
            struct watch_key k = watch_now(&w, o, ++pass, 0);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                signal(SIGINT, SIG_DFL);
                signal(SIGTERM, SIG_DFL);
                _exit(watch_write(&w, paths, npaths, &each, mp, t0, &k));
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
        }
        sleep_until(next);
        if (watch_stop)
            break;
    }
    if (!rc) {
        /* The rest of every file, a frame left unfinished now cut short. */
        if (rsr_watch_poll(&w, 1) < 0)
            rc = 1;
        struct watch_key k = watch_now(&w, o, ++pass, 1);
        if (!w.n) {
            fprintf(stderr, "ringside: no trace files (*.trace.lz4) in %s%s\n", paths[0],
                    npaths > 1 ? " or the other folders given" : "");
            rc = 1;
        } else if (!rc) {
            rc = watch_write(&w, paths, npaths, o, mp, t0, &k);
        }
    }
    rsr_watch_free(&w);
    return rc;
}

static int export_run(char **paths, int npaths, const struct rsr_export_opts *o, const struct rsr_mpi *mp)
{
    struct rsr_loaded J;
    struct lanes *l = calloc(1, sizeof *l);
    int lrc = 0, jrc = l ? rsr_job_load(&J, paths, npaths, mp, 0, o->quiet, 0, &lrc) : 1;
    if (jrc != 0) {
        if (!l)
            fprintf(stderr, "ringside: out of memory\n");
        else
            rsr_job_unload(&J);
        free(l);
        return jrc < 0 ? lrc : 1;
    }
    struct rsr_input *ins = J.ins;
    struct rsr_model **models = J.models;
    int n = J.n;
    if (rsr_pftrace_wanted(o->out)) {
        int prc = rsr_pftrace_export(ins, models, n, o, mp->threads);
        free(l);
        rsr_job_unload(&J);
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
    rsr_job_unload(&J);
    return rc;
}

int rsr_report_run(char **paths, int npaths, const struct rsr_report_opts *o)
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

int rsr_export_run(char **paths, int npaths, const struct rsr_export_opts *o)
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
