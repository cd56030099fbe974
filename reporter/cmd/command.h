/* The commands of `ringside`: each in a file of its own (cmd_NAME.c) with
 * its options (getopt_long) and its lines of the help; main.c only picks
 * one. A command calls the library below it (reporter/ROOMS), never another
 * command. Exit status: 0 done, 1 bad input or failure (one line saying
 * what and where), 2 usage. */
#ifndef RSR_COMMAND_H
#define RSR_COMMAND_H

#include <getopt.h>
#include <stddef.h>

struct rsr_step_pick;

struct rsr_command {
    const char *name;
    const char *usage;      /* its lines of `ringside help`, indented as there */
    int (*run)(int argc, char **argv);   /* argv[0]: the command's name */
};

extern const struct rsr_command rsr_cmd_report, rsr_cmd_diff, rsr_cmd_export, rsr_cmd_history,
    rsr_cmd_import_kineto, rsr_cmd_flame, rsr_cmd_symbols, rsr_cmd_symbolize, rsr_cmd_dump;

/* "ringside: what" and the command's usage on stderr; returns 2. */
int rsr_cmd_usage(const struct rsr_command *c, const char *what);

/* The command's help on stdout ("usage: ringside NAME ..."); returns 0. */
int rsr_cmd_help(const struct rsr_command *c);

/* getopt_long over argv[0..argc) (argv[0] the command), as every command
 * reads its options: options and operands in any order, "--" ends the
 * options, no message of getopt's own. Returns the option's val, -1 at
 * the end (argv[*first..argc) are then the operands), or '?' for an
 * unknown option or one without its value, after saying so on stderr
 * ("ringside: NAME: unknown option X", or "ringside: NAME: X needs a
 * value", or with missing set, that text). */
int rsr_cmd_getopt(const struct rsr_command *c, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, int *first, const char *missing);

/* "0,3,8-9" into r[0..*n) (at most max); -1 when it is not such a list. */
int rsr_parse_ranks(const char *s, int *r, int max, int *n);

/* --from S or --to S (opt, its value v): seconds from the job's start, a
 * finite number from 0, into *has_from and *from_s or *has_to and *to_s.
 * Returns 0, or -1 when v is not one. */
int rsr_window_option(const char *opt, const char *v, int *has_from, double *from_s, int *has_to, double *to_s);

/* "A-B" or "A" (steps from 0) into *first and *last; -1 when it is not. */
int rsr_steps_option(const char *v, size_t *first, size_t *last);

/* The trace files of the run under paths, as report takes them (one
 * path: its newest run; several: what they name, refused when that is
 * more than one run; runs.h): the count (files malloc'd), or -1 with a
 * message. */
int rsr_run_traces(char **paths, int n, char ***files);

/* Frees what rsr_run_traces gave. */
void rsr_traces_free(char **files, int n);

#endif
