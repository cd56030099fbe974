/* Clock alignment (see align.h). Clock pairs give each process its offset
 * from realtime; the collective refinement then solves for per-process
 * corrections that bring each collective's end times together, by repeated
 * Gauss-Seidel passes: each process takes the median, over its matched
 * collectives, of (the other ranks' mean end - its own end). */
#include "reporter/align.h"
#include "reporter/summary.h"

#include <stdlib.h>
#include <string.h>

struct end {
    uint64_t comm;
    uint32_t seq;
    uint32_t model;
    int64_t end_ns;
    uint32_t group, group_len;  /* the run of ends of the same collective */
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_end(const void *pa, const void *pb)
{
    const struct end *a = pa, *b = pb;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->model > b->model) - (a->model < b->model);
}

/* The k-th smallest of v[0..n) (reorders v): quickselect. */
static int64_t select_k(int64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

/* The median of v[0..n), n > 0 (reorders v). */
static int64_t median(int64_t *v, size_t n)
{
    if (n % 2)
        return select_k(v, n, n / 2);
    int64_t a = select_k(v, n, n / 2 - 1), b = select_k(v, n, n / 2);
    return a + (b - a) / 2;
}

static int64_t pair_offset(const struct rsr_model *m)
{
    if (!m->n_clocks)
        return 0;
    int64_t *d = malloc(m->n_clocks * sizeof *d);
    if (!d)
        return m->clocks[0].real_ns - m->clocks[0].mono_ns;
    for (size_t i = 0; i < m->n_clocks; i++)
        d[i] = m->clocks[i].real_ns - m->clocks[i].mono_ns;
    int64_t r = median(d, m->n_clocks);
    free(d);
    return r;
}

void rsr_alignment_free(struct rsr_alignment *a)
{
    free(a->models);
    memset(a, 0, sizeof *a);
}

int rsr_align(struct rsr_model *const *models, size_t n, struct rsr_alignment *out)
{
    memset(out, 0, sizeof *out);
    out->models = calloc(n ? n : 1, sizeof *out->models);
    if (!out->models)
        return -1;
    out->n = n;
    size_t nends = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        if (!sm)
            return -1;
        out->models[i].pair_offset_ns = pair_offset(models[i]);
        rsr_model_shift(models[i], out->models[i].pair_offset_ns);
        nends += sm->n_colls;
    }
    struct end *e = malloc((nends ? nends : 1) * sizeof *e);
    size_t *by_model = malloc((nends ? nends : 1) * sizeof *by_model);
    size_t *first = calloc(n + 1, sizeof *first);
    int64_t *corr = calloc(n ? n : 1, sizeof *corr);
    int64_t *tmp = malloc((nends ? nends : 1) * sizeof *tmp);
    if (!e || !by_model || !first || !corr || !tmp) {
        free(e), free(by_model), free(first), free(corr), free(tmp);
        return -1;
    }
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *sm = models[i]->sum;
        for (size_t k = 0; k < sm->n_colls; k++) {
            const struct rsr_coll_tuple *c = &sm->colls[k];
            const struct rsr_coll_key *key = &sm->keys[c->key];
            /* sends and receives end when their pair is done, not together */
            if (key->op != RSR_COLL_SEND && key->op != RSR_COLL_RECV)
                e[ne++] = (struct end){ key->comm_id, c->seq, (uint32_t)i, c->end_ns, 0, 0 };
        }
    }
    qsort(e, ne, sizeof *e, cmp_end);
    /* groups with two models or more; others drop out */
    size_t kept = 0;
    for (size_t a = 0; a < ne;) {
        size_t b = a + 1;
        while (b < ne && e[b].comm == e[a].comm && e[b].seq == e[a].seq)
            b++;
        /* one end per model: a process repeating (comm, seq) keeps its first */
        size_t start = kept;
        for (size_t j = a; j < b; j++)
            if (j == a || e[j].model != e[j - 1].model)
                e[kept++] = e[j];
        if (kept - start < 2)
            kept = start;
        else {
            for (size_t j = start; j < kept; j++) {
                e[j].group = (uint32_t)start;
                e[j].group_len = (uint32_t)(kept - start);
            }
            out->groups++;
        }
        a = b;
    }
    ne = kept;
    /* ends by model: first[i]..first[i+1] in by_model */
    for (size_t j = 0; j < ne; j++)
        first[e[j].model + 1]++;
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    {
        size_t *fill = calloc(n ? n : 1, sizeof *fill);
        if (!fill) {
            free(e), free(by_model), free(first), free(corr), free(tmp);
            return -1;
        }
        for (size_t j = 0; j < ne; j++) {
            uint32_t mi = e[j].model;
            by_model[first[mi] + fill[mi]++] = j;
        }
        free(fill);
    }
    size_t ref = n;
    for (size_t i = 0; i < n && ref == n; i++)
        if (first[i + 1] > first[i])
            ref = i;
    /* Sums of (end - the group's first end) per group, kept up to date as
     * corrections change (at the group's first entry), so that each pass
     * is linear in the number of ends. Relative to the first end so that
     * the sums stay far from overflow. */
    int64_t *gsum = calloc(ne ? ne : 1, sizeof *gsum);
    if (!gsum) {
        free(e), free(by_model), free(first), free(corr), free(tmp);
        return -1;
    }
    for (size_t j = 0; j < ne; j++)
        gsum[e[j].group] += e[j].end_ns - e[e[j].group].end_ns;
    for (int iter = 0; iter < 200 && ref < n; iter++) {
        int64_t moved = 0;
        for (size_t i = 0; i < n; i++) {
            size_t cnt = first[i + 1] - first[i];
            if (!cnt)
                continue;
            for (size_t k = 0; k < cnt; k++) {
                const struct end *x = &e[by_model[first[i] + k]];
                int64_t mine = x->end_ns - e[x->group].end_ns + corr[i];
                tmp[k] = (gsum[x->group] - mine) / (int64_t)(x->group_len - 1) - mine;
            }
            int64_t d = median(tmp, cnt);
            corr[i] += d;
            for (size_t k = 0; k < cnt; k++)
                gsum[e[by_model[first[i] + k]].group] += d;
            moved = moved > (d < 0 ? -d : d) ? moved : (d < 0 ? -d : d);
        }
        if (moved < 50)
            break;
    }
    int64_t base = ref < n ? corr[ref] : 0;
    for (size_t i = 0; i < n; i++) {
        struct rsr_align_model *am = &out->models[i];
        am->matched = first[i + 1] - first[i];
        am->correction_ns = am->matched ? corr[i] - base : 0;
        corr[i] = am->correction_ns;
        if (am->correction_ns)
            rsr_model_shift(models[i], am->correction_ns);
        int64_t a = am->correction_ns < 0 ? -am->correction_ns : am->correction_ns;
        if (a > out->max_correction_ns)
            out->max_correction_ns = a;
    }
    /* residual: |end - mean end of its collective|, 95th percentile */
    for (size_t j = 0; j < ne; j++)
        gsum[j] = 0;
    for (size_t j = 0; j < ne; j++)
        gsum[e[j].group] += e[j].end_ns - e[e[j].group].end_ns + corr[e[j].model];
    for (size_t j = 0; j < ne; j++) {
        const struct end *x = &e[j];
        int64_t mine = x->end_ns - e[x->group].end_ns + corr[x->model];
        int64_t d = gsum[x->group] / (int64_t)x->group_len - mine;
        tmp[j] = d < 0 ? -d : d;
    }
    if (ne) {
        qsort(tmp, ne, sizeof *tmp, cmp_i64);
        out->residual_ns = tmp[(ne - 1) * 95 / 100];
    }
    free(gsum);
    free(e), free(by_model), free(first), free(corr), free(tmp);
    return 0;
}
