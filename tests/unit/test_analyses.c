/* Unit tests of the multi-rank analyses on hand-made inputs: trace files
 * written by the format encoder and read back into models (collective
 * linking, communicator ranks, I/O, a file cut short), nccl-tests' busbw
 * factors, clock alignment of skewed ranks, collective waits and the
 * straggler (named only when significant), checkpoints. Every expected
 * figure is the input's own. */
#include "reporter/analyse/align.h"
#include "reporter/analyse/analyse.h"
#include "reporter/analyse/timeline.h"
#include "reporter/load/summary.h"
#include "reporter/analyse/collectives.h"
#include "reporter/load/load.h"
#include "reporter/analyse/steps.h"
#include "reporter/analyse/storage.h"
#include "reporter/load/process.h"
#include "formats/chunk.h"
#include "formats/frame.h"
#include "rs_check.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

/* Appends chunk c as one frame to the file at path. */
static void append_chunk(const char *path, const struct rsf_chunk *c)
{
    size_t bound = rsf_chunk_bound(c);
    uint8_t *enc = aligned_alloc(64, (bound + 63) & ~(size_t)63);
    struct rsf_buf out = { enc, 0, bound };
    ck_assert_int_eq(rsf_chunk_encode(c, &out), 0);
    LZ4F_cctx *cctx;
    ck_assert(!LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)));
    size_t cap = rsf_frame_bound(out.len);
    uint8_t *frame = malloc(cap);
    size_t n = rsf_frame_compress(cctx, out.p, out.len, frame, cap);
    ck_assert(n > 0);
    FILE *f = fopen(path, "ab");
    ck_assert(f != NULL);
    ck_assert_uint_eq(fwrite(frame, 1, n, f), n);
    fclose(f);
    LZ4F_freeCompressionContext(cctx);
    free(frame);
    free(enc);
}

#define MS 1000000ull
#define BASE 5000000000ull /* monotonic ns of the made-up process start */

/* A rank's file: a compute kernel, an NCCL kernel with its AllReduce, a
 * second AllReduce whose kernel the agent did not see, a communicator of 4,
 * a checkpoint write; then a second chunk with one more kernel. */
static void write_rank_file(const char *path, int with_second)
{
    static const char *strings[] = { "gemm", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "/ckpt/a.bin" };
    struct rsf_meta meta = { .format_version = 1, .host = "h", .pid = 42, .ppid = 1, .rank = 1,
                             .local_rank = 1, .world_size = 4, .parent_rank = -1, .role = RSF_ROLE_RANK,
                             .job = "j", .start = { BASE, BASE + 7000 } };
    struct rsf_gpu_event gpu[2] = {
        { .launch_ns = BASE + 1 * MS, .gpu_start_ns = BASE + 2 * MS, .gpu_end_ns = BASE + 3 * MS, .stream = 7,
          .call_ns = 5000, .name = 1, .kind = RSF_GPU_KERNEL },
        { .launch_ns = BASE + 2 * MS, .gpu_start_ns = BASE + 3 * MS, .gpu_end_ns = BASE + 5 * MS, .stream = 9,
          .call_ns = 4000, .name = 2, .kind = RSF_GPU_KERNEL },
    };
    struct rsf_coll_event colls[2] = {
        { .launch_ns = BASE + 2 * MS, .gpu_start_ns = BASE + 3 * MS + 300, .gpu_end_ns = BASE + 5 * MS - 200,
          .count = 1000, .bytes = 4000, .comm = 0xabcdef, .stream = 9, .seq = 0, .peer = -1,
          .op = RSF_COLL_ALLREDUCE, .datatype = 7 },
        { .launch_ns = BASE + 6 * MS, .gpu_start_ns = BASE + 6 * MS, .gpu_end_ns = BASE + 7 * MS,
          .count = 8, .bytes = 16, .comm = 0xabcdef, .stream = 9, .seq = 1, .peer = -1,
          .op = RSF_COLL_ALLGATHER, .datatype = 6 },
    };
    struct rsf_comm_event comm = { .start_ns = BASE + MS / 2, .dur_ns = 100, .comm = 0xabcdef, .rank = 2,
                                   .nranks = 4, .kind = RSF_COMM_INIT };
    struct rsf_file_ref file = { 3, 3, 0 };
    struct rsf_io_event io[3] = {
        { .start_ns = BASE + 8 * MS, .dur_ns = 1000, .offset = -1, .result = 5, .file = 3, .op = RSF_IO_OPEN },
        { .start_ns = BASE + 9 * MS, .dur_ns = 2 * MS, .offset = -1, .result = 2 << 20, .file = 3,
          .op = RSF_IO_WRITE },
        { .start_ns = BASE + 12 * MS, .dur_ns = 1000, .offset = -1, .result = 0, .file = 3, .op = RSF_IO_CLOSE },
    };
    struct rsf_clock_pair clock = { BASE + 13 * MS, BASE + 13 * MS + 7000 };
    struct rsf_chunk c = { .seq = 0, .meta = &meta, .strings_base = 1, .strings = strings, .nstrings = 3,
                           .files = &file, .nfiles = 1, .clocks = &clock, .nclocks = 1, .io = io, .nio = 3,
                           .gpu = gpu, .ngpu = 2, .colls = colls, .ncolls = 2, .comms = &comm, .ncomms = 1 };
    unlink(path);
    append_chunk(path, &c);
    if (with_second) {
        struct rsf_gpu_event g = { .launch_ns = BASE + 14 * MS, .gpu_start_ns = BASE + 15 * MS,
                                   .gpu_end_ns = BASE + 16 * MS, .stream = 7, .name = 1,
                                   .kind = RSF_GPU_KERNEL };
        struct rsf_chunk c2 = { .seq = 1, .strings_base = 4, .gpu = &g, .ngpu = 1, .end = true };
        append_chunk(path, &c2);
    }
}

