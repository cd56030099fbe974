/* The page's scripts and style sheets (reporter/out/page/), built into the
 * reporter by page.S: html.c, flame_svg.c and the diff and history pages
 * write them inline, so that a page stays one file that opens offline.
 * Each runs from NAME to NAME_end (no NUL), the file as the Makefile leaves
 * it: no opening comment, no // line, no last line end. */
#ifndef RSR_PAGE_H
#define RSR_PAGE_H

#include <stdint.h>
#include <stdio.h>

/* The report page's style sheet and script, which the diff page shares. */
extern const char rsr_page_report_css[], rsr_page_report_css_end[];
extern const char rsr_page_report_js[], rsr_page_report_js_end[];
/* The flame graph SVG's style sheet and script. */
extern const char rsr_page_flame_css[], rsr_page_flame_css_end[];
extern const char rsr_page_flame_js[], rsr_page_flame_js_end[];
/* The report page's switch between a flame graph's Python and native views. */
extern const char rsr_page_flame_switch_js[], rsr_page_flame_switch_js_end[];
/* The history page's style sheet. */
extern const char rsr_page_history_css[], rsr_page_history_css_end[];

/* Writes the asset that runs from start to end (one of the pairs above) to
 * f as it is; a failure shows in ferror(f), as for the page's other writes. */
static inline void rsr_page_put(FILE *f, const char *start, const char *end)
{
    fwrite(start, 1, (size_t)((uintptr_t)end - (uintptr_t)start), f);
}

#endif
