/* The step finder (steps.h) on synthetic mark sequences whose steps are
 * known by construction, and the step marks a summary takes (summary.h)
 * on a model whose counters are known by construction. */
#include "rs_check.h"

#include <stdlib.h>
#include <string.h>

#include "reporter/analyse/steps.h"
#include "reporter/load/summary.h"
#include "reporter/load/process.h"
#include "formats/trace.h"

#define US 1000ll
#define MAXN 4096

/* A sequence being built: keys, gaps, weights. */
struct seqb {
    uint32_t key[MAXN];
    int64_t gap[MAXN];
    double w[MAXN];
    size_t n;
};

static void put(struct seqb *q, uint32_t key, int64_t gap, double w)
{
    ck_assert_uint_lt(q->n, MAXN);
    q->key[q->n] = key;
    q->gap[q->n] = gap;
    q->w[q->n++] = w;
}

/* A training step: `per` marks of key k (equal buckets), the first after a
 * long gap (the host's sync, data loading), the others back to back with
 * a few microseconds of jitter. */
static void train_step(struct seqb *q, uint32_t k, int per, int64_t long_gap, unsigned *seed)
{
    for (int i = 0; i < per; i++) {
        *seed = *seed * 1103515245u + 12345u;
        put(q, k, i == 0 ? long_gap + (int64_t)(*seed >> 16) % (100 * US) : (int64_t)(*seed >> 16) % (5 * US),
            25e6);
    }
}

static size_t count_phase(const struct rsr_steps_found *f, int phase)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_segs; i++)
        n += f->segs[i].phase == phase;
    return n;
}

START_TEST(distinct_keys)
{
    /* A B C repeated 20 times: period 3, 20 steps from A */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    for (int s = 0; s < 20; s++)
        for (uint32_t k = 1; k <= 3; k++)
            put(&q, k, 0, 1);
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 3);
    ck_assert_uint_eq(f.n_train, 20);
    ck_assert_uint_eq(f.n_segs, 20);
    ck_assert_uint_eq(f.segs[0].first, 0);
    ck_assert_uint_eq(f.segs[19].first, 57);
    ck_assert(f.anchor_unique);
    ck_assert(f.covered > 0.99);
    rsr_steps_found_free(&f);
}
END_TEST

START_TEST(equal_buckets_by_gaps)
{
    /* four equal AllReduces a step (simtrain's buckets): only the long gap
     * tells where a step begins; the sequence starts with the last two
     * marks of a step, which are no step of their own kind */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    unsigned seed = 7;
    put(&q, 5, 0, 25e6);
    put(&q, 5, 2 * US, 25e6);
    for (int s = 0; s < 30; s++)
        train_step(&q, 5, 4, 1500 * US, &seed);
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 4);
    ck_assert_uint_eq(f.n_train, 30);
    ck_assert(!f.anchor_unique);
    for (size_t i = 0; i < f.n_segs; i++)
        if (f.segs[i].phase == RSR_PHASE_TRAIN)
            ck_assert_uint_eq((f.segs[i].first - 2) % 4, 0);
    ck_assert_uint_eq(f.segs[0].first, 0);
    ck_assert_int_eq(f.segs[0].phase, RSR_PHASE_OTHER);
    rsr_steps_found_free(&f);
}
END_TEST

START_TEST(checkpoints_and_evaluation)
{
    /* 10 training steps (4 equal buckets), then 2 evaluation steps (one
     * small AllReduce each), three times; a checkpoint (a very long gap)
     * before every 8th step */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    unsigned seed = 3;
    int s = 0;
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 10; k++, s++)
            train_step(&q, 1, 4, s % 8 == 7 ? 80000 * US : 1500 * US, &seed);
        for (int e = 0; e < 2; e++)
            put(&q, 2, 800 * US, 64);
    }
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 4);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_TRAIN), 30);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_EVAL), 6);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_OTHER), 0);
    ck_assert_uint_eq(f.n_segs, 36);
    ck_assert(f.covered > 0.99);
    rsr_steps_found_free(&f);
}
END_TEST

/* A step of `per` equal buckets whose first mark has no long gap: the host
 * was ahead (the batch was ready, a sync returned at once), or a busy
 * machine stretched the gaps the threshold is learnt on. */
