/* Tables less their empty columns (html_table.h). The table is the page's
 * own HTML, written by html*.c: cells are <th ...>...</th> and
 * <td ...>...</td>, never nested, and text in them is escaped, so a cell
 * is found by its tags alone. */
#include "reporter/out/html_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 64

struct rsr_html_table {
    FILE *out, *mem;
    char *buf;
    size_t len;
};

struct rsr_html_table *rsr_html_table_begin(FILE *out, FILE **into)
{
    struct rsr_html_table *t = calloc(1, sizeof *t);
    if (!t || !(t->mem = open_memstream(&t->buf, &t->len))) {
        free(t);
        errno = ENOMEM;
        return NULL;
    }
    t->out = out;
    *into = t->mem;
    return t;
}

/* The next cell tag ("<th" or "<td", then a space or '>') or row tag
 * ("<tr", likewise) in [s, end), or NULL. */
static const char *next_tag(const char *s, const char *end, char *kind)
{
    for (; s + 4 <= end; s++) {
        if (s[0] != '<' || s[1] != 't' || (s[3] != ' ' && s[3] != '>'))
            continue;
        if (s[2] == 'h' || s[2] == 'd' || s[2] == 'r') {
            *kind = s[2];
            return s;
        }
    }
    return NULL;
}

/* Where the cell that starts at s ends (past its closing tag), or end. */
static const char *cell_end(const char *s, const char *end, char kind)
{
    const char *close = kind == 'h' ? "</th>" : "</td>";
    const char *e = strstr(s, close);
    return e && e < end ? e + 5 : end;
}

/* Whether the cell [s, e) holds something: text that is not empty or a
 * dash, and, where it has a data-v, a number that is not zero. */
static int cell_full(const char *s, const char *e)
{
    const char *gt = memchr(s, '>', (size_t)(e - s));
    if (!gt)
        return 0;
    size_t n = (size_t)(e - 5 - (gt + 1));
    if (!n || (n == 7 && memcmp(gt + 1, "&ndash;", 7) == 0))
        return 0;
    const char *v = strstr(s, " data-v=\"");
    return !(v && v < gt && strtod(v + 9, NULL) == 0);
}

/* Marks in keep[] the columns of the table [s, end) that hold something;
 * 0 when it has no body row (then it is copied whole). */
static int columns(const char *s, const char *end, unsigned char *keep)
{
    memset(keep, 0, MAX_COLS);
    int col = 0, rows = 0;
    char kind;
    const char *t;
    while ((t = next_tag(s, end, &kind))) {
        if (kind == 'r') {
            col = 0;
            s = t + 3;
            continue;
        }
        const char *e = cell_end(t, end, kind);
        const char *gt = memchr(t, '>', (size_t)(e - t));
        if (col < MAX_COLS) {
            if (kind == 'h' && gt && memmem(t, (size_t)(gt - t), " data-keep", 10))
                keep[col] = 1;
            if (kind == 'd') {
                rows++;
                keep[col] |= (unsigned char)cell_full(t, e);
            }
        } else {
            return 0;
        }
        col++;
        s = e;
    }
    return rows > 0;
}

/* Writes the table [s, end) less the columns not in keep[]. */
static void copy_kept(FILE *f, const char *s, const char *end, const unsigned char *keep)
{
    int col = 0;
    char kind;
    const char *t;
    while ((t = next_tag(s, end, &kind))) {
        if (kind == 'r') {
            fwrite(s, 1, (size_t)(t + 3 - s), f);
            col = 0;
            s = t + 3;
            continue;
        }
        fwrite(s, 1, (size_t)(t - s), f);
        const char *e = cell_end(t, end, kind);
        if (keep[col++])
            fwrite(t, 1, (size_t)(e - t), f);
        s = e;
    }
    fwrite(s, 1, (size_t)(end - s), f);
}

int rsr_html_table_end(struct rsr_html_table *t)
{
    int failed = fclose(t->mem) != 0;
    const char *s = t->buf, *end = t->buf + t->len;
    while (!failed && s < end) {
        const char *a = strstr(s, "<table"), *b = a ? strstr(a, "</table>") : NULL;
        if (!b) {
            fwrite(s, 1, (size_t)(end - s), t->out);
            break;
        }
        b += 8;
        fwrite(s, 1, (size_t)(a - s), t->out);
        unsigned char keep[MAX_COLS];
        if (columns(a, b, keep))
            copy_kept(t->out, a, b, keep);
        else
            fwrite(a, 1, (size_t)(b - a), t->out);
        s = b;
    }
    free(t->buf);
    free(t);
    if (failed)
        errno = ENOMEM;
    return failed ? -1 : 0;
}
