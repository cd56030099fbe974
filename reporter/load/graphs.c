/* CUDA graphs in the reporter (see graphs.h): each process's captured graphs
 * and the estimated schedule a graph launch's time is shared by. */
#include "reporter/load/graphs.h"
#include "reporter/base/array.h"
#include "formats/chunk.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NODES (1u << 20)
#define BOUND_NS 20000

struct graph {
    uint32_t gid;
    struct rsr_graph_node *nodes;
    uint8_t *have;                 /* node i was recorded */
    uint32_t n, cap;
    struct rsf_graph_edge *edges;  /* sorted by to before a split when dirty */
    uint32_t nedges, capedges;
    int dirty;
    double last_want, last_x;      /* the last launch's span and its collectives' x */
};

struct rsr_graphs {
    struct graph *g;
    uint32_t n, cap;
    struct rsr_graph_mean {        /* by name: GPU time outside graphs, measured [0] or bounded [1] */
        double sum_ns[2];
        uint32_t count[2];
    } *mean;
    uint32_t nnames;
    double *when, *dur;            /* a split's scratch, by node */
    uint32_t scratch;
};

struct rsr_graphs *rsr_graphs_new(void)
{
    return calloc(1, sizeof(struct rsr_graphs));
}

void rsr_graphs_free(struct rsr_graphs *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n; i++) {
        free(g->g[i].nodes);
        free(g->g[i].have);
        free(g->g[i].edges);
    }
    free(g->g);
    free(g->mean);
    free(g->when);
    free(g->dur);
    free(g);
}

static struct graph *graph_of(struct rsr_graphs *g, uint32_t gid, int add)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (g->g[i].gid == gid)
            return &g->g[i];
    if (!add)
        return NULL;
    size_t cap = g->cap;
    if (rsr_grow(&g->g, &cap, (size_t)g->n + 1, sizeof *g->g, 8) != 0 || cap > UINT32_MAX)
        return NULL;
    g->cap = (uint32_t)cap;
    g->g[g->n] = (struct graph){ .gid = gid };
    return &g->g[g->n++];
}

static int node_room(struct graph *gr, uint32_t i)
{
    if (i < gr->cap)
        return 0;
    /* nodes and have: one length, have's new room zeroed */
    size_t c1 = gr->cap, c2 = gr->cap;
    if (rsr_grow(&gr->nodes, &c1, (size_t)i + 1, sizeof *gr->nodes, 16) != 0 ||
        rsr_grow(&gr->have, &c2, (size_t)i + 1, 1, 16) != 0 || c1 > UINT32_MAX)
        return -1;
    memset(gr->have + gr->cap, 0, c2 - gr->cap);
    gr->cap = (uint32_t)c1;
    return 0;
}

int rsr_graphs_take(struct rsr_graphs *g, const struct rsf_chunk *c,
                    uint32_t (*name_of)(void *arg, uint32_t sid), void *arg)
{
    for (uint32_t i = 0; i < c->ngraph_nodes; i++) {
        const struct rsf_graph_node *e = &c->graph_nodes[i];
        if (!e->graph || e->node >= MAX_NODES || e->kind >= RSF_GNODE_NKINDS)
            continue;
        struct graph *gr = graph_of(g, e->graph, 1);
        if (!gr || node_room(gr, e->node) != 0)
            return -1;
        gr->nodes[e->node] = (struct rsr_graph_node){
            .name = e->name ? name_of(arg, e->name) : 0, .stack = e->stack, .bytes = e->bytes, .comm = e->comm,
            .geom = { .grid_x = e->grid_x, .grid_y = e->grid_y, .grid_z = e->grid_z, .smem_dyn = e->smem_dyn,
                      .func = e->func, .block_x = e->block_x, .block_y = e->block_y, .block_z = e->block_z },
            .kind = e->kind, .op = e->op };
        gr->have[e->node] = 1;
        if (e->node >= gr->n)
            gr->n = e->node + 1;
    }
    for (uint32_t i = 0; i < c->ngraph_edges; i++) {
        const struct rsf_graph_edge *e = &c->graph_edges[i];
        struct graph *gr = graph_of(g, e->graph, 0);
        if (!gr || e->from >= e->to || e->to >= MAX_NODES)
            continue;
        size_t cap = gr->capedges;
        if (rsr_grow(&gr->edges, &cap, (size_t)gr->nedges + 1, sizeof *gr->edges, 16) != 0 || cap > UINT32_MAX)
            return -1;
        gr->capedges = (uint32_t)cap;
        gr->edges[gr->nedges++] = *e;
        gr->dirty = 1;
    }
    return 0;
}

int rsr_graphs_seen(struct rsr_graphs *g, uint32_t name, const struct rsf_gpu_event *e)
{
    int64_t ns = (int64_t)(e->gpu_end_ns - e->gpu_start_ns);
    if (!name || e->gpu_end_ns <= e->gpu_start_ns)
        return 0;
    if (name >= g->nnames) {
        uint32_t n = g->nnames ? g->nnames : 64;
        while (n <= name)
            n *= 2;
        struct rsr_graph_mean *m = realloc(g->mean, n * sizeof *m);
        if (!m)
            return -1;
        memset(m + g->nnames, 0, (n - g->nnames) * sizeof *m);
        g->mean = m;
        g->nnames = n;
    }
    int bounded = e->gpu_end_ns <= e->launch_ns + e->call_ns + BOUND_NS;
    g->mean[name].sum_ns[bounded] += (double)ns;
    g->mean[name].count[bounded]++;
    return 0;
}

