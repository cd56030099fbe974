/* Unit tests of the chunk encoder and the verifying decoder (formats/fb.c,
 * formats/chunk.c): every field through a round trip; a chunk built byte by
 * byte here (which flatc --json decodes to the values checked) decoded; and
 * that same buffer damaged in each way the verifier must catch, with the
 * error and the byte offset it must report. flatc itself checks the encoder
 * in tests/integration/test_flatc.py. */
#include "tests/unit/rs_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/chunk.h"
#include "formats/rsf_error.h"

/* ---- round trips ---- */

static const char *const argv_[] = { "python3", "train.py", "", "--name=\xc3\xa9t\xc3\xa9 \"q\"" };
static const char *const keys[] = { "flush_ms", "io_exclude" };
static const char *const values[] = { "50", "/proc:/sys:/dev" };
static const char *const strings[] = { "python3", "/data/shard 0", "", "/ckpt/\xe2\x82\xac.pt" };
static const struct rsf_file_ref files[] = { { 1, 2, 0 }, { 2, 4, 01101 }, { UINT32_MAX, 3, -1 } };
static const struct rsf_thread_ref threads[] = { { 4242, 1 }, { 4243, 0 } };
static const struct rsf_clock_pair clocks[] = { { 1, 2 }, { UINT64_MAX, UINT64_MAX - 1 } };
static const struct rsf_io_event io[] = {
    { 100, 5, -1, 3, 1, 4242, RSF_IO_OPEN, {0} },
    { UINT64_MAX, UINT64_MAX, INT64_MIN, INT64_MAX, 2, UINT32_MAX, RSF_IO_SENDFILE_OUT, {0} },
    { 0, 0, 0, -28, 0, 0, RSF_IO_PWRITEV2, {0} },
};
static const struct rsf_counters counters = { 123456789012ull, UINT64_MAX, 1, 2, 3, UINT64_MAX - 4, 5 };
static const struct rsf_gpu_event gpu[] = {
    { 1, 2, 3, 4, 5, 6, 7, 1, -1, RSF_GPU_KERNEL, RSF_COPY_NONE, RSF_GPUF_PTSZ, {0}, 0 },
    { UINT64_MAX, 0, UINT64_MAX, 9, 1 << 20, UINT32_MAX, 8, 2, 7, RSF_GPU_MEMCPY, RSF_COPY_PEER,
      RSF_GPUF_SYNC, {0}, 0 },
    { 11, 12, 13, 14, 0, 15, 16, 0, 0, RSF_GPU_GRAPH, RSF_COPY_NONE, 0, {0}, UINT32_MAX },
};
static const struct rsf_sync_event syncs[] = { { 10, 20, 30, 40, RSF_SYNC_QUERY, {0} } };
static const struct rsf_coll_event colls[] = {
    { 1, 2, 3, 4, 5, UINT64_MAX, 7, 8, 9, 10, -1, RSF_COLL_RECV, 7, 2, 1, 0, {0} },
};
static const struct rsf_comm_event comms[] = {
    { 1, 2, 3, 4, 5, 6, -7, 8, 9, RSF_COMM_FINALIZE, {0} },
};
static const struct rsf_mem_event mems[] = { { 1, 2, 3, 4, 5, RSF_MEM_FREE_ASYNC, {0} } };
static const struct rsf_frame frames_a[] = { { 0x401000 }, { RSF_FRAME_PYTHON | 3 } };
static const struct rsf_frame frames_b[] = { { 0x7f0000001234ull } };
static const struct rsf_stack stacks[] = { { 1, frames_a, 2 }, { 2, frames_b, 1 }, { 3, NULL, 0 } };
static const struct rsf_sample samples[] = { { 5, 10101010, 4242, 2, RSF_SAMPLE_GPU, RSF_WAIT_NONE, {0} } };
static const struct rsf_module modules[] = { { 1, 0x400000, 0x402000, 0x1000, 1, 3 } };
static const struct rsf_range ranges[] = {
    { 10, 20, 4242, 4243, 1, 0, 7, 3, RSF_RANGE_START, 0 },
    { 30, 30, 1, 1, 2, 3, 0, 0, RSF_RANGE_MARK, RSF_RANGEF_OPEN_AT_EXIT },
};

