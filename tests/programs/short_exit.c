/* The stress target's short-lived processes (tests/stress/stress.py): each
 * writes a few blocks to a file of its own, says so, and ends one of the
 * ways a process can end while the agent's writer may be mid-pass.
 * Usage: short_exit MODE DIR N. MODE: return, exit, _exit, thread-exit (exit
 * from a second thread while the first writes), atexit (the writes in an
 * atexit handler), fork (a child writes and _exits, the parent waits),
 * fork-exit (the child exits without a wait by the parent, which returns at
 * once), exec (writes, then execs itself as "return"). Each process prints
 * "start PID" first and "wrote PID BYTES WRITES PATH" once its writes are
 * done, through write(2), before it ends: the stress target holds the trace
 * files against these lines. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCK 512

static const char *dir;
static int nblocks;

static void say(const char *line)
{
    ssize_t r = write(1, line, strlen(line));
    (void)r;
}

/* Writes nblocks blocks to DIR/out.PID.TAG and prints the "wrote" line. */
static void write_own(const char *tag)
{
    char path[4096], line[4200], buf[BLOCK];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/out.%d.%s", dir, (int)getpid(), tag);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(path);
        _exit(3);
    }
    long bytes = 0;
    for (int i = 0; i < nblocks; i++)
        if (write(fd, buf, sizeof buf) == (ssize_t)sizeof buf)
            bytes += BLOCK;
    close(fd);
    snprintf(line, sizeof line, "wrote %d %ld %d %s\n", (int)getpid(), bytes, nblocks, path);
    say(line);
}

static void start_line(void)
{
    char line[64];
    snprintf(line, sizeof line, "start %d\n", (int)getpid());
    say(line);
}

static void at_exit_write(void)
{
    write_own("atexit");
}

static void *exit_from_thread(void *arg)
{
    (void)arg;
    usleep(200);
    exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: short_exit MODE DIR N\n");
        return 2;
    }
    const char *mode = argv[1];
    dir = argv[2];
    nblocks = atoi(argv[3]);
    start_line();
    if (!strcmp(mode, "atexit")) {
        atexit(at_exit_write);
        return 0;
    }
    if (!strcmp(mode, "thread-exit")) {
        /* the second thread's exit runs while this one may still write;
         * the "wrote" line comes from a first, whole batch */
        write_own("main");
        pthread_t t;
        if (pthread_create(&t, NULL, exit_from_thread, NULL) != 0)
            return 4;
        char buf[BLOCK], path[4096];
        memset(buf, 'y', sizeof buf);
        snprintf(path, sizeof path, "%s/busy.%d", dir, (int)getpid());
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        for (;;)
            if (fd < 0 || write(fd, buf, sizeof buf) < 0 || lseek(fd, 0, SEEK_SET) < 0)
                pause();
    }
    if (!strcmp(mode, "fork") || !strcmp(mode, "fork-exit")) {
        pid_t pid = fork();
        if (pid == 0) {
            start_line();
            write_own("child");
            _exit(0);
        }
        write_own("parent");
        if (!strcmp(mode, "fork") && pid > 0)
            waitpid(pid, NULL, 0);
        return 0;
    }
    write_own("main");
    if (!strcmp(mode, "exec")) {
        execl("/proc/self/exe", argv[0], "return", dir, argv[3], (char *)NULL);
        return 5;
    }
    if (!strcmp(mode, "exit"))
        exit(0);
    if (!strcmp(mode, "_exit"))
        _exit(0);
    return 0;
}
