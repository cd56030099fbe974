/* One run per report (runs.h): before loading, folders grouped into runs by
 * their lifetimes (the headers' start, the files' last write) and all but
 * the newest run left out; after loading, the files checked for a second
 * run by job id, rank and lifetime, on the processes' real-time clocks. */
#include "reporter/load/runs.h"
#include "reporter/base/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NS 1000000000LL

static void date_of(char *buf, size_t n, int64_t real_ns)
{
    time_t t = (time_t)(real_ns / NS);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
}

/* The length of path's folder part ("" for a bare file name). */
static size_t dir_len(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? (size_t)(s - path) : 0;
}

static int same_dir(const char *a, const char *b)
{
    size_t n = dir_len(a);
    return n == dir_len(b) && strncmp(a, b, n) == 0;
}

/* How much of a's first len bytes names a folder that also holds b. */
static size_t common_len(const char *a, const char *b, size_t len)
{
    while (len && (strncmp(a, b, len) != 0 || b[len] != '/')) {
        const char *up = memrchr(a, '/', len);
        len = up ? (size_t)(up - a) : 0;
    }
    return len;
}

/* ---- before loading: the newest run of a folder of job folders ---- */

struct folder {
    const char *any;            /* one of its files, for its name */
    int files;
    int64_t start, end;         /* real time, ns */
    int run;
};

static int cmp_start(const void *a, const void *b)
{
    const struct folder *x = *(struct folder *const *)a, *y = *(struct folder *const *)b;
    return (x->start > y->start) - (x->start < y->start);
}

/* "ringside-trace/job-a" or "ringside-trace/job-a and 2 more folders". */
static void folders_name(char *buf, size_t n, const struct folder *fs, int nf, int run)
{
    const struct folder *first = NULL;
    int more = 0;
    for (int i = 0; i < nf; i++)
        if (fs[i].run == run && !first)
            first = &fs[i];
        else if (fs[i].run == run)
            more++;
    int len = (int)dir_len(first->any);
    if (more)
        snprintf(buf, n, "%.*s and %d more folder%s", len ? len : 1, len ? first->any : ".", more,
                 more == 1 ? "" : "s");
    else
        snprintf(buf, n, "%.*s", len ? len : 1, len ? first->any : ".");
}

/* Groups files[0..n) by folder into fs (*nf of them; of[i]: file i's
 * folder) and numbers the runs (fs[f].run, from 0 in start order). Returns
 * the number of runs. */
static int group_runs(char **files, int n, struct folder **fsp, int **ofp, int *nfp)
{
    struct folder *fs = rsr_xcalloc((size_t)n + 1, sizeof *fs);
    int *of = rsr_xcalloc((size_t)n + 1, sizeof *of), nf = 0;
    for (int i = 0; i < n; i++) {
        int f = 0;
        while (f < nf && !same_dir(fs[f].any, files[i]))
            f++;
        if (f == nf)
            fs[nf++] = (struct folder){ files[i], 0, 0, 0, 0 };
        of[i] = f;
        struct stat st;
        int64_t start = rsr_file_start_real(files[i]);
        int64_t written = stat(files[i], &st) == 0 ? (int64_t)st.st_mtim.tv_sec * NS + st.st_mtim.tv_nsec : 0;
        if (!start || start > written)
            start = written;
        struct folder *fo = &fs[f];
        fo->files++;
        if (start && (!fo->start || start < fo->start))
            fo->start = start;
        if (written > fo->end)
            fo->end = written;
    }
    struct folder **order = rsr_xcalloc((size_t)nf + 1, sizeof *order);
    for (int f = 0; f < nf; f++)
        order[f] = &fs[f];
    qsort(order, (size_t)nf, sizeof *order, cmp_start);
    int runs = 0;
    int64_t end = 0;
    for (int k = 0; k < nf; k++) {
        if (k && order[k]->start > end)
            runs++;
        order[k]->run = runs;
        if (order[k]->end > end)
            end = order[k]->end;
    }
    free(order);
    *fsp = fs, *ofp = of, *nfp = nf;
    return n ? runs + 1 : 0;
}