static const struct rsf_meta meta = {
    .format_version = RSF_FORMAT_VERSION, .host = "node-7", .pid = 4242, .ppid = -5,
    .rank = 3, .local_rank = -1, .world_size = INT32_MAX, .parent_rank = INT32_MIN,
    .role = RSF_ROLE_CHILD, .job = "job.1", .argv = argv_, .argc = 4,
    .start = { 1000, 1700000000000000000ull }, .setting_keys = keys,
    .setting_values = values, .nsettings = 2, .agent_version = "0.1.0",
    .cuda_version = 12040, .nccl_version = -1,
};

static const struct rsf_chunk full = {
    .seq = 9, .meta = &meta, .strings_base = 17, .strings = strings, .nstrings = 4,
    .files = files, .nfiles = 3, .threads = threads, .nthreads = 2, .clocks = clocks,
    .nclocks = 2, .io = io, .nio = 3, .counters = &counters, .end = true,
    .gpu = gpu, .ngpu = 3, .syncs = syncs, .nsyncs = 1, .colls = colls, .ncolls = 1,
    .comms = comms, .ncomms = 1, .mems = mems, .nmems = 1, .stacks = stacks, .nstacks = 3,
    .samples = samples, .nsamples = 1, .modules = modules, .nmodules = 1,
    .ranges = ranges, .nranges = 2,
};

static uint64_t enc_space[8192];

/* Encodes c into enc_space; returns its length. */
static size_t encode(const struct rsf_chunk *c)
{
    struct rsf_buf out = { (uint8_t *)enc_space, 0, sizeof enc_space };
    ck_assert_int_eq(rsf_chunk_encode(c, &out), RSF_ERR_OK);
    ck_assert_uint_le(out.len, rsf_chunk_bound(c));
    return out.len;
}

static void assert_strings(const char *const *got, const char *const *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        ck_assert_str_eq(got[i], want[i]);
}

