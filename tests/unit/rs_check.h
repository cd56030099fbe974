/* Shared main for the Check unit tests: each tests/unit/test_*.c defines a
 * suite and ends with RS_CHECK_MAIN(its_suite). Every test prints one line,
 * "ok NAME" or "not ok NAME: message", which tests/run.sh counts. */
#ifndef RS_CHECK_H
#define RS_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

static inline int rs_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_SILENT);
    TestResult **res = srunner_results(sr);
    int n = srunner_ntests_run(sr), failed = 0;
    for (int i = 0; i < n; i++) {
        const char *name = tr_tcname(res[i]);
        if (tr_rtype(res[i]) == CK_PASS)
            printf("ok %s\n", name);
        else {
            failed++;
            printf("not ok %s: %s:%d: %s\n", name, tr_lfile(res[i]), tr_lno(res[i]), tr_msg(res[i]));
        }
    }
    free(res);
    srunner_free(sr);
    return failed ? 1 : 0;
}

/* A suite of one test case per test, each named and with its own time
 * limit (seconds), so a hung test fails alone. */
struct rs_test {
    const char *name;
    const TTest *test;
};

static inline Suite *rs_suite(const char *name, const struct rs_test *tests, size_t n, int timeout_s)
{
    Suite *s = suite_create(name);
    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(tests[i].name);
        tcase_set_timeout(tc, timeout_s);
        tcase_add_test(tc, tests[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

#define RS_SUITE(name, tests, timeout_s) rs_suite(name, tests, sizeof tests / sizeof tests[0], timeout_s)

#define RS_CHECK_MAIN(suite_fn) \
    int main(void) { return rs_check_run(suite_fn()); }

#endif
