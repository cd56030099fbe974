/* String interning for the reporter: each distinct string is stored once and
 * numbered from 0 in order of first sight, so that symbol and frame names can
 * be compared and hashed as integers. */
#ifndef RSR_INTERN_H
#define RSR_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/base/table.h"

struct rsr_intern {
    char **strs;          /* id -> string (owned) */
    uint32_t n, cap;
    struct rsr_table table;   /* hash of a string -> its id */
};

/* The id of the len bytes at s (a copy is kept, NUL-terminated), adding them
 * when new. Exits the program with a message when out of memory. */
uint32_t rsr_intern_n(struct rsr_intern *t, const char *s, size_t len);
uint32_t rsr_intern(struct rsr_intern *t, const char *s);

/* The string with id (id < t->n). */
static inline const char *rsr_intern_str(const struct rsr_intern *t, uint32_t id)
{
    return t->strs[id];
}

void rsr_intern_free(struct rsr_intern *t);

/* FNV-1a over len bytes, for the reporter's hash tables. */
uint64_t rsr_hash_bytes(const void *p, size_t len, uint64_t seed);

/* A 64-bit mix of one integer. */
static inline uint64_t rsr_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* malloc/realloc/calloc that print "ringside: out of memory" and exit 1. */
void *rsr_xmalloc(size_t n);
void *rsr_xrealloc(void *p, size_t n);
void *rsr_xcalloc(size_t n, size_t size);
char *rsr_xstrdup(const char *s);

#endif
