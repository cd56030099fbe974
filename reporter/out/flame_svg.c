/* SVG flame graphs (see flame_svg.h): the call tree laid out root at the
 * bottom, one <g> per frame holding its weight range (data-x, data-w, in ns)
 * and a <title> with the name and figures; a fixed script (no data in it)
 * reads those back to zoom, search and show details. */
#include "reporter/base/units.h"
#include "reporter/out/flame_svg.h"
#include "reporter/out/page.h"
#include "reporter/base/escape.h"
#include "reporter/base/intern.h"
#include "formats/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* WIDTH, PAD and FONT are written again in page/flame.js (W, PAD, FONT) and
 * FONT in page/flame.css, which lay the frames out anew on a zoom. */
enum {
    WIDTH = 1200,       /* px */
    PAD = 10,
    FRAME_H = 16,
    FONT = 12,
    TOP = 64,           /* title, subtitle and buttons */
    BOTTOM = 28,        /* details line */
    SMALL_DIV = 5000    /* frames under total/SMALL_DIV are merged */
};

void rsr_xml_escape(FILE *f, const char *s)
{
    rsr_markup_escape(f, s, RSR_MARKUP_XML);
}

void rsr_format_ns(char *buf, size_t cap, double ns)
{
    if (ns >= 1e9)
        snprintf(buf, cap, "%.3g s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(buf, cap, "%.3g ms", ns / 1e6);
    else if (ns >= 1e3)
        snprintf(buf, cap, "%.3g us", ns / 1e3);
    else
        snprintf(buf, cap, "%.0f ns", ns);
}

static void hsl_rgb(double h, double s, double l, int rgb[3])
{
    double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360) / 60;
    double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2;
    double r = 0, g = 0, b = 0;
    if (hp < 1) { r = c; g = x; }
    else if (hp < 2) { r = x; g = c; }
    else if (hp < 3) { g = c; b = x; }
    else if (hp < 4) { g = x; b = c; }
    else if (hp < 5) { r = x; b = c; }
    else { r = c; b = x; }
    rgb[0] = (int)lround((r + m) * 255);
    rgb[1] = (int)lround((g + m) * 255);
    rgb[2] = (int)lround((b + m) * 255);
}

/* Colour: the hue range by kind of flame graph and class of frame, the hue
 * within it by module, the lightness by name, so neighbours differ. */
static void frame_colour(const struct rsr_flame *fl, uint32_t name, int merged, int rgb[3])
{
    if (merged) {
        hsl_rgb(0, 0, 0.78, rgb);
        return;
    }
    const char *n = rsr_intern_str(&fl->names, name);
    const char *mod = rsr_intern_str(&fl->modules, fl->name_module[name]);
    uint64_t hm = rsr_hash_bytes(mod, strlen(mod), 7), hn = rsr_hash_bytes(n, strlen(n), 11);
    double base, span;
    switch (fl->name_class[name]) {
    case RSR_FRAME_PYTHON: base = 95; span = 45; break;
    case RSR_FRAME_INLINE: base = 170; span = 20; break;
    case RSR_FRAME_UNKNOWN: hsl_rgb(0, 0, 0.62 + (double)(hn % 100) / 1000, rgb); return;
    case RSR_FRAME_THREAD: base = 260; span = 20; break;
    default:
        if (fl->kind == RSF_SAMPLE_WAIT) { base = 195; span = 45; }
        else if (fl->kind == RSF_SAMPLE_GPU) { base = 280; span = 40; }
        else { base = 0; span = 55; }
    }
    double h = base + span * (double)(hm % 1000) / 1000;
    double l = 0.50 + 0.15 * (double)(hn % 1000) / 1000;
    hsl_rgb(h, 0.75, l, rgb);
}

/* A weight as text: bytes in a memory graph, else time. */
static void weight_text(const struct rsr_flame *fl, char *buf, size_t n, double w)
{
    if (fl->kind == RSF_SAMPLE_MEM)
        rsr_fmt_bytes(buf, n, w);
    else
        rsr_format_ns(buf, n, w);
}

