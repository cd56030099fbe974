/* The HTML report: report.json (parsed with yajl's tree API) and the
 * per-process GPU timelines become one self-contained page: the summary and
 * findings first, then timeline lanes that zoom and pan, utilisation charts,
 * tables and flame graphs. Charts are SVG written here; the inline script
 * only changes a viewBox, sorts tables and shows tooltips. */
#include "reporter/html.h"
#include "formats/trace.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

/* Timeline geometry. The lanes' SVG is TL_W user units wide for the whole
 * span (enough float precision to zoom 1e5 times); y units are pixels.
 * Thinning assumes TL_COLUMNS pixels across the plot at full view. */
#define TL_W 1000000.0
#define TL_COLUMNS 2000
#define TL_LANE_H 14
#define TL_LANE_STEP 17
#define TL_ROW_GAP 8
/* Rectangles per lane: at most TL_RECTS_MAX, fewer when there are many
 * lanes so that the page stays near TL_RECTS_TOTAL (never under MIN). */
#define TL_RECTS_MAX 4000
#define TL_RECTS_MIN 500
#define TL_RECTS_TOTAL 150000
#define TABLE_ROWS 200
#define CHART_POINTS 1200

/* Lanes of one process, top to bottom. */
#define TL_LANES(X) \
    X(COMPUTE, "compute",       "#43a047") \
    X(COMM,    "communication", "#e53935") \
    X(COPY,    "copies",        "#1e88e5") \
    X(WAIT,    "waits",         "#fb8c00") \
    X(IO,      "I/O",           "#00897b") \
    X(CKPT,    "checkpoints",   "#8e24aa")

enum tl_lane {
#define TL_LANE_ENUM(name, text, colour) TL_##name,
    TL_LANES(TL_LANE_ENUM)
#undef TL_LANE_ENUM
    TL_NLANES
};

static const char *const lane_text[] = {
#define TL_LANE_TEXT(name, text, colour) text,
    TL_LANES(TL_LANE_TEXT)
#undef TL_LANE_TEXT
};

static const char *const lane_colour[] = {
#define TL_LANE_COLOUR(name, text, colour) colour,
    TL_LANES(TL_LANE_COLOUR)
#undef TL_LANE_COLOUR
};

/* One colour per rank in the charts (cycled). */
static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
};
#define NPALETTE (sizeof palette / sizeof palette[0])

/* ---- escaping: every text that came from a trace goes through these ---- */

/* Text for HTML content or a quoted attribute value. C0 controls other
 * than tab and newline become U+FFFD (they are not allowed in HTML). */
static void put_html(FILE *f, const char *s)
{
    if (!s)
        return;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n')
                fputs("&#xFFFD;", f);
            else
                putc(c, f);
        }
    }
}

/* A JSON string inside <script>: besides JSON's own escapes, <, >, & and
 * U+2028/2029 are written as \uXXXX so that no "</script>" or "<!--" can
 * appear and no line terminator breaks an older JavaScript parser. */
static void put_js_str(FILE *f, const char *s)
{
    putc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc(c, f);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
        } else if (c == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            fprintf(f, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
            p += 2;
        } else {
            putc(c, f);
        }
    }
    putc('"', f);
}

/* ---- report.json access (yajl tree); every key may be missing ---- */

static yajl_val jkey(yajl_val o, const char *k)
{
    if (!YAJL_IS_OBJECT(o))
        return NULL;
    for (size_t i = 0; i < o->u.object.len; i++)
        if (strcmp(o->u.object.keys[i], k) == 0)
            return o->u.object.values[i];
    return NULL;
}

/* 1 and the value when v is a finite number. */
static int jnum(yajl_val v, double *d)
{
    if (!YAJL_IS_NUMBER(v))
        return 0;
    double x = YAJL_IS_DOUBLE(v) ? v->u.number.d : (double)v->u.number.i;
    if (!isfinite(x))
        return 0;
    *d = x;
    return 1;
}

static int knum(yajl_val o, const char *k, double *d)
{
    return jnum(jkey(o, k), d);
}

static double knum_or(yajl_val o, const char *k, double dflt)
{
    double d;
    return knum(o, k, &d) ? d : dflt;
}

static const char *kstr(yajl_val o, const char *k)
{
    return YAJL_GET_STRING(jkey(o, k));
}

static size_t alen(yajl_val a)
{
    return YAJL_IS_ARRAY(a) ? a->u.array.len : 0;
}

static yajl_val aget(yajl_val a, size_t i)
{
    return i < alen(a) ? a->u.array.values[i] : NULL;
}

/* Any JSON value as escaped text: strings as they are, numbers with %g,
 * arrays joined by ", ", objects as "key: value; ...". */
static void put_value(FILE *f, yajl_val v)
{
    double d;
    if (YAJL_IS_STRING(v)) {
        put_html(f, v->u.string);
    } else if (jnum(v, &d)) {
        fprintf(f, "%g", d);
    } else if (YAJL_IS_ARRAY(v)) {
        for (size_t i = 0; i < v->u.array.len; i++) {
            if (i)
                fputs(", ", f);
            put_value(f, v->u.array.values[i]);
        }
    } else if (YAJL_IS_OBJECT(v)) {
        for (size_t i = 0; i < v->u.object.len; i++) {
            if (i)
                fputs("; ", f);
            put_html(f, v->u.object.keys[i]);
            fputs(": ", f);
            put_value(f, v->u.object.values[i]);
        }
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        fputs(YAJL_IS_TRUE(v) ? "yes" : "no", f);
    }
}

/* A process's name: "rank R", or "pid P" when it has no rank. */
static void put_proc(FILE *f, yajl_val proc)
{
    double r, pid;
    if (knum(proc, "rank", &r))
        fprintf(f, "rank %.0f", r);
    else if (knum(proc, "pid", &pid))
        fprintf(f, "pid %.0f", pid);
    else
        fputs("process", f);
}

/* ---- number formatting ---- */

static void fmt_ns(char *b, size_t n, double ns)
{
    double a = fabs(ns);
    if (a < 1e3)
        snprintf(b, n, "%.0f ns", ns);
    else if (a < 1e6)
        snprintf(b, n, "%.1f \xc2\xb5s", ns / 1e3);
    else if (a < 1e9)
        snprintf(b, n, "%.2f ms", ns / 1e6);
    else
        snprintf(b, n, "%.2f s", ns / 1e9);
}

static void fmt_bytes(char *b, size_t n, double v)
{
    static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };
    int i = 0;
    while (fabs(v) >= 1000 && i < 5)
        v /= 1000, i++;
    snprintf(b, n, i ? "%.1f %s" : "%.0f %s", v, unit[i]);
}

/* ---- the page ---- */

struct page {
    FILE *f;
    yajl_val root;
    struct rsr_model *const *models;
    size_t nmodels;
    /* The job time line of report.json "timeline" (charts, checkpoints). */
    int have_timeline;
    double tl_start_us, tl_bin_us;
    /* What checkpoints[].start_s counts from, in us ("start_us", else
     * timeline.start_us); have_ck_origin 0: neither given. */
    int have_ck_origin;
    double ck_origin_us;
    int have_gpu;   /* some process has GPU figures */
    int have_io;    /* some process read or wrote a byte */
    size_t tl_bins;
};