START_TEST(round_trip_every_field)
{
    size_t n = encode(&full);
    struct rsf_chunk_view v;
    size_t where = 0;
    ck_assert_int_eq(rsf_chunk_decode((uint8_t *)enc_space, n, &v, &where), RSF_ERR_OK);
    const struct rsf_chunk *c = &v.c;
    ck_assert_uint_eq(c->seq, 9);
    ck_assert_uint_eq(c->strings_base, 17);
    ck_assert(c->end);
    ck_assert_uint_eq(c->nstrings, 4);
    assert_strings(c->strings, strings, 4);
    ck_assert_uint_eq(c->nfiles, 3);
    ck_assert_mem_eq(c->files, files, sizeof files);
    ck_assert_uint_eq(c->nthreads, 2);
    ck_assert_mem_eq(c->threads, threads, sizeof threads);
    ck_assert_uint_eq(c->nclocks, 2);
    ck_assert_mem_eq(c->clocks, clocks, sizeof clocks);
    ck_assert_uint_eq(c->nio, 3);
    ck_assert_mem_eq(c->io, io, sizeof io);
    ck_assert_ptr_nonnull(c->counters);
    ck_assert_mem_eq(c->counters, &counters, sizeof counters);
#define SAME_VEC(field, n, want) \
    ck_assert_uint_eq(c->n, sizeof want / sizeof want[0]); \
    ck_assert_mem_eq(c->field, want, sizeof want)
    SAME_VEC(gpu, ngpu, gpu);
    SAME_VEC(syncs, nsyncs, syncs);
    SAME_VEC(colls, ncolls, colls);
    SAME_VEC(comms, ncomms, comms);
    SAME_VEC(mems, nmems, mems);
    SAME_VEC(samples, nsamples, samples);
    SAME_VEC(modules, nmodules, modules);
    SAME_VEC(ranges, nranges, ranges);
#undef SAME_VEC
    ck_assert_uint_eq(c->nstacks, 3);
    for (uint32_t i = 0; i < 3; i++) {
        ck_assert_uint_eq(c->stacks[i].id, stacks[i].id);
        ck_assert_uint_eq(c->stacks[i].nframes, stacks[i].nframes);
        if (stacks[i].nframes)
            ck_assert_mem_eq(c->stacks[i].frames, stacks[i].frames,
                             stacks[i].nframes * sizeof *stacks[i].frames);
    }

    const struct rsf_meta *m = c->meta;
    ck_assert_ptr_nonnull(m);
    ck_assert_uint_eq(m->format_version, RSF_FORMAT_VERSION);
    ck_assert_str_eq(m->host, "node-7");
    ck_assert_int_eq(m->pid, 4242);
    ck_assert_int_eq(m->ppid, -5);
    ck_assert_int_eq(m->rank, 3);
    ck_assert_int_eq(m->local_rank, -1);
    ck_assert_int_eq(m->world_size, INT32_MAX);
    ck_assert_int_eq(m->parent_rank, INT32_MIN);
    ck_assert_uint_eq(m->role, RSF_ROLE_CHILD);
    ck_assert_str_eq(m->job, "job.1");
    ck_assert_uint_eq(m->argc, 4);
    assert_strings(m->argv, argv_, 4);
    ck_assert_uint_eq(m->start.mono_ns, 1000);
    ck_assert_uint_eq(m->start.real_ns, 1700000000000000000ull);
    ck_assert_uint_eq(m->nsettings, 2);
    assert_strings(m->setting_keys, keys, 2);
    assert_strings(m->setting_values, values, 2);
    ck_assert_str_eq(m->agent_version, "0.1.0");
    ck_assert_int_eq(m->cuda_version, 12040);
    ck_assert_int_eq(m->nccl_version, -1);
    rsf_chunk_view_free(&v);
}
END_TEST

/* A chunk with nothing set reads back as the schema's defaults. */
START_TEST(round_trip_empty_chunk)
{
    const struct rsf_chunk empty = { 0 };
    size_t n = encode(&empty);
    struct rsf_chunk_view v;
    ck_assert_int_eq(rsf_chunk_decode((uint8_t *)enc_space, n, &v, NULL), RSF_ERR_OK);
    ck_assert_uint_eq(v.c.seq, 0);
    ck_assert_uint_eq(v.c.strings_base, 0);
    ck_assert_ptr_null(v.c.meta);
    ck_assert_ptr_null(v.c.counters);
    ck_assert_uint_eq(v.c.nstrings + v.c.nfiles + v.c.nthreads + v.c.nclocks + v.c.nio, 0);
    ck_assert(!v.c.end);
    rsf_chunk_view_free(&v);
}
END_TEST

/* Meta with its strings and vectors left out: the decoder gives NULL and
 * the defaults trace.fbs declares (-1 for ranks, role other). */
START_TEST(round_trip_sparse_meta)
{
    const struct rsf_meta sparse = { .rank = -1, .local_rank = -1, .world_size = -1,
                                     .parent_rank = -1, .role = RSF_ROLE_OTHER };
    const struct rsf_chunk c = { .seq = 1, .meta = &sparse };
    size_t n = encode(&c);
    struct rsf_chunk_view v;
    ck_assert_int_eq(rsf_chunk_decode((uint8_t *)enc_space, n, &v, NULL), RSF_ERR_OK);
    const struct rsf_meta *m = v.c.meta;
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_null(m->host);
    ck_assert_ptr_null(m->job);
    ck_assert_ptr_null(m->agent_version);
    ck_assert_uint_eq(m->argc, 0);
    ck_assert_uint_eq(m->nsettings, 0);
    ck_assert_int_eq(m->rank, -1);
    ck_assert_uint_eq(m->role, RSF_ROLE_OTHER);
    rsf_chunk_view_free(&v);
}
END_TEST

