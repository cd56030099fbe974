/* Unit tests of the hooks' clock (preload/clock.c, agent.h's rs_tick_ns):
 * a tick read between two CLOCK_MONOTONIC readings of this test's own must
 * map to a time between them (give or take TOL_NS, far more than the
 * pairs' width: a loaded machine widens the test's brackets, not the
 * error), after the map was made and before, over a span and at once;
 * durations against the test's own readings; ticks read in order map in
 * order; and without the TSC, ticks are CLOCK_MONOTONIC itself. Which
 * clock the hooks read is held against the kernel's clocksource. */
#include "rs_agent_unit.h"

#include <fcntl.h>

#define TOL_NS 50000 /* 50 us */

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Whether the kernel keeps time with the TSC (its current clocksource). */
static int kernel_uses_tsc(void)
{
    char buf[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    return strcmp(buf, "tsc\n") == 0;
}

/* A tick read between two readings of the test's clock. */
struct bracket {
    uint64_t before, tick, after;
};

static struct bracket bracket_now(void)
{
    struct bracket b;
    b.before = mono();
    b.tick = rs_ticks();
    b.after = mono();
    return b;
}

static void assert_within(const struct rs_tick_map *m, struct bracket b, const char *what)
{
    uint64_t ns = rs_tick_ns(m, b.tick);
    ck_assert_msg(ns + TOL_NS >= b.before && ns <= b.after + TOL_NS,
                  "%s: tick maps to %llu ns, read between %llu and %llu", what, (unsigned long long)ns,
                  (unsigned long long)b.before, (unsigned long long)b.after);
}

static void clock_up(int no_tsc)
{
    rs_cfg.test_no_tsc = no_tsc;
    rs_clock_init();
#if defined(__x86_64__)
    ck_assert_int_eq(rs_hot.tsc_on, !no_tsc && kernel_uses_tsc());
#else
    ck_assert_int_eq(rs_hot.tsc_on, 0);
#endif
}

/* As the writer does: a map at start, a new one at each drain. Ticks read
 * before the map's pair, between pairs, and 30 ms after the last. */
START_TEST(ticks_map_onto_monotonic)
{
    clock_up(0);
    struct rs_tick_map m0, m1;
    rs_tick_map_start(&m0);
    struct bracket early[200];
    for (int i = 0; i < 200; i++) {
        early[i] = bracket_now();
        if (i % 20 == 0)
            sleep_ms(1);
    }
    rs_tick_map_update(&m1, &m0);
    ck_assert(m1.ns_per_tick > 0);
    for (int i = 0; i < 200; i++)
        assert_within(&m1, early[i], "read before the pair");
    for (int i = 0; i < 300; i++) {
        if (i % 100 == 0)
            sleep_ms(10);
        assert_within(&m1, bracket_now(), "read after the pair");
    }
}
END_TEST

/* A short-lived process: pairs less than a millisecond apart, whose
 * slope comes from the first pair. */
START_TEST(pairs_close_together)
{
    clock_up(0);
    struct rs_tick_map m[4];
    struct bracket b[4][50];
    rs_tick_map_start(&m[0]);
    for (int k = 1; k < 4; k++) {
        for (int i = 0; i < 50; i++)
            b[k][i] = bracket_now();
        rs_tick_map_update(&m[k], &m[k - 1]);
        ck_assert(m[k].ns_per_tick > 0);
    }
    for (int k = 1; k < 4; k++)
        for (int i = 0; i < 50; i++)
            assert_within(&m[k], b[k][i], "between close pairs");
}
END_TEST

/* A 20 ms span of busy CPU timed in ticks, against the test's own clock:
 * the span lies between (after0 .. before1) and (before0 .. after1). */
START_TEST(durations)
{
    clock_up(0);
    struct rs_tick_map m0, m1;
    rs_tick_map_start(&m0);
    sleep_ms(5);
    rs_tick_map_update(&m1, &m0);
    for (int round = 0; round < 5; round++) {
        struct bracket s = bracket_now();
        while (mono() - s.after < 20000000u)
            ;
        struct bracket e = bracket_now();
        uint64_t d = rs_tick_dur(&m1, e.tick - s.tick);
        uint64_t lo = e.before - s.after, hi = e.after - s.before;
        /* the slope's error over 20 ms, far inside 1e-4 */
        ck_assert_msg(d + lo / 10000 + 1000 >= lo && d <= hi + hi / 10000 + 1000,
                      "a span between %llu and %llu ns mapped to %llu ns", (unsigned long long)lo,
                      (unsigned long long)hi, (unsigned long long)d);
    }
}
END_TEST

/* Ticks read one after another map to times that never go back, through
 * one map; two maps in a row agree on the same tick within the tolerance. */
START_TEST(monotonic)
{
    clock_up(0);
    struct rs_tick_map m0, m1, m2;
    rs_tick_map_start(&m0);
    sleep_ms(5);
    rs_tick_map_update(&m1, &m0);
    uint64_t prev_tick = rs_ticks(), prev_ns = rs_tick_ns(&m1, prev_tick);
    for (int i = 0; i < 200000; i++) {
        uint64_t t = rs_ticks();
        ck_assert_uint_ge(t, prev_tick);
        uint64_t ns = rs_tick_ns(&m1, t);
        ck_assert_uint_ge(ns, prev_ns);
        prev_tick = t;
        prev_ns = ns;
    }
    sleep_ms(5);
    rs_tick_map_update(&m2, &m1);
    uint64_t t = rs_ticks();
    int64_t gap = (int64_t)(rs_tick_ns(&m2, t) - rs_tick_ns(&m1, t));
    ck_assert_msg(gap < TOL_NS && gap > -TOL_NS, "successive maps differ by %lld ns", (long long)gap);
}
END_TEST

/* RINGSIDE_TEST_NO_TSC (and a host without a TSC clocksource): ticks are
 * CLOCK_MONOTONIC ns, and every map leaves them as they are. */
START_TEST(without_tsc)
{
    clock_up(1);
    struct rs_tick_map m0, m1;
    rs_tick_map_start(&m0);
    sleep_ms(2);
    rs_tick_map_update(&m1, &m0);
    for (int i = 0; i < 1000; i++) {
        struct bracket b = bracket_now();
        ck_assert_uint_ge(b.tick, b.before);
        ck_assert_uint_le(b.tick, b.after);
        ck_assert_uint_eq(rs_tick_ns(&m1, b.tick), b.tick);
        ck_assert_uint_eq(rs_tick_dur(&m1, b.tick - b.before), b.tick - b.before);
    }
}
END_TEST

static Suite *clock_suite(void)
{
    const struct rs_test tests[] = {
        { "clock_ticks_map_onto_monotonic", ticks_map_onto_monotonic },
        { "clock_pairs_close_together", pairs_close_together },
        { "clock_durations", durations },
        { "clock_monotonic", monotonic },
        { "clock_without_tsc", without_tsc },
    };
    return RS_SUITE("clock", tests, 30);
}

RS_CHECK_MAIN(clock_suite)