struct svg_state {
    FILE *f;
    const struct rsr_flame *fl;
    uint64_t total, small;
    double scale;        /* px per ns */
    int maxdepth;
    const char *unit;    /* "CPU time", "blocked", "GPU time" */
    /* A differential graph: the before tree, its node for each of fl's
     * (UINT32_MAX: none) and its total. */
    const struct rsr_flame *before;
    const uint32_t *bmap;
    uint64_t btotal;
};

static int depth_of(const struct rsr_flame *fl, uint32_t node, uint64_t small)
{
    int d = 0;
    uint64_t merged = 0;
    for (uint32_t c = fl->nodes[node].first_child; c; c = fl->nodes[c].next_sibling) {
        if (fl->nodes[c].total < small) {
            merged += fl->nodes[c].total;
            continue;
        }
        int k = depth_of(fl, c, small) + 1;
        if (k > d)
            d = k;
    }
    return merged >= small && d < 1 ? 1 : d;
}

static void put_frame(struct svg_state *st, const char *name, uint64_t x, uint64_t w, uint64_t count,
                      int depth, const int rgb[3], const char *more)
{
    FILE *f = st->f;
    char t[32];
    weight_text(st->fl, t, sizeof t, (double)w);
    double px = PAD + (double)x * st->scale, pw = (double)w * st->scale;
    double y = TOP + (double)(st->maxdepth - depth) * FRAME_H;
    fprintf(f, "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%d\"><title>",
            x, w, depth);
    rsr_xml_escape(f, name);
    if (st->before)
        fprintf(f, "\n%s %s (%.2f%%)%s</title>", t, st->unit,
                st->total ? 100.0 * (double)w / (double)st->total : 0.0, more ? more : "");
    else
        fprintf(f, "\n%s %s (%.2f%%), %" PRIu64 " sample%s%s</title>", t, st->unit,
                st->total ? 100.0 * (double)w / (double)st->total : 0.0, count, count == 1 ? "" : "s",
                more ? more : "");
    fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" "
            "rx=\"2\"/>", px, y, pw > 0.1 ? pw - 0.1 : pw, FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
    /* a label that fits, as the script would cut it */
    int fit = (int)((pw - 6) / (FONT * 0.59));
    size_t len = strlen(name);
    fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", px + 3, y + FRAME_H - 4.5);
    if (fit >= 3) {
        if ((size_t)fit >= len) {
            rsr_xml_escape(f, name);
        } else {
            /* cut at a character boundary */
            size_t cut = (size_t)fit - 2;
            while (cut > 0 && ((unsigned char)name[cut] & 0xc0) == 0x80)
                cut--;
            char *s = malloc(cut + 3);
            if (s) {
                memcpy(s, name, cut);
                memcpy(s + cut, "..", 3);
                rsr_xml_escape(f, s);
                free(s);
            }
        }
    }
    fputs("</text></g>\n", f);
}

/* A differential frame's colour and hover line: red where its share of
 * the whole grew, blue where it shrank, the deeper the more (full at 5
 * points), as Brendan Gregg's differential flame graphs colour them. */
static void diff_colour(const struct svg_state *st, uint32_t node, int rgb[3], char *more, size_t n)
{
    uint32_t b = st->bmap[node];
    uint64_t bw = b != UINT32_MAX ? st->before->nodes[b].total : 0;
    double after = st->total ? 100.0 * (double)st->fl->nodes[node].total / (double)st->total : 0;
    double before = st->btotal ? 100.0 * (double)bw / (double)st->btotal : 0, d = after - before;
    double t = fabs(d) / 5 > 1 ? 1 : fabs(d) / 5;
    int pale = (int)lround(235 - 195 * t);
    rgb[0] = d > 0 ? 255 : pale;
    rgb[1] = pale;
    rgb[2] = d < 0 ? 255 : pale;
    char bt[32];
    weight_text(st->fl, bt, sizeof bt, (double)bw);
    snprintf(more, n, "\nbefore %s (%.2f%%), change %+.2f points%s", bt, before, d,
             b == UINT32_MAX ? " (new)" : "");
}

