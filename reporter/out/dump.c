/* `ringside dump FILE`: every record of a trace as one JSON object per line,
 * with the field names of trace.fbs, so that it can be held against flatc's
 * own decoding; file and thread names are resolved alongside. */
#include "reporter/out/dump.h"
#include "reporter/base/json.h"
#include "reporter/load/load.h"
#include "formats/rsf_error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dump_state {
    FILE *out;
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

static void dump_meta(FILE *o, const struct rsf_meta *m)
{
    fprintf(o, "{\"type\":\"meta\",\"format_version\":%u,\"host\":", m->format_version);
    rsr_json_str(o, m->host);
    fprintf(o, ",\"pid\":%d,\"ppid\":%d,\"rank\":%d,\"local_rank\":%d,\"world_size\":%d,"
               "\"parent_rank\":%d,\"role\":\"%s\",\"job\":",
            m->pid, m->ppid, m->rank, m->local_rank, m->world_size, m->parent_rank, role_name(m->role));
    rsr_json_str(o, m->job);
    fputs(",\"argv\":[", o);
    for (uint32_t i = 0; i < m->argc; i++) {
        if (i)
            putc(',', o);
        rsr_json_str(o, m->argv[i]);
    }
    fprintf(o, "],\"start\":{\"mono_ns\":%" PRIu64 ",\"real_ns\":%" PRIu64 "},\"settings\":[",
            m->start.mono_ns, m->start.real_ns);
    for (uint32_t i = 0; i < m->nsettings; i++) {
        fputs(i ? ",{\"key\":" : "{\"key\":", o);
        rsr_json_str(o, m->setting_keys[i]);
        fputs(",\"value\":", o);
        rsr_json_str(o, m->setting_values[i]);
        putc('}', o);
    }
    fputs("],\"agent_version\":", o);
    rsr_json_str(o, m->agent_version);
    fprintf(o, ",\"cuda_version\":%d,\"nccl_version\":%d}\n", m->cuda_version, m->nccl_version);
}

/* An enum field: its name as trace.fbs spells it, or the number when the
 * value is outside the enum (a newer writer), as flatc prints it. */
static void enum_field(FILE *o, const char *key, const char *name, unsigned v)
{
    if (name)
        fprintf(o, ",\"%s\":\"%s\"", key, name);
    else
        fprintf(o, ",\"%s\":%u", key, v);
}

static void string_ref(FILE *o, const struct dump_state *d, const char *key, uint32_t id)
{
    fprintf(o, ",\"%s\":%u,\"%s_text\":", key, id, key);
    rsr_json_str(o, str_of(d, id));
}

/* Functions, devices, counter series and their points. */
static void dump_limits(struct dump_state *d, const struct rsf_chunk *c)
{
    FILE *o = d->out;
    for (uint32_t i = 0; i < c->nfunctions; i++) {
        const struct rsf_function *f = &c->functions[i];
        fprintf(o, "{\"type\":\"function\",\"id\":%u", f->id);
        string_ref(o, d, "name", f->name);
        fprintf(o, ",\"static_smem\":%u,\"local_bytes\":%u,\"max_threads\":%u,\"regs\":%u"
                   ",\"device\":%d,\"binary_version\":%u}\n",
                f->static_smem, f->local_bytes, f->max_threads, f->regs, f->device, f->binary_version);
    }
    for (uint32_t i = 0; i < c->ndevices; i++) {
        const struct rsf_device *v = &c->devices[i];
        fprintf(o, "{\"type\":\"device\",\"ordinal\":%d,\"cc_major\":%u,\"cc_minor\":%u"
                   ",\"sm_count\":%u,\"max_threads_per_sm\":%u,\"max_blocks_per_sm\":%u"
                   ",\"regs_per_sm\":%u,\"smem_per_sm\":%u,\"max_threads_per_block\":%u"
                   ",\"regs_per_block\":%u,\"smem_per_block_optin\":%u"
                   ",\"smem_reserved_per_block\":%u,\"warp_size\":%u,\"clock_khz\":%u",
                v->ordinal, v->cc_major, v->cc_minor, v->sm_count, v->max_threads_per_sm,
                v->max_blocks_per_sm, v->regs_per_sm, v->smem_per_sm, v->max_threads_per_block,
                v->regs_per_block, v->smem_per_block_optin, v->smem_reserved_per_block, v->warp_size,
                v->clock_khz);
        string_ref(o, d, "name", v->name);
        string_ref(o, d, "uuid", v->uuid);
        string_ref(o, d, "pci", v->pci);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nseries; i++) {
        const struct rsf_series *e = &c->series[i];
        fprintf(o, "{\"type\":\"series\",\"id\":%u", e->id);
        string_ref(o, d, "name", e->name);
        enum_field(o, "kind", rsf_series_kind_name(e->kind), e->kind);
        enum_field(o, "link", rsf_link_kind_name(e->link), e->link);
        fprintf(o, ",\"device\":%d,\"rate\":%" PRIu64 "}\n", e->device, e->rate);
    }
    for (uint32_t i = 0; i < c->npoints; i++) {
        const struct rsf_point *e = &c->points[i];
        fprintf(o, "{\"type\":\"point\",\"series\":%u,\"ts_ns\":%" PRIu64 ",\"value\":%" PRIu64 "}\n",
                e->series, e->ts_ns, e->value);
    }
}

