/* A stuck job's verdict from the calls in flight at the files' ends
 * (hang.h). */
#include "reporter/analyse/hang.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reporter/analyse/groups.h"
#include "reporter/analyse/steps.h"
#include "reporter/load/summary.h"
#include "reporter/base/units.h"
#include "reporter/base/array.h"

const char *rsr_hang_kind_name(int kind)
{
    switch (kind) {
    case RSR_HANG_HANG: return "hang";
    case RSR_HANG_DESYNC: return "desync";
    case RSR_HANG_CRASH: return "crash";
    default: return "none";
    }
}

const char *rsr_signal_name(int sig, char *buf, size_t n)
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, n, "SIG%s", abbrev);
    else
        snprintf(buf, n, "signal %d", sig);
    return buf;
}

static const struct rsr_flight *flight_on(const struct rsr_model *m, uint64_t comm)
{
    const struct rsr_summary *sm = m->sum;
    if (!sm)
        return NULL;
    for (uint32_t i = 0; i < sm->flights.n; i++)
        if (sm->flights.v[i].comm_id == comm)
            return &sm->flights.v[i];
    return NULL;
}

/* How long c waited in flight before m's file ended, ns. */
static int64_t waited_ns(const struct rsr_model *m, const struct rsr_flight_call *c)
{
    return c && m->wall_end_ns > c->launch_ns ? m->wall_end_ns - c->launch_ns : 0;
}

static int same_call(const struct rsr_hang_rank *a, const struct rsr_hang_rank *b, const struct rsr_model *ma,
                     const struct rsr_model *mb)
{
    if (a->op != b->op || a->bytes != b->bytes)
        return 0;
    int rooted = a->op == RSR_COLL_BROADCAST || a->op == RSR_COLL_REDUCE || a->op == RSR_COLL_GATHER ||
                 a->op == RSR_COLL_SCATTER;
    if (rooted && a->peer != b->peer)
        return 0;
    const char *da = rsr_model_str(ma, a->dtype), *db = rsr_model_str(mb, b->dtype);
    return !da || !db || strcmp(da, db) == 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_rank(const void *a, const void *b)
{
    const struct rsr_hang_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The lowest sequence number of comm's calls (a waiting rank's, m's) that
 * began inside step i; -1: none. */
static int64_t first_seq_in(const struct rsr_model *m, uint64_t comm, const struct rsr_step *st)
{
    struct rsr_coll_cursor c;
    struct rsr_coll_tuple t;
    int64_t lo = -1;
    rsr_coll_cursor_open(&c, m->sum);
    while (rsr_coll_cursor_next(&c, &t) == 1)
        if (m->sum->keys[t.key].comm_id == comm && t.start_ns >= st->start_ns && t.start_ns < st->end_ns &&
            (lo < 0 || t.seq < lo))
            lo = t.seq;
    return lo;
}

/* What the verdict reads: the job's models, its steps and communicators,
 * and where it goes. */
struct hang_in {
    struct rsr_model *const *models;
    size_t n;
    const struct rsr_steps *steps;
    const struct rsr_groups *groups;
    struct rsr_hang *hang;
};

/* The step the stuck call belongs to. The steps found end where the GPU
 * work last ended: the last one may hold the start of the step that hung
 * (its work before the stuck call). With the calls a step makes (the
 * sequence numbers between the last two steps' first calls), a stuck call
 * past the last step's share starts the next step. */
static int64_t hung_step(const struct hang_in *job, const struct rsr_hang *h)
{
    size_t n = job->steps->n;
    while (n && rsr_step_get(job->steps, n - 1)->start_ns > h->entered_ns)
        n--;
    if (n < 2)
        return (int64_t)n;
    const struct rsr_model *m = NULL;
    for (size_t i = 0; i < h->n_ranks && !m; i++)
        if (h->ranks[i].in_flight)
            m = job->models[h->ranks[i].model];
    struct rsr_step a = *rsr_step_get(job->steps, n - 2), b = *rsr_step_get(job->steps, n - 1);
    int64_t sa = m ? first_seq_in(m, h->comm_id, &a) : -1, sb = m ? first_seq_in(m, h->comm_id, &b) : -1;
    if (sa < 0 || sb <= sa)
        return (int64_t)n - 1;
    return (int64_t)h->seq >= sb + (sb - sa) ? (int64_t)n : (int64_t)n - 1;
}

/* A communicator as the files left it. */
struct comm_stat {
    uint64_t id;
    int64_t max_done;           /* the highest call any rank finished */
    int64_t waited;             /* the longest wait in a call above it, ns */
    int crashed;                /* a rank died of a fatal signal with no call open above it */
};

static struct comm_stat *stat_of(struct comm_stat **v, size_t *n, size_t *cap, uint64_t id)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].id == id)
            return &(*v)[i];
    if (RSR_GROW(*v, *cap, *n + 1, 16) != 0)
        return NULL;
    (*v)[*n] = (struct comm_stat){ id, -1, -1, 0 };
    return &(*v)[(*n)++];
}

