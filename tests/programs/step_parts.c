/* A loop whose steps (NVTX ranges, as nvtx_steps) each spin in a function
 * that says which part of the run it is, for test_flame_steps.py: "train_step"
 * ranges of MS milliseconds in early_work() for the first half and in
 * late_work() for the second; steps 7, 23 and 31 of training run three times
 * as long in slow_work(); after every fifth, an "eval_step" of MS in
 * eval_work(). Its own account of every step, in the order the steps come
 * (train and eval alike, as the report numbers them), goes to TRUTH as JSON
 * lines: index, name, function, CLOCK_MONOTONIC start and end.
 *
 *   step_parts TRUTH STEPS MS */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_until(long long end)
{
    while (now_ns() < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i;
}

/* Not tail calls, and not the same code (GCC would fold them into one). */
__attribute__((noinline)) static void early_work(long long end)
{
    spin_until(end);
    sink += 1;
}

__attribute__((noinline)) static void late_work(long long end)
{
    spin_until(end);
    sink += 2;
}

__attribute__((noinline)) static void slow_work(long long end)
{
    spin_until(end);
    sink += 3;
}

__attribute__((noinline)) static void eval_work(long long end)
{
    spin_until(end);
    sink += 4;
}

static int order;

static void step(FILE *truth, const char *name, const char *fn, void (*work)(long long), double ms)
{
    long long s = now_ns();
    nvtxRangePushA(name);
    work(s + (long long)(ms * 1e6));
    nvtxRangePop();
    long long e = now_ns();
    fprintf(truth, "{\"index\": %d, \"name\": \"%s\", \"function\": \"%s\", \"start_ns\": %lld, \"end_ns\": %lld}\n",
            order++, name, fn, s, e);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: step_parts TRUTH STEPS MS\n");
        return 2;
    }
    FILE *truth = fopen(argv[1], "w");
    if (!truth)
        return 1;
    int steps = atoi(argv[2]);
    double ms = atof(argv[3]);
    for (int i = 0; i < steps; i++) {
        if (i == 7 || i == 23 || i == 31)
            step(truth, "train_step", "slow_work", slow_work, 3 * ms);
        else if (i < steps / 2)
            step(truth, "train_step", "early_work", early_work, ms);
        else
            step(truth, "train_step", "late_work", late_work, ms);
        if (i % 5 == 4)
            step(truth, "eval_step", "eval_work", eval_work, ms);
    }
    fclose(truth);
    printf("%d steps\n", steps);
    return 0;
}
