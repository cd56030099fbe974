/* Clock alignment (see align.h). Clock pairs give each process its offset
 * from realtime; the collective refinement then solves for per-process
 * corrections that bring each collective's end times together, by repeated
 * Gauss-Seidel passes: each process takes the median, over its matched
 * collectives, of (the other ranks' mean end - its own end). The ends are
 * read from the summaries (a merge finds the collectives, then a pass reads
 * one process's ends at a time), so memory grows with the calls and the
 * largest process's, not with all ends of the job. */
#include "reporter/analyse/align.h"
#include "reporter/load/summary.h"
#include "reporter/load/process.h"
#include "reporter/base/order.h"
#include "reporter/base/array.h"

#include <stdlib.h>
#include <string.h>

/* The collectives seen on two ranks or more, in (communicator, seq)
 * order: memory grows with the calls, not with the calls x the ranks. */
struct groups {
    uint64_t *comm;
    uint32_t *seq;
    int64_t *first;     /* end of its first member (lowest model) */
    uint32_t *len;      /* members */
    int64_t *sum;       /* sum of (end - first) over members, corrections included */
    size_t n, cap;
};

static void groups_free(struct groups *g)
{
    free(g->comm), free(g->seq), free(g->first), free(g->len), free(g->sum);
    memset(g, 0, sizeof *g);
}

static int groups_add(struct groups *g, uint64_t comm, uint32_t seq, int64_t first, uint32_t len, int64_t sum)
{
    if (g->n == g->cap) {
        /* five arrays of one length: each grown from the same cap */
        size_t c[5] = { g->cap, g->cap, g->cap, g->cap, g->cap };
        if (RSR_GROW(g->comm, c[0], g->n + 1, 1024) != 0 || RSR_GROW(g->seq, c[1], g->n + 1, 1024) != 0 ||
            RSR_GROW(g->first, c[2], g->n + 1, 1024) != 0 || RSR_GROW(g->len, c[3], g->n + 1, 1024) != 0 ||
            RSR_GROW(g->sum, c[4], g->n + 1, 1024) != 0)
            return -1;
        g->cap = c[0];
    }
    g->comm[g->n] = comm, g->seq[g->n] = seq, g->first[g->n] = first, g->len[g->n] = len, g->sum[g->n] = sum;
    g->n++;
    return 0;
}

/* Sends and receives (alone or grouped) end when their pair is done, not
 * together. */
static int p2p(const struct rsr_coll_key *k)
{
    return k->op == RSR_COLL_SEND || k->op == RSR_COLL_RECV || k->op == RSR_COLL_SENDRECV;
}

/* Finds the groups (one end per model: a process repeating (comm, seq)
 * keeps its first) and counts each model's ends in them into cnt[]. */
static int find_groups(struct rsr_model *const *models, size_t n, struct groups *g, size_t *cnt)
{
    struct rsr_coll_merge mg;
    if (rsr_coll_merge_open(&mg, models, n) != 0)
        return -1;
    const struct rsr_coll_entry *e;
    long ng;
    while ((ng = rsr_coll_merge_next(&mg, &e)) > 0) {
        uint32_t members = 0, last = 0;
        int64_t first = 0, sum = 0;
        for (long j = 0; j < ng; j++) {
            if (p2p(e[j].k) || (members && e[j].model == last))
                continue;
            if (!members)
                first = e[j].t.end_ns;
            sum += e[j].t.end_ns - first;
            last = e[j].model;
            members++;
        }
        /* calls replayed in graphs: their ends are estimates (graphs.h) */
        if (members < 2 || (e[0].t.seq & RSR_SEQ_REPLAYED))
            continue;
        if (groups_add(g, e[0].k->comm_id, e[0].t.seq, first, members, sum) != 0) {
            ng = -1;
            break;
        }
        members = 0;
        for (long j = 0; j < ng; j++) {
            if (p2p(e[j].k) || (members && e[j].model == last))
                continue;
            last = e[j].model;
            members++;
            cnt[last]++;
        }
    }
    rsr_coll_merge_close(&mg);
    return ng < 0 ? -1 : 0;
}

