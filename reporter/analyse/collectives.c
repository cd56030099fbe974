/* Collectives across ranks (see collectives.h): the models' collective
 * tuples (an NCCL group's calls on a communicator folded into one) are merged in (communicator, sequence number) order (summary.h),
 * never gathered into one array; each run is one call seen on several ranks, from which its time, the waits, and who came
 * last follow. Rows are then summed per (op, communicator, bytes), and the
 * calls, in time order, are cut into parts to tell stragglers from chance. */
#include "reporter/analyse/collectives.h"
#include "reporter/analyse/critpath.h"
#include "reporter/load/summary.h"
#include "reporter/base/order.h"

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

/* One call: a run e[a..b) of entries with one (communicator, seq), a
 * model's repeats counted once (as the run's members). */
struct call {
    size_t members;
    int64_t arrive, first, end_max, dur;
    uint32_t last;              /* the model that came last */
    double wait_sum;            /* the members' waits for it */
    double wait_us;             /* the others' mean wait, when it came last by more than 1 us; else 0 */
    double last_hidden;         /* the share of the last rank's call that its compute hid (call_of) */
};

static int p2p(const struct rsr_coll_key *k)
{
    return k->op == RSR_COLL_SEND || k->op == RSR_COLL_RECV;
}

/* A pipeline's call: a send, a receive, or a group of them. Their waits
 * are for the stage before or after, not for a late peer (the pipeline's
 * bubble, groups.h), never a straggler's doing. */
static int pipe_call(const struct rsr_coll_key *k)
{
    return p2p(k) || k->op == RSR_COLL_SENDRECV;
}

/* Whether x and y are the two ends of one transfer: a send and a receive
 * of the same bytes, on two processes, each the other's peer. */
static int p2p_pair(const struct rsr_coll_entry *x, const struct rsr_coll_entry *y)
{
    const struct rsr_coll_key *a = x->k, *b = y->k;
    return x->model != y->model && a->op != b->op && a->bytes == b->bytes && a->peer >= 0 && b->peer >= 0 &&
           a->peer == b->rank && b->peer == a->rank;
}

/* A lone send's or receive's transfer: (sender, receiver) ranks in the
 * communicator. */
static int64_t transfer_of(const struct rsr_coll_entry *x)
{
    int send = x->k->op == RSR_COLL_SEND;
    int64_t from = send ? x->k->rank : x->k->peer, to = send ? x->k->peer : x->k->rank;
    return from * 65536 + to;
}

static int cmp_lone(const void *pa, const void *pb)
{
    const struct rsr_coll_entry *a = pa, *b = pb;
    int64_t x = transfer_of(a), y = transfer_of(b);
    if (x != y)
        return x < y ? -1 : 1;
    return (a->model > b->model) - (a->model < b->model);
}

/* A merge group's entries in the order its calls are read: the collectives
 * (and groups) as the merge gives them, then the lone sends and receives
 * by transfer, so that a send sits beside its receive: the agent numbers
 * them per peer and direction, so a transfer's two ends share their
 * (communicator, number) with other pairs' transfers. NULL when out of
 * memory. */
static const struct rsr_coll_entry *in_calls(const struct rsr_coll_entry *e, long ng, struct rsr_coll_entry **buf,
                                             size_t *cap)
{
    long lone = 0;
    for (long j = 0; j < ng; j++)
        lone += p2p(e[j].k);
    if (lone < 2)
        return e;
    if ((size_t)ng > *cap) {
        size_t c = (size_t)ng * 2;
        struct rsr_coll_entry *p = realloc(*buf, c * sizeof *p);
        if (!p)
            return NULL;
        *buf = p, *cap = c;
    }
    long w = 0;
    for (long j = 0; j < ng; j++)
        if (!p2p(e[j].k))
            (*buf)[w++] = e[j];
    for (long j = 0; j < ng; j++)
        if (p2p(e[j].k))
            (*buf)[w++] = e[j];
    qsort(*buf + (ng - lone), (size_t)lone, sizeof **buf, cmp_lone);
    return *buf;
}

/* The end of the run that starts at a in a merge group e[0..ng) (in_calls'
 * order): a send or receive is a call of its own, or with its other end
 * beside it (each the other's peer) one call of two. */
static long run_end(const struct rsr_coll_entry *e, long a, long ng)
{
    if (p2p(e[a].k))
        return a + 1 < ng && p2p(e[a + 1].k) && p2p_pair(&e[a], &e[a + 1]) ? a + 2 : a + 1;
    long b = a + 1;
    while (b < ng && !p2p(e[b].k))
        b++;
    return b;
}

