/* `ringside dump`: every record of one trace file (dump.h). */
#include "reporter/cmd/command.h"
#include "reporter/out/dump.h"

#include <stdio.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_dump = {
    "dump",
    "  dump FILE\n"
    "        every record of one trace file as a JSON object per line\n",
    run,
};

static int run(int argc, char **argv)
{
    if (argc != 2)
        return rsr_cmd_usage(&rsr_cmd_dump, "dump takes one trace file");
    return rsr_dump(argv[1], stdout);
}
