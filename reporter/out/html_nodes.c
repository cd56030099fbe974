/* The page's nodes section (see html_nodes.h). Charts are SVG written
 * here, one point per timeline bin; a bin the node was not sampled in is
 * null in report.json and breaks the line. */
#include "reporter/out/html_nodes.h"
#include "reporter/out/html_json.h"
#include "reporter/base/units.h"

#include <math.h>
#include <string.h>

#define X0 56.0
#define X1 592.0
#define Y0 10.0
#define Y1 172.0
#define H 210.0       /* the SVG's height: ticks, then the x axis's title */

/* A line of a chart: the bins of key in o, its colour and label. */
struct line {
    yajl_val v;
    const char *colour, *label;
};

static double top_of(const struct line *ls, size_t n, double floor_v)
{
    double top = floor_v;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < rsr_jv_len(ls[k].v); i++) {
            double x;
            if (rsr_jv_num(rsr_jv_at(ls[k].v, i), &x) && x > top)
                top = x;
        }
    return rsr_html_nice_max(top);
}

/* The job's checkpoints shaded (report.json checkpoints[], start_s from
 * the job's start_us), bins from start_us, nbins of bin_us. */
static void shade_checkpoints(FILE *f, yajl_val root, double start_us, double bin_us, size_t nbins)
{
    yajl_val cks = rsr_jv_key(root, "checkpoints");
    double total_us = bin_us * (double)nbins, origin = rsr_jv_knum_or(root, "start_us", start_us);
    for (size_t i = 0; i < rsr_jv_len(cks) && total_us > 0; i++) {
        double st, dur;
        if (!rsr_jv_knum(rsr_jv_at(cks, i), "start_s", &st) || !rsr_jv_knum(rsr_jv_at(cks, i), "dur_s", &dur))
            continue;
        double a = fmax(0, (origin + st * 1e6 - start_us) / total_us);
        double b = fmin(1, (origin + (st + dur) * 1e6 - start_us) / total_us);
        if (b > a)
            fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"#8e24aa\" "
                       "fill-opacity=\".15\"><title>checkpoint</title></rect>\n",
                    X0 + a * (X1 - X0), Y0, fmax(0.5, (b - a) * (X1 - X0)), Y1 - Y0);
    }
}

/* The collectives' share of each bin, shaded (darker: more of the bin). */
static void shade_collectives(FILE *f, yajl_val coll, size_t nbins)
{
    for (size_t i = 0; i < rsr_jv_len(coll) && i < nbins; i++) {
        double pct;
        if (!rsr_jv_num(rsr_jv_at(coll, i), &pct) || pct <= 0)
            continue;
        double w = (X1 - X0) / (double)nbins;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" fill=\"#e53935\" "
                   "fill-opacity=\"%.2f\"><title>collectives %.0f%% of the bin</title></rect>\n",
                X0 + w * (double)i, Y0, w, Y1 - Y0, 0.05 + 0.25 * fmin(1, pct / 100), pct);
    }
}

/* What a chart's y axis shows, by its unit. */
static const char *y_title(const char *unit)
{
    return strcmp(unit, "%") == 0 ? "share of the node (%)" : strcmp(unit, "GB/s") == 0 ? "throughput (GB/s)"
                                                                                       : unit;
}

/* The x axis's ticks over span_us from the timeline's start, and both
 * axes' titles. */
static void time_axis(FILE *f, const char *y, double span_us)
{
    for (int k = 0; k <= 4; k++) {
        char t[32];
        rsr_html_fmt_ns(t, sizeof t, span_us * k / 4 * 1e3);
        fprintf(f, "<text x=\"%.1f\" y=\"188\" font-size=\"10\" text-anchor=\"%s\" fill=\"#57606a\">%s</text>",
                X0 + (X1 - X0) * k / 4, k == 0 ? "start" : k == 4 ? "end" : "middle", t);
    }
    rsr_html_axis_titles(f, X0, X1, Y0, Y1, H, "time from the timeline's start", y);
}

/* One chart: lines over nbins bins of bin_us from start_us, their scale
 * from 0 to top; rate > 0: a dashed line there; coll: the collectives'
 * share shaded; checkpoints shaded when ck. */