static const char page_css[] =
    "*{box-sizing:border-box}"
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1f2328;"
    "background:#f6f8fa}"
    "header{background:#24292f;color:#fff;padding:10px 20px}"
    "header h1{font-size:18px;margin:0}header p{margin:2px 0 0;color:#c9d1d9;font-size:12px}"
    "main{padding:12px 20px}"
    "section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:10px 14px;"
    "margin-bottom:14px}"
    "h2{font-size:16px;margin:0 0 8px}h3{font-size:14px;margin:0}"
    ".cards{display:flex;flex-wrap:wrap;gap:8px;margin-bottom:10px}"
    ".top{display:flex;flex-wrap:wrap;gap:14px;margin-bottom:8px}"
    ".top>div:first-child{flex:2 1 600px}#rank-bars{flex:1 1 340px}"
    ".card{flex:1 1 140px;max-width:220px;border:1px solid #d0d7de;border-radius:6px;"
    "padding:6px 10px;background:#fff}"
    ".card .v{font-size:22px;font-weight:600}.card .k{font-size:12px;color:#57606a}"
    ".card .d{font-size:11px;color:#57606a;display:-webkit-box;-webkit-line-clamp:3;"
    "-webkit-box-orient:vertical;overflow:hidden}"
    ".card.warn{border-color:#d1242f;background:#fff5f5}.card.warn .v{color:#d1242f}"
    ".findings{margin:0;padding:0;list-style:none;display:grid;"
    "grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:6px}"
    ".findings li{border-left:4px solid #8c959f;padding:4px 10px;background:#f6f8fa}"
    ".findings li.critical,.findings li.high{border-color:#d1242f}"
    ".findings li.warning{border-color:#bf8700}.findings li.medium{border-color:#bf8700}"
    ".findings li.low{border-color:#0969da}"
    ".findings p{margin:2px 0;font-size:12px}.findings .adv{color:#1a7f37}"
    ".sev{font-size:11px;text-transform:uppercase;color:#57606a;margin-left:6px}"
    ".note{color:#57606a;font-size:12px}"
    ".tl-bar{display:flex;gap:6px;align-items:center;margin-bottom:6px;font-size:12px}"
    ".tl-bar button{font:inherit;padding:2px 10px}"
    ".key{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:middle}"
    ".tl{display:flex}.tl-lab{flex:none;font-size:11px}"
    ".tl-main{flex:1;min-width:0;position:relative}"
    "#tl{display:block;width:100%;cursor:grab;background:#fbfcfd}"
    "#tl rect{vector-effect:non-scaling-stroke;stroke-width:1px}"
    "#tl rect.ck{fill:#8e24aa;fill-opacity:.10;stroke:none}"
    "#tl-axis{position:relative;height:18px;border-top:1px solid #d0d7de;font-size:11px;"
    "color:#57606a}"
    "#tl-axis span{position:absolute;top:2px;transform:translateX(-50%);white-space:nowrap}"
    "#tip{position:fixed;display:none;pointer-events:none;background:#24292f;color:#fff;"
    "font-size:12px;padding:4px 8px;border-radius:4px;max-width:600px;white-space:pre-wrap;"
    "word-break:break-all;z-index:10}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:10px}"
    ".chart h3{font-size:13px;font-weight:600}"
    ".chart svg{width:100%;height:auto;display:block}"
    "table{border-collapse:collapse;font-size:12px;width:100%}"
    "th,td{padding:3px 8px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "th{cursor:pointer;background:#f6f8fa;user-select:none}"
    "th.asc:after{content:' \\25B2'}th.desc:after{content:' \\25BC'}"
    "td.name{word-break:break-all;font-family:ui-monospace,monospace}"
    "iframe.flame{width:100%;height:520px;border:1px solid #d0d7de}"
    "@media (max-width:900px){.findings{grid-template-columns:1fr}}";

/* Zoom and pan change the lanes' viewBox; the axis and tooltip read the
 * span and the names table; tables sort on a header click. */
static const char page_js[] =
    "(function(){'use strict';\n"
    "function fmt(ns){var a=Math.abs(ns);if(a<1e3)return ns.toFixed(0)+' ns';"
    "if(a<1e6)return (ns/1e3).toFixed(1)+' \\u00b5s';if(a<1e9)return (ns/1e6).toFixed(2)+' ms';"
    "return (ns/1e9).toFixed(3)+' s';}\n"
    "var svg=document.getElementById('tl'),tip=document.getElementById('tip');\n"
    "if(svg){\n"
    " var W=+svg.getAttribute('data-w'),H=+svg.getAttribute('data-h'),"
    "span=+svg.getAttribute('data-span');\n"
    " var names=JSON.parse(document.getElementById('tl-names').textContent);\n"
    " var ops=JSON.parse(document.getElementById('tl-ops').textContent);\n"
    " var ax=document.getElementById('tl-axis'),rng=document.getElementById('tl-range');\n"
    " var off=+svg.getAttribute('data-off'),vx=0,vw=W,drag=null;\n"
    " var draw=function(){if(vw<W/1e5)vw=W/1e5;if(vw>W)vw=W;if(vx<0)vx=0;if(vx+vw>W)vx=W-vw;\n"
    "  svg.setAttribute('viewBox',vx+' 0 '+vw+' '+H);\n"
    "  var t0=vx/W*span+off,t1=(vx+vw)/W*span+off,r=(t1-t0)/8,"
    "p=Math.pow(10,Math.floor(Math.log10(r)));\n"
    "  var st=r/p<2?2*p:r/p<5?5*p:10*p;ax.textContent='';\n"
    "  for(var t=Math.ceil(t0/st)*st;t<=t1;t+=st){var s=document.createElement('span');"
    "s.style.left=((t-t0)/(t1-t0)*100)+'%';s.textContent=fmt(t);ax.appendChild(s);}\n"
    "  rng.textContent=fmt(t0)+' \\u2013 '+fmt(t1)+' ('+fmt(t1-t0)+' shown)';};\n"
    " var zoom=function(k,c){var at=vx+vw*c;vw*=k;if(vw<W/1e5)vw=W/1e5;if(vw>W)vw=W;"
    "vx=at-vw*c;draw();};\n"
    " svg.addEventListener('wheel',function(e){e.preventDefault();"
    "var r=svg.getBoundingClientRect();zoom(e.deltaY<0?0.8:1.25,(e.clientX-r.left)/r.width);},"
    "{passive:false});\n"
    " svg.addEventListener('mousedown',function(e){drag={x:e.clientX,vx:vx};"
    "svg.style.cursor='grabbing';e.preventDefault();});\n"
    " window.addEventListener('mouseup',function(){drag=null;svg.style.cursor='';});\n"
    " window.addEventListener('mousemove',function(e){if(!drag)return;"
    "var r=svg.getBoundingClientRect();vx=drag.vx-(e.clientX-drag.x)/r.width*vw;draw();});\n"
    " document.getElementById('tl-in').onclick=function(){zoom(0.5,0.5);};\n"
    " document.getElementById('tl-out').onclick=function(){zoom(2,0.5);};\n"
    " document.getElementById('tl-reset').onclick=function(){vx=0;vw=W;draw();};\n"
    " document.getElementById('tl-left').onclick=function(){vx-=vw/4;draw();};\n"
    " document.getElementById('tl-right').onclick=function(){vx+=vw/4;draw();};\n"
    " svg.addEventListener('mousemove',function(e){var t=e.target,g=t.parentNode;\n"
    "  if(drag||t.tagName!=='rect'||!g.hasAttribute('data-m')){tip.style.display='none';return;}\n"
    "  var nm=names[+g.getAttribute('data-m')]||[],x=+t.getAttribute('x'),"
    "w=+t.getAttribute('width'),txt,o=t.getAttribute('data-o'),ot=g.getAttribute('data-ot');\n"
    "  var label=nm[+t.getAttribute('data-n')]||'';\n"
    "  if(o!==null&&ops[ot])label=(ops[ot][+o]||'')+(label?' '+label:'');\n"
    "  var at=' at '+fmt(x/W*span+off)+', '+g.getAttribute('data-lane');\n"
    "  if(t.hasAttribute('data-t'))txt=t.getAttribute('data-t')+'\\n'+fmt(w/W*span)+at;\n"
    "  else if(t.hasAttribute('data-k'))txt=t.getAttribute('data-k')+' operations merged"
    " (each narrower than a pixel at full view)\\nbusy '+fmt(+t.getAttribute('data-b'))+' in '+"
    "fmt(w/W*span)+at+'\\nlongest: '+label;\n"
    "  else txt=label+'\\n'+fmt(w/W*span)+at;\n"
    "  tip.textContent=txt;tip.style.display='block';"
    "tip.style.left=Math.min(e.clientX+12,window.innerWidth-320)+'px';"
    "tip.style.top=(e.clientY+14)+'px';});\n"
    " svg.addEventListener('mouseleave',function(){tip.style.display='none';});\n"
    " draw();\n"
    "}\n"
    "Array.prototype.forEach.call(document.querySelectorAll('.chart svg'),function(c){\n"
    " var a=function(k){return +c.getAttribute('data-'+k);},x0=a('x0'),x1=a('x1'),y0=a('y0'),"
    "y1=a('y1'),top=a('top');\n"
    " c.addEventListener('mousemove',function(e){var r=c.getBoundingClientRect(),"
    "x=(e.clientX-r.left)/r.width*600;\n"
    "  if(x<x0||x>x1){tip.style.display='none';return;}\n"
    "  var txt=fmt((x-x0)/(x1-x0)*a('span')+a('off'));\n"
    "  Array.prototype.forEach.call(c.querySelectorAll('polyline'),function(pl){"
    "var pts=pl.points,best=null;\n"
    "   for(var i=0;i<pts.numberOfItems;i++){var q=pts.getItem(i);"
    "if(!best||Math.abs(q.x-x)<Math.abs(best.x-x))best=q;}\n"
    "   if(best)txt+='\\n'+pl.getAttribute('data-r')+': '+((y1-best.y)/(y1-y0)*top).toPrecision(3)+"
    "' '+c.getAttribute('data-unit');});\n"
    "  tip.textContent=txt;tip.style.display='block';"
    "tip.style.left=Math.min(e.clientX+12,window.innerWidth-320)+'px';"
    "tip.style.top=(e.clientY+14)+'px';});\n"
    " c.addEventListener('mouseleave',function(){tip.style.display='none';});});\n"
    "Array.prototype.forEach.call(document.querySelectorAll('table.sort th'),function(th,i){\n"
    " th.addEventListener('click',function(){var tb=th.closest('table').tBodies[0];"
    "var up=!th.classList.contains('asc');\n"
    "  Array.prototype.forEach.call(th.parentNode.children,function(h){"
    "h.classList.remove('asc','desc');});th.classList.add(up?'asc':'desc');\n"
    "  var rows=Array.prototype.slice.call(tb.rows),num=th.classList.contains('n');\n"
    "  var key=function(r){var c=r.cells[i];if(!c)return num?-Infinity:'';"
    "return num?+(c.getAttribute('data-v')||'-Infinity'):c.textContent;};\n"
    "  rows.sort(function(a,b){var x=key(a),y=key(b),c=num?x-y:String(x).localeCompare(y);"
    "return up?c:-c;});\n"
    "  rows.forEach(function(r){tb.appendChild(r);});});});\n"
    "document.body.setAttribute('data-ready','1');\n"
    "})();\n";

/* ---- summary ---- */

struct gpu_mean {
    size_t n;
    double compute, comm, memcpy, idle, non_compute, exposed, overlap;
    double host_wait_us, kernel_wait_us, other_us;
    double min_compute, max_compute;
};

static void gpu_means(yajl_val procs, struct gpu_mean *g)
{
    memset(g, 0, sizeof *g);
    g->min_compute = INFINITY;
    g->max_compute = -INFINITY;
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val gpu = jkey(aget(procs, i), "gpu");
        double c;
        if (!knum(gpu, "compute_pct", &c))
            continue;
        g->n++;
        g->compute += c;
        g->min_compute = fmin(g->min_compute, c);
        g->max_compute = fmax(g->max_compute, c);
        g->comm += knum_or(gpu, "comm_pct", 0);
        g->memcpy += knum_or(gpu, "memcpy_pct", 0);
        g->idle += knum_or(gpu, "idle_pct", 0);
        g->non_compute += knum_or(gpu, "non_compute_pct", 0);
        g->exposed += knum_or(gpu, "exposed_comm_pct", 0);
        g->overlap += knum_or(gpu, "comm_comp_overlap_pct", 0);
        yajl_val idle = jkey(gpu, "idle");
        g->host_wait_us += knum_or(idle, "host_wait_us", 0);
        g->kernel_wait_us += knum_or(idle, "kernel_wait_us", 0);
        g->other_us += knum_or(idle, "other_us", 0);
    }
    if (g->n) {
        double n = (double)g->n;
        g->compute /= n, g->comm /= n, g->memcpy /= n, g->idle /= n;
        g->non_compute /= n, g->exposed /= n, g->overlap /= n;
    }
}