START_TEST(loader_builds_model)
{
    char path[] = "/tmp/rs_test_analyses_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    write_rank_file(path, 1);
    struct rsr_input in;
    rsr_input_load(&in, path);
    ck_assert_int_eq(in.open_failed, 0);
    struct rsr_model *m = in.model;
    ck_assert(m != NULL);
    ck_assert_int_eq(m->rank, 1);
    ck_assert_int_eq(m->world_size, 4);
    ck_assert_str_eq(rsr_model_str(m, m->host), "h");
    /* 3 kernels + one op made for the AllGather whose kernel was not seen */
    ck_assert_uint_eq(m->n_ops, 4);
    ck_assert_uint_eq(m->n_launches, 4);
    ck_assert_uint_eq(m->n_colls, 2);
    int linked = 0, comm_ops = 0;
    for (size_t i = 0; i < m->n_ops; i++) {
        const struct rsr_gpu_op *op = &m->ops[i];
        if (op->cls == RSR_GPU_COMM) {
            comm_ops++;
            ck_assert_int_ge(op->coll, 0);
            linked |= 1 << op->coll;
        } else {
            ck_assert_int_eq(op->cls, RSR_GPU_COMPUTE);
            ck_assert_str_eq(rsr_model_str(m, op->name), "gemm");
        }
        if (i)
            ck_assert(op->start_ns >= m->ops[i - 1].start_ns);
    }
    ck_assert_int_eq(comm_ops, 2);
    ck_assert_int_eq(linked, 3);
    /* the NCCL kernel keeps its own times; the coll keeps the call's */
    for (size_t i = 0; i < m->n_ops; i++)
        if (m->ops[i].coll == 0) {
            ck_assert_int_eq(m->ops[i].start_ns, (int64_t)(BASE + 3 * MS));
            ck_assert_str_eq(rsr_model_str(m, m->ops[i].name), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
        }
    const struct rsr_coll *c = &m->colls[0];
    ck_assert_int_eq(c->op, RSR_COLL_ALLREDUCE);
    ck_assert_uint_eq(c->bytes, 4000);
    ck_assert_uint_eq(c->elem_size, 4);
    ck_assert_int_eq(c->group_size, 4);
    ck_assert_int_eq(c->rank_in_group, 2);
    ck_assert_uint_eq(c->comm_id, 0xabcdef);
    ck_assert_uint_eq(m->colls[1].seq, 1);
    ck_assert_int_eq(m->colls[1].op, RSR_COLL_ALLGATHER);
    ck_assert_uint_eq(m->colls[1].elem_size, 2);
    /* I/O with its path; clock pairs from meta and the chunk */
    ck_assert_uint_eq(m->n_io, 3);
    ck_assert_str_eq(rsr_model_str(m, m->io[1].path), "/ckpt/a.bin");
    ck_assert_uint_eq(m->io[1].bytes, 2u << 20);
    ck_assert_int_eq(m->io[1].dir, RSF_DIR_WRITE);
    ck_assert_uint_eq(m->n_clocks, 2);
    ck_assert_int_eq(m->clocks[0].real_ns - m->clocks[0].mono_ns, 7000);
    rsr_input_free(&in);
    unlink(path);
}
END_TEST

START_TEST(loader_keeps_what_precedes_a_cut)
{
    char path[] = "/tmp/rs_test_analyses_XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    write_rank_file(path, 1);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    /* cut the file inside its second frame */
    ck_assert_int_eq(truncate(path, size - 10), 0);
    struct rsr_input in;
    rsr_input_load(&in, path);
    ck_assert(in.walk.cut_short);
    ck_assert_uint_eq(in.walk.nchunks, 1);
    ck_assert_uint_eq(in.model->n_ops, 3); /* the second chunk's kernel is lost */
    ck_assert_uint_eq(in.model->n_colls, 2);
    rsr_input_free(&in);
    unlink(path);
}
END_TEST

START_TEST(busbw_factors)
{
    /* nccl-tests' doc/PERFORMANCE.md */
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_ALLREDUCE, 8) - 1.75) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_ALLREDUCE, 2) - 1.0) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_ALLGATHER, 4) - 0.75) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_REDUCESCATTER, 4) - 0.75) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_ALLTOALL, 8) - 0.875) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_BROADCAST, 8) - 1.0) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_REDUCE, 8) - 1.0) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_SEND, 2) - 1.0) < 1e-12);
    ck_assert(fabs(rsr_busbw_factor(RSR_COLL_ALLREDUCE, 1) - 0.0) < 1e-12);
}
END_TEST

