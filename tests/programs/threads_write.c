/* Test program: T threads each open their own file in DIR, make N writes of
 * 64 bytes, and close it; prints the number of I/O calls it made, the truth
 * the agent's recorded + dropped counts are held against. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static long nwrites;

static void *worker(void *arg)
{
    char path[4096], buf[64];
    memset(buf, 'x', sizeof buf);
    snprintf(path, sizeof path, "%s/t%ld.out", dir, (long)(intptr_t)arg);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    for (long i = 0; i < nwrites; i++)
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
            perror("write");
            exit(1);
        }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: threads_write DIR THREADS WRITES\n");
        return 2;
    }
    dir = argv[1];
    long nthreads = atol(argv[2]);
    nwrites = atol(argv[3]);
    pthread_t th[256];
    if (nthreads < 1 || nthreads > 256)
        return 2;
    for (long t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (long t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    printf("%ld\n", nthreads * (nwrites + 2));
    return 0;
}
