/* Ringside trace chunks into an rsr_model (see load_model.h). Each GpuEvent
 * becomes a launch (the host call) and, when it was timed, an op; each
 * CollEvent an rsr_coll, linked at the end to the communication kernel that
 * ran it, matched by stream and GPU start. */
#include "reporter/load/load_model.h"
#include "reporter/load/coll_groups.h"
#include "reporter/load/graphs.h"
#include "reporter/load/memory.h"
#include "reporter/load/nodes_load.h"
#include "reporter/load/occupancy.h"
#include "reporter/load/summary.h"
#include "reporter/load/period.h"
#include "reporter/base/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t size;
} dtypes[] = {
    { "int8", 1 },    { "uint8", 1 },    { "int32", 4 },   { "uint32", 4 },
    { "int64", 8 },   { "uint64", 8 },   { "float16", 2 }, { "float32", 4 },
    { "float64", 8 }, { "bfloat16", 2 }, { "float8e4m3", 1 }, { "float8e5m2", 1 },
};

uint32_t rsr_nccl_dtype_size(unsigned d)
{
    return d < sizeof dtypes / sizeof dtypes[0] ? dtypes[d].size : 0;
}

const char *rsr_nccl_dtype_name(unsigned d)
{
    return d < sizeof dtypes / sizeof dtypes[0] ? dtypes[d].name : "unknown";
}

void rsr_model_loader_init(struct rsr_model_loader *L, struct rsr_model *m)
{
    memset(L, 0, sizeof *L);
    L->m = m;
}

void rsr_model_loader_stream(struct rsr_model_loader *L)
{
    L->stream = 1;
    L->lateness_ns = RSR_STREAM_LATENESS_NS;
}

void rsr_model_loader_window(struct rsr_model_loader *L, int64_t from_ns, int64_t to_ns)
{
    L->windowed = 1;
    L->win_from = from_ns;
    L->win_to = to_ns;
}

/* Outside the window: counted, not kept. */
static int outside(struct rsr_model_loader *L, int64_t start, int64_t end)
{
    if (!L->windowed || (end >= L->win_from && start <= L->win_to))
        return 0;
    L->left_out++;
    return 1;
}

/* The same for a reading that is no record of its own (a communicator's
 * end, a run-delay point): not counted as left out. */
static int beyond(const struct rsr_model_loader *L, int64_t t)
{
    return L->windowed && (t < L->win_from || t > L->win_to);
}

/* A two-microsecond window links a collective to its kernel (link_colls). */
#define RSR_LINK_TOL_NS 2000

static void drain(struct rsr_model_loader *L, int final);

/* Notes a record's start for the streaming cut; one that starts before
 * what was settled already is late (summary.h): the lateness allowed
 * grows so that the next such record is not. */
static void see_start(struct rsr_model_loader *L, int64_t start)
{
    if (!L->stream || !start)
        return;
    if (start > L->max_start)
        L->max_start = start;
    if (L->settled && start < L->cut - RSR_LINK_TOL_NS) {
        int64_t behind = 2 * (L->max_start - start);
        if (behind > L->lateness_ns)
            L->lateness_ns = behind < 60000000000ll ? behind : 60000000000ll;
    }
}

/* The model's id for file string id sid (0 when unknown or out of memory). */
static uint32_t str_id(struct rsr_model_loader *L, uint32_t sid, char *const *strings, uint32_t nstrings)
{
    if (!sid || sid >= nstrings || !strings[sid])
        return 0;
    if (sid < L->nsmap && L->smap[sid])
        return L->smap[sid] - 1;
    if (rsr_grow_zeroed(&L->smap, &L->nsmap, (size_t)sid + 1, sizeof *L->smap, 256) != 0)
        return 0;
    uint32_t id = 0;
    if (rsr_model_intern(L->m, strings[sid], strlen(strings[sid]), &id) != 0)
        return 0;
    L->smap[sid] = id + 1;
    return id;
}

static uint32_t intern(struct rsr_model *m, const char *s)
{
    uint32_t id = 0;
    rsr_model_intern(m, s, strlen(s), &id);
    return id;
}

/* Streams are ids (cuStreamGetId) or handles; the model keeps an int32. */
static int32_t stream_id(uint64_t s)
{
    if (s < 0x80000000u)
        return (int32_t)s;
    return (int32_t)((s ^ (s >> 32)) & 0x7fffffff);
}

static void see_time(struct rsr_model *m, int64_t start, int64_t end)
{
    if (!start)
        return;
    if (!m->wall_start_ns || start < m->wall_start_ns)
        m->wall_start_ns = start;
    if (end > m->wall_end_ns)
        m->wall_end_ns = end;
}

static const char *launch_name(unsigned kind)
{
    switch (kind) {
    case RSF_GPU_KERNEL: return "cuLaunchKernel";
    case RSF_GPU_MEMCPY: return "cuMemcpyAsync";
    case RSF_GPU_MEMSET: return "cuMemsetAsync";
    case RSF_GPU_GRAPH: return "cuGraphLaunch";
    default: return "launch";
    }
}

