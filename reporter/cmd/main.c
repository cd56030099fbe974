/* The ringside command: parses the command line and hands each subcommand
 * to its module. Exit status: 0 done, 1 bad input or failure (one line
 * saying what and where), 2 usage. */
#include "reporter/cmd/diff.h"
#include "reporter/out/dump.h"
#include "reporter/cmd/import_kineto.h"
#include "reporter/load/flame.h"
#include "reporter/out/flame_svg.h"
#include "reporter/cmd/history.h"
#include "reporter/analyse/step_pick.h"
#include "reporter/analyse/steps.h"
#include "reporter/mpi/mpi.h"
#include "reporter/out/pftrace.h"
#include "reporter/cmd/report.h"
#include "reporter/load/discover.h"
#include "reporter/load/runs.h"
#include "reporter/load/symbolize.h"
#include "reporter/out/unnamed.h"
#include "formats/trace.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: ringside COMMAND [ARGS]\n"
    "\n"
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
    "        the summary say which frames stayed unnamed and why\n"
    "  diff BEFORE AFTER [-o OUT] [--json FILE] [-q]\n"
    "  diff BEFORE AFTER --kind cpu|wait|gpu -o FILE.folded\n"
    "        what changed between two runs, each a report folder (from report\n"
    "        -o) or a trace folder (reported first): OUT/diff.json (step time,\n"
    "        GPU breakdown, collectives, kernels by the size of their change,\n"
    "        checkpoints, findings resolved/new/remaining), OUT/diff.html and\n"
    "        differential flame graphs OUT/diff-KIND.svg (the after run, red\n"
    "        grew, blue shrank) with OUT/diff-KIND.folded (\"stack before after\",\n"
    "        as difffolded.pl writes); OUT defaults to ringside-diff. Jobs of\n"
    "        different sizes compare kernels by per-process means\n"
    "  export perfetto DIR... -o FILE [--ranks LIST] [--from S] [--to S]\n"
    "                 [--steps A-B] [-q]\n"
    "        the chosen ranks (default every process) over the chosen stretch\n"
    "        (seconds from the job's start, or steps A to B as report.json\n"
    "        counts them from 0; default all of it), in full. FILE.json: the\n"
    "        Kineto-compatible JSON of report's trace.json, GPU work only, that\n"
    "        HTA reads (at most 64 processes; no --steps). Any other name\n"
    "        (FILE.pftrace): Perfetto's protobuf trace, read as the files\n"
    "        stream by: kernels, copies and launch calls with flows,\n"
    "        collectives, file I/O, CUDA syncs and wait samples by reason,\n"
    "        NVTX ranges, CPU samples with call stacks, steps, checkpoints,\n"
    "        and counter tracks (GPU busy, SM active, NCCL and storage\n"
    "        throughput, the node's series)\n"
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
    "        line on RUN; exit status 1 when it regressed\n"
    "  import-kineto IN... -o DIR [-q]\n"
    "        PyTorch profiler traces (.json, .json.gz) into ringside trace files\n"
    "        in DIR, one per process (a trace.json of ringside report holds\n"
    "        every rank), named as the agent names them\n"
    "  flame DIR... [-o FILE.svg|FILE.folded] [--kind cpu|wait|gpu] [--rank R]\n"
    "        [--threads] [--lines] [--native] [--from S] [--to S]\n"
    "        [--steps A-B | --slow-steps | --phase train|eval|other]\n"
    "        [--sysroot DIR] [--symbols FILE]\n"
    "        a flame graph of the sampled stacks (default cpu, all ranks): an\n"
    "        interactive SVG, or folded lines (\"root;...;leaf weight_ns\") for\n"
    "        flamegraph.pl and speedscope when FILE ends in .folded or is -;\n"
    "        default flame-KIND.svg. Weights are ns: CPU time (cpu), time\n"
    "        blocked in CUDA calls and file I/O (wait), GPU time of the kernels\n"
    "        launched there (gpu). The wait graph sets apart the threads that\n"
    "        only waited (helpers, pollers, idle DataLoader workers, a launcher)\n"
    "        and says so on stderr; --threads: every thread, its name as root;\n"
    "        --lines: source file:line in frame names (mod.py:func:line for\n"
    "        Python); --from S, --to S: only the samples of that stretch\n"
    "        (seconds from the job's start; a wait by its part inside);\n"
    "        --steps A-B (or A), --slow-steps, --phase NAME: only the samples\n"
    "        of those steps, numbered and found as the report finds them\n"
    "        (each from its first rank's start to its last rank's end; the\n"
    "        files are read once more for them). A\n"
    "        stack with Python frames shows those, and the native frames below\n"
    "        the innermost (a C extension, an operator): the interpreter's\n"
    "        are left out; --native keeps every frame\n"
    "  symbols DIR... -o FILE [--sysroot DIR] [-q]\n"
    "        run where the job ran: packs the symbols of the native frames the\n"
    "        traces hold (for each module by build id, the names of those\n"
    "        addresses and its segments, not whole files) into FILE, for\n"
    "        report/flame --symbols FILE anywhere\n"
    "  symbolize FILE ADDR...\n"
    "        function, inlined callers and file:line of addresses of an ELF file\n"
    "        (innermost first, as addr2line -a -f -i prints them)\n"
    "  dump FILE\n"
    "        every record of one trace file as a JSON object per line\n"
    "  help, --help     this text;  --version   the version\n"
    "\n"
    "Under mpirun, or srun --mpi=pmix, report and export run as one MPI program:\n"
    "each process reads its share of the files and the first writes the outputs,\n"
    "the same as one process would (report.json \"reporter\" says how it was\n"
    "made); RINGSIDE_MPI=0 keeps each task on its own.\n"
    "Traces are written by the agent: LD_PRELOAD=/path/to/libagent.so PROGRAM...\n"
    "Exit status: 0 done, 1 bad input or failure, 2 usage.\n";

