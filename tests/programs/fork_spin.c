/* A launcher's child between fork and exec: each of N forked children
 * spends MS milliseconds of CPU (closing every fd up to the limit, as Open
 * MPI's children do, then spinning), then either execs `true` (MODE exec)
 * or ends with _exit (MODE exit). The parent only waits for them.
 * Usage: fork_spin MODE N MS. Prints "child PID" for each child. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void child(int exec, double ms)
{
    struct rlimit lim;
    int max = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < 65536 ? (int)lim.rlim_cur : 65536;
    double start = cpu_ms();
    for (int fd = 3; fd < max; fd++)
        close(fd);
    volatile unsigned long x = 0;
    while (cpu_ms() - start < ms)
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i * i;
    if (exec) {
        execlp("true", "true", (char *)NULL);
        _exit(127);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "exec") && strcmp(argv[1], "exit"))) {
        fprintf(stderr, "usage: fork_spin exec|exit N MS\n");
        return 2;
    }
    int exec = strcmp(argv[1], "exec") == 0, n = atoi(argv[2]);
    double ms = atof(argv[3]);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            return 1;
        if (p == 0)
            child(exec, ms);
        printf("child %d\n", (int)p);
        fflush(stdout);
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    return bad != 0;
}
