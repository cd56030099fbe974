/* Unit tests of the flame graph code (reporter/load/flame.c, flame_svg.c,
 * symbolize.c): folding of stacks given here whose folded lines are worked
 * out by hand, XML escaping of hostile names, the SVG's handling of them and
 * of thousands of tiny frames, and C++ demangling (expected names as c++filt
 * prints them). */
/* rs_check.h calls free() without including stdlib.h. */
#include <stdlib.h>

#include "tests/unit/rs_check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "formats/trace.h"
#include "reporter/load/flame.h"
#include "reporter/out/flame_svg.h"
#include "reporter/load/symbolize.h"

/* Adds the stack "a;b;c" (root first) with weight w. */
static void add_path(struct rsr_flame *fl, const char *path, uint64_t w)
{
    uint32_t ids[32], n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    char *save;
    for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save))
        ids[n++] = rsr_flame_frame(fl, t, RSR_FRAME_NATIVE, "prog");
    rsr_flame_add(fl, ids, n, w, 1);
}

static char *folded(const struct rsr_flame *fl)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(rsr_flame_write_folded(f, fl), 0);
    fclose(f);
    return text;
}

START_TEST(fold_merges_and_sorts)
{
    struct rsr_flame fl;
    rsr_flame_init(&fl, RSF_SAMPLE_CPU);
    add_path(&fl, "main;work;inner", 5);
    add_path(&fl, "x", 4);
    add_path(&fl, "main;work", 2);
    add_path(&fl, "main;work;inner", 3);
    add_path(&fl, "main;idle", 1);
    char *text = folded(&fl);
    /* root first, one line per path with self weight, sorted by names */
    ck_assert_str_eq(text, "main;idle 1\nmain;work 2\nmain;work;inner 8\nx 4\n");
    ck_assert_uint_eq(fl.nodes[0].total, 15);
    ck_assert_uint_eq(fl.nodes[0].count, 5);
    free(text);
    rsr_flame_free(&fl);
}
END_TEST

START_TEST(fold_same_name_different_parents)
{
    struct rsr_flame fl;
    rsr_flame_init(&fl, RSF_SAMPLE_WAIT);
    add_path(&fl, "a;f", 7);
    add_path(&fl, "b;f", 9);
    add_path(&fl, "f", 1);
    char *text = folded(&fl);
    ck_assert_str_eq(text, "a;f 7\nb;f 9\nf 1\n");
    free(text);
    rsr_flame_free(&fl);
}
END_TEST

START_TEST(fold_names_that_break_lines)
{
    struct rsr_flame fl;
    rsr_flame_init(&fl, RSF_SAMPLE_CPU);
    uint32_t ids[2];
    ids[0] = rsr_flame_frame(&fl, "file.py:f;g", RSR_FRAME_PYTHON, "python");
    ids[1] = rsr_flame_frame(&fl, "two\nlines 99", RSR_FRAME_NATIVE, "x");
    rsr_flame_add(&fl, ids, 2, 12, 1);
    char *text = folded(&fl);
    /* one line, two frames, the weight last */
    ck_assert_str_eq(text, "file.py:f:g;two?lines 99 12\n");
    free(text);
    rsr_flame_free(&fl);
}
END_TEST

static char *escaped(const char *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    rsr_xml_escape(f, s);
    fclose(f);
    return text;
}

START_TEST(xml_escape_hostile)
{
    struct { const char *in, *out; } cases[] = {
        { "<script>alert(\"x\")</script>", "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" },
        { "a&b 'c' ]]> --", "a&amp;b &#39;c&#39; ]]&gt; --" },
        { "ctl\x01\x1f\x7f.", "ctl???." },
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
        /* stray continuation, truncated sequence, overlong '/', surrogate, U+FFFE */
        { "\x80x\xc3(\xc0\xaf\xed\xa0\x80\xef\xbf\xbe",
          "\xef\xbf\xbdx\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
          "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *e = escaped(cases[i].in);
        ck_assert_str_eq(e, cases[i].out);
        free(e);
    }
}
END_TEST

static char *svg_of(const struct rsr_flame *fl)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(rsr_flame_write_svg(f, fl, "t<i>tle"), 0);
    fclose(f);
    return text;
}

