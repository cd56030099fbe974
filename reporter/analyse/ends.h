/* Trace files that end early (a rank killed, a full disk, a copy cut
 * short): which processes' records stop before the job's end, where, and
 * how much of the run they cover. The report says so (report.json, the
 * page's banner, the text summary), and what compares ranks by their
 * totals (the lanes' slowest, the page's per-rank collective wait) leaves
 * such a file out: it waited less only for lack of time. Collectives after
 * a file's end have no record of its rank, so it is late for none of them.
 * Reads aligned models and the job's span (storage.h). */
#ifndef RSR_ENDS_H
#define RSR_ENDS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

/* A file that ends early. */
struct rsr_early_end {
    size_t model;               /* index in the models given */
    int32_t rank;               /* -1: not a rank */
    int64_t end_ns;             /* its last record's end, job time line */
    double ends_s;              /* end_ns from the job's start */
    double covers_pct;          /* ends_s over the job's wall time */
    uint8_t unclosed;           /* enum rsr_unclosed: cut short, or no end mark */
};

struct rsr_ends {
    struct rsr_early_end *list; /* in the models' order */
    size_t n;
};

/* Finds the files that end early among models[0..n) and sets each one's
 * early_end_ns (0 on the others). A file ends early when it was cut short
 * inside a frame, or when it has no end mark and its last record is more
 * than its agent's flush interval before the job's end (a job killed as a
 * whole leaves every file up to one flush interval short, and none of
 * them ended early). The job runs from job_start_ns to job_end_ns.
 * Returns 0, or -1 when out of memory (then *out holds nothing to free,
 * and no model is marked). */
int rsr_ends_find(struct rsr_model *const *models, size_t n, int64_t job_start_ns, int64_t job_end_ns,
                  struct rsr_ends *out);

void rsr_ends_free(struct rsr_ends *e);

/* The share of the job (job_start_ns to job_end_ns) up to end_ns, in %,
 * within 0..100; 0 for a job of no length. */
double rsr_ends_covers_pct(int64_t end_ns, int64_t job_start_ns, int64_t job_end_ns);

#endif
