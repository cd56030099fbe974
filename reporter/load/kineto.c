/* PyTorch profiler (Kineto) trace -> reporter GPU timeline (model.h).
 * A reader thread inflates the file in fixed-size pieces (ISA-L where it is
 * there, else zlib, which reads plain JSON too) while this thread feeds them
 * to yajl's callback parser; a small state machine picks the fields of
 * traceEvents and distributedInfo that the model holds and skips the rest,
 * so memory grows with the GPU work kept, not with the size of the file.
 * Kernels' launch geometry and the GPUs' "deviceProperties" give each kernel
 * its occupancy figures (occupancy.h), as the agent's own files do. */
#include "reporter/load/kineto.h"
#include "reporter/base/isal.h"
#include "formats/trace.h"
#include "reporter/load/occupancy.h"
#include "reporter/load/process.h"
#include "reporter/base/array.h"
#include "reporter/base/table.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <isa-l/igzip_lib.h>
#include <yajl/yajl_parse.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <zlib.h>

#define READ_CHUNK (256 * 1024)

/* Where the parser is in the document. Kineto's layout is fixed, so the
 * level alone says what the enclosing containers are. */
enum level {
    L_NONE, L_TOP, L_EVENTS, L_EVENT, L_ARGS, L_DIMS, L_DIST, L_RS, L_RS_PROCS, L_RS_PROC,
    L_DEVS, L_DEV, L_END
};

enum top_key { T_OTHER, T_EVENTS, T_DIST, T_BASE_TIME, T_RINGSIDE, T_DEVICES };
enum rs_key { R_OTHER, R_PROCESSES };
enum proc_key { P_OTHER, P_PID, P_RANK, P_WORLD, P_OS_PID, P_WALL_START, P_WALL_END };
enum dist_key { D_OTHER, D_RANK, D_WORLD };
enum ev_key { E_OTHER, E_NAME, E_CAT, E_PID, E_TID, E_TS, E_DUR, E_ARGS };
enum arg_key {
    A_OTHER, A_STREAM, A_DEVICE, A_CORR, A_BYTES, A_COLL, A_IN_NELEMS,
    A_OUT_NELEMS, A_GROUP_SIZE, A_DTYPE, A_PG_NAME, A_PG_RANKS, A_COMM_ID, A_SEQ,
    A_GRID, A_BLOCK, A_REGS, A_SMEM
};
/* Keys of a "deviceProperties" entry, Kineto's names for cudaDeviceProp's. */
enum dev_key {
    V_OTHER, V_ID, V_NAME, V_CC_MAJOR, V_CC_MINOR, V_SMS, V_THREADS_SM, V_REGS_SM, V_SMEM_SM,
    V_THREADS_BLOCK, V_REGS_BLOCK, V_SMEM_OPTIN, V_WARP
};
enum ev_cat { C_OTHER, C_CPU_OP, C_KERNEL, C_MEMCPY, C_MEMSET, C_LAUNCH };

/* The traceEvents entry being read; reset at each '{'. */
struct event {
    char *name;
    size_t name_len, name_cap;
    enum ev_cat cat;
    bool has_ts, has_dur, has_pid, has_tid, has_stream, has_corr, has_coll;
    bool foreign;           /* a process the trace's process list lacks */
    int64_t ts_ns, dur_ns, pid, tid, stream, device, corr, group_size;
    uint64_t bytes, in_nelems, out_nelems;
    enum rsr_coll_op coll_op;
    uint32_t dtype, pg_name, pg_ranks;
    /* Written by rsr_perfetto_write for a ringside file's collectives. */
    bool has_comm_id;
    uint64_t comm_id;
    uint32_t seq;
    /* A kernel's launch geometry: "grid", "block" (dims[0], dims[1]; ndims
     * counts the numbers read of each), "registers per thread", "shared
     * memory" (static + dynamic, per block). */
    int64_t dims[2][3];
    uint8_t ndims[2];
    int dim;                /* which of dims the L_DIMS array fills */
    bool bad_dims;          /* a dimension out of range: no geometry */
    int64_t regs, smem;
};

/* A GPU of "deviceProperties"; its name goes into each model at the end. */
struct kdevice {
    struct rsf_device d;
    char name[96];
};

/* Functions (name, registers, shared memory) and launches (function, grid,
 * block) are kept once per model (rsr_model.functions, .geoms), found
 * again through a hash table (table.h) of references to them: a parse may
 * fill several models (a job's trace from rsr_perfetto_write). */
struct geom_ref {
    const struct rsr_model *m;
    uint32_t hash, index;   /* index + 1 in m's functions or geoms */
};

struct geom_table {
    struct geom_ref *refs;
    size_t n, cap;
    struct rsr_table table;     /* a reference's hash -> its place in refs */
};

struct parser {
    struct rsr_model *m;
    enum level level;
    bool events_top;        /* the document is a bare array of events */
    bool saw_events;
    int skip;               /* > 0: inside a value being skipped, its depth */
    int key;                /* the key just read, in the current level's enum */
    struct event ev;
    uint32_t first_step;    /* name id of the first profiler step seen */
    bool many_steps;        /* a second, different step was seen */
    bool ringside;          /* written by ringside (rsr_perfetto_write): its steps are those kept already */
    int64_t last_step_ns;   /* start of the latest step */
    struct rsr_kineto_info info;
    uint64_t run_off;       /* file offset of the text being parsed */
    uint64_t pid_off;       /* file offset of the element that gave the model its pid */
    /* A job's trace from rsr_perfetto_write: its processes, one model each
     * (models[0] is the caller's); only read when want_procs. */
    bool want_procs;
    struct rsr_kineto_proc proc;    /* the entry being read */
    struct rsr_kineto_proc *procs;
    struct rsr_model **models;
    size_t nprocs, cap_procs;
    struct kdevice dev;     /* the deviceProperties entry being read */
    struct kdevice *devs;
    size_t ndevs, cap_devs;
    struct geom_table funcs, launches;
    int err;                /* set when a callback stops the parse */
    char what[96];
};

const char *rsr_kineto_strerror(int err)
{
    static const char *const messages[] = {
#define RSR_KINETO_ERR_MSG(name, msg) msg,
        RSR_KINETO_ERRORS(RSR_KINETO_ERR_MSG)
#undef RSR_KINETO_ERR_MSG
    };
    if (err < 0 || (size_t)err >= sizeof messages / sizeof messages[0])
        return "unknown error";
    return messages[err];
}

static bool eq(const unsigned char *s, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* Stops the parse with our own error; yajl then reports "canceled". */
static int fail(struct parser *p, int err, const char *what)
{
    p->err = err;
    snprintf(p->what, sizeof p->what, "%s", what);
    return 0;
}

/* Microseconds as JSON writes them ("1661938466265032", "4458676981028.392",
 * "68.0", "1.5e3") to nanoseconds: exact for up to three decimals, the
 * digits beyond a nanosecond dropped. False when out of range. */
static bool parse_us(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool neg = len > 0 && s[0] == '-';
    if (neg)
        i++;
    int64_t whole = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (whole > (INT64_MAX / 1000 - 9) / 10)
            return false;
        whole = whole * 10 + (s[i] - '0');
    }
    int64_t frac = 0;
    int nfrac = 0;
    if (i < len && s[i] == '.')
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
            if (nfrac < 3) {
                frac = frac * 10 + (s[i] - '0');
                nfrac++;
            }
    if (i < len) {
        /* An exponent: rare enough to go through strtod. */
        char buf[64];
        if (len >= sizeof buf)
            return false;
        memcpy(buf, s, len);
        buf[len] = '\0';
        double ns = strtod(buf, NULL) * 1000.0;
        if (!(ns > -9.2e18 && ns < 9.2e18))
            return false;
        *out = (int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5);
        return true;
    }
    for (; nfrac < 3; nfrac++)
        frac *= 10;
    *out = neg ? -(whole * 1000 + frac) : whole * 1000 + frac;
    return true;
}

/* An integer ("7", "-1", "2.0"); a fraction, if any, is dropped. False
 * when it has no digits or does not fit. */
