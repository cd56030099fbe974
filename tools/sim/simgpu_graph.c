/* The simulated driver's CUDA graphs: stream capture as the driver does it
 * (capture modes and the calls each forbids, streams joined through events,
 * invalidation), graphs of captured nodes, executable graphs (instantiate,
 * update, clone, destroy) and their launch, which puts each node on the time
 * model (simgpu_model.c) once the nodes it depends on are done.
 *
 * What the driver documents and this file follows (cuda.h, CUDA 13.0):
 *   - a thread's interaction mode (cuThreadExchangeStreamCaptureMode, default
 *     global) and a capture's mode (cuStreamBeginCapture_v2) decide whether a
 *     potentially unsafe call (a synchronisation, a query, cuMemAlloc) is
 *     forbidden: global, when the thread has a capture not begun relaxed or any
 *     other thread has a global one; thread-local, only the thread's own;
 *     relaxed, never. A forbidden call fails with
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates those captures; a
 *     sync or query of a capturing stream always does;
 *   - an invalidated capture stays active: its streams' later work fails with
 *     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and cuStreamEndCapture says so with
 *     a NULL graph;
 *   - cuEventRecord in a capture makes the event stand for the stream's current
 *     nodes; a stream that waits on it joins the capture (fork), and the origin
 *     stream must wait on the others' work before the end (join), else
 *     CUDA_ERROR_STREAM_CAPTURE_UNJOINED; a capturing stream that waits on an
 *     event recorded outside gets CUDA_ERROR_STREAM_CAPTURE_ISOLATION (unless
 *     CU_EVENT_WAIT_EXTERNAL), one of another capture _MERGE; querying or
 *     synchronising an event recorded in a capture CUDA_ERROR_CAPTURED_EVENT;
 *   - only the origin stream ends a capture (_UNMATCHED), on the thread that
 *     began it unless it was begun relaxed (_WRONG_THREAD).
 * Not modelled: the legacy stream's implicit synchronisation with captures
 * (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), graphs launched inside a capture,
 * nodes added by hand (cuGraphAdd*Node). */
#include <stdlib.h>
#include <string.h>
#include "tools/sim/simgpu_internal.h"

/* A capture sequence: the graph it builds and the streams taking part. */
struct sim_capture {
    uint64_t id;
    CUstreamCaptureMode mode;
    pthread_t thread;             /* the thread that began it */
    struct CUstream_st *origin;
    struct CUgraph_st *graph;
    int invalid;
    struct CUstream_st **streams;
    size_t nstreams, cap;
    CUgraphNode *deps_out;        /* cuStreamGetCaptureInfo's answer, until the next one */
    size_t deps_out_cap;
    struct sim_capture *next;
};

/* Under sim_lock. */
static struct sim_capture *sim_captures;
static uint64_t sim_next_capture_id = 1, sim_next_graph_id = 1;
/* The calling thread's interaction mode; 0 is CU_STREAM_CAPTURE_MODE_GLOBAL. */
static __thread CUstreamCaptureMode sim_thread_mode;

/* ---- sets of nodes ---- */

static int sim_deps_has(const struct sim_deps *d, size_t i)
{
    for (size_t k = 0; k < d->n; k++)
        if (d->idx[k] == i)
            return 1;
    return 0;
}

static CUresult sim_deps_add(struct sim_deps *d, size_t i)
{
    if (sim_deps_has(d, i))
        return CUDA_SUCCESS;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 4;
        size_t *idx = realloc(d->idx, cap * sizeof(*idx));
        if (!idx)
            return CUDA_ERROR_OUT_OF_MEMORY;
        d->idx = idx;
        d->cap = cap;
    }
    d->idx[d->n++] = i;
    return CUDA_SUCCESS;
}

static CUresult sim_deps_union(struct sim_deps *to, const struct sim_deps *from)
{
    for (size_t k = 0; k < from->n; k++)
        if (sim_deps_add(to, from->idx[k]) != CUDA_SUCCESS)
            return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static void sim_deps_free(struct sim_deps *d)
{
    free(d->idx);
    *d = (struct sim_deps){ 0 };
}

/* ---- graphs ---- */

static struct CUgraph_st *sim_graph_new(uint64_t id)
{
    struct CUgraph_st *g = calloc(1, sizeof(*g));
    if (g) {
        g->magic = SIM_MAGIC_GRAPH;
        g->id = id ? id : __atomic_fetch_add(&sim_next_graph_id, 1, __ATOMIC_RELAXED);
    }
    return g;
}

static void sim_graph_free(struct CUgraph_st *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++) {
        struct CUgraphNode_st *n = g->nodes[i];
        if (n->p.kind == SIM_EXT && n->p.ext_arg)
            n->p.ext->release(n->p.ext_arg);
        sim_deps_free(&n->deps);
        n->magic = SIM_MAGIC_DEAD;
        free(n);
    }
    free(g->nodes);
    g->magic = SIM_MAGIC_DEAD;
    free(g);
}

