/* The page's critical path (see html_path.h). */
#include "reporter/out/html_path.h"
#include "reporter/out/html_json.h"

#include <math.h>
#include <string.h>

/* A colour per cause (critpath.h's order); grey for one not listed. */
static const char *colour(const char *cause)
{
    static const struct {
        const char *cause, *rgb;
    } c[] = {
        { "checkpoint", "#8e24aa" }, { "data_loading", "#fb8c00" }, { "file_io", "#ab47bc" },
        { "sleep", "#90a4ae" },      { "lock", "#6d4c41" },         { "host_wait", "#a1887f" },
        { "sync", "#fdd835" },       { "host", "#c8c8c8" },         { "transfer", "#e53935" },
        { "imbalance", "#1e88e5" },  { "evaluation", "#228833" },   { "compute", "#43a047" },
        { "copies", "#00acc1" },
    };
    for (size_t i = 0; cause && i < sizeof c / sizeof c[0]; i++)
        if (strcmp(c[i].cause, cause) == 0)
            return c[i].rgb;
    return "#9e9e9e";
}

void rsr_html_critpath(FILE *f, yajl_val root)
{
    yajl_val cp = rsr_jv_key(root, "critical_path"), parts = rsr_jv_key(cp, "parts");
    double per = rsr_jv_knum_or(cp, "per_step_ms", 0);
    if (!cp || !rsr_jv_len(parts) || per <= 0)
        return;
    fprintf(f, "<section id=\"critical_path\"><h2>Critical path</h2><p class=\"note\">Each step's time on the rank "
               "whose own work ended last, by cause, over %.0f steps: %.3g ms per step. A cause's gain is what "
               "the steps would take without it (the ranks re-timed), at most its share.</p>\n",
            rsr_jv_knum_or(cp, "steps", 0), per);
    fputs("<div class=\"pathbar\" style=\"display:flex;height:18px;margin:4px 0 8px\">", f);
    for (size_t i = 0; i < rsr_jv_len(parts); i++) {
        yajl_val x = rsr_jv_at(parts, i);
        double pct = rsr_jv_knum_or(x, "pct", 0);
        if (pct <= 0)
            continue;
        fprintf(f, "<span style=\"width:%.3f%%;background:%s\" title=\"", fmin(pct, 100),
                colour(rsr_jv_kstr(x, "cause")));
        rsr_html_text(f, rsr_jv_kstr(x, "text"));
        fprintf(f, ": %.3g ms (%.0f%%)\"></span>", rsr_jv_knum_or(x, "ms_per_step", 0), pct);
    }
    fputs("</div>\n<table class=\"path\"><thead><tr><th>cause</th><th>ms per step</th><th>share</th>"
          "<th>removed, gives back</th><th>ms per step without it</th><th>on rank</th>"
          "<th>what the host was doing (heaviest stack)</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < rsr_jv_len(parts); i++) {
        yajl_val x = rsr_jv_at(parts, i);
        double gain, what, rank;
        fprintf(f, "<tr><td><span class=\"key\" style=\"background:%s\"></span>", colour(rsr_jv_kstr(x, "cause")));
        rsr_html_text(f, rsr_jv_kstr(x, "text"));
        fprintf(f, "</td><td class=\"n\">%.3g</td><td class=\"n\">%.0f%%</td>", rsr_jv_knum_or(x, "ms_per_step", 0),
                rsr_jv_knum_or(x, "pct", 0));
        if (rsr_jv_knum(x, "recoverable_pct", &gain) && rsr_jv_knum(x, "whatif_ms_per_step", &what))
            fprintf(f, "<td class=\"n\">%.0f%%</td><td class=\"n\">%.3g</td>", gain, what);
        else
            fputs("<td class=\"n\">&ndash;</td><td class=\"n\">&ndash;</td>", f);
        if (rsr_jv_knum(x, "rank", &rank))
            fprintf(f, "<td class=\"n\">%.0f</td>", rank);
        else
            fputs("<td class=\"n\">&ndash;</td>", f);
        /* the part's heaviest stack, its innermost frames last */
        yajl_val frames = rsr_jv_key(x, "frames");
        const char *top = rsr_jv_len(frames) ? YAJL_GET_STRING(rsr_jv_at(frames, 0)) : NULL;
        fputs("<td class=\"stack\">", f);
        if (top && rsr_jv_knum(x, "frames_rank", &rank)) {
            fprintf(f, "rank %.0f: ", rank);
            rsr_html_text(f, top);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}
