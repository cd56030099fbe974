/* The HTML report: report.json (parsed with yajl's tree API) and the GPU
 * timelines of the processes that get lanes become one self-contained page:
 * the summary and findings first, then timeline lanes that zoom and pan,
 * utilisation charts, tables and flame graphs. Lanes and charts are SVG
 * written here; the views of many ranks (strip plots, heatmaps) are drawn
 * on <canvas> by the page's script from data html_ranks.c writes. */
#include "reporter/out/html.h"
#include "reporter/out/unnamed.h"
#include "reporter/out/html_waits.h"
#include "reporter/out/html_memory.h"
#include "reporter/out/html_nodes.h"
#include "reporter/out/html_ends.h"
#include "reporter/out/html_json.h"
#include "reporter/out/html_layout.h"
#include "reporter/out/html_ranks.h"
#include "reporter/out/page.h"
#include "reporter/out/html_names.h"
#include "reporter/out/html_path.h"
#include "reporter/out/html_table.h"
#include "reporter/analyse/steps.h"
#include "reporter/base/json.h"
#include "reporter/base/units.h"
#include "reporter/base/array.h"
#include "formats/trace.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

/* Timeline geometry. The lanes' SVG is TL_W user units wide for the whole
 * span (enough float precision to zoom 1e5 times); y units are pixels.
 * Thinning assumes TL_COLUMNS pixels across the plot at full view. */
#define TL_W 1000000.0
#define TL_COLUMNS 2000
#define TL_LANE_H 14
#define TL_LANE_STEP 17
#define TL_ROW_GAP 8
/* Rectangles per lane: at most TL_RECTS_MAX, fewer when there are many
 * lanes so that the lanes stay near TL_RECTS_TOTAL rectangles (about 25
 * bytes each: half a MB of the page whatever the job), never under MIN per
 * lane (8 processes of 6 lanes fit the total). */
#define TL_RECTS_MAX 4000
#define TL_RECTS_MIN 400
#define TL_RECTS_TOTAL 20000
#define TABLE_ROWS 200
/* The rank bars' axis titles, above the bars. */
#define RANK_BARS_TOP 16
#define CHART_POINTS 1200

/* Lanes of one process, top to bottom. */
#define TL_LANES(X) \
    X(COMPUTE, "compute",       "#43a047") \
    X(COMM,    "communication", "#e53935") \
    X(COPY,    "copies",        "#1e88e5") \
    X(WAIT,    "waits",         "#fb8c00") \
    X(IO,      "I/O",           "#00897b") \
    X(RANGE,   "NVTX ranges",   "#6d4c41") \
    X(CKPT,    "checkpoints",   "#8e24aa")

enum tl_lane {
#define TL_LANE_ENUM(name, text, colour) TL_##name,
    TL_LANES(TL_LANE_ENUM)
#undef TL_LANE_ENUM
    TL_NLANES
};

static const char *const lane_text[] = {
#define TL_LANE_TEXT(name, text, colour) text,
    TL_LANES(TL_LANE_TEXT)
#undef TL_LANE_TEXT
};

static const char *const lane_colour[] = {
#define TL_LANE_COLOUR(name, text, colour) colour,
    TL_LANES(TL_LANE_COLOUR)
#undef TL_LANE_COLOUR
};

/* One colour per rank in the charts (cycled). */
static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};
#define NPALETTE (sizeof palette / sizeof palette[0])

/* ---- the page ---- */

struct page {
    FILE *f;
    yajl_val root;
    struct rsr_model *const *models;
    size_t nmodels;
    /* The job time line of report.json "timeline" (charts, checkpoints). */
    int have_timeline;
    double tl_start_us, tl_bin_us;
    /* What checkpoints[].start_s counts from, in us ("start_us", else
     * timeline.start_us); have_ck_origin 0: neither given. */
    int have_ck_origin;
    double ck_origin_us;
    int have_gpu;   /* some process has GPU figures */
    int have_io;    /* some process read or wrote a byte */
    /* The per-rank figures; many: more ranks than the per-rank look
     * (lanes for all, a line per rank) can show. */
    struct rsr_html_ranks *ranks;
    int many;
    struct rsr_html_names *names;   /* what the page calls each process */
    /* The models that get lanes and why; all_lanes: every process has one
     * (so a checkpointing rank without one gets a row of its own).
     * have_win: the lanes show [win_s, win_e) ns of the job time line
     * (report.json "lanes"). */
    struct rsr_html_lane *picks;
    size_t npicks;
    int all_lanes, have_win;
    int64_t win_s, win_e;
};

/* ---- summary ---- */

struct gpu_mean {
    size_t n;
    double compute, comm, memcpy, idle, non_compute, exposed, overlap;
    double host_wait_us, kernel_wait_us, other_us;
    double min_compute, max_compute;
    /* kernels' busy share and SM activity, over the processes that have
     * them (n_sm); measured: of those, how many by NVML's GPM; no_geom:
     * mean share of busy time without launch geometry */
    double busy, sm, no_geom;
    size_t n_sm, measured;
};

static void gpu_means(yajl_val procs, struct gpu_mean *g)
{
    memset(g, 0, sizeof *g);
    g->min_compute = INFINITY;
    g->max_compute = -INFINITY;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val gpu = rsr_jv_key(rsr_jv_at(procs, i), "gpu");
        double c;
        if (!rsr_jv_knum(gpu, "compute_pct", &c))
            continue;
        g->n++;
        g->compute += c;
        g->min_compute = fmin(g->min_compute, c);
        g->max_compute = fmax(g->max_compute, c);
        g->comm += rsr_jv_knum_or(gpu, "comm_pct", 0);
        g->memcpy += rsr_jv_knum_or(gpu, "memcpy_pct", 0);
        g->idle += rsr_jv_knum_or(gpu, "idle_pct", 0);
        g->non_compute += rsr_jv_knum_or(gpu, "non_compute_pct", 0);
        g->exposed += rsr_jv_knum_or(gpu, "exposed_comm_pct", 0);
        g->overlap += rsr_jv_knum_or(gpu, "comm_comp_overlap_pct", 0);
        yajl_val idle = rsr_jv_key(gpu, "idle_busiest_stream");
        g->host_wait_us += rsr_jv_knum_or(idle, "host_wait_us", 0);
        g->kernel_wait_us += rsr_jv_knum_or(idle, "kernel_wait_us", 0);
        g->other_us += rsr_jv_knum_or(idle, "other_us", 0);
        double sm;
        const char *src = rsr_jv_kstr(gpu, "sm_activity_source");
        if (rsr_jv_knum(gpu, "sm_activity_pct", &sm) && src &&
            (strcmp(src, "nvml-gpm") == 0 || rsr_jv_knum_or(gpu, "no_geometry_pct", 100) < 100)) {
            g->n_sm++;
            g->sm += sm;
            g->busy += rsr_jv_knum_or(gpu, "busy_pct", 0);
            g->no_geom += rsr_jv_knum_or(gpu, "no_geometry_pct", 0);
            g->measured += strcmp(src, "nvml-gpm") == 0;
        }
    }
    if (g->n) {
        double n = (double)g->n;
        g->compute /= n, g->comm /= n, g->memcpy /= n, g->idle /= n;
        g->non_compute /= n, g->exposed /= n, g->overlap /= n;
    }
    if (g->n_sm) {
        double n = (double)g->n_sm;
        g->sm /= n, g->busy /= n, g->no_geom /= n;
    }
}

/* Opens a card: the big value is printed by the caller between card_open
 * and card_close. */
static void card_open(FILE *f, int warn)
{
    fputs(warn ? "<div class=\"card warn\"><div class=\"v\">" : "<div class=\"card\"><div class=\"v\">", f);
}

static void card_close(FILE *f, const char *key)
{
    fprintf(f, "</div><div class=\"k\">%s</div><div class=\"d\">", key);
}

static void card_pct(FILE *f, const char *key, double v, int warn, const char *detail)
{
    card_open(f, warn);
    fprintf(f, "%.1f%%", v);
    card_close(f, key);
    fprintf(f, "%s</div></div>\n", detail);
}

/* The job's time per training step ("412 ms/step", "2.35 s/itr"), the
 * figure a person who trains a model steers by, in the page's first line,
 * the median and p90 step beside it, named (steps.h); without steps, the
 * wall time and why. */
static void step_headline(FILE *f, yajl_val st, double wall_s)
{
    double per, span, med, p90, n, conf;
    if (!st || !rsr_jv_knum(st, "per_step_ms", &per) || !rsr_jv_knum(st, "span_ms", &span) ||
        !rsr_jv_knum(st, "median_ms", &med) || !rsr_jv_knum(st, "p90_ms", &p90) || !rsr_jv_knum(st, "count", &n) ||
        !rsr_jv_knum(st, "confidence", &conf)) {
        fprintf(f, "<strong id=\"steptime\" title=\"no training steps found: the job's wall time is its figure\">"
                   "wall %.3g s</strong> &middot; ",
                wall_s);
        return;
    }
    const char *src = rsr_jv_kstr(st, "source");
    char head[48];
    fprintf(f, "<strong id=\"steptime\" title=\"%.0f training steps in %.3f s, from the first one's start to the "
               "last one's end, checkpoints, evaluation and data loading included; found from the %s (confidence "
               "%.2f)\">%s</strong> (median step %.3g ms, p90 %.3g ms; %zu slow) &middot; ",
            n, span / 1e3, src ? src : "?", conf, rsr_steps_time_text(head, sizeof head, per), med, p90,
            (size_t)rsr_jv_knum_or(st, "slow_count", (double)rsr_jv_len(rsr_jv_key(st, "slow"))));
}

/* Bars the step chart draws at most: beyond, each bar stands for a run of
 * consecutive steps (its longest), so that the page stays small. */
#define STEP_BARS 1500

/* Links to the flame graphs the report drew of its slowest steps
 * (OUT/step-INDEX-KIND.svg, report.json's steps.slow[].graphs). */
static void step_graph_links(FILE *f, yajl_val slow)
{
    static const char *const label[][2] = { { "cpu", "CPU" }, { "wait", "wait" }, { "gpu", "GPU" } };
    int any = 0;
    for (size_t i = 0; i < rsr_jv_len(slow); i++) {
        yajl_val x = rsr_jv_at(slow, i), g = rsr_jv_key(x, "graphs");
        if (!rsr_jv_len(g))
            continue;
        fputs(any++ ? "; " : "<p id=\"slow-graphs\">Flame graphs of the slowest steps: ", f);
        double idx = rsr_jv_knum_or(x, "index", 0);
        const char *cause = rsr_jv_kstr(x, "cause");
        fprintf(f, "step %.0f (%.4g ms, %.2gx the median", idx, rsr_jv_knum_or(x, "dur_ms", 0),
                rsr_jv_knum_or(x, "x_median", 0));
        if (cause) {
            fputs(", ", f);
            for (const char *c = cause; *c; c++)
                putc(*c == '_' ? ' ' : *c, f); /* launch_gaps: a word of report.json's */
        }
        fputs("): ", f);
        for (size_t k = 0, n = 0; k < rsr_jv_len(g); k++) {
            const char *kind = YAJL_IS_STRING(rsr_jv_at(g, k)) ? YAJL_GET_STRING(rsr_jv_at(g, k)) : NULL;
            for (size_t l = 0; kind && l < sizeof label / sizeof label[0]; l++)
                if (strcmp(kind, label[l][0]) == 0)
                    fprintf(f, "%s<a href=\"step-%.0f-%s.svg\">%s</a>", n++ ? " &middot; " : "", idx, label[l][0],
                            label[l][1]);
        }
    }
    if (any)
        fputs(". Any stretch of steps: <code>ringside flame TRACE_DIR --steps A-B</code> (or --slow-steps, "
              "--phase eval).</p>", f);
}

/* The step time over the run: a bar per step (or per run of steps), its
 * height the step time, split into compute, exposed communication, idle
 * and the rest (in the phase's colour); slow steps outlined; a click shows
 * the step on the timeline. */
