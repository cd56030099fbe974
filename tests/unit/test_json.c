/* The JSON writer (reporter/base/json.c): its separators in each style, its
 * strings read back by yajl's parser (a reader written elsewhere), its
 * numbers against printf's formats, and calls out of order reported. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "reporter/base/json.h"
#include "tests/unit/rs_check.h"

struct out {
    char *text;
    size_t len;
    FILE *f;
    struct rsr_jw w;
};

static struct rsr_jw *out_open(struct out *o, enum rsr_jw_mode mode)
{
    o->text = NULL;
    o->f = open_memstream(&o->text, &o->len);
    ck_assert_ptr_nonnull(o->f);
    rsr_jw_open(&o->w, o->f, mode);
    return &o->w;
}

/* Closes the writer; its rsr_jw_close status. o->text holds what it wrote. */
static int out_close(struct out *o)
{
    int rc = rsr_jw_close(&o->w);
    ck_assert_int_eq(fclose(o->f), 0);
    return rc;
}

START_TEST(styles)
{
    struct out o;
    struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
    rsr_jw_object(w, 0);
    rsr_jw_kint(w, "a", 1);
    rsr_jw_karray(w, "b", RSR_JW_LINES);
    rsr_jw_object(w, RSR_JW_SPACED);
    rsr_jw_kstr(w, "c", "x");
    rsr_jw_kbool(w, "d", 0);
    rsr_jw_end(w);
    rsr_jw_null(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    rsr_jw_karray(w, "e", RSR_JW_SPACED | RSR_JW_LINES | RSR_JW_INDENT);
    rsr_jw_uint(w, 2);
    rsr_jw_uint(w, 3);
    rsr_jw_line(w);
    rsr_jw_end(w);
    rsr_jw_style(w, RSR_JW_SPACED);
    rsr_jw_karray(w, "f", 0);
    rsr_jw_end(w);
    rsr_jw_end(w);
    rsr_jw_line(w);
    ck_assert_int_eq(out_close(&o), 0);
    ck_assert_str_eq(o.text, "{\"a\":1,\"b\":[\n{\"c\": \"x\", \"d\": false},\nnull],\n"
                             "\"e\":[\n  2,\n  3\n], \"f\": []}\n");
    free(o.text);
}
END_TEST

/* Texts with each kind of escape, and every byte but NUL in one string:
 * valid UTF-8 reads back as written; in JSON mode a byte that is not UTF-8
 * reads back as U+00XX, in SCRIPT mode it is written as it is. */
static void round_trip(enum rsr_jw_mode mode)
{
    char all[256];
    for (int i = 1; i < 256; i++)
        all[i - 1] = (char)i;
    all[255] = 0;
    const char *texts[] = { "plain", "quote \" back \\ slash", "tab\tnew\nline\r", "\xc3\xa9t\xc3\xa9",
                            "\xe2\x80\xa8 and \xe2\x80\xa9", "</script><!-- & >", "\xf0\x9f\x98\x80", all };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        struct out o;
        struct rsr_jw *w = out_open(&o, mode);
        rsr_jw_array(w, 0);
        rsr_jw_str(w, texts[k]);
        rsr_jw_end(w);
        ck_assert_int_eq(out_close(&o), 0);
        if (mode == RSR_JW_SCRIPT)
            ck_assert_msg(!strpbrk(o.text, "<>&") && !strstr(o.text, "\xe2\x80\xa8") && !strstr(o.text, "\xe2\x80\xa9"),
                          "script text %s", o.text);
        if (texts[k] == all && mode == RSR_JW_SCRIPT) {
            /* bytes from 0x80 on go into a page as they are, valid or not */
            const char *high = strchr(o.text, '\x80');
            ck_assert_ptr_null(strchr(o.text, '\x7f'));
            ck_assert_ptr_nonnull(high);
            ck_assert_mem_eq(high, all + 0x7f, 0xe2 - 0x80);
            free(o.text);
            continue;
        }
        char err[256];
        yajl_val v = yajl_tree_parse(o.text, err, sizeof err);
        ck_assert_msg(v && YAJL_IS_ARRAY(v) && v->u.array.len == 1, "%s: %s", o.text, err);
        const char *back = YAJL_GET_STRING(v->u.array.values[0]);
        ck_assert_ptr_nonnull(back);
        if (texts[k] != all) {
            ck_assert_str_eq(back, texts[k]);
        } else {
            /* bytes 0x80..0xff alone are no UTF-8: each reads back as U+0080..U+00FF */
            ck_assert_mem_eq(back, all, 0x7f);
            for (int i = 0x80; i < 256; i++) {
                const unsigned char *b = (const unsigned char *)back + 0x7f + 2 * (i - 0x80);
                ck_assert_uint_eq(b[0], 0xc0 | i >> 6);
                ck_assert_uint_eq(b[1], 0x80 | (i & 0x3f));
            }
        }
        yajl_tree_free(v);
        free(o.text);
    }
}

START_TEST(strings_json)
{
    round_trip(RSR_JW_JSON);
}
END_TEST

