/* Timestamps for the hooks. Where the kernel itself keeps time with the TSC
 * (its clocksource is "tsc", so the counter is invariant and synchronised),
 * hooks read the TSC directly, which costs a fraction of clock_gettime; the
 * writer turns ticks into CLOCK_MONOTONIC ns by interpolating between
 * (tick, monotonic) pairs it takes at each drain. Elsewhere ticks are ns.
 * RINGSIDE_TEST_NO_TSC=1 takes the second way on any host, so that the tests
 * cover it where the clocksource is the TSC. */
#include "preload/agent.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

void rs_clock_init(void)
{
#if defined(__x86_64__)
    char buf[32] = "";
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
    }
    rs_hot.tsc_on = strcmp(buf, "tsc\n") == 0 && !rs_cfg.test_no_tsc;
    buf[strcspn(buf, "\n")] = 0;
    rs_debug("clocksource %s: hooks read %s%s", buf[0] ? buf : "unknown",
             rs_hot.tsc_on ? "the TSC" : "CLOCK_MONOTONIC",
             rs_cfg.test_no_tsc ? " (RINGSIDE_TEST_NO_TSC)" : "");
#else
    rs_debug("hooks read CLOCK_MONOTONIC%s", rs_cfg.test_no_tsc ? " (RINGSIDE_TEST_NO_TSC)" : "");
#endif
}

/* A (tick, ns) pair: the ns read between two tick reads, the tick their
 * midpoint. The narrowest of a few tries is kept: the thread can be
 * interrupted between the reads, or its vCPU descheduled for milliseconds,
 * and a wide pair would misplace every record converted through it. */
static void pair_now(struct rs_tick_map *m)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = rs_ticks();
        uint64_t ns = rs_now();
        uint64_t b = rs_ticks();
        if (b - a < best) {
            best = b - a;
            m->tick = a + (b - a) / 2;
            m->ns = ns;
        }
    }
}

void rs_tick_map_start(struct rs_tick_map *m)
{
    pair_now(m);
    m->ns_per_tick = 1.0;
    m->base_tick = m->tick;
    m->base_ns = m->ns;
}

/* Slopes are measured over at least this long where the process has lived
 * that long. */
#define SLOPE_MIN_NS 1000000u

void rs_tick_map_update(struct rs_tick_map *m, struct rs_tick_map *prev)
{
    if (!rs_hot.tsc_on) {
        *m = (struct rs_tick_map){ 0, 0, 1.0, 0, 0 };
        return;
    }
    pair_now(m);
    /* The slope runs from prev, or, when prev is less than SLOPE_MIN_NS
     * back, from prev's own base: over a shorter span the pairs' width would
     * make it noisy, and a record made long before its drain (a long call's
     * start) is placed through it. That base is at least SLOPE_MIN_NS back
     * unless it is the first pair; a process that ends sooner has every
     * record between its first pair and this one, where the pairs' width
     * bounds the error whatever the slope. */
    if (m->ns - prev->ns >= SLOPE_MIN_NS) {
        m->base_tick = prev->tick;
        m->base_ns = prev->ns;
    } else {
        m->base_tick = prev->base_tick;
        m->base_ns = prev->base_ns;
    }
    m->ns_per_tick = m->tick > m->base_tick
        ? (double)(m->ns - m->base_ns) / (double)(m->tick - m->base_tick)
        : prev->ns_per_tick;
}