static void step_chart(FILE *f, yajl_val st, yajl_val procs)
{
    yajl_val series = rsr_jv_key(st, "series");
    size_t n = rsr_jv_len(series);
    double max = 0;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++)
        max = fmax(max, rsr_jv_knum_or(rsr_jv_at(series, i), "dur_ms", 0));
    if (max <= 0)
        return;
    /* A checkpoint step can be thirty times the others: the scale stops
     * at four times the median, and taller bars are cut (marked). */
    double med = rsr_jv_knum_or(st, "median_ms", 0), tallest = max;
    if (med > 0 && 4 * med < max)
        max = 4 * med;
    /* per: series entries a bar stands for; report.json's series may
     * already stand for runs of steps (run steps an entry) */
    size_t per = (n + STEP_BARS - 1) / STEP_BARS, bars = (n + per - 1) / per;
    double run_v = rsr_jv_knum_or(st, "series_run", 1);
    size_t run = run_v > 1 ? (size_t)run_v : 1;
    size_t steps = run > 1 ? (size_t)rsr_jv_knum_or(st, "series_steps", (double)n) : n;
    yajl_val slow = rsr_jv_key(st, "slow");
    fprintf(f, "<section id=\"steps\"><h2>Steps</h2><p>Step time over the run: %zu steps", steps);
    if (per * run > 1)
        fprintf(f, " in %zu bars of %zu (each bar the longest of its steps)", bars, per * run);
    fprintf(f, ", the tallest %.3g ms", tallest);
    if (max < tallest)
        fprintf(f, " (the scale stops at %.3g ms, four times the median: taller bars are cut, a black cap on top)",
                max);
    fprintf(f, ". Each bar: <span class=\"key\" style=\"background:#43a047\"></span>compute "
               "<span class=\"key\" style=\"background:#e53935\"></span>exposed communication "
               "<span class=\"key\" style=\"background:#fb8c00\"></span>waiting for a late rank "
               "<span class=\"key\" style=\"background:#c8c8c8\"></span>GPU idle, the rest in the phase's colour "
               "(<span class=\"key\" style=\"background:#4477aa\"></span>training "
               "<span class=\"key\" style=\"background:#228833\"></span>evaluation "
               "<span class=\"key\" style=\"background:#999999\"></span>other); slow steps outlined red. Hover "
               "for the figures, click to show the step on the timeline, drag across bars to pick a stretch of "
               "steps.</p><div class=\"axes\">"
               "<div class=\"axis-y\">step time (ms), 0 to %.3g</div><div class=\"plot\">"
               "<svg viewBox=\"0 0 %zu 100\" preserveAspectRatio=\"none\" width=\"100%%\" height=\"140\" "
               "role=\"img\" id=\"step-bars\">",
            max, bars);
    size_t k = 0;
    for (size_t b = 0; b < bars; b++) {
        /* the bar's entries [lo, hi), its steps [first, last] */
        size_t lo = b * per, hi = lo + per < n ? lo + per : n, top = lo;
        size_t first = lo * run, last = (hi * run < steps ? hi * run : steps) - 1;
        int is_slow = 0;
        for (size_t i = lo; i < hi; i++)
            if (rsr_jv_knum_or(rsr_jv_at(series, i), "dur_ms", 0) >
                rsr_jv_knum_or(rsr_jv_at(series, top), "dur_ms", 0))
                top = i;
        double idx;
        for (; k < rsr_jv_len(slow) && rsr_jv_knum(rsr_jv_at(slow, k), "index", &idx) && idx < (double)first; k++)
            ;
        if (k < rsr_jv_len(slow) && rsr_jv_knum(rsr_jv_at(slow, k), "index", &idx) && idx <= (double)last)
            is_slow = 1;
        yajl_val x = rsr_jv_at(series, top);
        double dur = rsr_jv_knum_or(x, "dur_ms", 0), h = 100 * fmin(dur, max) / max;
        double comp = fmax(0, rsr_jv_knum_or(x, "compute_pct", 0)), exposed = fmax(0, rsr_jv_knum_or(x, "exposed_comm_pct", 0));
        double wait = fmax(0, rsr_jv_knum_or(x, "sync_wait_pct", 0)), idle = fmax(0, rsr_jv_knum_or(x, "idle_pct", 0));
        double rest = fmax(0, 100 - comp - exposed - wait - idle);
        const char *ph = rsr_jv_kstr(x, "phase");
        const char *phc = ph && strcmp(ph, "train") == 0 ? "#4477aa" : ph && strcmp(ph, "eval") == 0 ? "#228833"
                                                                                                       : "#999999";
        size_t top_step = (size_t)rsr_jv_knum_or(x, "index", (double)(top * run));
        fprintf(f, "<g data-s=\"%.0f\" data-d=\"%.0f\" data-a=\"%zu\" data-b=\"%zu\"><title>",
                rsr_jv_knum_or(x, "start_s", 0) * 1e9, dur * 1e6, first, last);
        if (last > first)
            fprintf(f, "steps %zu to %zu, the longest: ", first, last);
        fprintf(f, "step %zu (%s): %.3g ms; compute %.0f%%, exposed communication %.0f%%, waiting for a late rank "
                   "%.0f%%, idle %.0f%%%s%s</title>",
                top_step, ph ? ph : "?", dur, comp, exposed, wait, idle,
                rsr_jv_key(x, "checkpoint") && YAJL_IS_TRUE(rsr_jv_key(x, "checkpoint")) ? "; checkpoint" : "",
                is_slow ? "; slow" : "");
        /* from the bottom: compute, exposed communication, the wait for a
         * late rank, idle, the rest */
        const double part[5] = { comp, exposed, wait, idle, rest };
        const char *const colour[5] = { "#43a047", "#e53935", "#fb8c00", "#c8c8c8", phc };
        double y = 100, sum = comp + exposed + wait + idle + rest;
        for (int q = 0; q < 5; q++) {
            double hq = sum > 0 ? h * part[q] / sum : (q == 4 ? h : 0);
            if (hq <= 0)
                continue;
            y -= hq;
            fprintf(f, "<rect x=\"%zu.1\" y=\"%.2f\" width=\"0.8\" height=\"%.2f\" fill=\"%s\"/>", b, y, hq,
                    colour[q]);
        }
        if (dur > max)
            fprintf(f, "<rect x=\"%zu.1\" y=\"0\" width=\"0.8\" height=\"3\" fill=\"#222\"/>", b);
        if (is_slow)
            fprintf(f, "<rect x=\"%zu.1\" y=\"%.2f\" width=\"0.8\" height=\"%.2f\" fill=\"none\" stroke=\"#cc3311\" "
                       "stroke-width=\"2\" vector-effect=\"non-scaling-stroke\"/>", b, 100 - h, h);
        fputs("</g>", f);
    }
    fprintf(f, "</svg><div class=\"axis-x\">step, in the order they ran (0 to %zu, as report.json and "
               "<code>ringside flame --steps</code> number them)</div>", steps - 1);
    /* a stretch picked on the chart: its command, the job's folder from
     * the first process's trace file */
    const char *trace = rsr_jv_kstr(rsr_jv_key(rsr_jv_at(procs, 0), "trace"), "file");
    const char *cut = trace ? strrchr(trace, '/') : NULL;
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", cut ? (int)(cut - trace) : 1, cut ? trace : ".");
    fputs("<p class=\"note\" id=\"step-pick\" data-dir=\"", f);
    rsr_html_text(f, dir);
    fputs("\"></p>", f);
    step_graph_links(f, slow);
    fputs("</div></div></section>\n", f);
}

static void summary_cards(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    struct gpu_mean g;
    gpu_means(procs, &g);
    p->have_gpu = g.n > 0;
    char d[160];
    fputs("<div class=\"cards\" id=\"cards\">\n", f);
    if (g.n) {
        const char *over = g.n > 1 ? "mean of the GPU ranks" : "of the GPU time span";
        if (g.n_sm) {
            /* the first screen's answer to "is the GPU really working?":
             * the busy share a utilisation counter shows, and how much of
             * the GPU's SMs the kernels held meanwhile */
            snprintf(d, sizeof d, "busy %.0f%%, SM activity %.0f%% (%s%s): share of SMs holding a block",
                     g.busy, g.sm, g.measured == g.n_sm ? "NVML GPM" : g.measured ? "GPM, else geometry"
                                                                                   : "launch geometry",
                     g.n_sm > 1 ? ", rank mean" : "");
            card_pct(f, "SM activity", g.sm, g.busy >= 50 && g.sm < 0.5 * g.busy, d);
        } else {
            snprintf(d, sizeof d, "any kernel running: what a utilisation counter shows");
            card_pct(f, "GPU busy", 100 - g.idle, 0, d);
        }
        if (g.n > 1)
            snprintf(d, sizeof d, "%s; ranks %.1f%% to %.1f%%", over, g.min_compute, g.max_compute);
        else
            snprintf(d, sizeof d, "%s", over);
        card_pct(f, "GPU compute", g.compute, 0, d);
        snprintf(d, sizeof d, "%.1f%% of it overlapped with compute", g.overlap);
        card_pct(f, "Communication", g.comm, 0, d);
        snprintf(d, sizeof d, "communication with no compute beside it, %% of span");
        card_pct(f, "Exposed communication", g.exposed, g.exposed >= 5, d);
        snprintf(d, sizeof d, "memcpy and memset, %s", over);
        card_pct(f, "Copies", g.memcpy, 0, d);
        double idle_us = g.host_wait_us + g.kernel_wait_us + g.other_us;
        if (idle_us > 0)
            snprintf(d, sizeof d, "the busiest stream's idle: host wait %.0f%%, kernel wait %.0f%%, other %.0f%%",
                     100 * g.host_wait_us / idle_us, 100 * g.kernel_wait_us / idle_us,
                     100 * g.other_us / idle_us);
        else
            snprintf(d, sizeof d, "no GPU work running");
        card_pct(f, "GPU idle", g.idle, g.idle >= 20, d);
    }
    /* Checkpoints and storage only where file I/O was traced (a PyTorch
     * profiler trace has none). */
    double ck_pct;
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    if (rsr_jv_len(cks) || (p->have_io && rsr_jv_knum(p->root, "checkpoint_pct", &ck_pct))) {
        if (!rsr_jv_knum(p->root, "checkpoint_pct", &ck_pct))
            ck_pct = 0;
        double stall = 0, bytes = 0;
        for (size_t i = 0; i < rsr_jv_len(cks); i++) {
            stall += rsr_jv_knum_or(rsr_jv_at(cks, i), "gpu_stall_s", 0);
            bytes += rsr_jv_knum_or(rsr_jv_at(cks, i), "bytes", 0);
        }
        char b[32], s[32];
        rsr_fmt_bytes(b, sizeof b, bytes);
        rsr_html_fmt_ns(s, sizeof s, stall * 1e9);
        if (rsr_jv_len(cks))
            snprintf(d, sizeof d, "%zu checkpoint%s, %s written, GPU stall %s", rsr_jv_len(cks),
                     rsr_jv_len(cks) == 1 ? "" : "s", b, s);
        else
            snprintf(d, sizeof d, "no burst of large writes found");
        card_pct(f, "Checkpoints, of wall time", ck_pct, ck_pct >= 5, d);
    }
    /* report.json lists only the ranks whose waiting is significant
     * (collectives.h); with none, the card says so and how far the most
     * waited-for rank was from the bar */
    yajl_val strag = rsr_jv_key(p->root, "stragglers");
    if (strag) {
        yajl_val w = rsr_jv_at(strag, 0);
        card_open(f, w != NULL);
        double r, v, bar;
        if (w && rsr_jv_knum(w, "rank", &r))
            fprintf(f, "rank %.0f", r);
        else
            fputs("none", f);
        card_close(f, "Worst straggler");
        yajl_val chk = rsr_jv_key(p->root, "straggler_check");
        if (w) {
            /* the evidence says by how much (excess_pct); a report without
             * that figure has the score */
            if (!rsr_jv_knum(w, "excess_pct", &v) && rsr_jv_knum(w, "score", &v))
                fprintf(f, "score %.3g; ", v);
            rsr_html_value(f, rsr_jv_key(w, "evidence"));
        } else if (rsr_jv_knum(chk, "min_excess_pct", &bar) && rsr_jv_knum(chk, "max_excess_pct", &v) &&
                   rsr_jv_knum_or(chk, "parts", 0) > 0) {
            fprintf(f, "none stands out: no rank made the others wait %.0f%% of their time beyond an equal "
                       "rank's share (the most %.1f%%)", bar, v);
        } else {
            fputs("none stands out", f);
        }
        fputs("</div></div>\n", f);
    }
    double skew;
    if (rsr_jv_knum(p->root, "skew_us", &skew)) {
        card_open(f, skew > 100);
        fprintf(f, "%.1f \xc2\xb5s", skew);
        card_close(f, "Clock skew (residual)");
        yajl_val al = rsr_jv_key(p->root, "alignment");
        const char *how = rsr_jv_kstr(al, "method");
        double matched;
        if (how) {
            fputs("aligned by ", f);
            rsr_html_text(f, how);
            if (rsr_jv_knum(al, "matched_collectives", &matched) && matched > 0)
                fprintf(f, " (%.0f collectives)", matched);
        } else {
            fputs("after aligning the ranks' clocks", f);
        }
        fputs("</div></div>\n", f);
    }
    double rb = 0, wb = 0, rs = 0, ws = 0, dropped = 0;
    int have_io = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val proc = rsr_jv_at(procs, i), io = rsr_jv_key(proc, "io");
        dropped += rsr_jv_knum_or(proc, "dropped", 0);
        if (!io)
            continue;
        have_io = 1;
        rb += rsr_jv_knum_or(io, "read_bytes", 0);
        wb += rsr_jv_knum_or(io, "write_bytes", 0);
        rs += rsr_jv_knum_or(io, "read_s", 0);
        ws += rsr_jv_knum_or(io, "write_s", 0);
    }
    if (have_io && p->have_io) {
        char r[32], w[32];
        rsr_fmt_bytes(r, sizeof r, rb);
        rsr_fmt_bytes(w, sizeof w, wb);
        card_open(f, 0);
        fprintf(f, "%s / %s", r, w);
        card_close(f, "Storage read / written");
        rsr_html_fmt_ns(r, sizeof r, rs * 1e9);
        rsr_html_fmt_ns(w, sizeof w, ws * 1e9);
        fprintf(f, "%s reading, %s writing (all processes)</div></div>\n", r, w);
    }
    /* torch.compile's compilation, as the terminal's line says it */
    yajl_val cc = rsr_jv_key(p->root, "compile");
    if (cc) {
        double t = rsr_jv_knum_or(cc, "time_s", 0), np = rsr_jv_knum_or(cc, "processes", 0),
               nw = rsr_jv_knum_or(cc, "workers", 0), nc = rsr_jv_knum_or(cc, "compiler_runs", 0);
        card_open(f, 0);
        fprintf(f, "%.2f s", t);
        card_close(f, "torch.compile");
        fprintf(f, "compiling: Dynamo %.2f s, Inductor %.2f s in %.0f process%s; %.0f compile worker%s, "
                   "%.0f compiler run%s</div></div>\n",
                rsr_jv_knum_or(cc, "dynamo_s", 0), rsr_jv_knum_or(cc, "inductor_s", 0), np, np == 1 ? "" : "es", nw,
                nw == 1 ? "" : "s", nc, nc == 1 ? "" : "s");
    }
    /* The process count is in the header; a card only when records were
     * lost, since every figure above is then short of them. */
    if (dropped > 0) {
        card_open(f, 1);
        fprintf(f, "%.0f", dropped);
        card_close(f, "Records dropped");
        fputs("the agent's memory bound was reached; the figures miss them</div></div>\n", f);
    }
    fputs("</div>\n", f);
    if (!g.n)
        fputs("<p class=\"note\">No GPU activity in these traces: the GPU figures, lanes and "
              "charts are left out.</p>\n", f);
}

static void findings(struct page *p)
{
    FILE *f = p->f;
    yajl_val fs = rsr_jv_key(p->root, "findings");
    fputs("<div id=\"findings\"><h2>Findings</h2>\n", f);
    if (!fs) {
        fputs("<p class=\"note\">report.json has no findings.</p></div>\n", f);
        return;
    }
    if (!rsr_jv_len(fs)) {
        fputs("<p class=\"note\">None: no known pattern matched.</p></div>\n", f);
        return;
    }
    fputs("<ol class=\"findings\">\n", f);
    for (size_t i = 0; i < rsr_jv_len(fs); i++) {
        yajl_val x = rsr_jv_at(fs, i);
        const char *sev = rsr_jv_kstr(x, "severity");
        fputs("<li class=\"", f);
        rsr_html_text(f, sev);
        fputs("\"><h3>", f);
        if (rsr_jv_kstr(x, "title"))
            rsr_html_text(f, rsr_jv_kstr(x, "title"));
        else
            rsr_html_value(f, rsr_jv_key(x, "id"));
        if (sev) {
            fputs("<span class=\"sev\">", f);
            rsr_html_text(f, sev);
            fputs("</span>", f);
        }
        double rec;
        if (rsr_jv_knum(x, "recoverable_pct", &rec) && rsr_jv_kstr(x, "cause"))
            fprintf(f, "<span class=\"gain\" title=\"the share of the step time removing its cause gives back "
                       "(the critical path's what-if)\">gives back %.0f%%</span>", rec);
        else if (rsr_jv_knum(x, "recoverable_pct", &rec))
            fprintf(f, "<span class=\"gain\" title=\"an upper bound on the share of the %s fixing it would give "
                       "back\">up to %.0f%%</span>",
                    rsr_jv_key(p->root, "steps") ? "step time" : "wall time", rec);
        else
            fprintf(f, "<span class=\"gain\">%s</span>", rsr_jv_key(p->root, "critical_path") ? "context"
                                                                                                 : "gain not measured");
        fputs("</h3><p class=\"ev\">", f);
        rsr_html_value(f, rsr_jv_key(x, "evidence"));
        fputs("</p><p class=\"adv\">", f);
        rsr_html_value(f, rsr_jv_key(x, "advice"));
        fputs("</p></li>\n", f);
    }
    fputs("</ol></div>\n", f);
}

