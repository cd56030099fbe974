/* Test program for launchers: one rank of a job. Writes DIR/rank_io.<pid>.out
 * (BYTES x (1 + the rank its launcher gave it, from the first VAR), in 4 KiB
 * write() calls and one fwrite()), reads it back, and prints one line
 * "pid=<pid> VAR=<value>..." with the launcher variables named, so a test
 * holds the agent's rank and job against the launcher's own. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: rank_io DIR BYTES RANK_VAR [VAR...]\n");
        return 2;
    }
    const char *r = getenv(argv[3]);
    long rank = r ? atol(r) : 0;
    long total = atol(argv[2]) * (1 + rank);
    char path[4096], buf[4096];
    snprintf(path, sizeof path, "%s/rank_io.%d.out", argv[1], (int)getpid());
    memset(buf, 'a' + (int)(rank % 26), sizeof buf);

    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    long left = total - 100;
    while (left > 0) {
        size_t n = left < (long)sizeof buf ? (size_t)left : sizeof buf;
        if (write(fd, buf, n) != (ssize_t)n) {
            perror("write");
            return 1;
        }
        left -= (long)n;
    }
    close(fd);
    FILE *f = fopen(path, "a");
    if (!f || fwrite(buf, 1, 100, f) != 100 || fclose(f) != 0) {
        perror(path);
        return 1;
    }

    fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);

    char parent[64] = "?";
    snprintf(path, sizeof path, "/proc/%d/comm", (int)getppid());
    fd = open(path, O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, parent, sizeof parent - 1);
        close(fd);
        parent[n > 0 ? n : 0] = 0;
        for (char *c = parent; *c; c++)
            if (*c == '\n' || *c == ' ')
                *c = *c == ' ' ? '_' : 0;
    }
    printf("pid=%d parent=%s", (int)getpid(), parent);
    for (int i = 3; i < argc; i++) {
        const char *v = getenv(argv[i]);
        printf(" %s=%s", argv[i], v ? v : "");
    }
    printf("\n");
    return 0;
}