static void short_step(struct seqb *q, uint32_t k, int per)
{
    for (int i = 0; i < per; i++)
        put(q, k, 3 * US, 25e6);
}

START_TEST(equal_buckets_missing_gap)
{
    /* 200 steps of four equal AllReduces; steps 50, 120 and 121 begin
     * without their long gap, and one step (80) has a long gap at its third
     * mark too: still 200 training steps, none evaluation or other (a
     * 2-rank simtrain with data loading once read as 2,999 training steps
     * and 4 evaluation steps of one AllReduce) */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    unsigned seed = 5;
    for (int s = 0; s < 200; s++) {
        if (s == 50 || s == 120 || s == 121)
            short_step(&q, 5, 4);
        else
            train_step(&q, 5, 4, 1500 * US, &seed);
        if (s == 80)
            q.gap[q.n - 2] = 9000 * US;
    }
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 4);
    ck_assert_uint_eq(f.n_train, 200);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_TRAIN), 200);
    ck_assert_uint_eq(f.n_segs, 200);
    for (size_t i = 0; i < f.n_segs; i++)
        ck_assert_uint_eq(f.segs[i].first, 4 * i);
    rsr_steps_found_free(&f);
    /* the last step without its gap, and an extra bucket (a fifth equal
     * AllReduce) in step 30: the extra mark is no step, and the steps
     * after it still begin at their long gaps */
    memset(&q, 0, sizeof q);
    for (int s = 0; s < 60; s++) {
        if (s == 59)
            short_step(&q, 5, 4);
        else
            train_step(&q, 5, s == 30 ? 5 : 4, 1500 * US, &seed);
    }
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 4);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_TRAIN), 60);
    ck_assert_uint_eq(f.n_segs, 61);
    ck_assert_uint_eq(f.segs[31].first, 31 * 4);
    ck_assert_uint_eq(f.segs[31].n, 1);
    ck_assert_uint_eq(f.segs[32].first, 31 * 4 + 1);
    rsr_steps_found_free(&f);
}
END_TEST

START_TEST(busy_host_preempted_marks)
{
    /* 800 short steps of four equal AllReduces: 30 us (+-20%) before a
     * step's first mark, 0 to 5 us before the others, and one mark in
     * twenty (one in ten) held 1 to 10 ms more by a busy CPU: still period
     * 4 and 800 steps (Otsu's split alone fell between the steps' gaps and
     * the held ones, and read 1,600 or 3,200 steps of one or two marks) */
    static struct seqb q;
    for (int tenth = 0; tenth < 2; tenth++) {
        memset(&q, 0, sizeof q);
        unsigned seed = 17;
        for (int s = 0; s < 800; s++)
            for (int i = 0; i < 4; i++) {
                seed = seed * 1103515245u + 12345u;
                int64_t g = i == 0 ? 24 * US + (int64_t)(seed >> 16) % (12 * US) : (int64_t)(seed >> 16) % (5 * US);
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) % (tenth ? 10 : 20) == 0)
                    g += 1000 * US + (int64_t)(seed >> 8) % (9000 * US);
                put(&q, 5, g, 25e6);
            }
        struct rsr_steps_found f;
        ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
        ck_assert_uint_eq(f.period, 4);
        ck_assert_uint_eq(f.n_train, 800);
        rsr_steps_found_free(&f);
    }
}
END_TEST

START_TEST(warm_up_differs)
{
    /* kernels: the first step also runs three one-off kernels (compilation,
     * allocation) before its own; then 25 steps of 9 kernels */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    put(&q, 100, 0, 1);
    put(&q, 101, 0, 1);
    put(&q, 102, 50 * US, 1);
    for (int s = 0; s < 25; s++)
        for (uint32_t k = 0; k < 9; k++)
            put(&q, 10 + k, k == 0 ? 30 * US : 0, 1);
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 9);
    ck_assert_uint_eq(f.anchor_key, 10);
    ck_assert_uint_eq(count_phase(&f, RSR_PHASE_TRAIN), 25);
    ck_assert_uint_eq(f.segs[0].phase, RSR_PHASE_OTHER);
    ck_assert_uint_eq(f.segs[0].n, 3);
    rsr_steps_found_free(&f);
}
END_TEST