static int bad_usage(const char *what)
{
    fprintf(stderr, "ringside: %s\n%s", what, usage);
    return 2;
}

/* --from S or --to S (a, its value v): seconds from the job's start, a
 * finite number from 0. Returns 0, or -1 when v is not one. */
static int window_option(const char *a, const char *v, int *has_from, double *from_s, int *has_to, double *to_s)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !isfinite(x) || x < 0)
        return -1;
    if (strcmp(a, "--from") == 0)
        *has_from = 1, *from_s = x;
    else
        *has_to = 1, *to_s = x;
    return 0;
}

/* --sysroot DIR and --symbols FILE at argv[*i]: 1 taken (value in *sysroot
 * or *symbols, *i past it), 0 not one of them, -1 without its value. */
static int symbol_option(int argc, char **argv, int *i, const char **sysroot, const char **symbols)
{
    int root = strcmp(argv[*i], "--sysroot") == 0;
    if (!root && strcmp(argv[*i], "--symbols") != 0)
        return 0;
    if (*i + 1 == argc) {
        fprintf(stderr, "ringside: %s needs a %s\n", argv[*i], root ? "folder" : "file");
        return -1;
    }
    *(root ? sysroot : symbols) = argv[++*i];
    return 1;
}

/* "A-B" or "A" (steps from 0) into *first and *last; -1 when it is not. */
static int steps_option(const char *v, size_t *first, size_t *last)
{
    char *end;
    errno = 0;
    unsigned long long a = strtoull(v, &end, 10), b = a;
    if (end == v || errno || *v == '-')
        return -1;
    if (*end == '-') {
        const char *w = end + 1;
        b = strtoull(w, &end, 10);
        if (end == w || errno || *w == '-')
            return -1;
    }
    if (*end || b < a)
        return -1;
    *first = (size_t)a;
    *last = (size_t)b;
    return 0;
}

/* "0,3,8-9" into r[0..*n) (at most max); -1 when it is not such a list. */
static int parse_ranks(const char *s, int *r, int max, int *n)
{
    *n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long a = strtol(s, &end, 10), b = a;
        if (errno || end == s || a < 0 || a > 0x7fffffff)
            return -1;
        s = end;
        if (*s == '-') {
            b = strtol(++s, &end, 10);
            if (errno || end == s || b < a || b > 0x7fffffff)
                return -1;
            s = end;
        }
        for (long x = a; x <= b; x++) {
            if (*n == max)
                return -1;
            r[(*n)++] = (int)x;
        }
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return *n ? 0 : -1;
}

