/* Findings: the named patterns a job shows, each with its evidence
 * (numbers, ranks, times) and the advice that goes with it: exposed
 * communication, checkpoint stall, many short kernels, host-bound launches,
 * a straggler rank, too many syncs, memory churn, long GPU idle, data
 * loading. Thresholds are below in findings.c.
 *
 * Where the job has steps, a finding is a cause on the steps' critical
 * path (critpath.h) or context: each cause is claimed by one finding at
 * most (the one that names it most closely: a straggler whose lateness is
 * that cause, before the job-wide pattern), whose gain is what removing the
 * cause gives back; a cause on the path that no pattern names is a finding
 * of its own; symptoms (GPU idle, slow steps, low SM activity, a busy node
 * CPU, a drifting step time) stay as context with no gain. So no two
 * findings claim the same time and their gains never add up to more than
 * the step. */
#ifndef RSR_FINDINGS_H
#define RSR_FINDINGS_H

#include <stddef.h>

enum rsr_severity { RSR_SEV_INFO = 0, RSR_SEV_WARNING = 1, RSR_SEV_CRITICAL = 2 };

struct rsr_finding {
    const char *id;             /* stable: "exposed_communication"... */
    int severity;               /* enum rsr_severity */
    const char *title;
    char evidence[512];
    const char *advice;
    /* The share of the job's time per step removing its cause gives back,
     * in % (critpath.h's what-if); without steps an upper bound on the
     * share of the wall time fixing it would give back. Findings are
     * listed by it, largest first. Negative: context, or not measured
     * (listed last). */
    double recoverable_pct;
    const char *cause;          /* its critical-path cause (rsr_cp_part_name); NULL: none */
    double whatif_ms;           /* the time per step without the cause; < 0: not known */
};

struct rsr_job;

/* Fills job->findings from the analyses already in job. Returns 0, or -1
 * when out of memory. */
int rsr_findings_make(struct rsr_job *job);

const char *rsr_severity_name(int sev);

/* The report's headline, from its first finding, into buf (n bytes): its
 * cause, the share of the step time removing it gives back and the time
 * per step without it ("checkpoint writes: 93% of the step time; without
 * them about 3.40 ms/step instead of 47.5 ms/step"), or, without steps,
 * what fixing it would give back at most. The terminal, report.json's
 * "headline" and the page say the same. Returns 0 (buf "") when the first
 * finding has no gain. */
int rsr_findings_headline(const struct rsr_job *j, char *buf, size_t n);

#endif
