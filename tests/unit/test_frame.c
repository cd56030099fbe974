/* Unit tests of the LZ4 frame reader (formats/frame.c). The files are made
 * here with liblz4's own LZ4F_compressFrame and hand-built skippable frames,
 * so the reader is held against the library, not against our writer: several
 * frames, one over the read buffer, a file cut short at many points, resync
 * past damage, an empty file, skippable frames, frames the format refuses.
 * The writer's frames go the other way: liblz4 must read them back. */
#include "tests/unit/rs_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lz4frame.h>

#include "formats/frame.h"
#include "formats/rsf_error.h"
#include "formats/trace.h"

/* A growing byte string, for building files. */
struct bytes {
    uint8_t *p;
    size_t len;
};

static void append(struct bytes *b, const void *p, size_t n)
{
    b->p = realloc(b->p, b->len + n);
    ck_assert_ptr_nonnull(b->p);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Appends one LZ4 frame of src made by liblz4, announcing its content size
 * when with_size. */
static void append_frame(struct bytes *b, const void *src, size_t n, int with_size)
{
    LZ4F_preferences_t prefs = { .frameInfo = { .contentChecksumFlag = LZ4F_contentChecksumEnabled,
                                                .contentSize = with_size ? n : 0 } };
    size_t cap = LZ4F_compressFrameBound(n, &prefs);
    uint8_t *dst = malloc(cap);
    ck_assert_ptr_nonnull(dst);
    size_t len = LZ4F_compressFrame(dst, cap, src, n, &prefs);
    ck_assert(!LZ4F_isError(len));
    append(b, dst, len);
    free(dst);
}

/* A skippable frame (magic 0x184D2A5X, length, payload). */
static void append_skippable(struct bytes *b, unsigned nibble, const char *payload)
{
    uint32_t head[2] = { 0x184D2A50u | nibble, (uint32_t)strlen(payload) };
    append(b, head, sizeof head);
    append(b, payload, strlen(payload));
}

/* Content that does not compress to nothing and never holds a frame magic. */
static uint8_t *content(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)('a' + (x >> 16) % 26);
    }
    return p;
}

static char path[64];

/* Writes the first len bytes of b to a fresh file, removing the last one. */
static const char *write_file(const struct bytes *b, size_t len)
{
    if (path[0])
        unlink(path);
    snprintf(path, sizeof path, "/tmp/rsf-frame-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, b->p, len), (ssize_t)len);
    close(fd);
    return path;
}

/* Three frames of the sizes below; starts[] their file offsets. */
static const size_t sizes[3] = { 1000, 3u << 20, 77 }; /* the second spans reads */
static uint8_t *chunks[3];
static struct bytes file3;
static size_t starts[4];

static void setup_three(void)
{
    file3 = (struct bytes){ 0 };
    for (int i = 0; i < 3; i++) {
        chunks[i] = content(sizes[i], (unsigned)i);
        starts[i] = file3.len;
        append_frame(&file3, chunks[i], sizes[i], 1);
    }
    starts[3] = file3.len;
}

static void teardown_three(void)
{
    for (int i = 0; i < 3; i++)
        free(chunks[i]);
    free(file3.p);
    unlink(path);
}

static void expect_chunk(struct rsf_reader *r, int i)
{
    const uint8_t *p;
    size_t n;
    ck_assert_int_eq(rsf_reader_next(r, &p, &n), RSF_ERR_OK);
    ck_assert_uint_eq(r->frame_off, starts[i]);
    ck_assert_uint_eq(n, sizes[i]);
    ck_assert_mem_eq(p, chunks[i], n);
    ck_assert_uint_eq((uintptr_t)p % 8, 0);
    ck_assert_uint_eq(rsf_reader_offset(r), starts[i + 1]);
}

static void expect_error(struct rsf_reader *r, int err, uint64_t at)
{
    const uint8_t *p;
    size_t n;
    int got = rsf_reader_next(r, &p, &n);
    ck_assert_msg(got == err, "got \"%s\", expected \"%s\"", rsf_strerror(got), rsf_strerror(err));
    ck_assert_uint_eq(r->frame_off, at);
}

START_TEST(reads_several_frames)
{
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&file3, file3.len)), RSF_ERR_OK);
    ck_assert_uint_eq(r.file_size, file3.len);
    for (int i = 0; i < 3; i++)
        expect_chunk(&r, i);
    expect_error(&r, RSF_ERR_EOF, file3.len);
    rsf_reader_close(&r);
}
END_TEST