/* The files of run r: their count and first start and last write. */
static int run_span(const struct folder *fs, int nf, int r, int64_t *start, int64_t *end)
{
    int count = 0;
    *start = *end = 0;
    for (int f = 0; f < nf; f++)
        if (fs[f].run == r) {
            count += fs[f].files;
            *start = !*start || fs[f].start < *start ? fs[f].start : *start;
            *end = fs[f].end > *end ? fs[f].end : *end;
        }
    return count;
}

int rsr_runs_split(char **files, int n, int *run_of)
{
    struct folder *fs;
    int *of, nf;
    int runs = group_runs(files, n, &fs, &of, &nf);
    for (int i = 0; i < n; i++)
        run_of[i] = fs[of[i]].run;
    free(of);
    free(fs);
    return runs;
}

void rsr_runs_newest(char **files, int *n)
{
    struct folder *fs;
    int *of, nf;
    int runs = group_runs(files, *n, &fs, &of, &nf) - 1;
    if (runs > 0) {
        char name[4200], from[32], to[32];
        size_t len = dir_len(files[0]);
        for (int i = 1; i < *n; i++)
            len = common_len(files[0], files[i], len);
        int kept = 0, newest = runs;
        int64_t first = 0;
        for (int f = 0; f < nf; f++)
            if (fs[f].run == newest) {
                kept += fs[f].files;
                first = !first || fs[f].start < first ? fs[f].start : first;
            }
        folders_name(name, sizeof name, fs, nf, newest);
        date_of(from, sizeof from, first);
        fprintf(stderr, "ringside: %.*s holds %d runs; reporting the newest: %s (%d files, started %s)\n",
                len ? (int)len : 1, len ? files[0] : ".", runs + 1, name, kept, from);
        for (int r = 0; r < newest; r++) {
            int64_t s, e;
            int count = run_span(fs, nf, r, &s, &e);
            folders_name(name, sizeof name, fs, nf, r);
            date_of(from, sizeof from, s);
            date_of(to, sizeof to, e);
            fprintf(stderr, "ringside: not reported: %s (%d files, %s to %s); give its folder to report it\n",
                    name, count, from, to);
        }
        int m = 0;
        for (int i = 0; i < *n; i++)
            if (fs[of[i]].run == newest)
                files[m++] = files[i];
            else
                free(files[i]);
        *n = m;
    }
    free(of);
    free(fs);
}

int rsr_runs_named(char **files, int n)
{
    struct folder *fs;
    int *of, nf;
    int runs = group_runs(files, n, &fs, &of, &nf);
    if (runs > 1) {
        char name[4200], from[32], to[32];
        fprintf(stderr, "ringside: the folders given hold %d runs, not one:", runs);
        for (int r = 0; r < runs; r++) {
            int64_t s, e;
            int count = run_span(fs, nf, r, &s, &e);
            folders_name(name, sizeof name, fs, nf, r);
            date_of(from, sizeof from, s);
            date_of(to, sizeof to, e);
            fprintf(stderr, "%s %s (%d file%s, %s to %s)", r ? ";" : "", name, count, count == 1 ? "" : "s", from,
                    to);
        }
        fputs("; give the folders of one run (or a folder of job folders: its newest run)\n", stderr);
    }
    free(of);
    free(fs);
    return runs > 1;
}

int rsr_runs_pick(int npaths, char **files, int *n)
{
    if (npaths > 1)
        return rsr_runs_named(files, *n);
    rsr_runs_newest(files, n);
    return 0;
}

/* ---- after loading: one run or a refusal ---- */

/* The process's first and last time observed, on the real-time clock;
 * 0 when its file gives no clock. */
static int span_of(const struct rsr_input *in, int64_t *start, int64_t *end)
{
    const struct rsr_model *m = in->model;
    if (!m || !m->n_clocks || !m->wall_end_ns)
        return 0;
    int64_t d = m->clocks[0].real_ns - m->clocks[0].mono_ns;
    *start = m->wall_start_ns + d;
    *end = m->wall_end_ns + d;
    return 1;
}