/* A kernel's geometry onto its op, where the file described its device. */
static void take_geom(struct rsr_model_loader *L, struct rsr_gpu_op *op, const struct rsf_launch *l)
{
    const struct rsf_function *f = l->func && l->func < L->nfuncs && L->funcs[l->func].id ? &L->funcs[l->func] : NULL;
    int dev = f && f->device >= 0 ? f->device : op->device;
    if (dev >= 0 && dev < 64 && L->devices[dev].sm_count)
        rsr_geom_op(op, &L->devices[dev], f, l);
}

/* A kernel name's class, found once per name by substring. */
static int kernel_cls(struct rsr_model_loader *L, uint32_t name)
{
    if (rsr_grow_zeroed(&L->clsmap, &L->nclsmap, (size_t)name + 1, sizeof *L->clsmap, 256) != 0)
        return -1;
    if (!L->clsmap[name])
        L->clsmap[name] = (uint32_t)rsr_gpu_classify_kernel(rsr_model_str(L->m, name)) + 1;
    return (int)L->clsmap[name] - 1;
}

/* A graph launch being shared among its nodes: one op per node. */
struct graph_launch {
    struct rsr_model_loader *L;
    const struct rsf_gpu_event *e;
    uint64_t corr;
};

/* The communicator's entry, added (rank and size not known) when new;
 * NULL when out of memory. */
static struct rsr_comm_info *comm_info(struct rsr_model_loader *L, uint64_t comm)
{
    for (uint32_t i = 0; i < L->ncomms; i++)
        if (L->comms[i].comm == comm)
            return &L->comms[i];
    if (L->ncomms == L->capcomms) {
        uint32_t c = L->capcomms ? L->capcomms * 2 : 8;
        void *p = realloc(L->comms, c * sizeof *L->comms);
        if (!p)
            return NULL;
        L->comms = p;
        L->capcomms = c;
    }
    L->comms[L->ncomms] = (struct rsr_comm_info){ comm, -1, -1, 0 };
    return &L->comms[L->ncomms++];
}

/* A collective node's call: its share of the launch's time (graphs.h) as its
 * GPU time, numbered among the communicator's replayed calls (model.h); link_colls
 * links it to the node's op as it does a call outside graphs. */
static int graph_coll(struct graph_launch *gl, const struct rsr_graph_node *n, int64_t start, int64_t end)
{
    struct rsr_model_loader *L = gl->L;
    struct rsr_comm_info *ci = comm_info(L, n->comm);
    struct rsr_coll *c = ci ? rsr_model_add_coll(L->m) : NULL;
    if (!c)
        return -1;
    c->op = n->op < RSF_COLL_NOPS ? (uint8_t)(n->op + 1) : RSR_COLL_UNKNOWN;
    c->bytes = n->bytes;
    c->dtype = intern(L->m, "unknown");
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)n->comm);
    c->comm = intern(L->m, hex);
    c->comm_id = n->comm ? n->comm : 1;
    c->seq = RSR_SEQ_REPLAYED | (ci->replayed++ & RSR_SEQ_NUMBER);
    c->launch_ns = (int64_t)gl->e->launch_ns;
    c->call_end_ns = (int64_t)gl->e->launch_ns + gl->e->call_ns;
    c->start_ns = start;
    c->end_ns = end;
    c->members = (uint32_t)stream_id(gl->e->stream);
    L->m->graph_colls++;
    see_time(L->m, c->launch_ns, c->call_end_ns);
    return 0;
}

static int graph_node_op(void *arg, const struct rsr_graph_node *n, int64_t start, int64_t end)
{
    struct graph_launch *gl = arg;
    struct rsr_model_loader *L = gl->L;
    struct rsr_op_name_buf { char s[48]; } b;
    struct rsr_gpu_op *op = rsr_model_add_op(L->m);
    if (!op)
        return -1;
    op->start_ns = start;
    op->end_ns = end;
    op->correlation = gl->corr;
    L->m->graph_ops++;
    op->launch_ns = L->stream ? (int64_t)gl->e->launch_ns : 0;
    op->stream = stream_id(gl->e->stream);
    op->device = gl->e->device;
    op->bytes = n->kind == RSF_GNODE_MEMCPY || n->kind == RSF_GNODE_MEMSET ? n->bytes : 0;
    op->name = n->name;
    if (!op->name) {
        snprintf(b.s, sizeof b.s, "%s", n->kind == RSF_GNODE_MEMCPY ? "Memcpy" : n->kind == RSF_GNODE_MEMSET ? "Memset"
                                        : n->kind == RSF_GNODE_KERNEL ? "kernel" : "");
        if (n->kind == RSF_GNODE_COLLECTIVE)
            snprintf(b.s, sizeof b.s, "nccl:%s", rsr_coll_op_name(n->op + 1));
        op->name = intern(L->m, b.s);
    }
    int cls = n->kind == RSF_GNODE_MEMCPY ? RSR_GPU_MEMCPY : n->kind == RSF_GNODE_MEMSET ? RSR_GPU_MEMSET
                                                                                       : kernel_cls(L, op->name);
    if (cls < 0)
        return -1;
    /* an NCCL call is communication whatever its kernel is called */
    op->cls = (uint8_t)(n->kind == RSF_GNODE_COLLECTIVE ? RSR_GPU_COMM : cls);
    if (n->geom.grid_x)
        take_geom(L, op, &n->geom);
    return n->kind == RSF_GNODE_COLLECTIVE ? graph_coll(gl, n, start, end) : 0;
}