/* Opens a card: the big value is printed by the caller between card_open
 * and card_close. */
static void card_open(FILE *f, int warn)
{
    fputs(warn ? "<div class=\"card warn\"><div class=\"v\">" : "<div class=\"card\"><div class=\"v\">", f);
}

static void card_close(FILE *f, const char *key)
{
    fprintf(f, "</div><div class=\"k\">%s</div><div class=\"d\">", key);
}

static void card_pct(FILE *f, const char *key, double v, int warn, const char *detail)
{
    card_open(f, warn);
    fprintf(f, "%.1f%%", v);
    card_close(f, key);
    fprintf(f, "%s</div></div>\n", detail);
}

static void summary_cards(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    struct gpu_mean g;
    gpu_means(procs, &g);
    p->have_gpu = g.n > 0;
    char d[160];
    fputs("<div class=\"cards\" id=\"cards\">\n", f);
    if (g.n) {
        const char *over = g.n > 1 ? "mean of the GPU ranks" : "of the GPU time span";
        snprintf(d, sizeof d, "any kernel running: what a utilisation counter shows");
        card_pct(f, "GPU busy", 100 - g.idle, 0, d);
        if (g.n > 1)
            snprintf(d, sizeof d, "%s; ranks %.1f%% to %.1f%%", over, g.min_compute, g.max_compute);
        else
            snprintf(d, sizeof d, "%s", over);
        card_pct(f, "GPU compute", g.compute, 0, d);
        snprintf(d, sizeof d, "%.1f%% of it overlapped with compute", g.overlap);
        card_pct(f, "Communication", g.comm, 0, d);
        snprintf(d, sizeof d, "communication with no compute beside it, %% of span");
        card_pct(f, "Exposed communication", g.exposed, g.exposed >= 5, d);
        snprintf(d, sizeof d, "memcpy and memset, %s", over);
        card_pct(f, "Copies", g.memcpy, 0, d);
        double idle_us = g.host_wait_us + g.kernel_wait_us + g.other_us;
        if (idle_us > 0)
            snprintf(d, sizeof d, "of idle: host wait %.0f%%, kernel wait %.0f%%, other %.0f%%",
                     100 * g.host_wait_us / idle_us, 100 * g.kernel_wait_us / idle_us,
                     100 * g.other_us / idle_us);
        else
            snprintf(d, sizeof d, "no GPU work running");
        card_pct(f, "GPU idle", g.idle, g.idle >= 20, d);
    }
    /* Checkpoints and storage only where file I/O was traced (a PyTorch
     * profiler trace has none). */
    double ck_pct;
    yajl_val cks = jkey(p->root, "checkpoints");
    if (alen(cks) || (p->have_io && knum(p->root, "checkpoint_pct", &ck_pct))) {
        if (!knum(p->root, "checkpoint_pct", &ck_pct))
            ck_pct = 0;
        double stall = 0, bytes = 0;
        for (size_t i = 0; i < alen(cks); i++) {
            stall += knum_or(aget(cks, i), "gpu_stall_s", 0);
            bytes += knum_or(aget(cks, i), "bytes", 0);
        }
        char b[32], s[32];
        fmt_bytes(b, sizeof b, bytes);
        fmt_ns(s, sizeof s, stall * 1e9);
        if (alen(cks))
            snprintf(d, sizeof d, "%zu checkpoint%s, %s written, GPU stall %s", alen(cks),
                     alen(cks) == 1 ? "" : "s", b, s);
        else
            snprintf(d, sizeof d, "no burst of large writes found");
        card_pct(f, "Checkpoints, of wall time", ck_pct, ck_pct >= 5, d);
    }
    /* report.json lists only the ranks whose waiting is significant
     * (collectives.h); with none, the card says so and how far the most
     * waited-for rank was from the bar */
    yajl_val strag = jkey(p->root, "stragglers");
    if (strag) {
        yajl_val w = aget(strag, 0);
        card_open(f, w != NULL);
        double r, v, bar;
        if (w && knum(w, "rank", &r))
            fprintf(f, "rank %.0f", r);
        else
            fputs("none", f);
        card_close(f, "Worst straggler");
        yajl_val chk = jkey(p->root, "straggler_check");
        if (w) {
            /* the evidence says by how much (excess_pct); a report without
             * that figure has the score */
            if (!knum(w, "excess_pct", &v) && knum(w, "score", &v))
                fprintf(f, "score %.3g; ", v);
            put_value(f, jkey(w, "evidence"));
        } else if (knum(chk, "min_excess_pct", &bar) && knum(chk, "max_excess_pct", &v) &&
                   knum_or(chk, "parts", 0) > 0) {
            fprintf(f, "none stands out: no rank made the others wait %.0f%% of their time beyond an equal "
                       "rank's share (the most %.1f%%)", bar, v);
        } else {
            fputs("none stands out", f);
        }
        fputs("</div></div>\n", f);
    }
    double skew;
    if (knum(p->root, "skew_us", &skew)) {
        card_open(f, skew > 100);
        fprintf(f, "%.1f \xc2\xb5s", skew);
        card_close(f, "Clock skew (residual)");
        yajl_val al = jkey(p->root, "alignment");
        const char *how = kstr(al, "method");
        double matched;
        if (how) {
            fputs("aligned by ", f);
            put_html(f, how);
            if (knum(al, "matched_collectives", &matched) && matched > 0)
                fprintf(f, " (%.0f collectives)", matched);
        } else {
            fputs("after aligning the ranks' clocks", f);
        }
        fputs("</div></div>\n", f);
    }
    double rb = 0, wb = 0, rs = 0, ws = 0, dropped = 0;
    int have_io = 0;
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val proc = aget(procs, i), io = jkey(proc, "io");
        dropped += knum_or(proc, "dropped", 0);
        if (!io)
            continue;
        have_io = 1;
        rb += knum_or(io, "read_bytes", 0);
        wb += knum_or(io, "write_bytes", 0);
        rs += knum_or(io, "read_s", 0);
        ws += knum_or(io, "write_s", 0);
    }
    if (have_io && p->have_io) {
        char r[32], w[32];
        fmt_bytes(r, sizeof r, rb);
        fmt_bytes(w, sizeof w, wb);
        card_open(f, 0);
        fprintf(f, "%s / %s", r, w);
        card_close(f, "Storage read / written");
        fmt_ns(r, sizeof r, rs * 1e9);
        fmt_ns(w, sizeof w, ws * 1e9);
        fprintf(f, "%s reading, %s writing (all processes)</div></div>\n", r, w);
    }
    /* The process count is in the header; a card only when records were
     * lost, since every figure above is then short of them. */
    if (dropped > 0) {
        card_open(f, 1);
        fprintf(f, "%.0f", dropped);
        card_close(f, "Records dropped");
        fputs("the agent's memory bound was reached; the figures miss them</div></div>\n", f);
    }
    fputs("</div>\n", f);
    if (!g.n)
        fputs("<p class=\"note\">No GPU activity in these traces: the GPU figures, lanes and "
              "charts are left out.</p>\n", f);
}

static void findings(struct page *p)
{
    FILE *f = p->f;
    yajl_val fs = jkey(p->root, "findings");
    fputs("<div id=\"findings\"><h2>Findings</h2>\n", f);
    if (!fs) {
        fputs("<p class=\"note\">report.json has no findings.</p></div>\n", f);
        return;
    }
    if (!alen(fs)) {
        fputs("<p class=\"note\">None: no known pattern matched.</p></div>\n", f);
        return;
    }
    fputs("<ol class=\"findings\">\n", f);
    for (size_t i = 0; i < alen(fs); i++) {
        yajl_val x = aget(fs, i);
        const char *sev = kstr(x, "severity");
        fputs("<li class=\"", f);
        put_html(f, sev);
        fputs("\"><h3>", f);
        if (kstr(x, "title"))
            put_html(f, kstr(x, "title"));
        else
            put_value(f, jkey(x, "id"));
        if (sev) {
            fputs("<span class=\"sev\">", f);
            put_html(f, sev);
            fputs("</span>", f);
        }
        fputs("</h3><p class=\"ev\">", f);
        put_value(f, jkey(x, "evidence"));
        fputs("</p><p class=\"adv\">", f);
        put_value(f, jkey(x, "advice"));
        fputs("</p></li>\n", f);
    }
    fputs("</ol></div>\n", f);
}

/* Where each rank's GPU time goes: compute, exposed communication, the
 * rest of non-compute (copies, communication hidden only by copies), idle:
 * together the whole span. Unbalanced ranks stand out. */