static void put_tree(struct svg_state *st, uint32_t node, uint64_t x, int depth)
{
    const struct rsr_flame *fl = st->fl;
    const struct rsr_flame_node *nd = &fl->nodes[node];
    int rgb[3];
    char more[128];
    if (st->before)
        diff_colour(st, node, rgb, more, sizeof more);
    if (node == 0) {
        if (!st->before)
            hsl_rgb(0, 0, 0.85, rgb);
        put_frame(st, "all", x, nd->total, nd->count, depth, rgb, st->before ? more : NULL);
    } else {
        if (!st->before)
            frame_colour(fl, nd->name, 0, rgb);
        put_frame(st, rsr_intern_str(&fl->names, nd->name), x, nd->total, nd->count, depth, rgb,
                  st->before ? more : NULL);
    }
    uint32_t n;
    uint32_t *kids = rsr_flame_children(fl, node, &n);
    uint64_t cx = x, small_w = 0, small_count = 0;
    uint32_t nsmall = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct rsr_flame_node *c = &fl->nodes[kids[i]];
        if (c->total < st->small) {
            small_w += c->total;
            small_count += c->count;
            nsmall++;
            continue;
        }
        put_tree(st, kids[i], cx, depth + 1);
        cx += c->total;
    }
    if (nsmall && small_w >= st->small) {
        char name[64];
        snprintf(name, sizeof name, "[%u small frames]", nsmall);
        frame_colour(fl, 0, 1, rgb);
        put_frame(st, name, cx, small_w, small_count, depth + 1, rgb, NULL);
    }
    free(kids);
}

static int write_svg(FILE *f, const struct rsr_flame *fl, const char *title, struct rsr_flame *before);

int rsr_flame_write_svg(FILE *f, const struct rsr_flame *fl, const char *title)
{
    return write_svg(f, fl, title, NULL);
}

int rsr_flame_write_svg_diff(FILE *f, const struct rsr_flame *after, struct rsr_flame *before, const char *title)
{
    return write_svg(f, after, title, before);
}

