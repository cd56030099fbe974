/* NCCL groups folded into one unit per communicator (see coll_groups.h).
 * The agent writes a group's calls together, at the group's end, so the
 * unit a call belongs to is among the few opened last. */
#include "reporter/load/coll_groups.h"

#include <stdlib.h>

static void count_call(struct rsr_group_unit *u, const struct rsr_coll *c)
{
    if (c->op == RSR_COLL_SEND || c->op == RSR_COLL_RECV) {
        int send = c->op == RSR_COLL_SEND;
        uint64_t bit = c->peer >= 0 ? 1ull << (c->peer % 64) : 0;
        if (send)
            u->send_bytes += c->bytes, u->send_peers |= bit, u->n_send++;
        else
            u->recv_bytes += c->bytes, u->recv_peers |= bit, u->n_recv++;
        return;
    }
    u->coll_op = u->n_coll && u->coll_op != c->op ? RSR_COLL_GROUP : c->op;
    u->coll_bytes += c->bytes;
    u->n_coll++;
    if (c->seq < u->coll_seq)
        u->coll_seq = c->seq;
}

/* Sends to and receives from every other rank (or every rank), one each. */
static int all_to_all(const struct rsr_group_unit *u, int32_t nranks)
{
    if (nranks <= 2 || u->n_send != u->n_recv || u->send_peers != u->recv_peers)
        return 0;
    if (u->n_send + 1 < (uint32_t)nranks || u->n_send > (uint32_t)nranks)
        return 0;
    return nranks > 64 || __builtin_popcountll(u->send_peers) == (int)u->n_send;
}

/* The unit's op, bytes and sequence number from its calls. */
static void settle(const struct rsr_group_unit *u, struct rsr_coll *c, int32_t nranks, int32_t rank)
{
    uint64_t p2p = u->send_bytes > u->recv_bytes ? u->send_bytes : u->recv_bytes;
    c->bytes = u->coll_bytes + p2p;
    if (u->n_coll) {
        c->op = u->n_send + u->n_recv ? RSR_COLL_GROUP : u->coll_op;
        c->seq = u->coll_seq;
    } else {
        c->op = all_to_all(u, nranks) ? RSR_COLL_ALLTOALL : RSR_COLL_SENDRECV;
        c->seq = (u->p2p_seq & RSR_SEQ_NUMBER) | RSR_GROUP_P2P_SEQ;
        uint64_t one = u->first_peer >= 0 ? 1ull << (u->first_peer % 64) : 0;
        if (one && (u->send_peers | u->recv_peers) == one && nranks > 1 && nranks <= 64 && rank >= 0 &&
            u->first_peer < nranks && rank != u->first_peer) {
            uint64_t lo = (uint64_t)(rank < u->first_peer ? rank : u->first_peer);
            uint64_t hi = (uint64_t)(rank < u->first_peer ? u->first_peer : rank), n = (uint64_t)nranks;
            c->seq = (uint32_t)(((uint64_t)u->pair_seq * n * n + lo * n + hi) & RSR_SEQ_NUMBER) | RSR_GROUP_P2P_SEQ;
        }
    }
    c->peer = -1;
}

/* The next number of a group of sends and receives on comm (with peer, or
 * -1: any). */
static uint32_t p2p_number(struct rsr_group_fold *g, uint64_t comm, int32_t peer)
{
    for (size_t i = 0; i < g->n_counts; i++)
        if (g->counts[i].comm == comm && g->counts[i].peer == peer)
            return g->counts[i].n++;
    struct rsr_group_count *p = realloc(g->counts, (g->n_counts + 1) * sizeof *p);
    if (!p) {
        g->failed = 1;
        return 0;
    }
    g->counts = p;
    g->counts[g->n_counts++] = (struct rsr_group_count){ comm, peer, 1 };
    return 0;
}

void rsr_group_take(struct rsr_group_fold *g, struct rsr_model *m, uint64_t group, int32_t nranks, int32_t rank)
{
    if (!group || !m->n_colls)
        return;
    struct rsr_coll *c = &m->colls[m->n_colls - 1];
    for (size_t i = 0; i < g->n; i++) {
        struct rsr_group_unit *u = &g->open[i];
        if (u->group != group || u->comm != c->comm_id)
            continue;
        struct rsr_coll *x = &m->colls[u->index];
        if (c->start_ns && (!x->start_ns || c->start_ns < x->start_ns))
            x->start_ns = c->start_ns;
        if (c->end_ns > x->end_ns)
            x->end_ns = c->end_ns;
        if (c->launch_ns && c->launch_ns < x->launch_ns)
            x->launch_ns = c->launch_ns;
        if (c->call_end_ns > x->call_end_ns)
            x->call_end_ns = c->call_end_ns;
        x->group_calls++;
        count_call(u, c);
        settle(u, x, nranks, rank);
        m->n_colls--;
        return;
    }
    struct rsr_group_unit *u = &g->open[g->stamp++ % RSR_GROUP_OPEN];
    if (g->n < RSR_GROUP_OPEN)
        g->n++;
    int p2p = c->op == RSR_COLL_SEND || c->op == RSR_COLL_RECV;
    *u = (struct rsr_group_unit){ .group = group, .comm = c->comm_id, .index = m->n_colls - 1,
                                  .coll_seq = UINT32_MAX, .p2p_seq = p2p ? p2p_number(g, c->comm_id, -1) : 0,
                                  .pair_seq = p2p && c->peer >= 0 ? p2p_number(g, c->comm_id, c->peer) : 0,
                                  .first_peer = p2p ? c->peer : -1 };
    count_call(u, c);
    c->group_calls = 1;
}

void rsr_group_close(struct rsr_group_fold *g)
{
    g->n = 0;
    g->stamp = 0;
}

void rsr_group_free(struct rsr_group_fold *g)
{
    free(g->counts);
    g->counts = NULL;
    g->n_counts = 0;
}
