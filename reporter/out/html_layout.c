/* The page's grid of ranks by their place in the parallel layout (see
 * html_layout.h). */
#include "reporter/out/html_layout.h"
#include "reporter/out/html_json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cell {
    double rank;
    int32_t stage, data, tensor;
    double wait_pct;            /* summed over the roles */
    yajl_val by_role;
};

static int32_t coord(yajl_val c, const char *role)
{
    double v;
    return rsr_jv_knum(c, role, &v) && v >= 0 && v < INT32_MAX ? (int32_t)v : 0;
}

/* White to the page's red by the share of the most. */
static void shade(FILE *f, double frac)
{
    if (frac < 0)
        frac = 0;
    if (frac > 1)
        frac = 1;
    int r = 255 - (int)(frac * (255 - 209)), g = 255 - (int)(frac * (255 - 36)), b = 255 - (int)(frac * (255 - 47));
    fprintf(f, " style=\"background:#%02x%02x%02x%s\"", r, g, b, frac > 0.6 ? ";color:#fff" : "");
}

static void put_cell(FILE *f, const struct cell *c, double most)
{
    fprintf(f, "<td data-rank=\"%.0f\" data-stage=\"%d\" data-data=\"%d\" data-tensor=\"%d\"", c->rank, (int)c->stage,
            (int)c->data, (int)c->tensor);
    shade(f, most > 0 ? c->wait_pct / most : 0);
    fprintf(f, " title=\"rank %.0f: stage %d, data %d, tensor %d; waiting %.1f%% of the time", c->rank, (int)c->stage,
            (int)c->data, (int)c->tensor, c->wait_pct);
    const char *sep = " (";
    for (size_t k = 0; c->by_role && YAJL_IS_OBJECT(c->by_role) && k < c->by_role->u.object.len; k++) {
        double w = rsr_jv_knum_or(c->by_role->u.object.values[k], "wait_pct", 0);
        fprintf(f, "%s", sep);
        rsr_html_text(f, c->by_role->u.object.keys[k]);
        fprintf(f, " %.1f%%", w);
        sep = ", ";
    }
    fprintf(f, "%s\">%.0f<br>%.1f%%</td>", *sep == ',' ? ")" : "", c->rank, c->wait_pct);
}

void rsr_html_layout(FILE *f, yajl_val root)
{
    yajl_val procs = rsr_jv_key(root, "processes");
    size_t np = rsr_jv_len(procs), n = 0;
    struct cell *v = calloc(np ? np : 1, sizeof *v);
    if (!v)
        return;
    int32_t ns = 0, nd = 0, nt = 0;
    int has_stage = 0, has_data = 0, has_tensor = 0;
    for (size_t i = 0; i < np; i++) {
        yajl_val x = rsr_jv_at(procs, i), c = rsr_jv_key(x, "coords");
        double rank;
        if (!c || !rsr_jv_num(rsr_jv_key(x, "rank"), &rank))
            continue;
        struct cell *e = &v[n++];
        e->rank = rank;
        e->stage = coord(c, "pipeline"), e->data = coord(c, "data"), e->tensor = coord(c, "tensor");
        has_stage |= rsr_jv_key(c, "pipeline") != NULL;
        has_data |= rsr_jv_key(c, "data") != NULL;
        has_tensor |= rsr_jv_key(c, "tensor") != NULL;
        e->by_role = rsr_jv_key(x, "comm_by_role");
        for (size_t k = 0; e->by_role && YAJL_IS_OBJECT(e->by_role) && k < e->by_role->u.object.len; k++)
            e->wait_pct += rsr_jv_knum_or(e->by_role->u.object.values[k], "wait_pct", 0);
        if (e->stage >= ns)
            ns = e->stage + 1;
        if (e->data >= nd)
            nd = e->data + 1;
        if (e->tensor >= nt)
            nt = e->tensor + 1;
    }
    if (!n) {
        free(v);
        return;
    }
    /* rows: stage-major, then data index; as many as fit RSR_HTML_LAYOUT_CELLS */
    size_t rows = (size_t)ns * (size_t)nd, cols = (size_t)nt;
    size_t keep = rows * cols <= RSR_HTML_LAYOUT_CELLS ? rows : RSR_HTML_LAYOUT_CELLS / cols;
    if (!keep)
        keep = 1;
    struct cell **grid = calloc(keep * cols, sizeof *grid);
    if (!grid) {
        free(v);
        return;
    }
    size_t shared = 0, left = 0, most_i = 0;
    double most = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = (size_t)v[i].stage * (size_t)nd + (size_t)v[i].data;
        if (v[i].wait_pct > most)
            most = v[i].wait_pct, most_i = i;
        if (r >= keep) {
            left++;
            continue;
        }
        struct cell **at = &grid[r * cols + (size_t)v[i].tensor];
        if (*at)
            shared++;
        else
            *at = &v[i];
    }
    fputs("<h3>Parallel layout</h3><p class=\"note\" id=\"layout-note\">Each rank by its place in the job's "
          "groups: ",
          f);
    fputs(has_stage ? "pipeline stage" : "", f);
    fputs(has_stage && has_data ? " and " : "", f);
    fputs(has_data ? "data parallel index" : "", f);
    fputs(has_stage || has_data ? " down, " : "", f);
    fputs(has_tensor ? "tensor parallel index across" : "one column", f);
    fprintf(f, "; shaded by its waiting in its groups' calls (for a late rank, or for the stage before or after), "
               "in %% of the job's time: the most, %.1f%%, is rank %.0f's.", most, v[most_i].rank);
    if (left)
        fprintf(f, " %zu ranks past the first %zu rows are left out.", left, keep);
    if (shared)
        fprintf(f, " %zu ranks share a place with another (their other coordinates are not drawn).", shared);
    fputs("</p>\n<table class=\"grid\" id=\"grid-layout\"><thead><tr><th>stage</th><th>data</th>", f);
    for (size_t t = 0; t < cols; t++)
        fprintf(f, "<th>tensor %zu</th>", t);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t r = 0; r < keep; r++) {
        fprintf(f, "<tr><th>%zu</th><th>%zu</th>", r / (size_t)nd, r % (size_t)nd);
        for (size_t t = 0; t < cols; t++) {
            if (grid[r * cols + t])
                put_cell(f, grid[r * cols + t], most);
            else
                fputs("<td></td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    free(grid);
    free(v);
}
