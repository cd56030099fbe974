/* `ringside history` (history.h): trace roots -> runs -> reports -> one
 * SQLite row per run -> series -> each run against its series' band. A run
 * already indexed whose files have not changed since is not read again. */
#include "reporter/job/history.h"
#include "reporter/job/diff.h"
#include "reporter/out/html.h"
#include "reporter/out/html_json.h"
#include "reporter/out/page.h"
#include "reporter/base/json.h"
#include "reporter/base/intern.h"
#include "reporter/load/load.h"
#include "reporter/job/report.h"
#include "reporter/load/discover.h"
#include "reporter/load/runs.h"
#include "reporter/base/order.h"
#include "reporter/base/array.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS runs("
    " run_key TEXT PRIMARY KEY, job TEXT, hosts TEXT, start_s REAL, end_s REAL, world_size INTEGER,"
    " argv TEXT, series TEXT NOT NULL, trace_dir TEXT, report_dir TEXT, fingerprint TEXT,"
    " complete INTEGER, steps INTEGER, per_step_ms REAL, median_ms REAL, p90_ms REAL, p99_ms REAL,"
    " compute_pct REAL, comm_pct REAL, exposed_comm_pct REAL, sync_wait_pct REAL, transfer_pct REAL, idle_pct REAL,"
    " sm_pct REAL, checkpoint_pct REAL, data_wait_pct REAL, busbw TEXT, findings TEXT, stragglers TEXT,"
    " verdict TEXT, why TEXT, band_lo REAL, band_hi REAL, indexed_s REAL);"
    "CREATE INDEX IF NOT EXISTS runs_series ON runs(series, start_s);";

struct hist {
    sqlite3 *db;
    char dir[PATH_MAX];         /* the database's folder: reports go under it */
    int quiet;
    int indexed, kept, failed;
};

static int sql_fail(struct hist *h, const char *what)
{
    fprintf(stderr, "ringside: history: %s: %s\n", what, sqlite3_errmsg(h->db));
    return -1;
}