/* GPU, NCCL, memory, stack, sample, module and range records. */
static void dump_gpu(struct dump_state *d, const struct rsf_chunk *c)
{
    FILE *o = d->out;
    for (uint32_t i = 0; i < c->ngpu; i++) {
        const struct rsf_gpu_event *e = &c->gpu[i];
        fprintf(o, "{\"type\":\"gpu\",\"launch_ns\":%" PRIu64 ",\"gpu_start_ns\":%" PRIu64
                   ",\"gpu_end_ns\":%" PRIu64 ",\"stream\":%" PRIu64 ",\"bytes\":%" PRIu64
                   ",\"call_ns\":%u,\"tid\":%u",
                e->launch_ns, e->gpu_start_ns, e->gpu_end_ns, e->stream, e->bytes, e->call_ns, e->tid);
        string_ref(o, d, "name", e->name);
        fprintf(o, ",\"device\":%d", e->device);
        enum_field(o, "kind", rsf_gpu_kind_name(e->kind), e->kind);
        enum_field(o, "dir", rsf_copy_dir_name(e->dir), e->dir);
        fprintf(o, ",\"flags\":%u", e->flags);
        fprintf(o, ",\"graph\":%u", e->graph);
        const struct rsf_launch *l = c->nlaunches ? &c->launches[i] : NULL;
        if (l && (l->grid_x || l->func))
            fprintf(o, ",\"launch\":{\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem_dyn\":%u"
                       ",\"func\":%u,\"cluster\":[%u,%u,%u]}",
                    l->grid_x, l->grid_y, l->grid_z, l->block_x, l->block_y, l->block_z, l->smem_dyn,
                    l->func, l->cluster_x, l->cluster_y, l->cluster_z);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->ngraph_nodes; i++) {
        const struct rsf_graph_node *e = &c->graph_nodes[i];
        fprintf(o, "{\"type\":\"graph_node\",\"bytes\":%" PRIu64 ",\"comm\":%" PRIu64 ",\"graph\":%u,\"node\":%u",
                e->bytes, e->comm, e->graph, e->node);
        string_ref(o, d, "name", e->name);
        fprintf(o, ",\"stack\":%u,\"grid_x\":%u,\"grid_y\":%u,\"grid_z\":%u,\"smem_dyn\":%u,\"func\":%u"
                   ",\"block_x\":%u,\"block_y\":%u,\"block_z\":%u,\"device\":%d",
                e->stack, e->grid_x, e->grid_y, e->grid_z, e->smem_dyn, e->func, e->block_x, e->block_y, e->block_z,
                e->device);
        enum_field(o, "kind", rsf_graph_node_kind_name(e->kind), e->kind);
        enum_field(o, "op", rsf_coll_op_name(e->op), e->op);
        enum_field(o, "dir", rsf_copy_dir_name(e->dir), e->dir);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->ngraph_edges; i++) {
        const struct rsf_graph_edge *e = &c->graph_edges[i];
        fprintf(o, "{\"type\":\"graph_edge\",\"graph\":%u,\"from\":%u,\"to\":%u}\n", e->graph, e->from,
                e->to);
    }
    for (uint32_t i = 0; i < c->nsyncs; i++) {
        const struct rsf_sync_event *e = &c->syncs[i];
        fprintf(o, "{\"type\":\"sync\",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64
                   ",\"target\":%" PRIu64 ",\"tid\":%u",
                e->start_ns, e->dur_ns, e->target, e->tid);
        enum_field(o, "kind", rsf_sync_kind_name(e->kind), e->kind);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nmarks; i++) {
        const struct rsf_mark *m = &c->marks[i];
        fprintf(o, "{\"type\":\"mark\",\"ts_ns\":%" PRIu64 ",\"since_ns\":%" PRIu64 ",\"tid\":%u,\"stack\":%u,"
                   "\"sig\":%u",
                m->ts_ns, m->since_ns, m->tid, m->stack, m->sig);
        enum_field(o, "kind", rsf_mark_kind_name(m->kind), m->kind);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->ncolls; i++) {
        const struct rsf_coll_event *e = &c->colls[i];
        fprintf(o, "{\"type\":\"coll\",\"launch_ns\":%" PRIu64 ",\"gpu_start_ns\":%" PRIu64
                   ",\"gpu_end_ns\":%" PRIu64 ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
                   ",\"comm\":%" PRIu64 ",\"stream\":%" PRIu64
                   ",\"call_ns\":%u,\"tid\":%u,\"seq\":%u,\"peer\":%d",
                e->launch_ns, e->gpu_start_ns, e->gpu_end_ns, e->count, e->bytes, e->comm,
                e->stream, e->call_ns, e->tid, e->seq, e->peer);
        enum_field(o, "op", rsf_coll_op_name(e->op), e->op);
        fprintf(o, ",\"datatype\":%u,\"redop\":%u,\"group\":%u,\"flags\":%u,\"group_id\":%" PRIu64 "}\n",
                e->datatype, e->redop, e->group, e->flags, c->ncoll_groups ? c->coll_groups[i].group : 0);
    }
    for (uint32_t i = 0; i < c->ncomms; i++) {
        const struct rsf_comm_event *e = &c->comms[i];
        fprintf(o, "{\"type\":\"comm\",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64
                   ",\"comm\":%" PRIu64 ",\"handle\":%" PRIu64 ",\"parent\":%" PRIu64
                   ",\"tid\":%u,\"rank\":%d,\"nranks\":%d,\"device\":%d",
                e->start_ns, e->dur_ns, e->comm, e->handle, e->parent, e->tid, e->rank, e->nranks,
                e->device);
        enum_field(o, "kind", rsf_comm_kind_name(e->kind), e->kind);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nmems; i++) {
        const struct rsf_mem_event *e = &c->mems[i];
        fprintf(o, "{\"type\":\"mem\",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64
                   ",\"ptr\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"tid\":%u",
                e->start_ns, e->dur_ns, e->ptr, e->bytes, e->tid);
        enum_field(o, "kind", rsf_mem_kind_name(e->kind), e->kind);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nstacks; i++) {
        const struct rsf_stack *s = &c->stacks[i];
        fprintf(o, "{\"type\":\"stack\",\"id\":%u,\"frames\":[", s->id);
        for (uint32_t j = 0; j < s->nframes; j++)
            fprintf(o, j ? ",%" PRIu64 : "%" PRIu64, s->frames[j].addr);
        fputs("]}\n", o);
    }
    for (uint32_t i = 0; i < c->nsamples; i++) {
        const struct rsf_sample *e = &c->samples[i];
        fprintf(o, "{\"type\":\"sample\",\"ts_ns\":%" PRIu64 ",\"weight_ns\":%" PRIu64
                   ",\"tid\":%u,\"stack\":%u",
                e->ts_ns, e->weight_ns, e->tid, e->stack);
        enum_field(o, "kind", rsf_sample_kind_name(e->kind), e->kind);
        enum_field(o, "reason", rsf_wait_reason_name(e->reason), e->reason);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nmodules; i++) {
        const struct rsf_module *e = &c->modules[i];
        fprintf(o, "{\"type\":\"module\",\"ts_ns\":%" PRIu64 ",\"start\":%" PRIu64
                   ",\"end\":%" PRIu64 ",\"file_off\":%" PRIu64,
                e->ts_ns, e->start, e->end, e->file_off);
        string_ref(o, d, "path", e->path);
        string_ref(o, d, "build_id", e->build_id);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nranges; i++) {
        const struct rsf_range *e = &c->ranges[i];
        fprintf(o, "{\"type\":\"range\",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                   ",\"tid\":%u,\"end_tid\":%u",
                e->start_ns, e->end_ns, e->tid, e->end_tid);
        string_ref(o, d, "name", e->name);
        string_ref(o, d, "domain", e->domain);
        fprintf(o, ",\"category\":%u,\"depth\":%u", e->category, e->depth);
        enum_field(o, "kind", rsf_range_kind_name(e->kind), e->kind);
        fprintf(o, ",\"flags\":%u}\n", e->flags);
    }
}

