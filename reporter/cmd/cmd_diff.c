/* `ringside diff`: its options, then the comparison (diff.h). */
#include "reporter/cmd/command.h"
#include "reporter/job/diff.h"

#include <string.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_diff = {
    "diff",
    "  diff BEFORE AFTER [-o OUT] [--json FILE] [-q]\n"
    "  diff BEFORE AFTER --kind cpu|wait|gpu|mem -o FILE.folded\n"
    "        what changed between two runs, each a report folder (from report\n"
    "        -o) or a trace folder (reported first): OUT/diff.json (step time,\n"
    "        GPU breakdown, collectives, kernels by the size of their change,\n"
    "        checkpoints, findings resolved/new/remaining), OUT/diff.html and\n"
    "        differential flame graphs OUT/diff-KIND.svg (the after run, red\n"
    "        grew, blue shrank) with OUT/diff-KIND.folded (\"stack before after\",\n"
    "        as difffolded.pl writes); OUT defaults to ringside-diff. Jobs of\n"
    "        different sizes compare kernels by per-process means\n",
    run,
};

enum { OPT_JSON = 256, OPT_KIND };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "json", required_argument, NULL, OPT_JSON },
    { "kind", required_argument, NULL, OPT_KIND },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_diff;
    struct rsr_diff_opts o = { .out = "ringside-diff" };
    int out_given = 0, ch, first = argc;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        switch (ch) {
        case 'o':
            o.out = optarg;
            out_given = 1;
            break;
        case 'q':
            o.quiet = 1;
            break;
        case OPT_JSON:
            o.json_path = optarg;
            break;
        case OPT_KIND:
            if (strcmp(optarg, "cpu") && strcmp(optarg, "wait") && strcmp(optarg, "gpu") && strcmp(optarg, "mem"))
                return rsr_cmd_usage(c, "--kind is cpu, wait, gpu or mem");
            o.kind = optarg;
            break;
        default:
            return 2;
        }
    }
    if (argc - first != 2)
        return rsr_cmd_usage(c, "diff takes two folders: BEFORE AFTER");
    if (o.kind && !out_given)
        return rsr_cmd_usage(c, "--kind writes the two-column stacks: give -o FILE.folded (or - for stdout)");
    if (o.json_path && !out_given)
        o.out = NULL;
    return rsr_diff_run(argv[first], argv[first + 1], &o);
}
