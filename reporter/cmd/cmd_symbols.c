/* `ringside symbols`: the symbols of a job's frames packed into a file
 * (symbolize.h, sympack.h). */
#include "reporter/cmd/command.h"
#include "reporter/load/flame.h"
#include "reporter/load/symbolize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_symbols = {
    "symbols",
    "  symbols DIR... -o FILE [--sysroot DIR] [-q]\n"
    "        run where the job ran: packs the symbols of the native frames the\n"
    "        traces hold (for each module by build id, the names of those\n"
    "        addresses and its segments, not whole files) into FILE, for\n"
    "        report/flame --symbols FILE anywhere\n",
    run,
};

enum { OPT_SYSROOT = 256, OPT_SYMBOLS };

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { "sysroot", required_argument, NULL, OPT_SYSROOT },
    { "symbols", required_argument, NULL, OPT_SYMBOLS },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_symbols;
    const char *out = NULL, *sysroot = NULL;
    int quiet = 0, ch, first = argc;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case OPT_SYSROOT:
            sysroot = optarg;
            break;
        case OPT_SYMBOLS:
            fputs("ringside: symbols: --symbols is for report and flame\n", stderr);
            return 2;
        default:
            return 2;
        }
    }
    char **paths = argv + first;
    int n = argc - first;
    if (!n || !out)
        return rsr_cmd_usage(c, !n ? "symbols needs a trace folder" : "symbols needs -o FILE");
    if (rsr_sym_configure(sysroot, NULL) != 0)
        return 1;
    char **files = NULL;
    int nfiles = rsr_run_traces(paths, n, &files), rc = 1;
    if (nfiles < 0)
        return 1;
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
    rsr_traces_free(files, nfiles);
    return rc;
}
