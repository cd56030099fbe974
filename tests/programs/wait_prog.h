/* What the wait test programs (wait_reasons, only_waits) share: their own
 * clock, and the line that gives the tests its reading of one wait,
 * "time FUNCTION NS" on stderr. Header only: each program is one file. */
#ifndef WAIT_PROG_H
#define WAIT_PROG_H

#include <stdio.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void report(const char *name, long long t0)
{
    fprintf(stderr, "time %s %lld\n", name, now_ns() - t0);
}

#endif