static int dump_chunk(const struct rsf_chunk *c, void *arg)
{
    struct dump_state *d = arg;
    FILE *o = d->out;
    fprintf(o, "{\"type\":\"chunk\",\"seq\":%u,\"strings_base\":%u,\"end\":%s", c->seq,
            c->strings_base, c->end ? "true" : "false");
    if (c->counters)
        fprintf(o, ",\"counters\":{\"recorded\":%" PRIu64 ",\"dropped\":%" PRIu64
                   ",\"dropped_io\":%" PRIu64 ",\"dropped_gpu\":%" PRIu64
                   ",\"dropped_nccl\":%" PRIu64 ",\"dropped_samples\":%" PRIu64
                   ",\"dropped_ranges\":%" PRIu64 "}",
                c->counters->recorded, c->counters->dropped, c->counters->dropped_io,
                c->counters->dropped_gpu, c->counters->dropped_nccl, c->counters->dropped_samples,
                c->counters->dropped_ranges);
    fputs("}\n", o);
    if (c->meta)
        dump_meta(o, c->meta);
    if (c->nstrings && !ensure((void **)&d->strings, &d->nstrings, c->strings_base + c->nstrings,
                               sizeof *d->strings))
        for (uint32_t i = 0; i < c->nstrings; i++) {
            free(d->strings[c->strings_base + i]);
            d->strings[c->strings_base + i] = strdup(c->strings[i]);
        }
    for (uint32_t i = 0; i < c->nstrings; i++) {
        fprintf(o, "{\"type\":\"string\",\"id\":%u,\"value\":", c->strings_base + i);
        rsr_json_str(o, c->strings[i]);
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nfiles; i++) {
        const struct rsf_file_ref *f = &c->files[i];
        if (!ensure((void **)&d->file_path, &d->nfiles, f->id + 1, sizeof *d->file_path))
            d->file_path[f->id] = f->path;
        fprintf(o, "{\"type\":\"file\",\"id\":%u,\"path\":%u,\"flags\":%d,\"name\":", f->id, f->path,
                f->flags);
        rsr_json_str(o, str_of(d, f->path));
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nthreads; i++) {
        fprintf(o, "{\"type\":\"thread\",\"tid\":%u,\"name\":%u,\"name_text\":", c->threads[i].tid,
                c->threads[i].name);
        rsr_json_str(o, str_of(d, c->threads[i].name));
        fputs("}\n", o);
    }
    for (uint32_t i = 0; i < c->nclocks; i++)
        fprintf(o, "{\"type\":\"clock\",\"mono_ns\":%" PRIu64 ",\"real_ns\":%" PRIu64 "}\n",
                c->clocks[i].mono_ns, c->clocks[i].real_ns);
    for (uint32_t i = 0; i < c->nio; i++) {
        const struct rsf_io_event *e = &c->io[i];
        const char *op = rsf_io_op_name(e->op);
        fprintf(o, "{\"type\":\"io\",\"start_ns\":%" PRIu64 ",\"dur_ns\":%" PRIu64 ",\"offset\":%" PRId64
                   ",\"result\":%" PRId64 ",\"file\":%u,\"tid\":%u,\"op\":",
                e->start_ns, e->dur_ns, e->offset, e->result, e->file, e->tid);
        if (op)
            fprintf(o, "\"%s\"", op);
        else
            fprintf(o, "%u", e->op);
        fputs(",\"path\":", o);
        rsr_json_str(o, e->file < d->nfiles ? str_of(d, d->file_path[e->file]) : NULL);
        fputs("}\n", o);
    }
    dump_limits(d, c);
    dump_gpu(d, c);
    return ferror(o) ? 1 : 0;
}

int rsr_dump(const char *path, FILE *out)
{
    struct dump_state d = { .out = out };
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
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "ringside: writing the dump: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
