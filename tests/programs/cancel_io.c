/* What the agent's direct system calls for read/write/pread/pwrite must not
 * change: thread cancellation at those calls, and their errors. Prints one
 * line per case; the test compares the lines with and without the agent.
 * Usage: cancel_io DIR [held|procfs]  (without a case: errors, fifo, pending)
 *   errors:  pwrite on a read-only fd, read into a bad address, pread past
 *            the end, a short pread: results and errno.
 *   procfs:  a thread whose read of /proc/self/stat (a regular file, but
 *            not on a disk) waits for the page it reads into, held back
 *            through userfaultfd, is cancelled in the read ("no
 *            userfaultfd" where that cannot be used).
 *   held:    the same with a regular file in DIR, which the agent reads
 *            with its own system call: the thread is cancelled in the read
 *            without the agent, and after it (at its next cancellation
 *            point, pthread_testcancel) with.
 *   fifo:    a thread blocked in read on a FIFO (a recorded file that can
 *            wait for ever) is cancelled.
 *   pending: a thread with a cancellation pending calls pwrite on a regular
 *            file: glibc cancels it there, before the write (size 0). */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static sem_t ready, go;
static int fd_pending, fd_fifo;

static void *pending_thread(void *arg)
{
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    sem_post(&ready);
    sem_wait(&go); /* the main thread has called pthread_cancel by now */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    if (pwrite(fd_pending, "x", 1, 0) != 1) /* glibc cancels here */
        perror("pwrite");
    return (void *)1;
}

static void *fifo_thread(void *arg)
{
    (void)arg;
    char c;
    sem_post(&ready);
    ssize_t r = read(fd_fifo, &c, 1); /* blocks: nobody writes */
    return (void *)(long)(r + 10);
}

static int fd_held;
static char *held; /* a page userfaultfd supplies only when told */

static volatile int held_returned;

static void *held_thread(void *arg)
{
    (void)arg;
    ssize_t r = read(fd_held, held, 64); /* waits for the page */
    held_returned = 1;
    pthread_testcancel();
    return (void *)(long)(r + 10);
}

/* A thread reads path into a page that userfaultfd holds back, and is
 * cancelled while it waits; the page comes 100 ms later. Prints "NAME:
 * cancelled in the read", "cancelled after the read" (at the
 * pthread_testcancel that follows it) or "ran on", or "NAME: no
 * userfaultfd" where that cannot be used. Returns 0, or 1 on a set-up
 * failure. */
static int held_case(const char *name, const char *path)
{
    int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
    struct uffdio_api api = { .api = UFFD_API };
    held = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_register reg = {
        .range = { .start = (unsigned long)held, .len = 4096 },
        .mode = UFFDIO_REGISTER_MODE_MISSING,
    };
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0 || held == MAP_FAILED ||
        ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
        printf("%s: no userfaultfd\n", name);
        return 0;
    }
    if ((fd_held = open(path, O_RDONLY)) < 0) {
        perror(path);
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, held_thread, NULL);
    struct pollfd p = { uffd, POLLIN, 0 };
    struct uffd_msg msg;
    if (poll(&p, 1, 5000) != 1 || read(uffd, &msg, sizeof msg) != sizeof msg) {
        fprintf(stderr, "%s: the read did not wait for its page\n", name);
        return 1;
    }
    pthread_cancel(t);
    usleep(100000);
    /* Supply the page, so that a read the cancellation did not end can finish. */
    static char src[4096];
    struct uffdio_copy copy = { .dst = (unsigned long)held, .src = (unsigned long)src, .len = 4096 };
    ioctl(uffd, UFFDIO_COPY, &copy);
    void *res;
    if (pthread_join(t, &res) != 0) {
        fprintf(stderr, "%s: pthread_join failed\n", name);
        return 1;
    }
    printf("%s: %s\n", name, res != PTHREAD_CANCELED ? "ran on"
                             : held_returned ? "cancelled after the read" : "cancelled in the read");
    close(fd_held);
    close(uffd);
    munmap(held, 4096);
    return 0;
}

static int join_said(pthread_t t, const char *what)
{
    void *res;
    int e = pthread_join(t, &res);
    if (e) {
        fprintf(stderr, "%s: pthread_join: %s\n", what, strerror(e));
        return 1;
    }
    printf("%s: %s\n", what, res == PTHREAD_CANCELED ? "cancelled" : "ran on");
    return 0;
}

/* Writes text to a new file at path. Returns 0, or 1 (said on stderr). */
static int make_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        perror(path);
        return 1;
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: cancel_io DIR [held|procfs]\n");
        return 2;
    }
    alarm(20); /* a thread that cannot be cancelled must not hang the test */
    char path[4096];
    /* The userfaultfd cases each need a process that has not called
     * pthread_cancel before (until then the agent makes its own calls). */
    if (argc == 3 && strcmp(argv[2], "procfs") == 0)
        return held_case("procfs", "/proc/self/stat");
    if (argc == 3 && strcmp(argv[2], "held") == 0) {
        snprintf(path, sizeof path, "%s/held.dat", argv[1]);
        return make_file(path, "held") || held_case("held", path);
    }
    if (argc == 3) {
        fprintf(stderr, "cancel_io: unknown case %s\n", argv[2]);
        return 2;
    }
    sem_init(&ready, 0, 0);
    sem_init(&go, 0, 0);

    /* Errors and the FIFO first: before any pthread_cancel, the agent makes
     * its own system calls on regular files. */
    snprintf(path, sizeof path, "%s/ro.dat", argv[1]);
    if (make_file(path, "0123456789"))
        return 1;
    int fd = open(path, O_RDONLY);
    errno = 0;
    ssize_t r = pwrite(fd, "x", 1, 0);
    printf("errors: pwrite on a read-only fd: %zd %s\n", r, strerror(errno));
    errno = 0;
    void *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r = read(fd, bad, 4);
    printf("errors: read into a bad address: %zd %s\n", r, strerror(errno));
    char buf[4];
    errno = 0;
    r = pread(fd, buf, sizeof buf, 100);
    printf("errors: pread past the end: %zd errno %d\n", r, errno);
    errno = 0;
    r = pread(fd, buf, sizeof buf, 8);
    printf("errors: short pread: %zd \"%.*s\" errno %d\n", r, (int)(r > 0 ? r : 0), buf, errno);
    close(fd);

    snprintf(path, sizeof path, "%s/fifo", argv[1]);
    if (mkfifo(path, 0600) != 0 || (fd_fifo = open(path, O_RDWR)) < 0) {
        perror(path);
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, fifo_thread, NULL);
    sem_wait(&ready);
    usleep(100000); /* let it block in read */
    pthread_cancel(t);
    if (join_said(t, "fifo"))
        return 1;

    snprintf(path, sizeof path, "%s/pending.dat", argv[1]);
    fd_pending = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd_pending < 0) {
        perror(path);
        return 1;
    }
    pthread_create(&t, NULL, pending_thread, NULL);
    sem_wait(&ready);
    pthread_cancel(t);
    sem_post(&go);
    if (join_said(t, "pending"))
        return 1;
    struct stat st;
    fstat(fd_pending, &st);
    printf("pending: file size %lld\n", (long long)st.st_size);
    return 0;
}
