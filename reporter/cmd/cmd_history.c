/* `ringside history`: its options, then the history (history.h). */
#include "reporter/cmd/command.h"
#include "reporter/job/history.h"

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_history = {
    "history",
    "  history ROOT... [--db FILE] [-o FILE.html] [--check RUN] [-q]\n"
    "        index every run under the trace roots into a SQLite database\n"
    "        (default ROOT/ringside-history.db; schema in docs/history.md),\n"
    "        each reported once into ringside-history-reports/ beside it and\n"
    "        read again only when its files change. Runs of one workload (the\n"
    "        first rank's command line, its files' names aside, and the world\n"
    "        size) form a series; a run whose time per step leaves its series'\n"
    "        band (the median of its good runs before it +- 4 MADs, at least\n"
    "        5%) is a regression or an improvement, explained by `ringside\n"
    "        diff` against the series' last good run (its diff.html kept). Writes\n"
    "        the history page (default ringside-history.html beside the\n"
    "        database: each series over time, its runs linking to their\n"
    "        reports) and prints each series and its flagged runs. --check RUN (a run's trace folder or key): one\n"
    "        line on RUN; exit status 1 when it regressed\n",
    run,
};

enum { OPT_DB = 256, OPT_CHECK };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "db", required_argument, NULL, OPT_DB },
    { "check", required_argument, NULL, OPT_CHECK },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_history;
    struct rsr_history_opts o = { 0 };
    int ch, first = argc;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        switch (ch) {
        case 'o':
            o.page = optarg;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_DB:
            o.db = optarg;
            break;
        case OPT_CHECK:
            o.check = optarg;
            break;
        default:
            return 2;
        }
    }
    if (first == argc)
        return rsr_cmd_usage(c, "history needs a trace root");
    return rsr_history_run(argv + first, argc - first, &o);
}
