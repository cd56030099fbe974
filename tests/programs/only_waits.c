/* A process whose only work is waiting (test_only_waits.py): its main
 * thread blocks in turn on a condition variable, a semaphore, a pipe, a
 * mutex and a child, each held up about DELAY_MS (default 500; the child
 * DELAY_MS + 100) by a helper thread or the child that sleeps, so that
 * nothing in the process computes, reads or writes a file. Each wait is
 * measured with the program's own CLOCK_MONOTONIC reads: "time wait_X NS"
 * on stderr, the truth the test holds the wait flame graph against, after
 * "pid N". Usage: only_waits [DELAY_MS] */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_prog.h"

#define NOINLINE __attribute__((noinline))

static long delay_ms = 500;

/* The helpers hold things up by sleeping: a wait for time, which alone
 * gives a process no file. */
static void hold(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static pthread_t helper(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0)
        abort();
    return t;
}

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_flag;

static void *cond_helper(void *arg)
{
    (void)arg;
    hold(delay_ms);
    pthread_mutex_lock(&cm);
    cv_flag = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&cm);
    return NULL;
}

NOINLINE static void wait_condvar(void)
{
    pthread_mutex_lock(&cm);
    pthread_t t = helper(cond_helper, NULL);
    long long t0 = now_ns();
    while (!cv_flag)
        pthread_cond_wait(&cv, &cm);
    report(__func__, t0);
    pthread_mutex_unlock(&cm);
    pthread_join(t, NULL);
}

static sem_t sem;

static void *sem_helper(void *arg)
{
    (void)arg;
    hold(delay_ms);
    sem_post(&sem);
    return NULL;
}

NOINLINE static void wait_semaphore(void)
{
    sem_init(&sem, 0, 0);
    pthread_t t = helper(sem_helper, NULL);
    long long t0 = now_ns();
    while (sem_wait(&sem) != 0 && errno == EINTR)
        ;
    report(__func__, t0);
    pthread_join(t, NULL);
    sem_destroy(&sem);
}

static int pipe_fds[2];

static void *pipe_helper(void *arg)
{
    (void)arg;
    hold(delay_ms);
    if (write(pipe_fds[1], "x", 1) != 1)
        abort();
    return NULL;
}

NOINLINE static void wait_pipe(void)
{
    if (pipe(pipe_fds) != 0)
        abort();
    pthread_t t = helper(pipe_helper, NULL);
    char c;
    long long t0 = now_ns();
    if (read(pipe_fds[0], &c, 1) != 1)
        abort();
    report(__func__, t0);
    pthread_join(t, NULL);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static sem_t locked;

static void *mutex_helper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    sem_post(&locked);
    hold(delay_ms);
    pthread_mutex_unlock(&held);
    return NULL;
}

NOINLINE static void wait_mutex(void)
{
    sem_init(&locked, 0, 0);
    pthread_t t = helper(mutex_helper, NULL);
    while (sem_wait(&locked) != 0 && errno == EINTR)
        ;
    long long t0 = now_ns();
    pthread_mutex_lock(&held);
    report(__func__, t0);
    pthread_mutex_unlock(&held);
    pthread_join(t, NULL);
    sem_destroy(&locked);
}

NOINLINE static void wait_child(void)
{
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        hold(delay_ms + 100);
        _exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    report(__func__, t0);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        delay_ms = atol(argv[1]);
    fprintf(stderr, "pid %d\n", (int)getpid());
    wait_condvar();
    wait_semaphore();
    wait_pipe();
    wait_mutex();
    wait_child();
    return 0;
}
