/* A parent whose child shares its memory, as Python's subprocess makes one:
 * spin_before() spins for SECONDS of this thread's CPU time and reads half
 * of DATA; then a child made by MODE resets every signal handler, copies
 * and closes fds (dup2, close, close_range), changes directory and execs
 * /bin/true (or, for vfork-fail, a path that does not exist, then _exit);
 * the parent reads the rest of DATA, reads rel.dat from its own current
 * directory, and spin_after() spins for SECONDS again.
 * MODE: vfork, vfork-fail, clone (CLONE_VM|CLONE_VFORK), spawn (posix_spawn
 * with the same file actions), clone-vm (CLONE_VM alone: the two run at
 * once). Usage: vm_child MODE DATA SECONDS. Prints what it read and how
 * the child ended. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static volatile unsigned long sink;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noipa)) static void spin_for(double seconds, unsigned long x)
{
    double end = thread_cpu() + seconds;
    while (thread_cpu() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink += x;
}

/* noipa: each keeps a frame of its own (no inlining, no merging of the
 * two identical bodies); the store after the call keeps it from being a
 * tail call, so the spin's caller is on the stack. */
__attribute__((noipa)) void spin_before(double s);
__attribute__((noipa)) void spin_after(double s);
__attribute__((noipa)) void spin_before(double s) { spin_for(s, 7); sink++; }
__attribute__((noipa)) void spin_after(double s) { spin_for(s, 11); sink++; }

static long read_all(int fd, long max)
{
    char buf[4096];
    long got = 0;
    while (max < 0 || got < max) {
        size_t want = sizeof buf;
        if (max >= 0 && (long)want > max - got)
            want = (size_t)(max - got);
        ssize_t n = read(fd, buf, want);
        if (n <= 0)
            break;
        got += n;
    }
    return got;
}

struct child_args {
    int fd;
    const char *exe;
};

/* What Python's _posixsubprocess child does between vfork and exec. */
static int child_main(void *p)
{
    struct child_args *a = p;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction old;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) != 0)
            continue;
        if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
            sigaction(sig, &dfl, NULL);
    }
    signal(SIGPIPE, SIG_DFL);
    dup2(a->fd, 50);
    close(a->fd);
    syscall(SYS_close_range, 51, ~0u, 0); /* raw, as a program without glibc's wrapper */
    close_range(3, ~0u, 0);
    if (chdir("/") != 0)
        _exit(126);
    char *argv[] = { (char *)a->exe, NULL };
    execve(a->exe, argv, environ);
    _exit(127);
}

static char child_stack[256 << 10] __attribute__((aligned(16)));

static int run_child(const char *mode, int fd)
{
    struct child_args a = { fd, strcmp(mode, "vfork-fail") == 0 ? "/nonexistent/vm_child" : "/bin/true" };
    pid_t pid;
    if (strncmp(mode, "vfork", 5) == 0) {
        pid = vfork();
        if (pid == 0)
            child_main(&a);
    } else if (strcmp(mode, "clone") == 0 || strcmp(mode, "clone-vm") == 0) {
        int flags = CLONE_VM | SIGCHLD | (strcmp(mode, "clone") == 0 ? CLONE_VFORK : 0);
        pid = clone(child_main, child_stack + sizeof child_stack, flags, &a);
    } else if (strcmp(mode, "spawn") == 0) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sigset_t all;
        sigfillset(&all);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fd, 50);
        posix_spawn_file_actions_addclose(&fa, fd);
        posix_spawn_file_actions_addchdir_np(&fa, "/");
        posix_spawnattr_init(&at);
        posix_spawnattr_setsigdefault(&at, &all);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
        char *argv[] = { (char *)a.exe, NULL };
        int e = posix_spawn(&pid, a.exe, &fa, &at, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        if (e != 0)
            pid = -1;
    } else {
        fprintf(stderr, "vm_child: unknown mode %s\n", mode);
        exit(2);
    }
    if (pid < 0) {
        perror("vm_child: child");
        exit(1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: vm_child MODE DATA SECONDS\n");
        return 2;
    }
    double secs = atof(argv[3]);
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        perror(argv[2]);
        return 1;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    lseek(fd, 0, SEEK_SET);
    spin_before(secs);
    long first = read_all(fd, size / 2);
    int code = run_child(argv[1], fd);
    long rest = read_all(fd, -1);
    int rel = open("rel.dat", O_RDONLY);
    long relbytes = rel < 0 ? -1 : read_all(rel, -1);
    if (rel >= 0)
        close(rel);
    close(fd);
    spin_after(secs);
    printf("child %d read %ld+%ld rel %ld\n", code, first, rest, relbytes);
    return 0;
}
