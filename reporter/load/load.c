/* Trace file reading for the reporter: walks frames (resynchronising after
 * damage, counting what could not be read), decodes and verifies chunks,
 * and sums file I/O per path; files are loaded in parallel, one per thread
 * at a time, so memory grows with the summaries, not the traces. What a
 * loaded file keeps is its summary (collective tuples spilled to disk),
 * its identity and its per-path totals, within the bound of --memory-mb. */
#include "reporter/load/load.h"
#include "reporter/load/summary.h"
#include "reporter/load/compile.h"
#include "reporter/load/process.h"
#include "reporter/base/array.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_problem(struct rsr_walk *w, uint64_t off, int err, int in_chunk, uint64_t chunk_off)
{
    if (w->nproblems < RSR_MAX_PROBLEMS)
        w->problems[w->nproblems] = (struct rsr_problem){ off, chunk_off, err, in_chunk };
    w->nproblems++;
}

int rsr_walk_part(const char *path, uint64_t from, int live, rsr_chunk_fn fn, void *arg, struct rsr_walk *w,
                  uint64_t *next)
{
    struct rsf_reader r;
    *next = from;
    if (rsf_reader_open(&r, path) != RSF_ERR_OK)
        return -1;
    if (from && rsf_reader_seek(&r, from) != RSF_ERR_OK) {
        rsf_reader_close(&r);
        return -1;
    }
    w->file_size = r.file_size;
    int stop = 0, ret = 0;
    /* The problem (its index) of a frame the file ended inside though a
     * frame start followed: the file was cut there unless a good frame
     * follows (the start was only the magic's bytes in the cut frame's
     * compressed data). SIZE_MAX: none. */
    size_t cut_at = SIZE_MAX;
    while (!stop) {
        const uint8_t *buf;
        size_t size;
        int err = rsf_reader_next(&r, &buf, &size);
        if (err == RSF_ERR_EOF)
            break;
        if (err == RSF_ERR_OK) {
            cut_at = SIZE_MAX;
            struct rsf_chunk_view v;
            size_t where = 0;
            int derr = rsf_chunk_decode(buf, size, &v, &where);
            if (derr) {
                add_problem(w, r.frame_off, derr, 1, where);
                w->bad_bytes += rsf_reader_offset(&r) - r.frame_off;
                continue;
            }
            w->nchunks++;
            w->saw_end = v.c.end;
            stop = fn(&v.c, arg);
            rsf_chunk_view_free(&v);
            continue;
        }
        if (err == RSF_ERR_IO) {
            ret = -1;
            break;
        }
        /* A file still being written ends inside the frame the writer is
         * at: that frame is read next time, from its start. */
        if (live && err == RSF_ERR_TRUNCATED) {
            *next = r.frame_off;
            rsf_reader_close(&r);
            return 0;
        }
        /* A frame can look cut short only because damage made it longer
         * (a flipped block size): it is the file's end only if no frame
         * follows it. When none does, resync counts the rest as bad. */
        uint64_t at = r.frame_off;
        int more = rsf_reader_resync(&r) == RSF_ERR_OK;
        if (err == RSF_ERR_TRUNCATED && more && cut_at == SIZE_MAX && w->nproblems < RSR_MAX_PROBLEMS)
            cut_at = w->nproblems;
        if (err == RSF_ERR_TRUNCATED && more)
            err = RSF_ERR_LZ4;
        add_problem(w, at, err, 0, 0);
        if (!more) {
            w->cut_short = err == RSF_ERR_TRUNCATED;
            break;
        }
    }
    /* nothing good after the cut frame: the file was cut there, and what
     * looked like frames after its start were inside it */
    if (cut_at != SIZE_MAX && ret == 0) {
        w->problems[cut_at].err = RSF_ERR_TRUNCATED;
        w->nproblems = (uint32_t)cut_at + 1;
        w->cut_short = 1;
    }
    w->bad_bytes += r.bad_bytes;
    *next = rsf_reader_offset(&r);
    rsf_reader_close(&r);
    return ret;
}

int rsr_walk_file(const char *path, rsr_chunk_fn fn, void *arg, struct rsr_walk *w)
{
    uint64_t next;
    memset(w, 0, sizeof *w);
    return rsr_walk_part(path, 0, 0, fn, arg, w, &next);
}

