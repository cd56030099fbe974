/* Unit tests of the Kineto trace reader (reporter/load/kineto.c): small traces
 * written here, whose every field is worked out by hand, in plain and gzip
 * form (one member or several, across the reader's piece boundaries);
 * broken inputs (cut short, corrupt, a wrong trailer, malformed, empty, not
 * a trace) that must give one clear error naming the file; and the real A100 traces
 * in ../shared/data/kineto, whose ranks and sizes the files themselves say. */
/* rs_check.h calls free() without including stdlib.h. */
#include <stdlib.h>

#include "tests/unit/rs_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "reporter/load/kineto.h"
#include "reporter/load/process.h"

#define DATA "../shared/data/kineto/"

static char tmp_path[64];

/* Writes text to a fresh temporary file (gzip-compressed when gz) and
 * returns its path; the suffix is what a user's file would have. */
static const char *write_trace(const char *text, int gz)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/rsr-kineto-XXXXXX%s", gz ? ".json.gz" : ".json");
    int fd = mkstemps(tmp_path, gz ? 8 : 5);
    ck_assert_int_ge(fd, 0);
    if (gz) {
        gzFile g = gzdopen(fd, "wb");
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
        ck_assert_int_eq(gzclose(g), Z_OK);
    } else {
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
    }
    return tmp_path;
}

/* The gzip form of text[0..len) as one member at zlib's level (0: stored,
 * as long as the text and a few bytes more), into out (cap bytes). */
static size_t gzip_member(const char *text, size_t len, int level, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    ck_assert_int_eq(deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (unsigned)len;
    z.next_out = out;
    z.avail_out = (unsigned)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = z.total_out;
    deflateEnd(&z);
    return n;
}

/* Writes data to a fresh temporary .json.gz file and returns its path. */
static const char *write_bytes(const unsigned char *data, size_t len)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/rsr-kineto-XXXXXX.json.gz");
    int fd = mkstemps(tmp_path, 8);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    return tmp_path;
}

static int load(const char *path, struct rsr_model *m, char *msg, size_t msglen)
{
    rsr_model_init(m);
    return rsr_kineto_load(path, m, msg, msglen);
}