/* Appends a node made of p that depends on deps; it takes p's ext_arg when it
 * succeeds. NULL when out of memory. */
static struct CUgraphNode_st *sim_graph_add(struct CUgraph_st *g, const struct sim_node *p,
                                           const struct sim_deps *deps)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct CUgraphNode_st **nodes = realloc(g->nodes, cap * sizeof(*nodes));
        if (!nodes)
            return NULL;
        g->nodes = nodes;
        g->cap = cap;
    }
    struct CUgraphNode_st *n = calloc(1, sizeof(*n));
    if (!n || sim_deps_union(&n->deps, deps) != CUDA_SUCCESS) {
        if (n)
            sim_deps_free(&n->deps);
        free(n);
        return NULL;
    }
    n->magic = SIM_MAGIC_NODE;
    n->graph = g;
    n->index = g->n;
    n->p = *p;
    for (size_t k = 0; k < deps->n; k++)
        g->nodes[deps->idx[k]]->has_succ = 1;
    g->nodes[g->n++] = n;
    return n;
}

/* A copy of g (its external operations' templates copied too), with the id
 * given (0: a new one). NULL when out of memory. */
static struct CUgraph_st *sim_graph_copy(const struct CUgraph_st *g, uint64_t id)
{
    struct CUgraph_st *c = sim_graph_new(id);
    for (size_t i = 0; c && i < g->n; i++) {
        struct sim_node p = g->nodes[i]->p;
        if (p.kind == SIM_EXT && !(p.ext_arg = p.ext->copy(p.ext_arg, 0))) {
            sim_graph_free(c);
            return NULL;
        }
        if (!sim_graph_add(c, &p, &g->nodes[i]->deps)) {
            if (p.kind == SIM_EXT)
                p.ext->release(p.ext_arg);
            sim_graph_free(c);
            return NULL;
        }
    }
    return c;
}

/* ---- capture ---- */

static CUresult sim_capture_join(struct sim_capture *c, struct CUstream_st *s)
{
    if (c->nstreams == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        struct CUstream_st **a = realloc(c->streams, cap * sizeof(*a));
        if (!a)
            return CUDA_ERROR_OUT_OF_MEMORY;
        c->streams = a;
        c->cap = cap;
    }
    c->streams[c->nstreams++] = s;
    s->capture = c;
    s->capture_deps.n = 0;
    return CUDA_SUCCESS;
}

/* The capture is over: its streams leave it; the graph is the caller's. */
static void sim_capture_free(struct sim_capture *c)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        c->streams[i]->capture = NULL;
        sim_deps_free(&c->streams[i]->capture_deps);
    }
    for (struct sim_capture **p = &sim_captures; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    free(c->streams);
    free(c->deps_out);
    free(c);
}

static struct sim_capture *sim_capture_find(uint64_t id)
{
    struct sim_capture *c = sim_captures;
    while (c && c->id != id)
        c = c->next;
    return c;
}

