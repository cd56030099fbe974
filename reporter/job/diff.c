/* `ringside diff` (see diff.h): opens each side's report (making it from
 * the traces first where there is none), compares the figures the report
 * tells into diff.json, the folded stacks into differential flame graphs
 * and folded two-column files, and writes the page. */
#include "reporter/job/diff.h"
#include "reporter/load/flame.h"
#include "reporter/out/flame_svg.h"
#include "reporter/out/html.h"
#include "reporter/out/html_json.h"
#include "reporter/out/page.h"
#include "reporter/base/intern.h"
#include "reporter/base/json.h"
#include "reporter/job/report.h"
#include "reporter/analyse/steps.h"
#include "reporter/base/units.h"
#include "reporter/base/array.h"
#include "formats/trace.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>

/* ---- the two sides ---- */

struct side {
    const char *label;          /* "before", "after" */
    char dir[4096];             /* the report folder read */
    char tmp[4096];             /* a temporary report folder made from traces; "" when none */
    yajl_val root;              /* report.json */
};

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Reports the traces under path into s->tmp in a child process (as the
 * command `ringside report PATH -o TMP -q` would, as one process). */
static int report_traces(struct side *s, const char *path)
{
    const char *tmpdir = getenv("TMPDIR");
    snprintf(s->tmp, sizeof s->tmp, "%s/ringside-diff-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(s->tmp)) {
        fprintf(stderr, "ringside: diff: a temporary folder in %s: %s\n", tmpdir && *tmpdir ? tmpdir : "/tmp",
                strerror(errno));
        s->tmp[0] = 0;
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("RINGSIDE_MPI", "0", 1);
        char *paths[] = { (char *)path, NULL };
        struct rsr_report_opts ro = { .out_dir = s->tmp, .quiet = 1 };
        _exit(rsr_report_run(paths, 1, &ro));
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "ringside: diff: %s (%s): no report could be made of its traces\n", path, s->label);
        return 1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", s->tmp);
    return 0;
}

/* Removes the temporary report folder dir made (report writes plain files
 * only, whichever it writes). */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4400];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Where text (as yajl_tree_parse read it: up to its first NUL) stops
 * being JSON, and why, into msg as one line: "byte 120: invalid object
 * key", "byte 4096: the JSON ends early". */
static void json_error_at(const char *text, char *msg, size_t n)
{
    size_t len = strlen(text);
    yajl_handle y = yajl_alloc(NULL, NULL, NULL);
    if (!y) {
        snprintf(msg, n, "out of memory");
        return;
    }
    yajl_status st = yajl_parse(y, (const unsigned char *)text, len);
    size_t at = st == yajl_status_ok ? len : yajl_get_bytes_consumed(y);
    if (st == yajl_status_ok)
        st = yajl_complete_parse(y);
    unsigned char *why = st == yajl_status_ok ? NULL : yajl_get_error(y, 0, (const unsigned char *)text, len);
    /* yajl's message: "parse error: REASON\n"; its first line, without the prefix */
    const char *r = why ? (const char *)why : "empty";
    const char *colon = strstr(r, "error: ");
    if (colon)
        r = colon + 7;
    int k = (int)strcspn(r, "\n");
    if (at >= len && why)
        snprintf(msg, n, "byte %zu: the JSON ends early (%.*s)", at, k, r);
    else
        snprintf(msg, n, "byte %zu: %.*s", at, k, r);
    if (why)
        yajl_free_error(y, why);
    yajl_free(y);
}

/* Opens one side: a report folder, or a trace folder reported first. */
static int side_open(struct side *s, const char *path)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/report.json", path);
    struct stat st;
    if (is_file(p)) {
        snprintf(s->dir, sizeof s->dir, "%s", path);
    } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (report_traces(s, path) != 0)
            return 1;
    } else {
        fprintf(stderr, "ringside: diff: %s (%s): %s\n", path, s->label,
                stat(path, &st) != 0 ? strerror(errno) : "not a report folder or a trace folder");
        return 1;
    }
    snprintf(p, sizeof p, "%s/report.json", s->dir);
    size_t len;
    char *text = rsr_html_slurp(p, &len), err[256];
    if (!text) {
        fprintf(stderr, "ringside: diff: %s: %s\n", p, strerror(errno ? errno : EIO));
        return 1;
    }
    s->root = yajl_tree_parse(text, err, sizeof err);
    if (!s->root) {
        json_error_at(text, err, sizeof err);
        fprintf(stderr, "ringside: diff: %s: not a ringside report: %s\n", p, err);
    }
    free(text);
    if (!s->root)
        return 1;
    const char *schema = rsr_jv_kstr(s->root, "schema");
    if (!schema || strcmp(schema, "ringside-report/1") != 0) {
        fprintf(stderr, "ringside: diff: %s: not a ringside report (no schema ringside-report/1)\n", p);
        return 1;
    }
    return 0;
}

static void side_close(struct side *s)
{
    if (s->root)
        yajl_tree_free(s->root);
    if (s->tmp[0])
        remove_tree(s->tmp);
}

/* ---- the figures ---- */

static const char *const gpu_keys[] = { "compute_pct", "comm_pct", "exposed_comm_pct", "memcpy_pct", "idle_pct",
                                        "busy_pct", "sm_activity_pct", "sync_wait_pct" };
#define NGPU (sizeof gpu_keys / sizeof gpu_keys[0])

/* The idle time's causes on each GPU's busiest stream (report.json
 * gpu.idle_busiest_stream), as % of the GPU span: within 100, unlike HTA's
 * sum over streams. */
static const char *const idle_keys[] = { "host_wait_us", "kernel_wait_us", "other_us" };
static const char *const idle_names[] = { "busiest_stream_host_wait_pct", "busiest_stream_kernel_wait_pct",
                                          "busiest_stream_other_idle_pct" };
