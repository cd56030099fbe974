/* The page's off-CPU section: from report.json's processes[].waits,
 * wait_causes and threads (waits.h), the processes that spent the most
 * time blocked, their reasons and causes, and per thread its running time
 * against its blocked time. Written beside the flame graphs (html.c). */
#ifndef RSR_HTML_WAITS_H
#define RSR_HTML_WAITS_H

#include <stdio.h>

#include <yajl/yajl_tree.h>

struct rsr_html_names;

/* Processes shown, those with the most blocked time. */
#define RSR_HTML_WAIT_PROCS 8

/* Writes the section for procs (report.json's processes); nothing when no
 * process has CPU or wait samples. */
void rsr_html_offcpu(FILE *f, yajl_val procs, const struct rsr_html_names *names);

#endif
