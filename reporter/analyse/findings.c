/* Findings (see findings.h): each check reads the analyses in the job,
 * and when its pattern is there, writes the evidence with the worst rank
 * and the job-wide figure. Ordered by severity, then by time at stake. */
#include "reporter/analyse/findings.h"
#include "reporter/load/memory.h"
#include "reporter/load/summary.h"
#include "reporter/analyse/job.h"
#include "reporter/base/units.h"
#include "reporter/base/array.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Thresholds. */
#define EXPOSED_COMM_PCT 10.0     /* exposed communication, % of GPU span */
#define CKPT_PCT 5.0              /* checkpoint share of wall time */
#define SHORT_KERNEL_SHARE 0.5    /* short runs among compute kernel runs */
#define HOST_WAIT_PCT 20.0        /* GPU idle waiting for launches, % of span */
#define STRAGGLER_CRITICAL_PCT 20.0 /* a named straggler's excess (collectives.h), % of time */
#define SYNCS_PER_S 200.0
#define MEM_CALLS_PER_S 100.0
#define IDLE_PCT 30.0
#define DATA_LOADING_PCT 10.0     /* GPU idle while reading, or the loop waiting for its DataLoader */
#define GIL_PCT 10.0              /* threads' waits for the GIL, % of the process's wall time */
#define CPU_COLL_PCT 10.0         /* a rank's waits in CPU-side collectives, % of its wall time */
#define CPU_COLL_SPREAD_PCT 5.0   /* most less least waiting rank's, % of the most's wall: one is slow */
#define SLOW_STEPS_PCT 5.0        /* time slow steps take beyond the median, % of all steps' time */
#define DRIFT_PCT 10.0            /* typical training step time change over the run */
#define DRIFT_MIN_STEPS 10
#define LOW_SM_BUSY_PCT 50.0      /* a GPU computing this much of its span... */
#define LOW_SM_RATIO 0.5          /* ...whose SM activity is under this share of it */
#define CAUSE_PCT 2.0             /* a critical-path cause: claimed by a finding, or one of its own, from this share up */

const char *rsr_severity_name(int sev)
{
    return sev == RSR_SEV_CRITICAL ? "critical" : sev == RSR_SEV_WARNING ? "warning" : "info";
}

struct list {
    struct rsr_finding *v;
    size_t n, cap;
    int oom;
};

static void add(struct list *l, const char *id, int sev, double recoverable, const char *title, const char *advice,
                const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void add(struct list *l, const char *id, int sev, double recoverable, const char *title, const char *advice,
                const char *fmt, ...)
{
    if (RSR_GROW(l->v, l->cap, l->n + 1, 8) != 0) {
        l->oom = 1;
        return;
    }
    struct rsr_finding *f = &l->v[l->n++];
    f->id = id;
    f->severity = sev;
    f->recoverable_pct = recoverable > 100 ? 100 : recoverable;
    f->cause = NULL;
    f->whatif_ms = -1;
    f->title = title;
    f->advice = advice;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->evidence, sizeof f->evidence, fmt, ap);
    va_end(ap);
}

static int cmp_finding(const void *pa, const void *pb)
{
    const struct rsr_finding *a = pa, *b = pb;
    if (a->recoverable_pct != b->recoverable_pct)
        return (a->recoverable_pct < b->recoverable_pct) - (a->recoverable_pct > b->recoverable_pct);
    return b->severity - a->severity;
}

static const char *rank_text(char *buf, size_t n, const struct rsr_model *m)
{
    if (m->rank >= 0)
        snprintf(buf, n, "rank %d", m->rank);
    else
        snprintf(buf, n, "pid %lld", (long long)m->pid);
    return buf;
}

/* The model with the largest value of f (per model), its value, and the
 * mean over models with GPU work. */
struct worst {
    size_t i;
    double v, mean;
    size_t n;
};

/* Counts value v of model i into w (start from WORST_NONE). */
#define WORST_NONE ((struct worst){ 0, -1, 0, 0 })
static void worst_add(struct worst *w, size_t i, double v)
{
    w->mean += v;
    w->n++;
    if (v > w->v)
        w->i = i, w->v = v;
}

static struct worst worst_end(struct worst w)
{
    if (w.n)
        w.mean /= (double)w.n;
    return w;
}

static struct worst worst_gpu(const struct rsr_job *j, double (*f)(const struct rsr_gpu_breakdown *))
{
    struct worst w = WORST_NONE;
    for (size_t i = 0; i < j->n; i++)
        if (j->gpu[i].span_ns)
            worst_add(&w, i, f(&j->gpu[i]));
    return worst_end(w);
}

static double g_exposed(const struct rsr_gpu_breakdown *b) { return b->exposed_comm_pct; }
static double g_idle(const struct rsr_gpu_breakdown *b) { return b->idle_pct; }
/* Host wait on the stream that ran the most work (summed over streams it
 * would count a stream with a few operations, idle for most of the span). */
static double g_host_wait(const struct rsr_gpu_breakdown *b)
{
    const struct rsr_stream_idle *main = rsr_gpu_busiest_stream(b);
    return main && b->span_ns ? 100.0 * (double)main->host_wait_ns / (double)b->span_ns : 0;
}

/* The SM activity a process's report gives: measured where NVML's GPM
 * was there, else estimated from launch geometry. */
static double sm_activity(const struct rsr_gpu_breakdown *b)
{
    return b->gpm_n ? b->gpm_sm_active_pct : b->sm_activity_pct;
}

/* Busy but with its SMs mostly empty: the rank whose SM activity is the
 * smallest share of its busy time, and its kernels that leave the most SM
 * time unused (time x (1 - coverage)). */