/* One of each kind of event Kineto writes, plus ones the model ignores. */
static const char basic_trace[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"A100\"}],\n"
    " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 2, \"world_size\": 4},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 77, \"tid\": 78,\n"
    "   \"ts\": 990, \"dur\": 50, \"args\": {\"Input Dims\": [[2, 3], [3, 4]], \"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 77,\n"
    "   \"tid\": 78, \"ts\": 1000, \"dur\": 4, \"args\": {\"cbid\": 211, \"correlation\": 11}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"void gemm<float>(float*)\", \"pid\": 0,\n"
    "   \"tid\": 7, \"ts\": 1000.5, \"dur\": 20.25, \"args\": {\"device\": 0, \"stream\": 7,\n"
    "   \"correlation\": 11, \"grid\": [1, 1, 1]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuMemcpyAsync\", \"pid\": 77,\n"
    "   \"tid\": 79, \"ts\": 1010, \"dur\": 2, \"args\": {\"correlation\": 12}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\",\n"
    "   \"pid\": 0, \"tid\": 9, \"ts\": 1030, \"dur\": 3, \"args\": {\"device\": 0, \"stream\": 9,\n"
    "   \"correlation\": 12, \"bytes\": 4096}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0,\n"
    "   \"tid\": 7, \"ts\": 1040, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7,\n"
    "   \"correlation\": 13, \"bytes\": 8}},\n"
    "  {\"ph\": \"s\", \"id\": 11, \"pid\": 77, \"tid\": 78, \"ts\": 1000, \"cat\": \"ac2g\", \"name\": \"launch\"},\n"
    "  {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": 77, \"args\": {\"name\": \"py\"}}\n"
    " ]}\n";

static void check_basic(const char *path)
{
    struct rsr_model m;
    char msg[256];
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_int_eq(m.rank, 2);
    ck_assert_int_eq(m.world_size, 4);
    ck_assert_int_eq(m.role, RSR_ROLE_RANK);
    ck_assert_int_eq(m.pid, 77);
    ck_assert_uint_eq(m.n_ops, 3);
    ck_assert_uint_eq(m.n_launches, 2);
    ck_assert_uint_eq(m.dropped, 0);

    /* In start order. The kernel's 1000.5 us start rounds up, its 1020.75 us
     * end down (HTA's rounding). */
    const struct rsr_gpu_op *k = &m.ops[0], *cp = &m.ops[1], *set = &m.ops[2];
    ck_assert_int_eq(k->start_ns, 1001000);
    ck_assert_int_eq(k->end_ns, 1020000);
    ck_assert_int_eq(k->cls, RSR_GPU_COMPUTE);
    ck_assert_int_eq(k->stream, 7);
    ck_assert_uint_eq(k->correlation, 11);
    ck_assert_str_eq(rsr_model_str(&m, k->name), "void gemm<float>(float*)");
    ck_assert_int_eq(k->coll, -1);
    ck_assert_int_eq(cp->cls, RSR_GPU_MEMCPY);
    ck_assert_int_eq(cp->stream, 9);
    ck_assert_uint_eq(cp->bytes, 4096);
    ck_assert_int_eq(cp->start_ns, 1030000);
    ck_assert_int_eq(cp->end_ns, 1033000);
    ck_assert_int_eq(set->cls, RSR_GPU_MEMSET);
    ck_assert_uint_eq(set->bytes, 8);

    const struct rsr_launch *l = rsr_model_find_launch(&m, 12);
    ck_assert_ptr_nonnull(l);
    ck_assert_str_eq(rsr_model_str(&m, l->name), "cuMemcpyAsync");
    ck_assert_int_eq(l->tid, 79);
    ck_assert_int_eq(l->start_ns, 1010000);
    ck_assert_int_eq(l->end_ns, 1012000);
    ck_assert_ptr_null(rsr_model_find_launch(&m, 13));
    rsr_model_free(&m);
}

START_TEST(basic_plain)
{
    check_basic(write_trace(basic_trace, 0));
    unlink(tmp_path);
}
END_TEST

START_TEST(basic_gzip)
{
    check_basic(write_trace(basic_trace, 1));
    unlink(tmp_path);
}
END_TEST

/* A gzip file may hold several members, one after the other (`cat a.gz
 * b.gz`, or a writer that flushes in members), read as one text; bytes
 * after a member that do not begin another are ignored, as zlib and gzip
 * do. Split into two or three members at each of these points, with and
 * without zero bytes at the end, the basic trace must read as it does whole. */
START_TEST(gzip_members)
{
    size_t len = strlen(basic_trace);
    const size_t cuts[][2] = { { 1, 0 }, { 100, 0 }, { len / 2, 0 }, { len - 1, 0 }, { 200, 900 } };
    static unsigned char gz[3 * sizeof basic_trace + 256];
    for (size_t i = 0; i < 2 * sizeof cuts / sizeof cuts[0]; i++) {
        const size_t *cut = cuts[i / 2];
        size_t at[4] = { 0, cut[0], cut[1] ? cut[1] : len, len }, n = 0;
        for (size_t k = 0; k < 3 && at[k] < len; k++)
            n += gzip_member(basic_trace + at[k], at[k + 1] - at[k], 6, gz + n, sizeof gz - n);
        if (i % 2) {
            memset(gz + n, 0, 7);
            n += 7;
        }
        check_basic(write_bytes(gz, n));
        unlink(tmp_path);
    }
}
END_TEST

/* The reader takes the file 256 KiB at a time: a second member whose first
 * bytes (the gzip magic it is known by) lie just before, across or just
 * after such a boundary is read all the same. The first member is stored
 * (level 0), so that its length can be set to the byte. */
START_TEST(gzip_member_at_piece_end)
{
    const size_t piece = 256 * 1024, nev = 6000;
    size_t cap = nev * 128 + 64, len = 0;
    char *text = malloc(cap);
    unsigned char *gz = malloc(2 * cap);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(gz);
    len += (size_t)snprintf(text, cap, "{\"traceEvents\": [");
    for (size_t i = 0; i < nev; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"cat\": \"kernel\", \"name\": \"k%zu\", \"ts\": %zu, \"dur\": 3,"
                                " \"args\": {\"stream\": 7}}", i ? "," : "", i % 37, 10 * i);
    len += (size_t)snprintf(text + len, cap - len, "]}");
    ck_assert_uint_gt(len, piece + 4096);
    for (size_t want = piece - 3; want <= piece + 2; want++) {
        /* The first member's text, grown or shrunk until it is want bytes. */
        size_t first = want, n = 0;
        for (int tries = 0; tries < 8 && (n = gzip_member(text, first, 0, gz, 2 * cap)) != want; tries++)
            first = n < want ? first + (want - n) : first - (n - want);
        ck_assert_uint_eq(n, want);
        n += gzip_member(text + first, len - first, 6, gz + n, 2 * cap - n);
        struct rsr_model m;
        char msg[512];
        ck_assert_msg(load(write_bytes(gz, n), &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
        ck_assert_uint_eq(m.n_ops, nev);
        ck_assert_int_eq(m.ops[nev - 1].start_ns, (int64_t)(10 * (nev - 1)) * 1000);
        rsr_model_free(&m);
        unlink(tmp_path);
    }
    free(text);
    free(gz);
}
END_TEST

/* The trailer is checked: a file whose trailer gives a size one byte more or
 * less than its text, none, or one far too large, is an error naming the
 * file, however the text reads. */
START_TEST(gzip_trailer_checked)
{
    size_t len = strlen(basic_trace);
    static unsigned char gz[sizeof basic_trace + 256];
    const uint32_t sizes[] = { (uint32_t)len + 1, (uint32_t)len - 1, 0, 0xffffffffu };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = gzip_member(basic_trace, len, 6, gz, sizeof gz);
        for (int b = 0; b < 4; b++)
            gz[n - 4 + (size_t)b] = (unsigned char)(sizes[i] >> (8 * b));
        const char *path = write_bytes(gz, n);
        struct rsr_model m;
        char msg[512];
        int err = load(path, &m, msg, sizeof msg);
        ck_assert_msg(err == RSR_KINETO_ERR_GZIP, "size %u: %d %s", sizes[i], err, msg);
        ck_assert_msg(strncmp(msg, path, strlen(path)) == 0, "message does not name the file: %s", msg);
        rsr_model_free(&m);
        unlink(path);
    }
}
END_TEST

/* The document may also be a bare array of events (Chrome's trace format). */
START_TEST(bare_array)
{
    struct rsr_model m;
    char msg[256];
    const char *path = write_trace(
        "[{\"cat\": \"kernel\", \"name\": \"k\", \"ts\": 5, \"dur\": 2, \"args\": {\"stream\": 3}}]", 0);
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_eq(m.n_ops, 1);
    ck_assert_int_eq(m.ops[0].start_ns, 5000);
    ck_assert_int_eq(m.rank, -1);
    ck_assert_int_eq(m.role, RSR_ROLE_OTHER);
    rsr_model_free(&m);
    unlink(path);
}
END_TEST

START_TEST(nccl_collective)
{
    struct rsr_model m;
    char msg[256];
    const char *path = write_trace(
        "{\"distributedInfo\": {\"rank\": 6, \"world_size\": 8}, \"traceEvents\": [\n"
        " {\"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevComm*)\",\n"
        "  \"ts\": 100, \"dur\": 50, \"args\": {\"stream\": 40, \"device\": 6, \"correlation\": 1,\n"
        "  \"Collective name\": \"_allgather_base\", \"In msg nelems\": 1000,\n"
        "  \"Out msg nelems\": 4000, \"Group size\": 4, \"dtype\": \"Half\",\n"
        "  \"Process Group Name\": \"3\", \"Process Group Ranks\": \"[4, 5, 6, 7]\"}},\n"
        " {\"cat\": \"kernel\", \"name\": \"ncclKernel_SendRecv(ncclWorkElem)\", \"ts\": 200,\n"
        "  \"dur\": 5, \"args\": {\"stream\": 40, \"correlation\": 2}}\n"
        "]}", 0);
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_eq(m.n_ops, 2);
    ck_assert_uint_eq(m.n_colls, 1);
    ck_assert_int_eq(m.ops[0].cls, RSR_GPU_COMM);
    ck_assert_int_eq(m.ops[1].cls, RSR_GPU_COMM);
    ck_assert_int_eq(m.ops[1].coll, -1);
    ck_assert_int_eq(m.ops[0].coll, 0);
    const struct rsr_coll *c = &m.colls[0];
    ck_assert_int_eq(c->op, RSR_COLL_ALLGATHER);
    ck_assert_str_eq(rsr_coll_op_name(c->op), "AllGather");
    ck_assert_uint_eq(c->in_count, 1000);
    ck_assert_uint_eq(c->out_count, 4000);
    ck_assert_uint_eq(c->elem_size, 2);
    ck_assert_uint_eq(c->bytes, 8000);
    ck_assert_int_eq(c->group_size, 4);
    ck_assert_int_eq(c->rank_in_group, 2);
    ck_assert_str_eq(rsr_model_str(&m, c->dtype), "Half");
    ck_assert_str_eq(rsr_model_str(&m, c->comm), "3");
    ck_assert_str_eq(rsr_model_str(&m, c->members), "[4, 5, 6, 7]");
    rsr_model_free(&m);
    unlink(path);
}
END_TEST

/* Three profiler steps: HTA analyses what was launched before the last one
 * began. Launch 1 is in step 1; launch 2 starts exactly when step 3 does;
 * kernel 3 has no launch at all. So one kernel and one launch remain, and
 * two kernels and one launch are dropped. The collective of the dropped
 * NCCL kernel goes too, and the kept one's index follows. */
START_TEST(last_step_left_out)
{
    struct rsr_model m;
    char msg[256];
    const char *path = write_trace(
        "{\"traceEvents\": [\n"
        " {\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": 100},\n"
        " {\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"ts\": 100, \"dur\": 100},\n"
        " {\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#3\", \"ts\": 200, \"dur\": 100},\n"
        " {\"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 200, \"dur\": 5,\n"
        "  \"args\": {\"correlation\": 2}},\n"
        " {\"cat\": \"kernel\", \"name\": \"ncclKernel_AllReduce\", \"ts\": 210, \"dur\": 10,\n"
        "  \"args\": {\"stream\": 7, \"correlation\": 2, \"Collective name\": \"allreduce\"}},\n"
        " {\"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 10, \"dur\": 5,\n"
        "  \"args\": {\"correlation\": 1}},\n"
        " {\"cat\": \"kernel\", \"name\": \"ncclKernel_Broadcast\", \"ts\": 20, \"dur\": 10,\n"
        "  \"args\": {\"stream\": 7, \"correlation\": 1, \"Collective name\": \"broadcast\"}},\n"
        " {\"cat\": \"kernel\", \"name\": \"orphan\", \"ts\": 40, \"dur\": 10,\n"
        "  \"args\": {\"stream\": 7, \"correlation\": 3}}\n"
        "]}", 0);
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_eq(m.n_ops, 1);
    ck_assert_uint_eq(m.n_launches, 1);
    ck_assert_uint_eq(m.dropped, 3);
    ck_assert_uint_eq(m.ops[0].correlation, 1);
    ck_assert_uint_eq(m.n_colls, 1);
    ck_assert_int_eq(m.ops[0].coll, 0);
    ck_assert_int_eq(m.colls[0].op, RSR_COLL_BROADCAST);
    rsr_model_free(&m);
    unlink(path);
}
END_TEST

/* A single step (one name, even if repeated) is kept whole, as HTA does. */
START_TEST(one_step_kept_whole)
{
    struct rsr_model m;
    char msg[256];
    const char *path = write_trace(
        "{\"traceEvents\": [\n"
        " {\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": 100},\n"
        " {\"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#1\", \"ts\": 50, \"dur\": 100},\n"
        " {\"cat\": \"kernel\", \"name\": \"orphan\", \"ts\": 60, \"dur\": 10,\n"
        "  \"args\": {\"stream\": 7, \"correlation\": 3}}\n"
        "]}", 0);
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_eq(m.n_ops, 1);
    ck_assert_uint_eq(m.dropped, 0);
    rsr_model_free(&m);
    unlink(path);
}
END_TEST

