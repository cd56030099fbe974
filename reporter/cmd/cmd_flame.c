/* `ringside flame`: a flame graph of the sampled stacks (flame.h,
 * flame_svg.h), of the whole job, a stretch of it or some of its steps
 * (step_pick.h). */
#include "reporter/cmd/command.h"
#include "reporter/analyse/step_pick.h"
#include "reporter/analyse/steps.h"
#include "reporter/load/flame.h"
#include "reporter/load/symbolize.h"
#include "reporter/out/flame_svg.h"
#include "reporter/out/unnamed.h"
#include "formats/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_flame = {
    "flame",
    "  flame DIR... [-o FILE.svg|FILE.folded] [--kind cpu|wait|gpu|mem] [--rank R]\n"
    "        [--threads] [--lines] [--native] [--from S] [--to S]\n"
    "        [--steps A-B | --slow-steps | --phase train|eval|other]\n"
    "        [--sysroot DIR] [--symbols FILE]\n"
    "        a flame graph of the sampled stacks (default cpu, all ranks): an\n"
    "        interactive SVG, or folded lines (\"root;...;leaf weight_ns\") for\n"
    "        flamegraph.pl and speedscope when FILE ends in .folded or is -;\n"
    "        default flame-KIND.svg. Weights are ns: CPU time (cpu), time\n"
    "        blocked in CUDA calls and file I/O (wait), GPU time of the kernels\n"
    "        launched there (gpu); bytes for mem: the GPU memory each allocating\n"
    "        stack held at its process's peak. The wait graph sets apart the threads that\n"
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
    "        are left out; --native keeps every frame\n",
    run,
};

enum { OPT_KIND = 256, OPT_RANK, OPT_THREADS, OPT_NATIVE, OPT_LINES, OPT_FROM, OPT_TO, OPT_STEPS, OPT_SLOW_STEPS,
       OPT_PHASE, OPT_SYSROOT, OPT_SYMBOLS };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "kind", required_argument, NULL, OPT_KIND },
    { "rank", required_argument, NULL, OPT_RANK },
    { "threads", no_argument, NULL, OPT_THREADS },
    { "native", no_argument, NULL, OPT_NATIVE },
    { "lines", no_argument, NULL, OPT_LINES },
    { "from", required_argument, NULL, OPT_FROM },
    { "to", required_argument, NULL, OPT_TO },
    { "steps", required_argument, NULL, OPT_STEPS },
    { "slow-steps", no_argument, NULL, OPT_SLOW_STEPS },
    { "phase", required_argument, NULL, OPT_PHASE },
    { "sysroot", required_argument, NULL, OPT_SYSROOT },
    { "symbols", required_argument, NULL, OPT_SYMBOLS },
    { NULL, 0, NULL, 0 },
};

/* --steps A-B (or A), --slow-steps, --phase NAME (ch, its value v) into
 * *pick; 0, or -1 after saying what is wrong. */
static int step_option(int ch, const char *v, struct rsr_step_pick *pick)
{
    if (pick->kind >= 0) {
        fprintf(stderr, "ringside: flame: one of --steps, --slow-steps and --phase at a time\n");
        return -1;
    }
    if (ch == OPT_SLOW_STEPS) {
        pick->kind = RSR_PICK_SLOW;
        return 0;
    }
    if (ch == OPT_PHASE) {
        for (int p = 0; p < RSR_NPHASES; p++)
            if (strcmp(v, rsr_step_phase_name(p)) == 0) {
                pick->kind = RSR_PICK_PHASE, pick->phase = p;
                return 0;
            }
        fprintf(stderr, "ringside: flame: --phase %s: not train, eval or other\n", v);
        return -1;
    }
    if (rsr_steps_option(v, &pick->first, &pick->last) != 0) {
        fprintf(stderr, "ringside: flame: --steps %s: not a step or a range of steps (12, 10-19), "
                        "numbered as the report numbers them, from 0\n", v);
        return -1;
    }
    pick->kind = RSR_PICK_STEPS;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Writes the graph fl of got samples to out (NULL: flame-KIND.svg; "-" or
 * *.folded: folded lines), titled for the ranks and part; the exit status. */
static int write_graph(const struct rsr_flame *fl, const struct rsr_flame_opts *o, uint64_t got, const char *out,
                       const char *rank, const char *part)
{
    const char *kind = rsf_sample_kind_name((unsigned)o->kind);
    char def[32];
    snprintf(def, sizeof def, "flame-%s.svg", kind);
    const char *path = out ? out : def;
    int folded = strcmp(path, "-") == 0 || ends_with(path, ".folded");
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ringside: flame: %s: %s\n", path, strerror(errno));
        return 1;
    }
    char title[128];
    static const char *const what[] = { "CPU", "Wait", "GPU" };
    snprintf(title, sizeof title, "%s flame graph%s%s", what[o->kind], o->rank >= 0 ? rank : ", all ranks", part);
    int err = folded ? rsr_flame_write_folded(f, fl) : rsr_flame_write_svg(f, fl, title);
    if (f != stdout && fclose(f) != 0)
        err = -1;
    if (err) {
        fprintf(stderr, "ringside: flame: %s: %s\n", path, strerror(errno ? errno : EIO));
        return 1;
    }
    if (!o->quiet && f != stdout)
        fprintf(stderr, "ringside: flame: %" PRIu64 " %s samples -> %s\n", got, kind, path);
    if (!o->quiet)
        rsr_unnamed_summary(stderr, fl, 1);
    if (!o->quiet && fl->apart_threads) {
        fputs("ringside: flame: ", stderr);
        rsr_flame_apart_line(stderr, fl, "\n");
    }
    return 0;
}

