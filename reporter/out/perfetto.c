/* Chrome trace-event JSON of the GPU timelines (perfetto.h), through the
 * JSON writer (json.h). The layout follows Kineto's own traces, which is
 * what HTA and import-kineto read: GPU work keyed by its "stream" and
 * "correlation" args, launches by their "correlation", NCCL kernels with
 * Kineto's collective args. */
#include "reporter/out/perfetto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter/base/json.h"
#include "formats/trace.h"

/* PyTorch's names for the collectives, as Kineto writes "Collective name". */
static const char *coll_name(int op)
{
    static const char *const names[RSR_COLL_NOPS] = {
        [RSR_COLL_ALLREDUCE] = "allreduce", [RSR_COLL_ALLGATHER] = "allgather",
        [RSR_COLL_REDUCESCATTER] = "reduce_scatter", [RSR_COLL_BROADCAST] = "broadcast",
        [RSR_COLL_REDUCE] = "reduce", [RSR_COLL_ALLTOALL] = "all_to_all",
        [RSR_COLL_GATHER] = "gather", [RSR_COLL_SCATTER] = "scatter", [RSR_COLL_SEND] = "send",
        [RSR_COLL_RECV] = "recv", [RSR_COLL_BARRIER] = "barrier",
    };
    return op > 0 && op < RSR_COLL_NOPS && names[op] ? names[op] : "unknown";
}

/* PyTorch's name of a data type (Kineto's "dtype"), for the NCCL names a
 * ringside file's collectives carry; other names are written as they are. */
static const char *torch_dtype(const char *t)
{
    static const char *const names[][2] = {
        { "int8", "Char" }, { "uint8", "Byte" }, { "int32", "Int" }, { "uint32", "UInt32" },
        { "int64", "Long" }, { "uint64", "UInt64" }, { "float16", "Half" }, { "float32", "Float" },
        { "float64", "Double" }, { "bfloat16", "BFloat16" }, { "float8e4m3", "Float8_e4m3fn" },
        { "float8e5m2", "Float8_e5m2" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i][0]) == 0)
            return names[i][1];
    return t;
}

/* The runtime call that stands for a host wait of a kind (enum rsf_sync_kind). */
static const char *sync_call(int kind)
{
    static const char *const calls[] = {
        "cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize", "cudaMemcpy",
        "cudaStreamWaitEvent", "cudaStreamQuery",
    };
    return kind >= 0 && (size_t)kind < sizeof calls / sizeof calls[0] ? calls[kind] : "cudaStreamSynchronize";
}

static const char *gpu_cat(int cls)
{
    return cls == RSR_GPU_MEMCPY ? "gpu_memcpy" : cls == RSR_GPU_MEMSET ? "gpu_memset" : "kernel";
}

/* A job has millions of events, and few names: each string of a model is
 * escaped once (rsr_jw_quote) and copied as it is after. */
struct names {
    char **quoted;          /* per string id of the model: its JSON text, quotes included */
    size_t n;
};

/* A model string by id, escaped on first use. */
static void put_name(struct rsr_jw *w, struct names *nm, const struct rsr_model *m, uint32_t id)
{
    if (id < nm->n && !nm->quoted[id])
        nm->quoted[id] = rsr_jw_quote(rsr_model_str(m, id), RSR_JW_JSON);
    if (id < nm->n && nm->quoted[id])
        rsr_jw_raw(w, nm->quoted[id], strlen(nm->quoted[id]));
    else
        rsr_jw_str(w, rsr_model_str(m, id));
}

static void names_free(struct names *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->quoted[i]);
    free(nm->quoted);
    nm->quoted = NULL;
    nm->n = 0;
}

/* Starts on a model's strings: a fresh cache as large as its table. */
static void names_model(struct names *nm, const struct rsr_model *m)
{
    names_free(nm);
    nm->n = m->strings.n;
    nm->quoted = calloc(nm->n ? nm->n : 1, sizeof *nm->quoted);
    if (!nm->quoted)
        nm->n = 0;
}

/* A metadata event: {"ph":"M","name":NAME,"pid":PID,"tid":TID,"args":{ARG:...}},
 * left open at ARG's value. */
static void put_meta(struct rsr_jw *w, const char *name, int64_t pid, int64_t tid, const char *arg)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "ph", "M");
    rsr_jw_kstr(w, "name", name);
    rsr_jw_kint(w, "pid", pid);
    rsr_jw_kint(w, "tid", tid);
    rsr_jw_kobject(w, "args", 0);
    rsr_jw_key(w, arg);
}

