/* The page's banner for trace files that end early (ends.h): from
 * report.json's ends_early, whose file ends where, how much of the run it
 * covers and why, above everything else on the page (html.c). */
#ifndef RSR_HTML_ENDS_H
#define RSR_HTML_ENDS_H

#include <stdio.h>

#include <yajl/yajl_tree.h>

struct rsr_html_names;

/* Writes the banner for root (report.json), its processes named by names
 * (html_names.h); nothing when no file ends early. */
void rsr_html_ends_banner(FILE *f, yajl_val root, const struct rsr_html_names *names);

#endif
