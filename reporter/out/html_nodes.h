/* The page's nodes section: from report.json's "nodes" (nodes.h), per host
 * its CPU and memory, what its interconnect carried while the collectives
 * ran against the link's rate, a table of links and of block devices and
 * NFS mounts, and charts over the job's time line: each busy link's
 * throughput against its rate with the collectives' share shaded, storage
 * throughput with the checkpoints shaded, CPU and memory use. */
#ifndef RSR_HTML_NODES_H
#define RSR_HTML_NODES_H

#include <stdio.h>

#include <yajl/yajl_tree.h>

/* Links charted per node at most (the busiest). */
#define RSR_HTML_NODE_LINKS 4

/* Writes the section for root (report.json); nothing when it has no
 * nodes. */
void rsr_html_nodes(FILE *f, yajl_val root);

#endif