static void low_sm_finding(struct list *l, const struct rsr_job *j)
{
    size_t wi = SIZE_MAX;
    double worst = 1;
    for (size_t i = 0; i < j->n; i++) {
        const struct rsr_gpu_breakdown *b = &j->gpu[i];
        /* compute alone: collectives' kernels are communication */
        if (!b->span_ns || b->compute_pct < LOW_SM_BUSY_PCT)
            continue;
        if (!b->gpm_n && b->no_geometry_pct >= 50)
            continue;   /* too little geometry to tell */
        double ratio = sm_activity(b) / b->compute_pct;
        if (ratio < LOW_SM_RATIO && ratio < worst)
            worst = ratio, wi = i;
    }
    if (wi == SIZE_MAX)
        return;
    const struct rsr_gpu_breakdown *b = &j->gpu[wi];
    const struct rsr_kernel_summary *k = &j->kernels[wi];
    const struct rsr_model *m = j->models[wi];
    const struct rsr_kernel_stat *top[3] = { NULL, NULL, NULL };
    double lost[3] = { 0, 0, 0 };
    for (size_t i = 0; i < k->n; i++) {
        const struct rsr_kernel_stat *s = &k->stats[i];
        if (!s->geom_count)
            continue;
        double v = (double)s->geom_ns - s->coverage_ns;
        for (int r = 0; r < 3; r++)
            if (!top[r] || v > lost[r]) {
                for (int q = 2; q > r; q--)
                    top[q] = top[q - 1], lost[q] = lost[q - 1];
                top[r] = s, lost[r] = v;
                break;
            }
    }
    char kernels[360] = "";
    size_t at = 0;
    for (int r = 0; r < 3 && top[r]; r++) {
        const struct rsr_kernel_stat *s = top[r];
        double n = (double)s->geom_count, t = s->geom_ns > 0 ? (double)s->geom_ns : 1;
        int w = snprintf(kernels + at, sizeof kernels - at, "%s%s (%.0f blocks of %.0f threads, %.2f waves, "
                         "%.0f%% of SMs, %.1f ms)", r ? "; " : "", rsr_model_str(m, s->name),
                         s->blocks_sum / n, s->tpb_sum / n, s->waves_sum / n, 100.0 * s->coverage_ns / t,
                         (double)s->total_ns / 1e6);
        if (w < 0 || (size_t)w >= sizeof kernels - at)
            break;
        at += (size_t)w;
    }
    char who[64], blind[64] = "";
    if (!b->gpm_n && b->no_geometry_pct >= 1)
        snprintf(blind, sizeof blind, ", %.0f%% of compute time without geometry", b->no_geometry_pct);
    add(l, "low_sm_activity", worst < 0.3 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, b->compute_pct - sm_activity(b),
        "The GPU is busy but its SMs are mostly empty",
        "Its kernels launch too few blocks to fill the GPU: larger batches or sequence chunks, fusing "
        "small operations (torch.compile) so each kernel has more work, or CUDA graphs with several "
        "streams so that small kernels run side by side. The GPU flame graph shows where they are "
        "launched from.",
        "%s: computing %.1f%% of its GPU span but SM activity %.1f%% (%s)%s; %s%s",
        rank_text(who, sizeof who, m), b->compute_pct, sm_activity(b),
        b->gpm_n ? "measured by NVML GPM" : "estimated from launch geometry",
        blind, *kernels ? "kernels that leave most of the SMs empty: " : "",
        kernels);
}

/* Slow steps (with their causes) and a drifting step time (steps.h). */
static void steps_findings(struct list *l, const struct rsr_steps *st)
{
    static const char *const causes[] = { "checkpoint", "io", "warm_up", "straggler", "launch_gaps", "hang",
                                          "unknown" };
    static const char *const advice[] = {
        "Checkpoint less often or asynchronously (torch.distributed.checkpoint async_save), or shard the save.",
        "Read ahead of the GPU: more DataLoader workers, prefetching, faster or local storage.",
        "The first step sets things up (memory, compiled or tuned kernels, communicators): it weighs less "
        "in a longer run; a warm-up beyond a few steps is worth a look on the timeline.",
        "Look at the slow rank in those steps: its kernels, its host, its share of the work.",
        "The GPU waited for the host: look at the CPU and wait flame graphs for what ran between launches "
        "(garbage collection, logging, synchronisations).",
        "The last step before the hang holds the start of the step the job hung in (see the hang above): "
        "its length is the hang's, not a slow step's.",
        "Look at the slow steps on the timeline (report.json's steps.series gives their times) beside a "
        "typical step.",
    };
    if (!st->source || !st->count)
        return;
    double total = 0, extra = 0;
    enum { NCAUSES = sizeof causes / sizeof causes[0], STRAGGLER = 3 };
    _Static_assert(sizeof advice / sizeof advice[0] == NCAUSES, "a piece of advice per cause");
    size_t n_cause[NCAUSES] = { 0 };
    for (size_t i = 0; i < st->n; i++) {
        const struct rsr_step *x = rsr_step_get(st, i);
        total += (double)(x->end_ns - x->start_ns) / 1e6;
    }
    for (size_t i = 0; i < st->n_slow; i++) {
        const struct rsr_step *x = rsr_step_get(st, st->slow[i].index);
        extra += (double)(x->end_ns - x->start_ns) / 1e6 - st->phase_median_ms[x->phase];
        for (size_t c = 0; c < NCAUSES; c++)
            n_cause[c] += strcmp(st->slow[i].cause, causes[c]) == 0;
    }
    double pct_extra = total > 0 ? 100 * extra / total : 0;
    if (st->n_slow && pct_extra >= SLOW_STEPS_PCT) {
        size_t top = 0;
        for (size_t c = 1; c < NCAUSES; c++)
            if (n_cause[c] > n_cause[top])
                top = c;
        char why[200];
        size_t o = 0;
        why[0] = 0;
        for (size_t c = 0; c < NCAUSES && o < sizeof why; c++) {
            if (!n_cause[c])
                continue;
            o += (size_t)snprintf(why + o, sizeof why - o, "%s%zu %s", o ? ", " : "", n_cause[c], causes[c]);
            /* the late ranks named (the first few) */
            int named = 0;
            for (size_t i = 0; c == STRAGGLER && i < st->n_slow && named < 4 && o < sizeof why; i++)
                if (strcmp(st->slow[i].cause, causes[c]) == 0 && st->slow[i].rank >= 0)
                    o += (size_t)snprintf(why + o, sizeof why - o, "%s%d", named++ ? "," : " (rank ",
                                          (int)st->slow[i].rank);
            if (named && o < sizeof why)
                o += (size_t)snprintf(why + o, sizeof why - o, ")");
        }
        add(l, "slow_steps", pct_extra >= 20 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, pct_extra, "Some steps are slow",
            advice[top],
            "%zu of %zu steps took %.1fx their phase's median or more (training median %.1f ms); they took "
            "%.1f ms beyond the median, %.1f%% of all step time; causes: %s",
            st->n_slow, st->n, RSR_STEPS_SLOW_X, st->median_ms, extra, pct_extra, why);
    }
    double d = st->typical_change_pct;
    if (st->count >= DRIFT_MIN_STEPS && (d >= DRIFT_PCT || d <= -DRIFT_PCT))
        add(l, "step_time_drift", RSR_SEV_WARNING, d < 0 ? -d : d,
            d > 0 ? "The step time grows over the run" : "The step time falls over the run",
            "Compare the first and last steps on the timeline: a slowdown that grows points at memory "
            "fragmentation, a growing host-side cost (lists, logging, garbage collection), thermal throttling "
            "or a data set whose samples grow.",
            "the typical training step (the median of the last quarter of the %zu training steps, slow ones "
            "left out) is %+.1f%% from the first quarter's; the least-squares line through all of them goes "
            "%+.1f%%; median %.1f ms",
            st->count, d, st->trend_pct, st->median_ms);
}

static double wall_ns(const struct rsr_model *m)
{
    return m->wall_end_ns > m->wall_start_ns ? (double)(m->wall_end_ns - m->wall_start_ns) : 0;
}

/* A cause's share of each process's wall time (waits.h): the largest, and
 * which model; children (DataLoader workers forked from the loop, whose
 * stacks carry its frames) are left out when skip_children is set. */
