/* Blocking system calls with no EINTR handling, between bursts of CPU work
 * (so a CPU-time timer can fire on the way into a call): nanosleep,
 * clock_nanosleep, usleep, poll, select, epoll_wait, sigtimedwait and read
 * on a pipe fed by a thread. Prints the calls made and how many failed with
 * EINTR, which is 0 unless something interrupts them. A third thread sends
 * the main thread, over and over, any real-time signal that has a handler
 * the program did not install (an agent's sampling signal), as a timer
 * firing at the worst moment would; the count goes to stderr.
 * Usage: no_eintr ROUNDS [handler]: with "handler", a SIGUSR1 handler is
 * installed first (never called), as programs with handlers of their own. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static long rounds;

static pthread_t main_thread;
static volatile int done;

static void *pester(void *arg)
{
    int sig = (int)(long)arg;
    long sent = 0;
    while (!done) {
        pthread_kill(main_thread, sig);
        sent++;
        struct timespec d = { 0, 50000 };
        nanosleep(&d, NULL);
    }
    fprintf(stderr, "pester: signal %d sent %ld times\n", sig, sent);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
}

static void spin(void)
{
    volatile unsigned long x = 0;
    for (int i = 0; i < 20000; i++)
        x = x * 3 + 1;
}

static void *feeder(void *arg)
{
    (void)arg;
    for (long i = 0; i < rounds; i++) {
        struct timespec d = { 0, 20000 };
        while (nanosleep(&d, &d) != 0)
            ;
        while (write(pipefd[1], "x", 1) != 1)
            ;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 2000;
    if (argc > 2)
        signal(SIGUSR1, on_usr1);
    if (pipe(pipefd) != 0)
        return 1;
    int ep = epoll_create1(0);
    sigset_t none, usr;
    sigemptyset(&none);
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr, NULL);
    pthread_t th, pt;
    pthread_create(&th, NULL, feeder, NULL);
    main_thread = pthread_self();
    int foreign = 0;
    for (int sig = SIGRTMIN; sig <= SIGRTMAX && !foreign; sig++) {
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) == 0 && ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL))
            foreign = sig;
    }
    if (foreign)
        pthread_create(&pt, NULL, pester, (void *)(long)foreign);
    long eintr[8] = { 0 }, calls = 0;
    for (long i = 0; i < rounds; i++) {
        struct timespec d = { 0, 10000 };
        struct timespec zero = { 0, 1000 };
        spin();
        eintr[0] += nanosleep(&d, NULL) != 0 && errno == EINTR;
        spin();
        eintr[1] += clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) == EINTR;
        spin();
        eintr[2] += usleep(10) != 0 && errno == EINTR;
        spin();
        eintr[3] += poll(NULL, 0, 0) < 0 && errno == EINTR;
        spin();
        struct timeval tv = { 0, 10 };
        eintr[4] += select(0, NULL, NULL, NULL, &tv) < 0 && errno == EINTR;
        spin();
        struct epoll_event ev;
        eintr[5] += epoll_wait(ep, &ev, 1, 0) < 0 && errno == EINTR;
        spin();
        eintr[6] += sigtimedwait(&usr, NULL, &zero) < 0 && errno == EINTR;
        spin();
        char c;
        eintr[7] += read(pipefd[0], &c, 1) < 0 && errno == EINTR;
        calls += 8;
    }
    pthread_join(th, NULL);
    done = 1;
    if (foreign)
        pthread_join(pt, NULL);
    printf("calls %ld eintr nanosleep %ld clock_nanosleep %ld usleep %ld poll %ld select %ld "
           "epoll_wait %ld sigtimedwait %ld read %ld\n",
           calls, eintr[0], eintr[1], eintr[2], eintr[3], eintr[4], eintr[5], eintr[6], eintr[7]);
    return 0;
}
