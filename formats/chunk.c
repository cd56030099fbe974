/* Chunk encoding and decoding: maps struct rsf_chunk to and from the
 * FlatBuffer tables of trace.fbs through the descriptors below, which list
 * each table's fields in slot order (held against flatc by the tests). */
#include "formats/chunk.h"
#include "formats/rsf_error.h"

#include <stdlib.h>
#include <string.h>

#define SCALAR(n, k) { n, k, 0, 0, NULL }
#define STRUCTF(n, k, type) { n, k, sizeof(type), _Alignof(type), NULL }
#define TABLEF(n, k, t) { n, k, 0, 0, &t }

static const struct rsf_field_desc setting_fields[RSF_SETTING_NSLOTS] = {
    [RSF_SETTING_KEY] = SCALAR("key", RSF_F_STRING),
    [RSF_SETTING_VALUE] = SCALAR("value", RSF_F_STRING),
};
static const struct rsf_table_desc setting_desc = { "Setting", RSF_SETTING_NSLOTS, setting_fields };

static const struct rsf_field_desc meta_fields[RSF_META_NSLOTS] = {
    [RSF_META_FORMAT_VERSION] = SCALAR("format_version", RSF_F_U32),
    [RSF_META_HOST] = SCALAR("host", RSF_F_STRING),
    [RSF_META_PID] = SCALAR("pid", RSF_F_I32),
    [RSF_META_PPID] = SCALAR("ppid", RSF_F_I32),
    [RSF_META_RANK] = SCALAR("rank", RSF_F_I32),
    [RSF_META_LOCAL_RANK] = SCALAR("local_rank", RSF_F_I32),
    [RSF_META_WORLD_SIZE] = SCALAR("world_size", RSF_F_I32),
    [RSF_META_PARENT_RANK] = SCALAR("parent_rank", RSF_F_I32),
    [RSF_META_ROLE] = SCALAR("role", RSF_F_U8),
    [RSF_META_JOB] = SCALAR("job", RSF_F_STRING),
    [RSF_META_ARGV] = SCALAR("argv", RSF_F_VEC_STRING),
    [RSF_META_START] = STRUCTF("start", RSF_F_STRUCT, struct rsf_clock_pair),
    [RSF_META_SETTINGS] = TABLEF("settings", RSF_F_VEC_TABLE, setting_desc),
    [RSF_META_AGENT_VERSION] = SCALAR("agent_version", RSF_F_STRING),
    [RSF_META_CUDA_VERSION] = SCALAR("cuda_version", RSF_F_I32),
    [RSF_META_NCCL_VERSION] = SCALAR("nccl_version", RSF_F_I32),
};
static const struct rsf_table_desc meta_desc = { "Meta", RSF_META_NSLOTS, meta_fields };

static const struct rsf_field_desc counters_fields[RSF_COUNTERS_NSLOTS] = {
    [RSF_COUNTERS_RECORDED] = SCALAR("recorded", RSF_F_U64),
    [RSF_COUNTERS_DROPPED] = SCALAR("dropped", RSF_F_U64),
    [RSF_COUNTERS_DROPPED_IO] = SCALAR("dropped_io", RSF_F_U64),
    [RSF_COUNTERS_DROPPED_GPU] = SCALAR("dropped_gpu", RSF_F_U64),
    [RSF_COUNTERS_DROPPED_NCCL] = SCALAR("dropped_nccl", RSF_F_U64),
    [RSF_COUNTERS_DROPPED_SAMPLES] = SCALAR("dropped_samples", RSF_F_U64),
    [RSF_COUNTERS_DROPPED_RANGES] = SCALAR("dropped_ranges", RSF_F_U64),
};
static const struct rsf_table_desc counters_desc = { "Counters", RSF_COUNTERS_NSLOTS, counters_fields };

static const struct rsf_field_desc stack_fields[RSF_STACK_NSLOTS] = {
    [RSF_STACK_ID] = SCALAR("id", RSF_F_U32),
    [RSF_STACK_FRAMES] = STRUCTF("frames", RSF_F_VEC_STRUCT, struct rsf_frame),
};
static const struct rsf_table_desc stack_desc = { "Stack", RSF_STACK_NSLOTS, stack_fields };