static struct worst worst_cause(const struct rsr_job *j, int cause, int skip_children)
{
    struct worst w = WORST_NONE;
    for (size_t i = 0; i < j->n; i++) {
        const struct rsr_model *m = j->models[i];
        double wall = wall_ns(m);
        if (wall > 0 && !(skip_children && m->role == RSR_ROLE_CHILD))
            worst_add(&w, i, 100.0 * (double)m->waits.cause_ns[cause] / wall);
    }
    return worst_end(w);
}

/* Off-CPU findings from the wait samples (waits.h): a loop starved by its
 * DataLoader, threads fighting for the GIL, ranks waiting for each other in
 * CPU-side collectives. Returns whether data_loading was added. */
static int waits_findings(struct list *l, const struct rsr_job *j)
{
    char who[64];
    int loading = 0;
    struct worst w = worst_cause(j, RSR_CAUSE_DATALOADER, 1);
    if (w.n && w.v >= DATA_LOADING_PCT) {
        const struct rsr_model *m = j->models[w.i];
        add(l, "data_loading", RSR_SEV_WARNING, w.v, "The training loop waits for its DataLoader",
            "Give the DataLoader more workers (num_workers), pin_memory=True and a larger prefetch_factor; "
            "the workers' own CPU flame graph shows what makes each batch slow.",
            "%s: the loop waited for its DataLoader %.3f s, %.1f%% of its %.3f s (the wait flame graph, under "
            "torch/utils/data/dataloader.py)",
            rank_text(who, sizeof who, m), (double)m->waits.cause_ns[RSR_CAUSE_DATALOADER] / 1e9, w.v,
            wall_ns(m) / 1e9);
        loading = 1;
    }
    w = worst_cause(j, RSR_CAUSE_GIL, 0);
    if (w.n && w.v >= GIL_PCT) {
        const struct rsr_model *m = j->models[w.i];
        add(l, "gil_contention", RSR_SEV_WARNING, w.v, "Threads wait for Python's GIL",
            "Only one thread runs Python at a time: move CPU-bound Python work out of threads (processes, "
            "DataLoader workers), into code that releases the GIL (NumPy, PyTorch ops), or run fewer threads.",
            "%s: its %u threads waited for the GIL %.3f thread-s in all, %.1f%% of its %.3f s wall time "
            "each on average (the wait flame graph's condvar waits inside the interpreter)",
            rank_text(who, sizeof who, m), m->waits.nthreads, (double)m->waits.cause_ns[RSR_CAUSE_GIL] / 1e9,
            w.v / (m->waits.nthreads ? m->waits.nthreads : 1), wall_ns(m) / 1e9);
    }
    /* Ranks in CPU-side collectives: the rank that waits least is the one
     * the others wait for, when the spread is more than noise. */
    size_t most = SIZE_MAX, least = SIZE_MAX, ranks = 0;
    double v_most = 0, v_least = 0;
    for (size_t i = 0; i < j->n; i++) {
        const struct rsr_model *m = j->models[i];
        double wall = wall_ns(m);
        if (m->role != RSR_ROLE_RANK || wall <= 0 || (!m->waits.cpu_ns && !rsr_waits_total_ns(&m->waits)))
            continue;
        double v = 100.0 * (double)m->waits.cause_ns[RSR_CAUSE_COLLECTIVE] / wall;
        ranks++;
        if (most == SIZE_MAX || v > v_most)
            most = i, v_most = v;
        if (least == SIZE_MAX || v < v_least)
            least = i, v_least = v;
    }
    if (ranks >= 2 && v_most >= CPU_COLL_PCT) {
        const struct rsr_model *a = j->models[most], *b = j->models[least];
        char slow[64];
        rank_text(slow, sizeof slow, b);
        if (v_most - v_least >= CPU_COLL_SPREAD_PCT)
            add(l, "cpu_collective_wait", RSR_SEV_WARNING, v_most, "Ranks wait for each other in collectives",
                "Look at what the rank the others wait for does that they do not: its CPU flame graph, its "
                "share of the data, its host; balance the work across ranks.",
                "%s waited %.3f s in torch.distributed collectives (%.1f%% of its time, the wait flame graph "
                "under c10d/gloo); %s waited least, %.3f s (%.1f%%): the others wait for %s",
                rank_text(who, sizeof who, a), (double)a->waits.cause_ns[RSR_CAUSE_COLLECTIVE] / 1e9, v_most,
                slow, (double)b->waits.cause_ns[RSR_CAUSE_COLLECTIVE] / 1e9, v_least, slow);
        else
            add(l, "cpu_collective_wait", RSR_SEV_WARNING, v_most, "Ranks wait in collectives",
                "Every rank waits about as long: the collectives themselves are slow. Check the network, "
                "overlap communication with compute (DDP bucket_cap_mb), or communicate less often.",
                "%zu ranks wait %.1f%% to %.1f%% of their time in torch.distributed collectives (the wait "
                "flame graph under c10d/gloo); no rank stands out",
                ranks, v_least, v_most);
    }
    return loading;
}

/* Pipeline stages that wait for each other (groups.h): the largest
 * stage's bubble, with advice by what it looks like: one stage slower than
 * the others, or the schedule's own bubble. */
#define PIPE_BUBBLE_PCT 10.0
static void pipeline_bubble(struct list *l, const struct rsr_pipeline *p)
{
    double most = 0, mean = 0;
    size_t nst = 0;
    for (int32_t k = 0; k < p->stages; k++) {
        if (!p->by_stage[k].ranks)
            continue;
        most = fmax(most, p->by_stage[k].bubble_pct);
        mean += p->by_stage[k].bubble_pct;
        nst++;
    }
    if (!nst || most < PIPE_BUBBLE_PCT)
        return;
    mean /= (double)nst;
    char stages[400];
    size_t o = 0;
    for (int32_t k = 0; k < p->stages && o < sizeof stages; k++)
        o += (size_t)snprintf(stages + o, sizeof stages - o, "%s%d: %.1f%% (%.3f ms/step)", k ? ", " : "", k,
                              p->by_stage[k].bubble_pct, p->by_stage[k].bubble_ms_per_step);
    char sched[160] = "";
    if (p->microbatches > 0)
        snprintf(sched, sizeof sched, "; %.3g micro-batches on %d stages: the 1F1B schedule's own bubble is %.1f%%",
                 p->microbatches, p->stages, p->schedule_bubble_pct);
    if (p->slowest >= 0) {
        add(l, "pipeline_bubble", most >= 25 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, p->slowest_excess_pct,
            "Pipeline stages wait for the slowest one",
            "Balance the layers over the stages (move layers off the slowest one, or give the first and last "
            "stages fewer to make up for the embedding and the loss), and check that stage's GPUs and ranks.",
            "stage %d is the slowest: the other stages wait %.1f%% of the step more than it does; bubble by "
            "stage %s%s", p->slowest, p->slowest_excess_pct, stages, sched);
    } else {
        add(l, "pipeline_bubble", most >= 25 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, mean,
            "Pipeline stages wait for each other",
            "More micro-batches per step (the bubble is (p - 1) / (m + p - 1) of it), or an interleaved "
            "schedule (virtual pipeline stages) that shrinks it by their number.",
            "bubble by stage %s%s", stages, sched);
    }
}

