/* Test program: spins in first() until SECONDS (argv[1], default 2) of
 * wall time have passed since main began, then in second() until twice
 * that; prints "phase_ns=N" (the phase length) and the CLOCK_REALTIME ns
 * at which main began ("start_real_ns=N"), so that a test knows where each
 * phase lies on the job's clock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (long long)t.tv_sec * 1000000000ll + t.tv_nsec;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_until(long long end)
{
    while (now(CLOCK_MONOTONIC) < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i;
}

/* Not tail calls (each keeps its frame under spin_until), and not the
 * same code (GCC would fold the two into one function). */
__attribute__((noinline)) static void first(long long end)
{
    spin_until(end);
    sink += 1;
}

__attribute__((noinline)) static void second(long long end)
{
    spin_until(end);
    sink += 2;
}

int main(int argc, char **argv)
{
    long long real0 = now(CLOCK_REALTIME), t0 = now(CLOCK_MONOTONIC);
    long long phase = (long long)((argc > 1 ? atof(argv[1]) : 2.0) * 1e9);
    first(t0 + phase);
    second(t0 + 2 * phase);
    printf("phase_ns=%lld start_real_ns=%lld\n", phase, real0);
    return 0;
}
