/* A process as the loader leaves it: its model (model.h) with the summary
 * (summary.h) and node series (nodes_load.h) the model owns, measured,
 * moved and freed whole. The model itself names no part built on it. */
#ifndef RSR_PROCESS_H
#define RSR_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

/* Bytes of memory m holds: its record arrays, strings, summary and node
 * series. */
size_t rsr_model_bytes(const struct rsr_model *m);

/* Frees everything the model owns, strings, summary and node series
 * included, and leaves it empty (as after rsr_model_init). */
void rsr_model_free(struct rsr_model *m);

/* Adds delta_ns to every time in m (ops, launches, colls, io, syncs,
 * wall_start/end, its summary; not clocks) and to m->clock_offset_ns. */
void rsr_model_shift(struct rsr_model *m, int64_t delta_ns);

#endif
