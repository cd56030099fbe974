/* Kernel summary (see kernels.h): ops are grouped by their interned name
 * through a table indexed by string id, so grouping is one pass with no
 * hashing, then sorted by total time. */
#include "reporter/kernels.h"

#include <stdlib.h>
#include <string.h>

static int cmp_total(const void *pa, const void *pb)
{
    const struct rsr_kernel_stat *a = pa, *b = pb;
    if (a->total_ns != b->total_ns)
        return a->total_ns > b->total_ns ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

static int cmp_short(const void *pa, const void *pb)
{
    const struct rsr_kernel_stat *a = *(const struct rsr_kernel_stat *const *)pa;
    const struct rsr_kernel_stat *b = *(const struct rsr_kernel_stat *const *)pb;
    if (a->short_count != b->short_count)
        return a->short_count > b->short_count ? -1 : 1;
    return (a->name > b->name) - (a->name < b->name);
}

int rsr_kernels_summarize(const struct rsr_model *m, int64_t short_ns, uint64_t min_count,
                          struct rsr_kernel_summary *out)
{
    memset(out, 0, sizeof *out);
    if (m->n_ops == 0)
        return 0;
    /* slot[name id] = 1 + index into stats, 0 for a name not seen yet. */
    size_t nnames = m->strings.n ? m->strings.n : 1;
    size_t *slot = calloc(nnames, sizeof *slot);
    struct rsr_kernel_stat *stats = malloc(m->n_ops * sizeof *stats);
    if (!slot || !stats)
        goto nomem;
    size_t n = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        int64_t dur = op->end_ns - op->start_ns;
        size_t id = op->name < nnames ? op->name : 0;
        if (slot[id] == 0) {
            memset(&stats[n], 0, sizeof stats[n]);
            stats[n].name = (uint32_t)id;
            stats[n].cls = op->cls;
            stats[n].min_ns = dur;
            slot[id] = ++n;
        }
        struct rsr_kernel_stat *s = &stats[slot[id] - 1];
        s->count++;
        s->total_ns += dur;
        if (dur < s->min_ns)
            s->min_ns = dur;
        if (dur > s->max_ns)
            s->max_ns = dur;
        if (op->cls == RSR_GPU_COMPUTE) {
            out->n_compute++;
            if (dur < short_ns) {
                s->short_count++;
                s->short_ns += dur;
                out->n_short++;
                out->short_ns += dur;
            }
        }
    }
    free(slot);
    slot = NULL;
    for (size_t i = 0; i < n; i++)
        stats[i].mean_ns = (double)stats[i].total_ns / (double)stats[i].count;
    qsort(stats, n, sizeof *stats, cmp_total);
    out->stats = stats;
    out->n = n;

    size_t ncand = 0;
    for (size_t i = 0; i < n; i++)
        if (stats[i].short_count >= min_count && stats[i].short_count > 0)
            ncand++;
    if (ncand) {
        out->short_names = malloc(ncand * sizeof *out->short_names);
        if (!out->short_names)
            goto nomem;
        for (size_t i = 0; i < n; i++)
            if (stats[i].short_count >= min_count && stats[i].short_count > 0)
                out->short_names[out->n_short_names++] = &stats[i];
        qsort(out->short_names, ncand, sizeof *out->short_names, cmp_short);
    }
    return 0;

nomem:
    free(slot);
    free(stats);
    memset(out, 0, sizeof *out);
    return -1;
}

void rsr_kernel_summary_free(struct rsr_kernel_summary *s)
{
    free(s->stats);
    free(s->short_names);
    s->stats = NULL;
    s->short_names = NULL;
    s->n = s->n_short_names = 0;
}