static int cmd_report(int argc, char **argv)
{
    struct rsr_report_opts o = { .out_dir = "ringside-report" };
    static int ranks[RSR_LANES_MAX];
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        return 1;
    int n = 0, out_given = 0, so;
    const char *sysroot = NULL, *symbols = NULL;
    for (int i = 0; i < argc; i++) {
        if ((so = symbol_option(argc, argv, &i, &sysroot, &symbols)) != 0) {
            if (so < 0) {
                free(paths);
                return 2;
            }
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
            if (++i == argc) {
                free(paths);
                return bad_usage("-o needs a folder");
            }
            o.out_dir = argv[i];
            out_given = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            if (++i == argc) {
                free(paths);
                return bad_usage("--json needs a file name");
            }
            o.json_path = argv[i];
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            o.quiet = 1;
        } else if (strcmp(argv[i], "--lines") == 0) {
            o.lines = 1;
        } else if (strcmp(argv[i], "--ranks") == 0) {
            if (++i == argc || parse_ranks(argv[i], ranks, RSR_LANES_MAX, &o.nranks) != 0) {
                free(paths);
                return bad_usage("--ranks needs a list of ranks such as 0,3,8-9 (at most 8)");
            }
            o.ranks = ranks;
        } else if (strcmp(argv[i], "--watch") == 0) {
            char *end = NULL;
            if (++i < argc)
                o.watch_s = strtod(argv[i], &end);
            if (i == argc || !end || *end || end == argv[i] || !(o.watch_s >= 0.1 && o.watch_s <= 86400)) {
                free(paths);
                return bad_usage("--watch needs a number of seconds (0.1 to 86400)");
            }
        } else if (strcmp(argv[i], "--prom-dir") == 0) {
            if (++i == argc) {
                free(paths);
                return bad_usage("--prom-dir needs a folder (node_exporter's --collector.textfile.directory)");
            }
            o.prom_dir = argv[i];
        } else if (strcmp(argv[i], "--memory-mb") == 0) {
            char *end = NULL;
            if (++i < argc)
                o.memory_mb = strtoull(argv[i], &end, 10);
            if (i == argc || !end || *end || end == argv[i] || argv[i][0] == '-' || !o.memory_mb) {
                free(paths);
                return bad_usage("--memory-mb needs a number of MB (1 or more)");
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ringside: report: unknown option %s\n", argv[i]);
            free(paths);
            return 2;
        } else {
            paths[n++] = argv[i];
        }
    }
    int rc;
    if (n == 0) {
        rc = bad_usage("report needs at least one trace folder");
    } else {
        /* --json alone writes just that file. */
        if (o.json_path && !out_given)
            o.out_dir = NULL;
        if (o.watch_s > 0 && !o.out_dir) {
            free(paths);
            return bad_usage("--watch rewrites a report folder: give -o OUT");
        }
        rc = rsr_sym_configure(sysroot, symbols) != 0 ? 1 : rsr_report_main(paths, n, &o);
    }
    free(paths);
    return rc;
}

static int cmd_diff(int argc, char **argv)
{
    struct rsr_diff_opts o = { .out = "ringside-diff" };
    const char *side[2] = { NULL, NULL };
    int n = 0, out_given = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
            if (++i == argc)
                return bad_usage("-o needs a folder (or, with --kind, a .folded file)");
            o.out = argv[i];
            out_given = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            if (++i == argc)
                return bad_usage("--json needs a file name");
            o.json_path = argv[i];
        } else if (strcmp(argv[i], "--kind") == 0) {
            if (++i == argc || (strcmp(argv[i], "cpu") && strcmp(argv[i], "wait") && strcmp(argv[i], "gpu")))
                return bad_usage("--kind is cpu, wait or gpu");
            o.kind = argv[i];
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            o.quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ringside: diff: unknown option %s\n", argv[i]);
            return 2;
        } else if (n < 2) {
            side[n++] = argv[i];
        } else {
            return bad_usage("diff takes two folders: BEFORE AFTER");
        }
    }
    if (n != 2)
        return bad_usage("diff takes two folders: BEFORE AFTER");
    if (o.kind && !out_given)
        return bad_usage("--kind writes the two-column stacks: give -o FILE.folded (or - for stdout)");
    if (o.json_path && !out_given)
        o.out = NULL;
    return rsr_diff_main(side[0], side[1], &o);
}

