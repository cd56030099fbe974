/* The nodes of a job (see nodes.h): each file's counter series summarised
 * as they stream past, then merged per host and series in time order, the
 * increase between one file's last point and the next file's first (the
 * node's counters moved while the sampler was handed over) counted too. */
#include "reporter/analyse/nodes.h"
#include "reporter/load/summary.h"
#include "reporter/base/array.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a host's series, merged across its files ---- */

/* One file's part of a host's series and where its clock lies on the
 * job's. */
struct piece {
    const struct rsr_node_series *s;
    int64_t off;
};

struct key {
    const char *name;
    uint8_t kind, link;
    uint64_t rate;
    struct piece *p;
    size_t n, cap;
};

/* A series merged: its increase (or value x ns), peak, span and points. */
struct merged {
    double moved, peak;
    int64_t t0, t1;
    uint64_t npoints;
};

/* The time grid a host's series are put on. */
struct grid {
    int64_t start, bin;
    size_t n;
};

/* Adds amount spread over [a, b) to v on g, in proportion (a point,
 * b <= a, to a's bin). */
static void grid_spread(const struct grid *g, double *v, int64_t a, int64_t b, double amount)
{
    int64_t end = g->start + g->bin * (int64_t)g->n;
    if (b <= a) {
        if (a >= g->start && a < end)
            v[(a - g->start) / g->bin] += amount;
        return;
    }
    int64_t lo = a > g->start ? a : g->start, hi = b < end ? b : end;
    for (int64_t k = (lo - g->start) / g->bin; lo < hi; k++) {
        int64_t be = g->start + (k + 1) * g->bin;
        int64_t x = hi < be ? hi : be;
        v[k] += amount * (double)(x - lo) / (double)(b - a);
        lo = x;
    }
}

/* Overlap of g's bin k with [a, b). */
static double grid_cover(const struct grid *g, size_t k, int64_t a, int64_t b)
{
    int64_t s = g->start + (int64_t)k * g->bin, e = s + g->bin;
    s = s > a ? s : a;
    e = e < b ? e : b;
    return e > s ? (double)(e - s) : 0;
}

static int cmp_piece(const void *pa, const void *pb)
{
    const struct piece *a = pa, *b = pb;
    int64_t x = a->s->first_ns + a->off, y = b->s->first_ns + b->off;
    return (x > y) - (x < y);
}

/* Merges k's pieces (sorted by then) in time order; with g and v, adds
 * their bins onto v. */
static struct merged merge(const struct key *k, const struct grid *g, double *v)
{
    struct merged r = { 0, 0, 0, 0, 0 };
    const struct piece *prev = NULL;
    for (size_t i = 0; i < k->n; i++) {
        const struct rsr_node_series *s = k->p[i].s;
        int64_t off = k->p[i].off;
        if (!s->npoints)
            continue;
        if (!r.npoints)
            r.t0 = s->first_ns + off;
        r.npoints += s->npoints;
        r.moved += s->moved;
        r.peak = fmax(r.peak, s->peak);
        if (g && v)
            for (size_t b = 0; b < RSR_NODE_BINS; b++)
                if (s->bins[b] != 0) {
                    int64_t fs = s->bin_start + off + (int64_t)b * s->bin_ns;
                    grid_spread(g, v, fs, fs + s->bin_ns, s->bins[b]);
                }
        /* between two files: what the node's counter moved while the
         * sampler was handed over (files that overlap in time are another
         * matter: nothing is added) */
        if (prev && !s->gauge) {
            int64_t a = prev->s->last_ns + prev->off, b = s->first_ns + off;
            if (b > a && s->first >= prev->s->last) {
                double inc = (double)(s->first - prev->s->last);
                r.moved += inc;
                r.peak = fmax(r.peak, inc * 1e9 / (double)(b - a));
                if (g && v)
                    grid_spread(g, v, a, b, inc);
            }
        }
        if (s->last_ns + off > r.t1)
            r.t1 = s->last_ns + off;
        prev = &k->p[i];
    }
    return r;
}