static int take_gpu(struct rsr_model_loader *L, const struct rsf_gpu_event *e, const struct rsf_launch *geom,
                    char *const *strings, uint32_t nstrings)
{
    struct rsr_model *m = L->m;
    uint64_t corr = 0;
    see_time(m, (int64_t)e->launch_ns, (int64_t)e->launch_ns + e->call_ns);
    int64_t last = (int64_t)(e->gpu_end_ns > e->launch_ns + e->call_ns ? e->gpu_end_ns : e->launch_ns + e->call_ns);
    if (outside(L, (int64_t)e->launch_ns, last))
        return 0;
    if (!L->stream) {
        corr = ++L->next_corr;
        struct rsr_launch *l = rsr_model_add_launch(m);
        if (!l)
            return -1;
        l->start_ns = (int64_t)e->launch_ns;
        l->end_ns = (int64_t)e->launch_ns + e->call_ns;
        l->correlation = corr;
        unsigned k = e->kind < RSF_GPU_NKINDS ? e->kind : RSF_GPU_NKINDS;
        if (!L->launch_names[k])
            L->launch_names[k] = intern(m, launch_name(e->kind)) + 1;
        l->name = L->launch_names[k] - 1;
        l->tid = e->tid;
    }
    if (!e->gpu_start_ns || e->gpu_end_ns < e->gpu_start_ns)
        return 0; /* not timed */
    if (!L->graphs && !(L->graphs = rsr_graphs_new()))
        return -1;
    if (e->kind == RSF_GPU_GRAPH && e->graph) {
        /* its nodes, each with its share of the launch's time (graphs.h) */
        struct graph_launch gl = { L, e, corr };
        int n = rsr_graphs_split(L->graphs, e->graph, (int64_t)e->gpu_start_ns, (int64_t)e->gpu_end_ns,
                                 graph_node_op, &gl);
        if (n < 0)
            return -1;
        if (n > 0) {
            see_start(L, (int64_t)e->gpu_start_ns);
            see_time(m, (int64_t)e->gpu_start_ns, (int64_t)e->gpu_end_ns);
            return 0;
        }
    }
    struct rsr_gpu_op *op = rsr_model_add_op(m);
    if (!op)
        return -1;
    op->start_ns = (int64_t)e->gpu_start_ns;
    op->end_ns = (int64_t)e->gpu_end_ns;
    op->correlation = corr;
    op->launch_ns = L->stream ? (int64_t)e->launch_ns : 0;
    see_start(L, op->start_ns);
    op->bytes = e->bytes;
    op->name = str_id(L, e->name, strings, nstrings);
    if (!op->name && e->kind == RSF_GPU_MEMCPY) {
        static const char *const dirs[] = { "Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD",
                                            "Memcpy HtoH", "Memcpy PtoP" };
        op->name = intern(m, e->dir < sizeof dirs / sizeof dirs[0] ? dirs[e->dir] : "Memcpy");
    } else if (!op->name) {
        op->name = intern(m, e->kind == RSF_GPU_MEMSET ? "Memset" : e->kind == RSF_GPU_GRAPH ? "CUDA graph"
                                                                                                : "kernel");
    }
    op->stream = stream_id(e->stream);
    op->device = e->device;
    switch (e->kind) {
    case RSF_GPU_MEMCPY: op->cls = RSR_GPU_MEMCPY; break;
    case RSF_GPU_MEMSET: op->cls = RSR_GPU_MEMSET; break;
    case RSF_GPU_KERNEL: {
        int cls = kernel_cls(L, op->name);
        if (cls < 0 || rsr_graphs_seen(L->graphs, op->name, e) != 0)
            return -1;
        op->cls = (uint8_t)cls;
        break;
    }
    default: op->cls = RSR_GPU_COMPUTE; break;
    }
    if (geom && e->kind == RSF_GPU_KERNEL && geom->grid_x)
        take_geom(L, op, geom);
    see_time(m, op->start_ns, op->end_ns);
    return 0;
}

