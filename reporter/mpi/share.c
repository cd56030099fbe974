/* The job's files shared out among the reporter's processes and loaded
 * (share.h). The MPI calls themselves are mpi.c's; this file decides who
 * reads what and packs, sends and gathers the summaries. */
#include "reporter/mpi/share.h"
#include "reporter/load/discover.h"
#include "reporter/mpi/pack.h"
#include "reporter/load/runs.h"
#include "reporter/load/summary.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void rsr_warn_damage(const struct rsr_input *in)
{
    const struct rsr_walk *w = &in->walk;
    if (in->open_failed) {
        fprintf(stderr, "ringside: %s: %s\n", in->file, strerror(in->open_failed));
        return;
    }
    for (uint32_t i = 0; i < w->nproblems && i < RSR_MAX_PROBLEMS; i++) {
        fputs("ringside: ", stderr);
        rsr_problem_print(stderr, in->file, &w->problems[i]);
    }
    if (w->cut_short || w->nproblems)
        fprintf(stderr, "ringside: %s: %s: %" PRIu64 " of %" PRIu64 " bytes could not be read\n", in->file,
                w->cut_short ? "cut short" : "damaged", w->bad_bytes, w->file_size);
    else if (!w->saw_end)
        fprintf(stderr, "ringside: %s: no end mark (the process was killed or is still running); "
                        "every chunk was read\n", in->file);
}

/* Which process reads which file: the largest files first, each to the
 * process with the fewest bytes so far. */
struct sized {
    off_t size;
    int i;
};

/* Largest first; equal sizes in file order, so every run shares alike. */
static int cmp_sized(const void *pa, const void *pb)
{
    const struct sized *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static void share_out(char **files, int n, int nprocs, int *owner)
{
    struct sized *v = calloc((size_t)n, sizeof *v);
    off_t *load = calloc((size_t)nprocs, sizeof *load);
    if (!v || !load) {
        for (int i = 0; i < n; i++)
            owner[i] = i % nprocs;
        free(v), free(load);
        return;
    }
    for (int i = 0; i < n; i++) {
        struct stat st;
        v[i] = (struct sized){ stat(files[i], &st) == 0 ? st.st_size : 0, i };
    }
    qsort(v, (size_t)n, sizeof *v, cmp_sized);
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int p = 1; p < nprocs; p++)
            if (load[p] < load[best])
                best = p;
        owner[v[i].i] = best;
        load[best] += v[i].size + 1;
    }
    free(v);
    free(load);
}

/* Streams this process's share of the files (all of them when it is the
 * only one) into ins[] at their places, and its flame trees into J->fls.
 * Returns 0, or -1 when out of memory. */
static int load_share(struct rsr_loaded *J, const struct rsr_mpi *mp, const int *owner, int quiet, int lines)
{
    int mine = 0;
    for (int i = 0; i < J->n; i++)
        mine += owner[i] == mp->rank;
    char **files = calloc((size_t)mine + 1, sizeof *files);
    struct rsr_input *ins = calloc((size_t)mine + 1, sizeof *ins);
    if (!files || !ins) {
        free(files), free(ins);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < J->n; i++)
        if (owner[i] == mp->rank)
            files[k++] = J->files[i];
    /* each file read once: its chunks go to its summary and its flame feed */
    struct rsr_flame_feed **feeds = J->fls ? calloc((size_t)mine + 1, sizeof *feeds) : NULL;
    struct rsr_proc_waits *waits = J->fls ? calloc((size_t)mine + 1, sizeof *waits) : NULL;
    if (J->fls && (!feeds || !waits)) {
        free(files), free(ins), free(feeds), free(waits);
        return -1;
    }
    for (k = 0; feeds && k < mine; k++)
        feeds[k] = rsr_flame_feed_new(quiet, lines);
    rsr_inputs_load_also(ins, files, mine, mp->threads, mp->size == 1 && isatty(STDERR_FILENO) && J->n > 1, 1,
                         feeds ? rsr_flame_feed_chunk : NULL, (void *const *)feeds);
    k = 0;
    for (int i = 0; i < J->n; i++)
        if (owner[i] == mp->rank)
            J->ins[i] = ins[k++];
    if (J->fls) {
        rsr_flame_load_feeds(J->fls, feeds, mine, quiet, lines, waits);
        for (k = 0; k < mine; k++)
            rsr_flame_feed_free(feeds[k]);
        free(feeds);
        k = 0;
        for (int i = 0; i < J->n; i++)
            if (owner[i] == mp->rank) {
                if (J->ins[i].model)
                    J->ins[i].model->waits = waits[k];
                k++;
            }
        free(waits);
    }
    free(files);
    free(ins);
    return 0;
}

