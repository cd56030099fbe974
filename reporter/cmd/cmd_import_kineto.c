/* `ringside import-kineto`: its options, then the import (import_kineto.h). */
#include "reporter/cmd/command.h"
#include "reporter/job/import_kineto.h"

#include <unistd.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_import_kineto = {
    "import-kineto",
    "  import-kineto IN... -o DIR [-q]\n"
    "        PyTorch profiler traces (.json, .json.gz) into ringside trace files\n"
    "        in DIR, one per process (a trace.json of ringside report holds\n"
    "        every rank), named as the agent names them\n",
    run,
};

static const struct option options[] = {
    { "out", required_argument, NULL, 'o' },
    { "quiet", no_argument, NULL, 'q' },
    { NULL, 0, NULL, 0 },
};

static int run(int argc, char **argv)
{
    const struct rsr_command *c = &rsr_cmd_import_kineto;
    const char *dir = NULL;
    int quiet = 0, ch, first = argc;
    while ((ch = rsr_cmd_getopt(c, argc, argv, "o:q", options, &first, NULL)) != -1) {
        if (ch == 'o')
            dir = optarg;
        else if (ch == 'q')
            quiet = 1;
        else
            return 2;
    }
    if (first == argc)
        return rsr_cmd_usage(c, "import-kineto needs at least one trace");
    if (!dir)
        return rsr_cmd_usage(c, "import-kineto needs -o DIR");
    return rsr_import_kineto_run(argv + first, argc - first, dir, (int)sysconf(_SC_NPROCESSORS_ONLN), quiet);
}
