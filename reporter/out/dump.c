/* `ringside dump FILE`: every record of a trace as one JSON object per line
 * (through the JSON writer, json.h), with the field names of trace.fbs, so
 * that it can be held against flatc's own decoding; file and thread names
 * are resolved alongside. */
#include "reporter/out/dump.h"
#include "reporter/base/json.h"
#include "reporter/load/load.h"
#include "formats/rsf_error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dump_state {
    struct rsr_jw *w;
    char **strings;       /* id -> text, as defined so far */
    uint32_t nstrings;
    uint32_t *file_path;  /* file id -> string id */
    uint32_t nfiles;
};

static const char *role_name(unsigned r)
{
    static const char *const names[] = { "rank", "child", "other" };
    return r < 3 ? names[r] : "?";
}

static const char *str_of(const struct dump_state *d, uint32_t id)
{
    return id && id < d->nstrings ? d->strings[id] : NULL;
}

static int ensure(void **arr, uint32_t *n, uint32_t need, size_t elem)
{
    if (need <= *n)
        return 0;
    void *p = realloc(*arr, (size_t)need * elem);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*n * elem, 0, (size_t)(need - *n) * elem);
    *arr = p;
    *n = need;
    return 0;
}

/* A record's line: {"type":TYPE,... and its end. */
static void record(struct rsr_jw *w, const char *type)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "type", type);
}

static void record_end(struct rsr_jw *w)
{
    rsr_jw_end(w);
    rsr_jw_line(w);
}

static void dump_meta(struct rsr_jw *w, const struct rsf_meta *m)
{
    record(w, "meta");
    rsr_jw_kuint(w, "format_version", m->format_version);
    rsr_jw_kstr(w, "host", m->host);
    rsr_jw_kint(w, "pid", m->pid);
    rsr_jw_kint(w, "ppid", m->ppid);
    rsr_jw_kint(w, "rank", m->rank);
    rsr_jw_kint(w, "local_rank", m->local_rank);
    rsr_jw_kint(w, "world_size", m->world_size);
    rsr_jw_kint(w, "parent_rank", m->parent_rank);
    rsr_jw_kstr(w, "role", role_name(m->role));
    rsr_jw_kstr(w, "job", m->job);
    rsr_jw_karray(w, "argv", 0);
    for (uint32_t i = 0; i < m->argc; i++)
        rsr_jw_str(w, m->argv[i]);
    rsr_jw_end(w);
    rsr_jw_kobject(w, "start", 0);
    rsr_jw_kuint(w, "mono_ns", m->start.mono_ns);
    rsr_jw_kuint(w, "real_ns", m->start.real_ns);
    rsr_jw_end(w);
    rsr_jw_karray(w, "settings", 0);
    for (uint32_t i = 0; i < m->nsettings; i++) {
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "key", m->setting_keys[i]);
        rsr_jw_kstr(w, "value", m->setting_values[i]);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
    rsr_jw_kstr(w, "agent_version", m->agent_version);
    rsr_jw_kint(w, "cuda_version", m->cuda_version);
    rsr_jw_kint(w, "nccl_version", m->nccl_version);
    record_end(w);
}

/* An enum field: its name as trace.fbs spells it, or the number when the
 * value is outside the enum (a newer writer), as flatc prints it. */
static void enum_field(struct rsr_jw *w, const char *key, const char *name, unsigned v)
{
    if (name)
        rsr_jw_kstr(w, key, name);
    else
        rsr_jw_kuint(w, key, v);
}

/* A string id, and its text as "KEY_text". */
static void string_ref(struct rsr_jw *w, const struct dump_state *d, const char *key, uint32_t id)
{
    char text_key[64];
    snprintf(text_key, sizeof text_key, "%s_text", key);
    rsr_jw_kuint(w, key, id);
    rsr_jw_kstr(w, text_key, str_of(d, id));
}

static void u32_triple(struct rsr_jw *w, const char *key, uint32_t x, uint32_t y, uint32_t z)
{
    rsr_jw_karray(w, key, 0);
    rsr_jw_uint(w, x);
    rsr_jw_uint(w, y);
    rsr_jw_uint(w, z);
    rsr_jw_end(w);
}