static const struct rsf_field_desc chunk_fields[RSF_CHUNK_NSLOTS] = {
    [RSF_CHUNK_SEQ] = SCALAR("seq", RSF_F_U32),
    [RSF_CHUNK_META] = TABLEF("meta", RSF_F_TABLE, meta_desc),
    [RSF_CHUNK_STRINGS_BASE] = SCALAR("strings_base", RSF_F_U32),
    [RSF_CHUNK_STRINGS] = SCALAR("strings", RSF_F_VEC_STRING),
    [RSF_CHUNK_FILES] = STRUCTF("files", RSF_F_VEC_STRUCT, struct rsf_file_ref),
    [RSF_CHUNK_THREADS] = STRUCTF("threads", RSF_F_VEC_STRUCT, struct rsf_thread_ref),
    [RSF_CHUNK_CLOCKS] = STRUCTF("clocks", RSF_F_VEC_STRUCT, struct rsf_clock_pair),
    [RSF_CHUNK_IO] = STRUCTF("io", RSF_F_VEC_STRUCT, struct rsf_io_event),
    [RSF_CHUNK_COUNTERS] = TABLEF("counters", RSF_F_TABLE, counters_desc),
    [RSF_CHUNK_END] = SCALAR("end", RSF_F_BOOL),
    [RSF_CHUNK_GPU] = STRUCTF("gpu", RSF_F_VEC_STRUCT, struct rsf_gpu_event),
    [RSF_CHUNK_SYNCS] = STRUCTF("syncs", RSF_F_VEC_STRUCT, struct rsf_sync_event),
    [RSF_CHUNK_COLLS] = STRUCTF("colls", RSF_F_VEC_STRUCT, struct rsf_coll_event),
    [RSF_CHUNK_COMMS] = STRUCTF("comms", RSF_F_VEC_STRUCT, struct rsf_comm_event),
    [RSF_CHUNK_MEMS] = STRUCTF("mems", RSF_F_VEC_STRUCT, struct rsf_mem_event),
    [RSF_CHUNK_STACKS] = TABLEF("stacks", RSF_F_VEC_TABLE, stack_desc),
    [RSF_CHUNK_SAMPLES] = STRUCTF("samples", RSF_F_VEC_STRUCT, struct rsf_sample),
    [RSF_CHUNK_MODULES] = STRUCTF("modules", RSF_F_VEC_STRUCT, struct rsf_module),
    [RSF_CHUNK_RANGES] = STRUCTF("ranges", RSF_F_VEC_STRUCT, struct rsf_range),
    [RSF_CHUNK_LAUNCHES] = STRUCTF("launches", RSF_F_VEC_STRUCT, struct rsf_launch),
    [RSF_CHUNK_FUNCTIONS] = STRUCTF("functions", RSF_F_VEC_STRUCT, struct rsf_function),
    [RSF_CHUNK_DEVICES] = STRUCTF("devices", RSF_F_VEC_STRUCT, struct rsf_device),
    [RSF_CHUNK_SERIES] = STRUCTF("series", RSF_F_VEC_STRUCT, struct rsf_series),
    [RSF_CHUNK_POINTS] = STRUCTF("points", RSF_F_VEC_STRUCT, struct rsf_point),
    [RSF_CHUNK_COLL_GROUPS] = STRUCTF("coll_groups", RSF_F_VEC_STRUCT, struct rsf_coll_group),
    [RSF_CHUNK_GRAPH_NODES] = STRUCTF("graph_nodes", RSF_F_VEC_STRUCT, struct rsf_graph_node),
    [RSF_CHUNK_GRAPH_EDGES] = STRUCTF("graph_edges", RSF_F_VEC_STRUCT, struct rsf_graph_edge),
    [RSF_CHUNK_MARKS] = STRUCTF("marks", RSF_F_VEC_STRUCT, struct rsf_mark),
    [RSF_CHUNK_MEM_INFO] = STRUCTF("mem_info", RSF_F_VEC_STRUCT, struct rsf_mem_info),
};
const struct rsf_table_desc rsf_chunk_desc = { "Chunk", RSF_CHUNK_NSLOTS, chunk_fields };

static const char *const rsf_io_names[] = {
#define RSF_IO_NAME(id, name, dir) #name,
    RSF_IO_OPS(RSF_IO_NAME)
#undef RSF_IO_NAME
};
static const unsigned char rsf_io_dirs[] = {
#define RSF_IO_DIR(id, name, dir) RSF_DIR_##dir,
    RSF_IO_OPS(RSF_IO_DIR)
#undef RSF_IO_DIR
};

