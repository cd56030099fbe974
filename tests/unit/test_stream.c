/* Unit tests of the streaming loader (load_model.c's reorder window into
 * summary.c's builder): trace files of several windows' worth of records,
 * written here with the format's encoder and LZ4 frames, summarised as they
 * stream (rsr_input_stream) and summarised whole (rsr_input_load, then
 * rsr_model_summarize). Every expected figure is computed here from the
 * records written (sorted-and-swept unions, HTA's per-stream gaps, sums),
 * never by the summary code. Also the windowed loader (rsr_input_load_window). */
#include "reporter/load/load.h"
#include "reporter/load/load_model.h"
#include "reporter/load/model.h"
#include "reporter/load/summary.h"
#include "reporter/load/process.h"
#include "formats/chunk.h"
#include "formats/frame.h"
#include "rs_check.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define US 1000ll
#define MS 1000000ll
#define SEC 1000000000ll
#define T0 (100 * SEC)          /* the made-up process's first step (monotonic ns) */
#define STEP (2 * MS)
#define CHUNK_RECORDS 8192      /* records per chunk, as a writer flushes them */
#define COMM_ID 0xc0ffeeull
#define COLL_BYTES (4u << 20)

/* The file's strings by id (0: none). */
enum { S_GEMM = 1, S_ELEM, S_NORM, S_NCCL, S_SHARD, S_CKPT, S_LATE, S_N };
static const char *const strs[S_N] = {
    NULL, "ampere_sgemm_128x64_tn", "vectorized_elementwise_kernel", "layer_norm_kernel",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "/data/shard-0", "/ckpt/model.bin", "late_kernel",
};
enum { F_SHARD = 1, F_CKPT = 2 };    /* file ids */

enum rec_type { R_GPU, R_SYNC, R_IO, R_COLL };

/* One record and when the writer put it in the file: at its start, or
 * later (a thread's buffer flushed late). */
struct rec {
    int type;
    int lone;           /* R_COLL: no kernel record ran it */
    int64_t pos;
    size_t order;       /* generation order: keeps the file order stable */
    union {
        struct rsf_gpu_event gpu;
        struct rsf_sync_event sync;
        struct rsf_io_event io;
        struct rsf_coll_event coll;
    } u;
};

struct job {
    struct rec *r;
    size_t n, cap;
    uint64_t seed;
};

static uint64_t rnd(struct job *j)
{
    j->seed ^= j->seed << 13;
    j->seed ^= j->seed >> 7;
    j->seed ^= j->seed << 17;
    return j->seed;
}

static struct rec *add(struct job *j, int type, int64_t start)
{
    if (j->n == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 4096;
        j->r = realloc(j->r, j->cap * sizeof *j->r);
        ck_assert(j->r != NULL);
    }
    struct rec *r = &j->r[j->n];
    memset(r, 0, sizeof *r);
    r->type = type;
    r->pos = start;
    r->order = j->n++;
    return r;
}

static struct rec *add_gpu(struct job *j, int64_t launch, int64_t start, int64_t end, uint64_t stream,
                           uint32_t name, uint8_t kind)
{
    struct rec *r = add(j, R_GPU, start);
    r->u.gpu = (struct rsf_gpu_event){ .launch_ns = (uint64_t)launch, .gpu_start_ns = (uint64_t)start,
                                       .gpu_end_ns = (uint64_t)end, .stream = stream, .call_ns = 3000,
                                       .tid = 11, .name = name, .kind = kind };
    return r;
}

static void add_io(struct job *j, int64_t start, int64_t dur, uint8_t op, uint32_t file, int64_t result)
{
    struct rec *r = add(j, R_IO, start);
    r->u.io = (struct rsf_io_event){ .start_ns = (uint64_t)start, .dur_ns = (uint64_t)dur, .offset = -1,
                                     .result = result, .file = file, .tid = 12, .op = op };
}

/* nsteps training steps of 2 ms: 14 compute kernels back to back on stream
 * 7 (some short, some gaps over 30 us, one launched after the previous
 * kernel ended: every kind of HTA gap), a copy on stream 11, an AllReduce
 * on stream 9 (its NCCL kernel and its collective record; every 50th step
 * without the kernel record), a stream synchronise, reads of a data shard
 * (some while the GPU is idle) and, every 2 s, a checkpoint written. */