/* Cut anywhere inside the last frame (its magic, header, block, end mark or
 * checksum): the whole frames read, then TRUNCATED at the last one's start. */
START_TEST(cut_short_reports_last_frame)
{
    size_t last = starts[2], end = starts[3];
    const size_t cuts[] = { last + 1, last + 3, last + 4, last + 6, last + 11, last + 20,
                            end - 9, end - 5, end - 4, end - 1 };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        struct rsf_reader r;
        ck_assert_int_eq(rsf_reader_open(&r, write_file(&file3, cuts[k])), RSF_ERR_OK);
        expect_chunk(&r, 0);
        expect_chunk(&r, 1);
        expect_error(&r, RSF_ERR_TRUNCATED, last);
        rsf_reader_close(&r);
    }
}
END_TEST

/* A damaged middle frame is reported at its start; resync finds the next
 * frame and counts the damaged one's bytes as lost. */
static void check_resync(size_t flip, int err)
{
    file3.p[flip] ^= 0x10;
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&file3, file3.len)), RSF_ERR_OK);
    expect_chunk(&r, 0);
    expect_error(&r, err, starts[1]);
    ck_assert_int_eq(rsf_reader_resync(&r), RSF_ERR_OK);
    ck_assert_uint_eq(rsf_reader_offset(&r), starts[2]);
    ck_assert_uint_eq(r.bad_bytes, starts[2] - starts[1]);
    expect_chunk(&r, 2);
    expect_error(&r, RSF_ERR_EOF, file3.len);
    rsf_reader_close(&r);
}

START_TEST(resync_after_bad_magic)
{
    check_resync(starts[1], RSF_ERR_BAD_MAGIC);
}
END_TEST

START_TEST(resync_after_corrupt_data)
{
    check_resync((starts[1] + starts[2]) / 2, RSF_ERR_LZ4);
}
END_TEST

START_TEST(resync_after_corrupt_header)
{
    check_resync(starts[1] + 5, RSF_ERR_LZ4); /* the block size byte: header checksum */
}
END_TEST

/* Damage in the last frame: resync finds nothing more and counts the rest. */
START_TEST(resync_at_end_of_file)
{
    file3.p[starts[2]] ^= 0x10;
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&file3, file3.len)), RSF_ERR_OK);
    expect_chunk(&r, 0);
    expect_chunk(&r, 1);
    expect_error(&r, RSF_ERR_BAD_MAGIC, starts[2]);
    ck_assert_int_eq(rsf_reader_resync(&r), RSF_ERR_EOF);
    ck_assert_uint_eq(r.bad_bytes, file3.len - starts[2]);
    rsf_reader_close(&r);
}
END_TEST

START_TEST(empty_file_is_eof)
{
    struct bytes none = { 0 };
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&none, 0)), RSF_ERR_OK);
    expect_error(&r, RSF_ERR_EOF, 0);
    rsf_reader_close(&r);
    unlink(path);
}
END_TEST

START_TEST(missing_file_is_io_error)
{
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, "/nonexistent/trace.lz4"), RSF_ERR_IO);
}
END_TEST

/* Skippable frames anywhere (first, between, last, empty) are passed over. */
START_TEST(skippable_frames_are_skipped)
{
    struct bytes b = { 0 };
    uint8_t *a = content(500, 7), *c = content(40, 8);
    append_skippable(&b, 0, "ringside index, version 9");
    append_frame(&b, a, 500, 1);
    append_skippable(&b, 0xF, "");
    append_frame(&b, c, 40, 1);
    append_skippable(&b, 3, "tail");
    struct rsf_reader r;
    const uint8_t *p;
    size_t n;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&b, b.len)), RSF_ERR_OK);
    ck_assert_int_eq(rsf_reader_next(&r, &p, &n), RSF_ERR_OK);
    ck_assert_uint_eq(n, 500);
    ck_assert_mem_eq(p, a, 500);
    ck_assert_int_eq(rsf_reader_next(&r, &p, &n), RSF_ERR_OK);
    ck_assert_uint_eq(n, 40);
    ck_assert_mem_eq(p, c, 40);
    ck_assert_int_eq(rsf_reader_next(&r, &p, &n), RSF_ERR_EOF);
    rsf_reader_close(&r);

    /* A skippable frame whose length runs past the end of the file. */
    append_skippable(&b, 0, "cut");
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&b, b.len - 1)), RSF_ERR_OK);
    ck_assert_int_eq(rsf_reader_next(&r, &p, &n), RSF_ERR_OK);
    ck_assert_int_eq(rsf_reader_next(&r, &p, &n), RSF_ERR_OK);
    expect_error(&r, RSF_ERR_TRUNCATED, b.len - 11);
    rsf_reader_close(&r);
    free(a);
    free(c);
    free(b.p);
    unlink(path);
}
END_TEST

