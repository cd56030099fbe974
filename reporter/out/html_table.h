/* The page's tables without their empty columns: a table is written into
 * memory as usual, then copied to the page less every column whose cells
 * are all empty, a dash, or a number of zero (data-v) (the GPU columns of a job that
 * used no GPU). A header with the attribute data-keep (a rank, where 0 is
 * a value) keeps its column whatever it holds. */
#ifndef RSR_HTML_TABLE_H
#define RSR_HTML_TABLE_H

#include <stdio.h>

struct rsr_html_table;

/* Starts a table for out: the stream to write the whole <table> into is
 * *into. NULL with errno set when memory runs out. */
struct rsr_html_table *rsr_html_table_begin(FILE *out, FILE **into);

/* Copies what was written to out less its empty columns, and frees t.
 * Text written outside <table>...</table> is copied as it is. -1 with
 * errno set when memory runs out (nothing then reaches out). */
int rsr_html_table_end(struct rsr_html_table *t);

#endif
