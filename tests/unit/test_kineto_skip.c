/* Unit tests of the Kineto reader's scanner (kineto.c), which cuts CPU-side
 * events out of the text before yajl sees it: traces generated here with a
 * seeded mix of events, escapes and nesting, and with an escape, a key or an
 * element's first byte placed exactly on the boundary between the reader's
 * pieces; every kernel, name and time the generator wrote must come back,
 * and the wall time and pid the skipped events carry. Then seeded mutations
 * of a small trace: any result, but never a crash, and an error names the
 * file. */
/* rs_check.h calls free() without including stdlib.h. */
#include <stdlib.h>

#include "tests/unit/rs_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "reporter/load/kineto.h"
#include "reporter/load/process.h"

/* kineto.c hands the parser pieces of this many bytes (READ_CHUNK). */
#define PIECE (256 * 1024)
#define NKERNELS 3000

struct text {
    char *s;
    size_t n, cap;
};

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(k, 0);
        if ((size_t)k < t->cap - t->n) {
            t->n += (size_t)k;
            return;
        }
        t->cap = t->cap * 2 + (size_t)k + 1;
        t->s = realloc(t->s, t->cap);
        ck_assert_ptr_nonnull(t->s);
    }
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* What the generator wrote that the model must hold. */
struct truth {
    int64_t wall_start_us, wall_end_us;
    int64_t pid;
    int nkernels;
};

/* Kernel i's name as JSON text and as the model must hold it. */
static void kernel_name(int i, char *json, char *plain, size_t len)
{
    switch (i % 4) {
    case 0:
        snprintf(json, len, "void k%d<\\\"q\\\">(float*)", i);
        snprintf(plain, len, "void k%d<\"q\">(float*)", i);
        break;
    case 1:
        snprintf(json, len, "k%d\\\\path\\\\{[x]}", i);
        snprintf(plain, len, "k%d\\path\\{[x]}", i);
        break;
    case 2:
        snprintf(json, len, "caf\\u00e9_k%d", i);
        snprintf(plain, len, "caf\xc3\xa9_k%d", i);
        break;
    default:
        snprintf(json, len, "k%d", i);
        snprintf(plain, len, "k%d", i);
        break;
    }
}

/* The traceEvents body: kernels with launches, CPU operators with nested
 * args and tricky strings, flow events, in a seeded mix and spacing. */
static void body(struct text *t, uint64_t seed, struct truth *tr)
{
    memset(tr, 0, sizeof *tr);
    tr->wall_start_us = INT64_MAX;
    tr->pid = 4321;
    int64_t ts = 1000000;
    for (int i = 0; i < NKERNELS; i++) {
        const char *sp = (rnd(&seed) & 1) ? "\n    " : " ";
        int64_t cpu_ts = ts - 50 - (int64_t)(rnd(&seed) % 30);
        put(t, "%s{\"ph\": \"X\",%s\"cat\": \"cpu_op\", \"name\": \"aten::mm \\\"}{[\\\\\", \"pid\": %lld,"
               " \"tid\": 9,%s\"ts\": %lld, \"dur\": 40, \"args\": {\"Input Dims\": [[2, 3], [3, {\"a\": \"]\"}]],"
               " \"Call stack\": \"a.py(1): f\\\\n{\", \"x\": [\"\\\"\", {}]}},",
          i ? "," : "", sp, (long long)tr->pid, sp, (long long)cpu_ts);
        if (cpu_ts < tr->wall_start_us)
            tr->wall_start_us = cpu_ts;
        if (cpu_ts + 40 > tr->wall_end_us)
            tr->wall_end_us = cpu_ts + 40;
        char json[96], plain[96];
        kernel_name(i, json, plain, sizeof json);
        put(t, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": %lld,"
               " \"tid\": 9, \"ts\": %lld, \"dur\": 5, \"args\": {\"correlation\": %d}},%s",
          (long long)tr->pid, (long long)(ts - 10), i + 1, sp);
        put(t, "{\"ph\": \"f\", \"id\": %d, \"pid\": 0, \"tid\": 7, \"ts\": %lld, \"cat\": \"ac2g\", \"name\": \"ac2g\"},",
          i + 1, (long long)ts);
        put(t, "{\"ph\": \"X\",%s\"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7,%s\"ts\": %lld,"
               " \"dur\": 20, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": %d, \"grid\": [1, 1, 1]}}",
          sp, json, sp, (long long)ts, i + 1);
        if (ts + 20 > tr->wall_end_us)
            tr->wall_end_us = ts + 20;
        ts += 100 + (int64_t)(rnd(&seed) % 50);
    }
    tr->nkernels = NKERNELS;
}