static void call_of(const struct rsr_coll_entry *e, long a, long b, struct call *c)
{
    int64_t arrive = e[a].t.start_ns, first = arrive, end_min = e[a].t.end_ns, end_max = e[a].t.end_ns;
    long last_j = a;
    size_t members = 0;
    for (long j = a; j < b; j++) {
        if (j > a && e[j].model == e[j - 1].model)
            continue;
        members++;
        const struct rsr_coll_tuple *t = &e[j].t;
        if (t->start_ns > arrive)
            arrive = t->start_ns, last_j = j;
        if (t->start_ns < first)
            first = t->start_ns;
        if (t->end_ns < end_min)
            end_min = t->end_ns;
        if (t->end_ns > end_max)
            end_max = t->end_ns;
    }
    /* the call's time: from the last arrival to the (earliest) end;
     * ends are nearly equal once aligned. Sends and receives tie each rank
     * to its peers alone (a ring: its neighbours), so a rank far from the
     * last one may be done before it came: the last rank's own time, its
     * peers all there, is the transfer. */
    int64_t dur = pipe_call(e[a].k) ? e[last_j].t.end_ns - arrive : end_min - arrive;
    if (dur < 0)
        dur = end_max - arrive > 0 ? end_max - arrive : 0;
    if (e[a].t.seq & RSR_SEQ_REPLAYED) {
        /* replayed in a graph: each rank's time is its share of its launch
         * (graphs.h), ends and starts estimates; the shortest share, of the
         * rank that waited least, stands for the transfer */
        dur = INT64_MAX;
        for (long j = a; j < b; j++)
            if (e[j].t.end_ns - e[j].t.start_ns < dur)
                dur = e[j].t.end_ns - e[j].t.start_ns;
    }
    double wait_sum = 0;
    for (long j = a; j < b; j++)
        if (j == a || e[j].model != e[j - 1].model)
            wait_sum += (double)(arrive - e[j].t.start_ns) / 1e3;
    /* The last rank's compute during the transfer: of the ranks that came
     * last together (within 1 us; ranks freed by the previous collective's
     * end arrive at once), the one that computed most sets the pace. */
    double last_hidden = 0;
    for (long j = a; j < b; j++) {
        const struct rsr_coll_tuple *t = &e[j].t;
        if ((j > a && e[j].model == e[j - 1].model) || arrive - t->start_ns > 1000 || t->end_ns <= t->start_ns)
            continue;
        double h = (double)rsr_coll_hidden_ns(t, t->end_ns) / (double)(t->end_ns - t->start_ns);
        if (h > last_hidden)
            last_hidden = h;
    }
    *c = (struct call){ members, arrive, first, end_max, dur, e[last_j].model, wait_sum, 0, last_hidden };
    if (members > 1) {
        /* it came last only if it came last by more than 1 us */
        int64_t second = INT64_MIN;
        for (long j = a; j < b; j++)
            if (j != last_j && e[j].t.start_ns > second)
                second = e[j].t.start_ns;
        if (arrive - second > 1000)
            c->wait_us = wait_sum / (double)(members - 1);
    }
}

/* One rank's part of a call: its wait for the last rank, of that what its
 * compute did not hide, its transfer (from the last arrival to its end),
 * and the transfer its compute left bare beyond what the last rank's left
 * bare (hidden where it matters: the last rank computes meanwhile). */
struct member {
    int64_t wait, exposed_wait, transfer;
    double shadowed;
};

static struct member member_of(const struct call *c, const struct rsr_coll_tuple *t)
{
    int64_t w = c->arrive - t->start_ns, hid = rsr_coll_hidden_ns(t, c->arrive);
    int64_t x = t->end_ns > c->arrive ? t->end_ns - c->arrive : 0;
    double bare = (double)(x - (rsr_coll_hidden_ns(t, t->end_ns) - hid));
    double lost = (double)x * (1 - c->last_hidden);
    return (struct member){ w, w > hid ? w - hid : 0, x, bare > lost ? bare - lost : 0 };
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
    size_t id;                  /* calls seen on two ranks or more before it */
};

