/* CUDA graphs in the agent: what a stream capture puts in a graph (each
 * captured kernel, copy, set and NCCL call, with its geometry, the stack of
 * the call and the nodes it depends on: GRAPH_NODE and GRAPH_EDGE records,
 * once per node), and which graph each executable graph runs, followed
 * through instantiate, update, clone and destroy, so that a graph launch's
 * record names the graph whose nodes the reporter expands it into.
 * Graph ids are the agent's (from 1, unique in the process); the driver's
 * node handles are mapped to node indices while their capture lasts.
 * Nothing here is on a hot path but the launch's look-up, which is lock-free;
 * captures and graph management take a mutex. */
#include "preload/gpu.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <stdlib.h>
#include <string.h>

#define CAPTURES 16          /* captures in progress at once */
#define HANDLES 4096u        /* CUgraph and CUgraphExec handles with their graph */
#define HANDLE_PROBES 64u
#define TOMBSTONE ((uintptr_t)1)

/* A capture in progress: the driver's id, the agent's graph id, and the
 * driver's node handles seen so far with the node each stands for. */
struct capture {
    uint64_t id;             /* 0: a free slot */
    uint32_t gid, nodes;
    struct { uintptr_t handle; uint32_t node; } *map;
    uint32_t nmap, cap;
};

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static struct capture captures[CAPTURES];
static _Atomic uint32_t next_gid = 1;
static struct {
    _Atomic uintptr_t key;
    _Atomic uint32_t gid;
} handles[HANDLES];

/* An NCCL call being captured on this thread: the kernel it launches is its node. */
static __thread struct {
    int on, taken;
    uint8_t op;
    uint64_t bytes, comm;
} coll_th RS_TLS;

/* ---- handles -> graph ids ---- */

static uint32_t handle_hash(uintptr_t k)
{
    return (uint32_t)((k >> 4) * 2654435761u);
}

static void handle_set(const void *h, uint32_t gid)
{
    uintptr_t key = (uintptr_t)h;
    if (key <= TOMBSTONE)
        return;
    uint32_t at = handle_hash(key), free_at = UINT32_MAX;
    pthread_mutex_lock(&glock);
    for (uint32_t i = 0; i < HANDLE_PROBES; i++) {
        uint32_t j = (at + i) & (HANDLES - 1);
        uintptr_t k = atomic_load(&handles[j].key);
        if (k == key) {
            free_at = j;
            break;
        }
        if ((k == 0 || k == TOMBSTONE) && free_at == UINT32_MAX)
            free_at = j;
        if (k == 0)
            break;
    }
    if (free_at != UINT32_MAX) {
        atomic_store(&handles[free_at].gid, gid);
        atomic_store(&handles[free_at].key, key);
    }
    pthread_mutex_unlock(&glock);
}

static uint32_t handle_get(const void *h)
{
    uintptr_t key = (uintptr_t)h;
    uint32_t at = handle_hash(key);
    for (uint32_t i = 0; key > TOMBSTONE && i < HANDLE_PROBES; i++) {
        uint32_t j = (at + i) & (HANDLES - 1);
        uintptr_t k = atomic_load_explicit(&handles[j].key, memory_order_acquire);
        if (k == key)
            return atomic_load_explicit(&handles[j].gid, memory_order_relaxed);
        if (k == 0)
            return 0;
    }
    return 0;
}

static void handle_forget(const void *h)
{
    uintptr_t key = (uintptr_t)h;
    uint32_t at = handle_hash(key);
    pthread_mutex_lock(&glock);
    for (uint32_t i = 0; key > TOMBSTONE && i < HANDLE_PROBES; i++) {
        uint32_t j = (at + i) & (HANDLES - 1);
        uintptr_t k = atomic_load(&handles[j].key);
        if (k == key) {
            atomic_store(&handles[j].gid, 0);
            atomic_store(&handles[j].key, TOMBSTONE);
            break;
        }
        if (k == 0)
            break;
    }
    pthread_mutex_unlock(&glock);
}

uint32_t rs_graph_exec_gid(const void *exec)
{
    return handle_get(exec);
}

void rs_graph_made(const void *made, const void *from)
{
    uint32_t gid = handle_get(from);
    if (gid)
        handle_set(made, gid);
}

