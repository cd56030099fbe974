/* String interning (see intern.h): a growable array of copies and the hash
 * table of their ids (table.h). */
#include "reporter/base/intern.h"
#include "reporter/base/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *rsr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

void *rsr_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

void *rsr_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

char *rsr_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(rsr_xmalloc(n), s, n);
}

uint64_t rsr_hash_bytes(const void *p, size_t len, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* String id's hash, for the table's moves. */
static uint64_t hash_of(const void *ctx, size_t id)
{
    const struct rsr_intern *t = ctx;
    return rsr_hash_bytes(t->strs[id], strlen(t->strs[id]), 0);
}

uint32_t rsr_intern_n(struct rsr_intern *t, const char *s, size_t len)
{
    struct rsr_probe p = rsr_table_probe(&t->table, rsr_hash_bytes(s, len, 0));
    for (long id; (id = rsr_table_next(&t->table, &p)) >= 0;) {
        const char *c = t->strs[id];
        if (strncmp(c, s, len) == 0 && c[len] == '\0')
            return (uint32_t)id;
    }
    RSR_XGROW(t->strs, t->cap, (size_t)t->n + 1, 256);
    char *copy = rsr_xmalloc(len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->strs[t->n] = copy;
    if (rsr_table_put(&t->table, &p, t->n, 256, hash_of, t) != 0) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    return t->n++;
}

uint32_t rsr_intern(struct rsr_intern *t, const char *s)
{
    return rsr_intern_n(t, s, strlen(s));
}

void rsr_intern_free(struct rsr_intern *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->strs[i]);
    free(t->strs);
    rsr_table_free(&t->table);
    memset(t, 0, sizeof *t);
}