static int db_open(struct hist *h, const char *path)
{
    if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        fprintf(stderr, "ringside: history: %s: %s\n", path, h->db ? sqlite3_errmsg(h->db) : "cannot open");
        return -1;
    }
    sqlite3_busy_timeout(h->db, 10000);
    if (sqlite3_exec(h->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(h, path);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT value FROM meta WHERE key='schema_version'", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(h, path);
    int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    if (version && version != RSR_HISTORY_SCHEMA) {
        fprintf(stderr, "ringside: history: %s has schema version %d; this ringside reads version %d "
                        "(docs/history.md): give another --db\n", path, version, RSR_HISTORY_SCHEMA);
        return -1;
    }
    char set[96];
    snprintf(set, sizeof set, "INSERT OR REPLACE INTO meta VALUES('schema_version','%d')", RSR_HISTORY_SCHEMA);
    if (!version && sqlite3_exec(h->db, set, NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(h, path);
    return 0;
}

/* ---- one run: its files, key and fingerprint ---- */

struct run {
    char **files;
    int n;
    char key[PATH_MAX];         /* its first job folder's name @ its start, ns */
    char dir[PATH_MAX];         /* its (first) job folder */
    char fingerprint[64];       /* files, bytes and the last write */
    int64_t start;
};

static void run_describe(struct run *r)
{
    int64_t start = 0, last = 0;
    long long bytes = 0;
    const char *first = r->files[0];
    for (int i = 0; i < r->n; i++) {
        int64_t s = rsr_file_start_real(r->files[i]);
        if (s && (!start || s < start))
            start = s, first = r->files[i];
        struct stat st;
        if (stat(r->files[i], &st) == 0) {
            bytes += st.st_size;
            int64_t w = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
            if (w > last)
                last = w;
        }
    }
    r->start = start;
    /* the job folder's name: the agent names it by the job id */
    const char *slash = strrchr(first, '/');
    size_t dlen = slash ? (size_t)(slash - first) : 0;
    const char *job = first;
    for (size_t k = dlen; k-- > 0;)
        if (first[k] == '/') {
            job = first + k + 1;
            break;
        }
    snprintf(r->key, sizeof r->key, "%.*s@%" PRId64, (int)(dlen - (size_t)(job - first)), job, start);
    snprintf(r->fingerprint, sizeof r->fingerprint, "%d:%lld:%" PRId64, r->n, bytes, last);
    snprintf(r->dir, sizeof r->dir, "%.*s", (int)(dlen ? dlen : 1), dlen ? first : ".");
}

/* Whether r is indexed with the files it has now; a run whose folder was
 * moved or renamed keeps its row, with its new folder. */
static int fresh(struct hist *h, const struct run *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT fingerprint FROM runs WHERE run_key=?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, r->key, -1, SQLITE_STATIC);
    int same = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
               strcmp((const char *)sqlite3_column_text(st, 0), r->fingerprint) == 0;
    sqlite3_finalize(st);
    if (same && sqlite3_prepare_v2(h->db, "UPDATE runs SET trace_dir=? WHERE run_key=?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, r->dir, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->key, -1, SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_finalize(st);
    }
    return same;
}

/* ---- report.json -> a row ---- */

/* The series of a run: its world size and the first rank's command line,
 * each word that names a file or folder cut to its last part with its
 * digits as '#' (folders and files differ from run to run; the program,
 * its options and their values are the workload). */
static void series_of(yajl_val argv, int world, char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "w%d:", world);
    for (size_t i = 0; i < rsr_jv_len(argv) && len + 2 < n; i++) {
        yajl_val a = rsr_jv_at(argv, i);
        const char *w = YAJL_IS_STRING(a) ? YAJL_GET_STRING(a) : "";
        const char *base = strrchr(w, '/');
        int path = base != NULL || i == 0;
        if (base && base[1])
            w = base + 1;
        out[len++] = ' ';
        for (; *w && len + 1 < n; w++)
            out[len++] = path && *w >= '0' && *w <= '9' ? '#' : *w;
        out[len] = 0;
    }
}

/* The mean over ranks of processes[].gpu.KEY (-1: no rank has it). */
static double rank_mean(yajl_val procs, const char *key)
{
    double sum = 0, v;
    int n = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val p = rsr_jv_at(procs, i);
        if (rsr_jv_knum_or(p, "rank", -1) >= 0 && rsr_jv_knum(rsr_jv_key(p, "gpu"), key, &v))
            sum += v, n++;
    }
    return n ? sum / n : -1;
}

static yajl_val first_rank(yajl_val procs)
{
    yajl_val best = rsr_jv_at(procs, 0);
    double r, low = INFINITY;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        if (rsr_jv_knum(rsr_jv_at(procs, i), "rank", &r) && r >= 0 && r < low)
            low = r, best = rsr_jv_at(procs, i);
    return best;
}

/* The JSON columns of a row, each written to a memory stream. */
enum { COL_HOSTS, COL_ARGV, COL_BUSBW, COL_FINDINGS, COL_STRAGGLERS, NCOLS };
struct cols {
    FILE *f[NCOLS];
    char *text[NCOLS];
    size_t len[NCOLS];
};

static int cols_open(struct cols *c)
{
    memset(c, 0, sizeof *c);
    for (int k = 0; k < NCOLS; k++)
        if (!(c->f[k] = open_memstream(&c->text[k], &c->len[k])))
            return -1;
    return 0;
}

/* Closes the streams (their text is then whole); 0, or -1 when one failed. */
static int cols_close(struct cols *c)
{
    int rc = 0;
    for (int k = 0; k < NCOLS; k++)
        if (c->f[k] && fclose(c->f[k]) != 0)
            rc = -1;
    memset(c->f, 0, sizeof c->f);
    return rc;
}

static void cols_free(struct cols *c)
{
    cols_close(c);
    for (int k = 0; k < NCOLS; k++)
        free(c->text[k]);
}

static void bind_num(sqlite3_stmt *st, int i, double v)
{
    if (v < 0 || !isfinite(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static int store(struct hist *h, const struct run *r, const char *report_dir, yajl_val root)
{
    yajl_val procs = rsr_jv_key(root, "processes"), steps = rsr_jv_key(root, "steps");
    yajl_val first = first_rank(procs), argv = rsr_jv_key(first, "argv");
    int world = (int)rsr_jv_knum_or(root, "world_size", 0);
    char series[1024];
    const char *named = rsr_jv_kstr(root, "series");
    if (named && *named)
        snprintf(series, sizeof series, "%s", named); /* RINGSIDE_SERIES */
    else
        series_of(argv, world, series, sizeof series);
    struct cols c;
    if (cols_open(&c) != 0) {
        cols_free(&c);
        fputs("ringside: history: out of memory\n", stderr);
        return -1;
    }
    struct rsr_jw *w = malloc(sizeof *w);
    if (!w) {
        cols_free(&c);
        fputs("ringside: history: out of memory\n", stderr);
        return -1;
    }
    int complete = 1, wrc = 0;
    rsr_jw_open(w, c.f[COL_HOSTS], RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val p = rsr_jv_at(procs, i);
        const char *host = rsr_jv_kstr(p, "host");
        int seen = 0;
        for (size_t j = 0; j < i && host; j++)
            seen |= rsr_jv_kstr(rsr_jv_at(procs, j), "host") &&
                    strcmp(rsr_jv_kstr(rsr_jv_at(procs, j), "host"), host) == 0;
        if (host && !seen)
            rsr_jw_str(w, host);
        yajl_val tr = rsr_jv_key(rsr_jv_key(p, "trace"), "complete");
        complete &= !tr || YAJL_IS_TRUE(tr);
    }
    rsr_jw_end(w);
    wrc |= rsr_jw_close(w);
    rsr_jw_open(w, c.f[COL_ARGV], RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (size_t i = 0; i < rsr_jv_len(argv); i++)
        rsr_jw_str(w, YAJL_IS_STRING(rsr_jv_at(argv, i)) ? YAJL_GET_STRING(rsr_jv_at(argv, i)) : "");
    rsr_jw_end(w);
    wrc |= rsr_jw_close(w);
    yajl_val colls = rsr_jv_key(root, "collectives");
    rsr_jw_open(w, c.f[COL_BUSBW], RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (size_t i = 0; i < rsr_jv_len(colls); i++) {
        yajl_val x = rsr_jv_at(colls, i);
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "op", rsr_jv_kstr(x, "op"));
        rsr_jw_kfixed(w, "bytes", rsr_jv_knum_or(x, "bytes", 0), 0);
        rsr_jw_key(w, "busbw_gbs");
        rsr_jw_sig(w, rsr_jv_knum_or(x, "busbw_gbs", 0), 4);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    wrc |= rsr_jw_close(w);
    yajl_val fs = rsr_jv_key(root, "findings");
    rsr_jw_open(w, c.f[COL_FINDINGS], RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (size_t i = 0; i < rsr_jv_len(fs); i++) {
        yajl_val x = rsr_jv_at(fs, i);
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "id", rsr_jv_kstr(x, "id"));
        rsr_jw_kstr(w, "severity", rsr_jv_kstr(x, "severity"));
        rsr_jw_kstr(w, "title", rsr_jv_kstr(x, "title"));
        double back;
        if (rsr_jv_knum(x, "recoverable_pct", &back)) {
            rsr_jw_key(w, "recoverable_pct"); /* what fixing it would give back */
            rsr_jw_sig(w, back, 6);
        }
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    wrc |= rsr_jw_close(w);
    yajl_val ss = rsr_jv_key(root, "stragglers");
    rsr_jw_open(w, c.f[COL_STRAGGLERS], RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (size_t i = 0; i < rsr_jv_len(ss); i++) {
        yajl_val x = rsr_jv_at(ss, i);
        rsr_jw_fixed(w, YAJL_IS_NUMBER(x) ? YAJL_GET_DOUBLE(x) : rsr_jv_knum_or(x, "rank", -1), 0);
    }
    rsr_jw_end(w);
    wrc |= rsr_jw_close(w);
    free(w);
    if (cols_close(&c) != 0 || wrc != 0) {
        cols_free(&c);
        fputs("ringside: history: out of memory\n", stderr);
        return -1;
    }
    /* the data loading share: the mean over ranks of processes[].data_loading.pct */
    double data = 0;
    int ndata = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        double v;
        if (rsr_jv_knum_or(rsr_jv_at(procs, i), "rank", -1) >= 0 &&
            rsr_jv_knum(rsr_jv_key(rsr_jv_at(procs, i), "data_loading"), "pct", &v))
            data += v, ndata++;
    }
    double start_s = rsr_jv_knum_or(root, "start_us", 0) / 1e6;
    sqlite3_stmt *st;
    const char *sql = "INSERT OR REPLACE INTO runs(run_key, job, hosts, start_s, end_s, world_size, argv, series,"
                      " trace_dir, report_dir, fingerprint, complete, steps, per_step_ms, median_ms, p90_ms,"
                      " p99_ms, compute_pct, comm_pct, exposed_comm_pct, sync_wait_pct, transfer_pct, idle_pct,"
                      " sm_pct, checkpoint_pct, data_wait_pct, busbw, findings, stragglers, indexed_s)"
                      " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
        cols_free(&c);
        return sql_fail(h, "storing a run");
    }
    int i = 1;
    sqlite3_bind_text(st, i++, r->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, rsr_jv_kstr(root, "job"), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, i++, c.text[COL_HOSTS], -1, SQLITE_STATIC);
    sqlite3_bind_double(st, i++, start_s);
    sqlite3_bind_double(st, i++, start_s + rsr_jv_knum_or(root, "wall_s", 0));
    sqlite3_bind_int(st, i++, world);
    sqlite3_bind_text(st, i++, c.text[COL_ARGV], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, series, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, r->dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, report_dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, r->fingerprint, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, i++, complete);
    sqlite3_bind_int(st, i++, (int)rsr_jv_knum_or(steps, "count", 0));
    bind_num(st, i++, rsr_jv_knum_or(steps, "per_step_ms", -1));
    bind_num(st, i++, rsr_jv_knum_or(steps, "median_ms", -1));
    bind_num(st, i++, rsr_jv_knum_or(steps, "p90_ms", -1));
    bind_num(st, i++, rsr_jv_knum_or(steps, "p99_ms", -1));
    bind_num(st, i++, rank_mean(procs, "compute_pct"));
    bind_num(st, i++, rank_mean(procs, "comm_pct"));
    bind_num(st, i++, rank_mean(procs, "exposed_comm_pct"));
    bind_num(st, i++, rank_mean(procs, "sync_wait_pct"));
    bind_num(st, i++, rank_mean(procs, "transfer_pct"));
    bind_num(st, i++, rank_mean(procs, "idle_pct"));
    bind_num(st, i++, rank_mean(procs, "sm_activity_pct"));
    bind_num(st, i++, rsr_jv_knum_or(root, "checkpoint_pct", -1));
    bind_num(st, i++, ndata ? data / ndata : -1);
    sqlite3_bind_text(st, i++, c.text[COL_BUSBW], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c.text[COL_FINDINGS], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, c.text[COL_STRAGGLERS], -1, SQLITE_STATIC);
    sqlite3_bind_double(st, i++, (double)time(NULL));
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : sql_fail(h, "storing a run");
    sqlite3_finalize(st);
    cols_free(&c);
    return rc;
}

static yajl_val read_json(const char *path)
{
    size_t len;
    char *text = rsr_html_slurp(path, &len), err[256];
    yajl_val v = text ? yajl_tree_parse(text, err, sizeof err) : NULL;
    free(text);
    return v;
}

/* Reports run r into its folder under the database's and stores its row. */
static int index_run(struct hist *h, struct run *r)
{
    char out[2 * PATH_MAX + 64], json[2 * PATH_MAX + 96];
    snprintf(out, sizeof out, "%s/ringside-history-reports", h->dir);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "ringside: history: %s: %s\n", out, strerror(errno));
        return -1;
    }
    snprintf(out, sizeof out, "%s/ringside-history-reports/%s", h->dir, r->key);
    struct rsr_report_opts ro = { .out_dir = out, .quiet = 1 };
    if (!h->quiet)
        fprintf(stderr, "ringside: history: reporting %s (%d files)\n", r->key, r->n);
    int rc = rsr_report_run(r->files, r->n, &ro);
    snprintf(json, sizeof json, "%s/report.json", out);
    yajl_val root = rc == 0 ? read_json(json) : NULL;
    if (!root) {
        fprintf(stderr, "ringside: history: %s: no report (status %d); left out of the history\n", r->key, rc);
        return -1;
    }
    rc = store(h, r, out, root);
    yajl_tree_free(root);
    return rc;
}

/* ---- series: each run against the good runs before it ---- */

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, rsr_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct row {
    char *key, *report;
    double per_step, lo, hi;
    char *verdict, *why;
};

/* What moved most between two reports, by `ringside diff` into the after
 * report's folder diff/ (its page linked from the history's): the new
 * stragglers and findings, and the share of the step that grew most. */
static void explain(const char *before, const char *after, char *why, size_t n)
{
    char out[2 * PATH_MAX], json[2 * PATH_MAX + 16];
    snprintf(out, sizeof out, "%s/diff", after);
    snprintf(json, sizeof json, "%s/diff.json", out);
    struct rsr_diff_opts o = { .out = out, .quiet = 1 };
    yajl_val d = rsr_diff_run(before, after, &o) == 0 ? read_json(json) : NULL;
    if (!d) {
        snprintf(why, n, "(no diff of %s against %s)", after, before);
        return;
    }
    size_t len = 0;
    why[0] = 0;
    yajl_val sa = rsr_jv_key(rsr_jv_key(d, "stragglers"), "after"), sb = rsr_jv_key(rsr_jv_key(d, "stragglers"), "before");
    for (size_t i = 0; i < rsr_jv_len(sa) && len + 40 < n; i++) {
        double r = YAJL_IS_NUMBER(rsr_jv_at(sa, i)) ? YAJL_GET_DOUBLE(rsr_jv_at(sa, i)) : -1;
        int was = 0;
        for (size_t k = 0; k < rsr_jv_len(sb); k++)
            was |= YAJL_IS_NUMBER(rsr_jv_at(sb, k)) && YAJL_GET_DOUBLE(rsr_jv_at(sb, k)) == r;
        if (!was)
            len += (size_t)snprintf(why + len, n - len, "%srank %.0f is a straggler", len ? "; " : "", r);
    }
    /* a cause before its effects: checkpoints that grew by 5 points of the
     * time or more come first (the GPU idles meanwhile) */
    yajl_val ck = rsr_jv_key(d, "checkpoint_pct");
    double grew = rsr_jv_knum_or(ck, "after", 0) - rsr_jv_knum_or(ck, "before", 0);
    if (fabs(grew) >= 5 && len + 60 < n)
        len += (size_t)snprintf(why + len, n - len, "%scheckpoints %+.1f points of the time", len ? "; " : "", grew);
    /* the share of the GPU's time that moved most */
    static const char *const shares[][2] = {
        { "sync_wait_pct", "waiting for a late rank" }, { "exposed_comm_pct", "exposed communication" },
        { "idle_pct", "GPU idle" }, { "compute_pct", "compute" },
    };
    const char *most = NULL;
    double delta = 0;
    yajl_val gpu = rsr_jv_key(d, "gpu");
    for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++) {
        double v;
        if (rsr_jv_knum(rsr_jv_key(gpu, shares[i][0]), "delta", &v) && fabs(v) > fabs(delta))
            delta = v, most = shares[i][1];
    }
    if (most && len + 60 < n)
        len += (size_t)snprintf(why + len, n - len, "%s%s %+.1f points of the GPU's time", len ? "; " : "", most,
                                delta);
    yajl_val fnew = rsr_jv_key(rsr_jv_key(d, "findings"), "new");
    for (size_t i = 0; i < rsr_jv_len(fnew) && len + 40 < n; i++)
        if (YAJL_IS_STRING(rsr_jv_at(fnew, i)))
            len += (size_t)snprintf(why + len, n - len, "%s%s%s", i ? ", " : len ? "; new: " : "new: ",
                                    YAJL_GET_STRING(rsr_jv_at(fnew, i)), "");
    yajl_tree_free(d);
}

/* Sets verdict, why and band of every run of series, in start order. */
static int judge_series(struct hist *h, const char *series)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT run_key, report_dir, per_step_ms, verdict, why FROM runs WHERE series=?"
                                  " ORDER BY start_s", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(h, "reading a series");
    sqlite3_bind_text(st, 1, series, -1, SQLITE_STATIC);
    struct row *rows = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        RSR_XGROW(rows, cap, n + 1, 16);
        struct row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        r->key = strdup((const char *)sqlite3_column_text(st, 0));
        r->report = sqlite3_column_text(st, 1) ? strdup((const char *)sqlite3_column_text(st, 1)) : NULL;
        r->per_step = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 2);
        r->verdict = sqlite3_column_text(st, 3) ? strdup((const char *)sqlite3_column_text(st, 3)) : NULL;
        r->why = sqlite3_column_text(st, 4) ? strdup((const char *)sqlite3_column_text(st, 4)) : NULL;
    }
    sqlite3_finalize(st);
    double *win = rsr_xcalloc(RSR_HISTORY_WINDOW, sizeof *win), *dev = rsr_xcalloc(RSR_HISTORY_WINDOW, sizeof *dev);
    size_t *good = rsr_xcalloc(n + 1, sizeof *good), ngood = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        const char *verdict = "no steps";
        char why[512] = "";
        r->lo = r->hi = -1;
        if (r->per_step > 0 && ngood < RSR_HISTORY_MIN_RUNS) {
            verdict = "baseline";
        } else if (r->per_step > 0) {
            size_t k = ngood < RSR_HISTORY_WINDOW ? ngood : RSR_HISTORY_WINDOW;
            for (size_t j = 0; j < k; j++)
                win[j] = rows[good[ngood - k + j]].per_step;
            double med = median(win, k);
            for (size_t j = 0; j < k; j++)
                dev[j] = fabs(win[j] - med);
            double band = fmax(RSR_HISTORY_K * 1.4826 * median(dev, k), med * RSR_HISTORY_MIN_PCT / 100);
            r->lo = med - band, r->hi = med + band;
            verdict = r->per_step > r->hi ? "regression" : r->per_step < r->lo ? "improvement" : "ok";
            if (strcmp(verdict, "ok") != 0) {
                const struct row *last = &rows[good[ngood - 1]];
                size_t len = (size_t)snprintf(why, sizeof why, "time per step %+.1f%% (%.4g ms against %.4g ms, "
                                              "the band %.4g to %.4g ms of %zu runs)", 100 * (r->per_step / med - 1),
                                              r->per_step, med, r->lo, r->hi, k);
                /* the diff is the slow part: kept from an earlier pass */
                if (r->verdict && strcmp(r->verdict, verdict) == 0 && r->why && strncmp(r->why, why, len) == 0) {
                    snprintf(why, sizeof why, "%s", r->why);
                } else if (last->report && r->report) {
                    char more[400];
                    explain(last->report, r->report, more, sizeof more);
                    snprintf(why + len, sizeof why - len, ": %s, against %s", more[0] ? more : "nothing moved alone",
                             last->key);
                }
            }
        }
        if (strcmp(verdict, "regression") != 0 && r->per_step > 0)
            good[ngood++] = i;
        if (sqlite3_prepare_v2(h->db, "UPDATE runs SET verdict=?, why=?, band_lo=?, band_hi=? WHERE run_key=?", -1,
                               &st, NULL) != SQLITE_OK) {
            rc = sql_fail(h, "judging a series");
            break;
        }
        sqlite3_bind_text(st, 1, verdict, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, why, -1, SQLITE_STATIC);
        bind_num(st, 3, r->lo);
        bind_num(st, 4, r->hi);
        sqlite3_bind_text(st, 5, r->key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sql_fail(h, "judging a series");
        sqlite3_finalize(st);
    }
    for (size_t i = 0; i < n; i++)
        free(rows[i].key), free(rows[i].report), free(rows[i].verdict), free(rows[i].why);
    free(rows), free(win), free(dev), free(good);
    return rc;
}