static void rank_bars(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < alen(procs); i++)
        n += knum(jkey(aget(procs, i), "gpu"), "compute_pct", &(double){ 0 });
    if (!n)
        return;
    /* Rows shrink when there are many ranks, labels then thin out. */
    const double x0 = 64, bw = 330, rh = n <= 16 ? 16 : fmax(4, 256.0 / (double)n);
    size_t label_every = (size_t)ceil(12 / rh);
    fprintf(f, "<div id=\"rank-bars\"><h2>GPU time per rank</h2>"
               "<svg viewBox=\"0 0 480 %.0f\" style=\"width:100%%;max-width:480px\" role=\"img\">\n",
            n * rh + 22);
    static const char *const seg_name[] = { "compute", "exposed communication", "other non-compute",
                                            "idle" };
    static const char *const seg_col[] = { "#43a047", "#e53935", "#1e88e5", "#c4c9cf" };
    size_t row = 0;
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val proc = aget(procs, i), gpu = jkey(proc, "gpu");
        double c;
        if (!knum(gpu, "compute_pct", &c))
            continue;
        double ex = knum_or(gpu, "exposed_comm_pct", 0), nc = knum_or(gpu, "non_compute_pct", 0);
        double idle = knum_or(gpu, "idle_pct", 0);
        double seg[4] = { c, ex, fmax(0, nc - ex), idle };
        double y = (double)row * rh, x = x0;
        if (row++ % label_every == 0) {
            fprintf(f, "<text x=\"0\" y=\"%.1f\" font-size=\"11\">", y + fmin(12, rh));
            put_proc(f, proc);
            fputs("</text>", f);
        }
        for (int s = 0; s < 4; s++) {
            double w = fmax(0, fmin(seg[s], 100 - (x - x0) / bw * 100)) / 100 * bw;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
                       "<title>", x, y + rh / 8, w, rh * 0.75, seg_col[s]);
            put_proc(f, proc);
            fprintf(f, ": %s %.1f%%</title></rect>", seg_name[s], seg[s]);
            x += w;
        }
        if ((row - 1) % label_every == 0)
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\">%.0f%% compute</text>\n",
                    x0 + bw + 6, y + fmin(12, rh), c);
    }
    double y = n * rh + 14, x = x0;
    for (int s = 0; s < 4; s++) {
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"9\" height=\"9\" fill=\"%s\"/>"
                   "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\">%s</text>",
                x, y - 8, seg_col[s], x + 12, y, seg_name[s]);
        x += 12 + 6.2 * strlen(seg_name[s]) + 10;
    }
    fputs("</svg></div>\n", f);
}

/* ---- timeline lanes ---- */

struct iv {
    int64_t s, e;
    uint32_t name;  /* string id in the process's model */
    int32_t op;     /* sync kind (waits), I/O op (I/O); -1 otherwise */
};

/* Maps ns on the job time line to lane x units. */
struct geo {
    int64_t origin;
    double scale;
    int y;
};

static void put_op(FILE *f, int32_t op)
{
    if (op >= 0)
        fprintf(f, " data-o=\"%d\"", (int)op);
}

static void put_rect(FILE *f, const struct geo *g, const struct iv *v)
{
    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" data-n=\"%" PRIu32 "\"",
            (double)(v->s - g->origin) * g->scale, g->y, (double)(v->e - v->s) * g->scale, TL_LANE_H,
            v->name);
    put_op(f, v->op);
    fputs("/>", f);
}

struct group {
    int64_t s, e, busy, longest;
    struct iv top;  /* the longest member */
    size_t k;
};

static void put_group(FILE *f, const struct geo *g, const struct group *m, int64_t px)
{
    if (m->k == 1) {
        put_rect(f, g, &m->top);
        return;
    }
    int64_t e = m->e > m->s + px ? m->e : m->s + px;
    double fill = (double)m->busy / (double)(e - m->s);
    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill-opacity=\"%.2f\" "
               "data-k=\"%zu\" data-b=\"%" PRId64 "\" data-n=\"%" PRIu32 "\"",
            (double)(m->s - g->origin) * g->scale, g->y, (double)(e - m->s) * g->scale, TL_LANE_H,
            fmin(1, fmax(0.3, fill)), m->k, m->busy, m->top.name);
    put_op(f, m->top.op);
    fputs("/>", f);
}

/* The thinning. Intervals (in start order) at least px wide are drawn as
 * they are. Narrower ones are gathered into groups: a group takes every
 * narrow interval that starts within px of the group's first, and is drawn
 * as one rectangle (at least px wide, shaded by how busy it was) that names
 * its count, busy time and longest member. So a lane has at most about
 * span/px groups plus its wide intervals. Returns the number of
 * rectangles; f NULL only counts them. */
static size_t thin(FILE *f, const struct geo *g, const struct iv *v, size_t n, int64_t px)
{
    size_t out = 0;
    struct group cur = { 0 };
    for (size_t i = 0; i < n; i++) {
        int64_t d = v[i].e - v[i].s;
        if (d >= px) {
            if (f)
                put_rect(f, g, &v[i]);
            out++;
            continue;
        }
        if (cur.k && v[i].s < cur.s + px) {
            cur.k++;
            cur.busy += d;
            if (v[i].e > cur.e)
                cur.e = v[i].e;
            if (d > cur.longest)
                cur.longest = d, cur.top = v[i];
            continue;
        }
        if (cur.k) {
            if (f)
                put_group(f, g, &cur, px);
            out++;
        }
        cur = (struct group){ v[i].s, v[i].e, d, d, v[i], 1 };
    }
    if (cur.k) {
        if (f)
            put_group(f, g, &cur, px);
        out++;
    }
    return out;
}

/* One row of lanes: a process's model (may be NULL) and the rank it
 * stands for (checkpoints are matched by rank). */
struct row {
    const struct rsr_model *m;
    size_t mi;          /* index into the models, for the names table */
    double rank;        /* -1: none */
    struct iv *lane[TL_NLANES];
    size_t n[TL_NLANES];
};

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if ((x->rank >= 0) != (y->rank >= 0))
        return x->rank >= 0 ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    int64_t px = x->m ? x->m->pid : 0, py = y->m ? y->m->pid : 0;
    return (px > py) - (px < py);
}

static int lane_of(uint8_t cls)
{
    switch (cls) {
    case RSR_GPU_COMPUTE: return TL_COMPUTE;
    case RSR_GPU_COMM: return TL_COMM;
    case RSR_GPU_MEMCPY:
    case RSR_GPU_MEMSET: return TL_COPY;
    default: return -1;
    }
}

/* A checkpoint on the job time line, in ns, when report.json places it. */
static int ckpt_span(const struct page *p, yajl_val ck, int64_t *s, int64_t *e)
{
    double st, dur;
    if (!p->have_ck_origin || !knum(ck, "start_s", &st) || !knum(ck, "dur_s", &dur))
        return 0;
    /* Within a century of the clock's zero both ways, so that the casts
     * and the span stay inside int64 whatever the file says. */
    double a = p->ck_origin_us * 1e3 + st * 1e9, b = a + dur * 1e9;
    if (!(fabs(a) < 4e18 && fabs(b) < 4e18 && b >= a))
        return 0;
    *s = (int64_t)a;
    *e = (int64_t)b;
    return 1;
}

static int cmp_iv(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

static void put_names(FILE *f, const struct row *rows, size_t nrows, size_t nmodels)
{
    fputs("<script type=\"application/json\" id=\"tl-names\">[", f);
    for (size_t mi = 0; mi < nmodels; mi++) {
        const struct rsr_model *m = NULL;
        for (size_t r = 0; r < nrows; r++)
            if (rows[r].m && rows[r].mi == mi)
                m = rows[r].m;
        fputs(mi ? ",\n[" : "\n[", f);
        for (size_t i = 0; m && i < m->strings.n; i++) {
            if (i)
                putc(',', f);
            put_js_str(f, rsr_model_str(m, (uint32_t)i));
        }
        putc(']', f);
    }
    fputs("]</script>\n", f);
    /* The names of the ops on the waits and I/O lanes (data-o). */
    fputs("<script type=\"application/json\" id=\"tl-ops\">{\"sync\":[", f);
    for (unsigned i = 0; i < RSF_SYNC_NKINDS; i++) {
        fputs(i ? "," : "", f);
        put_js_str(f, rsf_sync_kind_name(i));
    }
    fputs("],\"io\":[", f);
    for (unsigned i = 0; i < RSF_IO_NOPS; i++) {
        fputs(i ? "," : "", f);
        put_js_str(f, rsf_io_op_name(i));
    }
    fputs("]}</script>\n", f);
}

static void row_label(FILE *f, const struct row *r)
{
    if (r->rank >= 0)
        fprintf(f, "rank %.0f", r->rank);
    else if (r->m)
        fprintf(f, "pid %" PRId64, r->m->pid);
    else
        fputs("process", f);
}

static void free_rows(struct row *rows, size_t n)
{
    for (size_t r = 0; r < n; r++)
        for (int l = 0; l < TL_NLANES; l++)
            free(rows[r].lane[l]);
    free(rows);
}

static void widen(int64_t *origin, int64_t *end, int64_t s, int64_t e)
{
    if (s < *origin)
        *origin = s;
    if (e > *end)
        *end = e;
}

/* Gathers the intervals of a row's model lanes (r->n[] counted them), in
 * start order as the finished model keeps them. -1 when out of memory. */
static int fill_row(struct row *r)
{
    const struct rsr_model *m = r->m;
    size_t k[TL_NLANES] = { 0 };
    for (int l = 0; l < TL_NLANES; l++)
        if (l != TL_CKPT && r->n[l] && !(r->lane[l] = malloc(r->n[l] * sizeof *r->lane[l])))
            return -1;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        int l = lane_of(op->cls);
        if (l >= 0 && op->end_ns > op->start_ns)
            r->lane[l][k[l]++] = (struct iv){ op->start_ns, op->end_ns, op->name, -1 };
    }
    for (size_t i = 0; i < m->n_syncs; i++)
        if (m->syncs[i].end_ns > m->syncs[i].start_ns)
            r->lane[TL_WAIT][k[TL_WAIT]++] =
                (struct iv){ m->syncs[i].start_ns, m->syncs[i].end_ns, 0, m->syncs[i].kind };
    for (size_t i = 0; i < m->n_io; i++)
        if (m->io[i].end_ns > m->io[i].start_ns)
            r->lane[TL_IO][k[TL_IO]++] =
                (struct iv){ m->io[i].start_ns, m->io[i].end_ns, m->io[i].path, m->io[i].op };
    return 0;
}

static void drop_row(struct row *r)
{
    for (int l = 0; l < TL_NLANES; l++) {
        free(r->lane[l]);
        r->lane[l] = NULL;
    }
}

/* Fills rows with one per model plus one per checkpointing rank that has
 * no model; *origin and *end become the time span of everything drawn. */
