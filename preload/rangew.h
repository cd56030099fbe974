/* The writer's side of NVTX ranges (rangew.c), the way stackw.c is the
 * sampler's: the writer thread hands it RANGE records and asks it for the
 * chunk's Range table. Writer thread only: it allocates. */
#ifndef RS_RANGEW_H
#define RS_RANGEW_H

#include <stdint.h>

#include "preload/agent.h"
#include "preload/sample.h"

/* Events of one kind in a chunk at most (GPU ops, syncs, collectives,
 * ranges...): a fuller chunk is emitted first. */
#define RS_EV_CAP 16384u

/* Emits the chunk being assembled (the writer's emit(0)): called when the
 * Range table is full, before one more range goes in. */
typedef void (*rs_flush_fn)(void);

/* An NVTX record (kind RANGE): push and start open a range, pop and end
 * close one and write it, a mark is written at once. A push or pop carries
 * its level: entries above a push's level, or above a pop's, lost their pop
 * (dropped for want of room, counted then), and a pop whose push was lost
 * finds no entry at its level. map turns the record's ticks into ns; intern
 * gives names their string ids. Returns the ranges written (0 or 1). */
uint32_t rs_rangew_take(const struct rs_rec_hdr *h, uint32_t tid, const struct rs_tick_map *map,
                        rs_intern_fn intern, rs_flush_fn flush);

/* At the end (exit, exec): every range still open is written, ending now,
 * flagged open at exit; ends whose start never came are let go (the start
 * was lost for want of room, and counted then). Returns the ranges written. */
uint32_t rs_rangew_close_all(rs_flush_fn flush);

/* The ranges in the chunk being assembled. */
uint32_t rs_rangew_count(void);
/* Points the chunk's Range table at them. */
void rs_rangew_fill(struct rsf_chunk *c);
/* After the chunk is written (or dropped): the table starts empty. */
void rs_rangew_chunk_done(void);
/* A new file (the writer's state set up, a forked child): nothing open. */
void rs_rangew_new_file(void);

#endif