static int cmd_export(int argc, char **argv)
{
    struct rsr_export_opts o = { 0 };
    static int ranks[RSR_EXPORT_MAX];
    if (argc < 1 || strcmp(argv[0], "perfetto") != 0)
        return bad_usage("export knows one format: export perfetto DIR... -o FILE");
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        return 1;
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0) && i + 1 < argc) {
            o.out = argv[++i];
        } else if (strcmp(a, "--ranks") == 0 && i + 1 < argc) {
            if (parse_ranks(argv[++i], ranks, RSR_EXPORT_MAX, &o.nranks) != 0) {
                free(paths);
                return bad_usage("--ranks needs a list of ranks such as 0,3,8-9 (at most 64)");
            }
            o.ranks = ranks;
        } else if ((strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) && i + 1 < argc) {
            if (window_option(a, argv[++i], &o.has_from, &o.from_s, &o.has_to, &o.to_s) != 0) {
                free(paths);
                return bad_usage("--from and --to take seconds from the job's start");
            }
        } else if (strcmp(a, "--steps") == 0 && i + 1 < argc) {
            if (steps_option(argv[++i], &o.step_first, &o.step_last) != 0) {
                free(paths);
                return bad_usage("--steps takes steps as report.json counts them: A-B, or A");
            }
            o.has_steps = 1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ringside: export: unknown option or missing value: %s\n", a);
            free(paths);
            return 2;
        } else {
            paths[n++] = argv[i];
        }
    }
    int rc;
    if (!n)
        rc = bad_usage("export perfetto needs a trace folder");
    else if (!o.out)
        rc = bad_usage("export perfetto needs -o FILE");
    else if (o.has_from && o.has_to && o.to_s <= o.from_s)
        rc = bad_usage("--to must come after --from");
    else if (o.has_steps && !rsr_pftrace_wanted(o.out))
        rc = bad_usage("--steps needs the protobuf format (-o FILE not ending in .json)");
    else
        rc = rsr_export_main(paths, n, &o);
    free(paths);
    return rc;
}