/* Functions, devices, counter series and their points. */
static void dump_limits(struct dump_state *d, const struct rsf_chunk *c)
{
    struct rsr_jw *w = d->w;
    for (uint32_t i = 0; i < c->nfunctions; i++) {
        const struct rsf_function *f = &c->functions[i];
        record(w, "function");
        rsr_jw_kuint(w, "id", f->id);
        string_ref(w, d, "name", f->name);
        rsr_jw_kuint(w, "static_smem", f->static_smem);
        rsr_jw_kuint(w, "local_bytes", f->local_bytes);
        rsr_jw_kuint(w, "max_threads", f->max_threads);
        rsr_jw_kuint(w, "regs", f->regs);
        rsr_jw_kint(w, "device", f->device);
        rsr_jw_kuint(w, "binary_version", f->binary_version);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->ndevices; i++) {
        const struct rsf_device *v = &c->devices[i];
        record(w, "device");
        rsr_jw_kint(w, "ordinal", v->ordinal);
        rsr_jw_kuint(w, "cc_major", v->cc_major);
        rsr_jw_kuint(w, "cc_minor", v->cc_minor);
        rsr_jw_kuint(w, "sm_count", v->sm_count);
        rsr_jw_kuint(w, "max_threads_per_sm", v->max_threads_per_sm);
        rsr_jw_kuint(w, "max_blocks_per_sm", v->max_blocks_per_sm);
        rsr_jw_kuint(w, "regs_per_sm", v->regs_per_sm);
        rsr_jw_kuint(w, "smem_per_sm", v->smem_per_sm);
        rsr_jw_kuint(w, "max_threads_per_block", v->max_threads_per_block);
        rsr_jw_kuint(w, "regs_per_block", v->regs_per_block);
        rsr_jw_kuint(w, "smem_per_block_optin", v->smem_per_block_optin);
        rsr_jw_kuint(w, "smem_reserved_per_block", v->smem_reserved_per_block);
        rsr_jw_kuint(w, "warp_size", v->warp_size);
        rsr_jw_kuint(w, "clock_khz", v->clock_khz);
        string_ref(w, d, "name", v->name);
        string_ref(w, d, "uuid", v->uuid);
        string_ref(w, d, "pci", v->pci);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nseries; i++) {
        const struct rsf_series *e = &c->series[i];
        record(w, "series");
        rsr_jw_kuint(w, "id", e->id);
        string_ref(w, d, "name", e->name);
        enum_field(w, "kind", rsf_series_kind_name(e->kind), e->kind);
        enum_field(w, "link", rsf_link_kind_name(e->link), e->link);
        rsr_jw_kint(w, "device", e->device);
        rsr_jw_kuint(w, "rate", e->rate);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->npoints; i++) {
        const struct rsf_point *e = &c->points[i];
        record(w, "point");
        rsr_jw_kuint(w, "series", e->series);
        rsr_jw_kuint(w, "ts_ns", e->ts_ns);
        rsr_jw_kuint(w, "value", e->value);
        record_end(w);
    }
}

static void dump_gpu_event(struct rsr_jw *w, const struct dump_state *d, const struct rsf_gpu_event *e,
                           const struct rsf_launch *l)
{
    record(w, "gpu");
    rsr_jw_kuint(w, "launch_ns", e->launch_ns);
    rsr_jw_kuint(w, "gpu_start_ns", e->gpu_start_ns);
    rsr_jw_kuint(w, "gpu_end_ns", e->gpu_end_ns);
    rsr_jw_kuint(w, "stream", e->stream);
    rsr_jw_kuint(w, "bytes", e->bytes);
    rsr_jw_kuint(w, "call_ns", e->call_ns);
    rsr_jw_kuint(w, "tid", e->tid);
    string_ref(w, d, "name", e->name);
    rsr_jw_kint(w, "device", e->device);
    enum_field(w, "kind", rsf_gpu_kind_name(e->kind), e->kind);
    enum_field(w, "dir", rsf_copy_dir_name(e->dir), e->dir);
    rsr_jw_kuint(w, "flags", e->flags);
    rsr_jw_kuint(w, "graph", e->graph);
    if (l && (l->grid_x || l->func)) {
        rsr_jw_kobject(w, "launch", 0);
        u32_triple(w, "grid", l->grid_x, l->grid_y, l->grid_z);
        u32_triple(w, "block", l->block_x, l->block_y, l->block_z);
        rsr_jw_kuint(w, "smem_dyn", l->smem_dyn);
        rsr_jw_kuint(w, "func", l->func);
        u32_triple(w, "cluster", l->cluster_x, l->cluster_y, l->cluster_z);
        rsr_jw_end(w);
    }
    record_end(w);
}

