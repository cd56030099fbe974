/* How the page names processes and the job: a rank's child by its rank
 * and what it is ("rank 0 · DataLoader worker", "rank 1 · sha256sum"), a
 * launcher as one, and a job with no name of its own by its launcher and
 * start time. Read from report.json's processes[] (role, rank,
 * parent_rank, pid, ppid, argv) once, before the page is written. */
#ifndef RSR_HTML_NAMES_H
#define RSR_HTML_NAMES_H

#include <stddef.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

struct rsr_html_names;

/* The names of root's processes[]. NULL with errno ENOMEM; freed by
 * rsr_html_names_free (NULL is fine). */
struct rsr_html_names *rsr_html_names_read(yajl_val root);
void rsr_html_names_free(struct rsr_html_names *n);

/* The name of proc: an element of processes[], or an object that names a
 * process by "pid" (and "host") or by "rank" only (timeline.ranks[]).
 * Owned by n; NULL when n has no such process (or n is NULL). */
const char *rsr_html_name(const struct rsr_html_names *n, yajl_val proc);
/* The name of the process of pid (on any host: for a timeline, which
 * knows no host), or NULL. */
const char *rsr_html_name_pid(const struct rsr_html_names *n, double pid);
/* That name written as HTML text; for a process n does not hold, "rank R",
 * else "pid P", else "process". */
void rsr_html_proc(FILE *f, const struct rsr_html_names *n, yajl_val proc);

/* The page's title into b: report.json's "job", or, when the job has no
 * name of its own (none, torchrun's placeholder run id "none", or the
 * name the agent made up from a host, a time and a pid), its launcher's
 * program and the job's start time: "torchrun job · 2026-11-28 04:12 UTC". */
void rsr_html_title(const struct rsr_html_names *n, yajl_val root, char *b, size_t len);

#endif