const char *rsf_io_op_name(unsigned op)
{
    return op < RSF_IO_NOPS ? rsf_io_names[op] : NULL;
}

int rsf_io_op_dir(unsigned op)
{
    return op < RSF_IO_NOPS ? rsf_io_dirs[op] : RSF_DIR_NONE;
}

#define RSF_NAME(id, name) #name,
#define RSF_NAME_FN(fn, LIST)                                          \
    const char *fn(unsigned v)                                         \
    {                                                                  \
        static const char *const names[] = { LIST(RSF_NAME) };         \
        return v < sizeof names / sizeof names[0] ? names[v] : NULL;   \
    }
RSF_NAME_FN(rsf_gpu_kind_name, RSF_GPU_KINDS)
RSF_NAME_FN(rsf_copy_dir_name, RSF_COPY_DIRS)
RSF_NAME_FN(rsf_sync_kind_name, RSF_SYNC_KINDS)
RSF_NAME_FN(rsf_coll_op_name, RSF_COLL_OPS)
RSF_NAME_FN(rsf_comm_kind_name, RSF_COMM_KINDS)
RSF_NAME_FN(rsf_mem_kind_name, RSF_MEM_KINDS)
RSF_NAME_FN(rsf_sample_kind_name, RSF_SAMPLE_KINDS)
RSF_NAME_FN(rsf_range_kind_name, RSF_RANGE_KINDS)
RSF_NAME_FN(rsf_graph_node_kind_name, RSF_GRAPH_NODE_KINDS)
RSF_NAME_FN(rsf_mark_kind_name, RSF_MARK_KINDS)
RSF_NAME_FN(rsf_series_kind_name, RSF_SERIES_KINDS)
RSF_NAME_FN(rsf_link_kind_name, RSF_LINK_KINDS)
#undef RSF_NAME
#define RSF_NAME(id, name, label) #name,
RSF_NAME_FN(rsf_wait_reason_name, RSF_WAIT_REASONS)
#undef RSF_NAME
#define RSF_NAME(id, name, label) label,
RSF_NAME_FN(rsf_wait_reason_label, RSF_WAIT_REASONS)
#undef RSF_NAME_FN
#undef RSF_NAME

/* ---- encoding ---- */

static struct rsf_val sval(const char *s)
{
    return (struct rsf_val){ .set = s != NULL, .p = s, .n = s ? (uint32_t)strlen(s) : 0 };
}

static struct rsf_val uval(uint64_t u) { return (struct rsf_val){ .set = 1, .u = u }; }
static struct rsf_val ival(int64_t i) { return (struct rsf_val){ .set = 1, .u = (uint64_t)i }; }

static struct rsf_val vval(const void *p, uint32_t n)
{
    return (struct rsf_val){ .set = n > 0, .p = p, .n = n };
}

/* Builds the value arrays for the whole chunk; settings need one small
 * array per entry, so the caller provides room (2 x nsettings values plus
 * nsettings pointers) in *scratch, or NULL if there is no meta. */
struct enc {
    struct rsf_val chunk[RSF_CHUNK_NSLOTS];
    struct rsf_val meta[RSF_META_NSLOTS];
    struct rsf_val counters[RSF_COUNTERS_NSLOTS];
    struct rsf_val *settings;
    const struct rsf_val **setting_ptrs;
    struct rsf_val *stacks;             /* RSF_STACK_NSLOTS per stack */
    const struct rsf_val **stack_ptrs;
};