/* n ranks, ncoll AllReduces of `bytes` on one communicator: in true time,
 * call k starts on rank r at t0 + k*step + arrive[r] and all end together
 * at t0 + k*step + late + dur, where late is the latest arrival. Rank r's
 * clocks: monotonic = true + mono_off[r]; realtime = true + real_off[r]. */
struct job_spec {
    int n, ncoll;
    uint64_t bytes;
    int64_t step, dur;
    int64_t arrive[4], mono_off[4], real_off[4];
};

static void make_job(const struct job_spec *s, struct rsr_model *m)
{
    const int64_t t0 = 1000 * (int64_t)MS;
    int64_t late = 0;
    for (int r = 0; r < s->n; r++)
        late = s->arrive[r] > late ? s->arrive[r] : late;
    for (int r = 0; r < s->n; r++) {
        rsr_model_init(&m[r]);
        m[r].rank = r;
        for (int k = 0; k < 3; k++) {
            struct rsr_clock *c = rsr_model_add_clock(&m[r]);
            int64_t t = t0 + k * 1000 * (int64_t)MS;
            c->mono_ns = t + s->mono_off[r];
            c->real_ns = t + s->real_off[r];
        }
        for (int k = 0; k < s->ncoll; k++) {
            struct rsr_coll *c = rsr_model_add_coll(&m[r]);
            c->op = RSR_COLL_ALLREDUCE;
            c->bytes = s->bytes;
            c->comm_id = 77;
            c->seq = (uint32_t)k;
            c->group_size = s->n;
            c->rank_in_group = r;
            c->start_ns = t0 + k * s->step + s->arrive[r] + s->mono_off[r];
            c->end_ns = t0 + k * s->step + late + s->dur + s->mono_off[r];
            struct rsr_gpu_op *op = rsr_model_add_op(&m[r]);
            op->start_ns = c->start_ns;
            op->end_ns = c->end_ns;
            op->cls = RSR_GPU_COMM;
            op->coll = k;
        }
        m[r].wall_start_ns = t0 + s->mono_off[r];
        m[r].wall_end_ns = t0 + s->ncoll * s->step + s->mono_off[r];
        rsr_model_finish(&m[r]);
    }
}