static int take_coll(struct rsr_model_loader *L, const struct rsf_coll_event *e, uint64_t group)
{
    struct rsr_model *m = L->m;
    if (L->windowed && ((int64_t)(e->gpu_end_ns > e->launch_ns ? e->gpu_end_ns : e->launch_ns) < L->win_from ||
                        (int64_t)e->launch_ns > L->win_to))
        return 0;
    struct rsr_coll *c = rsr_model_add_coll(m);
    if (!c)
        return -1;
    c->op = e->op < RSF_COLL_NOPS ? (uint8_t)(e->op + 1) : RSR_COLL_UNKNOWN;
    c->elem_size = rsr_nccl_dtype_size(e->datatype);
    c->in_count = c->out_count = e->count;
    c->bytes = e->bytes ? e->bytes : e->count * c->elem_size;
    c->dtype = intern(m, rsr_nccl_dtype_name(e->datatype));
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)e->comm);
    c->comm = intern(m, hex);
    c->comm_id = e->comm ? e->comm : 1;
    c->seq = e->seq;
    c->peer = e->peer;
    c->late = (e->flags & RSF_COLLF_LATE) != 0;
    c->launch_ns = (int64_t)e->launch_ns;
    c->call_end_ns = (int64_t)e->launch_ns + e->call_ns;
    if (e->gpu_start_ns && e->gpu_end_ns >= e->gpu_start_ns) {
        c->start_ns = (int64_t)e->gpu_start_ns;
        c->end_ns = (int64_t)e->gpu_end_ns;
    }
    /* the stream rides in members' place until the link (see link_colls) */
    c->members = (uint32_t)stream_id(e->stream);
    see_start(L, c->start_ns);
    see_time(m, c->launch_ns, c->call_end_ns);
    see_time(m, c->start_ns, c->end_ns);
    int32_t nranks = -1, rank = -1;
    for (uint32_t i = 0; i < L->ncomms; i++)
        if (L->comms[i].comm == c->comm_id)
            nranks = L->comms[i].nranks, rank = L->comms[i].rank;
    rsr_group_take(&L->groups, m, group, nranks, rank);
    return 0;
}

static int take_comm(struct rsr_model_loader *L, const struct rsf_comm_event *e)
{
    if (e->kind != RSF_COMM_INIT && e->kind != RSF_COMM_INIT_ALL && e->kind != RSF_COMM_SPLIT)
        return 0;
    struct rsr_comm_info *ci = comm_info(L, e->comm);
    if (!ci)
        return -1;
    ci->rank = e->rank;
    ci->nranks = e->nranks;
    return 0;
}

struct graph_names {
    struct rsr_model_loader *L;
    char *const *strings;
    uint32_t nstrings;
};

static uint32_t graph_name(void *arg, uint32_t sid)
{
    struct graph_names *gn = arg;
    return str_id(gn->L, sid, gn->strings, gn->nstrings);
}