static void chart(FILE *f, yajl_val root, const char *id, const char *title, const char *unit,
                  const struct line *ls, size_t nl, double top, double rate, yajl_val coll, int ck,
                  double start_us, double bin_us, size_t nbins)
{
    fprintf(f, "<div class=\"nchart\" id=\"%s\"><h3 style=\"font-size:13px;font-weight:600\">", id);
    rsr_html_text(f, title);
    fprintf(f, "</h3><svg viewBox=\"0 0 600 %.0f\" role=\"img\" style=\"width:100%%;height:auto;display:block\">\n",
            H);
    if (coll)
        shade_collectives(f, coll, nbins);
    if (ck)
        shade_checkpoints(f, root, start_us, bin_us, nbins);
    for (int k = 0; k <= 4; k++) {
        double y = Y1 - (Y1 - Y0) * k / 4;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/><text x=\"%.0f\" "
                   "y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"#57606a\">%g</text>\n",
                X0, X1, y, y, X0 - 4, y + 3, top * k / 4);
    }
    time_axis(f, y_title(unit), bin_us * (double)nbins);
    if (rate > 0 && rate <= top) {
        double y = Y1 - (Y1 - Y0) * rate / top;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#24292f\" "
                   "stroke-dasharray=\"6 4\"><title>the link's rate, %.3g %s</title></line>\n",
                X0, X1, y, y, rate, unit);
    }
    for (size_t k = 0; k < nl; k++) {
        int open = 0;
        double peak = 0;
        for (size_t i = 0; i < rsr_jv_len(ls[k].v) && i < nbins; i++) {
            double v;
            if (!rsr_jv_num(rsr_jv_at(ls[k].v, i), &v)) {
                if (open)
                    fputs("\"/>\n", f);
                open = 0;
                continue;
            }
            if (!open)
                fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.3\" stroke=\"%s\" points=\"", ls[k].colour);
            open = 1;
            peak = fmax(peak, v);
            fprintf(f, "%.1f,%.1f ", X0 + (X1 - X0) * ((double)i + 0.5) / (double)nbins,
                    Y1 - (Y1 - Y0) * fmin(v, top) / top);
        }
        if (open)
            fputs("\"/>\n", f);
        fprintf(f, "<text x=\"%.0f\" y=\"8\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\" dx=\"%.0f\">",
                X1, ls[k].colour, -150.0 * (double)(nl - 1 - k));
        rsr_html_text(f, ls[k].label);
        fprintf(f, " (peak %.3g)</text>\n", peak);
    }
    fputs("</svg></div>\n", f);
}

static void fmt_gbs(char *b, size_t n, double v)
{
    snprintf(b, n, v >= 10 ? "%.1f GB/s" : v >= 0.1 ? "%.2f GB/s" : "%.3g GB/s", v);
}

static void td(FILE *f, double v, const char *shown)
{
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%s</td>", v, shown);
}

static void td_bytes(FILE *f, yajl_val o, const char *key)
{
    char b[32];
    double v = rsr_jv_knum_or(o, key, 0);
    rsr_fmt_bytes(b, sizeof b, v);
    td(f, v, b);
}

static void td_gbs(FILE *f, yajl_val o, const char *key)
{
    char b[32];
    double v;
    if (!rsr_jv_knum(o, key, &v)) {
        fputs("<td class=\"n\" data-v=\"-1\">&ndash;</td>", f);
        return;
    }
    fmt_gbs(b, sizeof b, v);
    td(f, v, b);
}

/* "The interconnect mlx5_0:1 carried 6.0 of 25 GB/s during collectives":
 * the link that carried the most while they ran. */
static void headline(FILE *f, yajl_val links)
{
    yajl_val best = NULL;
    double bv = -1;
    for (size_t i = 0; i < rsr_jv_len(links); i++) {
        double v;
        if (rsr_jv_knum(rsr_jv_at(links, i), "in_collectives_gbs", &v) && v > bv)
            bv = v, best = rsr_jv_at(links, i);
    }
    if (!best || bv <= 0)
        return;   /* no link carried anything while collectives ran: nothing to say */
    char b[32], r[32];
    double rate;
    fmt_gbs(b, sizeof b, bv);
    fputs("<p class=\"nodeline\">The link ", f);
    rsr_html_text(f, rsr_jv_kstr(best, "name"));
    fputs(" (", f);
    rsr_html_text(f, rsr_jv_kstr(best, "kind"));
    if (rsr_jv_knum(best, "rate_gbs", &rate) && rate > 0) {
        fmt_gbs(r, sizeof r, rate);
        fprintf(f, ") carried %.1f of %s during collectives (%.0f%% of its rate).</p>\n", bv, r, 100 * bv / rate);
    } else {
        fprintf(f, ") carried %s during collectives; its rate is not known.</p>\n", b);
    }
}