/* Where each rank's GPU time goes: compute, exposed communication (the
 * transfer no compute hides), waiting for a late rank (not hidden by
 * compute), the rest of non-compute (copies, communication hidden only by
 * copies), idle: together the whole span. Unbalanced ranks stand out. */
static void rank_bars(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        n += rsr_jv_knum(rsr_jv_key(rsr_jv_at(procs, i), "gpu"), "compute_pct", &(double){ 0 });
    if (!n)
        return;
    /* Rows shrink when there are many ranks, labels then thin out. */
    const double x0 = 64, bw = 330, rh = n <= 16 ? 16 : fmax(4, 256.0 / (double)n);
    size_t label_every = (size_t)ceil(12 / rh);
    fprintf(f, "<div id=\"rank-bars\"><h2>GPU time per rank</h2>"
               "<svg viewBox=\"0 0 480 %.0f\" style=\"width:100%%;max-width:480px\" role=\"img\">\n",
            n * rh + 34 + RANK_BARS_TOP);
    fprintf(f, "<text class=\"axis-y\" x=\"0\" y=\"11\" font-size=\"11\" fill=\"#24292f\">process</text>"
               "<text class=\"axis-x\" x=\"%.0f\" y=\"11\" font-size=\"11\" fill=\"#24292f\">share of the "
               "GPU span (%%), 0 to 100</text>\n", x0);
    enum { NSEG = 5 };
    static const char *const seg_name[NSEG] = { "compute", "exposed communication", "waiting for a late rank",
                                                "other non-compute", "idle" };
    static const char *const seg_col[NSEG] = { "#43a047", "#e53935", "#fb8c00", "#1e88e5", "#c4c9cf" };
    size_t row = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val proc = rsr_jv_at(procs, i), gpu = rsr_jv_key(proc, "gpu");
        double c;
        if (!rsr_jv_knum(gpu, "compute_pct", &c))
            continue;
        double ex = rsr_jv_knum_or(gpu, "exposed_comm_pct", 0);
        double nc = rsr_jv_knum_or(gpu, "non_compute_pct", 0);
        double idle = rsr_jv_knum_or(gpu, "idle_pct", 0);
        double wait = rsr_jv_knum_or(gpu, "exposed_sync_wait_pct", 0);
        double seg[NSEG] = { c, ex, wait, fmax(0, nc - ex - wait), idle };
        double y = (double)row * rh + RANK_BARS_TOP, x = x0;
        if (row++ % label_every == 0) {
            fprintf(f, "<text x=\"0\" y=\"%.1f\" font-size=\"11\">", y + fmin(12, rh));
            rsr_html_proc(f, p->names, proc);
            fputs("</text>", f);
        }
        for (int s = 0; s < NSEG; s++) {
            double w = fmax(0, fmin(seg[s], 100 - (x - x0) / bw * 100)) / 100 * bw;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
                       "<title>", x, y + rh / 8, w, rh * 0.75, seg_col[s]);
            rsr_html_proc(f, p->names, proc);
            fprintf(f, ": %s %.1f%%</title></rect>", seg_name[s], seg[s]);
            x += w;
        }
        if ((row - 1) % label_every == 0)
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\">%.0f%% compute</text>\n",
                    x0 + bw + 6, y + fmin(12, rh), c);
    }
    double y = n * rh + 14 + RANK_BARS_TOP, x = x0;
    for (int s = 0; s < NSEG; s++) {
        if (x + 22 + 6.2 * strlen(seg_name[s]) > 480)
            x = x0, y += 12;
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"9\" height=\"9\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\">%s</text>",
                x, y - 8, seg_col[s], x + 12, y, seg_name[s]);
        x += 12 + 6.2 * strlen(seg_name[s]) + 10;
    }
    fputs("</svg></div>\n", f);
}

/* ---- timeline lanes ---- */

struct iv {
    int64_t s, e;
    uint32_t name;  /* string id in the process's model */
    int32_t op;     /* sync kind (waits), I/O op (I/O); -1 otherwise */
};

/* Maps ns on the job time line to lane x units, and marks the names the
 * drawn rectangles refer to (only those go into the page). ops: the lane's
 * rectangles carry an op (waits, I/O). */
struct geo {
    int64_t origin, end;
    double scale;
    unsigned char *used;
    size_t nused;
    int ops;
};

static void use_name(const struct geo *g, uint32_t name)
{
    if (name < g->nused)
        g->used[name] = 1;
}

/* A lane's rectangles are written into its <g data-r="..."> as
 * "x,width,name[,op];" and, for a merged block, "x,width,name[,op],count,
 * busy ns,opacity;": the script makes the <rect>s at load (y from the
 * group, height from the style sheet), from a third of the bytes the
 * elements would take. x units of a tenth are a hundredth of the view at
 * the deepest zoom. */
static void put_rect(FILE *f, const struct geo *g, const struct iv *v)
{
    fprintf(f, "%.1f,%.1f,%" PRIu32, (double)(v->s - g->origin) * g->scale,
            (double)(v->e - v->s) * g->scale, v->name);
    if (g->ops)
        fprintf(f, ",%d", v->op >= 0 ? (int)v->op : 0);
    putc(';', f);
    use_name(g, v->name);
}

struct group {
    int64_t s, e, busy, longest;
    struct iv top;  /* the longest member */
    size_t k;
};

static void put_group(FILE *f, const struct geo *g, const struct group *m, int64_t px)
{
    if (m->k == 1) {
        put_rect(f, g, &m->top);
        return;
    }
    /* at least a pixel wide, but not past the end of what is drawn */
    int64_t e = m->e > m->s + px ? m->e : m->s + px;
    if (e > g->end)
        e = g->end > m->s ? g->end : m->s + 1;
    double fill = (double)m->busy / (double)(e - m->s);
    fprintf(f, "%.1f,%.1f,%" PRIu32, (double)(m->s - g->origin) * g->scale,
            (double)(e - m->s) * g->scale, m->top.name);
    if (g->ops)
        fprintf(f, ",%d", m->top.op >= 0 ? (int)m->top.op : 0);
    fprintf(f, ",%zu,%" PRId64 ",%.2f;", m->k, m->busy, fmin(1, fmax(0.3, fill)));
    use_name(g, m->top.name);
}

/* The thinning. Intervals (in start order) at least px wide are drawn as
 * they are. Narrower ones are gathered into groups: a group takes every
 * narrow interval that starts within px of the group's first, and is drawn
 * as one rectangle (at least px wide, shaded by how busy it was) that names
 * its count, busy time and longest member. So a lane has at most about
 * span/px groups plus its wide intervals. Returns the number of
 * rectangles; f NULL only counts them. */
static size_t thin(FILE *f, const struct geo *g, const struct iv *v, size_t n, int64_t px)
{
    size_t out = 0;
    struct group cur = { 0 };
    for (size_t i = 0; i < n; i++) {
        int64_t d = v[i].e - v[i].s;
        if (d >= px) {
            if (f)
                put_rect(f, g, &v[i]);
            out++;
            continue;
        }
        if (cur.k && v[i].s < cur.s + px) {
            cur.k++;
            cur.busy += d;
            if (v[i].e > cur.e)
                cur.e = v[i].e;
            if (d > cur.longest)
                cur.longest = d, cur.top = v[i];
            continue;
        }
        if (cur.k) {
            if (f)
                put_group(f, g, &cur, px);
            out++;
        }
        cur = (struct group){ v[i].s, v[i].e, d, d, v[i], 1 };
    }
    if (cur.k) {
        if (f)
            put_group(f, g, &cur, px);
        out++;
    }
    return out;
}

/* One row of lanes: a process's model (may be NULL) and the rank it
 * stands for (checkpoints are matched by rank). */
struct row {
    const struct rsr_model *m;
    size_t mi;          /* index into the models, for the names table */
    double rank;        /* -1: none */
    const struct rsr_html_lane *pick;   /* why it was drawn; NULL: no model */
    struct iv *lane[TL_NLANES];
    size_t n[TL_NLANES];
    unsigned char *used;                /* names drawn, by string id */
};

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if ((x->rank >= 0) != (y->rank >= 0))
        return x->rank >= 0 ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int64_t px = x->m ? x->m->pid : 0, py = y->m ? y->m->pid : 0;
    return (px > py) - (px < py);
}

static int lane_of(uint8_t cls)
{
    switch (cls) {
    case RSR_GPU_COMPUTE: return TL_COMPUTE;
    case RSR_GPU_COMM: return TL_COMM;
    case RSR_GPU_MEMCPY:
    case RSR_GPU_MEMSET: return TL_COPY;
    default: return -1;
    }
}

/* Whether [*s, *e) has a part inside the lanes' window (report.json
 * "lanes"), cut to it; with no window, whether it is not empty. */
static int in_window(const struct page *p, int64_t *s, int64_t *e)
{
    if (p->have_win) {
        if (*s < p->win_s)
            *s = p->win_s;
        if (*e > p->win_e)
            *e = p->win_e;
    }
    return *e > *s;
}

/* A checkpoint on the job time line, in ns, when report.json places it. */
static int ckpt_span(const struct page *p, yajl_val ck, int64_t *s, int64_t *e)
{
    double st, dur;
    if (!p->have_ck_origin || !rsr_jv_knum(ck, "start_s", &st) || !rsr_jv_knum(ck, "dur_s", &dur))
        return 0;
    /* Within a century of the clock's zero both ways, so that the casts
     * and the span stay inside int64 whatever the file says. */
    double a = p->ck_origin_us * 1e3 + st * 1e9, b = a + dur * 1e9;
    if (!(fabs(a) < 4e18 && fabs(b) < 4e18 && b >= a))
        return 0;
    *s = (int64_t)a;
    *e = (int64_t)b;
    return 1;
}

