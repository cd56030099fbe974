/* Unit tests of the page's naming and table filter (reporter/out/html_names.c,
 * reporter/out/html_table.c) on hand-written inputs: a report.json whose
 * processes are those a torchrun job with DataLoader workers has (their
 * argv as Linux gives them), and tables with empty columns. */
#include "rs_check.h"
#include "reporter/out/html_names.h"
#include "reporter/out/html_table.h"
#include "reporter/out/html_json.h"

#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#define DOT " \xc2\xb7 "

/* torchrun (pid 100) and two ranks; rank 0 forks two workers (its argv),
 * rank 1 spawns one (spawn_main) and has a forkserver forking another,
 * a resource tracker, and a sha256sum. */
static const char JOB[] =
    "{\"job\":%s,\"start_us\":1795842583736075,\"processes\":["
    "{\"rank\":0,\"role\":\"rank\",\"parent_rank\":null,\"host\":\"h\",\"pid\":101,\"ppid\":100,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-u\",\"train.py\",\"ddp\"]},"
    "{\"rank\":1,\"role\":\"rank\",\"parent_rank\":null,\"host\":\"h\",\"pid\":102,\"ppid\":100,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-u\",\"train.py\",\"ddp\"]},"
    "{\"rank\":null,\"role\":\"other\",\"parent_rank\":null,\"host\":\"h\",\"pid\":100,\"ppid\":1,"
    " \"argv\":[\"/usr/bin/python3.11\",\"/usr/bin/torchrun\",\"--nproc_per_node\",\"2\",\"train.py\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":0,\"host\":\"h\",\"pid\":110,\"ppid\":101,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-u\",\"train.py\",\"ddp\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":1,\"host\":\"h\",\"pid\":120,\"ppid\":102,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-c\",\"from multiprocessing.spawn import spawn_main; spawn_main()\","
    " \"--multiprocessing-fork\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":1,\"host\":\"h\",\"pid\":121,\"ppid\":102,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-c\",\"from multiprocessing.forkserver import main; main()\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":1,\"host\":\"h\",\"pid\":122,\"ppid\":121,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-c\",\"from multiprocessing.forkserver import main; main()\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":1,\"host\":\"h\",\"pid\":123,\"ppid\":102,"
    " \"argv\":[\"/usr/bin/python3.11\",\"-c\",\"from multiprocessing.resource_tracker import main;main(5)\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":0,\"host\":\"h\",\"pid\":130,\"ppid\":101,"
    " \"argv\":[\"sha256sum\",\"ckpt.pt\"]},"
    "{\"rank\":null,\"role\":\"child\",\"parent_rank\":0,\"host\":\"h\",\"pid\":131,\"ppid\":101,"
    " \"argv\":[]}"
    "]}";

static yajl_val job(const char *name)
{
    char text[sizeof JOB + 64], err[128];
    snprintf(text, sizeof text, JOB, name);
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    ck_assert_msg(root != NULL, "%s", err);
    return root;
}

START_TEST(names_by_rank_and_kind)
{
    yajl_val root = job("\"rs-1\"");
    struct rsr_html_names *n = rsr_html_names_read(root);
    ck_assert_ptr_nonnull(n);
    static const char *const want[] = {
        "rank 0", "rank 1", "torchrun" DOT "launcher", "rank 0" DOT "DataLoader worker",
        "rank 1" DOT "DataLoader worker", "rank 1" DOT "forkserver",
        /* a fork of the forkserver: a worker, though its argv is the server's */
        "rank 1" DOT "DataLoader worker", "rank 1" DOT "resource tracker", "rank 0" DOT "sha256sum",
        "rank 0" DOT "child",
    };
    yajl_val procs = rsr_jv_key(root, "processes");
    ck_assert_uint_eq(rsr_jv_len(procs), sizeof want / sizeof want[0]);
    for (size_t i = 0; i < rsr_jv_len(procs); i++)
        ck_assert_str_eq(rsr_html_name(n, rsr_jv_at(procs, i)), want[i]);
    ck_assert_str_eq(rsr_html_name_pid(n, 110), "rank 0" DOT "DataLoader worker");
    ck_assert_ptr_null(rsr_html_name_pid(n, 999));
    rsr_html_names_free(n);
    yajl_tree_free(root);
}
END_TEST