static int enc_fill(struct enc *e, const struct rsf_chunk *c)
{
    memset(e, 0, sizeof *e);
    e->chunk[RSF_CHUNK_SEQ] = uval(c->seq);
    if (c->meta) {
        const struct rsf_meta *m = c->meta;
        if (m->nsettings) {
            e->settings = calloc(m->nsettings, RSF_SETTING_NSLOTS * sizeof *e->settings);
            e->setting_ptrs = calloc(m->nsettings, sizeof *e->setting_ptrs);
            if (!e->settings || !e->setting_ptrs)
                return RSF_ERR_NOMEM;
            for (uint32_t i = 0; i < m->nsettings; i++) {
                struct rsf_val *s = e->settings + i * RSF_SETTING_NSLOTS;
                s[RSF_SETTING_KEY] = sval(m->setting_keys[i]);
                s[RSF_SETTING_VALUE] = sval(m->setting_values[i]);
                e->setting_ptrs[i] = s;
            }
        }
        e->meta[RSF_META_FORMAT_VERSION] = uval(m->format_version);
        e->meta[RSF_META_HOST] = sval(m->host);
        e->meta[RSF_META_PID] = ival(m->pid);
        e->meta[RSF_META_PPID] = ival(m->ppid);
        e->meta[RSF_META_RANK] = ival(m->rank);
        e->meta[RSF_META_LOCAL_RANK] = ival(m->local_rank);
        e->meta[RSF_META_WORLD_SIZE] = ival(m->world_size);
        e->meta[RSF_META_PARENT_RANK] = ival(m->parent_rank);
        e->meta[RSF_META_ROLE] = uval(m->role);
        e->meta[RSF_META_JOB] = sval(m->job);
        e->meta[RSF_META_ARGV] = vval(m->argv, m->argc);
        e->meta[RSF_META_START] = (struct rsf_val){ .set = 1, .p = &m->start };
        e->meta[RSF_META_SETTINGS] = vval(e->setting_ptrs, m->nsettings);
        e->meta[RSF_META_AGENT_VERSION] = sval(m->agent_version);
        e->meta[RSF_META_CUDA_VERSION] = ival(m->cuda_version);
        e->meta[RSF_META_NCCL_VERSION] = ival(m->nccl_version);
        e->chunk[RSF_CHUNK_META] = (struct rsf_val){ .set = 1, .p = e->meta };
    }
    e->chunk[RSF_CHUNK_STRINGS_BASE] = uval(c->strings_base);
    e->chunk[RSF_CHUNK_STRINGS] = vval(c->strings, c->nstrings);
    e->chunk[RSF_CHUNK_FILES] = vval(c->files, c->nfiles);
    e->chunk[RSF_CHUNK_THREADS] = vval(c->threads, c->nthreads);
    e->chunk[RSF_CHUNK_CLOCKS] = vval(c->clocks, c->nclocks);
    e->chunk[RSF_CHUNK_IO] = vval(c->io, c->nio);
    if (c->counters) {
        e->counters[RSF_COUNTERS_RECORDED] = uval(c->counters->recorded);
        e->counters[RSF_COUNTERS_DROPPED] = uval(c->counters->dropped);
        e->counters[RSF_COUNTERS_DROPPED_IO] = uval(c->counters->dropped_io);
        e->counters[RSF_COUNTERS_DROPPED_GPU] = uval(c->counters->dropped_gpu);
        e->counters[RSF_COUNTERS_DROPPED_NCCL] = uval(c->counters->dropped_nccl);
        e->counters[RSF_COUNTERS_DROPPED_SAMPLES] = uval(c->counters->dropped_samples);
        e->counters[RSF_COUNTERS_DROPPED_RANGES] = uval(c->counters->dropped_ranges);
        e->chunk[RSF_CHUNK_COUNTERS] = (struct rsf_val){ .set = 1, .p = e->counters };
    }
    if (c->end)
        e->chunk[RSF_CHUNK_END] = uval(1);
    e->chunk[RSF_CHUNK_GPU] = vval(c->gpu, c->ngpu);
    e->chunk[RSF_CHUNK_SYNCS] = vval(c->syncs, c->nsyncs);
    e->chunk[RSF_CHUNK_COLLS] = vval(c->colls, c->ncolls);
    e->chunk[RSF_CHUNK_COMMS] = vval(c->comms, c->ncomms);
    e->chunk[RSF_CHUNK_MEMS] = vval(c->mems, c->nmems);
    e->chunk[RSF_CHUNK_SAMPLES] = vval(c->samples, c->nsamples);
    e->chunk[RSF_CHUNK_MODULES] = vval(c->modules, c->nmodules);
    e->chunk[RSF_CHUNK_RANGES] = vval(c->ranges, c->nranges);
    e->chunk[RSF_CHUNK_LAUNCHES] = vval(c->launches, c->nlaunches);
    e->chunk[RSF_CHUNK_FUNCTIONS] = vval(c->functions, c->nfunctions);
    e->chunk[RSF_CHUNK_DEVICES] = vval(c->devices, c->ndevices);
    e->chunk[RSF_CHUNK_SERIES] = vval(c->series, c->nseries);
    e->chunk[RSF_CHUNK_POINTS] = vval(c->points, c->npoints);
    e->chunk[RSF_CHUNK_COLL_GROUPS] = vval(c->coll_groups, c->ncoll_groups);
    e->chunk[RSF_CHUNK_GRAPH_NODES] = vval(c->graph_nodes, c->ngraph_nodes);
    e->chunk[RSF_CHUNK_GRAPH_EDGES] = vval(c->graph_edges, c->ngraph_edges);
    e->chunk[RSF_CHUNK_MARKS] = vval(c->marks, c->nmarks);
    e->chunk[RSF_CHUNK_MEM_INFO] = vval(c->mem_info, c->nmem_info);
    if (c->nstacks) {
        e->stacks = calloc(c->nstacks, RSF_STACK_NSLOTS * sizeof *e->stacks);
        e->stack_ptrs = calloc(c->nstacks, sizeof *e->stack_ptrs);
        if (!e->stacks || !e->stack_ptrs)
            return RSF_ERR_NOMEM;
        for (uint32_t i = 0; i < c->nstacks; i++) {
            struct rsf_val *t = e->stacks + i * RSF_STACK_NSLOTS;
            t[RSF_STACK_ID] = uval(c->stacks[i].id);
            t[RSF_STACK_FRAMES] = vval(c->stacks[i].frames, c->stacks[i].nframes);
            e->stack_ptrs[i] = t;
        }
        e->chunk[RSF_CHUNK_STACKS] = vval(e->stack_ptrs, c->nstacks);
    }
    return RSF_ERR_OK;
}