static int judge_all(struct hist *h)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT DISTINCT series FROM runs", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(h, "listing series");
    char **series = NULL;
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        series = rsr_xrealloc(series, (n + 1) * sizeof *series);
        series[n++] = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK || judge_series(h, series[i]) != 0 ||
            sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            rc = -1;
        free(series[i]);
    }
    free(series);
    return rc;
}

/* ---- the history page ---- */

/* A link from the page's folder to path: relative when under it. */
static void put_href(FILE *f, const char *page_dir, const char *path, const char *file)
{
    size_t n = strlen(page_dir);
    const char *rel = strncmp(path, page_dir, n) == 0 && path[n] == '/' ? path + n + 1 : NULL;
    fputs(rel ? "" : "file://", f);
    for (const char *c = rel ? rel : path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("/-_.~", *c))
            putc(*c, f);
        else
            fprintf(f, "%%%02X", (unsigned char)*c);
    }
    fprintf(f, "/%s", file);
}

struct point {
    double t, v, lo, hi;
    int verdict;        /* 0 ok/baseline, 1 regression, 2 improvement */
    const char *key;
};

/* One chart of a series' figure over its runs (x by run order): the band
 * shaded where known, regressions red, improvements green. */
static void chart(FILE *f, const char *title, const char *unit, const struct point *p, size_t n)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].v < 0)
            continue;
        have++;
        lo = fmin(lo, p[i].v), hi = fmax(hi, p[i].v);
        if (p[i].lo >= 0)
            lo = fmin(lo, p[i].lo), hi = fmax(hi, p[i].hi);
    }
    if (!have)
        return;
    if (hi <= lo)
        hi = lo + (lo > 0 ? lo * 0.1 : 1);
    lo = fmax(0, lo - (hi - lo) * 0.1);
    const double W = 760, H = 150, L = 60, B = 24, T = 8;
    double dx = n > 1 ? (W - L - 10) / (double)(n - 1) : 0;
