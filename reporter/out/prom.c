/* report.json -> Prometheus text exposition format 0.0.4 (prom.h). Every
 * metric is a gauge of the job as reported so far; ratios are 0..1 and
 * throughputs bytes per second, as Prometheus' naming rules ask. */
#include "reporter/out/prom.h"
#include "reporter/out/html.h"
#include "reporter/out/html_json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

/* A label value with \, " and newlines escaped. */
static void label(FILE *f, const char *name, const char *v)
{
    fprintf(f, "%s=\"", name);
    for (; v && *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            putc(*v, f);
    }
    putc('"', f);
}

static void head(FILE *f, const char *metric, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", metric, help, metric);
}

/* "METRIC{job=...,host=...," of node n: its own labels follow. */
static void node_sample(FILE *f, const char *metric, const char *job, yajl_val n)
{
    fprintf(f, "%s{", metric);
    label(f, "job", job);
    putc(',', f);
    label(f, "host", rsr_jv_kstr(n, "host"));
    putc(',', f);
}

static void value(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, " %.9g\n", v);
    else
        fputs(" NaN\n", f);
}

/* One sample per rank of processes[].gpu.KEY / scale. */
static void per_rank(FILE *f, yajl_val procs, const char *job, const char *metric, const char *help,
                     const char *key, double scale)
{
    int any = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        yajl_val p = rsr_jv_at(procs, i);
        double rank, v;
        if (!rsr_jv_knum(p, "rank", &rank) || rank < 0 || !rsr_jv_knum(rsr_jv_key(p, "gpu"), key, &v))
            continue;
        if (!any++)
            head(f, metric, help);
        fprintf(f, "%s{", metric);
        label(f, "job", job);
        fprintf(f, ",rank=\"%.0f\"}", rank);
        value(f, v / scale);
    }
}

static void job_metric(FILE *f, const char *job, const char *metric, const char *help, double v)
{
    head(f, metric, help);
    fprintf(f, "%s{", metric);
    label(f, "job", job);
    putc('}', f);
    value(f, v);
}