CUresult sim_capture_add(struct CUstream_st *s, const struct sim_node *n)
{
    struct sim_capture *c = s->capture;
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (n->kind == SIM_EXT && !n->ext->copy) {
        c->invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct CUgraphNode_st *node = sim_graph_add(c->graph, n, &s->capture_deps);
    if (!node)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->capture_deps.n = 0;
    return sim_deps_add(&s->capture_deps, node->index);
}

CUresult sim_capture_forbid(struct CUstream_st *s)
{
    if (s && s->capture) {
        s->capture->invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (sim_thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    pthread_t self = pthread_self();
    int forbidden = 0;
    for (struct sim_capture *c = sim_captures; c; c = c->next) {
        int mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && sim_thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            c->invalid = 1;
            forbidden = 1;
        }
    }
    return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult sim_capture_event_record(struct CUevent_st *e, struct CUstream_st *s)
{
    struct sim_capture *c = s->capture;
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    e->capture_id = c->id;
    e->capture_deps.n = 0;
    return sim_deps_union(&e->capture_deps, &s->capture_deps);
}

CUresult sim_capture_event_wait(struct CUstream_st *s, struct CUevent_st *e, unsigned flags)
{
    if (!e->capture_id) {
        /* s is capturing; the event's work is outside the capture */
        if (!e->op || (flags & CU_EVENT_WAIT_EXTERNAL))
            return CUDA_SUCCESS;
        s->capture->invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    struct sim_capture *c = sim_capture_find(e->capture_id);
    if (!c)
        return CUDA_ERROR_CAPTURED_EVENT;   /* its capture is over */
    if (s->capture && s->capture != c) {
        s->capture->invalid = c->invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (!s->capture && sim_capture_join(c, s) != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return sim_deps_union(&s->capture_deps, &e->capture_deps);
}

void sim_capture_stream_gone(struct CUstream_st *s)
{
    struct sim_capture *c = s->capture;
    if (!c)
        return;
    c->invalid = 1;
    for (size_t i = 0; i < c->nstreams; i++) {
        if (c->streams[i] == s) {
            c->streams[i] = c->streams[--c->nstreams];
            break;
        }
    }
    if (c->origin == s)
        c->origin = NULL;
    s->capture = NULL;
    sim_deps_free(&s->capture_deps);
}

static CUresult sim_begin_capture(CUstream h, int ptds, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    if (r == CUDA_SUCCESS && (!h || h == CU_STREAM_LEGACY))
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r == CUDA_SUCCESS && s->capture)
        r = CUDA_ERROR_ILLEGAL_STATE;
    struct sim_capture *c = NULL;
    if (r == CUDA_SUCCESS && (!(c = calloc(1, sizeof(*c))) || !(c->graph = sim_graph_new(0)) ||
                              sim_capture_join(c, s) != CUDA_SUCCESS)) {
        if (c) {
            sim_graph_free(c->graph);
            free(c->streams);
            free(c);
        }
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        c->id = sim_next_capture_id++;
        c->mode = mode;
        c->thread = pthread_self();
        c->origin = s;
        c->next = sim_captures;
        sim_captures = c;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamBeginCapture(CUstream h)
{
    return sim_begin_capture(h, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h)
{
    return sim_begin_capture(h, 1, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode)
{
    return sim_begin_capture(h, 0, mode);
}

SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode)
{
    return sim_begin_capture(h, 1, mode);
}

/* Whether a stream's current nodes are all joined back: each has a successor
 * or is among the origin's current nodes. */
static int sim_capture_joined(const struct sim_capture *c)
{
    for (size_t i = 0; i < c->nstreams; i++) {
        const struct CUstream_st *t = c->streams[i];
        if (t == c->origin)
            continue;
        for (size_t k = 0; k < t->capture_deps.n; k++) {
            size_t n = t->capture_deps.idx[k];
            if (!c->graph->nodes[n]->has_succ && !(c->origin && sim_deps_has(&c->origin->capture_deps, n)))
                return 0;
        }
    }
    return 1;
}

static CUresult sim_end_capture(CUstream h, int ptds, CUgraph *graph)
{
    struct CUstream_st *s;
    if (!graph)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    struct sim_capture *c = r == CUDA_SUCCESS ? s->capture : NULL;
    if (r == CUDA_SUCCESS && !c)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (r == CUDA_SUCCESS && c->origin != s)
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    else if (r == CUDA_SUCCESS && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
             !pthread_equal(c->thread, pthread_self()))
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (r == CUDA_SUCCESS) {
        if (c->invalid)
            r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else if (!sim_capture_joined(c))
            r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
        *graph = r == CUDA_SUCCESS ? c->graph : NULL;
        if (r != CUDA_SUCCESS)
            sim_graph_free(c->graph);
        sim_capture_free(c);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *graph)
{
    return sim_end_capture(h, 0, graph);
}

SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *graph)
{
    return sim_end_capture(h, 1, graph);
}

static CUresult sim_capture_info(CUstream h, int ptds, CUstreamCaptureStatus *status, cuuint64_t *id,
                                 CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    struct CUstream_st *s;
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_stream_get(h, ptds, &s);
    struct sim_capture *c = r == CUDA_SUCCESS ? s->capture : NULL;
    if (r == CUDA_SUCCESS) {
        *status = !c ? CU_STREAM_CAPTURE_STATUS_NONE
                     : c->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
        if (id && c)
            *id = c->id;
        if (graph)
            *graph = c ? c->graph : NULL;
        if (deps)
            *deps = NULL;
        if (ndeps)
            *ndeps = 0;
    }
    if (r == CUDA_SUCCESS && c && (deps || ndeps)) {
        size_t n = s->capture_deps.n;
        if (deps && n > c->deps_out_cap) {
            CUgraphNode *a = realloc(c->deps_out, n * sizeof(*a));
            if (!a)
                r = CUDA_ERROR_OUT_OF_MEMORY;
            else
                c->deps_out = a, c->deps_out_cap = n;
        }
        for (size_t k = 0; r == CUDA_SUCCESS && deps && k < n; k++)
            c->deps_out[k] = c->graph->nodes[s->capture_deps.idx[k]];
        if (r == CUDA_SUCCESS && deps)
            *deps = c->deps_out;
        if (r == CUDA_SUCCESS && ndeps)
            *ndeps = n;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *status)
{
    return sim_capture_info(h, 0, status, NULL, NULL, NULL, NULL);
}

SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *status)
{
    return sim_capture_info(h, 1, status, NULL, NULL, NULL, NULL);
}

/* Edges carry no data here (every edge is a full dependency). */
static void sim_no_edge_data(const CUgraphEdgeData **edges)
{
    if (edges)
        *edges = NULL;
}

/* 12.3 and later: exported through simgpu_version.c's resolver. */
CUresult sim_impl_cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
                                              CUgraph *graph, const CUgraphNode **deps,
                                              const CUgraphEdgeData **edges, size_t *ndeps)
{
    sim_no_edge_data(edges);
    return sim_capture_info(h, 0, status, id, graph, deps, ndeps);
}

CUresult sim_impl_cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *status,
                                                   cuuint64_t *id, CUgraph *graph,
                                                   const CUgraphNode **deps,
                                                   const CUgraphEdgeData **edges, size_t *ndeps)
{
    sim_no_edge_data(edges);
    return sim_capture_info(h, 1, status, id, graph, deps, ndeps);
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
                                              CUgraph *graph, const CUgraphNode **deps, size_t *ndeps)
{
    return sim_capture_info(h, 0, status, id, graph, deps, ndeps);
}

SIM_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *status,
                                                   cuuint64_t *id, CUgraph *graph,
                                                   const CUgraphNode **deps, size_t *ndeps)
{
    return sim_capture_info(h, 1, status, id, graph, deps, ndeps);
}

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = sim_thread_mode;
    sim_thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ---- graphs and executable graphs ---- */

SIM_EXPORT CUresult cuGraphCreate(CUgraph *graph, unsigned int flags)
{
    if (!graph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = sim_graph_new(0);
    return *graph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph graph)
{
    if (!graph || graph->magic != SIM_MAGIC_GRAPH)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    sim_graph_free(graph);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphClone(CUgraph *clone, CUgraph graph)
{
    if (!clone)
        return CUDA_ERROR_INVALID_VALUE;
    if (!graph || graph->magic != SIM_MAGIC_GRAPH)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    *clone = sim_graph_copy(graph, 0);
    pthread_mutex_unlock(&sim_lock);
    return *clone ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *n)
{
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    if (!graph || graph->magic != SIM_MAGIC_GRAPH)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    size_t k = 0;
    for (; nodes && k < *n && k < graph->n; k++)
        nodes[k] = graph->nodes[k];
    if (!nodes)
        *n = graph->n;
    else
        *n = k;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

static CUresult sim_graph_instantiate(CUgraphExec *exec, CUgraph graph)
{
    if (!exec)
        return CUDA_ERROR_INVALID_VALUE;
    if (!graph || graph->magic != SIM_MAGIC_GRAPH)
        return CUDA_ERROR_INVALID_HANDLE;
    struct CUgraphExec_st *x = calloc(1, sizeof(*x));
    pthread_mutex_lock(&sim_lock);
    if (x && !(x->graph = sim_graph_copy(graph, graph->id))) {
        free(x);
        x = NULL;
    }
    pthread_mutex_unlock(&sim_lock);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = SIM_MAGIC_EXEC;
    *exec = x;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    (void)flags;
    return sim_graph_instantiate(exec, graph);
}

SIM_EXPORT CUresult cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, CUgraphNode *err_node, char *log,
                                       size_t log_size)
{
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = '\0';
    return sim_graph_instantiate(exec, graph);
}

SIM_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *exec, CUgraph graph, CUgraphNode *err_node,
                                          char *log, size_t log_size)
{
    return cuGraphInstantiate(exec, graph, err_node, log, log_size);
}

static CUresult sim_graph_instantiate_params(CUgraphExec *exec, CUgraph graph,
                                             CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    CUresult r = sim_graph_instantiate(exec, graph);
    if (params)
        params->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

SIM_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    return sim_graph_instantiate_params(exec, graph, params);
}

SIM_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *exec, CUgraph graph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    return sim_graph_instantiate_params(exec, graph, params);
}

/* Whether graph's node i can take the place of the executable's: same kind
 * (and library operation), same dependencies. */
static CUgraphExecUpdateResult sim_update_check(const struct CUgraph_st *x, const struct CUgraph_st *g, size_t i)
{
    const struct CUgraphNode_st *a = x->nodes[i], *b = g->nodes[i];
    if (a->p.kind != b->p.kind || a->p.ext != b->p.ext)
        return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    if (a->deps.n != b->deps.n)
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (size_t k = 0; k < b->deps.n; k++)
        if (!sim_deps_has(&a->deps, b->deps.idx[k]))
            return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

/* The executable takes the graph's parameters (kernel durations, copies...)
 * where the topology is the same; else nothing changes. */
SIM_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info)
{
    if (!exec || exec->magic != SIM_MAGIC_EXEC || !graph || graph->magic != SIM_MAGIC_GRAPH)
        return CUDA_ERROR_INVALID_HANDLE;
    CUgraphExecUpdateResultInfo res = { CU_GRAPH_EXEC_UPDATE_SUCCESS, NULL, NULL };
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    if (graph->n != exec->graph->n)
        res.result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (size_t i = 0; res.result == CU_GRAPH_EXEC_UPDATE_SUCCESS && i < graph->n; i++)
        if ((res.result = sim_update_check(exec->graph, graph, i)) != CU_GRAPH_EXEC_UPDATE_SUCCESS)
            res.errorNode = graph->nodes[i];
    if (res.result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    } else {
        struct CUgraph_st *c = sim_graph_copy(graph, graph->id);
        if (c) {
            sim_graph_free(exec->graph);
            exec->graph = c;
        } else {
            res.result = CU_GRAPH_EXEC_UPDATE_ERROR;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (info)
        *info = res;
    return r;
}

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    if (!exec || exec->magic != SIM_MAGIC_EXEC)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    sim_graph_free(exec->graph);
    pthread_mutex_unlock(&sim_lock);
    exec->magic = SIM_MAGIC_DEAD;
    free(exec);
    return CUDA_SUCCESS;
}

/* ---- launch ---- */

void sim_node_apply(const struct sim_node *n)
{
    if (n->bytes == 0 || (n->kind != SIM_MEMCPY && n->kind != SIM_MEMSET))
        return;
    if (n->kind == SIM_MEMCPY) {
        memmove(n->dst, n->src, (size_t)n->bytes);
    } else if (n->fill_size == 1) {
        memset(n->dst, n->fill, (size_t)n->bytes);
    } else if (n->fill_size == 2) {
        uint16_t v = (uint16_t)n->fill;
        for (uint64_t i = 0; i < n->bytes / 2; i++)
            memcpy((char *)n->dst + 2 * i, &v, 2);
    } else {
        uint32_t v = (uint32_t)n->fill;
        for (uint64_t i = 0; i < n->bytes / 4; i++)
            memcpy((char *)n->dst + 4 * i, &v, 4);
    }
}

/* An operation of a graph launch on s's queue, after a and b (either may be
 * NULL); with one reference for the caller, who submits it. */
static struct sim_op *sim_graph_op(const struct CUstream_st *s, enum sim_kind kind, struct sim_op *a,
                                   struct sim_op *b, uint64_t now)
{
    struct sim_op *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    op->refs = 1;
    op->kind = kind;
    op->launch_ns = now;
    op->stream_id = s->id;
    op->device = s->ctx->device;
    op->deps[0] = a;
    op->deps[1] = b;
    if (a)
        sim_op_ref(a);
    if (b)
        sim_op_ref(b);
    return op;
}

/* One operation that is done when all of ops[0..n) are: a chain of marks when
 * there are more than two; *out gets it with a reference (NULL for none). */
static CUresult sim_graph_join(const struct CUstream_st *s, struct sim_op *const *ops, size_t n, uint64_t now,
                               struct sim_op **out)
{
    struct sim_op *j = n ? ops[0] : NULL;
    if (j)
        sim_op_ref(j);
    for (size_t k = 1; k < n; k++) {
        struct sim_op *m = sim_graph_op(s, SIM_MARK, j, ops[k], now);
        if (j)
            sim_op_unref(j);
        if (!m) {
            *out = NULL;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        sim_op_ref(m);
        sim_model_submit(m);
        j = m;
    }
    *out = j;
    return CUDA_SUCCESS;
}

/* Queues the graph's nodes on s (under sim_lock): each after the nodes it
 * depends on, the first ones after s's previous work; s's next work after
 * every node. */
static CUresult sim_graph_enqueue(struct CUstream_st *s, const struct CUgraph_st *g)
{
    uint64_t now = sim_now_ns();
    struct sim_op **ops = calloc(g->n + 1, sizeof(*ops)), **deps = calloc(g->n + 1, sizeof(*deps));
    CUresult r = ops && deps ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    size_t built = 0;
    for (; r == CUDA_SUCCESS && built < g->n; built++) {
        const struct CUgraphNode_st *n = g->nodes[built];
        size_t nd = 0;
        if (!n->deps.n && s->tail)
            deps[nd++] = s->tail;
        for (size_t k = 0; k < n->deps.n; k++)
            deps[nd++] = ops[n->deps.idx[k]];
        struct sim_op *after = NULL, *op = NULL;
        r = sim_graph_join(s, deps, nd, now, &after);
        if (r == CUDA_SUCCESS && !(op = sim_graph_op(s, n->p.kind, after, NULL, now)))
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (after)
            sim_op_unref(after);
        if (r != CUDA_SUCCESS)
            break;
        op->name = n->p.name;
        op->direction = n->p.direction;
        op->dur_ns = n->p.dur_ns;
        op->bytes = n->p.bytes;
        op->geom = n->p.geom;
        op->graph = g->id;
        if (n->p.kind == SIM_EXT) {
            op->ext = n->p.ext;
            /* a failed copy leaves a mark in its place: the replay's other work still runs */
            if (!(op->ext_arg = n->p.ext->copy(n->p.ext_arg, 1))) {
                op->kind = SIM_MARK;
                r = CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
        sim_op_ref(op);
        ops[built] = op;
        sim_model_submit(op);
    }
    /* s goes on after the nodes nothing depends on (after s's tail for an empty graph) */
    size_t nsinks = 0;
    for (size_t i = 0; deps && i < built; i++)
        if (!g->nodes[i]->has_succ || i + 1 == built)
            deps[nsinks++] = ops[i];
    if (deps && nsinks) {
        struct sim_op *tail = NULL;
        if (sim_graph_join(s, deps, nsinks, now, &tail) == CUDA_SUCCESS && tail) {
            sim_op_unref(s->tail);
            s->tail = tail;
        }
    }
    for (size_t i = 0; ops && i < built; i++)
        sim_op_unref(ops[i]);
    free(ops);
    free(deps);
    return r;
}

/* The stream a graph is launched on (sim_lock held): not one being captured. */
static CUresult sim_graph_stream(CUstream h, int ptds, struct CUstream_st **s)
{
    CUresult r = sim_stream_get(h, ptds, s);
    return r == CUDA_SUCCESS && (*s)->capture ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : r;
}

static CUresult sim_graph_launch(CUgraphExec exec, CUstream h, int ptds)
{
    struct CUstream_st *s;
    if (!exec || exec->magic != SIM_MAGIC_EXEC)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_graph_stream(h, ptds, &s);
    pthread_mutex_unlock(&sim_lock);
    /* the bytes first: the call hands the graph over at its end, as the driver
     * does (the stream is asked again: another thread may have changed it) */
    for (size_t i = 0; r == CUDA_SUCCESS && i < exec->graph->n; i++)
        sim_node_apply(&exec->graph->nodes[i]->p);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&sim_lock);
        r = sim_graph_stream(h, ptds, &s);
        if (r == CUDA_SUCCESS) {
            sim_model_hold(1);
            r = sim_graph_enqueue(s, exec->graph);
            sim_model_hold(0);
        }
        pthread_mutex_unlock(&sim_lock);
    }
    return r;
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream h)
{
    return sim_graph_launch(exec, h, 0);
}

SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream h)
{
    return sim_graph_launch(exec, h, 1);
}

SIM_EXPORT CUresult cuGraphUpload(CUgraphExec exec, CUstream h)
{
    (void)h;
    return exec && exec->magic == SIM_MAGIC_EXEC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec exec, CUstream h)
{
    return cuGraphUpload(exec, h);
}
