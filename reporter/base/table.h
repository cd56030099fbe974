/* The reporter's one hash table: it maps a hash to indices of the caller's
 * own array of items (strings, keys, tree nodes), so that the items stay
 * where the caller keeps them, numbered in the order they were added.
 * Open addressing with linear probing, at most half full; a slot holds an
 * index + 1 (4 bytes), and the caller tells whether the item there is the
 * one sought. Looking up walks the slots a hash may be in:
 *
 *     struct rsr_probe p = rsr_table_probe(&t, h);
 *     for (long i; (i = rsr_table_next(&t, &p)) >= 0;)
 *         if (same(&items[i], key))
 *             return i;
 *     items[n] = key;
 *     rsr_table_put(&t, &p, n, first, hash_of, items);
 *
 * Growing needs each item's hash again: hash_of(ctx, index) gives it (the
 * caller keeps it with the item, or computes it). */
#ifndef RSR_TABLE_H
#define RSR_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct rsr_table {
    uint32_t *slot;     /* index + 1; 0: empty */
    size_t nslots;      /* a power of two, or 0 */
    size_t n;           /* items in it */
};

struct rsr_probe {
    size_t at;          /* the slot to look at next */
    uint64_t hash;
};

/* Where a walk for hash h begins. */
static inline struct rsr_probe rsr_table_probe(const struct rsr_table *t, uint64_t h)
{
    struct rsr_probe p = { t->nslots ? (size_t)h & (t->nslots - 1) : 0, h };
    return p;
}

/* The next index the walk meets (the item there may have another hash:
 * the caller compares), or -1 at the first empty slot, where p then stays
 * for rsr_table_put. */
static inline long rsr_table_next(const struct rsr_table *t, struct rsr_probe *p)
{
    if (!t->nslots || !t->slot[p->at])
        return -1;
    long i = (long)t->slot[p->at] - 1;
    p->at = (p->at + 1) & (t->nslots - 1);
    return i;
}

/* Stores index under p's hash (after a walk that did not find it), first
 * growing the table when it would pass half full (first: its first size,
 * a power of two; hash_of(ctx, i): item i's hash, for the move). Returns 0,
 * or -1 when out of memory or index does not fit in 32 bits (the table is
 * then as it was). */
int rsr_table_put(struct rsr_table *t, const struct rsr_probe *p, size_t index, size_t first,
                  uint64_t (*hash_of)(const void *ctx, size_t i), const void *ctx);

/* Bytes the table holds. */
size_t rsr_table_bytes(const struct rsr_table *t);

/* Empties it, freeing its slots. */
void rsr_table_free(struct rsr_table *t);

#endif
