/* The page's GPU memory section (html_memory.h). Charts are SVG written
 * here, one point per bin of a process's memory timeline. */
#include "reporter/out/html_memory.h"
#include "reporter/out/html_json.h"
#include "reporter/base/units.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define X0 64.0
#define X1 592.0
#define Y0 14.0
#define Y1 172.0
#define H 210.0
#define GIB 1073741824.0

static double x_at(double t, double span)
{
    return X0 + (X1 - X0) * (span > 0 ? fmin(1, fmax(0, t / span)) : 0);
}

static double y_at(double gib, double top)
{
    return Y1 - (Y1 - Y0) * fmin(gib, top) / top;
}

/* The bytes held, bin by bin from start_s (seconds from the job's start),
 * as steps, on to until_s (the job's end, or the process's failure). */
static void held_line(FILE *f, yajl_val bins, double top, double start_s, double bin_s, double until_s,
                      double span)
{
    double v = 0;
    int any = 0;
    for (size_t i = 0; i < rsr_jv_len(bins); i++) {
        if (!rsr_jv_num(rsr_jv_at(bins, i), &v))
            continue;
        fprintf(f, "%s%.1f,%.1f %.1f,%.1f", any ? " " : "<polyline fill=\"none\" stroke-width=\"1.4\" "
                   "stroke=\"#1f77b4\" points=\"", x_at(start_s + (double)i * bin_s, span), y_at(v / GIB, top),
                x_at(start_s + (double)(i + 1) * bin_s, span), y_at(v / GIB, top));
        any = 1;
    }
    if (any)
        fprintf(f, " %.1f,%.1f\"/>\n", x_at(until_s, span), y_at(v / GIB, top));
}

/* The driver's readings: a dot in each bin that has one (they are few). */
static void used_dots(FILE *f, yajl_val bins, double top, double start_s, double bin_s, double span)
{
    for (size_t i = 0; i < rsr_jv_len(bins); i++) {
        double v;
        if (rsr_jv_num(rsr_jv_at(bins, i), &v))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\" fill=\"#8e8e8e\"/>\n",
                    x_at(start_s + ((double)i + 0.5) * bin_s, span), y_at(v / GIB, top));
    }
}

/* A process's chart over the job's span (span seconds from its start). */
static void chart(FILE *f, yajl_val p, size_t idx, double span)
{
    yajl_val m = rsr_jv_key(p, "memory"), tl = rsr_jv_key(m, "timeline");
    yajl_val held = rsr_jv_key(tl, "held_bytes"), used = rsr_jv_key(tl, "driver_used_bytes");
    double bin_s = rsr_jv_knum_or(tl, "bin_s", 0), start_s = rsr_jv_knum_or(tl, "start_s", 0);
    double total = rsr_jv_knum_or(m, "total_bytes", 0), most = 0;
    double v;
    for (size_t i = 0; i < rsr_jv_len(used); i++)
        if (rsr_jv_num(rsr_jv_at(used, i), &v))
            most = fmax(most, v);
    for (size_t i = 0; i < rsr_jv_len(held); i++)
        if (rsr_jv_num(rsr_jv_at(held, i), &v))
            most = fmax(most, v);
    double top = rsr_html_nice_max(fmax(most, total) / GIB);
    double rank;
    char title[160], peak[32], cap[32] = "";
    rsr_fmt_bytes(peak, sizeof peak, rsr_jv_knum_or(m, "peak_bytes", 0));
    if (total > 0) {
        rsr_fmt_bytes(cap, sizeof cap, total);
    }
    if (rsr_jv_knum(p, "rank", &rank))
        snprintf(title, sizeof title, "rank %.0f: peak %s%s%s", rank, peak, cap[0] ? " of " : "", cap);
    else
        snprintf(title, sizeof title, "pid %.0f: peak %s%s%s", rsr_jv_knum_or(p, "pid", 0), peak,
                 cap[0] ? " of " : "", cap);
    fprintf(f, "<div class=\"nchart\" id=\"memory-%zu\"><h3 style=\"font-size:13px;font-weight:600\">", idx);
    rsr_html_text(f, title);
    fprintf(f, "</h3><svg viewBox=\"0 0 600 %.0f\" role=\"img\" style=\"width:100%%;height:auto;display:block\">\n",
            H);
    for (int k = 0; k <= 4; k++) {
        double y = Y1 - (Y1 - Y0) * k / 4;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/><text x=\"%.0f\" "
                   "y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"#57606a\">%g</text>\n",
                X0, X1, y, y, X0 - 4, y + 3, top * k / 4);
    }
    for (int k = 0; k <= 4; k++) {
        char t[32];
        rsr_html_fmt_ns(t, sizeof t, span * k / 4 * 1e9);
        fprintf(f, "<text x=\"%.1f\" y=\"188\" font-size=\"10\" text-anchor=\"%s\" fill=\"#57606a\">%s</text>",
                X0 + (X1 - X0) * k / 4, k == 0 ? "start" : k == 4 ? "end" : "middle", t);
    }
    rsr_html_axis_titles(f, X0, X1, Y0, Y1, H, "time from the job's start", "GPU memory (GiB)");
    if (total > 0)
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#24292f\" "
                   "stroke-dasharray=\"6 4\"><title>the device's memory, %s</title></line>\n",
                X0, X1, y_at(total / GIB, top), y_at(total / GIB, top), cap);
    /* held until the job's end, or until the failure that ended it */
    yajl_val fails = rsr_jv_key(m, "failures");
    double until = span, oom_at;
    yajl_val oom = rsr_jv_key(m, "oom");
    double fi;
    if (oom && rsr_jv_knum(oom, "failure", &fi) && rsr_jv_knum(rsr_jv_at(fails, (size_t)fi), "t_s", &oom_at))
        until = oom_at;
    used_dots(f, used, top, start_s, bin_s, span);
    held_line(f, held, top, start_s, bin_s, until, span);
    double pk;
    if (rsr_jv_knum(m, "peak_s", &pk) && rsr_jv_knum_or(m, "peak_bytes", 0) > 0)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1f77b4\"><title>peak %s at %.3f s</title>"
                   "</circle>\n",
                x_at(pk, span), y_at(rsr_jv_knum_or(m, "peak_bytes", 0) / GIB, top), peak, pk);
    for (size_t i = 0; i < rsr_jv_len(fails); i++) {
        yajl_val x = rsr_jv_at(fails, i);
        double t;
        if (!rsr_jv_knum(x, "t_s", &t))
            continue;
        int retried = rsr_jv_key(x, "retried") && YAJL_IS_TRUE(rsr_jv_key(x, "retried"));
        char asked[32];
        rsr_fmt_bytes(asked, sizeof asked, rsr_jv_knum_or(x, "asked_bytes", 0));
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"1.2\"%s>"
                   "<title>%s of %s failed at %.3f s%s</title></line>\n",
                x_at(t, span), x_at(t, span), Y0, Y1, retried ? "#f28e2b" : "#d62728",
                retried ? " stroke-dasharray=\"3 3\"" : "", rsr_jv_kstr(x, "call") ? rsr_jv_kstr(x, "call") : "?",
                asked, t, retried ? ", then a retry got past it" : ": out of memory");
    }
    fprintf(f, "<text x=\"%.0f\" y=\"10\" font-size=\"10\" text-anchor=\"end\" fill=\"#1f77b4\">held by the "
               "program</text><text x=\"%.0f\" y=\"10\" font-size=\"10\" text-anchor=\"end\" fill=\"#8e8e8e\">in use "
               "(driver)</text>\n",
            X1, X1 - 130);
    fputs("</svg></div>\n", f);
}