static bool parse_int(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    bool neg = len > 0 && s[0] == '-';
    if (neg)
        i++;
    if (i == len || s[i] < '0' || s[i] > '9')
        return false;
    int64_t v = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

/* Round down / up to a whole microsecond, for negative times too. */
static int64_t floor_us(int64_t ns)
{
    return ns >= 0 ? ns / 1000 * 1000 : -((-ns + 999) / 1000 * 1000);
}

static int64_t ceil_us(int64_t ns)
{
    return -floor_us(-ns);
}

/* Bytes per element of PyTorch's scalar types, as Kineto names them. */
static uint32_t dtype_size(const char *t)
{
    static const struct { const char *name; uint32_t size; } sizes[] = {
        { "Float", 4 }, { "Half", 2 }, { "BFloat16", 2 }, { "Double", 8 },
        { "Int", 4 }, { "Long", 8 }, { "Short", 2 }, { "Char", 1 },
        { "Byte", 1 }, { "Bool", 1 }, { "ComplexHalf", 4 },
        { "ComplexFloat", 8 }, { "ComplexDouble", 16 }, { "UInt16", 2 },
        { "UInt32", 4 }, { "UInt64", 8 },
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(t, sizes[i].name) == 0)
            return sizes[i].size;
    if (strncmp(t, "Float8", 6) == 0)
        return 1;
    return 0;
}

static enum ev_cat parse_cat(const unsigned char *s, size_t len)
{
    /* The lower-case names are Kineto's; the capitalised ones are what
     * PyTorch 1.8-1.9 wrote. */
    if (eq(s, len, "kernel") || eq(s, len, "Kernel"))
        return C_KERNEL;
    if (eq(s, len, "gpu_memcpy") || eq(s, len, "Memcpy"))
        return C_MEMCPY;
    if (eq(s, len, "gpu_memset") || eq(s, len, "Memset"))
        return C_MEMSET;
    if (eq(s, len, "cuda_runtime") || eq(s, len, "cuda_driver") || eq(s, len, "Runtime"))
        return C_LAUNCH;
    if (eq(s, len, "cpu_op") || eq(s, len, "Operator"))
        return C_CPU_OP;
    return C_OTHER;
}

/* The key's meaning at this level. Keys are compared by length first: most
 * keys of most events match nothing, and this runs for every one of them. */
static int key_of(enum level level, const unsigned char *s, size_t len)
{
#define KEY(lit, val) if (len == sizeof lit - 1 && memcmp(s, lit, len) == 0) return val
    switch (level) {
    case L_TOP:
        KEY("traceEvents", T_EVENTS);
        KEY("distributedInfo", T_DIST);
        KEY("baseTimeNanoseconds", T_BASE_TIME);
        KEY("ringside", T_RINGSIDE);
        KEY("deviceProperties", T_DEVICES);
        return T_OTHER;
    case L_RS:
        KEY("processes", R_PROCESSES);
        return R_OTHER;
    case L_RS_PROC:
        KEY("pid", P_PID);
        KEY("rank", P_RANK);
        KEY("world_size", P_WORLD);
        KEY("os_pid", P_OS_PID);
        KEY("wall_start_ns", P_WALL_START);
        KEY("wall_end_ns", P_WALL_END);
        return P_OTHER;
    case L_DIST:
        KEY("rank", D_RANK);
        KEY("world_size", D_WORLD);
        return D_OTHER;
    case L_DEV:
        switch (len) {
        case 2: KEY("id", V_ID); break;
        case 4: KEY("name", V_NAME); break;
        case 6: KEY("numSms", V_SMS); break;
        case 8: KEY("warpSize", V_WARP); break;
        case 12: KEY("computeMajor", V_CC_MAJOR); KEY("computeMinor", V_CC_MINOR);
                 KEY("regsPerBlock", V_REGS_BLOCK); break;
        case 18: KEY("maxThreadsPerBlock", V_THREADS_BLOCK); break;
        case 21: KEY("regsPerMultiprocessor", V_REGS_SM); break;
        case 22: KEY("sharedMemPerBlockOptin", V_SMEM_OPTIN); break;
        case 26: KEY("sharedMemPerMultiprocessor", V_SMEM_SM); break;
        case 27: KEY("maxThreadsPerMultiprocessor", V_THREADS_SM); break;
        default: break;
        }
        return V_OTHER;
    case L_EVENT:
        switch (len) {
        case 2: KEY("ts", E_TS); break;
        case 3: KEY("cat", E_CAT); KEY("dur", E_DUR); KEY("pid", E_PID); KEY("tid", E_TID); break;
        case 4: KEY("name", E_NAME); KEY("args", E_ARGS); break;
        default: break;
        }
        return E_OTHER;
    case L_ARGS:
        switch (len) {
        case 4: KEY("grid", A_GRID); break;
        case 5: KEY("bytes", A_BYTES); KEY("dtype", A_DTYPE); KEY("block", A_BLOCK); break;
        case 6: KEY("stream", A_STREAM); KEY("device", A_DEVICE); break;
        case 10: KEY("Group size", A_GROUP_SIZE); break;
        case 11: KEY("correlation", A_CORR); break;
        case 13: KEY("In msg nelems", A_IN_NELEMS); KEY("shared memory", A_SMEM); break;
        case 14: KEY("Out msg nelems", A_OUT_NELEMS); KEY("Collective seq", A_SEQ); break;
        case 15: KEY("Collective name", A_COLL); KEY("Communicator id", A_COMM_ID); break;
        case 18: KEY("Process Group Name", A_PG_NAME); break;
        case 19: KEY("Process Group Ranks", A_PG_RANKS); break;
        case 20: KEY("registers per thread", A_REGS); break;
        default: break;
        }
        return A_OTHER;
    default:
        return 0;
    }
#undef KEY
}

/* A word into a hash (a multiply and a shift: this runs for every kernel). */
static uint32_t mix(uint32_t h, uint32_t v)
{
    h = (h ^ v) * 0x9e3779b1u;
    return h ^ (h >> 15);
}

/* The hash of model m's key of n words. */
static uint32_t key_hash(const struct rsr_model *m, const uint32_t *w, size_t n)
{
    uintptr_t a = (uintptr_t)m;
    uint32_t h = mix(mix(0, (uint32_t)a), (uint32_t)(a >> 16 >> 16));
    for (size_t i = 0; i < n; i++)
        h = mix(h, w[i]);
    return h;
}

static uint64_t ref_hash(const void *ctx, size_t i)
{
    return ((const struct geom_table *)ctx)->refs[i].hash;
}

/* The function f (or, f NULL, the launch l) of model m in t: its index + 1,
 * or 0 with *p where it goes (geom_add). */
static uint32_t geom_find(const struct geom_table *t, const struct rsr_model *m, uint32_t hash,
                          const struct rsf_function *f, const struct rsf_launch *l, struct rsr_probe *p)
{
    *p = rsr_table_probe(&t->table, hash);
    for (long i; (i = rsr_table_next(&t->table, p)) >= 0;) {
        const struct geom_ref *r = &t->refs[i];
        if (r->hash != hash || r->m != m)
            continue;
        const struct rsf_function *g = f ? &m->functions[r->index - 1] : NULL;
        if (f ? g->name == f->name && g->regs == f->regs && g->static_smem == f->static_smem
              : memcmp(&m->geoms[r->index - 1], l, sizeof *l) == 0)
            return r->index;
    }
    return 0;
}

/* Keeps index (+ 1) of model m under hash, where geom_find said. Returns 0,
 * or -1 when out of memory. */
static int geom_add(struct geom_table *t, const struct rsr_model *m, uint32_t hash, uint32_t index,
                    const struct rsr_probe *p)
{
    if (RSR_GROW(t->refs, t->cap, t->n + 1, 256) != 0)
        return -1;
    t->refs[t->n] = (struct geom_ref){ m, hash, index };
    if (rsr_table_put(&t->table, p, t->n, 256, ref_hash, t) != 0)
        return -1;
    t->n++;
    return 0;
}

static void geom_free(struct geom_table *t)
{
    free(t->refs);
    rsr_table_free(&t->table);
}

/* A kernel's launch geometry as the event gives it, kept once per model:
 * its function (name, registers, shared memory as static, which is where
 * the occupancy calculator counts it too) and its launch (that function,
 * grid, block); op->launch_geom refers to the launch. */
static int add_geom(struct parser *p, struct rsr_gpu_op *op)
{
    const struct event *e = &p->ev;
    struct rsr_model *m = p->m;
    if (e->ndims[0] != 3 || e->ndims[1] != 3 || e->bad_dims || e->regs < 0 || e->regs > UINT16_MAX ||
        e->smem < 0 || e->smem > UINT32_MAX)
        return 1;
    struct rsf_function f = { .name = op->name, .static_smem = (uint32_t)e->smem,
                              .regs = (uint16_t)e->regs, .device = -1 };
    uint32_t h = key_hash(m, (const uint32_t[]){ f.name, f.regs, f.static_smem }, 3);
    struct rsr_probe at;
    uint32_t func = geom_find(&p->funcs, m, h, &f, NULL, &at);
    if (!func) {
        if (RSR_GROW(m->functions, m->cap_functions, m->n_functions + 1, 64) != 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "launch geometry");
        f.id = (uint32_t)++m->n_functions;
        m->functions[f.id - 1] = f;
        func = f.id;
        if (geom_add(&p->funcs, m, h, func, &at) != 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "launch geometry");
    }
    struct rsf_launch l = {
        .grid_x = (uint32_t)e->dims[0][0], .grid_y = (uint32_t)e->dims[0][1], .grid_z = (uint32_t)e->dims[0][2],
        .block_x = (uint16_t)e->dims[1][0], .block_y = (uint16_t)e->dims[1][1],
        .block_z = (uint16_t)e->dims[1][2], .func = func,
    };
    uint32_t words[sizeof l / 4];
    memcpy(words, &l, sizeof l);
    h = key_hash(m, words, sizeof l / 4);
    uint32_t geom = geom_find(&p->launches, m, h, NULL, &l, &at);
    if (!geom) {
        if (RSR_GROW(m->geoms, m->cap_geoms, m->n_geoms + 1, 64) != 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "launch geometry");
        m->geoms[m->n_geoms++] = l;
        geom = (uint32_t)m->n_geoms;
        if (geom_add(&p->launches, m, h, geom, &at) != 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "launch geometry");
    }
    op->launch_geom = geom;
    return 1;
}

/* GPU work: one op, and its collective when the kernel is NCCL's. */
static int add_gpu_op(struct parser *p, int64_t start, int64_t end)
{
    struct event *e = &p->ev;
    struct rsr_model *m = p->m;
    struct rsr_gpu_op *op = rsr_model_add_op(m);
    if (!op || rsr_model_intern(m, e->name, e->name_len, &op->name) < 0)
        return fail(p, RSR_KINETO_ERR_NOMEM, "GPU events");
    op->start_ns = start;
    op->end_ns = end;
    op->correlation = e->has_corr ? (uint64_t)e->corr : 0;
    op->bytes = e->bytes;
    op->stream = (int32_t)e->stream;
    op->device = (int32_t)e->device;
    op->cls = e->cat == C_MEMCPY ? RSR_GPU_MEMCPY
            : e->cat == C_MEMSET ? RSR_GPU_MEMSET
            : rsr_gpu_classify_kernel(e->name ? e->name : "");
    if (e->cat == C_KERNEL && e->ndims[0] && !add_geom(p, op))
        return 0;
    if (op->cls != RSR_GPU_COMM || !e->has_coll)
        return 1;
    struct rsr_coll *c = rsr_model_add_coll(m);
    if (!c)
        return fail(p, RSR_KINETO_ERR_NOMEM, "collectives");
    op->coll = (int32_t)(m->n_colls - 1);
    c->op = (uint8_t)e->coll_op;
    c->in_count = e->in_nelems;
    c->out_count = e->out_nelems;
    c->dtype = e->dtype;
    c->elem_size = dtype_size(rsr_model_str(m, e->dtype));
    c->bytes = (e->in_nelems > e->out_nelems ? e->in_nelems : e->out_nelems) * c->elem_size;
    c->comm = e->pg_name;
    c->members = e->pg_ranks;
    c->group_size = (int32_t)e->group_size;
    if (e->has_comm_id) {
        c->comm_id = e->comm_id;
        c->seq = e->seq;
    }
    return 1;
}

/* A complete traceEvents entry: keep what the model holds. Events without
 * a duration (metadata, flows, instants) carry no interval; HTA drops them. */
static int end_event(struct parser *p)
{
    struct event *e = &p->ev;
    struct rsr_model *m = p->m;
    if (e->foreign) {
        m->dropped++;
        return 1;
    }
    if (!e->has_ts || !e->has_dur)
        return 1;
    /* HTA rounds events with sub-microsecond times inward to whole
     * microseconds (start up, end down), because PyTorch's ns-resolution
     * events overlap where they should not (pytorch/pytorch#122425); doing
     * the same keeps the figures comparable with it. */
    int64_t start = ceil_us(e->ts_ns);
    int64_t end = floor_us(e->ts_ns + e->dur_ns);
    if (end < start)
        end = start;
    if (m->wall_start_ns == 0 || start < m->wall_start_ns)
        m->wall_start_ns = start;
    if (end > m->wall_end_ns)
        m->wall_end_ns = end;

    bool gpu = e->cat == C_KERNEL || e->cat == C_MEMCPY || e->cat == C_MEMSET;
    if (gpu && e->has_stream)
        return add_gpu_op(p, start, end);
    if ((e->cat == C_LAUNCH || e->cat == C_CPU_OP) && e->has_pid && m->pid == 0) {
        m->pid = e->pid;
        p->pid_off = p->run_off;
    }
    if (e->cat == C_LAUNCH && e->has_corr) {
        struct rsr_launch *l = rsr_model_add_launch(m);
        if (!l || rsr_model_intern(m, e->name, e->name_len, &l->name) < 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "launch events");
        l->start_ns = start;
        l->end_ns = end;
        l->correlation = (uint64_t)e->corr;
        l->tid = e->has_tid ? (uint32_t)e->tid : 0;
    } else if (e->name_len >= 12 && memcmp(e->name, "ProfilerStep", 12) == 0) {
        uint32_t id;
        struct rsr_range *r = rsr_model_add_range(m);
        if (!r || rsr_model_intern(m, e->name, e->name_len, &id) < 0)
            return fail(p, RSR_KINETO_ERR_NOMEM, "profiler steps");
        /* the step as the program marked it: imported files carry it as
         * a range, as the agent records NVTX ranges (steps.c) */
        *r = (struct rsr_range){ .start_ns = start, .end_ns = end > start ? end : start, .name = id,
                                 .tid = e->has_tid ? (uint32_t)e->tid : 0, .kind = RSF_RANGE_PUSH };
        if (p->first_step == 0) {
            p->first_step = id;
            p->last_step_ns = start;
        }
        if (id != p->first_step)
            p->many_steps = true;
        if (start > p->last_step_ns)
            p->last_step_ns = start;
    }
    return 1;
}

/* Opens a container at the current level: descend, or skip it whole. */
static int open_container(struct parser *p, bool is_map)
{
    if (p->skip > 0) {
        p->skip++;
        return 1;
    }
    switch (p->level) {
    case L_NONE:
        if (is_map) {
            p->level = L_TOP;
        } else {
            p->level = L_EVENTS;
            p->events_top = p->saw_events = true;
        }
        return 1;
    case L_TOP:
        if (!is_map && p->key == T_EVENTS) {
            p->level = L_EVENTS;
            p->saw_events = true;
            return 1;
        }
        if (is_map && p->key == T_DIST) {
            p->level = L_DIST;
            return 1;
        }
        if (!is_map && p->key == T_DEVICES) {
            p->level = L_DEVS;
            return 1;
        }
        if (p->key == T_RINGSIDE)
            p->ringside = true;
        if (is_map && p->key == T_RINGSIDE && p->want_procs) {
            p->level = L_RS;
            return 1;
        }
        break;
    case L_RS:
        if (!is_map && p->key == R_PROCESSES) {
            p->level = L_RS_PROCS;
            return 1;
        }
        break;
    case L_RS_PROCS:
        if (is_map) {
            p->proc = (struct rsr_kineto_proc){ .pid = -1, .rank = -1, .world_size = -1 };
            p->level = L_RS_PROC;
            return 1;
        }
        break;
    case L_EVENTS:
        if (is_map) {
            struct event *e = &p->ev;
            char *name = e->name;
            size_t cap = e->name_cap;
            memset(e, 0, sizeof *e);
            e->name = name;
            e->name_cap = cap;
            /* An event without a "name" must not take the last one's. */
            if (name)
                name[0] = '\0';
            e->group_size = -1;
            p->level = L_EVENT;
            return 1;
        }
        break;
    case L_EVENT:
        if (is_map && p->key == E_ARGS) {
            p->level = L_ARGS;
            return 1;
        }
        break;
    case L_ARGS:
        if (!is_map && (p->key == A_GRID || p->key == A_BLOCK)) {
            p->ev.dim = p->key == A_BLOCK;
            p->ev.ndims[p->ev.dim] = 0;
            p->level = L_DIMS;
            return 1;
        }
        break;
    case L_DIMS:
        p->ev.bad_dims = true;  /* a dimension that is not a number */
        break;
    case L_DEVS:
        if (is_map) {
            memset(&p->dev, 0, sizeof p->dev);
            p->dev.d.ordinal = -1;
            p->level = L_DEV;
            return 1;
        }
        break;
    case L_END:
        return fail(p, RSR_KINETO_ERR_JSON, "text after the end of the trace");
    default:
        break;
    }
    p->skip = 1;
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, false);
}