#define X(i) (L + (double)(i) * dx)
#define Y(v) (T + (H - T - B) * (1 - ((v) - lo) / (hi - lo)))
    fprintf(f, "<figure><figcaption>%s</figcaption><svg viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
               "height=\"%.0f\" role=\"img\">", title, W, H, W, H);
    /* the band, run by run */
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i].lo >= 0 && p[i + 1].lo >= 0)
            fprintf(f, "<polygon fill=\"#dde8f3\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>", X(i),
                    Y(p[i].hi), X(i + 1), Y(p[i + 1].hi), X(i + 1), Y(p[i + 1].lo), X(i), Y(p[i].lo));
    fputs("<polyline fill=\"none\" stroke=\"#4477aa\" stroke-width=\"1.5\" points=\"", f);
    for (size_t i = 0; i < n; i++)
        if (p[i].v >= 0)
            fprintf(f, "%.1f,%.1f ", X(i), Y(p[i].v));
    fputs("\"/>", f);
    for (size_t i = 0; i < n; i++) {
        if (p[i].v < 0)
            continue;
        const char *fill = p[i].verdict == 1 ? "#cc3311" : p[i].verdict == 2 ? "#228833" : "#4477aa";
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>", X(i), Y(p[i].v),
                p[i].verdict ? 5 : 3, fill);
        rsr_html_text(f, p[i].key);
        fprintf(f, ": %.4g %s</title></circle>", p[i].v, unit);
    }
    /* axes: the value's range on the left, runs along the bottom */
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", L, T, L, H - B);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", L, H - B, W - 10, H - B);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.4g</text>", L - 4, T + 10, hi);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.4g</text>", L - 4, H - B, lo);
    fprintf(f, "<text transform=\"rotate(-90 14 %.0f)\" x=\"14\" y=\"%.0f\" text-anchor=\"middle\">%s</text>",
            (H - B) / 2, (H - B) / 2, unit);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">run, in the order they started (1 to %zu)</text>",
            (L + W) / 2, H - 6, n);
    fputs("</svg></figure>\n", f);