static int cmp_seen(const void *pa, const void *pb)
{
    const struct seen *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Each model's excess (collectives.h): the waiting charged to it beyond its
 * fair share, as % of each part's time, its median over the parts into
 * excess[0..n) (NAN for all when the calls are too few to cut). Sorts s,
 * then merges the models' tuples again for each call's members (they are
 * not kept). Returns the number of parts (0: too few calls), or -1 when out
 * of memory or a spill read failed. */
static int excess_by_part(struct rsr_model *const *models, struct seen *s, size_t ns, size_t n, double *excess)
{
    for (size_t i = 0; i < n; i++)
        excess[i] = NAN;
    size_t parts = ns / 2 < RSR_STRAGGLER_PARTS ? ns / 2 : RSR_STRAGGLER_PARTS;
    if (parts < RSR_STRAGGLER_MIN_PARTS)
        return 0;
    qsort(s, ns, sizeof *s, cmp_seen);
    double *pct = calloc(n * parts, sizeof *pct);
    unsigned char *part_of = malloc(ns);
    double us[RSR_STRAGGLER_PARTS] = { 0 };
    struct rsr_coll_merge mg;
    struct rsr_coll_entry *order = NULL;
    size_t cap_order = 0;
    int merged = 0, rc = -1;
    if (!pct || !part_of)
        goto done;
    memset(part_of, 0xff, ns);
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
        us[p] = (double)(to - s[lo].first) / 1e3;
        for (size_t k = lo; k < hi; k++)
            part_of[s[k].id] = (unsigned char)p;
    }
    if (rsr_coll_merge_open(&mg, models, n) != 0)
        goto done;
    merged = 1;
    const struct rsr_coll_entry *e;
    long ng;
    size_t id = 0;
    while ((ng = rsr_coll_merge_next(&mg, &e)) > 0) {
        if (!(e = in_calls(e, ng, &order, &cap_order)))
            goto done;
        for (long a = 0, b; a < ng; a = b) {
            b = run_end(e, a, ng);
            struct call c;
            call_of(e, a, b, &c);
            if (c.members < 2 || pipe_call(e[a].k))
                continue;
            unsigned p = part_of[id++];
            if (p == 0xff || c.wait_us <= 0)
                continue;
            pct[c.last * parts + p] += c.wait_us;
            for (long j = a; j < b; j++)
                if (j == a || e[j].model != e[j - 1].model)
                    pct[e[j].model * parts + p] -= c.wait_us / (double)c.members;
        }
    }
    if (ng < 0)
        goto done;
    for (size_t p = 0; p < parts; p++)
        for (size_t i = 0; i < n && us[p] > 0; i++)
            pct[i * parts + p] *= 100.0 / us[p];
    double v[RSR_STRAGGLER_PARTS];
    for (size_t i = 0; i < n; i++) {
        size_t nv = 0;
        for (size_t p = 0; p < parts; p++)
            if (us[p] > 0)
                v[nv++] = pct[i * parts + p];
        if (!nv)
            continue;
        qsort(v, nv, sizeof *v, rsr_cmp_double);
        excess[i] = nv % 2 ? v[nv / 2] : (v[nv / 2 - 1] + v[nv / 2]) / 2;
    }
    rc = (int)parts;
done:
    if (merged)
        rsr_coll_merge_close(&mg);
    free(pct), free(part_of), free(order);
    return rc;
}

const char *rsr_why_kind_name(int kind)
{
#define RSR_WHY_NAME(id, name) name,
    static const char *const names[] = { RSR_WHY_KINDS(RSR_WHY_NAME) };
#undef RSR_WHY_NAME
    return kind >= 0 && kind < RSR_WHY_NKINDS ? names[kind] : "unknown";
}

