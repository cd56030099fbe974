/* report.json's "nodes" (nodes.h): each host's CPU, memory, links and
 * disks over the job, written through the JSON writer (json.h). */
#ifndef RSR_NODES_JSON_H
#define RSR_NODES_JSON_H

#include "reporter/analyse/nodes.h"
#include "reporter/base/json.h"

/* Writes the "nodes" key and its array, an element per line, into the
 * object w has open. */
void rsr_nodes_json(struct rsr_jw *w, const struct rsr_nodes *nodes);

#endif
