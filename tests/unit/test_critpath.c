/* The critical path's arithmetic (critpath.h) on ranks' step counters
 * made up here, each expectation worked out by hand from the model the
 * header states: the idle split in its order, the path through the rank
 * whose own work ends last, and the what-ifs re-timed over the ranks. */
#include "rs_check.h"

#include <string.h>

#include "reporter/analyse/critpath.h"

#define MS 1000000ll

/* A rank's step of len ms from start: compute and transfer (comm on the
 * GPU beside nothing, while launched work waited behind it), the rest
 * idle; host[] and wait in ms. */
static struct rsr_cp_rank rank_step(int32_t rank, int64_t start, double len, double compute, double transfer,
                                    const double host[RSR_HOST_NCLASSES], double wait, double sync, int ckpt,
                                    uint32_t colls)
{
    struct rsr_step_counters d;
    memset(&d, 0, sizeof d);
    d.compute = (int64_t)(compute * MS);
    d.comm = (int64_t)(transfer * MS);
    d.cc = d.compute + d.comm;
    d.busy = d.cc;
    d.blocking = d.comm;
    d.wait = (int64_t)(wait * MS);
    d.sync_gap = (int64_t)(sync * MS);
    for (int k = 0; k < RSR_HOST_NCLASSES; k++)
        d.host[k] = host ? (int64_t)(host[k] * MS) : 0;
    struct rsr_cp_in in = { rank, &d, start, start + (int64_t)(len * MS), ckpt, colls, { 0 }, 0, { 0 }, 0 };
    struct rsr_cp_rank x;
    rsr_cp_rank_of(&x, &in, NULL);
    return x;
}

#define NEAR(a, b) ck_assert_double_eq_tol((a), (b), 1e-6 * MS)

/* Idle goes to the host's classes in order, each at most what is left:
 * 10 ms step, 4 compute, 1 transfer: 5 idle; a checkpoint's writes 3,
 * reads 1.5 (data), sleep 2 (only 0.5 left), the rest nothing. */
START_TEST(idle_split_in_order)
{
    double host[RSR_HOST_NCLASSES] = { [RSR_HOST_WRITE] = 3, [RSR_HOST_SLEEP] = 2 };
    struct rsr_cp_rank x = rank_step(0, 0, 10, 4, 1, host, 1.5, 1, 1, 4);
    NEAR(x.part[RSR_CP_COMPUTE], 4 * MS);
    NEAR(x.part[RSR_CP_TRANSFER], 1 * MS);
    NEAR(x.part[RSR_CP_CHECKPOINT], 3 * MS);
    NEAR(x.part[RSR_CP_DATA], 1.5 * MS);
    NEAR(x.part[RSR_CP_SLEEP], 0.5 * MS);
    NEAR(x.part[RSR_CP_SYNC], 0);
    NEAR(x.part[RSR_CP_HOST], 0);
    NEAR(x.w, 9 * MS);  /* everything but the transfer */
    /* without a checkpoint in the step, the writes are other file I/O */
    x = rank_step(0, 0, 10, 4, 1, host, 1.5, 1, 0, 4);
    NEAR(x.part[RSR_CP_FILE_IO], 3 * MS);
    NEAR(x.part[RSR_CP_CHECKPOINT], 0);
}
END_TEST

/* Four ranks, rank 2 reading 3 ms more a step: the path is rank 2; without
 * data loading the step's own work ends with the others' (5 ms), so the
 * gain is 3 ms, not more, and it is at most the part. */
