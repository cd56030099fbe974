/* Trace discovery: the *.trace.lz4 files of a job, from the folders and
 * files named on the command line (report, export, watch and history all
 * start here). The list is sorted, so every command sees the same order. */
#include "reporter/load/discover.h"
#include "reporter/base/array.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct list {
    char **v;
    int n, cap;
};

static void list_add(struct list *l, const char *s)
{
    RSR_XGROW(l->v, l->cap, (size_t)l->n + 1, 16);
    l->v[l->n++] = strdup(s);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int scan(struct list *l, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        list_add(l, path);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (ends_with(e->d_name, ".trace.lz4"))
            list_add(l, sub);
        else if (depth < 1 && stat(sub, &st) == 0 && S_ISDIR(st.st_mode))
            scan(l, sub, depth + 1);
    }
    closedir(d);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int rsr_find_traces(char **paths, int npaths, char ***files)
{
    struct list l = { 0 };
    for (int i = 0; i < npaths; i++)
        if (scan(&l, paths[i], 0) != 0)
            return -1;
    if (l.n)
        qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_str);
    *files = l.v;
    return l.n;
}
