/* The node series of one trace file into its process's summary (nodes.h),
 * chunk by chunk as load_model.c walks the file: bounded bins, first and
 * last values, increases and peak rate per series, nothing held per point. */
#include "reporter/load/nodes_load.h"
#include "reporter/load/model.h"
#include "reporter/base/array.h"

#include <stdlib.h>
#include <string.h>

static int is_gauge(unsigned kind)
{
    return kind == RSF_SERIES_MEM_TOTAL || kind == RSF_SERIES_MEM_AVAILABLE || kind == RSF_SERIES_MEM_DIRTY;
}

/* The kinds read here: the node's, not the GPUs' (gpu_*). */
static int is_node_kind(unsigned kind)
{
    return kind < RSF_SERIES_GPU_UTIL;
}

void rsr_node_proc_free(struct rsr_node_proc *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->s[i].bins);
    free(p->s);
    free(p->ids);
    free(p);
}

size_t rsr_node_proc_bytes(const struct rsr_node_proc *p)
{
    if (!p)
        return 0;
    size_t b = sizeof *p + p->cap * sizeof *p->s + p->nids * sizeof *p->ids;
    for (size_t i = 0; i < p->n; i++)
        b += p->s[i].bins ? RSR_NODE_BINS * sizeof(double) : 0;
    return b;
}

/* Widens s's bins (pairs merged) until t fits. */
static void bins_reach(struct rsr_node_series *s, int64_t t)
{
    while (t >= s->bin_start + s->bin_ns * RSR_NODE_BINS) {
        for (size_t i = 0; i < RSR_NODE_BINS / 2; i++)
            s->bins[i] = s->bins[2 * i] + s->bins[2 * i + 1];
        memset(s->bins + RSR_NODE_BINS / 2, 0, RSR_NODE_BINS / 2 * sizeof *s->bins);
        s->bin_ns *= 2;
    }
}

/* Spreads amount over [a, b) (a >= bin_start) in proportion. */
static void bins_spread(struct rsr_node_series *s, int64_t a, int64_t b, double amount)
{
    bins_reach(s, b);
    int64_t k = (a - s->bin_start) / s->bin_ns;
    for (int64_t lo = a; lo < b; k++) {
        int64_t be = s->bin_start + (k + 1) * s->bin_ns;
        int64_t x = b < be ? b : be;
        s->bins[k] += amount * (double)(x - lo) / (double)(b - a);
        lo = x;
    }
}

static void point(struct rsr_node_series *s, int64_t t, uint64_t v)
{
    if (!s->npoints) {
        s->first = s->last = v;
        s->first_ns = s->last_ns = s->bin_start = t;
        s->bin_ns = 1 << 20;
        s->npoints = 1;
        return;
    }
    if (t <= s->last_ns) {
        s->late++;
        return;
    }
    int64_t dt = t - s->last_ns;
    double amount;
    if (s->gauge) {
        amount = (double)v * (double)dt;
    } else {
        uint64_t inc = v;
        if (v >= s->last)
            inc = v - s->last;
        else
            s->resets++;
        amount = (double)inc;
        double rate = amount * 1e9 / (double)dt;
        if (rate > s->peak)
            s->peak = rate;
    }
    s->moved += amount;
    bins_spread(s, s->last_ns, t, amount);
    s->last = v;
    s->last_ns = t;
    s->npoints++;
}

int rsr_nodes_chunk(struct rsr_model *m, const struct rsf_chunk *c, char *const *strings, uint32_t nstrings)
{
    if (!c->nseries && !c->npoints)
        return 0;
    struct rsr_node_proc *p = m->node;
    if (!p && !(p = m->node = calloc(1, sizeof *p)))
        return -1;
    for (uint32_t i = 0; i < c->nseries; i++) {
        const struct rsf_series *d = &c->series[i];
        if (rsr_grow_zeroed(&p->ids, &p->nids, (size_t)d->id + 1, sizeof *p->ids, 32) != 0)
            return -1;
        p->ids[d->id] = 0;
        if (!is_node_kind(d->kind) || d->link >= RSF_LINK_NKINDS)
            continue;
        if (RSR_GROW(p->s, p->cap, p->n + 1, 16) != 0)
            return -1;
        struct rsr_node_series *s = &p->s[p->n];
        memset(s, 0, sizeof *s);
        const char *name = d->name < nstrings && strings[d->name] ? strings[d->name] : "";
        if (rsr_model_intern(m, name, strlen(name), &s->name) != 0 ||
            !(s->bins = calloc(RSR_NODE_BINS, sizeof *s->bins)))
            return -1;
        s->kind = d->kind;
        s->link = d->link;
        s->gauge = (uint8_t)is_gauge(d->kind);
        s->rate = d->rate;
        p->ids[d->id] = (uint32_t)++p->n;
    }
    for (uint32_t i = 0; i < c->npoints; i++) {
        const struct rsf_point *e = &c->points[i];
        if (e->series < p->nids && p->ids[e->series])
            point(&p->s[p->ids[e->series] - 1], (int64_t)e->ts_ns, e->value);
    }
    return 0;
}