static void dump_graph_node(struct rsr_jw *w, const struct dump_state *d, const struct rsf_graph_node *e)
{
    record(w, "graph_node");
    rsr_jw_kuint(w, "bytes", e->bytes);
    rsr_jw_kuint(w, "comm", e->comm);
    rsr_jw_kuint(w, "graph", e->graph);
    rsr_jw_kuint(w, "node", e->node);
    string_ref(w, d, "name", e->name);
    rsr_jw_kuint(w, "stack", e->stack);
    rsr_jw_kuint(w, "grid_x", e->grid_x);
    rsr_jw_kuint(w, "grid_y", e->grid_y);
    rsr_jw_kuint(w, "grid_z", e->grid_z);
    rsr_jw_kuint(w, "smem_dyn", e->smem_dyn);
    rsr_jw_kuint(w, "func", e->func);
    rsr_jw_kuint(w, "block_x", e->block_x);
    rsr_jw_kuint(w, "block_y", e->block_y);
    rsr_jw_kuint(w, "block_z", e->block_z);
    rsr_jw_kint(w, "device", e->device);
    enum_field(w, "kind", rsf_graph_node_kind_name(e->kind), e->kind);
    enum_field(w, "op", rsf_coll_op_name(e->op), e->op);
    enum_field(w, "dir", rsf_copy_dir_name(e->dir), e->dir);
    record_end(w);
}

static void dump_coll(struct rsr_jw *w, const struct rsf_coll_event *e, uint64_t group_id)
{
    record(w, "coll");
    rsr_jw_kuint(w, "launch_ns", e->launch_ns);
    rsr_jw_kuint(w, "gpu_start_ns", e->gpu_start_ns);
    rsr_jw_kuint(w, "gpu_end_ns", e->gpu_end_ns);
    rsr_jw_kuint(w, "count", e->count);
    rsr_jw_kuint(w, "bytes", e->bytes);
    rsr_jw_kuint(w, "comm", e->comm);
    rsr_jw_kuint(w, "stream", e->stream);
    rsr_jw_kuint(w, "call_ns", e->call_ns);
    rsr_jw_kuint(w, "tid", e->tid);
    rsr_jw_kuint(w, "seq", e->seq);
    rsr_jw_kint(w, "peer", e->peer);
    enum_field(w, "op", rsf_coll_op_name(e->op), e->op);
    rsr_jw_kuint(w, "datatype", e->datatype);
    rsr_jw_kuint(w, "redop", e->redop);
    rsr_jw_kuint(w, "group", e->group);
    rsr_jw_kuint(w, "flags", e->flags);
    rsr_jw_kuint(w, "group_id", group_id);
    record_end(w);
}