static void enc_free(struct enc *e)
{
    free(e->settings);
    free(e->setting_ptrs);
    free(e->stacks);
    free(e->stack_ptrs);
}

size_t rsf_chunk_bound(const struct rsf_chunk *c)
{
    struct enc e;
    size_t n = 0;
    if (enc_fill(&e, c) == RSF_ERR_OK)
        n = rsf_fb_bound(&rsf_chunk_desc, e.chunk);
    enc_free(&e);
    return n;
}

int rsf_chunk_encode(const struct rsf_chunk *c, struct rsf_buf *out)
{
    struct enc e;
    int err = enc_fill(&e, c);
    if (!err)
        err = rsf_fb_finish(out, &rsf_chunk_desc, e.chunk, RSF_IDENT);
    enc_free(&e);
    return err;
}

/* ---- decoding ---- */

/* Reads a vector of strings at vpos into the pointer array dst. */
static void strings_at(const uint8_t *buf, uint32_t vpos, const char **dst, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        dst[i] = rsf_fb_string_at(buf, rsf_fb_vec_ref(buf, vpos, i), NULL);
}

static const char *string_field(const uint8_t *buf, uint32_t tpos, unsigned slot)
{
    uint32_t s = rsf_fb_deref(buf, tpos, slot);
    return s ? rsf_fb_string_at(buf, s, NULL) : NULL;
}

static const void *struct_vec(const uint8_t *buf, uint32_t tpos, unsigned slot, uint32_t *n)
{
    uint32_t v = rsf_fb_deref(buf, tpos, slot);
    *n = rsf_fb_vec_len(buf, v);
    return *n ? buf + v + 4 : NULL;
}