#undef X
#undef Y
}

/* The page: per series its charts (time per step with its band, SM
 * activity, the wait for a late rank, exposed communication, checkpoints)
 * and its runs, each linking to its report and, when flagged, to its diff
 * against the series' last good run. One file, no outside resources. */
static int write_page(struct hist *h, const char *path)
{
    char tmp[2 * PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "ringside: history: %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    char page_dir[2 * PATH_MAX];
    const char *slash = strrchr(path, '/');
    snprintf(page_dir, sizeof page_dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>ringside history</title><style>", f);
    rsr_page_put(f, rsr_page_history_css, rsr_page_history_css_end);
    fputs("</style></head>\n"
          "<body><h1>ringside history</h1>\n<p>Each series is the runs of one workload (the first rank's "
          "command line, its files' names aside, and the world size). A run is held against the good runs "
          "of its series before it: the band (shaded) is their median &plusmn; 4 median absolute deviations "
          "(at least 5%); above it a regression (red), below it an improvement (green).</p>\n", f);
    sqlite3_stmt *ss;
    if (sqlite3_prepare_v2(h->db, "SELECT series, count(*), sum(verdict='regression') FROM runs GROUP BY series"
                                  " ORDER BY max(start_s) DESC", -1, &ss, NULL) != SQLITE_OK) {
        fclose(f);
        unlink(tmp);
        return sql_fail(h, "the page");
    }
    int nseries = 0;
    while (sqlite3_step(ss) == SQLITE_ROW) {
        const char *series = (const char *)sqlite3_column_text(ss, 0);
        fprintf(f, "<section id=\"series-%d\"><h2>", nseries++);
        rsr_html_text(f, series);
        fprintf(f, "</h2><p>%d runs, %d regressions</p>\n", sqlite3_column_int(ss, 1), sqlite3_column_int(ss, 2));
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(h->db, "SELECT run_key, start_s, per_step_ms, band_lo, band_hi, verdict, why,"
                                      " report_dir, sm_pct, sync_wait_pct, exposed_comm_pct, checkpoint_pct, job"
                                      " FROM runs WHERE series=? ORDER BY start_s", -1, &st, NULL) != SQLITE_OK)
            continue;
        sqlite3_bind_text(st, 1, series, -1, SQLITE_STATIC);
        size_t n = 0, cap = 0;
        struct point *pts[5] = { NULL };
        char **keys = NULL;
        /* the runs' table rows, kept as text until the charts are out */
        char *rows = NULL;
        size_t rows_len = 0;
        FILE *mem = open_memstream(&rows, &rows_len);
        while (mem && sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) {
                /* six arrays of one length */
                for (int k = 0; k < 5; k++) {
                    size_t c = cap;
                    RSR_XGROW(pts[k], c, n + 1, 64);
                }
                RSR_XGROW(keys, cap, n + 1, 64);
            }
            keys[n] = strdup((const char *)sqlite3_column_text(st, 0));
            const char *verdict = (const char *)sqlite3_column_text(st, 5);
            int v = !verdict ? 0 : strcmp(verdict, "regression") == 0 ? 1 : strcmp(verdict, "improvement") == 0 ? 2 : 0;
            static const int col[5] = { 2, 8, 9, 10, 11 };
            for (int k = 0; k < 5; k++) {
                int c = col[k];
                pts[k][n] = (struct point){ sqlite3_column_double(st, 1),
                                            sqlite3_column_type(st, c) == SQLITE_NULL ? -1 : sqlite3_column_double(st, c),
                                            -1, -1, k == 0 ? v : 0, keys[n] };
            }
            if (sqlite3_column_type(st, 3) != SQLITE_NULL)
                pts[0][n].lo = sqlite3_column_double(st, 3), pts[0][n].hi = sqlite3_column_double(st, 4);
            time_t t0 = (time_t)sqlite3_column_double(st, 1);
            struct tm tm;
            char date[32];
            gmtime_r(&t0, &tm);
            strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
            const char *report = (const char *)sqlite3_column_text(st, 7);
            fprintf(mem, "<tr><td>%zu</td><td>%s</td><td>", n + 1, date);
            if (report) {
                fputs("<a href=\"", mem);
                put_href(mem, page_dir, report, "index.html");
                fputs("\">", mem);
            }
            rsr_html_text(mem, sqlite3_column_text(st, 12) ? (const char *)sqlite3_column_text(st, 12) : keys[n]);
            fprintf(mem, "%s</td><td class=\"n\">", report ? "</a>" : "");
            if (sqlite3_column_type(st, 2) != SQLITE_NULL)
                fprintf(mem, "%.4g", sqlite3_column_double(st, 2));
            fprintf(mem, "</td><td class=\"%s\">", verdict ? verdict : "");
            rsr_html_text(mem, verdict ? verdict : "");
            fputs("</td><td class=\"why\">", mem);
            rsr_html_text(mem, sqlite3_column_text(st, 6) ? (const char *)sqlite3_column_text(st, 6) : "");
            char diff[2 * PATH_MAX];
            snprintf(diff, sizeof diff, "%s/diff/diff.html", report ? report : "");
            if (report && v && access(diff, R_OK) == 0) {
                fputs(" <a href=\"", mem);
                put_href(mem, page_dir, report, "diff/diff.html");
                fputs("\">diff</a>", mem);
            }
            fputs("</td></tr>\n", mem);
            n++;
        }
        sqlite3_finalize(st);
        int nomem = !mem || fclose(mem) != 0;
        if (!nomem) {
            chart(f, "Time per step", "ms", pts[0], n);
            chart(f, "SM activity", "%", pts[1], n);
            chart(f, "Waiting for a late rank", "% of GPU time", pts[2], n);
            chart(f, "Exposed communication", "% of GPU time", pts[3], n);
            chart(f, "Checkpoints", "% of the run", pts[4], n);
            fputs("<table><thead><tr><th>run</th><th>started (UTC)</th><th>job (its report)</th>"
                  "<th>time per step, ms</th><th>verdict</th><th>why</th></tr></thead><tbody>\n", f);
            fputs(rows, f);
            fputs("</tbody></table></section>\n", f);
        }
        free(rows);
        for (int k = 0; k < 5; k++)
            free(pts[k]);
        for (size_t i = 0; i < n; i++)
            free(keys[i]);
        free(keys);
        if (nomem) {
            fputs("ringside: history: out of memory writing the page\n", stderr);
            fclose(f);
            unlink(tmp);
            sqlite3_finalize(ss);
            return -1;
        }
    }
    sqlite3_finalize(ss);
    if (!nseries)
        fputs("<p>No runs yet.</p>\n", f);
    fputs("</body></html>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "ringside: history: %s: %s\n", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---- the command ---- */

/* One line per series, then its runs that left the band. */
static void print_history(struct hist *h)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT series, count(*), sum(verdict='regression'), sum(verdict='improvement'),"
                      " min(start_s), max(start_s) FROM runs GROUP BY series ORDER BY min(start_s)";
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *series = (const char *)sqlite3_column_text(st, 0);
        printf("series %s: %d runs, %d regressions, %d improvements\n", series, sqlite3_column_int(st, 1),
               sqlite3_column_int(st, 2), sqlite3_column_int(st, 3));
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(h->db, "SELECT run_key, per_step_ms, verdict, why FROM runs WHERE series=? AND"
                                      " verdict IN ('regression','improvement') ORDER BY start_s", -1, &q,
                               NULL) != SQLITE_OK)
            continue;
        sqlite3_bind_text(q, 1, series, -1, SQLITE_STATIC);
        while (sqlite3_step(q) == SQLITE_ROW)
            printf("  %s %s: %s\n", sqlite3_column_text(q, 2), sqlite3_column_text(q, 0), sqlite3_column_text(q, 3));
        sqlite3_finalize(q);
    }
    sqlite3_finalize(st);
}