/* ---- findings as causes on the critical path (findings.h) ---- */

/* What a pattern's finding is a cause of, in the order the causes are
 * claimed: the straggler first (its lateness is the cause on that rank),
 * then the patterns that name a cause, the closest first; -1: context. */
static int straggler_part(const struct rsr_job *j)
{
    if (!j->colls.n_stragglers)
        return -1;
    const struct rsr_straggler *s = &j->colls.stragglers[0];
    switch (s->why.kind) {
    case RSR_WHY_KERNELS: return RSR_CP_IMBALANCE;
    case RSR_WHY_DATA_LOADING: return RSR_CP_DATA;
    case RSR_WHY_IO: return RSR_CP_FILE_IO;
    case RSR_WHY_CHECKPOINT: return RSR_CP_CHECKPOINT;
    default: break;
    }
    /* host work or not known: the cause the path puts on that rank most */
    int best = rsr_critpath_rank_cause(&j->path, s->rank);
    return best >= 0 ? best : RSR_CP_IMBALANCE;
}

static const struct {
    const char *id;
    int part;
} pattern_part[] = {
    { "pipeline_bubble", RSR_CP_IMBALANCE },
    { "cpu_collective_wait", RSR_CP_IMBALANCE },    /* ranks without GPU work */
    { "checkpoint_stall", RSR_CP_CHECKPOINT },
    { "data_loading", RSR_CP_DATA },
    { "exposed_communication", RSR_CP_TRANSFER },
    { "too_many_syncs", RSR_CP_SYNC },
    { "gil_contention", RSR_CP_LOCK },
    { "host_bound_launches", RSR_CP_HOST },
    { "many_short_kernels", RSR_CP_HOST },
};

/* A cause on the path no pattern named: its finding's words. */
static const struct {
    const char *id, *title, *advice;
} cause_finding[RSR_CP_NGAIN] = {
    [RSR_CP_CHECKPOINT] = { "checkpoint_stall", "Checkpoints stall training",
                            "Checkpoint less often, or save asynchronously (torch.distributed.checkpoint "
                            "async_save, a background thread writing a host copy), or shard the save across ranks." },
    [RSR_CP_DATA] = { "data_loading", "The GPU waits for data loading",
                      "Load ahead of the GPU: more DataLoader workers, pin_memory, prefetch_factor, "
                      "faster storage or a local cache of the data set." },
    [RSR_CP_FILE_IO] = { "file_io", "The GPU waits while the host writes files",
                         "Write logs, metrics and files from a background thread or less often; the wait flame "
                         "graph's [wait: file] shows which writes." },
    [RSR_CP_SLEEP] = { "host_sleeps", "The host sleeps while its GPU idles",
                       "Something on the training loop's thread sleeps (time.sleep, a polling loop, a rate "
                       "limiter): the wait flame graph's [wait: sleep] stacks say where." },
    [RSR_CP_LOCK] = { "lock_waits", "The host waits on a lock while its GPU idles",
                      "The training loop's thread blocks on a lock, a condition or the GIL: the wait flame "
                      "graph by reason shows which, and which threads hold it." },
    [RSR_CP_WAIT] = { "host_waits", "The host waits on another process while its GPU idles",
                      "The training loop's thread waits on a pipe, socket or child process (a data service, "
                      "a logger, a subprocess): the wait flame graph's stacks say which." },
    [RSR_CP_SYNC] = { "sync_stalls", "GPU-to-CPU synchronisations leave the GPU idle",
                      "After each .item(), .cpu() or torch.cuda.synchronize() the GPU waits for the host to "
                      "launch again: keep values on the GPU, read them less often, or use non_blocking copies. "
                      "The wait flame graph's [wait: cuda-sync] stacks show where." },
    [RSR_CP_HOST] = { "host_overhead", "The GPU waits for the host's CPU work",
                      "The host takes longer to launch the work than the GPU to run it: CUDA graphs or "
                      "torch.compile (mode=\"reduce-overhead\"), larger batches, less Python per step; the CPU "
                      "flame graph shows where the time goes." },
    [RSR_CP_TRANSFER] = { "exposed_communication", "Communication not hidden behind compute",
                          "Overlap gradient communication with the backward pass (DDP/FSDP bucketing, "
                          "bucket_cap_mb, FSDP backward_prefetch, ZeRO overlap_comm)." },
    [RSR_CP_IMBALANCE] = { "straggler_rank", "One rank's kernels hold the others back",
                           "Its kernels run longer than the same kernels on the other ranks: a slower or "
                           "throttled GPU, another process on it, or more work on that rank." },
    [RSR_CP_EVAL] = { "evaluation", "Evaluation steps take a share of the run",
                      "Evaluate less often or on fewer batches, or on other GPUs than the training's." },
};

static int cmp_finding(const void *pa, const void *pb);

/* Gives each cause on the path to one finding (findings.h), its gain that
 * cause's what-if; the others become context; a cause no finding names
 * becomes one of its own. */
static void claim_causes(struct list *l, const struct rsr_job *j)
{
    const struct rsr_critpath *cp = &j->path;
    if (!cp->have || cp->per_step_ms <= 0)
        return;
    int claimed[RSR_CP_NGAIN] = { 0 };
    size_t n0 = l->n;
    /* the straggler claims first, then the patterns in their order */
    size_t npat = sizeof pattern_part / sizeof pattern_part[0];
    for (size_t k = 0; k <= npat; k++) {
        const char *id = k ? pattern_part[k - 1].id : "straggler_rank";
        int c = k ? pattern_part[k - 1].part : straggler_part(j);
        for (size_t i = 0; i < n0 && c >= 0; i++) {
            struct rsr_finding *f = &l->v[i];
            /* a symptom whose cause gives back too little is context (the
             * GPU waits for launches while the host writes checkpoints) */
            if (strcmp(f->id, id) != 0 || f->cause || claimed[c] ||
                100 * cp->gain_ms[c] / cp->per_step_ms < CAUSE_PCT)
                continue;
            claimed[c] = 1;
            f->cause = rsr_cp_part_name(c);
            f->recoverable_pct = 100 * cp->gain_ms[c] / cp->per_step_ms;
            f->whatif_ms = cp->per_step_ms - cp->gain_ms[c];
        }
    }
    for (size_t i = 0; i < n0; i++)
        if (!l->v[i].cause)
            l->v[i].recoverable_pct = -1;
    for (int c = 0; c < RSR_CP_NGAIN; c++) {
        double pct = 100 * cp->gain_ms[c] / cp->per_step_ms;
        if (claimed[c] || pct < CAUSE_PCT || !cause_finding[c].id)
            continue;
        char where[48] = "";
        if (cp->gain_rank[c] >= 0)
            snprintf(where, sizeof where, ", %.0f%% of it on rank %d", 100 * cp->gain_rank_share[c],
                     (int)cp->gain_rank[c]);
        char step[32], without[32];
        rsr_steps_time_text(step, sizeof step, cp->per_step_ms);
        rsr_steps_time_text(without, sizeof without, cp->per_step_ms - cp->gain_ms[c]);
        add(l, cause_finding[c].id, pct >= 25 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, pct, cause_finding[c].title,
            cause_finding[c].advice,
            "on the steps' critical path: %s %.2f ms of %.2f ms a step (%.1f%%)%s; without it about %s instead of %s",
            rsr_cp_part_text(c), cp->part_ms[c], cp->per_step_ms, 100 * cp->part_ms[c] / cp->per_step_ms, where,
            without, step);
        if (!l->oom) {
            l->v[l->n - 1].cause = rsr_cp_part_name(c);
            l->v[l->n - 1].whatif_ms = cp->per_step_ms - cp->gain_ms[c];
        }
    }
    /* a claimed finding's severity follows its gain */
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].cause)
            l->v[i].severity = l->v[i].recoverable_pct >= 25   ? RSR_SEV_CRITICAL
                               : l->v[i].recoverable_pct >= 10 ? RSR_SEV_WARNING
                                                               : RSR_SEV_INFO;
}