START_TEST(align_skewed_ranks)
{
    /* realtime off by +5 ms, -3 ms, +0.7 ms, 0 on the four ranks; monotonic
     * origins far apart; arrivals differ (waits must not confuse it) */
    struct job_spec s = { .n = 4, .ncoll = 50, .bytes = 1 << 20, .step = 2 * (int64_t)MS, .dur = 100000,
                          .arrive = { 0, 30000, 250000, 10000 },
                          .mono_off = { 0, 123456789012, -987654321, 555 },
                          .real_off = { 1700000000000000000, 1700000000005000000, 1699999999997000000,
                                        1700000000000700000 } };
    struct rsr_model m[4];
    make_job(&s, m);
    struct rsr_model *mp[4] = { &m[0], &m[1], &m[2], &m[3] };
    struct rsr_alignment a;
    ck_assert_int_eq(rsr_align(mp, 4, &a), 0);
    ck_assert_uint_eq(a.groups, 50);
    /* rank 0 is the reference: job time = true time + its realtime offset */
    for (int r = 0; r < 4; r++) {
        int64_t want = s.real_off[0] - s.mono_off[r];   /* local -> job */
        int64_t err = m[r].clock_offset_ns - want;
        ck_assert_msg(llabs(err) <= 1000, "rank %d off by %lld ns", r, (long long)err);
        ck_assert_int_eq(a.models[r].pair_offset_ns, s.real_off[r] - s.mono_off[r]);
    }
    ck_assert(llabs(a.max_correction_ns - 5000000) <= 1000);
    ck_assert(a.residual_ns <= 1000);
    rsr_alignment_free(&a);
    for (int r = 0; r < 4; r++)
        rsr_model_free(&m[r]);
}
END_TEST

START_TEST(collectives_waits_and_straggler)
{
    /* rank 2 arrives 1 ms late in every 5 ms step: significant */
    struct job_spec s = { .n = 4, .ncoll = 20, .bytes = 100000000, .step = 5 * (int64_t)MS, .dur = 1500000,
                          .arrive = { 0, 40000, 1000000, 20000 },
                          .mono_off = { 0, 0, 0, 0 }, .real_off = { 0, 0, 0, 0 } };
    struct rsr_model m[4];
    make_job(&s, m);
    struct rsr_model *mp[4] = { &m[0], &m[1], &m[2], &m[3] };
    struct rsr_coll_analysis a;
    ck_assert_int_eq(rsr_collectives_analyse(mp, 4, &a), 0);
    ck_assert_uint_eq(a.n_rows, 1);
    ck_assert_uint_eq(a.rows[0].count, 20);
    ck_assert_int_eq(a.rows[0].ranks, 4);
    ck_assert(fabs(a.rows[0].mean_us - 1500.0) < 1e-6);
    /* 1e8 bytes in 1.5 ms: 66.67 GB/s; busbw x 2*3/4 */
    ck_assert(fabs(a.rows[0].algbw_gbs - 1e8 / 1.5e-3 / 1e9) < 1e-6);
    ck_assert(fabs(a.rows[0].busbw_gbs - 1e8 / 1.5e-3 / 1e9 * 1.5) < 1e-6);
    for (int r = 0; r < 4; r++)
        ck_assert(fabs(a.wait_us[r] - 20 * (s.arrive[2] - s.arrive[r]) / 1e3) < 1e-6);
    ck_assert_uint_eq(a.n_stragglers, 1);
    ck_assert_int_eq(a.stragglers[0].rank, 2);
    ck_assert_uint_eq(a.stragglers[0].last, 20);
    ck_assert(a.stragglers[0].score > 0.99);
    /* per call the others wait (1000 + 960 + 980) / 3 = 980 us for it, of
     * which an equal rank's share is a quarter: 735 us beyond it; ten
     * parts of two calls, each two steps long but the last (one step and
     * the call: 5 + 1 + 1.5 ms), so the median part has 1470 us in 10 ms */
    ck_assert_int_eq(a.straggler_parts, 10);
    ck_assert_msg(fabs(a.stragglers[0].excess_pct - 14.7) < 1e-6, "%g", a.stragglers[0].excess_pct);
    rsr_coll_analysis_free(&a);
    for (int r = 0; r < 4; r++)
        rsr_model_free(&m[r]);
}
END_TEST

/* n ranks (8 at most), ncoll AllReduces one step apart, all leaving each
 * call together dur after the last arrival. In call k rank r arrives at
 * k*step + a pseudo-random time in [0, spread) (a fixed xorshift sequence)
 * + late[r], and + first[r] more in call 0 (start-up skew). */
struct jitter_spec {
    int n, ncoll;
    int64_t step, dur, spread;
    int64_t late[8], first[8];
};