struct host {
    const char *name;
    struct key *keys;
    size_t n, cap;
    size_t *models;             /* indices of the host's models */
    size_t nmodels, capmodels;
};

static struct key *key_find(const struct host *h, const char *name, unsigned kind)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->keys[i].kind == kind && strcmp(h->keys[i].name, name) == 0)
            return &h->keys[i];
    return NULL;
}

/* Adds model mi's series to h. Returns 0 or -1. */
static int host_add(struct host *h, const struct rsr_model *m, size_t mi)
{
    if (RSR_GROW(h->models, h->capmodels, h->nmodels + 1, 8) != 0)
        return -1;
    h->models[h->nmodels++] = mi;
    const struct rsr_node_proc *p = m->node;
    for (size_t i = 0; p && i < p->n; i++) {
        const struct rsr_node_series *s = &p->s[i];
        const char *name = rsr_model_str(m, s->name);
        struct key *k = key_find(h, name, s->kind);
        if (!k) {
            if (RSR_GROW(h->keys, h->cap, h->n + 1, 8) != 0)
                return -1;
            k = &h->keys[h->n++];
            memset(k, 0, sizeof *k);
            k->name = name;
            k->kind = s->kind;
            k->link = s->link;
        }
        if (s->rate > k->rate)
            k->rate = s->rate;
        if (RSR_GROW(k->p, k->cap, k->n + 1, 8) != 0)
            return -1;
        k->p[k->n++] = (struct piece){ s, m->clock_offset_ns };
    }
    return 0;
}

static void host_free(struct host *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->keys[i].p);
    free(h->keys);
    free(h->models);
}

/* The share of each bin of g during which the host's ranks ran
 * collectives, into f (zeroed first): from each process's fine bins of
 * collective bytes (summary.h), each byte standing for the time its
 * process's collectives took per byte on average (its communication time
 * over its bytes), the largest share of the host's processes (its ranks run
 * the same collectives together), at most 1. */
static void coll_share(struct rsr_model *const *models, const struct host *h, const struct grid *g, double *f,
                       double *tmp)
{
    memset(f, 0, g->n * sizeof *f);
    for (size_t i = 0; i < h->nmodels; i++) {
        const struct rsr_summary *sm = models[h->models[i]]->sum;
        if (!sm || !sm->fine[RSR_FINE_COMM] || sm->gpu.comm_ns <= 0)
            continue;
        double total = 0;
        for (size_t b = 0; b < RSR_FINE_BINS; b++)
            total += sm->fine[RSR_FINE_COMM][b];
        if (total <= 0)
            continue;
        memset(tmp, 0, g->n * sizeof *tmp);
        rsr_summary_rebin(sm, RSR_FINE_COMM, tmp, g->start, g->bin, g->n);
        double ns_per_byte = (double)sm->gpu.comm_ns / total;
        for (size_t b = 0; b < g->n; b++)
            f[b] = fmax(f[b], fmin(1, tmp[b] * ns_per_byte / (double)g->bin));
    }
}

/* Throughput while collectives ran, bytes/ns (GB/s), from a link
 * direction's bytes x per bin of g, the collective share f per bin and the
 * sampled stretch [a, b): the bytes of the bins where collectives ran, and
 * of their neighbours (an interval between two samples spreads its bytes
 * evenly, so some land next door), less the traffic the link carries
 * without collectives (its rate in the other bins, over the rest of each
 * bin), over the time they ran. -1 when none ran. */
static double in_coll(const struct grid *g, const double *x, const double *f, int64_t a, int64_t b)
{
    double bg_bytes = 0, bg_ns = 0, ns = 0, bytes = 0;
#define NEAR(k) (f[k] > 1e-9 || ((k) > 0 && f[(k) - 1] > 1e-9) || ((k) + 1 < g->n && f[(k) + 1] > 1e-9))
    for (size_t k = 0; k < g->n; k++) {
        double w = grid_cover(g, k, a, b);
        if (w > 0 && !NEAR(k)) {
            bg_bytes += x[k];
            bg_ns += w;
        }
    }
    double r0 = bg_ns > 0 ? bg_bytes / bg_ns : 0;
    for (size_t k = 0; k < g->n; k++) {
        double w = grid_cover(g, k, a, b);
        if (w <= 0 || !NEAR(k))
            continue;
        bytes += fmax(0, x[k] - r0 * (1 - f[k]) * w);
        ns += f[k] * w;
    }
#undef NEAR
    return ns > 0 ? bytes / ns : -1;
}

