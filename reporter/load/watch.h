/* `ringside report --watch`: the trace files of a running job, read as
 * they grow. Each poll finds the files that appeared since the last and
 * reads only the new whole frames of every file into its streaming
 * summary (load.h's live loading) and its samples (flame.h's feeds);
 * report.c turns the set into a report, in a forked copy while the job
 * runs and in place at its end. */
#ifndef RSR_WATCH_H
#define RSR_WATCH_H

#include <stdint.h>

#include "reporter/load/flame.h"
#include "reporter/load/load.h"

struct rsr_live {
    struct rsr_input in;            /* in.file: the trace file */
    struct rsr_flame_feed *feed;
};

struct rsr_watch {
    char **paths;                   /* the folders watched (the caller's) */
    int npaths;
    int quiet, lines;
    struct rsr_live *lv;            /* the files found so far, in the order found */
    int n, cap;
    uint64_t read_bytes;            /* bytes of trace files read, all polls */
    int ended;                      /* files whose end mark has been read */
};

/* Finds new trace files under w->paths (a folder that does not exist yet
 * is waited for) and reads the new whole frames of every file; with last
 * set, a frame a file ends inside counts as cut short (the job is over).
 * Returns 1 when a file or bytes were new, 0 when nothing was, -1 when a
 * path could not be read (said on stderr). */
int rsr_watch_poll(struct rsr_watch *w, int last);

/* Frees what w holds (the inputs and feeds that remain). */
void rsr_watch_free(struct rsr_watch *w);

#endif