static int cmd_import_kineto(int argc, char **argv)
{
    char **in = calloc((size_t)argc + 1, sizeof *in);
    if (!in)
        return 1;
    const char *dir = NULL;
    int n = 0, quiet = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
            if (++i == argc) {
                free(in);
                return bad_usage("-o needs a folder");
            }
            dir = argv[i];
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ringside: import-kineto: unknown option %s\n", argv[i]);
            free(in);
            return 2;
        } else {
            in[n++] = argv[i];
        }
    }
    int rc;
    if (n == 0)
        rc = bad_usage("import-kineto needs at least one trace");
    else if (!dir)
        rc = bad_usage("import-kineto needs -o DIR");
    else
        rc = rsr_import_kineto_main(in, n, dir, (int)sysconf(_SC_NPROCESSORS_ONLN), quiet);
    free(in);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The trace files of the newest run under paths, as report takes them:
 * the count (files malloc'd), or -1 with a message. */
static int newest_traces(char **paths, int n, char ***files)
{
    int nfiles = rsr_find_traces(paths, n, files);
    if (nfiles > 0)
        rsr_runs_newest(*files, &nfiles);
    return nfiles;
}

/* --steps A-B (or A), --slow-steps, --phase NAME into *pick; 0, or -1
 * after saying what is wrong with the value. */
static int step_option(const char *opt, const char *v, struct rsr_step_pick *pick)
{
    if (strcmp(opt, "--slow-steps") == 0) {
        pick->kind = RSR_PICK_SLOW;
        return 0;
    }
    if (strcmp(opt, "--phase") == 0) {
        for (int p = 0; p < RSR_NPHASES; p++)
            if (strcmp(v, rsr_step_phase_name(p)) == 0) {
                pick->kind = RSR_PICK_PHASE, pick->phase = p;
                return 0;
            }
        fprintf(stderr, "ringside: flame: --phase %s: not train, eval or other\n", v);
        return -1;
    }
    if (steps_option(v, &pick->first, &pick->last) != 0) {
        fprintf(stderr, "ringside: flame: --steps %s: not a step or a range of steps (12, 10-19), "
                        "numbered as the report numbers them, from 0\n", v);
        return -1;
    }
    pick->kind = RSR_PICK_STEPS;
    return 0;
}

static int cmd_flame(int argc, char **argv)
{
    struct rsr_flame_opts o = { .kind = RSF_SAMPLE_CPU, .rank = -1 };
    struct rsr_step_pick pick = { .kind = -1 };
    struct rsr_spans spans = { 0 };
    char part[96] = "";
    const char *out = NULL;
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        return 1;
    int n = 0, rc = 2, so;
    const char *sysroot = NULL, *symbols = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if ((so = symbol_option(argc, argv, &i, &sysroot, &symbols)) != 0) {
            if (so < 0)
                goto done;
            continue;
        }
        if ((strcmp(a, "-o") == 0 || strcmp(a, "--kind") == 0 || strcmp(a, "--rank") == 0 ||
             strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0 || strcmp(a, "--steps") == 0 ||
             strcmp(a, "--phase") == 0) &&
            i + 1 == argc) {
            fprintf(stderr, "ringside: flame: %s needs a value\n", a);
            goto done;
        }
        if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
            if (window_option(a, argv[++i], &o.has_from, &o.from_s, &o.has_to, &o.to_s) != 0) {
                fprintf(stderr, "ringside: flame: %s %s: not seconds from the job's start\n", a, argv[i]);
                goto done;
            }
            continue;
        }
        if (strcmp(a, "--steps") == 0 || strcmp(a, "--slow-steps") == 0 || strcmp(a, "--phase") == 0) {
            if (pick.kind >= 0) {
                fprintf(stderr, "ringside: flame: one of --steps, --slow-steps and --phase at a time\n");
                goto done;
            }
            const char *v = strcmp(a, "--slow-steps") == 0 ? NULL : argv[++i];
            if (step_option(a, v, &pick) != 0)
                goto done;
            continue;
        }
        if (strcmp(a, "-o") == 0) {
            out = argv[++i];
        } else if (strcmp(a, "--kind") == 0) {
            const char *k = argv[++i];
            o.kind = -1;
            for (unsigned v = 0; v < RSF_SAMPLE_NKINDS; v++)
                if (strcmp(k, rsf_sample_kind_name(v)) == 0)
                    o.kind = (int)v;
            if (o.kind < 0) {
                fprintf(stderr, "ringside: flame: --kind %s: not cpu, wait or gpu\n", k);
                goto done;
            }
        } else if (strcmp(a, "--rank") == 0) {
            char *end;
            errno = 0;
            long r = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || r < 0 || r > 0x7fffffff) {
                fprintf(stderr, "ringside: flame: --rank %s: not a rank number\n", argv[i]);
                goto done;
            }
            o.rank = (int)r;
        } else if (strcmp(a, "--threads") == 0) {
            o.threads = 1;
        } else if (strcmp(a, "--native") == 0) {
            o.native = 1;
        } else if (strcmp(a, "--lines") == 0) {
            o.lines = 1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ringside: flame: unknown option %s\n", a);
            goto done;
        } else {
            paths[n++] = argv[i];
        }
    }
    if (n == 0) {
        rc = bad_usage("flame needs a trace folder");
        goto done;
    }
    if (o.has_from && o.has_to && o.to_s <= o.from_s) {
        rc = bad_usage("--to must come after --from");
        goto done;
    }
    if (pick.kind >= 0 && (o.has_from || o.has_to)) {
        rc = bad_usage("--from and --to, or the steps: not both");
        goto done;
    }
    rc = 1;
    if (rsr_sym_configure(sysroot, symbols) != 0)
        goto done;
    char **files = NULL;
    int nfiles = newest_traces(paths, n, &files);
    if (nfiles < 0)
        goto done;
    const char *kind = rsf_sample_kind_name((unsigned)o.kind);
    if (nfiles == 0) {
        fprintf(stderr, "ringside: flame: no trace files (*.trace.lz4) in %s\n", paths[0]);
    } else if (pick.kind >= 0 && rsr_step_pick(files, nfiles, &pick, &spans) != 0) {
        /* it said why */
    } else {
        if (pick.kind >= 0) {
            o.spans = spans.v, o.nspans = spans.n, o.span_clock = spans.clock;
            if (pick.kind == RSR_PICK_STEPS)
                snprintf(part, sizeof part, pick.first == pick.last ? ", step %zu" : ", steps %zu-%zu", pick.first,
                         pick.last < spans.steps ? pick.last : spans.steps - 1);
            else
                snprintf(part, sizeof part, ", %zu %s step%s", spans.picked,
                         pick.kind == RSR_PICK_SLOW ? "slow" : rsr_step_phase_name(pick.phase),
                         spans.picked == 1 ? "" : "s");
            if (!o.quiet)
                fprintf(stderr, "ringside: flame: %zu of the job's %zu steps, %.3g s\n", spans.picked, spans.steps,
                        spans.secs);
        }
        struct rsr_flame fl;
        rsr_flame_init(&fl, o.kind);
        uint64_t got = rsr_flame_load(&fl, files, nfiles, &o);
        char rank[32] = "";
        if (o.rank >= 0)
            snprintf(rank, sizeof rank, " of rank %d", o.rank);
        if (got == 0) {
            fprintf(stderr, "ringside: flame: no %s samples in the %d trace file%s%s of %s\n", kind,
                    nfiles, nfiles == 1 ? "" : "s", rank, paths[0]);
        } else {
            char def[32];
            snprintf(def, sizeof def, "flame-%s.svg", kind);
            const char *path = out ? out : def;
            int folded = strcmp(path, "-") == 0 || ends_with(path, ".folded");
            FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
            if (!f) {
                fprintf(stderr, "ringside: flame: %s: %s\n", path, strerror(errno));
            } else {
                char title[128];
                static const char *const what[] = { "CPU", "Wait", "GPU" };
                snprintf(title, sizeof title, "%s flame graph%s%s", what[o.kind],
                         o.rank >= 0 ? rank : ", all ranks", part);
                int err = folded ? rsr_flame_write_folded(f, &fl) : rsr_flame_write_svg(f, &fl, title);
                if (f != stdout && fclose(f) != 0)
                    err = -1;
                if (err)
                    fprintf(stderr, "ringside: flame: %s: %s\n", path, strerror(errno ? errno : EIO));
                else
                    rc = 0;
                if (!err && !o.quiet && f != stdout)
                    fprintf(stderr, "ringside: flame: %" PRIu64 " %s samples -> %s\n", got, kind, path);
                if (!err && !o.quiet)
                    rsr_unnamed_summary(stderr, &fl, 1);
                if (!err && !o.quiet && fl.apart_threads) {
                    fputs("ringside: flame: ", stderr);
                    rsr_flame_apart_line(stderr, &fl, "\n");
                }
            }
        }
        rsr_flame_free(&fl);
    }
    rsr_spans_free(&spans);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
