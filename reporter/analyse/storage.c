/* Checkpoints and data loading (see storage.h), from the process summaries
 * (summary.c finds the bursts: each open of a path written with no read
 * starts one); bursts of one process close in time are merged here. */
#include "reporter/analyse/storage.h"
#include "reporter/load/summary.h"
#include "reporter/base/array.h"

#include <stdlib.h>
#include <string.h>

static int cmp_ckpt(const void *pa, const void *pb)
{
    const struct rsr_checkpoint *a = pa, *b = pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

void rsr_storage_free(struct rsr_storage *s)
{
    free(s->ckpts);
    free(s->loading);
    memset(s, 0, sizeof *s);
}

static int push_ckpt(struct rsr_storage *out, size_t *cap, const struct rsr_checkpoint *c)
{
    if (RSR_GROW(out->ckpts, *cap, out->n_ckpts + 1, 16) != 0)
        return -1;
    out->ckpts[out->n_ckpts++] = *c;
    return 0;
}

/* The checkpoints of model mi from its summary's bursts (in start order):
 * bursts that overlap or nearly touch are one checkpoint (shards), whose
 * GPU stall is the idle time from its first burst's start to the end of
 * the burst that ends last. */
static int model_checkpoints(const struct rsr_summary *sm, const struct rsr_model *m, size_t mi,
                             struct rsr_storage *out, size_t *cap)
{
    const struct rsr_burst *first = NULL, *last = NULL;
    struct rsr_checkpoint cur = { 0 };
    for (size_t i = 0; i <= sm->n_bursts; i++) {
        const struct rsr_burst *b = i < sm->n_bursts ? &sm->bursts[i] : NULL;
        if (b && first && b->start_ns <= cur.end_ns + RSR_CKPT_MERGE_NS) {
            if (b->end_ns > cur.end_ns)
                cur.end_ns = b->end_ns, last = b;
            cur.bytes += b->bytes;
            cur.files++;
            continue;
        }
        if (first) {
            cur.gpu_stall_ns = rsr_summary_idle_within(sm, first, last);
            if (push_ckpt(out, cap, &cur) != 0)
                return -1;
        }
        if (!b)
            break;
        first = last = b;
        int child = m->rank < 0 && m->role == RSR_ROLE_CHILD && m->parent_rank >= 0;
        cur = (struct rsr_checkpoint){ mi, child ? m->parent_rank : m->rank, b->start_ns, b->end_ns, b->bytes, 1, 0,
                                       m->pid, (uint8_t)child };
    }
    return 0;
}

/* Union length of sorted-by-start intervals given as checkpoints. */
static int64_t union_len(const struct rsr_checkpoint *c, size_t n)
{
    int64_t total = 0, s = 0, e = 0;
    int open = 0;
    for (size_t i = 0; i < n; i++) {
        if (open && c[i].start_ns <= e) {
            if (c[i].end_ns > e)
                e = c[i].end_ns;
            continue;
        }
        if (open)
            total += e - s;
        s = c[i].start_ns, e = c[i].end_ns, open = 1;
    }
    return open ? total + e - s : total;
}

int rsr_storage_analyse(struct rsr_model *const *models, size_t n, struct rsr_storage *out)
{
    memset(out, 0, sizeof *out);
    out->loading = calloc(n ? n : 1, sizeof *out->loading);
    out->n_models = n;
    if (!out->loading)
        return -1;
    size_t cap = 0;
    int any_rank = 0;
    for (size_t i = 0; i < n; i++)
        any_rank |= models[i]->rank >= 0;
    for (size_t i = 0; i < n; i++) {
        const struct rsr_model *m = models[i];
        if (!any_rank || m->rank >= 0) {
            if (m->wall_start_ns && (!out->job_start_ns || m->wall_start_ns < out->job_start_ns))
                out->job_start_ns = m->wall_start_ns;
            if (m->wall_end_ns > out->job_end_ns)
                out->job_end_ns = m->wall_end_ns;
        }
        const struct rsr_summary *sm = rsr_model_summary(models[i]);
        if (!sm || (m->compile_kind == RSR_COMPILE_NOT && model_checkpoints(sm, m, i, out, &cap) != 0))
            goto oom;
        out->loading[i] = sm->loading;
    }
    if (out->n_ckpts > 1)
        qsort(out->ckpts, out->n_ckpts, sizeof *out->ckpts, cmp_ckpt);
    out->ckpt_union_ns = union_len(out->ckpts, out->n_ckpts);
    int64_t wall = out->job_end_ns - out->job_start_ns;
    out->checkpoint_pct = wall > 0 ? 100.0 * (double)out->ckpt_union_ns / (double)wall : 0;
    return 0;
oom:
    rsr_storage_free(out);
    return -1;
}
