/* Blocks for known times in known functions, once per way a thread can
 * wait (test_wait_reasons.py): each wait_X function blocks about DELAY_MS in
 * one call (or one loop of calls, for a condition variable and a futex)
 * while a helper thread or child process holds it up, and measures that
 * call with its own CLOCK_MONOTONIC reads: "time wait_X NS" on stderr (the
 * truth the test holds the wait flame graph against). nowait_calls makes
 * the same calls where they need not wait, which must record nothing.
 * stdout says what the calls returned, errno included, and is the same
 * with the agent and without. Usage: wait_reasons DIR [DELAY_MS] */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_prog.h"

#define NOINLINE __attribute__((noinline))

static long delay_ms = 50;
static const char *dir;

/* The helpers hold things up by spinning on the clock: a sleep would be
 * a wait of its own, and the handshakes spin on flags for the same
 * reason. */
static void hold(void)
{
    long long end = now_ns() + delay_ms * 1000000ll;
    while (now_ns() < end)
        sched_yield();
}

static _Atomic int ready;

static void await_ready(void)
{
    while (!atomic_load(&ready))
        sched_yield();
    atomic_store(&ready, 0);
}

static pthread_t helper(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    atomic_store(&ready, 0);
    if (pthread_create(&t, NULL, fn, arg) != 0)
        abort();
    return t;
}

/* ---- condition variable ---- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int cv_flag;

static void *cond_helper(void *arg)
{
    (void)arg;
    hold();
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
    printf("condvar ok\n");
}

/* ---- mutex, rwlock, spin lock held by another thread ---- */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *mutex_helper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    atomic_store(&ready, 1);
    hold();
    pthread_mutex_unlock(&held);
    return NULL;
}

NOINLINE static void wait_mutex(void)
{
    pthread_t t = helper(mutex_helper, NULL);
    await_ready();
    long long t0 = now_ns();
    int r = pthread_mutex_lock(&held);
    report(__func__, t0);
    pthread_mutex_unlock(&held);
    pthread_join(t, NULL);
    printf("mutex %d\n", r);
}

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *rwlock_helper(void *arg)
{
    (void)arg;
    pthread_rwlock_wrlock(&rw);
    atomic_store(&ready, 1);
    hold();
    pthread_rwlock_unlock(&rw);
    return NULL;
}

NOINLINE static void wait_rwlock(void)
{
    pthread_t t = helper(rwlock_helper, NULL);
    await_ready();
    long long t0 = now_ns();
    int r = pthread_rwlock_rdlock(&rw);
    report(__func__, t0);
    pthread_rwlock_unlock(&rw);
    pthread_join(t, NULL);
    printf("rwlock %d\n", r);
}

static pthread_spinlock_t spin;

static void *spin_helper(void *arg)
{
    (void)arg;
    pthread_spin_lock(&spin);
    atomic_store(&ready, 1);
    hold();
    pthread_spin_unlock(&spin);
    return NULL;
}

NOINLINE static void wait_spin(void)
{
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_t t = helper(spin_helper, NULL);
    await_ready();
    long long t0 = now_ns();
    int r = pthread_spin_lock(&spin);
    report(__func__, t0);
    pthread_spin_unlock(&spin);
    pthread_join(t, NULL);
    printf("spin %d\n", r);
}

/* ---- semaphore, join, barrier ---- */

static sem_t sem;

static void *sem_helper(void *arg)
{
    (void)arg;
    hold();
    sem_post(&sem);
    return NULL;
}

NOINLINE static void wait_semaphore(void)
{
    sem_init(&sem, 0, 0);
    pthread_t t = helper(sem_helper, NULL);
    errno = 1234;
    long long t0 = now_ns();
    int r = sem_wait(&sem);
    report(__func__, t0);
    printf("semaphore %d errno %d\n", r, errno);
    pthread_join(t, NULL);
}

static void *join_helper(void *arg)
{
    (void)arg;
    hold();
    return (void *)42;
}

NOINLINE static void wait_join(void)
{
    pthread_t t = helper(join_helper, NULL);
    void *ret;
    long long t0 = now_ns();
    int r = pthread_join(t, &ret);
    report(__func__, t0);
    printf("join %d %ld\n", r, (long)ret);
}

static pthread_barrier_t bar;

static void *barrier_helper(void *arg)
{
    (void)arg;
    hold();
    pthread_barrier_wait(&bar);
    return NULL;
}

NOINLINE static void wait_barrier(void)
{
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t = helper(barrier_helper, NULL);
    long long t0 = now_ns();
    int r = pthread_barrier_wait(&bar);
    report(__func__, t0);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&bar);
    printf("barrier %d\n", r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
}