static void gen_steps(struct job *j, int nsteps)
{
    int64_t prev_end = 0;
    for (int s = 0; s < nsteps; s++) {
        int64_t t = T0 + s * STEP;
        int64_t g = t + 20 * US > prev_end + US ? t + 20 * US : prev_end + US;
        for (int k = 0; k < 14; k++) {
            int64_t launch = t + k * 3 * US, start;
            int64_t dur = 5 * US + (int64_t)(rnd(j) % (50 * US));
            int64_t gap = rnd(j) % 8 == 0 ? 40 * US + (int64_t)(rnd(j) % (20 * US)) : US + (int64_t)(rnd(j) % 4000);
            if (k == 9) {
                launch = g + 5 * US; /* launched after the previous kernel ended */
                start = launch + 4 * US;
            } else {
                start = k ? g + gap : g;
            }
            add_gpu(j, launch, start, start + dur, 7, S_GEMM + (uint32_t)(rnd(j) % 3), RSF_GPU_KERNEL);
            g = start + dur;
        }
        prev_end = g;
        struct rec *c = add_gpu(j, t + 50 * US, t + 300 * US, t + 340 * US, 11, 0, RSF_GPU_MEMCPY);
        c->u.gpu.bytes = 1 << 20;
        c->u.gpu.dir = RSF_COPY_HTOD;
        int64_t lt = t + 60 * US;
        int64_t ks = t + 700 * US + (int64_t)(rnd(j) % (300 * US));
        int64_t ke = ks + 300 * US + (int64_t)(rnd(j) % (200 * US));
        int lone = s % 50 == 49;
        if (!lone)
            add_gpu(j, lt, ks, ke, 9, S_NCCL, RSF_GPU_KERNEL);
        /* the collective's own events sit just inside its kernel's */
        int64_t cs = lone ? ks : ks + 500, ce = lone ? ke : ke - 200;
        struct rec *co = add(j, R_COLL, cs);
        co->lone = lone;
        co->u.coll = (struct rsf_coll_event){ .launch_ns = (uint64_t)lt, .gpu_start_ns = (uint64_t)cs,
                                              .gpu_end_ns = (uint64_t)ce, .count = COLL_BYTES / 4,
                                              .bytes = COLL_BYTES, .comm = COMM_ID, .stream = 9,
                                              .call_ns = 3000, .tid = 11, .seq = (uint32_t)s, .peer = -1,
                                              .op = RSF_COLL_ALLREDUCE, .datatype = 7 };
        int64_t ss = t + 100 * US;
        struct rec *sy = add(j, R_SYNC, ss);
        sy->u.sync = (struct rsf_sync_event){ .start_ns = (uint64_t)ss,
                                              .dur_ns = (uint64_t)(1200 * US + (int64_t)(rnd(j) % (50 * US))),
                                              .target = 7, .tid = 11, .kind = RSF_SYNC_STREAM };
        if (s % 10 == 0)
            add_io(j, t + 1500 * US + (int64_t)(rnd(j) % (100 * US)), 150 * US, RSF_IO_READ, F_SHARD, 64 << 10);
        if (s % 20 == 5)
            add_io(j, t + 200 * US, 100 * US, RSF_IO_READ, F_SHARD, 32 << 10);
        if (s % 1000 == 500) {
            add_io(j, t + 1650 * US, 5 * US, RSF_IO_OPEN, F_CKPT, 5);
            for (int w = 0; w < 3; w++)
                add_io(j, t + 1660 * US + w * 40 * US, 30 * US, RSF_IO_WRITE, F_CKPT, 512 << 10);
            add_io(j, t + 1780 * US, 2 * US, RSF_IO_CLOSE, F_CKPT, 0);
        }
    }
}

/* ---- the file ---- */

static int cmp_pos(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->pos != b->pos)
        return a->pos < b->pos ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* The records as chunks of CHUNK_RECORDS in file order: the first with
 * meta, strings, files and the communicator, the last with the end mark. */
struct chunks {
    struct rsf_chunk *c;
    size_t n;
    struct rsf_gpu_event *gpu;
    struct rsf_sync_event *syncs;
    struct rsf_io_event *io;
    struct rsf_coll_event *colls;
    struct rsf_clock_pair *clocks;
};

static const struct rsf_meta meta = { .format_version = 1, .host = "h", .pid = 4242, .ppid = 1, .rank = 0,
                                      .local_rank = 0, .world_size = 2, .parent_rank = -1,
                                      .role = RSF_ROLE_RANK, .job = "stream",
                                      .start = { T0 - MS, T0 - MS + 7000 } };
static const struct rsf_file_ref files[2] = { { F_SHARD, S_SHARD, 0 }, { F_CKPT, S_CKPT, 0 } };
static const struct rsf_comm_event comm = { .start_ns = T0 - MS / 2, .dur_ns = 100, .comm = COMM_ID,
                                            .rank = 0, .nranks = 2, .kind = RSF_COMM_INIT };
static const struct rsf_counters counters = { 0 };

static void chunks_make(struct job *j, struct chunks *out)
{
    struct rec *r = malloc(j->n * sizeof *r);
    ck_assert(r != NULL);
    memcpy(r, j->r, j->n * sizeof *r);
    qsort(r, j->n, sizeof *r, cmp_pos);
    memset(out, 0, sizeof *out);
    size_t nchunks = (j->n + CHUNK_RECORDS - 1) / CHUNK_RECORDS;
    out->c = calloc(nchunks, sizeof *out->c);
    out->gpu = calloc(j->n, sizeof *out->gpu);
    out->syncs = calloc(j->n, sizeof *out->syncs);
    out->io = calloc(j->n, sizeof *out->io);
    out->colls = calloc(j->n, sizeof *out->colls);
    out->clocks = calloc(nchunks, sizeof *out->clocks);
    ck_assert(out->c && out->gpu && out->syncs && out->io && out->colls && out->clocks);
    size_t ng = 0, ns = 0, ni = 0, nc = 0;
    for (size_t k = 0; k < nchunks; k++) {
        struct rsf_chunk *c = &out->c[k];
        c->seq = (uint32_t)k;
        c->strings_base = 1;
        if (k == 0) {
            c->meta = &meta;
            c->strings = strs + 1;
            c->nstrings = S_N - 1;
            c->files = files;
            c->nfiles = 2;
            c->comms = &comm;
            c->ncomms = 1;
        } else {
            c->strings_base = S_N;
        }
        c->gpu = out->gpu + ng;
        c->syncs = out->syncs + ns;
        c->io = out->io + ni;
        c->colls = out->colls + nc;
        size_t end = (k + 1) * CHUNK_RECORDS < j->n ? (k + 1) * CHUNK_RECORDS : j->n;
        for (size_t i = k * CHUNK_RECORDS; i < end; i++) {
            switch (r[i].type) {
            case R_GPU: out->gpu[ng++] = r[i].u.gpu; c->ngpu++; break;
            case R_SYNC: out->syncs[ns++] = r[i].u.sync; c->nsyncs++; break;
            case R_IO: out->io[ni++] = r[i].u.io; c->nio++; break;
            default: out->colls[nc++] = r[i].u.coll; c->ncolls++; break;
            }
        }
        /* a clock pair per chunk, as the writer records them */
        out->clocks[k] = (struct rsf_clock_pair){ (uint64_t)r[end - 1].pos, (uint64_t)r[end - 1].pos + 7000 };
        c->clocks = &out->clocks[k];
        c->nclocks = 1;
        if (k == nchunks - 1) {
            c->end = true;
            c->counters = &counters;
        }
    }
    out->n = nchunks;
    free(r);
}

static void chunks_free(struct chunks *c)
{
    free(c->c), free(c->gpu), free(c->syncs), free(c->io), free(c->colls), free(c->clocks);
}

