/* A protocol buffers wire encoder, just enough for Perfetto's trace format
 * (pftrace.c): varints, fixed64, doubles, bytes and nested messages written
 * into one growing buffer, each nested message's length patched in when it
 * ends, and the buffer handed to a FILE between top-level messages. */
#ifndef RSR_PB_H
#define RSR_PB_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>

#define RSR_PB_DEPTH 16

struct rsr_pb {
    FILE *f;
    uint8_t *buf;
    size_t len, cap;
    size_t open[RSR_PB_DEPTH];  /* where each open message's body begins */
    int depth;
    int failed;                 /* out of memory, too deep, or a write failed (errno kept) */
    int zlib;                   /* each batch goes out as one TracePacket.compressed_packets */
    pthread_mutex_t *lock;      /* held while a batch is written, when not NULL (writers sharing f) */
    uint8_t *zbuf;
    size_t zcap;
    void *deflater;             /* ISA-L's stream and its level buffer (pb.c), made at the first batch */
};

/* Starts writing to f (which the caller owns and closes). With zlib set,
 * each batch of top-level messages (field 1 of a Perfetto Trace, each a
 * TracePacket) is deflated and written as one TracePacket whose field 50
 * (compressed_packets) holds them, as Perfetto's own tracing service does. */
void rsr_pb_init(struct rsr_pb *pb, FILE *f, int zlib);

/* The same for one of several writers sharing f: each batch is whole (a
 * run of whole top-level messages, compressed or not) and written holding
 * lock, so that batches of different writers interleave, never their bytes. */
void rsr_pb_init_shared(struct rsr_pb *pb, FILE *f, int zlib, pthread_mutex_t *lock);

/* Makes room for n more bytes (pb.c); 0, or -1 with pb->failed set. */
int rsr_pb_grow(struct rsr_pb *pb, size_t n);
/* Closes the innermost message whose length takes more than a byte, or
 * after which the buffer goes to the file (pb.c). */
void rsr_pb_end_slow(struct rsr_pb *pb, size_t body, size_t n);

/* The encoders below are in the header: a trace writes hundreds of millions
 * of fields, and a call each was a third of the export's time. */
static inline int rsr_pb_room(struct rsr_pb *pb, size_t n)
{
    return pb->len + n <= pb->cap ? 0 : rsr_pb_grow(pb, n);
}

static inline size_t rsr_pb_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* A tag (field number and wire type: 0 varint, 1 fixed64, 2 bytes) and a
 * varint, with room made for both and 8 bytes more. */
static inline void rsr_pb_tag_varint(struct rsr_pb *pb, unsigned field, unsigned wire, uint64_t v)
{
    if (rsr_pb_room(pb, 28) != 0)
        return;
    pb->len += rsr_pb_varint_put(pb->buf + pb->len, ((uint64_t)field << 3) | wire);
    pb->len += rsr_pb_varint_put(pb->buf + pb->len, v);
}

/* Field number field with a varint, a signed varint (int64's two's
 * complement, as protobuf's int64 type has it: ten bytes when negative), a
 * fixed64, a double, bytes or a NUL-terminated string. Errors are kept in
 * pb->failed. */
static inline void rsr_pb_uint(struct rsr_pb *pb, unsigned field, uint64_t v)
{
    rsr_pb_tag_varint(pb, field, 0, v);
}

static inline void rsr_pb_int(struct rsr_pb *pb, unsigned field, int64_t v)
{
    rsr_pb_tag_varint(pb, field, 0, (uint64_t)v);
}

static inline void rsr_pb_fixed64(struct rsr_pb *pb, unsigned field, uint64_t v)
{
    if (rsr_pb_room(pb, 18) != 0)
        return;
    pb->len += rsr_pb_varint_put(pb->buf + pb->len, ((uint64_t)field << 3) | 1);
    for (int i = 0; i < 8; i++)
        pb->buf[pb->len++] = (uint8_t)(v >> (8 * i));
}

void rsr_pb_double(struct rsr_pb *pb, unsigned field, double v);
void rsr_pb_bytes(struct rsr_pb *pb, unsigned field, const void *p, size_t n);
void rsr_pb_str(struct rsr_pb *pb, unsigned field, const char *s);

/* Opens a nested message as field field; rsr_pb_end closes the innermost
 * one open. At most RSR_PB_DEPTH open at once. When the outermost one
 * closes and the buffer holds 1 MiB or more, it goes to the file. */
static inline void rsr_pb_begin(struct rsr_pb *pb, unsigned field)
{
    if (pb->depth == RSR_PB_DEPTH || rsr_pb_room(pb, 11) != 0) {
        pb->failed = 1;
        return;
    }
    pb->len += rsr_pb_varint_put(pb->buf + pb->len, ((uint64_t)field << 3) | 2);
    pb->len++;
    pb->open[pb->depth++] = pb->len;
}

static inline void rsr_pb_end(struct rsr_pb *pb)
{
    if (pb->failed || !pb->depth)
        return;
    size_t body = pb->open[--pb->depth];
    size_t n = pb->len - body;
    if (n < 0x80 && pb->depth)
        pb->buf[body - 1] = (uint8_t)n;
    else
        rsr_pb_end_slow(pb, body, n);
}

/* Writes what is buffered and frees the buffer. Returns 0, or -1 when
 * anything failed on the way (errno set where a write failed). */
int rsr_pb_finish(struct rsr_pb *pb);

#endif