/* ---- pipes and sockets: a helper writes after the delay ---- */

static int wfd;

static void *write_helper(void *arg)
{
    (void)arg;
    hold();
    if (write(wfd, "x", 1) != 1)
        abort();
    return NULL;
}

/* A pipe (or socket pair when sock) whose write end a helper writes one
 * byte into after the delay; its read end. */
static int delayed_byte(int sock, pthread_t *t)
{
    int p[2];
    if (sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) : pipe(p))
        abort();
    wfd = p[1];
    *t = helper(write_helper, NULL);
    return p[0];
}

static void finish_byte(int fd, pthread_t t)
{
    pthread_join(t, NULL);
    close(fd);
    close(wfd);
}

NOINLINE static void wait_poll(void)
{
    pthread_t t;
    int fd = delayed_byte(0, &t);
    struct pollfd pfd = { fd, POLLIN, 0 };
    long long t0 = now_ns();
    int r = poll(&pfd, 1, -1);
    report(__func__, t0);
    printf("poll %d %d\n", r, pfd.revents & POLLIN);
    finish_byte(fd, t);
}

NOINLINE static void wait_select(void)
{
    pthread_t t;
    int fd = delayed_byte(0, &t);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(fd, &rd);
    long long t0 = now_ns();
    int r = select(fd + 1, &rd, NULL, NULL, NULL);
    report(__func__, t0);
    printf("select %d %d\n", r, FD_ISSET(fd, &rd) != 0);
    finish_byte(fd, t);
}

NOINLINE static void wait_epoll(void)
{
    pthread_t t;
    int fd = delayed_byte(0, &t);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd }, got;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    long long t0 = now_ns();
    int r = epoll_wait(ep, &got, 1, -1);
    report(__func__, t0);
    printf("epoll %d %d\n", r, got.data.fd == fd);
    close(ep);
    finish_byte(fd, t);
}

NOINLINE static void wait_recv(void)
{
    pthread_t t;
    int fd = delayed_byte(1, &t);
    char c;
    long long t0 = now_ns();
    ssize_t r = recv(fd, &c, 1, 0);
    report(__func__, t0);
    printf("recv %zd %c\n", r, c);
    finish_byte(fd, t);
}

NOINLINE static void wait_pipe_read(void)
{
    pthread_t t;
    int fd = delayed_byte(0, &t);
    char c;
    long long t0 = now_ns();
    ssize_t r = read(fd, &c, 1);
    report(__func__, t0);
    printf("read %zd %c\n", r, c);
    finish_byte(fd, t);
}

/* ---- a child, sleeps, a futex ---- */

NOINLINE static void wait_child(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        hold();
        _exit(7);
    }
    int st = 0;
    long long t0 = now_ns();
    pid_t r = waitpid(pid, &st, 0);
    report(__func__, t0);
    printf("child %d %d\n", r == pid, WEXITSTATUS(st));
}

NOINLINE static void wait_nanosleep(void)
{
    struct timespec d = { 0, delay_ms * 1000000l };
    long long t0 = now_ns();
    int r = nanosleep(&d, NULL);
    report(__func__, t0);
    printf("nanosleep %d\n", r);
}

NOINLINE static void wait_usleep(void)
{
    long long t0 = now_ns();
    int r = usleep((useconds_t)(delay_ms * 1000));
    report(__func__, t0);
    printf("usleep %d\n", r);
}

static _Atomic int futex_word;

static void *futex_helper(void *arg)
{
    (void)arg;
    hold();
    atomic_store(&futex_word, 1);
    syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return NULL;
}

NOINLINE static void wait_futex(void)
{
    atomic_store(&futex_word, 0);
    pthread_t t = helper(futex_helper, NULL);
    long long t0 = now_ns();
    while (!atomic_load(&futex_word))
        syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    report(__func__, t0);
    pthread_join(t, NULL);
    /* another system call through syscall(): passed through as it came */
    printf("futex %d getpid %d\n", atomic_load(&futex_word), syscall(SYS_getpid) == getpid());
}

/* ---- file locks held by a child process ---- */

/* A child that takes the lock on path (flock, or an fcntl write lock),
 * says so through a pipe, holds it for the delay and exits. */
static pid_t lock_holder(const char *path, int use_fcntl)
{
    int p[2];
    if (pipe(p))
        abort();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CREAT, 0600);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
        if (use_fcntl ? fcntl(fd, F_SETLK, &fl) : flock(fd, LOCK_EX | LOCK_NB))
            _exit(1);
        if (write(p[1], "x", 1) != 1)
            _exit(1);
        hold();
        _exit(0);
    }
    char c;
    struct pollfd pfd = { p[0], POLLIN, 0 };
    while (poll(&pfd, 1, 0) == 0) /* a zero time-out: no wait of its own */
        sched_yield();
    if (read(p[0], &c, 1) != 1)
        abort();
    close(p[0]);
    close(p[1]);
    return pid;
}

