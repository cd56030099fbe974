/* The HTML page's style sheet and script (html_script.c), written inline
 * into <style> and <script> by html.c. */
#ifndef RSR_HTML_SCRIPT_H
#define RSR_HTML_SCRIPT_H

/* The page's CSS. */
extern const char rsr_html_css[];
/* The page's script: one function run at load. It reads the elements and
 * the JSON blocks html.c and html_ranks.c write (#tl, #tl-names, #tl-ops,
 * .chart svg, #rank-data, canvas.strip, canvas.hm, #wait-ranks,
 * table.sort), skips those a page lacks, and sets body[data-ready] last. */
extern const char rsr_html_js[];

#endif
