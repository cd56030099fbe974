/* `ringside report`: finds the trace files of a job, loads them, writes
 * report.json (its keys declared in formats/report.schema.json) and a text summary. */
#ifndef RSR_REPORT_H
#define RSR_REPORT_H

#include <stdio.h>

#include "reporter/load/load.h"
#include "reporter/out/pftrace.h"

struct rsr_report_opts {
    const char *out_dir;   /* OUT/report.json; NULL: none */
    const char *json_path; /* --json FILE; NULL: none */
    int quiet;
    int lines;             /* --lines: source lines in the flame graphs' frame names */
    const int *ranks;      /* --ranks: ranks drawn in full (lanes, trace.json) */
    int nranks;
    unsigned long long memory_mb; /* --memory-mb: the bound (load.h); 0: none */
    double watch_s;        /* --watch S: rewrite the outputs every S seconds while the job runs; 0: once */
    const char *prom_dir;  /* --prom-dir DIR: DIR/ringside-JOB.prom with every report.json (prom.h); NULL: none */
    int running;           /* a report of a job still running (--watch's): no slow steps' flame graphs and no
                            * trace.pftrace (each would read files again); the last one writes them */
};

/* Processes drawn in full (timeline lanes, trace.json) at most, and GPU ops
 * and syncs in them at most, all lanes together: beyond that the lanes
 * cover a window of the job (report.json "lanes" says which and how to
 * export the rest). */
#define RSR_LANES_MAX 8
#define RSR_LANES_EVENTS 250000
/* `ringside export perfetto`: summarises every file (for the clocks), then
 * writes the chosen processes over the chosen stretch, in full, to o->out:
 * as report's trace.json (Kineto-compatible JSON) when o->out ends in
 * .json, else in Perfetto's protobuf format (pftrace.h). Returns the exit
 * status. */
int rsr_export_run(char **paths, int npaths, const struct rsr_export_opts *o);

/* Reports the job under paths as o asks (the report command's work; history
 * and diff report runs through it too). Returns the exit status. */
int rsr_report_run(char **paths, int npaths, const struct rsr_report_opts *o);

#endif
