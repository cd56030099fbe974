/* The wait hooks' part of `make bench` (tools/bench/bench.sh): what the agent adds
 * to calls that need not wait and to a wait that always blocks.
 *   bench_wait mutex N      N uncontended pthread_mutex_lock/unlock pairs
 *   bench_wait pingpong N   N round trips of a pthread_cond_signal/wait
 *                           ping-pong between two threads on one CPU
 * Prints "wall_ns=X thread_cpu_ns=Y": wall time and the calling thread's
 * CPU time, per pair or per round trip. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long turn, rounds; /* even: the main thread's turn; odd: the other's */

static void *pong(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&m);
    for (long i = 0; i < rounds; i++) {
        while (!(turn & 1))
            pthread_cond_wait(&cv, &m);
        turn++;
        pthread_cond_signal(&cv);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long n = atol(argv[2]);
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    if (strcmp(argv[1], "mutex") == 0) {
        /* A second thread, idle, as every traced process has (the agent's
         * writer): glibc locks with unlocked instructions while a process
         * has one thread, and the agent is not what changes that. */
        pthread_t idle;
        if (pthread_create(&idle, NULL, sleeper, NULL) != 0)
            return 1;
        w0 = now(CLOCK_MONOTONIC);
        c0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            __asm__ volatile("" ::: "memory");
            pthread_mutex_unlock(&m);
        }
    } else if (strcmp(argv[1], "pingpong") == 0) {
        /* Both threads on one CPU: a round trip is then two context
         * switches, where across CPUs it is as fast as the machine's
         * wake-ups between them, which vary from run to run (2-3x). */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        sched_setaffinity(0, sizeof one, &one);
        w0 = now(CLOCK_MONOTONIC);
        c0 = now(CLOCK_THREAD_CPUTIME_ID);
        pthread_t t;
        rounds = n;
        if (pthread_create(&t, NULL, pong, NULL) != 0)
            return 1;
        pthread_mutex_lock(&m);
        for (long i = 0; i < n; i++) {
            turn++;
            pthread_cond_signal(&cv);
            while (turn & 1)
                pthread_cond_wait(&cv, &m);
        }
        pthread_mutex_unlock(&m);
        pthread_join(t, NULL);
    } else {
        return 2;
    }
    double w = now(CLOCK_MONOTONIC) - w0, c = now(CLOCK_THREAD_CPUTIME_ID) - c0;
    printf("wall_ns=%.2f thread_cpu_ns=%.2f\n", w / (double)n, c / (double)n);
    return 0;
}