/* What a reporter process sends the first: one message per input it
 * loaded (its index, then the input), so that neither end holds more than
 * one input's packed summary at a time, then a last one (LAST, its peak
 * memory, its flame trees). */
#define LAST UINT64_MAX

/* The other processes' inputs and flame trees into J (on the first
 * process), each summary's tuples spilled as they would be had it loaded
 * the file itself. Returns 0, or 1 with a message. */
static int gather_shares(struct rsr_loaded *J, const struct rsr_mpi *mp, const int *owner)
{
    struct rsr_pack b = { 0 };
    int rc = 0;
    for (int left = mp->size - 1; left > 0;) {
        int from = -1;
        if (rsr_mpi_recv(mp, &b, &from) != 0) {
            fprintf(stderr, "ringside: out of memory, or MPI failed, receiving a reporter process's summaries\n");
            rsr_pack_free(&b);
            return 1;
        }
        struct rsr_unpack u = { b.p, b.p + b.n, 0 };
        uint64_t i = rsr_unpack_u64(&u);
        if (i == LAST) {
            double rss;
            uint64_t bits = rsr_unpack_u64(&u), nfl = rsr_unpack_u64(&u);
            memcpy(&rss, &bits, sizeof rss);
            if (rss > J->peak_rss_mb)
                J->peak_rss_mb = rss;
            for (uint64_t k = 0; k < nfl && J->fls && !u.failed; k++)
                if (rsr_unpack_flame(&u, &J->fls[k]) != 0)
                    u.failed = 1;
            left--;
        } else if (i >= (uint64_t)J->n || owner[i] != from || J->ins[i].file ||
                   rsr_unpack_input(&u, &J->ins[i]) != 0) {
            u.failed = 1;
        } else if (J->ins[i].model && J->ins[i].model->sum) {
            rsr_summary_spill(J->ins[i].model->sum);
        }
        if (u.failed || u.p != u.end) {
            fprintf(stderr, "ringside: reporter process %d sent summaries that do not read back "
                            "(out of memory, or a different ringside build)\n", from);
            rc = 1;
            break;
        }
    }
    rsr_pack_free(&b);
    for (int i = 0; !rc && i < J->n; i++)
        if (!J->ins[i].file) {
            fprintf(stderr, "ringside: reporter process %d did not send %s\n", owner[i], J->files[i]);
            rc = 1;
        }
    return rc;
}

/* On a process other than the first: sends what it loaded. 0, or 1 with a
 * message. */
static int send_share(const struct rsr_loaded *J, const struct rsr_mpi *mp, const int *owner)
{
    struct rsr_pack b = { 0 };
    int rc = 0;
    for (int i = 0; i < J->n && !rc; i++) {
        if (owner[i] != mp->rank)
            continue;
        b.n = 0;
        rsr_pack_u64(&b, (uint64_t)i);
        rsr_pack_input(&b, &J->ins[i]);
        if (b.failed) {
            fprintf(stderr, "ringside: reporter process %d: out of memory, or the spill file could not be "
                            "read, packing the summary of %s\n", mp->rank, J->files[i]);
            rc = 1;
        } else if (rsr_mpi_send(mp, &b) != 0) {
            fprintf(stderr, "ringside: reporter process %d: MPI failed sending its summaries\n", mp->rank);
            rc = 1;
        }
    }
    /* The last message goes even after a failure: the first process then
     * says which file it lacks instead of waiting for ever. */
    double rss = rsr_peak_rss_mb();
    uint64_t bits;
    memcpy(&bits, &rss, sizeof bits);
    b.n = 0;
    b.failed = 0;
    rsr_pack_u64(&b, LAST);
    rsr_pack_u64(&b, bits);
    size_t head = b.n;
    rsr_pack_u64(&b, J->fls ? RSR_FLAME_TREES : 0);
    for (int k = 0; J->fls && k < RSR_FLAME_TREES; k++)
        rsr_pack_flame(&b, &J->fls[k]);
    if (b.failed) {
        fprintf(stderr, "ringside: reporter process %d: out of memory packing its flame graphs\n", mp->rank);
        b.n = head < b.n ? head : b.n;
        b.failed = 0;
        rsr_pack_u64(&b, 0);
        rc = 1;
    }
    if (rsr_mpi_send(mp, &b) != 0) {
        fprintf(stderr, "ringside: reporter process %d: MPI failed sending its summaries\n", mp->rank);
        rc = 1;
    }
    rsr_pack_free(&b);
    return rc;
}