START_TEST(empty_events)
{
    struct rsr_model m;
    char msg[256];
    const char *path = write_trace("{\"traceEvents\": []}", 0);
    ck_assert_msg(load(path, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_eq(m.n_ops, 0);
    ck_assert_uint_eq(m.n_launches, 0);
    rsr_model_free(&m);
    unlink(path);
}
END_TEST

/* Loads text expected to fail with err; the message must name the file and
 * contain where (when given). */
static void expect_error(const char *text, int gz, int err, const char *where)
{
    struct rsr_model m;
    char msg[512];
    const char *path = write_trace(text, gz);
    int got = load(path, &m, msg, sizeof msg);
    ck_assert_msg(got == err, "got %d (%s), want %d", got, msg, err);
    ck_assert_msg(strncmp(msg, path, strlen(path)) == 0, "message does not name the file: %s", msg);
    if (where)
        ck_assert_msg(strstr(msg, where), "message lacks \"%s\": %s", where, msg);
    rsr_model_free(&m);
    unlink(path);
}

START_TEST(malformed_json)
{
    /* The comma missing at byte 40 is found on reading the key after it,
     * which ends at byte 42. */
    for (int gz = 0; gz < 2; gz++)
        expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"k\" \"name\": \"k\"}]}", gz,
                     RSR_KINETO_ERR_JSON, "byte 42:");
}
END_TEST

START_TEST(json_cut_short)
{
    for (int gz = 0; gz < 2; gz++)
        expect_error("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\"", gz,
                     RSR_KINETO_ERR_TRUNCATED, "byte 44: cut short");
}
END_TEST

START_TEST(empty_file)
{
    expect_error("", 0, RSR_KINETO_ERR_NOT_TRACE, "empty");
    expect_error("", 1, RSR_KINETO_ERR_NOT_TRACE, "empty");
}
END_TEST

START_TEST(not_a_trace)
{
    expect_error("{\"foo\": [1, 2, {\"traceEvents\": []}]}", 0, RSR_KINETO_ERR_NOT_TRACE, "traceEvents");
    expect_error("42", 0, RSR_KINETO_ERR_NOT_TRACE, NULL);
}
END_TEST

START_TEST(missing_file)
{
    struct rsr_model m;
    char msg[256];
    ck_assert_int_eq(load("/nonexistent/t.json.gz", &m, msg, sizeof msg), RSR_KINETO_ERR_OPEN);
    ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/t.json.gz"));
    rsr_model_free(&m);
}
END_TEST

/* A gzip file cut at each of several points, and one with a byte changed:
 * every one is an error, none a crash. */
static char *big_trace(void)
{
    size_t cap = 1 << 20, n = 0;
    char *s = malloc(cap);
    n += (size_t)snprintf(s + n, cap - n, "{\"traceEvents\": [");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "%s{\"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, \"dur\": 3,"
                              " \"args\": {\"stream\": 7, \"correlation\": %d}}",
                              i ? "," : "", i % 37, i * 10, i);
    snprintf(s + n, cap - n, "]}");
    return s;
}