static int build_rows(const struct page *p, struct row **out, size_t *nout, int64_t *origin,
                      int64_t *end)
{
    yajl_val cks = jkey(p->root, "checkpoints");
    size_t cap = p->nmodels + alen(cks);
    struct row *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (!rows)
        return -1;
    size_t n = 0;
    *origin = INT64_MAX;
    *end = INT64_MIN;
    for (size_t mi = 0; mi < p->nmodels; mi++) {
        const struct rsr_model *m = p->models[mi];
        struct row *r = &rows[n++];
        r->m = m;
        r->mi = mi;
        r->rank = m->rank >= 0 ? m->rank : -1;
        /* Counts and the span only: the intervals are gathered one row at
         * a time while drawing, so memory does not grow with the ranks. */
        for (size_t i = 0; i < m->n_ops; i++) {
            const struct rsr_gpu_op *op = &m->ops[i];
            int l = lane_of(op->cls);
            if (l >= 0 && op->end_ns > op->start_ns)
                r->n[l]++, widen(origin, end, op->start_ns, op->end_ns);
        }
        for (size_t i = 0; i < m->n_syncs; i++)
            if (m->syncs[i].end_ns > m->syncs[i].start_ns)
                r->n[TL_WAIT]++, widen(origin, end, m->syncs[i].start_ns, m->syncs[i].end_ns);
        for (size_t i = 0; i < m->n_io; i++)
            if (m->io[i].end_ns > m->io[i].start_ns)
                r->n[TL_IO]++, widen(origin, end, m->io[i].start_ns, m->io[i].end_ns);
    }
    /* Checkpoints: a lane of their own on their rank's row. Where there are
     * other lanes, only those that overlap them: a checkpoint outside means
     * the two sources do not share a clock, and the lanes would shrink to
     * nothing. */
    int64_t gpu_s = *origin, gpu_e = *end;
    for (size_t i = 0; i < alen(cks); i++) {
        yajl_val ck = aget(cks, i);
        int64_t s, e;
        double rank = knum_or(ck, "rank", -1);
        if (!ckpt_span(p, ck, &s, &e) || e <= s || (gpu_e > gpu_s && (e < gpu_s || s > gpu_e)))
            continue;
        struct row *r = NULL;
        for (size_t k = 0; k < n && !r; k++)
            if (rows[k].rank == rank)
                r = &rows[k];
        if (!r) {
            r = &rows[n++];
            r->rank = rank;
            r->mi = SIZE_MAX;
        }
        struct iv *grown = realloc(r->lane[TL_CKPT], (r->n[TL_CKPT] + 1) * sizeof *grown);
        if (!grown) {
            *out = rows, *nout = n;
            return -1;
        }
        r->lane[TL_CKPT] = grown;
        grown[r->n[TL_CKPT]++] = (struct iv){ s, e, (uint32_t)i, -1 };
        widen(origin, end, s, e);
    }
    for (size_t k = 0; k < n; k++)
        if (rows[k].n[TL_CKPT] > 1)
            qsort(rows[k].lane[TL_CKPT], rows[k].n[TL_CKPT], sizeof(struct iv), cmp_iv);
    qsort(rows, n, sizeof *rows, cmp_row);
    *out = rows;
    *nout = n;
    return 0;
}

static int timeline(struct page *p)
{
    FILE *f = p->f;
    struct row *rows = NULL;
    size_t nrows = 0;
    int64_t origin, end;
    if (build_rows(p, &rows, &nrows, &origin, &end) != 0) {
        free_rows(rows, nrows);
        errno = ENOMEM;
        return -1;
    }
    fputs("<section id=\"timeline\"><h2>Timeline</h2>\n", f);
    size_t nlanes = 0;
    for (size_t r = 0; r < nrows; r++)
        for (int l = 0; l < TL_NLANES; l++)
            nlanes += rows[r].n[l] > 0;
    if (!nlanes || end <= origin) {
        fputs("<p class=\"note\">No GPU work or checkpoints with times in these traces.</p>"
              "</section>\n", f);
        free_rows(rows, nrows);
        return 0;
    }
    int64_t span = end - origin;
    size_t cap = TL_RECTS_TOTAL / nlanes;
    cap = cap > TL_RECTS_MAX ? TL_RECTS_MAX : cap < TL_RECTS_MIN ? TL_RECTS_MIN : cap;
    int height = 0;
    for (size_t r = 0; r < nrows; r++) {
        int k = 0;
        for (int l = 0; l < TL_NLANES; l++)
            k += rows[r].n[l] > 0;
        if (k)
            height += k * TL_LANE_STEP + TL_ROW_GAP;
    }
    char s[32];
    fmt_ns(s, sizeof s, (double)span);
    fputs("<div class=\"tl-bar\"><button id=\"tl-in\" title=\"zoom in\">+</button>"
          "<button id=\"tl-out\" title=\"zoom out\">&minus;</button>"
          "<button id=\"tl-left\" title=\"pan left\">&larr;</button>"
          "<button id=\"tl-right\" title=\"pan right\">&rarr;</button>"
          "<button id=\"tl-reset\">whole run</button><span id=\"tl-range\"></span>", f);
    for (int l = 0; l < TL_NLANES; l++)
        fprintf(f, "<span class=\"key\" style=\"background:%s\"></span>%s", lane_colour[l],
                lane_text[l]);
    fprintf(f, "</div>\n<p class=\"note\">Wheel or buttons to zoom, drag to pan, hover for "
               "name and duration. %s in all; operations narrower than a pixel at full view are "
               "merged into one shaded block per pixel (at most %zu blocks per lane); every "
               "single operation is in trace.json, which Perfetto opens.</p>\n",
            s, cap);
    fprintf(f, "<div class=\"tl\"><svg class=\"tl-lab\" width=\"150\" height=\"%d\">", height);
    int y = 0;
    for (size_t r = 0; r < nrows; r++) {
        int first = 1;
        for (int l = 0; l < TL_NLANES; l++) {
            if (!rows[r].n[l])
                continue;
            if (first) {
                fprintf(f, "<text x=\"2\" y=\"%d\" font-weight=\"600\">", y + 11);
                row_label(f, &rows[r]);
                if (rows[r].m && rows[r].m->host) {
                    fputs("<title>", f);
                    put_html(f, rsr_model_str(rows[r].m, rows[r].m->host));
                    fputs("</title>", f);
                }
                fputs("</text>", f);
                first = 0;
            }
            fprintf(f, "<text x=\"146\" y=\"%d\" text-anchor=\"end\" fill=\"#57606a\">%s</text>",
                    y + 11, lane_text[l]);
            y += TL_LANE_STEP;
        }
        if (!first)
            y += TL_ROW_GAP;
    }
    /* Times read from the job's start (report.json "start_us") when it is
     * not far before the first thing drawn, as the tables' times do. */
    int64_t off = 0;
    if (p->have_ck_origin) {
        double t0 = p->ck_origin_us * 1e3;
        if (t0 <= (double)origin && (double)origin - t0 <= (double)span)
            off = origin - (int64_t)t0;
    }
    fprintf(f, "</svg>\n<div class=\"tl-main\"><svg id=\"tl\" viewBox=\"0 0 %.0f %d\" "
               "preserveAspectRatio=\"none\" height=\"%d\" data-w=\"%.0f\" data-h=\"%d\" "
               "data-span=\"%" PRId64 "\" data-off=\"%" PRId64 "\">\n",
            TL_W, height, height, TL_W, height, span, off);
    struct geo g = { origin, TL_W / (double)span, 0 };
    yajl_val cks = jkey(p->root, "checkpoints");
    for (size_t i = 0; i < alen(cks); i++) {
        int64_t cs, ce;
        if (ckpt_span(p, aget(cks, i), &cs, &ce) && ce > cs && ce > origin && cs < end)
            fprintf(f, "<rect class=\"ck\" x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"%d\"/>\n",
                    (double)(cs - origin) * g.scale, (double)(ce - cs) * g.scale, height);
    }
    y = 0;
    for (size_t r = 0; r < nrows; r++) {
        int any = 0;
        if (rows[r].m && fill_row(&rows[r]) != 0) {
            free_rows(rows, nrows);
            errno = ENOMEM;
            return -1;
        }
        for (int l = 0; l < TL_NLANES; l++) {
            if (!rows[r].n[l])
                continue;
            any = 1;
            g.y = y + 1;
            fprintf(f, "<g style=\"fill:%s;stroke:%s\" data-m=\"%zu\" data-lane=\"", lane_colour[l],
                    lane_colour[l], rows[r].mi == SIZE_MAX ? (size_t)0 : rows[r].mi);
            row_label(f, &rows[r]);
            fprintf(f, " %s\"%s>", lane_text[l],
                    l == TL_WAIT ? " data-ot=\"sync\"" : l == TL_IO ? " data-ot=\"io\"" : "");
            if (l == TL_CKPT) {
                /* Few and named from report.json: drawn one by one. */
                for (size_t i = 0; i < rows[r].n[l]; i++) {
                    const struct iv *v = &rows[r].lane[l][i];
                    char b[32];
                    fmt_bytes(b, sizeof b, knum_or(aget(cks, v->name), "bytes", 0));
                    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                               "data-t=\"checkpoint: %s written\"/>",
                            (double)(v->s - origin) * g.scale, g.y, (double)(v->e - v->s) * g.scale,
                            TL_LANE_H, b);
                }
            } else {
                int64_t px = span / TL_COLUMNS > 0 ? span / TL_COLUMNS : 1;
                while (thin(NULL, &g, rows[r].lane[l], rows[r].n[l], px) > cap)
                    px *= 2;
                thin(f, &g, rows[r].lane[l], rows[r].n[l], px);
            }
            fputs("</g>\n", f);
            y += TL_LANE_STEP;
        }
        drop_row(&rows[r]);
        if (any)
            y += TL_ROW_GAP;
    }
    fputs("</svg>\n<div id=\"tl-axis\"></div></div></div>\n", f);
    put_names(f, rows, nrows, p->nmodels);
    if (!jkey(p->root, "timeline") && alen(cks))
        fputs("<p class=\"note\">report.json has no \"timeline\", so the checkpoints cannot be "
              "placed on the lanes.</p>\n", f);
    fputs("<p class=\"note\">Waits: host threads blocked on the GPU (stream, event, context "
          "synchronise). I/O: file calls. Checkpoints: bursts of large writes, also shaded across "
          "all lanes. A process gets only the lanes it has something on.</p>\n", f);
    fputs("</section>\n", f);
    free_rows(rows, nrows);
    return 0;
}

