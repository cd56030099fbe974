/* The job's trace files, found and loaded: shared out among the reporter's
 * processes under MPI (mpi.h: the largest files first, each to the process
 * with the fewest bytes), each streaming its share into summaries, the
 * others sending theirs, packed, to the first. One process loads them all. */
#ifndef RSR_SHARE_H
#define RSR_SHARE_H

#include "reporter/load/flame.h"
#include "reporter/load/load.h"
#include "reporter/mpi/mpi.h"

/* A job's files, streamed into summaries, in the order rsr_inputs_sort gives;
 * models[i] is ins[i]'s (an empty one where loading failed). */
struct rsr_loaded {
    char **files;
    int n;
    struct rsr_input *ins;
    struct rsr_model **models;
    int readable;               /* files with a chunk that could be read */
    struct rsr_flame *fls;      /* the flame trees by kind, when asked for */
    double peak_rss_mb;         /* the largest of any reporter process's */
};

/* Finds and streams the trace files under paths (the newest run of a folder
 * of job folders, runs.h), saying on stderr what was damaged or lost; with
 * flames set, loads the flame trees too. Over MPI, every process reads its
 * share and the first gathers the rest. Returns 0 (the first process: J
 * holds the job), 1 with a message (no file, out of memory, more than one
 * run), or -1 on the other processes once their share is sent (*rc
 * then holds their exit status). quiet: no progress on stderr; lines:
 * source lines in the flame trees' frame names. */
int rsr_job_load(struct rsr_loaded *J, char **paths, int npaths, const struct rsr_mpi *mp, int flames,
                 int quiet, int lines, int *rc);

/* Frees what rsr_job_load (or a caller filling J the same way) allocated. */
void rsr_job_unload(struct rsr_loaded *J);

/* One line per damaged file, on stderr. */
void rsr_warn_damage(const struct rsr_input *in);

#endif
