/* Three hot functions doing 60%, 30% and 10% of the work: each round calls
 * hot_a, hot_b and hot_c for 6, 3 and 1 units of the same spin loop. The
 * sampler tests hold the CPU samples' shares against these. Usage: hot3
 * ROUNDS [UNIT_ITERATIONS [C_UNITS]]: C_UNITS (default 1) makes hot_c that
 * many units, as a change to one function would (test_diff: 2 makes it
 * twice as slow, 6:3:2 of the work). With HOT3_SHARES set in the
 * environment it also writes to stderr the share of its CPU time each
 * function took by its own clock (the thread's CPU time around each call),
 * the tests' truth where a CPU runs one function's loop faster than
 * another's. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

#define SPIN(units, unit, salt)                                 \
    do {                                                        \
        unsigned long x = (salt);                               \
        for (unsigned long i = 0; i < (units) * (unit); i++)    \
            x = x * 6364136223846793005ul + 1442695040888963407ul; \
        sink += x;                                              \
    } while (0)

void hot_a(unsigned long unit);
void hot_b(unsigned long unit);
void hot_c(unsigned long unit);

static unsigned long c_units = 1;
static double spent[3];

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Calls FN(U), adding its CPU time to spent[I] when timing: a macro, not a
 * function, so that the hot functions' caller stays main in every stack. */
#define TIMED(i, fn, u)                                         \
    do {                                                        \
        double t0_ = timing ? thread_cpu() : 0;                 \
        fn(u);                                                  \
        if (timing)                                             \
            spent[i] += thread_cpu() - t0_;                     \
    } while (0)

__attribute__((noinline)) void hot_a(unsigned long unit) { SPIN(6, unit, 1); }
__attribute__((noinline)) void hot_b(unsigned long unit) { SPIN(3, unit, 2); }
__attribute__((noinline)) void hot_c(unsigned long unit) { SPIN(c_units, unit, 3); }

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    unsigned long unit = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    if (argc > 3)
        c_units = strtoul(argv[3], NULL, 10);
    int timing = getenv("HOT3_SHARES") != NULL;
    unsigned long seed = 12345;
    for (long r = 0; r < rounds; r++) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        unsigned long u = unit / 2 + (seed >> 33) % (unit + 1);
        switch ((seed >> 20) % 3) {
        case 0: TIMED(0, hot_a, u); TIMED(1, hot_b, u); TIMED(2, hot_c, u); break;
        case 1: TIMED(2, hot_c, u); TIMED(0, hot_a, u); TIMED(1, hot_b, u); break;
        default: TIMED(1, hot_b, u); TIMED(2, hot_c, u); TIMED(0, hot_a, u); break;
        }
    }
    printf("%lu\n", (unsigned long)sink);
    if (timing) {
        double all = spent[0] + spent[1] + spent[2];
        if (all > 0)
            fprintf(stderr, "hot3 shares: hot_a %.2f hot_b %.2f hot_c %.2f\n",
                    100 * spent[0] / all, 100 * spent[1] / all, 100 * spent[2] / all);
    }
    return 0;
}
