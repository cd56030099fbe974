/* Unit tests of the reporter's walk over a trace file's frames (load.c's
 * rsr_walk_file): a file cut inside a frame is cut short, whatever the
 * kept part of that frame holds, and damage with whole frames after it is
 * damage. The frames' compressed bytes can hold the LZ4 magic, even a
 * whole frame header: here a chunk's string carries one, as incompressible
 * bytes that LZ4 keeps as they are. Where the file ends and where the
 * frames start come from the bytes written here, not from the reader. */
#include "reporter/load/load.h"
#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"
#include "rs_check.h"

#include <lz4frame.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define NFRAMES 3
#define FILLER 6000
#define FAKE_AT 2000

static uint8_t *file;
static size_t file_len, starts[NFRAMES + 1];
static uint8_t fake[LZ4F_HEADER_SIZE_MAX];
static size_t fake_len;
static char path[64];

/* A frame header LZ4 accepts (magic, descriptor, content size, checksum)
 * with no zero byte, so that a C string can carry it. */
static void make_fake_header(void)
{
    LZ4F_cctx *cctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    for (unsigned long long size = 0x0101010101010101ull;; size++) {
        LZ4F_preferences_t prefs = { .frameInfo = { .blockSizeID = LZ4F_max64KB, .contentSize = size } };
        uint8_t out[LZ4F_HEADER_SIZE_MAX + 16];
        size_t n = LZ4F_compressBegin(cctx, out, sizeof out, &prefs);
        ck_assert(!LZ4F_isError(n) && n <= sizeof fake);
        if (!memchr(out, 0, n)) {
            memcpy(fake, out, n);
            fake_len = n;
            break;
        }
    }
    LZ4F_freeCompressionContext(cctx);
}

/* Three frames of one chunk each; the middle one's string is FILLER random
 * bytes (1..255) with the fake header at FAKE_AT, or only its magic. */
static void make_file(int whole_header)
{
    static char filler[FILLER + 1];
    uint32_t x = 12345;
    for (size_t i = 0; i < FILLER; i++) {
        x = x * 1103515245u + 12345u;
        filler[i] = (char)(1 + (x >> 16) % 255);
    }
    make_fake_header();
    memcpy(filler + FAKE_AT, fake, whole_header ? fake_len : 4);
    filler[FILLER] = 0;
    const char *strs[NFRAMES] = { "gemm", filler, "nccl" };
    LZ4F_cctx *cctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    free(file);
    file = NULL;
    file_len = 0;
    for (int k = 0; k < NFRAMES; k++) {
        struct rsf_chunk c = { .seq = (uint32_t)k, .strings_base = (uint32_t)k + 1, .strings = &strs[k],
                               .nstrings = 1, .end = k == NFRAMES - 1 };
        size_t bound = rsf_chunk_bound(&c);
        uint8_t *enc = aligned_alloc(64, (bound + 63) & ~(size_t)63);
        ck_assert(enc != NULL);
        struct rsf_buf out = { enc, 0, bound };
        ck_assert_int_eq(rsf_chunk_encode(&c, &out), RSF_ERR_OK);
        size_t cap = rsf_frame_bound(out.len);
        file = realloc(file, file_len + cap);
        ck_assert(file != NULL);
        size_t n = rsf_frame_compress(cctx, out.p, out.len, file + file_len, cap);
        ck_assert(n > 0);
        starts[k] = file_len;
        file_len += n;
        free(enc);
    }
    starts[NFRAMES] = file_len;
    LZ4F_freeCompressionContext(cctx);
}

/* Where the middle frame's compressed bytes hold the fake (or its magic). */
static size_t fake_in_file(size_t len)
{
    const uint8_t *p = memmem(file + starts[1] + 4, starts[2] - starts[1] - 4, fake, len);
    ck_assert_msg(p != NULL, "the frame keeps the string's bytes as they are");
    return (size_t)(p - file);
}

static int read_chunk(const struct rsf_chunk *c, void *arg)
{
    (void)c, (void)arg;
    return 0;
}

