/* report.json (report_json.c): its keys declared in formats/report.schema.json, written from
 * the loaded inputs and the job's analyses. */
#ifndef RSR_REPORT_JSON_H
#define RSR_REPORT_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "reporter/analyse/analyse.h"
#include "reporter/load/load.h"

struct rsr_jw;

/* Writes the caller's own keys into report.json's top-level object, after
 * the analyses' (report.c: the lanes, the watch, the symbols, the
 * reporter), through w; it may change the object's style (json.h). */
typedef void rsr_report_keys_fn(struct rsr_jw *w, void *arg);

/* Writes report.json for the loaded inputs to f, with the figures of the
 * analyses in job (models in the inputs' order) when job is not NULL, and
 * the keys keys(w, arg) writes when keys is not NULL. Returns 0, or -1
 * when out of memory or a write to f failed. */
int rsr_report_json(FILE *f, struct rsr_input *ins, int n, const struct rsr_job *job, rsr_report_keys_fn *keys,
                    void *arg);

/* The groups (communicators) straggler s holds back, most waiting caused
 * first, at most cap of them into out (pointers into job's collectives);
 * returns how many. The text summary names them too. */
size_t rsr_straggler_groups(const struct rsr_job *j, const struct rsr_straggler *s,
                            const struct rsr_comm_time **out, size_t cap);

#endif