START_TEST(one_rank_data_loading)
{
    struct rsr_step_path p;
    for (int r = 0; r < 4; r++) {
        struct rsr_cp_rank x = rank_step(r, 0, r == 2 ? 8 : 5, 4.5, 0.5, NULL, r == 2 ? 3 : 0, 0, 0, 4);
        rsr_cp_fold(&p, &x, r == 0);
    }
    ck_assert_int_eq(p.r1, 2);
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    double len = rsr_cp_step(&p, 0, 0, 8 * MS, gain, part);
    NEAR(len, 8 * MS);
    NEAR(part[RSR_CP_DATA], 3 * MS);
    NEAR(gain[RSR_CP_DATA], 3 * MS);
    NEAR(gain[RSR_CP_HOST], 0);
    NEAR(gain[RSR_CP_IMBALANCE], 0);
}
END_TEST

/* The same data loading on every rank but unequal: without it, the step
 * ends when the latest of (end - its loading) does. Ranks: own work 7, 8,
 * 6 ms with loading 2, 4, 0: the path is the second (8); without loading
 * the latest is the third's 6 ms: a gain of 2, not the path's 4. */
START_TEST(what_if_re_times_the_ranks)
{
    struct rsr_step_path p;
    const double len[3] = { 7.5, 8.5, 6.5 }, load[3] = { 2, 4, 0 };
    for (int r = 0; r < 3; r++) {
        struct rsr_cp_rank x = rank_step(r, 0, len[r], len[r] - 0.5 - load[r], 0.5, NULL, load[r], 0, 0, 4);
        rsr_cp_fold(&p, &x, r == 0);
    }
    ck_assert_int_eq(p.r1, 1);
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    rsr_cp_step(&p, 0, 0, 8.5 * MS, gain, part);
    NEAR(part[RSR_CP_DATA], 4 * MS);
    NEAR(gain[RSR_CP_DATA], 2 * MS);
}
END_TEST

/* A rank that starts its step late (still finishing the one before) is on
 * the path though its own work is not the longest: ranks of 5 ms from 0,
 * and one of 4.5 ms from 1 ms, ends at 5.5. */
START_TEST(late_start_is_on_the_path)
{
    struct rsr_step_path p;
    struct rsr_cp_rank a = rank_step(0, 0, 5.5, 4.5, 0.5, NULL, 0, 0, 0, 4);
    struct rsr_cp_rank b = rank_step(1, 1 * MS, 5, 4, 0.5, NULL, 0, 0, 0, 4);
    rsr_cp_fold(&p, &a, 1);
    rsr_cp_fold(&p, &b, 0);
    ck_assert_int_eq(p.r1, 1);
}
END_TEST

/* A straggler's kernels 1.5x: four ranks of 4 ms compute (6 on rank 3),
 * 0.5 transfer: the gain is rank 3's excess over the fastest rank, 2 ms;
 * the part is split off compute. */
START_TEST(straggler_compute_excess)
{
    struct rsr_step_path p;
    for (int r = 0; r < 4; r++) {
        double c = r == 3 ? 6 : 4;
        struct rsr_cp_rank x = rank_step(r, 0, c + 0.5, c, 0.5, NULL, 0, 0, 0, 4);
        rsr_cp_fold(&p, &x, r == 0);
    }
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    rsr_cp_step(&p, 0, 0, 6.5 * MS, gain, part);
    NEAR(gain[RSR_CP_IMBALANCE], 2 * MS);
    NEAR(part[RSR_CP_IMBALANCE], 2 * MS);
    NEAR(part[RSR_CP_COMPUTE], 4 * MS);
    /* read as jitter, the excess stays compute */
    rsr_cp_step(&p, 0, RSR_CP_NO_IMBALANCE, 6.5 * MS, gain, part);
    NEAR(gain[RSR_CP_IMBALANCE], 0);
    NEAR(part[RSR_CP_COMPUTE], 6 * MS);
}
END_TEST

/* Overlap hides at most the compute beside nothing and never the last
 * collective: 4 collectives of 1 ms each, none overlapped, 10 ms compute:
 * 3 ms can hide. With 2 ms of compute only, 2 ms. */