/* The collective a wait's frames are in: the function of the innermost
 * torch/distributed frame ("all_reduce"), into buf; 0 when none. */
static int collective_frame(const char *where, char *buf, size_t n)
{
    const char *best = NULL;
    for (const char *p = where; (p = strstr(p, "torch/distributed/")) != NULL; p++)
        best = p;
    if (!best)
        return 0;
    const char *colon = strchr(best, ':'), *end = strchr(best, ';');
    if (!colon || (end && colon > end))
        return 0;
    size_t len = end ? (size_t)(end - colon - 1) : strlen(colon + 1);
    const char *line = memchr(colon + 1, ':', len);    /* mod.py:func:line (--lines) */
    if (line)
        len = (size_t)(line - colon - 1);
    snprintf(buf, n, "%.*s", (int)len, colon + 1);
    return 1;
}

/* How close to its file's end a rank's last long wait must have ended to be
 * what it was stuck in (the exception a collective's timeout raises, the
 * traceback and the exit come after it). */
#define HANG_WAIT_TAIL_NS 5000000000ll

/* The verdict from the ranks' main threads' last long waits (hang.h):
 * for a job whose collectives the agent does not record. */
static int hang_from_waits(const struct hang_in *job)
{
    struct rsr_hang *h = job->hang;
    size_t n = 0;
    for (size_t i = 0; i < job->n; i++)
        n += job->models[i]->role == RSR_ROLE_RANK && job->models[i]->rank >= 0;
    if (n < 2)
        return 0;
    h->ranks = calloc(n, sizeof *h->ranks);
    h->waiting = calloc(n, sizeof *h->waiting);
    h->missing = calloc(n, sizeof *h->missing);
    if (!h->ranks || !h->waiting || !h->missing) {
        rsr_hang_free(h);
        return -1;
    }
    for (size_t i = 0; i < job->n; i++) {
        const struct rsr_model *m = job->models[i];
        if (m->role != RSR_ROLE_RANK || m->rank < 0)
            continue;
        const struct rsr_proc_waits *w = &m->waits;
        int64_t end = w->long_end_ns + m->clock_offset_ns;
        int at_end = w->long_wait_ns && m->wall_end_ns - end <= HANG_WAIT_TAIL_NS;
        struct rsr_hang_rank r = { .model = i, .rank = m->rank, .last_seq_done = -1, .last_seq_entered = -1,
                                   .unclosed = m->unclosed, .fatal_sig = m->fatal_sig, .peer = -1,
                                   .where = w->long_wait_ns ? w->long_where : w->where,
                                   .where_wait_ns = w->long_wait_ns ? w->long_wait_ns : w->where_wait_ns };
        char op[96];
        if (at_end && w->long_cause == RSR_CAUSE_COLLECTIVE && collective_frame(w->long_where, op, sizeof op)) {
            r.in_flight = 1;
            r.waited_s = (double)w->long_wait_ns / 1e9;
            if (r.waited_s > h->waited_s)
                h->waited_s = r.waited_s;
            if (!h->op_text[0])
                snprintf(h->op_text, sizeof h->op_text, "%s", op);
            int64_t entered = end - (int64_t)w->long_wait_ns;
            if (!h->entered_ns || entered < h->entered_ns)
                h->entered_ns = entered;
            h->waiting[h->n_waiting++] = m->rank;
        } else {
            h->missing[h->n_missing++] = m->rank;
        }
        h->ranks[h->n_ranks++] = r;
    }
    /* a job that ended on its own is not stuck: a missing rank was killed
     * while it waited (SIGTERM, SIGINT: the agent's killed mark) or died */
    int ended = 0;
    for (size_t a = 0; a < h->n_ranks; a++) {
        const struct rsr_model *m = job->models[h->ranks[a].model];
        ended |= !h->ranks[a].in_flight && ((m->killed_sig && m->killed_waiting) || m->fatal_sig);
    }
    if (!ended || !h->n_waiting || !h->n_missing || h->waited_s < RSR_HANG_MIN_S) {
        rsr_hang_free(h);
        h->step = -1, h->role = -1, h->group_size = -1;
        return 0;
    }
    h->kind = RSR_HANG_HANG;
    for (size_t a = 0; a < h->n_ranks; a++)
        if (!h->ranks[a].in_flight && h->ranks[a].fatal_sig)
            h->kind = RSR_HANG_CRASH;
    h->group_size = (int32_t)n;
    h->comms_stuck = 1;
    qsort(h->waiting, h->n_waiting, sizeof *h->waiting, cmp_i32);
    qsort(h->missing, h->n_missing, sizeof *h->missing, cmp_i32);
    qsort(h->ranks, h->n_ranks, sizeof *h->ranks, cmp_rank);
    return 0;
}