/* Writes the chunks as LZ4 frames, one chunk each, to a new file in path. */
static void chunks_write(const struct chunks *cs, char *path)
{
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    ck_assert(f != NULL);
    LZ4F_cctx *cctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    for (size_t k = 0; k < cs->n; k++) {
        size_t bound = rsf_chunk_bound(&cs->c[k]);
        uint8_t *enc = aligned_alloc(64, (bound + 63) & ~(size_t)63);
        ck_assert(enc != NULL);
        struct rsf_buf out = { enc, 0, bound };
        ck_assert_int_eq(rsf_chunk_encode(&cs->c[k], &out), 0);
        size_t cap = rsf_frame_bound(out.len);
        uint8_t *frame = malloc(cap);
        ck_assert(frame != NULL);
        size_t n = rsf_frame_compress(cctx, out.p, out.len, frame, cap);
        ck_assert(n > 0);
        ck_assert_uint_eq(fwrite(frame, 1, n, f), n);
        free(frame);
        free(enc);
    }
    LZ4F_freeCompressionContext(cctx);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- the truth, from the records ---- */

struct iv {
    int64_t s, e;
};

static int cmp_iv(const void *pa, const void *pb)
{
    const struct iv *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

/* Sorts v and merges overlapping intervals in place; returns how many remain. */
static size_t merge(struct iv *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_iv);
    size_t w = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].s <= v[w].e) {
            if (v[i].e > v[w].e)
                v[w].e = v[i].e;
        } else {
            v[++w] = v[i];
        }
    }
    return w + 1;
}

static int64_t total(const struct iv *v, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += v[i].e - v[i].s;
    return t;
}

/* Length of the intersection of two merged lists, walked side by side. */
static int64_t inter(const struct iv *a, size_t na, const struct iv *b, size_t nb)
{
    int64_t t = 0;
    size_t i = 0, k = 0;
    while (i < na && k < nb) {
        int64_t lo = a[i].s > b[k].s ? a[i].s : b[k].s, hi = a[i].e < b[k].e ? a[i].e : b[k].e;
        if (hi > lo)
            t += hi - lo;
        if (a[i].e < b[k].e)
            i++;
        else
            k++;
    }
    return t;
}

/* Busy time of merged list v inside [lo, hi). */
static int64_t within(const struct iv *v, size_t n, int64_t lo, int64_t hi)
{
    struct iv w = { lo, hi };
    return hi > lo ? inter(v, n, &w, 1) : 0;
}

struct top {
    int64_t s, e, launch;
    const char *name;
    int stream;
    int cls;
};

struct kstat {
    const char *name;
    int cls;
    uint64_t count, short_count;
    int64_t total, min, max;
};

struct truth {
    uint64_t n_ops, n_syncs, n_colls, n_compute, n_short;
    int64_t start, end, busy, compute, comm, mem, overlap, sync_blocked;
    int64_t host_wait, kernel_wait, other;
    uint64_t read_bytes, write_bytes, coll_bytes;
    int64_t read_ns, read_idle;
    struct kstat k[8];
    size_t nk;
    struct burst_truth {
        int64_t s, e, busy_s, busy_e;
        uint64_t bytes;
    } bursts[32];
    size_t n_bursts;
};

static int cmp_top(const void *pa, const void *pb)
{
    const struct top *a = pa, *b = pb;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    return (a->s > b->s) - (a->s < b->s);
}