START_TEST(overlap_gain_bounds)
{
    struct rsr_step_path p;
    struct rsr_cp_rank x = rank_step(0, 0, 14, 10, 4, NULL, 0, 0, 0, 4);
    rsr_cp_fold(&p, &x, 1);
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    rsr_cp_step(&p, 0, 0, 14 * MS, gain, part);
    NEAR(gain[RSR_CP_TRANSFER], 3 * MS);
    x = rank_step(0, 0, 6, 2, 4, NULL, 0, 0, 0, 4);
    rsr_cp_fold(&p, &x, 1);
    rsr_cp_step(&p, 0, 0, 6 * MS, gain, part);
    NEAR(gain[RSR_CP_TRANSFER], 2 * MS);
}
END_TEST

/* An evaluation step is evaluation whole: the path's own time in it. */
START_TEST(evaluation_step_whole)
{
    struct rsr_step_path p;
    struct rsr_cp_rank x = rank_step(0, 0, 3, 2, 0.5, NULL, 0, 0, 0, 1);
    rsr_cp_fold(&p, &x, 1);
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    double len = rsr_cp_step(&p, 1, 0, 3.4 * MS, gain, part);
    NEAR(len, 3 * MS);
    NEAR(gain[RSR_CP_EVAL], 3 * MS);
    NEAR(part[RSR_CP_EVAL], 3 * MS);
    NEAR(part[RSR_CP_COMPUTE], 0);
}
END_TEST

/* A checkpoint's step that spends more on sync and host than the rank's
 * typical step gives the excess to the checkpoint. */
START_TEST(checkpoint_takes_its_excess)
{
    struct rsr_step_counters d;
    memset(&d, 0, sizeof d);
    d.compute = d.cc = d.busy = 4 * MS;
    d.sync_gap = (int64_t)(0.2 * MS);
    struct rsr_cp_typical typ = { 0 };
    struct rsr_cp_in in = { 0, &d, 0, 5 * MS, 0, 4, { 0 }, 0, { 0 }, 0 };
    struct rsr_cp_rank x;
    for (int i = 0; i < 3; i++)     /* typical: 0.2 sync, 0.8 host */
        rsr_cp_rank_of(&x, &in, &typ);
    ck_assert_uint_eq(typ.n, 3);
    d.host[RSR_HOST_WRITE] = 20 * MS;
    d.sync_gap = 3 * MS;
    in.end = 30 * MS;
    in.ckpt = 1;
    rsr_cp_rank_of(&x, &in, &typ);
    /* 26 idle: 20 writes; then sync 3 (0.2 typical), host 3 (0.8 typical) */
    NEAR(x.part[RSR_CP_SYNC], 0.2 * MS);
    NEAR(x.part[RSR_CP_HOST], 0.8 * MS);
    NEAR(x.part[RSR_CP_CHECKPOINT], 25 * MS);
    ck_assert_uint_eq(typ.n, 3);
}
END_TEST

/* Communication alone on the GPU while no launched work waited behind it
 * (the GPU waited for the host to launch more) hid behind the host's
 * work: 10 ms step, 3 compute, 4 communication of which 1 held work
 * back: transfer 1, host 3 more beside the 3 idle. */
START_TEST(host_hidden_transfer_is_host)
{
    struct rsr_step_counters d;
    memset(&d, 0, sizeof d);
    d.compute = 3 * MS;
    d.comm = 4 * MS;
    d.cc = d.busy = 7 * MS;
    d.blocking = 1 * MS;
    struct rsr_cp_in in = { 0, &d, 0, 10 * MS, 0, 4, { 0 }, 0, { 0 }, 0 };
    struct rsr_cp_rank x;
    rsr_cp_rank_of(&x, &in, NULL);
    NEAR(x.part[RSR_CP_TRANSFER], 1 * MS);
    NEAR(x.part[RSR_CP_HOST], 6 * MS);
    NEAR(x.part[RSR_CP_COMPUTE], 3 * MS);
    NEAR(x.w, 9 * MS);
}
END_TEST