#define NIDLE (sizeof idle_keys / sizeof idle_keys[0])

/* The mean of each gpu_keys figure, then of each idle cause, over the
 * processes with GPU work. */
static size_t gpu_means(yajl_val root, double *mean)
{
    yajl_val procs = rsr_jv_key(root, "processes");
    size_t n = 0;
    memset(mean, 0, (NGPU + NIDLE) * sizeof *mean);
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val g = rsr_jv_key(rsr_jv_at(procs, i), "gpu");
        if (!g)
            continue;
        for (size_t k = 0; k < NGPU; k++)
            mean[k] += rsr_jv_knum_or(g, gpu_keys[k], 0);
        double span = rsr_jv_knum_or(g, "span_us", 0);
        for (size_t k = 0; k < NIDLE && span > 0; k++)
            mean[NGPU + k] += 100 * rsr_jv_knum_or(rsr_jv_key(g, "idle_busiest_stream"), idle_keys[k], 0) / span;
        n++;
    }
    for (size_t k = 0; n && k < NGPU + NIDLE; k++)
        mean[k] /= (double)n;
    return n;
}

/* Bytes read and written by all processes. */
static void io_sums(yajl_val root, double io[2])
{
    yajl_val procs = rsr_jv_key(root, "processes");
    io[0] = io[1] = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val x = rsr_jv_key(rsr_jv_at(procs, i), "io");
        io[0] += rsr_jv_knum_or(x, "read_bytes", 0);
        io[1] += rsr_jv_knum_or(x, "write_bytes", 0);
    }
}

/* Kernels by name over both sides: per side count and total time, each
 * divided by the processes with kernels when per_rank is set. */
struct kernels {
    struct rsr_intern names;
    double *count[2], *total[2];
    uint32_t cap;
    size_t procs[2];
};

static void kernels_add(struct kernels *k, int side, yajl_val root)
{
    yajl_val procs = rsr_jv_key(root, "processes");
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val ks = rsr_jv_key(rsr_jv_at(procs, i), "kernels");
        k->procs[side] += rsr_jv_len(ks) > 0;
        for (size_t j = 0; j < rsr_jv_len(ks); j++) {
            yajl_val e = rsr_jv_at(ks, j);
            const char *name = rsr_jv_kstr(e, "name");
            uint32_t id = rsr_intern(&k->names, name ? name : "");
            if (id >= k->cap) {
                /* four arrays of one length, the new room zeroed */
                uint32_t cap = k->cap;
                for (int s = 0; s < 2; s++) {
                    uint32_t c1 = k->cap, c2 = k->cap;
                    RSR_XGROW(k->count[s], c1, (size_t)id + 1, 256);
                    RSR_XGROW(k->total[s], c2, (size_t)id + 1, 256);
                    memset(k->count[s] + k->cap, 0, (c1 - k->cap) * sizeof *k->count[s]);
                    memset(k->total[s] + k->cap, 0, (c2 - k->cap) * sizeof *k->total[s]);
                    cap = c1;
                }
                k->cap = cap;
            }
            k->count[side][id] += rsr_jv_knum_or(e, "count", 0);
            k->total[side][id] += rsr_jv_knum_or(e, "total_us", 0);
        }
    }
}

static const struct kernels *sort_k;

static int by_change(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    double x = fabs(sort_k->total[1][a] - sort_k->total[0][a]), y = fabs(sort_k->total[1][b] - sort_k->total[0][b]);
    if (x != y)
        return x > y ? -1 : 1;
    return strcmp(rsr_intern_str(&sort_k->names, a), rsr_intern_str(&sort_k->names, b));
}

/* Collectives by (op, bytes) on one side: calls and the call-weighted
 * mean bus bandwidth and time. */
struct coll {
    const char *op;
    double bytes;
    double count[2], busbw[2], mean_us[2];
};

static struct coll *coll_row(struct coll **v, size_t *n, const char *op, double bytes)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].op, op) == 0 && (*v)[i].bytes == bytes)
            return &(*v)[i];
    *v = rsr_xrealloc(*v, (*n + 1) * sizeof **v);
    struct coll *c = &(*v)[(*n)++];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->bytes = bytes;
    return c;
}

static void colls_add(struct coll **v, size_t *n, int side, yajl_val root)
{
    yajl_val cs = rsr_jv_key(root, "collectives");
    for (size_t i = 0; i < rsr_jv_len(cs); i++) {
        yajl_val c = rsr_jv_at(cs, i);
        const char *op = rsr_jv_kstr(c, "op");
        double cnt = rsr_jv_knum_or(c, "count", 0);
        struct coll *r = coll_row(v, n, op ? op : "?", rsr_jv_knum_or(c, "bytes", 0));
        r->busbw[side] += cnt * rsr_jv_knum_or(c, "busbw_gbs", 0);
        r->mean_us[side] += cnt * rsr_jv_knum_or(c, "mean_us", 0);
        r->count[side] += cnt;
    }
}

static int by_op_bytes(const void *pa, const void *pb)
{
    const struct coll *a = pa, *b = pb;
    int c = strcmp(a->op, b->op);
    return c ? c : (a->bytes > b->bytes) - (a->bytes < b->bytes);
}

/* The figure a step takes: the job's time per training step (steps.h)
 * when both sides have steps, else the job's wall time. */
static double step_or_wall_ms(yajl_val root, int steps)
{
    return steps ? rsr_jv_knum_or(rsr_jv_key(root, "steps"), "per_step_ms", 0)
                 : 1000 * rsr_jv_knum_or(root, "wall_s", 0);
}