int rsr_hang_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                     const struct rsr_groups *groups, struct rsr_hang *out)
{
    const struct hang_in in = { models, n, steps, groups, out }, *job = &in;
    struct rsr_hang *h = job->hang;
    memset(h, 0, sizeof *h);
    h->step = -1;
    h->role = -1;
    h->group_size = -1;
    /* each communicator: the highest call finished anywhere, then the
     * longest wait above it, and whether a rank died outside its calls */
    struct comm_stat *st = NULL;
    size_t nst = 0, capst = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < job->n; i++) {
            const struct rsr_model *m = job->models[i];
            for (uint32_t k = 0; m->sum && k < m->sum->flights.n; k++) {
                const struct rsr_flight *f = &m->sum->flights.v[k];
                struct comm_stat *c = stat_of(&st, &nst, &capst, f->comm_id);
                if (!c) {
                    free(st);
                    return -1;
                }
                if (pass == 0) {
                    if (f->done_seq > c->max_done)
                        c->max_done = f->done_seq;
                    continue;
                }
                const struct rsr_flight_call *o = rsr_flight_open_above(f, c->max_done);
                if (o && waited_ns(m, o) > c->waited)
                    c->waited = waited_ns(m, o);
                if (!o && m->fatal_sig)
                    c->crashed = 1;
            }
        }
    /* the communicator whose call in flight waited longest */
    const int64_t min_ns = (int64_t)(RSR_HANG_MIN_S * 1e9);
    const struct comm_stat *chosen = NULL;
    for (size_t i = 0; i < nst; i++) {
        const struct comm_stat *c = &st[i];
        if (c->waited < 0 || (c->waited < min_ns && !c->crashed))
            continue;
        h->comms_stuck++;
        if (!chosen || c->waited > chosen->waited)
            chosen = c;
    }
    if (!chosen) {
        free(st);
        return hang_from_waits(job);
    }
    uint64_t comm = chosen->id;
    int64_t floor = chosen->max_done;
    int crashed = chosen->crashed;
    free(st);
    h->comm_id = comm;
    h->seq_known = 1;
    /* the stuck call: the lowest in flight above the floor, long enough */
    int64_t seq = -1;
    size_t members = 0;
    for (size_t i = 0; i < job->n; i++) {
        const struct rsr_flight *f = flight_on(job->models[i], comm);
        if (!f)
            continue;
        members++;
        if (f->group_size > h->group_size)
            h->group_size = f->group_size;
        const struct rsr_flight_call *c = rsr_flight_open_above(f, floor);
        if (c && (waited_ns(job->models[i], c) >= min_ns || crashed) && (seq < 0 || c->seq < seq))
            seq = c->seq;
    }
    h->seq = (uint32_t)seq;
    h->absent = h->group_size > 0 && (size_t)h->group_size > members ? (size_t)h->group_size - members : 0;
    h->ranks = calloc(members ? members : 1, sizeof *h->ranks);
    h->waiting = calloc(members ? members : 1, sizeof *h->waiting);
    h->missing = calloc(members ? members : 1, sizeof *h->missing);
    if (!h->ranks || !h->waiting || !h->missing) {
        rsr_hang_free(h);
        return -1;
    }
    int64_t last_end = 0;
    h->entered_ns = INT64_MAX;
    for (size_t i = 0; i < job->n; i++) {
        const struct rsr_model *m = job->models[i];
        const struct rsr_flight *f = flight_on(m, comm);
        if (!f)
            continue;
        const struct rsr_flight_call *c = rsr_flight_open_above(f, floor);
        struct rsr_hang_rank r = { .model = i, .rank = m->rank, .last_seq_done = f->done_seq,
                                   .last_seq_entered = f->last_seq, .unclosed = m->unclosed,
                                   .fatal_sig = m->fatal_sig, .peer = -1,
                                   .where = m->waits.where, .where_wait_ns = m->waits.where_wait_ns };
        if (c && c->seq == (uint32_t)seq) {
            r.in_flight = 1;
            r.waited_s = (double)waited_ns(m, c) / 1e9;
            r.op = c->op, r.bytes = c->bytes, r.dtype = c->dtype, r.peer = c->peer;
            if (m->wall_end_ns > last_end)
                last_end = m->wall_end_ns;
            if (c->launch_ns < h->entered_ns)
                h->entered_ns = c->launch_ns;
            h->waiting[h->n_waiting++] = m->rank;
        } else if (f->last_seq < seq) {
            h->missing[h->n_missing++] = m->rank;
        } else {
            continue;   /* it finished the call: not part of the verdict */
        }
        h->ranks[h->n_ranks++] = r;
    }
    /* the waiting ranks' call: the most common one; another: a desync */
    size_t most = 0, pick = SIZE_MAX;
    int desync = 0;
    for (size_t a = 0; a < h->n_ranks; a++) {
        if (!h->ranks[a].in_flight)
            continue;
        size_t same = 0;
        for (size_t b = 0; b < h->n_ranks; b++)
            if (h->ranks[b].in_flight) {
                int eq = same_call(&h->ranks[a], &h->ranks[b], job->models[h->ranks[a].model],
                                   job->models[h->ranks[b].model]);
                same += eq;
                desync |= !eq;
            }
        if (same > most)
            most = same, pick = a;
    }
    if (pick != SIZE_MAX) {
        const struct rsr_hang_rank *p = &h->ranks[pick];
        h->op = p->op;
        h->bytes = p->bytes;
        h->dtype = rsr_model_str(job->models[p->model], p->dtype);
        for (size_t a = 0; a < h->n_ranks && desync; a++)
            h->ranks[a].odd = h->ranks[a].in_flight &&
                              !same_call(&h->ranks[a], p, job->models[h->ranks[a].model], job->models[p->model]);
    }
    for (size_t a = 0; a < h->n_ranks; a++) {
        struct rsr_hang_rank *r = &h->ranks[a];
        if (!r->in_flight && last_end > job->models[r->model]->wall_end_ns)
            r->ended_before_s = (double)(last_end - job->models[r->model]->wall_end_ns) / 1e9;
        if (r->in_flight && r->waited_s > h->waited_s)
            h->waited_s = r->waited_s;
        /* a waiting rank's last sample says where it is only if it lasted
         * into the wait (a sync inside the stuck call); else it is older */
        if (r->in_flight && !r->fatal_sig && (double)r->where_wait_ns < 0.5e9 * r->waited_s)
            r->where = "", r->where_wait_ns = 0;
    }
    h->kind = RSR_HANG_HANG;
    if (desync)
        h->kind = RSR_HANG_DESYNC;
    else
        for (size_t a = 0; a < h->n_ranks; a++)
            if (!h->ranks[a].in_flight && (h->ranks[a].fatal_sig ||
                                           (h->ranks[a].unclosed && h->ranks[a].ended_before_s >= RSR_HANG_CRASH_S)))
                h->kind = RSR_HANG_CRASH;
    qsort(h->waiting, h->n_waiting, sizeof *h->waiting, cmp_i32);
    qsort(h->missing, h->n_missing, sizeof *h->missing, cmp_i32);
    qsort(h->ranks, h->n_ranks, sizeof *h->ranks, cmp_rank);
    const struct rsr_group_comm *gc = rsr_groups_comm(job->groups, comm);
    if (gc)
        h->role = gc->role;
    if (job->steps->source && h->entered_ns != INT64_MAX)
        h->step = hung_step(job, h);
    return 0;
}

