/* The page's critical path (report.json critical_path, critpath.h): one
 * bar of the time per step split by cause, and a table of the causes with
 * their share, what removing each gives back and the time per step without
 * it. Written after the timeline, before the steps (html.c). */
#ifndef RSR_HTML_PATH_H
#define RSR_HTML_PATH_H

#include <stdio.h>

#include <yajl/yajl_tree.h>

/* Writes the block for root (report.json); nothing without critical_path. */
void rsr_html_critpath(FILE *f, yajl_val root);

#endif