static int has_finding(yajl_val root, const char *id)
{
    yajl_val fs = rsr_jv_key(root, "findings");
    for (size_t i = 0; i < rsr_jv_len(fs); i++) {
        const char *x = rsr_jv_kstr(rsr_jv_at(fs, i), "id");
        if (x && strcmp(x, id) == 0)
            return 1;
    }
    return 0;
}

/* Everything diff.json and the page say, computed once. */
struct diff {
    struct side *s[2];
    int steps;                  /* both sides have steps */
    double step_ms[2];          /* time per step (steps), else wall time */
    double wall_s[2], median_ms[2];
    double gpu[2][NGPU + NIDLE];
    double io[2][2];            /* bytes read, written */
    size_t gpu_procs[2];
    int per_rank;               /* processes differ: kernels as per-process means */
    struct kernels k;
    uint32_t *korder;
    uint32_t nk;
    struct coll *colls;
    size_t ncolls;
    double ckpt[2];
    double mem_peak[2];         /* the job's largest GPU memory peak, bytes (report.json memory.peak_bytes) */
    int mem;                    /* both sides have one */
};

static double pct_change(double a, double b)
{
    return a != 0 ? 100 * (b - a) / a : 0;
}

static void diff_compute(struct diff *d)
{
    yajl_val r0 = d->s[0]->root, r1 = d->s[1]->root;
    d->steps = rsr_jv_key(rsr_jv_key(r0, "steps"), "per_step_ms") && rsr_jv_key(rsr_jv_key(r1, "steps"), "per_step_ms");
    for (int s = 0; s < 2; s++) {
        yajl_val r = d->s[s]->root;
        d->step_ms[s] = step_or_wall_ms(r, d->steps);
        d->wall_s[s] = rsr_jv_knum_or(r, "wall_s", 0);
        d->median_ms[s] = rsr_jv_knum_or(rsr_jv_key(r, "steps"), "median_ms", 0);
        d->gpu_procs[s] = gpu_means(r, d->gpu[s]);
        io_sums(r, d->io[s]);
        kernels_add(&d->k, s, r);
        colls_add(&d->colls, &d->ncolls, s, r);
        d->ckpt[s] = rsr_jv_knum_or(r, "checkpoint_pct", 0);
        d->mem_peak[s] = rsr_jv_knum_or(rsr_jv_key(r, "memory"), "peak_bytes", -1);
    }
    d->mem = d->mem_peak[0] >= 0 && d->mem_peak[1] >= 0;
    d->per_rank = d->k.procs[0] != d->k.procs[1];
    for (uint32_t i = 0; d->per_rank && i < d->k.names.n; i++)
        for (int s = 0; s < 2; s++)
            if (d->k.procs[s]) {
                d->k.count[s][i] /= (double)d->k.procs[s];
                d->k.total[s][i] /= (double)d->k.procs[s];
            }
    for (size_t i = 0; i < d->ncolls; i++)
        for (int s = 0; s < 2; s++)
            if (d->colls[i].count[s] > 0) {
                d->colls[i].busbw[s] /= d->colls[i].count[s];
                d->colls[i].mean_us[s] /= d->colls[i].count[s];
            }
    if (d->ncolls > 1)
        qsort(d->colls, d->ncolls, sizeof *d->colls, by_op_bytes);
    d->nk = d->k.names.n;
    d->korder = rsr_xmalloc((d->nk ? d->nk : 1) * sizeof *d->korder);
    for (uint32_t i = 0; i < d->nk; i++)
        d->korder[i] = i;
    sort_k = &d->k;
    qsort(d->korder, d->nk, sizeof *d->korder, by_change);
}

static void diff_free(struct diff *d)
{
    rsr_intern_free(&d->k.names);
    for (int s = 0; s < 2; s++) {
        free(d->k.count[s]);
        free(d->k.total[s]);
    }
    free(d->korder);
    free(d->colls);
}

/* ---- diff.json ---- */

/* "key":{"before":b,"after":a,"delta":a-b} */
static void ba(struct rsr_jw *w, const char *key, double b, double a)
{
    rsr_jw_kobject(w, key, 0);
    rsr_jw_knum(w, "before", b);
    rsr_jw_knum(w, "after", a);
    rsr_jw_knum(w, "delta", a - b);
    rsr_jw_end(w);
}

/* "key":{"before":b,"after":a,"delta_pct":... with the object left open
 * for the caller to add to and close. */
static void ba_change(struct rsr_jw *w, const char *key, double b, double a)
{
    rsr_jw_kobject(w, key, 0);
    rsr_jw_knum(w, "before", b);
    rsr_jw_knum(w, "after", a);
    rsr_jw_knum(w, "delta_pct", pct_change(b, a));
}

static void side_json(struct rsr_jw *w, const char *key, yajl_val root)
{
    rsr_jw_kobject(w, key, 0);
    rsr_jw_kstr(w, "job", rsr_jv_kstr(root, "job"));
    rsr_jw_knum(w, "world_size", rsr_jv_knum_or(root, "world_size", 0));
    rsr_jw_kuint(w, "processes", rsr_jv_len(rsr_jv_key(root, "processes")));
    rsr_jw_end(w);
}