/* A step whose sync returned 2 ms after the GPU's end, on a rank whose
 * main thread waited for a CPU beyond its wake-ups 5% of its time: the
 * gap is the sync's. 17.5%: half way from 10% to 25%, half the gap is the
 * host's. 40%: all of it. */
START_TEST(run_delay_is_the_hosts)
{
    struct rsr_step_counters d;
    memset(&d, 0, sizeof d);
    d.compute = d.cc = d.busy = 4 * MS;
    d.sync_gap = 2 * MS;
    struct rsr_cp_in in = { 0, &d, 0, 20 * MS, 0, 4, { 0 }, 0, { 0 }, 0 };
    struct rsr_cp_rank x;
    const double starved[3] = { 0.05, 0.175, 0.40 }, sync[3] = { 2, 1, 0 };
    for (int i = 0; i < 3; i++) {
        in.starved = starved[i];
        rsr_cp_rank_of(&x, &in, NULL);
        NEAR(x.part[RSR_CP_SYNC], sync[i] * MS);
        NEAR(x.part[RSR_CP_HOST], (16 - sync[i]) * MS);
    }
}
END_TEST

/* The latest rank waited inside collectives for later ranks: its transfer
 * 3 ms against the least any rank had, 1. Ranks 0-2 (the others) had host
 * work 2, 2, 3 ms against the least 1 (the latest's own): the 2 ms of wait
 * go to host, and removing host work gives them back too. */
START_TEST(wait_for_a_late_rank_is_its_cause)
{
    struct rsr_step_path p;
    const double host_ms[4] = { 2, 2, 3, 1 }, tr[4] = { 1, 1.5, 1, 3 };
    for (int r = 0; r < 4; r++) {
        double host[RSR_HOST_NCLASSES] = { 0 };
        struct rsr_cp_rank x = rank_step(r, 0, 4 + tr[r] + host_ms[r], 4, tr[r], host, 0, 0, 0, 4);
        x.part[RSR_CP_HOST] = host_ms[r] * MS;  /* the idle left is the host's */
        rsr_cp_fold(&p, &x, r == 0);
    }
    ck_assert_int_eq(p.r1, 2);  /* own work 4 + 3 */
    /* the path is rank 2's: transfer 1 is the least; nothing to move */
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    rsr_cp_step(&p, 0, 0, 8 * MS, gain, part);
    NEAR(part[RSR_CP_TRANSFER], 1 * MS);
    NEAR(part[RSR_CP_HOST], 3 * MS);
    /* now the latest rank is the one that waited: rank 3, own work 4 + 4
     * host, transfer 3 */
    const double host2[4] = { 2, 2, 3, 4 };
    for (int r = 0; r < 4; r++) {
        double host[RSR_HOST_NCLASSES] = { 0 };
        struct rsr_cp_rank x = rank_step(r, 0, 4 + tr[r] + host2[r], 4, tr[r], host, 0, 0, 0, 4);
        x.part[RSR_CP_HOST] = host2[r] * MS;
        rsr_cp_fold(&p, &x, r == 0);
    }
    ck_assert_int_eq(p.r1, 3);
    double len = rsr_cp_step(&p, 0, 0, 11 * MS, gain, part);
    /* others' host mean (2 + 2 + 3) / 3 = 7/3 over the least 2: 1/3 > 0,
     * so the wait of 3 - 1 = 2 ms is host's */
    NEAR(part[RSR_CP_TRANSFER], 1 * MS);
    NEAR(part[RSR_CP_HOST], 6 * MS);
    NEAR(len, 11 * MS);
    /* without host work: the latest own work ends at max(8 - 4, 7 - 3, ...)
     * = 4 after 8: 4, plus the 2 waited */
    NEAR(gain[RSR_CP_HOST], 6 * MS);
}
END_TEST