static void make_jitter_job(const struct jitter_spec *s, struct rsr_model *m)
{
    const int64_t t0 = 1000 * (int64_t)MS;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int r = 0; r < s->n; r++) {
        rsr_model_init(&m[r]);
        m[r].rank = r;
        m[r].wall_start_ns = t0;
        m[r].wall_end_ns = t0 + s->ncoll * s->step;
    }
    for (int k = 0; k < s->ncoll; k++) {
        int64_t arrive[8], last = 0;
        for (int r = 0; r < s->n; r++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            arrive[r] = t0 + k * s->step + (s->spread ? (int64_t)(x % (uint64_t)s->spread) : 0) + s->late[r] +
                        (k == 0 ? s->first[r] : 0);
            last = arrive[r] > last ? arrive[r] : last;
        }
        for (int r = 0; r < s->n; r++) {
            struct rsr_coll *c = rsr_model_add_coll(&m[r]);
            c->op = RSR_COLL_ALLREDUCE;
            c->bytes = 1 << 26;
            c->comm_id = 78;
            c->seq = (uint32_t)k;
            c->group_size = s->n;
            c->rank_in_group = r;
            c->start_ns = arrive[r];
            c->end_ns = last + s->dur;
        }
    }
    for (int r = 0; r < s->n; r++)
        rsr_model_finish(&m[r]);
}

/* Runs the collectives analysis on a jitter job; *a is the caller's to free. */
static void analyse_jitter_job(const struct jitter_spec *s, struct rsr_coll_analysis *a)
{
    struct rsr_model m[8], *mp[8];
    make_jitter_job(s, m);
    for (int r = 0; r < s->n; r++)
        mp[r] = &m[r];
    ck_assert_int_eq(rsr_collectives_analyse(mp, (size_t)s->n, a), 0);
    for (int r = 0; r < s->n; r++)
        rsr_model_free(&m[r]);
}

/* Waiting that equal ranks cause among themselves, a start-up skew in the
 * first call, and a rank late in every call by too little to matter: none
 * is named (each used to be, as the rank that caused most waiting). */
START_TEST(stragglers_not_among_equal_ranks)
{
    /* as gen_job: 8 ranks arrive scattered over 200 us of a 4 ms step */
    struct jitter_spec s = { .n = 8, .ncoll = 200, .step = 4 * (int64_t)MS, .dur = 400000, .spread = 200000 };
    struct rsr_coll_analysis a;
    analyse_jitter_job(&s, &a);
    double wait = 0;
    for (int r = 0; r < s.n; r++)
        wait += a.wait_us[r];
    /* the ranks do wait: the last of 8 comes 178 us into the 200 us on
     * average, 78 us after the mean rank, 2% of a step */
    ck_assert_msg(wait / s.n / (s.ncoll * s.step / 1e3) > 0.015, "%g us", wait);
    ck_assert_int_eq(a.straggler_parts, 10);
    ck_assert_msg(a.n_stragglers == 0, "rank %d named: %s", a.stragglers[0].rank, a.stragglers[0].evidence);
    ck_assert(a.max_excess_pct < RSR_STRAGGLER_MIN_PCT);
    rsr_coll_analysis_free(&a);

    /* rank 5 starts 50 ms late: the others wait for it 50 ms in the first
     * call, 6% of the 0.8 s job, and no more */
    s.first[5] = 50 * (int64_t)MS;
    analyse_jitter_job(&s, &a);
    ck_assert_msg(a.n_stragglers == 0, "rank %d named: %s", a.stragglers[0].rank, a.stragglers[0].evidence);
    rsr_coll_analysis_free(&a);

    /* rank 3 is last in every call, by 100 us of a 4 ms step: the others
     * lose 2.5% of their time to it, 2.2% beyond an equal rank's share */
    s.first[5] = 0;
    s.spread = 0;
    s.late[3] = 100000;
    analyse_jitter_job(&s, &a);
    ck_assert_msg(a.n_stragglers == 0, "rank %d named: %s", a.stragglers[0].rank, a.stragglers[0].evidence);
    ck_assert_msg(fabs(a.max_excess_pct - 100.0 * 87.5 / 4000) < 1e-6, "%g", a.max_excess_pct);
    rsr_coll_analysis_free(&a);
}
END_TEST

/* A rank late by 0.8 ms in every 4 ms step among scattered equal ranks is
 * named, alone; with five calls there are too few to tell. */
