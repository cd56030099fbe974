/* What the HTML page's writers share: report.json read through yajl's tree
 * API (where any key may be missing or of the wrong type), and text written
 * into the page escaped as HTML content (JSON inside a <script> goes
 * through the JSON writer's RSR_JW_SCRIPT mode, json.h). Every text that
 * came from a trace goes through these. */
#ifndef RSR_HTML_JSON_H
#define RSR_HTML_JSON_H

#include <stddef.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

/* The value of key k in object o; NULL when o is not an object or has no k. */
yajl_val rsr_jv_key(yajl_val o, const char *k);
/* 1 and the value in *d when v is a finite number; 0 otherwise. */
int rsr_jv_num(yajl_val v, double *d);
/* rsr_jv_num of o's key k. */
int rsr_jv_knum(yajl_val o, const char *k, double *d);
/* o's key k as a finite number, or dflt. */
double rsr_jv_knum_or(yajl_val o, const char *k, double dflt);
/* o's key k as a string (owned by the tree), or NULL. */
const char *rsr_jv_kstr(yajl_val o, const char *k);
/* The length of array a; 0 when a is not an array. */
size_t rsr_jv_len(yajl_val a);
/* Element i of array a, or NULL. */
yajl_val rsr_jv_at(yajl_val a, size_t i);

/* s as HTML content or a quoted attribute value (NULL writes nothing):
 * rsr_markup_escape's RSR_MARKUP_HTML (escape.h: C0 controls other than tab
 * and newline become U+FFFD). */
void rsr_html_text(FILE *f, const char *s);
/* Any JSON value as escaped text: strings as they are, numbers with %g,
 * arrays joined by ", ", objects as "key: value; ...". */
void rsr_html_value(FILE *f, yajl_val v);

/* The titles of a chart's axes, each with its unit, in an SVG h units
 * tall whose plot is [x0, x1] x [y0, y1]: x_title centred at the bottom,
 * y_title turned along the y axis at the left edge (class axis-x, axis-y). */
void rsr_html_axis_titles(FILE *f, double x0, double x1, double y0, double y1, double h, const char *x_title,
                          const char *y_title);

/* ns as "12 ns", "1.5 µs", "2.50 ms" or "1.20 s". */
void rsr_html_fmt_ns(char *b, size_t n, double ns);

/* A chart's scale top: the first of 1, 2, 5 or 10 times a power of ten at
 * or above v (1 for v <= 0). */
double rsr_html_nice_max(double v);

#endif