/* Model s's ends in groups, in order: rel[k] = end - its group's first,
 * gi[k] its group; returns how many, or -1 when the spill file fails. */
static long model_ends(const struct rsr_summary *s, const struct groups *g, int64_t *rel, size_t *gi)
{
    struct rsr_coll_cursor c;
    struct rsr_coll_tuple t;
    rsr_coll_cursor_open(&c, s);
    size_t at = 0;
    long k = 0, r;
    int have_prev = 0;
    uint64_t prev_comm = 0;
    uint32_t prev_seq = 0;
    while ((r = rsr_coll_cursor_next(&c, &t)) > 0) {
        const struct rsr_coll_key *key = &s->keys[t.key];
        if (p2p(key) || (have_prev && key->comm_id == prev_comm && t.seq == prev_seq))
            continue;
        have_prev = 1, prev_comm = key->comm_id, prev_seq = t.seq;
        while (at < g->n && (g->comm[at] < key->comm_id || (g->comm[at] == key->comm_id && g->seq[at] < t.seq)))
            at++;
        if (at < g->n && g->comm[at] == key->comm_id && g->seq[at] == t.seq) {
            rel[k] = t.end_ns - g->first[at];
            gi[k++] = at;
        }
    }
    return r < 0 ? -1 : k;
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

/* Model i's |end - the mean end of its collective| into v[], g's sums
 * holding the final corrections; how many, or -1. */
static long model_residuals(const struct rsr_summary *s, const struct groups *g, int64_t *v, size_t *gi)
{
    long k = model_ends(s, g, v, gi);
    for (long j = 0; j < k; j++) {
        int64_t d = g->sum[gi[j]] / (int64_t)g->len[gi[j]] - v[j];
        v[j] = d < 0 ? -d : d;
    }
    return k;
}

/* Values left in range at most for the last pass, and buckets per pass. */
#define SELECT_BUF 65536
#define SELECT_BUCKETS 4096

/* The k-th smallest residual of all ends into *out without holding them
 * all: each pass over the models' ends counts them in buckets over a range
 * of values and narrows the range to the bucket that holds the k-th, until
 * what is left fits in a buffer (or is one value). 0, or -1. */
static int residual(struct rsr_model *const *models, size_t n, const struct groups *g, const size_t *cnt,
                    int64_t *v, size_t *gi, size_t k, int64_t *out)
{
    uint64_t *hist = malloc(SELECT_BUCKETS * sizeof *hist);
    int64_t *buf = malloc(SELECT_BUF * sizeof *buf);
    int rc = -1;
    if (!hist || !buf)
        goto done;
    int64_t lo = 0, hi = INT64_MAX;
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += cnt[i];
    while (lo < hi && left > SELECT_BUF) {
        uint64_t width = (uint64_t)(hi - lo) / SELECT_BUCKETS + 1;
        memset(hist, 0, SELECT_BUCKETS * sizeof *hist);
        for (size_t i = 0; i < n; i++) {
            long m = cnt[i] ? model_residuals(models[i]->sum, g, v, gi) : 0;
            if (m != (long)cnt[i])
                goto done;
            for (long j = 0; j < m; j++)
                if (v[j] >= lo && v[j] <= hi)
                    hist[(uint64_t)(v[j] - lo) / width]++;
        }
        size_t b = 0;
        while (k >= hist[b])
            k -= hist[b++];
        left = hist[b];
        lo += (int64_t)(b * width);
        if ((uint64_t)(hi - lo) > width - 1)
            hi = lo + (int64_t)(width - 1);
    }
    size_t nb = 0;
    for (size_t i = 0; i < n && lo < hi; i++) {
        long m = cnt[i] ? model_residuals(models[i]->sum, g, v, gi) : 0;
        if (m != (long)cnt[i])
            goto done;
        for (long j = 0; j < m; j++)
            if (v[j] >= lo && v[j] <= hi)
                buf[nb++] = v[j];
    }
    if (lo < hi)
        qsort(buf, nb, sizeof *buf, rsr_cmp_i64);
    *out = lo < hi ? buf[k] : lo;
    rc = 0;
done:
    free(hist), free(buf);
    return rc;
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
    for (size_t i = 0; i < n; i++) {
        if (!rsr_model_summary(models[i]))
            return -1;
        out->models[i].pair_offset_ns = pair_offset(models[i]);
        rsr_model_shift(models[i], out->models[i].pair_offset_ns);
    }
    struct groups g = { 0 };
    size_t *cnt = calloc(n ? n : 1, sizeof *cnt);
    int64_t *corr = calloc(n ? n : 1, sizeof *corr);
    int64_t *rel = NULL, *tmp = NULL;
    size_t *gi = NULL;
    int rc = -1;
    if (!cnt || !corr || find_groups(models, n, &g, cnt) != 0)
        goto done;
    out->groups = g.n;
    size_t most = 1, ne = 0, ref = n;
    for (size_t i = 0; i < n; i++) {
        most = cnt[i] > most ? cnt[i] : most;
        ne += cnt[i];
        if (cnt[i] && ref == n)
            ref = i;
    }
    /* one model's ends at a time (the Gauss-Seidel pass moves one model) */
    rel = malloc(most * sizeof *rel);
    tmp = malloc(most * sizeof *tmp);
    gi = malloc(most * sizeof *gi);
    if (!rel || !tmp || !gi)
        goto done;
    /* The groups' sums of (end - first end) are kept up to date as
     * corrections change, so that each pass is linear in the number of
     * ends. Relative to the first end so that the sums stay far from
     * overflow. */
    for (int iter = 0; iter < 200 && ref < n; iter++) {
        int64_t moved = 0;
        for (size_t i = 0; i < n; i++) {
            if (!cnt[i])
                continue;
            long k = model_ends(models[i]->sum, &g, rel, gi);
            if (k != (long)cnt[i])
                goto done;
            for (long j = 0; j < k; j++) {
                int64_t mine = rel[j] + corr[i];
                tmp[j] = (g.sum[gi[j]] - mine) / (int64_t)(g.len[gi[j]] - 1) - mine;
            }
            int64_t d = median(tmp, (size_t)k);
            corr[i] += d;
            for (long j = 0; j < k; j++)
                g.sum[gi[j]] += d;
            moved = moved > (d < 0 ? -d : d) ? moved : (d < 0 ? -d : d);
        }
        if (moved < 50)
            break;
    }
    int64_t base = ref < n ? corr[ref] : 0;
    for (size_t i = 0; i < n; i++) {
        struct rsr_align_model *am = &out->models[i];
        am->matched = cnt[i];
        am->correction_ns = am->matched ? corr[i] - base : 0;
        if (am->correction_ns)
            rsr_model_shift(models[i], am->correction_ns);
        int64_t a = am->correction_ns < 0 ? -am->correction_ns : am->correction_ns;
        if (a > out->max_correction_ns)
            out->max_correction_ns = a;
    }
    /* residual: |end - mean end of its collective|, 95th percentile; the
     * models now hold their corrections */
    for (size_t j = 0; j < g.n; j++)
        g.sum[j] = 0;
    for (size_t i = 0; i < n; i++) {
        long k = cnt[i] ? model_ends(models[i]->sum, &g, rel, gi) : 0;
        if (k != (long)cnt[i])
            goto done;
        for (long j = 0; j < k; j++)
            g.sum[gi[j]] += rel[j];
    }
    if (ne && residual(models, n, &g, cnt, rel, gi, (ne - 1) * 95 / 100, &out->residual_ns) != 0)
        goto done;
    rc = 0;
done:
    groups_free(&g);
    free(cnt), free(corr), free(rel), free(tmp), free(gi);
    return rc;
}
