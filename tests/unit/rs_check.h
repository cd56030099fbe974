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

#define RS_CHECK_MAIN(suite_fn) \
    int main(void) { return rs_check_run(suite_fn()); }

#endif