static void put_meta_end(struct rsr_jw *w)
{
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* Process and stream names, so the UI shows "rank 3" and "stream 7". */
static void put_names(struct rsr_jw *w, const struct rsr_model *m, int64_t pid)
{
    char label[64];
    if (m->rank >= 0)
        snprintf(label, sizeof label, "rank %d", m->rank);
    else
        snprintf(label, sizeof label, "pid %lld", (long long)m->pid);
    put_meta(w, "process_name", pid, 0, "name");
    rsr_jw_str(w, label);
    put_meta_end(w);
    put_meta(w, "process_sort_index", pid, 0, "sort_index");
    rsr_jw_int(w, pid);
    put_meta_end(w);
    /* Streams in first-seen order; few per process, so a linear look-up. */
    int32_t seen[256];
    size_t nseen = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        int32_t s = m->ops[i].stream;
        size_t k = 0;
        while (k < nseen && seen[k] != s)
            k++;
        if (k < nseen)
            continue;
        if (nseen < sizeof seen / sizeof seen[0])
            seen[nseen++] = s;
        snprintf(label, sizeof label, "stream %d", s);
        put_meta(w, "thread_name", pid, s, "name");
        rsr_jw_str(w, label);
        put_meta_end(w);
    }
}

/* A complete event's start: {"ph":"X","cat":CAT,"name": (its value next). */
static void put_x(struct rsr_jw *w, const char *cat)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "ph", "X");
    rsr_jw_kstr(w, "cat", cat);
    rsr_jw_key(w, "name");
}

/* Times are ns as microseconds with three decimals (rsr_jw_kmilli): exact,
 * and what Kineto writes. */
static void put_op(struct rsr_jw *w, struct names *nm, const struct rsr_model *m, int64_t pid,
                   const struct rsr_gpu_op *op)
{
    put_x(w, gpu_cat(op->cls));
    put_name(w, nm, m, op->name);
    rsr_jw_kint(w, "pid", pid);
    rsr_jw_kint(w, "tid", op->stream);
    rsr_jw_kmilli(w, "ts", op->start_ns);
    rsr_jw_kmilli(w, "dur", op->end_ns - op->start_ns);
    rsr_jw_kobject(w, "args", 0);
    rsr_jw_kint(w, "device", op->device);
    rsr_jw_kint(w, "stream", op->stream);
    if (op->correlation)
        rsr_jw_kuint(w, "correlation", op->correlation);
    if (op->cls == RSR_GPU_MEMCPY || op->cls == RSR_GPU_MEMSET)
        rsr_jw_kuint(w, "bytes", op->bytes);
    if (op->coll >= 0 && (size_t)op->coll < m->n_colls) {
        const struct rsr_coll *c = &m->colls[op->coll];
        rsr_jw_kstr(w, "Collective name", coll_name(c->op));
        rsr_jw_kuint(w, "In msg nelems", c->in_count);
        rsr_jw_kuint(w, "Out msg nelems", c->out_count);
        rsr_jw_kint(w, "Group size", c->group_size);
        rsr_jw_kstr(w, "dtype", torch_dtype(rsr_model_str(m, c->dtype)));
        rsr_jw_key(w, "Process Group Name");
        put_name(w, nm, m, c->comm);
        rsr_jw_key(w, "Process Group Ranks");
        put_name(w, nm, m, c->members);
        /* Not Kineto's: what a ringside file said of the communicator, so
         * that import-kineto gives back the same ids and call numbers. */
        if (c->comm_id) {
            char id[24];
            snprintf(id, sizeof id, "%016" PRIx64, c->comm_id);
            rsr_jw_kstr(w, "Communicator id", id);
            rsr_jw_kuint(w, "Collective seq", c->seq);
        }
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* A host-side slice's place and time: pid, tid, ts, dur. */
static void put_host_span(struct rsr_jw *w, int64_t pid, uint32_t tid, int64_t start, int64_t end)
{
    rsr_jw_kint(w, "pid", pid);
    rsr_jw_kuint(w, "tid", tid);
    rsr_jw_kmilli(w, "ts", start);
    rsr_jw_kmilli(w, "dur", end - start);
}

/* A runtime call: a launch (its own correlation) or a host wait. */
static void put_call(struct rsr_jw *w, int64_t pid, uint32_t tid, int64_t start, int64_t end, uint64_t correlation)
{
    put_host_span(w, pid, tid, start, end);
    rsr_jw_kobject(w, "args", 0);
    rsr_jw_kuint(w, "correlation", correlation);
    rsr_jw_end(w);
    rsr_jw_end(w);
}

static void put_launch(struct rsr_jw *w, struct names *nm, const struct rsr_model *m, int64_t pid,
                       const struct rsr_launch *l)
{
    put_x(w, "cuda_runtime");
    put_name(w, nm, m, l->name);
    put_call(w, pid, l->tid, l->start_ns, l->end_ns, l->correlation);
}

/* The trace's pid of each process: its rank, else its pid, else (taken by
 * another) a number above any pid. */
static bool id_taken(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t k = 0; k < n; k++)
        if (ids[k] == id)
            return true;
    return false;
}

static int64_t *process_ids(struct rsr_model *const *models, size_t n)
{
    int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return NULL;
    for (size_t i = 0; i < n; i++)
        ids[i] = -1;
    for (size_t i = 0; i < n; i++)
        if (models[i]->rank >= 0 && !id_taken(ids, n, models[i]->rank))
            ids[i] = models[i]->rank;
    int64_t spare = (int64_t)1 << 32;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= 0)
            continue;
        if (models[i]->pid > 0 && !id_taken(ids, n, models[i]->pid))
            ids[i] = models[i]->pid;
        else
            ids[i] = spare++;
    }
    return ids;
}

