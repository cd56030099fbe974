/* The page's views of many ranks. report.json's per-process figures and
 * timeline bins are written into the page once, compactly (figures rounded
 * to what the page shows, bins as one character per value), and the script
 * draws strip plots, heatmaps and the processes table from them; outliers
 * are found here, with a robust rule, and named in the page's text. */
#include "reporter/out/html_ranks.h"
#include "reporter/out/html_json.h"
#include "reporter/out/html_names.h"
#include "reporter/base/json.h"
#include "reporter/base/order.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A rank is an outlier on a figure when it is further from the median than
 * both OUT_Z robust standard deviations (1.4826 x the median absolute
 * deviation: Iglewicz and Hoaglin's modified z-score above 3.5) and the
 * figure's floor. The floor is there because a thousand equal ranks put a
 * few beyond 3.5 deviations by chance, and because a difference of a few
 * points of the span is not one to act on. */
#define OUT_Z 3.5
#define MAD_SD 1.4826
#define FLOOR_PCT 5.0       /* percentage points of the GPU span */
#define FLOOR_WAIT 0.05     /* collective wait: of the median GPU span */
#define MIN_RANKS 3         /* fewer and there is no median to stand out from */
#define NAMED_MAX 6         /* outliers named per figure; the rest counted */

/* The heatmaps' values: one character each, 64 levels of the series'
 * scale (the colour map has no more steps than that); '.' for none. */
#define NLEVELS 64
static const char levels[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
_Static_assert(sizeof levels == NLEVELS + 1, "one character per level");

/* The processes table, in column order; the script formats each column
 * by its kind. `pair` is allocs / frees, sorted by allocs. */
#define PROC_COLS(X) \
    X(NAME,     "process",               "text") \
    X(ROLE,     "role",                  "text") \
    X(HOST,     "host",                  "host") \
    X(WALL,     "wall",                  "us")   \
    X(SPAN,     "GPU span",              "us")   \
    X(COMPUTE,  "compute %",             "pct")  \
    X(COMM,     "comm %",                "pct")  \
    X(COPIES,   "copies %",              "pct")  \
    X(IDLE,     "idle %",                "pct")  \
    X(BUSY,     "busy %",                "pct")  \
    X(SMACT,    "SM activity %",         "pct")  \
    X(EXPOSED,  "exposed comm %",        "pct")  \
    X(OVERLAP,  "overlap %",             "pct")  \
    X(WAIT,     "waited in collectives", "us")   \
    X(SYNCS,    "GPU syncs",             "int")  \
    X(BLOCKED,  "blocked in syncs, all threads", "us") \
    X(ALLOCS,   "allocs / frees",        "pair") \
    X(LOADING,  "data loading %",        "pct")  \
    X(DROPPED,  "dropped",               "int")  \
    X(TRACE,    "trace",                 "text")

enum proc_col {
#define PC_ENUM(name, title, kind) PC_##name,
    PROC_COLS(PC_ENUM)
#undef PC_ENUM
    PC_N
};

static const char *const col_title[] = {
#define PC_TITLE(name, title, kind) title,
    PROC_COLS(PC_TITLE)
#undef PC_TITLE
};

static const char *const col_kind[] = {
#define PC_KIND(name, title, kind) kind,
    PROC_COLS(PC_KIND)
#undef PC_KIND
};

/* The figures drawn side by side, each a column of the processes table. */
#define FIGS(X) \
    X(COMPUTE, "compute", "GPU compute",           "% of the GPU span", PC_COMPUTE) \
    X(EXPOSED, "exposed", "Exposed communication", "% of the GPU span", PC_EXPOSED) \
    X(IDLE,    "idle",    "GPU idle",              "% of the GPU span", PC_IDLE)    \
    X(SMACT,   "smact",   "SM activity",           "% of the GPU span", PC_SMACT)   \
    X(WAIT,    "wait",    "Waited in collectives", "for the last rank to arrive", PC_WAIT)

enum fig {
#define FIG_ENUM(name, id, title, unit, col) FIG_##name,
    FIGS(FIG_ENUM)
#undef FIG_ENUM
    NFIGS
};

static const struct {
    const char *id, *title, *unit;
    enum proc_col col;
} fig_def[] = {
#define FIG_DEF(name, id, title, unit, col) { id, title, unit, col },
    FIGS(FIG_DEF)
#undef FIG_DEF
};

struct proc {
    yajl_val v;
    double rank;                /* -1: none */
    double col[PC_N], col2;     /* col2: frees, beside allocs */
    unsigned char has[PC_N];
    size_t host;                /* index into hosts */
    int ends_early;             /* its file ends early (ends.h): it waited less
                                   only for lack of time, so its wait is set
                                   against no other rank's */
};

struct fig_stats {
    size_t n;                   /* processes with the figure */
    double med, q1, q3, lo, hi;
    size_t *out, nout;          /* outliers (process indices), furthest first */
};

struct rsr_html_ranks {
    struct proc *p;
    size_t n, ngpu;
    const char **hosts;
    size_t nhosts;
    struct fig_stats fig[NFIGS];
    double ck_origin_us;        /* what times on the page count from */
    const struct rsr_html_names *names;
    int have_origin;
};

static void set(struct proc *p, enum proc_col c, yajl_val o, const char *k, double scale)
{
    double v;
    if (rsr_jv_knum(o, k, &v)) {
        p->col[c] = v * scale;
        p->has[c] = 1;
    }
}

static int read_proc(struct rsr_html_ranks *r, struct proc *p, yajl_val v)
{
    p->v = v;
    p->rank = rsr_jv_knum_or(v, "rank", -1);
    yajl_val gpu = rsr_jv_key(v, "gpu"), sy = rsr_jv_key(v, "syncs");
    set(p, PC_WALL, v, "wall_s", 1e6);
    set(p, PC_SPAN, gpu, "span_us", 1);
    set(p, PC_COMPUTE, gpu, "compute_pct", 1);
    set(p, PC_COMM, gpu, "comm_pct", 1);
    set(p, PC_COPIES, gpu, "memcpy_pct", 1);
    set(p, PC_IDLE, gpu, "idle_pct", 1);
    set(p, PC_BUSY, gpu, "busy_pct", 1);
    /* SM activity only where it says something: measured, or some geometry */
    const char *src = rsr_jv_kstr(gpu, "sm_activity_source");
    if (src && (strcmp(src, "nvml-gpm") == 0 || rsr_jv_knum_or(gpu, "no_geometry_pct", 100) < 100))
        set(p, PC_SMACT, gpu, "sm_activity_pct", 1);
    set(p, PC_EXPOSED, gpu, "exposed_comm_pct", 1);
    set(p, PC_OVERLAP, gpu, "comm_comp_overlap_pct", 1);
    set(p, PC_WAIT, v, "collective_wait_us", 1);
    p->ends_early = YAJL_IS_TRUE(rsr_jv_key(rsr_jv_key(v, "trace"), "ends_early"));
    set(p, PC_SYNCS, sy, "count", 1);
    if (p->has[PC_SYNCS]) {
        p->col[PC_BLOCKED] = rsr_jv_knum_or(sy, "blocked_s", 0) * 1e6;
        p->has[PC_BLOCKED] = 1;
    }
    set(p, PC_ALLOCS, rsr_jv_key(v, "memory"), "allocs", 1);
    p->col2 = rsr_jv_knum_or(rsr_jv_key(v, "memory"), "frees", 0);
    set(p, PC_LOADING, rsr_jv_key(v, "data_loading"), "pct", 1);
    p->col[PC_DROPPED] = rsr_jv_knum_or(v, "dropped", 0);
    p->has[PC_DROPPED] = 1;
    r->ngpu += p->has[PC_COMPUTE];
    /* Hosts once each: a thousand ranks run on a hundred or so nodes. */
    const char *host = rsr_jv_kstr(v, "host");
    host = host ? host : "";
    for (p->host = 0; p->host < r->nhosts; p->host++)
        if (strcmp(r->hosts[p->host], host) == 0)
            return 0;
    const char **grown = realloc(r->hosts, (r->nhosts + 1) * sizeof *grown);
    if (!grown)
        return -1;
    r->hosts = grown;
    r->hosts[r->nhosts++] = host;
    return 0;
}

/* The q-quantile of n sorted values, interpolated between neighbours. */
static double quantile(const double *v, size_t n, double q)
{
    double at = q * (double)(n - 1);
    size_t i = (size_t)at;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (at - (double)i) : v[n - 1];
}

struct dev {
    double d;
    size_t i;
};

static int cmp_dev(const void *a, const void *b)
{
    double x = ((const struct dev *)a)->d, y = ((const struct dev *)b)->d;
    return (x < y) - (x > y);
}

/* Whether p's figure fi is set against the other processes'. */
static int counted(const struct proc *p, enum fig fi)
{
    return p->has[fig_def[fi].col] && !(fi == FIG_WAIT && p->ends_early);
}

/* The median, quartiles, fences and outliers of figure fi; min_dev is the
 * figure's floor. -1 when out of memory. */

static int fig_outliers(struct rsr_html_ranks *r, enum fig fi, double min_dev)
{
    struct fig_stats *s = &r->fig[fi];
    enum proc_col c = fig_def[fi].col;
    double *v = malloc((r->n ? r->n : 1) * sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < r->n; i++)
        if (counted(&r->p[i], fi))
            v[s->n++] = r->p[i].col[c];
    if (s->n < MIN_RANKS) {
        free(v);
        return 0;
    }
    qsort(v, s->n, sizeof *v, rsr_cmp_double);
    s->med = quantile(v, s->n, 0.5);
    s->q1 = quantile(v, s->n, 0.25);
    s->q3 = quantile(v, s->n, 0.75);
    for (size_t i = 0; i < s->n; i++)
        v[i] = fabs(v[i] - s->med);
    qsort(v, s->n, sizeof *v, rsr_cmp_double);
    double half = fmax(OUT_Z * MAD_SD * quantile(v, s->n, 0.5), min_dev);
    free(v);
    s->lo = s->med - half;
    s->hi = s->med + half;
    struct dev *d = malloc(s->n * sizeof *d);
    if (!d || !(s->out = malloc(s->n * sizeof *s->out))) {
        free(d);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++)
        if (counted(&r->p[i], fi) && (r->p[i].col[c] < s->lo || r->p[i].col[c] > s->hi))
            d[s->nout++] = (struct dev){ fabs(r->p[i].col[c] - s->med), i };
    qsort(d, s->nout, sizeof *d, cmp_dev);
    for (size_t k = 0; k < s->nout; k++)
        s->out[k] = d[k].i;
    free(d);
    return 0;
}

/* The floor of the collective wait: a share of the ranks' median GPU span,
 * else of their median wait. */
static double wait_floor(const struct rsr_html_ranks *r)
{
    double *v = malloc((r->n ? r->n : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->p[i].has[PC_SPAN] && r->p[i].col[PC_SPAN] > 0)
            v[n++] = r->p[i].col[PC_SPAN];
    if (!n)
        for (size_t i = 0; i < r->n; i++)
            if (r->p[i].has[PC_WAIT])
                v[n++] = r->p[i].col[PC_WAIT];
    double min_dev = 0;
    if (n) {
        qsort(v, n, sizeof *v, rsr_cmp_double);
        min_dev = FLOOR_WAIT * quantile(v, n, 0.5);
    }
    free(v);
    /* a microsecond at least: equal ranks that never wait are not outliers */
    return fmax(min_dev, 1);
}

struct rsr_html_ranks *rsr_html_ranks_read(yajl_val root, const struct rsr_html_names *names)
{
    struct rsr_html_ranks *r = calloc(1, sizeof *r);
    yajl_val procs = rsr_jv_key(root, "processes");
    if (!r || !(r->p = calloc(rsr_jv_len(procs) + 1, sizeof *r->p)))
        goto oom;
    r->names = names;
    r->have_origin = rsr_jv_knum(root, "start_us", &r->ck_origin_us) ||
                     rsr_jv_knum(rsr_jv_key(root, "timeline"), "start_us", &r->ck_origin_us);
    for (r->n = 0; r->n < rsr_jv_len(procs); r->n++)
        if (read_proc(r, &r->p[r->n], rsr_jv_at(procs, r->n)) != 0)
            goto oom;
    double wf = wait_floor(r);
    if (wf < 0)
        goto oom;
    for (int fi = 0; fi < NFIGS; fi++)
        if (fig_outliers(r, (enum fig)fi, fi == FIG_WAIT ? wf : FLOOR_PCT) != 0)
            goto oom;
    return r;
oom:
    rsr_html_ranks_free(r);
    errno = ENOMEM;
    return NULL;
}

void rsr_html_ranks_free(struct rsr_html_ranks *r)
{
    if (!r)
        return;
    for (int fi = 0; fi < NFIGS; fi++)
        free(r->fig[fi].out);
    free(r->hosts);
    free(r->p);
    free(r);
}

size_t rsr_html_ranks_gpu(const struct rsr_html_ranks *r)
{
    return r->ngpu;
}

/* A figure's value as the page shows it. */
static void put_fig_value(FILE *f, enum fig fi, double v)
{
    if (fi == FIG_WAIT) {
        char b[32];
        rsr_html_fmt_ns(b, sizeof b, v * 1e3);
        fputs(b, f);
    } else {
        fprintf(f, "%.1f%%", v);
    }
}

void rsr_html_rank_dist(FILE *f, const struct rsr_html_ranks *r)
{
    int any = 0;
    for (int fi = 0; fi < NFIGS; fi++)
        any |= r->fig[fi].n >= MIN_RANKS;
    if (!any)
        return;
    fprintf(f, "<div id=\"rank-dist\"><h2>Ranks side by side</h2><p class=\"note\">A dot per rank, "
               "the box the middle half, the line the median. Outside the shaded band a rank is an "
               "outlier, named below: further from the median than %.1f robust standard deviations "
               "(%.4g &times; the median absolute deviation) and than %.0f points of the span "
               "(collective wait: %.0f%% of the median GPU span). Hover a dot for its rank.</p>\n",
            OUT_Z, MAD_SD, FLOOR_PCT, FLOOR_WAIT * 100);
    for (int fi = 0; fi < NFIGS; fi++) {
        const struct fig_stats *s = &r->fig[fi];
        if (s->n < MIN_RANKS)
            continue;
        fprintf(f, "<div class=\"dist\" id=\"dist-%s\"><div class=\"dh\"><b>%s</b> %s &middot; "
                   "median ", fig_def[fi].id, fig_def[fi].title, fig_def[fi].unit);
        put_fig_value(f, (enum fig)fi, s->med);
        fprintf(f, " of %zu</div><canvas class=\"strip\" data-f=\"%d\"></canvas>", s->n, fi);
        if (!s->nout) {
            fputs("<p class=\"outliers none\">No outlier: every rank within the band, ", f);
            put_fig_value(f, (enum fig)fi, fmax(s->lo, 0));
            fputs(" to ", f);
            put_fig_value(f, (enum fig)fi, s->hi);
            fputs(".</p></div>\n", f);
            continue;
        }
        fputs("<p class=\"outliers\">Outlier", f);
        fputs(s->nout > 1 ? "s: " : ": ", f);
        for (size_t k = 0; k < s->nout && k < NAMED_MAX; k++) {
            const struct proc *p = &r->p[s->out[k]];
            fputs(k ? ", <b>" : "<b>", f);
            rsr_html_proc(f, r->names, p->v);
            fputs("</b> ", f);
            put_fig_value(f, (enum fig)fi, p->col[fig_def[fi].col]);
        }
        if (s->nout > NAMED_MAX)
            fprintf(f, " and %zu more (the processes table sorts by it)", s->nout - NAMED_MAX);
        fputs("</p></div>\n", f);
    }
    fputs("</div>\n", f);
}

void rsr_html_table_processes(FILE *f, const struct rsr_html_ranks *r)
{
    if (!r->n)
        return;
    /* A thousand rows scroll in a box of their own, under their header. */
    fputs("<h3>Processes</h3><div class=\"scroll\"><table class=\"sort\" id=\"table-processes\">"
          "<thead><tr>", f);
    /* A figure no process has, or that is zero in all, is left out (the
     * GPU's, in a job that used none); data-c is its place in D.procs. */
    for (int c = 0; c < PC_N; c++) {
        int num = strcmp(col_kind[c], "text") != 0 && strcmp(col_kind[c], "host") != 0, any = !num && c != PC_TRACE;
        for (size_t i = 0; i < r->n && c == PC_TRACE && !any; i++)
            any = rsr_jv_key(r->p[i].v, "trace") != NULL;
        for (size_t i = 0; i < r->n && !any; i++)
            any = r->p[i].has[c] && (r->p[i].col[c] != 0 || (c == PC_ALLOCS && r->p[i].col2 != 0));
        if (any)
            fprintf(f, "<th%s data-k=\"%s\" data-c=\"%d\">%s</th>", num ? " class=\"n\"" : "", col_kind[c], c,
                    col_title[c]);
    }
    fputs("</tr></thead><tbody></tbody></table></div>\n", f);
}

/* The numbers of the rank data: what the page shows, and a little more
 * for sorting (rsr_jw_num: 6 significant digits). */
static void put_trace(struct rsr_jw *w, yajl_val tr)
{
    char b[64];
    if (YAJL_IS_TRUE(rsr_jv_key(tr, "cut_short")))
        snprintf(b, sizeof b, "cut short: %.0f bytes unread", rsr_jv_knum_or(tr, "unread_bytes", 0));
    else if (YAJL_IS_TRUE(rsr_jv_key(tr, "complete")))
        snprintf(b, sizeof b, "complete");
    else
        snprintf(b, sizeof b, "%s", tr ? "no end mark" : "");
    rsr_jw_str(w, b);
}

/* A process's role; a torch.compile worker or compiler run says whose
 * (compile.for_pid on its host, by that process's name). */
static void put_role(struct rsr_jw *w, const struct rsr_html_ranks *r, const struct proc *me)
{
    yajl_val v = me->v, c = rsr_jv_key(v, "compile");
    const char *kind = rsr_jv_kstr(c, "kind");
    if (!kind) {
        const char *role = rsr_jv_kstr(v, "role");
        rsr_jw_str(w, role ? role : "");
        return;
    }
    const char *what = strcmp(kind, "worker") == 0 ? "compile worker" : "compiler run";
    char b[80];
    double owner, pid;
    if (!rsr_jv_knum(c, "for_pid", &owner)) {
        rsr_jw_str(w, what);
        return;
    }
    snprintf(b, sizeof b, "%s of pid %.0f", what, owner);
    for (size_t i = 0; i < r->n; i++)
        if (r->p[i].rank >= 0 && r->p[i].host == me->host && rsr_jv_knum(r->p[i].v, "pid", &pid) && pid == owner) {
            snprintf(b, sizeof b, "%s of rank %.0f", what, r->p[i].rank);
            break;
        }
    rsr_jw_str(w, b);
}

/* "hosts", "procs" (a row per process: name, role, host, the columns,
 * the trace's state) and "figs" (each figure's spread, null with too few
 * ranks). */
static void put_procs(struct rsr_jw *w, const struct rsr_html_ranks *r)
{
    rsr_jw_karray(w, "hosts", 0);
    for (size_t h = 0; h < r->nhosts; h++)
        rsr_jw_str(w, r->hosts[h]);
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_karray(w, "procs", RSR_JW_LINES);
    for (size_t i = 0; i < r->n; i++) {
        const struct proc *p = &r->p[i];
        const char *name = rsr_html_name(r->names, p->v);
        rsr_jw_array(w, 0);
        rsr_jw_str(w, name ? name : "");
        put_role(w, r, p);
        rsr_jw_uint(w, p->host);
        for (int c = PC_WALL; c < PC_TRACE; c++) {
            if (!p->has[c]) {
                rsr_jw_null(w);
            } else if (c == PC_ALLOCS) {
                rsr_jw_array(w, 0);
                rsr_jw_num(w, p->col[c]);
                rsr_jw_num(w, p->col2);
                rsr_jw_end(w);
            } else {
                rsr_jw_num(w, p->col[c]);
            }
        }
        put_trace(w, rsr_jv_key(p->v, "trace"));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_karray(w, "figs", 0);
    for (int fi = 0; fi < NFIGS; fi++) {
        const struct fig_stats *s = &r->fig[fi];
        if (s->n < MIN_RANKS) {
            rsr_jw_null(w);
            continue;
        }
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "id", fig_def[fi].id);
        rsr_jw_kint(w, "col", (int)fig_def[fi].col);
        rsr_jw_kstr(w, "unit", fi == FIG_WAIT ? "us" : "%");
        const char *k[] = { "med", "q1", "q3", "lo", "hi" };
        double v[] = { s->med, s->q1, s->q3, s->lo, s->hi };
        for (int j = 0; j < 5; j++)
            rsr_jw_knum(w, k[j], v[j]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* ---- heatmaps ---- */

#define SERIES(X) \
    X("gpu_busy_pct", "GPU busy",                "%",    0) \
    X("sm_active_pct", "SM activity (launch geometry)", "%", 0) \
    X("comm_gbs",     "Communication bandwidth", "GB/s", 0) \
    X("read_mbs",     "Storage read",            "MB/s", 1) \
    X("write_mbs",    "Storage write",           "MB/s", 1)

static const struct {
    const char *key, *title, *unit;
    int io;
} series[] = {
#define SERIES_DEF(key, title, unit, io) { key, title, unit, io },
    SERIES(SERIES_DEF)
#undef SERIES_DEF
};
#define NSERIES (sizeof series / sizeof series[0])

/* The largest value of a series over every rank; -1 when no rank has it. */
static double series_max(yajl_val ranks, const char *key)
{
    double top = -1, v;
    for (size_t i = 0; i < rsr_jv_len(ranks); i++) {
        yajl_val s = rsr_jv_key(rsr_jv_at(ranks, i), key);
        if (!YAJL_IS_ARRAY(s))
            continue;
        top = fmax(top, 0);
        for (size_t b = 0; b < rsr_jv_len(s); b++)
            if (rsr_jv_num(rsr_jv_at(s, b), &v))
                top = fmax(top, v);
    }
    return top;
}

/* Whether the page draws series i: storage only where some process read
 * or wrote (with_io), the GPU's only where some process has GPU figures. */
static int show_series(yajl_val ranks, size_t i, const struct rsr_html_ranks *r, int with_io)
{
    return (series[i].io ? with_io : r->ngpu > 0) && series_max(ranks, series[i].key) >= 0;
}

/* How many of report.json's bins make one column of the heatmaps: so that
 * the values take at most about HEAT_CHARS characters of the page whatever
 * the ranks and bins, and there are no more columns than HEAT_MAX_BINS (a
 * pixel or two each). A column is the mean of its bins. */
#define HEAT_CHARS 1000000
#define HEAT_MAX_BINS 400
#define HEAT_MIN_BINS 32

static size_t bins_per_column(yajl_val ranks, const struct rsr_html_ranks *r, int with_io)
{
    size_t nbins = 0, nseries = 0;
    for (size_t i = 0; i < NSERIES; i++) {
        if (!show_series(ranks, i, r, with_io))
            continue;
        nseries++;
        for (size_t k = 0; k < rsr_jv_len(ranks); k++) {
            size_t n = rsr_jv_len(rsr_jv_key(rsr_jv_at(ranks, k), series[i].key));
            nbins = n > nbins ? n : nbins;
        }
    }
    size_t cells = rsr_jv_len(ranks) * (nseries ? nseries : 1);
    size_t cols = HEAT_CHARS / (cells ? cells : 1);
    cols = cols > HEAT_MAX_BINS ? HEAT_MAX_BINS : cols < HEAT_MIN_BINS ? HEAT_MIN_BINS : cols;
    return nbins <= cols ? 1 : (nbins + cols - 1) / cols;
}

int rsr_html_heatmaps(FILE *f, yajl_val root, const struct rsr_html_ranks *r, int with_io)
{
    yajl_val tl = rsr_jv_key(root, "timeline"), ranks = rsr_jv_key(tl, "ranks");
    double bin_us;
    if (!rsr_jv_len(ranks) || !rsr_jv_knum(tl, "bin_us", &bin_us) || bin_us <= 0)
        return 0;
    char b[32];
    rsr_html_fmt_ns(b, sizeof b, bin_us * (double)bins_per_column(ranks, r, with_io) * 1e3);
    fprintf(f, "<section id=\"heatmaps\"><h2>Ranks over time</h2><p class=\"note\">A row per rank "
               "(%zu), a column per %s bin, from report.json's timeline; values in 64 steps of each "
               "scale. Where ranks outnumber the pixel rows, a row shows the rank of its group "
               "furthest from the median of all ranks at that time, so that one odd rank is never "
               "averaged away. Hover for rank, time and value.",
            rsr_jv_len(ranks), b);
    double from, to;
    if (rsr_html_lanes_window(root, &from, &to))
        fputs(" The outlined window is the one the lanes below show.", f);
    fputs("</p><div class=\"heats\">\n", f);
    for (size_t i = 0; i < NSERIES; i++)
        if (show_series(ranks, i, r, with_io))
            fprintf(f, "<div class=\"heat\" id=\"heat-%s\"><h3>%s, %s</h3><canvas class=\"hm\" "
                       "data-s=\"%s\"></canvas></div>\n",
                    series[i].key, series[i].title, series[i].unit, series[i].key);
    if (r->fig[FIG_WAIT].n)
        fputs("<div class=\"heat\" id=\"wait-per-rank\"><h3>Waited in collectives, per rank</h3>"
              "<canvas id=\"wait-ranks\"></canvas><p class=\"note\">The time each rank waited in "
              "collectives for the last rank to arrive (report.json collective_wait_us): the rank "
              "the others wait for waits least. Outliers in red.</p></div>\n", f);
    fputs("</div></section>\n", f);
    return 1;
}

/* One series of every rank as a string of levels of its scale top, a
 * character per k bins. */
static void put_series(struct rsr_jw *w, yajl_val ranks, size_t si, double top, size_t k)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "key", series[si].key);
    rsr_jw_kstr(w, "title", series[si].title);
    rsr_jw_kstr(w, "unit", series[si].unit);
    rsr_jw_knum(w, "max", top);
    rsr_jw_karray(w, "rows", RSR_JW_LINES);
    for (size_t i = 0; i < rsr_jv_len(ranks); i++) {
        yajl_val s = rsr_jv_key(rsr_jv_at(ranks, i), series[si].key);
        size_t n = rsr_jv_len(s), at = 0;
        char *row = malloc(n / k + 2);
        for (size_t b = 0; row && b < n; b += k) {
            double v, sum = 0;
            size_t m = 0;
            for (size_t j = b; j < b + k && j < n; j++)
                if (rsr_jv_num(rsr_jv_at(s, j), &v))
                    sum += v, m++;
            row[at++] = m ? levels[lround(fmin(fmax(sum / (double)m / top, 0), 1) * (NLEVELS - 1))] : '.';
        }
        if (row)
            row[at] = 0;
        rsr_jw_str(w, row ? row : "");
        free(row);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void put_heat(struct rsr_jw *w, yajl_val root, const struct rsr_html_ranks *r, int with_io)
{
    yajl_val tl = rsr_jv_key(root, "timeline"), ranks = rsr_jv_key(tl, "ranks");
    double bin_us = rsr_jv_knum_or(tl, "bin_us", 0), start_us = rsr_jv_knum_or(tl, "start_us", 0);
    size_t k = bins_per_column(ranks, r, with_io);
    /* Times read from the job's start, as everywhere on the page. */
    rsr_jw_line(w);
    rsr_jw_kobject(w, "heat", 0);
    rsr_jw_knum(w, "bin_us", bin_us * (double)k);
    rsr_jw_knum(w, "shift_us", r->have_origin ? r->ck_origin_us - start_us : 0);
    rsr_jw_kstr(w, "levels", levels);
    rsr_jw_karray(w, "ranks", 0);
    for (size_t i = 0; i < rsr_jv_len(ranks); i++) {
        double rk;
        if (rsr_jv_knum(rsr_jv_at(ranks, i), "rank", &rk))
            rsr_jw_num(w, rk);
        else
            rsr_jw_null(w);
    }
    rsr_jw_end(w);
    double from, to;
    if (rsr_html_lanes_window(root, &from, &to)) {
        rsr_jw_karray(w, "window_s", 0);
        rsr_jw_num(w, from);
        rsr_jw_num(w, to);
        rsr_jw_end(w);
    }
    rsr_jw_karray(w, "series", RSR_JW_LINES);
    for (size_t i = 0; i < NSERIES; i++) {
        if (!show_series(ranks, i, r, with_io))
            continue;
        double top = strcmp(series[i].key, "gpu_busy_pct") == 0 || strcmp(series[i].key, "sm_active_pct") == 0 ? 100
                                                                : rsr_html_nice_max(series_max(ranks, series[i].key));
        put_series(w, ranks, i, top, k);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

void rsr_html_rank_data(FILE *f, yajl_val root, const struct rsr_html_ranks *r, int heatmaps,
                        int with_io)
{
    struct rsr_jw w;
    fputs("<script type=\"application/json\" id=\"rank-data\">", f);
    rsr_jw_open(&w, f, RSR_JW_SCRIPT);
    rsr_jw_object(&w, 0);
    put_procs(&w, r);
    if (heatmaps)
        put_heat(&w, root, r, with_io);
    rsr_jw_end(&w);
    rsr_jw_close(&w); /* a failed write shows in ferror(f) */
    fputs("</script>\n", f);
}

/* ---- which ranks get lanes ---- */

int rsr_html_lanes_window(yajl_val root, double *from_s, double *to_s)
{
    yajl_val lanes = rsr_jv_key(root, "lanes");
    return !YAJL_IS_TRUE(rsr_jv_key(lanes, "whole_job")) && rsr_jv_knum(lanes, "from_s", from_s) &&
           rsr_jv_knum(lanes, "to_s", to_s) && *to_s > *from_s;
}

static void add_why(struct rsr_html_lane *out, size_t *n, size_t model, const char *why)
{
    for (size_t i = 0; i < *n; i++)
        if (out[i].model == model) {
            if (out[i].nwhy < RSR_HTML_LANE_WHYS)
                out[i].why[out[i].nwhy++] = why;
            return;
        }
    out[*n] = (struct rsr_html_lane){ .model = model, .why = { why }, .nwhy = 1 };
    (*n)++;
}

/* The model of rank rk (a process of role rank first), or nmodels. */
static size_t model_of(struct rsr_model *const *models, size_t nmodels, double rk)
{
    size_t any = nmodels;
    for (size_t i = 0; i < nmodels; i++)
        if (rk >= 0 && models[i]->rank == rk) {
            if (models[i]->role == RSR_ROLE_RANK)
                return i;
            if (any == nmodels)
                any = i;
        }
    return any;
}

/* How fast a rank ran, for the picks, as `report` picks lanes: the less a
 * rank waited in collectives, the more the others waited for it; without
 * collectives, the less its GPU sat idle. Higher is slower. */
static int slowness(const struct rsr_html_ranks *r, const struct proc *p, double *v)
{
    if (r->fig[FIG_WAIT].n) {
        *v = -p->col[PC_WAIT];
        return counted(p, FIG_WAIT);
    }
    *v = p->col[PC_IDLE];
    return p->has[PC_IDLE];
}

size_t rsr_html_pick_lanes(yajl_val root, const struct rsr_html_ranks *r,
                           struct rsr_model *const *models, size_t nmodels,
                           struct rsr_html_lane *out)
{
    yajl_val lanes = rsr_jv_key(root, "lanes");
    if (lanes || nmodels <= RSR_HTML_FEW_RANKS) {
        yajl_val picked = rsr_jv_key(lanes, "ranks");
        for (size_t i = 0; i < nmodels; i++) {
            out[i] = (struct rsr_html_lane){ .model = i };
            for (size_t k = 0; k < rsr_jv_len(picked); k++) {
                yajl_val x = rsr_jv_at(picked, k);
                const char *why = rsr_jv_kstr(x, "why");
                /* "all": every process has lanes, no reason to show */
                if (why && strcmp(why, "all") != 0 && models[i]->rank >= 0 &&
                    rsr_jv_knum_or(x, "rank", -1) == models[i]->rank && out[i].nwhy < RSR_HTML_LANE_WHYS)
                    out[i].why[out[i].nwhy++] = why;
            }
        }
        return nmodels;
    }
    size_t n = 0, m;
    if ((m = model_of(models, nmodels, 0)) < nmodels)
        add_why(out, &n, m, "first");
    yajl_val st = rsr_jv_at(rsr_jv_key(root, "stragglers"), 0);
    double rk;
    if (rsr_jv_knum(st, "rank", &rk) && (m = model_of(models, nmodels, rk)) < nmodels)
        add_why(out, &n, m, "straggler");
    const struct proc *slow = NULL, *fast = NULL;
    double slow_v = 0, fast_v = 0, v;
    for (size_t i = 0; i < r->n; i++) {
        const struct proc *p = &r->p[i];
        if (p->rank < 0 || !p->has[PC_COMPUTE] || !slowness(r, p, &v))
            continue;
        if (!slow || v > slow_v)
            slow = p, slow_v = v;
        if (!fast || v < fast_v)
            fast = p, fast_v = v;
    }
    if (slow && (m = model_of(models, nmodels, slow->rank)) < nmodels)
        add_why(out, &n, m, "slowest");
    if (fast && fast != slow && (m = model_of(models, nmodels, fast->rank)) < nmodels)
        add_why(out, &n, m, "fastest");
    return n;
}