int rsr_model_loader_chunk(struct rsr_model_loader *L, const struct rsf_chunk *c, char *const *strings,
                           uint32_t nstrings)
{
    struct rsr_model *m = L->m;
    if (L->failed)
        return -1;
    if (c->meta) {
        const struct rsf_meta *me = c->meta;
        m->rank = me->rank;
        m->local_rank = me->local_rank;
        m->world_size = me->world_size;
        m->pid = me->pid;
        m->role = me->role <= RSR_ROLE_OTHER ? me->role : RSR_ROLE_OTHER;
        m->parent_rank = me->parent_rank;
        m->compile_kind = (uint8_t)rsr_compile_kind_of((char *const *)me->argv, (int)me->argc);
        if (me->host)
            m->host = intern(m, me->host);
        if (me->job)
            m->job = intern(m, me->job);
        if (me->start.mono_ns) {
            struct rsr_clock *k = rsr_model_add_clock(m);
            if (!k)
                goto oom;
            *k = (struct rsr_clock){ (int64_t)me->start.mono_ns, (int64_t)me->start.real_ns };
            see_time(m, k->mono_ns, k->mono_ns);
        }
    }
    for (uint32_t i = 0; i < c->nclocks; i++) {
        struct rsr_clock *k = rsr_model_add_clock(m);
        if (!k)
            goto oom;
        *k = (struct rsr_clock){ (int64_t)c->clocks[i].mono_ns, (int64_t)c->clocks[i].real_ns };
        see_time(m, k->mono_ns, k->mono_ns);   /* the writer was still there */
    }
    for (uint32_t i = 0; i < c->nfiles; i++) {
        uint32_t id = c->files[i].id;
        if (rsr_grow_zeroed(&L->fmap, &L->nfmap, (size_t)id + 1, sizeof *L->fmap, 256) != 0)
            goto oom;
        L->fmap[id] = c->files[i].path;
    }
    for (uint32_t i = 0; i < c->nio; i++) {
        const struct rsf_io_event *e = &c->io[i];
        if (outside(L, (int64_t)e->start_ns, (int64_t)(e->start_ns + e->dur_ns)))
            continue;
        struct rsr_io *io = rsr_model_add_io(m);
        if (!io)
            goto oom;
        io->start_ns = (int64_t)e->start_ns;
        io->end_ns = (int64_t)(e->start_ns + e->dur_ns);
        io->op = e->op;
        io->dir = (uint8_t)rsf_io_op_dir(e->op);
        io->bytes = io->dir != RSF_DIR_NONE && e->result > 0 ? (uint64_t)e->result : 0;
        io->tid = e->tid;
        io->path = e->file < L->nfmap ? str_id(L, L->fmap[e->file], strings, nstrings) : 0;
        see_time(m, io->start_ns, io->end_ns);
        see_start(L, io->start_ns);
    }
    rsr_gpum_take(&L->gpum, c);
    for (uint32_t i = 0; i < c->ndevices; i++)
        if (c->devices[i].ordinal >= 0 && c->devices[i].ordinal < 64)
            L->devices[c->devices[i].ordinal] = c->devices[i];
    for (uint32_t i = 0; i < c->nfunctions; i++) {
        uint32_t id = c->functions[i].id;
        if (!id || id > (1u << 24))
            continue;
        if (id >= L->nfuncs) {
            uint32_t n = L->nfuncs ? L->nfuncs : 64;
            while (n <= id)
                n *= 2;
            struct rsf_function *p = realloc(L->funcs, n * sizeof *p);
            if (!p)
                goto oom;
            memset(p + L->nfuncs, 0, (n - L->nfuncs) * sizeof *p);
            L->funcs = p;
            L->nfuncs = n;
        }
        L->funcs[id] = c->functions[i];
    }
    for (uint32_t i = 0; i < c->nmarks; i++) {
        const struct rsf_mark *k = &c->marks[i];
        if (k->kind == RSF_MARK_FATAL) {
            m->fatal_sig = k->sig;
            m->fatal_ns = (int64_t)k->ts_ns;
        } else if (k->kind == RSF_MARK_KILLED) {
            m->killed_sig = k->sig;
            m->killed_waiting = k->since_ns != 0;
        }
    }
    if (c->ngraph_nodes || c->ngraph_edges) {
        struct graph_names gn = { L, strings, nstrings };
        if ((!L->graphs && !(L->graphs = rsr_graphs_new())) || rsr_graphs_take(L->graphs, c, graph_name, &gn) != 0)
            goto oom;
    }
    for (uint32_t i = 0; i < c->ngpu; i++)
        if (take_gpu(L, &c->gpu[i], c->nlaunches ? &c->launches[i] : NULL, strings, nstrings) != 0)
            goto oom;
    for (uint32_t i = 0; i < c->nsyncs; i++) {
        const struct rsf_sync_event *e = &c->syncs[i];
        if (outside(L, (int64_t)e->start_ns, (int64_t)(e->start_ns + e->dur_ns)))
            continue;
        struct rsr_sync *s = rsr_model_add_sync(m);
        if (!s)
            goto oom;
        s->start_ns = (int64_t)e->start_ns;
        s->end_ns = (int64_t)(e->start_ns + e->dur_ns);
        s->target = e->target;
        s->tid = e->tid;
        s->kind = e->kind;
        see_time(m, s->start_ns, s->end_ns);
        see_start(L, s->start_ns);
    }
    /* the main thread's waits (critpath.h): what the host did while its
     * GPU idled */
    for (uint32_t i = 0; i < c->nsamples; i++) {
        const struct rsf_sample *e = &c->samples[i];
        if (e->kind != RSF_SAMPLE_WAIT || !m->pid || e->tid != (uint32_t)m->pid ||
            outside(L, (int64_t)e->ts_ns, (int64_t)(e->ts_ns + e->weight_ns)))
            continue;
        struct rsr_hwait *w = rsr_model_add_hwait(m);
        if (!w)
            goto oom;
        w->start_ns = (int64_t)e->ts_ns;
        w->end_ns = (int64_t)(e->ts_ns + e->weight_ns);
        w->reason = e->reason;
        w->stack = e->stack;
        see_start(L, w->start_ns);
    }
    /* the main thread's run delay, read at the ends of its waits */
    for (uint32_t i = 0; i < c->nseries; i++)
        if (c->series[i].kind == RSF_SERIES_RUN_DELAY)
            L->run_delay_series = c->series[i].id;
    for (uint32_t i = 0; L->run_delay_series && i < c->npoints; i++) {
        const struct rsf_point *e = &c->points[i];
        if (e->series != L->run_delay_series || beyond(L, (int64_t)e->ts_ns))
            continue;
        if (!L->have_run_delay)
            L->run_delay_first = e->value, L->have_run_delay = 1;
        if (e->value > L->run_delay_first)
            m->run_delay_ns = (int64_t)(e->value - L->run_delay_first);
    }
    /* NVTX ranges: every one in full and windowed models (the lanes draw
     * them); in a streamed one only those that mark steps, which pass
     * through the window to the summary (its counters at their ends). */
    for (uint32_t i = 0; i < c->nranges; i++) {
        const struct rsf_range *e = &c->ranges[i];
        if (L->windowed && ((int64_t)e->end_ns < L->win_from || (int64_t)e->start_ns > L->win_to))
            continue;
        if (L->stream && !(e->name < nstrings && rsr_step_range_name(strings[e->name])))
            continue;
        struct rsr_range *r = rsr_model_add_range(m);
        if (!r)
            goto oom;
        r->start_ns = (int64_t)e->start_ns;
        r->end_ns = (int64_t)(e->end_ns > e->start_ns ? e->end_ns : e->start_ns);
        see_start(L, r->start_ns);
        r->name = str_id(L, e->name, strings, nstrings);
        r->domain = str_id(L, e->domain, strings, nstrings);
        r->tid = e->tid;
        r->depth = e->depth;
        r->kind = e->kind;
        r->open_at_exit = (e->flags & RSF_RANGEF_OPEN_AT_EXIT) != 0;
    }
    for (uint32_t i = 0; i < c->ncomms; i++) {
        const struct rsf_comm_event *e = &c->comms[i];
        if (take_comm(L, e) != 0)
            goto oom;
        /* the end of a communicator's making: the host's set-up, before
         * which its first step does not begin (summary.h's lead_ns) */
        int64_t end = (int64_t)(e->start_ns + e->dur_ns);
        if ((e->kind == RSF_COMM_INIT || e->kind == RSF_COMM_INIT_ALL || e->kind == RSF_COMM_SPLIT) &&
            !beyond(L, end)) {
            struct rsr_hwait *w = rsr_model_add_hwait(m);
            if (!w)
                goto oom;
            *w = (struct rsr_hwait){ .start_ns = end, .end_ns = end, .reason = RSR_HWAIT_SETUP };
        }
    }
    for (uint32_t i = 0; i < c->ncolls; i++)
        if (take_coll(L, &c->colls[i], c->ncoll_groups ? c->coll_groups[i].group : 0) != 0)
            goto oom;
    for (uint32_t i = 0; i < c->nmems; i++) {
        const struct rsf_mem_event *e = &c->mems[i];
        switch (e->kind) {
        case RSF_MEM_ALLOC: case RSF_MEM_ALLOC_HOST: case RSF_MEM_ALLOC_MANAGED: case RSF_MEM_ALLOC_ASYNC:
        case RSF_MEM_VMM_CREATE:
            m->mem_allocs++;
            m->mem_alloc_bytes += e->bytes;
            break;
        case RSF_MEM_VMM_MAP: case RSF_MEM_VMM_UNMAP: case RSF_MEM_ALLOC_FAILED:
            break;
        default:
            m->mem_frees++;
            break;
        }
    }
    if (c->counters)
        m->dropped = c->counters->dropped;
    if (c->meta)
        rsr_memlive_meta(&L->mem_sampling, c);
    if (rsr_nodes_chunk(m, c, strings, nstrings) != 0 ||
        rsr_memory_chunk(&m->mem, &L->mem_sampling, c) != 0)
        goto oom;
    if (L->stream && m->n_ops + m->n_io + m->n_syncs + m->n_hwaits + m->n_colls + m->n_ranges >= RSR_STREAM_WINDOW)
        drain(L, 0);
    return L->failed ? -1 : 0;
oom:
    L->failed = 1;
    return -1;
}