static double median_of(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, rsr_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One process's figures a straggler is compared on (collectives.h), us. */
static void why_figures(struct rsr_model *m, double *v)
{
    const struct rsr_summary *sm = rsr_model_summary(m);
    int64_t ckpt = 0;
    for (size_t b = 0; b < sm->n_bursts; b++)
        ckpt += sm->bursts[b].end_ns - sm->bursts[b].start_ns;
    int64_t io = sm->end_counters.io - sm->loading.read_ns - ckpt;
    v[RSR_WHY_KERNELS] = (double)sm->gpu.compute_ns / 1e3;
    v[RSR_WHY_DATA_LOADING] = (double)(sm->loading.read_idle_ns + (int64_t)m->waits.cause_ns[RSR_CAUSE_DATALOADER]) / 1e3;
    v[RSR_WHY_CHECKPOINT] = (double)ckpt / 1e3;
    v[RSR_WHY_IO] = (double)(io > 0 ? io : 0) / 1e3;
    v[RSR_WHY_LAUNCH_GAPS] = (double)sm->gpu.kernel_wait_ns / 1e3;
    v[RSR_WHY_HOST_COMPUTE] = (double)sm->gpu.host_wait_ns / 1e3;
    v[RSR_WHY_UNKNOWN] = 0;
}

static int cmp_why_kernel(const void *pa, const void *pb)
{
    const struct rsr_why_kernel *a = pa, *b = pb;
    return (a->excess_us < b->excess_us) - (a->excess_us > b->excess_us);
}

/* The compute kernels whose mean run is slower on model si than the
 * others' median, the largest excess first, into w->kernels. */
static int why_kernels(struct rsr_model *const *models, size_t n, size_t si, struct rsr_straggler_why *w)
{
    const struct rsr_kernel_summary *ks = &rsr_model_summary(models[si])->kernels;
    double *means = malloc((n ? n : 1) * sizeof *means), *others = malloc((n ? n : 1) * sizeof *others);
    struct rsr_why_kernel cand[RSR_WHY_MAX_KERNELS + 1];
    size_t nc = 0;
    int rc = -1;
    if (!means || !others)
        goto done;
    for (size_t k = 0; k < ks->n; k++) {
        const struct rsr_kernel_stat *st = &ks->stats[k];
        if (st->cls != RSR_GPU_COMPUTE || !st->count)
            continue;
        const char *name = rsr_model_str(models[si], st->name);
        size_t no = 0;
        for (size_t i = 0; i < n; i++) {
            means[i] = NAN;
            const struct rsr_kernel_summary *ko = &rsr_model_summary(models[i])->kernels;
            for (size_t q = 0; q < ko->n; q++)
                if (ko->stats[q].count && !strcmp(rsr_model_str(models[i], ko->stats[q].name), name)) {
                    means[i] = ko->stats[q].mean_ns / 1e3;
                    break;
                }
            if (i != si && !isnan(means[i]))
                others[no++] = means[i];
        }
        if (!no)
            continue;
        double med = median_of(others, no), mine = st->mean_ns / 1e3;
        if (mine < RSR_WHY_SLOWER * med)
            continue;
        struct rsr_why_kernel *x = &cand[nc];
        snprintf(x->name, sizeof x->name, "%s", name);
        x->straggler_us = mine;
        x->others_us = med;
        x->excess_us = (mine - med) * (double)st->count;
        x->mean_us = malloc(n * sizeof *x->mean_us);
        if (!x->mean_us)
            goto done;
        memcpy(x->mean_us, means, n * sizeof *means);
        nc++;
        qsort(cand, nc, sizeof *cand, cmp_why_kernel);
        if (nc > RSR_WHY_MAX_KERNELS)
            free(cand[--nc].mean_us);
    }
    rc = 0;
done:
    memcpy(w->kernels, cand, nc * sizeof *cand);
    w->n_kernels = nc;
    free(means), free(others);
    return rc;
}

/* A straggler late by its kernels: the slower ones into its why, the
 * first three named after the detail's first o bytes. 0, or -1 when out of
 * memory. */
static int name_kernels(struct rsr_model *const *models, size_t n, struct rsr_straggler *s, size_t o)
{
    struct rsr_straggler_why *w = &s->why;
    if (why_kernels(models, n, s->model, w) != 0)
        return -1;
    for (size_t k = 0; k < w->n_kernels && k < 3 && o < sizeof w->detail; k++)
        o += (size_t)snprintf(w->detail + o, sizeof w->detail - o, "%s%s %.1f us against %.1f us (x%.2f)",
                              k ? ", " : "; slower: ", w->kernels[k].name, w->kernels[k].straggler_us,
                              w->kernels[k].others_us, w->kernels[k].straggler_us / w->kernels[k].others_us);
    return 0;
}

/* Why straggler s is late (collectives.h). Returns 0, or -1 when out of
 * memory. */
static int straggler_why(struct rsr_model *const *models, size_t n, struct rsr_straggler *s)
{
    struct rsr_straggler_why *w = &s->why;
    double mine[RSR_WHY_NKINDS], med[RSR_WHY_NKINDS], d[RSR_WHY_NKINDS];
    double *col = malloc((n ? n : 1) * RSR_WHY_NKINDS * sizeof *col), *one = malloc((n ? n : 1) * sizeof *one);
    size_t no = 0;
    if (!col || !one) {
        free(col), free(one);
        return -1;
    }
    why_figures(models[s->model], mine);
    for (size_t i = 0; i < n; i++)
        if (i != s->model && models[i]->rank >= 0 && rsr_model_summary(models[i])->gpu.span_ns > 0)
            why_figures(models[i], col + RSR_WHY_NKINDS * no++);
    for (int k = 0; k < RSR_WHY_NKINDS; k++) {
        for (size_t i = 0; i < no; i++)
            one[i] = col[RSR_WHY_NKINDS * i + k];
        med[k] = median_of(one, no);
        d[k] = mine[k] - med[k] > 0 ? mine[k] - med[k] : 0;
    }
    free(col), free(one);
    /* the GPU idle waiting for launches that data loading, a checkpoint or
     * file I/O do not account for */
    d[RSR_WHY_HOST_COMPUTE] -= d[RSR_WHY_DATA_LOADING] + d[RSR_WHY_CHECKPOINT] + d[RSR_WHY_IO];
    if (d[RSR_WHY_HOST_COMPUTE] < 0)
        d[RSR_WHY_HOST_COMPUTE] = 0;
    int best = RSR_WHY_UNKNOWN;
    for (int k = 0; k < RSR_WHY_UNKNOWN; k++)
        if (d[k] > (best == RSR_WHY_UNKNOWN ? 0 : d[best]))
            best = k;
    double share = s->caused_us > 0 ? 100.0 * d[best] / s->caused_us : 0;
    if (best != RSR_WHY_UNKNOWN && share < RSR_WHY_MIN_SHARE)
        best = RSR_WHY_UNKNOWN;
    w->kind = (uint8_t)best;
    w->excess_us = best == RSR_WHY_UNKNOWN ? 0 : d[best];
    w->share_pct = best == RSR_WHY_UNKNOWN ? 0 : share > 100 ? 100 : share;
    static const char *const what[] = {
        [RSR_WHY_KERNELS] = "its compute kernels ran",
        [RSR_WHY_DATA_LOADING] = "it loaded data (reads while its GPU idled, DataLoader waits)",
        [RSR_WHY_HOST_COMPUTE] = "its GPU waited for the host's launches (not data loading, checkpoints or file I/O)",
        [RSR_WHY_IO] = "it spent in file I/O",
        [RSR_WHY_CHECKPOINT] = "it spent writing checkpoints",
        [RSR_WHY_LAUNCH_GAPS] = "its GPU sat in short gaps between kernels",
    };
    size_t o = 0;
    if (best == RSR_WHY_UNKNOWN)
        o += (size_t)snprintf(w->detail, sizeof w->detail,
                              "nothing it did explains a quarter of the %.3f ms the others waited for it: "
                              "not longer kernels, data loading, host work, file I/O, checkpoints or launch gaps",
                              s->caused_us / 1e3);
    else
        o += (size_t)snprintf(w->detail, sizeof w->detail,
                              "%s %.3f ms longer than the other ranks' median (%.3f ms against %.3f ms): "
                              "%.0f%% of the %.3f ms the others waited for it",
                              what[best], d[best] / 1e3, mine[best] / 1e3, med[best] / 1e3, w->share_pct,
                              s->caused_us / 1e3);
    return best == RSR_WHY_KERNELS ? name_kernels(models, n, s, o) : 0;
}

/* The why a rank's part of the critical path gives (critpath.h). */
static int why_of_part(int part)
{
    switch (part) {
    case RSR_CP_IMBALANCE: return RSR_WHY_KERNELS;
    case RSR_CP_DATA: return RSR_WHY_DATA_LOADING;
    case RSR_CP_FILE_IO: return RSR_WHY_IO;
    case RSR_CP_CHECKPOINT: return RSR_WHY_CHECKPOINT;
    case RSR_CP_SLEEP: case RSR_CP_LOCK: case RSR_CP_WAIT: case RSR_CP_SYNC: case RSR_CP_HOST:
        return RSR_WHY_HOST_COMPUTE;
    default: return RSR_WHY_UNKNOWN;
    }
}

int rsr_coll_why_from_path(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *a,
                           const struct rsr_critpath *cp)
{
    if (!cp->have || cp->per_step_ms <= 0)
        return 0;
    for (size_t i = 0; i < a->n_stragglers; i++) {
        struct rsr_straggler *s = &a->stragglers[i];
        int best = rsr_critpath_rank_cause(cp, s->rank);
        if (best < 0)
            continue;
        struct rsr_straggler_why *w = &s->why;
        for (size_t k = 0; k < w->n_kernels; k++)
            free(w->kernels[k].mean_us);
        w->n_kernels = 0;
        w->kind = (uint8_t)why_of_part(best);
        w->excess_us = cp->gain_ms[best] * (double)cp->steps * 1e3;
        w->share_pct = s->caused_us > 0 ? fmin(100, 100 * w->excess_us / s->caused_us) : 0;
        size_t o = (size_t)snprintf(w->detail, sizeof w->detail,
                                    "on the steps' critical path, %s on this rank: %.3f ms a step (%.0f%% of it "
                                    "on this rank); without it the steps would take about %.3f ms instead of %.3f ms",
                                    rsr_cp_part_text(best), cp->gain_ms[best], 100 * cp->gain_rank_share[best],
                                    cp->per_step_ms - cp->gain_ms[best], cp->per_step_ms);
        if (w->kind == RSR_WHY_KERNELS && name_kernels(models, n, s, o) != 0)
            return -1;
    }
    return 0;
}

void rsr_coll_split_gpu(const struct rsr_coll_analysis *a, size_t i, struct rsr_gpu_breakdown *b)
{
    if (i >= a->n_models || !b->span_ns)
        return;
    b->sync_wait_ns = (int64_t)(a->wait_us[i] * 1e3 + 0.5);
    b->exposed_sync_wait_ns = (int64_t)(a->exposed_wait_us[i] * 1e3 + 0.5);
    b->transfer_ns = (int64_t)(a->transfer_us[i] * 1e3 + 0.5);
    /* the wait, and the transfer the last rank's compute hid, were counted
     * in the communication this rank's compute did not hide */
    if (b->exposed_sync_wait_ns > b->exposed_comm_ns)
        b->exposed_sync_wait_ns = b->exposed_comm_ns;
    b->exposed_comm_ns -= b->exposed_sync_wait_ns;
    int64_t shadowed = (int64_t)(a->shadowed_us[i] * 1e3 + 0.5);
    b->exposed_comm_ns -= shadowed < b->exposed_comm_ns ? shadowed : b->exposed_comm_ns;
    double span = (double)b->span_ns;
    b->exposed_comm_pct = 100.0 * (double)b->exposed_comm_ns / span;
    b->sync_wait_pct = 100.0 * (double)b->sync_wait_ns / span;
    b->exposed_sync_wait_pct = 100.0 * (double)b->exposed_sync_wait_ns / span;
    b->transfer_pct = 100.0 * (double)b->transfer_ns / span;
}

void rsr_coll_analysis_free(struct rsr_coll_analysis *a)
{
    free(a->rows);
    free(a->wait_us);
    free(a->coll_us);
    free(a->exposed_wait_us);
    free(a->transfer_us);
    free(a->shadowed_us);
    free(a->p2p_wait_us);
    free(a->p2p_calls);
    free(a->p2p_step_wait_us);
    free(a->p2p_step_calls);
    free(a->p2p_stage_steps);
    for (size_t i = 0; a->comm_time && i < a->n_models; i++)
        free(a->comm_time[i]);
    free(a->comm_time);
    free(a->n_comm_time);
    for (size_t i = 0; a->stragglers && i < a->n_stragglers; i++)
        for (size_t k = 0; k < a->stragglers[i].why.n_kernels; k++)
            free(a->stragglers[i].why.kernels[k].mean_us);
    free(a->stragglers);
    memset(a, 0, sizeof *a);
}

/* Adds model i's part of call c (its entry x) to its time in x's
 * communicator. 0, or -1 when out of memory. */
static int comm_time_add(struct rsr_coll_analysis *a, uint32_t i, const struct call *c,
                         const struct rsr_coll_entry *x)
{
    struct rsr_comm_time *v = a->comm_time[i];
    size_t n = a->n_comm_time[i], k = 0;
    while (k < n && v[k].comm_id != x->k->comm_id)
        k++;
    if (k == n) {
        if ((n & (n - 1)) == 0) {       /* 0, 1, 2, 4...: room for twice as many */
            void *p = realloc(v, (n ? 2 * n : 1) * sizeof *v);
            if (!p)
                return -1;
            a->comm_time[i] = v = p;
        }
        v[n] = (struct rsr_comm_time){ x->k->comm_id, 0, 0, 0, 0 };
        a->n_comm_time[i] = ++n;
    }
    const struct rsr_coll_tuple *t = &x->t;
    int64_t arrive = c->arrive > t->start_ns ? c->arrive : t->start_ns;
    v[k].wait_us += (double)(arrive - t->start_ns) / 1e3;
    if (t->end_ns > arrive) {
        v[k].transfer_us += (double)(t->end_ns - arrive) / 1e3;
        v[k].hidden_us += (double)(rsr_coll_hidden_ns(t, t->end_ns) - rsr_coll_hidden_ns(t, arrive)) / 1e3;
    }
    return 0;
}

int rsr_collectives_analyse(struct rsr_model *const *models, size_t n, struct rsr_coll_analysis *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        if (!rsr_model_summary(models[i]))
            return -1;
    struct rsr_coll_merge mg;
    if (rsr_coll_merge_open(&mg, models, n) != 0)
        return -1;
    struct row_acc *rows = NULL;
    size_t nrows = 0, caprows = 0;
    double *caused = calloc(n ? n : 1, sizeof *caused);
    double *caused_op = calloc((n ? n : 1) * RSR_COLL_NOPS, sizeof *caused_op);
    uint64_t *last = calloc(n ? n : 1, sizeof *last), *calls = calloc(n ? n : 1, sizeof *calls);
    struct seen *seen = NULL;
    double *excess = calloc(n ? n : 1, sizeof *excess);
    size_t nseen = 0, capseen = 0, cap_order = 0;
    struct rsr_coll_entry *order = NULL;
    out->wait_us = calloc(n ? n : 1, sizeof *out->wait_us);
    out->coll_us = calloc(n ? n : 1, sizeof *out->coll_us);
    out->exposed_wait_us = calloc(n ? n : 1, sizeof *out->exposed_wait_us);
    out->transfer_us = calloc(n ? n : 1, sizeof *out->transfer_us);
    out->shadowed_us = calloc(n ? n : 1, sizeof *out->shadowed_us);
    out->p2p_wait_us = calloc(n ? n : 1, sizeof *out->p2p_wait_us);
    out->p2p_calls = calloc(n ? n : 1, sizeof *out->p2p_calls);
    out->comm_time = calloc(n ? n : 1, sizeof *out->comm_time);
    out->n_comm_time = calloc(n ? n : 1, sizeof *out->n_comm_time);
    out->n_models = n;
    if (!caused || !caused_op || !last || !calls || !excess || !out->wait_us || !out->coll_us ||
        !out->exposed_wait_us || !out->transfer_us || !out->shadowed_us || !out->p2p_wait_us || !out->p2p_calls ||
        !out->comm_time || !out->n_comm_time)
        goto oom;
    const struct rsr_coll_entry *e;
    long ng;
    while ((ng = rsr_coll_merge_next(&mg, &e)) > 0) {
        if (!(e = in_calls(e, ng, &order, &cap_order)))
            goto oom;
        for (long a = 0, b; a < ng; a = b) {
            b = run_end(e, a, ng);
            const struct rsr_coll_key *c0 = e[a].k;
            struct call c;
            call_of(e, a, b, &c);
            for (long j = a; j < b; j++) {
                if (j > a && e[j].model == e[j - 1].model)
                    continue;
                struct member m = member_of(&c, &e[j].t);
                out->wait_us[e[j].model] += (double)m.wait / 1e3;
                out->exposed_wait_us[e[j].model] += (double)m.exposed_wait / 1e3;
                out->transfer_us[e[j].model] += (double)m.transfer / 1e3;
                out->shadowed_us[e[j].model] += m.shadowed / 1e3;
                if (comm_time_add(out, e[j].model, &c, &e[j]) != 0)
                    goto oom;
                if (pipe_call(e[j].k)) {
                    out->p2p_wait_us[e[j].model] += (double)m.wait / 1e3;
                    out->p2p_calls[e[j].model] += e[j].k->calls ? e[j].k->calls : 1;
                }
                out->coll_us[e[j].model] += (double)c.dur / 1e3;
                if (c.members > 1)
                    calls[e[j].model]++;
            }
            out->calls++;
            if (c.members > 1)
                out->matched++;
            if (c.members > 1 && !pipe_call(c0)) {
                if (nseen == capseen) {
                    size_t nc = capseen ? capseen * 2 : 1024;
                    void *p = realloc(seen, nc * sizeof *seen);
                    if (!p)
                        goto oom;
                    seen = p;
                    capseen = nc;
                }
                seen[nseen] = (struct seen){ c.first, c.end_max, c.wait_us, c.last, nseen };
                nseen++;
                if (c.wait_us > 0) {
                    last[c.last]++;
                    caused[c.last] += c.wait_us;
                    for (size_t k = 0; k < out->n_comm_time[c.last]; k++)
                        if (out->comm_time[c.last][k].comm_id == c0->comm_id)
                            out->comm_time[c.last][k].caused_us += c.wait_us;
                    caused_op[c.last * RSR_COLL_NOPS + (c0->op < RSR_COLL_NOPS ? c0->op : 0)] += c.wait_us;
                }
            }
            /* row: (op, comm, bytes, calls per group) */
            int32_t ranks = c0->group_size > 0 ? c0->group_size : (int32_t)c.members;
            size_t r = 0;
            while (r < nrows && !(rows[r].r.op == c0->op && rows[r].r.comm_id == c0->comm_id &&
                                  rows[r].r.bytes == c0->bytes && rows[r].r.group_calls == c0->calls))
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
                rows[nrows].r.group_calls = c0->calls;
                nrows++;
            }
            rows[r].r.count++;
            rows[r].total_us += (double)c.dur / 1e3;
            rows[r].wait_sum_us += c.wait_sum;
            rows[r].wait_n += c.members;
        }
    }
    if (ng < 0)
        goto oom;
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
    int parts = excess_by_part(models, seen, nseen, n, excess);
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
        /* a rank that waited for a pipeline stage comes late by up to that
         * much through no fault of its own (the replica behind a slow
         * stage comes last to its data-parallel all-reduce): named only
         * when what the others waited for it beyond that delay is at least
         * the delay itself (host noise moves both) */
        if (caused[i] - out->p2p_wait_us[i] < out->p2p_wait_us[i])
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
    for (size_t k = 0; k < out->n_stragglers; k++)
        if (straggler_why(models, n, &out->stragglers[k]) != 0)
            goto oom;
    rsr_coll_merge_close(&mg);
    free(rows), free(caused), free(caused_op), free(last), free(calls), free(seen), free(excess), free(order);
    return 0;
oom:
    rsr_coll_merge_close(&mg);
    free(rows), free(caused), free(caused_op), free(last), free(calls), free(seen), free(excess), free(order);
    rsr_coll_analysis_free(out);
    return -1;
}