int rsr_prom_write(const char *json_path, const char *dir)
{
    size_t size;
    char *text = rsr_html_slurp(json_path, &size), err[256] = "";
    yajl_val root = text ? yajl_tree_parse(text, err, sizeof err) : NULL;
    free(text);
    if (!root) {
        fprintf(stderr, "ringside: --prom-dir: %s: %s\n", json_path, err[0] ? err : strerror(errno));
        return -1;
    }
    const char *job = rsr_jv_kstr(root, "job");
    if (!job)
        job = "job";
    /* the file's name: the job's, its characters outside [A-Za-z0-9._-] as '_' */
    char path[PATH_MAX + 300], tmp[PATH_MAX + 320];
    int len = snprintf(path, sizeof path, "%s/ringside-", dir);
    for (const char *c = job; *c && len < (int)sizeof path - 8; c++)
        path[len++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                              *c == '.' || *c == '-' || *c == '_' ? *c : '_';
    snprintf(path + len, sizeof path - (size_t)len, ".prom");
    snprintf(tmp, sizeof tmp, "%s/.ringside-%d.prom.tmp", dir, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "ringside: --prom-dir: %s: %s\n", tmp, strerror(errno));
        yajl_tree_free(root);
        return -1;
    }
    yajl_val steps = rsr_jv_key(root, "steps"), procs = rsr_jv_key(root, "processes");
    double v;
    if (rsr_jv_knum(steps, "per_step_ms", &v))
        job_metric(f, job, "ringside_step_seconds",
                   "Time per training step so far: the training steps' span over their count.", v / 1e3);
    if (rsr_jv_knum(steps, "median_ms", &v))
        job_metric(f, job, "ringside_step_median_seconds", "The median training step so far.", v / 1e3);
    if (rsr_jv_knum(steps, "count", &v))
        job_metric(f, job, "ringside_steps", "Training steps so far.", v);
    if (rsr_jv_knum(root, "wall_s", &v))
        job_metric(f, job, "ringside_job_wall_seconds", "The job's wall time so far.", v);
    if (rsr_jv_knum(root, "checkpoint_pct", &v))
        job_metric(f, job, "ringside_checkpoint_ratio", "Share of the job's time spent writing checkpoints.",
                   v / 100);
    per_rank(f, procs, job, "ringside_gpu_busy_ratio", "Share of the rank's GPU time span with work on the GPU.",
             "busy_pct", 100);
    per_rank(f, procs, job, "ringside_sm_activity_ratio", "Share of the rank's GPU SMs holding a block, over its span.",
             "sm_activity_pct", 100);
    per_rank(f, procs, job, "ringside_sync_wait_ratio",
             "Share of the rank's GPU time its collectives waited for a late rank, not hidden by compute.",
             "sync_wait_pct", 100);
    per_rank(f, procs, job, "ringside_transfer_exposed_ratio",
             "Share of the rank's GPU time its collectives moved data, not hidden by compute.", "transfer_pct", 100);
    /* every rank, 1 for the stragglers */
    yajl_val st = rsr_jv_key(root, "stragglers");
    int any = 0;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        double rank;
        if (!rsr_jv_knum(rsr_jv_at(procs, i), "rank", &rank) || rank < 0)
            continue;
        int late = 0;
        for (size_t k = 0; k < rsr_jv_len(st); k++) {
            yajl_val x = rsr_jv_at(st, k);
            double r = YAJL_IS_NUMBER(x) ? YAJL_GET_DOUBLE(x) : rsr_jv_knum_or(x, "rank", -1);
            late |= r == rank;
        }
        if (!any++)
            head(f, "ringside_straggler", "1 when the others wait for this rank in its collectives (the report's rule).");
        fputs("ringside_straggler{", f);
        label(f, "job", job);
        fprintf(f, ",rank=\"%.0f\"}", rank);
        value(f, late);
    }
    /* the nodes' links, then their disks (a family's samples together):
     * mean throughput over the job so far */
    yajl_val nodes = rsr_jv_key(root, "nodes");
    double wall = rsr_jv_knum_or(root, "wall_s", 0);
    int any_link = 0, any_disk = 0;
    for (size_t i = 0; i < rsr_jv_len(nodes); i++) {
        yajl_val n = rsr_jv_at(nodes, i), ls = rsr_jv_key(n, "links");
        for (size_t k = 0; k < rsr_jv_len(ls); k++) {
            yajl_val l = rsr_jv_at(ls, k);
            if (!rsr_jv_knum(l, "mean_gbs", &v))
                continue;
            if (!any_link++)
                head(f, "ringside_link_bytes_per_second", "A node's network or GPU link throughput, mean over the job.");
            node_sample(f, "ringside_link_bytes_per_second", job, n);
            label(f, "link", rsr_jv_kstr(l, "name"));
            putc(',', f);
            label(f, "kind", rsr_jv_kstr(l, "kind"));
            putc('}', f);
            value(f, v * 1e9);
        }
    }
    for (size_t i = 0; i < rsr_jv_len(nodes) && wall > 0; i++) {
        yajl_val n = rsr_jv_at(nodes, i), ds = rsr_jv_key(n, "disks");
        for (size_t k = 0; k < rsr_jv_len(ds); k++) {
            yajl_val d = rsr_jv_at(ds, k);
            static const char *const dir_of[2][2] = { { "read_bytes", "read" }, { "write_bytes", "write" } };
            for (int w = 0; w < 2; w++) {
                if (!rsr_jv_knum(d, dir_of[w][0], &v))
                    continue;
                if (!any_disk++)
                    head(f, "ringside_storage_bytes_per_second", "A node's disk or NFS throughput, mean over the job.");
                node_sample(f, "ringside_storage_bytes_per_second", job, n);
                label(f, "disk", rsr_jv_kstr(d, "name"));
                fprintf(f, ",direction=\"%s\"}", dir_of[w][1]);
                value(f, v / wall);
            }
        }
    }
    yajl_tree_free(root);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "ringside: --prom-dir: %s: %s\n", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}