/* Comm-class ops by GPU start, for matching collectives to them. */
static int cmp_i64p(const void *a, const void *b, void *arg)
{
    const struct rsr_gpu_op *ops = arg;
    int64_t x = ops[*(const size_t *)a].start_ns, y = ops[*(const size_t *)b].start_ns;
    return (x > y) - (x < y);
}

/* Links each timed collective to the unlinked communication op on its
 * stream whose start is nearest to its own, from 2 us before it to its end:
 * the kernel is launched inside the NCCL call, so its event pair lies in
 * the collective's, later by the host's time in between (NCCL's set-up on
 * a first call, a thread that loses the CPU: often more than 2 us). A
 * collective with none gets an op of its own, so its GPU time is counted
 * once either way. */
static void link_colls(struct rsr_model_loader *L, int64_t cut)
{
    struct rsr_model *m = L->m;
    size_t nidx = 0;
    size_t *idx = malloc((m->n_ops ? m->n_ops : 1) * sizeof *idx);
    if (!idx) {
        L->failed = 1;
        for (size_t k = 0; k < m->n_colls; k++)
            if (m->colls[k].start_ns < cut)
                m->colls[k].members = 0;
        return;
    }
    for (size_t i = 0; i < m->n_ops; i++)
        if (m->ops[i].cls == RSR_GPU_COMM)
            idx[nidx++] = i;
    qsort_r(idx, nidx, sizeof *idx, cmp_i64p, m->ops);
    const int64_t tol = RSR_LINK_TOL_NS;
    size_t n_colls = m->n_colls;
    for (size_t k = 0; k < n_colls; k++) {
        struct rsr_coll *c = &m->colls[k];
        if (c->start_ns >= cut)
            continue; /* streaming: its kernel may not be in yet */
        int32_t stream = (int32_t)c->members;
        c->members = 0;
        if (!c->start_ns)
            continue;
        size_t lo = 0, hi = nidx;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m->ops[idx[mid]].start_ns < c->start_ns - tol)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t best = SIZE_MAX;
        int64_t best_d = 0;
        int64_t upto = (c->end_ns > c->start_ns ? c->end_ns : c->start_ns) + tol;
        for (size_t j = lo; j < nidx && m->ops[idx[j]].start_ns <= upto; j++) {
            struct rsr_gpu_op *op = &m->ops[idx[j]];
            if (op->coll >= 0 || op->stream != stream)
                continue;
            int64_t d = op->start_ns - c->start_ns;
            if (d < 0)
                d = -d;
            if (best == SIZE_MAX || d < best_d)
                best = idx[j], best_d = d;
        }
        if (best != SIZE_MAX) {
            m->ops[best].coll = (int32_t)k;
            if (c->late) {
                /* the program's poll put its end event on the stream, late
                 * by up to a polling interval: the kernel's own are exact */
                c->start_ns = m->ops[best].start_ns;
                c->end_ns = m->ops[best].end_ns;
            }
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "nccl%s", rsr_coll_op_name(c->op));
        uint64_t corr = 0;
        if (!L->stream) {
            corr = ++L->next_corr;
            struct rsr_launch *l = rsr_model_add_launch(m);
            if (!l)
                break;
            l->start_ns = c->launch_ns;
            l->end_ns = c->call_end_ns;
            l->correlation = corr;
            l->name = intern(m, name);
        }
        struct rsr_gpu_op *op = rsr_model_add_op(m);
        if (!op)
            break;
        op->launch_ns = L->stream ? c->launch_ns : 0;
        op->start_ns = c->start_ns;
        op->end_ns = c->end_ns;
        op->correlation = corr;
        op->name = intern(m, name);
        op->stream = stream;
        op->cls = RSR_GPU_COMM;
        op->coll = (int32_t)k;
    }
    free(idx);
}


