/* Loaded trace files as bytes, and back: what one reporter process sends
 * another when `ringside report` runs as an MPI program (mpi.c). Each
 * process streams its share of the files into inputs (load.h) and flame
 * trees (flame.h), packs them, and the first process unpacks them into the
 * same structures a single process would have built. Both ends are the same
 * binary, so plain fields travel as their bytes; pointers become arrays. */
#ifndef RSR_PACK_H
#define RSR_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/flame.h"
#include "reporter/load/load.h"

/* A growing byte buffer. failed: out of memory at some point (the bytes
 * are then incomplete). */
struct rsr_pack {
    uint8_t *p;
    size_t n, cap;
    int failed;
};

/* Bytes being read back; failed: they ended early or did not make sense. */
struct rsr_unpack {
    const uint8_t *p, *end;
    int failed;
};

void rsr_pack_u64(struct rsr_pack *b, uint64_t v);
uint64_t rsr_unpack_u64(struct rsr_unpack *u);
/* n bytes as they are, and back into p (zeroed, u->failed set, when the
 * bytes are short): for parts that pack themselves (nodes.c). */
void rsr_pack_bytes(struct rsr_pack *b, const void *p, size_t n);
int rsr_unpack_bytes(struct rsr_unpack *u, void *p, size_t n);

/* Appends one loaded input (rsr_input_stream's: its model holds a summary
 * and no records) with its model and summary, its collective tuples read
 * back from the spill file where they were spilled (b->failed is set when
 * that read fails). The reader gets them in memory (rsr_summary_spill can
 * put them back). */
void rsr_pack_input(struct rsr_pack *b, const struct rsr_input *in);

/* Reads one input into *in (zeroed first), owning what it points to (free
 * with rsr_input_free). 0, or -1 when the bytes are short or malformed, or
 * memory ran out (then *in holds what was read, still to be freed). */
int rsr_unpack_input(struct rsr_unpack *u, struct rsr_input *in);

/* Appends a flame tree; rsr_unpack_flame reads one and adds it to dst
 * (rsr_flame_merge). 0, or -1 when the bytes are short or malformed. */
void rsr_pack_flame(struct rsr_pack *b, const struct rsr_flame *fl);
int rsr_unpack_flame(struct rsr_unpack *u, struct rsr_flame *dst);

void rsr_pack_free(struct rsr_pack *b);

#endif
