/* Plays the fd games programs play with the agent's trace file around:
 * dup2 onto it, close_range over it, closefrom, freopen of stdout. Each
 * target file gets a known number of bytes; the test holds the trace and
 * the files against those numbers. The trace file is looked for in the
 * program's own fd table for up to WAIT_MS (default 5000); when it is not
 * there (the writer keeps its own table), b.dat is not written.
 * Usage: fd_games DIR [WAIT_MS] */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The lowest fd whose target ends in ".trace.lz4" (the agent's), or -1. */
static int trace_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    int found = -1;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char link[300], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (n > 10 && strcmp(target + n - 10, ".trace.lz4") == 0)
            found = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

static void put(int fd, size_t n, const char *what)
{
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    while (n) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        if (write(fd, buf, k) != (ssize_t)k) {
            perror(what);
            exit(1);
        }
        n -= k;
    }
}

static int create(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: fd_games DIR [WAIT_MS]\n");
        return 2;
    }
    const char *dir = argv[1];
    int wait_ms = argc == 3 ? atoi(argv[2]) : 5000;
    put(create(dir, "a.dat"), 1000, "a");
    /* The agent creates its file at its first flush. */
    int t = -1;
    for (int i = 0; i < wait_ms / 10 && (t = trace_fd()) < 0; i++)
        usleep(10000);
    printf("trace fd %d\n", t);
    if (t >= 0) {
        /* The program takes the trace file's number for its own file. */
        int b = create(dir, "b.dat");
        if (dup2(b, t) != t) {
            perror("dup2");
            return 1;
        }
        close(b);
        put(t, 2000, "b via the taken number");
        close(t);
    }
    /* A daemon closes everything above stderr, then goes on writing. */
    fflush(stdout);
    if (close_range(3, ~0u, 0) != 0) {
        perror("close_range");
        return 1;
    }
    put(create(dir, "c.dat"), 3000, "c");
    closefrom(3);
    put(create(dir, "d.dat"), 4000, "d");
    /* stdout onto a file */
    char path[4096];
    snprintf(path, sizeof path, "%s/e.dat", dir);
    if (!freopen(path, "w", stdout)) {
        perror("freopen");
        return 1;
    }
    for (int i = 0; i < 50; i++)
        fputs("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789", stdout);
    fflush(stdout);
    return 0;
}