/* Gives collectives their communicator's size and this rank in it. */
static void comm_sizes(struct rsr_model_loader *L, struct rsr_coll *c)
{
    for (uint32_t i = 0; i < L->ncomms; i++)
        if (L->comms[i].comm == c->comm_id) {
            c->group_size = L->comms[i].nranks;
            c->rank_in_group = L->comms[i].rank;
            return;
        }
}

/* Streaming: settles into the summary builder the collectives that start
 * before the cut and the other records that start before the cut less the
 * link tolerance (so that a collective still in the window finds its
 * kernel), in start order, and keeps the rest. final: all of them. */
static void drain(struct rsr_model_loader *L, int final)
{
    struct rsr_model *m = L->m;
    size_t n = m->n_ops + m->n_io + m->n_syncs + m->n_hwaits + m->n_colls + m->n_ranges;
    int64_t cut = final ? INT64_MAX : L->max_start - L->lateness_ns;
    if (!final && n >= 4 * RSR_STREAM_WINDOW)
        cut = L->max_start; /* a window this full: settle it, whatever comes late */
    if (!final && L->settled && cut <= L->cut)
        return;
    int64_t ops_cut = final ? INT64_MAX : cut - RSR_LINK_TOL_NS;
    if (!L->acc) {
        /* the first records, not the clock pairs: an imported file's
         * pair can lie far from its records, and the fine bins would
         * widen to span the gap */
        int64_t origin = INT64_MAX;
        for (size_t i = 0; i < m->n_syncs; i++)
            if (m->syncs[i].start_ns < origin)
                origin = m->syncs[i].start_ns;
        for (size_t i = 0; i < m->n_hwaits; i++)
            if (m->hwaits[i].start_ns < origin)
                origin = m->hwaits[i].start_ns;
        for (size_t i = 0; i < m->n_colls; i++)
            if (m->colls[i].start_ns && m->colls[i].start_ns < origin)
                origin = m->colls[i].start_ns;
        for (size_t i = 0; i < m->n_ops; i++)
            if (m->ops[i].start_ns < origin)
                origin = m->ops[i].start_ns;
        for (size_t i = 0; i < m->n_io; i++)
            if (m->io[i].start_ns < origin)
                origin = m->io[i].start_ns;
        L->acc = rsr_acc_new(origin == INT64_MAX ? 0 : origin);
        if (!L->acc) {
            L->failed = 1;
            return;
        }
        rsr_acc_set_rank(L->acc, m->rank >= 0);
    }
    for (size_t k = 0; k < m->n_colls; k++)
        if (m->colls[k].start_ns < cut)
            comm_sizes(L, &m->colls[k]);
    link_colls(L, cut);
    rsr_group_close(&L->groups);    /* the colls move */
    size_t w = 0;
    for (size_t k = 0; k < m->n_colls; k++) {
        struct rsr_coll *c = &m->colls[k];
        if (c->start_ns >= cut && c->start_ns) {
            m->colls[w++] = *c;
            continue;
        }
        rsr_acc_coll(L->acc, c, c->group_size);
    }
    m->n_colls = w;
    /* step ranges, like collectives, ask for counters the stream has yet
     * to pass */
    w = 0;
    for (size_t k = 0; k < m->n_ranges; k++) {
        if (m->ranges[k].start_ns >= cut) {
            m->ranges[w++] = m->ranges[k];
            continue;
        }
        rsr_acc_range(L->acc, &m->ranges[k]);
    }
    m->n_ranges = w;
    rsr_model_sort(m);
    size_t i = 0, j = 0, k = 0, h = 0;
    for (;;) {
        int64_t t_op = i < m->n_ops && m->ops[i].start_ns < ops_cut ? m->ops[i].start_ns : INT64_MAX;
        int64_t t_io = j < m->n_io && m->io[j].start_ns < ops_cut ? m->io[j].start_ns : INT64_MAX;
        int64_t t_sy = k < m->n_syncs && m->syncs[k].start_ns < ops_cut ? m->syncs[k].start_ns : INT64_MAX;
        int64_t t_hw = h < m->n_hwaits && m->hwaits[h].start_ns < ops_cut ? m->hwaits[h].start_ns : INT64_MAX;
        if (t_op == INT64_MAX && t_io == INT64_MAX && t_sy == INT64_MAX && t_hw == INT64_MAX)
            break;
        if (t_op <= t_io && t_op <= t_sy && t_op <= t_hw) {
            const struct rsr_gpu_op *op = &m->ops[i++];
            struct rsr_acc_op x = rsr_acc_op_of(op, op->launch_ns);
            rsr_acc_op(L->acc, &x);
        } else if (t_io <= t_sy && t_io <= t_hw) {
            rsr_acc_io(L->acc, &m->io[j++]);
        } else if (t_sy <= t_hw) {
            rsr_acc_sync(L->acc, &m->syncs[k]);
            k++;
        } else {
            rsr_acc_hwait(L->acc, &m->hwaits[h++]);
        }
    }
    /* keep what is past the cut (arrays may be NULL when empty) */
    if (i && m->n_ops > i)
        memmove(m->ops, m->ops + i, (m->n_ops - i) * sizeof *m->ops);
    m->n_ops -= i;
    if (j && m->n_io > j)
        memmove(m->io, m->io + j, (m->n_io - j) * sizeof *m->io);
    m->n_io -= j;
    if (k && m->n_syncs > k)
        memmove(m->syncs, m->syncs + k, (m->n_syncs - k) * sizeof *m->syncs);
    m->n_syncs -= k;
    if (h && m->n_hwaits > h)
        memmove(m->hwaits, m->hwaits + h, (m->n_hwaits - h) * sizeof *m->hwaits);
    m->n_hwaits -= h;
    L->cut = cut;
    L->settled = 1;
}

