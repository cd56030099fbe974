/* A program that takes every real-time signal for itself (handlers on
 * SIGRTMIN..SIGRTMAX) after some CPU work, then raises each once and checks
 * each handler ran exactly once: a sampler using one of them must step aside
 * without a stray signal reaching the program. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t hits[65];

static void on_sig(int sig) { hits[sig]++; }

static void spin(long n)
{
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++)
        x = x * 3 + 1;
}

int main(void)
{
    spin(200000000);
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_sig;
    a.sa_flags = SA_RESTART;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        sigaction(s, &a, NULL);
    spin(200000000);
    int bad = 0;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
        raise(s);
        if (hits[s] != 1)
            bad++;
    }
    printf("signals %d wrong %d\n", SIGRTMAX - SIGRTMIN + 1, bad);
    return bad != 0;
}