static void truth_of(const struct job *j, struct truth *t)
{
    memset(t, 0, sizeof *t);
    struct top *ops = malloc(j->n * sizeof *ops);
    struct iv *all = malloc(j->n * sizeof *all), *comp = malloc(j->n * sizeof *comp);
    struct iv *cm = malloc(j->n * sizeof *cm), *mem = malloc(j->n * sizeof *mem), *rd = malloc(j->n * sizeof *rd);
    ck_assert(ops && all && comp && cm && mem && rd);
    size_t n = 0, nc = 0, ncm = 0, nm = 0, nr = 0;
    t->start = INT64_MAX;
    for (size_t i = 0; i < j->n; i++) {
        const struct rec *r = &j->r[i];
        if (r->type == R_GPU) {
            const struct rsf_gpu_event *e = &r->u.gpu;
            int cls = e->kind == RSF_GPU_MEMCPY ? RSR_GPU_MEMCPY : e->name == S_NCCL ? RSR_GPU_COMM : RSR_GPU_COMPUTE;
            ops[n++] = (struct top){ (int64_t)e->gpu_start_ns, (int64_t)e->gpu_end_ns, (int64_t)e->launch_ns,
                                     e->name ? strs[e->name] : "Memcpy HtoD", (int)e->stream, cls };
        } else if (r->type == R_COLL) {
            const struct rsf_coll_event *e = &r->u.coll;
            t->n_colls++;
            t->coll_bytes += e->bytes;
            if (r->lone) /* the loader gives it an op of its own, named as NCCL names the call */
                ops[n++] = (struct top){ (int64_t)e->gpu_start_ns, (int64_t)e->gpu_end_ns, (int64_t)e->launch_ns,
                                         "ncclAllReduce", (int)e->stream, RSR_GPU_COMM };
        } else if (r->type == R_SYNC) {
            t->n_syncs++;
            t->sync_blocked += (int64_t)r->u.sync.dur_ns;
        } else if (rsf_io_op_dir(r->u.io.op) == RSF_DIR_READ) {
            t->read_bytes += (uint64_t)r->u.io.result;
            rd[nr++] = (struct iv){ (int64_t)r->u.io.start_ns, (int64_t)(r->u.io.start_ns + r->u.io.dur_ns) };
        } else if (rsf_io_op_dir(r->u.io.op) == RSF_DIR_WRITE) {
            t->write_bytes += (uint64_t)r->u.io.result;
        }
    }
    t->n_ops = n;
    for (size_t i = 0; i < n; i++) {
        struct iv v = { ops[i].s, ops[i].e };
        all[i] = v;
        if (ops[i].cls == RSR_GPU_COMPUTE)
            comp[nc++] = v;
        else if (ops[i].cls == RSR_GPU_COMM)
            cm[ncm++] = v;
        else
            mem[nm++] = v;
        if (ops[i].s < t->start)
            t->start = ops[i].s;
        if (ops[i].e > t->end)
            t->end = ops[i].e;
        /* the kernel table, by name */
        size_t k = 0;
        while (k < t->nk && strcmp(t->k[k].name, ops[i].name) != 0)
            k++;
        if (k == t->nk) {
            ck_assert(k < sizeof t->k / sizeof t->k[0]);
            t->k[t->nk++] = (struct kstat){ ops[i].name, ops[i].cls, 0, 0, 0, INT64_MAX, 0 };
        }
        int64_t d = ops[i].e - ops[i].s;
        struct kstat *ks = &t->k[k];
        ks->count++;
        ks->total += d;
        ks->min = d < ks->min ? d : ks->min;
        ks->max = d > ks->max ? d : ks->max;
        if (ops[i].cls == RSR_GPU_COMPUTE) {
            t->n_compute++;
            if (d < 10 * US)
                ks->short_count++, t->n_short++;
        }
    }
    size_t na = merge(all, n);
    nc = merge(comp, nc);
    ncm = merge(cm, ncm);
    nm = merge(mem, nm);
    t->busy = total(all, na);
    t->compute = total(comp, nc);
    t->comm = total(cm, ncm);
    t->mem = total(mem, nm);
    t->overlap = inter(cm, ncm, comp, nc);
    /* HTA's gaps per stream, each op against the one before it there */
    qsort(ops, n, sizeof *ops, cmp_top);
    for (size_t i = 1; i < n; i++) {
        if (ops[i].stream != ops[i - 1].stream)
            continue;
        int64_t gap = ops[i].s - ops[i - 1].e;
        gap = gap < 0 ? 0 : gap;
        if (ops[i].launch > ops[i - 1].e)
            t->host_wait += gap;
        else if (gap < 30 * US)
            t->kernel_wait += gap;
        else
            t->other += gap;
    }
    /* reads: their union, and the part of it inside the GPU's span while
     * the GPU was idle */
    nr = merge(rd, nr);
    t->read_ns = total(rd, nr);
    for (size_t i = 0; i < nr; i++) {
        int64_t lo = rd[i].s > t->start ? rd[i].s : t->start, hi = rd[i].e < t->end ? rd[i].e : t->end;
        if (hi > lo)
            t->read_idle += (hi - lo) - within(all, na, lo, hi);
    }
    /* checkpoint bursts: the never-read path, from each open to the last
     * call before the next, with the GPU busy time before either end */
    for (size_t i = 0; i < j->n; i++) {
        const struct rec *r = &j->r[i];
        if (r->type != R_IO || r->u.io.file != F_CKPT)
            continue;
        int64_t s = (int64_t)r->u.io.start_ns, e = s + (int64_t)r->u.io.dur_ns;
        if (r->u.io.op == RSF_IO_OPEN) {
            ck_assert(t->n_bursts < sizeof t->bursts / sizeof t->bursts[0]);
            t->bursts[t->n_bursts++] = (struct burst_truth){ s, e, 0, 0, 0 };
        }
        struct burst_truth *b = &t->bursts[t->n_bursts - 1];
        if (e > b->e)
            b->e = e;
        if (r->u.io.op == RSF_IO_WRITE)
            b->bytes += (uint64_t)r->u.io.result;
    }
    for (size_t i = 0; i < t->n_bursts; i++) {
        t->bursts[i].busy_s = within(all, na, INT64_MIN / 2, t->bursts[i].s);
        t->bursts[i].busy_e = within(all, na, INT64_MIN / 2, t->bursts[i].e);
    }
    free(ops), free(all), free(comp), free(cm), free(mem), free(rd);
}

/* ---- the checks ---- */

static double fine_sum(const struct rsr_summary *s, int series)
{
    double v = 0;
    for (size_t i = 0; s->fine[series] && i < RSR_FINE_BINS; i++)
        v += s->fine[series][i];
    return v;
}

static void assert_near(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want) + 1e-6, "%s: got %.6f, want %.6f", what, got, want);
}

static const struct rsr_kernel_stat *kstat_of(const struct rsr_summary *s, const struct rsr_model *m,
                                              const char *name)
{
    for (size_t i = 0; i < s->kernels.n; i++)
        if (strcmp(rsr_model_str(m, s->kernels.stats[i].name), name) == 0)
            return &s->kernels.stats[i];
    return NULL;
}

/* The summary s (of model m) against the truth t. busy_exact: its GPU
 * unions are t's to the ns (else they are checked by the caller). */