START_TEST(stragglers_named_when_significant)
{
    struct jitter_spec s = { .n = 8, .ncoll = 200, .step = 4 * (int64_t)MS, .dur = 400000, .spread = 200000 };
    s.late[6] = 800000;
    struct rsr_coll_analysis a;
    analyse_jitter_job(&s, &a);
    ck_assert_uint_eq(a.n_stragglers, 1);
    ck_assert_int_eq(a.stragglers[0].rank, 6);
    ck_assert_uint_eq(a.stragglers[0].last, 200);
    /* per call the others wait 800 us less their scatter against its own
     * (600 to 1000 us), 7/8 of that beyond an equal rank's share, in 4 ms */
    ck_assert_msg(a.stragglers[0].excess_pct > 100.0 * 525 / 4000 &&
                  a.stragglers[0].excess_pct < 100.0 * 875 / 4000, "%g", a.stragglers[0].excess_pct);
    rsr_coll_analysis_free(&a);

    s.ncoll = 5;
    analyse_jitter_job(&s, &a);
    ck_assert_int_eq(a.straggler_parts, 0);
    ck_assert_uint_eq(a.n_stragglers, 0);
    rsr_coll_analysis_free(&a);
}
END_TEST

START_TEST(checkpoint_bursts)
{
    struct rsr_model m;
    rsr_model_init(&m);
    m.rank = 0;
    uint32_t ck, data;
    rsr_model_intern(&m, "/c/ckpt-1.bin", 13, &ck);
    rsr_model_intern(&m, "/c/data.bin", 11, &data);
    /* GPU busy 0..100 ms except 40..60 ms */
    struct rsr_gpu_op *op = rsr_model_add_op(&m);
    op->start_ns = 0, op->end_ns = 40 * (int64_t)MS;
    op = rsr_model_add_op(&m);
    op->start_ns = 60 * (int64_t)MS, op->end_ns = 100 * (int64_t)MS;
    struct { int64_t s, e; uint32_t path; uint8_t op, dir; uint64_t bytes; } ev[] = {
        { 35 * MS, 35 * MS + 10, ck, RSF_IO_OPEN, RSF_DIR_NONE, 0 },
        { 36 * MS, 50 * MS, ck, RSF_IO_WRITE, RSF_DIR_WRITE, 8u << 20 },
        { 50 * MS, 55 * MS, ck, RSF_IO_FSYNC, RSF_DIR_NONE, 0 },
        { 55 * MS, 55 * MS + 10, ck, RSF_IO_CLOSE, RSF_DIR_NONE, 0 },
        { 70 * MS, 80 * MS, data, RSF_IO_WRITE, RSF_DIR_WRITE, 4u << 20 },
        { 81 * MS, 82 * MS, data, RSF_IO_PREAD, RSF_DIR_READ, 1u << 20 },
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        struct rsr_io *io = rsr_model_add_io(&m);
        io->start_ns = ev[i].s, io->end_ns = ev[i].e, io->path = ev[i].path;
        io->op = ev[i].op, io->dir = ev[i].dir, io->bytes = ev[i].bytes;
    }
    m.wall_start_ns = 0;
    m.wall_end_ns = 100 * (int64_t)MS;
    rsr_model_finish(&m);
    struct rsr_model *mp = &m;
    struct rsr_storage s;
    ck_assert_int_eq(rsr_storage_analyse(&mp, 1, &s), 0);
    ck_assert_uint_eq(s.n_ckpts, 1); /* the data file is read too: not a checkpoint */
    ck_assert_int_eq(s.ckpts[0].start_ns, 35 * (int64_t)MS);
    ck_assert_int_eq(s.ckpts[0].end_ns, 55 * (int64_t)MS + 10);
    ck_assert_uint_eq(s.ckpts[0].bytes, 8u << 20);
    ck_assert_int_eq(s.ckpts[0].gpu_stall_ns, 15 * (int64_t)MS + 10);
    ck_assert(fabs(s.checkpoint_pct - 100.0 * (20 * MS + 10) / (100 * MS)) < 1e-9);
    /* the read at 81 ms is while the GPU is busy */
    ck_assert_int_eq(s.loading[0].read_ns, 1 * (int64_t)MS);
    ck_assert_int_eq(s.loading[0].read_idle_ns, 0);
    rsr_storage_free(&s);
    rsr_model_free(&m);
}
END_TEST

