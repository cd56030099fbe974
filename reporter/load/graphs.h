/* CUDA graphs in the reporter: the nodes each graph of a process was captured
 * with (GraphNode, GraphEdge records) and how a graph launch's measured GPU
 * time is shared among them. Per-node times are not measured (the agent times
 * the launch as a whole): the launch's span is laid out as an estimated
 * schedule, each node after the nodes it depends on, a kernel, copy or set
 * lasting the mean GPU time of its name outside graphs in the process (the mean
 * of those where its name never ran outside one), the collectives what is left
 * of the launch's span, shared in proportion to their bytes (their times
 * outside graphs hold the waits for other ranks, which differ run to run);
 * the schedule is then scaled to the launch's span. */
#ifndef RSR_GRAPHS_H
#define RSR_GRAPHS_H

#include <stdint.h>
#include "formats/chunk.h"
#include "formats/trace.h"

/* A captured node; name is the caller's string id (as name_of gave it). */
struct rsr_graph_node {
    uint32_t name, stack;
    uint64_t bytes, comm;  /* comm: the communicator's id, collectives */
    struct rsf_launch geom;
    uint8_t kind;          /* enum rsf_graph_node_kind */
    uint8_t op;            /* enum rsf_coll_op, collectives */
};

struct rsr_graphs;

/* An empty set; NULL when out of memory. */
struct rsr_graphs *rsr_graphs_new(void);
void rsr_graphs_free(struct rsr_graphs *g);
/* Takes a chunk's graph nodes and edges; name_of maps a file string id to the
 * caller's. Records that do not fit (a node index past 2^20, an edge between
 * unknown nodes) are left out. Returns 0, or -1 when out of memory. */
int rsr_graphs_take(struct rsr_graphs *g, const struct rsf_chunk *c,
                    uint32_t (*name_of)(void *arg, uint32_t sid), void *arg);
/* A kernel named name (caller's id) ran outside any graph, timed as e says.
 * A time whose end is its launch call's end (within 20 us) bounds the kernel
 * rather than measuring it (the end event went on the stream after the work
 * was done: a slow first launch, say): such times count only for a name that
 * has no other. Returns 0, or -1 when out of memory. */
int rsr_graphs_seen(struct rsr_graphs *g, uint32_t name, const struct rsf_gpu_event *e);
/* Shares [start, end) of a launch of graph gid among its nodes: fn(arg, node,
 * its start, its end) for each, in node order. Returns the number of nodes
 * (0: the graph is not known, fn not called), or -1 when out of memory or fn
 * returned non-zero. */
int rsr_graphs_split(struct rsr_graphs *g, uint32_t gid, int64_t start, int64_t end,
                     int (*fn)(void *arg, const struct rsr_graph_node *n, int64_t s, int64_t e), void *arg);

#endif