static void check_truth(const struct rsr_summary *s, const struct rsr_model *m, const struct truth *t,
                        int busy_exact, const char *who)
{
    const struct rsr_gpu_breakdown *g = &s->gpu;
    ck_assert_msg(s->n_ops == t->n_ops, "%s: n_ops %llu, want %llu", who, (unsigned long long)s->n_ops,
                  (unsigned long long)t->n_ops);
    ck_assert_int_eq(g->start_ns, t->start);
    ck_assert_int_eq(g->end_ns, t->end);
    ck_assert_int_eq(g->span_ns, t->end - t->start);
    if (busy_exact) {
        ck_assert_msg(g->busy_ns == t->busy, "%s: busy %lld, want %lld", who, (long long)g->busy_ns,
                      (long long)t->busy);
        ck_assert_int_eq(g->idle_ns, t->end - t->start - t->busy);
        ck_assert_int_eq(g->compute_ns, t->compute);
        ck_assert_int_eq(g->non_compute_ns, t->end - t->start - t->compute - (t->end - t->start - t->busy));
        ck_assert_int_eq(g->comm_ns, t->comm);
        ck_assert_int_eq(g->memcpy_ns, t->mem);
        ck_assert_int_eq(g->overlap_ns, t->overlap);
        ck_assert_int_eq(g->exposed_comm_ns, t->comm - t->overlap);
        assert_near(g->idle_pct, 100.0 * (double)(t->end - t->start - t->busy) / (double)(t->end - t->start),
                    "idle_pct");
        assert_near(fine_sum(s, RSR_FINE_BUSY), (double)t->busy, "fine busy");
        ck_assert_int_eq(s->loading.read_idle_ns, t->read_idle);
        for (size_t i = 0; i < t->n_bursts; i++) {
            ck_assert_int_eq(s->bursts[i].busy_start_ns, t->bursts[i].busy_s);
            ck_assert_int_eq(s->bursts[i].busy_end_ns, t->bursts[i].busy_e);
        }
    }
    ck_assert_msg(g->host_wait_ns == t->host_wait && g->kernel_wait_ns == t->kernel_wait &&
                      g->other_idle_ns == t->other,
                  "%s: stream gaps host %lld kernel %lld other %lld, want %lld %lld %lld", who,
                  (long long)g->host_wait_ns, (long long)g->kernel_wait_ns, (long long)g->other_idle_ns,
                  (long long)t->host_wait, (long long)t->kernel_wait, (long long)t->other);
    /* the kernel table, name by name (string ids differ between loaders) */
    ck_assert_uint_eq(s->kernels.n, t->nk);
    for (size_t i = 0; i < t->nk; i++) {
        const struct rsr_kernel_stat *k = kstat_of(s, m, t->k[i].name);
        ck_assert_msg(k != NULL, "%s: no kernel %s", who, t->k[i].name);
        ck_assert_msg(k->count == t->k[i].count && k->total_ns == t->k[i].total, "%s: %s: %llu runs, %lld ns",
                      who, t->k[i].name, (unsigned long long)k->count, (long long)k->total_ns);
        ck_assert_int_eq(k->min_ns, t->k[i].min);
        ck_assert_int_eq(k->max_ns, t->k[i].max);
        ck_assert_int_eq(k->cls, t->k[i].cls);
        ck_assert_uint_eq(k->short_count, t->k[i].short_count);
    }
    ck_assert_uint_eq(s->kernels.n_compute, t->n_compute);
    ck_assert_uint_eq(s->kernels.n_short, t->n_short);
    /* host waits, reads, checkpoints, collectives */
    ck_assert_uint_eq(s->n_syncs, t->n_syncs);
    ck_assert_int_eq(s->sync_blocked_ns, t->sync_blocked);
    ck_assert_uint_eq(s->loading.read_bytes, t->read_bytes);
    ck_assert_int_eq(s->loading.read_ns, t->read_ns);
    assert_near(fine_sum(s, RSR_FINE_READ), (double)t->read_bytes, "fine read");
    assert_near(fine_sum(s, RSR_FINE_WRITE), (double)t->write_bytes, "fine write");
    assert_near(fine_sum(s, RSR_FINE_COMM), (double)t->coll_bytes, "fine comm");
    ck_assert_uint_eq(s->n_bursts, t->n_bursts);
    for (size_t i = 0; i < t->n_bursts; i++) {
        ck_assert_int_eq(s->bursts[i].start_ns, t->bursts[i].s);
        ck_assert_int_eq(s->bursts[i].end_ns, t->bursts[i].e);
        ck_assert_uint_eq(s->bursts[i].bytes, t->bursts[i].bytes);
        ck_assert_str_eq(rsr_model_str(m, s->bursts[i].path), strs[S_CKPT]);
    }
    ck_assert_uint_eq(s->n_colls, t->n_colls);
    ck_assert_uint_eq(s->n_keys, 1);
    ck_assert_uint_eq(s->keys[0].comm_id, COMM_ID);
    ck_assert_uint_eq(s->keys[0].bytes, COLL_BYTES);
    ck_assert_int_eq(s->keys[0].group_size, 2);
    ck_assert_int_eq(s->keys[0].op, RSR_COLL_ALLREDUCE);
}

/* The collectives of s against the records: one tuple per call with its
 * own GPU times, read with a cursor (in sequence order: one communicator). */
static void check_colls(const struct rsr_summary *s, const struct job *j)
{
    struct rsr_coll_cursor cur;
    rsr_coll_cursor_open(&cur, s);
    struct rsr_coll_tuple t;
    size_t k = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->r[i].type != R_COLL)
            continue;
        const struct rsf_coll_event *e = &j->r[i].u.coll;
        ck_assert_int_eq(rsr_coll_cursor_next(&cur, &t), 1);
        ck_assert_uint_eq(t.seq, e->seq);
        ck_assert_int_eq(t.start_ns, (int64_t)e->gpu_start_ns);
        ck_assert_int_eq(t.end_ns, (int64_t)e->gpu_end_ns);
        ck_assert_uint_eq(t.key, 0);
        k++;
    }
    ck_assert_int_eq(rsr_coll_cursor_next(&cur, &t), 0);
    ck_assert_uint_eq(k, s->n_colls);
}

/* What the two summaries hold besides the truth's figures: per-stream
 * gaps, data loading, fine bins bin by bin. */
static void check_same(const struct rsr_summary *a, const struct rsr_summary *b)
{
    ck_assert_uint_eq(a->gpu.n_streams, b->gpu.n_streams);
    for (size_t i = 0; i < a->gpu.n_streams; i++) {
        const struct rsr_stream_idle *x = &a->gpu.streams[i], *y = &b->gpu.streams[i];
        ck_assert_int_eq(x->stream, y->stream);
        ck_assert_uint_eq(x->ops, y->ops);
        ck_assert_int_eq(x->host_wait_ns, y->host_wait_ns);
        ck_assert_int_eq(x->kernel_wait_ns, y->kernel_wait_ns);
        ck_assert_int_eq(x->other_ns, y->other_ns);
    }
    ck_assert_int_eq(a->fine_start_ns, b->fine_start_ns);
    ck_assert_int_eq(a->fine_bin_ns, b->fine_bin_ns);
    for (int k = 0; k < RSR_FINE_NSERIES; k++) {
        /* a series may be left out (SM activity without launch geometry): by both */
        ck_assert_msg((a->fine[k] == NULL) == (b->fine[k] == NULL), "fine series %d kept by one only", k);
        for (size_t i = 0; a->fine[k] && i < RSR_FINE_BINS; i++)
            ck_assert_msg(fabs(a->fine[k][i] - b->fine[k][i]) <= 1e-9 * fabs(b->fine[k][i]) + 1e-6,
                          "fine series %d bin %zu: %f vs %f", k, i, a->fine[k][i], b->fine[k][i]);
    }
}