static void links_table(FILE *f, yajl_val links, size_t node)
{
    fprintf(f, "<table class=\"sort\" id=\"table-links-%zu\"><thead><tr><th>link</th><th>kind</th>"
               "<th class=\"n\">rate</th><th class=\"n\">sent</th><th class=\"n\">received</th>"
               "<th class=\"n\">mean</th><th class=\"n\">peak</th><th class=\"n\">during collectives</th>"
               "</tr></thead><tbody>\n", node);
    for (size_t i = 0; i < rsr_jv_len(links); i++) {
        yajl_val l = rsr_jv_at(links, i);
        fputs("<tr><td class=\"name\">", f);
        rsr_html_text(f, rsr_jv_kstr(l, "name"));
        fputs("</td><td>", f);
        rsr_html_text(f, rsr_jv_kstr(l, "kind"));
        fputs("</td>", f);
        td_gbs(f, l, "rate_gbs");
        td_bytes(f, l, "tx_bytes");
        td_bytes(f, l, "rx_bytes");
        td_gbs(f, l, "mean_gbs");
        td_gbs(f, l, "peak_gbs");
        td_gbs(f, l, "in_collectives_gbs");
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static void disks_table(FILE *f, yajl_val disks, size_t node)
{
    if (!rsr_jv_len(disks))
        return;
    fprintf(f, "<table class=\"sort\" id=\"table-disks-%zu\"><thead><tr><th>device or mount</th>"
               "<th class=\"n\">read</th><th class=\"n\">written</th><th class=\"n\">peak read</th>"
               "<th class=\"n\">peak write</th></tr></thead><tbody>\n", node);
    for (size_t i = 0; i < rsr_jv_len(disks); i++) {
        yajl_val d = rsr_jv_at(disks, i);
        fputs("<tr><td class=\"name\">", f);
        rsr_html_text(f, rsr_jv_kstr(d, "name"));
        fputs(YAJL_IS_TRUE(rsr_jv_key(d, "nfs")) ? " (NFS)</td>" : "</td>", f);
        td_bytes(f, d, "read_bytes");
        td_bytes(f, d, "write_bytes");
        td_gbs(f, d, "peak_read_gbs");
        td_gbs(f, d, "peak_write_gbs");
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* The busiest links first: indices of at most RSR_HTML_NODE_LINKS links
 * that moved any byte. */
static size_t busiest(yajl_val links, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < rsr_jv_len(links); i++) {
        yajl_val l = rsr_jv_at(links, i);
        double v = rsr_jv_knum_or(l, "tx_bytes", 0) + rsr_jv_knum_or(l, "rx_bytes", 0);
        if (v <= 0)
            continue;
        size_t k = n < RSR_HTML_NODE_LINKS ? n++ : RSR_HTML_NODE_LINKS;
        for (; k > 0; k--) {
            yajl_val o = rsr_jv_at(links, idx[k - 1]);
            if (rsr_jv_knum_or(o, "tx_bytes", 0) + rsr_jv_knum_or(o, "rx_bytes", 0) >= v)
                break;
            if (k < RSR_HTML_NODE_LINKS)
                idx[k] = idx[k - 1];
        }
        if (k < RSR_HTML_NODE_LINKS)
            idx[k] = i;
    }
    return n;
}

static void node_charts(FILE *f, yajl_val root, yajl_val nd, size_t node)
{
    yajl_val tl = rsr_jv_key(nd, "timeline");
    double start_us = rsr_jv_knum_or(tl, "start_us", 0), bin_us = rsr_jv_knum_or(tl, "bin_us", 0);
    size_t nbins = rsr_jv_len(rsr_jv_key(tl, "cpu_pct"));
    yajl_val links = rsr_jv_key(nd, "links"), disks = rsr_jv_key(nd, "disks");
    if (bin_us <= 0)
        return;
    size_t idx[RSR_HTML_NODE_LINKS];
    size_t nl = busiest(links, idx);
    for (size_t k = 0; k < nl; k++) {
        yajl_val l = rsr_jv_at(links, idx[k]);
        if (!nbins)
            nbins = rsr_jv_len(rsr_jv_key(l, "tx_gbs"));
        struct line ls[2] = { { rsr_jv_key(l, "tx_gbs"), "#e53935", "sent" },
                              { rsr_jv_key(l, "rx_gbs"), "#1e88e5", "received" } };
        double rate = rsr_jv_knum_or(l, "rate_gbs", 0);
        char id[64], title[160];
        snprintf(id, sizeof id, "nchart-%zu-link-%zu", node, idx[k]);
        snprintf(title, sizeof title, "%s (%s): throughput, collectives shaded%s", rsr_jv_kstr(l, "name"),
                 rsr_jv_kstr(l, "kind") ? rsr_jv_kstr(l, "kind") : "?", rate > 0 ? ", the rate dashed" : "");
        chart(f, root, id, title, "GB/s", ls, 2, top_of(ls, 2, rate), rate,
              rsr_jv_key(tl, "collectives_pct"), 0, start_us, bin_us, nbins);
    }
    /* storage: every device and mount summed, per bin */
    if (rsr_jv_len(disks)) {
        static const char *const keys[2] = { "read_gbs", "write_gbs" };
        static const char *const colours[2] = { "#00897b", "#8e24aa" };
        fprintf(f, "<div class=\"nchart\" id=\"nchart-%zu-storage\"><h3 style=\"font-size:13px;"
                   "font-weight:600\">Storage throughput (all devices and mounts), checkpoints shaded</h3>"
                   "<svg viewBox=\"0 0 600 %.0f\" role=\"img\" style=\"width:100%%;height:auto;display:block\">\n",
                node, H);
        double sum[2][1024];
        size_t n = nbins < 1024 ? nbins : 1024;
        double top = 0;
        for (int d = 0; d < 2; d++)
            for (size_t i = 0; i < n; i++) {
                sum[d][i] = NAN;
                for (size_t k = 0; k < rsr_jv_len(disks); k++) {
                    double v;
                    if (rsr_jv_num(rsr_jv_at(rsr_jv_key(rsr_jv_at(disks, k), keys[d]), i), &v))
                        sum[d][i] = (isnan(sum[d][i]) ? 0 : sum[d][i]) + v;
                }
                if (sum[d][i] > top)
                    top = sum[d][i];
            }
        top = top_of(NULL, 0, top);
        shade_checkpoints(f, root, start_us, bin_us, n);
        for (int k = 0; k <= 4; k++) {
            double y = Y1 - (Y1 - Y0) * k / 4;
            fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/><text x=\"%.0f\" "
                       "y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"#57606a\">%g</text>\n",
                    X0, X1, y, y, X0 - 4, y + 3, top * k / 4);
        }
        time_axis(f, y_title("GB/s"), bin_us * (double)n);
        for (int d = 0; d < 2; d++) {
            int open = 0;
            for (size_t i = 0; i < n; i++) {
                if (isnan(sum[d][i])) {
                    if (open)
                        fputs("\"/>\n", f);
                    open = 0;
                    continue;
                }
                if (!open)
                    fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.3\" stroke=\"%s\" points=\"", colours[d]);
                open = 1;
                fprintf(f, "%.1f,%.1f ", X0 + (X1 - X0) * ((double)i + 0.5) / (double)n,
                        Y1 - (Y1 - Y0) * fmin(sum[d][i], top) / top);
            }
            if (open)
                fputs("\"/>\n", f);
            fprintf(f, "<text x=\"%.0f\" y=\"8\" font-size=\"10\" text-anchor=\"end\" fill=\"%s\" dx=\"%d\">%s</text>\n",
                    X1, colours[d], d ? 0 : -70, d ? "written" : "read");
        }
        fputs("</svg></div>\n", f);
    }
    struct line cm[2] = { { rsr_jv_key(tl, "cpu_pct"), "#f28e2b", "CPU busy" },
                          { rsr_jv_key(tl, "mem_used_pct"), "#4e79a7", "memory used" } };
    char id[64];
    snprintf(id, sizeof id, "nchart-%zu-cpu", node);
    chart(f, root, id, "CPU busy and memory used", "%", cm, 2, 100, 0, NULL, 0, start_us, bin_us, nbins);
}

void rsr_html_nodes(FILE *f, yajl_val root)
{
    yajl_val nodes = rsr_jv_key(root, "nodes");
    if (!rsr_jv_len(nodes))
        return;
    fputs("<section id=\"nodes\"><h2>Nodes</h2>\n<p class=\"note\">The nodes' own counters (Linux's /sys and "
          "/proc, read by one process per node at RINGSIDE_METRICS_HZ): links with their rates, block devices "
          "and NFS mounts, CPU and memory. During collectives: a link's throughput while the node's ranks ran "
          "collectives (the traffic it carried without them taken out).</p>\n", f);
    for (size_t i = 0; i < rsr_jv_len(nodes); i++) {
        yajl_val nd = rsr_jv_at(nodes, i);
        double cpu, mem;
        fprintf(f, "<div class=\"node\" id=\"node-%zu\"><h3>", i);
        rsr_html_text(f, rsr_jv_kstr(nd, "host"));
        if (rsr_jv_knum(nd, "cpu_pct", &cpu))
            fprintf(f, ": CPU busy %.1f%%", cpu);
        if (rsr_jv_knum(nd, "mem_used_pct", &mem))
            fprintf(f, ", memory used %.1f%%", mem);
        fputs("</h3>\n", f);
        headline(f, rsr_jv_key(nd, "links"));
        links_table(f, rsr_jv_key(nd, "links"), i);
        disks_table(f, rsr_jv_key(nd, "disks"), i);
        fputs("<div class=\"charts\">\n", f);
        node_charts(f, root, nd, i);
        fputs("</div></div>\n", f);
    }
    fputs("</section>\n", f);
}
