/* Kernel summary (see kernels.h): the streaming summary (summary.c) groups
 * ops by their interned name through a table indexed by string id and
 * sorts by total time; this is its entry point for a whole model. */
#include "reporter/kernels.h"
#include "reporter/gpu_breakdown.h"
#include "reporter/summary.h"

#include <stdlib.h>
#include <string.h>

int rsr_kernels_summarize(const struct rsr_model *m, int64_t short_ns, uint64_t min_count,
                          struct rsr_kernel_summary *out)
{
    memset(out, 0, sizeof *out);
    struct rsr_summary s;
    int rc = rsr_summary_of_ops(m, RSR_KERNEL_WAIT_NS, short_ns, min_count, &s);
    if (rc == 0) {
        *out = s.kernels;
        memset(&s.kernels, 0, sizeof s.kernels);
    }
    rsr_summary_free(&s);
    return rc;
}

void rsr_kernel_summary_free(struct rsr_kernel_summary *s)
{
    free(s->stats);
    free(s->short_names);
    s->stats = NULL;
    s->short_names = NULL;
    s->n = s->n_short_names = 0;
}
