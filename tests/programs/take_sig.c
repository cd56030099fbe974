/* A program that takes the real-time signal a profiler preloaded into it
 * samples with (the one signal it finds with a handler it did not install),
 * twice over: after some CPU work, it installs its own handler there, works
 * on, then takes the next one it finds the same way and works again. A
 * second thread works through all three phases. It raises each taken
 * signal three times and counts what reaches its handler: raised ones, and
 * strays (a timer's). Prints "took A B hits 3 3 strays 0 kept 1" when all
 * is well (kept: its handlers are still in place at the end), and to stderr
 * "phases S1 S2 S3", the main thread's CPU seconds in each phase by its own
 * clock (the tests' truth for the phases' shares of its samples). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t hits[65], strays;
static volatile int phase;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (si->si_code == SI_TIMER)
        strays++;
    else
        hits[sig]++;
}

/* One function per phase, so samples tell the phases apart. */
__attribute__((noinline)) static unsigned long spin_first(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 3 + 1;
    return x;
}

__attribute__((noinline)) static unsigned long spin_second(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 5 + 1;
    return x;
}

__attribute__((noinline)) static unsigned long spin_third(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 7 + 1;
    return x;
}

__attribute__((noinline)) static unsigned long worker_spin(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 11 + 1;
    return x;
}

static void *worker(void *arg)
{
    (void)arg;
    while (phase < 4)
        worker_spin(1000000);
    return NULL;
}

/* The real-time signal with a handler this program did not install. */
static int foreign(void)
{
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) == 0 && old.sa_sigaction != on_sig &&
            ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)))
            return s;
    }
    return 0;
}

static int take(void)
{
    int s = foreign();
    if (!s)
        return 0;
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_sig;
    a.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(s, &a, NULL);
    return s;
}

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int kept(int s)
{
    struct sigaction now;
    return s && sigaction(s, NULL, &now) == 0 && now.sa_sigaction == on_sig;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 150000000;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    double t0 = thread_cpu();
    spin_first(n);
    double t1 = thread_cpu();
    phase = 1;
    int a = take();
    double t2 = thread_cpu();
    spin_second(n);
    double t3 = thread_cpu();
    phase = 2;
    int b = take();
    double t4 = thread_cpu();
    spin_third(n);
    double t5 = thread_cpu();
    phase = 4;
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++) {
        if (a)
            raise(a);
        if (b)
            raise(b);
    }
    printf("took %d %d hits %d %d strays %d kept %d\n", a, b, a ? hits[a] : 0, b ? hits[b] : 0, (int)strays,
           kept(a) && kept(b));
    fprintf(stderr, "phases %.6f %.6f %.6f\n", t1 - t0, t3 - t2, t5 - t4);
    return 0;
}
