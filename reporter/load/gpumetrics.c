/* NVML's figures of a process's GPU (gpumetrics.h). */
#include "reporter/load/gpumetrics.h"
#include "reporter/base/array.h"

#include <stdlib.h>
#include <string.h>

static struct rsr_gpum_list *list_of(struct rsr_gpum *g, unsigned kind)
{
    switch (kind) {
    case RSF_SERIES_GPU_UTIL: return &g->util;
    case RSF_SERIES_GPU_SM_ACTIVE: return &g->active;
    case RSF_SERIES_GPU_SM_OCCUPANCY: return &g->occupancy;
    default: return NULL;
    }
}

/* Halves a full list by merging neighbours (time-weighted). */
static void squeeze(struct rsr_gpum_list *l)
{
    size_t k = 0;
    for (size_t i = 0; i + 1 < l->n; i += 2) {
        struct rsr_gpum_iv *a = &l->iv[i], *b = &l->iv[i + 1];
        double wa = (double)(a->t1 - a->t0), wb = (double)(b->t1 - b->t0);
        double v = wa + wb > 0 ? (a->value * wa + b->value * wb) / (wa + wb) : a->value;
        l->iv[k++] = (struct rsr_gpum_iv){ a->t0, b->t1, v };
    }
    if (l->n % 2)
        l->iv[k++] = l->iv[l->n - 1];
    l->n = k;
}

static void add(struct rsr_gpum *g, struct rsr_gpum_list *l, int64_t t0, int64_t t1, double v)
{
    if (l->n == RSR_GPUM_MAX)
        squeeze(l);
    if (RSR_GROW(l->iv, l->cap, l->n + 1, 256) != 0) {
        g->failed = 1;
        return;
    }
    l->iv[l->n++] = (struct rsr_gpum_iv){ t0, t1, v };
}

void rsr_gpum_take(struct rsr_gpum *g, const struct rsf_chunk *c)
{
    for (uint32_t i = 0; i < c->nseries; i++) {
        const struct rsf_series *s = &c->series[i];
        if (!list_of(g, s->kind) || !s->id || s->id > (1u << 20))
            continue;
        if (s->id >= g->n_series) {
            uint32_t n = g->n_series ? g->n_series : 16;
            while (n <= s->id)
                n *= 2;
            struct rsr_gpum_series *p = realloc(g->series, n * sizeof *p);
            if (!p) {
                g->failed = 1;
                return;
            }
            memset(p + g->n_series, 0, (n - g->n_series) * sizeof *p);
            g->series = p;
            g->n_series = n;
        }
        g->series[s->id] = (struct rsr_gpum_series){ (uint8_t)(s->kind + 1), 0 };
    }
    for (uint32_t i = 0; i < c->npoints; i++) {
        const struct rsf_point *p = &c->points[i];
        if (p->series >= g->n_series || !g->series[p->series].kind1)
            continue;
        struct rsr_gpum_series *s = &g->series[p->series];
        int64_t t = (int64_t)p->ts_ns;
        /* a point covers the time since its series' previous one */
        if (s->last_ns && t > s->last_ns)
            add(g, list_of(g, s->kind1 - 1u), s->last_ns, t, (double)p->value / 100.0);
        s->last_ns = t;
    }
}

/* The time-weighted mean of l within [lo, hi]; *n: intervals that overlap. */
static double mean_within(const struct rsr_gpum_list *l, int64_t lo, int64_t hi, uint32_t *n)
{
    double sum = 0, w = 0;
    *n = 0;
    for (size_t i = 0; i < l->n; i++) {
        int64_t a = l->iv[i].t0 > lo ? l->iv[i].t0 : lo, b = l->iv[i].t1 < hi ? l->iv[i].t1 : hi;
        if (b <= a)
            continue;
        sum += l->iv[i].value * (double)(b - a);
        w += (double)(b - a);
        (*n)++;
    }
    return w > 0 ? sum / w : 0;
}

void rsr_gpum_finish(const struct rsr_gpum *g, struct rsr_gpu_breakdown *b)
{
    if (b->span_ns <= 0)
        return;
    uint32_t n;
    b->nvml_util_pct = mean_within(&g->util, b->start_ns, b->end_ns, &b->util_n);
    b->gpm_sm_active_pct = mean_within(&g->active, b->start_ns, b->end_ns, &b->gpm_n);
    b->gpm_occupancy_pct = mean_within(&g->occupancy, b->start_ns, b->end_ns, &n);
}

void rsr_gpum_free(struct rsr_gpum *g)
{
    free(g->series);
    free(g->util.iv);
    free(g->active.iv);
    free(g->occupancy.iv);
    memset(g, 0, sizeof *g);
}