/* Every capacity short of the encoded size fails with RSF_ERR_SPACE and
 * writes nothing past the capacity. */
START_TEST(encode_reports_short_buffer)
{
    size_t n = encode(&full);
    static uint64_t small[8192];
    for (size_t cap = 0; cap < n; cap++) {
        memset(small, 0xA5, sizeof small);
        struct rsf_buf out = { (uint8_t *)small, 0, cap };
        ck_assert_int_eq(rsf_chunk_encode(&full, &out), RSF_ERR_SPACE);
        const uint8_t *p = (const uint8_t *)small;
        for (size_t i = cap; i < cap + 64; i++)
            ck_assert_msg(p[i] == 0xA5, "cap %zu: byte %zu written", cap, i);
    }
}
END_TEST

/* ---- a chunk built by hand ---- */

/* Chunk { seq: 7, strings: ["hello"], clocks: [{0x0102030405060708, 9}],
 * end: true }, laid out as flatc's readers expect; `flatc --json
 * --size-prefixed --raw-binary` prints exactly those values for it. */
static const uint8_t hand[96] __attribute__((aligned(8))) = {
    /*  0 size prefix: 96 - 4 */ 92, 0, 0, 0,
    /*  4 root: uoffset to the table at 36 */ 32, 0, 0, 0,
    /*  8 file identifier */ 'R', 'S', 'D', 'T',
    /* 12 vtable: 24 bytes long, table 20 bytes */ 24, 0, 20, 0,
    /* 16 field offsets by slot: seq 4, meta -, strings_base -, strings 8,
     *    files -, threads -, clocks 12, io -, counters -, end 16 */
    4, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0, 16, 0,
    /* 36 table: soffset back to the vtable (36 - 12) */ 24, 0, 0, 0,
    /* 40 seq */ 7, 0, 0, 0,
    /* 44 strings: uoffset to 56 */ 12, 0, 0, 0,
    /* 48 clocks: uoffset to 76 */ 28, 0, 0, 0,
    /* 52 end, then padding */ 1, 0, 0, 0,
    /* 56 strings vector: 1 element */ 1, 0, 0, 0,
    /* 60 uoffset to the string at 64 */ 4, 0, 0, 0,
    /* 64 string: length, bytes, NUL, padding */ 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0,
    /* 76 clocks vector: 1 element, at 80 (8-aligned) */ 1, 0, 0, 0,
    /* 80 ClockPair */ 8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0, 0, 0, 0, 0,
};

static uint64_t work_space[sizeof hand / 8];
static uint8_t *const work = (uint8_t *)work_space;

static void put32(size_t at, uint32_t v) { memcpy(work + at, &v, 4); }
static void put16(size_t at, uint16_t v) { memcpy(work + at, &v, 2); }

/* Decodes work[0..size), expecting err at byte offset at. */
static void expect(size_t size, int err, size_t at)
{
    struct rsf_chunk_view v;
    size_t where = 12345;
    int got = rsf_chunk_decode(work, size, &v, &where);
    ck_assert_msg(got == err, "got \"%s\", expected \"%s\"", rsf_strerror(got), rsf_strerror(err));
    if (err != RSF_ERR_OK)
        ck_assert_uint_eq(where, at);
    else
        rsf_chunk_view_free(&v);
}

static void setup_hand(void)
{
    memcpy(work, hand, sizeof hand);
}

