/* Test program: recurses DEPTH frames deep (argv[1], default 300) and spins
 * there for MS milliseconds of CPU time (argv[2], default 1000), so that
 * every CPU sample's stack is that deep; prints "depth=N". The recursion
 * is not a tail call (the result is used after it) and not inlined. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long descend(int left, double until)
{
    if (left == 0) {
        unsigned long x = 0;
        while (cpu_ms() < until)
            for (int i = 0; i < 1000; i++)
                x += (unsigned long)i * 2654435761u;
        return x;
    }
    unsigned long r = descend(left - 1, until);
    sink += r; /* keeps this frame on the stack during the call */
    return r + 1;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 300;
    double ms = argc > 2 ? atof(argv[2]) : 1000;
    descend(depth, cpu_ms() + ms);
    printf("depth=%d\n", depth);
    return 0;
}