START_TEST(strings_script)
{
    round_trip(RSR_JW_SCRIPT);
}
END_TEST

/* Long strings and many of them: past the buffer, in one piece. */
START_TEST(long_strings)
{
    size_t n = 3 * RSR_JW_BUF + 17;
    char *s = malloc(n + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < n; i++)
        s[i] = i % 1000 == 999 ? '"' : (char)('a' + i % 26);
    s[n] = 0;
    struct out o;
    struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
    rsr_jw_array(w, 0);
    for (int k = 0; k < 5; k++)
        rsr_jw_str(w, s);
    rsr_jw_end(w);
    ck_assert_int_eq(out_close(&o), 0);
    yajl_val v = yajl_tree_parse(o.text, NULL, 0);
    ck_assert(v && YAJL_IS_ARRAY(v) && v->u.array.len == 5);
    for (int k = 0; k < 5; k++)
        ck_assert_str_eq(YAJL_GET_STRING(v->u.array.values[k]), s);
    yajl_tree_free(v);
    free(o.text);
    free(s);
}
END_TEST

START_TEST(numbers)
{
    static const double d[] = { 0, -0.0, 1, -7, 0.5, 1.0 / 3, 123456.789, 1e14, 1e15 + 1, 2.5e-9, -1e300 };
    static const int64_t milli[] = { 0, 1, 999, 1000, 1234567, -1, -1500, INT64_MAX, INT64_MIN + 1 };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        struct out o;
        struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
        rsr_jw_array(w, 0);
        rsr_jw_num(w, d[i]);
        rsr_jw_fixed(w, d[i], 3);
        rsr_jw_sig(w, d[i], 4);
        rsr_jw_end(w);
        ck_assert_int_eq(out_close(&o), 0);
        char want[1024];
        if (d[i] == (double)(int64_t)d[i] && d[i] < 1e15 && d[i] > -1e15)
            snprintf(want, sizeof want, "[%lld,%.3f,%.4g]", (long long)d[i], d[i], d[i]);
        else
            snprintf(want, sizeof want, "[%.6g,%.3f,%.4g]", d[i], d[i], d[i]);
        ck_assert_str_eq(o.text, want);
        free(o.text);
    }
    for (size_t i = 0; i < sizeof milli / sizeof milli[0]; i++) {
        struct out o;
        struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
        rsr_jw_milli(w, milli[i]);
        ck_assert_int_eq(out_close(&o), 0);
        char want[64];
        uint64_t a = milli[i] < 0 ? (uint64_t)0 - (uint64_t)milli[i] : (uint64_t)milli[i];
        snprintf(want, sizeof want, "%s%llu.%03llu", milli[i] < 0 ? "-" : "", (unsigned long long)(a / 1000),
                 (unsigned long long)(a % 1000));
        ck_assert_str_eq(o.text, want);
        free(o.text);
    }
    struct out o;
    struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
    rsr_jw_array(w, 0);
    rsr_jw_int(w, INT64_MIN);
    rsr_jw_uint(w, UINT64_MAX);
    rsr_jw_int_or_null(w, -1);
    rsr_jw_int_or_null(w, 7);
    rsr_jw_num(w, 0.0 / 0.0);
    rsr_jw_fixed(w, 1.0 / 0.0, 3);
    rsr_jw_end(w);
    ck_assert_int_eq(out_close(&o), 0);
    ck_assert_str_eq(o.text, "[-9223372036854775808,18446744073709551615,null,7,null,null]");
    free(o.text);
}
END_TEST

/* Calls that do not make whole values: rsr_jw_close says so. */
START_TEST(misuse)
{
    for (int k = 0; k < 5; k++) {
        struct out o;
        struct rsr_jw *w = out_open(&o, RSR_JW_JSON);
        switch (k) {
        case 0: /* left open */
            rsr_jw_object(w, 0);
            break;
        case 1: /* a key in an array */
            rsr_jw_array(w, 0);
            rsr_jw_key(w, "k");
            rsr_jw_end(w);
            break;
        case 2: /* a value in an object without its key */
            rsr_jw_object(w, 0);
            rsr_jw_int(w, 1);
            rsr_jw_end(w);
            break;
        case 3: /* a key without its value */
            rsr_jw_object(w, 0);
            rsr_jw_key(w, "k");
            rsr_jw_end(w);
            break;
        default: /* closed once too often */
            rsr_jw_array(w, 0);
            rsr_jw_end(w);
            rsr_jw_end(w);
            break;
        }
        ck_assert_msg(out_close(&o) == -1, "case %d", k);
        free(o.text);
    }
}
END_TEST

static Suite *json_suite(void)
{
    const struct rs_test tests[] = {
        { "json_styles", styles },
        { "json_strings_json", strings_json },
        { "json_strings_script", strings_script },
        { "json_long_strings", long_strings },
        { "json_numbers", numbers },
        { "json_misuse", misuse },
    };
    return RS_SUITE("json", tests, 10);
}

RS_CHECK_MAIN(json_suite)