START_TEST(decode_hand_built)
{
    struct rsf_chunk_view v;
    ck_assert_int_eq(rsf_chunk_decode(work, sizeof hand, &v, NULL), RSF_ERR_OK);
    ck_assert_uint_eq(v.c.seq, 7);
    ck_assert_uint_eq(v.c.strings_base, 0);
    ck_assert_uint_eq(v.c.nstrings, 1);
    ck_assert_str_eq(v.c.strings[0], "hello");
    ck_assert_uint_eq(v.c.nclocks, 1);
    ck_assert_uint_eq(v.c.clocks[0].mono_ns, 0x0102030405060708ull);
    ck_assert_uint_eq(v.c.clocks[0].real_ns, 9);
    ck_assert(v.c.end);
    ck_assert_ptr_null(v.c.meta);
    ck_assert_ptr_null(v.c.counters);
    ck_assert_uint_eq(v.c.nfiles + v.c.nthreads + v.c.nio, 0);
    rsf_chunk_view_free(&v);
}
END_TEST

/* Cut at every length: with the prefix as it was (it no longer matches),
 * and with the prefix rewritten to match (the cut then shows as an offset
 * or a vector past the end). Each is refused, at an offset inside the cut. */
START_TEST(verify_rejects_truncated)
{
    for (size_t n = 0; n < sizeof hand; n++) {
        setup_hand();
        expect(n, RSF_ERR_BAD_PREFIX, 0);
        if (n < 12)
            continue;
        put32(0, (uint32_t)n - 4);
        struct rsf_chunk_view v;
        size_t where = 0;
        int err = rsf_chunk_decode(work, n, &v, &where);
        ck_assert_msg(err != RSF_ERR_OK, "cut at %zu accepted", n);
        ck_assert_uint_lt(where, n);
    }
}
END_TEST

START_TEST(verify_rejects_wrong_identifier)
{
    work[11] = 'X';
    expect(sizeof hand, RSF_ERR_BAD_IDENT, 8);
}
END_TEST

START_TEST(verify_rejects_bad_size_prefix)
{
    static const uint32_t bad[] = { 0, 91, 93, 96, UINT32_MAX };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put32(0, bad[i]);
        expect(sizeof hand, RSF_ERR_BAD_PREFIX, 0);
    }
}
END_TEST

START_TEST(verify_rejects_out_of_range_offsets)
{
    put32(4, 1000); /* root */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 4);
    setup_hand();
    put32(4, 0); /* a uoffset of 0 points at itself */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 4);
    setup_hand();
    put32(44, 52); /* strings field: exactly the end of the buffer */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 44);
    setup_hand();
    put32(60, 0x80000000u); /* a string of the strings vector */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 60);
    setup_hand();
    put32(64, 1000); /* the string's length */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 64);
    setup_hand();
    put32(56, UINT32_MAX); /* the strings vector's count */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 56);
    setup_hand();
    put32(76, 2); /* two clock pairs where there is room for one */
    expect(sizeof hand, RSF_ERR_BAD_OFFSET, 76);
}
END_TEST

START_TEST(verify_rejects_misalignment)
{
    put32(48, 24); /* clocks at 72: their 8-byte elements would start at 76 */
    expect(sizeof hand, RSF_ERR_BAD_ALIGN, 72);
    setup_hand();
    put32(44, 14); /* strings vector at 58 */
    expect(sizeof hand, RSF_ERR_BAD_ALIGN, 58);
    setup_hand();
    put32(4, 34); /* the root table at 38 */
    expect(sizeof hand, RSF_ERR_BAD_ALIGN, 38);
    setup_hand();
    put16(16, 5); /* seq, a uint, at 41 */
    expect(sizeof hand, RSF_ERR_BAD_ALIGN, 41);
}
END_TEST

START_TEST(verify_rejects_bad_vtable)
{
    put32(36, (uint32_t)-100); /* vtable at 136, past the end */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 36);
    setup_hand();
    put32(36, 100); /* vtable before the buffer */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 36);
    setup_hand();
    put16(12, 200); /* vtable longer than the buffer */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 12);
    setup_hand();
    put16(12, 25); /* odd vtable size */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 12);
    setup_hand();
    put16(14, 100); /* table longer than the buffer */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 12);
    setup_hand();
    put16(16, 20); /* seq outside its table (20 bytes) */
    expect(sizeof hand, RSF_ERR_BAD_VTABLE, 12);
}
END_TEST

