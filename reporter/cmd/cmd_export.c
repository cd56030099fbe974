/* `ringside export perfetto`: its options, then the export (report.h). */
#include "reporter/cmd/command.h"
#include "reporter/job/report.h"
#include "reporter/out/pftrace.h"

#include <string.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_export = {
    "export",
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
    "        throughput, the node's series)\n",
    run,
};

enum { OPT_RANKS = 256, OPT_FROM, OPT_TO, OPT_STEPS };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "ranks", required_argument, NULL, OPT_RANKS },
    { "from", required_argument, NULL, OPT_FROM },
    { "to", required_argument, NULL, OPT_TO },
    { "steps", required_argument, NULL, OPT_STEPS },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_export;
    struct rsr_export_opts o = { 0 };
    static int ranks[RSR_EXPORT_MAX];
    int ch, first = argc;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, "unknown option or missing value")) != -1) {
        switch (ch) {
        case 'o':
            o.out = optarg;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_RANKS:
            if (rsr_parse_ranks(optarg, ranks, RSR_EXPORT_MAX, &o.nranks) != 0)
                return rsr_cmd_usage(c, "--ranks needs a list of ranks such as 0,3,8-9 (at most 64)");
            o.ranks = ranks;
            break;
        case OPT_FROM:
        case OPT_TO:
            if (rsr_window_option(ch == OPT_FROM ? "--from" : "--to", optarg, &o.has_from, &o.from_s, &o.has_to,
                                  &o.to_s) != 0)
                return rsr_cmd_usage(c, "--from and --to take seconds from the job's start");
            break;
        case OPT_STEPS:
            if (rsr_steps_option(optarg, &o.step_first, &o.step_last) != 0)
                return rsr_cmd_usage(c, "--steps takes steps as report.json counts them: A-B, or A");
            o.has_steps = 1;
            break;
        default:
            return 2;
        }
    }
    if (first == argc || strcmp(argv[first], "perfetto") != 0)
        return rsr_cmd_usage(c, "export knows one format: export perfetto DIR... -o FILE");
    first++;
    if (first == argc)
        return rsr_cmd_usage(c, "export perfetto needs a trace folder");
    if (!o.out)
        return rsr_cmd_usage(c, "export perfetto needs -o FILE");
    if (o.has_from && o.has_to && o.to_s <= o.from_s)
        return rsr_cmd_usage(c, "--to must come after --from");
    if (o.has_steps && !rsr_pftrace_wanted(o.out))
        return rsr_cmd_usage(c, "--steps needs the protobuf format (-o FILE not ending in .json)");
    return rsr_export_run(argv + first, argc - first, &o);
}