/* --check RUN: the run whose trace folder is RUN (or holds it, or whose
 * key it is). Returns 0, 1 when it regressed, -1 when not found. */
static int check_run(struct hist *h, const char *run)
{
    char real[PATH_MAX];
    const char *want = realpath(run, real) ? real : run;
    sqlite3_stmt *st;
    const char *sql = "SELECT run_key, verdict, why, per_step_ms, trace_dir FROM runs"
                      " WHERE run_key=?1 OR trace_dir=?1 OR ?1 LIKE trace_dir || '/%' OR trace_dir LIKE ?1 || '/%'"
                      " ORDER BY start_s DESC";
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(h, "--check");
    sqlite3_bind_text(st, 1, want, -1, SQLITE_STATIC);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0), *verdict = (const char *)sqlite3_column_text(st, 1);
        const char *why = (const char *)sqlite3_column_text(st, 2);
        rc = verdict && strcmp(verdict, "regression") == 0;
        printf("%s %s: %s\n", verdict ? verdict : "?", key,
               why && *why ? why : verdict && strcmp(verdict, "baseline") == 0
                                       ? "too few runs before it in its series to judge"
                                       : "time per step within its series' band");
    } else {
        fprintf(stderr, "ringside: history: --check %s: no such run in the history (give its trace folder, "
                        "under one of the roots)\n", run);
    }
    sqlite3_finalize(st);
    return rc;
}