/* The reader sizes its buffer from the header, so a frame must announce its
 * content size, and no more than RSF_CHUNK_MAX. */
START_TEST(refuses_frames_without_usable_size)
{
    struct bytes b = { 0 };
    uint8_t *a = content(100, 9);
    append_frame(&b, a, 100, 0);
    struct rsf_reader r;
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&b, b.len)), RSF_ERR_OK);
    expect_error(&r, RSF_ERR_NO_SIZE, 0);
    rsf_reader_close(&r);

    /* A header announcing 65 MiB: only the header is needed to refuse it. */
    LZ4F_cctx *cctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    LZ4F_preferences_t prefs = { .frameInfo = { .contentSize = (uint64_t)RSF_CHUNK_MAX + 1 } };
    uint8_t head[LZ4F_HEADER_SIZE_MAX];
    size_t h = LZ4F_compressBegin(cctx, head, sizeof head, &prefs);
    ck_assert(!LZ4F_isError(h));
    LZ4F_freeCompressionContext(cctx);
    struct bytes big = { 0 };
    append(&big, head, h);
    append(&big, "\0\0\0\0", 4);
    ck_assert_int_eq(rsf_reader_open(&r, write_file(&big, big.len)), RSF_ERR_OK);
    expect_error(&r, RSF_ERR_TOO_BIG, 0);
    rsf_reader_close(&r);
    free(a);
    free(b.p);
    free(big.p);
    unlink(path);
}
END_TEST

/* The writer's frames are what liblz4 (and so `lz4 -dc`) reads, they
 * announce their content size, which the reader needs, and each block
 * carries its checksum. */
START_TEST(writer_frames_read_by_liblz4)
{
    const size_t ns[] = { 1, 4096, (4u << 20) + 17 }; /* the last spans two blocks */
    LZ4F_cctx *cctx;
    LZ4F_dctx *dctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    ck_assert(!LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)));
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint8_t *src = content(ns[k], (unsigned)k), *out = malloc(ns[k]);
        size_t cap = rsf_frame_bound(ns[k]);
        uint8_t *frame = malloc(cap);
        ck_assert_ptr_nonnull(out);
        ck_assert_ptr_nonnull(frame);
        size_t len = rsf_frame_compress(cctx, src, ns[k], frame, cap);
        ck_assert_uint_gt(len, 0);

        LZ4F_frameInfo_t info;
        size_t hlen = len;
        ck_assert(!LZ4F_isError(LZ4F_getFrameInfo(dctx, &info, frame, &hlen)));
        ck_assert_uint_eq(info.contentSize, ns[k]);
        ck_assert_int_eq(info.blockChecksumFlag, LZ4F_blockChecksumEnabled);
        size_t in = len - hlen, got = ns[k];
        size_t rest = LZ4F_decompress(dctx, out, &got, frame + hlen, &in, NULL);
        ck_assert_uint_eq(rest, 0);
        ck_assert_uint_eq(in, len - hlen);
        ck_assert_uint_eq(got, ns[k]);
        ck_assert_mem_eq(out, src, ns[k]);
        free(src);
        free(out);
        free(frame);
    }
    LZ4F_freeCompressionContext(cctx);
    LZ4F_freeDecompressionContext(dctx);
}
END_TEST

static Suite *frame_suite(void)
{
    Suite *s = suite_create("frame");
    TCase *t;
#define CASE(name, fixture)                                               \
    t = tcase_create(#name);                                              \
    if (fixture)                                                          \
        tcase_add_checked_fixture(t, setup_three, teardown_three);        \
    tcase_add_test(t, name);                                              \
    suite_add_tcase(s, t)
    CASE(reads_several_frames, 1);
    CASE(cut_short_reports_last_frame, 1);
    CASE(resync_after_bad_magic, 1);
    CASE(resync_after_corrupt_data, 1);
    CASE(resync_after_corrupt_header, 1);
    CASE(resync_at_end_of_file, 1);
    CASE(empty_file_is_eof, 0);
    CASE(missing_file_is_io_error, 0);
    CASE(skippable_frames_are_skipped, 0);
    CASE(refuses_frames_without_usable_size, 0);
    CASE(writer_frames_read_by_liblz4, 0);
#undef CASE
    return s;
}

RS_CHECK_MAIN(frame_suite)
