/* Test program: writes 512-byte records to FILE until killed or COUNT is
 * reached, and after every 100 writes prints "COUNT MONO_NS" (writes done,
 * CLOCK_MONOTONIC) on stdout, so a test knows what was done by when. Exits
 * with status 3 after COUNT writes, to show an exit status passes through. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: write_loop FILE COUNT\n");
        return 2;
    }
    long count = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    char buf[512];
    memset(buf, 'r', sizeof buf);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (long i = 1; count <= 0 || i <= count; i++) {
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
            perror("write");
            return 1;
        }
        if (i % 100 == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            printf("%ld %lld\n", i, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
        }
    }
    close(fd);
    printf("done %ld\n", count);
    return 3;
}