/* The whole trace with a top-level pad string of pad bytes before it. */
static char *trace_text(size_t pad, uint64_t seed, struct truth *tr, size_t *len)
{
    struct text t = { malloc(1 << 16), 0, 1 << 16 };
    ck_assert_ptr_nonnull(t.s);
    put(&t, "{\"schemaVersion\": 1, \"pad\": \"");
    for (size_t i = 0; i < pad; i++)
        put(&t, " ");
    put(&t, "\", \"distributedInfo\": {\"rank\": 1, \"world_size\": 2}, \"traceEvents\": [");
    body(&t, seed, tr);
    put(&t, "], \"baseTimeNanoseconds\": 1700000000000000000}");
    *len = t.n;
    return t.s;
}

static const char *write_file(const char *text, size_t len, int gz, char *path, size_t pathlen)
{
    snprintf(path, pathlen, "/tmp/rsr-kskip-XXXXXX%s", gz ? ".json.gz" : ".json");
    int fd = mkstemps(path, gz ? 8 : 5);
    ck_assert_int_ge(fd, 0);
    if (gz) {
        gzFile g = gzdopen(fd, "wb1");
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(gzwrite(g, text, (unsigned)len), (int)len);
        ck_assert_int_eq(gzclose(g), Z_OK);
    } else {
        ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
        close(fd);
    }
    return path;
}

static void check_model(const char *text, size_t len, int gz, const struct truth *tr, const char *what)
{
    char path[64], msg[512];
    write_file(text, len, gz, path, sizeof path);
    struct rsr_model m;
    struct rsr_kineto_info info;
    rsr_model_init(&m);
    int err = rsr_kineto_load_info(path, &m, &info, msg, sizeof msg);
    unlink(path);
    ck_assert_msg(err == RSR_KINETO_ERR_OK, "%s: %s", what, msg);
    ck_assert_msg(m.n_ops == (size_t)tr->nkernels, "%s: %zu kernels, wrote %d", what, m.n_ops, tr->nkernels);
    ck_assert_uint_eq(m.n_launches, (size_t)tr->nkernels);
    for (size_t i = 0; i < m.n_ops; i++) {
        char json[96], plain[96];
        kernel_name((int)i, json, plain, sizeof json);
        ck_assert_msg(strcmp(rsr_model_str(&m, m.ops[i].name), plain) == 0, "%s: kernel %zu is \"%s\", want \"%s\"",
                      what, i, rsr_model_str(&m, m.ops[i].name), plain);
        ck_assert_uint_eq(m.ops[i].correlation, i + 1);
        ck_assert_ptr_nonnull(rsr_model_find_launch(&m, i + 1));
    }
    ck_assert_int_eq(m.rank, 1);
    ck_assert_int_eq(m.world_size, 2);
    ck_assert_int_eq(m.pid, tr->pid);
    ck_assert(info.has_base_time && info.base_time_ns == 1700000000000000000ll);
    ck_assert_msg(m.wall_start_ns == tr->wall_start_us * 1000 && m.wall_end_ns == tr->wall_end_us * 1000,
                  "%s: wall %lld..%lld, want %lld..%lld us", what, (long long)m.wall_start_ns / 1000,
                  (long long)m.wall_end_ns / 1000, (long long)tr->wall_start_us, (long long)tr->wall_end_us);
    rsr_model_free(&m);
}

/* Seeded mixes, plain and gzip, with the piece boundaries wherever they fall. */
START_TEST(mixed_events)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct truth tr;
        size_t len;
        char *text = trace_text((size_t)(seed * 977), seed * 0x9e3779b97f4a7c15ull, &tr, &len);
        ck_assert_uint_gt(len, 3 * PIECE);
        char what[64];
        snprintf(what, sizeof what, "seed %llu plain", (unsigned long long)seed);
        check_model(text, len, 0, &tr, what);
        snprintf(what, sizeof what, "seed %llu gzip", (unsigned long long)seed);
        check_model(text, len, 1, &tr, what);
        free(text);
    }
}
END_TEST

/* The pad that moves the byte at offset at of the unpadded text (pad 0) to
 * offset PIECE + where of the padded one (-1: the first piece's last byte). */