/* The index of the process with the largest peak among those not picked. */
static long next_peak(yajl_val procs, const unsigned char *picked)
{
    long best = -1;
    double bv = -1;
    for (size_t i = 0; i < rsr_jv_len(procs); i++) {
        double v;
        if (!picked[i] && rsr_jv_knum(rsr_jv_key(rsr_jv_at(procs, i), "memory"), "peak_bytes", &v) && v > bv)
            best = (long)i, bv = v;
    }
    return best;
}

/* The process whose rank and pid are in o (the job's oom or leak). */
static long process_of(yajl_val procs, yajl_val o)
{
    double pid;
    if (!o || !rsr_jv_knum(o, "pid", &pid))
        return -1;
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        if (rsr_jv_knum_or(rsr_jv_at(procs, i), "pid", -1) == pid)
            return (long)i;
    return -1;
}

void rsr_html_memory(FILE *f, yajl_val root)
{
    yajl_val jm = rsr_jv_key(root, "memory"), procs = rsr_jv_key(root, "processes");
    if (!jm || !rsr_jv_len(procs))
        return;
    size_t n = rsr_jv_len(procs);
    unsigned char *picked = calloc(n, 1);
    if (!picked)
        return;
    long order[RSR_HTML_MEM_CHARTS];
    size_t k = 0, with = 0;
    for (size_t i = 0; i < n; i++)
        with += rsr_jv_knum_or(rsr_jv_key(rsr_jv_at(procs, i), "memory"), "peak_bytes", -1) >= 0;
    long first[2] = { process_of(procs, rsr_jv_key(jm, "oom")), process_of(procs, rsr_jv_key(jm, "leak")) };
    for (int i = 0; i < 2; i++)
        if (first[i] >= 0 && !picked[first[i]] && k < RSR_HTML_MEM_CHARTS)
            picked[first[i]] = 1, order[k++] = first[i];
    for (long i; k < RSR_HTML_MEM_CHARTS && (i = next_peak(procs, picked)) >= 0;)
        picked[i] = 1, order[k++] = i;
    free(picked);
    char peak[32];
    rsr_fmt_bytes(peak, sizeof peak, rsr_jv_knum_or(jm, "peak_bytes", 0));
    fprintf(f, "<section id=\"memory\"><h2>GPU memory</h2>\n<p class=\"note\">Device memory over time: what the "
               "program's allocation calls held (blue; cuMemAlloc*, cuMemAllocAsync, cuMemCreate), what the "
               "driver said was in use (grey; the CUDA context, NCCL's buffers and other processes too), the "
               "device's memory (dashed), failed allocations (red: out of memory; orange, dashed: a retry got "
               "past it). The job's largest peak: %s. ", peak);
    if (k < with)
        fprintf(f, "%zu of %zu processes shown: the one that ran out, the one whose memory grows, then the "
                   "largest peaks. ", k, with);
    fputs("What held the memory at each peak, by allocating stack: the memory flame graph "
          "(<a href=\"flame-mem.svg\">flame-mem.svg</a>).</p>\n<div class=\"charts\">\n", f);
    /* one time axis for all: the job's */
    double span = rsr_jv_knum_or(root, "wall_s", 0);
    for (size_t i = 0; i < k; i++)
        chart(f, rsr_jv_at(procs, (size_t)order[i]), (size_t)order[i], span);
    fputs("</div></section>\n", f);
}
