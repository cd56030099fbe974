/* Runs a command and prints its wall time and CPU time (user + system, from
 * wait4's rusage, microsecond resolution) in ns: "wall_ns=N cpu_ns=N". For
 * the sampler part of `make bench`. Usage: bench_run CMD [ARGS...] */
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_run CMD [ARGS...]\n");
        return 2;
    }
    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", 1);
        if (null >= 0)
            dup2(null, 1);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return 1;
    uint64_t wall = now_ns() - t0;
    uint64_t cpu = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                   (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
    printf("wall_ns=%llu cpu_ns=%llu\n", (unsigned long long)wall, (unsigned long long)cpu);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