static const char *job_of(const struct rsr_input *in)
{
    return in->job && *in->job ? in->job : "(none)";
}

/* Where the files are: the folder that holds them all. */
static void where_of(char *buf, size_t n, const struct rsr_input *ins, int count)
{
    size_t len = dir_len(ins[0].file);
    for (int i = 1; i < count; i++)
        len = common_len(ins[0].file, ins[i].file, len);
    snprintf(buf, n, "%.*s", len ? (int)len : 1, len ? ins[0].file : ".");
}

static void refuse(const struct rsr_input *ins, int n, const char *what)
{
    char where[4200];
    where_of(where, sizeof where, ins, n);
    fprintf(stderr, "ringside: %s holds more than one run: %s; report each run from a folder of its own\n",
            where, what);
}

/* Files of one folder and one job: how many, and the earliest start. */
static int job_files(const struct rsr_input *ins, int n, const struct rsr_input *like, int64_t *first)
{
    int count = 0;
    *first = 0;
    for (int i = 0; i < n; i++) {
        int64_t s, e;
        if (!same_dir(ins[i].file, like->file) || strcmp(job_of(&ins[i]), job_of(like)) != 0)
            continue;
        count++;
        if (span_of(&ins[i], &s, &e) && (!*first || s < *first))
            *first = s;
    }
    return count;
}

static int two_jobs(const struct rsr_input *ins, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            if (!ins[i].job || !ins[j].job || strcmp(ins[i].job, ins[j].job) == 0 ||
                !same_dir(ins[i].file, ins[j].file))
                continue;
            char what[1200], a[32], b[32];
            int64_t sa, sb;
            int na = job_files(ins, n, &ins[j], &sa), nb = job_files(ins, n, &ins[i], &sb);
            date_of(a, sizeof a, sa);
            date_of(b, sizeof b, sb);
            snprintf(what, sizeof what, "job %.200s (%d file%s, started %s) and job %.200s (%d file%s, started %s)",
                     job_of(&ins[j]), na, na == 1 ? "" : "s", a, job_of(&ins[i]), nb, nb == 1 ? "" : "s", b);
            refuse(ins, n, what);
            return 1;
        }
    return 0;
}

static int cmp_rank(const void *a, const void *b)
{
    const struct rsr_input *x = *(const struct rsr_input *const *)a, *y = *(const struct rsr_input *const *)b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void file_named(char *buf, size_t n, const struct rsr_input *in)
{
    char when[32] = "?";
    int64_t s, e;
    if (span_of(in, &s, &e))
        date_of(when, sizeof when, s);
    snprintf(buf, n, "%.1000s (job %.200s, started %s)", in->file, job_of(in), when);
}

static int two_claims(const struct rsr_input *ins, int n)
{
    const struct rsr_input **r = rsr_xcalloc((size_t)n, sizeof *r);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ins[i].role == RSF_ROLE_RANK && ins[i].rank >= 0)
            r[m++] = &ins[i];
    qsort(r, (size_t)m, sizeof *r, cmp_rank);
    int found = 0;
    for (int k = 1; k < m && !found; k++) {
        if (r[k]->rank != r[k - 1]->rank)
            continue;
        char a[1300], b[1300], what[2700];
        file_named(a, sizeof a, r[k - 1]);
        file_named(b, sizeof b, r[k]);
        snprintf(what, sizeof what, "rank %d is in %s and in %s", r[k]->rank, a, b);
        refuse(ins, n, what);
        found = 1;
    }
    free(r);
    return found;
}

struct lived {
    const struct rsr_input *in;     /* the first image's file */
    int64_t start, end;
    int images;                     /* files: one, or one per exec */
};

