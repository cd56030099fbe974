/* The protocol buffers wire encoder of pb.h. A nested message is given one
 * byte for its length when it opens; when it closes and its length needs
 * more, its body moves up to make room, which for the small messages of a
 * trace packet costs less than sizing everything first. */
#include "reporter/base/pb.h"
#include "reporter/base/isal.h"
#include "reporter/base/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define PB_FLUSH_AT (1u << 20)

void rsr_pb_init(struct rsr_pb *pb, FILE *f, int zlib)
{
    memset(pb, 0, sizeof *pb);
    pb->f = f;
    pb->zlib = zlib;
}

void rsr_pb_init_shared(struct rsr_pb *pb, FILE *f, int zlib, pthread_mutex_t *lock)
{
    rsr_pb_init(pb, f, zlib);
    pb->lock = lock;
}

static int pb_write(struct rsr_pb *pb, const void *p, size_t n)
{
    if (pb->lock)
        pthread_mutex_lock(pb->lock);
    int rc = fwrite(p, 1, n, pb->f) == n ? 0 : -1;
    if (pb->lock)
        pthread_mutex_unlock(pb->lock);
    return rc;
}

int rsr_pb_grow(struct rsr_pb *pb, size_t n)
{
    if (pb->failed)
        return -1;
    if (pb->len + n <= pb->cap)
        return 0;
    if (RSR_GROW(pb->buf, pb->cap, pb->len + n, 1u << 16) != 0) {
        pb->failed = 1;
        return -1;
    }
    return 0;
}

void rsr_pb_double(struct rsr_pb *pb, unsigned field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    rsr_pb_fixed64(pb, field, u);
}

void rsr_pb_bytes(struct rsr_pb *pb, unsigned field, const void *p, size_t n)
{
    rsr_pb_tag_varint(pb, field, 2, n);
    if (rsr_pb_room(pb, n) != 0)
        return;
    if (n)
        memcpy(pb->buf + pb->len, p, n);
    pb->len += n;
}

void rsr_pb_str(struct rsr_pb *pb, unsigned field, const char *s)
{
    rsr_pb_bytes(pb, field, s, strlen(s));
}

/* ISA-L's one-shot deflate at its level 1, with the level's buffer. */
struct deflater {
    struct isal_zstream s;
    uint8_t level_buf[ISAL_DEF_LVL1_DEFAULT];
};

/* The batch deflated into z (room for zn bytes) in the zlib format Perfetto
 * reads: by ISA-L where it is there (a 1 MB batch of a 64-rank job's
 * packets in about a third of zlib's fastest level's time), else by zlib.
 * Returns the length, or 0 on failure. */
static size_t deflate_batch(struct rsr_pb *pb, uint8_t *z, size_t zn)
{
    const struct rsr_isal *isal = rsr_isal();
    if (isal->deflate && (pb->deflater || (pb->deflater = malloc(sizeof(struct deflater))))) {
        struct deflater *d = pb->deflater;
        /* ISA-L 2.30's init leaves hist_bits (how far back a match may
         * reach) as it finds it: cleared, a batch's bytes are its input's
         * alone, whatever the heap held before (the level buffer needs no
         * clearing: the deflate resets its tables). */
        memset(&d->s, 0, sizeof d->s);
        isal->deflate_init(&d->s);
        d->s.next_in = pb->buf;
        d->s.avail_in = (uint32_t)pb->len;
        d->s.next_out = z;
        d->s.avail_out = (uint32_t)zn;
        d->s.level = 1;
        d->s.level_buf = d->level_buf;
        d->s.level_buf_size = sizeof d->level_buf;
        d->s.end_of_stream = 1;
        d->s.flush = NO_FLUSH;
        d->s.gzip_flag = IGZIP_ZLIB;
        if (isal->deflate(&d->s) == COMP_OK)
            return d->s.total_out;
    }
    uLongf n = (uLongf)zn;
    return compress2(z, &n, pb->buf, (uLong)pb->len, Z_BEST_SPEED) == Z_OK ? (size_t)n : 0;
}

/* The batch deflated (outside the lock: the writers compress in parallel),
 * wrapped as Trace.packet { compressed_packets }. */
static int pb_flush_zlib(struct rsr_pb *pb)
{
    size_t zn = compressBound((uLong)pb->len) + ISAL_DEF_MAX_HDR_SIZE;
    if (zn + 32 > pb->zcap) {
        uint8_t *z = realloc(pb->zbuf, zn + 32);
        if (!z)
            return -1;
        pb->zbuf = z;
        pb->zcap = zn + 32;
    }
    uint8_t *z = pb->zbuf + 32;
    if (!(zn = deflate_batch(pb, z, zn)))
        return -1;
    uint8_t head[32];
    size_t h = 0, inner = 2 + rsr_pb_varint_put(head, zn) + zn;   /* tag 50 takes two bytes */
    head[h++] = 0x0a;                                       /* Trace.packet: field 1, bytes */
    h += rsr_pb_varint_put(head + h, inner);
    head[h++] = 0x92;                                       /* compressed_packets: field 50, bytes */
    head[h++] = 0x03;
    h += rsr_pb_varint_put(head + h, zn);
    memcpy(z - h, head, h);
    return pb_write(pb, z - h, h + zn);
}

static int pb_flush(struct rsr_pb *pb)
{
    if (pb->len && !pb->failed) {
        if (pb->zlib ? pb_flush_zlib(pb) != 0 : pb_write(pb, pb->buf, pb->len) != 0)
            pb->failed = 1;
    }
    pb->len = 0;
    return pb->failed ? -1 : 0;
}

void rsr_pb_end_slow(struct rsr_pb *pb, size_t body, size_t n)
{
    uint8_t v[10];
    size_t k = rsr_pb_varint_put(v, n);
    if (k > 1) {
        if (rsr_pb_room(pb, k - 1) != 0)
            return;
        memmove(pb->buf + body + k - 1, pb->buf + body, n);
        pb->len += k - 1;
    }
    memcpy(pb->buf + body - 1, v, k);
    if (!pb->depth && pb->len >= PB_FLUSH_AT)
        pb_flush(pb);
}

int rsr_pb_finish(struct rsr_pb *pb)
{
    if (pb->depth)
        pb->failed = 1;
    int rc = pb_flush(pb);
    free(pb->buf);
    free(pb->zbuf);
    free(pb->deflater);
    pb->buf = pb->zbuf = NULL;
    pb->deflater = NULL;
    pb->cap = pb->zcap = 0;
    if (rc != 0 && !errno)
        errno = ENOMEM;
    return rc;
}