static int decode_meta(const uint8_t *buf, uint32_t m, struct rsf_chunk_view *v,
                       const char **ptrs)
{
    struct rsf_meta *meta = &v->meta;
    meta->format_version = rsf_fb_u32(buf, m, RSF_META_FORMAT_VERSION, 0);
    meta->host = string_field(buf, m, RSF_META_HOST);
    meta->pid = rsf_fb_i32(buf, m, RSF_META_PID, 0);
    meta->ppid = rsf_fb_i32(buf, m, RSF_META_PPID, 0);
    meta->rank = rsf_fb_i32(buf, m, RSF_META_RANK, -1);
    meta->local_rank = rsf_fb_i32(buf, m, RSF_META_LOCAL_RANK, -1);
    meta->world_size = rsf_fb_i32(buf, m, RSF_META_WORLD_SIZE, -1);
    meta->parent_rank = rsf_fb_i32(buf, m, RSF_META_PARENT_RANK, -1);
    meta->role = rsf_fb_u8(buf, m, RSF_META_ROLE, RSF_ROLE_OTHER);
    if (meta->role > RSF_ROLE_OTHER)
        return RSF_ERR_BAD_VALUE;
    meta->job = string_field(buf, m, RSF_META_JOB);
    uint32_t at = rsf_fb_field(buf, m, RSF_META_START);
    if (at)
        memcpy(&meta->start, buf + at, sizeof meta->start);
    meta->agent_version = string_field(buf, m, RSF_META_AGENT_VERSION);
    meta->cuda_version = rsf_fb_i32(buf, m, RSF_META_CUDA_VERSION, 0);
    meta->nccl_version = rsf_fb_i32(buf, m, RSF_META_NCCL_VERSION, 0);

    uint32_t av = rsf_fb_deref(buf, m, RSF_META_ARGV);
    meta->argc = rsf_fb_vec_len(buf, av);
    strings_at(buf, av, ptrs, meta->argc);
    meta->argv = ptrs;
    ptrs += meta->argc;

    uint32_t sv = rsf_fb_deref(buf, m, RSF_META_SETTINGS);
    meta->nsettings = rsf_fb_vec_len(buf, sv);
    const char **keys = ptrs, **values = ptrs + meta->nsettings;
    for (uint32_t i = 0; i < meta->nsettings; i++) {
        uint32_t t = rsf_fb_vec_ref(buf, sv, i);
        keys[i] = string_field(buf, t, RSF_SETTING_KEY);
        values[i] = string_field(buf, t, RSF_SETTING_VALUE);
    }
    meta->setting_keys = keys;
    meta->setting_values = values;
    v->c.meta = meta;
    return RSF_ERR_OK;
}

