/* What the commands share: their help and usage errors, their getopt_long,
 * and the values of their options (see command.h). */
#include "reporter/cmd/command.h"
#include "reporter/load/discover.h"
#include "reporter/load/runs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char footer[] =
    "Traces are written by the agent: LD_PRELOAD=/path/to/libagent.so PROGRAM...\n"
    "Exit status: 0 done, 1 bad input or failure, 2 usage.\n";

/* The command's lines with "usage: ringside" before the first. */
static void put_usage(FILE *f, const struct rsr_command *c)
{
    const char *u = c->usage;
    while (*u == ' ')
        u++;
    fprintf(f, "usage: ringside %s\n%s", u, footer);
}

int rsr_cmd_usage(const struct rsr_command *c, const char *what)
{
    fprintf(stderr, "ringside: %s\n", what);
    put_usage(stderr, c);
    return 2;
}

int rsr_cmd_help(const struct rsr_command *c)
{
    put_usage(stdout, c);
    return 0;
}

int rsr_cmd_getopt(const struct rsr_command *c, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, int *first, const char *missing)
{
    /* ':' first: a missing value is told apart from an unknown option */
    char spec[64];
    snprintf(spec, sizeof spec, ":%s", shortopts);
    opterr = 0;
    int ch = getopt_long(argc, argv, spec, longopts, NULL);
    if (ch == -1) {
        *first = optind;
        return -1;
    }
    if (ch == '?' || ch == ':') {
        /* the option as given: getopt has moved past it (an unknown short
         * option inside a cluster: by its letter) */
        char letter[3] = { '-', (char)optopt, 0 };
        const char *opt = ch == '?' && optopt > 0 && optopt < 128 ? letter
                        : optind >= 1 && optind <= argc ? argv[optind - 1] : "?";
        if (missing)
            fprintf(stderr, "ringside: %s: %s: %s\n", c->name, missing, opt);
        else if (ch == ':')
            fprintf(stderr, "ringside: %s: %s needs a value\n", c->name, opt);
        else
            fprintf(stderr, "ringside: %s: unknown option %s\n", c->name, opt);
        return '?';
    }
    return ch;
}

int rsr_parse_ranks(const char *s, int *r, int max, int *n)
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

int rsr_window_option(const char *opt, const char *v, int *has_from, double *from_s, int *has_to, double *to_s)
{
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v || !isfinite(x) || x < 0)
        return -1;
    if (strcmp(opt, "--from") == 0)
        *has_from = 1, *from_s = x;
    else
        *has_to = 1, *to_s = x;
    return 0;
}

int rsr_steps_option(const char *v, size_t *first, size_t *last)
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

int rsr_run_traces(char **paths, int n, char ***files)
{
    int nfiles = rsr_find_traces(paths, n, files);
    if (nfiles > 0 && rsr_runs_pick(n, *files, &nfiles) != 0) {
        rsr_traces_free(*files, nfiles);
        *files = NULL;
        return -1;
    }
    return nfiles;
}

void rsr_traces_free(char **files, int n)
{
    for (int i = 0; i < n; i++)
        free(files[i]);
    free(files);
}
