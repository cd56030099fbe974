/* Forks while other threads walk the loader's object list: two threads wait
 * 2 ms at a time (each wait a stack capture under the agent, libunwind
 * walking the list), a third opens and closes a library every few
 * milliseconds (so that the agent's writer walks the whole list to see what
 * changed), the main thread forks N children, and each child waits 2 ms
 * too (its own stack capture) and exits. A child forked while a walk held the
 * loader's lock inherits that lock held by no thread of its own, and hangs in
 * its first capture. The parent gives each child 2 s, kills the ones that
 * hang, and prints "forks=N hung=H". Before it kills one, it prints on stderr
 * what each of the child's threads waits in (the kernel's wchan and syscall)
 * and, from a signal the child answers itself, each thread's stack.
 * Usage: fork_unwind N [LIBRARY]: LIBRARY the one opened and closed (default
 * libz.so.1; one that brings many others along makes the writer's walk long). */
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

/* A few frames deep, so that a walk has work to do. */
static __attribute__((noinline)) void wait_a_little(int depth)
{
    if (depth > 0) {
        wait_a_little(depth - 1);
        return;
    }
    poll(NULL, 0, 2);
}

static void *waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop))
        wait_a_little(6);
    return NULL;
}

/* In a child, a thread's answer to SIGUSR1: its stack on stderr. */
static void say_stack(int sig)
{
    (void)sig;
    void *pcs[64];
    char head[64];
    int n = backtrace(pcs, 64);
    int len = snprintf(head, sizeof head, "fork_unwind: thread %ld of %d:\n", (long)syscall(SYS_gettid), (int)getpid());
    if (write(2, head, (size_t)len) < 0)
        return;
    backtrace_symbols_fd(pcs, n, 2);
}

/* One line of /proc/PID/task/TID/NAME on stderr, as "NAME: text". */
static void say_proc(pid_t pid, const char *tid, const char *name)
{
    char path[128], text[256];
    snprintf(path, sizeof path, "/proc/%d/task/%s/%s", (int)pid, tid, name);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    text[n > 0 ? n : 0] = 0;
    text[strcspn(text, "\n")] = 0;
    fprintf(stderr, "  %s: %s\n", name, text);
}

/* What each thread of a hung child waits in, and its stack. */
static void describe(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        fprintf(stderr, "fork_unwind: child %d thread %s\n", (int)pid, e->d_name);
        say_proc(pid, e->d_name, "comm");
        say_proc(pid, e->d_name, "wchan");
        say_proc(pid, e->d_name, "syscall");
        fflush(stderr);
        syscall(SYS_tgkill, (int)pid, atoi(e->d_name), SIGUSR1);
        struct timespec t = { 0, 200000000 };
        nanosleep(&t, NULL);
    }
    closedir(d);
}

/* The child's status within 2 s; -1 (and the child killed) when it hangs. */
static int reap(pid_t pid)
{
    for (int i = 0; i < 200; i++) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        struct timespec t = { 0, 10000000 };
        nanosleep(&t, NULL);
    }
    describe(pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static const char *lib = "libz.so.1";

static void *opener(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        struct timespec t = { 0, 3000000 };
        nanosleep(&t, NULL);
        if (h)
            dlclose(h);
        nanosleep(&t, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200, hung = 0;
    if (argc > 2)
        lib = argv[2];
    /* backtrace loads libgcc_s at its first call: here, not in a hung child */
    void *warm[4];
    backtrace(warm, 4);
    signal(SIGUSR1, say_stack); /* the children's, inherited */
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, i < 2 ? waiter : opener, NULL) != 0)
            return 2;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            wait_a_little(6);
            _exit(0);
        }
        if (reap(pid) < 0) {
            fprintf(stderr, "fork_unwind: child %d hung\n", (int)pid);
            hung++;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("forks=%d hung=%d\n", n, hung);
    return hung ? 1 : 0;
}
