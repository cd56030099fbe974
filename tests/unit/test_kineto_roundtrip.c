/* Round trips of the real A100 traces in ../shared/data/kineto: each is read
 * (figures A), written as a ringside trace by import-kineto and read back
 * (figures B), and exported as Perfetto JSON and read back by the Kineto
 * reader (figures C). B and C must equal A, and all three must agree with
 * HTA's own figures (expected-hta.json) within 0.5 points: the truth is
 * HTA's, not this code's; B's SM figures (launch geometry) must equal A's.
 * The ringside file is read back with the report's
 * loader (load.c), and its records are held against the Kineto text itself
 * (counted here by a plain text scan). */
/* rs_check.h calls free() without including stdlib.h. */
#include <stdlib.h>

#include "tests/unit/rs_check.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>
#include <zlib.h>

#include "reporter/load/gpu_breakdown.h"
#include "reporter/job/import_kineto.h"
#include "reporter/load/kineto.h"
#include "reporter/load/load.h"
#include "reporter/out/perfetto.h"
#include "reporter/load/process.h"

#define DATA "../shared/data/kineto/"
#define US 1000

/* The traces and the expected-hta.json entry each belongs to. */
static const struct { const char *file, *entry; } traces[] = {
    { "a100-8rank-r3-control.json.gz", "a100-8rank-r3-control.json.gz" },
    { "a100-r1-test.json.gz", "a100-r1-test.json.gz" },
    { "a100-2rank-r0-nccl.json.gz", "a100-2rank-r0-nccl.json.gz" },
    { "sampled-2rank/sampled_rank-0.json.gz", "sampled-2rank/ (both files)" },
    { "sampled-2rank/sampled_rank-1.json.gz", "sampled-2rank/ (both files)" },
};

static void near(double got, double want, double tol, const char *what)
{
    ck_assert_msg(fabs(got - want) <= tol, "%s: got %.4f, want %.4f", what, got, want);
}

static yajl_val at(yajl_val v, const char *key)
{
    const char *path[] = { key, NULL };
    return v ? yajl_tree_get(v, path, yajl_t_any) : NULL;
}

static double num(yajl_val v, const char *key)
{
    yajl_val n = at(v, key);
    return n && YAJL_IS_NUMBER(n) ? YAJL_GET_DOUBLE(n) : NAN;
}

static yajl_val load_expected(void)
{
    FILE *f = fopen(DATA "expected-hta.json", "rb");
    ck_assert_msg(f != NULL, "cannot open " DATA "expected-hta.json");
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    char err[256];
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    ck_assert_msg(root && YAJL_IS_OBJECT(root), "expected-hta.json: %s", err);
    return root;
}

/* HTA's figures for one rank of an entry. */
static yajl_val hta_rank(yajl_val root, const char *entry, int rank)
{
    char key[16];
    snprintf(key, sizeof key, "%d", rank);
    yajl_val v = at(at(root, entry), "ranks");
    return at(v, key);
}

static void check_hta(const struct rsr_gpu_breakdown *b, yajl_val want, const char *what)
{
    ck_assert_msg(want != NULL, "%s: no HTA figures", what);
    near(b->idle_pct, num(want, "idle_pct"), 0.5, what);
    near(b->compute_pct, num(want, "compute_pct"), 0.5, what);
    near(b->non_compute_pct, num(want, "non_compute_pct"), 0.5, what);
    near(b->comm_comp_overlap_pct, num(want, "comm_comp_overlap_pct"), 0.5, what);
    near((double)b->span_ns / US, num(want, "kernel_time_us"), 1, what);
}

/* B and C against A: the same intervals give the same figures exactly. */
static void check_same(const struct rsr_gpu_breakdown *got, const struct rsr_gpu_breakdown *a,
                       const char *what)
{
    ck_assert_msg(got->span_ns == a->span_ns, "%s: span %lld, want %lld", what,
                  (long long)got->span_ns, (long long)a->span_ns);
    ck_assert_msg(got->idle_ns == a->idle_ns, "%s: idle differs", what);
    ck_assert_msg(got->compute_ns == a->compute_ns, "%s: compute differs", what);
    ck_assert_msg(got->comm_ns == a->comm_ns, "%s: comm differs", what);
    ck_assert_msg(got->memcpy_ns == a->memcpy_ns, "%s: memcpy differs", what);
    ck_assert_msg(got->overlap_ns == a->overlap_ns, "%s: overlap differs", what);
    ck_assert_uint_eq(got->n_streams, a->n_streams);
    for (size_t i = 0; i < a->n_streams; i++) {
        ck_assert_int_eq(got->streams[i].stream, a->streams[i].stream);
        ck_assert_uint_eq(got->streams[i].ops, a->streams[i].ops);
        ck_assert_msg(got->streams[i].host_wait_ns == a->streams[i].host_wait_ns &&
                      got->streams[i].kernel_wait_ns == a->streams[i].kernel_wait_ns &&
                      got->streams[i].other_ns == a->streams[i].other_ns,
                      "%s: stream %d idle split differs", what, a->streams[i].stream);
    }
}

