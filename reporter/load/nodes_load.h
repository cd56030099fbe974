/* The node's counters as one trace file streams past (nodes.h reads them
 * across the job): each series of the file into its process's summary of
 * bounded size (first and last values, increases, peak rate,
 * RSR_NODE_BINS bins), nothing held per point. */
#ifndef RSR_NODES_LOAD_H
#define RSR_NODES_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "formats/chunk.h"

struct rsr_model;

/* Bins per series in a process's summary; they widen (pairs merged) as the
 * series grows, like the summaries' fine bins (summary.h). */
#define RSR_NODE_BINS 1024

/* One series of one file, on the file's own clock. Counters (link, disk,
 * NFS, CPU kinds): moved is the increase from the first point to the last
 * (a value below the one before is a reset: counted from 0, and in
 * resets), peak the largest increase per second between two points, bins
 * the increases spread over the time between points. Gauges (mem_*):
 * moved is the sum of value x ns held, bins the same per bin. */
struct rsr_node_series {
    uint32_t name;              /* model string id */
    uint8_t kind, link, gauge;
    uint8_t pad_[1];
    uint64_t rate;              /* bytes/s, 0: not known */
    uint64_t npoints, resets, late; /* late: points before the last one, left out */
    int64_t first_ns, last_ns;
    uint64_t first, last;
    double moved, peak;
    int64_t bin_start, bin_ns;
    double *bins;               /* RSR_NODE_BINS */
};

/* A process's node series, with the loader's map of file series ids. */
struct rsr_node_proc {
    struct rsr_node_series *s;
    size_t n, cap;
    uint32_t *ids;              /* file id -> index + 1 (while loading) */
    uint32_t nids;
};

/* Takes the series and points of one verified chunk into m->node (made on
 * the first series). strings are the file's by id. Returns 0, or -1 when
 * out of memory. */
int rsr_nodes_chunk(struct rsr_model *m, const struct rsf_chunk *c, char *const *strings, uint32_t nstrings);

/* Frees a process's node series (NULL is fine). */
void rsr_node_proc_free(struct rsr_node_proc *p);

/* Bytes p holds. */
size_t rsr_node_proc_bytes(const struct rsr_node_proc *p);

#endif