/* A host wait, as the runtime call Kineto would show; its correlation is
 * one no launch has, so nothing takes it for a launch. */
static void put_sync(struct rsr_jw *w, int64_t pid, const struct rsr_sync *s, uint64_t correlation)
{
    put_x(w, "cuda_runtime");
    rsr_jw_str(w, sync_call(s->kind));
    put_call(w, pid, s->tid, s->start_ns, s->end_ns, correlation);
}

/* An NVTX range, as Kineto writes a user annotation (record_function,
 * ProfilerStep#N), on the thread that began it; a mark has no length. */
static void put_range(struct rsr_jw *w, struct names *nm, const struct rsr_model *m, int64_t pid,
                      const struct rsr_range *r)
{
    put_x(w, "user_annotation");
    put_name(w, nm, m, r->name);
    put_host_span(w, pid, r->tid, r->start_ns, r->end_ns);
    rsr_jw_kobject(w, "args", 0);
    rsr_jw_kstr(w, "source", "nvtx");
    rsr_jw_kstr(w, "nvtx", rsf_range_kind_name(r->kind));
    if (r->domain) {
        rsr_jw_key(w, "domain");
        put_name(w, nm, m, r->domain);
    }
    if (r->open_at_exit)
        rsr_jw_kbool(w, "open_at_exit", 1);
    rsr_jw_end(w);
    rsr_jw_end(w);
}

/* The top-level keys before the events: what this file is, its processes
 * (for import-kineto to give each its own file) and the job's ranks. */
static void put_head(struct rsr_jw *w, struct rsr_model *const *models, size_t nmodels, const int64_t *ids)
{
    int32_t world = -1;
    for (size_t i = 0; i < nmodels; i++)
        if (models[i]->world_size > world)
            world = models[i]->world_size;
    rsr_jw_kint(w, "schemaVersion", 1);
    rsr_jw_kobject(w, "ringside", RSR_JW_SPACED);
    rsr_jw_kstr(w, "format", "Kineto-compatible JSON (the PyTorch profiler's trace format) of the GPU work, as "
                             "HTA reads it; every record in Perfetto's own format: trace.pftrace beside a report, "
                             "or ringside export perfetto -o FILE.pftrace");
    rsr_jw_line(w);
    rsr_jw_karray(w, "processes", RSR_JW_SPACED | RSR_JW_LINES | RSR_JW_INDENT);
    for (size_t i = 0; i < nmodels; i++) {
        rsr_jw_object(w, RSR_JW_SPACED);
        rsr_jw_kint(w, "pid", ids[i]);
        rsr_jw_kint(w, "rank", models[i]->rank);
        rsr_jw_kint(w, "world_size", models[i]->world_size);
        rsr_jw_kint(w, "os_pid", models[i]->pid);
        rsr_jw_kint(w, "wall_start_ns", models[i]->wall_start_ns);
        rsr_jw_kint(w, "wall_end_ns", models[i]->wall_end_ns);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "distributedInfo", RSR_JW_SPACED);
    rsr_jw_kstr(w, "backend", "nccl");
    if (nmodels == 1 && models[0]->rank >= 0)
        rsr_jw_kint(w, "rank", models[0]->rank);
    if (world > 0)
        rsr_jw_kint(w, "world_size", world);
    rsr_jw_end(w);
}

int rsr_perfetto_write(FILE *f, struct rsr_model *const *models, size_t nmodels)
{
    int64_t *ids = process_ids(models, nmodels);
    struct rsr_jw *w = malloc(sizeof *w);
    struct names nm = { NULL, 0 };
    if (!ids || !w) {
        free(ids);
        free(w);
        errno = ENOMEM;
        return -1;
    }
    rsr_jw_open(w, f, RSR_JW_JSON);
    rsr_jw_object(w, RSR_JW_SPACED | RSR_JW_LINES);
    put_head(w, models, nmodels, ids);
    rsr_jw_karray(w, "traceEvents", RSR_JW_LINES);
    for (size_t i = 0; i < nmodels; i++) {
        const struct rsr_model *m = models[i];
        put_names(w, m, ids[i]);
        names_model(&nm, m);
        for (size_t k = 0; k < m->n_launches; k++)
            put_launch(w, &nm, m, ids[i], &m->launches[k]);
        for (size_t k = 0; k < m->n_ops; k++)
            put_op(w, &nm, m, ids[i], &m->ops[k]);
        uint64_t corr = 0;
        for (size_t k = 0; k < m->n_launches; k++)
            if (m->launches[k].correlation > corr)
                corr = m->launches[k].correlation;
        for (size_t k = 0; k < m->n_syncs; k++)
            put_sync(w, ids[i], &m->syncs[k], ++corr);
        for (size_t k = 0; k < m->n_ranges; k++)
            put_range(w, &nm, m, ids[i], &m->ranges[k]);
    }
    names_free(&nm);
    free(ids);
    rsr_jw_line(w);
    rsr_jw_end(w);
    rsr_jw_kstr(w, "displayTimeUnit", "ms");
    rsr_jw_line(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    int rc = rsr_jw_close(w);
    free(w);
    return rc == 0 && fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
