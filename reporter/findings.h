/* Findings: the named patterns a job shows, each with its evidence
 * (numbers, ranks, times) and the advice that goes with it: exposed
 * communication, checkpoint stall, many short kernels, host-bound launches,
 * a straggler rank, too many syncs, memory churn, long GPU idle, data
 * loading. Thresholds are below in findings.c. */
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
    /* An upper bound on the share of the job's step time (its wall time
     * without steps) fixing it would give back, in %: the un-hidden
     * transfer, the wait one rank causes, the checkpoint stall, the GPU's
     * idle waiting for the host... Findings are listed by it, largest
     * first. Negative: not measured (listed last). */
    double recoverable_pct;
};

struct rsr_job;

/* Fills job->findings from the analyses already in job. Returns 0, or -1
 * when out of memory. */
int rsr_findings_make(struct rsr_job *job);

const char *rsr_severity_name(int sev);

#endif
