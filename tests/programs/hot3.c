/* Three hot functions doing 60%, 30% and 10% of the work: each round calls
 * hot_a, hot_b and hot_c for 6, 3 and 1 units of the same spin loop. The
 * sampler tests hold the CPU samples' shares against these. Usage: hot3
 * ROUNDS [UNIT_ITERATIONS [C_UNITS]]: C_UNITS (default 1) makes hot_c that
 * many units, as a change to one function would (test_diff: 2 makes it
 * twice as slow, 6:3:2 of the work). */
#include <stdio.h>
#include <stdlib.h>

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

__attribute__((noinline)) void hot_a(unsigned long unit) { SPIN(6, unit, 1); }
__attribute__((noinline)) void hot_b(unsigned long unit) { SPIN(3, unit, 2); }
__attribute__((noinline)) void hot_c(unsigned long unit) { SPIN(c_units, unit, 3); }

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 100;
    unsigned long unit = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    if (argc > 3)
        c_units = strtoul(argv[3], NULL, 10);
    unsigned long seed = 12345;
    for (long r = 0; r < rounds; r++) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        unsigned long u = unit / 2 + (seed >> 33) % (unit + 1);
        switch ((seed >> 20) % 3) {
        case 0: hot_a(u); hot_b(u); hot_c(u); break;
        case 1: hot_c(u); hot_a(u); hot_b(u); break;
        default: hot_b(u); hot_c(u); hot_a(u); break;
        }
    }
    printf("%lu\n", (unsigned long)sink);
    return 0;
}