static int header_start(const struct rsf_chunk *c, void *arg)
{
    if (c->meta)
        *(int64_t *)arg = (int64_t)c->meta->start.real_ns;
    return 1;
}

int64_t rsr_file_start_real(const char *path)
{
    int64_t start = 0;
    struct rsr_walk w;
    rsr_walk_file(path, header_start, &start, &w);
    return start;
}

void rsr_problem_print(void *fp, const char *path, const struct rsr_problem *p)
{
    FILE *f = fp;
    if (p->in_chunk)
        fprintf(f, "%s: offset %llu: chunk byte %llu: %s\n", path, (unsigned long long)p->offset,
                (unsigned long long)p->chunk_off, rsf_strerror(p->err));
    else
        fprintf(f, "%s: offset %llu: %s\n", path, (unsigned long long)p->offset, rsf_strerror(p->err));
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The first RSR_ARGV_MAX words of m's command line, each cut to
 * RSR_ARGV_WORD_MAX bytes; out of memory keeps the words copied so far. */
static void keep_argv(struct rsr_input *in, const struct rsf_meta *m)
{
    uint32_t n = m->argc < RSR_ARGV_MAX ? m->argc : RSR_ARGV_MAX;
    if (!n || !(in->argv = calloc(n, sizeof *in->argv)))
        return;
    for (uint32_t i = 0; i < n && m->argv[i]; i++) {
        if (!(in->argv[i] = strndup(m->argv[i], RSR_ARGV_WORD_MAX)))
            return;
        in->argc = i + 1;
    }
}

static int take_chunk(const struct rsf_chunk *c, void *arg)
{
    struct rsr_input *in = arg;
    if (c->meta && !in->has_meta) {
        const struct rsf_meta *m = c->meta;
        in->has_meta = 1;
        in->host = dup_or_null(m->host);
        in->job = dup_or_null(m->job);
        in->pid = m->pid;
        in->ppid = m->ppid;
        in->rank = m->rank;
        in->local_rank = m->local_rank;
        in->world_size = m->world_size;
        in->parent_rank = m->parent_rank;
        in->role = m->role;
        in->compile_kind = rsr_compile_kind_of((char *const *)m->argv, (int)m->argc);
        keep_argv(in, m);
        const char *series = rsf_meta_setting(m, "series");
        free(in->series);
        in->series = series ? strndup(series, 128) : NULL;
        in->start_mono = m->start.mono_ns;
        const char *flush = rsf_meta_setting(m, "flush_ms");
        if (flush)
            in->flush_ms = (uint32_t)strtoul(flush, NULL, 10);
    }
    if (c->nstrings) {
        uint32_t last = c->strings_base + c->nstrings;
        if (rsr_grow_zeroed(&in->strings, &in->nstrings, last, sizeof *in->strings, 64) != 0)
            rsr_out_of_memory();
        for (uint32_t i = 0; i < c->nstrings; i++) {
            char **slot = &in->strings[c->strings_base + i];
            if (!*slot)
                *slot = strdup(c->strings[i]);
        }
    }
    for (uint32_t i = 0; i < c->nfiles; i++) {
        const struct rsf_file_ref *f = &c->files[i];
        if (rsr_grow_zeroed(&in->by_id, &in->nids, (size_t)f->id + 1, sizeof *in->by_id, 64) != 0)
            rsr_out_of_memory();
        /* path holds the string id until rsr_input_finish names it */
        in->by_id[f->id].path = (const char *)(uintptr_t)f->path;
    }
    for (uint32_t i = 0; i < c->nclocks; i++)
        if (c->clocks[i].mono_ns > in->end_mono)
            in->end_mono = c->clocks[i].mono_ns;
    for (uint32_t i = 0; i < c->nio; i++) {
        const struct rsf_io_event *e = &c->io[i];
        if (rsr_grow_zeroed(&in->by_id, &in->nids, (size_t)e->file + 1, sizeof *in->by_id, 64) != 0)
            rsr_out_of_memory();
        struct rsr_file_io *s = &in->by_id[e->file];
        s->ops++;
        s->time_ns += e->dur_ns;
        int dir = rsf_io_op_dir(e->op);
        if (dir == RSF_DIR_READ) {
            s->read_ns += e->dur_ns;
            if (e->result > 0)
                s->read_bytes += (uint64_t)e->result;
        } else if (dir == RSF_DIR_WRITE) {
            s->write_ns += e->dur_ns;
            if (e->result > 0)
                s->write_bytes += (uint64_t)e->result;
        }
        if (e->start_ns + e->dur_ns > in->end_mono)
            in->end_mono = e->start_ns + e->dur_ns;
    }
    in->nio += c->nio;
    if (in->model && rsr_model_loader_chunk(&in->loader, c, in->strings, in->nstrings) != 0)
        in->model_incomplete = 1;
    if (c->counters) {
        in->recorded = c->counters->recorded;
        in->dropped = c->counters->dropped;
        in->dropped_io = c->counters->dropped_io;
    }
    return 0;
}

static int by_path(const void *a, const void *b)
{
    const struct rsr_file_io *x = a, *y = b;
    return strcmp(x->path, y->path);
}

/* Names each file id and sums ids that share a path. */
static void finish(struct rsr_input *in)
{
    struct rsr_file_io *list = calloc(in->nids ? in->nids : 1, sizeof *list);
    uint32_t n = 0;
    for (uint32_t id = 1; id < in->nids; id++) {
        struct rsr_file_io *s = &in->by_id[id];
        uint32_t sid = (uint32_t)(uintptr_t)s->path;
        if (!s->ops)
            continue;
        const char *p = sid && sid < in->nstrings && in->strings[sid] ? in->strings[sid] : "(unknown)";
        list[n] = *s;
        list[n++].path = p;
    }
    qsort(list, n, sizeof *list, by_path);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m && strcmp(list[m - 1].path, list[i].path) == 0) {
            struct rsr_file_io *t = &list[m - 1];
            t->read_bytes += list[i].read_bytes;
            t->write_bytes += list[i].write_bytes;
            t->ops += list[i].ops;
            t->time_ns += list[i].time_ns;
            t->read_ns += list[i].read_ns;
            t->write_ns += list[i].write_ns;
        } else {
            list[m++] = list[i];
        }
    }
    in->files = list;
    in->nfiles = m;
    /* Only the paths are needed from here on: they move to a table of their
     * own (strings[i] is files[i]'s path, as rsr_unpack_input has it), and
     * the file's whole string table and its per-id totals go. */
    char **paths = calloc(m ? m : 1, sizeof *paths);
    for (uint32_t i = 0; paths && i < m; i++) {
        paths[i] = strdup(list[i].path);
        list[i].path = paths[i] ? paths[i] : "(unknown)";
    }
    if (!paths) {
        fprintf(stderr, "ringside: out of memory\n");
        exit(1);
    }
    for (uint32_t i = 0; i < in->nstrings; i++)
        free(in->strings[i]);
    free(in->strings);
    free(in->by_id);
    in->by_id = NULL;
    in->nids = 0;
    in->strings = paths;
    in->nstrings = m;
}