/* A process of a job's trace: the first takes the caller's model. */
static int add_proc(struct parser *p)
{
    if (p->nprocs == p->cap_procs) {
        size_t cap = p->cap_procs ? p->cap_procs * 2 : 16;
        struct rsr_kineto_proc *procs = realloc(p->procs, cap * sizeof *procs);
        if (procs)
            p->procs = procs;
        struct rsr_model **models = realloc(p->models, cap * sizeof *models);
        if (models)
            p->models = models;
        if (!procs || !models)
            return fail(p, RSR_KINETO_ERR_NOMEM, "processes");
        p->cap_procs = cap;
    }
    struct rsr_model *m = p->m;
    if (p->nprocs > 0) {
        m = malloc(sizeof *m);
        if (!m)
            return fail(p, RSR_KINETO_ERR_NOMEM, "processes");
        rsr_model_init(m);
    }
    m->rank = p->proc.rank;
    m->world_size = p->proc.world_size;
    m->pid = p->proc.os_pid;
    m->wall_start_ns = p->proc.wall_start_ns;
    m->wall_end_ns = p->proc.wall_end_ns;
    p->procs[p->nprocs] = p->proc;
    p->models[p->nprocs++] = m;
    return 1;
}

/* Resident blocks per SM, which Kineto's deviceProperties (cudaDeviceProp)
 * lack: the occupancy calculator's table (cudaOccMaxBlocksPerMultiprocessor
 * in CUDA's cuda_occupancy.h); 0, for rsr_geom_of's default, when unknown. */