void rs_graph_gone(const void *h)
{
    handle_forget(h);
}

/* ---- captures ---- */

/* The stream's capture: its id and current dependency handles (n of them, at
 * most max copied). 0 when it is not capturing or the driver cannot say. */
static uint64_t capture_info(CUstream s, int ptsz, const CUgraphNode **deps, size_t *n)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    *deps = NULL;
    *n = 0;
    CUresult r = CUDA_ERROR_NOT_FOUND;
    if (ptsz ? rs_cu.capture_info_v3_ptsz != NULL : rs_cu.capture_info_v3 != NULL)
        r = (ptsz ? rs_cu.capture_info_v3_ptsz : rs_cu.capture_info_v3)(s, &st, &id, NULL, deps, NULL, n);
    else if (ptsz ? rs_cu.capture_info_v2_ptsz != NULL : rs_cu.capture_info_v2 != NULL)
        r = (ptsz ? rs_cu.capture_info_v2_ptsz : rs_cu.capture_info_v2)(s, &st, &id, NULL, deps, n);
    if (r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        *deps = NULL;
        *n = 0;
        return 0;
    }
    return id;
}

/* The slot of capture id (a new one when add); NULL when none. Under glock. */
static struct capture *capture_slot(uint64_t id, int add)
{
    struct capture *free_slot = NULL;
    for (int i = 0; i < CAPTURES; i++) {
        if (captures[i].id == id)
            return &captures[i];
        if (!captures[i].id && !free_slot)
            free_slot = &captures[i];
    }
    if (!add || !free_slot)
        return NULL;
    *free_slot = (struct capture){ .id = id, .gid = atomic_fetch_add(&next_gid, 1) };
    return free_slot;
}

static int capture_node_of(const struct capture *c, uintptr_t h, uint32_t *node)
{
    for (uint32_t i = c->nmap; i-- > 0;) {
        if (c->map[i].handle == h) {
            *node = c->map[i].node;
            return 1;
        }
    }
    return 0;
}

/* Under glock. */
static void capture_map(struct capture *c, uintptr_t h, uint32_t node)
{
    uint32_t known;
    if (capture_node_of(c, h, &known))
        return;
    if (c->nmap == c->cap) {
        uint32_t cap = c->cap ? 2 * c->cap : 64;
        void *m = realloc(c->map, cap * sizeof(*c->map));
        if (!m)
            return;
        c->map = m;
        c->cap = cap;
    }
    c->map[c->nmap].handle = h;
    c->map[c->nmap++].node = node;
}

void rs_graph_before(struct rs_graph_capture *gc, CUstream s, int ptsz)
{
    const CUgraphNode *deps;
    size_t n;
    memset(gc, 0, sizeof(*gc));
    gc->s = s;
    gc->ptsz = ptsz;
    if (!(gc->capture_id = capture_info(s, ptsz, &deps, &n)))
        return;
    pthread_mutex_lock(&glock);
    struct capture *c = capture_slot(gc->capture_id, 1);
    if (c) {
        gc->gid = c->gid;
        for (size_t i = 0; i < n; i++) {
            uint32_t node;
            if (capture_node_of(c, (uintptr_t)deps[i], &node) && gc->ndeps < RS_GRAPH_DEPS)
                gc->deps[gc->ndeps++] = node;
        }
    }
    pthread_mutex_unlock(&glock);
}

/* Maps the stream's dependencies now (the work just captured) to node. */
static void capture_after(const struct rs_graph_capture *gc, uint32_t node)
{
    const CUgraphNode *deps;
    size_t n;
    if (capture_info(gc->s, gc->ptsz, &deps, &n) != gc->capture_id)
        return;
    pthread_mutex_lock(&glock);
    struct capture *c = capture_slot(gc->capture_id, 0);
    for (size_t i = 0; c && i < n; i++)
        capture_map(c, (uintptr_t)deps[i], node);
    pthread_mutex_unlock(&glock);
}

static uint32_t capture_next_node(uint64_t id)
{
    uint32_t node = UINT32_MAX;
    pthread_mutex_lock(&glock);
    struct capture *c = capture_slot(id, 0);
    if (c)
        node = c->nodes++;
    pthread_mutex_unlock(&glock);
    return node;
}

