/* A program with timers of its own: an ITIMER_PROF interval timer (SIGPROF)
 * and a POSIX CPU-time timer (timer_create, SIGRTMIN) each counted by its
 * handler while the program spins until it has seen PROFS and TIMERS of
 * them; then it checks its handlers and timer are still its own and prints
 * the counts. Any difference under the agent is the agent's doing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define PROFS 40
#define TIMERS 40

static volatile sig_atomic_t profs, timers, strays;

static void on_prof(int sig) { (void)sig; profs++; }
static void on_timer(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (si->si_code == SI_TIMER)
        timers++;
    else
        strays++;
}

int main(void)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_prof;
    a.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &a, NULL);
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on_timer;
    a.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &a, NULL);

    struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
    if (setitimer(ITIMER_PROF, &it, NULL) != 0)
        return perror("setitimer"), 1;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGRTMIN;
    timer_t t;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &t) != 0)
        return perror("timer_create"), 1;
    struct itimerspec ts = { { 0, 5000000 }, { 0, 5000000 } };
    timer_settime(t, 0, &ts, NULL);

    volatile unsigned long x = 0;
    while (profs < PROFS || timers < TIMERS)
        x = x * 3 + 1;

    struct itimerval left;
    struct itimerspec tleft;
    int prof_live = getitimer(ITIMER_PROF, &left) == 0 && left.it_interval.tv_usec == 5000;
    int timer_live = timer_gettime(t, &tleft) == 0 && tleft.it_interval.tv_nsec == 5000000;
    struct sigaction cur;
    sigaction(SIGPROF, NULL, &cur);
    int prof_mine = cur.sa_handler == on_prof;
    sigaction(SIGRTMIN, NULL, &cur);
    int timer_mine = cur.sa_sigaction == on_timer;
    it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &it, NULL);
    timer_delete(t);
    printf("profs>=%d %d timers>=%d %d strays %d prof_live %d timer_live %d prof_mine %d timer_mine %d\n",
           PROFS, profs >= PROFS, TIMERS, timers >= TIMERS, (int)strays, prof_live, timer_live,
           prof_mine, timer_mine);
    return 0;
}
