/* `ringside report`: its options, then the report (report.h). */
#include "reporter/cmd/command.h"
#include "reporter/job/report.h"
#include "reporter/load/symbolize.h"

#include <stdlib.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_report = {
    "report",
    "  report DIR... [-o OUT] [--json FILE] [--ranks LIST] [--lines]\n"
    "         [--memory-mb N] [--watch S] [--prom-dir DIR] [--sysroot DIR]\n"
    "         [--symbols FILE] [-q]\n"
    "        merge the trace files of a job (a job folder, a folder of job\n"
    "        folders: its newest run, or trace files; files of more than one\n"
    "        run are refused) into OUT/report.json, OUT/index.html\n"
    "        (a page that opens offline), OUT/trace.pftrace (Perfetto's own\n"
    "        trace: every record of the lanes below) and OUT/trace.json (their\n"
    "        GPU work as Kineto-compatible JSON, for HTA); OUT defaults to\n"
    "        ringside-report; --json FILE writes the JSON\n"
    "        there too, - for stdout; --lines: source lines in the flame\n"
    "        graphs' frame names. Each file is summarised as it streams past:\n"
    "        memory grows with the processes, not the length of the job. The\n"
    "        timeline lanes and the two traces hold up to 8 processes in full (all\n"
    "        of a small job; else the stragglers, the slowest, fastest and\n"
    "        first ranks, or those of --ranks, e.g. 0,3,8-9), over the whole\n"
    "        job or, past 250k GPU events, a stretch of it (report.json lanes).\n"
    "        --memory-mb N: stop with a message (status 1) saying how much is\n"
    "        needed when the summaries would not fit in N MB (default: no bound).\n"
    "        --watch S: while the job runs, read its files as they grow (new\n"
    "        frames only) and rewrite OUT every S seconds (the page reloads\n"
    "        itself); ends with the one-shot report once every file has its end\n"
    "        mark and nothing grew for S seconds, or on Ctrl-C.\n"
    "        --prom-dir DIR: with every report, DIR/ringside-JOB.prom in\n"
    "        Prometheus' text format (node_exporter's textfile collector reads\n"
    "        it): time per step, GPU busy, SM activity, the wait for a late rank,\n"
    "        exposed transfer, checkpoints, stragglers, link and storage\n"
    "        throughput, by job and rank (docs/prometheus.md).\n"
    "        --sysroot DIR: the traced files are looked for under DIR first (the\n"
    "        root of the container or image the job ran in); --symbols FILE: the\n"
    "        symbols packed by `ringside symbols` where the job ran. Files still\n"
    "        missing are asked by build id of the debuginfod servers of\n"
    "        DEBUGINFOD_URLS. Build ids are checked; report.json \"symbols\" and\n"
    "        the summary say which frames stayed unnamed and why\n",
    run,
};

enum { OPT_JSON = 256, OPT_LINES, OPT_RANKS, OPT_WATCH, OPT_PROM_DIR, OPT_MEMORY_MB, OPT_SYSROOT, OPT_SYMBOLS };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "json", required_argument, NULL, OPT_JSON },
    { "lines", no_argument, NULL, OPT_LINES },
    { "ranks", required_argument, NULL, OPT_RANKS },
    { "watch", required_argument, NULL, OPT_WATCH },
    { "prom-dir", required_argument, NULL, OPT_PROM_DIR },
    { "memory-mb", required_argument, NULL, OPT_MEMORY_MB },
    { "sysroot", required_argument, NULL, OPT_SYSROOT },
    { "symbols", required_argument, NULL, OPT_SYMBOLS },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_report;
    struct rsr_report_opts o = { .out_dir = "ringside-report" };
    static int ranks[RSR_LANES_MAX];
    int out_given = 0, ch, first = argc;
    const char *sysroot = NULL, *symbols = NULL;
    char *end = NULL;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        switch (ch) {
        case 'o':
            o.out_dir = optarg;
            out_given = 1;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_JSON:
            o.json_path = optarg;
            break;
        case OPT_LINES:
            o.lines = 1;
            break;
        case OPT_RANKS:
            if (rsr_parse_ranks(optarg, ranks, RSR_LANES_MAX, &o.nranks) != 0)
                return rsr_cmd_usage(c, "--ranks needs a list of ranks such as 0,3,8-9 (at most 8)");
            o.ranks = ranks;
            break;
        case OPT_WATCH:
            o.watch_s = strtod(optarg, &end);
            if (*end || end == optarg || !(o.watch_s >= 0.1 && o.watch_s <= 86400))
                return rsr_cmd_usage(c, "--watch needs a number of seconds (0.1 to 86400)");
            break;
        case OPT_PROM_DIR:
            o.prom_dir = optarg;
            break;
        case OPT_MEMORY_MB:
            o.memory_mb = strtoull(optarg, &end, 10);
            if (*end || end == optarg || optarg[0] == '-' || !o.memory_mb)
                return rsr_cmd_usage(c, "--memory-mb needs a number of MB (1 or more)");
            break;
        case OPT_SYSROOT:
            sysroot = optarg;
            break;
        case OPT_SYMBOLS:
            symbols = optarg;
            break;
        default:
            return 2;
        }
    }
    if (first == argc)
        return rsr_cmd_usage(c, "report needs at least one trace folder");
    /* --json alone writes just that file. */
    if (o.json_path && !out_given)
        o.out_dir = NULL;
    if (o.watch_s > 0 && !o.out_dir)
        return rsr_cmd_usage(c, "--watch rewrites a report folder: give -o OUT");
    if (rsr_sym_configure(sysroot, symbols) != 0)
        return 1;
    return rsr_report_run(argv + first, argc - first, &o);
}