/* The file summarised both ways: (stream, whole), each with its model. */
struct both {
    struct rsr_input st, wh;
    const struct rsr_summary *s, *w;
};

static void load_both(const char *path, struct both *b)
{
    rsr_input_stream(&b->st, path);
    ck_assert_int_eq(b->st.open_failed, 0);
    ck_assert(!b->st.model_incomplete);
    ck_assert(b->st.walk.saw_end);
    b->s = b->st.model->sum;
    ck_assert(b->s != NULL);
    /* streamed: the model keeps no records */
    ck_assert_uint_eq(b->st.model->n_ops + b->st.model->n_io + b->st.model->n_syncs + b->st.model->n_colls, 0);
    rsr_input_load(&b->wh, path);
    ck_assert_int_eq(b->wh.open_failed, 0);
    ck_assert(!b->wh.model_incomplete);
    ck_assert_int_eq(rsr_model_summarize(b->wh.model), 0);
    b->w = b->wh.model->sum;
}

static void free_both(struct both *b)
{
    rsr_input_free(&b->st);
    rsr_input_free(&b->wh);
}

/* Feeds the chunks straight to a streaming loader and says how often its
 * window shrank (a drain settled records) and how large it grew. */
static void window_trace(const struct chunks *cs, int *drains, size_t *most)
{
    struct rsr_model m;
    rsr_model_init(&m);
    struct rsr_model_loader L;
    rsr_model_loader_init(&L, &m);
    rsr_model_loader_stream(&L);
    char *const *sv = (char *const *)strs;
    size_t prev = 0;
    *drains = 0, *most = 0;
    for (size_t k = 0; k < cs->n; k++) {
        ck_assert_int_eq(rsr_model_loader_chunk(&L, &cs->c[k], sv, S_N), 0);
        size_t w = m.n_ops + m.n_io + m.n_syncs + m.n_colls;
        *drains += w < prev;
        *most = w > *most ? w : *most;
        prev = w;
    }
    rsr_model_loader_finish(&L);
    ck_assert(m.sum != NULL);
    rsr_summary_free(m.sum);
    free(m.sum);
    m.sum = NULL;
    rsr_model_free(&m);
}

/* 12,000 steps (24 s, about 218,000 records: more than three windows), in
 * start order: several drains, nothing late, the same figures both ways and
 * the truth's. */