static int write_svg(FILE *f, const struct rsr_flame *fl, const char *title, struct rsr_flame *before)
{
    static const char *const titles[RSF_SAMPLE_NKINDS] = {
        "CPU flame graph", "Wait flame graph (time blocked)", "GPU flame graph (GPU time by launch site)",
        "GPU memory flame graph (device bytes held at each process's peak, by allocating stack)" };
    static const char *const units[RSF_SAMPLE_NKINDS] = { "CPU time", "blocked", "GPU time", "held" };
    int k = fl->kind >= 0 && fl->kind < RSF_SAMPLE_NKINDS ? fl->kind : 0;
    struct svg_state st = { .f = f, .fl = fl, .unit = units[k], .before = before };
    uint32_t *bmap = before ? rsr_flame_match(fl, before) : NULL;
    st.bmap = bmap;
    st.btotal = before ? before->nodes[0].total : 0;
    st.total = fl->nodes[0].total;
    st.small = st.total / SMALL_DIV;
    if (st.small == 0)
        st.small = 1;
    st.scale = st.total ? (double)(WIDTH - 2 * PAD) / (double)st.total : 0;
    st.maxdepth = depth_of(fl, 0, st.small);
    int height = TOP + (st.maxdepth + 1) * FRAME_H + BOTTOM;
    char t[32];
    weight_text(fl, t, sizeof t, (double)st.total);

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n", WIDTH, height, WIDTH, height);
    /* the style sheet and the script only read the document: nothing in them comes from a trace */
    fputs("<style>\n", f);
    rsr_page_put(f, rsr_page_flame_css, rsr_page_flame_css_end);
    fputs("\n</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
    rsr_page_put(f, rsr_page_flame_js, rsr_page_flame_js_end);
    fputs("\n]]></script>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f4\"/>\n", WIDTH, height);
    fprintf(f, "<text class=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">", WIDTH / 2);
    rsr_xml_escape(f, title ? title : titles[k]);
    if (before) {
        /* folded stacks keep no sample counts */
        char bt[32];
        weight_text(fl, bt, sizeof bt, (double)st.btotal);
        fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" text-anchor=\"middle\">%s %s after, %s before; "
                "click a frame to zoom</text>\n", WIDTH / 2, t, units[k], bt);
    } else if (fl->kind == RSF_SAMPLE_GPU) {
        /* the launch stacks are a sample: say which, and that they are scaled */
        char every[48] = "some launches";
        if (fl->stack_every_min && fl->stack_every_min == fl->stack_every_max)
            snprintf(every, sizeof every, "1 kernel launch in %u", fl->stack_every_min);
        else if (fl->stack_every_min)
            snprintf(every, sizeof every, "1 kernel launch in %u to %u", fl->stack_every_min,
                     fl->stack_every_max);
        fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" text-anchor=\"middle\">%s %s, %u process%s: stacks of %s "
                "per thread (%" PRIu64 "), scaled to the thread's kernel time; click a frame to zoom</text>\n",
                WIDTH / 2, t, units[k], fl->nprocs, fl->nprocs == 1 ? "" : "es", every, fl->nodes[0].count);
    } else if (fl->kind == RSF_SAMPLE_MEM) {
        fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" text-anchor=\"middle\">%s held at the peak, %u process%s, "
                "%" PRIu64 " allocations; click a frame to zoom</text>\n",
                WIDTH / 2, t, fl->nprocs, fl->nprocs == 1 ? "" : "es", fl->nodes[0].count);
    } else if (fl->apart_threads) {
        char apart[32];
        rsr_format_ns(apart, sizeof apart, (double)fl->apart_ns);
        fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" text-anchor=\"middle\">%s %s, %" PRIu64
                " samples, %u process%s; %u thread%s that only waited left out (%s); click a frame to zoom</text>\n",
                WIDTH / 2, t, units[k], fl->nodes[0].count, fl->nprocs, fl->nprocs == 1 ? "" : "es",
                fl->apart_threads, fl->apart_threads == 1 ? "" : "s", apart);
    } else {
        fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" text-anchor=\"middle\">%s %s, %" PRIu64
                " samples, %u process%s; click a frame to zoom</text>\n",
                WIDTH / 2, t, units[k], fl->nodes[0].count, fl->nprocs, fl->nprocs == 1 ? "" : "es");
    }
    fprintf(f, "<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"56\" style=\"opacity:0.3\">Reset zoom</text>\n",
            PAD);
    /* the search box: an XHTML input, which works where prompt() does not
     * (a sandboxed iframe); Ctrl-F focuses it */
    fprintf(f, "<foreignObject x=\"%d\" y=\"42\" width=\"250\" height=\"20\">"
            "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"term\" type=\"text\" "
            "placeholder=\"Search: regex or text (Ctrl-F)\" "
            "style=\"box-sizing:border-box;width:250px;height:19px;font:12px Verdana,sans-serif\"/>"
            "</foreignObject>\n", WIDTH - PAD - 250);
    fprintf(f, "<text id=\"clear\" class=\"btn\" x=\"%d\" y=\"56\" text-anchor=\"end\" "
            "style=\"display:none\">Clear search</text>\n", WIDTH - PAD - 258);
    fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n", WIDTH - PAD,
            height - 10);
    fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 10);
    if (st.total)
        put_tree(&st, 0, 0, 0);
    fputs("</svg>\n", f);
    free(bmap);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

static int folded_writer(FILE *f, const struct rsr_flame *fl, const char *title)
{
    (void)title;
    return rsr_flame_write_folded(f, fl);
}