/* Writes the first keep bytes of the file and walks them. */
static void walk(size_t keep, struct rsr_walk *w)
{
    strcpy(path, "/tmp/rs-walk-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert_int_eq(write(fd, file, keep), (ssize_t)keep);
    close(fd);
    ck_assert_int_eq(rsr_walk_file(path, read_chunk, NULL, w), 0);
    unlink(path);
}

/* The file ended inside the middle frame: that frame is where it was cut,
 * all of its kept bytes unread, the first frame read. */
static void expect_cut(size_t keep)
{
    struct rsr_walk w;
    walk(keep, &w);
    ck_assert_msg(w.cut_short, "cut at %zu (frame %zu..%zu): cut short", keep, starts[1], starts[2]);
    ck_assert_uint_eq(w.nchunks, 1);
    ck_assert_uint_eq(w.nproblems, 1);
    ck_assert_uint_eq(w.problems[0].offset, starts[1]);
    ck_assert_int_eq(w.problems[0].err, RSF_ERR_TRUNCATED);
    ck_assert_uint_eq(w.bad_bytes, keep - starts[1]);
    ck_assert(!w.saw_end);
}

/* Cut past a copy of the magic in the frame's bytes (a test_report_cut
 * failure: the magic was taken for a frame after the cut one, and the file
 * for damaged, its rank for killed). */
START_TEST(cut_after_magic_in_frame)
{
    make_file(0);
    size_t at = fake_in_file(4);
    for (size_t keep = at + 1; keep < at + 64 && keep < starts[2]; keep++)
        expect_cut(keep);
}
END_TEST

/* Cut past a whole frame header (its checksum holding) in the frame's
 * bytes: nothing good follows it, so still cut short. */
START_TEST(cut_after_header_in_frame)
{
    make_file(1);
    size_t at = fake_in_file(fake_len);
    for (size_t keep = at + 1; keep < at + 64 && keep < starts[2]; keep++)
        expect_cut(keep);
}
END_TEST

/* Every cut inside the middle frame is cut short. */
START_TEST(cut_anywhere_in_frame)
{
    make_file(1);
    for (size_t keep = starts[1] + 1; keep < starts[2]; keep++)
        expect_cut(keep);
}
END_TEST

/* Damage in the middle frame of a whole file, with the fake header in its
 * bytes: the frames on either side read, the damage is not a cut. */
START_TEST(damage_before_header_is_damage)
{
    make_file(1);
    size_t at = fake_in_file(fake_len);
    file[(starts[1] + at) / 2] ^= 0x10;
    struct rsr_walk w;
    walk(file_len, &w);
    ck_assert(!w.cut_short);
    ck_assert_uint_eq(w.nchunks, 2);
    ck_assert(w.saw_end);
    ck_assert_uint_ge(w.nproblems, 1);
    ck_assert_uint_eq(w.problems[0].offset, starts[1]);
    ck_assert_uint_eq(w.bad_bytes, starts[2] - starts[1]);
}
END_TEST

/* A middle frame whose block size was damaged to reach past the file's
 * end, with a whole frame after it: damage, not a cut. */
START_TEST(long_block_with_frame_after_is_damage)
{
    make_file(1);
    /* the first block's size: after the magic, FLG, BD, 8 bytes of content
     * size and the header checksum */
    file[starts[1] + 4 + 2 + 8 + 1 + 2] = 0x3f;
    struct rsr_walk w;
    walk(file_len, &w);
    ck_assert(!w.cut_short);
    ck_assert_uint_eq(w.nchunks, 2);
    ck_assert_uint_eq(w.problems[0].offset, starts[1]);
    ck_assert_int_ne(w.problems[0].err, RSF_ERR_TRUNCATED);
}
END_TEST

static Suite *walk_suite(void)
{
    const struct rs_test tests[] = {
        { "cut_after_magic_in_frame", cut_after_magic_in_frame },
        { "cut_after_header_in_frame", cut_after_header_in_frame },
        { "cut_anywhere_in_frame", cut_anywhere_in_frame },
        { "damage_before_header_is_damage", damage_before_header_is_damage },
        { "long_block_with_frame_after_is_damage", long_block_with_frame_after_is_damage },
    };
    return RS_SUITE("walk", tests, 60);
}

RS_CHECK_MAIN(walk_suite)
