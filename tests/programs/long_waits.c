/* Long waits the agent's hang watch may cut into (RINGSIDE_HANG_S,
 * writer.c): each wait_X function blocks about DELAY_MS in one call while a
 * helper thread holds it up: a sleep, a condition variable, a mutex, a
 * join, and a semaphore (which the watch must leave alone: sem_wait fails
 * with EINTR on any handler). Each call is measured with the function's own
 * CLOCK_MONOTONIC reads: "time wait_X NS" on stderr; stdout says what each
 * call returned (errno included), the same with the agent and without.
 * First it writes PATH, its second argument (if given: a traced process's
 * first event starts the agent, as a rank's always has).
 * Usage: long_waits [DELAY_MS [PATH]] (default 1500 ms). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long delay_ms = 1500;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
static sem_t sem;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void said(const char *fn, long long t0, int r, int err)
{
    fprintf(stderr, "time %s %lld\n", fn, now_ns() - t0);
    printf("%s %d %s\n", fn, r, r ? strerror(err) : "ok");
}

static void *signal_later(void *arg)
{
    (void)arg;
    sleep_ms(delay_ms);
    pthread_mutex_lock(&mu);
    ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *hold_mutex(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    sem_post(&sem);     /* held now */
    sleep_ms(delay_ms);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *post_later(void *arg)
{
    (void)arg;
    sleep_ms(delay_ms);
    sem_post(&sem);
    return NULL;
}

static void *just_sleep(void *arg)
{
    (void)arg;
    sleep_ms(delay_ms);
    return NULL;
}

__attribute__((noinline)) static void wait_sleep(void)
{
    struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000 }, rem;
    long long t0 = now_ns();
    int r = nanosleep(&ts, &rem);
    said("wait_sleep", t0, r, errno);
}

__attribute__((noinline)) static void wait_condvar(void)
{
    pthread_t t;
    pthread_mutex_lock(&mu);
    pthread_create(&t, NULL, signal_later, NULL);
    long long t0 = now_ns();
    int r = 0;
    while (!ready && r == 0)
        r = pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    said("wait_condvar", t0, r, r);
    pthread_join(t, NULL);
}

__attribute__((noinline)) static void wait_mutex(void)
{
    pthread_t t;
    pthread_create(&t, NULL, hold_mutex, NULL);
    while (sem_wait(&sem) != 0)
        ;
    long long t0 = now_ns();
    int r = pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    said("wait_mutex", t0, r, r);
    pthread_join(t, NULL);
}

__attribute__((noinline)) static void wait_join(void)
{
    pthread_t t;
    pthread_create(&t, NULL, just_sleep, NULL);
    long long t0 = now_ns();
    int r = pthread_join(t, NULL);
    said("wait_join", t0, r, r);
}

__attribute__((noinline)) static void wait_semaphore(void)
{
    pthread_t t;
    pthread_create(&t, NULL, post_later, NULL);
    long long t0 = now_ns();
    int r = sem_wait(&sem);
    said("wait_semaphore", t0, r, errno);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        delay_ms = atol(argv[1]);
    FILE *f = argc > 2 ? fopen(argv[2], "w") : NULL;
    if (f) {
        fputs("long_waits\n", f);
        fclose(f);
    }
    sem_init(&sem, 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    wait_sleep();
    wait_condvar();
    wait_mutex();
    wait_join();
    wait_semaphore();
    return 0;
}