START_TEST(svg_hostile_names_escaped)
{
    struct rsr_flame fl;
    rsr_flame_init(&fl, RSF_SAMPLE_CPU);
    uint32_t ids[2];
    ids[0] = rsr_flame_frame(&fl, "</title><script>alert(1)</script>", RSR_FRAME_PYTHON, "python");
    ids[1] = rsr_flame_frame(&fl, "x\"onload=\"alert(2)", RSR_FRAME_NATIVE, "m");
    rsr_flame_add(&fl, ids, 2, 1000, 1);
    char *svg = svg_of(&fl);
    ck_assert_ptr_null(strstr(svg, "<script>alert"));
    ck_assert_ptr_null(strstr(svg, "\"onload"));
    ck_assert_ptr_null(strstr(svg, "t<i>tle"));
    ck_assert_ptr_nonnull(strstr(svg, "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    ck_assert_ptr_nonnull(strstr(svg, "x&quot;onload=&quot;alert(2)"));
    /* the script is the fixed one: no name inside it */
    const char *end = strstr(svg, "]]></script>");
    ck_assert_ptr_nonnull(end);
    ck_assert_ptr_null(memmem(svg, (size_t)(end - svg), "alert(", 6));
    free(svg);
    rsr_flame_free(&fl);
}
END_TEST

START_TEST(svg_merges_tiny_frames)
{
    struct rsr_flame fl;
    rsr_flame_init(&fl, RSF_SAMPLE_CPU);
    char name[64];
    /* one big frame and 20000 tiny siblings, each 1/40000 of the total */
    add_path(&fl, "main;big", 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "main;tiny%05d", i);
        add_path(&fl, name, 1);
    }
    char *svg = svg_of(&fl);
    int groups = 0;
    for (const char *p = svg; (p = strstr(p, "<g class=\"f\"")); p++)
        groups++;
    /* all, main, big and one merged frame */
    ck_assert_int_eq(groups, 4);
    ck_assert_ptr_nonnull(strstr(svg, "[20000 small frames]"));
    free(svg);
    rsr_flame_free(&fl);
}
END_TEST

/* A folded file from elsewhere with a stack 100,000 frames deep (the
 * fuzzer's input to `ringside diff` overflowed the SVG writer's stack): it
 * keeps its outermost 1,024 frames, the last one saying how many it stands
 * for, its weight whole; the graphs and the folded text are written. */
START_TEST(read_folded_deep_stack)
{
    enum { DEEP = 100000 };
    size_t cap = (size_t)DEEP * 8 + 64, len = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    for (int i = 0; i < DEEP; i++)
        len += (size_t)snprintf(text + len, cap - len, "%sf%d", i ? ";" : "", i % 100);
    len += (size_t)snprintf(text + len, cap - len, " 7\na;b 3\n");
    struct rsr_flame fl[2];
    for (int k = 0; k < 2; k++) {
        rsr_flame_init(&fl[k], RSF_SAMPLE_CPU);
        FILE *f = fmemopen(text, len, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(rsr_flame_read_folded(f, &fl[k]), 0);
        fclose(f);
    }
    ck_assert_uint_eq(fl[0].nodes[0].total, 10);
    uint32_t deepest = 0, leaf = 0;
    for (uint32_t i = 1; i < fl[0].nnodes; i++) {
        uint32_t d = 0;
        for (uint32_t up = i; up; up = fl[0].nodes[up].parent)
            d++;
        if (d > deepest)
            deepest = d, leaf = i;
    }
    ck_assert_uint_eq(deepest, RSR_FLAME_DEPTH_MAX);
    ck_assert_str_eq(rsr_intern_str(&fl[0].names, fl[0].nodes[leaf].name), "[98977 frames deeper]");
    ck_assert_uint_eq(fl[0].nodes[leaf].self, 7);
    char *svg = svg_of(&fl[0]);
    ck_assert_ptr_nonnull(strstr(svg, "[98977 frames deeper]"));
    free(svg);
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(rsr_flame_write_svg_diff(f, &fl[1], &fl[0], "deep"), 0);
    fclose(f);
    free(out);
    char *fold = folded(&fl[0]);
    ck_assert_ptr_nonnull(strstr(fold, ";f22;[98977 frames deeper] 7\n"));
    ck_assert_ptr_nonnull(strstr(fold, "a;b 3\n"));
    free(fold);
    rsr_flame_free(&fl[0]);
    rsr_flame_free(&fl[1]);
    free(text);
}
END_TEST

/* One name in two modules (memcpy@plt of two objects): the merged graph,
 * and its colours, are the same whichever tree is merged first (an MPI
 * report once differed from a single process's in flame-cpu.svg). */
START_TEST(merge_order_same_name_two_modules)
{
    struct rsr_flame a, b, x, y;
    rsr_flame_init(&a, RSF_SAMPLE_CPU);
    rsr_flame_init(&b, RSF_SAMPLE_CPU);
    uint32_t ids[2];
    ids[0] = rsr_flame_frame(&a, "main", RSR_FRAME_NATIVE, "prog");
    ids[1] = rsr_flame_frame(&a, "memcpy@plt", RSR_FRAME_NATIVE, "libzz.so");
    rsr_flame_add(&a, ids, 2, 5, 1);
    ids[0] = rsr_flame_frame(&b, "main", RSR_FRAME_NATIVE, "prog");
    ids[1] = rsr_flame_frame(&b, "memcpy@plt", RSR_FRAME_INLINE, "libaa.so");
    rsr_flame_add(&b, ids, 2, 3, 1);
    ids[1] = rsr_flame_frame(&b, "memcpy@plt", RSR_FRAME_NATIVE, "libmm.so");
    rsr_flame_add(&b, ids, 2, 2, 1);
    rsr_flame_init(&x, RSF_SAMPLE_CPU);
    rsr_flame_init(&y, RSF_SAMPLE_CPU);
    rsr_flame_merge(&x, &a);
    rsr_flame_merge(&x, &b);
    rsr_flame_merge(&y, &b);
    rsr_flame_merge(&y, &a);
    char *sx = svg_of(&x), *sy = svg_of(&y);
    ck_assert_msg(strcmp(sx, sy) == 0, "the SVGs differ with the order of the merges");
    uint32_t id = rsr_flame_frame(&x, "memcpy@plt", RSR_FRAME_UNKNOWN, "zzz");
    ck_assert_int_eq(x.name_class[id], RSR_FRAME_NATIVE);
    ck_assert_str_eq(rsr_intern_str(&x.modules, x.name_module[id]), "libmm.so");
    free(sx);
    free(sy);
    rsr_flame_free(&a);
    rsr_flame_free(&b);
    rsr_flame_free(&x);
    rsr_flame_free(&y);
}
END_TEST

START_TEST(demangle_cpp)
{
    /* as c++filt prints them */
    char *d = rsr_sym_demangle("_ZN5torch8autograd6Engine11thread_mainERKSt10shared_ptrINS0_9GraphTaskEE");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)");
    free(d);
    d = rsr_sym_demangle("_ZN3foo3barEi");
    ck_assert_str_eq(d, "foo::bar(int)");
    free(d);
    ck_assert_ptr_null(rsr_sym_demangle("hot_a"));
    ck_assert_ptr_null(rsr_sym_demangle("_Znot_valid"));
}
END_TEST

START_TEST(sym_missing_file)
{
    struct rsr_sym *s = rsr_sym_new(1);
    int f = rsr_sym_file(s, "/nonexistent/dir/libgone.so", "abcd");
    ck_assert_int_eq(rsr_sym_file_state(s, f), RSR_SYM_FILE_MISSING);
    uint64_t bias;
    ck_assert_int_eq(rsr_sym_bias(s, f, 0x1000, 0, &bias), -1);
    const struct rsr_sym_result *r = rsr_sym_lookup(s, f, 0x1234);
    ck_assert_int_eq(r->known, 0);
    ck_assert_uint_eq(r->nlevels, 1);
    ck_assert_str_eq(r->levels[0].func, "[libgone.so+0x1234]");
    /* the same file and build id: the same handle */
    ck_assert_int_eq(rsr_sym_file(s, "/nonexistent/dir/libgone.so", "abcd"), f);
    rsr_sym_free(s);
}
END_TEST

/* A sample in a PLT stub (a jump to another library's function) is named
 * after that function: the stubs of this test's own executable as objdump
 * names them ("<printf@plt>"), looked up a few bytes into each. */
START_TEST(sym_plt_stub)
{
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert(len > 0);
    exe[len] = 0;
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "objdump -d -j .plt -j .plt.sec '%s' 2>/dev/null", exe);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    struct rsr_sym *s = rsr_sym_new(1);
    int f = rsr_sym_file(s, exe, NULL);
    ck_assert_int_eq(rsr_sym_file_state(s, f), RSR_SYM_FILE_OK);
    char line[512], name[256];
    unsigned long long at;
    int stubs = 0;
    while (fgets(line, sizeof line, p))
        if (sscanf(line, "%llx <%255[^>]>:", &at, name) == 2 && strlen(name) > 4 &&
            strcmp(name + strlen(name) - 4, "@plt") == 0) { /* not the resolver's "<x@plt-0x10>" */
            const struct rsr_sym_result *r = rsr_sym_lookup(s, f, at + 4);
            ck_assert_int_eq(r->known, 1);
            ck_assert_str_eq(r->levels[r->nlevels - 1].func, name);
            stubs++;
        }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_ge(stubs, 3);
    rsr_sym_free(s);
}
END_TEST

static Suite *flame_suite(void)
{
    const struct rs_test tests[] = {
        { "flame_fold_merges_and_sorts", fold_merges_and_sorts },
        { "flame_read_folded_deep_stack", read_folded_deep_stack },
        { "flame_merge_order_same_name_two_modules", merge_order_same_name_two_modules },
        { "flame_sym_plt_stub", sym_plt_stub },
        { "flame_fold_same_name_different_parents", fold_same_name_different_parents },
        { "flame_fold_names_that_break_lines", fold_names_that_break_lines },
        { "flame_xml_escape_hostile", xml_escape_hostile },
        { "flame_svg_hostile_names_escaped", svg_hostile_names_escaped },
        { "flame_svg_merges_tiny_frames", svg_merges_tiny_frames },
        { "flame_demangle_cpp", demangle_cpp },
        { "flame_sym_missing_file", sym_missing_file },
    };
    return RS_SUITE("flame", tests, 60);
}

RS_CHECK_MAIN(flame_suite)