/* Writes fl as out_dir/flame-NAME.EXT with writer (rsr_flame_write_svg, or
 * folded_writer: the folded stacks `ringside diff` reads of a report
 * folder); 0, or -1 said on stderr. */
/* Writes out_dir/NAME.EXT (NAME: "flame-cpu", "step-12-wait"). */
static int write_as(const struct rsr_flame *fl, const char *out_dir, const char *name, const char *ext,
                    int (*writer)(FILE *, const struct rsr_flame *, const char *), const char *title)
{
    size_t n = strlen(out_dir) + strlen(name) + strlen(ext) + 16;
    char *path = rsr_xmalloc(n);
    snprintf(path, n, "%s/%s.%s", out_dir, name, ext);
    FILE *f = fopen(path, "w");
    int err = !f || writer(f, fl, title) != 0;
    if (f && fclose(f) != 0)
        err = 1;
    if (err)
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno ? errno : EIO));
    free(path);
    return err ? -1 : 0;
}

unsigned rsr_flame_write_step_svgs(const struct rsr_flame *fls, const char *out_dir, size_t step,
                                   const char *about)
{
    static const char *const what[RSF_SAMPLE_NKINDS] = { "CPU", "Wait", "GPU", "Memory" };
    unsigned written = 0;
    for (int k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        if (!fls[k].nodes[0].count || k == RSF_SAMPLE_MEM) /* held at the peak: not a step's */
            continue;
        char name[64], title[160];
        snprintf(name, sizeof name, "step-%zu-%s", step, rsf_sample_kind_name((unsigned)k));
        snprintf(title, sizeof title, "%s flame graph of step %zu%s", what[k], step, about);
        if (write_as(&fls[k], out_dir, name, "svg", rsr_flame_write_svg, title) != 0)
            return written | RSR_FLAME_WRITE_FAILED;
        written |= 1u << k;
    }
    return written;
}

/* Whether fl holds a Python frame (its native view then differs). */
static int has_python(const struct rsr_flame *fl)
{
    for (uint32_t i = 0; i < fl->names.n; i++)
        if (fl->name_class[i] == RSR_FRAME_PYTHON)
            return 1;
    return 0;
}

int rsr_flame_write_svgs(const struct rsr_flame *fls, const char *out_dir)
{
    int written = 0;
    for (int k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        if (!fls[k].nodes[0].count)
            continue;
        char name[32];
        snprintf(name, sizeof name, "flame-%s", rsf_sample_kind_name((unsigned)k));
        if (write_as(&fls[k], out_dir, name, "svg", rsr_flame_write_svg, NULL) != 0 ||
            write_as(&fls[k], out_dir, name, "folded", folded_writer, NULL) != 0)
            return -1;
        written++;
        /* every native frame (--native), for the page's switch */
        const struct rsr_flame *all = &fls[RSF_SAMPLE_NKINDS + k];
        static const char *const what[RSF_SAMPLE_NKINDS] = { "CPU", "Wait", "GPU", "Memory" };
        char title[64];
        snprintf(title, sizeof title, "%s flame graph, every native frame", what[k]);
        snprintf(name, sizeof name, "native-%s", rsf_sample_kind_name((unsigned)k));
        if (has_python(&fls[k]) && all->nodes[0].count &&
            write_as(all, out_dir, name, "svg", rsr_flame_write_svg, title) != 0)
            return -1;
        if (k != RSF_SAMPLE_WAIT)
            continue;
        /* The same waits with the reason as the root: a click on a reason
         * shows its waits alone. */
        struct rsr_flame by;
        rsr_flame_by_reason(&fls[k], &by);
        int rc = by.nodes[0].count ? write_as(&by, out_dir, "flame-wait_by_reason", "svg", rsr_flame_write_svg,
                                              "Wait flame graph by reason (click a reason)") : 0;
        written += by.nodes[0].count != 0;
        rsr_flame_free(&by);
        if (rc != 0)
            return -1;
    }
    return written;
}
