/* The page's parallel layout: a grid of the job's ranks by pipeline stage,
 * data parallel index (rows) and tensor parallel index (columns), each
 * rank's cell coloured by the share of the job's time it spent waiting in
 * its communication groups' calls (for a late rank, or in a pipeline for
 * the stage before or after). Read from report.json's processes[].coords
 * and comm_by_role (report.c); written only where the processes have
 * coordinates (a job more than data parallel). */
#ifndef RSR_HTML_LAYOUT_H
#define RSR_HTML_LAYOUT_H

#include <stdio.h>
#include <yajl/yajl_tree.h>

/* Cells drawn at most; a larger job's grid says how many were left out. */
#define RSR_HTML_LAYOUT_CELLS 4096

void rsr_html_layout(FILE *f, yajl_val root);

#endif
