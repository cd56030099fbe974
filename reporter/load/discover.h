/* Trace discovery (discover.c): the trace files named by the command line's
 * folders and files. */
#ifndef RSR_DISCOVER_H
#define RSR_DISCOVER_H

/* Collects the *.trace.lz4 files under each of paths (a file, a job folder,
 * or a folder of job folders) into a sorted, malloc'd list. Returns the
 * count, or -1 with a message on stderr when a path cannot be read. */
int rsr_find_traces(char **paths, int npaths, char ***files);

#endif