START_TEST(gzip_truncated)
{
    char *text = big_trace();
    const char *path = write_trace(text, 1);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char gz[1 << 20];
    size_t len = fread(gz, 1, sizeof gz, f);
    fclose(f);
    ck_assert_uint_gt(len, 100);
    for (size_t cut = 20; cut < len; cut += len / 7) {
        f = fopen(path, "wb");
        fwrite(gz, 1, cut, f);
        fclose(f);
        struct rsr_model m;
        char msg[512];
        int err = load(path, &m, msg, sizeof msg);
        ck_assert_msg(err == RSR_KINETO_ERR_TRUNCATED, "cut at %zu: %d %s", cut, err, msg);
        ck_assert_ptr_nonnull(strstr(msg, path));
        rsr_model_free(&m);
    }
    unlink(path);
    free(text);
}
END_TEST

START_TEST(gzip_corrupt)
{
    char *text = big_trace();
    const char *path = write_trace(text, 1);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, len / 2, SEEK_SET);
    fputc(0x55 ^ 0xff, f);
    fputc(0xaa, f);
    fclose(f);
    struct rsr_model m;
    char msg[512];
    int err = load(path, &m, msg, sizeof msg);
    ck_assert_msg(err == RSR_KINETO_ERR_GZIP || err == RSR_KINETO_ERR_JSON, "%d %s", err, msg);
    ck_assert_ptr_nonnull(strstr(msg, path));
    rsr_model_free(&m);
    unlink(path);
    free(text);
}
END_TEST

