/* The orders qsort and bsearch are given for plain numbers, ascending. */
#ifndef RSR_ORDER_H
#define RSR_ORDER_H

int rsr_cmp_double(const void *pa, const void *pb);
int rsr_cmp_i64(const void *pa, const void *pb);

#endif
