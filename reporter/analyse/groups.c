/* The job's communicators by role (see groups.h). */
#include "reporter/analyse/groups.h"
#include "reporter/load/summary.h"
#include "reporter/base/array.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rsr_group_role_name(int role)
{
    static const char *const names[] = {
#define RSR_GROUP_ROLE_NAME(name, text) text,
        RSR_GROUP_ROLES(RSR_GROUP_ROLE_NAME)
#undef RSR_GROUP_ROLE_NAME
    };
    return role >= 0 && role < RSR_GROUP_NROLES ? names[role] : "other";
}

enum kind { KIND_COLL, KIND_P2P, KIND_A2A };

/* One communicator: its rows summed, its members. */
struct comm {
    uint64_t id;
    int32_t size;
    int32_t *ranks;
    size_t nr, capr;
    const char **hosts;         /* distinct, the models' own strings */
    size_t nh, caph;
    int32_t local;              /* the members' common local rank; -1 none; -2 no member yet */
    size_t last_model;          /* the model that added the last member, + 1 */
    uint64_t calls, op_calls[RSR_COLL_NOPS];
    double op_bytes[RSR_COLL_NOPS];
    double bw_t, mean_t, bytes;
    int kind;                   /* enum kind */
    int cls;
};

static struct comm *comm_of(struct comm *v, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].id == id)
            return &v[i];
    return NULL;
}