/* The real traces: identity as distributedInfo gives it, and GPU work
 * only on the streams the files have. */
START_TEST(real_traces)
{
    static const struct { const char *file; int rank, world; } files[] = {
        { DATA "a100-8rank-r3-control.json.gz", 3, 8 },
        { DATA "a100-r1-test.json.gz", 1, 2 },
        { DATA "a100-2rank-r0-nccl.json.gz", 0, 2 },
        { DATA "sampled-2rank/sampled_rank-0.json.gz", 0, 128 },
        { DATA "sampled-2rank/sampled_rank-1.json.gz", 1, 128 },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct rsr_model m;
        char msg[512];
        ck_assert_msg(load(files[i].file, &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
        ck_assert_int_eq(m.rank, files[i].rank);
        ck_assert_int_eq(m.world_size, files[i].world);
        ck_assert_uint_gt(m.n_ops, 100);
        ck_assert_uint_gt(m.n_launches, 100);
        for (size_t k = 0; k < m.n_ops; k++) {
            ck_assert_int_le(m.ops[k].start_ns, m.ops[k].end_ns);
            ck_assert(k == 0 || m.ops[k - 1].start_ns <= m.ops[k].start_ns);
            ck_assert_ptr_nonnull(rsr_model_find_launch(&m, m.ops[k].correlation));
        }
        rsr_model_free(&m);
    }
}
END_TEST

/* The only trace with NCCL arguments: allreduces of float and broadcasts,
 * in the default group [0, 1], of which this is rank 0. */
START_TEST(real_collectives)
{
    struct rsr_model m;
    char msg[512];
    ck_assert_msg(load(DATA "a100-2rank-r0-nccl.json.gz", &m, msg, sizeof msg) == RSR_KINETO_ERR_OK, "%s", msg);
    ck_assert_uint_gt(m.n_colls, 0);
    for (size_t i = 0; i < m.n_colls; i++) {
        const struct rsr_coll *c = &m.colls[i];
        ck_assert(c->op == RSR_COLL_ALLREDUCE || c->op == RSR_COLL_BROADCAST);
        ck_assert_int_eq(c->group_size, 2);
        ck_assert_int_eq(c->rank_in_group, 0);
        ck_assert_str_eq(rsr_model_str(&m, c->members), "[0, 1]");
        ck_assert_uint_eq(c->bytes, c->in_count * c->elem_size);
    }
    rsr_model_free(&m);
}
END_TEST

static Suite *kineto_suite(void)
{
    const struct rs_test tests[] = {
        { "kineto_basic_plain", basic_plain },
        { "kineto_basic_gzip", basic_gzip },
        { "kineto_bare_array", bare_array },
        { "kineto_nccl_collective", nccl_collective },
        { "kineto_last_step_left_out", last_step_left_out },
        { "kineto_one_step_kept_whole", one_step_kept_whole },
        { "kineto_empty_events", empty_events },
        { "kineto_malformed_json", malformed_json },
        { "kineto_json_cut_short", json_cut_short },
        { "kineto_empty_file", empty_file },
        { "kineto_not_a_trace", not_a_trace },
        { "kineto_missing_file", missing_file },
        { "kineto_gzip_truncated", gzip_truncated },
        { "kineto_gzip_corrupt", gzip_corrupt },
        { "kineto_gzip_members", gzip_members },
        { "kineto_gzip_member_at_piece_end", gzip_member_at_piece_end },
        { "kineto_gzip_trailer_checked", gzip_trailer_checked },
        { "kineto_real_traces", real_traces },
        { "kineto_real_collectives", real_collectives },
    };
    return RS_SUITE("kineto", tests, 30);
}

RS_CHECK_MAIN(kineto_suite)
