/* Unit tests of the GPU analyses (reporter/load/gpu_breakdown.c, kernels.c):
 * small timelines built here whose answers are worked out by hand in the
 * comments, and the real A100 traces, held against the figures HTA itself
 * computed for them (../shared/data/kineto/expected-hta.json, the same
 * numbers as EXPECTED.md): read from that file, not copied here. */
/* rs_check.h calls free() without including stdlib.h. */
#include <stdlib.h>

#include "tests/unit/rs_check.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "reporter/analyse/analyse.h"
#include "reporter/load/gpu_breakdown.h"
#include "reporter/load/kernels.h"
#include "reporter/load/kineto.h"
#include "reporter/load/process.h"

#define DATA "../shared/data/kineto/"
#define US 1000

/* Appends an op of [start, end) us; launched at launch_us when corr != 0. */
static void add(struct rsr_model *m, const char *name, int cls, int stream,
                int64_t start, int64_t end, uint64_t corr, int64_t launch_us)
{
    struct rsr_gpu_op *op = rsr_model_add_op(m);
    ck_assert_ptr_nonnull(op);
    op->start_ns = start * US;
    op->end_ns = end * US;
    op->cls = (uint8_t)cls;
    op->stream = stream;
    op->correlation = corr;
    ck_assert_int_eq(rsr_model_intern(m, name, strlen(name), &op->name), 0);
    if (corr) {
        struct rsr_launch *l = rsr_model_add_launch(m);
        ck_assert_ptr_nonnull(l);
        l->correlation = corr;
        l->start_ns = launch_us * US;
        l->end_ns = l->start_ns + US;
    }
}

static void near(double got, double want, double tol, const char *what)
{
    ck_assert_msg(fabs(got - want) <= tol, "%s: got %.4f, want %.4f", what, got, want);
}

/* compute [0,10) [5,15), comm [12,30), memcpy [40,50):
 * span 50; busy [0,30) + [40,50) = 40, idle 10 (20%);
 * compute union [0,15) = 15 (30%); non-compute 50-15-10 = 25 (50%);
 * comm 18 (36%), of which [12,15) = 3 under compute: overlap 3/18,
 * exposed 15 (30%); memcpy 10 (20%). Added out of order on purpose. */
START_TEST(overlapping)
{
    struct rsr_model m;
    struct rsr_gpu_breakdown b;
    rsr_model_init(&m);
    add(&m, "copy", RSR_GPU_MEMCPY, 7, 40, 50, 0, 0);
    add(&m, "nccl", RSR_GPU_COMM, 9, 12, 30, 0, 0);
    add(&m, "b", RSR_GPU_COMPUTE, 7, 5, 15, 0, 0);
    add(&m, "a", RSR_GPU_COMPUTE, 7, 0, 10, 0, 0);
    rsr_model_finish(&m);
    ck_assert_int_eq(rsr_gpu_breakdown_compute(&m, RSR_KERNEL_WAIT_NS, &b), 0);
    ck_assert_int_eq(b.span_ns, 50 * US);
    ck_assert_int_eq(b.busy_ns, 40 * US);
    ck_assert_int_eq(b.compute_ns, 15 * US);
    ck_assert_int_eq(b.comm_ns, 18 * US);
    ck_assert_int_eq(b.overlap_ns, 3 * US);
    near(b.idle_pct, 20, 1e-9, "idle");
    near(b.compute_pct, 30, 1e-9, "compute");
    near(b.non_compute_pct, 50, 1e-9, "non-compute");
    near(b.comm_pct, 36, 1e-9, "comm");
    near(b.memcpy_pct, 20, 1e-9, "memcpy");
    near(b.comm_comp_overlap_pct, 100.0 * 3 / 18, 1e-9, "overlap");
    near(b.exposed_comm_pct, 30, 1e-9, "exposed");
    rsr_gpu_breakdown_free(&b);
    rsr_model_free(&m);
}
END_TEST

/* compute [0,100) holds comm [10,20), comm [30,40) and compute [50,60):
 * all hidden, nothing idle, and the nested compute adds no time. Touching
 * intervals [100,110) [110,120) merge into one with no idle between. */