static int cmp_iv(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* The names the drawn rectangles refer to, per model: {"id": name}; a
 * model with thousands of kernel names or file paths brings only those
 * on its lanes. */
static void put_names(FILE *f, const struct row *rows, size_t nrows, size_t nmodels)
{
    struct rsr_jw jw, *w = &jw;
    fputs("<script type=\"application/json\" id=\"tl-names\">", f);
    rsr_jw_open(w, f, RSR_JW_SCRIPT);
    rsr_jw_array(w, 0);
    for (size_t mi = 0; mi < nmodels; mi++) {
        const struct row *row = NULL;
        for (size_t r = 0; r < nrows; r++)
            if (rows[r].m && rows[r].mi == mi)
                row = &rows[r];
        rsr_jw_object(w, RSR_JW_LINES);
        for (size_t i = 0; row && row->used && i < row->m->strings.n; i++) {
            if (!row->used[i])
                continue;
            char id[24];
            snprintf(id, sizeof id, "%zu", i);
            rsr_jw_kstr(w, id, rsr_model_str(row->m, (uint32_t)i));
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_flush(w);
    fputs("</script>\n", f);
    /* The names of the ops on the waits and I/O lanes (data-o). */
    fputs("<script type=\"application/json\" id=\"tl-ops\">", f);
    rsr_jw_object(w, 0);
    rsr_jw_karray(w, "sync", 0);
    for (unsigned i = 0; i < RSF_SYNC_NKINDS; i++)
        rsr_jw_str(w, rsf_sync_kind_name(i));
    rsr_jw_end(w);
    rsr_jw_karray(w, "io", 0);
    for (unsigned i = 0; i < RSF_IO_NOPS; i++)
        rsr_jw_str(w, rsf_io_op_name(i));
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_close(w); /* a failed write shows in f's error, which the page's writer checks */
    fputs("</script>\n", f);
}

static void row_label(FILE *f, const struct rsr_html_names *names, const struct row *r)
{
    const char *name = r->m ? rsr_html_name_pid(names, (double)r->m->pid) : NULL;
    if (r->rank >= 0)
        fprintf(f, "rank %.0f", r->rank);
    else if (name)
        rsr_html_text(f, name);
    else if (r->m)
        fprintf(f, "pid %" PRId64, r->m->pid);
    else
        fputs("process", f);
}

static void put_whys(FILE *f, const struct rsr_html_lane *pick)
{
    for (int w = 0; pick && w < pick->nwhy; w++) {
        fputs(w ? ", " : "", f);
        rsr_html_text(f, pick->why[w]);
    }
}

static void free_rows(struct row *rows, size_t n)
{
    for (size_t r = 0; r < n; r++) {
        for (int l = 0; l < TL_NLANES; l++)
            free(rows[r].lane[l]);
        free(rows[r].used);
    }
    free(rows);
}

static void widen(int64_t *origin, int64_t *end, int64_t s, int64_t e)
{
    if (s < *origin)
        *origin = s;
    if (e > *end)
        *end = e;
}

/* Gathers the intervals of a row's model lanes (r->n[] counted them), in
 * start order as the finished model keeps them, cut to the window. -1
 * when out of memory. */
static int fill_row(const struct page *p, struct row *r)
{
    const struct rsr_model *m = r->m;
    size_t k[TL_NLANES] = { 0 };
    for (int l = 0; l < TL_NLANES; l++)
        if (l != TL_CKPT && r->n[l] && !(r->lane[l] = malloc(r->n[l] * sizeof *r->lane[l])))
            return -1;
    if (!(r->used = calloc(m->strings.n + 1, 1)))
        return -1;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        int64_t s = op->start_ns, e = op->end_ns;
        int l = lane_of(op->cls);
        if (l >= 0 && in_window(p, &s, &e))
            r->lane[l][k[l]++] = (struct iv){ s, e, op->name, -1 };
    }
    for (size_t i = 0; i < m->n_syncs; i++) {
        int64_t s = m->syncs[i].start_ns, e = m->syncs[i].end_ns;
        if (in_window(p, &s, &e))
            r->lane[TL_WAIT][k[TL_WAIT]++] = (struct iv){ s, e, 0, m->syncs[i].kind };
    }
    for (size_t i = 0; i < m->n_io; i++) {
        int64_t s = m->io[i].start_ns, e = m->io[i].end_ns;
        if (in_window(p, &s, &e))
            r->lane[TL_IO][k[TL_IO]++] = (struct iv){ s, e, m->io[i].path, m->io[i].op };
    }
    for (size_t i = 0; i < m->n_ranges; i++) {
        int64_t s = m->ranges[i].start_ns, e = m->ranges[i].end_ns;
        if (in_window(p, &s, &e))
            r->lane[TL_RANGE][k[TL_RANGE]++] = (struct iv){ s, e, m->ranges[i].name, -1 };
    }
    return 0;
}

static void drop_row(struct row *r)
{
    for (int l = 0; l < TL_NLANES; l++) {
        free(r->lane[l]);
        r->lane[l] = NULL;
    }
}

/* Fills rows with one per picked model, plus, when every process has
 * lanes, one per checkpointing rank that has none; *origin and *end become the
 * time span of everything drawn (the window, when there is one). */
static int build_rows(const struct page *p, struct row **out, size_t *nout, int64_t *origin,
                      int64_t *end)
{
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    size_t cap = p->npicks + (p->all_lanes ? rsr_jv_len(cks) : 0);
    struct row *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (!rows)
        return -1;
    size_t n = 0;
    *origin = INT64_MAX;
    *end = INT64_MIN;
    for (size_t k = 0; k < p->npicks; k++) {
        size_t mi = p->picks[k].model;
        const struct rsr_model *m = p->models[mi];
        struct row *r = &rows[n++];
        r->m = m;
        r->mi = mi;
        r->rank = m->rank >= 0 ? m->rank : -1;
        r->pick = &p->picks[k];
        /* Counts and the span only: the intervals are gathered one row at
         * a time while drawing, so memory does not grow with the ranks. */
        for (size_t i = 0; i < m->n_ops; i++) {
            int64_t s = m->ops[i].start_ns, e = m->ops[i].end_ns;
            int l = lane_of(m->ops[i].cls);
            if (l >= 0 && in_window(p, &s, &e))
                r->n[l]++, widen(origin, end, s, e);
        }
        for (size_t i = 0; i < m->n_syncs; i++) {
            int64_t s = m->syncs[i].start_ns, e = m->syncs[i].end_ns;
            if (in_window(p, &s, &e))
                r->n[TL_WAIT]++, widen(origin, end, s, e);
        }
        for (size_t i = 0; i < m->n_io; i++) {
            int64_t s = m->io[i].start_ns, e = m->io[i].end_ns;
            if (in_window(p, &s, &e))
                r->n[TL_IO]++, widen(origin, end, s, e);
        }
        for (size_t i = 0; i < m->n_ranges; i++) {
            int64_t s = m->ranges[i].start_ns, e = m->ranges[i].end_ns;
            if (in_window(p, &s, &e))
                r->n[TL_RANGE]++, widen(origin, end, s, e);
        }
    }
    /* Checkpoints: a lane of their own on their rank's row. Where there are
     * other lanes, only those that overlap them: a checkpoint outside means
     * the two sources do not share a clock, and the lanes would shrink to
     * nothing. */
    int64_t gpu_s = *origin, gpu_e = *end;
    for (size_t i = 0; i < rsr_jv_len(cks); i++) {
        yajl_val ck = rsr_jv_at(cks, i);
        int64_t s, e;
        double rank = rsr_jv_knum_or(ck, "rank", -1);
        if (!ckpt_span(p, ck, &s, &e) || !in_window(p, &s, &e) ||
            (gpu_e > gpu_s && (e < gpu_s || s > gpu_e)))
            continue;
        struct row *r = NULL;
        for (size_t k = 0; k < n && !r; k++)
            if (rows[k].rank == rank)
                r = &rows[k];
        if (!r && !p->all_lanes)
            continue;
        if (!r) {
            r = &rows[n++];
            r->rank = rank;
            r->mi = SIZE_MAX;
        }
        struct iv *grown = realloc(r->lane[TL_CKPT], (r->n[TL_CKPT] + 1) * sizeof *grown);
        if (!grown) {
            *out = rows, *nout = n;
            return -1;
        }
        r->lane[TL_CKPT] = grown;
        grown[r->n[TL_CKPT]++] = (struct iv){ s, e, (uint32_t)i, -1 };
        widen(origin, end, s, e);
    }
    for (size_t k = 0; k < n; k++)
        if (rows[k].n[TL_CKPT] > 1)
            qsort(rows[k].lane[TL_CKPT], rows[k].n[TL_CKPT], sizeof(struct iv), cmp_iv);
    qsort(rows, n, sizeof *rows, cmp_row);
    if (p->have_win) {
        *origin = p->win_s;
        *end = p->win_e;
    }
    *out = rows;
    *nout = n;
    return 0;
}

/* Checkpoints shaded across all lanes: their union, so that a thousand
 * ranks checkpointing together shade once. */
static int shade_checkpoints(const struct page *p, int64_t origin, int64_t end, double scale,
                             int height)
{
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    size_t n = 0;
    struct iv *v = malloc((rsr_jv_len(cks) + 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < rsr_jv_len(cks); i++) {
        int64_t s, e;
        if (ckpt_span(p, rsr_jv_at(cks, i), &s, &e) && e > origin && s < end && e > s)
            v[n++] = (struct iv){ s, e, 0, -1 };
    }
    qsort(v, n, sizeof *v, cmp_iv);
    for (size_t i = 0; i < n;) {
        int64_t s = v[i].s, e = v[i].e;
        for (i++; i < n && v[i].s <= e; i++)
            if (v[i].e > e)
                e = v[i].e;
        fprintf(p->f, "<rect class=\"ck\" x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"%d\"/>\n",
                (double)(s - origin) * scale, (double)(e - s) * scale, height);
    }
    free(v);
    return 0;
}

/* What the lanes show when they are not every process: which ranks and
 * why, the window, and how to get the rest. */
static void lanes_note(const struct page *p, const struct row *rows, size_t nrows)
{
    FILE *f = p->f;
    yajl_val lanes = rsr_jv_key(p->root, "lanes");
    size_t nprocs = rsr_jv_len(rsr_jv_key(p->root, "processes"));
    if (p->npicks >= nprocs && !p->have_win)
        return;
    fprintf(f, "<p class=\"note\" id=\"lanes-note\">Lanes for %zu of %zu processes", p->npicks, nprocs);
    const char *sep = ": ";
    for (size_t r = 0; r < nrows; r++) {
        if (!rows[r].pick)
            continue;
        fputs(sep, f);
        sep = ", ";
        row_label(f, p->names, &rows[r]);
        if (rows[r].pick->nwhy) {
            fputs(" (", f);
            put_whys(f, rows[r].pick);
            putc(')', f);
        }
    }
    double from, to;
    if (p->have_win && rsr_html_lanes_window(p->root, &from, &to))
        fprintf(f, "; from %.3f s to %.3f s of the job, the stretch their operations fit in", from, to);
    putc('.', f);
    if (!lanes)
        fputs(" Picked here: rank 0 (first), report.json's worst straggler, the rank that waited "
              "least in collectives (slowest: the others waited for it) and the one that waited "
              "most (fastest).", f);
    fputs(" The heatmaps and the strip plots show every rank; for the operations of any other, or "
          "outside the window: <code>", f);
    const char *cmd = rsr_jv_kstr(lanes, "export");
    rsr_html_text(f, cmd ? cmd : "ringside export perfetto DIR --ranks LIST --from S --to S -o FILE");
    fputs("</code>.</p>\n", f);
}

static int timeline(struct page *p)
{
    FILE *f = p->f;
    struct row *rows = NULL;
    size_t nrows = 0;
    int64_t origin, end;
    if (build_rows(p, &rows, &nrows, &origin, &end) != 0) {
        free_rows(rows, nrows);
        errno = ENOMEM;
        return -1;
    }
    fputs("<section id=\"timeline\"><h2>Timeline</h2>\n", f);
    size_t nlanes = 0;
    for (size_t r = 0; r < nrows; r++)
        for (int l = 0; l < TL_NLANES; l++)
            nlanes += rows[r].n[l] > 0;
    if (!nlanes || end <= origin) {
        fputs("<p class=\"note\">No GPU work or checkpoints with times in these traces.</p>", f);
        lanes_note(p, rows, nrows);
        fputs("</section>\n", f);
        free_rows(rows, nrows);
        return 0;
    }
    int64_t span = end - origin;
    size_t cap = TL_RECTS_TOTAL / nlanes;
    cap = cap > TL_RECTS_MAX ? TL_RECTS_MAX : cap < TL_RECTS_MIN ? TL_RECTS_MIN : cap;
    int height = 0, whys = 0;
    for (size_t r = 0; r < nrows; r++) {
        int k = 0;
        for (int l = 0; l < TL_NLANES; l++)
            k += rows[r].n[l] > 0;
        if (k)
            height += k * TL_LANE_STEP + TL_ROW_GAP;
        whys |= rows[r].pick && rows[r].pick->nwhy;
    }
    char s[32];
    rsr_html_fmt_ns(s, sizeof s, (double)span);
    fputs("<div class=\"tl-bar\"><button id=\"tl-in\" title=\"zoom in\">+</button>"
          "<button id=\"tl-out\" title=\"zoom out\">&minus;</button>"
          "<button id=\"tl-left\" title=\"pan left\">&larr;</button>"
          "<button id=\"tl-right\" title=\"pan right\">&rarr;</button>"
          "<button id=\"tl-reset\">whole run</button><span id=\"tl-range\"></span>", f);
    for (int l = 0; l < TL_NLANES; l++)
        fprintf(f, "<span class=\"key\" style=\"background:%s\"></span>%s", lane_colour[l],
                lane_text[l]);
    fprintf(f, "</div>\n<p class=\"note\">Wheel or buttons to zoom, drag to pan, hover for "
               "name and duration. %s in all; operations narrower than a pixel at full view are "
               "merged into one shaded block per pixel (at most %zu blocks per lane); every "
               "single operation of these lanes is in trace.pftrace (open it in Perfetto's UI).</p>\n",
            s, cap);
    lanes_note(p, rows, nrows);
    /* The reasons a lane was picked need room beside the lane names. */
    int lab_w = whys ? 250 : 150;
    fprintf(f, "<div class=\"tl\"><div class=\"axis-y\">process &middot; lane</div>"
               "<svg class=\"tl-lab\" width=\"%d\" height=\"%d\">", lab_w, height);
    int y = 0;
    for (size_t r = 0; r < nrows; r++) {
        int first = 1;
        for (int l = 0; l < TL_NLANES; l++) {
            if (!rows[r].n[l])
                continue;
            if (first) {
                fprintf(f, "<text x=\"2\" y=\"%d\" font-weight=\"600\">", y + 11);
                row_label(f, p->names, &rows[r]);
                if (rows[r].pick && rows[r].pick->nwhy) {
                    fputs("<tspan class=\"tl-why\"> ", f);
                    put_whys(f, rows[r].pick);
                    fputs("</tspan>", f);
                }
                if (rows[r].m && rows[r].m->host) {
                    fputs("<title>", f);
                    rsr_html_text(f, rsr_model_str(rows[r].m, rows[r].m->host));
                    fputs("</title>", f);
                }
                fputs("</text>", f);
                first = 0;
            }
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#57606a\">%s</text>",
                    lab_w - 4, y + 11, lane_text[l]);
            y += TL_LANE_STEP;
        }
        if (!first)
            y += TL_ROW_GAP;
    }
    /* Times read from the job's start (report.json "start_us") when it is
     * not far before the first thing drawn (always for a window), as the
     * tables' times do. */
    int64_t off = 0;
    if (p->have_ck_origin) {
        double t0 = p->ck_origin_us * 1e3;
        if (t0 <= (double)origin && (p->have_win || (double)origin - t0 <= (double)span))
            off = origin - (int64_t)t0;
    }
    fprintf(f, "</svg>\n<div class=\"tl-main\"><svg id=\"tl\" viewBox=\"0 0 %.0f %d\" "
               "preserveAspectRatio=\"none\" height=\"%d\" style=\"--lane-h:%dpx\" data-w=\"%.0f\" "
               "data-h=\"%d\" data-span=\"%" PRId64 "\" data-off=\"%" PRId64 "\">\n",
            TL_W, height, height, TL_LANE_H, TL_W, height, span, off);
    struct geo g = { origin, end, TL_W / (double)span, NULL, 0, 0 };
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    if (shade_checkpoints(p, origin, end, g.scale, height) != 0) {
        free_rows(rows, nrows);
        errno = ENOMEM;
        return -1;
    }
    y = 0;
    for (size_t r = 0; r < nrows; r++) {
        int any = 0;
        if (rows[r].m && fill_row(p, &rows[r]) != 0) {
            free_rows(rows, nrows);
            errno = ENOMEM;
            return -1;
        }
        g.used = rows[r].used;
        g.nused = rows[r].m ? rows[r].m->strings.n : 0;
        for (int l = 0; l < TL_NLANES; l++) {
            if (!rows[r].n[l])
                continue;
            any = 1;
            fprintf(f, "<g transform=\"translate(0 %d)\" style=\"fill:%s;stroke:%s\" data-m=\"%zu\" "
                       "data-lane=\"", y + 1, lane_colour[l], lane_colour[l],
                    rows[r].mi == SIZE_MAX ? (size_t)0 : rows[r].mi);
            row_label(f, p->names, &rows[r]);
            g.ops = l == TL_WAIT || l == TL_IO;
            fprintf(f, " %s\"%s", lane_text[l],
                    l == TL_WAIT ? " data-ot=\"sync\"" : l == TL_IO ? " data-ot=\"io\"" : "");
            if (l == TL_CKPT) {
                putc('>', f);
                /* Few and named from report.json: drawn one by one. */
                for (size_t i = 0; i < rows[r].n[l]; i++) {
                    const struct iv *v = &rows[r].lane[l][i];
                    char b[32];
                    rsr_fmt_bytes(b, sizeof b, rsr_jv_knum_or(rsr_jv_at(cks, v->name), "bytes", 0));
                    fprintf(f, "<rect x=\"%.2f\" width=\"%.2f\" data-t=\"checkpoint: %s written\"/>",
                            (double)(v->s - origin) * g.scale, (double)(v->e - v->s) * g.scale, b);
                }
            } else {
                int64_t px = span / TL_COLUMNS > 0 ? span / TL_COLUMNS : 1;
                while (thin(NULL, &g, rows[r].lane[l], rows[r].n[l], px) > cap)
                    px *= 2;
                fputs(" data-r=\"", f);
                thin(f, &g, rows[r].lane[l], rows[r].n[l], px);
                fputs("\">", f);
            }
            fputs("</g>\n", f);
            y += TL_LANE_STEP;
        }
        drop_row(&rows[r]);
        if (any)
            y += TL_ROW_GAP;
    }
    fputs("</svg>\n<div id=\"tl-axis\"></div><div class=\"axis-x\">time from the job's start "
          "(the ticks above, in their units)</div></div></div>\n", f);
    put_names(f, rows, nrows, p->nmodels);
    if (!rsr_jv_key(p->root, "timeline") && rsr_jv_len(cks))
        fputs("<p class=\"note\">report.json has no \"timeline\", so the checkpoints cannot be "
              "placed on the lanes.</p>\n", f);
    fputs("<p class=\"note\">Waits: host threads blocked on the GPU (stream, event, context "
          "synchronise). I/O: file calls. NVTX ranges: the program's own annotations (nested ones drawn over "
          "their parents; hover for the name). Checkpoints: bursts of large writes, also shaded across "
          "all lanes. A process gets only the lanes it has something on.</p>\n", f);
    fputs("</section>\n", f);
    free_rows(rows, nrows);
    return 0;
}

/* ---- utilisation charts ---- */

/* One dashboard panel: a line per rank of the per-bin series key, with
 * checkpoints shaded. Returns 0 when no rank has the series. */
static int chart(struct page *p, yajl_val ranks, const char *key, const char *title,
                 const char *unit, double fixed_max)
{
    FILE *f = p->f;
    double top = 0;
    size_t nbins = 0;
    int any = 0;
    for (size_t r = 0; r < rsr_jv_len(ranks); r++) {
        yajl_val s = rsr_jv_key(rsr_jv_at(ranks, r), key);
        if (!YAJL_IS_ARRAY(s))
            continue;
        any = 1;
        if (rsr_jv_len(s) > nbins)
            nbins = rsr_jv_len(s);
        for (size_t i = 0; i < rsr_jv_len(s); i++) {
            double v;
            if (rsr_jv_num(rsr_jv_at(s, i), &v) && v > top)
                top = v;
        }
    }
    if (!any || !nbins)
        return 0;
    top = fixed_max > 0 ? fixed_max : rsr_html_nice_max(top);
    const double X0 = 56, X1 = 592, Y0 = 10, Y1 = 172, H = 210;
    double total_s = (double)nbins * p->tl_bin_us / 1e6;
    /* Times read from the job's start, as on the lanes and in the tables:
     * start_s counts from ck_origin_us, the bins from tl_start_us. */
    double shift = p->have_ck_origin ? (p->ck_origin_us - p->tl_start_us) / 1e6 : 0;
    fprintf(f, "<div class=\"chart\" id=\"chart-%s\"><h3>%s</h3>"
               "<svg viewBox=\"0 0 600 %.0f\" role=\"img\" data-x0=\"%.0f\" data-x1=\"%.0f\" "
               "data-y0=\"%.0f\" data-y1=\"%.0f\" data-top=\"%g\" data-span=\"%.0f\" "
               "data-off=\"%.0f\" data-unit=\"%s\">\n",
            key, title, H, X0, X1, Y0, Y1, top, total_s * 1e9, -shift * 1e9, unit);
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    for (size_t i = 0; i < rsr_jv_len(cks) && total_s > 0; i++) {
        double st, dur;
        if (!rsr_jv_knum(rsr_jv_at(cks, i), "start_s", &st) || !rsr_jv_knum(rsr_jv_at(cks, i), "dur_s", &dur))
            continue;
        st += shift;
        double a = fmax(0, st / total_s), b = fmin(1, (st + dur) / total_s);
        if (b > a)
            fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
                       "fill=\"#8e24aa\" fill-opacity=\".12\"><title>checkpoint</title></rect>\n",
                    X0 + a * (X1 - X0), Y0, (b - a) * (X1 - X0), Y1 - Y0);
    }
    for (int k = 0; k <= 4; k++) {
        double y = Y1 - (Y1 - Y0) * k / 4;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/>"
                   "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" "
                   "fill=\"#57606a\">%g</text>\n",
                X0, X1, y, y, X0 - 4, y + 3, top * k / 4);
    }
    for (int k = 0; k <= 4; k++) {
        char t[32];
        rsr_html_fmt_ns(t, sizeof t, (total_s * k / 4 - shift) * 1e9);
        fprintf(f, "<text x=\"%.1f\" y=\"188\" font-size=\"10\" text-anchor=\"%s\" "
                   "fill=\"#57606a\">%s</text>",
                X0 + (X1 - X0) * k / 4, k == 0 ? "start" : k == 4 ? "end" : "middle", t);
    }
    char y_title[96];
    snprintf(y_title, sizeof y_title, "%s (%s)", title, unit);
    rsr_html_axis_titles(f, X0, X1, Y0, Y1, H, "time from the job's start", y_title);
    /* At most CHART_POINTS points: each the largest value of its bins, so
     * that short peaks survive, as monitoring dashboards do. */
    size_t per = (nbins + CHART_POINTS - 1) / CHART_POINTS;
    for (size_t r = 0; r < rsr_jv_len(ranks); r++) {
        yajl_val rk = rsr_jv_at(ranks, r), s = rsr_jv_key(rk, key);
        if (!rsr_jv_len(s))
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.3\" stroke=\"%s\" data-r=\"",
                palette[r % NPALETTE]);
        rsr_html_proc(f, p->names, rk);
        fputs("\" points=\"", f);
        double peak = 0;
        for (size_t i = 0; i < rsr_jv_len(s); i += per) {
            double v = 0, x;
            for (size_t j = i; j < i + per && j < rsr_jv_len(s); j++)
                if (rsr_jv_num(rsr_jv_at(s, j), &x) && x > v)
                    v = x;
            peak = fmax(peak, v);
            double px = X0 + (X1 - X0) * ((double)i + per / 2.0) / (double)nbins;
            double py = Y1 - (Y1 - Y0) * fmin(v, top) / top;
            fprintf(f, "%.1f,%.1f ", px, py);
        }
        fputs("\"><title>", f);
        rsr_html_proc(f, p->names, rk);
        fprintf(f, ": peak %.3g %s</title></polyline>\n", peak, unit);
    }
    fputs("</svg></div>\n", f);
    return 1;
}

