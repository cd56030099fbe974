/* `ringside symbolize`: addresses of an ELF file, named (symbolize.h). */
#include "reporter/cmd/command.h"
#include "reporter/load/symbolize.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static int run(int argc, char **argv);

const struct rsr_command rsr_cmd_symbolize = {
    "symbolize",
    "  symbolize FILE ADDR...\n"
    "        function, inlined callers and file:line of addresses of an ELF file\n"
    "        (innermost first, as addr2line -a -f -i prints them)\n",
    run,
};

static int run(int argc, char **argv)
{
    if (argc < 3)
        return rsr_cmd_usage(&rsr_cmd_symbolize, "symbolize takes an ELF file and addresses");
    struct rsr_sym *s = rsr_sym_new(0);
    if (!s)
        return 1;
    int file = rsr_sym_file(s, argv[1], NULL), rc = 0;
    if (rsr_sym_file_state(s, file) != RSR_SYM_FILE_OK) {
        rsr_sym_free(s);
        return 1;
    }
    for (int i = 2; i < argc; i++) {
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
