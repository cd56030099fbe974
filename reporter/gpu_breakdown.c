/* GPU time breakdown of one process (see gpu_breakdown.h): the streaming
 * summary (summary.c) computes it in one pass over the start-ordered ops;
 * this is its entry point for a whole model. */
#include "reporter/gpu_breakdown.h"
#include "reporter/summary.h"

#include <stdlib.h>
#include <string.h>

int rsr_gpu_breakdown_compute(const struct rsr_model *m, int64_t kernel_wait_ns,
                              struct rsr_gpu_breakdown *out)
{
    memset(out, 0, sizeof *out);
    struct rsr_summary s;
    int rc = rsr_summary_of_ops(m, kernel_wait_ns, RSR_SHORT_KERNEL_NS, RSR_SHORT_KERNEL_MIN_COUNT, &s);
    if (rc == 0) {
        *out = s.gpu;
        memset(&s.gpu, 0, sizeof s.gpu);
    }
    rsr_summary_free(&s);
    return rc;
}

const struct rsr_stream_idle *rsr_gpu_busiest_stream(const struct rsr_gpu_breakdown *b)
{
    const struct rsr_stream_idle *best = NULL;
    for (size_t i = 0; i < b->n_streams; i++)
        if (!best || b->streams[i].ops > best->ops)
            best = &b->streams[i];
    return best;
}

void rsr_gpu_breakdown_free(struct rsr_gpu_breakdown *b)
{
    free(b->streams);
    b->streams = NULL;
    b->n_streams = 0;
}
