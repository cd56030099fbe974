/* Writing JSON: strings escaped so that any byte sequence (file names with
 * quotes, control characters or invalid UTF-8) gives valid JSON. */
#ifndef RSR_JSON_H
#define RSR_JSON_H

#include <stdio.h>

/* Writes s as a JSON string, quotes included; NULL as null. Bytes that are
 * not valid UTF-8 are written as \u00XX of the byte. */
void rsr_json_str(FILE *f, const char *s);
/* Writes a finite double with up to 6 significant decimals, or null. */
void rsr_json_num(FILE *f, double v);
/* Writes ,"key": and v as rsr_json_num does: a key after the first. */
void rsr_json_num_key(FILE *f, const char *key, double v);
/* Writes v, or null when v is negative (a rank or index not known). */
void rsr_json_int_or_null(FILE *f, int v);

#endif
