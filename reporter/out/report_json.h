/* report.json (report_json.c): its keys declared in formats/report.schema.json, written from
 * the loaded inputs and the job's analyses. */
#ifndef RSR_REPORT_JSON_H
#define RSR_REPORT_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "reporter/analyse/analyse.h"
#include "reporter/load/load.h"

/* Writes report.json for the loaded inputs to f, with the figures of the
 * analyses in job (models in the inputs' order) when job is not NULL, and
 * extra (keys and values, without braces) when not NULL. */
void rsr_report_json(FILE *f, struct rsr_input *ins, int n, const struct rsr_job *job, const char *extra);

/* The groups (communicators) straggler s holds back, most waiting caused
 * first, at most cap of them into out (pointers into job's collectives);
 * returns how many. The text summary names them too. */
size_t rsr_straggler_groups(const struct rsr_job *j, const struct rsr_straggler *s,
                            const struct rsr_comm_time **out, size_t cap);

#endif