static void charts(struct page *p)
{
    FILE *f = p->f;
    yajl_val tl = rsr_jv_key(p->root, "timeline"), ranks = rsr_jv_key(tl, "ranks");
    fputs("<section id=\"utilisation\"><h2>Utilisation over time</h2>\n", f);
    if (!p->have_timeline || !rsr_jv_len(ranks)) {
        fputs("<p class=\"note\">report.json has no \"timeline\" bins.</p></section>\n", f);
        return;
    }
    char b[32];
    rsr_html_fmt_ns(b, sizeof b, p->tl_bin_us * 1e3);
    fprintf(f, "<p class=\"note\">One point per %s bin (the busiest bin where several share a "
               "pixel); checkpoints shaded. Ranks:", b);
    for (size_t r = 0; r < rsr_jv_len(ranks); r++) {
        fprintf(f, "<span class=\"key\" style=\"background:%s\"></span>", palette[r % NPALETTE]);
        rsr_html_proc(f, p->names, rsr_jv_at(ranks, r));
    }
    fputs("</p><div class=\"charts\">\n", f);
    /* Without GPU figures the GPU series are all zero: left out. */
    int n = 0;
    if (p->have_gpu) {
        n += chart(p, ranks, "gpu_busy_pct", "GPU busy", "%", 100);
        if (rsr_jv_key(rsr_jv_at(ranks, 0), "sm_active_pct"))
            n += chart(p, ranks, "sm_active_pct", "SM activity (launch geometry)", "%", 100);
        n += chart(p, ranks, "comm_gbs", "Communication bandwidth", "GB/s", 0);
    }
    if (p->have_io) {
        n += chart(p, ranks, "read_mbs", "Storage read", "MB/s", 0);
        n += chart(p, ranks, "write_mbs", "Storage write", "MB/s", 0);
    }
    fputs("</div>\n", f);
    if (!n)
        fputs("<p class=\"note\">The timeline has no series.</p>\n", f);
    fputs("</section>\n", f);
}

/* ---- tables ---- */

static void th(FILE *f, const char *label, int numeric)
{
    fprintf(f, numeric ? "<th class=\"n\">%s</th>" : "<th>%s</th>", label);
}

/* A numeric column where 0 is a value (a rank, a start): kept on the page
 * even when every cell is 0 (html_table.h). */
static void th_id(FILE *f, const char *label)
{
    fprintf(f, "<th class=\"n\" data-keep>%s</th>", label);
}

static void td_num(FILE *f, double v, const char *shown)
{
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%s</td>", v, shown);
}

static void td_fmt(FILE *f, double v, int prec)
{
    char b[48];
    snprintf(b, sizeof b, "%.*f", prec, v);
    td_num(f, v, b);
}

static void td_bytes(FILE *f, double v)
{
    char b[32];
    rsr_fmt_bytes(b, sizeof b, v);
    td_num(f, v, b);
}

static void td_us(FILE *f, double us)
{
    char b[32];
    rsr_html_fmt_ns(b, sizeof b, us * 1e3);
    td_num(f, us, b);
}

static void table_more(FILE *f, size_t shown, size_t total)
{
    if (total > shown)
        fprintf(f, "<p class=\"note\">%zu of %zu rows shown; report.json has them all.</p>\n",
                shown, total);
}

/* Kernel names that run short (below the threshold report.json names) many
 * times: candidates for fusion or CUDA graphs. */
