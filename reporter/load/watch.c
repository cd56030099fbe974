/* The trace files of a running job, read as they grow (see watch.h). */
#include "reporter/load/watch.h"
#include "reporter/load/discover.h"
#include "reporter/base/array.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int known(const struct rsr_watch *w, const char *file)
{
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->lv[i].in.file, file) == 0)
            return 1;
    return 0;
}

/* Adds the files under the paths not seen before. 1: some were new, 0:
 * none, -1: a path could not be read. */
static int find_new(struct rsr_watch *w)
{
    char **present = calloc((size_t)w->npaths + 1, sizeof *present);
    int np = 0, added = 0;
    if (!present)
        return -1;
    for (int i = 0; i < w->npaths; i++) {
        struct stat st;
        if (stat(w->paths[i], &st) == 0)
            present[np++] = w->paths[i];
        else if (errno != ENOENT)
            fprintf(stderr, "ringside: %s: %s\n", w->paths[i], strerror(errno));
    }
    char **files = NULL;
    int nf = np ? rsr_find_traces(present, np, &files) : 0;
    free(present);
    if (nf < 0)
        return -1;
    for (int i = 0; i < nf; i++) {
        if (!known(w, files[i])) {
            RSR_XGROW(w->lv, w->cap, (size_t)w->n + 1, 16);
            struct rsr_live *l = &w->lv[w->n++];
            rsr_input_begin(&l->in, files[i]);
            l->feed = rsr_flame_feed_new(w->quiet, w->lines);
            added = 1;
        }
        free(files[i]);
    }
    free(files);
    return added;
}

int rsr_watch_poll(struct rsr_watch *w, int last)
{
    int news = find_new(w);
    if (news < 0)
        return -1;
    w->ended = 0;
    for (int i = 0; i < w->n; i++) {
        struct rsr_live *l = &w->lv[i];
        long long got = rsr_input_feed(&l->in, last, rsr_flame_feed_chunk, l->feed);
        if (got > 0) {
            w->read_bytes += (uint64_t)got;
            news = 1;
        }
        w->ended += l->in.walk.saw_end;
    }
    return news;
}

void rsr_watch_free(struct rsr_watch *w)
{
    for (int i = 0; i < w->n; i++) {
        rsr_input_free(&w->lv[i].in);
        rsr_flame_feed_free(w->lv[i].feed);
    }
    free(w->lv);
    memset(w, 0, sizeof *w);
}