static uint32_t max_blocks_per_sm(uint32_t major, uint32_t minor)
{
    switch (major) {
    case 0: return 0;
    case 1: case 2: return 8;
    case 3: return 16;
    case 7: return minor == 5 ? 16 : 32;
    case 8: return minor == 0 ? 32 : minor == 9 ? 24 : 16;
    default: return 32;
    }
}

/* A complete deviceProperties entry. The driver reserves 1 KiB of shared
 * memory per block from compute capability 8.0 on
 * (cudaDevAttrReservedSharedMemoryPerBlock), none before. */
static int add_device(struct parser *p)
{
    struct kdevice *k = &p->dev;
    k->d.max_blocks_per_sm = max_blocks_per_sm(k->d.cc_major, k->d.cc_minor);
    k->d.smem_reserved_per_block = k->d.cc_major >= 8 ? 1024 : 0;
    if (RSR_GROW(p->devs, p->cap_devs, p->ndevs + 1, 64) != 0)
        return fail(p, RSR_KINETO_ERR_NOMEM, "deviceProperties");
    p->devs[p->ndevs++] = *k;
    return 1;
}

static int close_container(struct parser *p)
{
    if (p->skip > 0) {
        p->skip--;
        return 1;
    }
    switch (p->level) {
    case L_ARGS:
        p->level = L_EVENT;
        return 1;
    case L_DIMS:
        p->level = L_ARGS;
        return 1;
    case L_DEV:
        p->level = L_DEVS;
        return add_device(p);
    case L_DEVS:
        p->level = L_TOP;
        return 1;
    case L_EVENT:
        p->level = L_EVENTS;
        return end_event(p);
    case L_EVENTS:
        p->level = p->events_top ? L_END : L_TOP;
        return 1;
    case L_DIST:
    case L_RS:
        p->level = L_TOP;
        return 1;
    case L_RS_PROCS:
        p->level = L_RS;
        return 1;
    case L_RS_PROC:
        p->level = L_RS_PROCS;
        return add_proc(p);
    default:
        p->level = L_END;
        return 1;
    }
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
    struct parser *p = ctx;
    if (p->skip == 0)
        p->key = key_of(p->level, s, len);
    return 1;
}

/* A scalar outside the places the model reads is ignored, except at the top,
 * where it means this is not a trace at all. */
static int scalar_elsewhere(struct parser *p)
{
    if (p->skip == 0 && (p->level == L_NONE || p->level == L_END))
        return fail(p, RSR_KINETO_ERR_NOT_TRACE, "the document is not an object or array");
    return 1;
}

static int on_null(void *ctx)
{
    return scalar_elsewhere(ctx);
}

static int on_bool(void *ctx, int v)
{
    (void)v;
    return scalar_elsewhere(ctx);
}

static int on_number(void *ctx, const char *s, size_t len)
{
    struct parser *p = ctx;
    struct event *e = &p->ev;
    int64_t v;
    if (p->skip > 0)
        return 1;
    if (p->level == L_EVENT) {
        switch (p->key) {
        case E_TS:
            if (!parse_us(s, len, &e->ts_ns))
                return fail(p, RSR_KINETO_ERR_NOT_TRACE, "\"ts\" out of range");
            e->has_ts = true;
            break;
        case E_DUR:
            if (!parse_us(s, len, &e->dur_ns))
                return fail(p, RSR_KINETO_ERR_NOT_TRACE, "\"dur\" out of range");
            e->has_dur = true;
            break;
        case E_PID:
            e->has_pid = parse_int(s, len, &e->pid);
            if (p->nprocs > 0) {
                /* Strings of the event (its args) go to its own model. */
                size_t i = 0;
                while (i < p->nprocs && !(e->has_pid && p->procs[i].pid == e->pid))
                    i++;
                e->foreign = i == p->nprocs;
                p->m = p->models[e->foreign ? 0 : i];
            }
            break;
        case E_TID:
            e->has_tid = parse_int(s, len, &e->tid);
            break;
        default:
            break;
        }
    } else if (p->level == L_ARGS && p->key != A_OTHER && parse_int(s, len, &v)) {
        switch (p->key) {
        case A_STREAM:
            e->stream = v;
            e->has_stream = true;
            break;
        case A_DEVICE:
            e->device = v;
            break;
        case A_CORR:
            e->corr = v;
            e->has_corr = true;
            break;
        case A_BYTES:
            e->bytes = v > 0 ? (uint64_t)v : 0;
            break;
        case A_IN_NELEMS:
            e->in_nelems = v > 0 ? (uint64_t)v : 0;
            break;
        case A_OUT_NELEMS:
            e->out_nelems = v > 0 ? (uint64_t)v : 0;
            break;
        case A_GROUP_SIZE:
            e->group_size = v;
            break;
        case A_SEQ:
            e->seq = (uint32_t)v;
            break;
        case A_REGS:
            e->regs = v;
            break;
        case A_SMEM:
            e->smem = v;
            break;
        default:
            break;
        }
    } else if (p->level == L_DIMS) {
        uint8_t *n = &e->ndims[e->dim];
        if (*n < 3 && parse_int(s, len, &v) && v >= 0 && v <= (e->dim ? UINT16_MAX : UINT32_MAX))
            e->dims[e->dim][*n] = v;
        else
            e->bad_dims = true;
        if (*n < 3)
            (*n)++;
    } else if (p->level == L_DEV && parse_int(s, len, &v)) {
        struct rsf_device *d = &p->dev.d;
        uint32_t u = v >= 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
        switch (p->key) {
        case V_ID: d->ordinal = v >= 0 && v <= INT32_MAX ? (int32_t)v : -1; break;
        case V_CC_MAJOR: d->cc_major = u; break;
        case V_CC_MINOR: d->cc_minor = u; break;
        case V_SMS: d->sm_count = u; break;
        case V_THREADS_SM: d->max_threads_per_sm = u; break;
        case V_REGS_SM: d->regs_per_sm = u; break;
        case V_SMEM_SM: d->smem_per_sm = u; break;
        case V_THREADS_BLOCK: d->max_threads_per_block = u; break;
        case V_REGS_BLOCK: d->regs_per_block = u; break;
        case V_SMEM_OPTIN: d->smem_per_block_optin = u; break;
        case V_WARP: d->warp_size = u; break;
        default: break;
        }
    } else if (p->level == L_TOP && p->key == T_BASE_TIME && parse_int(s, len, &v)) {
        p->info.base_time_ns = v;
        p->info.has_base_time = 1;
    } else if (p->level == L_RS_PROC && parse_int(s, len, &v)) {
        if (p->key == P_PID)
            p->proc.pid = v;
        else if (p->key == P_RANK)
            p->proc.rank = (int32_t)v;
        else if (p->key == P_WORLD)
            p->proc.world_size = (int32_t)v;
        else if (p->key == P_OS_PID)
            p->proc.os_pid = v;
        else if (p->key == P_WALL_START)
            p->proc.wall_start_ns = v;
        else if (p->key == P_WALL_END)
            p->proc.wall_end_ns = v;
    } else if (p->level == L_DIST && parse_int(s, len, &v)) {
        if (p->key == D_RANK)
            p->m->rank = (int32_t)v;
        else if (p->key == D_WORLD)
            p->m->world_size = (int32_t)v;
    }
    return scalar_elsewhere(p);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    struct parser *p = ctx;
    struct event *e = &p->ev;
    if (p->skip > 0)
        return 1;
    if (p->level == L_EVENT && p->key == E_NAME) {
        if (len + 1 > e->name_cap) {
            size_t cap = (len + 1) * 2;
            char *name = realloc(e->name, cap);
            if (!name)
                return fail(p, RSR_KINETO_ERR_NOMEM, "event names");
            e->name = name;
            e->name_cap = cap;
        }
        memcpy(e->name, s, len);
        e->name[len] = '\0';
        e->name_len = len;
    } else if (p->level == L_EVENT && p->key == E_CAT) {
        e->cat = parse_cat(s, len);
    } else if (p->level == L_DIMS) {
        p->ev.bad_dims = true;
    } else if (p->level == L_DEV && p->key == V_NAME) {
        size_t n = len < sizeof p->dev.name - 1 ? len : sizeof p->dev.name - 1;
        memcpy(p->dev.name, s, n);
        p->dev.name[n] = '\0';
    } else if (p->level == L_ARGS) {
        uint32_t *id = p->key == A_DTYPE ? &e->dtype
                     : p->key == A_PG_NAME ? &e->pg_name
                     : p->key == A_PG_RANKS ? &e->pg_ranks : NULL;
        if (p->key == A_COMM_ID) {
            char hex[24];
            char *end;
            if (len > 0 && len < sizeof hex) {
                memcpy(hex, s, len);
                hex[len] = '\0';
                e->comm_id = strtoull(hex, &end, 16);
                e->has_comm_id = *end == '\0' && e->comm_id != 0;
            }
        } else if (p->key == A_COLL) {
            e->coll_op = rsr_coll_op_parse((const char *)s, len);
            e->has_coll = true;
        } else if (id && rsr_model_intern(p->m, (const char *)s, len, id) < 0) {
            return fail(p, RSR_KINETO_ERR_NOMEM, "collective arguments");
        }
    }
    return scalar_elsewhere(p);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* The position of rank in a group's member list "[0, 1, ...]", or -1. */
static int32_t rank_in_members(const char *list, int32_t rank)
{
    int32_t pos = 0;
    for (const char *s = list; *s;) {
        if (*s >= '0' && *s <= '9') {
            char *end;
            long v = strtol(s, &end, 10);
            if (v == rank)
                return pos;
            pos++;
            s = end;
        } else {
            s++;
        }
    }
    return -1;
}

/* Keeps what HTA analyses (see kineto.h): with two or more profiler steps,
 * launches that began before the last one, and the GPU work they launched. */
static int keep_completed_steps(struct parser *p)
{
    struct rsr_model *m = p->m;
    size_t k = 0;
    for (size_t i = 0; i < m->n_launches; i++)
        if (m->launches[i].start_ns < p->last_step_ns)
            m->launches[k++] = m->launches[i];
    m->dropped += m->n_launches - k;
    m->n_launches = k;
    /* the last step goes too: HTA does not count it */
    k = 0;
    for (size_t i = 0; i < m->n_ranges; i++)
        if (m->ranges[i].start_ns < p->last_step_ns)
            m->ranges[k++] = m->ranges[i];
    m->n_ranges = k;
    rsr_model_finish(m);

    int32_t *remap = malloc((m->n_colls ? m->n_colls : 1) * sizeof *remap);
    if (!remap)
        return RSR_KINETO_ERR_NOMEM;
    for (size_t i = 0; i < m->n_colls; i++)
        remap[i] = -1;
    k = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        if (!rsr_model_find_launch(m, m->ops[i].correlation))
            continue;
        m->ops[k++] = m->ops[i];
        if (m->ops[i].coll >= 0)
            remap[m->ops[i].coll] = 0;
    }
    m->dropped += m->n_ops - k;
    m->n_ops = k;
    k = 0;
    for (size_t i = 0; i < m->n_colls; i++)
        if (remap[i] == 0) {
            m->colls[k] = m->colls[i];
            remap[i] = (int32_t)k++;
        }
    m->n_colls = k;
    for (size_t i = 0; i < m->n_ops; i++)
        if (m->ops[i].coll >= 0)
            m->ops[i].coll = remap[m->ops[i].coll];
    free(remap);
    return RSR_KINETO_ERR_OK;
}

