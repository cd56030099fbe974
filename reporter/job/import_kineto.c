/* PyTorch profiler traces -> ringside trace files (import_kineto.h).
 * kineto.c reads a trace into a model; this writes the model as the agent
 * would have: a GpuEvent per kernel, copy or set with the runtime call that
 * launched it, a SyncEvent per blocking runtime call, a CollEvent per NCCL
 * kernel and a CommEvent per process group, in bounded chunks of LZ4 frames;
 * with each kernel its Launch (grid, block, Function: registers, shared
 * memory), and the GPUs' limits as Devices, where the trace gives them.
 * What Kineto has and the format lacks (CPU operators, annotations, flows,
 * other runtime calls) is not written; README.md lists it. */
#include "reporter/job/import_kineto.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4frame.h>

#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"

#define IMPORT_HOST "unknown"

/* ncclDataType_t values (nccl.h), for PyTorch's scalar type names. */
static uint8_t nccl_datatype(const char *t)
{
    static const struct { const char *name; uint8_t nccl; } types[] = {
        { "Char", 0 }, { "Byte", 1 }, { "Bool", 1 }, { "Int", 2 }, { "UInt32", 3 },
        { "Long", 4 }, { "UInt64", 5 }, { "Half", 6 }, { "Float", 7 }, { "Double", 8 },
        { "BFloat16", 9 }, { "Float8_e4m3fn", 10 }, { "Float8_e5m2", 11 },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].nccl;
    return 255; /* no NCCL type of that name (or none given) */
}

/* ncclRedOp_t as NCCL spells it in its kernel names (..._Sum_float...). */
static uint8_t nccl_redop(const char *kernel)
{
    static const char *const ops[] = { "_Sum_", "_Prod_", "_Max_", "_Min_", "_Avg_" };
    for (uint8_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strstr(kernel, ops[i]))
            return i;
    return 0;
}

/* Copy direction from the name CUPTI gives a copy: "Memcpy HtoD (Pageable
 * -> Device)", "Memcpy DtoD (Device -> Device)", "Memcpy PtoP ...". */