static void input_begin(struct rsr_input *in, const char *path, int stream, int windowed, int64_t from,
                        int64_t to)
{
    memset(in, 0, sizeof *in);
    in->file = strdup(path);
    in->rank = in->local_rank = in->world_size = in->parent_rank = -1;
    in->role = RSF_ROLE_OTHER;
    in->flush_ms = RSR_FLUSH_MS_DEFAULT;
    in->model = malloc(sizeof *in->model);
    if (in->model) {
        rsr_model_init(in->model);
        rsr_model_loader_init(&in->loader, in->model);
        if (stream)
            rsr_model_loader_stream(&in->loader);
        if (windowed)
            rsr_model_loader_window(&in->loader, from, to);
    }
}

static void input_end(struct rsr_input *in, int stream)
{
    if (in->model) {
        rsr_model_loader_finish(&in->loader);
        in->model_incomplete |= in->loader.failed;
        /* the tuples grow with the job's length: to disk (where that
         * fails, they stay in memory) */
        if (stream && in->model->sum)
            rsr_summary_spill(in->model->sum);
        in->model->unclosed = in->walk.cut_short ? RSR_CUT_SHORT : in->walk.saw_end ? RSR_CLOSED : RSR_NO_END_MARK;
        in->model->flush_ns = (int64_t)in->flush_ms * 1000000;
    }
    finish(in);
}

