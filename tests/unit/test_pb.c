/* The protocol buffers wire encoder (reporter/base/pb.c) against the encodings
 * that Google's "Encoding" page of the protobuf documentation spells out
 * byte by byte, and nested lengths that need one, two and three bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "reporter/base/pb.h"
#include "tests/unit/rs_check.h"

/* What rsr_pb wrote to a memory stream, in *len bytes (malloc'd). */
static unsigned char *encoded(void (*fill)(struct rsr_pb *), int zlib, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    struct rsr_pb pb;
    rsr_pb_init(&pb, f, zlib);
    fill(&pb);
    ck_assert_int_eq(rsr_pb_finish(&pb), 0);
    ck_assert_int_eq(fclose(f), 0);
    return (unsigned char *)buf;
}

/* The documentation's Test1 { a = 150 } and Test2 { b = "testing" }. */
static void fill_spec(struct rsr_pb *pb)
{
    rsr_pb_uint(pb, 1, 150);
    rsr_pb_str(pb, 2, "testing");
}

START_TEST(spec_examples)
{
    static const unsigned char want[] = { 0x08, 0x96, 0x01, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g' };
    size_t n;
    unsigned char *got = encoded(fill_spec, 0, &n);
    ck_assert_uint_eq(n, sizeof want);
    ck_assert_mem_eq(got, want, sizeof want);
    free(got);
}
END_TEST

/* Test3 { c: Test1 { a = 150 } }: 1a 03 08 96 01; an int64 of -2 takes ten
 * bytes (two's complement); a fixed64 is little-endian. */
static void fill_nested(struct rsr_pb *pb)
{
    rsr_pb_begin(pb, 3);
    rsr_pb_uint(pb, 1, 150);
    rsr_pb_end(pb);
    rsr_pb_int(pb, 4, -2);
    rsr_pb_fixed64(pb, 5, 0x0102030405060708ull);
}

START_TEST(nested_signed_fixed)
{
    static const unsigned char want[] = { 0x1a, 0x03, 0x08, 0x96, 0x01,
                                          0x20, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                          0x29, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 };
    size_t n;
    unsigned char *got = encoded(fill_nested, 0, &n);
    ck_assert_uint_eq(n, sizeof want);
    ck_assert_mem_eq(got, want, sizeof want);
    free(got);
}
END_TEST

/* Messages whose bodies are 127, 128 and 20,000 bytes: lengths of one,
 * two and three bytes, the body moved up behind them, one inside another. */
static char body[20000];

static void fill_long(struct rsr_pb *pb)
{
    rsr_pb_begin(pb, 1);
    rsr_pb_begin(pb, 2);
    rsr_pb_bytes(pb, 3, body, 125);     /* tag, length 125, body: 127 bytes */
    rsr_pb_end(pb);
    rsr_pb_begin(pb, 4);
    rsr_pb_bytes(pb, 5, body, 125);
    rsr_pb_uint(pb, 6, 1);              /* 129 bytes */
    rsr_pb_end(pb);
    rsr_pb_bytes(pb, 7, body, sizeof body);
    rsr_pb_end(pb);
}

START_TEST(long_lengths)
{
    size_t n;
    unsigned char *got = encoded(fill_long, 0, &n);
    /* outer: 2+127 + 3+129 + 1+3+20000 = 20265 bytes, length 0xa9 0x9e 0x01 */
    size_t inner = 2 + 127 + 3 + 129 + 1 + 3 + sizeof body;
    ck_assert_uint_eq(inner, 20265);
    ck_assert_uint_eq(n, 1 + 3 + inner);
    static const unsigned char head[] = { 0x0a, 0xa9, 0x9e, 0x01, 0x12, 0x7f, 0x1a, 0x7d };
    ck_assert_mem_eq(got, head, sizeof head);
    const unsigned char *second = got + 4 + 2 + 127;
    static const unsigned char head2[] = { 0x22, 0x81, 0x01, 0x2a, 0x7d };
    ck_assert_mem_eq(second, head2, sizeof head2);
    ck_assert_uint_eq(second[3 + 127], 0x30);
    ck_assert_uint_eq(second[3 + 128], 0x01);
    static const unsigned char head3[] = { 0x3a, 0xa0, 0x9c, 0x01 };  /* 20000 */
    ck_assert_mem_eq(second + 3 + 129, head3, sizeof head3);
    free(got);
}
END_TEST

/* The varint at p[*i], *i moved past it. */
static size_t varint_at(const unsigned char *p, size_t *i)
{
    size_t v = 0;
    for (int s = 0;; s += 7) {
        unsigned char c = p[(*i)++];
        v |= (size_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return v;
    }
}

/* Compressed: one Trace.packet holding field 50 (tag 0x92 0x03), whose
 * bytes inflate to what the plain writer wrote. */
START_TEST(compressed_batches)
{
    size_t n, pn;
    unsigned char *plain = encoded(fill_long, 0, &pn);
    unsigned char *got = encoded(fill_long, 1, &n);
    size_t i = 1;
    ck_assert_uint_eq(got[0], 0x0a);
    size_t len = varint_at(got, &i);
    ck_assert_uint_eq(i + len, n);
    ck_assert_uint_eq(got[i], 0x92);
    ck_assert_uint_eq(got[i + 1], 0x03);
    i += 2;
    size_t zlen = varint_at(got, &i);
    ck_assert_uint_eq(i + zlen, n);
    unsigned char *out = malloc(pn);
    uLongf outn = pn;
    ck_assert_int_eq(uncompress(out, &outn, got + i, zlen), Z_OK);
    ck_assert_uint_eq(outn, pn);
    ck_assert_mem_eq(out, plain, pn);
    free(out);
    free(plain);
    free(got);
}
END_TEST

/* A batch deflates to the same bytes whatever memory its writer was given:
 * ISA-L 2.30's one-shot init leaves the stream's hist_bits (the longest
 * distance a match may reach back) as it finds it, and a writer whose
 * stream took a reused block of the heap once wrote other bytes in
 * trace.pftrace (a report under MPI against one process's). */
static unsigned char batch[1200000];
static unsigned dirty_mod;

static void fill_batch(void)
{
    static const char *words[] = { "cudaLaunchKernel", "ncclAllReduce", "step", "rank", "bwd_gemm", "fwd_attn",
                                   "0123456789", "stream 7", "memcpy HtoD", "checkpoint" };
    uint32_t seed = 1;
    size_t i = 0;
    while (i < sizeof batch) {
        seed = seed * 1103515245u + 12345u;
        const char *w = words[(seed >> 16) % 10];
        for (size_t k = 0; w[k] && i < sizeof batch; k++)
            batch[i++] = (unsigned char)w[k];
        if (i < sizeof batch)
            batch[i++] = (unsigned char)(seed >> 8);
    }
}

/* Blocks of the heap the size of the writer's deflate state, holding
 * 16-bit words 1..dirty_mod (0: zeros), freed just before the batch
 * goes out (and the state is made). */
static void dirty_heap(void)
{
    enum { N = 8, SIZE = 400 << 10 };
    uint16_t *b[N];
    for (int k = 0; k < N; k++) {
        b[k] = malloc(SIZE);
        ck_assert_ptr_nonnull(b[k]);
        for (size_t i = 0; i < SIZE / 2; i++)
            b[k][i] = dirty_mod ? (uint16_t)(1 + i * 7919u % dirty_mod) : 0;
    }
    for (int k = 0; k < N; k++)
        free(b[k]);
}

/* A packet over the flush size (1 MB): a batch. */
static void fill_batch_dirty(struct rsr_pb *pb)
{
    rsr_pb_begin(pb, 1);
    rsr_pb_bytes(pb, 2, batch, sizeof batch);
    dirty_heap();
    rsr_pb_end(pb);
}

START_TEST(batches_alone)
{
    fill_batch();
    /* blocks this size come from the heap once one was freed */
    free(malloc(8 << 20));
    size_t n1, n2;
    dirty_mod = 0;
    unsigned char *one = encoded(fill_batch_dirty, 1, &n1);
    dirty_mod = 9;
    unsigned char *two = encoded(fill_batch_dirty, 1, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_mem_eq(one, two, n1);
    free(one);
    free(two);
}
END_TEST

static Suite *pb_suite(void)
{
    const struct rs_test tests[] = {
        { "pb_spec_examples", spec_examples },
        { "pb_nested_signed_fixed", nested_signed_fixed },
        { "pb_long_lengths", long_lengths },
        { "pb_compressed_batches", compressed_batches },
        { "pb_batches_alone", batches_alone },
    };
    return RS_SUITE("pb", tests, 10);
}

RS_CHECK_MAIN(pb_suite)