/* Per timeline bin: amount / covered ns x scale, NAN where the series has
 * no sample. */
static double *per_bin(const struct grid *t, const double *v, int64_t a, int64_t b, double scale)
{
    double *r = malloc((t->n ? t->n : 1) * sizeof *r);
    if (!r)
        return NULL;
    for (size_t k = 0; k < t->n; k++) {
        double w = grid_cover(t, k, a, b);
        r[k] = w > 0 ? v[k] / w * scale : NAN;
    }
    return r;
}

/* The merged series of key k on the job's timeline t, as amounts per bin
 * (zeroed first into v). */
static struct merged on_timeline(const struct key *k, const struct grid *t, double *v)
{
    memset(v, 0, (t->n ? t->n : 1) * sizeof *v);
    return merge(k, t, v);
}

static int node_make(struct rsr_model *const *models, struct host *h, const struct grid *t, struct rsr_node *nd)
{
    memset(nd, 0, sizeof *nd);
    nd->host = h->name;
    nd->cpu_pct = nd->mem_used_pct = nd->mem_dirty_mb = -1;
    for (size_t i = 0; i < h->nmodels; i++)
        nd->files += models[h->models[i]]->node && models[h->models[i]]->node->n;
    for (size_t i = 0; i < h->n; i++)
        qsort(h->keys[i].p, h->keys[i].n, sizeof *h->keys[i].p, cmp_piece);
    /* the host's grid for throughput during collectives: the sampled
     * stretch, bins at least two sample periods wide (each holds whole
     * intervals between points, so the bytes of one are not spread into
     * bins the collectives missed) */
    int64_t a = INT64_MAX, b = INT64_MIN, period = INT64_MAX;
    for (size_t i = 0; i < h->n; i++) {
        struct merged r = merge(&h->keys[i], NULL, NULL);
        if (r.npoints < 2)
            continue;
        a = r.t0 < a ? r.t0 : a;
        b = r.t1 > b ? r.t1 : b;
        int64_t p = (r.t1 - r.t0) / (int64_t)(r.npoints - 1);
        period = p < period ? p : period;
    }
    size_t tn = t->n ? t->n : 1;
    double *v = calloc(tn, sizeof *v), *w = calloc(tn, sizeof *w);
    int rc = v && w ? 0 : -1;
    struct grid g = { 0, 0, 0 };
    double *gx = NULL, *gf = NULL, *gt = NULL;
    if (!rc && a < b) {
        g.start = a;
        g.bin = (b - a) / 256 > 2 * period ? (b - a) / 256 : 2 * period;
        if (g.bin <= 0)
            g.bin = 1;
        g.n = (size_t)((b - a + g.bin - 1) / g.bin);
        gx = calloc(g.n, sizeof *gx), gf = calloc(g.n, sizeof *gf), gt = calloc(g.n, sizeof *gt);
        if (!gx || !gf || !gt)
            rc = -1;
        else
            coll_share(models, h, &g, gf, gt);
        double cs = 0;
        for (size_t k = 0; !rc && k < g.n; k++)
            cs += gf[k] * grid_cover(&g, k, a, b);
        nd->coll_s = cs / 1e9;
    }
    /* the collective share on the job's timeline, for the page */
    if (!rc && t->n && (nd->coll_bins = malloc(t->n * sizeof *nd->coll_bins)))
        coll_share(models, h, t, nd->coll_bins, v);
    for (size_t k = 0; nd->coll_bins && k < t->n; k++)
        nd->coll_bins[k] *= 100;

    /* links: a tx series and its rx */
    for (size_t i = 0; !rc && i < h->n; i++) {
        const struct key *tx = &h->keys[i];
        if (tx->kind != RSF_SERIES_LINK_TX)
            continue;
        const struct key *rx = key_find(h, tx->name, RSF_SERIES_LINK_RX);
        struct rsr_node_link *l = realloc(nd->links, (nd->n_links + 1) * sizeof *l);
        if (!l) {
            rc = -1;
            break;
        }
        nd->links = l;
        l = &nd->links[nd->n_links++];
        memset(l, 0, sizeof *l);
        l->name = tx->name;
        l->link = tx->link;
        l->rate_gbs = (double)(rx && rx->rate > tx->rate ? rx->rate : tx->rate) / 1e9;
        l->in_coll_gbs = -1;
        const struct key *dir[2] = { tx, rx };
        for (int d = 0; d < 2; d++) {
            if (!dir[d])
                continue;
            struct merged r = on_timeline(dir[d], t, v);
            double span = r.t1 > r.t0 ? (double)(r.t1 - r.t0) : 0;
            double mean = span > 0 ? r.moved / span : 0;
            *(d ? &l->rx_bytes : &l->tx_bytes) = (uint64_t)(r.moved + 0.5);
            l->mean_gbs = fmax(l->mean_gbs, mean);
            l->peak_gbs = fmax(l->peak_gbs, r.peak / 1e9);
            double **bins = d ? &l->rx_gbs : &l->tx_gbs;
            if (!(*bins = per_bin(t, v, r.t0, r.t1, 1))) {
                rc = -1;
                break;
            }
            if (g.n) {
                memset(gx, 0, g.n * sizeof *gx);
                merge(dir[d], &g, gx);
                double c = in_coll(&g, gx, gf, r.t0, r.t1);
                l->in_coll_gbs = fmax(l->in_coll_gbs, c);
            }
        }
    }
    /* block devices and NFS mounts */
    for (size_t i = 0; !rc && i < h->n; i++) {
        const struct key *rd = &h->keys[i];
        if (rd->kind != RSF_SERIES_DISK_READ && rd->kind != RSF_SERIES_NFS_READ)
            continue;
        int nfs = rd->kind == RSF_SERIES_NFS_READ;
        const struct key *wr = key_find(h, rd->name, nfs ? RSF_SERIES_NFS_WRITE : RSF_SERIES_DISK_WRITE);
        struct rsr_node_disk *dk = realloc(nd->disks, (nd->n_disks + 1) * sizeof *dk);
        if (!dk) {
            rc = -1;
            break;
        }
        nd->disks = dk;
        dk = &nd->disks[nd->n_disks++];
        memset(dk, 0, sizeof *dk);
        dk->name = rd->name;
        dk->nfs = nfs;
        const struct key *dir[2] = { rd, wr };
        for (int d = 0; d < 2; d++) {
            if (!dir[d])
                continue;
            struct merged r = on_timeline(dir[d], t, v);
            *(d ? &dk->write_bytes : &dk->read_bytes) = (uint64_t)(r.moved + 0.5);
            *(d ? &dk->peak_write_gbs : &dk->peak_read_gbs) = r.peak / 1e9;
            double **bins = d ? &dk->write_gbs : &dk->read_gbs;
            if (!(*bins = per_bin(t, v, r.t0, r.t1, 1))) {
                rc = -1;
                break;
            }
        }
    }
    /* CPU: busy over total, of the job and per bin; memory: the mean used
     * share (1 - available / total, weighted by time) */
    const struct key *busy = key_find(h, "cpu", RSF_SERIES_CPU_BUSY), *all = key_find(h, "cpu", RSF_SERIES_CPU_TOTAL);
    if (!rc && busy && all) {
        struct merged rb = on_timeline(busy, t, v), ra = on_timeline(all, t, w);
        if (ra.moved > 0)
            nd->cpu_pct = 100 * rb.moved / ra.moved;
        if ((nd->cpu_bins = malloc(tn * sizeof *nd->cpu_bins)))
            for (size_t k = 0; k < t->n; k++)
                nd->cpu_bins[k] = w[k] > 0 ? 100 * v[k] / w[k] : NAN;
    }
    const struct key *mt = key_find(h, "mem", RSF_SERIES_MEM_TOTAL), *ma = key_find(h, "mem", RSF_SERIES_MEM_AVAILABLE);
    if (!rc && mt && ma) {
        struct merged rt = on_timeline(mt, t, v), rv = on_timeline(ma, t, w);
        if (rt.moved > 0)
            nd->mem_used_pct = 100 * (1 - rv.moved / rt.moved);
        if ((nd->mem_bins = malloc(tn * sizeof *nd->mem_bins)))
            for (size_t k = 0; k < t->n; k++)
                nd->mem_bins[k] = v[k] > 0 ? 100 * (1 - w[k] / v[k]) : NAN;
    }
    const struct key *md = key_find(h, "mem", RSF_SERIES_MEM_DIRTY);
    if (!rc && md) {
        struct merged r = merge(md, NULL, NULL);
        if (r.t1 > r.t0)
            nd->mem_dirty_mb = r.moved / (double)(r.t1 - r.t0) * 1024 / 1e6; /* KiB x ns / ns */
    }
    free(v), free(w), free(gx), free(gf), free(gt);
    return rc;
}