int rsr_findings_headline(const struct rsr_job *j, char *buf, size_t n)
{
    if (n)
        buf[0] = 0;
    if (!j->n_findings || !n)
        return 0;
    if (j->hang.kind != RSR_HANG_NONE) {
        char text[320];
        rsr_hang_text(&j->hang, text, sizeof text);
        snprintf(buf, n, "the job hung: %s", text);
        return 1;
    }
    if (j->findings[0].recoverable_pct < 0)
        return 0;
    const struct rsr_finding *x = &j->findings[0];
    if (x->cause && x->whatif_ms >= 0) {
        int part = -1;
        for (int k = 0; k < RSR_CP_NPARTS; k++)
            if (strcmp(rsr_cp_part_name(k), x->cause) == 0)
                part = k;
        char step[32], without[32];
        rsr_steps_time_text(step, sizeof step, j->path.per_step_ms);
        rsr_steps_time_text(without, sizeof without, x->whatif_ms);
        snprintf(buf, n, "%s: %.0f%% of the step time; without it about %s instead of %s",
                 part >= 0 ? rsr_cp_part_text(part) : x->cause, x->recoverable_pct, without, step);
    } else {
        snprintf(buf, n, "fixing \"%s\" would give back up to %.0f%% of the %s", x->title, x->recoverable_pct,
                 j->steps.source ? "step time" : "wall time");
    }
    return 1;
}

/* Moves the finding added last to the front when one was added since the
 * list held n: first, whatever the gains after it. */
static void first_if_added(struct list *l, size_t n)
{
    if (l->n != n + 1 || !n)
        return;
    struct rsr_finding f = l->v[l->n - 1];
    memmove(&l->v[1], &l->v[0], (l->n - 1) * sizeof *l->v);
    l->v[0] = f;
}

/* A stuck job's verdict (hang.h) as a critical finding: what stopped the
 * job and where the ranks it waits for are. It is not a share of the step
 * time (context), and goes first whatever the gains below it. */
static void hang_finding(struct list *l, const struct rsr_job *j)
{
    const struct rsr_hang *h = &j->hang;
    static const char *const ids[] = { [RSR_HANG_HANG] = "job_hung", [RSR_HANG_DESYNC] = "collective_desync",
                                       [RSR_HANG_CRASH] = "rank_crashed" };
    static const char *const titles[] = { [RSR_HANG_HANG] = "The job hung in a collective",
                                          [RSR_HANG_DESYNC] = "The ranks called different collectives (desync)",
                                          [RSR_HANG_CRASH] = "A rank died while the others waited for it" };
    static const char *const advice[] = {
        [RSR_HANG_HANG] = "Look at where the missing ranks are (their stacks below): a rank stuck in its own "
                          "work, I/O or a lock never reaches the collective. Set a collective timeout "
                          "(init_process_group(timeout=...), TORCH_NCCL_ASYNC_ERROR_HANDLING) so a hang "
                          "fails fast instead of holding the allocation.",
        [RSR_HANG_DESYNC] = "The ranks took different paths through the program: a collective under a condition "
                            "that differs between ranks, uneven data (one rank with an extra batch), or "
                            "parameters in a different order. TORCH_DISTRIBUTED_DEBUG=DETAIL checks each call.",
        [RSR_HANG_CRASH] = "Read the dead rank's own log (its error, its exit status) and its last stack below; "
                           "the others only waited for it. A collective timeout makes the job fail fast.",
    };
    if (h->kind <= RSR_HANG_NONE || h->kind > RSR_HANG_CRASH)
        return;
    char text[320];
    rsr_hang_text(h, text, sizeof text);
    char where[300] = "";
    for (size_t i = 0; i < h->n_ranks; i++) {
        const struct rsr_hang_rank *r = &h->ranks[i];
        if (r->in_flight || !r->where || !r->where[0])
            continue;
        if (r->where_wait_ns)
            snprintf(where, sizeof where, ". Rank %d was last in %s (waiting %.1f s when its file ended)", r->rank,
                     r->where, (double)r->where_wait_ns / 1e9);
        else
            snprintf(where, sizeof where, ". Rank %d was last in %s", r->rank, r->where);
        break;
    }
    size_t n = l->n;
    add(l, ids[h->kind], RSR_SEV_CRITICAL, -1, titles[h->kind], advice[h->kind], "%s%s", text, where);
    first_if_added(l, n);
}

/* ---- GPU memory (memory.h): context, without a gain ---- */

/* The out-of-memory that ended a rank (first, before a hang it caused),
 * memory that grows step after step, and a caching allocator's retries. */