/* The GPUs into the model (for import-kineto), and each kernel's occupancy
 * figures from its launch and its GPU's limits, worked out as the loader of
 * the agent's files does (load_model.c), so that a trace and its import
 * report the same. Without "deviceProperties" no kernel has them. */
static int fill_geometry(struct parser *p)
{
    struct rsr_model *m = p->m;
    if (!p->ndevs)
        return RSR_KINETO_ERR_OK;
    m->devices = malloc(p->ndevs * sizeof *m->devices);
    if (!m->devices)
        return RSR_KINETO_ERR_NOMEM;
    const struct rsf_device *by_ordinal[64] = { NULL };
    for (size_t i = 0; i < p->ndevs; i++) {
        struct rsf_device *d = &m->devices[i];
        *d = p->devs[i].d;
        if (rsr_model_intern(m, p->devs[i].name, strlen(p->devs[i].name), &d->name) < 0)
            return RSR_KINETO_ERR_NOMEM;
        if (d->ordinal >= 0 && d->ordinal < 64)
            by_ordinal[d->ordinal] = d;
    }
    m->n_devices = p->ndevs;
    for (size_t i = 0; i < m->n_ops; i++) {
        struct rsr_gpu_op *op = &m->ops[i];
        if (!op->launch_geom)
            continue;
        const struct rsf_launch *l = &m->geoms[op->launch_geom - 1];
        const struct rsf_function *f = &m->functions[l->func - 1];
        int dev = f->device >= 0 ? f->device : op->device;
        if (dev >= 0 && dev < 64 && by_ordinal[dev])
            rsr_geom_op(op, by_ordinal[dev], f, l);
    }
    return RSR_KINETO_ERR_OK;
}

static int finish_model(struct parser *p)
{
    struct rsr_model *m = p->m;
    int err = fill_geometry(p);
    if (err != RSR_KINETO_ERR_OK)
        return err;
    if (m->rank >= 0)
        m->role = RSR_ROLE_RANK;
    for (size_t i = 0; i < m->n_colls; i++) {
        struct rsr_coll *c = &m->colls[i];
        if (c->members && m->rank >= 0)
            c->rank_in_group = rank_in_members(rsr_model_str(m, c->members), m->rank);
    }
    if (p->many_steps && !p->ringside)
        return keep_completed_steps(p);
    return rsr_model_finish(m);
}

static int report(char *msg, size_t msglen, int err, const char *fmt, ...)
{
    if (msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* The yajl error text without its "parse error: " prefix and newlines. */
static void yajl_reason(yajl_handle y, char *out, size_t outlen)
{
    unsigned char *text = yajl_get_error(y, 0, NULL, 0);
    const char *s = (const char *)text;
    if (strncmp(s, "parse error: ", 13) == 0)
        s += 13;
    snprintf(out, outlen, "%s", s);
    out[strcspn(out, "\n")] = '\0';
    yajl_free_error(y, text);
}


/* Most of a trace's bytes are CPU-side events the model does not hold
 * (operators, Python functions, flow arrows). Lexing them with yajl was most
 * of the load time, so a byte scanner in front of yajl cuts each element of
 * traceEvents out whole (matching braces outside strings), looks at its "cat"
 * and "name", and hands yajl only the elements the model may keep; of the
 * others it reads just "ts", "dur" and "pid" for the model's wall time and
 * pid. Text outside traceEvents goes to yajl unchanged. A skipped element is
 * not checked for JSON syntax beyond matching braces, and the commas between
 * elements are not checked. */
enum skip_mode { S_START, S_PASS, S_ARRAY, S_EVENT, S_RAW };

/* Values of the keys of an element's own level, as offsets in its text. */
enum { K_CAT, K_NAME, K_TS, K_DUR, K_PID, K_NKEYS };

struct skipper {
    enum skip_mode mode;
    bool top_array;         /* the document is a bare array of events */
    /* S_PASS: where the top level is, to find "traceEvents": [ */
    int depth;
    bool in_str, esc;
    char str[12];           /* the start of the last string read at depth 1 */
    size_t str_len;
    bool after_key;         /* "traceEvents" then ':' were just read */
    bool is_events_key;
    /* S_EVENT: the element being cut out */
    char *ev;
    size_t ev_len, ev_cap;
    uint64_t ev_off;        /* file offset of its first byte */
    int ev_depth;
    size_t ev_str;          /* offset of the last string's opening quote at depth 1 */
    size_t ev_str_end;
    bool unsure;            /* a key straddled pieces: do not skip */
    size_t val[K_NKEYS];    /* offset after the key's ':', 0: none */
    bool kept_any;          /* an element was handed to yajl (commas) */
    bool nomem;
    struct piece *out;      /* where the text for yajl goes */
    /* What the skipped elements say (skipped_event), merged into the model
     * by the parser at the end. */
    bool has_wall, has_pid;
    int64_t wall_start, wall_end, pid;
    uint64_t pid_off;       /* file offset of the element that gave pid */
};

/* Text for yajl, in runs that each come from one place in the file. */
struct piece_run {
    size_t at, len;         /* in piece.text */
    uint64_t off;           /* file offset of its first byte */
};

/* What the reader thread hands the parser: the text to parse and where in
 * the file each run of it came from (for error messages). */
struct piece {
    char *text;
    size_t len, cap;
    struct piece_run *runs;
    size_t nruns, cap_runs;
    int raw_len;            /* file bytes it covers; 0: end of data, -1: read error */
    bool nomem;
};

/* Appends len bytes from file offset off to the piece being filled; a run
 * that continues the last one in the file extends it. False when out of
 * memory. */
static bool feed(struct skipper *k, const char *s, size_t len, uint64_t off)
{
    struct piece *o = k->out;
    if (len == 0)
        return true;
    if (RSR_GROW(o->text, o->cap, o->len + len, READ_CHUNK) != 0)
        return false;
    memcpy(o->text + o->len, s, len);
    struct piece_run *last = o->nruns ? &o->runs[o->nruns - 1] : NULL;
    if (last && last->at + last->len == o->len && last->off + last->len == off) {
        last->len += len;
    } else {
        if (RSR_GROW(o->runs, o->cap_runs, o->nruns + 1, 256) != 0)
            return false;
        o->runs[o->nruns++] = (struct piece_run){ o->len, len, off };
    }
    o->len += len;
    return true;
}

static bool ev_grow(struct skipper *k, size_t more)
{
    return RSR_GROW(k->ev, k->ev_cap, k->ev_len + more, 4096) == 0;
}

/* The string value at offset v of the element (after "key":), or len 0. */
static const char *ev_string(const struct skipper *k, size_t v, size_t *len)
{
    *len = 0;
    if (!v)
        return NULL;
    while (v < k->ev_len && (k->ev[v] == ' ' || k->ev[v] == '\t' || k->ev[v] == '\n' || k->ev[v] == '\r'))
        v++;
    if (v >= k->ev_len || k->ev[v] != '"')
        return NULL;
    const char *s = k->ev + v + 1;
    const char *e = memchr(s, '"', k->ev_len - v - 1);
    if (!e)
        return NULL;
    *len = (size_t)(e - s);
    return s;
}

/* The number at offset v of the element, as text. */
static const char *ev_number(const struct skipper *k, size_t v, size_t *len)
{
    *len = 0;
    if (!v)
        return NULL;
    while (v < k->ev_len && (k->ev[v] == ' ' || k->ev[v] == '\t' || k->ev[v] == '\n' || k->ev[v] == '\r'))
        v++;
    size_t e = v;
    while (e < k->ev_len && ((k->ev[e] >= '0' && k->ev[e] <= '9') || k->ev[e] == '.' ||
                             k->ev[e] == '-' || k->ev[e] == '+' || k->ev[e] == 'e' || k->ev[e] == 'E'))
        e++;
    *len = e - v;
    return k->ev + v;
}

/* Whether the model reads nothing of an element of this category and name
 * but its time and pid (see end_event). */
static bool skippable(const struct skipper *k)
{
    static const char *const cats[] = {
        "cpu_op", "Operator", "python_function", "ac2g", "async_cpu_to_gpu", "fwdbwd",
        "cpu_instant_event", "user_annotation", "gpu_user_annotation",
    };
    size_t clen, nlen;
    const char *cat = ev_string(k, k->val[K_CAT], &clen);
    if (!cat)
        return false;
    const char *name = ev_string(k, k->val[K_NAME], &nlen);
    if (!name && k->val[K_NAME])
        return false;       /* a name that is not a plain string: let yajl see it */
    if (name && nlen >= 12 && memcmp(name, "ProfilerStep", 12) == 0)
        return false;
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
        if (eq((const unsigned char *)cat, clen, cats[i]))
            return true;
    return false;
}

/* What end_event takes from an element it would otherwise not keep: its
 * time (for the wall time) and, for a CPU operator, its pid. */
static void skipped_event(struct skipper *k)
{
    size_t len, clen;
    int64_t ts, dur, pid;
    const char *s = ev_number(k, k->val[K_TS], &len);
    if (!s || !parse_us(s, len, &ts))
        return;
    s = ev_number(k, k->val[K_DUR], &len);
    if (!s || !parse_us(s, len, &dur))
        return;
    int64_t start = ceil_us(ts), end = floor_us(ts + dur);
    if (end < start)
        end = start;
    if (!k->has_wall || start < k->wall_start)
        k->wall_start = start;
    if (!k->has_wall || end > k->wall_end)
        k->wall_end = end;
    k->has_wall = true;
    const char *cat = ev_string(k, k->val[K_CAT], &clen);
    s = ev_number(k, k->val[K_PID], &len);
    if (!k->has_pid && cat && parse_cat((const unsigned char *)cat, clen) == C_CPU_OP && s &&
        parse_int(s, len, &pid)) {
        k->has_pid = true;
        k->pid = pid;
        k->pid_off = k->ev_off;
    }
}

/* The bytes outside strings that scan_event acts on. */
static const bool structural[256] = {
    ['"'] = true, [':'] = true, ['{'] = true, ['['] = true, ['}'] = true, [']'] = true,
};

/* The first byte at or after i in s[0..n) that is a quote, a colon or a
 * bracket (n if none): 16 bytes at a time where SSE2 is there (always on
 * x86-64). '[' and ']' are '{' and '}' with bit 5 clear. */
static size_t find_structural(const char *s, size_t i, size_t n)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), colon = _mm_set1_epi8(':');
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), bit5 = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i b = _mm_or_si128(v, bit5);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, colon)),
                                   _mm_or_si128(_mm_cmpeq_epi8(b, open), _mm_cmpeq_epi8(b, close)));
        int mask = _mm_movemask_epi8(hit);
        if (mask)
            return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    while (i < n && !structural[(unsigned char)s[i]])
        i++;
    return i;
}