static void input_load_as(struct rsr_input *in, const char *path, int stream, int windowed, int64_t from,
                          int64_t to)
{
    input_begin(in, path, stream, windowed, from, to);
    if (rsr_walk_file(path, take_chunk, in, &in->walk) != 0)
        in->open_failed = errno ? errno : EIO;
    input_end(in, stream);
}

void rsr_input_begin(struct rsr_input *in, const char *path)
{
    input_begin(in, path, 1, 0, 0, 0);
}

/* Both consumers of a live chunk: the input and the caller's. */
struct feed {
    struct rsr_input *in;
    rsr_chunk_fn also;
    void *also_arg;
};

static int feed_chunk(const struct rsf_chunk *c, void *arg)
{
    struct feed *fd = arg;
    take_chunk(c, fd->in);
    return fd->also ? fd->also(c, fd->also_arg) : 0;
}

long long rsr_input_feed(struct rsr_input *in, int last, rsr_chunk_fn also, void *also_arg)
{
    struct feed fd = { in, also, also_arg };
    uint64_t next;
    int rc = rsr_walk_part(in->file, in->live_off, !last, feed_chunk, &fd, &in->walk, &next);
    long long got = (long long)(next - in->live_off);
    in->live_off = next;
    if (rc != 0) {
        in->open_failed = errno ? errno : EIO;
        return -1;
    }
    in->open_failed = 0;
    return got;
}

void rsr_input_end(struct rsr_input *in)
{
    input_end(in, 1);
}

static void input_load(struct rsr_input *in, const char *path, int stream)
{
    input_load_as(in, path, stream, 0, 0, 0);
}

/* input_load, each chunk handed to also(chunk, also_arg) as well. */
static void input_load_also(struct rsr_input *in, const char *path, int stream, rsr_chunk_fn also, void *also_arg)
{
    struct feed fd = { in, also, also_arg };
    input_begin(in, path, stream, 0, 0, 0);
    if (rsr_walk_file(path, feed_chunk, &fd, &in->walk) != 0)
        in->open_failed = errno ? errno : EIO;
    input_end(in, stream);
}

void rsr_input_load(struct rsr_input *in, const char *path)
{
    input_load(in, path, 0);
}

void rsr_input_load_window(struct rsr_input *in, const char *path, int64_t from_ns, int64_t to_ns)
{
    input_load_as(in, path, 0, 1, from_ns, to_ns);
}

void rsr_input_stream(struct rsr_input *in, const char *path)
{
    input_load(in, path, 1);
}

void rsr_input_free(struct rsr_input *in)
{
    for (uint32_t i = 0; i < in->nstrings; i++)
        free(in->strings[i]);
    free(in->strings);
    free(in->by_id);
    free(in->files);
    free(in->host);
    free(in->job);
    free(in->series);
    for (uint32_t i = 0; i < in->argc; i++)
        free(in->argv[i]);
    free(in->argv);
    free(in->file);
    if (in->model) {
        rsr_model_free(in->model);
        free(in->model);
    }
    memset(in, 0, sizeof *in);
}

static uint64_t bound_mb;

void rsr_inputs_bound(uint64_t mb)
{
    bound_mb = mb;
}

/* What loaded inputs hold, by part, for the bound's message. */
struct held {
    _Atomic uint64_t fine, tuples, names, other;
};

static void held_add(struct held *h, const struct rsr_input *in)
{
    uint64_t other = sizeof *in + in->nfiles * sizeof *in->files;
    for (uint32_t i = 0; i < in->nstrings; i++)
        other += in->strings[i] ? strlen(in->strings[i]) + 1 : 0;
    if (in->model) {
        const struct rsr_summary *s = in->model->sum;
        uint64_t fine = 0, tuples = 0;
        if (s) {
            for (int k = 0; k < RSR_FINE_NSERIES; k++)
                fine += s->fine[k] ? RSR_FINE_BINS * sizeof(double) : 0;
            tuples = s->cap_colls * sizeof *s->colls;
        }
        uint64_t all = rsr_model_bytes(in->model) + sizeof *in->model;
        const struct rsr_strtab *t = &in->model->strings;
        uint64_t names = t->cap * sizeof *t->strs + rsr_table_bytes(&t->table) + t->block_bytes;
        atomic_fetch_add(&h->fine, fine);
        atomic_fetch_add(&h->tuples, tuples);
        atomic_fetch_add(&h->names, names);
        other += all - fine - tuples - names;
    }
    atomic_fetch_add(&h->other, other);
}