/* GPU, NCCL, memory, stack, sample, module and range records. */
static void dump_gpu(struct dump_state *d, const struct rsf_chunk *c)
{
    struct rsr_jw *w = d->w;
    for (uint32_t i = 0; i < c->ngpu; i++)
        dump_gpu_event(w, d, &c->gpu[i], c->nlaunches ? &c->launches[i] : NULL);
    for (uint32_t i = 0; i < c->ngraph_nodes; i++)
        dump_graph_node(w, d, &c->graph_nodes[i]);
    for (uint32_t i = 0; i < c->ngraph_edges; i++) {
        const struct rsf_graph_edge *e = &c->graph_edges[i];
        record(w, "graph_edge");
        rsr_jw_kuint(w, "graph", e->graph);
        rsr_jw_kuint(w, "from", e->from);
        rsr_jw_kuint(w, "to", e->to);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nsyncs; i++) {
        const struct rsf_sync_event *e = &c->syncs[i];
        record(w, "sync");
        rsr_jw_kuint(w, "start_ns", e->start_ns);
        rsr_jw_kuint(w, "dur_ns", e->dur_ns);
        rsr_jw_kuint(w, "target", e->target);
        rsr_jw_kuint(w, "tid", e->tid);
        enum_field(w, "kind", rsf_sync_kind_name(e->kind), e->kind);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nmarks; i++) {
        const struct rsf_mark *m = &c->marks[i];
        record(w, "mark");
        rsr_jw_kuint(w, "ts_ns", m->ts_ns);
        rsr_jw_kuint(w, "since_ns", m->since_ns);
        rsr_jw_kuint(w, "tid", m->tid);
        rsr_jw_kuint(w, "stack", m->stack);
        rsr_jw_kuint(w, "sig", m->sig);
        enum_field(w, "kind", rsf_mark_kind_name(m->kind), m->kind);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->ncolls; i++)
        dump_coll(w, &c->colls[i], c->ncoll_groups ? c->coll_groups[i].group : 0);
    for (uint32_t i = 0; i < c->ncomms; i++) {
        const struct rsf_comm_event *e = &c->comms[i];
        record(w, "comm");
        rsr_jw_kuint(w, "start_ns", e->start_ns);
        rsr_jw_kuint(w, "dur_ns", e->dur_ns);
        rsr_jw_kuint(w, "comm", e->comm);
        rsr_jw_kuint(w, "handle", e->handle);
        rsr_jw_kuint(w, "parent", e->parent);
        rsr_jw_kuint(w, "tid", e->tid);
        rsr_jw_kint(w, "rank", e->rank);
        rsr_jw_kint(w, "nranks", e->nranks);
        rsr_jw_kint(w, "device", e->device);
        enum_field(w, "kind", rsf_comm_kind_name(e->kind), e->kind);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nmems; i++) {
        const struct rsf_mem_event *e = &c->mems[i];
        record(w, "mem");
        rsr_jw_kuint(w, "start_ns", e->start_ns);
        rsr_jw_kuint(w, "dur_ns", e->dur_ns);
        rsr_jw_kuint(w, "ptr", e->ptr);
        rsr_jw_kuint(w, "bytes", e->bytes);
        rsr_jw_kuint(w, "tid", e->tid);
        enum_field(w, "kind", rsf_mem_kind_name(e->kind), e->kind);
        if (c->mem_info) {
            const struct rsf_mem_info *m = &c->mem_info[i];
            rsr_jw_kuint(w, "stream", m->stream);
            rsr_jw_kuint(w, "stack", m->stack);
            rsr_jw_kint(w, "device", m->device);
            rsr_jw_kuint(w, "flags", m->flags);
            if (e->kind == RSF_MEM_ALLOC_FAILED) {
                rsr_jw_kint(w, "result", m->result);
                enum_field(w, "asked", rsf_mem_kind_name(m->asked), m->asked);
            }
        }
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nstacks; i++) {
        const struct rsf_stack *s = &c->stacks[i];
        record(w, "stack");
        rsr_jw_kuint(w, "id", s->id);
        rsr_jw_karray(w, "frames", 0);
        for (uint32_t j = 0; j < s->nframes; j++)
            rsr_jw_uint(w, s->frames[j].addr);
        rsr_jw_end(w);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nsamples; i++) {
        const struct rsf_sample *e = &c->samples[i];
        record(w, "sample");
        rsr_jw_kuint(w, "ts_ns", e->ts_ns);
        rsr_jw_kuint(w, "weight_ns", e->weight_ns);
        rsr_jw_kuint(w, "tid", e->tid);
        rsr_jw_kuint(w, "stack", e->stack);
        enum_field(w, "kind", rsf_sample_kind_name(e->kind), e->kind);
        enum_field(w, "reason", rsf_wait_reason_name(e->reason), e->reason);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nmodules; i++) {
        const struct rsf_module *e = &c->modules[i];
        record(w, "module");
        rsr_jw_kuint(w, "ts_ns", e->ts_ns);
        rsr_jw_kuint(w, "start", e->start);
        rsr_jw_kuint(w, "end", e->end);
        rsr_jw_kuint(w, "file_off", e->file_off);
        string_ref(w, d, "path", e->path);
        string_ref(w, d, "build_id", e->build_id);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nranges; i++) {
        const struct rsf_range *e = &c->ranges[i];
        record(w, "range");
        rsr_jw_kuint(w, "start_ns", e->start_ns);
        rsr_jw_kuint(w, "end_ns", e->end_ns);
        rsr_jw_kuint(w, "tid", e->tid);
        rsr_jw_kuint(w, "end_tid", e->end_tid);
        string_ref(w, d, "name", e->name);
        string_ref(w, d, "domain", e->domain);
        rsr_jw_kuint(w, "category", e->category);
        rsr_jw_kuint(w, "depth", e->depth);
        enum_field(w, "kind", rsf_range_kind_name(e->kind), e->kind);
        rsr_jw_kuint(w, "flags", e->flags);
        record_end(w);
    }
}

static void dump_counters(struct rsr_jw *w, const struct rsf_counters *k)
{
    rsr_jw_kobject(w, "counters", 0);
    rsr_jw_kuint(w, "recorded", k->recorded);
    rsr_jw_kuint(w, "dropped", k->dropped);
    rsr_jw_kuint(w, "dropped_io", k->dropped_io);
    rsr_jw_kuint(w, "dropped_gpu", k->dropped_gpu);
    rsr_jw_kuint(w, "dropped_nccl", k->dropped_nccl);
    rsr_jw_kuint(w, "dropped_samples", k->dropped_samples);
    rsr_jw_kuint(w, "dropped_ranges", k->dropped_ranges);
    rsr_jw_end(w);
}

