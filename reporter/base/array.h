/* The reporter's one growth helper for its arrays: room for one more item,
 * or for n, at the cost of O(n) copying over n appends. */
#ifndef RSR_ARRAY_H
#define RSR_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/* Makes room for need items of elem bytes in the array whose pointer is at
 * arrp (a T **; *cap items fit now): the same array, or one reallocated to
 * twice the capacity (first when it has none) until need fit. Returns 0,
 * or -1 when out of memory or the size would overflow (the array and *cap
 * are then as they were). The check for room is inline: the hot paths
 * that add a record at a time pay a compare, not a call. */
int rsr_grow_to(void *arrp, size_t *cap, size_t need, size_t elem, size_t first);
static inline int rsr_grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
{
    return need <= *cap ? 0 : rsr_grow_to(arrp, cap, need, elem, first);
}

/* rsr_grow for a table indexed by id, every entry in use (*n of them, all
 * of the capacity): the new entries zeroed, *n the new length. Returns 0,
 * or -1 when out of memory or the length would pass UINT32_MAX (the array
 * and *n are then as they were). */
int rsr_grow_zeroed_to(void *arrp, uint32_t *n, size_t need, size_t elem, size_t first);
static inline int rsr_grow_zeroed(void *arrp, uint32_t *n, size_t need, size_t elem, size_t first)
{
    return need <= *n ? 0 : rsr_grow_zeroed_to(arrp, n, need, elem, first);
}

/* rsr_grow for an array arr of its own type with a size_t cap. */
#define RSR_GROW(arr, cap, need, first) rsr_grow(&(arr), &(cap), (need), sizeof *(arr), (first))

/* Says "ringside: out of memory" on stderr and exits with status 1. */
_Noreturn void rsr_out_of_memory(void);

/* RSR_GROW for the parts that stop when memory runs out (flame graphs, the
 * loader's tables), with a cap of any unsigned type. */
#define RSR_XGROW(arr, cap, need, first)                                             \
    do {                                                                             \
        size_t cap_ = (cap);                                                         \
        if (rsr_grow(&(arr), &cap_, (need), sizeof *(arr), (first)) != 0 ||          \
            cap_ != (size_t)(__typeof__(cap))cap_)                                   \
            rsr_out_of_memory();                                                     \
        (cap) = (__typeof__(cap))cap_;                                               \
    } while (0)

#endif