START_TEST(nested)
{
    struct rsr_model m;
    struct rsr_gpu_breakdown b;
    rsr_model_init(&m);
    add(&m, "outer", RSR_GPU_COMPUTE, 7, 0, 100, 0, 0);
    add(&m, "c1", RSR_GPU_COMM, 8, 10, 20, 0, 0);
    add(&m, "c2", RSR_GPU_COMM, 8, 30, 40, 0, 0);
    add(&m, "inner", RSR_GPU_COMPUTE, 9, 50, 60, 0, 0);
    add(&m, "t1", RSR_GPU_COMPUTE, 7, 100, 110, 0, 0);
    add(&m, "t2", RSR_GPU_COMPUTE, 7, 110, 120, 0, 0);
    rsr_model_finish(&m);
    ck_assert_int_eq(rsr_gpu_breakdown_compute(&m, RSR_KERNEL_WAIT_NS, &b), 0);
    ck_assert_int_eq(b.span_ns, 120 * US);
    ck_assert_int_eq(b.idle_ns, 0);
    ck_assert_int_eq(b.compute_ns, 120 * US);
    ck_assert_int_eq(b.non_compute_ns, 0);
    ck_assert_int_eq(b.comm_ns, 20 * US);
    near(b.comm_comp_overlap_pct, 100, 1e-9, "overlap");
    near(b.exposed_comm_pct, 0, 1e-9, "exposed");
    rsr_gpu_breakdown_free(&b);
    rsr_model_free(&m);
}
END_TEST

START_TEST(empty)
{
    struct rsr_model m;
    struct rsr_gpu_breakdown b;
    struct rsr_kernel_summary k;
    rsr_model_init(&m);
    rsr_model_finish(&m);
    ck_assert_int_eq(rsr_gpu_breakdown_compute(&m, RSR_KERNEL_WAIT_NS, &b), 0);
    ck_assert_int_eq(b.span_ns, 0);
    ck_assert_uint_eq(b.n_streams, 0);
    near(b.idle_pct, 0, 0, "idle");
    near(b.comm_comp_overlap_pct, 0, 0, "overlap");
    ck_assert_int_eq(rsr_kernels_summarize(&m, RSR_SHORT_KERNEL_NS, 1, &k), 0);
    ck_assert_uint_eq(k.n, 0);
    rsr_gpu_breakdown_free(&b);
    rsr_kernel_summary_free(&k);
    rsr_model_free(&m);
}
END_TEST

/* Stream 7, with the time each op's launch began:
 *   A [0,10)    launch -5
 *   B [15,20)   launch 12, after A ended (10):        host wait 5
 *   C [30,40)   launch 1, gap 10 < 30:                kernel wait 10
 *   D [100,110) launch 2, gap 60 >= 30:               other 60
 *   E [115,120) no launch known, gap 5:               kernel wait 5
 * Stream 9 has a single op: nothing to split. */
START_TEST(idle_by_stream)
{
    struct rsr_model m;
    struct rsr_gpu_breakdown b;
    rsr_model_init(&m);
    add(&m, "A", RSR_GPU_COMPUTE, 7, 0, 10, 1, -5);
    add(&m, "B", RSR_GPU_COMPUTE, 7, 15, 20, 2, 12);
    add(&m, "C", RSR_GPU_MEMSET, 7, 30, 40, 3, 1);
    add(&m, "D", RSR_GPU_COMPUTE, 7, 100, 110, 4, 2);
    add(&m, "E", RSR_GPU_COMPUTE, 7, 115, 120, 0, 0);
    add(&m, "F", RSR_GPU_COMM, 9, 50, 90, 5, 0);
    rsr_model_finish(&m);
    ck_assert_int_eq(rsr_gpu_breakdown_compute(&m, RSR_KERNEL_WAIT_NS, &b), 0);
    ck_assert_uint_eq(b.n_streams, 2);
    const struct rsr_stream_idle *s7 = &b.streams[0], *s9 = &b.streams[1];
    ck_assert_int_eq(s7->stream, 7);
    ck_assert_uint_eq(s7->ops, 5);
    ck_assert_int_eq(s7->host_wait_ns, 5 * US);
    ck_assert_int_eq(s7->kernel_wait_ns, 15 * US);
    ck_assert_int_eq(s7->other_ns, 60 * US);
    ck_assert_int_eq(s9->stream, 9);
    ck_assert_uint_eq(s9->ops, 1);
    ck_assert_int_eq(s9->host_wait_ns + s9->kernel_wait_ns + s9->other_ns, 0);
    ck_assert_int_eq(b.host_wait_ns, 5 * US);
    ck_assert_int_eq(b.kernel_wait_ns, 15 * US);
    ck_assert_int_eq(b.other_idle_ns, 60 * US);
    rsr_gpu_breakdown_free(&b);
    rsr_model_free(&m);
}
END_TEST

