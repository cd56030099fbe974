/* Chrome trace-event JSON of the GPU timelines (perfetto.h). The layout
 * follows Kineto's own traces, which is what HTA and import-kineto read:
 * GPU work keyed by its "stream" and "correlation" args, launches by their
 * "correlation", NCCL kernels with Kineto's collective args. */
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

/* A job has millions of events: they are formatted by hand into a buffer
 * (stdio's formatting was most of the time), and each string of a model is
 * escaped once. */
#define WBUF (1 << 16)

struct writer {
    FILE *f;
    size_t n;
    char **names;           /* per string id of the model: its JSON text, quotes included */
    size_t nnames;
    char buf[WBUF];
};

static void w_flush(struct writer *w)
{
    if (w->n)
        fwrite(w->buf, 1, w->n, w->f);
    w->n = 0;
}

static void w_mem(struct writer *w, const char *s, size_t len)
{
    if (w->n + len > WBUF) {
        w_flush(w);
        if (len > WBUF) {
            fwrite(s, 1, len, w->f);
            return;
        }
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

#define W_LIT(w, lit) w_mem(w, lit, sizeof lit - 1)

static void w_u64(struct writer *w, uint64_t v)
{
    char t[20];
    size_t i = sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_mem(w, t + i, sizeof t - i);
}

static void w_i64(struct writer *w, int64_t v)
{
    if (v < 0)
        W_LIT(w, "-");
    w_u64(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* ns as microseconds with three decimals: exact, and what Kineto writes. */
static void w_us(struct writer *w, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        W_LIT(w, "-");
    w_u64(w, a / 1000);
    char t[4] = { '.', (char)('0' + a % 1000 / 100), (char)('0' + a % 100 / 10), (char)('0' + a % 10) };
    w_mem(w, t, sizeof t);
}

/* Any text as a JSON string, through json.c's escaping. */
static void w_str(struct writer *w, const char *s)
{
    w_flush(w);
    rsr_json_str(w->f, s);
}

/* A model string by id, escaped on first use. */
static void w_name(struct writer *w, const struct rsr_model *m, uint32_t id)
{
    if (id < w->nnames && !w->names[id]) {
        char *text = NULL;
        size_t len = 0;
        FILE *mf = open_memstream(&text, &len);
        if (mf) {
            rsr_json_str(mf, rsr_model_str(m, id));
            if (fclose(mf) == 0)
                w->names[id] = text;
            else
                free(text);
        }
    }
    if (id < w->nnames && w->names[id])
        w_mem(w, w->names[id], strlen(w->names[id]));
    else
        w_str(w, rsr_model_str(m, id));
}

/* Starts on a model's strings: a fresh cache as large as its table. */
static void w_model(struct writer *w, const struct rsr_model *m)
{
    for (size_t i = 0; i < w->nnames; i++)
        free(w->names[i]);
    free(w->names);
    w->nnames = m->strings.n;
    w->names = calloc(w->nnames ? w->nnames : 1, sizeof *w->names);
    if (!w->names)
        w->nnames = 0;
}

/* Process and stream names, so the UI shows "rank 3" and "stream 7". */
static void put_names(FILE *f, const struct rsr_model *m, int64_t pid, bool *first)
{
    char label[64];
    if (m->rank >= 0)
        snprintf(label, sizeof label, "rank %d", m->rank);
    else
        snprintf(label, sizeof label, "pid %lld", (long long)m->pid);
    fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"tid\":0,\"args\":{\"name\":\"%s\"}}",
            *first ? "" : ",", (long long)pid, label);
    *first = false;
    fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%lld,\"tid\":0,"
               "\"args\":{\"sort_index\":%lld}}", (long long)pid, (long long)pid);
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
        fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%d,"
                   "\"args\":{\"name\":\"stream %d\"}}", (long long)pid, s, s);
    }
}

static void put_op(struct writer *w, const struct rsr_model *m, int64_t pid, const struct rsr_gpu_op *op)
{
    W_LIT(w, ",\n{\"ph\":\"X\",\"cat\":\"");
    const char *cat = gpu_cat(op->cls);
    w_mem(w, cat, strlen(cat));
    W_LIT(w, "\",\"name\":");
    w_name(w, m, op->name);
    W_LIT(w, ",\"pid\":");
    w_i64(w, pid);
    W_LIT(w, ",\"tid\":");
    w_i64(w, op->stream);
    W_LIT(w, ",\"ts\":");
    w_us(w, op->start_ns);
    W_LIT(w, ",\"dur\":");
    w_us(w, op->end_ns - op->start_ns);
    W_LIT(w, ",\"args\":{\"device\":");
    w_i64(w, op->device);
    W_LIT(w, ",\"stream\":");
    w_i64(w, op->stream);
    if (op->correlation) {
        W_LIT(w, ",\"correlation\":");
        w_u64(w, op->correlation);
    }
    if (op->cls == RSR_GPU_MEMCPY || op->cls == RSR_GPU_MEMSET) {
        W_LIT(w, ",\"bytes\":");
        w_u64(w, op->bytes);
    }
    if (op->coll >= 0 && (size_t)op->coll < m->n_colls) {
        const struct rsr_coll *c = &m->colls[op->coll];
        w_flush(w);
        fprintf(w->f, ",\"Collective name\":\"%s\",\"In msg nelems\":%" PRIu64
                      ",\"Out msg nelems\":%" PRIu64 ",\"Group size\":%d,\"dtype\":",
                coll_name(c->op), c->in_count, c->out_count, c->group_size);
        w_str(w, torch_dtype(rsr_model_str(m, c->dtype)));
        W_LIT(w, ",\"Process Group Name\":");
        w_name(w, m, c->comm);
        W_LIT(w, ",\"Process Group Ranks\":");
        w_name(w, m, c->members);
        /* Not Kineto's: what a ringside file said of the communicator, so
         * that import-kineto gives back the same ids and call numbers. */
        if (c->comm_id) {
            w_flush(w);
            fprintf(w->f, ",\"Communicator id\":\"%016" PRIx64 "\",\"Collective seq\":%u", c->comm_id, c->seq);
        }
    }
    W_LIT(w, "}}");
}