static uint8_t copy_dir(const char *name)
{
    static const struct { const char *tag; uint8_t dir; } dirs[] = {
        { "HtoD", RSF_COPY_HTOD }, { "DtoH", RSF_COPY_DTOH }, { "DtoD", RSF_COPY_DTOD },
        { "HtoH", RSF_COPY_HTOH }, { "PtoP", RSF_COPY_PEER }, { "Peer", RSF_COPY_PEER },
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (strstr(name, dirs[i].tag))
            return dirs[i].dir;
    return RSF_COPY_NONE;
}

/* GpuEvent flags from the launching call's name. */
static uint8_t launch_flags(const char *call)
{
    uint8_t f = 0;
    if (strstr(call, "_ptsz") || strstr(call, "_ptds"))
        f |= RSF_GPUF_PTSZ;
    if (strstr(call, "Cooperative"))
        f |= RSF_GPUF_COOPERATIVE;
    if (strstr(call, "LaunchKernelEx"))
        f |= RSF_GPUF_EX;
    /* cudaMemcpy, cudaMemset, cuMemcpyHtoD...: the ones without Async block. */
    if ((strncmp(call, "cudaMem", 7) == 0 || strncmp(call, "cuMem", 5) == 0) &&
        (strstr(call, "cpy") || strstr(call, "set")) && !strstr(call, "Async"))
        f |= RSF_GPUF_SYNC;
    return f;
}

/* The SyncEvent kind of a runtime or driver call that waits on the GPU, or
 * -1 when the call is not one. */
static int sync_kind(const char *call)
{
    static const struct { const char *name; int kind; } calls[] = {
        { "cudaDeviceSynchronize", RSF_SYNC_CONTEXT }, { "cuCtxSynchronize", RSF_SYNC_CONTEXT },
        { "cudaStreamSynchronize", RSF_SYNC_STREAM }, { "cuStreamSynchronize", RSF_SYNC_STREAM },
        { "cudaEventSynchronize", RSF_SYNC_EVENT }, { "cuEventSynchronize", RSF_SYNC_EVENT },
        { "cudaStreamWaitEvent", RSF_SYNC_STREAM_WAIT_EVENT },
        { "cuStreamWaitEvent", RSF_SYNC_STREAM_WAIT_EVENT },
        { "cudaStreamQuery", RSF_SYNC_QUERY }, { "cuStreamQuery", RSF_SYNC_QUERY },
        { "cudaEventQuery", RSF_SYNC_QUERY }, { "cuEventQuery", RSF_SYNC_QUERY },
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        size_t n = strlen(calls[i].name);
        /* cudaStreamSynchronize_ptsz, cuStreamWaitEvent_v2... count too. */
        if (strncmp(call, calls[i].name, n) == 0 && (call[n] == '\0' || call[n] == '_'))
            return calls[i].kind;
    }
    return -1;
}

/* 64-bit FNV-1a over the process group's name and its ranks: the same on
 * every rank of the group, as CollEvent.comm must be. */
static uint64_t comm_hash(const char *name, const char *ranks)
{
    uint64_t h = 14695981039346656037ull;
    for (const char *s = name;; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
        if (!*s)
            break;
    }
    for (const char *s = ranks; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t ns(int64_t t)
{
    return t > 0 ? (uint64_t)t : 0;
}

static int say(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int mkdirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Opens a new file named as the agent names its own; never an existing one. */
static int open_new(const struct rsr_model *m, const char *dir, char *path, size_t pathlen)
{
    char base[4096];
    if (m->rank >= 0)
        snprintf(base, sizeof base, "%s/rank-%d.%s.%lld", dir, m->rank, IMPORT_HOST, (long long)m->pid);
    else
        snprintf(base, sizeof base, "%s/proc.%s.%lld", dir, IMPORT_HOST, (long long)m->pid);
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            snprintf(path, pathlen, "%s.trace.lz4", base);
        else
            snprintf(path, pathlen, "%s.%d.trace.lz4", base, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* A communicator seen in the collectives: one CommEvent each. */
struct group {
    uint64_t comm;
};

/* Everything the file will hold, in the format's records, before chunking. */
struct plan {
    struct rsf_gpu_event *gpu;      /* one per model op, same order */
    struct rsf_launch *launches;    /* parallel to gpu; NULL: the model has no geometry */
    struct rsf_coll_event *coll;    /* per op: valid where has_coll[i] */
    bool *has_coll;
    struct rsf_sync_event *syncs;
    size_t nsyncs;
    struct rsf_comm_event *comms;
    size_t ncomms;
    struct group *groups;
};

static void plan_free(struct plan *p)
{
    free(p->gpu);
    free(p->launches);
    free(p->coll);
    free(p->has_coll);
    free(p->syncs);
    free(p->comms);
    free(p->groups);
}

/* The group of collective c, added on first sight. NULL when out of memory. */
static struct group *group_of(struct plan *p, const struct rsr_model *m, const struct rsr_coll *c,
                              const struct rsr_gpu_op *op, int64_t launch_ns, uint32_t tid)
{
    /* rsr_model_finish gave each collective its communicator id and call
     * number (from the process group's name and size, or as a ringside
     * file's export said); without one, a hash of name and members. */
    uint64_t comm = c->comm_id ? c->comm_id
                  : comm_hash(rsr_model_str(m, c->comm), rsr_model_str(m, c->members));
    for (size_t i = 0; i < p->ncomms; i++)
        if (p->groups[i].comm == comm)
            return &p->groups[i];
    /* At most one group per collective: the arrays were sized for that. */
    struct group *g = &p->groups[p->ncomms];
    struct rsf_comm_event *e = &p->comms[p->ncomms++];
    g->comm = comm;
    /* Kineto does not record the communicator's creation: this record
     * stands for it at the group's first use and carries what is known,
     * this rank's place in the group and the group's size. */
    memset(e, 0, sizeof *e);
    e->start_ns = ns(launch_ns ? launch_ns : op->start_ns);
    e->comm = g->comm;
    e->tid = tid;
    e->rank = c->rank_in_group;
    e->nranks = c->group_size;
    e->device = op->device;
    e->kind = RSF_COMM_INIT;
    return g;
}

static int plan_build(struct plan *p, const struct rsr_model *m)
{
    size_t nops = m->n_ops;
    memset(p, 0, sizeof *p);
    p->gpu = calloc(nops + 1, sizeof *p->gpu);
    p->coll = calloc(nops + 1, sizeof *p->coll);
    p->has_coll = calloc(nops + 1, sizeof *p->has_coll);
    p->syncs = calloc(m->n_launches + 1, sizeof *p->syncs);
    p->comms = calloc(m->n_colls + 1, sizeof *p->comms);
    p->groups = calloc(m->n_colls + 1, sizeof *p->groups);
    if (m->n_geoms)
        p->launches = calloc(nops + 1, sizeof *p->launches);
    bool *used = calloc(m->n_launches + 1, sizeof *used);
    /* Flags by launch name, worked out once per name: 0 not yet, else flags + 1. */
    uint8_t *flags = calloc(m->strings.n + 1, 1);
    if (!p->gpu || !p->coll || !p->has_coll || !p->syncs || !p->comms || !p->groups || !used || !flags ||
        (m->n_geoms && !p->launches)) {
        free(used);
        free(flags);
        return -1;
    }
    for (size_t i = 0; i < nops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        const struct rsr_launch *l = op->correlation ? rsr_model_find_launch(m, op->correlation) : NULL;
        struct rsf_gpu_event *g = &p->gpu[i];
        if (l) {
            used[l - m->launches] = true;
            g->launch_ns = ns(l->start_ns);
            g->call_ns = (uint32_t)(l->end_ns > l->start_ns ? l->end_ns - l->start_ns : 0);
            g->tid = l->tid;
            if (l->name < m->strings.n && !flags[l->name])
                flags[l->name] = (uint8_t)(launch_flags(rsr_model_str(m, l->name)) + 1);
            g->flags = l->name < m->strings.n ? (uint8_t)(flags[l->name] - 1) : 0;
        }
        g->gpu_start_ns = ns(op->start_ns);
        g->gpu_end_ns = ns(op->end_ns);
        g->stream = (uint64_t)(int64_t)op->stream;
        g->bytes = op->bytes;
        g->name = op->name;
        g->device = (int16_t)op->device;
        g->kind = op->cls == RSR_GPU_MEMCPY ? RSF_GPU_MEMCPY
                : op->cls == RSR_GPU_MEMSET ? RSF_GPU_MEMSET : RSF_GPU_KERNEL;
        g->dir = g->kind == RSF_GPU_MEMCPY ? copy_dir(rsr_model_str(m, op->name)) : RSF_COPY_NONE;
        /* copies and sets keep a zeroed Launch: no geometry */
        if (p->launches && g->kind == RSF_GPU_KERNEL && op->launch_geom && op->launch_geom <= m->n_geoms)
            p->launches[i] = m->geoms[op->launch_geom - 1];

        /* The model's ops after RSR_COLL_UNKNOWN are the format's ops + 1
         * up to Recv; a barrier or an unnamed collective has no CollEvent. */
        const struct rsr_coll *c = op->coll >= 0 ? &m->colls[op->coll] : NULL;
        if (!c || c->op == RSR_COLL_UNKNOWN || c->op > RSR_COLL_RECV)
            continue;
        struct group *grp = group_of(p, m, c, op, l ? l->start_ns : 0, g->tid);
        struct rsf_coll_event *e = &p->coll[i];
        p->has_coll[i] = true;
        e->launch_ns = g->launch_ns;
        e->gpu_start_ns = g->gpu_start_ns;
        e->gpu_end_ns = g->gpu_end_ns;
        /* NCCL's count: the receive count for ReduceScatter, else the send count. */
        e->count = c->op == RSR_COLL_REDUCESCATTER ? c->out_count : c->in_count;
        e->bytes = c->bytes;
        e->comm = grp->comm;
        e->stream = g->stream;
        e->call_ns = g->call_ns;
        e->tid = g->tid;
        e->seq = c->seq;
        e->peer = -1;
        e->op = (uint8_t)(c->op - 1);
        e->datatype = nccl_datatype(rsr_model_str(m, c->dtype));
        e->redop = nccl_redop(rsr_model_str(m, op->name));
    }
    /* Launch-order records of blocking calls; they launched no GPU work. */
    for (size_t i = 0; i < m->n_launches; i++) {
        const struct rsr_launch *l = &m->launches[i];
        int kind = used[i] ? -1 : sync_kind(rsr_model_str(m, l->name));
        if (kind < 0)
            continue;
        struct rsf_sync_event *s = &p->syncs[p->nsyncs++];
        s->start_ns = ns(l->start_ns);
        s->dur_ns = ns(l->end_ns - l->start_ns);
        s->tid = l->tid;
        s->kind = (uint8_t)kind;
    }
    free(used);
    free(flags);
    return 0;
}

static int cmp_sync(const void *a, const void *b)
{
    const struct rsf_sync_event *x = a, *y = b;
    return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* Encoder state: one chunk buffer, one frame buffer, reused. */
struct out {
    int fd;
    LZ4F_cctx *cctx;
    uint8_t *enc, *frame;
    size_t enc_cap, frame_cap;
};

/* Encodes, frames and writes one chunk. Returns 0, or an errno value. */
static int emit(struct out *o, const struct rsf_chunk *c)
{
    size_t bound = rsf_chunk_bound(c);
    if (!bound || rsf_buf_reserve(&o->enc, &o->enc_cap, bound) ||
        rsf_buf_reserve(&o->frame, &o->frame_cap, rsf_frame_bound(bound)))
        return ENOMEM;
    struct rsf_buf b = { o->enc, 0, o->enc_cap };
    if (rsf_chunk_encode(c, &b) != RSF_ERR_OK)
        return EINVAL;
    size_t n = rsf_frame_compress(o->cctx, b.p, b.len, o->frame, o->frame_cap);
    if (!n)
        return EINVAL;
    for (const uint8_t *p = o->frame; n;) {
        ssize_t w = write(o->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The chunks: GPU events in start order, RSR_IMPORT_CHUNK_EVENTS at a time,
 * each with the collectives of its NCCL kernels and the waits that began
 * before the next chunk's first GPU event; strings defined in the first
 * chunk that refers to them (model ids are file ids: both dense from 1). */
static int write_chunks(struct out *o, const struct rsr_model *m, const struct plan *p,
                        const struct rsf_meta *meta, const struct rsf_clock_pair *clock)
{
    const size_t per = RSR_IMPORT_CHUNK_EVENTS;
    struct rsf_coll_event *colls = malloc(per * sizeof *colls);
    const char **strs = malloc((m->strings.n + 1) * sizeof *strs);
    if (!colls || !strs) {
        free(colls);
        free(strs);
        return ENOMEM;
    }
    for (size_t i = 1; i < m->strings.n; i++)
        strs[i] = rsr_model_str(m, (uint32_t)i);
    struct rsf_range *ranges = calloc(m->n_ranges + 1, sizeof *ranges);
    if (!ranges) {
        free(colls);
        free(strs);
        return ENOMEM;
    }
    for (size_t r = 0; r < m->n_ranges; r++) {
        const struct rsr_range *x = &m->ranges[r];
        ranges[r] = (struct rsf_range){ .start_ns = ns(x->start_ns), .end_ns = ns(x->end_ns), .tid = x->tid,
                                        .end_tid = x->tid, .name = x->name, .depth = x->depth, .kind = x->kind };
    }
    uint64_t written = 0;
    uint32_t defined = 0, seq = 0;
    size_t gi = 0, si = 0;
    int err = 0;
    for (bool last = false; !last && !err; seq++) {
        size_t gend = gi + per < m->n_ops ? gi + per : m->n_ops;
        uint64_t limit = gend < m->n_ops ? p->gpu[gend].gpu_start_ns : UINT64_MAX;
        size_t s0 = si;
        while (si < p->nsyncs && si - s0 < per && p->syncs[si].start_ns < limit)
            si++;
        size_t nc = 0;
        uint32_t maxref = defined;
        for (size_t i = gi; i < gend; i++) {
            if (p->has_coll[i])
                colls[nc++] = p->coll[i];
            if (p->gpu[i].name > maxref)
                maxref = p->gpu[i].name;
        }
        /* the first chunk carries the functions and devices, whose names
         * are strings too */
        for (size_t f = 0; seq == 0 && f < m->n_functions; f++)
            if (m->functions[f].name > maxref)
                maxref = m->functions[f].name;
        for (size_t d = 0; seq == 0 && d < m->n_devices; d++)
            if (m->devices[d].name > maxref)
                maxref = m->devices[d].name;
        last = gend == m->n_ops && si == p->nsyncs;
        /* the profiler's steps, in the last chunk, whose strings cover
         * their names */
        for (size_t r = 0; last && r < m->n_ranges; r++)
            if (m->ranges[r].name > maxref)
                maxref = m->ranges[r].name;
        struct rsf_counters counters = { .recorded = written + (gend - gi) + (si - s0) + nc };
        if (seq == 0)
            counters.recorded += p->ncomms;
        written = counters.recorded;
        struct rsf_chunk c = {
            .seq = seq, .meta = seq == 0 ? meta : NULL,
            .strings_base = defined + 1, .strings = strs + defined + 1, .nstrings = maxref - defined,
            .clocks = seq == 0 ? clock : NULL, .nclocks = seq == 0,
            .counters = &counters, .end = last,
            .gpu = p->gpu + gi, .ngpu = (uint32_t)(gend - gi),
            .syncs = p->syncs + s0, .nsyncs = (uint32_t)(si - s0),
            .colls = colls, .ncolls = (uint32_t)nc,
            .comms = seq == 0 ? p->comms : NULL, .ncomms = seq == 0 ? (uint32_t)p->ncomms : 0,
            .ranges = last ? ranges : NULL, .nranges = last ? (uint32_t)m->n_ranges : 0,
            .launches = p->launches ? p->launches + gi : NULL,
            .nlaunches = p->launches ? (uint32_t)(gend - gi) : 0,
            .functions = seq == 0 ? m->functions : NULL,
            .nfunctions = seq == 0 ? (uint32_t)m->n_functions : 0,
            .devices = seq == 0 ? m->devices : NULL,
            .ndevices = seq == 0 ? (uint32_t)m->n_devices : 0,
        };
        err = emit(o, &c);
        defined = maxref;
        gi = gend;
    }
    free(colls);
    free(strs);
    free(ranges);
    return err;
}

int rsr_import_write(const struct rsr_model *m, const struct rsr_kineto_info *info,
                     const char *source, const char *dir, char *path, size_t pathlen,
                     char *msg, size_t msglen)
{
    if (msglen > 0)
        msg[0] = '\0';
    if (mkdirs(dir) != 0)
        return say(msg, msglen, "%s: cannot create: %s", dir, strerror(errno));
    struct plan p;
    if (plan_build(&p, m) != 0) {
        plan_free(&p);
        return say(msg, msglen, "%s: out of memory", source);
    }
    if (p.nsyncs > 1)
        qsort(p.syncs, p.nsyncs, sizeof *p.syncs, cmp_sync);

    const char *slash = strrchr(dir, '/');
    const char *job = slash && slash[1] ? slash + 1 : dir;
    char after[32];
    snprintf(after, sizeof after, "%llu", (unsigned long long)m->dropped);
    const char *keys[] = { "imported_from", "kineto_records_not_imported" };
    const char *values[] = { source, after };
    /* Kineto's ts: realtime minus baseTimeNanoseconds where it writes that,
     * else realtime already; the pair puts the file on the job's time line. */
    uint64_t t0 = ns(m->wall_start_ns);
    struct rsf_clock_pair clock = { t0, t0 + (info && info->has_base_time ? ns(info->base_time_ns) : 0) };
    struct rsf_meta meta = {
        .format_version = RSF_FORMAT_VERSION, .host = IMPORT_HOST, .pid = (int32_t)m->pid,
        .ppid = 0, .rank = m->rank, .local_rank = m->local_rank, .world_size = m->world_size,
        .parent_rank = -1, .role = m->role, .job = job, .start = clock,
        .setting_keys = keys, .setting_values = values, .nsettings = 2,
        .agent_version = RINGSIDE_VERSION,
    };

    struct out o = { .fd = -1 };
    int err = 0;
    if (LZ4F_isError(LZ4F_createCompressionContext(&o.cctx, LZ4F_VERSION))) {
        o.cctx = NULL;
        err = ENOMEM;
    } else if ((o.fd = open_new(m, dir, path, pathlen)) < 0) {
        err = errno;
    } else {
        err = write_chunks(&o, m, &p, &meta, &clock);
    }
    if (o.fd >= 0 && close(o.fd) != 0 && !err)
        err = errno;
    if (o.cctx)
        LZ4F_freeCompressionContext(o.cctx);
    free(o.enc);
    free(o.frame);
    plan_free(&p);
    if (err)
        return say(msg, msglen, "%s: cannot write: %s", o.fd >= 0 ? path : dir, strerror(err));
    return 0;
}

/* Files are handed out to worker threads one at a time. */
struct job {
    char **in;
    int n;
    const char *dir;
    int quiet;
    pthread_mutex_t lock;
    int next, failed;
};

static void *convert_files(void *arg)
{
    struct job *j = arg;
    char msg[1024], path[4096];
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int i = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (i >= j->n)
            return NULL;
        struct rsr_model **models;
        struct rsr_kineto_info info;
        size_t nm = 0, nops = 0;
        int rc = rsr_kineto_load_job(j->in[i], &models, &nm, &info, msg, sizeof msg);
        char first[4096] = "";
        for (size_t k = 0; rc == 0 && k < nm; k++) {
            rc = rsr_import_write(models[k], &info, j->in[i], j->dir, path, sizeof path, msg, sizeof msg);
            nops += models[k]->n_ops;
            if (k == 0)
                snprintf(first, sizeof first, "%s", path);
        }
        pthread_mutex_lock(&j->lock);
        if (rc != 0) {
            fprintf(stderr, "ringside: import-kineto: %s\n", msg);
            j->failed = 1;
        } else if (!j->quiet && nm == 1) {
            printf("%s -> %s (%zu GPU events)\n", j->in[i], first, nops);
        } else if (!j->quiet) {
            printf("%s -> %zu files in %s (%zu GPU events)\n", j->in[i], nm, j->dir, nops);
        }
        pthread_mutex_unlock(&j->lock);
        rsr_kineto_free_job(models, nm);
    }
}

int rsr_import_kineto_run(char **in, int n, const char *dir, int nthreads, int quiet)
{
    struct job j = { .in = in, .n = n, .dir = dir, .quiet = quiet };
    pthread_mutex_init(&j.lock, NULL);
    if (nthreads > n)
        nthreads = n;
    if (nthreads < 1)
        nthreads = 1;
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    int started = 0;
    for (int i = 1; t && i < nthreads; i++, started++)
        if (pthread_create(&t[i], NULL, convert_files, &j) != 0)
            break;
    convert_files(&j);
    for (int i = 1; i <= started; i++)
        pthread_join(t[i], NULL);
    free(t);
    pthread_mutex_destroy(&j.lock);
    return j.failed ? 1 : 0;
}
