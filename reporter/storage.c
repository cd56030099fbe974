/* Checkpoints and data loading (see storage.h). Per process, I/O calls are
 * grouped by path: a path written with no read is a checkpoint file, and
 * each open of it starts a burst; bursts of one process close in time are
 * merged. GPU idle inside a window comes from the merged GPU intervals. */
#include "reporter/storage.h"
#include "formats/trace.h"

#include <stdlib.h>
#include <string.h>

int rsr_gpu_busy(const struct rsr_model *m, int64_t (**out)[2], size_t *n)
{
    int64_t (*b)[2] = malloc((m->n_ops ? m->n_ops : 1) * sizeof *b);
    if (!b)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        if (k && op->start_ns <= b[k - 1][1]) {
            if (op->end_ns > b[k - 1][1])
                b[k - 1][1] = op->end_ns;
        } else {
            b[k][0] = op->start_ns;
            b[k][1] = op->end_ns;
            k++;
        }
    }
    *out = b;
    *n = k;
    return 0;
}

int64_t rsr_idle_within(int64_t (*b)[2], size_t n, int64_t s, int64_t e, int64_t lo, int64_t hi)
{
    if (s < lo)
        s = lo;
    if (e > hi)
        e = hi;
    if (e <= s)
        return 0;
    /* first interval ending after s */
    size_t a = 0, z = n;
    while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (b[mid][1] <= s)
            a = mid + 1;
        else
            z = mid;
    }
    int64_t busy = 0;
    for (size_t i = a; i < n && b[i][0] < e; i++) {
        int64_t x = b[i][0] > s ? b[i][0] : s, y = b[i][1] < e ? b[i][1] : e;
        if (y > x)
            busy += y - x;
    }
    return (e - s) - busy;
}

/* I/O calls with a path, in (path, start) order: io is in start order, so
 * the index breaks ties. */
static int cmp_io_path(const void *pa, const void *pb, void *arg)
{
    const struct rsr_io *sort_io = arg;
    size_t x = *(const size_t *)pa, y = *(const size_t *)pb;
    if (sort_io[x].path != sort_io[y].path)
        return sort_io[x].path < sort_io[y].path ? -1 : 1;
    return (x > y) - (x < y);
}

static int cmp_ckpt(const void *pa, const void *pb)
{
    const struct rsr_checkpoint *a = pa, *b = pb;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

static int is_open(uint8_t op)
{
    return op == RSF_IO_OPEN || op == RSF_IO_OPENAT || op == RSF_IO_CREAT || op == RSF_IO_FOPEN;
}

void rsr_storage_free(struct rsr_storage *s)
{
    free(s->ckpts);
    free(s->loading);
    memset(s, 0, sizeof *s);
}

static int push_ckpt(struct rsr_storage *out, size_t *cap, const struct rsr_checkpoint *c)
{
    if (out->n_ckpts == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        void *q = realloc(out->ckpts, nc * sizeof *out->ckpts);
        if (!q)
            return -1;
        out->ckpts = q;
        *cap = nc;
    }
    out->ckpts[out->n_ckpts++] = *c;
    return 0;
}

/* Finds the bursts of model mi and appends them to out: the calls are
 * grouped by path (sorted, so this is n log n however many files there
 * are); a path written with enough bytes and never read is a checkpoint
 * file, and each open of it starts a burst. */
static int model_checkpoints(const struct rsr_model *m, size_t mi, struct rsr_storage *out, size_t *cap)
{
    size_t n = 0;
    size_t *idx = malloc((m->n_io ? m->n_io : 1) * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < m->n_io; i++)
        if (m->io[i].path)
            idx[n++] = i;
    qsort_r(idx, n, sizeof *idx, cmp_io_path, m->io);
    size_t first_new = out->n_ckpts;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        uint64_t rd = 0, wr = 0;
        while (b < n && m->io[idx[b]].path == m->io[idx[a]].path) {
            const struct rsr_io *io = &m->io[idx[b]];
            if (io->dir == RSF_DIR_READ)
                rd += io->bytes;
            else if (io->dir == RSF_DIR_WRITE)
                wr += io->bytes;
            b++;
        }
        if (!rd && wr >= RSR_CKPT_MIN_BYTES) {
            struct rsr_checkpoint cur = { 0 };
            int have = 0;
            for (size_t k = a; k <= b; k++) {
                const struct rsr_io *io = k < b ? &m->io[idx[k]] : NULL;
                if (!io || (is_open(io->op) && have)) {
                    if (have && cur.bytes >= RSR_CKPT_MIN_BYTES && push_ckpt(out, cap, &cur) != 0) {
                        free(idx);
                        return -1;
                    }
                    have = 0;
                    if (!io)
                        break;
                }
                if (!have) {
                    cur = (struct rsr_checkpoint){ mi, m->rank, io->start_ns, io->end_ns, 0, 1, 0 };
                    have = 1;
                }
                if (io->end_ns > cur.end_ns)
                    cur.end_ns = io->end_ns;
                if (io->dir == RSF_DIR_WRITE)
                    cur.bytes += io->bytes;
            }
        }
        a = b;
    }
    free(idx);
    /* merge this process's bursts that overlap or nearly touch */
    size_t nn = out->n_ckpts - first_new;
    struct rsr_checkpoint *c = out->ckpts + first_new;
    if (nn > 1)
        qsort(c, nn, sizeof *c, cmp_ckpt);
    size_t w = 0;
    for (size_t i = 0; i < nn; i++) {
        if (w && c[i].start_ns <= c[w - 1].end_ns + RSR_CKPT_MERGE_NS) {
            if (c[i].end_ns > c[w - 1].end_ns)
                c[w - 1].end_ns = c[i].end_ns;
            c[w - 1].bytes += c[i].bytes;
            c[w - 1].files += c[i].files;
        } else {
            c[w++] = c[i];
        }
    }
    out->n_ckpts = first_new + w;
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
        size_t before = out->n_ckpts;
        if (model_checkpoints(m, i, out, &cap) != 0)
            goto oom;
        int64_t (*busy)[2];
        size_t nb;
        if (rsr_gpu_busy(m, &busy, &nb) != 0)
            goto oom;
        int64_t lo = nb ? busy[0][0] : 0, hi = nb ? busy[nb - 1][1] : 0;
        for (size_t k = before; k < out->n_ckpts; k++)
            out->ckpts[k].gpu_stall_ns = rsr_idle_within(busy, nb, out->ckpts[k].start_ns,
                                                         out->ckpts[k].end_ns, lo, hi);
        /* data loading: reads of paths not written as checkpoints, merged */
        struct rsr_data_loading *dl = &out->loading[i];
        int64_t s = 0, e = 0;
        int open = 0;
        for (size_t k = 0; k <= m->n_io; k++) {
            const struct rsr_io *io = k < m->n_io ? &m->io[k] : NULL;
            if (io && io->dir != RSF_DIR_READ)
                continue;
            if (io)
                dl->read_bytes += io->bytes;
            if (io && open && io->start_ns <= e) {
                if (io->end_ns > e)
                    e = io->end_ns;
                continue;
            }
            if (open) {
                dl->read_ns += e - s;
                dl->read_idle_ns += rsr_idle_within(busy, nb, s, e, lo, hi);
            }
            if (!io)
                break;
            s = io->start_ns, e = io->end_ns, open = 1;
        }
        dl->pct = hi > lo ? 100.0 * (double)dl->read_idle_ns / (double)(hi - lo) : 0;
        free(busy);
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