done:
    free(paths);
    return rc;
}

static int cmd_history(int argc, char **argv)
{
    struct rsr_history_opts o = { 0 };
    char **roots = calloc((size_t)argc + 1, sizeof *roots);
    if (!roots)
        return 1;
    int n = 0, rc = 2;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--db") == 0 || strcmp(a, "--check") == 0 || strcmp(a, "-o") == 0) && i + 1 == argc) {
            fprintf(stderr, "ringside: history: %s needs a value\n", a);
            goto done;
        }
        if (strcmp(a, "--db") == 0)
            o.db = argv[++i];
        else if (strcmp(a, "--check") == 0)
            o.check = argv[++i];
        else if (strcmp(a, "-o") == 0)
            o.page = argv[++i];
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
            o.quiet = 1;
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ringside: history: unknown option %s\n", a);
            goto done;
        } else
            roots[n++] = argv[i];
    }
    rc = n ? rsr_history_main(roots, n, &o) : bad_usage("history needs a trace root");
done:
    free(roots);
    return rc;
}

static int cmd_symbols(int argc, char **argv)
{
    const char *out = NULL, *sysroot = NULL, *symbols = NULL;
    int n = 0, quiet = 0, so, rc = 2;
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        return 1;
    for (int i = 0; i < argc; i++) {
        if ((so = symbol_option(argc, argv, &i, &sysroot, &symbols)) != 0) {
            if (so < 0 || symbols) {
                if (symbols)
                    fputs("ringside: symbols: --symbols is for report and flame\n", stderr);
                goto done;
            }
        } else if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
            if (++i == argc) {
                rc = bad_usage("-o needs a file");
                goto done;
            }
            out = argv[i];
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ringside: symbols: unknown option %s\n", argv[i]);
            goto done;
        } else {
            paths[n++] = argv[i];
        }
    }
    if (!n || !out) {
        rc = bad_usage(!n ? "symbols needs a trace folder" : "symbols needs -o FILE");
        goto done;
    }
    rc = 1;
    if (rsr_sym_configure(sysroot, NULL) != 0)
        goto done;
    char **files = NULL;
    int nfiles = newest_traces(paths, n, &files);
    if (nfiles < 0)
        goto done;
    struct rsr_sym *s = nfiles ? rsr_sym_new(quiet) : NULL;
    if (!nfiles) {
        fprintf(stderr, "ringside: symbols: no trace files (*.trace.lz4) in %s\n", paths[0]);
    } else if (s) {
        uint64_t got = rsr_flame_symbolize(files, nfiles, s, quiet);
        FILE *f = fopen(out, "w");
        int err = !f || rsr_sym_write_pack(s, f) != 0;
        if (f && fclose(f) != 0)
            err = 1;
        if (err)
            fprintf(stderr, "ringside: symbols: %s: %s\n", out, strerror(errno ? errno : EIO));
        else
            rc = 0;
        if (!err && !quiet)
            fprintf(stderr, "ringside: symbols: the frames of %" PRIu64 " samples in %d trace file%s -> %s\n",
                    got, nfiles, nfiles == 1 ? "" : "s", out);
    }
    rsr_sym_free(s);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
