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

#include "reporter/load/model.h"
#include "reporter/load/nodes_load.h"

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

#endif