START_TEST(title_of_a_job_without_a_name)
{
    static const struct {
        const char *job, *title;
    } cases[] = {
        { "\"rs-torch-7\"", "rs-torch-7" },
        { "\"none\"", "torchrun job" DOT "2026-11-28 05:09 UTC" },
        { "null", "torchrun job" DOT "2026-11-28 05:09 UTC" },
        /* the agent's name for it: after torchrun (pid 100) and its start */
        { "\"h-20261128-050941-100\"", "torchrun job" DOT "2026-11-28 05:09 UTC" },
        /* ... or after a rank that named its own job */
        { "\"h-20261128-050941-102\"", "train.py job" DOT "2026-11-28 05:09 UTC" },
        { "\"h-102\"", "train.py job" DOT "2026-11-28 05:09 UTC" },
        /* a host of no process: a name of the user's */
        { "\"other-20261128-050941-100\"", "other-20261128-050941-100" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        yajl_val root = job(cases[i].job);
        struct rsr_html_names *n = rsr_html_names_read(root);
        char b[128];
        rsr_html_title(n, root, b, sizeof b);
        ck_assert_str_eq(b, cases[i].title);
        rsr_html_names_free(n);
        yajl_tree_free(root);
    }
}
END_TEST

/* The filter applied to html: what reaches the page. */
static char *filtered(const char *html)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len), *into = NULL;
    ck_assert_ptr_nonnull(out);
    struct rsr_html_table *t = rsr_html_table_begin(out, &into);
    ck_assert_ptr_nonnull(t);
    fputs(html, into);
    ck_assert_int_eq(rsr_html_table_end(t), 0);
    fclose(out);
    return buf;
}

START_TEST(table_drops_empty_columns)
{
    char *got = filtered(
        "<p>before</p><table id=\"a\"><thead><tr><th>process</th><th class=\"n\" data-keep>rank</th>"
        "<th class=\"n\">GPU</th><th>why</th><th class=\"n\">read</th></tr></thead><tbody>\n"
        "<tr><td>rank 0</td><td class=\"n\" data-v=\"0\">0</td><td class=\"n\" data-v=\"0\">0.0</td>"
        "<td>&ndash;</td><td class=\"n\" data-v=\"5\">5 B</td></tr>\n"
        "<tr><td>rank 1</td><td class=\"n\" data-v=\"0\">0</td><td class=\"n\" data-v=\"-1\">&ndash;</td>"
        "<td></td><td class=\"n\" data-v=\"0\">0 B</td></tr>\n"
        "</tbody></table><p>after</p>");
    ck_assert_str_eq(got,
        "<p>before</p><table id=\"a\"><thead><tr><th>process</th><th class=\"n\" data-keep>rank</th>"
        "<th class=\"n\">read</th></tr></thead><tbody>\n"
        "<tr><td>rank 0</td><td class=\"n\" data-v=\"0\">0</td><td class=\"n\" data-v=\"5\">5 B</td></tr>\n"
        "<tr><td>rank 1</td><td class=\"n\" data-v=\"0\">0</td><td class=\"n\" data-v=\"0\">0 B</td></tr>\n"
        "</tbody></table><p>after</p>");
    free(got);
}
END_TEST

START_TEST(table_without_rows_kept_whole)
{
    const char *html = "<table id=\"p\"><thead><tr><th data-c=\"0\">process</th><th>GPU</th></tr></thead>"
                       "<tbody></tbody></table>\n<table><tr><td>x</td></tr></table>";
    char *got = filtered(html);
    ck_assert_str_eq(got, html);
    free(got);
}
END_TEST

static Suite *html_page_suite(void)
{
    const struct rs_test tests[] = {
        { "html_page_names_by_rank_and_kind", names_by_rank_and_kind },
        { "html_page_title_of_a_job_without_a_name", title_of_a_job_without_a_name },
        { "html_page_table_drops_empty_columns", table_drops_empty_columns },
        { "html_page_table_without_rows_kept_whole", table_without_rows_kept_whole },
    };
    return RS_SUITE("html_page", tests, 30);
}

RS_CHECK_MAIN(html_page_suite)