static int cmp_host(const void *pa, const void *pb)
{
    return strcmp(((const struct rsr_node *)pa)->host, ((const struct rsr_node *)pb)->host);
}

int rsr_nodes_analyse(struct rsr_model *const *models, size_t n, int64_t start_ns, int64_t bin_ns, size_t nbins,
                      struct rsr_nodes *out)
{
    memset(out, 0, sizeof *out);
    out->start_ns = start_ns;
    out->bin_ns = bin_ns > 0 ? bin_ns : 1;
    out->nbins = bin_ns > 0 ? nbins : 0;
    struct host *hosts = NULL;
    size_t nh = 0, caph = 0;
    int rc = 0;
    /* hosts that have node series, with every model of theirs (their
     * collectives say when the links were in use) */
    for (size_t i = 0; i < n && !rc; i++) {
        if (!models[i]->node || !models[i]->node->n)
            continue;
        const char *host = rsr_model_str(models[i], models[i]->host);
        size_t k = 0;
        while (k < nh && strcmp(hosts[k].name, host) != 0)
            k++;
        if (k == nh) {
            if (RSR_GROW(hosts, caph, nh + 1, 8) != 0) {
                rc = -1;
                break;
            }
            memset(&hosts[nh], 0, sizeof hosts[nh]);
            hosts[nh++].name = host;
        }
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const char *host = rsr_model_str(models[i], models[i]->host);
        for (size_t k = 0; k < nh; k++)
            if (strcmp(hosts[k].name, host) == 0 && host_add(&hosts[k], models[i], i) != 0)
                rc = -1;
    }
    if (!rc && nh && !(out->v = calloc(nh, sizeof *out->v)))
        rc = -1;
    struct grid t = { out->start_ns, out->bin_ns, out->nbins };
    for (size_t k = 0; k < nh && !rc; k++) {
        if (node_make(models, &hosts[k], &t, &out->v[out->n++]) != 0)
            rc = -1;
    }
    for (size_t k = 0; k < nh; k++)
        host_free(&hosts[k]);
    free(hosts);
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_host);
    return rc;
}

void rsr_nodes_free(struct rsr_nodes *nodes)
{
    for (size_t i = 0; i < nodes->n; i++) {
        struct rsr_node *nd = &nodes->v[i];
        for (size_t k = 0; k < nd->n_links; k++)
            free(nd->links[k].tx_gbs), free(nd->links[k].rx_gbs);
        for (size_t k = 0; k < nd->n_disks; k++)
            free(nd->disks[k].read_gbs), free(nd->disks[k].write_gbs);
        free(nd->links);
        free(nd->disks);
        free(nd->cpu_bins), free(nd->mem_bins), free(nd->coll_bins);
    }
    free(nodes->v);
    memset(nodes, 0, sizeof *nodes);
}