int rsf_chunk_decode(const uint8_t *buf, size_t size, struct rsf_chunk_view *v, size_t *where)
{
    memset(v, 0, sizeof *v);
    int err = rsf_fb_verify(buf, size, &rsf_chunk_desc, RSF_IDENT, where);
    if (err)
        return err;
    uint32_t t = rsf_fb_root(buf);
    struct rsf_chunk *c = &v->c;
    c->seq = rsf_fb_u32(buf, t, RSF_CHUNK_SEQ, 0);
    c->strings_base = rsf_fb_u32(buf, t, RSF_CHUNK_STRINGS_BASE, 0);
    c->files = struct_vec(buf, t, RSF_CHUNK_FILES, &c->nfiles);
    c->threads = struct_vec(buf, t, RSF_CHUNK_THREADS, &c->nthreads);
    c->clocks = struct_vec(buf, t, RSF_CHUNK_CLOCKS, &c->nclocks);
    c->io = struct_vec(buf, t, RSF_CHUNK_IO, &c->nio);
    c->end = rsf_fb_u8(buf, t, RSF_CHUNK_END, 0) != 0;
    c->gpu = struct_vec(buf, t, RSF_CHUNK_GPU, &c->ngpu);
    c->syncs = struct_vec(buf, t, RSF_CHUNK_SYNCS, &c->nsyncs);
    c->colls = struct_vec(buf, t, RSF_CHUNK_COLLS, &c->ncolls);
    c->comms = struct_vec(buf, t, RSF_CHUNK_COMMS, &c->ncomms);
    c->mems = struct_vec(buf, t, RSF_CHUNK_MEMS, &c->nmems);
    c->samples = struct_vec(buf, t, RSF_CHUNK_SAMPLES, &c->nsamples);
    c->modules = struct_vec(buf, t, RSF_CHUNK_MODULES, &c->nmodules);
    c->ranges = struct_vec(buf, t, RSF_CHUNK_RANGES, &c->nranges);
    c->launches = struct_vec(buf, t, RSF_CHUNK_LAUNCHES, &c->nlaunches);
    if (c->nlaunches != c->ngpu) { /* not this format's: the events stand without geometry */
        c->launches = NULL;
        c->nlaunches = 0;
    }
    c->functions = struct_vec(buf, t, RSF_CHUNK_FUNCTIONS, &c->nfunctions);
    c->devices = struct_vec(buf, t, RSF_CHUNK_DEVICES, &c->ndevices);
    c->series = struct_vec(buf, t, RSF_CHUNK_SERIES, &c->nseries);
    c->points = struct_vec(buf, t, RSF_CHUNK_POINTS, &c->npoints);
    c->coll_groups = struct_vec(buf, t, RSF_CHUNK_COLL_GROUPS, &c->ncoll_groups);
    if (c->ncoll_groups != c->ncolls) { /* not this format's: the calls stand without groups */
        c->coll_groups = NULL;
        c->ncoll_groups = 0;
    }
    c->graph_nodes = struct_vec(buf, t, RSF_CHUNK_GRAPH_NODES, &c->ngraph_nodes);
    c->graph_edges = struct_vec(buf, t, RSF_CHUNK_GRAPH_EDGES, &c->ngraph_edges);
    c->marks = struct_vec(buf, t, RSF_CHUNK_MARKS, &c->nmarks);
    c->mem_info = struct_vec(buf, t, RSF_CHUNK_MEM_INFO, &c->nmem_info);
    if (c->nmem_info != c->nmems) { /* not this format's: the calls stand without it */
        c->mem_info = NULL;
        c->nmem_info = 0;
    }

    uint32_t sv = rsf_fb_deref(buf, t, RSF_CHUNK_STRINGS);
    uint32_t m = rsf_fb_deref(buf, t, RSF_CHUNK_META);
    uint32_t argv_vec = m ? rsf_fb_deref(buf, m, RSF_META_ARGV) : 0;
    uint32_t set_vec = m ? rsf_fb_deref(buf, m, RSF_META_SETTINGS) : 0;
    size_t nptr = (size_t)rsf_fb_vec_len(buf, sv) + rsf_fb_vec_len(buf, argv_vec) +
                  2 * (size_t)rsf_fb_vec_len(buf, set_vec);
    const char **ptrs = calloc(nptr ? nptr : 1, sizeof *ptrs);
    if (!ptrs)
        return RSF_ERR_NOMEM;
    v->owned = ptrs;
    c->nstrings = rsf_fb_vec_len(buf, sv);
    strings_at(buf, sv, ptrs, c->nstrings);
    c->strings = ptrs;
    if (m && (err = decode_meta(buf, m, v, ptrs + c->nstrings))) {
        if (where)
            *where = m;
        rsf_chunk_view_free(v);
        return err;
    }
    uint32_t ct = rsf_fb_deref(buf, t, RSF_CHUNK_COUNTERS);
    if (ct) {
        v->counters.recorded = rsf_fb_u64(buf, ct, RSF_COUNTERS_RECORDED, 0);
        v->counters.dropped = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED, 0);
        v->counters.dropped_io = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED_IO, 0);
        v->counters.dropped_gpu = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED_GPU, 0);
        v->counters.dropped_nccl = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED_NCCL, 0);
        v->counters.dropped_samples = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED_SAMPLES, 0);
        v->counters.dropped_ranges = rsf_fb_u64(buf, ct, RSF_COUNTERS_DROPPED_RANGES, 0);
        c->counters = &v->counters;
    }
    uint32_t stv = rsf_fb_deref(buf, t, RSF_CHUNK_STACKS);
    uint32_t nst = rsf_fb_vec_len(buf, stv);
    if (nst) {
        v->owned_stacks = calloc(nst, sizeof *v->owned_stacks);
        if (!v->owned_stacks) {
            rsf_chunk_view_free(v);
            return RSF_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < nst; i++) {
            uint32_t st = rsf_fb_vec_ref(buf, stv, i);
            v->owned_stacks[i].id = rsf_fb_u32(buf, st, RSF_STACK_ID, 0);
            v->owned_stacks[i].frames = struct_vec(buf, st, RSF_STACK_FRAMES,
                                                   &v->owned_stacks[i].nframes);
        }
        c->stacks = v->owned_stacks;
        c->nstacks = nst;
    }
    return RSF_ERR_OK;
}

void rsf_chunk_view_free(struct rsf_chunk_view *v)
{
    free(v->owned);
    free(v->owned_stacks);
    memset(v, 0, sizeof *v);
}

const char *rsf_meta_setting(const struct rsf_meta *m, const char *key)
{
    for (uint32_t i = 0; i < m->nsettings; i++)
        if (m->setting_keys[i] && m->setting_values[i] && strcmp(m->setting_keys[i], key) == 0)
            return m->setting_values[i];
    return NULL;
}