/* Two ranks training on the CPU (no GPU work: their steps from their
 * waits, steps.c), each step 60 ms from one all-reduce's end to the next:
 * rank 0 waits 32 ms in its collective (the lock class, all of it a
 * collective's) and computes 28; rank 1 waits 2 and computes 58, 6 of
 * them in data loading's waits (poll, all of it data loading's). Each
 * rank's waits in the collective are its transfer, out of its own work;
 * its CPU work is compute. The path is rank 1 (its own work ends at 58):
 * compute 52, of which 52 - 28 = 24 beyond the fastest rank's is a
 * slower rank's compute; data 6, transfer 2 (the least any rank had: no
 * wait for a later rank). Making rank 1's compute like rank 0's ends its
 * own work at 58 - 24 = 34, after rank 0's 28: the gain is 24. Without
 * data loading it ends at 52: 6. */
START_TEST(cpu_ranks_collective_waits)
{
    struct rsr_step_path p;
    for (int r = 0; r < 2; r++) {
        struct rsr_step_counters d;
        memset(&d, 0, sizeof d);
        d.host[RSR_HOST_LOCK] = (r ? 2 : 32) * MS;
        d.host[RSR_HOST_POLL] = (r ? 6 : 0) * MS;
        struct rsr_cp_in in = { r, &d, 0, 60 * MS, 0, 0, { [RSR_HOST_POLL] = 1 }, 0,
                                { [RSR_HOST_LOCK] = 1 }, 1 };
        struct rsr_cp_rank x;
        rsr_cp_rank_of(&x, &in, NULL);
        NEAR(x.part[RSR_CP_TRANSFER], (r ? 2 : 32) * MS);
        NEAR(x.part[RSR_CP_LOCK], 0);
        NEAR(x.part[RSR_CP_HOST], 0);
        NEAR(x.part[RSR_CP_COMPUTE], (r ? 52 : 28) * MS);
        NEAR(x.w, (r ? 58 : 28) * MS);
        rsr_cp_fold(&p, &x, r == 0);
    }
    ck_assert_int_eq(p.r1, 1);
    double gain[RSR_CP_NGAIN], part[RSR_CP_NPARTS];
    double len = rsr_cp_step(&p, 0, 0, 60 * MS, gain, part);
    NEAR(len, 60 * MS);
    NEAR(part[RSR_CP_COMPUTE], 28 * MS);
    NEAR(part[RSR_CP_IMBALANCE], 24 * MS);
    NEAR(part[RSR_CP_DATA], 6 * MS);
    NEAR(part[RSR_CP_TRANSFER], 2 * MS);
    NEAR(gain[RSR_CP_IMBALANCE], 24 * MS);
    NEAR(gain[RSR_CP_DATA], 6 * MS);
    NEAR(gain[RSR_CP_TRANSFER], 0);
}
END_TEST

static Suite *critpath_suite(void)
{
    const struct rs_test tests[] = {
        { "critpath_idle_split_in_order", idle_split_in_order },
        { "critpath_one_rank_data_loading", one_rank_data_loading },
        { "critpath_what_if_re_times_the_ranks", what_if_re_times_the_ranks },
        { "critpath_late_start_is_on_the_path", late_start_is_on_the_path },
        { "critpath_straggler_compute_excess", straggler_compute_excess },
        { "critpath_overlap_gain_bounds", overlap_gain_bounds },
        { "critpath_evaluation_step_whole", evaluation_step_whole },
        { "critpath_checkpoint_takes_its_excess", checkpoint_takes_its_excess },
        { "critpath_host_hidden_transfer_is_host", host_hidden_transfer_is_host },
        { "critpath_run_delay_is_the_hosts", run_delay_is_the_hosts },
        { "critpath_wait_for_a_late_rank_is_its_cause", wait_for_a_late_rank_is_its_cause },
        { "critpath_cpu_ranks_collective_waits", cpu_ranks_collective_waits },
    };
    return RS_SUITE("critpath", tests, 30);
}

RS_CHECK_MAIN(critpath_suite)
