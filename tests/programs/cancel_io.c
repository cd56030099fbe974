/* What the agent's direct system calls for read/write/pread/pwrite must not
 * change: thread cancellation at those calls, and their errors. Prints one
 * line per case; the test compares the lines with and without the agent.
 * Usage: cancel_io DIR
 *   errors:  pwrite on a read-only fd, read into a bad address, pread past
 *            the end, a short pread: results and errno.
 *   fifo:    a thread blocked in read on a FIFO (a recorded file that can
 *            wait for ever) is cancelled.
 *   pending: a thread with a cancellation pending calls pwrite on a regular
 *            file: glibc cancels it there, before the write (size 0). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cancel_io DIR\n");
        return 2;
    }
    alarm(20); /* a thread that cannot be cancelled must not hang the test */
    char path[4096];
    sem_init(&ready, 0, 0);
    sem_init(&go, 0, 0);

    /* Errors and the FIFO first: before any pthread_cancel, the agent makes
     * its own system calls on regular files. */
    snprintf(path, sizeof path, "%s/ro.dat", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10) {
        perror(path);
        return 1;
    }
    close(fd);
    fd = open(path, O_RDONLY);
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