int rsr_history_run(char **roots, int nroots, const struct rsr_history_opts *o)
{
    struct hist h = { .quiet = o->quiet };
    char dbpath[PATH_MAX + 32];
    if (o->db)
        snprintf(dbpath, sizeof dbpath, "%s", o->db);
    else
        snprintf(dbpath, sizeof dbpath, "%s/ringside-history.db", roots[0]);
    char *slash = strrchr(dbpath, '/');
    snprintf(h.dir, sizeof h.dir, "%.*s", slash ? (int)(slash - dbpath) : 1, slash ? dbpath : ".");
    if (!h.dir[0])
        snprintf(h.dir, sizeof h.dir, "/");
    /* reports and the page are found from the page by paths under this folder */
    char real_dir[PATH_MAX];
    if (mkdir(h.dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "ringside: history: %s: %s\n", h.dir, strerror(errno));
        return 1;
    }
    if (realpath(h.dir, real_dir))
        snprintf(h.dir, sizeof h.dir, "%s", real_dir);
    if (db_open(&h, dbpath) != 0) {
        sqlite3_close(h.db);
        return 1;
    }
    int rc = 0;
    for (int k = 0; k < nroots; k++) {
        char real[PATH_MAX];
        char *root = realpath(roots[k], real) ? real : roots[k];
        char **files = NULL;
        int n = rsr_find_traces(&root, 1, &files);
        if (n <= 0) {
            fprintf(stderr, "ringside: history: no trace files (*.trace.lz4) in %s\n", roots[k]);
            rc = 1;
            continue;
        }
        int *run_of = rsr_xcalloc((size_t)n, sizeof *run_of);
        int nruns = rsr_runs_split(files, n, run_of);
        for (int r = 0; r < nruns; r++) {
            struct run run = { .files = rsr_xcalloc((size_t)n, sizeof *run.files) };
            for (int i = 0; i < n; i++)
                if (run_of[i] == r)
                    run.files[run.n++] = files[i];
            run_describe(&run);
            if (fresh(&h, &run)) {
                h.kept++;
            } else if (index_run(&h, &run) == 0) {
                h.indexed++;
            } else {
                h.failed++;
            }
            free(run.files);
        }
        for (int i = 0; i < n; i++)
            free(files[i]);
        free(files);
        free(run_of);
    }
    if (judge_all(&h) != 0)
        rc = 1;
    char page[2 * PATH_MAX], cwd[PATH_MAX];
    if (o->page && o->page[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(page, sizeof page, "%s/%s", cwd, o->page);
    else if (o->page)
        snprintf(page, sizeof page, "%s", o->page);
    else
        snprintf(page, sizeof page, "%s/ringside-history.html", h.dir);
    if (write_page(&h, page) != 0)
        rc = 1;
    if (!o->quiet)
        fprintf(stderr, "ringside: history: %d runs indexed, %d unchanged, %d left out -> %s, %s\n", h.indexed,
                h.kept, h.failed, dbpath, page);
    if (o->check) {
        int c = check_run(&h, o->check);
        rc = c != 0 ? 1 : rc;
    } else if (!o->quiet) {
        print_history(&h);
    }
    sqlite3_close(h.db);
    return rc;
}
