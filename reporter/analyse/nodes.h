/* The node's own counters in the report (docs/agent.md, 'The node: links,
 * storage, CPU'): links, block devices and NFS mounts, CPU and memory, sampled by
 * one process per host at a time (preload/metrics.c). Each trace file's
 * series stream into a per-process summary of bounded size (first and last
 * values, increases, peak rate, RSR_NODE_BINS bins); the job's analysis
 * merges a host's series across its processes' files in time order (the
 * counters are the node's, whoever read them) into report.json's "nodes",
 * with each link's throughput while the host's ranks ran collectives. GPU
 * series (gpu_*) are not read here. */
#ifndef RSR_NODES_H
#define RSR_NODES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/chunk.h"
#include "reporter/load/model.h"

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

struct rsr_pack;
struct rsr_unpack;

/* Appends a process's node series (NULL: none) to b, for another reporter
 * process (pack.h); rsr_nodes_unpack reads them back into *out (NULL when
 * none; the caller frees it with rsr_node_proc_free, also after a
 * failure). Names travel as the model's string ids: the model's strings
 * must travel too, in order (pack.c's pack_model). Returns 0, or -1 when
 * the bytes are short or malformed, or memory ran out. */
void rsr_nodes_pack(struct rsr_pack *b, const struct rsr_node_proc *p);
int rsr_nodes_unpack(struct rsr_unpack *u, struct rsr_node_proc **out);

/* ---- the job's nodes (after alignment) ---- */

struct rsr_node_link {
    const char *name;
    uint8_t link;               /* enum rsf_link_kind */
    double rate_gbs;            /* 0: not known */
    uint64_t tx_bytes, rx_bytes;
    double mean_gbs, peak_gbs;  /* the busier direction */
    double in_coll_gbs;         /* while the host's ranks ran collectives; < 0: none ran */
    double *tx_gbs, *rx_gbs;    /* per timeline bin */
};

struct rsr_node_disk {
    const char *name;
    int nfs;
    uint64_t read_bytes, write_bytes;
    double peak_read_gbs, peak_write_gbs;
    double *read_gbs, *write_gbs;   /* per timeline bin */
};

struct rsr_node {
    const char *host;
    double cpu_pct, mem_used_pct, mem_dirty_mb;  /* < 0: not known */
    double coll_s;              /* time the host's ranks ran collectives (union, estimated) */
    uint32_t files;             /* trace files that held its series */
    struct rsr_node_link *links;
    size_t n_links;
    struct rsr_node_disk *disks;
    size_t n_disks;
    double *cpu_bins, *mem_bins, *coll_bins;    /* % per timeline bin (NAN: no sample) */
};

struct rsr_nodes {
    struct rsr_node *v;
    size_t n;
    int64_t start_ns, bin_ns;   /* the job timeline's bins (timeline.h) */
    size_t nbins;
};

/* The nodes of models[0..n) (aligned: their clock_offset_ns says how their
 * times map onto the job's), binned as [start_ns, start_ns + nbins x
 * bin_ns). Returns 0, or -1 when out of memory (then *out holds what was
 * made; free it either way). */
int rsr_nodes_analyse(struct rsr_model *const *models, size_t n, int64_t start_ns, int64_t bin_ns, size_t nbins,
                      struct rsr_nodes *out);

void rsr_nodes_free(struct rsr_nodes *nodes);

/* The nodes' findings (findings.h): link_underused, the busiest link with
 * a known rate carrying under half of it while the host's collectives ran;
 * host_cpu_saturated, a host busy 90% of the time or more. Writes at most
 * max into out; returns how many. */
struct rsr_finding;
size_t rsr_nodes_findings(const struct rsr_nodes *nodes, struct rsr_finding *out, size_t max);

/* report.json's "nodes" array, key included. */
void rsr_nodes_json(FILE *f, const struct rsr_nodes *nodes);

#endif
