/* GPU time breakdown of one process (see gpu_breakdown.h): one pass over
 * the start-ordered ops merges each class into disjoint intervals, the
 * communication and compute intervals are intersected, and a second pass
 * walks each stream's ops to classify the gaps between them. */
#include "reporter/gpu_breakdown.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct interval {
    int64_t start, end;
};

/* Merges the ops whose class is in mask (bit 1 << class), which come in
 * start order, into disjoint intervals; stores them in out when out is not
 * NULL (room for m->n_ops) and their count in *n_out. Returns their total
 * length. Touching intervals merge, as they do in HTA. */
static int64_t merge_classes(const struct rsr_model *m, unsigned mask, struct interval *out, size_t *n_out)
{
    int64_t total = 0;
    size_t n = 0;
    struct interval cur = { 0, 0 };
    bool open = false;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        if (!(mask & (1u << op->cls)))
            continue;
        if (open && op->start_ns <= cur.end) {
            if (op->end_ns > cur.end)
                cur.end = op->end_ns;
            continue;
        }
        if (open) {
            total += cur.end - cur.start;
            if (out)
                out[n] = cur;
            n++;
        }
        cur = (struct interval){ op->start_ns, op->end_ns };
        open = true;
    }
    if (open) {
        total += cur.end - cur.start;
        if (out)
            out[n] = cur;
        n++;
    }
    if (n_out)
        *n_out = n;
    return total;
}

/* Total length of the intersection of two sorted disjoint interval lists. */
static int64_t intersect(const struct interval *a, size_t na, const struct interval *b, size_t nb)
{
    int64_t total = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t s = a[i].start > b[j].start ? a[i].start : b[j].start;
        int64_t e = a[i].end < b[j].end ? a[i].end : b[j].end;
        if (e > s)
            total += e - s;
        if (a[i].end < b[j].end)
            i++;
        else
            j++;
    }
    return total;
}

/* Per-stream state while walking the ops. */
struct stream_walk {
    struct rsr_stream_idle idle;
    int64_t prev_end;
};

static int cmp_stream(const void *pa, const void *pb)
{
    const struct rsr_stream_idle *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

/* Fills b->streams; the walk keeps the previous op's end on each stream, as
 * HTA compares with the op just before, not the latest end so far. */
static int stream_idle(const struct rsr_model *m, int64_t kernel_wait_ns, struct rsr_gpu_breakdown *b)
{
    struct stream_walk *w = NULL;
    size_t n = 0, cap = 0, last = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        /* Few streams, and runs of ops on one: try the last one first. */
        size_t k = last;
        if (k >= n || w[k].idle.stream != op->stream || w[k].idle.device != op->device)
            for (k = 0; k < n; k++)
                if (w[k].idle.stream == op->stream && w[k].idle.device == op->device)
                    break;
        if (k == n) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                struct stream_walk *nw = realloc(w, cap * sizeof *nw);
                if (!nw) {
                    free(w);
                    return -1;
                }
                w = nw;
            }
            memset(&w[n], 0, sizeof w[n]);
            w[n].idle.device = op->device;
            w[n].idle.stream = op->stream;
            n++;
        } else {
            struct rsr_stream_idle *s = &w[k].idle;
            int64_t gap = op->start_ns - w[k].prev_end;
            /* Work on one stream runs in order; an overlap is clock noise,
             * not negative idle time. */
            if (gap < 0)
                gap = 0;
            const struct rsr_launch *l = rsr_model_find_launch(m, op->correlation);
            if (l && l->start_ns > w[k].prev_end)
                s->host_wait_ns += gap;
            else if (gap < kernel_wait_ns)
                s->kernel_wait_ns += gap;
            else
                s->other_ns += gap;
        }
        w[k].idle.ops++;
        w[k].prev_end = op->end_ns;
        last = k;
    }
    b->streams = n ? malloc(n * sizeof *b->streams) : NULL;
    if (n && !b->streams) {
        free(w);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        b->streams[k] = w[k].idle;
        b->host_wait_ns += w[k].idle.host_wait_ns;
        b->kernel_wait_ns += w[k].idle.kernel_wait_ns;
        b->other_idle_ns += w[k].idle.other_ns;
    }
    b->n_streams = n;
    free(w);
    if (n > 1)
        qsort(b->streams, n, sizeof *b->streams, cmp_stream);
    return 0;
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

int rsr_gpu_breakdown_compute(const struct rsr_model *m, int64_t kernel_wait_ns,
                              struct rsr_gpu_breakdown *out)
{
    memset(out, 0, sizeof *out);
    if (m->n_ops == 0)
        return 0;
    struct interval *comp = malloc(m->n_ops * sizeof *comp);
    struct interval *comm = malloc(m->n_ops * sizeof *comm);
    if (!comp || !comm) {
        free(comp);
        free(comm);
        return -1;
    }
    size_t ncomp, ncomm;
    out->start_ns = m->ops[0].start_ns;
    for (size_t i = 0; i < m->n_ops; i++)
        if (m->ops[i].end_ns > out->end_ns)
            out->end_ns = m->ops[i].end_ns;
    out->span_ns = out->end_ns - out->start_ns;
    out->busy_ns = merge_classes(m, ~0u, NULL, NULL);
    out->idle_ns = out->span_ns - out->busy_ns;
    out->compute_ns = merge_classes(m, 1u << RSR_GPU_COMPUTE, comp, &ncomp);
    out->non_compute_ns = out->span_ns - out->compute_ns - out->idle_ns;
    out->comm_ns = merge_classes(m, 1u << RSR_GPU_COMM, comm, &ncomm);
    out->memcpy_ns = merge_classes(m, 1u << RSR_GPU_MEMCPY | 1u << RSR_GPU_MEMSET, NULL, NULL);
    out->overlap_ns = intersect(comm, ncomm, comp, ncomp);
    out->exposed_comm_ns = out->comm_ns - out->overlap_ns;
    free(comp);
    free(comm);

    out->idle_pct = pct(out->idle_ns, out->span_ns);
    out->compute_pct = pct(out->compute_ns, out->span_ns);
    out->non_compute_pct = pct(out->non_compute_ns, out->span_ns);
    out->comm_pct = pct(out->comm_ns, out->span_ns);
    out->memcpy_pct = pct(out->memcpy_ns, out->span_ns);
    out->comm_comp_overlap_pct = pct(out->overlap_ns, out->comm_ns);
    out->exposed_comm_pct = pct(out->exposed_comm_ns, out->span_ns);
    if (stream_idle(m, kernel_wait_ns, out) < 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

void rsr_gpu_breakdown_free(struct rsr_gpu_breakdown *b)
{
    free(b->streams);
    b->streams = NULL;
    b->n_streams = 0;
}
