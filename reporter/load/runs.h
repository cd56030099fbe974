/* One run per report: the files a report reads must be one run of a job.
 * Before loading, a folder of job folders is cut down to its newest run;
 * after loading, files of more than one run (copied into one folder, given
 * together) are refused with one line naming the runs. */
#ifndef RSR_RUNS_H
#define RSR_RUNS_H

#include "reporter/load/load.h"

/* The processes of one run overlap in time: a launcher outlives the ranks it
 * starts, and the hosts of one job run together for far longer than their
 * clocks disagree. Job folders are one run where their lifetimes overlap.
 * In one folder, whose files share a job id, only a gap longer than
 * RSR_RUN_GAP_NS parts two runs: a launcher may start short ranks one after
 * another, each ending before the next begins (mpirun's orted does). */
#define RSR_RUN_GAP_NS 1000000000LL

/*
 * files[0..*n) (owned, sorted) lie in folders; folders whose lifetimes
 * overlap are one run (a launcher's own folder and its ranks', ranks
 * started by hand each with a job of its own, the nodes of one job). When
 * there are several runs, keeps the files of the newest (the latest
 * start) in files, frees the others, sets *n, and says on stderr which run
 * it reports and, one line each, which it leaves out. A folder's lifetime
 * runs from the earliest start its files' headers give to the last time
 * one of its files was written. */
void rsr_runs_newest(char **files, int *n);

/* Folders named one by one (report A B): the files of one run are merged
 * whatever their folders (the nodes of one job); files of several runs
 * are refused with one line on stderr naming each run (its folders, files
 * and times) and how to pick one: returns 1 then, else 0. */
int rsr_runs_named(char **files, int n);

/* What a command reports of the files found under npaths paths:
 * one path, its newest run (rsr_runs_newest); several, what they name
 * (rsr_runs_named). Returns 0, or 1 after saying why on stderr. */
int rsr_runs_pick(int npaths, char **files, int *n);

/* The same grouping for every run: run_of[i] (0, 1, ... in start order)
 * for each of files[0..n); returns the number of runs. */
int rsr_runs_split(char **files, int n, int *run_of);

/* 0 when ins[0..n) (loaded, in any order) are one run; else prints one
 * line naming two of the runs (job ids, files, times) and returns 1. More
 * than one run: files of one folder with different job ids, two files
 * claiming one rank, or processes whose lifetimes split into groups more
 * than RSR_RUN_GAP_NS apart (a process's files before and after an exec
 * are one lifetime). */
int rsr_runs_check(const struct rsr_input *ins, int n);

/* A rank's process that exec'd (a wrapper, a pyenv shim, `sh -c '...; exec
 * python ...'`) left a file for each image, each claiming the rank: the
 * last image (the program the rank runs) keeps it, the earlier ones become
 * children of that rank. */
void rsr_runs_exec_images(struct rsr_input *ins, int n);

#endif
