/* The HTML report (OUT/index.html): one self-contained page, inline CSS, JS
 * and SVG, no network, that opens from file://. It is drawn from report.json
 * (the summary, findings, utilisation charts and tables) and from the
 * per-process GPU timelines (rsr_model) for the zoomable timeline lanes. */
#ifndef RSR_HTML_H
#define RSR_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "reporter/model.h"

/* Writes the page to f. report_json holds len bytes of report.json (need
 * not be NUL-terminated); any key may be missing, and the page shows what
 * there is (a job with only file I/O has no GPU figures and no lanes).
 * models are the finished GPU timelines, one per process, already on one
 * time line; nmodels may be 0. Every text from a trace is escaped, so a name
 * such as <img src=x onerror=...> shows as text and runs nothing.
 * Returns 0, or -1 with errno set: EINVAL when report_json is not a JSON
 * object, ENOMEM, or the errno of a failed write (EIO when stdio has none). */
int rsr_html_write(FILE *f, const char *report_json, size_t len,
                   struct rsr_model *const *models, size_t nmodels);

/* The same with flame graphs: each of the nflames SVG files (`ringside
 * flame` output, OUT/flame-*.svg) is inlined in the page as a data: URL in
 * a sandboxed iframe, so its own script (zoom, search) still runs but cannot
 * reach the page. A file that cannot be read is named in the page instead.
 * This is the hook for the flame graphs; rsr_html_write passes none. */
int rsr_html_write_flames(FILE *f, const char *report_json, size_t len,
                          struct rsr_model *const *models, size_t nmodels,
                          const char *const *flame_svgs, size_t nflames);

/* What `ringside report -o OUT` calls: reads OUT/report.json, inlines the
 * OUT/flame-*.svg files there (in name order), and writes OUT/index.html
 * through a temporary file renamed into place. Returns 0, or -1 with errno
 * set and the path that failed in *failed (static storage). */
int rsr_html_write_dir(const char *out_dir, struct rsr_model *const *models, size_t nmodels,
                       const char **failed);

#endif