void rsr_hang_free(struct rsr_hang *h)
{
    free(h->ranks);
    free(h->waiting);
    free(h->missing);
    memset(h, 0, sizeof *h);
}

/* "ranks 0, 2, 3" (at most 8 named, then how many more) into buf at *o. */
static void ranks_text(char *buf, size_t n, size_t *o, const int32_t *v, size_t k)
{
    for (size_t i = 0; i < k && i < 8 && *o < n; i++)
        *o += (size_t)snprintf(buf + *o, n - *o, "%s%d", i ? ", " : "", v[i]);
    if (k > 8 && *o < n)
        *o += (size_t)snprintf(buf + *o, n - *o, " and %zu more", k - 8);
}

void rsr_hang_text(const struct rsr_hang *h, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    if (h->kind == RSR_HANG_NONE)
        return;
    char at[160] = "";
    size_t a = h->seq_known ? (size_t)snprintf(at, sizeof at, "%s #%u", rsr_coll_op_name(h->op), h->seq)
                            : (size_t)snprintf(at, sizeof at, "the collective %s (torch.distributed; no NCCL calls "
                                                              "recorded)", h->op_text);
    if (h->role >= 0 && a < sizeof at)
        a += (size_t)snprintf(at + a, sizeof at - a, " on the %s communicator", rsr_group_role_name(h->role));
    if (h->step >= 0 && a < sizeof at)
        snprintf(at + a, sizeof at - a, " at step %lld", (long long)h->step);
    if (h->kind == RSR_HANG_DESYNC) {
        /* the ranks whose call differs, each with its call, then the rest's */
        char b[32];
        o += (size_t)snprintf(buf + o, n - o, "desync at %s: ", at);
        size_t odd = 0, rest = 0;
        for (size_t i = 0; i < h->n_ranks && o < n; i++) {
            const struct rsr_hang_rank *r = &h->ranks[i];
            if (!r->odd)
                continue;
            rsr_fmt_bytes(b, sizeof b, (double)r->bytes);
            if (odd++ < 4)
                o += (size_t)snprintf(buf + o, n - o, "%srank %d called %s of %s", odd > 1 ? "; " : "", r->rank,
                                      rsr_coll_op_name(r->op), b);
        }
        for (size_t i = 0; i < h->n_ranks; i++)
            rest += h->ranks[i].in_flight && !h->ranks[i].odd;
        rsr_fmt_bytes(b, sizeof b, (double)h->bytes);
        if (o < n)
            o += (size_t)snprintf(buf + o, n - o, "%s where %zu other rank%s called %s of %s", odd > 4 ? " ..." : "",
                                  rest, rest == 1 ? "" : "s", rsr_coll_op_name(h->op), b);
        if (o < n)
            snprintf(buf + o, n - o, "; they waited %.1f s", h->waited_s);
        return;
    }
    if (h->n_missing) {
        o += (size_t)snprintf(buf + o, n - o, "%s ", h->n_missing > 1 ? "ranks" : "rank");
        ranks_text(buf, n, &o, h->missing, h->n_missing);
        int sig = 0;
        for (size_t i = 0; i < h->n_ranks && !sig; i++)
            if (!h->ranks[i].in_flight)
                sig = h->ranks[i].fatal_sig;
        char name[32];
        if (o < n && h->kind == RSR_HANG_CRASH && sig)
            o += (size_t)snprintf(buf + o, n - o, " died of %s before entering %s", rsr_signal_name(sig, name, sizeof name),
                                  at);
        else if (o < n)
            o += (size_t)snprintf(buf + o, n - o, " %s %s", h->kind == RSR_HANG_CRASH ? "died before entering"
                                                                                    : "never entered", at);
    } else if (o < n) {
        o += (size_t)snprintf(buf + o, n - o, "every rank entered %s and it never finished", at);
    }
    if (o < n) {
        o += (size_t)snprintf(buf + o, n - o, "; %s ", h->n_waiting > 1 ? "ranks" : "rank");
        ranks_text(buf, n, &o, h->waiting, h->n_waiting);
        if (o < n)
            snprintf(buf + o, n - o, " waited %.1f s in it", h->waited_s);
    }
}
