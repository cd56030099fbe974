/* The hash table of indices (see table.h). */
#include "reporter/base/table.h"

#include <stdlib.h>
#include <string.h>

/* The first empty slot for hash h. */
static size_t empty_for(const struct rsr_table *t, uint64_t h)
{
    size_t at = (size_t)h & (t->nslots - 1);
    while (t->slot[at])
        at = (at + 1) & (t->nslots - 1);
    return at;
}

/* Rebuilds the slots at nslots, each item at its hash's place. */
static int resize(struct rsr_table *t, size_t nslots, uint64_t (*hash_of)(const void *ctx, size_t i),
                  const void *ctx)
{
    uint32_t *slot = calloc(nslots, sizeof *slot);
    if (!slot)
        return -1;
    struct rsr_table moved = { slot, nslots, t->n };
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slot[i])
            slot[empty_for(&moved, hash_of(ctx, t->slot[i] - 1))] = t->slot[i];
    free(t->slot);
    *t = moved;
    return 0;
}

int rsr_table_put(struct rsr_table *t, const struct rsr_probe *p, size_t index, size_t first,
                  uint64_t (*hash_of)(const void *ctx, size_t i), const void *ctx)
{
    if (index >= UINT32_MAX)
        return -1;
    size_t at = p->at;
    if ((t->n + 1) * 2 > t->nslots) {
        if (resize(t, t->nslots ? t->nslots * 2 : first, hash_of, ctx) != 0)
            return -1;
        at = empty_for(t, p->hash);     /* the walk's place went with the old slots */
    }
    t->slot[at] = (uint32_t)(index + 1);
    t->n++;
    return 0;
}

size_t rsr_table_bytes(const struct rsr_table *t)
{
    return t->nslots * sizeof *t->slot;
}

void rsr_table_free(struct rsr_table *t)
{
    free(t->slot);
    memset(t, 0, sizeof *t);
}
