/* `ringside dump`: a trace file as JSON lines (see dump.c). */
#ifndef RSR_DUMP_H
#define RSR_DUMP_H

#include <stdio.h>

/* Writes every readable record of the trace at path to out. Damaged or
 * cut-short parts are named on stderr (file and offset). Returns the exit
 * status: 0 when the whole file was read, 1 otherwise. */
int rsr_dump(const char *path, FILE *out);

#endif