static void table_short_kernels(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        n += rsr_jv_len(rsr_jv_key(rsr_jv_key(rsr_jv_at(procs, i), "short_kernels"), "fusion_candidates"));
    if (!n)
        return;
    fputs("<h3>Short kernels (fusion or CUDA graph candidates)</h3>"
          "<table class=\"sort\" id=\"table-short-kernels\"><thead><tr>", f);
    th(f, "process", 0), th(f, "kernel", 0), th(f, "short runs", 1), th(f, "their time", 1);
    th(f, "threshold", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = 0;
    for (size_t i = 0; i < rsr_jv_len(procs) && shown < TABLE_ROWS; i++) {
        yajl_val proc = rsr_jv_at(procs, i), sk = rsr_jv_key(proc, "short_kernels");
        yajl_val fc = rsr_jv_key(sk, "fusion_candidates");
        for (size_t j = 0; j < rsr_jv_len(fc) && shown < TABLE_ROWS; j++, shown++) {
            yajl_val c = rsr_jv_at(fc, j);
            fputs("<tr><td>", f);
            rsr_html_proc(f, p->names, proc);
            fputs("</td><td class=\"name\">", f);
            rsr_html_text(f, rsr_jv_kstr(c, "name"));
            fputs("</td>", f);
            td_fmt(f, rsr_jv_knum_or(c, "short_count", 0), 0);
            td_us(f, rsr_jv_knum_or(c, "short_us", 0));
            td_us(f, rsr_jv_knum_or(sk, "threshold_us", 0));
            fputs("</tr>\n", f);
        }
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, n);
}

/* Each rank's time in each role's calls (processes[].comm_by_role), the
 * roles in the groups' order. */
static void table_roles(struct page *p, yajl_val gs)
{
    FILE *f = p->f;
    const char *roles[8];
    size_t nr = 0;
    for (size_t i = 0; i < rsr_jv_len(gs) && nr < 8; i++) {
        const char *r = rsr_jv_kstr(rsr_jv_at(gs, i), "role");
        int seen = !r;
        for (size_t k = 0; k < nr && !seen; k++)
            seen = !strcmp(roles[k], r);
        if (!seen)
            roles[nr++] = r;
    }
    yajl_val procs = rsr_jv_key(p->root, "processes");
    fputs("<p class=\"note\">Each rank's time in each role's calls, as a share of the job's wall time, and of "
          "it the wait for a late rank (or, in a pipeline, for the stage before or after).</p>\n"
          "<table class=\"sort\" id=\"table-roles\"><thead><tr>", f);
    th_id(f, "rank");
    for (size_t k = 0; k < nr; k++) {
        char label[64];
        snprintf(label, sizeof label, "%s %% of time", roles[k]);
        th(f, label, 1);
        snprintf(label, sizeof label, "%s %% waiting", roles[k]);
        th(f, label, 1);
    }
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val x = rsr_jv_at(procs, i), by = rsr_jv_key(x, "comm_by_role");
        double rank;
        if (!by || !rsr_jv_num(rsr_jv_key(x, "rank"), &rank))
            continue;
        if (total++ >= TABLE_ROWS)
            continue;
        shown++;
        fputs("<tr>", f);
        td_fmt(f, rank, 0);
        for (size_t k = 0; k < nr; k++) {
            yajl_val r = rsr_jv_key(by, roles[k]);
            if (r) {
                td_fmt(f, rsr_jv_knum_or(r, "time_pct", 0), 1);
                td_fmt(f, rsr_jv_knum_or(r, "wait_pct", 0), 1);
            } else {
                fputs("<td></td><td></td>", f);
            }
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, total);
}

/* report.json's pipeline: each stage's bubble against the schedule's. */
static void table_pipeline(struct page *p)
{
    FILE *f = p->f;
    yajl_val pp = rsr_jv_key(p->root, "pipeline");
    yajl_val st = rsr_jv_key(pp, "by_stage");
    if (!pp || !rsr_jv_len(st))
        return;
    fprintf(f, "<h3>Pipeline</h3><p class=\"note\" id=\"pipeline-note\">%.0f stages", rsr_jv_knum_or(pp, "stages", 0));
    double m = rsr_jv_knum_or(pp, "microbatches", 0), slow;
    if (m > 0)
        fprintf(f, ", %.3g micro-batches per step: the 1F1B schedule's own bubble is %.1f%% of the step", m,
                rsr_jv_knum_or(pp, "schedule_bubble_pct", 0));
    fputs(". A stage's bubble is the time its GPUs wait in sends and receives for the stage before or after "
          "it.", f);
    if (rsr_jv_num(rsr_jv_key(pp, "slowest"), &slow))
        fprintf(f, " Stage %.0f is the slowest: the others wait %.1f%% of the step more than it does.", slow,
                rsr_jv_knum_or(pp, "slowest_excess_pct", 0));
    fputs("</p>\n<table class=\"sort\" id=\"table-pipeline\"><thead><tr>", f);
    th_id(f, "stage"), th(f, "ranks", 1), th_id(f, "first rank"), th(f, "bubble per step", 1),
        th(f, "% of the step", 1);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < rsr_jv_len(st); i++) {
        yajl_val x = rsr_jv_at(st, i);
        fputs("<tr>", f);
        td_fmt(f, rsr_jv_knum_or(x, "stage", 0), 0);
        td_fmt(f, rsr_jv_knum_or(x, "ranks", 0), 0);
        td_fmt(f, rsr_jv_knum_or(x, "example_rank", 0), 0);
        td_us(f, rsr_jv_knum_or(x, "bubble_ms_per_step", 0) * 1e3);
        td_fmt(f, rsr_jv_knum_or(x, "bubble_pct", 0), 1);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* The links a group's traffic crosses, as the node sampler counted them
 * (report.json nodes[].links): inside a node NVLink, across nodes the
 * network (InfiniBand, RoCE, Ethernet); of those, the one that carried the
 * most while collectives ran (NULL: none), its figure in *bv. */
static yajl_val busiest_link(yajl_val root, int intra, double *bv)
{
    yajl_val nodes = rsr_jv_key(root, "nodes"), best = NULL;
    *bv = -1;
    for (size_t i = 0; i < rsr_jv_len(nodes); i++) {
        yajl_val links = rsr_jv_key(rsr_jv_at(nodes, i), "links");
        for (size_t k = 0; k < rsr_jv_len(links); k++) {
            yajl_val l = rsr_jv_at(links, k);
            const char *kind = rsr_jv_kstr(l, "kind");
            double v;
            if (!kind || (intra ? strcmp(kind, "nvlink") != 0
                                : strcmp(kind, "ib") && strcmp(kind, "roce") && strcmp(kind, "eth")))
                continue;
            if (rsr_jv_knum(l, "in_collectives_gbs", &v) && v > *bv)
                *bv = v, best = l;
        }
    }
    return best;
}

/* A group's links cell: its kind's busiest link against its rate. */
static void td_group_links(FILE *f, yajl_val best, double bv, int intra)
{
    fputs("<td>", f);
    if (!best) {
        fputs(intra ? "NVLink or PCIe: no counters" : "network: no counters", f);
    } else {
        double rate;
        rsr_html_text(f, rsr_jv_kstr(best, "name"));
        fputs(" (", f);
        rsr_html_text(f, rsr_jv_kstr(best, "kind"));
        if (rsr_jv_knum(best, "rate_gbs", &rate) && rate > 0)
            fprintf(f, "): %.2f of %.3g GB/s during collectives", bv, rate);
        else
            fprintf(f, "): %.2f GB/s during collectives", bv);
    }
    fputs("</td>", f);
}

/* report.json's groups: shown where the job is more than data parallel. */
static void table_groups(struct page *p)
{
    FILE *f = p->f;
    yajl_val gs = rsr_jv_key(p->root, "groups");
    size_t n = rsr_jv_len(gs);
    const char *first = n ? rsr_jv_kstr(rsr_jv_at(gs, 0), "role") : NULL;
    if (!n || (n == 1 && first && strcmp(first, "data") == 0))
        return;
    fputs("<h3>Communication groups</h3><p class=\"note\">Communicators that look alike (ranks, traffic, "
          "calls and bytes per call), with the role their traffic says they play; time is the ranks' own "
          "in their calls, as a share of every rank's time.</p>\n", f);
    fputs("<table class=\"sort\" id=\"table-groups\"><thead><tr>", f);
    th(f, "role", 0), th(f, "communicators", 1), th(f, "ranks each", 1), th(f, "where", 0), th(f, "operations", 0);
    th(f, "calls per step", 1), th(f, "% of time", 1), th(f, "% of it waiting", 1), th(f, "busbw GB/s", 1);
    th(f, "links (busiest, node counters)", 0), th(f, "example", 0), th(f, "how sure", 1);
    fputs("</tr></thead><tbody>\n", f);
    double bv[2];
    yajl_val link[2] = { busiest_link(p->root, 0, &bv[0]), busiest_link(p->root, 1, &bv[1]) };
    for (size_t i = 0; i < n; i++) {
        yajl_val g = rsr_jv_at(gs, i);
        fputs("<tr><td>", f);
        rsr_html_value(f, rsr_jv_key(g, "role"));
        if (YAJL_IS_TRUE(rsr_jv_key(g, "sharded")))
            fputs(" (sharded)", f);
        fputs("</td>", f);
        td_fmt(f, rsr_jv_knum_or(g, "count", 0), 0);
        td_fmt(f, rsr_jv_knum_or(g, "size", 0), 0);
        double hosts = rsr_jv_knum_or(g, "hosts", 1), rail;
        if (YAJL_IS_TRUE(rsr_jv_key(g, "intra_node")))
            fputs("<td>inside a node</td>", f);
        else if (rsr_jv_num(rsr_jv_key(g, "rail"), &rail))
            fprintf(f, "<td>across %.0f hosts, one rail each (local rank %.0f in the example)</td>", hosts, rail);
        else
            fprintf(f, "<td>across %.0f hosts</td>", hosts);
        fputs("<td>", f);
        yajl_val ops = rsr_jv_key(g, "ops");
        for (size_t k = 0; k < rsr_jv_len(ops); k++) {
            yajl_val o = rsr_jv_at(ops, k);
            char bytes[32];
            rsr_fmt_bytes(bytes, sizeof bytes, rsr_jv_knum_or(o, "mean_bytes", 0));
            fputs(k ? ", " : "", f);
            rsr_html_text(f, rsr_jv_kstr(o, "op") ? rsr_jv_kstr(o, "op") : "?");
            fprintf(f, " %s &times; %.0f", bytes, rsr_jv_knum_or(o, "calls", 0));
        }
        fputs("</td>", f);
        td_fmt(f, rsr_jv_knum_or(g, "calls_per_step", 0), 1);
        td_fmt(f, rsr_jv_knum_or(g, "time_pct", 0), 1);
        td_fmt(f, rsr_jv_knum_or(g, "sync_wait_pct", 0), 0);
        td_fmt(f, rsr_jv_knum_or(g, "busbw_gbs", 0), 2);
        int intra = YAJL_IS_TRUE(rsr_jv_key(g, "intra_node"));
        td_group_links(f, link[intra], bv[intra], intra);
        fputs("<td>ranks ", f);
        yajl_val mem = rsr_jv_key(g, "members_example");
        for (size_t k = 0; k < rsr_jv_len(mem); k++) {
            double r = 0;
            rsr_jv_num(rsr_jv_at(mem, k), &r);
            fprintf(f, "%s%.0f", k ? ", " : "", r);
        }
        fputs("</td><td class=\"n\" title=\"", f);
        rsr_html_text(f, rsr_jv_kstr(g, "why") ? rsr_jv_kstr(g, "why") : "");
        fprintf(f, "\">%.1f</td></tr>\n", rsr_jv_knum_or(g, "confidence", 0));
    }
    fputs("</tbody></table>\n", f);
    table_roles(p, gs);
    rsr_html_layout(f, p->root);
    table_pipeline(p);
}

static void table_collectives(struct page *p)
{
    FILE *f = p->f;
    yajl_val cs = rsr_jv_key(p->root, "collectives");
    if (!cs)
        return;
    fputs("<h3>Collectives</h3>", f);
    if (!rsr_jv_len(cs)) {
        fputs("<p class=\"note\">None recorded.</p>\n", f);
        return;
    }
    double replayed = 0;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        replayed += rsr_jv_knum_or(rsr_jv_key(rsr_jv_at(procs, i), "cuda_graphs"), "collectives", 0);
    if (replayed > 0)
        fprintf(f, "<p class=\"note\" id=\"graph-colls-note\">%.0f calls were replayed in CUDA graphs: their "
                "times are their share of the graph launch's measured time (what the graph's kernels leave, "
                "in proportion to bytes, as in the kernel table), not measured one by one; ranks' calls are "
                "matched by the order of the replays.</p>\n", replayed);
    fputs("<table class=\"sort\" id=\"table-collectives\"><thead><tr>", f);
    th(f, "op", 0), th(f, "communicator", 0), th(f, "ranks", 1), th(f, "bytes", 1);
    th(f, "count", 1), th(f, "mean", 1), th(f, "mean wait for the last rank", 1);
    th(f, "algbw GB/s", 1), th(f, "busbw GB/s", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t n = rsr_jv_len(cs) < TABLE_ROWS ? rsr_jv_len(cs) : TABLE_ROWS;
    for (size_t i = 0; i < n; i++) {
        yajl_val c = rsr_jv_at(cs, i);
        fputs("<tr><td>", f);
        rsr_html_value(f, rsr_jv_key(c, "op"));
        double calls = rsr_jv_knum_or(c, "group_calls", 1);
        if (calls > 1)
            fprintf(f, " (NCCL groups of %.0f calls)", calls);
        fputs("</td><td class=\"name\">", f);
        rsr_html_value(f, rsr_jv_key(c, "comm"));
        fputs("</td>", f);
        yajl_val rk = rsr_jv_key(c, "ranks");
        double v;
        if (rsr_jv_num(rk, &v)) {
            td_fmt(f, v, 0);
        } else {
            fprintf(f, "<td class=\"n\" data-v=\"%zu\">", rsr_jv_len(rk));
            rsr_html_value(f, rk);
            fputs("</td>", f);
        }
        td_bytes(f, rsr_jv_knum_or(c, "bytes", 0));
        td_fmt(f, rsr_jv_knum_or(c, "count", 0), 0);
        td_us(f, rsr_jv_knum_or(c, "mean_us", 0));
        double wait;
        if (rsr_jv_knum(c, "mean_wait_us", &wait))
            td_us(f, wait);
        else
            fputs("<td></td>", f);
        td_fmt(f, rsr_jv_knum_or(c, "algbw_gbs", 0), 2);
        td_fmt(f, rsr_jv_knum_or(c, "busbw_gbs", 0), 2);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, n, rsr_jv_len(cs));
}

struct kagg {
    const char *name;
    double count, total;
    size_t procs;
};

static int cmp_kname(const void *a, const void *b)
{
    return strcmp(((const struct kagg *)a)->name, ((const struct kagg *)b)->name);
}

static int cmp_ktotal(const void *a, const void *b)
{
    double x = ((const struct kagg *)a)->total, y = ((const struct kagg *)b)->total;
    return (x < y) - (x > y);
}

/* Kernels summed over processes by name, most total time first: *nu of
 * them in *out (NULL when none), *all the total time of every kernel.
 * -1 with errno ENOMEM. */
static int kernels_by_name(yajl_val procs, struct kagg **out, size_t *nu, double *all)
{
    size_t n = 0;
    *out = NULL, *nu = 0, *all = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        n += rsr_jv_len(rsr_jv_key(rsr_jv_at(procs, i), "kernels"));
    if (!n)
        return 0;
    struct kagg *k = malloc(n * sizeof *k);
    if (!k) {
        errno = ENOMEM;
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val ks = rsr_jv_key(rsr_jv_at(procs, i), "kernels");
        for (size_t j = 0; j < rsr_jv_len(ks); j++) {
            yajl_val x = rsr_jv_at(ks, j);
            const char *name = rsr_jv_kstr(x, "name");
            if (!name)
                continue;
            k[m++] = (struct kagg){ name, rsr_jv_knum_or(x, "count", 0),
                                    rsr_jv_knum_or(x, "total_us", 0), 1 };
            *all += rsr_jv_knum_or(x, "total_us", 0);
        }
    }
    if (m)
        qsort(k, m, sizeof *k, cmp_kname);
    size_t u = 0;
    for (size_t i = 0; i < m; i++) {
        if (u && strcmp(k[u - 1].name, k[i].name) == 0) {
            k[u - 1].count += k[i].count;
            k[u - 1].total += k[i].total;
            k[u - 1].procs++;
        } else {
            k[u++] = k[i];
        }
    }
    if (u)
        qsort(k, u, sizeof *k, cmp_ktotal);
    *out = k;
    *nu = u;
    return 0;
}

/* The kernel table's GPU time in all (report.json processes[].gpu_time_us),
 * the figure the GPU flame graph adds up to. */
static void gpu_time_note(FILE *f, yajl_val procs)
{
    double kern = 0, copies = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val t = rsr_jv_key(rsr_jv_at(procs, i), "gpu_time_us");
        kern += rsr_jv_knum_or(t, "kernels", 0);
        copies += rsr_jv_knum_or(t, "copies", 0);
    }
    char a[32], b[32], c[32];
    rsr_html_fmt_ns(a, sizeof a, (kern + copies) * 1e3);
    rsr_html_fmt_ns(b, sizeof b, kern * 1e3);
    rsr_html_fmt_ns(c, sizeof c, copies * 1e3);
    fprintf(f, "<p class=\"note\" id=\"gpu-time\">GPU time in all <span class=\"v\">%s</span>: kernels %s, "
               "copies and sets %s (every operation counted, overlapping ones too); the GPU flame graph adds up to "
               "it, its sampled launch stacks scaled to each thread's kernel time.</p>\n", a, b, c);
}

static int table_kernels(struct page *p)
{
    FILE *f = p->f;
    struct kagg *k;
    size_t u;
    double all;
    if (kernels_by_name(rsr_jv_key(p->root, "processes"), &k, &u, &all) != 0)
        return -1;
    if (!k)
        return 0;
    fputs("<h3>Kernels (all processes)</h3>", f);
    double graph_ops = 0;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        graph_ops += rsr_jv_knum_or(rsr_jv_key(rsr_jv_at(procs, i), "cuda_graphs"), "node_ops", 0);
    if (graph_ops > 0)
        fputs("<p class=\"note\" id=\"graph-note\">Times inside CUDA graphs are the graph's measured time "
              "shared by its nodes: each kernel by its mean time outside graphs in the same process, the "
              "collectives by what is left of the graph's time, in proportion to their bytes. Names, "
              "counts and geometry are the captured ones.</p>", f);
    fputs("<table class=\"sort\" id=\"table-kernels\"><thead><tr>", f);
    th(f, "kernel", 0), th(f, "processes", 1), th(f, "count", 1), th(f, "total", 1);
    th(f, "mean", 1), th(f, "% of kernel time", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = u < TABLE_ROWS ? u : TABLE_ROWS;
    for (size_t i = 0; i < shown; i++) {
        fputs("<tr><td class=\"name\">", f);
        rsr_html_text(f, k[i].name);
        fputs("</td>", f);
        td_fmt(f, (double)k[i].procs, 0);
        td_fmt(f, k[i].count, 0);
        td_us(f, k[i].total);
        td_us(f, k[i].count > 0 ? k[i].total / k[i].count : 0);
        td_fmt(f, all > 0 ? 100 * k[i].total / all : 0, 1);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, u);
    free(k);
    gpu_time_note(f, rsr_jv_key(p->root, "processes"));
    return 0;
}

/* A row of the file table: one file of one process, or a folder of
 * start-up files (nfiles > 0) summed over the processes that read them. */
struct fagg {
    yajl_val proc, file;
    const char *path;
    size_t dir_len;             /* the path's folder, without the last '/' */
    double read, written, ops, time_s, bytes;
    size_t nfiles, nprocs;
};

static int cmp_fbytes(const void *a, const void *b)
{
    double x = ((const struct fagg *)a)->bytes, y = ((const struct fagg *)b)->bytes;
    return (x < y) - (x > y);
}

static int ends_with(const char *s, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    return n >= t && memcmp(s + n - t, tail, t) == 0;
}

/* Whether a file a process only read is code it loaded at start-up: a
 * Python module (.py, .pyc, anything in site-packages or dist-packages)
 * or a shared library (.so, .so.N). The rule is the page's note. */
static int startup_file(const char *path, double written)
{
    if (!path || written > 0)
        return 0;
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    size_t n = strlen(name);
    return ends_with(name, n, ".py") || ends_with(name, n, ".pyc") || ends_with(name, n, ".so") ||
           strstr(name, ".so.") || strstr(path, "/site-packages/") || strstr(path, "/dist-packages/");
}

/* The folder a start-up file is counted under, as a length of its path:
 * the package under site-packages or dist-packages, the Python library
 * folder (pythonX.Y), else the file's own folder (less __pycache__). */
static size_t startup_folder(const char *path)
{
    const char *last = strrchr(path, '/');
    for (const char *c = path; c && c < last; c = strchr(c + 1, '/')) {
        const char *name = c + 1, *end = strchr(name, '/');
        size_t n = (size_t)(end - name);
        if ((n == 13 && (memcmp(name, "site-packages", 13) == 0 || memcmp(name, "dist-packages", 13) == 0)) &&
            end < last)
            return (size_t)(strchr(end + 1, '/') - path);
        if (n > 6 && memcmp(name, "python", 6) == 0 && name[6] >= '0' && name[6] <= '9' &&
            !memmem(end, (size_t)(last - end), "-packages/", 10))
            return (size_t)(end - path);
    }
    size_t len = last ? (size_t)(last - path) : 0;
    if (len >= 12 && memcmp(path + len - 12, "/__pycache__", 12) == 0)
        len -= 12;
    return len;
}

static int cmp_folder(const void *pa, const void *pb)
{
    const struct fagg *a = pa, *b = pb;
    size_t n = a->dir_len < b->dir_len ? a->dir_len : b->dir_len;
    int c = memcmp(a->path, b->path, n);
    if (c || a->dir_len != b->dir_len)
        return c ? c : (a->dir_len < b->dir_len ? -1 : 1);
    return (a->proc > b->proc) - (a->proc < b->proc);
}

/* Folds the start-up files a[from..m) (sorted by folder, then process)
 * into one row per folder at a[from..); returns the rows' end. */
static size_t fold_folders(struct fagg *a, size_t from, size_t m)
{
    size_t out = from;
    for (size_t i = from; i < m;) {
        struct fagg g = a[i];
        g.file = NULL;
        g.nfiles = 0;
        g.nprocs = 0;
        g.read = g.written = g.ops = g.time_s = g.bytes = 0;
        size_t k = i;
        for (; k < m && a[k].dir_len == g.dir_len && memcmp(a[k].path, g.path, g.dir_len) == 0; k++) {
            g.nprocs += k == i || a[k].proc != a[k - 1].proc;
            g.nfiles++;
            g.read += a[k].read, g.written += a[k].written, g.ops += a[k].ops;
            g.time_s += a[k].time_s, g.bytes += a[k].bytes;
        }
        a[out++] = g;
        i = k;
    }
    return out;
}

/* Files by bytes moved, with the process that moved them; the files read
 * at start-up grouped by folder. report.json keeps every file. */
static int table_io(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = rsr_jv_key(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        n += rsr_jv_len(rsr_jv_key(rsr_jv_key(rsr_jv_at(procs, i), "io"), "files"));
    if (!n)
        return 0;
    struct fagg *a = malloc(n * sizeof *a);
    if (!a) {
        errno = ENOMEM;
        return -1;
    }
    /* the files of their own first, the start-up files after them */
    size_t singles = 0, m = n;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val fs = rsr_jv_key(rsr_jv_key(rsr_jv_at(procs, i), "io"), "files");
        for (size_t j = 0; j < rsr_jv_len(fs); j++) {
            yajl_val x = rsr_jv_at(fs, j);
            struct fagg r = { .proc = rsr_jv_at(procs, i), .file = x, .path = rsr_jv_kstr(x, "path"),
                              .read = rsr_jv_knum_or(x, "read_bytes", 0),
                              .written = rsr_jv_knum_or(x, "write_bytes", 0),
                              .ops = rsr_jv_knum_or(x, "ops", 0), .time_s = rsr_jv_knum_or(x, "time_s", 0),
                              .nfiles = 1, .nprocs = 1 };
            r.bytes = r.read + r.written;
            if (startup_file(r.path, r.written)) {
                r.dir_len = startup_folder(r.path);
                a[--m] = r;
            } else {
                a[singles++] = r;
            }
        }
    }
    size_t startup = n - m;
    qsort(a + m, startup, sizeof *a, cmp_folder);
    memmove(a + singles, a + m, startup * sizeof *a);
    size_t rows = fold_folders(a, singles, singles + startup);
    qsort(a, rows, sizeof *a, cmp_fbytes);
    fputs("<h3>File I/O</h3>", f);
    if (startup)
        fprintf(f, "<p class=\"note\" id=\"io-startup\">%zu files that processes only read and that are code "
                   "loaded at start-up (Python modules: .py, .pyc, anything under site-packages or "
                   "dist-packages; shared libraries: .so, .so.N) are grouped by folder, a row per folder "
                   "(a package under site-packages or dist-packages, Python's own library, else the file's "
                   "folder); every other file has a row of its own. report.json lists every file.</p>\n",
                startup);
    fputs("<table class=\"sort\" id=\"table-io\"><thead><tr>", f);
    th(f, "process", 0), th(f, "path", 0), th(f, "files", 1), th(f, "read", 1), th(f, "written", 1);
    th(f, "operations", 1), th(f, "time", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = rows < TABLE_ROWS ? rows : TABLE_ROWS;
    for (size_t i = 0; i < shown; i++) {
        const struct fagg *r = &a[i];
        if (r->file) {
            fputs("<tr><td>", f);
            rsr_html_proc(f, p->names, r->proc);
            fputs("</td><td class=\"name\">", f);
            rsr_html_text(f, r->path);
        } else {
            fputs("<tr class=\"startup\"><td>", f);
            if (r->nprocs == 1)
                rsr_html_proc(f, p->names, r->proc);
            else
                fprintf(f, "%zu processes", r->nprocs);
            char *dir = strndup(r->path, r->dir_len);
            if (!dir) {
                free(a);
                errno = ENOMEM;
                return -1;
            }
            fputs("</td><td class=\"name\" data-folder=\"", f);
            rsr_html_text(f, dir);
            fputs("\">", f);
            rsr_html_text(f, dir);
            fputs("/ (start-up files)", f);
            free(dir);
        }
        fputs("</td>", f);
        td_fmt(f, (double)r->nfiles, 0);
        td_bytes(f, r->read);
        td_bytes(f, r->written);
        td_fmt(f, r->ops, 0);
        td_us(f, r->time_s * 1e6);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, rows);
    free(a);
    return 0;
}

static void table_checkpoints(struct page *p)
{
    FILE *f = p->f;
    yajl_val cks = rsr_jv_key(p->root, "checkpoints");
    if (!rsr_jv_len(cks))
        return;
    fputs("<h3>Checkpoints</h3><table class=\"sort\" id=\"table-checkpoints\"><thead><tr>", f);
    th_id(f, "rank"), th_id(f, "start"), th(f, "duration", 1), th(f, "bytes", 1);
    th(f, "GPU stall", 1);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < rsr_jv_len(cks) && i < TABLE_ROWS; i++) {
        yajl_val c = rsr_jv_at(cks, i);
        fputs("<tr>", f);
        td_fmt(f, rsr_jv_knum_or(c, "rank", -1), 0);
        td_us(f, rsr_jv_knum_or(c, "start_s", 0) * 1e6);
        td_us(f, rsr_jv_knum_or(c, "dur_s", 0) * 1e6);
        td_bytes(f, rsr_jv_knum_or(c, "bytes", 0));
        td_us(f, rsr_jv_knum_or(c, "gpu_stall_s", 0) * 1e6);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, rsr_jv_len(cks) < TABLE_ROWS ? rsr_jv_len(cks) : TABLE_ROWS, rsr_jv_len(cks));
}

/* Where a straggler's kernels are why it is late: its slower kernels'
 * mean run on every rank (report.json stragglers[].why.kernels). */
static void kernels_by_rank(FILE *f, yajl_val s)
{
    yajl_val ks = rsr_jv_key(rsr_jv_key(s, "why"), "kernels");
    if (!rsr_jv_len(ks))
        return;
    yajl_val ranks = rsr_jv_key(rsr_jv_at(ks, 0), "by_rank");
    fprintf(f, "<h3>Kernels by rank: why rank %.0f is late</h3><table class=\"sort\" id=\"table-kernels-by-rank\">"
               "<thead><tr>", rsr_jv_knum_or(s, "rank", -1));
    th(f, "kernel", 0);
    for (size_t r = 0; r < rsr_jv_len(ranks); r++) {
        char h[48];
        snprintf(h, sizeof h, "rank %.0f, mean us", rsr_jv_knum_or(rsr_jv_at(ranks, r), "rank", -1));
        th(f, h, 1);
    }
    fputs("</tr></thead><tbody>\n", f);
    for (size_t k = 0; k < rsr_jv_len(ks); k++) {
        yajl_val x = rsr_jv_at(ks, k), by = rsr_jv_key(x, "by_rank");
        fputs("<tr><td>", f);
        rsr_html_text(f, rsr_jv_kstr(x, "name"));
        fputs("</td>", f);
        for (size_t r = 0; r < rsr_jv_len(ranks); r++) {
            double want = rsr_jv_knum_or(rsr_jv_at(ranks, r), "rank", -1), v = NAN;
            for (size_t q = 0; q < rsr_jv_len(by); q++)
                if (rsr_jv_knum_or(rsr_jv_at(by, q), "rank", -2) == want)
                    v = rsr_jv_knum_or(rsr_jv_at(by, q), "mean_us", NAN);
            if (isnan(v))
                fputs("<td></td>", f);
            else
                td_fmt(f, v, 1);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static void table_stragglers(struct page *p)
{
    FILE *f = p->f;
    yajl_val st = rsr_jv_key(p->root, "stragglers");
    if (!rsr_jv_len(st))
        return;
    fputs("<h3>Stragglers</h3><table class=\"sort\" id=\"table-stragglers\"><thead><tr>", f);
    th_id(f, "rank"), th(f, "score", 1), th(f, "others waited", 1), th(f, "beyond share, % of time", 1);
    th(f, "worst in", 0), th(f, "why", 0), th(f, "evidence", 0);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < rsr_jv_len(st) && i < TABLE_ROWS; i++) {
        yajl_val s = rsr_jv_at(st, i), why = rsr_jv_key(s, "why");
        fputs("<tr>", f);
        td_fmt(f, rsr_jv_knum_or(s, "rank", -1), 0);
        td_fmt(f, rsr_jv_knum_or(s, "score", 0), 3);
        double caused;
        if (rsr_jv_knum(s, "caused_wait_us", &caused))
            td_us(f, caused);
        else
            fputs("<td></td>", f);
        double excess;
        if (rsr_jv_knum(s, "excess_pct", &excess))
            td_fmt(f, excess, 1);
        else
            fputs("<td></td>", f);
        fputs("<td>", f);
        rsr_html_text(f, rsr_jv_kstr(s, "phase"));
        fputs("</td><td><strong>", f);
        rsr_html_text(f, rsr_jv_kstr(why, "kind"));
        fputs("</strong>: ", f);
        rsr_html_value(f, rsr_jv_key(why, "detail"));
        fputs("</td><td>", f);
        rsr_html_value(f, rsr_jv_key(s, "evidence"));
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    for (size_t i = 0; i < rsr_jv_len(st) && i < TABLE_ROWS; i++)
        kernels_by_rank(f, rsr_jv_at(st, i));
}

/* The tables, each less its empty columns (html_table.h). */
static int tables(struct page *p)
{
    FILE *page = p->f;
    struct rsr_html_table *t = rsr_html_table_begin(page, &p->f);
    if (!t)
        return -1;
    fputs("<section id=\"tables\"><h2>Tables</h2><p class=\"note\">Click a header to sort. A column "
          "with nothing in it (the GPU's, in a job that used none) is left out.</p>\n", p->f);
    table_stragglers(p);
    table_groups(p);
    table_collectives(p);
    table_checkpoints(p);
    int failed = table_kernels(p) != 0;
    table_short_kernels(p);
    failed |= table_io(p) != 0;
    rsr_html_table_processes(p->f, p->ranks);
    fputs("</section>\n", p->f);
    p->f = page;
    failed |= rsr_html_table_end(t) != 0;
    return failed ? -1 : 0;
}

/* ---- flame graphs ---- */

static void put_base64(FILE *f, const unsigned char *d, size_t n)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        putc(b64[v >> 18 & 63], f);
        putc(b64[v >> 12 & 63], f);
        putc(i + 1 < n ? b64[v >> 6 & 63] : '=', f);
        putc(i + 2 < n ? b64[v & 63] : '=', f);
    }
}

/* The number in attr="N" inside the <svg ...> tag of svg, or 0. */
static double svg_attr(const char *svg, const char *attr)
{
    const char *tag = strstr(svg, "<svg");
    const char *end = tag ? strchr(tag, '>') : NULL;
    size_t n = strlen(attr);
    for (const char *a = tag; a && end && (a = strstr(a + 1, attr)) && a < end;)
        if ((a[-1] == ' ' || a[-1] == '\n' || a[-1] == '\t') && a[n] == '=' && a[n + 1] == '"')
            return strtod(a + n + 2, NULL);
    return 0;
}

char *rsr_html_slurp(const char *path, size_t *len)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, in);
        if (ferror(in) || feof(in))
            break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = buf && ferror(in) ? EIO : 0;
    fclose(in);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

void rsr_html_flame_frame(FILE *f, const char *svg_path)
{
    const char *base = strrchr(svg_path, '/');
    base = base ? base + 1 : svg_path;
    size_t len;
    char *svg = rsr_html_slurp(svg_path, &len);
    fputs("<h3>", f);
    rsr_html_text(f, base);
    fputs("</h3>\n", f);
    if (!svg) {
        fputs("<p class=\"note\">Could not read ", f);
        rsr_html_text(f, svg_path);
        fprintf(f, ": %s</p>\n", strerror(errno));
        return;
    }
    /* A data: URL in a sandboxed frame: the SVG keeps its own script
     * (click to zoom, search) but runs in an opaque origin. */
    fputs("<iframe class=\"flame\" sandbox=\"allow-scripts\" ", f);
    /* Its own shape, so that the whole graph shows at the page's width. */
    double w = svg_attr(svg, "width"), h = svg_attr(svg, "height");
    if (w > 0 && h > 0 && isfinite(w / h))
        fprintf(f, "style=\"height:auto;aspect-ratio:%.0f/%.0f\" ", w, h);
    fputs("title=\"", f);
    rsr_html_text(f, base);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    put_base64(f, (const unsigned char *)svg, len);
    fputs("\"></iframe>\n", f);
    free(svg);
}

/* The frames the report could not name (report.json symbols.unnamed, as
 * the terminal says them): per kind of sample, the heaviest modules with
 * their share of that kind's samples and why. */
#define UNNAMED_SHOWN 4
static void unnamed_note(struct page *p)
{
    FILE *f = p->f;
    yajl_val sym = rsr_jv_key(p->root, "symbols"), un = rsr_jv_key(sym, "unnamed");
    if (!rsr_jv_len(un))
        return;
    int files = 0;
    fputs("<p class=\"note\" id=\"unnamed\">Frames not named", f);
    const char *kind = NULL;
    size_t in_kind = 0, more = 0;
    for (size_t i = 0; i < rsr_jv_len(un); i++) {
        yajl_val u = rsr_jv_at(un, i);
        const char *k = rsr_jv_kstr(u, "kind"), *why = rsr_jv_kstr(u, "reason");
        files += rsr_unnamed_file_missing(why);
        if (!k)
            continue;
        if (!kind || strcmp(k, kind) != 0) {
            if (more)
                fprintf(f, "; %zu more module%s", more, more == 1 ? "" : "s");
            fputs(kind ? ". " : ": ", f);
            rsr_html_text(f, k);
            fputs(" samples: ", f);
            kind = k, in_kind = 0, more = 0;
        }
        if (in_kind++ >= UNNAMED_SHOWN) {
            more++;
            continue;
        }
        double addr = rsr_jv_knum_or(u, "addresses", 0);
        fputs(in_kind > 1 ? "; " : "", f);
        rsr_html_text(f, rsr_jv_kstr(u, "module"));
        fprintf(f, " %.1f%% (%.0f address%s: ", 100 * rsr_jv_knum_or(u, "share", 0), addr, addr == 1 ? "" : "es");
        rsr_html_text(f, why);
        fputs(")", f);
    }
    if (more)
        fprintf(f, "; %zu more module%s", more, more == 1 ? "" : "s");
    fputs(files ? ". <code>--sysroot DIR</code>, <code>--symbols FILE</code> or <code>DEBUGINFOD_URLS</code> "
                  "give the files of the machine that ran the job.</p>\n"
                : ".</p>\n",
          f);
}

static void flames(struct page *p, const char *const *svgs, size_t n)
{
    FILE *f = p->f;
    fputs("<section id=\"flames\"><h2>Flame graphs</h2>\n", f);
    if (!n)
        fputs("<p class=\"note\">None: the traces hold no stacks, or `ringside flame` was not "
              "run into this folder.</p>\n", f);
    else
        unnamed_note(p);
    /* what the wait graph leaves out (flame.h) */
    yajl_val ap = rsr_jv_key(p->root, "wait_graph_set_apart"), by = rsr_jv_key(ap, "by_name");
    if (n && ap) {
        double th = rsr_jv_knum_or(ap, "threads", 0);
        fprintf(f, "<p class=\"note\" id=\"wait-set-apart\">The wait graph leaves out %.0f thread%s that only "
                   "waited (helpers, pools, pollers beside a thread that worked; DataLoader workers and other "
                   "children of a rank with nothing to do), %.3g s blocked",
                th, th == 1 ? "" : "s", rsr_jv_knum_or(ap, "wait_s", 0));
        for (size_t i = 0; i < rsr_jv_len(by); i++) {
            yajl_val x = rsr_jv_at(by, i);
            const char *name = rsr_jv_kstr(x, "name");
            fputs(i ? ", " : ": ", f);
            rsr_html_text(f, name && *name ? name : "unnamed");
            fprintf(f, " &times; %.0f (%.3g s)", rsr_jv_knum_or(x, "threads", 0), rsr_jv_knum_or(x, "wait_s", 0));
        }
        fputs("; <code>ringside flame --kind wait --threads</code> shows every thread.</p>\n", f);
    }
    int switches = 0;
    for (size_t i = 0; i < n; i++) {
        /* flame-KIND.svg with a native-KIND.svg beside it (the job had
         * Python frames): a switch between the Python view and every
         * native frame */
        const char *base = strrchr(svgs[i], '/');
        base = base ? base + 1 : svgs[i];
        char native[4096];
        snprintf(native, sizeof native, "%.*snative-%s", (int)(base - svgs[i]), svgs[i],
                 strncmp(base, "flame-", 6) == 0 ? base + 6 : base);
        if (strncmp(base, "flame-", 6) != 0 || access(native, R_OK) != 0) {
            rsr_html_flame_frame(f, svgs[i]);
            continue;
        }
        switches++;
        fputs("<div class=\"flame-views\"><button type=\"button\" class=\"native-switch\">Show every native "
              "frame</button> <span class=\"note\">Python frames as the program's author wrote them; native "
              "frames only below the innermost Python frame (the interpreter's left out), as py-spy shows "
              "them.</span>\n<div class=\"python-view\">", f);
        rsr_html_flame_frame(f, svgs[i]);
        fputs("</div><div class=\"native-view\" hidden>", f);
        rsr_html_flame_frame(f, native);
        fputs("</div></div>\n", f);
    }
    if (switches) {
        fputs("<script>", f);
        rsr_page_put(f, rsr_page_flame_switch_js, rsr_page_flame_switch_js_end);
        fputs("</script>\n", f);
    }
    fputs("</section>\n", f);
}

/* ---- what the page leaves out ---- */

static size_t count_in_procs(yajl_val procs, const char *outer, const char *inner)
{
    size_t n = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val o = rsr_jv_key(rsr_jv_at(procs, i), outer);
        n += rsr_jv_len(inner ? rsr_jv_key(o, inner) : o);
    }
    return n;
}

/* One sentence near the top: the page is a digest of report.json, and
 * here is what it leaves out. Nothing when it leaves nothing out. */
static int cut_note(struct page *p)
{
    yajl_val procs = rsr_jv_key(p->root, "processes");
    struct kagg *k;
    size_t nk;
    double all;
    if (kernels_by_name(procs, &k, &nk, &all) != 0)
        return -1;
    free(k);
    size_t rows[] = { nk, count_in_procs(procs, "io", "files"),
                      count_in_procs(procs, "short_kernels", "fusion_candidates"),
                      rsr_jv_len(rsr_jv_key(p->root, "collectives")),
                      rsr_jv_len(rsr_jv_key(p->root, "checkpoints")) };
    int long_tables = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        long_tables |= rows[i] > TABLE_ROWS;
    size_t nprocs = rsr_jv_len(procs);
    int few_lanes = p->npicks < nprocs;
    if (!p->many && !few_lanes && !long_tables)
        return 0;
    FILE *f = p->f;
    fputs("<p class=\"note\" id=\"page-cut\">This page is a digest of report.json, which has every "
          "figure. Left out here:", f);
    const char *sep = " ";
    if (p->many) {
        fprintf(f, "%sthe timeline bins of each rank, drawn in 64 steps of their scale", sep);
        sep = "; ";
    }
    if (few_lanes) {
        fprintf(f, "%stimeline lanes for all but %zu of %zu processes", sep, p->npicks, nprocs);
        sep = "; ";
    }
    if (long_tables)
        fprintf(f, "%stable rows beyond the first %d (kernels are summed over processes, %zu names; "
                   "files %zu)", sep, TABLE_ROWS, nk, rows[1]);
    fputs(".</p>\n", f);
    return 0;
}

/* ---- entry points ---- */

/* Reads what every part of the page needs from report.json and picks the
 * lanes. -1 with errno ENOMEM. */
static int page_setup(struct page *p)
{
    yajl_val root = p->root, tl = rsr_jv_key(root, "timeline"), procs = rsr_jv_key(root, "processes");
    if (rsr_jv_knum(tl, "bin_us", &p->tl_bin_us) && p->tl_bin_us > 0) {
        p->have_timeline = 1;
        p->tl_start_us = rsr_jv_knum_or(tl, "start_us", 0);
    }
    p->have_ck_origin = rsr_jv_knum(root, "start_us", &p->ck_origin_us) ||
                        rsr_jv_knum(tl, "start_us", &p->ck_origin_us);
    size_t ranked = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val proc = rsr_jv_at(procs, i), io = rsr_jv_key(proc, "io");
        if (rsr_jv_knum_or(io, "read_bytes", 0) > 0 || rsr_jv_knum_or(io, "write_bytes", 0) > 0)
            p->have_io = 1;
        ranked += rsr_jv_knum_or(proc, "rank", -1) >= 0;
    }
    p->many = ranked > RSR_HTML_FEW_RANKS || rsr_jv_len(rsr_jv_key(tl, "ranks")) > RSR_HTML_FEW_RANKS;
    if (!(p->names = rsr_html_names_read(root)) || !(p->ranks = rsr_html_ranks_read(root, p->names)))
        return -1;
    if (!(p->picks = calloc(p->nmodels + 1, sizeof *p->picks))) {
        errno = ENOMEM;
        return -1;
    }
    p->npicks = rsr_html_pick_lanes(root, p->ranks, p->models, p->nmodels, p->picks);
    p->all_lanes = p->npicks == p->nmodels && p->nmodels >= rsr_jv_len(procs);
    double from, to;
    if (p->have_ck_origin && rsr_html_lanes_window(root, &from, &to)) {
        /* Within a century of the clock's zero, as for checkpoints. */
        double a = p->ck_origin_us * 1e3 + from * 1e9, b = p->ck_origin_us * 1e3 + to * 1e9;
        if (fabs(a) < 4e18 && fabs(b) < 4e18 && b - a >= 1) {
            p->have_win = 1;
            p->win_s = (int64_t)a;
            p->win_e = (int64_t)b;
        }
    }
    return 0;
}

/* The page, top to bottom. Up to RSR_HTML_FEW_RANKS ranks: summary with
 * a bar per rank, lanes for every process, a line per rank over time,
 * then the ranks side by side. More: summary with the ranks side by side,
 * heatmaps, lanes for the few ranks picked. Then tables, flame graphs. */
static int page_write(struct page *p, const char *const *flame_svgs, size_t nflames)
{
    FILE *f = p->f;
    yajl_val root = p->root, procs = rsr_jv_key(root, "processes");
    char title[256];
    rsr_html_title(p->names, root, title, sizeof title);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
          "frame-src data:\">\n", f);
    /* A report of a running job (report --watch): reload to the next one. */
    yajl_val watch = rsr_jv_key(root, "watch");
    int live = watch && YAJL_IS_FALSE(rsr_jv_key(watch, "final"));
    if (live)
        fprintf(f, "<meta http-equiv=\"refresh\" content=\"%.0f\">\n",
                ceil(fmax(1, rsr_jv_knum_or(watch, "every_s", 5))));
    fputs("<title>ringside: ", f);
    rsr_html_text(f, title);
    fputs("</title>\n<style>", f);
    rsr_page_put(f, rsr_page_report_css, rsr_page_report_css_end);
    fputs("</style></head>\n<body>\n<header><h1>ringside report: ", f);
    rsr_html_text(f, title);
    fputs("</h1><p>", f);
    step_headline(f, rsr_jv_key(root, "steps"), rsr_jv_knum_or(root, "wall_s", 0));
    double world;
    if (rsr_jv_knum(root, "world_size", &world))
        fprintf(f, "world size %.0f &middot; ", world);
    double dropped = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        dropped += rsr_jv_knum_or(rsr_jv_at(procs, i), "dropped", 0);
    if (live)
        fprintf(f, "<span id=\"live\">the job is running: report %.0f, %.0f of %.0f trace files ended; this page "
                   "reloads every %.0f s</span> &middot; ",
                rsr_jv_knum_or(watch, "pass", 0), rsr_jv_knum_or(watch, "ended", 0),
                rsr_jv_knum_or(watch, "files", 0), ceil(fmax(1, rsr_jv_knum_or(watch, "every_s", 5))));
    fprintf(f, "%zu processes traced &middot; %zu timelines &middot; %.0f records dropped &middot; "
               "ringside %s</p>",
            rsr_jv_len(procs), p->nmodels, dropped, RINGSIDE_VERSION);
    /* the finding whose cause gives back most, first: report.json's
     * headline (findings.h), as the terminal says it */
    const char *headline = rsr_jv_kstr(root, "headline");
    if (headline) {
        fputs("<p id=\"recoverable\"><a href=\"#findings\">", f);
        rsr_html_text(f, headline);
        fputs("</a></p>", f);
    }
    fputs("</header>\n<main>\n", f);
    rsr_html_ends_banner(f, root, p->names);
    fputs("<section id=\"summary\"><h2>Summary</h2>\n", f);
    /* Many ranks: the strip plots are tall, the findings go beside them. */
    fputs("<div class=\"top\"><div>", f);
    summary_cards(p);
    if (p->many)
        findings(p);
    fputs("</div>", f);
    if (p->many)
        rsr_html_rank_dist(f, p->ranks);
    else
        rank_bars(p);
    fputs("</div>", f);
    if (!p->many)
        findings(p);
    if (cut_note(p) != 0)
        return -1;
    fputs("</section>\n", f);
    int heat = p->many && rsr_html_heatmaps(f, root, p->ranks, p->have_io);
    if (timeline(p) != 0)
        return -1;
    rsr_html_critpath(f, root);
    step_chart(f, rsr_jv_key(root, "steps"), procs);
    if (!p->many) {
        charts(p);
        if (rsr_html_ranks_gpu(p->ranks) >= 3) {
            fputs("<section id=\"ranks\">", f);
            rsr_html_rank_dist(f, p->ranks);
            fputs("</section>\n", f);
        }
    }
    rsr_html_memory(f, root);
    struct rsr_html_table *nt = rsr_html_table_begin(f, &p->f);
    if (!nt)
        return -1;
    rsr_html_nodes(p->f, root);
    p->f = f;
    if (rsr_html_table_end(nt) != 0)
        return -1;
    if (tables(p) != 0)
        return -1;
    struct rsr_html_table *t = rsr_html_table_begin(f, &p->f);
    if (!t)
        return -1;
    rsr_html_offcpu(p->f, procs, p->names);
    p->f = f;
    if (rsr_html_table_end(t) != 0)
        return -1;
    flames(p, flame_svgs, nflames);
    fputs("</main>\n<div id=\"tip\"></div>\n", f);
    rsr_html_rank_data(f, root, p->ranks, heat, p->have_io);
    fputs("<script>", f);
    rsr_page_put(f, rsr_page_report_js, rsr_page_report_js_end);
    fputs("\n</script>\n</body></html>\n", f);
    return 0;
}