START_TEST(verify_rejects_unterminated_string)
{
    work[73] = '!';
    expect(sizeof hand, RSF_ERR_BAD_STRING, 64);
}
END_TEST

/* A vtable that lists fewer slots than the schema, as an older writer's
 * would, is fine: the fields it leaves out read as their defaults. */
START_TEST(verify_accepts_short_vtable)
{
    put16(12, 12); /* slots 0..3 only: clocks and end drop out */
    struct rsf_chunk_view v;
    ck_assert_int_eq(rsf_chunk_decode(work, sizeof hand, &v, NULL), RSF_ERR_OK);
    ck_assert_uint_eq(v.c.nstrings, 1);
    ck_assert_uint_eq(v.c.nclocks, 0);
    ck_assert(!v.c.end);
    rsf_chunk_view_free(&v);
}
END_TEST

/* Role is an enum of three values; anything else is a bad value, reported
 * at the Meta table. */
START_TEST(decode_rejects_unknown_role)
{
    size_t n = encode(&full);
    uint8_t *buf = (uint8_t *)enc_space;
    uint32_t m = rsf_fb_deref(buf, rsf_fb_root(buf), RSF_CHUNK_META);
    uint32_t at = rsf_fb_field(buf, m, RSF_META_ROLE);
    ck_assert_uint_ne(at, 0);
    buf[at] = 3;
    struct rsf_chunk_view v;
    size_t where = 0;
    ck_assert_int_eq(rsf_chunk_decode(buf, n, &v, &where), RSF_ERR_BAD_VALUE);
    ck_assert_uint_eq(where, m);
}
END_TEST

/* Each byte of a full chunk set to a few values: the decoder either
 * accepts the result or names an offset inside it; it never crashes. */
START_TEST(verify_survives_every_byte_changed)
{
    size_t n = encode(&full);
    static uint64_t copy_space[8192];
    uint8_t *copy = (uint8_t *)copy_space;
    static const uint8_t values_[] = { 0x00, 0x01, 0x7F, 0x80, 0xFF };
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof values_; k++) {
            memcpy(copy, enc_space, n);
            copy[i] = values_[k];
            struct rsf_chunk_view v;
            size_t where = 0;
            if (rsf_chunk_decode(copy, n, &v, &where) == RSF_ERR_OK)
                rsf_chunk_view_free(&v);
            else
                ck_assert_msg(where < n, "byte %zu = %u: offset %zu", i, values_[k], where);
        }
}
END_TEST

static Suite *format_suite(void)
{
    Suite *s = suite_create("format");
    TCase *t = tcase_create("round_trip_every_field");
    tcase_add_test(t, round_trip_every_field);
    suite_add_tcase(s, t);
#define CASE(name, fixture)                                         \
    t = tcase_create(#name);                                        \
    if (fixture)                                                    \
        tcase_add_checked_fixture(t, setup_hand, NULL);             \
    tcase_add_test(t, name);                                        \
    suite_add_tcase(s, t)
    CASE(round_trip_empty_chunk, 0);
    CASE(round_trip_sparse_meta, 0);
    CASE(encode_reports_short_buffer, 0);
    CASE(decode_hand_built, 1);
    CASE(verify_rejects_truncated, 1);
    CASE(verify_rejects_wrong_identifier, 1);
    CASE(verify_rejects_bad_size_prefix, 1);
    CASE(verify_rejects_out_of_range_offsets, 1);
    CASE(verify_rejects_misalignment, 1);
    CASE(verify_rejects_bad_vtable, 1);
    CASE(verify_rejects_unterminated_string, 1);
    CASE(verify_accepts_short_vtable, 1);
    CASE(decode_rejects_unknown_role, 0);
    CASE(verify_survives_every_byte_changed, 0);
#undef CASE
    return s;
}

RS_CHECK_MAIN(format_suite)
