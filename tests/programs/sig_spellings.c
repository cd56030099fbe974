/* Sets SIGTERM's disposition through one of signal()'s other spellings
 * (sigset, sysv_signal, bsd_signal), reads it back through the same call,
 * writes a file and raises SIGTERM. What it prints and how it ends must be
 * the same with and without the agent. Usage: sig_spellings HOW FILE */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Still exported by glibc, no longer declared; sigset is deprecated. */
__sighandler_t bsd_signal(int sig, __sighandler_t handler);
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void on_term(int sig)
{
    static const char msg[] = "handler ran\n";
    (void)sig;
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(9);
    _exit(7);
}

static const char *name(__sighandler_t h)
{
    return h == on_term ? "on_term" : h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN"
         : h == SIG_HOLD ? "SIG_HOLD" : h == SIG_ERR ? "SIG_ERR" : "other";
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *how = argv[1];
    FILE *f = fopen(argv[2], "w");
    if (!f)
        return 3;
    fputs("some bytes\n", f);
    fclose(f);
    __sighandler_t a, b;
    if (strcmp(how, "sigset") == 0) {
        a = sigset(SIGTERM, on_term);
        b = sigset(SIGTERM, on_term);
    } else if (strcmp(how, "sysv") == 0) {
        a = sysv_signal(SIGTERM, on_term);
        b = sysv_signal(SIGTERM, on_term);
    } else if (strcmp(how, "bsd") == 0) {
        a = bsd_signal(SIGTERM, on_term);
        b = bsd_signal(SIGTERM, on_term);
    } else if (strcmp(how, "hold") == 0) {
        /* Held: raise leaves it pending; back to the default, it kills. */
        a = sigset(SIGTERM, SIG_HOLD);
        b = sigset(SIGTERM, SIG_HOLD);
        printf("first %s, then %s\n", name(a), name(b));
        raise(SIGTERM);
        printf("still here while held\n");
        fflush(stdout);
        sigset(SIGTERM, SIG_DFL);
        printf("not reached\n");
        return 0;
    } else {
        return 2;
    }
    printf("first %s, then %s\n", name(a), name(b));
    fflush(stdout);
    raise(SIGTERM);
    printf("not reached\n");
    return 0;
}