/* A host-side slice's place and time: pid, tid, ts, dur. */
static void put_host_span(struct writer *w, int64_t pid, uint32_t tid, int64_t start, int64_t end)
{
    W_LIT(w, ",\"pid\":");
    w_i64(w, pid);
    W_LIT(w, ",\"tid\":");
    w_u64(w, tid);
    W_LIT(w, ",\"ts\":");
    w_us(w, start);
    W_LIT(w, ",\"dur\":");
    w_us(w, end - start);
}

/* A runtime call: a launch (its own correlation) or a host wait. */
static void put_call(struct writer *w, int64_t pid, uint32_t tid, int64_t start, int64_t end,
                     uint64_t correlation)
{
    put_host_span(w, pid, tid, start, end);
    W_LIT(w, ",\"args\":{\"correlation\":");
    w_u64(w, correlation);
    W_LIT(w, "}}");
}

static void put_launch(struct writer *w, const struct rsr_model *m, int64_t pid, const struct rsr_launch *l)
{
    W_LIT(w, ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":");
    w_name(w, m, l->name);
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
static void put_sync(struct writer *w, int64_t pid, const struct rsr_sync *s, uint64_t correlation)
{
    W_LIT(w, ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"");
    const char *call = sync_call(s->kind);
    w_mem(w, call, strlen(call));
    W_LIT(w, "\"");
    put_call(w, pid, s->tid, s->start_ns, s->end_ns, correlation);
}

/* An NVTX range, as Kineto writes a user annotation (record_function,
 * ProfilerStep#N), on the thread that began it; a mark has no length. */
static void put_range(struct writer *w, const struct rsr_model *m, int64_t pid, const struct rsr_range *r)
{
    W_LIT(w, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":");
    w_name(w, m, r->name);
    put_host_span(w, pid, r->tid, r->start_ns, r->end_ns);
    W_LIT(w, ",\"args\":{\"source\":\"nvtx\",\"nvtx\":\"");
    const char *kind = rsf_range_kind_name(r->kind);
    w_mem(w, kind, strlen(kind));
    W_LIT(w, "\"");
    if (r->domain) {
        W_LIT(w, ",\"domain\":");
        w_name(w, m, r->domain);
    }
    if (r->open_at_exit)
        W_LIT(w, ",\"open_at_exit\":true");
    W_LIT(w, "}}");
}

int rsr_perfetto_write(FILE *f, struct rsr_model *const *models, size_t nmodels)
{
    int64_t *ids = process_ids(models, nmodels);
    if (!ids) {
        errno = ENOMEM;
        return -1;
    }
    int32_t world = -1;
    for (size_t i = 0; i < nmodels; i++)
        if (models[i]->world_size > world)
            world = models[i]->world_size;
    /* The process list lets import-kineto give each process its own file. */
    fputs("{\n\"schemaVersion\": 1,\n\"ringside\": {\"format\": \"Kineto-compatible JSON (the PyTorch "
          "profiler's trace format) of the GPU work, as HTA reads it; every record in Perfetto's own format: "
          "trace.pftrace beside a report, or ringside export perfetto -o FILE.pftrace\",\n\"processes\": [", f);
    for (size_t i = 0; i < nmodels; i++)
        fprintf(f, "%s\n  {\"pid\": %lld, \"rank\": %d, \"world_size\": %d, \"os_pid\": %lld, "
                   "\"wall_start_ns\": %lld, \"wall_end_ns\": %lld}",
                i ? "," : "", (long long)ids[i], models[i]->rank, models[i]->world_size,
                (long long)models[i]->pid, (long long)models[i]->wall_start_ns,
                (long long)models[i]->wall_end_ns);
    fputs("]},\n\"distributedInfo\": {\"backend\": \"nccl\"", f);
    if (nmodels == 1 && models[0]->rank >= 0)
        fprintf(f, ", \"rank\": %d", models[0]->rank);
    if (world > 0)
        fprintf(f, ", \"world_size\": %d", world);
    fputs("},\n\"traceEvents\": [", f);
    bool first = true;
    struct writer *w = calloc(1, sizeof *w);
    if (!w) {
        free(ids);
        errno = ENOMEM;
        return -1;
    }
    w->f = f;
    for (size_t i = 0; i < nmodels; i++) {
        const struct rsr_model *m = models[i];
        put_names(f, m, ids[i], &first);
        w_model(w, m);
        for (size_t k = 0; k < m->n_launches; k++)
            put_launch(w, m, ids[i], &m->launches[k]);
        for (size_t k = 0; k < m->n_ops; k++)
            put_op(w, m, ids[i], &m->ops[k]);
        uint64_t corr = 0;
        for (size_t k = 0; k < m->n_launches; k++)
            if (m->launches[k].correlation > corr)
                corr = m->launches[k].correlation;
        for (size_t k = 0; k < m->n_syncs; k++)
            put_sync(w, ids[i], &m->syncs[k], ++corr);
        for (size_t k = 0; k < m->n_ranges; k++)
            put_range(w, m, ids[i], &m->ranges[k]);
        w_flush(w);
    }
    for (size_t i = 0; i < w->nnames; i++)
        free(w->names[i]);
    free(w->names);
    free(w);
    free(ids);
    fputs("\n],\n\"displayTimeUnit\": \"ms\"\n}\n", f);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
