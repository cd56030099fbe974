/* torch.compile's work (compile.h) in report.json and the text summary,
 * over the loaded inputs. */
#ifndef RSR_COMPILE_JSON_H
#define RSR_COMPILE_JSON_H

#include <stdio.h>

#include "reporter/load/compile.h"

/* report.json and the summary (report.c), over the loaded inputs
 * ins[0..n) (load.h), whose models carry the compile samples (waits.h). */
struct rsr_input;
struct rsr_jw;

/* The process that a compile worker or compiler run ins[i] works for:
 * its nearest ancestor among the inputs (by parent pid, on its host) that
 * is neither; -1 when ins[i] is neither or that ancestor has no trace. */
int rsr_compile_owner(const struct rsr_input *ins, int n, int i);

/* Writes ins[i]'s "compile" key and object (processes[].compile) into the
 * object w (json.h) has open: for a process that compiled or owns workers,
 * "time_s" (Dynamo and Inductor together, thread-seconds of CPU and wait
 * samples), "dynamo_s", "inductor_s", "workers" (their pids),
 * "compiler_runs"; for a worker or a compiler run, "kind" ("worker",
 * "compiler") and "for_pid" (rsr_compile_owner, null when not traced).
 * Writes nothing for any other process. */
void rsr_compile_process_json(struct rsr_jw *w, const struct rsr_input *ins, int n, int i);

/* Writes the job's "compile" key and object, on a line of its own
 * ("time_s", "dynamo_s", "inductor_s", "processes" that compiled,
 * "workers", "compiler_runs"), nothing when nothing was compiled; and the
 * summary's line. */
void rsr_compile_job_json(struct rsr_jw *w, const struct rsr_input *ins, int n);
void rsr_compile_summary(FILE *f, const struct rsr_input *ins, int n);

#endif
