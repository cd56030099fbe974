/* report.json read for the HTML page (yajl tree; every key may be missing)
 * and the escaping every text from a trace goes through on its way into the
 * page. Shared by html.c and html_ranks.c. */
#include "reporter/out/html_json.h"
#include "reporter/base/escape.h"

#include <math.h>
#include <string.h>

/* ---- report.json access (yajl tree); every key may be missing ---- */

yajl_val rsr_jv_key(yajl_val o, const char *k)
{
    if (!YAJL_IS_OBJECT(o))
        return NULL;
    for (size_t i = 0; i < o->u.object.len; i++)
        if (strcmp(o->u.object.keys[i], k) == 0)
            return o->u.object.values[i];
    return NULL;
}

int rsr_jv_num(yajl_val v, double *d)
{
    if (!YAJL_IS_NUMBER(v))
        return 0;
    double x = YAJL_IS_DOUBLE(v) ? v->u.number.d : (double)v->u.number.i;
    if (!isfinite(x))
        return 0;
    *d = x;
    return 1;
}

int rsr_jv_knum(yajl_val o, const char *k, double *d)
{
    return rsr_jv_num(rsr_jv_key(o, k), d);
}

double rsr_jv_knum_or(yajl_val o, const char *k, double dflt)
{
    double d;
    return rsr_jv_knum(o, k, &d) ? d : dflt;
}

const char *rsr_jv_kstr(yajl_val o, const char *k)
{
    return YAJL_GET_STRING(rsr_jv_key(o, k));
}

size_t rsr_jv_len(yajl_val a)
{
    return YAJL_IS_ARRAY(a) ? a->u.array.len : 0;
}

yajl_val rsr_jv_at(yajl_val a, size_t i)
{
    return i < rsr_jv_len(a) ? a->u.array.values[i] : NULL;
}

/* ---- escaping ---- */

void rsr_html_text(FILE *f, const char *s)
{
    rsr_markup_escape(f, s, RSR_MARKUP_HTML);
}

void rsr_html_value(FILE *f, yajl_val v)
{
    double d;
    if (YAJL_IS_STRING(v)) {
        rsr_html_text(f, v->u.string);
    } else if (rsr_jv_num(v, &d)) {
        fprintf(f, "%g", d);
    } else if (YAJL_IS_ARRAY(v)) {
        for (size_t i = 0; i < v->u.array.len; i++) {
            if (i)
                fputs(", ", f);
            rsr_html_value(f, v->u.array.values[i]);
        }
    } else if (YAJL_IS_OBJECT(v)) {
        for (size_t i = 0; i < v->u.object.len; i++) {
            if (i)
                fputs("; ", f);
            rsr_html_text(f, v->u.object.keys[i]);
            fputs(": ", f);
            rsr_html_value(f, v->u.object.values[i]);
        }
    } else if (YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v)) {
        fputs(YAJL_IS_TRUE(v) ? "yes" : "no", f);
    }
}

void rsr_html_axis_titles(FILE *f, double x0, double x1, double y0, double y1, double h, const char *x_title,
                          const char *y_title)
{
    fprintf(f, "<text class=\"axis-x\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
               "fill=\"#24292f\">", (x0 + x1) / 2, h - 3);
    rsr_html_text(f, x_title);
    fprintf(f, "</text><text class=\"axis-y\" transform=\"translate(10 %.1f) rotate(-90)\" font-size=\"10\" "
               "text-anchor=\"middle\" fill=\"#24292f\">", (y0 + y1) / 2);
    rsr_html_text(f, y_title);
    fputs("</text>\n", f);
}

/* ---- number formatting ---- */

double rsr_html_nice_max(double v)
{
    if (v <= 0)
        return 1;
    double p = pow(10, floor(log10(v)));
    double m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

void rsr_html_fmt_ns(char *b, size_t n, double ns)
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