/* name's mean time outside graphs, measured (bounded 0) or bounded (1); -1
 * when it has none of that kind. */
static double mean_of(const struct rsr_graphs *g, uint32_t name, int bounded)
{
    if (!name || name >= g->nnames || !g->mean[name].count[bounded])
        return -1;
    return g->mean[name].sum_ns[bounded] / g->mean[name].count[bounded];
}

/* The estimated schedule with collectives lasting x per byte (at least one
 * byte): each node's start in when[], its length in dur[]; returns its span. */
static double schedule(struct rsr_graphs *g, const struct graph *gr, double x)
{
    double span = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < gr->n; i++) {
        if (gr->have[i] && gr->nodes[i].kind == RSF_GNODE_COLLECTIVE)
            g->dur[i] = x * (double)(gr->nodes[i].bytes ? gr->nodes[i].bytes : 1);
        double t = 0;
        for (; k < gr->nedges && gr->edges[k].to < i; k++)
            ;
        for (; k < gr->nedges && gr->edges[k].to == i; k++) {
            double after = g->when[gr->edges[k].from] + g->dur[gr->edges[k].from];
            if (after > t)
                t = after;
        }
        g->when[i] = t;
        if (t + g->dur[i] > span)
            span = t + g->dur[i];
    }
    return span;
}

static int by_to(const void *a, const void *b)
{
    const struct rsf_graph_edge *x = a, *y = b;
    return x->to < y->to ? -1 : x->to > y->to;
}

int rsr_graphs_split(struct rsr_graphs *g, uint32_t gid, int64_t start, int64_t end,
                     int (*fn)(void *arg, const struct rsr_graph_node *n, int64_t s, int64_t e), void *arg)
{
    struct graph *gr = gid ? graph_of(g, gid, 0) : NULL;
    if (!gr || !gr->n)
        return 0;
    if (gr->n > g->scratch) {
        double *w = realloc(g->when, gr->n * sizeof *w), *d;
        if (!w)
            return -1;
        g->when = w;
        if (!(d = realloc(g->dur, gr->n * sizeof *d)))
            return -1;
        g->dur = d;
        g->scratch = gr->n;
    }
    if (gr->dirty) {
        qsort(gr->edges, gr->nedges, sizeof *gr->edges, by_to);
        gr->dirty = 0;
    }
    /* compute, copies and sets: their name's mean measured time outside
     * graphs (else the mean of those; a name only ever bounded, its bound
     * where below that mean); collectives: whatever the launch's time leaves,
     * in proportion to their bytes (their time outside graphs holds waits for
     * other ranks) */
    double known = 0;
    uint32_t nknown = 0, ncoll = 0;
    for (uint32_t i = 0; i < gr->n; i++) {
        int coll = gr->have[i] && gr->nodes[i].kind == RSF_GNODE_COLLECTIVE;
        g->dur[i] = !coll && gr->have[i] ? mean_of(g, gr->nodes[i].name, 0) : -1;
        if (g->dur[i] >= 0) {
            known += g->dur[i];
            nknown++;
        }
        ncoll += coll;
    }
    double fill = nknown ? known / nknown : -1;
    for (uint32_t i = 0; i < gr->n; i++) {
        if (g->dur[i] >= 0 || (gr->have[i] && gr->nodes[i].kind == RSF_GNODE_COLLECTIVE))
            continue;
        double bound = gr->have[i] ? mean_of(g, gr->nodes[i].name, 1) : 0;
        g->dur[i] = !gr->have[i] ? 0 : bound >= 0 && (fill < 0 || bound < fill) ? bound : fill >= 0 ? fill : 1;
    }
    double want = (double)(end - start), x = 0;
    if (ncoll && schedule(g, gr, 0) < want) {
        /* the bytes' time x: the schedule's length grows with it */
        double lo = 0, hi = 1e-3;
        if (gr->last_want > 0 && want > 0.99 * gr->last_want && want < 1.01 * gr->last_want) {
            lo = hi = gr->last_x;
        } else {
            while (schedule(g, gr, hi) < want && hi < 1e12)
                hi *= 4;
            for (int it = 0; it < 40; it++) {
                double mid = (lo + hi) / 2;
                if (schedule(g, gr, mid) < want)
                    lo = mid;
                else
                    hi = mid;
            }
            gr->last_want = want;
            gr->last_x = hi;
        }
        x = hi;
    }
    double span = schedule(g, gr, x);
    double scale = span > 0 ? (double)(end - start) / span : 0;
    int n = 0;
    for (uint32_t i = 0; i < gr->n; i++) {
        if (!gr->have[i])
            continue;
        int64_t s = start + (int64_t)(g->when[i] * scale + 0.5);
        int64_t e = start + (int64_t)((g->when[i] + g->dur[i]) * scale + 0.5);
        if (fn(arg, &gr->nodes[i], s, e > end ? end : e) != 0)
            return -1;
        n++;
    }
    return n;
}