/* Streaming: the last records settled, the summary made. */
static void finish_stream(struct rsr_model_loader *L)
{
    struct rsr_model *m = L->m;
    if (!L->failed)
        drain(L, 1);
    struct rsr_summary *sum = calloc(1, sizeof *sum);
    if (!sum || !L->acc) {
        L->failed = 1;
        free(sum);
        sum = NULL;
    }
    if (L->acc && rsr_acc_finish(L->acc, sum ? sum : &(struct rsr_summary){ 0 }) != 0)
        L->failed = 1;
    L->acc = NULL;
    if (sum)
        rsr_gpum_finish(&L->gpum, &sum->gpu);
    m->sum = sum;
    if (sum)
        m->late = sum->late;
    free(m->ops), free(m->io), free(m->syncs), free(m->hwaits), free(m->colls), free(m->launches);
    free(m->ranges);
    m->ops = NULL, m->io = NULL, m->syncs = NULL, m->hwaits = NULL, m->colls = NULL, m->launches = NULL;
    m->ranges = NULL;
    m->n_ops = m->n_io = m->n_syncs = m->n_hwaits = m->n_colls = m->n_launches = m->n_ranges = 0;
    m->cap_ops = m->cap_io = m->cap_syncs = m->cap_hwaits = m->cap_colls = m->cap_launches = 0;
}

void rsr_model_loader_finish(struct rsr_model_loader *L)
{
    struct rsr_model *m = L->m;
    if (L->stream) {
        finish_stream(L);
        goto done;
    }
    for (size_t k = 0; k < m->n_colls; k++)
        comm_sizes(L, &m->colls[k]);
    rsr_model_finish(m);
    size_t before = m->n_ops;
    link_colls(L, INT64_MAX);
    if (m->n_ops != before)
        rsr_model_finish(m);
    /* give back what the arrays' doubling left unused */
#define RSR_SHRINK(arr, n, cap) \
    if ((n) && (n) < (cap)) { \
        void *p_ = realloc((arr), (n) * sizeof *(arr)); \
        if (p_) { \
            (arr) = p_; \
            (cap) = (n); \
        } \
    }
    RSR_SHRINK(m->ops, m->n_ops, m->cap_ops);
    RSR_SHRINK(m->launches, m->n_launches, m->cap_launches);
    RSR_SHRINK(m->colls, m->n_colls, m->cap_colls);
    RSR_SHRINK(m->io, m->n_io, m->cap_io);
    RSR_SHRINK(m->syncs, m->n_syncs, m->cap_syncs);
    RSR_SHRINK(m->hwaits, m->n_hwaits, m->cap_hwaits);
    RSR_SHRINK(m->ranges, m->n_ranges, m->cap_ranges);
#undef RSR_SHRINK
done:
    rsr_memory_end(m->mem);
    free(L->smap);
    free(L->fmap);
    free(L->clsmap);
    free(L->comms);
    free(L->funcs);
    L->funcs = NULL;
    L->nfuncs = 0;
    rsr_graphs_free(L->graphs);
    L->graphs = NULL;
    rsr_group_free(&L->groups);
    rsr_gpum_free(&L->gpum);
    L->smap = L->fmap = NULL;
    L->comms = NULL;
    L->nsmap = L->nfmap = L->ncomms = L->capcomms = 0;
}