done:
    free(paths);
    return rc;
}

static int cmd_symbolize(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage("symbolize takes an ELF file and addresses");
    struct rsr_sym *s = rsr_sym_new(0);
    if (!s)
        return 1;
    int file = rsr_sym_file(s, argv[0], NULL), rc = 0;
    if (rsr_sym_file_state(s, file) != RSR_SYM_FILE_OK) {
        rsr_sym_free(s);
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        char *end;
        errno = 0;
        unsigned long long a = strtoull(argv[i], &end, 16);
        if (errno || *end || end == argv[i]) {
            fprintf(stderr, "ringside: symbolize: %s: not a hex address\n", argv[i]);
            rc = 1;
            break;
        }
        const struct rsr_sym_result *r = rsr_sym_lookup(s, file, a);
        printf("0x%016llx\n", a);
        for (uint32_t k = r->nlevels; k-- > 0;) {
            const struct rsr_sym_level *lv = &r->levels[k];
            printf("%s\n%s:%d\n", r->known ? lv->func : "??", lv->file ? lv->file : "??", lv->line);
        }
    }
    rsr_sym_free(s);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage("no command given");
    const char *cmd = argv[1];
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("ringside %s (%s MPI)\n", RINGSIDE_VERSION, rsr_mpi_built() ? "with" : "without");
        return 0;
    }
    /* `ringside report --help` and the like: the help, not a usage error. */
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        }
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(argc - 2, argv + 2);
    if (strcmp(cmd, "history") == 0)
        return cmd_history(argc - 2, argv + 2);
    if (strcmp(cmd, "diff") == 0)
        return cmd_diff(argc - 2, argv + 2);
    if (strcmp(cmd, "import-kineto") == 0)
        return cmd_import_kineto(argc - 2, argv + 2);
    if (strcmp(cmd, "flame") == 0)
        return cmd_flame(argc - 2, argv + 2);
    if (strcmp(cmd, "symbolize") == 0)
        return cmd_symbolize(argc - 2, argv + 2);
    if (strcmp(cmd, "symbols") == 0)
        return cmd_symbols(argc - 2, argv + 2);
    if (strcmp(cmd, "dump") == 0) {
        if (argc != 3)
            return bad_usage("dump takes one trace file");
        return rsr_dump(argv[2], stdout);
    }
    fprintf(stderr, "ringside: unknown command '%s'\n", cmd);
    return bad_usage("commands: report, diff, history, export, import-kineto, flame, symbols, symbolize, dump");
}
