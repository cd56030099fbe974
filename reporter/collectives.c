/* Collectives across ranks (see collectives.h): every timed rsr_coll of
 * every model is sorted by (communicator, sequence number); each run is one
 * call seen on several ranks, from which its time, the waits, and who came
 * last follow. Rows are then summed per (op, communicator, bytes), and the
 * calls, in time order, are cut into parts to tell stragglers from chance. */
#include "reporter/collectives.h"
#include "reporter/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double rsr_busbw_factor(int op, int n)
{
    if (n < 1)
        n = 1;
    switch (op) {
    case RSR_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case RSR_COLL_ALLGATHER: case RSR_COLL_REDUCESCATTER: case RSR_COLL_ALLTOALL:
    case RSR_COLL_GATHER: case RSR_COLL_SCATTER:
        return (double)(n - 1) / n;
    default: return 1.0;
    }
}

struct entry {
    uint64_t comm;
    uint32_t seq;
    uint32_t model;
    const struct rsr_coll_tuple *c;
    const struct rsr_coll_key *k;
};

static int cmp_entry(const void *pa, const void *pb)
{
    const struct entry *a = pa, *b = pb;
    if (a->comm != b->comm)
        return a->comm < b->comm ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return (a->model > b->model) - (a->model < b->model);
}

struct row_acc {
    struct rsr_coll_row r;
    double total_us, wait_sum_us;
    uint64_t wait_n;
};

static int cmp_row(const void *pa, const void *pb)
{
    const struct row_acc *a = pa, *b = pb;
    if (a->total_us != b->total_us)
        return a->total_us > b->total_us ? -1 : 1;
    return (a->r.bytes > b->r.bytes) - (a->r.bytes < b->r.bytes);
}

