/* Chrome trace-event JSON of the GPU timelines (perfetto.h). The layout
 * follows Kineto's own traces, which is what HTA and import-kineto read:
 * GPU work keyed by its "stream" and "correlation" args, launches by their
 * "correlation", NCCL kernels with Kineto's collective args. */
#include "reporter/perfetto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "reporter/json.h"

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

/* ns as microseconds with three decimals: exact, and what Kineto writes. */
static void put_us(FILE *f, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)-ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
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

static void put_op(FILE *f, const struct rsr_model *m, int64_t pid, const struct rsr_gpu_op *op)
{
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", gpu_cat(op->cls));
    rsr_json_str(f, rsr_model_str(m, op->name));
    fprintf(f, ",\"pid\":%lld,\"tid\":%d,\"ts\":", (long long)pid, op->stream);
    put_us(f, op->start_ns);
    fputs(",\"dur\":", f);
    put_us(f, op->end_ns - op->start_ns);
    fprintf(f, ",\"args\":{\"device\":%d,\"stream\":%d", op->device, op->stream);
    if (op->correlation)
        fprintf(f, ",\"correlation\":%" PRIu64, op->correlation);
    if (op->cls == RSR_GPU_MEMCPY || op->cls == RSR_GPU_MEMSET)
        fprintf(f, ",\"bytes\":%" PRIu64, op->bytes);
    if (op->coll >= 0 && (size_t)op->coll < m->n_colls) {
        const struct rsr_coll *c = &m->colls[op->coll];
        fprintf(f, ",\"Collective name\":\"%s\",\"In msg nelems\":%" PRIu64
                   ",\"Out msg nelems\":%" PRIu64 ",\"Group size\":%d,\"dtype\":",
                coll_name(c->op), c->in_count, c->out_count, c->group_size);
        rsr_json_str(f, torch_dtype(rsr_model_str(m, c->dtype)));
        fputs(",\"Process Group Name\":", f);
        rsr_json_str(f, rsr_model_str(m, c->comm));
        fputs(",\"Process Group Ranks\":", f);
        rsr_json_str(f, rsr_model_str(m, c->members));
        /* Not Kineto's: what a ringside file said of the communicator, so
         * that import-kineto gives back the same ids and call numbers. */
        if (c->comm_id)
            fprintf(f, ",\"Communicator id\":\"%016" PRIx64 "\",\"Collective seq\":%u", c->comm_id, c->seq);
    }
    fputs("}}", f);
}

static void put_launch(FILE *f, const struct rsr_model *m, int64_t pid, const struct rsr_launch *l)
{
    fputs(",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":", f);
    rsr_json_str(f, rsr_model_str(m, l->name));
    fprintf(f, ",\"pid\":%lld,\"tid\":%u,\"ts\":", (long long)pid, l->tid);
    put_us(f, l->start_ns);
    fputs(",\"dur\":", f);
    put_us(f, l->end_ns - l->start_ns);
    fprintf(f, ",\"args\":{\"correlation\":%" PRIu64 "}}", l->correlation);
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
static void put_sync(FILE *f, int64_t pid, const struct rsr_sync *s, uint64_t correlation)
{
    fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"%s\",\"pid\":%lld,\"tid\":%u,\"ts\":",
            sync_call(s->kind), (long long)pid, s->tid);
    put_us(f, s->start_ns);
    fputs(",\"dur\":", f);
    put_us(f, s->end_ns - s->start_ns);
    fprintf(f, ",\"args\":{\"correlation\":%" PRIu64 "}}", correlation);
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
    fputs("{\n\"schemaVersion\": 1,\n\"ringside\": {\"processes\": [", f);
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
    for (size_t i = 0; i < nmodels; i++) {
        const struct rsr_model *m = models[i];
        put_names(f, m, ids[i], &first);
        for (size_t k = 0; k < m->n_launches; k++)
            put_launch(f, m, ids[i], &m->launches[k]);
        for (size_t k = 0; k < m->n_ops; k++)
            put_op(f, m, ids[i], &m->ops[k]);
        uint64_t corr = 0;
        for (size_t k = 0; k < m->n_launches; k++)
            if (m->launches[k].correlation > corr)
                corr = m->launches[k].correlation;
        for (size_t k = 0; k < m->n_syncs; k++)
            put_sync(f, ids[i], &m->syncs[k], ++corr);
    }
    free(ids);
    fputs("\n],\n\"displayTimeUnit\": \"ms\"\n}\n", f);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