/* Inside a string: the first quote or backslash at or after i (n if none). */
static size_t find_string_end(const char *s, size_t i, size_t n)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
        if (mask)
            return i + (size_t)__builtin_ctz((unsigned)mask);
    }
#endif
    while (i < n && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

/* Cuts an element out of s[0..n), continuing one begun in
 * an earlier piece. Returns the bytes used; k->mode becomes S_ARRAY when
 * the element ended, and it was then handed on or skipped. */
static size_t scan_event(struct skipper *k, const char *s, size_t n)
{
    size_t i = 0;
    if (k->esc && n > 0) {
        /* The byte after a backslash that ended the last piece. */
        k->esc = false;
        i = 1;
    }
    size_t base = k->ev_len;    /* s[0] goes to ev[base] */
    bool done = false;
    while (i < n) {
        char c = s[i];
        if (k->in_str) {
            i = find_string_end(s, i, n);
            if (i == n)
                break;
            if (s[i] == '\\') {
                if (i + 1 == n) {
                    k->esc = true;  /* the escaped byte is in the next piece */
                    i = n;
                    break;
                }
                i += 2;
                continue;
            }
            k->in_str = false;
            if (k->ev_depth == 1)
                k->ev_str_end = base + i;
            i++;
            continue;
        }
        if (!structural[(unsigned char)c]) {
            /* Spaces, numbers, literals, commas: skip the run. */
            i = find_structural(s, i + 1, n);
            continue;
        }
        switch (c) {
        case '"':
            k->in_str = true;
            if (k->ev_depth == 1)
                k->ev_str = base + i;
            break;
        case ':':
            if (k->ev_depth == 1 && k->ev_str_end > k->ev_str) {
                const char *key = (k->ev_str >= base ? s + (k->ev_str - base) : k->ev + k->ev_str) + 1;
                size_t klen = k->ev_str_end - k->ev_str - 1;
                /* A key that began in an earlier piece is not looked at:
                 * the element then goes to yajl, which decides. */
                if (k->ev_str >= base) {
                    int which = klen == 3 && memcmp(key, "cat", 3) == 0 ? K_CAT
                              : klen == 4 && memcmp(key, "name", 4) == 0 ? K_NAME
                              : klen == 2 && memcmp(key, "ts", 2) == 0 ? K_TS
                              : klen == 3 && memcmp(key, "dur", 3) == 0 ? K_DUR
                              : klen == 3 && memcmp(key, "pid", 3) == 0 ? K_PID : -1;
                    if (which >= 0)
                        k->val[which] = base + i + 1;
                } else {
                    k->unsure = true;
                }
            }
            break;
        case '{':
        case '[':
            k->ev_depth++;
            break;
        case '}':
        case ']':
            if (--k->ev_depth == 0)
                done = true;
            break;
        default:
            break;
        }
        i++;
        if (done)
            break;
    }
    if (!ev_grow(k, i)) {
        k->nomem = true;
        return i;
    }
    memcpy(k->ev + k->ev_len, s, i);
    k->ev_len += i;
    if (!done)
        return i;
    k->mode = S_ARRAY;
    if (!k->unsure && skippable(k)) {
        skipped_event(k);
    } else {
        /* The comma stands where the element's first byte was, so that an
         * error in the element is placed right. */
        if ((k->kept_any && !feed(k, ",", 1, k->ev_off - 1)) || !feed(k, k->ev, k->ev_len, k->ev_off))
            k->nomem = true;
        k->kept_any = true;
    }
    return i;
}

/* Puts what yajl must see of s[0..n) (file offset off) into k->out.
 * Sets k->nomem when out of memory. */
static void skip_feed(struct skipper *k, const char *s, size_t n, uint64_t off)
{
    size_t i = 0, from = 0;     /* s[from..i) waits to be passed on as is */
    while (i < n && !k->nomem) {
        char c = s[i];
        switch (k->mode) {
        case S_RAW:
            i = n;
            break;
        case S_START:
            if (c == '[' || c == '{') {
                k->mode = c == '[' ? S_ARRAY : S_PASS;
                k->top_array = c == '[';
                k->depth = 1;
                i++;
                if (k->mode == S_ARRAY) {
                    k->nomem = !feed(k, s + from, i - from, off + from);
                    from = i;
                }
            } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                k->mode = S_RAW;
            }
            break;
        case S_PASS:
            i++;
            if (k->in_str) {
                if (k->esc) {
                    k->esc = false;
                } else if (c == '\\') {
                    k->esc = true;
                } else if (c == '"') {
                    k->in_str = false;
                    if (k->depth == 1)
                        k->is_events_key = k->str_len == 11 && memcmp(k->str, "traceEvents", 11) == 0;
                } else if (k->str_len < sizeof k->str) {
                    k->str[k->str_len++] = c;
                }
                break;
            }
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                break;
            if (c == '[' && k->depth == 1 && k->after_key) {
                k->mode = S_ARRAY;
                k->nomem = !feed(k, s + from, i - from, off + from);
                from = i;
                break;
            }
            k->after_key = c == ':' && k->depth == 1 && k->is_events_key;
            if (c == '"') {
                k->in_str = true;
                k->str_len = 0;
                k->is_events_key = false;
            } else if (c == '{' || c == '[') {
                k->depth++;
            } else if (c == '}' || c == ']') {
                k->depth--;
            }
            break;
        case S_ARRAY:
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
                from = ++i;
            } else if (c == '{') {
                k->mode = S_EVENT;
                k->ev_len = 0;
                k->ev_off = off + i;
                k->ev_depth = 0;
                k->in_str = k->esc = k->unsure = false;
                k->ev_str = k->ev_str_end = 0;
                memset(k->val, 0, sizeof k->val);
            } else if (c == ']') {
                k->mode = S_PASS;
                k->depth = k->top_array ? 0 : 1;
                k->after_key = k->is_events_key = false;
                from = i++;
            } else {
                /* Not an object: pass the rest on as it is. */
                k->mode = S_RAW;
                if (k->kept_any)
                    k->nomem = !feed(k, ",", 1, off + i - 1);
                from = i;
            }
            break;
        case S_EVENT:
            i += scan_event(k, s + i, n - i);
            from = i;
            break;
        }
    }
    if (!k->nomem && (k->mode == S_PASS || k->mode == S_RAW || k->mode == S_START))
        k->nomem = !feed(k, s + from, n - from, off + from);
}

