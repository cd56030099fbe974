/* A folder of files packed into one fuzz input, for the fuzzers whose
 * reader takes a folder (fuzz_diff: two report folders; fuzz_nodes: the
 * sampler's /proc and /sys test tree). The input is sections, each a line
 * "%%%% NAME" and then the file's bytes up to the next "\n%%%% " or the end;
 * a NAME ending in '/' is a folder. Names with "..", a leading '/' or empty
 * parts are left out, so an input never writes outside its folder.
 * make_seeds.sh packs real folders this way. Header-only: each fuzzer is
 * one translation unit of its own. */
#ifndef RS_FUZZ_TREE_H
#define RS_FUZZ_TREE_H

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_TREE_MARK "%%%% "

/* A fresh empty folder for this process's inputs, under /dev/shm when it is
 * there (the inputs are written thousands of times a second). */
static inline void fuzz_tree_root(char *root, size_t n, const char *what)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(root, n, "%s/rs-fuzz-%s-%d", base, what, (int)getpid());
}

static int fuzz_tree_rm1(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    remove(p);
    return 0;
}

/* Removes root and everything under it. */
static inline void fuzz_tree_clear(const char *root)
{
    nftw(root, fuzz_tree_rm1, 16, FTW_DEPTH | FTW_PHYS);
}

/* Whether name stays inside its folder. */
static inline int fuzz_tree_name_ok(const char *name)
{
    if (!*name || *name == '/')
        return 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '/');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if ((k == 0 && e) || (k == 2 && p[0] == '.' && p[1] == '.') || (k == 1 && p[0] == '.'))
            return 0;
        p += k + (e != NULL);
    }
    return 1;
}

/* mkdir -p of path's folders (of path itself too when last is set). */
static inline void fuzz_tree_mkdirs(char *path, int last)
{
    for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    if (last)
        mkdir(path, 0700);
}

/* Writes the sections of data under root (made empty first). */
static inline void fuzz_tree_write(const char *root, const uint8_t *data, size_t size)
{
    fuzz_tree_clear(root);
    mkdir(root, 0700);
    const char *s = (const char *)data, *end = s + size;
    static const char mark[] = FUZZ_TREE_MARK;
    const size_t mk = sizeof mark - 1;
    if (size < mk || memcmp(s, mark, mk) != 0) {
        const char *first = memmem(s, size, "\n" FUZZ_TREE_MARK, mk + 1);
        if (!first)
            return;
        s = first + 1;
    }
    while (s < end) {
        const char *name = s + mk;
        const char *nl = memchr(name, '\n', (size_t)(end - name));
        const char *body = nl ? nl + 1 : end;
        const char *next = memmem(body, (size_t)(end - body), "\n" FUZZ_TREE_MARK, mk + 1);
        const char *body_end = next ? next : end;
        char rel[256], path[PATH_MAX];
        size_t k = (size_t)((nl ? nl : end) - name);
        if (k > 0 && k < sizeof rel && !memchr(name, 0, k)) {
            memcpy(rel, name, k);
            rel[k] = 0;
            int dir = rel[k - 1] == '/';
            if (dir)
                rel[k - 1] = 0;
            if (fuzz_tree_name_ok(rel) && snprintf(path, sizeof path, "%s/%s", root, rel) < (int)sizeof path) {
                fuzz_tree_mkdirs(path, dir);
                int fd = dir ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd >= 0) {
                    if (write(fd, body, (size_t)(body_end - body)) < 0) {
                        /* a name that is a folder already: left out */
                    }
                    close(fd);
                }
            }
        }
        s = next ? next + 1 : end;
    }
}

#endif