/* The findings' ids: resolved (before only), new (after only), remaining. */
static void findings_json(struct rsr_jw *w, yajl_val r0, yajl_val r1)
{
    static const char *const keys[] = { "resolved", "new", "remaining" };
    rsr_jw_kobject(w, "findings", 0);
    for (int k = 0; k < 3; k++) {
        rsr_jw_karray(w, keys[k], 0);
        yajl_val from = rsr_jv_key(k == 1 ? r1 : r0, "findings");
        for (size_t i = 0; i < rsr_jv_len(from); i++) {
            const char *id = rsr_jv_kstr(rsr_jv_at(from, i), "id");
            if (!id)
                continue;
            int other = has_finding(k == 1 ? r0 : r1, id);
            if ((k == 2) != other)
                continue;
            rsr_jw_str(w, id);
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* Stragglers named on each side. */
static void stragglers_json(struct rsr_jw *w, yajl_val r0, yajl_val r1)
{
    rsr_jw_kobject(w, "stragglers", 0);
    for (int s = 0; s < 2; s++) {
        yajl_val st = rsr_jv_key(s ? r1 : r0, "stragglers");
        rsr_jw_karray(w, s ? "after" : "before", 0);
        for (size_t i = 0; i < rsr_jv_len(st); i++)
            rsr_jw_num(w, rsr_jv_knum_or(rsr_jv_at(st, i), "rank", -1));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* The process of rank r in root's processes, or NULL. */
static yajl_val rank_proc(yajl_val root, double r)
{
    yajl_val procs = rsr_jv_key(root, "processes");
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val p = rsr_jv_at(procs, i);
        double x;
        if (rsr_jv_knum(p, "rank", &x) && x == r)
            return p;
    }
    return NULL;
}

/* Per rank, for the ranks both sides have: wall time, GPU idle, and the
 * time it waited in collectives for the last rank (the straggler signal). */
static void ranks_json(struct rsr_jw *w, yajl_val r0, yajl_val r1)
{
    static const char *const keys[] = { "wall_s", "collective_wait_us" };
    yajl_val procs = rsr_jv_key(r0, "processes");
    rsr_jw_karray(w, "ranks", RSR_JW_LINES);
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val a = rsr_jv_at(procs, i), b;
        double r;
        if (!rsr_jv_knum(a, "rank", &r) || !(b = rank_proc(r1, r)))
            continue;
        rsr_jw_object(w, 0);
        rsr_jw_kfixed(w, "rank", r, 0);
        for (int k = 0; k < 2; k++) {
            char before[64], after[64];
            snprintf(before, sizeof before, "%s_before", keys[k]);
            snprintf(after, sizeof after, "%s_after", keys[k]);
            rsr_jw_knum(w, before, rsr_jv_knum_or(a, keys[k], 0));
            rsr_jw_knum(w, after, rsr_jv_knum_or(b, keys[k], 0));
        }
        rsr_jw_knum(w, "idle_pct_before", rsr_jv_knum_or(rsr_jv_key(a, "gpu"), "idle_pct", 0));
        rsr_jw_knum(w, "idle_pct_after", rsr_jv_knum_or(rsr_jv_key(b, "gpu"), "idle_pct", 0));
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}

/* Writes diff.json to f; 0, or -1 when out of memory or a write failed. */
static int diff_json(FILE *f, const struct diff *d)
{
    struct rsr_jw *w = malloc(sizeof *w);
    if (!w)
        return -1;
    yajl_val r0 = d->s[0]->root, r1 = d->s[1]->root;
    rsr_jw_open(w, f, RSR_JW_JSON);
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "schema", "ringside-diff/1");
    side_json(w, "before", r0);
    side_json(w, "after", r1);
    ba_change(w, "step_ms", d->step_ms[0], d->step_ms[1]);
    rsr_jw_kstr(w, "basis", d->steps ? "steps" : "wall");
    rsr_jw_end(w);
    ba_change(w, "wall_s", d->wall_s[0], d->wall_s[1]);
    rsr_jw_end(w);
    if (d->steps) {
        ba_change(w, "median_step_ms", d->median_ms[0], d->median_ms[1]);
        rsr_jw_end(w);
    }
    rsr_jw_kobject(w, "gpu", 0);
    for (size_t k = 0; k < NGPU; k++)
        ba(w, gpu_keys[k], d->gpu[0][k], d->gpu[1][k]);
    for (size_t k = 0; k < NIDLE; k++)
        ba(w, idle_names[k], d->gpu[0][NGPU + k], d->gpu[1][NGPU + k]);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "io", 0);
    ba(w, "read_bytes", d->io[0][0], d->io[1][0]);
    ba(w, "write_bytes", d->io[0][1], d->io[1][1]);
    rsr_jw_end(w);
    rsr_jw_kbool(w, "per_rank_means", d->per_rank);
    rsr_jw_karray(w, "collectives", RSR_JW_LINES);
    for (size_t i = 0; i < d->ncolls; i++) {
        const struct coll *c = &d->colls[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "op", c->op);
        rsr_jw_knum(w, "bytes", c->bytes);
        const char *names[] = { "count_before", "count_after", "busbw_before", "busbw_after", "mean_us_before",
                                "mean_us_after" };
        const double vals[] = { c->count[0], c->count[1], c->busbw[0], c->busbw[1], c->mean_us[0], c->mean_us[1] };
        for (int k = 0; k < 6; k++)
            rsr_jw_knum(w, names[k], vals[k]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_karray(w, "kernels", RSR_JW_LINES);
    for (uint32_t j = 0; j < d->nk; j++) {
        uint32_t i = d->korder[j];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "name", rsr_intern_str(&d->k.names, i));
        const char *names[] = { "count_before", "count_after", "total_us_before", "total_us_after" };
        const double vals[] = { d->k.count[0][i], d->k.count[1][i], d->k.total[0][i], d->k.total[1][i] };
        for (int k = 0; k < 4; k++)
            rsr_jw_knum(w, names[k], vals[k]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_kobject(w, "checkpoint_pct", 0);
    rsr_jw_knum(w, "before", d->ckpt[0]);
    rsr_jw_knum(w, "after", d->ckpt[1]);
    rsr_jw_end(w);
    /* the GPU memory peak: null on a side without memory figures */
    rsr_jw_kobject(w, "memory_peak_bytes", 0);
    rsr_jw_key(w, "before");
    d->mem_peak[0] >= 0 ? rsr_jw_num(w, d->mem_peak[0]) : rsr_jw_null(w);
    rsr_jw_key(w, "after");
    d->mem_peak[1] >= 0 ? rsr_jw_num(w, d->mem_peak[1]) : rsr_jw_null(w);
    rsr_jw_end(w);
    findings_json(w, r0, r1);
    stragglers_json(w, r0, r1);
    ranks_json(w, r0, r1);
    rsr_jw_end(w);
    rsr_jw_line(w);
    int rc = rsr_jw_close(w);
    free(w);
    return rc;
}

/* ---- flame graphs ---- */

struct fline {
    char *stack;
    unsigned long long w[2];
};

static int by_stack(const void *pa, const void *pb)
{
    return strcmp(((const struct fline *)pa)->stack, ((const struct fline *)pb)->stack);
}

/* The folded lines of both sides merged: "stack before after", sorted. */
static int write_two_column(FILE *out, const char *const path[2])
{
    struct fline *v = NULL;
    size_t n = 0, cap = 0;
    for (int s = 0; s < 2; s++) {
        FILE *f = fopen(path[s], "r");
        char *line = NULL;
        size_t lcap = 0;
        ssize_t len;
        while (f && (len = getline(&line, &lcap, f)) > 0) {
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                line[--len] = 0;
            char *sp = strrchr(line, ' ');
            if (!sp)
                continue;
            *sp = 0;
            RSR_XGROW(v, cap, n + 1, 1024);
            v[n].stack = rsr_xstrdup(line);
            v[n].w[s] = strtoull(sp + 1, NULL, 10);
            v[n++].w[!s] = 0;
        }
        free(line);
        if (f)
            fclose(f);
    }
    if (n > 1)
        qsort(v, n, sizeof *v, by_stack);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        unsigned long long b = v[i].w[0], a = v[i].w[1];
        for (; j < n && strcmp(v[j].stack, v[i].stack) == 0; j++)
            b += v[j].w[0], a += v[j].w[1];
        fprintf(out, "%s %llu %llu\n", v[i].stack, b, a);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].stack);
    free(v);
    return ferror(out) ? -1 : 0;
}

/* Checks that every line of the folded file at path is "stack count" as
 * rsr_flame_read_folded and write_two_column read it, and that its counts
 * add up to less than 2^62 (so that two files summed stay exact). Returns 0,
 * or -1 with one line on stderr naming the file and the line. */
static int folded_check(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ringside: diff: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL, *end;
    size_t cap = 0;
    ssize_t len;
    unsigned long long total = 0, no = 0;
    const char *why = NULL;
    while (!why && (len = getline(&line, &cap, f)) > 0) {
        no++;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (!len)
            continue;
        char *sp = strrchr(line, ' ');
        errno = 0;
        unsigned long long w = sp && sp[1] >= '0' && sp[1] <= '9' ? strtoull(sp + 1, &end, 10) : 0;
        if (memchr(line, 0, (size_t)len))
            why = "a NUL byte";
        else if (!sp || sp == line || !(sp[1] >= '0' && sp[1] <= '9') || *end)
            why = "not a folded line (\"frame;frame;... count\")";
        else if (errno == ERANGE || w >= (1ull << 62) - total)
            why = "the counts add up past 2^62";
        total += w;
    }
    int rc = 0;
    if (why) {
        fprintf(stderr, "ringside: diff: %s: line %llu: %s\n", path, no, why);
        rc = -1;
    } else if (ferror(f)) {
        fprintf(stderr, "ringside: diff: %s: %s\n", path, strerror(errno ? errno : EIO));
        rc = -1;
    }
    free(line);
    fclose(f);
    return rc;
}

/* Whether both sides kept kind's folded stacks (1; their paths in path[]),
 * not both (0), or one of them is not a folded file (-1, said on stderr). */
static int both_folded(const struct diff *d, const char *kind, char path[2][4200])
{
    for (int s = 0; s < 2; s++) {
        snprintf(path[s], sizeof path[s], "%s/flame-%s.folded", d->s[s]->dir, kind);
        if (!is_file(path[s]))
            return 0;
    }
    return folded_check(path[0]) || folded_check(path[1]) ? -1 : 1;
}

/* OUT/diff-KIND.svg (after, coloured by the change) and OUT/diff-KIND.folded
 * for each kind both sides have. Returns the number written, -1 on error. */
static int diff_flames(const struct diff *d, const char *out_dir)
{
    int written = 0;
    for (unsigned k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        const char *kind = rsf_sample_kind_name(k);
        char path[2][4200], p[4200];
        int both = both_folded(d, kind, path);
        if (both < 0)
            return -1;
        if (!both)
            continue;
        struct rsr_flame fl[2];
        int bad = 0;
        for (int s = 0; s < 2; s++) {
            rsr_flame_init(&fl[s], (int)k);
            FILE *f = fopen(path[s], "r");
            bad |= !f || rsr_flame_read_folded(f, &fl[s]) < 0;
            if (f)
                fclose(f);
        }
        snprintf(p, sizeof p, "%s/diff-%s.svg", out_dir, kind);
        FILE *f = bad ? NULL : fopen(p, "w");
        char title[96];
        snprintf(title, sizeof title, "Differential %s flame graph: after, red grew, blue shrank",
                 k == RSF_SAMPLE_CPU ? "CPU" : k == RSF_SAMPLE_WAIT ? "wait" : "GPU");
        bad |= !f || rsr_flame_write_svg_diff(f, &fl[1], &fl[0], title) != 0;
        if (f && fclose(f) != 0)
            bad = 1;
        snprintf(p, sizeof p, "%s/diff-%s.folded", out_dir, kind);
        f = bad ? NULL : fopen(p, "w");
        bad |= !f || write_two_column(f, (const char *const[]){ path[0], path[1] }) != 0;
        if (f && fclose(f) != 0)
            bad = 1;
        rsr_flame_free(&fl[0]);
        rsr_flame_free(&fl[1]);
        if (bad) {
            fprintf(stderr, "ringside: diff: %s: %s\n", p, strerror(errno ? errno : EIO));
            return -1;
        }
        written++;
    }
    return written;
}

/* ---- the page ---- */

/* A figure before and after; better: -1 lower is better (time, idle,
 * exposure, checkpoints), 1 higher is, 0 neither (shares that move with
 * the span): a change for the worse is marked. */
static void card(FILE *f, const char *label, double b, double a, const char *unit, int better, int pct)
{
    double delta = a - b;
    int good = better == 0 || (better < 0 ? delta < 0 : delta > 0), flat = fabs(delta) < (pct ? 0.05 : 1e-9);
    fprintf(f, "<div class=\"card%s\"><div class=\"v\">%.4g%s &rarr; %.4g%s</div><div class=\"k\">", 
            flat || good ? "" : " warn", b, unit, a, unit);
    rsr_html_text(f, label);
    if (pct)
        fprintf(f, "</div><div class=\"d\">%s %+.2f points</div></div>\n", flat ? "=" : delta > 0 ? "&#9650;" : "&#9660;",
                delta);
    else
        fprintf(f, "</div><div class=\"d\">%s %+.1f%%</div></div>\n", flat ? "=" : delta > 0 ? "&#9650;" : "&#9660;",
                pct_change(b, a));
}

static const char *const gpu_labels[] = { "GPU compute, % of span", "communication, % of span",
                                          "exposed communication, % of span", "copies, % of span",
                                          "GPU idle, % of span", "GPU busy (kernels), % of span",
                                          "SM activity, % of span", "waiting for a late rank, % of span" };

/* The largest moves after the step time: the GPU figures and checkpoints
 * by their change in points, and the kernel that moved most. */
static void headline(FILE *f, const struct diff *d)
{
    fputs("<section id=\"moves\"><h2>What changed most</h2><ul class=\"findings\">", f);
    char t0[48], t1[48];
    if (d->steps)
        fprintf(f, "<li><strong id=\"steptime\">Time per step %s &rarr; %s (%+.1f%%)</strong><p>the training "
                   "steps each report found, from the first one's start to the last one's end over their count, "
                   "checkpoints, evaluation and data loading included; the job's wall time %.3g s &rarr; %.3g s "
                   "(%+.1f%%); the median step %.4g ms &rarr; %.4g ms (%+.1f%%)</p></li>\n",
                rsr_steps_time_text(t0, sizeof t0, d->step_ms[0]), rsr_steps_time_text(t1, sizeof t1, d->step_ms[1]),
                pct_change(d->step_ms[0], d->step_ms[1]), d->wall_s[0], d->wall_s[1],
                pct_change(d->wall_s[0], d->wall_s[1]), d->median_ms[0], d->median_ms[1],
                pct_change(d->median_ms[0], d->median_ms[1]));
    else
        fprintf(f, "<li><strong id=\"steptime\">Wall time %.4g s &rarr; %.4g s (%+.1f%%)</strong><p>the job's wall "
                   "time: the two reports do not both have training steps to divide it by</p></li>\n",
                d->wall_s[0], d->wall_s[1], pct_change(d->wall_s[0], d->wall_s[1]));
    int used[NGPU + 1] = { 0 };
    for (int shown = 0; shown < 3; shown++) {
        int best = -1;
        double mag = 0.5;       /* points: smaller moves are noise */
        for (int k = 0; k <= (int)NGPU; k++) {
            double m = k < (int)NGPU ? fabs(d->gpu[1][k] - d->gpu[0][k]) : fabs(d->ckpt[1] - d->ckpt[0]);
            if (!used[k] && m > mag)
                mag = m, best = k;
        }
        if (best < 0)
            break;
        used[best] = 1;
        if (best < (int)NGPU)
            fprintf(f, "<li><strong>%s: %.2f%% &rarr; %.2f%% (%+.2f points)</strong><p>mean over the %zu and %zu processes "
                       "with GPU work</p></li>\n",
                    gpu_labels[best], d->gpu[0][best], d->gpu[1][best], d->gpu[1][best] - d->gpu[0][best],
                    d->gpu_procs[0], d->gpu_procs[1]);
        else
            fprintf(f, "<li><strong>Checkpoints: %.2f%% &rarr; %.2f%% of wall time (%+.2f points)</strong><p>bursts of large "
                       "writes</p></li>\n",
                    d->ckpt[0], d->ckpt[1], d->ckpt[1] - d->ckpt[0]);
    }
    if (d->nk) {
        uint32_t i = d->korder[0];
        fputs("<li><strong>Kernel that moved most: ", f);
        rsr_html_text(f, rsr_intern_str(&d->k.names, i));
        fprintf(f, "</strong><p>%.0f &rarr; %.0f calls, %.1f &rarr; %.1f ms in all%s</p></li>\n", d->k.count[0][i],
                d->k.count[1][i], d->k.total[0][i] / 1e3, d->k.total[1][i] / 1e3,
                d->per_rank ? " (per-process means: the jobs have different numbers of processes)" : "");
    }
    fputs("</ul></section>\n", f);
}

static void finding_list(FILE *f, const char *title, yajl_val from, yajl_val other, int want_other)
{
    fprintf(f, "<h3>%s</h3><ul>", title);
    int any = 0;
    for (size_t i = 0; i < rsr_jv_len(from); i++) {
        yajl_val x = rsr_jv_at(from, i);
        const char *id = rsr_jv_kstr(x, "id");
        if (!id)
            continue;
        int in_other = 0;
        for (size_t j = 0; j < rsr_jv_len(other); j++) {
            const char *y = rsr_jv_kstr(rsr_jv_at(other, j), "id");
            in_other |= y && strcmp(y, id) == 0;
        }
        if (in_other != want_other)
            continue;
        fputs("<li>", f);
        rsr_html_text(f, rsr_jv_kstr(x, "title"));
        fputs(" <span class=\"note\">", f);
        rsr_html_text(f, id);
        fputs("</span></li>", f);
        any = 1;
    }
    fputs(any ? "</ul>\n" : "<li class=\"note\">none</li></ul>\n", f);
}

static int diff_page(FILE *f, const struct diff *d, const char *out_dir)
{
    yajl_val r0 = d->s[0]->root, r1 = d->s[1]->root;
    const char *j0 = rsr_jv_kstr(r0, "job"), *j1 = rsr_jv_kstr(r1, "job");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; frame-src data:\">\n"
          "<title>ringside diff</title>\n", f);
    fputs("<style>", f);
    rsr_page_put(f, rsr_page_report_css, rsr_page_report_css_end);
    fputs("</style></head>\n<body>\n<header><h1>ringside diff: ", f);
    rsr_html_text(f, j0 ? j0 : "before");
    fputs(" &rarr; ", f);
    rsr_html_text(f, j1 ? j1 : "after");
    fprintf(f, "</h1><p>before: %zu processes, after: %zu%s</p></header>\n<main>\n",
            rsr_jv_len(rsr_jv_key(r0, "processes")), rsr_jv_len(rsr_jv_key(r1, "processes")),
            d->per_rank ? " &middot; kernels compared as per-process means" : "");
    headline(f, d);
    fputs("<section id=\"cards\"><h2>Side by side</h2><div class=\"cards\">", f);
    static const int better[NGPU] = { 1, 0, -1, 0, -1, 0, 1, -1 };
    card(f, d->steps ? "time per step, ms" : "wall time, ms", d->step_ms[0], d->step_ms[1], "", -1, 0);
    if (d->steps) {
        card(f, "wall time, s", d->wall_s[0], d->wall_s[1], "", -1, 0);
        card(f, "median step, ms", d->median_ms[0], d->median_ms[1], "", -1, 0);
    }
    for (size_t k = 0; k < NGPU; k++)
        card(f, gpu_labels[k], d->gpu[0][k], d->gpu[1][k], "%", better[k], 1);
    card(f, "checkpoints, % of wall time", d->ckpt[0], d->ckpt[1], "%", -1, 1);
    if (d->mem)
        card(f, "GPU memory peak, MiB", d->mem_peak[0] / 1048576, d->mem_peak[1] / 1048576, "", -1, 0);
    fputs("</div>\n", f);
    yajl_val f0 = rsr_jv_key(r0, "findings"), f1 = rsr_jv_key(r1, "findings");
    finding_list(f, "Findings resolved", f0, f1, 0);
    finding_list(f, "Findings new", f1, f0, 0);
    finding_list(f, "Findings remaining", f1, f0, 1);
    fputs("</section>\n<section id=\"tables\"><h2>Tables</h2><p class=\"note\">Click a header to sort.</p>\n", f);
    fputs("<h3>Collectives</h3><table class=\"sort\"><thead><tr><th>op</th><th class=\"n\">bytes</th>"
          "<th class=\"n\">calls before</th><th class=\"n\">calls after</th><th class=\"n\">busbw before, GB/s</th>"
          "<th class=\"n\">busbw after, GB/s</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < d->ncolls; i++) {
        const struct coll *c = &d->colls[i];
        char size[32];
        rsr_fmt_bytes(size, sizeof size, c->bytes);
        fputs("<tr><td>", f);
        rsr_html_text(f, c->op);
        fprintf(f, "</td><td class=\"n\" data-v=\"%.17g\">%s</td><td class=\"n\" data-v=\"%.17g\">%.0f</td>"
                   "<td class=\"n\" data-v=\"%.17g\">%.0f</td><td class=\"n\" data-v=\"%.17g\">%.2f</td>"
                   "<td class=\"n\" data-v=\"%.17g\">%.2f</td></tr>\n",
                c->bytes, size, c->count[0], c->count[0], c->count[1], c->count[1], c->busbw[0], c->busbw[0],
                c->busbw[1], c->busbw[1]);
    }
    fputs("</tbody></table>\n<h3>Kernels, largest change first</h3><table class=\"sort\"><thead><tr><th>kernel</th>"
          "<th class=\"n\">calls before</th><th class=\"n\">calls after</th><th class=\"n\">ms before</th>"
          "<th class=\"n\">ms after</th><th class=\"n\">change, ms</th></tr></thead><tbody>\n", f);
    for (uint32_t j = 0; j < d->nk && j < RSR_DIFF_PAGE_KERNELS; j++) {
        uint32_t i = d->korder[j];
        double b = d->k.total[0][i] / 1e3, a = d->k.total[1][i] / 1e3;
        fputs("<tr><td class=\"name\">", f);
        rsr_html_text(f, rsr_intern_str(&d->k.names, i));
        fprintf(f, "</td><td class=\"n\" data-v=\"%.17g\">%.0f</td><td class=\"n\" data-v=\"%.17g\">%.0f</td>"
                   "<td class=\"n\" data-v=\"%.17g\">%.3f</td><td class=\"n\" data-v=\"%.17g\">%.3f</td>"
                   "<td class=\"n\" data-v=\"%.17g\">%+.3f</td></tr>\n",
                d->k.count[0][i], d->k.count[0][i], d->k.count[1][i], d->k.count[1][i], b, b, a, a, a - b, a - b);
    }
    fputs("</tbody></table>\n", f);
    if (d->nk > RSR_DIFF_PAGE_KERNELS)
        fprintf(f, "<p class=\"note\">%d of %u kernels shown; diff.json has them all.</p>\n", RSR_DIFF_PAGE_KERNELS,
                d->nk);
    fputs("</section>\n<section id=\"flames\"><h2>Differential flame graphs</h2><p class=\"note\">The after run's "
          "stacks; red frames took a larger share of the whole than before, blue a smaller one (full colour at 5 "
          "points); hover for before, after and the change.</p>\n", f);
    int any = 0;
    for (unsigned k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/diff-%s.svg", out_dir, rsf_sample_kind_name(k));
        if (!is_file(p))
            continue;
        rsr_html_flame_frame(f, p);
        any = 1;
    }
    if (!any)
        fputs("<p class=\"note\">None: the two sides share no kind of stack samples.</p>\n", f);
    fputs("</section>\n</main>\n<div id=\"tip\"></div>\n<script>", f);
    rsr_page_put(f, rsr_page_report_js, rsr_page_report_js_end);
    fputs("\n</script>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* ---- the command ---- */

static int write_whole(const char *path, const char *data, size_t len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ringside: diff: %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t w = fwrite(data, 1, len, f);
    int bad = w != len || (f == stdout ? fflush(f) != 0 : fclose(f) != 0);
    if (bad)
        fprintf(stderr, "ringside: diff: writing %s: %s\n", path, strerror(errno ? errno : EIO));
    return bad;
}

static void text_summary(FILE *f, const struct diff *d)
{
    char t0[48], t1[48];
    if (d->steps) {
        fprintf(f, "time per step: %s -> %s (%+.1f%%)\n", rsr_steps_time_text(t0, sizeof t0, d->step_ms[0]),
                rsr_steps_time_text(t1, sizeof t1, d->step_ms[1]), pct_change(d->step_ms[0], d->step_ms[1]));
        fprintf(f, "  wall time: %.3g s -> %.3g s (%+.1f%%)\n", d->wall_s[0], d->wall_s[1],
                pct_change(d->wall_s[0], d->wall_s[1]));
        fprintf(f, "  median step: %.4g ms -> %.4g ms (%+.1f%%)\n", d->median_ms[0], d->median_ms[1],
                pct_change(d->median_ms[0], d->median_ms[1]));
    } else {
        fprintf(f, "wall time: %.3g s -> %.3g s (%+.1f%%) (no training steps on both sides to divide it by)\n",
                d->wall_s[0], d->wall_s[1], pct_change(d->wall_s[0], d->wall_s[1]));
    }
    for (size_t k = 0; k < NGPU; k++)
        fprintf(f, "  %s: %.2f%% -> %.2f%% (%+.2f points)\n", gpu_labels[k], d->gpu[0][k], d->gpu[1][k],
                d->gpu[1][k] - d->gpu[0][k]);
    fprintf(f, "  checkpoints: %.2f%% -> %.2f%% of wall time\n", d->ckpt[0], d->ckpt[1]);
    if (d->mem) {
        char a[32], b[32];
        rsr_fmt_bytes(a, sizeof a, d->mem_peak[0]);
        rsr_fmt_bytes(b, sizeof b, d->mem_peak[1]);
        fprintf(f, "  GPU memory peak: %s -> %s (%+.1f%%)\n", a, b, pct_change(d->mem_peak[0], d->mem_peak[1]));
    }
}

int rsr_diff_run(const char *before, const char *after, const struct rsr_diff_opts *o)
{
    struct side s0 = { .label = "before" }, s1 = { .label = "after" };
    struct diff d = { .s = { &s0, &s1 } };
    int rc = side_open(&s0, before) || side_open(&s1, after);
    if (!rc && o->kind) {
        /* --kind K -o FILE.folded: the two-column stacks of one kind */
        char path[2][4200];
        int both = both_folded(&d, o->kind, path);
        if (both == 0)
            fprintf(stderr, "ringside: diff: no %s stacks on both sides (flame-%s.folded)\n", o->kind, o->kind);
        if (both <= 0) {
            rc = 1;
        } else {
            FILE *f = strcmp(o->out, "-") == 0 ? stdout : fopen(o->out, "w");
            rc = !f || write_two_column(f, (const char *const[]){ path[0], path[1] }) != 0;
            if (f && f != stdout && fclose(f) != 0)
                rc = 1;
            if (rc)
                fprintf(stderr, "ringside: diff: %s: %s\n", o->out, strerror(errno ? errno : EIO));
        }
    } else if (!rc) {
        diff_compute(&d);
        char *json = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&json, &len);
        if (!mem) {
            fprintf(stderr, "ringside: out of memory\n");
            rc = 1;
        } else {
            int jrc = diff_json(mem, &d);
            rc = fclose(mem) != 0 || jrc != 0;
            if (rc)
                fprintf(stderr, "ringside: out of memory\n");
        }
        if (!rc && o->out) {
            char p[4200];
            if (mkdir(o->out, 0755) != 0 && errno != EEXIST) {
                fprintf(stderr, "ringside: diff: %s: %s\n", o->out, strerror(errno));
                rc = 1;
            }
            snprintf(p, sizeof p, "%s/diff.json", o->out);
            rc = rc || write_whole(p, json, len) || diff_flames(&d, o->out) < 0;
            snprintf(p, sizeof p, "%s/diff.html", o->out);
            FILE *f = rc ? NULL : fopen(p, "w");
            if (!rc && (!f || diff_page(f, &d, o->out) != 0 || fclose(f) != 0)) {
                fprintf(stderr, "ringside: diff: %s: %s\n", p, strerror(errno ? errno : EIO));
                rc = 1;
            }
        }
        if (!rc && o->json_path)
            rc = write_whole(o->json_path, json, len);
        if (!rc && !o->quiet)
            text_summary(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout, &d);
        free(json);
        diff_free(&d);
    }
    side_close(&s0);
    side_close(&s1);
    return rc;
}
