/* A training loop that marks its steps with NVTX ranges (the CUDA toolkit's
 * header-only NVTX v3), for tests/integration/test_nvtx_steps.py: STEPS
 * ranges "train_step" of known, varying lengths, each with a nested
 * "forward" and an "optimizer.step" inside (a name that says step, one level
 * down: not a step of its own), and after every fifth an "eval_step". Its own
 * account of each step (CLOCK_MONOTONIC around the push and the pop: the
 * truth) goes to TRUTH as JSON lines.
 *
 *   nvtx_steps TRUTH STEPS */
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void work_ms(double ms)
{
    struct timespec ts = { 0, (long)(ms * 1e6) };
    nanosleep(&ts, NULL);
}

static void step(FILE *truth, const char *name, int index, double ms)
{
    int64_t s = now_ns();
    nvtxRangePushA(name);
    nvtxRangePushA("forward");
    work_ms(ms * 0.6);
    nvtxRangePop();
    nvtxRangePushA("optimizer.step");
    work_ms(ms * 0.4);
    nvtxRangePop();
    nvtxRangePop();
    int64_t e = now_ns();
    fprintf(truth, "{\"name\": \"%s\", \"index\": %d, \"start_ns\": %lld, \"end_ns\": %lld}\n", name, index,
            (long long)s, (long long)e);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: nvtx_steps TRUTH STEPS\n");
        return 2;
    }
    FILE *truth = fopen(argv[1], "w");
    if (!truth)
        return 1;
    int steps = atoi(argv[2]);
    for (int i = 0; i < steps; i++) {
        step(truth, "train_step", i, 8 + (i % 3) * 2);
        if (i % 5 == 4)
            step(truth, "eval_step", i / 5, 3);
    }
    fclose(truth);
    printf("%d steps\n", steps);
    return 0;
}
