/* The reporter's one JSON writer: every JSON it writes (report.json,
 * diff.json, dump's lines, trace.json, the page's data, history's columns)
 * goes through it, one value after another straight to a FILE, never a tree
 * in memory. It owns the escaping, the number formats and the separators;
 * the callers say only keys, values and where containers begin and end. */
#ifndef RSR_JSON_H
#define RSR_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How a container writes its members (rsr_jw_object, rsr_jw_array,
 * rsr_jw_style), or-ed together; 0 is compact: {"a":1,"b":2}. */
enum {
    RSR_JW_SPACED = 1, /* ", " between members and ": " after a key */
    RSR_JW_LINES = 2,  /* each member starts a line (after its comma) */
    RSR_JW_INDENT = 4, /* with RSR_JW_LINES: the line indented by two spaces */
};

/* How strings are escaped, for the whole of a writer (rsr_jw_open). */
enum rsr_jw_mode {
    /* JSON's escapes; bytes that are not valid UTF-8 as \u00XX of the byte;
     * NULL as null */
    RSR_JW_JSON,
    /* for a <script> of a page: besides JSON's escapes, every control
     * character, <, >, & and U+2028/2029 as \uXXXX (no "</script>" or
     * "<!--" can appear, no line terminator breaks an older parser); other
     * bytes as they are; NULL as null */
    RSR_JW_SCRIPT,
};

#define RSR_JW_DEPTH 24
#define RSR_JW_BUF 65536

/* A writer's state, its buffer included (f gets writes of RSR_JW_BUF
 * bytes): malloc'd, or on a stack that can spare it. Opened by
 * rsr_jw_open, written to by the calls below, closed by rsr_jw_close. */
struct rsr_jw {
    FILE *f;
    enum rsr_jw_mode mode;
    int failed;                         /* a write failed, or the calls were out of order */
    int depth;                          /* containers open */
    unsigned char style[RSR_JW_DEPTH];  /* each open container's RSR_JW_* */
    unsigned char members[RSR_JW_DEPTH]; /* whether it has a member yet */
    unsigned char after_key;            /* a key waits for its value */
    unsigned char line;                 /* rsr_jw_line: the next member starts a line */
    size_t len;                         /* bytes in buf, not yet in f */
    char buf[RSR_JW_BUF];
};

/* Starts a writer on f. What it writes is held in w->buf until
 * rsr_jw_flush or rsr_jw_close: anything else written to f in between
 * (a page's markup around a <script>) goes after an rsr_jw_flush. */
void rsr_jw_open(struct rsr_jw *w, FILE *f, enum rsr_jw_mode mode);
/* Writes out what is held (w stays open). */
void rsr_jw_flush(struct rsr_jw *w);
/* Flushes w; returns 0, or -1 when a write to f failed (ferror) or the
 * calls did not make whole values (a container left open, a key without
 * its value, nesting deeper than RSR_JW_DEPTH). f stays open. */
int rsr_jw_close(struct rsr_jw *w);

/* Opens an object or an array as the next value, its members written in
 * style (RSR_JW_*); rsr_jw_end closes the innermost one. */
void rsr_jw_object(struct rsr_jw *w, unsigned style);
void rsr_jw_array(struct rsr_jw *w, unsigned style);
void rsr_jw_end(struct rsr_jw *w);
/* The innermost container's style from its next member on: where one
 * object's members are written in two styles (report.json's top level,
 * compact but for the reporter's own keys). */
void rsr_jw_style(struct rsr_jw *w, unsigned style);
/* The next member of the innermost container, or its closing bracket when
 * none follows, starts a line. Outside any container: a line break at once
 * (after a whole value: JSON lines, a file's last newline). */
void rsr_jw_line(struct rsr_jw *w);
/* The key of the next member of an object (escaped as a string is). */
void rsr_jw_key(struct rsr_jw *w, const char *key);

/* Values: each the next member of the innermost container, the value of
 * the key just written, or a whole value at the top level. */
/* s as a string, quotes included, escaped as w's mode says; NULL as null. */
void rsr_jw_str(struct rsr_jw *w, const char *s);
/* A double as an integer when it is one (below 1e15), else with 6
 * significant digits (%.6g); null when not finite. */
void rsr_jw_num(struct rsr_jw *w, double v);
/* A double with that many decimals (%.Nf); null when not finite. */
void rsr_jw_fixed(struct rsr_jw *w, double v, int decimals);
/* A double with that many significant digits (%.Ng); null when not finite. */
void rsr_jw_sig(struct rsr_jw *w, double v, int digits);
void rsr_jw_int(struct rsr_jw *w, int64_t v);
void rsr_jw_uint(struct rsr_jw *w, uint64_t v);
/* v, or null when v is negative (a rank or index not known). */
void rsr_jw_int_or_null(struct rsr_jw *w, int64_t v);
/* v thousandths as a decimal with three places, exactly (ns as us). */
void rsr_jw_milli(struct rsr_jw *w, int64_t v);
void rsr_jw_bool(struct rsr_jw *w, int v);
void rsr_jw_null(struct rsr_jw *w);

/* Key and value in one call: rsr_jw_key, then the value. */
void rsr_jw_kobject(struct rsr_jw *w, const char *key, unsigned style);
void rsr_jw_karray(struct rsr_jw *w, const char *key, unsigned style);
void rsr_jw_kstr(struct rsr_jw *w, const char *key, const char *s);
void rsr_jw_knum(struct rsr_jw *w, const char *key, double v);
void rsr_jw_kfixed(struct rsr_jw *w, const char *key, double v, int decimals);
void rsr_jw_kint(struct rsr_jw *w, const char *key, int64_t v);
void rsr_jw_kuint(struct rsr_jw *w, const char *key, uint64_t v);
void rsr_jw_kint_or_null(struct rsr_jw *w, const char *key, int64_t v);
void rsr_jw_kmilli(struct rsr_jw *w, const char *key, int64_t v);
void rsr_jw_kbool(struct rsr_jw *w, const char *key, int v);

/* A string written many times (trace.json's kernel names, millions of
 * events): rsr_jw_quote escapes s once, as rsr_jw_str would in mode, into
 * a malloc'd text (NULL when out of memory); rsr_jw_raw writes such a text
 * as the next value. rsr_jw_raw takes nothing else. */
char *rsr_jw_quote(const char *s, enum rsr_jw_mode mode);
void rsr_jw_raw(struct rsr_jw *w, const char *quoted, size_t len);

#endif
