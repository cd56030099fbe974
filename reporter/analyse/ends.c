/* Files that end early (see ends.h): each model's own end against the
 * job's, read from how its source ended (load.c sets unclosed). */
#include "reporter/analyse/ends.h"

#include <stdlib.h>
#include <string.h>

double rsr_ends_covers_pct(int64_t end_ns, int64_t job_start_ns, int64_t job_end_ns)
{
    if (job_end_ns <= job_start_ns)
        return 0;
    double pct = 100.0 * (double)(end_ns - job_start_ns) / (double)(job_end_ns - job_start_ns);
    return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

static int ends_early(const struct rsr_model *m, int64_t job_end_ns)
{
    if (!m->wall_end_ns || m->unclosed == RSR_CLOSED)
        return 0;
    return m->unclosed == RSR_CUT_SHORT || job_end_ns - m->wall_end_ns > m->flush_ns;
}

int rsr_ends_find(struct rsr_model *const *models, size_t n, int64_t job_start_ns, int64_t job_end_ns,
                  struct rsr_ends *out)
{
    memset(out, 0, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        models[i]->early_end_ns = 0;
        k += ends_early(models[i], job_end_ns);
    }
    if (!k)
        return 0;
    out->list = calloc(k, sizeof *out->list);
    if (!out->list)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct rsr_model *m = models[i];
        if (!ends_early(m, job_end_ns))
            continue;
        struct rsr_early_end *e = &out->list[out->n++];
        e->model = i;
        e->rank = m->rank;
        e->end_ns = m->wall_end_ns;
        e->ends_s = (double)(m->wall_end_ns - job_start_ns) / 1e9;
        e->covers_pct = rsr_ends_covers_pct(m->wall_end_ns, job_start_ns, job_end_ns);
        e->unclosed = m->unclosed;
        m->early_end_ns = m->wall_end_ns;
    }
    return 0;
}

void rsr_ends_free(struct rsr_ends *e)
{
    free(e->list);
    memset(e, 0, sizeof *e);
}
