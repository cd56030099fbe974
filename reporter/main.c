/* The ringside command: parses the command line and hands each subcommand
 * to its module. Exit status: 0 done, 1 bad input or failure (one line
 * saying what and where), 2 usage. */
#include "reporter/dump.h"
#include "reporter/import_kineto.h"
#include "reporter/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: ringside COMMAND [ARGS]\n"
    "\n"
    "  report DIR... [-o OUT] [--json FILE] [-q]\n"
    "        merge the trace files of a job (a job folder, a folder of job\n"
    "        folders, or trace files) into OUT/report.json and\n"
    "        OUT/index.html, a page that opens offline (OUT defaults to\n"
    "        ringside-report; --json FILE writes the JSON there too, - for stdout)\n"
    "  import-kineto IN... -o DIR [-q]\n"
    "        PyTorch profiler traces (.json, .json.gz) into ringside trace files\n"
    "        in DIR, one per trace, as the agent names them\n"
    "  dump FILE\n"
    "        every record of one trace file as a JSON object per line\n"
    "  help, --help     this text;  --version   the version\n"
    "\n"
    "Traces are written by the agent: LD_PRELOAD=/path/to/libagent.so PROGRAM...\n"
    "Exit status: 0 done, 1 bad input or failure, 2 usage.\n";

static int bad_usage(const char *what)
{
    fprintf(stderr, "ringside: %s\n%s", what, usage);
    return 2;
}

static int cmd_report(int argc, char **argv)
{
    struct rsr_report_opts o = { .out_dir = "ringside-report" };
    char **paths = calloc((size_t)argc + 1, sizeof *paths);
    if (!paths)
        return 1;
    int n = 0, out_given = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
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
        rc = rsr_report_main(paths, n, &o);
    }
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
        printf("ringside %s\n", RINGSIDE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 2, argv + 2);
    if (strcmp(cmd, "import-kineto") == 0)
        return cmd_import_kineto(argc - 2, argv + 2);
    if (strcmp(cmd, "dump") == 0) {
        if (argc != 3)
            return bad_usage("dump takes one trace file");
        return rsr_dump(argv[2], stdout);
    }
    fprintf(stderr, "ringside: unknown command '%s'\n", cmd);
    return bad_usage("commands: report, import-kineto, dump");
}
