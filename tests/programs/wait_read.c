/* Blocks in file I/O for a known time: a child writes into a FIFO after
 * sleeping DELAY_MS while slow_reader() waits in read(); the program
 * prints how long read() blocked by its own clock ("blocked_ns=N").
 * Usage: wait_read FIFO_PATH DELAY_MS */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

__attribute__((noinline)) long long slow_reader(int fd);

__attribute__((noinline)) long long slow_reader(int fd)
{
    char buf[16];
    long long t0 = now_ns();
    if (read(fd, buf, sizeof buf) <= 0)
        return -1;
    return now_ns() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    unlink(argv[1]);
    if (mkfifo(argv[1], 0600) != 0)
        return perror("mkfifo"), 1;
    pid_t pid = fork();
    if (pid == 0) {
        int w = open(argv[1], O_WRONLY);
        struct timespec d = { atoi(argv[2]) / 1000, (atoi(argv[2]) % 1000) * 1000000l };
        nanosleep(&d, NULL);
        if (write(w, "x", 1) != 1)
            _exit(1);
        _exit(0);
    }
    int fd = open(argv[1], O_RDONLY);
    long long blocked = slow_reader(fd);
    waitpid(pid, NULL, 0);
    printf("blocked_ns=%lld\n", blocked);
    return blocked < 0;
}
