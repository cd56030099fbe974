/* The growth helper (see array.h). */
#include "reporter/base/array.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rsr_grow_to(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -1;
        c *= 2;
    }
    if (c > SIZE_MAX / elem)
        return -1;
    void *arr;
    memcpy(&arr, arrp, sizeof arr);
    void *p = realloc(arr, c * elem);
    if (!p)
        return -1;
    memcpy(arrp, &p, sizeof p);
    *cap = c;
    return 0;
}

int rsr_grow_zeroed_to(void *arrp, uint32_t *n, size_t need, size_t elem, size_t first)
{
    size_t cap = *n;
    if (need <= cap)
        return 0;
    /* past UINT32_MAX: the array may have grown, its length stays */
    if (rsr_grow(arrp, &cap, need, elem, first) != 0 || cap > UINT32_MAX)
        return -1;
    char *arr;
    memcpy(&arr, arrp, sizeof arr);
    memset(arr + (size_t)*n * elem, 0, (cap - *n) * elem);
    *n = (uint32_t)cap;
    return 0;
}

void rsr_out_of_memory(void)
{
    fputs("ringside: out of memory\n", stderr);
    exit(1);
}