START_TEST(stream_equals_whole_in_order)
{
    struct job j = { .seed = 0x9e3779b97f4a7c15ull };
    gen_steps(&j, 12000);
    ck_assert_uint_gt(j.n, 3 * RSR_STREAM_WINDOW);
    struct chunks cs;
    chunks_make(&j, &cs);
    int drains;
    size_t most;
    window_trace(&cs, &drains, &most);
    ck_assert_int_ge(drains, 3);
    ck_assert_uint_lt(most, RSR_STREAM_WINDOW + CHUNK_RECORDS);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    struct truth t;
    truth_of(&j, &t);
    struct both b;
    load_both(path, &b);
    ck_assert_uint_eq(b.s->late, 0);
    ck_assert_uint_eq(b.st.model->late, 0);
    check_truth(b.s, b.st.model, &t, 1, "stream");
    check_truth(b.w, b.wh.model, &t, 1, "whole");
    check_colls(b.s, &j);
    check_colls(b.w, &j);
    check_same(b.s, b.w);
    free_both(&b);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

/* The same job with records that reach the file after later ones, by less
 * than the lateness (1.5 s and 2.5 s; kernels, the collective records,
 * syncs and reads among them): none late, the same figures. */
START_TEST(stream_equals_whole_out_of_order)
{
    struct job j = { .seed = 0x2545f4914f6cdd1dull };
    gen_steps(&j, 12000);
    size_t moved = 0;
    int moved_type[4] = { 0 };
    for (size_t i = 0; i < j.n; i++) {
        int64_t d = i % 101 == 7 ? 3 * SEC / 2 : i % 307 == 11 ? 5 * SEC / 2 : 0;
        j.r[i].pos += d;
        moved += d > 0;
        moved_type[j.r[i].type] += d > 0;
    }
    ck_assert_uint_gt(moved, 2000);
    for (int k = 0; k < 4; k++)
        ck_assert_int_gt(moved_type[k], 0);
    struct chunks cs;
    chunks_make(&j, &cs);
    int drains;
    size_t most;
    window_trace(&cs, &drains, &most);
    ck_assert_int_ge(drains, 3);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    struct truth t;
    truth_of(&j, &t);
    struct both b;
    load_both(path, &b);
    ck_assert_uint_eq(b.s->late, 0);
    ck_assert_uint_eq(b.st.model->late, 0);
    check_truth(b.s, b.st.model, &t, 1, "stream");
    check_truth(b.w, b.wh.model, &t, 1, "whole");
    check_colls(b.s, &j);
    check_colls(b.w, &j);
    check_same(b.s, b.w);
    free_both(&b);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

/* The first compute kernel of stream 7 that starts at or after t and runs
 * at least min_dur. */
static const struct rsf_gpu_event *kernel_at(const struct job *j, int64_t t, int64_t min_dur)
{
    for (size_t i = 0; i < j->n; i++) {
        const struct rsf_gpu_event *e = &j->r[i].u.gpu;
        if (j->r[i].type == R_GPU && e->stream == 7 && (int64_t)e->gpu_start_ns >= t &&
            (int64_t)(e->gpu_end_ns - e->gpu_start_ns) >= min_dur)
            return e;
    }
    ck_abort_msg("no kernel at %lld", (long long)t);
    return NULL;
}

/* A kernel alone on its stream inside the busy time of kernel k, written
 * `delay` after its start. (Alone: a late record is summed where the
 * stream was, so the gap after it on its stream would change.) */
static void add_late_inside(struct job *j, const struct rsf_gpu_event *k, uint64_t stream, int64_t delay)
{
    int64_t s = (int64_t)k->gpu_start_ns + 5 * US;
    struct rec *r = add_gpu(j, s - 20 * US, s, s + 12 * US, stream, S_LATE, RSF_GPU_KERNEL);
    r->pos = s + delay;
}

/* One kernel written 10 s after it started (later than the lateness),
 * inside time the GPU was busy anyway; then, after the lateness grew, a
 * second one 10 s late: the first counted late once, the second not at
 * all, and every figure the truth's (the late kernel in the kernel table,
 * the busy time whole). */
START_TEST(late_record_counted_once)
{
    struct job j = { .seed = 0xda942042e4dd58b5ull };
    gen_steps(&j, 14000);
    /* copy what kernel_at points into: add() may move the records */
    struct rsf_gpu_event k1 = *kernel_at(&j, T0 + 4 * SEC, 30 * US);
    struct rsf_gpu_event k2 = *kernel_at(&j, T0 + 16 * SEC, 30 * US);
    add_late_inside(&j, &k1, 13, 10 * SEC);
    add_late_inside(&j, &k2, 14, 10 * SEC);
    struct chunks cs;
    chunks_make(&j, &cs);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    struct truth t;
    truth_of(&j, &t);
    struct both b;
    load_both(path, &b);
    ck_assert_uint_eq(b.s->late, 1);
    ck_assert_uint_eq(b.st.model->late, 1);
    ck_assert_uint_eq(b.w->late, 0);
    check_truth(b.s, b.st.model, &t, 1, "stream");
    check_truth(b.w, b.wh.model, &t, 1, "whole");
    const struct rsr_kernel_stat *ls = kstat_of(b.s, b.st.model, "late_kernel");
    ck_assert(ls != NULL);
    ck_assert_uint_eq(ls->count, 2);
    ck_assert_int_eq(ls->total_ns, 24 * US);
    check_colls(b.s, &j);
    free_both(&b);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

/* A kernel written 10 s late that ran while the GPU was otherwise idle:
 * counted late once, kept in the op count and the kernel table in full;
 * summed "as if it started" where the stream was (summary.h), so the busy
 * time may lose at most that kernel's own length, and nothing else. */
START_TEST(late_record_in_idle_gap)
{
    struct job j = { .seed = 0x8bb84b93962eacc9ull };
    gen_steps(&j, 8000);
    struct truth before;
    truth_of(&j, &before);
    /* an idle gap near 4 s: after a step's work, before the next step */
    int64_t gs = T0 + 2000 * STEP + 1900 * US;
    const struct rsf_gpu_event *next = kernel_at(&j, gs, 0);
    ck_assert_int_gt((int64_t)next->gpu_start_ns - gs, 30 * US);
    struct rec *r = add_gpu(&j, gs - 10 * US, gs, gs + 20 * US, 13, S_LATE, RSF_GPU_KERNEL);
    r->pos = gs + 10 * SEC;
    struct chunks cs;
    chunks_make(&j, &cs);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    struct truth t;
    truth_of(&j, &t);
    ck_assert_int_eq(t.busy, before.busy + 20 * US); /* the gap was idle */
    struct both b;
    load_both(path, &b);
    ck_assert_uint_eq(b.s->late, 1);
    ck_assert_uint_eq(b.st.model->late, 1);
    check_truth(b.s, b.st.model, &t, 0, "stream");
    check_truth(b.w, b.wh.model, &t, 1, "whole");
    ck_assert_int_ge(b.s->gpu.busy_ns, t.busy - 20 * US);
    ck_assert_int_le(b.s->gpu.busy_ns, t.busy);
    ck_assert_int_ge(b.s->gpu.compute_ns, t.compute - 20 * US);
    ck_assert_int_le(b.s->gpu.compute_ns, t.compute);
    ck_assert_int_eq(b.s->gpu.comm_ns, t.comm);
    ck_assert_int_eq(b.s->gpu.memcpy_ns, t.mem);
    const struct rsr_kernel_stat *ls = kstat_of(b.s, b.st.model, "late_kernel");
    ck_assert(ls != NULL);
    ck_assert_uint_eq(ls->count, 1);
    ck_assert_int_eq(ls->total_ns, 20 * US);
    free_both(&b);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

/* rsr_input_load_window keeps the records that overlap [from, to] (a GPU
 * record from its launch to the later of its GPU end and its call's end)
 * and counts the GPU records, syncs and I/O calls it left out; a
 * collective kept whose kernel record was not gets an op of its own. */
START_TEST(window_keeps_what_overlaps)
{
    struct job j = { .seed = 0x123456789abcdefull };
    gen_steps(&j, 4000);
    struct chunks cs;
    chunks_make(&j, &cs);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    const int64_t from = T0 + 3 * SEC + 123457, to = T0 + 5 * SEC + 1611111;
    uint64_t launches = 0, ops = 0, syncs = 0, io = 0, colls = 0, lone = 0, out = 0;
    for (size_t i = 0; i < j.n; i++) {
        const struct rec *r = &j.r[i];
        int64_t s, e;
        if (r->type == R_GPU) {
            s = (int64_t)r->u.gpu.launch_ns;
            e = (int64_t)r->u.gpu.gpu_end_ns > s + 3000 ? (int64_t)r->u.gpu.gpu_end_ns : s + 3000;
        } else if (r->type == R_COLL) {
            s = (int64_t)r->u.coll.launch_ns;
            e = (int64_t)r->u.coll.gpu_end_ns;
        } else if (r->type == R_SYNC) {
            s = (int64_t)r->u.sync.start_ns;
            e = s + (int64_t)r->u.sync.dur_ns;
        } else {
            s = (int64_t)r->u.io.start_ns;
            e = s + (int64_t)r->u.io.dur_ns;
        }
        int in = e >= from && s <= to;
        if (r->type == R_COLL) {
            colls += in;
            lone += in && r->lone; /* the kernel of the others is kept with it (same launch) */
            ops += in && r->lone;
            continue;
        }
        out += !in;
        launches += in && r->type == R_GPU;
        ops += in && r->type == R_GPU;
        syncs += in && r->type == R_SYNC;
        io += in && r->type == R_IO;
    }
    ck_assert_uint_gt(ops, 1000);
    ck_assert_uint_gt(out, 1000);
    struct rsr_input in;
    rsr_input_load_window(&in, path, from, to);
    ck_assert(in.model != NULL);
    /* a launch per GPU record kept, and one for each op made for a collective */
    ck_assert_uint_eq(in.model->n_launches, launches + lone);
    ck_assert_uint_eq(in.model->n_ops, ops);
    ck_assert_uint_eq(in.model->n_syncs, syncs);
    ck_assert_uint_eq(in.model->n_io, io);
    ck_assert_uint_eq(in.model->n_colls, colls);
    ck_assert_uint_eq(in.loader.left_out, out);
    for (size_t i = 0; i < in.model->n_ops; i++)
        ck_assert(in.model->ops[i].end_ns >= from - 3000 && in.model->ops[i].start_ns <= to);
    rsr_input_free(&in);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

/* Every third collective on a second communicator, its calls numbered on
 * their own. */
static void two_comms(struct job *j)
{
    uint32_t seq[2] = { 0, 0 };
    size_t k = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->r[i].type != R_COLL)
            continue;
        int c = k++ % 3 == 2;
        j->r[i].u.coll.comm = COMM_ID + (uint64_t)c;
        j->r[i].u.coll.seq = seq[c]++;
    }
}

/* path streamed with at most run_max tuples and marks in memory. */
static void stream_runs(struct rsr_input *in, const char *path, size_t run_max)
{
    memset(in, 0, sizeof *in);
    rsr_summary_run_max(run_max);
    rsr_input_stream(in, path);
    rsr_summary_run_max((size_t)1 << 17);
    ck_assert_int_eq(in->open_failed, 0);
    ck_assert(!in->model_incomplete);
    ck_assert(in->model->sum != NULL);
}

/* A job summarised with its tuples and marks spilled as runs every few
 * hundred (rsr_summary_run_max): the truth's figures and one tuple per
 * call, in order; then with every third collective on a second
 * communicator, against the same summarised in memory: the tuples in
 * (communicator, sequence) order and every tuple and mark the same. */
START_TEST(spilled_runs_equal_memory)
{
    struct job j = { .seed = 0x243f6a8885a308d3ull };
    gen_steps(&j, 12000);
    struct truth t;
    truth_of(&j, &t);
    struct chunks cs;
    chunks_make(&j, &cs);
    char path[] = "/tmp/rs_test_stream_XXXXXX";
    chunks_write(&cs, path);
    struct rsr_input run, mem;
    stream_runs(&run, path, 256);
    ck_assert(run.model->sum->spilled && run.model->sum->marks_spilled);
    check_truth(run.model->sum, run.model, &t, 1, "runs");
    check_colls(run.model->sum, &j);
    rsr_input_free(&run);
    unlink(path);
    chunks_free(&cs);

    two_comms(&j);
    chunks_make(&j, &cs);
    strcpy(path, "/tmp/rs_test_stream_XXXXXX");
    chunks_write(&cs, path);
    stream_runs(&run, path, 256);
    stream_runs(&mem, path, (size_t)1 << 30);
    const struct rsr_summary *a = run.model->sum, *b = mem.model->sum;
    ck_assert(a->spilled && a->marks_spilled);
    size_t colls = 0;
    for (size_t i = 0; i < j.n; i++)
        colls += j.r[i].type == R_COLL;
    ck_assert_uint_eq(a->n_colls, colls);
    ck_assert_uint_eq(b->n_colls, colls);
    ck_assert_uint_eq(a->n_cmarks, b->n_cmarks);
    ck_assert_uint_eq(a->n_keys, 2);
    ck_assert_uint_eq(b->n_keys, 2);
    struct rsr_coll_cursor ca, cb;
    rsr_coll_cursor_open(&ca, a);
    rsr_coll_cursor_open(&cb, b);
    struct rsr_coll_tuple x, y;
    uint64_t last_comm = 0;
    long long last_seq = -1;
    for (size_t i = 0; i < colls; i++) {
        ck_assert_int_eq(rsr_coll_cursor_next(&ca, &x), 1);
        ck_assert_int_eq(rsr_coll_cursor_next(&cb, &y), 1);
        uint64_t cid = a->keys[x.key].comm_id;
        if (cid != last_comm)
            last_seq = -1;
        ck_assert_msg(cid >= last_comm && (long long)x.seq == last_seq + 1, "tuple %zu out of order", i);
        last_comm = cid, last_seq = x.seq;
        ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "tuple %zu differs", i);
    }
    ck_assert_int_eq(rsr_coll_cursor_next(&ca, &x), 0);
    struct rsr_step_mark ma[64], mb[64];
    for (size_t i = 0; i < a->n_cmarks; i += 64) {
        size_t k = a->n_cmarks - i < 64 ? a->n_cmarks - i : 64;
        ck_assert_int_eq(rsr_summary_cmarks_read(a, i, k, ma), 0);
        ck_assert_int_eq(rsr_summary_cmarks_read(b, i, k, mb), 0);
        for (size_t q = 0; q < k; q++) {
            ck_assert_msg(q == 0 || ma[q].t >= ma[q - 1].t, "mark %zu out of order", i + q);
            ck_assert_msg(memcmp(&ma[q], &mb[q], sizeof ma[q]) == 0, "mark %zu differs", i + q);
        }
    }
    rsr_input_free(&run);
    rsr_input_free(&mem);
    unlink(path);
    chunks_free(&cs);
    free(j.r);
}
END_TEST

static Suite *stream_suite(void)
{
    const struct rs_test tests[] = {
        { "stream_equals_whole_in_order", stream_equals_whole_in_order },
        { "stream_equals_whole_out_of_order", stream_equals_whole_out_of_order },
        { "stream_late_record_counted_once", late_record_counted_once },
        { "stream_late_record_in_idle_gap", late_record_in_idle_gap },
        { "stream_window_keeps_what_overlaps", window_keeps_what_overlaps },
        { "stream_spilled_runs_equal_memory", spilled_runs_equal_memory },
    };
    return RS_SUITE("stream", tests, 60);
}

RS_CHECK_MAIN(stream_suite)
