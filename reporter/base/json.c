/* The JSON writer (json.h): a stack of open containers with their styles,
 * the separators they call for, strings escaped and numbers formatted, all
 * into a buffer that goes to the FILE in large writes. */
#include "reporter/base/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes out ---- */

/* The few steps every key and number takes, inlined into each call of the
 * API (trace.json's events are tens of millions of them). */
#define HOT static inline __attribute__((always_inline))

void rsr_jw_flush(struct rsr_jw *w)
{
    if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len)
        w->failed = 1;
    w->len = 0;
}

/* n bytes free in the buffer (n <= RSR_JW_BUF), where to write them. */
HOT char *room(struct rsr_jw *w, size_t n)
{
    if (n > RSR_JW_BUF - w->len)
        rsr_jw_flush(w);
    return w->buf + w->len;
}

static void put(struct rsr_jw *w, const char *s, size_t n)
{
    if (n > RSR_JW_BUF - w->len) {
        rsr_jw_flush(w);
        if (n > RSR_JW_BUF) {
            if (fwrite(s, 1, n, w->f) != n)
                w->failed = 1;
            return;
        }
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

#define PUT_LIT(w, lit) put(w, lit, sizeof lit - 1)

HOT void put_char(struct rsr_jw *w, char c)
{
    *room(w, 1) = c;
    w->len++;
}

/* A finite double by printf's %.Nf or %.Ng (a %f of 1e300 is 300 digits
 * long: cut at the buffer, which no figure of a report comes near). */
static void put_printf(struct rsr_jw *w, int fixed, int prec, double v)
{
    char t[400];
    int n = fixed ? snprintf(t, sizeof t, "%.*f", prec, v) : snprintf(t, sizeof t, "%.*g", prec, v);
    put(w, t, n <= 0 ? 0 : (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

/* Decimal digits straight into the buffer: trace.json has tens of
 * millions of numbers. */
HOT void put_u64(struct rsr_jw *w, uint64_t v)
{
    static const uint64_t ten[19] = {
        10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
        10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull, 100000000000000ull,
        1000000000000000ull, 10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
        10000000000000000000ull,
    };
    size_t n = 1;
    while (n < 20 && v >= ten[n - 1])
        n++;
    char *o = room(w, n);
    for (size_t i = n; i-- > 0; v /= 10)
        o[i] = (char)('0' + v % 10);
    w->len += n;
}

HOT void put_i64(struct rsr_jw *w, int64_t v)
{
    if (v < 0)
        put_char(w, '-');
    put_u64(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* v thousandths with three decimals, exactly. */
HOT void put_milli(struct rsr_jw *w, int64_t v)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        put_char(w, '-');
    put_u64(w, a / 1000);
    char *o = room(w, 4);
    o[0] = '.', o[1] = (char)('0' + a % 1000 / 100), o[2] = (char)('0' + a % 100 / 10), o[3] = (char)('0' + a % 10);
    w->len += 4;
}

/* ---- strings ---- */

/* Bytes written as they are, in each mode; the rest go through escape().
 * JSON: printable ASCII but " (0x22) and \\ (0x5c). SCRIPT: also not &
 * (0x26), < (0x3c), > (0x3e) and DEL, but bytes from 0x80 on, except 0xe2
 * (U+2028/2029 begin with it). */
static const unsigned char plain[2][256] = {
    [RSR_JW_JSON] = { [0x20 ... 0x21] = 1, [0x23 ... 0x5b] = 1, [0x5d ... 0x7e] = 1 },
    [RSR_JW_SCRIPT] = { [0x20 ... 0x21] = 1, [0x23 ... 0x25] = 1, [0x27 ... 0x3b] = 1, [0x3d] = 1,
                        [0x3f ... 0x5b] = 1, [0x5d ... 0x7e] = 1, [0x80 ... 0xe1] = 1, [0xe3 ... 0xff] = 1 },
};

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

static void put_u4(struct rsr_jw *w, unsigned c)
{
    static const char hex[] = "0123456789abcdef";
    char t[6] = { '\\', 'u', hex[c >> 12 & 15], hex[c >> 8 & 15], hex[c >> 4 & 15], hex[c & 15] };
    put(w, t, sizeof t);
}

/* Writes the byte (or sequence) at p that is not plain; returns how many
 * bytes it took. */
static size_t escape(struct rsr_jw *w, const unsigned char *p)
{
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
        char t[2] = { '\\', (char)c };
        put(w, t, 2);
        return 1;
    }
    if (w->mode == RSR_JW_SCRIPT) {
        if (c == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            put_u4(w, p[2] == 0xa8 ? 0x2028 : 0x2029);
            return 3;
        }
        if (c == 0xe2)
            put(w, (const char *)p, 1);
        else
            put_u4(w, c);
        return 1;
    }
    switch (c) {
    case '\n': PUT_LIT(w, "\\n"); return 1;
    case '\r': PUT_LIT(w, "\\r"); return 1;
    case '\t': PUT_LIT(w, "\\t"); return 1;
    default: break;
    }
    int n = c >= 0x80 ? utf8_len(p) : 0;
    if (n) {
        put(w, (const char *)p, (size_t)n);
        return (size_t)n;
    }
    put_u4(w, c);
    return 1;
}

#define SHORT_STR 64

/* The rest of a string from p on, past what fitted put_str's fast copy. */
static void put_str_rest(struct rsr_jw *w, const unsigned char *p, const char *tail, size_t ntail)
{
    const unsigned char *ok = plain[w->mode];
    for (;;) {
        const unsigned char *run = p;
        while (ok[*p])
            p++;
        put(w, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        p += escape(w, p);
    }
    put_char(w, '"');
    put(w, tail, ntail);
}

/* s as a JSON string, after comma (a member's separator, or 0) and before
 * tail (a key's colon, or nothing; at most 2 bytes). Its plain bytes are
 * copied as they are scanned, straight into the buffer: keys and most
 * names need no escape and are short (SHORT_STR bytes or fewer). */
HOT void put_str(struct rsr_jw *w, char comma, const char *s, const char *tail, size_t ntail)
{
    const unsigned char *p = (const unsigned char *)s, *ok = plain[w->mode];
    char *o = room(w, SHORT_STR + 5);
    if (comma)
        *o++ = comma;
    char *end = o + 1 + SHORT_STR;
    *o++ = '"';
    while (o < end && ok[*p])
        *o++ = (char)*p++;
    if (*p) {
        w->len = (size_t)(o - w->buf);
        put_str_rest(w, p, tail, ntail);
        return;
    }
    *o++ = '"';
    if (ntail)
        o[0] = tail[0], o[ntail - 1] = tail[ntail - 1];
    w->len = (size_t)(o - w->buf) + ntail;
}

/* ---- structure ---- */

#define OBJECT 0x80 /* in style[]: the container is an object */

void rsr_jw_open(struct rsr_jw *w, FILE *f, enum rsr_jw_mode mode)
{
    w->f = f;
    w->mode = mode;
    w->failed = 0;
    w->depth = 0;
    w->after_key = 0;
    w->line = 0;
    w->len = 0;
}

int rsr_jw_close(struct rsr_jw *w)
{
    rsr_jw_flush(w);
    if (w->depth || w->after_key)
        w->failed = 1;
    return w->failed || ferror(w->f) ? -1 : 0;
}

/* What comes before the next member of the innermost container: its comma
 * and its line break. */
HOT void separate(struct rsr_jw *w)
{
    int d = w->depth - 1;
    unsigned style = w->style[d];
    int line = w->line || (style & RSR_JW_LINES);
    w->line = 0;
    if (w->members[d]) {
        if (style & RSR_JW_SPACED && !line)
            PUT_LIT(w, ", ");
        else
            put_char(w, ',');
    }
    w->members[d] = 1;
    if (line && style & RSR_JW_INDENT)
        PUT_LIT(w, "\n  ");
    else if (line)
        PUT_LIT(w, "\n");
}

/* Before a value: the separator in an array, nothing after a key; an
 * object's member without a key is a misuse. */
HOT void value(struct rsr_jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (!w->depth)
        return;
    if (w->style[w->depth - 1] & OBJECT)
        w->failed = 1;
    separate(w);
}

static void open_container(struct rsr_jw *w, unsigned style, unsigned char kind)
{
    value(w);
    if (w->depth == RSR_JW_DEPTH) {
        w->failed = 1;
        return;
    }
    put_char(w, kind == OBJECT ? '{' : '[');
    w->style[w->depth] = (unsigned char)(style | kind);
    w->members[w->depth] = 0;
    w->depth++;
}

void rsr_jw_object(struct rsr_jw *w, unsigned style)
{
    open_container(w, style, OBJECT);
}

void rsr_jw_array(struct rsr_jw *w, unsigned style)
{
    open_container(w, style, 0);
}

void rsr_jw_end(struct rsr_jw *w)
{
    if (!w->depth || w->after_key) {
        w->failed = 1;
        return;
    }
    if (w->line)
        PUT_LIT(w, "\n");
    w->line = 0;
    w->depth--;
    put_char(w, w->style[w->depth] & OBJECT ? '}' : ']');
}

void rsr_jw_style(struct rsr_jw *w, unsigned style)
{
    if (w->depth)
        w->style[w->depth - 1] = (unsigned char)(style | (w->style[w->depth - 1] & OBJECT));
}

void rsr_jw_line(struct rsr_jw *w)
{
    if (w->depth)
        w->line = 1;
    else
        PUT_LIT(w, "\n");
}

/* A key and its colon; the value follows at once (after_key stays 0). */
HOT void key(struct rsr_jw *w, const char *k)
{
    int d = w->depth - 1;
    if (d < 0 || !(w->style[d] & OBJECT) || w->after_key) {
        w->failed = 1;
        return;
    }
    if (w->style[d] == OBJECT && !w->line) { /* compact, the common case: ,"key": in one go */
        char comma = w->members[d] ? ',' : 0;
        w->members[d] = 1;
        put_str(w, comma, k, ":", 1);
        return;
    }
    separate(w);
    if (w->style[d] & RSR_JW_SPACED)
        put_str(w, 0, k, ": ", 2);
    else
        put_str(w, 0, k, ":", 1);
}

void rsr_jw_key(struct rsr_jw *w, const char *k)
{
    key(w, k);
    w->after_key = 1;
}

/* ---- values ---- */

void rsr_jw_str(struct rsr_jw *w, const char *s)
{
    value(w);
    if (s)
        put_str(w, 0, s, "", 0);
    else
        PUT_LIT(w, "null");
}

void rsr_jw_num(struct rsr_jw *w, double v)
{
    value(w);
    if (!isfinite(v))
        PUT_LIT(w, "null");
    else if (fabs(v) < 1e15 && v == (double)(int64_t)v)
        put_i64(w, (int64_t)v);
    else
        put_printf(w, 0, 6, v);
}

void rsr_jw_fixed(struct rsr_jw *w, double v, int decimals)
{
    value(w);
    if (isfinite(v))
        put_printf(w, 1, decimals, v);
    else
        PUT_LIT(w, "null");
}

void rsr_jw_sig(struct rsr_jw *w, double v, int digits)
{
    value(w);
    if (isfinite(v))
        put_printf(w, 0, digits, v);
    else
        PUT_LIT(w, "null");
}

void rsr_jw_int(struct rsr_jw *w, int64_t v)
{
    value(w);
    put_i64(w, v);
}

void rsr_jw_uint(struct rsr_jw *w, uint64_t v)
{
    value(w);
    put_u64(w, v);
}

void rsr_jw_int_or_null(struct rsr_jw *w, int64_t v)
{
    value(w);
    if (v < 0)
        PUT_LIT(w, "null");
    else
        put_u64(w, (uint64_t)v);
}

void rsr_jw_milli(struct rsr_jw *w, int64_t v)
{
    value(w);
    put_milli(w, v);
}

void rsr_jw_bool(struct rsr_jw *w, int v)
{
    value(w);
    if (v)
        PUT_LIT(w, "true");
    else
        PUT_LIT(w, "false");
}

void rsr_jw_null(struct rsr_jw *w)
{
    value(w);
    PUT_LIT(w, "null");
}

void rsr_jw_raw(struct rsr_jw *w, const char *quoted, size_t len)
{
    value(w);
    put(w, quoted, len);
}

char *rsr_jw_quote(const char *s, enum rsr_jw_mode mode)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    struct rsr_jw *w = malloc(sizeof *w);
    int rc = -1;
    if (w) {
        rsr_jw_open(w, f, mode);
        rsr_jw_str(w, s);
        rc = rsr_jw_close(w);
        free(w);
    }
    if (fclose(f) != 0 || rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- key and value ---- */

void rsr_jw_kobject(struct rsr_jw *w, const char *k, unsigned style)
{
    rsr_jw_key(w, k);
    rsr_jw_object(w, style);
}

void rsr_jw_karray(struct rsr_jw *w, const char *k, unsigned style)
{
    rsr_jw_key(w, k);
    rsr_jw_array(w, style);
}

void rsr_jw_kstr(struct rsr_jw *w, const char *k, const char *s)
{
    key(w, k);
    if (s)
        put_str(w, 0, s, "", 0);
    else
        PUT_LIT(w, "null");
}

void rsr_jw_knum(struct rsr_jw *w, const char *k, double v)
{
    rsr_jw_key(w, k);
    rsr_jw_num(w, v);
}

void rsr_jw_kfixed(struct rsr_jw *w, const char *k, double v, int decimals)
{
    rsr_jw_key(w, k);
    rsr_jw_fixed(w, v, decimals);
}

void rsr_jw_kint(struct rsr_jw *w, const char *k, int64_t v)
{
    key(w, k);
    put_i64(w, v);
}

void rsr_jw_kuint(struct rsr_jw *w, const char *k, uint64_t v)
{
    key(w, k);
    put_u64(w, v);
}

void rsr_jw_kmilli(struct rsr_jw *w, const char *k, int64_t v)
{
    key(w, k);
    put_milli(w, v);
}

void rsr_jw_kint_or_null(struct rsr_jw *w, const char *k, int64_t v)
{
    rsr_jw_key(w, k);
    rsr_jw_int_or_null(w, v);
}

void rsr_jw_kbool(struct rsr_jw *w, const char *k, int v)
{
    rsr_jw_key(w, k);
    rsr_jw_bool(w, v);
}
