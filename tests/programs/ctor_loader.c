/* Works the CPU for a while (samples, and a first trace chunk to write),
 * then loads and unloads the library of argv[1] argv[2] times, timing the
 * loop on its own clock: "loads N ms M". The library's constructor runs
 * inside each dlopen (tests/programs/lib/ctor_dlclose.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) static unsigned long work(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 3 + 1;
    return x;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ctor_loader LIB N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    work(100000000);
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "ctor_loader: %s\n", dlerror());
            return 1;
        }
        dlclose(h);
    }
    printf("loads %d ms %.0f\n", n, now_ms() - t0);
    return 0;
}
