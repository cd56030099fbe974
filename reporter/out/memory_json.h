/* report.json's "memory": each process's (under processes[]) and the job's
 * (docs/report-json.md, 'memory'), from the models' memory figures
 * (load/memory.h) and the job's memory analysis (analyse/memory.h). */
#ifndef RSR_MEMORY_JSON_H
#define RSR_MEMORY_JSON_H

#include <stddef.h>

#include "reporter/analyse/job.h"
#include "reporter/base/json.h"

/* The members of process i's "memory" object besides its call counts:
 * none when it has no memory figures. */
void rsr_memory_process_json(struct rsr_jw *w, const struct rsr_job *j, size_t i);

/* "memory": the job's (its peak, out-of-memory, leak, retries); absent
 * when no process has memory figures. */
void rsr_memory_job_json(struct rsr_jw *w, const struct rsr_job *j);

#endif