/* Stops the command when what n inputs would hold (those loaded, done of
 * them, taken as a sample) does not fit in the bound. */
static void held_check(struct held *h, int done, int n)
{
    const uint64_t mb = 1000000;
    double scale = (double)n / (double)done;
    uint64_t fine = (uint64_t)((double)h->fine * scale), tuples = (uint64_t)((double)h->tuples * scale);
    uint64_t names = (uint64_t)((double)h->names * scale), other = (uint64_t)((double)h->other * scale);
    uint64_t base = RSR_MEMORY_BASE_MB * mb + (uint64_t)n * RSR_MEMORY_PROCESS_KB * 1000;
    uint64_t need = fine + tuples + names + other + base;
    if (need <= bound_mb * mb)
        return;
    const char *what = "fine utilisation bins";
    uint64_t most = fine;
    if (tuples > most)
        what = "collective tuples (the spill file could not be written)", most = tuples;
    if (names > most)
        what = "names", most = names;
    if (other > most)
        what = "kernel tables, streams and checkpoint bursts", most = other;
    fprintf(stderr,
            "ringside: --memory-mb %llu is too small: the summaries of %d processes need about %llu MB "
            "(most of it %s: %llu MB) besides %llu MB for reading, the analyses and the outputs; "
            "give --memory-mb %llu or more\n",
            (unsigned long long)bound_mb, n, (unsigned long long)((need - base) / mb), what,
            (unsigned long long)(most / mb), (unsigned long long)(base / mb), (unsigned long long)(need / mb + 1));
    exit(1);
}

struct pool {
    struct rsr_input *ins;
    char **files;
    int n;
    _Atomic int next;
    _Atomic int done;
    int progress;
    int stream;
    struct held held;
    pthread_mutex_t check;
    rsr_chunk_fn also;
    void *const *also_args;
};

static void *load_worker(void *arg)
{
    struct pool *p = arg;
    int i;
    while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
        if (p->also)
            input_load_also(&p->ins[i], p->files[i], p->stream, p->also, p->also_args[i]);
        else
            input_load(&p->ins[i], p->files[i], p->stream);
        int d = atomic_fetch_add(&p->done, 1) + 1;
        if (bound_mb && p->stream) {
            /* one thread at a time prints the message and exits */
            held_add(&p->held, &p->ins[i]);
            pthread_mutex_lock(&p->check);
            held_check(&p->held, d, p->n);
            pthread_mutex_unlock(&p->check);
        }
        if (p->progress)
            fprintf(stderr, "\rringside: read %d of %d trace files", d, p->n);
    }
    return NULL;
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

void rsr_inputs_sort(struct rsr_input *ins, int n)
{
    qsort(ins, (size_t)n, sizeof *ins, cmp_input);
}

void rsr_inputs_load(struct rsr_input *ins, char **files, int n, int nthreads, int progress, int stream)
{
    rsr_inputs_load_also(ins, files, n, nthreads, progress, stream, NULL, NULL);
}

void rsr_inputs_load_also(struct rsr_input *ins, char **files, int n, int nthreads, int progress, int stream,
                          rsr_chunk_fn also, void *const *also_args)
{
    struct pool p = { ins, files, n, 0, 0, progress, stream, { 0 }, PTHREAD_MUTEX_INITIALIZER, also, also_args };
    /* A fixed mmap threshold: the per-file buffers (lz4's, the chunk's,
     * the reorder window's) are then mapped and given back when freed. With
     * glibc's default, the threshold rises to the largest buffer freed and
     * they come from the heap, where what the summaries keep between them
     * pins them: 2.3 GB for 1,024 files of 100k records, 420 MB without. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    if (nthreads > n)
        nthreads = n;
    if (nthreads > 64)
        nthreads = 64;
    pthread_t th[64];
    int started = 0;
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&th[started], NULL, load_worker, &p) == 0)
            started++;
    load_worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (progress)
        fputs("\r\033[K", stderr);
}

void rsr_inputs_models(struct rsr_input *ins, int n, struct rsr_model **models)
{
    static struct rsr_model empty;
    rsr_inputs_sort(ins, n);
    rsr_model_init(&empty);
    for (int i = 0; i < n; i++)
        models[i] = ins[i].model ? ins[i].model : &empty;
}