/* Counts occurrences of needle in the inflated text of a .json.gz file. */
static uint64_t count_in_trace(const char *path, const char *needle)
{
    gzFile g = gzopen(path, "rb");
    ck_assert_ptr_nonnull(g);
    static char buf[1 << 20];
    size_t nl = strlen(needle), keep = 0;
    uint64_t n = 0;
    for (;;) {
        int got = gzread(g, buf + keep, (unsigned)(sizeof buf - 1 - keep));
        ck_assert_int_ge(got, 0);
        if (got == 0)
            break;
        size_t len = keep + (size_t)got;
        buf[len] = '\0';
        for (char *p = buf; (p = memmem(p, len - (size_t)(p - buf), needle, nl)); p += nl)
            n++;
        keep = len >= nl ? nl - 1 : len;
        memmove(buf, buf + len - keep, keep);
    }
    gzclose(g);
    return n;
}

START_TEST(roundtrip)
{
    yajl_val root = load_expected();
    char dir[] = "/tmp/rsr-roundtrip-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (size_t t = 0; t < sizeof traces / sizeof traces[0]; t++) {
        char in[512], out[4096], json[600], msg[1024], what[300];
        snprintf(in, sizeof in, DATA "%s", traces[t].file);

        /* A: the Kineto reader. */
        struct rsr_model a;
        struct rsr_kineto_info info;
        struct rsr_gpu_breakdown ba, bb, bc;
        rsr_model_init(&a);
        ck_assert_msg(rsr_kineto_load_info(in, &a, &info, msg, sizeof msg) == 0, "%s", msg);
        ck_assert_int_eq(rsr_gpu_breakdown_compute(&a, RSR_KERNEL_WAIT_NS, &ba), 0);
        yajl_val want = hta_rank(root, traces[t].entry, a.rank);
        snprintf(what, sizeof what, "%s rank %d (A: Kineto)", traces[t].file, a.rank);
        check_hta(&ba, want, what);

        /* B: import-kineto's ringside file, read back. */
        ck_assert_msg(rsr_import_write(&a, &info, in, dir, out, sizeof out, msg, sizeof msg) == 0,
                      "%s", msg);
        char name[64];
        snprintf(name, sizeof name, "/rank-%d.unknown.%lld.", a.rank, (long long)a.pid);
        ck_assert_msg(strstr(out, name) && strstr(out, ".trace.lz4"), "file name %s", out);
        struct rsr_input ri;
        rsr_input_load(&ri, out);
        ck_assert_int_eq(ri.open_failed, 0);
        ck_assert_uint_eq(ri.walk.nproblems, 0);
        ck_assert(ri.walk.saw_end && ri.has_meta);
        ck_assert_ptr_nonnull(ri.model);
        ck_assert(!ri.model_incomplete);
        const struct rsr_model *b = ri.model;
        ck_assert_int_eq(b->rank, a.rank);
        ck_assert_int_eq(b->world_size, a.world_size);
        ck_assert_int_eq(b->pid, a.pid);
        /* Collectives the ringside loader adds for NCCL calls whose kernel
         * it did not see would be extra ops: there must be none. */
        ck_assert_uint_eq(b->n_ops, a.n_ops);
        /* More than one chunk for the big traces: chunks stay bounded. */
        ck_assert_uint_eq(ri.walk.nchunks, a.n_ops / RSR_IMPORT_CHUNK_EVENTS + 1);
        ck_assert_int_eq(rsr_gpu_breakdown_compute(b, RSR_KERNEL_WAIT_NS, &bb), 0);
        snprintf(what, sizeof what, "%s rank %d (B: ringside file)", traces[t].file, a.rank);
        check_same(&bb, &ba, what);
        check_hta(&bb, want, what);
        /* Launch geometry: every kernel has it where the trace lists its
         * GPUs ("deviceProperties"), none where not; the file carries it
         * (Launch, Function, Device), so B's figures are A's. */
        bool devices = count_in_trace(in, "\"deviceProperties\"") > 0;
        ck_assert_msg(devices ? ba.no_geometry_pct == 0 && ba.sm_activity_pct > 0
                              : ba.no_geometry_pct == 100 && ba.sm_activity_pct == 0,
                      "%s: no geometry %.2f%%, SM activity %.2f%%", what, ba.no_geometry_pct,
                      ba.sm_activity_pct);
        near(bb.sm_activity_pct, ba.sm_activity_pct, 1e-9, "SM activity, B");
        near(bb.sm_occupancy_pct, ba.sm_occupancy_pct, 1e-9, "SM occupancy, B");
        near(bb.no_geometry_pct, ba.no_geometry_pct, 1e-9, "no geometry, B");
        /* kernel by kernel, as sums (ops starting together may swap) */
        double geom[2][4] = { { 0 } };
        for (size_t i = 0; i < a.n_ops; i++) {
            const struct rsr_gpu_op *ops[2] = { &a.ops[i], &b->ops[i] };
            for (int k = 0; k < 2; k++) {
                const struct rsr_gpu_op *x = ops[k];
                geom[k][0] += x->has_geom;
                geom[k][1] += (double)x->blocks * x->threads_per_block;
                geom[k][2] += (double)(x->end_ns - x->start_ns) * x->occupancy;
                geom[k][3] += x->waves + x->sm_coverage + x->warp_share;
            }
        }
        for (int k = 0; k < 4; k++)
            near(geom[1][k], geom[0][k], 1e-6 * (geom[0][k] > 1 ? geom[0][k] : 1), "kernel geometry, B");
        /* Collectives and syncs: at most what the Kineto text holds (the
         * part after the last profiler step is not analysed, as in HTA),
         * and the same collectives as A's. */
        uint64_t coll_text = count_in_trace(in, "\"Collective name\"");
        uint64_t sync_text = count_in_trace(in, "Synchronize\"");
        uint64_t wait_text = count_in_trace(in, "WaitEvent\"");
        uint64_t query_text = count_in_trace(in, "Query\"");
        uint64_t kinds[RSF_SYNC_NKINDS] = { 0 };
        for (size_t i = 0; i < b->n_syncs; i++) {
            ck_assert_uint_lt(b->syncs[i].kind, RSF_SYNC_NKINDS);
            kinds[b->syncs[i].kind]++;
        }
        uint64_t syncs = kinds[RSF_SYNC_STREAM] + kinds[RSF_SYNC_EVENT] + kinds[RSF_SYNC_CONTEXT];
        ck_assert_msg(syncs <= sync_text, "%s: %llu syncs, text has %llu", what,
                      (unsigned long long)syncs, (unsigned long long)sync_text);
        ck_assert_uint_le(kinds[RSF_SYNC_STREAM_WAIT_EVENT], wait_text);
        ck_assert_uint_le(kinds[RSF_SYNC_QUERY], query_text);
        if (sync_text > 0)
            ck_assert_msg(syncs > 0, "%s: waits lost", what);
        ck_assert_uint_le(b->n_colls, coll_text);
        ck_assert_uint_eq(b->n_colls, a.n_colls);
        uint64_t bytes_a = 0, bytes_b = 0;
        for (size_t i = 0; i < a.n_colls; i++) {
            bytes_a += a.colls[i].bytes;
            bytes_b += b->colls[i].bytes;
            ck_assert_int_eq(b->colls[i].group_size, a.colls[i].group_size);
            ck_assert_int_eq(b->colls[i].rank_in_group, a.colls[i].rank_in_group);
        }
        ck_assert_uint_eq(bytes_b, bytes_a);

        /* C: the Perfetto export, read back by the Kineto reader. */
        snprintf(json, sizeof json, "%s/trace-%zu.json", dir, t);
        FILE *f = fopen(json, "w");
        ck_assert_ptr_nonnull(f);
        struct rsr_model *one = &a;
        ck_assert_int_eq(rsr_perfetto_write(f, &one, 1), 0);
        fclose(f);
        struct rsr_model c;
        rsr_model_init(&c);
        ck_assert_msg(rsr_kineto_load(json, &c, msg, sizeof msg) == 0, "%s", msg);
        ck_assert_int_eq(c.rank, a.rank);
        ck_assert_uint_eq(c.n_ops, a.n_ops);
        ck_assert_uint_eq(c.n_colls, a.n_colls);
        for (size_t i = 0; i < c.n_colls; i++) {
            ck_assert_int_eq(c.colls[i].op, a.colls[i].op);
            ck_assert_uint_eq(c.colls[i].bytes, a.colls[i].bytes);
            ck_assert_int_eq(c.colls[i].group_size, a.colls[i].group_size);
            ck_assert_int_eq(c.colls[i].rank_in_group, a.colls[i].rank_in_group);
        }
        ck_assert_int_eq(rsr_gpu_breakdown_compute(&c, RSR_KERNEL_WAIT_NS, &bc), 0);
        snprintf(what, sizeof what, "%s rank %d (C: Perfetto JSON)", traces[t].file, a.rank);
        check_same(&bc, &ba, what);
        check_hta(&bc, want, what);

        unlink(out);
        unlink(json);
        rsr_gpu_breakdown_free(&ba);
        rsr_gpu_breakdown_free(&bb);
        rsr_gpu_breakdown_free(&bc);
        rsr_model_free(&a);
        rsr_input_free(&ri);
        rsr_model_free(&c);
    }
    rmdir(dir);
    yajl_tree_free(root);
}
END_TEST

