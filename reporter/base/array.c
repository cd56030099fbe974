/* The growth helper (see array.h). */
#include "reporter/base/array.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rsr_grow(void *arrp, size_t *cap, size_t need, size_t elem, size_t first)
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

void rsr_out_of_memory(void)
{
    fputs("ringside: out of memory\n", stderr);
    exit(1);
}