int rsr_html_write_flames(FILE *f, const char *report_json, size_t len,
                          struct rsr_model *const *models, size_t nmodels,
                          const char *const *flame_svgs, size_t nflames)
{
    char *text = malloc(len + 1);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(text, report_json, len);
    text[len] = 0;
    char err[256];
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    free(text);
    if (!YAJL_IS_OBJECT(root)) {
        yajl_tree_free(root);
        errno = EINVAL;
        return -1;
    }
    struct page p = { .f = f, .root = root, .models = models, .nmodels = nmodels };
    int rc = page_setup(&p);
    if (rc == 0)
        rc = page_write(&p, flame_svgs, nflames);
    rsr_html_ranks_free(p.ranks);
    rsr_html_names_free(p.names);
    free(p.picks);
    yajl_tree_free(root);
    if (rc != 0)
        return -1;
    if (fflush(f) != 0 || ferror(f)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

int rsr_html_write(FILE *f, const char *report_json, size_t len, struct rsr_model *const *models,
                   size_t nmodels)
{
    return rsr_html_write_flames(f, report_json, len, models, nmodels, NULL, 0);
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The flame-NAME.svg files in dir, sorted; *n of them. NULL with *n 0 when none. */
static char **find_flames(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 10 || strncmp(e->d_name, "flame-", 6) != 0 || strcmp(e->d_name + len - 4, ".svg"))
            continue;
        if (RSR_GROW(v, cap, *n + 1, 8) != 0)
            break;
        size_t plen = strlen(dir) + len + 2;
        if (!(v[*n] = malloc(plen)))
            break;
        snprintf(v[*n], plen, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_path);
    return v;
}

int rsr_html_write_dir(const char *out_dir, struct rsr_model *const *models, size_t nmodels,
                       const char **failed)
{
    static char json_path[4096], path[4096], tmp[4096];
    snprintf(json_path, sizeof json_path, "%s/report.json", out_dir);
    *failed = json_path;
    size_t len;
    char *json = rsr_html_slurp(json_path, &len);
    if (!json)
        return -1;
    size_t nflames;
    char **flame = find_flames(out_dir, &nflames);
    snprintf(tmp, sizeof tmp, "%s/.index.html.tmp", out_dir);
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    int rc = -1;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        *failed = tmp;
    } else {
        rc = rsr_html_write_flames(f, json, len, models, nmodels, (const char *const *)flame, nflames);
        int err = errno;
        if (fclose(f) != 0 && rc == 0)
            rc = -1, err = errno;
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -1, err = errno;
        if (rc != 0) {
            unlink(tmp);
            *failed = err == EINVAL ? json_path : path;
        }
        errno = err;
    }
    for (size_t i = 0; i < nflames; i++)
        free(flame[i]);
    free(flame);
    free(json);
    return rc;
}