START_TEST(no_repetition)
{
    /* kernels drawn at random from eight names: nothing repeats in order */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    unsigned seed = 11;
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        put(&q, 1 + (seed >> 16) % 8, (int64_t)((seed >> 8) % 50) * US, 1);
    }
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 0);
    ck_assert_ptr_null(f.segs);
    /* two repetitions are not enough */
    memset(&q, 0, sizeof q);
    for (int s = 0; s < 2; s++)
        for (uint32_t k = 1; k <= 5; k++)
            put(&q, k, 0, 1);
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 0);
}
END_TEST

START_TEST(one_collective_a_step)
{
    /* gen_job: one AllReduce a step, gaps that vary: period 1 */
    static struct seqb q;
    memset(&q, 0, sizeof q);
    for (int i = 0; i < 50; i++)
        put(&q, 4, (3000 + 37 * (i % 7)) * US, 1 << 20);
    struct rsr_steps_found f;
    ck_assert_int_eq(rsr_steps_find(q.key, q.gap, q.w, q.n, &f), 0);
    ck_assert_uint_eq(f.period, 1);
    ck_assert_uint_eq(f.n_train, 50);
    rsr_steps_found_free(&f);
}
END_TEST

/* Three steps of: compute [b+100, b+600) us, an AllReduce with its kernel
 * [b+600, b+800), a read [b+900, b+1000) while the GPU idles; b = k ms. The
 * collective's mark is at the end of the idle gap before the step's
 * compute (b+100), with the counters of the steps before it. */
START_TEST(summary_marks)
{
    struct rsr_model m;
    rsr_model_init(&m);
    for (int k = 0; k < 3; k++) {
        int64_t b = k * 1000 * US;
        struct rsr_gpu_op *op = rsr_model_add_op(&m);
        op->start_ns = b + 100 * US, op->end_ns = b + 600 * US, op->cls = RSR_GPU_COMPUTE, op->name = 0;
        struct rsr_coll *c = rsr_model_add_coll(&m);
        c->op = RSR_COLL_ALLREDUCE, c->bytes = 1 << 20, c->comm_id = 9, c->seq = (uint32_t)k;
        c->start_ns = b + 600 * US, c->end_ns = b + 800 * US;
        op = rsr_model_add_op(&m);
        op->start_ns = c->start_ns, op->end_ns = c->end_ns, op->cls = RSR_GPU_COMM, op->coll = k;
        struct rsr_io *io = rsr_model_add_io(&m);
        io->start_ns = b + 900 * US, io->end_ns = b + 1000 * US, io->dir = RSF_DIR_READ, io->bytes = 4096;
    }
    rsr_model_finish(&m);
    struct rsr_summary *s = rsr_model_summary(&m);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->n_cmarks, 3);
    /* the first: no idle gap before it; its gap is the work before it */
    ck_assert_int_eq(s->cmarks[0].t, 600 * US);
    ck_assert_int_eq(s->cmarks[0].gap, 500 * US);
    for (int k = 1; k < 3; k++) {
        const struct rsr_step_mark *mk = &s->cmarks[k];
        int64_t b = k * 1000 * US;
        ck_assert_int_eq(mk->t, b + 100 * US);
        ck_assert_int_eq(mk->gap, 300 * US);
        ck_assert_int_eq(mk->c.busy, k * 700 * US);
        ck_assert_int_eq(mk->c.compute, k * 500 * US);
        ck_assert_int_eq(mk->c.comm, k * 200 * US);
        ck_assert_int_eq(mk->c.cc, k * 700 * US);
        ck_assert_int_eq(mk->c.io, k * 100 * US);
        ck_assert_int_eq(mk->c.wait, k * 100 * US);
    }
    ck_assert_int_eq(s->end_counters.busy, 3 * 700 * US);
    ck_assert_int_eq(s->end_counters.io, 3 * 100 * US);
    /* with collectives, kernel marks are not kept */
    ck_assert_uint_eq(s->n_kmarks, 0);
    rsr_model_free(&m);
}
END_TEST

