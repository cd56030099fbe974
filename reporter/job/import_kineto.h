/* `ringside import-kineto`: PyTorch profiler (Kineto) traces -> ringside
 * trace files, so that `ringside report` treats a job profiled with PyTorch
 * like one recorded by the agent. Reading is kineto.c's; writing goes
 * through formats/ (chunk encoder, LZ4 frames) as the agent's writer does. */
#ifndef RSR_IMPORT_KINETO_H
#define RSR_IMPORT_KINETO_H

#include <stddef.h>

#include "reporter/load/kineto.h"
#include "reporter/load/model.h"

/* Events per chunk: keeps a chunk (and the memory to encode it) bounded. */
#define RSR_IMPORT_CHUNK_EVENTS 16384

/* Writes the model m, loaded from the Kineto trace source (info as
 * rsr_kineto_load_info gave it), as one ringside trace file in dir (created
 * with mode 0700 if missing), named as the agent names its files:
 * rank-<R>.<host>.<pid>.trace.lz4, or proc.<host>.<pid>.trace.lz4 without a
 * rank, with .1, .2... before .trace.lz4 when the name is taken (a file is
 * never overwritten). Kineto records no host name: the host is "unknown".
 * The name written is put in path (pathlen bytes). Returns 0, or -1 with one
 * line in msg naming the file and what failed. */
int rsr_import_write(const struct rsr_model *m, const struct rsr_kineto_info *info,
                     const char *source, const char *dir, char *path, size_t pathlen,
                     char *msg, size_t msglen);

/* The whole command: each of in[0..n) into dir, one file per process the
 * trace holds (one for a profiler's trace; one per rank for a job's
 * trace.json from `ringside report`); files are converted in
 * parallel (up to nthreads at once). Prints one line per file written
 * unless quiet, and one line per failure on stderr. Returns the exit
 * status: 0 all converted, 1 any failure. */
int rsr_import_kineto_run(char **in, int n, const char *dir, int nthreads, int quiet);

#endif