/* ---- utilisation charts ---- */

static double nice_max(double v)
{
    if (v <= 0)
        return 1;
    double p = pow(10, floor(log10(v)));
    double m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* One dashboard panel: a line per rank of the per-bin series key, with
 * checkpoints shaded. Returns 0 when no rank has the series. */
static int chart(struct page *p, yajl_val ranks, const char *key, const char *title,
                 const char *unit, double fixed_max)
{
    FILE *f = p->f;
    double top = 0;
    size_t nbins = 0;
    int any = 0;
    for (size_t r = 0; r < alen(ranks); r++) {
        yajl_val s = jkey(aget(ranks, r), key);
        if (!YAJL_IS_ARRAY(s))
            continue;
        any = 1;
        if (alen(s) > nbins)
            nbins = alen(s);
        for (size_t i = 0; i < alen(s); i++) {
            double v;
            if (jnum(aget(s, i), &v) && v > top)
                top = v;
        }
    }
    if (!any || !nbins)
        return 0;
    top = fixed_max > 0 ? fixed_max : nice_max(top);
    const double X0 = 46, X1 = 592, Y0 = 10, Y1 = 172;
    double total_s = (double)nbins * p->tl_bin_us / 1e6;
    /* Times read from the job's start, as on the lanes and in the tables:
     * start_s counts from ck_origin_us, the bins from tl_start_us. */
    double shift = p->have_ck_origin ? (p->ck_origin_us - p->tl_start_us) / 1e6 : 0;
    fprintf(f, "<div class=\"chart\" id=\"chart-%s\"><h3>%s</h3>"
               "<svg viewBox=\"0 0 600 196\" role=\"img\" data-x0=\"%.0f\" data-x1=\"%.0f\" "
               "data-y0=\"%.0f\" data-y1=\"%.0f\" data-top=\"%g\" data-span=\"%.0f\" "
               "data-off=\"%.0f\" data-unit=\"%s\">\n",
            key, title, X0, X1, Y0, Y1, top, total_s * 1e9, -shift * 1e9, unit);
    yajl_val cks = jkey(p->root, "checkpoints");
    for (size_t i = 0; i < alen(cks) && total_s > 0; i++) {
        double st, dur;
        if (!knum(aget(cks, i), "start_s", &st) || !knum(aget(cks, i), "dur_s", &dur))
            continue;
        st += shift;
        double a = fmax(0, st / total_s), b = fmin(1, (st + dur) / total_s);
        if (b > a)
            fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
                       "fill=\"#8e24aa\" fill-opacity=\".12\"><title>checkpoint</title></rect>\n",
                    X0 + a * (X1 - X0), Y0, (b - a) * (X1 - X0), Y1 - Y0);
    }
    for (int k = 0; k <= 4; k++) {
        double y = Y1 - (Y1 - Y0) * k / 4;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d0d7de\"/>"
                   "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" "
                   "fill=\"#57606a\">%g</text>\n",
                X0, X1, y, y, X0 - 4, y + 3, top * k / 4);
    }
    for (int k = 0; k <= 4; k++) {
        char t[32];
        fmt_ns(t, sizeof t, (total_s * k / 4 - shift) * 1e9);
        fprintf(f, "<text x=\"%.1f\" y=\"188\" font-size=\"10\" text-anchor=\"%s\" "
                   "fill=\"#57606a\">%s</text>",
                X0 + (X1 - X0) * k / 4, k == 0 ? "start" : k == 4 ? "end" : "middle", t);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"8\" font-size=\"10\" fill=\"#57606a\">%s</text>\n", X0, unit);
    /* At most CHART_POINTS points: each the largest value of its bins, so
     * that short peaks survive, as monitoring dashboards do. */
    size_t per = (nbins + CHART_POINTS - 1) / CHART_POINTS;
    for (size_t r = 0; r < alen(ranks); r++) {
        yajl_val rk = aget(ranks, r), s = jkey(rk, key);
        if (!alen(s))
            continue;
        fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.3\" stroke=\"%s\" data-r=\"",
                palette[r % NPALETTE]);
        put_proc(f, rk);
        fputs("\" points=\"", f);
        double peak = 0;
        for (size_t i = 0; i < alen(s); i += per) {
            double v = 0, x;
            for (size_t j = i; j < i + per && j < alen(s); j++)
                if (jnum(aget(s, j), &x) && x > v)
                    v = x;
            peak = fmax(peak, v);
            double px = X0 + (X1 - X0) * ((double)i + per / 2.0) / (double)nbins;
            double py = Y1 - (Y1 - Y0) * fmin(v, top) / top;
            fprintf(f, "%.1f,%.1f ", px, py);
        }
        fputs("\"><title>", f);
        put_proc(f, rk);
        fprintf(f, ": peak %.3g %s</title></polyline>\n", peak, unit);
    }
    fputs("</svg></div>\n", f);
    return 1;
}

static void charts(struct page *p)
{
    FILE *f = p->f;
    yajl_val tl = jkey(p->root, "timeline"), ranks = jkey(tl, "ranks");
    fputs("<section id=\"utilisation\"><h2>Utilisation over time</h2>\n", f);
    if (!p->have_timeline || !alen(ranks)) {
        fputs("<p class=\"note\">report.json has no \"timeline\" bins.</p></section>\n", f);
        return;
    }
    char b[32];
    fmt_ns(b, sizeof b, p->tl_bin_us * 1e3);
    fprintf(f, "<p class=\"note\">One point per %s bin (the busiest bin where several share a "
               "pixel); checkpoints shaded. Ranks:", b);
    for (size_t r = 0; r < alen(ranks); r++) {
        fprintf(f, "<span class=\"key\" style=\"background:%s\"></span>", palette[r % NPALETTE]);
        put_proc(f, aget(ranks, r));
    }
    fputs("</p><div class=\"charts\">\n", f);
    /* Without GPU figures the GPU series are all zero: left out. */
    int n = 0;
    if (p->have_gpu) {
        n += chart(p, ranks, "gpu_busy_pct", "GPU busy", "%", 100);
        n += chart(p, ranks, "comm_gbs", "Communication bandwidth", "GB/s", 0);
    }
    if (p->have_io) {
        n += chart(p, ranks, "read_mbs", "Storage read", "MB/s", 0);
        n += chart(p, ranks, "write_mbs", "Storage write", "MB/s", 0);
    }
    fputs("</div>\n", f);
    if (!n)
        fputs("<p class=\"note\">The timeline has no series.</p>\n", f);
    fputs("</section>\n", f);
}

/* ---- tables ---- */

static void th(FILE *f, const char *label, int numeric)
{
    fprintf(f, numeric ? "<th class=\"n\">%s</th>" : "<th>%s</th>", label);
}

static void td_num(FILE *f, double v, const char *shown)
{
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%s</td>", v, shown);
}

static void td_fmt(FILE *f, double v, int prec)
{
    char b[48];
    snprintf(b, sizeof b, "%.*f", prec, v);
    td_num(f, v, b);
}

static void td_bytes(FILE *f, double v)
{
    char b[32];
    fmt_bytes(b, sizeof b, v);
    td_num(f, v, b);
}

static void td_us(FILE *f, double us)
{
    char b[32];
    fmt_ns(b, sizeof b, us * 1e3);
    td_num(f, us, b);
}

static void table_more(FILE *f, size_t shown, size_t total)
{
    if (total > shown)
        fprintf(f, "<p class=\"note\">%zu of %zu rows shown; report.json has them all.</p>\n",
                shown, total);
}

static void table_ranks(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    if (!alen(procs))
        return;
    fputs("<h3>Processes</h3><table class=\"sort\" id=\"table-processes\"><thead><tr>", f);
    th(f, "process", 0), th(f, "role", 0), th(f, "host", 0), th(f, "wall", 1);
    th(f, "GPU span", 1), th(f, "compute %", 1), th(f, "comm %", 1), th(f, "copies %", 1);
    th(f, "idle %", 1), th(f, "exposed comm %", 1), th(f, "overlap %", 1);
    th(f, "waited in collectives", 1), th(f, "GPU syncs", 1), th(f, "blocked in syncs", 1);
    th(f, "allocs / frees", 1), th(f, "data loading %", 1), th(f, "dropped", 1), th(f, "trace", 0);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val proc = aget(procs, i), gpu = jkey(proc, "gpu");
        fputs("<tr><td>", f);
        put_proc(f, proc);
        fputs("</td><td>", f);
        put_html(f, kstr(proc, "role"));
        fputs("</td><td>", f);
        put_html(f, kstr(proc, "host"));
        fputs("</td>", f);
        td_us(f, knum_or(proc, "wall_s", 0) * 1e6);
        static const char *const keys[] = { "compute_pct", "comm_pct", "memcpy_pct", "idle_pct",
                                            "exposed_comm_pct", "comm_comp_overlap_pct" };
        double v;
        if (knum(gpu, "span_us", &v))
            td_us(f, v);
        else
            fputs("<td></td>", f);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (knum(gpu, keys[k], &v))
                td_fmt(f, v, 1);
            else
                fputs("<td></td>", f);
        }
        if (knum(proc, "collective_wait_us", &v))
            td_us(f, v);
        else
            fputs("<td></td>", f);
        yajl_val sy = jkey(proc, "syncs"), mem = jkey(proc, "memory");
        if (knum(sy, "count", &v)) {
            td_fmt(f, v, 0);
            td_us(f, knum_or(sy, "blocked_s", 0) * 1e6);
        } else {
            fputs("<td></td><td></td>", f);
        }
        /* Memory churn: cuMemAlloc and cuMemFree calls. */
        if (knum(mem, "allocs", &v))
            fprintf(f, "<td class=\"n\" data-v=\"%.0f\">%.0f / %.0f</td>", v, v,
                    knum_or(mem, "frees", 0));
        else
            fputs("<td></td>", f);
        if (knum(jkey(proc, "data_loading"), "pct", &v))
            td_fmt(f, v, 1);
        else
            fputs("<td></td>", f);
        td_fmt(f, knum_or(proc, "dropped", 0), 0);
        yajl_val tr = jkey(proc, "trace");
        fputs("<td>", f);
        if (YAJL_IS_TRUE(jkey(tr, "cut_short")))
            fprintf(f, "cut short: %.0f bytes unread", knum_or(tr, "unread_bytes", 0));
        else if (YAJL_IS_TRUE(jkey(tr, "complete")))
            fputs("complete", f);
        else if (tr)
            fputs("no end mark", f);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* Kernel names that run short (below the threshold report.json names) many
 * times: candidates for fusion or CUDA graphs. */