int rsr_coll_step_waits(struct rsr_model *const *models, size_t n, struct rsr_steps *st, struct rsr_coll_analysis *an)
{
    if (!st->n)
        return 0;
    size_t a_n = an->n_models;
    int oom = 0;
    struct rsr_coll_entry *order = NULL;
    size_t cap_order = 0;
    free(an->p2p_step_wait_us);
    free(an->p2p_step_calls);
    an->p2p_step_wait_us = calloc(a_n ? a_n : 1, sizeof *an->p2p_step_wait_us);
    an->p2p_step_calls = calloc(a_n ? a_n : 1, sizeof *an->p2p_step_calls);
    free(an->p2p_stage_steps);
    an->p2p_stage_steps = NULL;
    an->p2p_stages = 0;
    an->p2p_nsteps = st->n;
    if (!an->p2p_step_wait_us || !an->p2p_step_calls)
        return -1;
    double *wait = calloc(st->n, sizeof *wait), *shadow = calloc(st->n, sizeof *shadow);
    /* per step, the call the others waited longest for, and who came last */
    double *worst = calloc(st->n, sizeof *worst);
    uint32_t *late = calloc(st->n, sizeof *late);
    struct rsr_coll_merge mg;
    int rc = -1;
    if (!wait || !shadow || !worst || !late || rsr_coll_merge_open(&mg, models, n) != 0)
        goto done;
    const struct rsr_coll_entry *e;
    long ng;
    while ((ng = rsr_coll_merge_next(&mg, &e)) > 0) {
        if (!(e = in_calls(e, ng, &order, &cap_order))) {
            oom = 1;
            break;
        }
        for (long a = 0, b; a < ng; a = b) {
            b = run_end(e, a, ng);
            struct call c;
            call_of(e, a, b, &c);
            int pipe = pipe_call(e[a].k);
            long kc = rsr_steps_at(st, c.first);
            if (kc >= 0 && c.wait_us > worst[kc] && !pipe)
                worst[kc] = c.wait_us, late[kc] = c.last;
            for (long j = a; j < b; j++) {
                if (j > a && e[j].model == e[j - 1].model)
                    continue;
                long kp = pipe && e[j].model < a_n ? rsr_steps_at(st, e[j].t.start_ns) : -1;
                if (kp >= 0 && rsr_step_get(st, (size_t)kp)->phase == RSR_PHASE_TRAIN) {
                    double w = (double)(c.arrive - e[j].t.start_ns) / 1e3;
                    an->p2p_step_wait_us[e[j].model] += w;
                    an->p2p_step_calls[e[j].model] += e[j].k->calls ? e[j].k->calls : 1;
                    int32_t sg = e[j].k->rank;
                    if (sg >= 0 && sg < RSR_P2P_MAX_STAGES) {
                        if ((size_t)sg >= an->p2p_stages) {
                            size_t ns = (size_t)sg + 1;
                            double *v = realloc(an->p2p_stage_steps, ns * st->n * sizeof *v);
                            if (!v) {
                                oom = 1;
                                continue;
                            }
                            memset(v + an->p2p_stages * st->n, 0, (ns - an->p2p_stages) * st->n * sizeof *v);
                            an->p2p_stage_steps = v;
                            an->p2p_stages = ns;
                        }
                        an->p2p_stage_steps[(size_t)sg * st->n + (size_t)kp] += w;
                    }
                }
                /* the step time (ranks_ns) is of the processes in the steps alone */
                if (st->in_steps && (e[j].model >= st->n_models || !st->in_steps[e[j].model]))
                    continue;
                long k = rsr_steps_at(st, e[j].t.start_ns);
                if (k < 0)
                    continue;
                struct member m = member_of(&c, &e[j].t);
                wait[k] += (double)m.exposed_wait;
                shadow[k] += m.shadowed;
            }
        }
    }
    rsr_coll_merge_close(&mg);
    if (ng < 0 || oom)
        goto done;
    for (size_t k = 0; k < st->n; k++) {
        struct rsr_step *x = rsr_step_mut(st, k);
        if (x->ranks_ns <= 0)
            continue;
        /* the wait and the shadowed transfer were in the communication
         * compute did not hide (as rsr_coll_split_gpu per process) */
        x->sync_wait_pct = fmin(x->exposed_comm_pct, 100 * wait[k] / x->ranks_ns);
        x->exposed_comm_pct = fmax(0, x->exposed_comm_pct - x->sync_wait_pct - 100 * shadow[k] / x->ranks_ns);
    }
    /* A slow step whose excess the ranks spent mostly waiting for one late
     * rank (a one-off stall, a rank that fell behind once): that rank is
     * its cause, whatever the step's other figures say; but the first
     * step's late rank was setting up (steps.c: the warm-up). */
    for (size_t i = 0; i < st->n_slow; i++) {
        struct rsr_step_slow *sl = &st->slow[i];
        const struct rsr_step *x = rsr_step_get(st, sl->index);
        if (strcmp(sl->cause, "warm_up") == 0)
            continue;
        double excess_ms = (double)(x->end_ns - x->start_ns) / 1e6 - st->phase_median_ms[x->phase];
        if (worst[sl->index] > 0 && late[sl->index] < n && excess_ms > 0 &&
            worst[sl->index] / 1e3 >= 0.5 * excess_ms) {
            sl->cause = "straggler";
            sl->rank = models[late[sl->index]]->rank;
        }
    }
    rc = 0;
done:
    free(wait), free(shadow), free(worst), free(late), free(order);
    return rc;
}
