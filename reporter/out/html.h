/* The HTML report (OUT/index.html): one self-contained page, inline CSS, JS,
 * SVG and <canvas>, no network, that opens from file://. It is drawn from
 * report.json (summary, findings, per-rank figures, heatmaps, charts and
 * tables, embedded only as far as the page draws them) and from the GPU
 * timelines (rsr_model) of the few processes that get zoomable lanes. Its
 * size grows with the ranks by about half a kilobyte each (their timeline
 * bins, figures and table row), not with the length of the job; the lanes
 * are thinned to a bounded number of rectangles. */
#ifndef RSR_HTML_H
#define RSR_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "reporter/load/model.h"

/* Writes the page to f. report_json holds len bytes of report.json (need
 * not be NUL-terminated); any key may be missing, and the page shows what
 * there is (a job with only file I/O has no GPU figures and no lanes).
 * models are the finished GPU timelines of the processes that get lanes,
 * already on the job's time line; nmodels may be 0. Lanes are drawn for
 * every model when report.json has "lanes" (labelled with their "why", cut
 * to its window unless "whole_job") or when there are at most 8; more
 * models and no "lanes": for rank 0, the straggler, the slowest and the
 * fastest only. Every text from a trace is escaped, so a name
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

/* The whole file at path in a malloc'd buffer (NUL added, not counted in
 * *len); NULL with errno set when it cannot be read. */
char *rsr_html_slurp(const char *path, size_t *len);

/* Writes the SVG file at svg_path into page f as a heading and a
 * sandboxed frame (its script runs, in an opaque origin); a file that
 * cannot be read becomes a note saying why. */
void rsr_html_flame_frame(FILE *f, const char *svg_path);

#endif
