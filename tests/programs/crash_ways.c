/* Dies the way its argument says, after a line on stdout and a file
 * written (to PATH, its second argument, if given: a traced process's first
 * event starts the agent, as a training process's always has): segv (a write
 * through a null pointer in crash_here), abort (abort()), fpe (an integer
 * division by zero), or handled (its own SIGSEGV handler prints "handled"
 * and exits with status 3, then the same write). test_agent_crash holds
 * the status, output and handler to what the program does without the
 * agent. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int zero;
static volatile int *volatile null_ptr;

__attribute__((noinline)) static void crash_here(void)
{
    *null_ptr = 1;
}

static void on_segv(int sig)
{
    (void)sig;
    static const char msg[] = "handled\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(4);
    _exit(3);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "segv";
    printf("dying of %s\n", how);
    fflush(stdout);
    FILE *f = argc > 2 ? fopen(argv[2], "w") : NULL;
    if (f) {
        fprintf(f, "%s\n", how);
        fclose(f);
    }
    usleep(50000);
    if (strcmp(how, "abort") == 0)
        abort();
    if (strcmp(how, "fpe") == 0)
        return 10 / zero;
    if (strcmp(how, "handled") == 0) {
        struct sigaction sa = { .sa_handler = on_segv };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
    }
    crash_here();
    return 0;
}