static void memory_findings(struct list *l, const struct rsr_job *j)
{
    const struct rsr_mem_job *mj = &j->memory;
    char who[64], a[32], b[32], c[32], d[32];
    if (mj->oom_model >= 0) {
        const struct rsr_model *m = j->models[mj->oom_model];
        const struct rsr_mem_proc *p = &mj->procs[mj->oom_model];
        const struct rsr_memory *mem = m->mem;
        const struct rsr_mem_fail *f = &mem->fails[p->fatal];
        char step[48] = "", free_text[96] = "", retries[96] = "", other[192] = "", peak_at[48] = "";
        char most[240] = "";
        const struct rsr_top_stack *top = &m->waits.top[RSR_TOP_MEM][0];
        if (top->ns) {
            rsr_fmt_bytes(d, sizeof d, (double)top->ns);
            snprintf(most, sizeof most, "; holding the most at the peak: %.140s (%s)", top->text, d);
        }
        if (p->fatal_step >= 0)
            snprintf(step, sizeof step, " at step %ld", p->fatal_step);
        rsr_fmt_bytes(a, sizeof a, (double)f->asked);
        if (f->total_b) {
            rsr_fmt_bytes(b, sizeof b, (double)f->free_b);
            rsr_fmt_bytes(c, sizeof c, (double)f->total_b);
            snprintf(free_text, sizeof free_text, " with %s free of %s", b, c);
            if (f->total_b - f->free_b > f->live) {
                rsr_fmt_bytes(d, sizeof d, (double)(f->total_b - f->free_b - f->live));
                snprintf(other, sizeof other, "; %s more in use that no allocation call of the program holds "
                         "(the CUDA context, NCCL's buffers, other processes)", d);
            }
        }
        if (p->retries_before)
            snprintf(retries, sizeof retries, "; %llu earlier failures got past by a retry (%.1f ms)",
                     (unsigned long long)p->retries_before, (double)p->retry_ns_before / 1e6);
        rsr_fmt_bytes(b, sizeof b, (double)f->live);
        rsr_fmt_bytes(c, sizeof c, (double)mem->peak);
        if (p->peak_step >= 0)
            snprintf(peak_at, sizeof peak_at, " at step %ld", p->peak_step);
        size_t n = l->n;
        add(l, "out_of_memory", RSR_SEV_CRITICAL, -1, "A rank ran out of GPU memory",
            "Look at what held the memory at the peak (flame-mem.svg, by allocating stack): activations "
            "(smaller micro-batches, activation checkpointing), parameters and optimizer state (sharding: "
            "FSDP, ZeRO), caches that grow; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when the free "
            "memory is there but in pieces.",
            "%s%s: %s of %s failed (%s)%s; the program held %s then (its peak %s%s)%s%s%s",
            rank_text(who, sizeof who, m), step, rsr_mem_call_name(f->asked_kind), a,
            f->result == 2 ? "out of memory" : "an error", free_text, b, c,
            peak_at, most, other, retries);
        first_if_added(l, n);  /* the others waited for this rank */
    }
    if (mj->leak_model >= 0) {
        const struct rsr_model *m = j->models[mj->leak_model];
        const struct rsr_mem_proc *p = &mj->procs[mj->leak_model];
        char full[96] = "", from[240] = "";
        const struct rsr_top_stack *top = &m->waits.top[RSR_TOP_MEM_GROW][0];
        if (top->ns) {
            rsr_fmt_bytes(c, sizeof c, (double)m->mem->grow_bytes);
            snprintf(from, sizeof from, "; allocated at %.140s (%s in %u blocks held)", top->text, c,
                     m->mem->grow_blocks);
        }
        rsr_fmt_bytes(a, sizeof a, p->grow_per_step);
        rsr_fmt_bytes(b, sizeof b, (double)m->mem->end_live);
        if (p->full_at_step >= 0 && m->mem->total) {
            rsr_fmt_bytes(c, sizeof c, (double)m->mem->total);
            snprintf(full, sizeof full, "; at that rate its device (%s) is full at step %.0f", c,
                     floor(p->full_at_step));
        }
        add(l, "memory_grows", RSR_SEV_WARNING, -1, "GPU memory grows step after step",
            "Something keeps memory every step and never gives it back: tensors kept in a list (a loss "
            "without .item() or .detach()), a cache keyed by step, graphs kept by retain_graph. The memory "
            "flame graph (flame-mem.svg) shows the stack that holds it.",
            "%s: the memory its program holds at the end of each step grows by %s a step (r^2 %.2f over "
            "%zu steps)%s; %s held when its trace ended%s",
            rank_text(who, sizeof who, m), a, p->grow_r2, p->grow_steps, from, b, full);
    }
    long worst = -1;
    for (size_t i = 0; i < mj->n; i++) {
        const struct rsr_memory *mem = j->models[i]->mem;
        if (mj->procs[i].has && mem->retried && (long)i != mj->oom_model &&
            (worst < 0 || mem->retry_ns > j->models[worst]->mem->retry_ns))
            worst = (long)i;
    }
    if (worst >= 0) {
        const struct rsr_memory *mem = j->models[worst]->mem;
        add(l, "allocator_retries", RSR_SEV_WARNING, -1, "Allocations failed and were retried",
            "The caching allocator ran out, emptied its cache and tried again: slow (every cached block "
            "is freed and allocated again), and a sign that the device is close to full or its free memory "
            "is in pieces; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or less memory per step.",
            "%s: %llu allocations failed and succeeded on a retry after the cache was emptied (%.1f ms in all)",
            rank_text(who, sizeof who, j->models[worst]), (unsigned long long)mem->retried,
            (double)mem->retry_ns / 1e6);
    }
}

/* ---- the nodes' findings ---- */

/* A link that carried less than this share of its rate while the host's
 * collectives ran is underused; one that carried under the least share
 * did not carry them at all (NCCL went another way: NVLink, shared
 * memory) and is not named. */
#define UNDERUSED_PCT 50.0
#define CARRIED_MIN_PCT 1.0
#define CPU_SATURATED_PCT 90.0

/* The nodes' findings: link_underused, the busiest link with a known rate
 * carrying under half of it while the host's collectives ran;
 * host_cpu_saturated, a host busy 90% of the time or more. Writes at most
 * max into out; returns how many. */
static size_t nodes_findings(const struct rsr_nodes *nodes, struct rsr_finding *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nodes->n && n < max; i++) {
        const struct rsr_node *nd = &nodes->v[i];
        /* the host's interconnect: the link with a known rate that carried
         * the most during collectives */
        const struct rsr_node_link *best = NULL;
        for (size_t k = 0; k < nd->n_links; k++) {
            const struct rsr_node_link *l = &nd->links[k];
            if (l->rate_gbs > 0 && l->in_coll_gbs >= 0 && (!best || l->in_coll_gbs > best->in_coll_gbs))
                best = l;
        }
        double pct = best ? 100 * best->in_coll_gbs / best->rate_gbs : 0;
        if (best && pct < UNDERUSED_PCT && pct >= CARRIED_MIN_PCT) {
            struct rsr_finding *f = &out[n++];
            memset(f, 0, sizeof *f);
            f->id = "link_underused";
            f->severity = RSR_SEV_WARNING;
            f->recoverable_pct = -1;    /* findings.c measures it on the steps */
            f->title = "Collectives run well below the interconnect's rate";
            f->advice = "The link waits on the collectives, not the other way round: larger gradient buckets "
                        "(DDP bucket_cap_mb, ZeRO reduce_bucket_size / allgather_bucket_size), prefetching "
                        "parameters earlier (FSDP forward_prefetch, ZeRO prefetch_bucket_size), fewer and "
                        "larger collectives; check NCCL's transport (NCCL_DEBUG=INFO: NET/IB, GDR) and the "
                        "collective table's busbw.";
            snprintf(f->evidence, sizeof f->evidence,
                     "host %s: link %s (%s, %.1f GB/s) carried %.1f GB/s during collectives (%.0f%% of its rate; "
                     "%.3f s of collectives), %.2f GB/s on average over the job, %.1f GB/s at its peak",
                     nd->host, best->name, rsf_link_kind_name(best->link) ? rsf_link_kind_name(best->link) : "?",
                     best->rate_gbs, best->in_coll_gbs, pct, nd->coll_s, best->mean_gbs, best->peak_gbs);
        }
        if (nd->cpu_pct >= CPU_SATURATED_PCT && n < max) {
            struct rsr_finding *f = &out[n++];
            memset(f, 0, sizeof *f);
            f->id = "host_cpu_saturated";
            f->severity = nd->cpu_pct >= 98 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING;
            f->recoverable_pct = -1;    /* findings.c measures it on the steps */
            f->title = "A node's CPUs are saturated";
            f->advice = "The host cannot keep up: fewer DataLoader workers or threads per rank "
                        "(OMP_NUM_THREADS, torch.set_num_threads), other jobs off the node, data decoding "
                        "moved to the GPU; the CPU flame graph shows where the time goes.";
            snprintf(f->evidence, sizeof f->evidence,
                     "host %s: its CPUs were busy %.1f%% of the time the node was sampled (/proc/stat: user, "
                     "system, irq, softirq, steal over all CPUs)",
                     nd->host, nd->cpu_pct);
        }
    }
    return n;
}

