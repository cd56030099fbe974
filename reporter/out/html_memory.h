/* The page's GPU memory section: from report.json's "memory" (the job's)
 * and processes[].memory, a chart per process of the device bytes its
 * program held and the driver's figure of the memory in use over time, the
 * device's memory as a dashed line, the peak and a failed allocation
 * marked; the processes with the largest peaks, the one that ran out and
 * the one whose memory grows first. */
#ifndef RSR_HTML_MEMORY_H
#define RSR_HTML_MEMORY_H

#include <stdio.h>

#include <yajl/yajl_tree.h>

/* Processes charted at most. */
#define RSR_HTML_MEM_CHARTS 8

/* Writes the section for root (report.json); nothing when no process has
 * memory figures. */
void rsr_html_memory(FILE *f, yajl_val root);

#endif
