/* The report command: trace discovery, parallel loading, report.json and
 * the text summary. Damaged files are reported (file, offset, bytes that
 * could not be read) and everything readable in them is still used. */
#include "reporter/report.h"
#include "reporter/html.h"
#include "reporter/json.h"
#include "formats/rsf_error.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* Ranks first in rank order, then the other processes by pid. */
static int cmp_input(const void *a, const void *b)
{
    const struct rsr_input *x = a, *y = b;
    int xr = x->rank >= 0, yr = y->rank >= 0;
    if (xr != yr)
        return yr - xr;
    if (xr && x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
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

static void trace_json(FILE *f, const struct rsr_input *in)
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
    fputs("]}", f);
}

void rsr_report_json(FILE *f, struct rsr_input *ins, int n)
{
    const char *job = NULL;
    int world = -1;
    for (int i = 0; i < n; i++) {
        if (!job && ins[i].job)
            job = ins[i].job;
        if (ins[i].world_size > world)
            world = ins[i].world_size;
    }
    fputs("{\"schema\":\"ringside-report/1\",\"job\":", f);
    rsr_json_str(f, job);
    fputs(",\"world_size\":", f);
    json_int_or_null(f, world);
    fputs(",\"processes\":[", f);
    for (int i = 0; i < n; i++) {
        const struct rsr_input *in = &ins[i];
        fputs(i ? ",\n{\"rank\":" : "\n{\"rank\":", f);
        json_int_or_null(f, in->rank);
        fprintf(f, ",\"role\":\"%s\",\"parent_rank\":", role_name(in->role));
        json_int_or_null(f, in->parent_rank);
        fputs(",\"host\":", f);
        rsr_json_str(f, in->host);
        fprintf(f, ",\"pid\":%d,\"ppid\":%d,\"wall_s\":", in->pid, in->ppid);
        rsr_json_num(f, in->end_mono > in->start_mono ? (in->end_mono - in->start_mono) / 1e9 : 0);
        fprintf(f, ",\"dropped\":%" PRIu64 ",", in->dropped);
        io_json(f, in);
        putc(',', f);
        trace_json(f, in);
        putc('}', f);
    }
    fputs("\n]}\n", f);
}

static void human_bytes(char *buf, size_t n, uint64_t b)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4)
        v /= 1024, i++;
    snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void summary(FILE *f, const struct rsr_input *ins, int n)
{
    int ranks = 0;
    uint64_t rb = 0, wb = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        ranks += ins[i].rank >= 0;
        dropped += ins[i].dropped;
        for (uint32_t j = 0; j < ins[i].nfiles; j++) {
            rb += ins[i].files[j].read_bytes;
            wb += ins[i].files[j].write_bytes;
        }
    }
    char r[32], w[32];
    human_bytes(r, sizeof r, rb);
    human_bytes(w, sizeof w, wb);
    fprintf(f, "ringside: %d process%s (%d rank%s); file I/O: %s read, %s written", n, n == 1 ? "" : "es",
            ranks, ranks == 1 ? "" : "s", r, w);
    if (dropped)
        fprintf(f, "; %" PRIu64 " records dropped (memory bound)", dropped);
    fputc('\n', f);
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

static int write_json_file(const char *path, struct rsr_input *ins, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return 1;
    }
    rsr_report_json(f, ins, n);
    if (fclose(f) != 0) {
        fprintf(stderr, "ringside: writing %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

int rsr_report_main(char **paths, int npaths, const struct rsr_report_opts *o)
{
    char **files;
    int n = rsr_find_traces(paths, npaths, &files);
    if (n < 0)
        return 1;
    if (n == 0) {
        fprintf(stderr, "ringside: no trace files (*.trace.lz4) in %s%s\n", paths[0],
                npaths > 1 ? " or the other folders given" : "");
        return 1;
    }
    struct rsr_input *ins = calloc((size_t)n, sizeof *ins);
    if (!ins) {
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rsr_inputs_load(ins, files, n, cpus > 0 ? (int)cpus : 1);
    int readable = 0;
    for (int i = 0; i < n; i++) {
        readable += !ins[i].open_failed && ins[i].walk.nchunks > 0;
        warn_damage(&ins[i]);
    }
    qsort(ins, (size_t)n, sizeof *ins, cmp_input);

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
            rc = write_json_file(p, ins, n);
            /* OUT/index.html from that report.json (no GPU timelines yet). */
            const char *bad;
            if (!rc && rsr_html_write_dir(o->out_dir, NULL, 0, &bad) != 0)
                rc = (fprintf(stderr, "ringside: %s: %s\n", bad, strerror(errno)), 1);
        }
    }
    if (!rc && o->json_path)
        rc = strcmp(o->json_path, "-") == 0 ? (rsr_report_json(stdout, ins, n), 0)
                                             : write_json_file(o->json_path, ins, n);
    if (!rc && !o->quiet)
        summary(o->json_path && strcmp(o->json_path, "-") == 0 ? stderr : stdout, ins, n);
    for (int i = 0; i < n; i++) {
        rsr_input_free(&ins[i]);
        free(files[i]);
    }
    free(ins);
    free(files);
    return rc;
}