START_TEST(timeline_bins)
{
    struct rsr_model m;
    rsr_model_init(&m);
    m.rank = 3;
    /* 200 ms: bins of 1 ms. GPU busy [10, 12.5) ms and [12, 13) ms; a
     * collective of 4 MB over [20, 22) ms; a 3 MB write over [50, 51) ms */
    int64_t ms = (int64_t)MS;
    struct rsr_gpu_op *op = rsr_model_add_op(&m);
    op->start_ns = 10 * ms, op->end_ns = 12 * ms + ms / 2;
    op = rsr_model_add_op(&m);
    op->start_ns = 12 * ms, op->end_ns = 13 * ms;
    struct rsr_coll *c = rsr_model_add_coll(&m);
    c->bytes = 4000000, c->start_ns = 20 * ms, c->end_ns = 22 * ms, c->comm_id = 1;
    struct rsr_io *io = rsr_model_add_io(&m);
    io->start_ns = 50 * ms, io->end_ns = 51 * ms, io->bytes = 3000000, io->dir = RSF_DIR_WRITE;
    rsr_model_finish(&m);
    struct rsr_model *mp = &m;
    struct rsr_timeline t;
    ck_assert_int_eq(rsr_timeline_build(&mp, 1, 0, 200 * ms, &t), 0);
    ck_assert_int_eq(t.bin_ns, ms);
    ck_assert_uint_eq(t.nbins, 200);
    ck_assert_uint_eq(t.n_ranks, 1);
    ck_assert_int_eq(t.ranks[0].rank, 3);
    const struct rsr_timeline_rank *r = &t.ranks[0];
    /* The process's fine bins (summary.h) are re-binned in proportion: a
     * bin whose edge falls inside a fine bin can be off by up to two fine
     * bins' worth of its value. */
    double tol = 100.0 * 2 * (double)m.sum->fine_bin_ns / (double)t.bin_ns;
    ck_assert(tol < 5);
    ck_assert(fabs(r->gpu_busy_pct[9]) < 1e-9);
    ck_assert(fabs(r->gpu_busy_pct[10] - 100) < tol);
    ck_assert(fabs(r->gpu_busy_pct[11] - 100) < 1e-9);
    ck_assert(fabs(r->gpu_busy_pct[12] - 100) < tol); /* the two ops overlap: counted once */
    ck_assert(fabs(r->gpu_busy_pct[13]) < tol);
    ck_assert(fabs(r->gpu_busy_pct[14]) < 1e-9);
    double sum = 0;
    for (size_t b = 0; b < t.nbins; b++)
        sum += r->gpu_busy_pct[b];
    ck_assert(fabs(sum - 300) < 1e-6); /* 3 ms busy in all, nothing lost */
    /* 2 MB in each of two 1 ms bins: 2 GB/s */
    ck_assert(fabs(r->comm_gbs[20] - 2.0) < 2.0 * tol / 100 && fabs(r->comm_gbs[21] - 2.0) < 2.0 * tol / 100);
    ck_assert(fabs(r->comm_gbs[20] + r->comm_gbs[21] + r->comm_gbs[19] + r->comm_gbs[22] - 4.0) < 1e-9);
    ck_assert(fabs(r->write_mbs[50] - 3000.0) < 3000.0 * tol / 100);
    ck_assert(fabs(r->read_mbs[50]) < 1e-9);
    rsr_timeline_free(&t);
    rsr_model_free(&m);
}
END_TEST

/* A whole job through rsr_job_analyse: the straggler of the hand-made
 * job is named in a finding, and a job without the pattern has none. */