static int cmp_straggler(const void *pa, const void *pb)
{
    const struct rsr_straggler *a = pa, *b = pb;
    if (a->caused_us != b->caused_us)
        return a->caused_us > b->caused_us ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* A call seen on two ranks or more, kept for the straggler test. */
struct seen {
    int64_t first;              /* the earliest arrival */
    int64_t end;                /* the latest end */
    double wait_us;             /* the others' mean wait for the last; 0 when none came last by 1 us */
    uint32_t last;              /* the model that came last (with wait_us > 0) */
    size_t a, b;                /* its entries in the sorted entries */
};

static int cmp_seen(const void *pa, const void *pb)
{
    const struct seen *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return (a->a > b->a) - (a->a < b->a);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Each model's excess (collectives.h): the waiting charged to it beyond its
 * fair share, as % of each part's time, its median over the parts into
 * excess[0..n) (NAN for all when the calls are too few to cut). Sorts s.
 * Returns the number of parts (0: too few calls), or -1 when out of memory. */
static int excess_by_part(const struct entry *e, struct seen *s, size_t ns, size_t n, double *excess)
{
    for (size_t i = 0; i < n; i++)
        excess[i] = NAN;
    size_t parts = ns / 2 < RSR_STRAGGLER_PARTS ? ns / 2 : RSR_STRAGGLER_PARTS;
    if (parts < RSR_STRAGGLER_MIN_PARTS)
        return 0;
    qsort(s, ns, sizeof *s, cmp_seen);
    double *pct = calloc(n * parts, sizeof *pct);
    unsigned char *timed = calloc(parts, 1);
    if (!pct || !timed) {
        free(pct), free(timed);
        return -1;
    }
    for (size_t p = 0; p < parts; p++) {
        size_t lo = p * ns / parts, hi = (p + 1) * ns / parts;
        /* a part lasts from its first call's first arrival to the next
         * part's, the last one to its calls' end */
        int64_t to = s[lo].end;
        if (hi < ns)
            to = s[hi].first;
        else
            for (size_t k = lo; k < hi; k++)
                if (s[k].end > to)
                    to = s[k].end;
        if (to <= s[lo].first)
            continue;
        timed[p] = 1;
        for (size_t k = lo; k < hi; k++) {
            if (s[k].wait_us <= 0)
                continue;
            pct[s[k].last * parts + p] += s[k].wait_us;
            size_t members = 0;
            for (size_t j = s[k].a; j < s[k].b; j++)
                members += j == s[k].a || e[j].model != e[j - 1].model;
            for (size_t j = s[k].a; j < s[k].b; j++)
                if (j == s[k].a || e[j].model != e[j - 1].model)
                    pct[e[j].model * parts + p] -= s[k].wait_us / (double)members;
        }
        double us = (double)(to - s[lo].first) / 1e3;
        for (size_t i = 0; i < n; i++)
            pct[i * parts + p] *= 100.0 / us;
    }
    double v[RSR_STRAGGLER_PARTS];
    for (size_t i = 0; i < n; i++) {
        size_t nv = 0;
        for (size_t p = 0; p < parts; p++)
            if (timed[p])
                v[nv++] = pct[i * parts + p];
        if (!nv)
            continue;
        qsort(v, nv, sizeof *v, cmp_double);
        excess[i] = nv % 2 ? v[nv / 2] : (v[nv / 2 - 1] + v[nv / 2]) / 2;
    }
    free(pct), free(timed);
    return (int)parts;
}

void rsr_coll_analysis_free(struct rsr_coll_analysis *a)
{
    free(a->rows);
    free(a->wait_us);
    free(a->coll_us);
    free(a->stragglers);
    memset(a, 0, sizeof *a);
}

int rsr_collectives_analyse(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *out)
{
    memset(out, 0, sizeof *out);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        if (!sm)
            return -1;
        ne += sm->n_colls;
    }
    struct entry *e = malloc((ne ? ne : 1) * sizeof *e);
    struct row_acc *rows = NULL;
    size_t nrows = 0, caprows = 0;
    double *caused = calloc(n ? n : 1, sizeof *caused);
    double *caused_op = calloc((n ? n : 1) * RSR_COLL_NOPS, sizeof *caused_op);
    uint64_t *last = calloc(n ? n : 1, sizeof *last), *calls = calloc(n ? n : 1, sizeof *calls);
    struct seen *seen = malloc((ne ? ne : 1) * sizeof *seen);
    double *excess = calloc(n ? n : 1, sizeof *excess);
    size_t nseen = 0;
    out->wait_us = calloc(n ? n : 1, sizeof *out->wait_us);
    out->coll_us = calloc(n ? n : 1, sizeof *out->coll_us);
    out->n_models = n;
    if (!e || !caused || !caused_op || !last || !calls || !seen || !excess || !out->wait_us || !out->coll_us)
        goto oom;
    ne = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *sm = models[i]->sum;
        for (size_t k = 0; k < sm->n_colls; k++) {
            const struct rsr_coll_tuple *c = &sm->colls[k];
            e[ne++] = (struct entry){ sm->keys[c->key].comm_id, c->seq, (uint32_t)i, c, &sm->keys[c->key] };
        }
    }
    qsort(e, ne, sizeof *e, cmp_entry);
    for (size_t a = 0; a < ne;) {
        size_t b = a + 1;
        /* a send or receive is a call of its own: its peers are not the
         * communicator's other ranks at the same sequence number */
        int p2p = e[a].k->op == RSR_COLL_SEND || e[a].k->op == RSR_COLL_RECV;
        while (!p2p && b < ne && e[b].comm == e[a].comm && e[b].seq == e[a].seq &&
               e[b].k->op != RSR_COLL_SEND && e[b].k->op != RSR_COLL_RECV)
            b++;
        const struct rsr_coll_key *c0 = e[a].k;
        int64_t arrive = e[a].c->start_ns, first = arrive, end_min = e[a].c->end_ns, end_max = e[a].c->end_ns;
        size_t last_j = a, members = 0;
        for (size_t j = a; j < b; j++) {
            if (j > a && e[j].model == e[j - 1].model)
                continue;
            members++;
            const struct rsr_coll_tuple *c = e[j].c;
            if (c->start_ns > arrive)
                arrive = c->start_ns, last_j = j;
            if (c->start_ns < first)
                first = c->start_ns;
            if (c->end_ns < end_min)
                end_min = c->end_ns;
            if (c->end_ns > end_max)
                end_max = c->end_ns;
        }
        /* the call's time: from the last arrival to the (earliest) end;
         * ends are nearly equal once aligned */
        int64_t dur = end_min - arrive;
        if (dur < 0)
            dur = end_max - arrive > 0 ? end_max - arrive : 0;
        double wait_sum = 0;
        for (size_t j = a; j < b; j++) {
            if (j > a && e[j].model == e[j - 1].model)
                continue;
            double w = (double)(arrive - e[j].c->start_ns) / 1e3;
            out->wait_us[e[j].model] += w;
            out->coll_us[e[j].model] += (double)dur / 1e3;
            if (members > 1)
                calls[e[j].model]++;
            wait_sum += w;
        }
        out->calls++;
        if (members > 1) {
            out->matched++;
            double mean_wait = wait_sum / (double)(members - 1);
            /* it came last only if it came last by more than 1 us */
            int64_t second = INT64_MIN;
            for (size_t j = a; j < b; j++)
                if (j != last_j && e[j].c->start_ns > second)
                    second = e[j].c->start_ns;
            struct seen *sn = &seen[nseen++];
            *sn = (struct seen){ first, end_max, 0, e[last_j].model, a, b };
            if (arrive - second > 1000) {
                uint32_t lm = e[last_j].model;
                last[lm]++;
                caused[lm] += mean_wait;
                caused_op[lm * RSR_COLL_NOPS + (c0->op < RSR_COLL_NOPS ? c0->op : 0)] += mean_wait;
                sn->wait_us = mean_wait;
            }
        }
        /* row: (op, comm, bytes) */
        int32_t ranks = c0->group_size > 0 ? c0->group_size : (int32_t)members;
        size_t r = 0;
        while (r < nrows && !(rows[r].r.op == c0->op && rows[r].r.comm_id == c0->comm_id &&
                              rows[r].r.bytes == c0->bytes))
            r++;
        if (r == nrows) {
            if (nrows == caprows) {
                size_t nc = caprows ? caprows * 2 : 16;
                void *p = realloc(rows, nc * sizeof *rows);
                if (!p)
                    goto oom;
                rows = p;
                caprows = nc;
            }
            memset(&rows[nrows], 0, sizeof rows[nrows]);
            rows[nrows].r.op = c0->op;
            rows[nrows].r.comm_id = c0->comm_id;
            rows[nrows].r.bytes = c0->bytes;
            rows[nrows].r.ranks = ranks;
            nrows++;
        }
        rows[r].r.count++;
        rows[r].total_us += (double)dur / 1e3;
        rows[r].wait_sum_us += wait_sum;
        rows[r].wait_n += members;
        a = b;
    }
    for (size_t r = 0; r < nrows; r++) {
        struct rsr_coll_row *x = &rows[r].r;
        x->mean_us = x->count ? rows[r].total_us / (double)x->count : 0;
        x->mean_wait_us = rows[r].wait_n ? rows[r].wait_sum_us / (double)rows[r].wait_n : 0;
        /* bytes / us = MB/s; / 1e3 = GB/s */
        x->algbw_gbs = x->mean_us > 0 ? (double)x->bytes / x->mean_us / 1e3 : 0;
        x->busbw_gbs = x->algbw_gbs * rsr_busbw_factor(x->op, x->ranks);
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof *rows, cmp_row);
    out->rows = malloc((nrows ? nrows : 1) * sizeof *out->rows);
    out->stragglers = calloc(n ? n : 1, sizeof *out->stragglers);
    if (!out->rows || !out->stragglers)
        goto oom;
    for (size_t r = 0; r < nrows; r++)
        out->rows[r] = rows[r].r;
    out->n_rows = nrows;
    int parts = excess_by_part(e, seen, nseen, n, excess);
    if (parts < 0)
        goto oom;
    out->straggler_parts = parts;
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        total += caused[i];
        if (!isnan(excess[i]) && excess[i] > out->max_excess_pct)
            out->max_excess_pct = excess[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (caused[i] <= 0 || isnan(excess[i]) || excess[i] < RSR_STRAGGLER_MIN_PCT)
            continue;
        struct rsr_straggler *s = &out->stragglers[out->n_stragglers++];
        s->rank = models[i]->rank;
        s->model = i;
        s->caused_us = caused[i];
        s->score = total > 0 ? caused[i] / total : 0;
        s->last = last[i];
        s->calls = calls[i];
        s->excess_pct = excess[i];
        int worst = 0;
        for (int op = 0; op < RSR_COLL_NOPS; op++)
            if (caused_op[i * RSR_COLL_NOPS + op] > caused_op[i * RSR_COLL_NOPS + worst])
                worst = op;
        s->worst_op = (uint8_t)worst;
        snprintf(s->evidence, sizeof s->evidence,
                 "arrived last in %llu of %llu collectives; the other ranks waited %.3f ms for it "
                 "(%.1f us per call it was last), mostly in %s; beyond an equal rank's share, "
                 "%.1f%% of their time (median of %d parts of the job)",
                 (unsigned long long)s->last, (unsigned long long)s->calls, s->caused_us / 1e3,
                 s->last ? s->caused_us / (double)s->last : 0, rsr_coll_op_name(worst), s->excess_pct, parts);
    }
    if (out->n_stragglers > 1)
        qsort(out->stragglers, out->n_stragglers, sizeof *out->stragglers, cmp_straggler);
    free(e), free(rows), free(caused), free(caused_op), free(last), free(calls), free(seen), free(excess);
    return 0;
oom:
    free(e), free(rows), free(caused), free(caused_op), free(last), free(calls), free(seen), free(excess);
    rsr_coll_analysis_free(out);
    return -1;
}