int rsr_findings_make(struct rsr_job *j)
{
    struct list l = { 0 };
    char who[64];

    struct worst w = worst_gpu(j, g_exposed);
    if (w.n && w.v >= EXPOSED_COMM_PCT) {
        const struct rsr_gpu_breakdown *b = &j->gpu[w.i];
        add(&l, "exposed_communication", w.v >= 25 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, w.v,
            "Communication not hidden behind compute",
            "Overlap gradient communication with the backward pass (DDP/FSDP bucketing; "
            "bucket_cap_mb, FSDP backward_prefetch / forward_prefetch, ZeRO overlap_comm and "
            "reduce_bucket_size); check the collective table's busbw against the interconnect.",
            "%s: %.1f%% of the GPU span is transfer in collectives that no compute hides (%.1f ms; "
            "not counting %.1f%% waiting for a late rank); comm-comp overlap %.1f%%; mean over ranks %.1f%%",
            rank_text(who, sizeof who, j->models[w.i]), w.v, (double)b->exposed_comm_ns / 1e6,
            b->sync_wait_pct, b->comm_comp_overlap_pct, w.mean);
    }
    pipeline_bubble(&l, &j->groups.pipe);
    int gpu = 0;
    for (size_t i = 0; i < j->n; i++)
        gpu |= j->models[i]->sum && j->models[i]->sum->n_ops > 0;
    /* without GPU work, large writes are just what the program does */
    if (gpu && j->storage.n_ckpts && j->storage.checkpoint_pct >= CKPT_PCT) {
        int64_t stall = 0;
        uint64_t bytes = 0;
        for (size_t i = 0; i < j->storage.n_ckpts; i++) {
            stall += j->storage.ckpts[i].gpu_stall_ns;
            bytes += j->storage.ckpts[i].bytes;
        }
        char size[32];
        rsr_fmt_bytes(size, sizeof size, (double)bytes);
        add(&l, "checkpoint_stall", j->storage.checkpoint_pct >= 15 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING,
            j->storage.checkpoint_pct, "Checkpoints stall training",
            "Checkpoint less often, or save asynchronously (torch.distributed.checkpoint async_save, "
            "a background thread writing a host copy), or shard the save across ranks.",
            "%zu checkpoint writes (%s) take %.1f%% of the job's wall time (%.3f s); "
            "the GPUs sat idle %.3f s during them (summed over ranks)",
            j->storage.n_ckpts, size, j->storage.checkpoint_pct,
            (double)j->storage.ckpt_union_ns / 1e9, (double)stall / 1e9);
    }
    {
        size_t wi = 0;
        double best = 0;
        for (size_t i = 0; i < j->n; i++) {
            const struct rsr_kernel_summary *k = &j->kernels[i];
            if (!k->n_compute || k->n_short < RSR_SHORT_KERNEL_MIN_COUNT)
                continue;
            double share = (double)k->n_short / (double)k->n_compute;
            if (share > best)
                best = share, wi = i;
        }
        if (best >= SHORT_KERNEL_SHARE) {
            const struct rsr_kernel_summary *k = &j->kernels[wi];
            const char *top = k->n_short_names ? rsr_model_str(j->models[wi], k->short_names[0]->name) : "";
            add(&l, "many_short_kernels", RSR_SEV_WARNING, g_host_wait(&j->gpu[wi]), "Many short kernels",
                "Fuse the small operations (torch.compile, fused optimizers and norms) or capture the "
                "step in a CUDA graph, so launch overhead stops rivalling the work.",
                "%s: %llu of %llu compute kernels ran under %d us (%.1f ms in all)%s%s",
                rank_text(who, sizeof who, j->models[wi]), (unsigned long long)k->n_short,
                (unsigned long long)k->n_compute, RSR_SHORT_KERNEL_NS / 1000, (double)k->short_ns / 1e6,
                *top ? "; most often " : "", top);
        }
    }
    w = worst_gpu(j, g_host_wait);
    if (w.n && w.v >= HOST_WAIT_PCT) {
        add(&l, "host_bound_launches", RSR_SEV_WARNING, w.v, "The GPU waits for the host to launch work",
            "The CPU cannot launch kernels fast enough: use CUDA graphs or torch.compile "
            "(mode=\"reduce-overhead\"), larger batches, fewer host syncs; look at the CPU flame graph.",
            "%s: its busiest stream sat idle %.1f%% of the GPU span waiting for launches; mean over "
            "ranks %.1f%%",
            rank_text(who, sizeof who, j->models[w.i]), w.v, w.mean);
    }
    /* only a rank whose waiting is significant is named (collectives.h) */
    if (j->colls.n_stragglers) {
        const struct rsr_straggler *s = &j->colls.stragglers[0];
        /* the advice follows why it is late (collectives.h) */
        static const char *const advice[RSR_WHY_NKINDS] = {
            [RSR_WHY_KERNELS] = "Its kernels run longer than the same kernels on the other ranks (the page's "
                                "kernels by rank): a slower or throttled GPU (clocks, temperature, power), "
                                "another process on it, or more work on that rank (uneven batches or shards).",
            [RSR_WHY_DATA_LOADING] = "It waits for its data: more DataLoader workers (num_workers), "
                                     "prefetch_factor, pin_memory, persistent_workers; check that rank's "
                                     "storage and its share of the data set.",
            [RSR_WHY_HOST_COMPUTE] = "Its host is slow to launch the work: look at that rank's CPU flame graph "
                                     "(Python overhead, preprocessing on the main thread), other processes on "
                                     "its CPUs, its CPU affinity.",
            [RSR_WHY_IO] = "It spends longer in file I/O than the others: look at what it reads or writes, and "
                           "at its file system.",
            [RSR_WHY_CHECKPOINT] = "It writes checkpoints the others do not wait for: save from one rank, "
                                   "asynchronously (torch.distributed.checkpoint.async_save), or less often.",
            [RSR_WHY_LAUNCH_GAPS] = "Its GPU sits between many short kernels: fuse them (torch.compile) or use "
                                    "CUDA graphs on that rank's work.",
            [RSR_WHY_UNKNOWN] = "Look at what is different on that rank: its kernels' durations, its host "
                                "(thermal throttling, a slow or shared GPU, other processes), its data loading "
                                "and its share of the work.",
        };
        add(&l, "straggler_rank", s->excess_pct >= STRAGGLER_CRITICAL_PCT ? RSR_SEV_CRITICAL : RSR_SEV_WARNING,
            s->excess_pct, "One rank holds the others back", advice[s->why.kind < RSR_WHY_NKINDS ? s->why.kind : RSR_WHY_UNKNOWN],
            "%s caused %.0f%% of all waiting in collectives: %s. Why (%s): %s",
            rank_text(who, sizeof who, j->models[s->model]), 100 * s->score, s->evidence,
            rsr_why_kind_name(s->why.kind), s->why.detail);
    }
    for (size_t i = 0; i < j->n; i++) {
        const struct rsr_model *m = j->models[i];
        double wall_s = (double)(m->wall_end_ns - m->wall_start_ns) / 1e9;
        if (wall_s <= 0)
            continue;
        uint64_t syncs = m->sum ? m->sum->n_syncs : 0;
        double rate = (double)syncs / wall_s;
        if (syncs >= 1000 && rate >= SYNCS_PER_S) {
            int64_t blocked = m->sum->sync_blocked_ns;
            add(&l, "too_many_syncs", RSR_SEV_WARNING, 100.0 * (double)blocked / 1e9 / wall_s,
                "Too many GPU-to-CPU synchronisations",
                "Each .item(), .cpu(), print of a tensor or torch.cuda.synchronize() stops the host "
                "until the GPU is done; keep values on the GPU, batch them, or use non_blocking copies. "
                "The wait flame graph shows where they come from.",
                "%s: %zu synchronisations (%.0f per second), %.3f thread-s blocked (all threads)",
                rank_text(who, sizeof who, m), (size_t)syncs, rate, (double)blocked / 1e9);
            break;
        }
    }
    for (size_t i = 0; i < j->n; i++) {
        const struct rsr_model *m = j->models[i];
        double wall_s = (double)(m->wall_end_ns - m->wall_start_ns) / 1e9;
        uint64_t calls = m->mem_allocs + m->mem_frees;
        if (wall_s > 0 && calls >= 1000 && (double)calls / wall_s >= MEM_CALLS_PER_S) {
            char size[32];
            rsr_fmt_bytes(size, sizeof size, (double)m->mem_alloc_bytes);
            add(&l, "memory_churn", RSR_SEV_WARNING, -1, "Device memory allocated and freed over and over",
                "cuMemAlloc/cuMemFree synchronise and are slow: let the caching allocator keep "
                "memory (avoid torch.cuda.empty_cache() in the loop), preallocate buffers, or use "
                "stream-ordered allocation (cudaMallocAsync).",
                "%s: %llu allocations and %llu frees (%.0f per second), %s allocated in all",
                rank_text(who, sizeof who, m), (unsigned long long)m->mem_allocs,
                (unsigned long long)m->mem_frees, (double)calls / wall_s, size);
            break;
        }
    }
    w = worst_gpu(j, g_idle);
    if (w.n && w.v >= IDLE_PCT) {
        const struct rsr_gpu_breakdown *b = &j->gpu[w.i];
        const struct rsr_stream_idle *s = rsr_gpu_busiest_stream(b);
        double span = b->span_ns > 0 ? (double)b->span_ns : 1;
        add(&l, "long_gpu_idle", w.v >= 50 ? RSR_SEV_CRITICAL : RSR_SEV_WARNING, w.v, "The GPU is idle much of the time",
            "See the idle breakdown: host wait points at launch overhead or CPU work (data loading, "
            "Python), other idle at synchronisation, I/O or imbalance; the timeline shows when.",
            "%s: idle %.1f%% of its GPU span; its busiest stream (of %zu) sat idle waiting for the host "
            "%.1f%% of the span, between kernels %.1f%%, otherwise %.1f%%; mean over ranks %.1f%%",
            rank_text(who, sizeof who, j->models[w.i]), w.v, b->n_streams,
            s ? 100.0 * (double)s->host_wait_ns / span : 0, s ? 100.0 * (double)s->kernel_wait_ns / span : 0,
            s ? 100.0 * (double)s->other_ns / span : 0, w.mean);
    }
    if (!waits_findings(&l, j) && j->storage.loading) {
        size_t wi = 0;
        double best = 0;
        for (size_t i = 0; i < j->n; i++)
            if (j->storage.loading[i].pct > best)
                best = j->storage.loading[i].pct, wi = i;
        if (best >= DATA_LOADING_PCT) {
            const struct rsr_data_loading *d = &j->storage.loading[wi];
            char size[32];
            rsr_fmt_bytes(size, sizeof size, (double)d->read_bytes);
            add(&l, "data_loading", RSR_SEV_WARNING, best, "The GPU waits for data loading",
                "Load ahead of the GPU: more DataLoader workers, pin_memory, prefetch_factor, "
                "faster storage or a local cache of the data set.",
                "%s: reading input files while the GPU sat idle for %.1f%% of its span "
                "(%.3f s of %.3f s reading, %s)",
                rank_text(who, sizeof who, j->models[wi]), best, (double)d->read_idle_ns / 1e9,
                (double)d->read_ns / 1e9, size);
        }
    }
    low_sm_finding(&l, j);
    steps_findings(&l, &j->steps);
    struct rsr_finding nf[16];
    /* A node's saturated CPUs or idle links are ranked by what they cost
     * the steps: the GPU's wait for the host, the un-hidden communication
     * (the worst rank's, an upper bound). */
    double host_wait = worst_gpu(j, g_host_wait).v, exposed = worst_gpu(j, g_exposed).v;
    for (size_t i = 0, k = nodes_findings(&j->nodes, nf, 16); i < k; i++) {
        double rec = strcmp(nf[i].id, "host_cpu_saturated") == 0 ? host_wait
                   : strcmp(nf[i].id, "link_underused") == 0    ? exposed
                                                                 : nf[i].recoverable_pct;
        add(&l, nf[i].id, nf[i].severity, rec, nf[i].title, nf[i].advice, "%s", nf[i].evidence);
    }
    claim_causes(&l, j);
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, cmp_finding);
    hang_finding(&l, j);
    memory_findings(&l, j);
    j->findings = l.v;
    j->n_findings = l.n;
    return l.oom ? -1 : 0;
}