/* ISA-L's inflate (isal.h); where it is missing, zlib inflates every file.
 * On the shared A100 traces it inflates in a third of zlib's time (35 MB of
 * JSON: 6.4 against 20.1 ms of CPU, medians of 21), into the same reused
 * pieces, beside the parser. libdeflate inflates only a whole file into a
 * buffer that holds all of it, before any parsing: the page faults of that
 * fresh buffer cost what its speed saved (21.8 ms), or with huge pages
 * stalled at times (10.7 to 114). */
static const struct rsr_isal *igzip;

/* Inflating, cutting out what the model does not read, and parsing the rest
 * are each a large share of the load, so a reader thread inflates and cuts
 * the next piece while the caller's thread parses the last: two pieces,
 * handed back and forth under one lock. */
struct reader {
    gzFile gz;              /* zlib reads the file; or, when NULL, */
    int fd;                 /* ... ISA-L inflates what is read from fd */
    struct inflate_state *inf;
    unsigned char *in;      /* compressed bytes, READ_CHUNK */
    uint64_t in_read;       /* bytes read from fd */
    bool in_end;            /* and fd is at its end */
    char *raw;              /* inflated text, READ_CHUNK bytes */
    struct skipper k;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct piece piece[2];
    bool full[2];
    bool stop;              /* the parser gave up: stop reading */
    int zerr, sys_errno;    /* how reading ended, for the error message */
    long long zoffset;
    char zmsg[96];
};

/* Reads more of the file after the compressed bytes ISA-L has not taken
 * yet. False, with zerr set, on a read error. */
static bool igzip_fill(struct reader *r)
{
    struct inflate_state *s = r->inf;
    if (s->avail_in > 0)
        memmove(r->in, s->next_in, s->avail_in);
    s->next_in = r->in;
    for (;;) {
        ssize_t n = read(r->fd, r->in + s->avail_in, READ_CHUNK - s->avail_in);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r->zerr = Z_ERRNO;
            r->sys_errno = errno;
            return false;
        }
        r->in_end = n == 0;
        r->in_read += (uint64_t)n;
        s->avail_in += (uint32_t)n;
        return true;
    }
}

/* ISA-L's errors in zlib's words, for read_error. */
static const char *igzip_strerror(int rc)
{
    switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid block";
    case ISAL_INVALID_SYMBOL: return "invalid code";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "incorrect header check";
    case ISAL_UNSUPPORTED_METHOD: return "unknown compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data or length check";
    default: return "invalid data";
    }
}

/* Up to cap bytes of text inflated by ISA-L into out, as gzread gives them:
 * the count, 0 at the end, or -1 with zerr set as gzerror would (Z_BUF_ERROR:
 * the file is cut short). Gzip members that follow one another are read as
 * one text; other bytes after a member are ignored, as zlib does. */
static int igzip_read(struct reader *r, char *out, unsigned cap)
{
    struct inflate_state *s = r->inf;
    s->next_out = (uint8_t *)out;
    s->avail_out = cap;
    while (s->avail_out > 0) {
        if (s->block_state == ISAL_BLOCK_FINISH) {
            if (s->avail_in < 2 && !r->in_end && !igzip_fill(r))
                return -1;
            if (s->avail_in < 2 || s->next_in[0] != 0x1f || s->next_in[1] != 0x8b)
                break;
            igzip->inflate_reset(s);
            s->crc_flag = ISAL_GZIP;
            continue;
        }
        uint32_t in0 = s->avail_in, out0 = s->avail_out;
        int rc = igzip->inflate(s);
        if (rc != ISAL_DECOMP_OK) {
            r->zerr = Z_DATA_ERROR;
            r->zoffset = (long long)(r->in_read - s->avail_in);
            snprintf(r->zmsg, sizeof r->zmsg, "%s", igzip_strerror(rc));
            return -1;
        }
        if (s->avail_in < in0 || s->avail_out < out0 || s->block_state == ISAL_BLOCK_FINISH)
            continue;
        /* No progress: it needs more of the file. */
        if (r->in_end || s->avail_in == READ_CHUNK) {
            if (s->avail_out < cap)
                break;      /* the text so far first; the end again next call */
            r->zerr = r->in_end ? Z_BUF_ERROR : Z_DATA_ERROR;
            r->zoffset = (long long)(r->in_read - s->avail_in);
            snprintf(r->zmsg, sizeof r->zmsg, "invalid data");
            return -1;
        }
        if (!igzip_fill(r))
            return -1;
    }
    return (int)(cap - s->avail_out);
}

static void *reader_run(void *arg)
{
    struct reader *r = arg;
    uint64_t offset = 0;
    for (int i = 0;; i ^= 1) {
        pthread_mutex_lock(&r->lock);
        while (r->full[i] && !r->stop)
            pthread_cond_wait(&r->cond, &r->lock);
        bool stop = r->stop;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            return NULL;
        struct piece *pc = &r->piece[i];
        pc->len = pc->nruns = 0;
        int n, zerr = Z_OK;
        if (!r->gz) {
            n = igzip_read(r, r->raw, READ_CHUNK);
            zerr = n < 0 ? r->zerr : Z_OK;
#if defined(__x86_64__) || defined(__i386__)
            /* ISA-L's AVX code returns with the upper halves of the vector
             * registers in use, and the skipper's SSE2 loop below then ran
             * 15% slower (38 -> 44 ms on a 38 MB trace) until they were
             * cleared. */
            if (igzip->avx)
                __asm__ volatile("vzeroupper");
#endif
        } else {
            n = gzread(r->gz, r->raw, READ_CHUNK);
        }
        if (n <= 0 && r->gz) {
            const char *zmsg = gzerror(r->gz, &zerr);
            r->sys_errno = errno;
            r->zoffset = (long long)gzoffset(r->gz);
            snprintf(r->zmsg, sizeof r->zmsg, "%s", zmsg ? zmsg : "");
            if (zerr != Z_OK)
                n = -1;
        } else if (n > 0) {
            r->k.out = pc;
            skip_feed(&r->k, r->raw, (size_t)n, offset);
            offset += (uint64_t)n;
        }
        pc->raw_len = n;
        pc->nomem = r->k.nomem;
        pthread_mutex_lock(&r->lock);
        r->zerr = zerr;
        r->full[i] = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        if (n <= 0 || pc->nomem)
            return NULL;
    }
}

/* The message for how reading ended, after offset bytes of JSON. */
static int read_error(const struct reader *r, const char *path, uint64_t offset, char *msg, size_t msglen)
{
    if (r->zerr == Z_ERRNO)
        return report(msg, msglen, RSR_KINETO_ERR_READ, "%s: byte %llu: read error: %s",
                      path, (unsigned long long)offset, strerror(r->sys_errno));
    if (r->zerr == Z_BUF_ERROR)
        return report(msg, msglen, RSR_KINETO_ERR_TRUNCATED,
                      "%s: cut short: the gzip data ends after %llu bytes of JSON",
                      path, (unsigned long long)offset);
    return report(msg, msglen, RSR_KINETO_ERR_GZIP,
                  "%s: corrupt gzip data at compressed byte %lld (%llu bytes of JSON read): %s",
                  path, r->zoffset, (unsigned long long)offset, r->zmsg);
}

/* Feeds the pieces the reader prepares to yajl; returns an error code with
 * msg filled. */