int rsr_job_load(struct rsr_loaded *J, char **paths, int npaths, const struct rsr_mpi *mp, int flames,
                 int quiet, int lines, int *rc)
{
    memset(J, 0, sizeof *J);
    if (mp->rank == 0) {
        J->n = rsr_find_traces(paths, npaths, &J->files);
        if (J->n > 0 && rsr_runs_pick(npaths, J->files, &J->n) != 0) {
            for (int i = 0; i < J->n; i++)
                free(J->files[i]);
            free(J->files);
            J->files = NULL;
            J->n = -1;     /* said why; no files to share out */
        } else if (J->n == 0)
            fprintf(stderr, "ringside: no trace files (*.trace.lz4) in %s%s\n", paths[0],
                    npaths > 1 ? " or the other folders given" : "");
    }
    if (rsr_mpi_share_files(mp, &J->files, &J->n) != 0) {
        fprintf(stderr, "ringside: out of memory\n");
        J->n = 0;
        return 1;
    }
    if (J->n <= 0) {
        J->n = 0;
        return 1;
    }
    J->ins = calloc((size_t)J->n, sizeof *J->ins);
    J->models = calloc((size_t)J->n, sizeof *J->models);
    int *owner = calloc((size_t)J->n, sizeof *owner);
    if (flames)
        J->fls = calloc(RSR_FLAME_TREES, sizeof *J->fls);
    if (!J->ins || !J->models || !owner || (flames && !J->fls)) {
        fprintf(stderr, "ringside: out of memory\n");
        free(owner);
        return 1;
    }
    if (mp->rank == 0)
        share_out(J->files, J->n, mp->size, owner);
    rsr_mpi_share_ints(mp, owner, J->n);
    if (load_share(J, mp, owner, quiet, lines) != 0) {
        fprintf(stderr, "ringside: out of memory\n");
        free(owner);
        return 1;
    }
    if (mp->rank != 0) {
        *rc = send_share(J, mp, owner);
        free(owner);
        return -1;
    }
    J->peak_rss_mb = rsr_peak_rss_mb();
    int grc = mp->size > 1 ? gather_shares(J, mp, owner) : 0;
    free(owner);
    if (!grc)
        rsr_runs_exec_images(J->ins, J->n);
    if (grc || rsr_runs_check(J->ins, J->n))
        return 1;
    for (int i = 0; i < J->n; i++) {
        const struct rsr_input *in = &J->ins[i];
        J->readable += !in->open_failed && in->walk.nchunks > 0;
        rsr_warn_damage(in);
        if (!in->model || in->model_incomplete)
            fprintf(stderr, "ringside: %s: out of memory: the report lacks part of its events\n", in->file);
    }
    rsr_inputs_models(J->ins, J->n, J->models);
    return 0;
}

void rsr_job_unload(struct rsr_loaded *J)
{
    for (int i = 0; i < J->n; i++) {
        if (J->ins)
            rsr_input_free(&J->ins[i]);
        free(J->files[i]);
    }
    for (int k = 0; J->fls && k < RSR_FLAME_TREES; k++)
        rsr_flame_free(&J->fls[k]);
    free(J->fls);
    free(J->models);
    free(J->ins);
    free(J->files);
}