static void table_short_kernels(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < alen(procs); i++)
        n += alen(jkey(jkey(aget(procs, i), "short_kernels"), "fusion_candidates"));
    if (!n)
        return;
    fputs("<h3>Short kernels (fusion or CUDA graph candidates)</h3>"
          "<table class=\"sort\" id=\"table-short-kernels\"><thead><tr>", f);
    th(f, "process", 0), th(f, "kernel", 0), th(f, "short runs", 1), th(f, "their time", 1);
    th(f, "threshold", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = 0;
    for (size_t i = 0; i < alen(procs) && shown < TABLE_ROWS; i++) {
        yajl_val proc = aget(procs, i), sk = jkey(proc, "short_kernels");
        yajl_val fc = jkey(sk, "fusion_candidates");
        for (size_t j = 0; j < alen(fc) && shown < TABLE_ROWS; j++, shown++) {
            yajl_val c = aget(fc, j);
            fputs("<tr><td>", f);
            put_proc(f, proc);
            fputs("</td><td class=\"name\">", f);
            put_html(f, kstr(c, "name"));
            fputs("</td>", f);
            td_fmt(f, knum_or(c, "short_count", 0), 0);
            td_us(f, knum_or(c, "short_us", 0));
            td_us(f, knum_or(sk, "threshold_us", 0));
            fputs("</tr>\n", f);
        }
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, n);
}

static void table_collectives(struct page *p)
{
    FILE *f = p->f;
    yajl_val cs = jkey(p->root, "collectives");
    if (!cs)
        return;
    fputs("<h3>Collectives</h3>", f);
    if (!alen(cs)) {
        fputs("<p class=\"note\">None recorded.</p>\n", f);
        return;
    }
    fputs("<table class=\"sort\" id=\"table-collectives\"><thead><tr>", f);
    th(f, "op", 0), th(f, "communicator", 0), th(f, "ranks", 1), th(f, "bytes", 1);
    th(f, "count", 1), th(f, "mean", 1), th(f, "mean wait for the last rank", 1);
    th(f, "algbw GB/s", 1), th(f, "busbw GB/s", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t n = alen(cs) < TABLE_ROWS ? alen(cs) : TABLE_ROWS;
    for (size_t i = 0; i < n; i++) {
        yajl_val c = aget(cs, i);
        fputs("<tr><td>", f);
        put_value(f, jkey(c, "op"));
        fputs("</td><td class=\"name\">", f);
        put_value(f, jkey(c, "comm"));
        fputs("</td>", f);
        yajl_val rk = jkey(c, "ranks");
        double v;
        if (jnum(rk, &v)) {
            td_fmt(f, v, 0);
        } else {
            fprintf(f, "<td class=\"n\" data-v=\"%zu\">", alen(rk));
            put_value(f, rk);
            fputs("</td>", f);
        }
        td_bytes(f, knum_or(c, "bytes", 0));
        td_fmt(f, knum_or(c, "count", 0), 0);
        td_us(f, knum_or(c, "mean_us", 0));
        double wait;
        if (knum(c, "mean_wait_us", &wait))
            td_us(f, wait);
        else
            fputs("<td></td>", f);
        td_fmt(f, knum_or(c, "algbw_gbs", 0), 2);
        td_fmt(f, knum_or(c, "busbw_gbs", 0), 2);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, n, alen(cs));
}

struct kagg {
    const char *name;
    double count, total;
    size_t procs;
};

static int cmp_kname(const void *a, const void *b)
{
    return strcmp(((const struct kagg *)a)->name, ((const struct kagg *)b)->name);
}

static int cmp_ktotal(const void *a, const void *b)
{
    double x = ((const struct kagg *)a)->total, y = ((const struct kagg *)b)->total;
    return (x < y) - (x > y);
}

/* Kernels summed over processes by name, most total time first. */
static int table_kernels(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < alen(procs); i++)
        n += alen(jkey(aget(procs, i), "kernels"));
    if (!n)
        return 0;
    struct kagg *k = malloc(n * sizeof *k);
    if (!k) {
        errno = ENOMEM;
        return -1;
    }
    size_t m = 0;
    double all = 0;
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val ks = jkey(aget(procs, i), "kernels");
        for (size_t j = 0; j < alen(ks); j++) {
            yajl_val x = aget(ks, j);
            const char *name = kstr(x, "name");
            if (!name)
                continue;
            k[m++] = (struct kagg){ name, knum_or(x, "count", 0), knum_or(x, "total_us", 0), 1 };
            all += knum_or(x, "total_us", 0);
        }
    }
    if (m)
        qsort(k, m, sizeof *k, cmp_kname);
    size_t u = 0;
    for (size_t i = 0; i < m; i++) {
        if (u && strcmp(k[u - 1].name, k[i].name) == 0) {
            k[u - 1].count += k[i].count;
            k[u - 1].total += k[i].total;
            k[u - 1].procs++;
        } else {
            k[u++] = k[i];
        }
    }
    if (u)
        qsort(k, u, sizeof *k, cmp_ktotal);
    fputs("<h3>Kernels (all processes)</h3><table class=\"sort\" id=\"table-kernels\"><thead><tr>", f);
    th(f, "kernel", 0), th(f, "processes", 1), th(f, "count", 1), th(f, "total", 1);
    th(f, "mean", 1), th(f, "% of kernel time", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = u < TABLE_ROWS ? u : TABLE_ROWS;
    for (size_t i = 0; i < shown; i++) {
        fputs("<tr><td class=\"name\">", f);
        put_html(f, k[i].name);
        fputs("</td>", f);
        td_fmt(f, (double)k[i].procs, 0);
        td_fmt(f, k[i].count, 0);
        td_us(f, k[i].total);
        td_us(f, k[i].count > 0 ? k[i].total / k[i].count : 0);
        td_fmt(f, all > 0 ? 100 * k[i].total / all : 0, 1);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, u);
    free(k);
    return 0;
}

struct fagg {
    yajl_val proc, file;
    double bytes;
};

static int cmp_fbytes(const void *a, const void *b)
{
    double x = ((const struct fagg *)a)->bytes, y = ((const struct fagg *)b)->bytes;
    return (x < y) - (x > y);
}

/* Files by bytes moved, with the process that moved them. */
static int table_io(struct page *p)
{
    FILE *f = p->f;
    yajl_val procs = jkey(p->root, "processes");
    size_t n = 0;
    for (size_t i = 0; i < alen(procs); i++)
        n += alen(jkey(jkey(aget(procs, i), "io"), "files"));
    if (!n)
        return 0;
    struct fagg *a = malloc(n * sizeof *a);
    if (!a) {
        errno = ENOMEM;
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < alen(procs); i++) {
        yajl_val fs = jkey(jkey(aget(procs, i), "io"), "files");
        for (size_t j = 0; j < alen(fs); j++) {
            yajl_val x = aget(fs, j);
            a[m++] = (struct fagg){ aget(procs, i), x,
                                    knum_or(x, "read_bytes", 0) + knum_or(x, "write_bytes", 0) };
        }
    }
    qsort(a, m, sizeof *a, cmp_fbytes);
    fputs("<h3>File I/O</h3><table class=\"sort\" id=\"table-io\"><thead><tr>", f);
    th(f, "process", 0), th(f, "path", 0), th(f, "read", 1), th(f, "written", 1);
    th(f, "operations", 1), th(f, "time", 1);
    fputs("</tr></thead><tbody>\n", f);
    size_t shown = m < TABLE_ROWS ? m : TABLE_ROWS;
    for (size_t i = 0; i < shown; i++) {
        fputs("<tr><td>", f);
        put_proc(f, a[i].proc);
        fputs("</td><td class=\"name\">", f);
        put_html(f, kstr(a[i].file, "path"));
        fputs("</td>", f);
        td_bytes(f, knum_or(a[i].file, "read_bytes", 0));
        td_bytes(f, knum_or(a[i].file, "write_bytes", 0));
        td_fmt(f, knum_or(a[i].file, "ops", 0), 0);
        td_us(f, knum_or(a[i].file, "time_s", 0) * 1e6);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, shown, m);
    free(a);
    return 0;
}

static void table_checkpoints(struct page *p)
{
    FILE *f = p->f;
    yajl_val cks = jkey(p->root, "checkpoints");
    if (!alen(cks))
        return;
    fputs("<h3>Checkpoints</h3><table class=\"sort\" id=\"table-checkpoints\"><thead><tr>", f);
    th(f, "rank", 1), th(f, "start", 1), th(f, "duration", 1), th(f, "bytes", 1);
    th(f, "GPU stall", 1);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < alen(cks) && i < TABLE_ROWS; i++) {
        yajl_val c = aget(cks, i);
        fputs("<tr>", f);
        td_fmt(f, knum_or(c, "rank", -1), 0);
        td_us(f, knum_or(c, "start_s", 0) * 1e6);
        td_us(f, knum_or(c, "dur_s", 0) * 1e6);
        td_bytes(f, knum_or(c, "bytes", 0));
        td_us(f, knum_or(c, "gpu_stall_s", 0) * 1e6);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    table_more(f, alen(cks) < TABLE_ROWS ? alen(cks) : TABLE_ROWS, alen(cks));
}