static int add_member(struct comm *c, const struct rsr_model *m, size_t model)
{
    if (c->last_model == model + 1)
        return 0;
    c->last_model = model + 1;
    if (m->rank >= 0) {
        if (RSR_GROW(c->ranks, c->capr, c->nr + 1, 8) != 0)
            return -1;
        c->ranks[c->nr++] = m->rank;
    }
    const char *host = rsr_model_str(m, m->host);
    host = host ? host : "";
    size_t h = 0;
    while (h < c->nh && strcmp(c->hosts[h], host) != 0)
        h++;
    if (h == c->nh) {
        if (RSR_GROW(c->hosts, c->caph, c->nh + 1, 8) != 0)
            return -1;
        c->hosts[c->nh++] = host;
    }
    c->local = c->local == -2 ? m->local_rank : c->local == m->local_rank ? c->local : -1;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int is_p2p(int op)
{
    return op == RSR_COLL_SEND || op == RSR_COLL_RECV || op == RSR_COLL_SENDRECV;
}

static double mean_bytes(const struct comm *c)
{
    return c->calls ? c->bytes / (double)c->calls : 0;
}

/* Whether a and b are within RSR_GROUP_SAME times of each other. */
static int near(double a, double b)
{
    if (a <= 0 || b <= 0)
        return a == b;
    return a <= b * RSR_GROUP_SAME && b <= a * RSR_GROUP_SAME;
}

static int alike(const struct comm *a, const struct comm *b)
{
    return a->size == b->size && a->kind == b->kind && near((double)a->calls, (double)b->calls) &&
           near(mean_bytes(a), mean_bytes(b));
}

/* A class's figures from its communicators. */
static void class_sum(struct rsr_group *g, const struct comm *v, size_t nc, int cls, size_t nsteps)
{
    double bw_t = 0, mean_t = 0, bytes[RSR_COLL_NOPS] = { 0 };
    uint64_t calls[RSR_COLL_NOPS] = { 0 };
    const struct comm *ex = NULL;
    g->intra_node = 1;
    g->rail_aligned = 1;
    g->rail = -1;
    for (size_t i = 0; i < nc; i++) {
        const struct comm *c = &v[i];
        if (c->cls != cls)
            continue;
        g->size = c->size;
        g->count++;
        g->calls += c->calls;
        bw_t += c->bw_t, mean_t += c->mean_t;
        for (int op = 0; op < RSR_COLL_NOPS; op++)
            calls[op] += c->op_calls[op], bytes[op] += c->op_bytes[op];
        if (c->nh > 1)
            g->intra_node = 0;
        if ((int32_t)c->nh > g->hosts)
            g->hosts = (int32_t)c->nh;
        g->rail_aligned &= c->nh > 1 && c->local >= 0;
        if (c->nr && (!ex || !ex->nr || c->ranks[0] < ex->ranks[0]))
            ex = c;
    }
    g->rail = g->rail_aligned && ex ? ex->local : -1;
    g->busbw_gbs = mean_t > 0 ? bw_t / mean_t : 0;
    g->calls_per_step = nsteps && g->count ? (double)g->calls / (double)g->count / (double)nsteps : 0;
    for (size_t k = 0; k < RSR_GROUP_MAX_OPS; k++) {
        int best = -1;
        for (int op = 0; op < RSR_COLL_NOPS; op++) {
            int taken = 0;
            for (size_t j = 0; j < g->n_ops; j++)
                taken |= g->ops[j].op == op;
            if (calls[op] && !taken && (best < 0 || calls[op] > calls[best]))
                best = op;
        }
        if (best < 0)
            break;
        g->ops[g->n_ops++] = (struct rsr_group_op){ (uint8_t)best, calls[best], bytes[best] / (double)calls[best] };
    }
    g->sharded = calls[RSR_COLL_ALLGATHER] + calls[RSR_COLL_REDUCESCATTER] > calls[RSR_COLL_ALLREDUCE];
    if (ex) {
        g->example_comm = ex->id;
        g->members = malloc(ex->nr * sizeof *g->members);
        if (g->members) {
            memcpy(g->members, ex->ranks, ex->nr * sizeof *g->members);
            g->n_members = ex->nr;
        }
    }
}

static double per_comm(const struct rsr_group *g)
{
    return g->count ? (double)g->calls / (double)g->count : 0;
}

/* Roles of the collective classes (see groups.h). */
static void roles(struct rsr_group *v, size_t n, int32_t world)
{
    int smaller = 0;
    for (size_t i = 0; i < n; i++)
        smaller |= v[i].role == RSR_GROUP_OTHER && v[i].size < world;
    size_t rest = 0;
    for (size_t i = 0; i < n; i++) {
        struct rsr_group *g = &v[i];
        if (g->role != RSR_GROUP_OTHER)
            continue;
        if (smaller && g->size == world && world > 1) {
            g->role = RSR_GROUP_WORLD;
            g->confidence = 0.8;
            snprintf(g->why, sizeof g->why, "collectives over every process (%d), beside smaller groups", world);
        } else {
            rest++;
        }
    }
    if (rest == 1) {
        /* beside a pipeline, collectives called as often as its sends and
         * receives (per micro-batch) are a tensor-parallel group's */
        double p2p = 0;
        for (size_t i = 0; i < n; i++)
            if (v[i].role == RSR_GROUP_PIPELINE && per_comm(&v[i]) > p2p)
                p2p = per_comm(&v[i]);
        for (size_t i = 0; i < n; i++) {
            struct rsr_group *g = &v[i];
            if (g->role != RSR_GROUP_OTHER || g->confidence)
                continue;
            if (p2p > 0 && per_comm(g) >= p2p) {
                g->role = RSR_GROUP_TENSOR;
                g->confidence = 0.6;
                snprintf(g->why, sizeof g->why, "the only collectives, %.3g calls per communicator beside a "
                         "pipeline's %.3g: per micro-batch, not per step", per_comm(g), p2p);
            } else {
                g->role = RSR_GROUP_DATA;
                g->confidence = 0.7;
                snprintf(g->why, sizeof g->why, "the only collectives of the job%s",
                         g->sharded ? ", mostly all-gathers and reduce-scatters (ZeRO, FSDP)" : "");
            }
        }
        return;
    }
    if (rest < 2)
        return;
    struct rsr_group *tp = NULL, *dp = NULL;
    for (size_t i = 0; i < n; i++)
        if (v[i].role == RSR_GROUP_OTHER && v[i].why[0] == 0 && (!tp || per_comm(&v[i]) > per_comm(tp)))
            tp = &v[i];
    for (size_t i = 0; i < n; i++) {
        const struct rsr_group *g = &v[i];
        if (g != tp && g->role == RSR_GROUP_OTHER && g->why[0] == 0 &&
            (!dp || g->ops[0].mean_bytes > dp->ops[0].mean_bytes))
            dp = &v[i];
    }
    double ratio = per_comm(dp) > 0 ? per_comm(tp) / per_comm(dp) : 1;
    double conf = 0.5 + 0.4 * fmin(1, log2(fmax(ratio, 1)) / 3);
    if (tp->intra_node && !dp->intra_node)
        conf = fmin(0.95, conf + 0.1);
    tp->role = RSR_GROUP_TENSOR;
    tp->confidence = conf;
    snprintf(tp->why, sizeof tp->why, "%.3g calls per communicator, %.3g times as many as the data-parallel ones%s",
             per_comm(tp), ratio, tp->intra_node ? ", inside a node" : "");
    dp->role = RSR_GROUP_DATA;
    dp->confidence = conf;
    snprintf(dp->why, sizeof dp->why, "the largest collective calls (%.3g MiB mean)%s", dp->ops[0].mean_bytes / 1048576,
             dp->sharded ? ", mostly all-gathers and reduce-scatters (ZeRO, FSDP)" : "");
    for (size_t i = 0; i < n; i++)
        if (v[i].role == RSR_GROUP_OTHER && !v[i].why[0]) {
            v[i].confidence = 0.3;
            snprintf(v[i].why, sizeof v[i].why, "collectives like neither the tensor- nor the data-parallel ones");
        }
}

/* Each stage's bubble per step: the median over the training steps of its
 * ranks' mean wait in sends and receives (rsr_coll_analysis's by stage and
 * step). 1, or 0 when out of memory. */
static int median_bubbles(struct rsr_pipeline *p, const struct rsr_coll_analysis *colls, const struct rsr_steps *st)
{
    size_t ns = colls->p2p_nsteps;
    double *v = malloc((ns ? ns : 1) * sizeof *v);
    if (!v)
        return 0;
    for (int32_t k = 0; k < p->stages && (size_t)k < colls->p2p_stages; k++) {
        struct rsr_pipe_stage *x = &p->by_stage[k];
        size_t m = 0;
        for (size_t s = 0; s < ns && s < st->n; s++)
            if (rsr_step_get(st, s)->phase == RSR_PHASE_TRAIN)
                v[m++] = colls->p2p_stage_steps[(size_t)k * ns + s] / 1e3 / (double)(x->ranks ? x->ranks : 1);
        if (!m)
            continue;
        x->bubble_ms_per_step = rsr_steps_median(v, m);
    }
    free(v);
    return 1;
}

/* The stages of the pipeline classes' communicators (see groups.h): each
 * model's stage is its rank in its pipeline communicator. */
static int pipeline(struct rsr_model *const *models, size_t n, const struct rsr_coll_analysis *colls,
                    const struct comm *v, size_t nc, const struct rsr_groups *gs, const struct rsr_steps *steps,
                    double wall_s, struct rsr_pipeline *p)
{
    p->slowest = -1;
    int32_t nst = 0;
    int32_t *stage = malloc((n ? n : 1) * sizeof *stage);
    if (!stage)
        return -1;
    for (size_t i = 0; i < n; i++) {
        stage[i] = -1;
        const struct rsr_summary *s = models[i]->sum;
        for (size_t k = 0; s && k < s->n_keys && stage[i] < 0; k++) {
            const struct comm *c = comm_of((struct comm *)v, nc, s->keys[k].comm_id);
            if (!c || gs->v[c->cls].role != RSR_GROUP_PIPELINE)
                continue;
            if (s->keys[k].rank >= 0) {
                stage[i] = s->keys[k].rank;
            } else {
                for (size_t r = 0; r < c->nr && stage[i] < 0; r++)
                    if (c->ranks[r] == models[i]->rank)
                        stage[i] = (int32_t)r;
            }
            if (stage[i] >= 0 && c->size > nst)
                nst = c->size;
        }
    }
    if (nst < 2) {
        free(stage);
        return 0;
    }
    p->by_stage = calloc((size_t)nst, sizeof *p->by_stage);
    if (!p->by_stage) {
        free(stage);
        return -1;
    }
    p->stages = nst;
    size_t nsteps = steps && steps->source ? steps->count : 0;
    p->per_step_ms = nsteps ? steps->per_step_ms : wall_s * 1e3;
    double per = nsteps ? (double)nsteps : 1, first_calls = 0, first_n = 0;
    for (int32_t k = 0; k < nst; k++)
        p->by_stage[k] = (struct rsr_pipe_stage){ k, 0, -1, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        if (stage[i] < 0 || stage[i] >= nst)
            continue;
        struct rsr_pipe_stage *x = &p->by_stage[stage[i]];
        x->ranks++;
        if (models[i]->rank >= 0 && (x->example_rank < 0 || models[i]->rank < x->example_rank))
            x->example_rank = models[i]->rank;
        int in = nsteps && colls->p2p_step_wait_us;
        if (!in)
            x->bubble_ms_per_step += colls->p2p_wait_us[i] / 1e3 / per;
        if (stage[i] == 0 && in)
            first_calls += (double)colls->p2p_step_calls[i], first_n++;
    }
    /* with steps: the median training step's wait, a stage's mean over its
     * ranks (a first step's start-up skew is no bubble) */
    if (nsteps && colls->p2p_stage_steps && !median_bubbles(p, colls, steps)) {
        free(stage);
        return -1;
    }
    double least = INFINITY, others = 0;
    int32_t least_k = -1, counted = 0;
    for (int32_t k = 0; k < nst; k++) {
        struct rsr_pipe_stage *x = &p->by_stage[k];
        if (!x->ranks)
            continue;
        if (!nsteps || !colls->p2p_stage_steps)
            x->bubble_ms_per_step /= (double)x->ranks;
        x->bubble_pct = p->per_step_ms > 0 ? 100 * x->bubble_ms_per_step / p->per_step_ms : 0;
        if (x->bubble_pct < least)
            least = x->bubble_pct, least_k = k;
        counted++;
    }
    if (nsteps && first_n) {
        p->microbatches = first_calls / first_n / (double)nsteps / 2;
        if (p->microbatches > 0)
            p->schedule_bubble_pct = 100.0 * (nst - 1) / (p->microbatches + nst - 1);
    }
    for (int32_t k = 0; k < nst; k++)
        if (k != least_k && p->by_stage[k].ranks)
            others += p->by_stage[k].bubble_pct;
    if (counted > 1) {
        p->slowest_excess_pct = others / (counted - 1) - least;
        if (p->slowest_excess_pct >= RSR_PIPE_SLOW_PCT)
            p->slowest = least_k;
    }
    free(stage);
    return 0;
}

static int cmp_group(const void *pa, const void *pb)
{
    const struct rsr_group *a = pa, *b = pb;
    if (a->time_pct != b->time_pct)
        return a->time_pct < b->time_pct ? 1 : -1;
    return (a->role > b->role) - (a->role < b->role);
}

int rsr_groups_find(struct rsr_model *const *models, size_t n, const struct rsr_coll_analysis *colls,
                    const struct rsr_steps *steps, double wall_s, struct rsr_groups *out)
{
    memset(out, 0, sizeof *out);
    struct comm *v = NULL;
    size_t nc = 0, cap = 0, ncls = 0;
    int rc = -1;
    for (size_t i = 0; i < colls->n_rows; i++) {
        const struct rsr_coll_row *r = &colls->rows[i];
        struct comm *c = comm_of(v, nc, r->comm_id);
        if (!c) {
            if (RSR_GROW(v, cap, nc + 1, 8) != 0)
                goto done;
            c = &v[nc++];
            memset(c, 0, sizeof *c);
            c->id = r->comm_id;
            c->local = -2;
        }
        double cnt = (double)r->count;
        if (r->ranks > c->size)
            c->size = r->ranks;
        c->calls += r->count;
        c->op_calls[r->op] += r->count;
        c->op_bytes[r->op] += cnt * (double)r->bytes;
        c->bytes += cnt * (double)r->bytes;
        c->bw_t += cnt * r->mean_us * r->busbw_gbs;
        c->mean_t += cnt * r->mean_us;
    }
    /* members: the processes whose summaries name the communicator */
    int32_t world = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_summary *s = models[i]->sum;
        if (!s || !s->n_colls)
            continue;
        world++;
        for (size_t k = 0; k < s->n_keys; k++) {
            struct comm *c = comm_of(v, nc, s->keys[k].comm_id);
            if (c && add_member(c, models[i], i) != 0)
                goto done;
        }
    }
    for (size_t i = 0; i < nc; i++) {
        struct comm *c = &v[i];
        uint64_t p2p = 0;
        for (int op = 0; op < RSR_COLL_NOPS; op++)
            p2p += is_p2p(op) ? c->op_calls[op] : 0;
        c->kind = (double)p2p >= RSR_GROUP_P2P_SHARE * (double)c->calls ? KIND_P2P
                  : 2 * c->op_calls[RSR_COLL_ALLTOALL] >= c->calls  ? KIND_A2A
                                                                     : KIND_COLL;
        if (c->nr > 1)
            qsort(c->ranks, c->nr, sizeof *c->ranks, cmp_i32);
        c->cls = -1;
        for (size_t j = 0; j < i && c->cls < 0; j++)
            if (v[j].cls >= 0 && alike(&v[j], c))
                c->cls = v[j].cls;
        if (c->cls < 0)
            c->cls = (int)ncls++;
    }
    out->v = calloc(ncls ? ncls : 1, sizeof *out->v);
    if (!out->v)
        goto done;
    out->n = ncls;
    double denom = (double)world * wall_s * 1e6;
    size_t nsteps = steps && steps->source ? steps->count : 0;
    for (size_t k = 0; k < ncls; k++) {
        struct rsr_group *g = &out->v[k];
        class_sum(g, v, nc, (int)k, nsteps);
        int kind = KIND_COLL;
        for (size_t i = 0; i < nc; i++)
            if (v[i].cls == (int)k)
                kind = v[i].kind;
        g->role = RSR_GROUP_OTHER;
        if (kind == KIND_P2P) {
            g->role = RSR_GROUP_PIPELINE;
            g->confidence = 0.9;
            snprintf(g->why, sizeof g->why, "sends and receives only, between the %d ranks of each", g->size);
        } else if (kind == KIND_A2A) {
            g->role = RSR_GROUP_EXPERT;
            g->confidence = 0.8;
            snprintf(g->why, sizeof g->why, "mostly all-to-all: tokens to their experts and back");
        }
    }
    roles(out->v, out->n, world);
    if (pipeline(models, n, colls, v, nc, out, steps, wall_s, &out->pipe) != 0)
        goto done;
    /* each process's time by role, and each class's hidden transfer */
    out->by_model = calloc((n ? n : 1) * RSR_GROUP_NROLES, sizeof *out->by_model);
    double *xfer = calloc(ncls ? ncls : 1, sizeof *xfer), *hid = calloc(ncls ? ncls : 1, sizeof *hid);
    double *wt = calloc(ncls ? ncls : 1, sizeof *wt);
    if (!out->by_model || !xfer || !hid || !wt) {
        free(xfer), free(hid), free(wt);
        goto done;
    }
    out->n_models = n;
    out->wall_s = wall_s;
    for (size_t i = 0; i < n && i < colls->n_models; i++)
        for (size_t k = 0; k < colls->n_comm_time[i]; k++) {
            const struct rsr_comm_time *ct = &colls->comm_time[i][k];
            const struct comm *c = comm_of(v, nc, ct->comm_id);
            if (!c || c->cls < 0)
                continue;
            struct rsr_role_time *r = &out->by_model[i * RSR_GROUP_NROLES + out->v[c->cls].role];
            r->time_us += ct->wait_us + ct->transfer_us;
            r->wait_us += ct->wait_us;
            r->hidden_us += ct->hidden_us;
            xfer[c->cls] += ct->transfer_us;
            hid[c->cls] += ct->hidden_us;
            wt[c->cls] += ct->wait_us;
        }
    /* the classes' shares from the same sums as the processes' (each
     * rank's own end of each call), so that the two agree */
    /* each communicator's role and members, which it hands over */
    out->comms = calloc(nc ? nc : 1, sizeof *out->comms);
    if (!out->comms) {
        free(xfer), free(hid), free(wt);
        goto done;
    }
    for (size_t i = 0; i < nc; i++) {
        out->comms[i] = (struct rsr_group_comm){ v[i].id, out->v[v[i].cls].role, v[i].ranks, v[i].nr };
        v[i].ranks = NULL;
    }
    out->n_comms = nc;
    out->coords = malloc((n ? n : 1) * RSR_GROUP_NROLES * sizeof *out->coords);
    if (!out->coords) {
        free(xfer), free(hid), free(wt);
        goto done;
    }
    for (size_t i = 0; i < n * RSR_GROUP_NROLES; i++)
        out->coords[i] = -1;
    for (size_t i = 0; i < n; i++) {
        int32_t r = models[i]->rank;
        for (size_t k = 0; k < nc && r >= 0; k++) {
            const struct rsr_group_comm *c = &out->comms[k];
            int32_t *x = &out->coords[i * RSR_GROUP_NROLES + c->role];
            const int32_t *at = *x < 0 ? bsearch(&r, c->members, c->n_members, sizeof r, cmp_i32) : NULL;
            if (at)
                *x = (int32_t)(at - c->members);
        }
    }
    for (size_t k = 0; k < ncls; k++) {
        struct rsr_group *x = &out->v[k];
        x->hidden_pct = xfer[k] > 0 ? 100 * hid[k] / xfer[k] : 0;
        x->time_pct = denom > 0 ? 100 * (wt[k] + xfer[k]) / denom : 0;
        x->sync_wait_pct = wt[k] + xfer[k] > 0 ? 100 * wt[k] / (wt[k] + xfer[k]) : 0;
    }
    free(xfer), free(hid), free(wt);
    qsort(out->v, out->n, sizeof *out->v, cmp_group);
    rc = 0;
done:
    for (size_t i = 0; i < nc; i++) {
        free(v[i].ranks);
        free(v[i].hosts);
    }
    free(v);
    if (rc != 0)
        rsr_groups_free(out);
    return rc;
}

const struct rsr_group_comm *rsr_groups_comm(const struct rsr_groups *g, uint64_t id)
{
    for (size_t i = 0; i < g->n_comms; i++)
        if (g->comms[i].id == id)
            return &g->comms[i];
    return NULL;
}

void rsr_groups_free(struct rsr_groups *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->v[i].members);
    free(g->v);
    free(g->pipe.by_stage);
    free(g->by_model);
    free(g->coords);
    for (size_t i = 0; i < g->n_comms; i++)
        free(g->comms[i].members);
    free(g->comms);
    memset(g, 0, sizeof *g);
}