/* Two ranks training on the CPU (no GPU work: steps from their waits),
 * ten steps of 60 ms each: rank 0 waits 32 ms at the end of each in its
 * all-reduce (stack 7), rank 1 the last 2 ms (stack 8) but for step 4,
 * whose wait was under the agent's threshold, and once for a pipe in
 * between (stack 9, another stack: not its anchor). A step runs from one
 * wait's end to the next's: rank 0 has 9 steps, rank 1 8 (its steps 4 and
 * 5 are one). The job has rank 0's 9 (on a tie in the count, the larger);
 * rank 1 is folded by time: each of its steps into the job's step that
 * begins and ends where it does; its long one into none: steps 3 and 4
 * have rank 0 alone. */
static void cpu_rank(struct rsr_model *m, int32_t rank)
{
    rsr_model_init(m);
    m->rank = rank;
    m->world_size = 2;
    for (int k = 0; k < 10; k++) {
        int64_t end = (k + 1) * 60000 * US;
        if (rank == 1 && k == 4)
            continue;
        struct rsr_hwait *w = rsr_model_add_hwait(m);
        w->start_ns = end - (rank ? 2000 : 32000) * US, w->end_ns = end;
        w->stack = rank ? 8 : 7, w->reason = RSF_WAIT_CONDVAR;
        if (rank == 1 && k == 6) {
            w = rsr_model_add_hwait(m);
            w->start_ns = end - 30000 * US, w->end_ns = end - 25000 * US;
            w->stack = 9, w->reason = RSF_WAIT_PIPE;
        }
    }
    rsr_model_finish(m);
}

START_TEST(cpu_ranks_from_waits)
{
    static struct rsr_model m[2];
    for (int r = 0; r < 2; r++) {
        cpu_rank(&m[r], r);
        const struct rsr_summary *s = rsr_model_summary(&m[r]);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->kmark_waits, 1);
        ck_assert_uint_eq(s->n_kmarks, r ? 10 : 10);    /* rank 1: 9 anchors and its pipe wait */
        /* a mark at a wait's end, its counters the host's waits by then */
        ck_assert_int_eq(s->kmarks[0].t, 60000 * US);
        ck_assert_int_eq(s->kmarks[0].gap, (r ? 2000 : 32000) * US);
        ck_assert_int_eq(s->kmarks[1].c.host[RSR_HOST_LOCK], 2 * (r ? 2000 : 32000) * US);
    }
    struct rsr_model *v[2] = { &m[0], &m[1] };
    struct rsr_steps st;
    ck_assert_int_eq(rsr_steps_analyse(v, 2, &st), 0);
    ck_assert_str_eq(st.source, "waits");
    ck_assert_uint_eq(st.n, 9);
    ck_assert_uint_eq(st.ranks, 2);
    for (size_t i = 0; i < st.n; i++) {
        const struct rsr_step *x = rsr_step_get(&st, i);
        ck_assert_int_eq(x->start_ns, (int64_t)(i + 1) * 60000 * US);
        ck_assert_int_eq(x->end_ns, (int64_t)(i + 2) * 60000 * US);
        ck_assert_uint_eq(x->path.ranks, i == 3 || i == 4 ? 1 : 2);
    }
    rsr_steps_free(&st);
    for (int r = 0; r < 2; r++)
        rsr_model_free(&m[r]);
}
END_TEST

static Suite *steps_suite(void)
{
    const struct rs_test tests[] = {
        { "steps_distinct_keys", distinct_keys },
        { "steps_equal_buckets_by_gaps", equal_buckets_by_gaps },
        { "steps_checkpoints_and_evaluation", checkpoints_and_evaluation },
        { "steps_equal_buckets_missing_gap", equal_buckets_missing_gap },
        { "steps_busy_host_preempted_marks", busy_host_preempted_marks },
        { "steps_warm_up_differs", warm_up_differs },
        { "steps_no_repetition", no_repetition },
        { "steps_one_collective_a_step", one_collective_a_step },
        { "steps_summary_marks", summary_marks },
        { "steps_cpu_ranks_from_waits", cpu_ranks_from_waits },
    };
    return RS_SUITE("steps", tests, 30);
}

RS_CHECK_MAIN(steps_suite)
