/* The banner for trace files that end early (see html_ends.h): one line
 * per file, worded as the text summary words it (report.c). */
#include "reporter/out/html_ends.h"
#include "reporter/out/html_json.h"
#include "reporter/out/html_names.h"

#include <yajl/yajl_tree.h>

void rsr_html_ends_banner(FILE *f, yajl_val root, const struct rsr_html_names *names)
{
    yajl_val ends = rsr_jv_key(root, "ends_early");
    size_t n = rsr_jv_len(ends);
    if (!n)
        return;
    double wall = rsr_jv_knum_or(root, "wall_s", 0);
    fprintf(f, "<section id=\"ends-early\" class=\"banner\"><h2>%zu trace file%s end%s early</h2><ul>\n", n,
            n == 1 ? "" : "s", n == 1 ? "s" : "");
    for (size_t i = 0; i < n; i++) {
        yajl_val e = rsr_jv_at(ends, i);
        double rank;
        const char *name = rsr_html_name(names, e);
        if (rsr_jv_knum(e, "rank", &rank)) {
            fprintf(f, "<li>rank %.0f's file", rank);
        } else if (name) {
            fputs("<li>", f);
            rsr_html_text(f, name);
            fputs("'s file", f);
        } else {
            fprintf(f, "<li>process %.0f's file", rsr_jv_knum_or(e, "pid", 0));
        }
        fprintf(f, " ends at %.2f s of %.2f s, covering %.1f%% of the run (", rsr_jv_knum_or(e, "ends_s", 0), wall,
                rsr_jv_knum_or(e, "covers_pct", 0));
        if (YAJL_IS_TRUE(rsr_jv_key(e, "cut_short")))
            fprintf(f, "cut short: %.0f bytes unread", rsr_jv_knum_or(e, "unread_bytes", 0));
        else
            fputs("no end mark: the process was killed", f);
        fputs("): <code>", f);
        rsr_html_text(f, rsr_jv_kstr(e, "file"));
        fputs("</code></li>\n", f);
    }
    fputs("</ul><p class=\"note\">Nothing after the end of a file is counted against its process: it is late "
          "for no collective after it, and its own figures cover only the time its file does (the timeline "
          "shows no work for it after that).</p></section>\n", f);
}