/* Two models in one export: one process per rank, no rank in
 * distributedInfo (a Kineto trace is one rank's), names escaped. */
START_TEST(perfetto_two_ranks)
{
    struct rsr_model m[2];
    for (int k = 0; k < 2; k++) {
        rsr_model_init(&m[k]);
        m[k].rank = k;
        m[k].world_size = 2;
        struct rsr_gpu_op *op = rsr_model_add_op(&m[k]);
        ck_assert_ptr_nonnull(op);
        op->start_ns = 1000500 + k;
        op->end_ns = 1002000;
        op->stream = 7;
        op->cls = RSR_GPU_COMPUTE;
        const char *name = "k<\"quoted\">\\";
        ck_assert_int_eq(rsr_model_intern(&m[k], name, strlen(name), &op->name), 0);
        rsr_model_finish(&m[k]);
    }
    char path[] = "/tmp/rsr-perfetto-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w+");
    struct rsr_model *models[] = { &m[0], &m[1] };
    ck_assert_int_eq(rsr_perfetto_write(f, models, 2), 0);
    rewind(f);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    unlink(path);
    char err[256];
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    ck_assert_msg(root != NULL, "not JSON: %s", err);
    ck_assert(at(at(root, "distributedInfo"), "rank") == NULL);
    ck_assert_int_eq((int)num(at(root, "distributedInfo"), "world_size"), 2);
    yajl_val ev = at(root, "traceEvents");
    ck_assert(ev && YAJL_IS_ARRAY(ev));
    int kernels = 0;
    for (size_t i = 0; i < YAJL_GET_ARRAY(ev)->len; i++) {
        yajl_val e = YAJL_GET_ARRAY(ev)->values[i];
        yajl_val cat = at(e, "cat");
        const char *cs = cat && YAJL_IS_STRING(cat) ? YAJL_GET_STRING(cat) : "";
        if (strcmp(cs, "kernel") != 0)
            continue;
        ck_assert_str_eq(YAJL_GET_STRING(at(e, "name")), "k<\"quoted\">\\");
        int pid = (int)num(e, "pid");
        /* 1000.500 us and 1000.501 us: three decimals, nothing lost. */
        near(num(e, "ts"), pid == 0 ? 1000.5 : 1000.501, 1e-9, "ts");
        kernels++;
    }
    ck_assert_int_eq(kernels, 2);
    yajl_tree_free(root);
    rsr_model_free(&m[0]);
    rsr_model_free(&m[1]);
}
END_TEST

static Suite *roundtrip_suite(void)
{
    Suite *s = suite_create("kineto_roundtrip");
    TCase *tc = tcase_create("kineto_roundtrip");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, roundtrip);
    suite_add_tcase(s, tc);
    tc = tcase_create("kineto_perfetto_two_ranks");
    tcase_add_test(tc, perfetto_two_ranks);
    suite_add_tcase(s, tc);
    return s;
}

RS_CHECK_MAIN(roundtrip_suite)