static void node_record(const struct rs_graph_capture *gc, uint32_t node, int kind, const char *name,
                        const struct rsf_launch *geom, uint64_t bytes, int dir, int op, uint64_t comm)
{
    rs_gpu_stack_sample_always(rs_now());
    struct rs_rec_graph_node *r = rs_reserve(sizeof *r, RS_REC_GRAPH_NODE);
    if (r) {
        r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_GRAPH_NODE, (uint8_t)kind, 0 };
        r->name = name;
        r->n = (struct rsf_graph_node){ .bytes = bytes, .comm = comm, .graph = gc->gid, .node = node,
                                        .device = (int16_t)rs_gpu_device, .kind = (uint8_t)kind,
                                        .op = (uint8_t)op, .dir = (uint8_t)dir };
        if (geom) {
            r->n.grid_x = geom->grid_x;
            r->n.grid_y = geom->grid_y;
            r->n.grid_z = geom->grid_z;
            r->n.smem_dyn = geom->smem_dyn;
            r->n.func = geom->func;
            r->n.block_x = geom->block_x;
            r->n.block_y = geom->block_y;
            r->n.block_z = geom->block_z;
        }
        rs_commit(sizeof *r);
    }
    for (uint32_t i = 0; i < gc->ndeps; i++) {
        struct rs_rec_graph_edge *e = rs_reserve(sizeof *e, RS_REC_GRAPH_EDGE);
        if (!e)
            break;
        e->h = (struct rs_rec_hdr){ sizeof *e, RS_REC_GRAPH_EDGE, 0, 0 };
        e->e = (struct rsf_graph_edge){ gc->gid, gc->deps[i], node };
        rs_commit(sizeof *e);
    }
}

void rs_graph_node(const struct rs_graph_capture *gc, int gpu_kind, const char *name,
                   const struct rsf_launch *geom, uint64_t bytes, int dir)
{
    if (!gc->gid)
        return;
    uint32_t node = capture_next_node(gc->capture_id);
    if (node == UINT32_MAX)
        return;
    capture_after(gc, node);
    if (coll_th.on && !coll_th.taken && gpu_kind == RSF_GPU_KERNEL) {
        coll_th.taken = 1;
        node_record(gc, node, RSF_GNODE_COLLECTIVE, name, geom, coll_th.bytes, 0, coll_th.op, coll_th.comm);
        return;
    }
    int kind = gpu_kind == RSF_GPU_MEMCPY ? RSF_GNODE_MEMCPY
               : gpu_kind == RSF_GPU_MEMSET ? RSF_GNODE_MEMSET : RSF_GNODE_KERNEL;
    node_record(gc, node, kind, name, geom, bytes, dir, 0, 0);
}

void rs_graph_coll_begin(struct rs_graph_capture *gc, CUstream s, int op, uint64_t bytes, uint64_t comm)
{
    rs_graph_before(gc, s, 0);
    coll_th.on = gc->gid != 0;
    coll_th.taken = 0;
    coll_th.op = (uint8_t)op;
    coll_th.bytes = bytes;
    coll_th.comm = comm;
}

void rs_graph_coll_end(const struct rs_graph_capture *gc, int ok)
{
    int taken = coll_th.taken;
    coll_th.on = 0;
    if (!gc->gid || !ok)
        return;
    if (taken) {
        /* NCCL may have left the stream on nodes of its own (a join): they stand for it too */
        return;
    }
    uint32_t node = capture_next_node(gc->capture_id);
    if (node == UINT32_MAX)
        return;
    capture_after(gc, node);
    node_record(gc, node, RSF_GNODE_COLLECTIVE, NULL, NULL, coll_th.bytes, 0, coll_th.op, coll_th.comm);
}

uint64_t rs_graph_capture_of(CUstream s, int ptsz)
{
    const CUgraphNode *deps;
    size_t n;
    return capture_info(s, ptsz, &deps, &n);
}

void rs_graph_capture_ended(uint64_t capture_id, const void *graph)
{
    if (!capture_id)
        return;
    pthread_mutex_lock(&glock);
    struct capture *c = capture_slot(capture_id, 0);
    uint32_t gid = c ? c->gid : 0;
    if (c) {
        free(c->map);
        *c = (struct capture){ 0 };
    }
    pthread_mutex_unlock(&glock);
    if (gid && graph)
        handle_set(graph, gid);
}
