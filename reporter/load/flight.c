/* Communicators' calls in flight at a file's end (flight.h). */
#include "reporter/load/flight.h"

#include <string.h>

static struct rsr_flight *flight_of(struct rsr_flights *f, const struct rsr_coll *c)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->v[i].comm_id == c->comm_id)
            return &f->v[i];
    if (f->n == RSR_FLIGHT_COMMS) {
        f->dropped++;
        return NULL;
    }
    struct rsr_flight *x = &f->v[f->n++];
    memset(x, 0, sizeof *x);
    x->comm_id = c->comm_id;
    x->done_seq = x->last_seq = -1;
    x->group_size = x->rank_in_group = -1;
    return x;
}

/* Drops the open calls at or below the last finished one. */
static void forget_done(struct rsr_flight *x)
{
    uint32_t w = 0;
    for (uint32_t i = 0; i < x->n_open; i++)
        if ((int64_t)x->open[i].seq > x->done_seq)
            x->open[w++] = x->open[i];
    x->n_open = w;
}

void rsr_flight_take(struct rsr_flights *f, const struct rsr_coll *c)
{
    if (!c->comm_id || c->seq >= RSR_SEQ_REPLAYED)
        return;
    struct rsr_flight *x = flight_of(f, c);
    if (!x)
        return;
    if (c->group_size > 0)
        x->group_size = c->group_size;
    if (c->rank_in_group >= 0)
        x->rank_in_group = c->rank_in_group;
    if ((int64_t)c->seq > x->last_seq)
        x->last_seq = c->seq;
    if (c->end_ns) {
        if ((int64_t)c->seq > x->done_seq) {
            x->done_seq = c->seq;
            x->done_end_ns = c->end_ns;
            forget_done(x);
        }
        return;
    }
    if ((int64_t)c->seq <= x->done_seq)
        return;     /* a call whose times were lost, long finished */
    /* insert by seq, keeping the lowest RSR_FLIGHT_OPEN */
    uint32_t k = x->n_open;
    while (k && x->open[k - 1].seq > c->seq)
        k--;
    if (k == RSR_FLIGHT_OPEN || (k && x->open[k - 1].seq == c->seq))
        return;
    uint32_t n = x->n_open < RSR_FLIGHT_OPEN ? x->n_open + 1 : RSR_FLIGHT_OPEN;
    memmove(&x->open[k + 1], &x->open[k], (n - 1 - k) * sizeof x->open[0]);
    x->open[k] = (struct rsr_flight_call){ c->launch_ns, c->bytes, c->seq, c->dtype, c->peer, c->op, { 0 } };
    x->n_open = n;
}

const struct rsr_flight_call *rsr_flight_open_above(const struct rsr_flight *f, int64_t floor)
{
    for (uint32_t k = 0; k < f->n_open; k++)
        if ((int64_t)f->open[k].seq > floor)
            return &f->open[k];
    return NULL;
}