static int cmp_lived(const void *a, const void *b)
{
    const struct lived *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Host, pid, then start: the images one process ran, one after another. */
static int cmp_process(const void *a, const void *b)
{
    const struct lived *x = a, *y = b;
    int h = strcmp(x->in->host ? x->in->host : "", y->in->host ? y->in->host : "");
    if (h)
        return h;
    if (x->in->pid != y->in->pid)
        return x->in->pid < y->in->pid ? -1 : 1;
    return cmp_lived(a, b);
}

/* A program that execs another leaves a file for each image, one ending
 * where the next begins: one lifetime, from the first's start to the
 * last's end. Returns how many lifetimes are left in v. */
static int join_execs(struct lived *v, int m)
{
    qsort(v, (size_t)m, sizeof *v, cmp_process);
    int k = 0;
    for (int i = 0; i < m; i++) {
        if (k && v[k - 1].in->pid == v[i].in->pid && v[k - 1].in->host && v[i].in->host &&
            strcmp(v[k - 1].in->host, v[i].in->host) == 0) {
            v[k - 1].end = v[i].end > v[k - 1].end ? v[i].end : v[k - 1].end;
            v[k - 1].images++;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

/* "3 files from 2026-01-02 10:00:00 to 2026-01-02 10:00:09 (job X: F and 2 more)" */
static void group_named(char *buf, size_t n, const struct lived *v, int count)
{
    char from[32], to[32], more[32] = "";
    int64_t end = v[0].end;
    int files = v[0].images;
    for (int i = 1; i < count; i++) {
        end = v[i].end > end ? v[i].end : end;
        files += v[i].images;
    }
    date_of(from, sizeof from, v[0].start);
    date_of(to, sizeof to, end);
    if (files > 1)
        snprintf(more, sizeof more, " and %d more", files - 1);
    snprintf(buf, n, "%d file%s from %s to %s (job %.200s: %.1000s%s)", files, files == 1 ? "" : "s", from, to,
             job_of(v[0].in), v[0].in->file, more);
}

static int two_lifetimes(const struct rsr_input *ins, int n)
{
    struct lived *v = rsr_xcalloc((size_t)n, sizeof *v);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (span_of(&ins[i], &v[m].start, &v[m].end)) {
            v[m].images = 1;
            v[m++].in = &ins[i];
        }
    m = join_execs(v, m);
    qsort(v, (size_t)m, sizeof *v, cmp_lived);
    int64_t end = m ? v[0].end : 0;
    int found = 0;
    for (int k = 1; k < m && !found; k++) {
        if (v[k].start > end + RSR_RUN_GAP_NS) {
            char a[1400], b[1400], what[2900];
            group_named(a, sizeof a, v, k);
            group_named(b, sizeof b, v + k, m - k);
            snprintf(what, sizeof what, "%s and %s, %.1f s apart", a, b, (double)(v[k].start - end) / NS);
            refuse(ins, n, what);
            found = 1;
        }
        end = v[k].end > end ? v[k].end : end;
    }
    free(v);
    return found;
}

/* Whether a and b are images of one process (host and pid), a exec'ing
 * into b or b into a. */
static int same_process(const struct rsr_input *a, const struct rsr_input *b)
{
    return a->pid == b->pid && a->host && b->host && strcmp(a->host, b->host) == 0;
}

void rsr_runs_exec_images(struct rsr_input *ins, int n)
{
    for (int i = 0; i < n; i++) {
        if (ins[i].role != RSF_ROLE_RANK || ins[i].rank < 0)
            continue;
        int64_t si, ei, sj, ej;
        if (!span_of(&ins[i], &si, &ei))
            continue;
        for (int j = 0; j < n; j++)
            if (j != i && ins[j].role == RSF_ROLE_RANK && ins[j].rank == ins[i].rank &&
                same_process(&ins[i], &ins[j]) && span_of(&ins[j], &sj, &ej) && sj > si) {
                ins[i].parent_rank = ins[i].rank;
                ins[i].rank = -1;
                ins[i].role = RSF_ROLE_CHILD;
                if (ins[i].model) {
                    ins[i].model->parent_rank = ins[i].parent_rank;
                    ins[i].model->rank = -1;
                    ins[i].model->role = RSR_ROLE_CHILD;
                }
                break;
            }
    }
}

int rsr_runs_check(const struct rsr_input *ins, int n)
{
    return two_jobs(ins, n) || two_claims(ins, n) || two_lifetimes(ins, n);
}