START_TEST(findings_name_the_straggler)
{
    struct job_spec s = { .n = 4, .ncoll = 50, .bytes = 100000000, .step = 2 * (int64_t)MS, .dur = 500000,
                          .arrive = { 0, 0, 600000, 0 },
                          .mono_off = { 0, 0, 0, 0 }, .real_off = { 0, 0, 0, 0 } };
    struct rsr_model m[4];
    make_job(&s, m);
    struct rsr_model *mp[4] = { &m[0], &m[1], &m[2], &m[3] };
    struct rsr_job job;
    ck_assert_int_eq(rsr_job_analyse(mp, 4, &job), 0);
    const struct rsr_finding *f = NULL;
    for (size_t i = 0; i < job.n_findings; i++)
        if (strcmp(job.findings[i].id, "straggler_rank") == 0)
            f = &job.findings[i];
    ck_assert_msg(f != NULL, "no straggler finding");
    ck_assert_msg(strncmp(f->evidence, "rank 2 ", 7) == 0, "%s", f->evidence);
    rsr_job_free(&job);
    for (int r = 0; r < 4; r++)
        rsr_model_free(&m[r]);

    s.arrive[2] = 0;
    make_job(&s, m);
    ck_assert_int_eq(rsr_job_analyse(mp, 4, &job), 0);
    for (size_t i = 0; i < job.n_findings; i++)
        ck_assert_msg(strcmp(job.findings[i].id, "straggler_rank") != 0, "%s", job.findings[i].evidence);
    rsr_job_free(&job);
    for (int r = 0; r < 4; r++)
        rsr_model_free(&m[r]);
}
END_TEST

/* The job's steps held in the spill file a few at a time (three a block,
 * two blocks in memory: every access past the second block reads one back
 * and writes one out) give the same figures as in memory, and wait for a
 * late rank as much (rsr_coll_step_waits writes through the blocks). */
START_TEST(steps_in_the_spill_file)
{
    struct job_spec s = { .n = 4, .ncoll = 50, .bytes = 100000000, .step = 2 * (int64_t)MS, .dur = 500000,
                          .arrive = { 0, 0, 600000, 0 },
                          .mono_off = { 0, 0, 0, 0 }, .real_off = { 0, 0, 0, 0 } };
    struct rsr_model m[4];
    struct rsr_model *mp[4] = { &m[0], &m[1], &m[2], &m[3] };
    struct rsr_job job[2];
    for (int k = 0; k < 2; k++) {
        make_job(&s, m);
        if (k)
            rsr_steps_store_max(0, 3);
        ck_assert_int_eq(rsr_job_analyse(mp, 4, &job[k]), 0);
        rsr_steps_store_max(65536, 4096);
        for (int r = 0; r < 4; r++)
            rsr_model_free(&m[r]);
    }
    const struct rsr_steps *a = &job[0].steps, *b = &job[1].steps;
    ck_assert_msg(a->count >= 10 && a->n == b->n, "steps: %zu in memory, %zu spilled", a->count, b->n);
    ck_assert_msg(a->median_ms == b->median_ms && a->p90_ms == b->p90_ms && a->max_ms == b->max_ms &&
                  a->per_step_ms == b->per_step_ms && a->trend_pct == b->trend_pct && a->n_slow == b->n_slow,
                  "median %g/%g p90 %g/%g max %g/%g", a->median_ms, b->median_ms, a->p90_ms, b->p90_ms, a->max_ms,
                  b->max_ms);
    ck_assert_uint_eq(a->n_series, b->n_series);
    int waited = 0;
    for (size_t i = 0; i < a->n_series; i++) {
        ck_assert_uint_eq(a->series_index[i], b->series_index[i]);
        ck_assert_msg(memcmp(&a->series[i], &b->series[i], sizeof a->series[i]) == 0, "step %zu differs", i);
        waited |= a->series[i].sync_wait_pct > 0;
    }
    ck_assert_msg(waited, "no step waited for rank 2");
    rsr_job_free(&job[0]);
    rsr_job_free(&job[1]);
}
END_TEST

static Suite *analyses_suite(void)
{
    const struct rs_test tests[] = {
        { "analyses_loader_builds_model", loader_builds_model },
        { "analyses_loader_keeps_what_precedes_a_cut", loader_keeps_what_precedes_a_cut },
        { "analyses_busbw_factors", busbw_factors },
        { "analyses_align_skewed_ranks", align_skewed_ranks },
        { "analyses_collectives_waits_and_straggler", collectives_waits_and_straggler },
        { "analyses_stragglers_not_among_equal_ranks", stragglers_not_among_equal_ranks },
        { "analyses_stragglers_named_when_significant", stragglers_named_when_significant },
        { "analyses_checkpoint_bursts", checkpoint_bursts },
        { "analyses_timeline_bins", timeline_bins },
        { "analyses_findings_name_the_straggler", findings_name_the_straggler },
        { "analyses_steps_in_the_spill_file", steps_in_the_spill_file },
    };
    return RS_SUITE("analyses", tests, 60);
}

RS_CHECK_MAIN(analyses_suite)