static int parse_pieces(const char *path, struct reader *r, yajl_handle y, struct parser *p,
                        char *msg, size_t msglen)
{
    uint64_t offset = 0;
    char reason[160];
    for (int i = 0;; i ^= 1) {
        pthread_mutex_lock(&r->lock);
        while (!r->full[i])
            pthread_cond_wait(&r->cond, &r->lock);
        pthread_mutex_unlock(&r->lock);
        const struct piece *pc = &r->piece[i];
        if (pc->raw_len < 0)
            return read_error(r, path, offset, msg, msglen);
        if (pc->nomem)
            return report(msg, msglen, RSR_KINETO_ERR_NOMEM, "%s: out of memory", path);
        if (pc->raw_len == 0)
            break;
        for (size_t k = 0; k < pc->nruns; k++) {
            const struct piece_run *run = &pc->runs[k];
            p->run_off = run->off;
            yajl_status st = yajl_parse(y, (const unsigned char *)pc->text + run->at, run->len);
            if (st == yajl_status_ok)
                continue;
            uint64_t at = run->off + yajl_get_bytes_consumed(y);
            if (st == yajl_status_client_canceled)
                return report(msg, msglen, p->err, "%s: byte %llu: %s: %s", path,
                              (unsigned long long)at, rsr_kineto_strerror(p->err), p->what);
            yajl_reason(y, reason, sizeof reason);
            return report(msg, msglen, RSR_KINETO_ERR_JSON, "%s: byte %llu: malformed JSON: %s",
                          path, (unsigned long long)at, reason);
        }
        offset += (uint64_t)pc->raw_len;
        pthread_mutex_lock(&r->lock);
        r->full[i] = false;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
    if (offset == 0)
        return report(msg, msglen, RSR_KINETO_ERR_NOT_TRACE, "%s: empty file", path);
    yajl_status st = yajl_complete_parse(y);
    if (st == yajl_status_client_canceled)
        return report(msg, msglen, p->err, "%s: byte %llu: %s: %s", path,
                      (unsigned long long)offset, rsr_kineto_strerror(p->err), p->what);
    if (st != yajl_status_ok) {
        yajl_reason(y, reason, sizeof reason);
        return report(msg, msglen, RSR_KINETO_ERR_TRUNCATED,
                      "%s: byte %llu: cut short: the JSON ends early (%s)",
                      path, (unsigned long long)offset, reason);
    }
    if (!p->saw_events)
        return report(msg, msglen, RSR_KINETO_ERR_NOT_TRACE,
                      "%s: not a PyTorch profiler trace: no \"traceEvents\"", path);
    return RSR_KINETO_ERR_OK;
}

/* What the skipped elements said: the wall time they span, and the pid of
 * the first CPU operator unless a kept element earlier in the file gave one
 * (as if the parser had seen them in file order). */
static void merge_skipped(struct parser *p, const struct skipper *k)
{
    struct rsr_model *m = p->m;
    if (p->nprocs > 0)
        return;     /* a job's export: skipped elements belong to no process */
    if (k->has_wall) {
        if (m->wall_start_ns == 0 || k->wall_start < m->wall_start_ns)
            m->wall_start_ns = k->wall_start;
        if (k->wall_end > m->wall_end_ns)
            m->wall_end_ns = k->wall_end;
    }
    if (k->has_pid && (m->pid == 0 || k->pid_off < p->pid_off))
        m->pid = k->pid;
}

/* Parses what gz gives, or ISA-L inflates from fd when gz is NULL, with
 * the reader thread running; returns an error code. */
static int parse_file(const char *path, gzFile gz, int fd, struct parser *p, char *msg,
                      size_t msglen)
{
    struct reader r = { .gz = gz, .fd = fd, .k = { .mode = S_START } };
    r.raw = malloc(READ_CHUNK);
    bool ready = r.raw != NULL;
    if (!gz) {
        r.inf = malloc(sizeof *r.inf);
        r.in = malloc(READ_CHUNK);
        ready = ready && r.inf && r.in;
        if (ready) {
            igzip->inflate_init(r.inf);
            r.inf->crc_flag = ISAL_GZIP;
        }
    }
    yajl_handle y = yajl_alloc(&callbacks, NULL, p);
    /* Names are copied as bytes: checking their UTF-8 is work the model
     * does not need. */
    if (y)
        yajl_config(y, yajl_dont_validate_strings, 1);
    int err = RSR_KINETO_ERR_NOMEM;
    if (ready && y) {
        pthread_t tid;
        pthread_mutex_init(&r.lock, NULL);
        pthread_cond_init(&r.cond, NULL);
        if (pthread_create(&tid, NULL, reader_run, &r) == 0) {
            err = parse_pieces(path, &r, y, p, msg, msglen);
            pthread_mutex_lock(&r.lock);
            r.stop = true;
            pthread_cond_broadcast(&r.cond);
            pthread_mutex_unlock(&r.lock);
            pthread_join(tid, NULL);
            merge_skipped(p, &r.k);
        }
        pthread_cond_destroy(&r.cond);
        pthread_mutex_destroy(&r.lock);
    }
    if (err == RSR_KINETO_ERR_NOMEM)
        report(msg, msglen, err, "%s: out of memory", path);
    if (y)
        yajl_free(y);
    free(r.raw);
    free(r.inf);
    free(r.in);
    free(r.k.ev);
    for (int i = 0; i < 2; i++) {
        free(r.piece[i].text);
        free(r.piece[i].runs);
    }
    return err;
}

/* An open descriptor of path when it is gzip and ISA-L is there to inflate
 * it; else -1, and zlib reads the file. A header with another method or
 * with flags gzip does not define, which zlib refuses and ISA-L does not,
 * is left to zlib too, to say what is wrong with it. */
static int igzip_open(const char *path)
{
    igzip = rsr_isal();
    if (!igzip->inflate)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char h[4];
    if (fd >= 0 && (pread(fd, h, 4, 0) != 4 || h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 ||
                    (h[3] & 0xe0))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

int rsr_kineto_load(const char *path, struct rsr_model *m, char *msg, size_t msglen)
{
    return rsr_kineto_load_info(path, m, NULL, msg, msglen);
}

/* Reads path with p set up by the caller; finishes p->m unless the trace
 * named its processes (then the caller finishes each). */
static int load(const char *path, struct parser *p, struct rsr_kineto_info *info, char *msg,
                size_t msglen)
{
    if (info)
        memset(info, 0, sizeof *info);
    if (msglen > 0)
        msg[0] = '\0';
    gzFile gz = NULL;
    int fd = igzip_open(path);
    if (fd < 0) {
        gz = gzopen(path, "rb");
        if (!gz)
            return report(msg, msglen, RSR_KINETO_ERR_OPEN, "%s: cannot open: %s", path,
                          errno ? strerror(errno) : "out of memory");
        gzbuffer(gz, READ_CHUNK);
    }
    int err = parse_file(path, gz, fd, p, msg, msglen);
    if (err == RSR_KINETO_ERR_OK && p->nprocs == 0) {
        err = finish_model(p);
        if (err != RSR_KINETO_ERR_OK)
            report(msg, msglen, err, "%s: %s", path, rsr_kineto_strerror(err));
    }
    if (info)
        *info = p->info;
    free(p->ev.name);
    if (gz)
        gzclose(gz);
    else
        close(fd);
    return err;
}

/* What the parser holds past load() (the job's models are finished after). */
static void parser_free(struct parser *p)
{
    free(p->devs);
    geom_free(&p->funcs);
    geom_free(&p->launches);
}

int rsr_kineto_load_info(const char *path, struct rsr_model *m, struct rsr_kineto_info *info,
                         char *msg, size_t msglen)
{
    struct parser p = { .m = m };
    int err = load(path, &p, info, msg, msglen);
    parser_free(&p);
    return err;
}

int rsr_kineto_load_job(const char *path, struct rsr_model ***models, size_t *n,
                        struct rsr_kineto_info *info, char *msg, size_t msglen)
{
    *models = NULL;
    *n = 0;
    struct rsr_model *m0 = malloc(sizeof *m0);
    if (!m0)
        return report(msg, msglen, RSR_KINETO_ERR_NOMEM, "%s: out of memory", path);
    rsr_model_init(m0);
    struct parser p = { .m = m0, .want_procs = true };
    int err = load(path, &p, info, msg, msglen);
    if (err == RSR_KINETO_ERR_OK && p.nprocs == 0) {
        p.models = malloc(sizeof *p.models);
        if (p.models) {
            p.models[0] = m0;
            p.nprocs = 1;
        } else {
            err = report(msg, msglen, RSR_KINETO_ERR_NOMEM, "%s: out of memory", path);
        }
    } else if (err == RSR_KINETO_ERR_OK) {
        /* The profiler-step cut applies to a profiler's trace of one
         * process, not to a job's export (which has no steps). */
        p.many_steps = false;
        for (size_t i = 0; i < p.nprocs && err == RSR_KINETO_ERR_OK; i++) {
            p.m = p.models[i];
            err = finish_model(&p);
        }
        if (err != RSR_KINETO_ERR_OK)
            report(msg, msglen, err, "%s: %s", path, rsr_kineto_strerror(err));
    }
    free(p.procs);
    parser_free(&p);
    if (err != RSR_KINETO_ERR_OK || !p.models) {
        for (size_t i = 1; i < p.nprocs; i++) {
            rsr_model_free(p.models[i]);
            free(p.models[i]);
        }
        free(p.models);
        rsr_model_free(m0);
        free(m0);
        return err;
    }
    *models = p.models;
    *n = p.nprocs;
    return RSR_KINETO_ERR_OK;
}

void rsr_kineto_free_job(struct rsr_model **models, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rsr_model_free(models[i]);
        free(models[i]);
    }
    free(models);
}
