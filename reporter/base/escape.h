/* Text into markup (escape.c): the one escaper behind the flame graphs'
 * SVG (flame_svg.c, diff.c, history.c) and the report's HTML page (html*.c).
 * Both write & < > " ' as entities; what each does with bytes it cannot
 * hold is its context's rule, said below. */
#ifndef RSR_ESCAPE_H
#define RSR_ESCAPE_H

#include <stdio.h>

enum rsr_markup {
    /* A standalone SVG, read by XML parsers: C0 controls (tab and newline
     * too) and DEL become '?', and bytes that are not a whole, shortest-form
     * UTF-8 sequence of an XML character become U+FFFD (a parser rejects
     * the file otherwise). */
    RSR_MARKUP_XML,
    /* HTML content or a quoted attribute value: C0 controls other than tab
     * and newline become &#xFFFD; (HTML does not allow them); every other
     * byte passes (the browser replaces what is not UTF-8). */
    RSR_MARKUP_HTML,
};

/* Writes s to f, escaped for m, safe in text and in attribute values; NULL
 * writes nothing. */
void rsr_markup_escape(FILE *f, const char *s, enum rsr_markup m);

#endif