static size_t pad_for(size_t at, long where)
{
    size_t want = (size_t)((long)PIECE + where);
    ck_assert_uint_ge(want, at);
    return want - at;
}

/* Places chosen bytes on the first piece boundary: the backslash of an
 * escape in a skipped and in a kept event as the last byte of a piece, the
 * middle of a kept event's key, an element's opening brace. */
START_TEST(piece_boundaries)
{
    const uint64_t seed = 42;
    struct truth tr;
    size_t len;
    char *base = trace_text(0, seed, &tr, &len);
    /* needle, the byte of it to place, where it goes relative to PIECE */
    struct { const char *needle; size_t index; long where; const char *what; } spots[] = {
        { "aten::mm \\\"", 9, -1, "escape in a skipped event" },
        { "<\\\"q", 1, -1, "escape in a kept name" },
        { "\"correlation\": 3", 4, 0, "key of a kept event" },
        { "{\"ph\": \"X\", \"cat\": \"cuda_runtime\"", 0, 0, "first byte of an element" },
        { "{\"ph\": \"X\", \"cat\": \"cuda_runtime\"", 0, -1, "last byte before an element" },
    };
    for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
        /* The first match after the first piece's worth of text. */
        const char *at = strstr(base + PIECE / 2, spots[k].needle);
        ck_assert_ptr_nonnull(at);
        ck_assert_int_eq(at[spots[k].index], spots[k].needle[spots[k].index]);
        size_t pad = pad_for((size_t)(at - base) + spots[k].index, spots[k].where);
        struct truth t2;
        size_t len2;
        char *text = trace_text(pad, seed, &t2, &len2);
        size_t on = (size_t)((long)PIECE + spots[k].where);
        ck_assert_int_eq(text[on], spots[k].needle[spots[k].index]);
        check_model(text, len2, 0, &t2, spots[k].what);
        free(text);
    }
    free(base);
}
END_TEST

/* Seeded byte changes and cuts of a small trace: no crash, and an error
 * is one of the reader's and names the file. */
START_TEST(mutations)
{
    const char *trace =
        "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\\\"b\", \"pid\": 1, \"ts\": 1, \"dur\": 2,"
        " \"args\": {\"x\": [1, {\"y\": \"}\"}]}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"ts\": 2,"
        " \"dur\": 1, \"args\": {\"correlation\": 5}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\\\\1\", \"pid\": 0, \"ts\": 3, \"dur\": 4,"
        " \"args\": {\"stream\": 7, \"correlation\": 5}},"
        "{\"ph\": \"f\", \"cat\": \"ac2g\", \"id\": 5, \"pid\": 0, \"ts\": 3}]}";
    size_t len = strlen(trace);
    char *buf = malloc(len + 1);
    ck_assert_ptr_nonnull(buf);
    uint64_t seed = 0x1234567;
    static const char alphabet[] = "{}[]\":,\\ a0-.e";
    for (int iter = 0; iter < 600; iter++) {
        memcpy(buf, trace, len + 1);
        size_t n = len;
        int changes = 1 + (int)(rnd(&seed) % 3);
        for (int c = 0; c < changes; c++)
            buf[rnd(&seed) % n] = alphabet[rnd(&seed) % (sizeof alphabet - 1)];
        if (rnd(&seed) % 4 == 0)
            n = rnd(&seed) % n;
        char path[64], msg[512];
        write_file(buf, n, (int)(iter & 1), path, sizeof path);
        struct rsr_model m;
        rsr_model_init(&m);
        int err = rsr_kineto_load(path, &m, msg, sizeof msg);
        ck_assert_msg(err >= RSR_KINETO_ERR_OK && err <= RSR_KINETO_ERR_NOMEM, "iteration %d: %d", iter, err);
        if (err != RSR_KINETO_ERR_OK)
            ck_assert_msg(strncmp(msg, path, strlen(path)) == 0, "iteration %d: %s", iter, msg);
        rsr_model_free(&m);
        unlink(path);
    }
    free(buf);
}
END_TEST

static Suite *skip_suite(void)
{
    const struct rs_test tests[] = {
        { "kineto_skip_mixed_events", mixed_events },
        { "kineto_skip_piece_boundaries", piece_boundaries },
        { "kineto_skip_mutations", mutations },
    };
    return RS_SUITE("kineto_skip", tests, 120);
}

RS_CHECK_MAIN(skip_suite)