/* a: 2, 4 and 30 us (total 36); b: 100 us; c (comm): 3 and 3 us.
 * By total: b 100, a 36, c 6. Short (< 10 us, compute only): a's two runs,
 * 6 us; c's do not count. With at least 2 short runs, a is a candidate. */
START_TEST(kernel_summary)
{
    struct rsr_model m;
    struct rsr_kernel_summary k;
    rsr_model_init(&m);
    add(&m, "a", RSR_GPU_COMPUTE, 7, 0, 2, 0, 0);
    add(&m, "c", RSR_GPU_COMM, 8, 0, 3, 0, 0);
    add(&m, "a", RSR_GPU_COMPUTE, 7, 10, 14, 0, 0);
    add(&m, "b", RSR_GPU_COMPUTE, 7, 20, 120, 0, 0);
    add(&m, "a", RSR_GPU_COMPUTE, 7, 200, 230, 0, 0);
    add(&m, "c", RSR_GPU_COMM, 8, 300, 303, 0, 0);
    rsr_model_finish(&m);
    ck_assert_int_eq(rsr_kernels_summarize(&m, RSR_SHORT_KERNEL_NS, 2, &k), 0);
    ck_assert_uint_eq(k.n, 3);
    ck_assert_str_eq(rsr_model_str(&m, k.stats[0].name), "b");
    ck_assert_str_eq(rsr_model_str(&m, k.stats[1].name), "a");
    ck_assert_str_eq(rsr_model_str(&m, k.stats[2].name), "c");
    const struct rsr_kernel_stat *a = &k.stats[1];
    ck_assert_uint_eq(a->count, 3);
    ck_assert_int_eq(a->total_ns, 36 * US);
    ck_assert_int_eq(a->min_ns, 2 * US);
    ck_assert_int_eq(a->max_ns, 30 * US);
    near(a->mean_ns, 12 * US, 1e-9, "mean");
    ck_assert_uint_eq(a->short_count, 2);
    ck_assert_int_eq(k.stats[2].cls, RSR_GPU_COMM);
    ck_assert_uint_eq(k.stats[2].short_count, 0);
    ck_assert_uint_eq(k.n_compute, 4);
    ck_assert_uint_eq(k.n_short, 2);
    ck_assert_int_eq(k.short_ns, 6 * US);
    ck_assert_uint_eq(k.n_short_names, 1);
    ck_assert_ptr_eq(k.short_names[0], a);
    rsr_kernel_summary_free(&k);
    rsr_model_free(&m);
}
END_TEST