static int dump_chunk(const struct rsf_chunk *c, void *arg)
{
    struct dump_state *d = arg;
    struct rsr_jw *w = d->w;
    record(w, "chunk");
    rsr_jw_kuint(w, "seq", c->seq);
    rsr_jw_kuint(w, "strings_base", c->strings_base);
    rsr_jw_kbool(w, "end", c->end);
    if (c->counters)
        dump_counters(w, c->counters);
    record_end(w);
    if (c->meta)
        dump_meta(w, c->meta);
    if (c->nstrings && !ensure((void **)&d->strings, &d->nstrings, c->strings_base + c->nstrings,
                               sizeof *d->strings))
        for (uint32_t i = 0; i < c->nstrings; i++) {
            free(d->strings[c->strings_base + i]);
            d->strings[c->strings_base + i] = strdup(c->strings[i]);
        }
    for (uint32_t i = 0; i < c->nstrings; i++) {
        record(w, "string");
        rsr_jw_kuint(w, "id", c->strings_base + i);
        rsr_jw_kstr(w, "value", c->strings[i]);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nfiles; i++) {
        const struct rsf_file_ref *f = &c->files[i];
        if (!ensure((void **)&d->file_path, &d->nfiles, f->id + 1, sizeof *d->file_path))
            d->file_path[f->id] = f->path;
        record(w, "file");
        rsr_jw_kuint(w, "id", f->id);
        rsr_jw_kuint(w, "path", f->path);
        rsr_jw_kint(w, "flags", f->flags);
        rsr_jw_kstr(w, "name", str_of(d, f->path));
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nthreads; i++) {
        record(w, "thread");
        rsr_jw_kuint(w, "tid", c->threads[i].tid);
        string_ref(w, d, "name", c->threads[i].name);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nclocks; i++) {
        record(w, "clock");
        rsr_jw_kuint(w, "mono_ns", c->clocks[i].mono_ns);
        rsr_jw_kuint(w, "real_ns", c->clocks[i].real_ns);
        record_end(w);
    }
    for (uint32_t i = 0; i < c->nio; i++) {
        const struct rsf_io_event *e = &c->io[i];
        record(w, "io");
        rsr_jw_kuint(w, "start_ns", e->start_ns);
        rsr_jw_kuint(w, "dur_ns", e->dur_ns);
        rsr_jw_kint(w, "offset", e->offset);
        rsr_jw_kint(w, "result", e->result);
        rsr_jw_kuint(w, "file", e->file);
        rsr_jw_kuint(w, "tid", e->tid);
        enum_field(w, "op", rsf_io_op_name(e->op), e->op);
        rsr_jw_kstr(w, "path", e->file < d->nfiles ? str_of(d, d->file_path[e->file]) : NULL);
        record_end(w);
    }
    dump_limits(d, c);
    dump_gpu(d, c);
    rsr_jw_flush(w);
    return w->failed || ferror(w->f) ? 1 : 0;
}

int rsr_dump(const char *path, FILE *out)
{
    struct rsr_jw *jw = malloc(sizeof *jw);
    if (!jw) {
        fprintf(stderr, "ringside: out of memory\n");
        return 1;
    }
    rsr_jw_open(jw, out, RSR_JW_JSON);
    struct dump_state d = { .w = jw };
    struct rsr_walk w;
    int rc = 0;
    if (rsr_walk_file(path, dump_chunk, &d, &w) != 0) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        rc = 1;
    } else if (w.nproblems) {
        for (uint32_t i = 0; i < w.nproblems && i < RSR_MAX_PROBLEMS; i++) {
            fputs("ringside: ", stderr);
            rsr_problem_print(stderr, path, &w.problems[i]);
        }
        fprintf(stderr, "ringside: %s: %llu of %llu bytes could not be read\n", path,
                (unsigned long long)w.bad_bytes, (unsigned long long)w.file_size);
        rc = 1;
    } else if (w.nchunks == 0) {
        fprintf(stderr, "ringside: %s: offset 0: empty file, no trace chunks\n", path);
        rc = 1;
    }
    for (uint32_t i = 0; i < d.nstrings; i++)
        free(d.strings[i]);
    free(d.strings);
    free(d.file_path);
    int wrc = rsr_jw_close(jw);
    free(jw);
    if (wrc != 0 || fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "ringside: writing the dump: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
