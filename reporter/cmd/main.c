/* The ringside command: picks the command (command.h), each of which reads
 * its own options. Exit status: 0 done, 1 bad input or failure (one line
 * saying what and where), 2 usage. */
#include "reporter/cmd/command.h"
#include "reporter/mpi/mpi.h"

#include <stdio.h>
#include <string.h>

/* In the order the help lists them. */
static const struct rsr_command *const commands[] = {
    &rsr_cmd_report, &rsr_cmd_diff, &rsr_cmd_export, &rsr_cmd_history, &rsr_cmd_import_kineto,
    &rsr_cmd_flame, &rsr_cmd_symbols, &rsr_cmd_symbolize, &rsr_cmd_dump,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void put_help(FILE *f)
{
    fputs("usage: ringside COMMAND [ARGS]\n\n", f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fputs(commands[i]->usage, f);
    fputs("  help, --help     this text;  --version   the version\n"
          "\n"
          "Under mpirun, or srun --mpi=pmix, report and export run as one MPI program:\n"
          "each process reads its share of the files and the first writes the outputs,\n"
          "the same as one process would (report.json \"reporter\" says how it was\n"
          "made); RINGSIDE_MPI=0 keeps each task on its own.\n"
          "Traces are written by the agent: LD_PRELOAD=/path/to/libagent.so PROGRAM...\n"
          "Exit status: 0 done, 1 bad input or failure, 2 usage.\n",
          f);
}

static int bad_usage(const char *what)
{
    fprintf(stderr, "ringside: %s\n", what);
    put_help(stderr);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return bad_usage("no command given");
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        put_help(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) {
        printf("ringside %s (%s MPI)\n", RINGSIDE_VERSION, rsr_mpi_built() ? "with" : "without");
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const struct rsr_command *c = commands[i];
        if (strcmp(name, c->name) != 0)
            continue;
        /* `ringside report DIR --help`: the command's help, not a usage error */
        for (int k = 2; k < argc; k++)
            if (strcmp(argv[k], "--help") == 0)
                return rsr_cmd_help(c);
        return c->run(argc - 1, argv + 1);
    }
    fprintf(stderr, "ringside: unknown command '%s'\n", name);
    return bad_usage("commands: report, diff, history, export, import-kineto, flame, symbols, symbolize, dump");
}