/* The graph of the files (steps picked as pick says, when it does); the
 * exit status. */
static int graph(char **files, int nfiles, const char *where, struct rsr_flame_opts *o,
                 const struct rsr_step_pick *pick, const char *out)
{
    struct rsr_spans spans = { 0 };
    char part[96] = "";
    if (pick->kind >= 0 && rsr_step_pick(files, nfiles, pick, &spans) != 0)
        return 1;   /* it said why */
    if (pick->kind >= 0) {
        o->spans = spans.v, o->nspans = spans.n, o->span_clock = spans.clock;
        if (pick->kind == RSR_PICK_STEPS)
            snprintf(part, sizeof part, pick->first == pick->last ? ", step %zu" : ", steps %zu-%zu", pick->first,
                     pick->last < spans.steps ? pick->last : spans.steps - 1);
        else
            snprintf(part, sizeof part, ", %zu %s step%s", spans.picked,
                     pick->kind == RSR_PICK_SLOW ? "slow" : rsr_step_phase_name(pick->phase),
                     spans.picked == 1 ? "" : "s");
        if (!o->quiet)
            fprintf(stderr, "ringside: flame: %zu of the job's %zu steps, %.3g s\n", spans.picked, spans.steps,
                    spans.secs);
    }
    struct rsr_flame fl;
    rsr_flame_init(&fl, o->kind);
    uint64_t got = rsr_flame_load(&fl, files, nfiles, o);
    char rank[32] = "";
    if (o->rank >= 0)
        snprintf(rank, sizeof rank, " of rank %d", o->rank);
    int rc = 1;
    if (got == 0)
        fprintf(stderr, "ringside: flame: no %s samples in the %d trace file%s%s of %s\n",
                rsf_sample_kind_name((unsigned)o->kind), nfiles, nfiles == 1 ? "" : "s", rank, where);
    else
        rc = write_graph(&fl, o, got, out, rank, part);
    rsr_flame_free(&fl);
    rsr_spans_free(&spans);
    return rc;
}

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_flame;
    struct rsr_flame_opts o = { .kind = RSF_SAMPLE_CPU, .rank = -1 };
    struct rsr_step_pick pick = { .kind = -1 };
    const char *out = NULL, *sysroot = NULL, *symbols = NULL;
    int ch, first = argc;
    char *end;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_KIND:
            o.kind = -1;
            for (unsigned v = 0; v < RSF_SAMPLE_NKINDS; v++)
                if (strcmp(optarg, rsf_sample_kind_name(v)) == 0)
                    o.kind = (int)v;
            if (o.kind < 0) {
                fprintf(stderr, "ringside: flame: --kind %s: not cpu, wait, gpu or mem\n", optarg);
                return 2;
            }
            break;
        case OPT_RANK: {
            errno = 0;
            long r = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || r < 0 || r > 0x7fffffff) {
                fprintf(stderr, "ringside: flame: --rank %s: not a rank number\n", optarg);
                return 2;
            }
            o.rank = (int)r;
            break;
        }
        case OPT_THREADS:
            o.threads = 1;
            break;
        case OPT_NATIVE:
            o.native = 1;
            break;
        case OPT_LINES:
            o.lines = 1;
            break;
        case OPT_FROM:
        case OPT_TO:
            if (rsr_window_option(ch == OPT_FROM ? "--from" : "--to", optarg, &o.has_from, &o.from_s, &o.has_to,
                                  &o.to_s) != 0) {
                fprintf(stderr, "ringside: flame: %s %s: not seconds from the job's start\n",
                        ch == OPT_FROM ? "--from" : "--to", optarg);
                return 2;
            }
            break;
        case OPT_STEPS:
        case OPT_SLOW_STEPS:
        case OPT_PHASE:
            if (step_option(ch, optarg, &pick) != 0)
                return 2;
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
    char **paths = argv + first;
    int n = argc - first;
    if (n == 0)
        return rsr_cmd_usage(c, "flame needs a trace folder");
    if (o.has_from && o.has_to && o.to_s <= o.from_s)
        return rsr_cmd_usage(c, "--to must come after --from");
    if (pick.kind >= 0 && (o.has_from || o.has_to))
        return rsr_cmd_usage(c, "--from and --to, or the steps: not both");
    if (rsr_sym_configure(sysroot, symbols) != 0)
        return 1;
    char **files = NULL;
    int nfiles = rsr_run_traces(paths, n, &files), rc = 1;
    if (nfiles < 0)
        return 1;
    if (nfiles == 0)
        fprintf(stderr, "ringside: flame: no trace files (*.trace.lz4) in %s\n", paths[0]);
    else
        rc = graph(files, nfiles, paths[0], &o, &pick, out);
    rsr_traces_free(files, nfiles);
    return rc;
}