START_TEST(classes)
{
    ck_assert_int_eq(rsr_gpu_classify_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"), RSR_GPU_COMM);
    ck_assert_int_eq(rsr_gpu_classify_kernel("ncclDevKernel_Generic(ncclDevComm*)"), RSR_GPU_COMM);
    ck_assert_int_eq(rsr_gpu_classify_kernel("void kernel<ncclKernel_x>()"), RSR_GPU_COMM);
    ck_assert_int_eq(rsr_gpu_classify_kernel("void at::native::vectorized_elementwise_kernel<4>()"), RSR_GPU_COMPUTE);
    ck_assert_int_eq(rsr_coll_op_parse("reduce_scatter_tensor_coalesced", 31), RSR_COLL_REDUCESCATTER);
    ck_assert_int_eq(rsr_coll_op_parse("reduce", 6), RSR_COLL_REDUCE);
    ck_assert_int_eq(rsr_coll_op_parse("all_to_all", 10), RSR_COLL_ALLTOALL);
    ck_assert_int_eq(rsr_coll_op_parse("AllReduce", 9), RSR_COLL_ALLREDUCE);
    ck_assert_int_eq(rsr_coll_op_parse("recvAnySource", 13), RSR_COLL_RECV);
    ck_assert_int_eq(rsr_coll_op_parse("frobnicate", 10), RSR_COLL_UNKNOWN);
}
END_TEST

/* The value at a path of object keys in a yajl tree, or NULL. */
static yajl_val at(yajl_val v, const char *key)
{
    const char *path[] = { key, NULL };
    return yajl_tree_get(v, path, yajl_t_any);
}

static double num(yajl_val v, const char *key)
{
    yajl_val n = at(v, key);
    return n && YAJL_IS_NUMBER(n) ? YAJL_GET_DOUBLE(n) : 0.0;
}

/* Loads the trace(s) for one entry of expected-hta.json: a file, or "DIR/
 * (both files)", every trace in DIR; returns the model of the given rank. */
static int load_rank(const char *entry, int rank, struct rsr_model *out)
{
    char dir[256], path[512], msg[512];
    const char *both = strstr(entry, " (both files)");
    int found = 0;
    if (!both) {
        snprintf(path, sizeof path, DATA "%s", entry);
        rsr_model_init(out);
        ck_assert_msg(rsr_kineto_load(path, out, msg, sizeof msg) == 0, "%s", msg);
        return out->rank == rank;
    }
    snprintf(dir, sizeof dir, DATA "%.*s", (int)(both - entry), entry);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (!strstr(e->d_name, ".json"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rsr_model_init(out);
        ck_assert_msg(rsr_kineto_load(path, out, msg, sizeof msg) == 0, "%s", msg);
        found = out->rank == rank;
        if (!found)
            rsr_model_free(out);
    }
    closedir(d);
    return found;
}

/* Every rank of every trace in expected-hta.json: the temporal breakdown and
 * comm-comp overlap within 0.5 percentage points, the kernel span within
 * 1 us, and each stream's idle split within 1% of that stream's idle time. */
START_TEST(agrees_with_hta)
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
    int checked = 0;
    for (size_t i = 0; i < YAJL_GET_OBJECT(root)->len; i++) {
        const char *entry = YAJL_GET_OBJECT(root)->keys[i];
        yajl_val ranks = at(YAJL_GET_OBJECT(root)->values[i], "ranks");
        ck_assert(ranks && YAJL_IS_OBJECT(ranks));
        for (size_t r = 0; r < YAJL_GET_OBJECT(ranks)->len; r++) {
            int rank = atoi(YAJL_GET_OBJECT(ranks)->keys[r]);
            yajl_val want = YAJL_GET_OBJECT(ranks)->values[r];
            struct rsr_model m;
            struct rsr_gpu_breakdown b;
            char what[300];
            ck_assert_msg(load_rank(entry, rank, &m), "%s: no rank %d", entry, rank);
            ck_assert_int_eq(rsr_gpu_breakdown_compute(&m, RSR_KERNEL_WAIT_NS, &b), 0);
            snprintf(what, sizeof what, "%s rank %d", entry, rank);
            near(b.idle_pct, num(want, "idle_pct"), 0.5, what);
            near(b.compute_pct, num(want, "compute_pct"), 0.5, what);
            near(b.non_compute_pct, num(want, "non_compute_pct"), 0.5, what);
            near(b.comm_comp_overlap_pct, num(want, "comm_comp_overlap_pct"), 0.5, what);
            near((double)b.span_ns / US, num(want, "kernel_time_us"), 1, what);

            yajl_val streams = at(want, "idle_by_stream");
            ck_assert(streams && YAJL_IS_OBJECT(streams));
            ck_assert_uint_eq(b.n_streams, YAJL_GET_OBJECT(streams)->len);
            for (size_t s = 0; s < YAJL_GET_OBJECT(streams)->len; s++) {
                int stream = atoi(YAJL_GET_OBJECT(streams)->keys[s]);
                yajl_val ws = YAJL_GET_OBJECT(streams)->values[s];
                const struct rsr_stream_idle *got = NULL;
                for (size_t k = 0; k < b.n_streams; k++)
                    if (b.streams[k].stream == stream)
                        got = &b.streams[k];
                ck_assert_msg(got != NULL, "%s: no stream %d", what, stream);
                double host = num(ws, "host_wait"), kern = num(ws, "kernel_wait"), other = num(ws, "other");
                double tol = 0.01 * (host + kern + other) + 1;
                snprintf(what, sizeof what, "%s rank %d stream %d", entry, rank, stream);
                near((double)got->host_wait_ns / US, host, tol, what);
                near((double)got->kernel_wait_ns / US, kern, tol, what);
                near((double)got->other_ns / US, other, tol, what);
            }
            rsr_gpu_breakdown_free(&b);
            rsr_model_free(&m);
            checked++;
        }
    }
    ck_assert_int_eq(checked, 5);
    yajl_tree_free(root);
}
END_TEST

/* The two ranks of sampled-2rank through the whole job analysis (clock
 * alignment moves them): each rank's breakdown still agrees with HTA's. */
START_TEST(agrees_with_hta_in_job)
{
    FILE *f = fopen(DATA "expected-hta.json", "rb");
    ck_assert(f != NULL);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    yajl_val root = yajl_tree_parse(text, NULL, 0);
    ck_assert(root != NULL);
    const char *entry = "sampled-2rank/ (both files)";
    const char *path[] = { entry, "ranks", NULL };
    yajl_val ranks = yajl_tree_get(root, path, yajl_t_object);
    ck_assert(ranks != NULL);
    struct rsr_model m[2];
    struct rsr_model *mp[2] = { &m[0], &m[1] };
    for (int r = 0; r < 2; r++)
        ck_assert(load_rank(entry, r, &m[r]));
    struct rsr_job job;
    ck_assert_int_eq(rsr_job_analyse(mp, 2, &job), 0);
    for (int r = 0; r < 2; r++) {
        char key[8], what[64];
        snprintf(key, sizeof key, "%d", r);
        const char *kp[] = { key, NULL };
        yajl_val want = yajl_tree_get(ranks, kp, yajl_t_object);
        ck_assert(want != NULL);
        snprintf(what, sizeof what, "sampled-2rank rank %d in a job", r);
        near(job.gpu[r].idle_pct, num(want, "idle_pct"), 0.5, what);
        near(job.gpu[r].compute_pct, num(want, "compute_pct"), 0.5, what);
        near(job.gpu[r].non_compute_pct, num(want, "non_compute_pct"), 0.5, what);
        near(job.gpu[r].comm_comp_overlap_pct, num(want, "comm_comp_overlap_pct"), 0.5, what);
        near((double)job.gpu[r].span_ns / US, num(want, "kernel_time_us"), 1, what);
    }
    rsr_job_free(&job);
    rsr_model_free(&m[0]);
    rsr_model_free(&m[1]);
    yajl_tree_free(root);
}
END_TEST

/* The NCCL kernels of a real trace in the collective table: one call per
 * kernel that carries collective arguments, busbw = algbw x nccl-tests'
 * factor for its op on 2 ranks. */
START_TEST(collective_table_real_trace)
{
    struct rsr_model m;
    char msg[256];
    rsr_model_init(&m);
    ck_assert_msg(rsr_kineto_load(DATA "a100-2rank-r0-nccl.json.gz", &m, msg, sizeof msg) == 0, "%s", msg);
    uint64_t kernels = 0;
    for (size_t i = 0; i < m.n_ops; i++)
        kernels += m.ops[i].cls == RSR_GPU_COMM && m.ops[i].coll >= 0;
    ck_assert_uint_gt(kernels, 0);
    struct rsr_model *mp = &m;
    struct rsr_coll_analysis a;
    ck_assert_int_eq(rsr_collectives_analyse(&mp, 1, &a), 0);
    uint64_t calls = 0;
    for (size_t i = 0; i < a.n_rows; i++) {
        const struct rsr_coll_row *r = &a.rows[i];
        calls += r->count;
        ck_assert_int_eq(r->ranks, 2);
        ck_assert(r->mean_us > 0);
        ck_assert(fabs(r->algbw_gbs - (double)r->bytes / r->mean_us / 1e3) < 1e-9);
        double factor = r->op == RSR_COLL_ALLREDUCE ? 1.0 : r->op == RSR_COLL_BROADCAST ? 1.0 : 0.5;
        ck_assert(fabs(r->busbw_gbs - r->algbw_gbs * factor) < 1e-9);
    }
    ck_assert_uint_eq(calls, kernels);
    rsr_coll_analysis_free(&a);
    rsr_model_free(&m);
}
END_TEST

static Suite *gpu_breakdown_suite(void)
{
    const struct rs_test tests[] = {
        { "gpu_breakdown_overlapping", overlapping },
        { "gpu_breakdown_nested", nested },
        { "gpu_breakdown_empty", empty },
        { "gpu_breakdown_idle_by_stream", idle_by_stream },
        { "gpu_breakdown_kernel_summary", kernel_summary },
        { "gpu_breakdown_classes", classes },
        { "gpu_breakdown_agrees_with_hta", agrees_with_hta },
        { "gpu_breakdown_agrees_with_hta_in_job", agrees_with_hta_in_job },
        { "gpu_breakdown_collective_table_real_trace", collective_table_real_trace },
    };
    return RS_SUITE("gpu_breakdown", tests, 60);
}

RS_CHECK_MAIN(gpu_breakdown_suite)
