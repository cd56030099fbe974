/* `ringside diff BEFORE AFTER`: what changed between two runs. Each side is
 * a report folder (its report.json and the flame graphs' folded stacks,
 * which `ringside report` keeps there for this) or a trace folder, which
 * is reported first into a temporary folder. The two report.json are
 * compared figure by figure into diff.json, the folded stacks into
 * differential flame graphs, and both into one page, diff.html. */
#ifndef RSR_DIFF_H
#define RSR_DIFF_H

struct rsr_diff_opts {
    const char *out;        /* -o: a folder (diff.json, diff.html, diff-KIND.svg/.folded),
                             * or with --kind a FILE.folded; NULL: none */
    const char *json_path;  /* --json FILE ("-": stdout); NULL: none */
    const char *kind;       /* --kind cpu|wait|gpu|mem: -o FILE.folded of that kind; NULL: all, as a folder */
    int quiet;
};

/* Kernels listed on the page at most (diff.json has them all). */
#define RSR_DIFF_PAGE_KERNELS 40

/* Runs the command; returns the exit status (0 done, 1 bad input or
 * failure with one line on stderr, 2 usage). */
int rsr_diff_run(const char *before, const char *after, const struct rsr_diff_opts *o);

#endif
