/* `ringside report`: finds the trace files of a job, loads them, writes
 * report.json (the stable schema of design.md) and a text summary. */
#ifndef RSR_REPORT_H
#define RSR_REPORT_H

#include <stdio.h>

#include "reporter/load.h"

struct rsr_report_opts {
    const char *out_dir;   /* OUT/report.json; NULL: none */
    const char *json_path; /* --json FILE; NULL: none */
    int quiet;
    int lines;             /* --lines: source lines in the flame graphs' frame names */
};

/* Collects the *.trace.lz4 files under each of paths (a file, a job folder,
 * or a folder of job folders) into a sorted, malloc'd list. Returns the
 * count, or -1 with a message on stderr when a path cannot be read. */
int rsr_find_traces(char **paths, int npaths, char ***files);

struct rsr_job;

/* Writes report.json for the loaded inputs to f, with the figures of the
 * analyses in job (models in the inputs' order) when job is not NULL. */
void rsr_report_json(FILE *f, struct rsr_input *ins, int n, const struct rsr_job *job);

/* Runs the whole command; returns the exit status. */
int rsr_report_main(char **paths, int npaths, const struct rsr_report_opts *o);

#endif