NOINLINE static void wait_flock(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/flock", dir);
    pid_t pid = lock_holder(path, 0);
    int fd = open(path, O_RDWR);
    long long t0 = now_ns();
    int r = flock(fd, LOCK_EX);
    report(__func__, t0);
    close(fd);
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0)
        sched_yield();
    printf("flock %d\n", r);
}

NOINLINE static void wait_fcntl_lock(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fcntl", dir);
    pid_t pid = lock_holder(path, 1);
    int fd = open(path, O_RDWR);
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    long long t0 = now_ns();
    int r = fcntl(fd, F_SETLKW, &fl);
    report(__func__, t0);
    close(fd);
    int st;
    while (waitpid(pid, &st, WNOHANG) == 0)
        sched_yield();
    printf("fcntl lock %d\n", r);
}

/* ---- calls that do not wait: nothing recorded ---- */

NOINLINE static void nowait_calls(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_t rec;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t ec;
    pthread_mutex_init(&ec, &a);
    int ok = 1;
    for (int i = 0; i < 100000; i++) {
        ok &= pthread_mutex_lock(&m) == 0;
        pthread_mutex_unlock(&m);
    }
    ok &= pthread_mutex_lock(&rec) == 0 && pthread_mutex_lock(&rec) == 0;
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    ok &= pthread_mutex_lock(&ec) == 0 && pthread_mutex_lock(&ec) == EDEADLK;
    pthread_mutex_unlock(&ec);
    printf("mutexes %d\n", ok);

    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    ok = pthread_rwlock_rdlock(&l) == 0 && pthread_rwlock_rdlock(&l) == 0;
    pthread_rwlock_unlock(&l);
    pthread_rwlock_unlock(&l);
    ok &= pthread_rwlock_wrlock(&l) == 0 && pthread_rwlock_wrlock(&l) == EDEADLK;
    pthread_rwlock_unlock(&l);
    printf("rwlock %d\n", ok);

    sem_t s;
    sem_init(&s, 0, 1);
    errno = 4321;
    int r1 = sem_wait(&s);
    printf("sem_wait %d errno %d\n", r1, errno);
    int r2 = sem_trywait(&s);
    printf("sem_trywait %d errno %s\n", r2, errno == EAGAIN ? "EAGAIN" : "other");

    int p[2];
    if (pipe(p) || write(p[1], "ab", 2) != 2)
        abort();
    struct pollfd pfd = { p[0], POLLIN, 0 };
    int pr = poll(&pfd, 1, 1000);
    char c[2];
    ssize_t rd = read(p[0], c, 2);
    pfd.revents = 0;
    int pz = poll(&pfd, 1, 0);
    printf("poll %d read %zd poll0 %d\n", pr, rd, pz);
    close(p[0]);
    close(p[1]);

    errno = 0;
    pid_t w = waitpid(-1, NULL, WNOHANG);
    printf("waitpid WNOHANG %d errno %s\n", w, errno == ECHILD ? "ECHILD" : "other");
}

/* ---- a wait a signal interrupts: EINTR as without the agent ---- */

static void on_alarm(int sig)
{
    (void)sig;
}

NOINLINE static void eintr_calls(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    sem_t s;
    sem_init(&s, 0, 0);
    timer_t tm;
    struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
    struct itimerspec its = { .it_value = { 0, 20000000 } };
    timer_create(CLOCK_MONOTONIC, &sev, &tm);
    timer_settime(tm, 0, &its, NULL);
    int r = sem_wait(&s);
    printf("sem_wait interrupted %d %s\n", r, errno == EINTR ? "EINTR" : strerror(errno));
    timer_settime(tm, 0, &its, NULL);
    struct timespec d = { 5, 0 };
    r = nanosleep(&d, NULL);
    printf("nanosleep interrupted %d %s\n", r, errno == EINTR ? "EINTR" : strerror(errno));
    timer_delete(tm);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    dir = argv[1];
    if (argc > 2)
        delay_ms = atol(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0);
    wait_condvar();
    wait_mutex();
    wait_rwlock();
    wait_spin();
    wait_semaphore();
    wait_join();
    wait_barrier();
    wait_poll();
    wait_select();
    wait_epoll();
    wait_recv();
    wait_pipe_read();
    wait_child();
    wait_nanosleep();
    wait_usleep();
    wait_futex();
    wait_flock();
    wait_fcntl_lock();
    nowait_calls();
    eintr_calls();
    return 0;
}