static void table_stragglers(struct page *p)
{
    FILE *f = p->f;
    yajl_val st = jkey(p->root, "stragglers");
    if (!alen(st))
        return;
    fputs("<h3>Stragglers</h3><table class=\"sort\" id=\"table-stragglers\"><thead><tr>", f);
    th(f, "rank", 1), th(f, "score", 1), th(f, "others waited", 1), th(f, "beyond share, % of time", 1);
    th(f, "worst in", 0), th(f, "evidence", 0);
    fputs("</tr></thead><tbody>\n", f);
    for (size_t i = 0; i < alen(st) && i < TABLE_ROWS; i++) {
        yajl_val s = aget(st, i);
        fputs("<tr>", f);
        td_fmt(f, knum_or(s, "rank", -1), 0);
        td_fmt(f, knum_or(s, "score", 0), 3);
        double caused;
        if (knum(s, "caused_wait_us", &caused))
            td_us(f, caused);
        else
            fputs("<td></td>", f);
        double excess;
        if (knum(s, "excess_pct", &excess))
            td_fmt(f, excess, 1);
        else
            fputs("<td></td>", f);
        fputs("<td>", f);
        put_html(f, kstr(s, "phase"));
        fputs("</td><td>", f);
        put_value(f, jkey(s, "evidence"));
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static int tables(struct page *p)
{
    fputs("<section id=\"tables\"><h2>Tables</h2><p class=\"note\">Click a header to sort.</p>\n",
          p->f);
    table_stragglers(p);
    table_collectives(p);
    table_checkpoints(p);
    if (table_kernels(p) != 0)
        return -1;
    table_short_kernels(p);
    if (table_io(p) != 0)
        return -1;
    table_ranks(p);
    fputs("</section>\n", p->f);
    return 0;
}

/* ---- flame graphs ---- */

static void put_base64(FILE *f, const unsigned char *d, size_t n)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)d[i + 1] << 8;
        if (i + 2 < n)
            v |= d[i + 2];
        putc(b64[v >> 18 & 63], f);
        putc(b64[v >> 12 & 63], f);
        putc(i + 1 < n ? b64[v >> 6 & 63] : '=', f);
        putc(i + 2 < n ? b64[v & 63] : '=', f);
    }
}

/* The number in attr="N" inside the <svg ...> tag of svg, or 0. */
static double svg_attr(const char *svg, const char *attr)
{
    const char *tag = strstr(svg, "<svg");
    const char *end = tag ? strchr(tag, '>') : NULL;
    size_t n = strlen(attr);
    for (const char *a = tag; a && end && (a = strstr(a + 1, attr)) && a < end;)
        if ((a[-1] == ' ' || a[-1] == '\n' || a[-1] == '\t') && a[n] == '=' && a[n + 1] == '"')
            return strtod(a + n + 2, NULL);
    return 0;
}

/* The whole file in a malloc'd buffer (NUL added, not counted in *len). */
static char *slurp(const char *path, size_t *len)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, in);
        if (ferror(in) || feof(in))
            break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = buf && ferror(in) ? EIO : 0;
    fclose(in);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

static void flames(struct page *p, const char *const *svgs, size_t n)
{
    FILE *f = p->f;
    fputs("<section id=\"flames\"><h2>Flame graphs</h2>\n", f);
    if (!n)
        fputs("<p class=\"note\">None: the traces hold no stacks, or `ringside flame` was not "
              "run into this folder.</p>\n", f);
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(svgs[i], '/');
        base = base ? base + 1 : svgs[i];
        size_t len;
        char *svg = slurp(svgs[i], &len);
        fputs("<h3>", f);
        put_html(f, base);
        fputs("</h3>\n", f);
        if (!svg) {
            fputs("<p class=\"note\">Could not read ", f);
            put_html(f, svgs[i]);
            fprintf(f, ": %s</p>\n", strerror(errno));
            continue;
        }
        /* A data: URL in a sandboxed frame: the SVG keeps its own script
         * (click to zoom, search) but runs in an opaque origin. */
        fputs("<iframe class=\"flame\" sandbox=\"allow-scripts\" ", f);
        /* Its own shape, so that the whole graph shows at the page's width. */
        double w = svg_attr(svg, "width"), h = svg_attr(svg, "height");
        if (w > 0 && h > 0 && isfinite(w / h))
            fprintf(f, "style=\"height:auto;aspect-ratio:%.0f/%.0f\" ", w, h);
        fputs("title=\"", f);
        put_html(f, base);
        fputs("\" src=\"data:image/svg+xml;base64,", f);
        put_base64(f, (const unsigned char *)svg, len);
        fputs("\"></iframe>\n", f);
        free(svg);
    }
    fputs("</section>\n", f);
}

/* ---- entry points ---- */

int rsr_html_write_flames(FILE *f, const char *report_json, size_t len,
                          struct rsr_model *const *models, size_t nmodels,
                          const char *const *flame_svgs, size_t nflames)
{
    char *text = malloc(len + 1);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(text, report_json, len);
    text[len] = 0;
    char err[256];
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    free(text);
    if (!YAJL_IS_OBJECT(root)) {
        yajl_tree_free(root);
        errno = EINVAL;
        return -1;
    }
    struct page p = { .f = f, .root = root, .models = models, .nmodels = nmodels };
    yajl_val tl = jkey(root, "timeline");
    if (knum(tl, "bin_us", &p.tl_bin_us) && p.tl_bin_us > 0) {
        p.have_timeline = 1;
        p.tl_start_us = knum_or(tl, "start_us", 0);
    }
    p.have_ck_origin = knum(root, "start_us", &p.ck_origin_us) || knum(tl, "start_us", &p.ck_origin_us);
    for (size_t i = 0; i < alen(jkey(root, "processes")); i++) {
        yajl_val io = jkey(aget(jkey(root, "processes"), i), "io");
        if (knum_or(io, "read_bytes", 0) > 0 || knum_or(io, "write_bytes", 0) > 0)
            p.have_io = 1;
    }
    const char *job = kstr(root, "job");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
          "frame-src data:\">\n<title>ringside: ", f);
    put_html(f, job ? job : "report");
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<header><h1>ringside report", page_css);
    if (job) {
        fputs(": ", f);
        put_html(f, job);
    }
    fputs("</h1><p>", f);
    double world;
    if (knum(root, "world_size", &world))
        fprintf(f, "world size %.0f &middot; ", world);
    double dropped = 0;
    for (size_t i = 0; i < alen(jkey(root, "processes")); i++)
        dropped += knum_or(aget(jkey(root, "processes"), i), "dropped", 0);
    fprintf(f, "%zu processes traced &middot; %zu timelines &middot; %.0f records dropped &middot; "
               "ringside %s</p></header>\n<main>\n",
            alen(jkey(root, "processes")), nmodels, dropped, RINGSIDE_VERSION);
    fputs("<section id=\"summary\"><h2>Summary</h2>\n", f);
    fputs("<div class=\"top\"><div>", f);
    summary_cards(&p);
    fputs("</div>", f);
    rank_bars(&p);
    fputs("</div>", f);
    findings(&p);
    fputs("</section>\n", f);
    int rc = timeline(&p);
    if (rc == 0) {
        charts(&p);
        rc = tables(&p);
    }
    if (rc == 0) {
        flames(&p, flame_svgs, nflames);
        fprintf(f, "</main>\n<div id=\"tip\"></div>\n<script>%s</script>\n</body></html>\n", page_js);
    }
    yajl_tree_free(root);
    if (rc != 0)
        return -1;
    if (fflush(f) != 0 || ferror(f)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

int rsr_html_write(FILE *f, const char *report_json, size_t len, struct rsr_model *const *models,
                   size_t nmodels)
{
    return rsr_html_write_flames(f, report_json, len, models, nmodels, NULL, 0);
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The flame-NAME.svg files in dir, sorted; *n of them. NULL with *n 0 when none. */
static char **find_flames(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 10 || strncmp(e->d_name, "flame-", 6) != 0 || strcmp(e->d_name + len - 4, ".svg"))
            continue;
        if (*n == cap) {
            char **grown = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof *v);
            if (!grown)
                break;
            v = grown;
        }
        size_t plen = strlen(dir) + len + 2;
        if (!(v[*n] = malloc(plen)))
            break;
        snprintf(v[*n], plen, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof *v, cmp_path);
    return v;
}

int rsr_html_write_dir(const char *out_dir, struct rsr_model *const *models, size_t nmodels,
                       const char **failed)
{
    static char json_path[4096], path[4096], tmp[4096];
    snprintf(json_path, sizeof json_path, "%s/report.json", out_dir);
    *failed = json_path;
    size_t len;
    char *json = slurp(json_path, &len);
    if (!json)
        return -1;
    size_t nflames;
    char **flame = find_flames(out_dir, &nflames);
    snprintf(tmp, sizeof tmp, "%s/.index.html.tmp", out_dir);
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    int rc = -1;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        *failed = tmp;
    } else {
        rc = rsr_html_write_flames(f, json, len, models, nmodels, (const char *const *)flame, nflames);
        int err = errno;
        if (fclose(f) != 0 && rc == 0)
            rc = -1, err = errno;
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -1, err = errno;
        if (rc != 0) {
            unlink(tmp);
            *failed = err == EINVAL ? json_path : path;
        }
        errno = err;
    }
    for (size_t i = 0; i < nflames; i++)
        free(flame[i]);
    free(flame);
    free(json);
    return rc;
}
