/* Three hot functions doing 60%, 30% and 10% of the CPU work, for the flame
 * graph tests: each calls inlined helpers (so that symbolisation has inline
 * chains to find), and the program measures its own CPU time per function
 * (CLOCK_THREAD_CPUTIME_ID) and prints the shares as the tests' truth:
 *   flame_hot [SECONDS]  ->  "share hot_a 60.1" ... on stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* Exported so that their names stay as written (no clones of statics). */
uint64_t hot_a(uint64_t x, int units);
uint64_t hot_b(uint64_t x, int units);
uint64_t hot_c(uint64_t x, int units);

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    return x;
}

static inline __attribute__((always_inline)) uint64_t step(uint64_t x, int n)
{
    for (int i = 0; i < n; i++)
        x = mix(x + (uint64_t)i);
    return x;
}

__attribute__((noinline)) uint64_t hot_a(uint64_t x, int units)
{
    for (int u = 0; u < units; u++)
        x = step(x, 1000);
    return x;
}

__attribute__((noinline)) uint64_t hot_b(uint64_t x, int units)
{
    for (int u = 0; u < units; u++)
        x = step(x, 1000);
    return x;
}

__attribute__((noinline)) uint64_t hot_c(uint64_t x, int units)
{
    for (int u = 0; u < units; u++)
        x = step(x, 1000);
    return x;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    double spent[3] = { 0, 0, 0 };
    uint64_t x = 1, lcg = 12345;
    double start = cpu_now();
    while (cpu_now() - start < seconds) {
        /* rounds of random length, so that periodic sampling (the kernel's
         * tick) does not keep falling on the same phase of the loop */
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        int k = 1 + (int)((lcg >> 33) % 16);
        double t0 = cpu_now();
        x = hot_a(x, 6 * k);
        double t1 = cpu_now();
        x = hot_b(x, 3 * k);
        double t2 = cpu_now();
        x = hot_c(x, k);
        double t3 = cpu_now();
        spent[0] += t1 - t0;
        spent[1] += t2 - t1;
        spent[2] += t3 - t2;
    }
    sink = x;
    double all = cpu_now() - start;
    printf("share hot_a %.2f\nshare hot_b %.2f\nshare hot_c %.2f\ncpu_s %.3f\n",
           100 * spent[0] / all, 100 * spent[1] / all, 100 * spent[2] / all, all);
    return 0;
}
