/* bench_io: the workload of `make bench` for the agent's I/O hooks. It makes
 * N identical calls of one kind (a 64-byte pwrite to a page-cache file, or a
 * 64-byte write to /dev/null) and prints the time per call of that loop
 * alone: wall, this thread's CPU, and the whole process's CPU (the agent's
 * writer thread included), so tools/bench/bench.sh can compare runs with and
 * without LD_PRELOAD=libagent.so.
 *
 * pwrite-pairs measures inside one process instead, where the machine's
 * slow and fast phases fall out: N batches of 200 pwrite calls (the hook
 * under LD_PRELOAD, glibc's without) alternate with 200 bare pwrite64
 * system calls, and it prints the median time per call of each kind and
 * the median over batches of their difference.
 * Usage: bench_io pwrite|devnull|pwrite-pairs N [DIR] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The pwrite case cycles through the first 1 MiB of its file, so the file
 * stays small and in the page cache whatever N is. */
#define PWRITE_SPAN (1 << 20)
#define CALL_BYTES 64

static double now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_io pwrite|devnull|pwrite-pairs N [DIR]\n"
                    "  pwrite: N 64-byte pwrites to a new file in DIR (default /tmp)\n"
                    "  devnull: N 64-byte writes to /dev/null\n"
                    "  pwrite-pairs: N batches of 200 pwrites and 200 bare system calls, alternating\n");
    return 2;
}

/* pwrite64 as a bare system call: what glibc's pwrite and the agent's hook
 * both end in. */
static long bare_pwrite(int fd, const void *buf, size_t n, off_t off)
{
#if defined(__x86_64__) && !defined(__ILP32__)
    long r;
    register long r10 __asm__("r10") = off;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"((long)SYS_pwrite64), "D"((long)fd), "S"(buf), "d"(n), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
#else
    return syscall(SYS_pwrite64, fd, buf, n, off);
#endif
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define PAIR_BATCH 200

/* The pwrite-pairs mode on fd (its span already in the page cache). */
static int pairs(int fd, long batches)
{
    double *call = malloc((size_t)batches * sizeof *call);
    double *bare = malloc((size_t)batches * sizeof *bare);
    double *diff = malloc((size_t)batches * sizeof *diff);
    if (!call || !bare || !diff) {
        fprintf(stderr, "bench_io: out of memory\n");
        return 1;
    }
    char buf[CALL_BYTES];
    memset(buf, 'x', sizeof buf);
    off_t off = 0;
    long bad = 0;
    for (long b = 0; b < batches; b++) {
        double t0 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < PAIR_BATCH; i++, off = (off + CALL_BYTES) % PWRITE_SPAN)
            bad += pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf;
        double t1 = now_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < PAIR_BATCH; i++, off = (off + CALL_BYTES) % PWRITE_SPAN)
            bad += bare_pwrite(fd, buf, sizeof buf, off) != (long)sizeof buf;
        double t2 = now_ns(CLOCK_MONOTONIC);
        call[b] = (t1 - t0) / PAIR_BATCH;
        bare[b] = (t2 - t1) / PAIR_BATCH;
        diff[b] = call[b] - bare[b];
    }
    if (bad) {
        fprintf(stderr, "bench_io: %ld calls failed\n", bad);
        return 1;
    }
    qsort(call, (size_t)batches, sizeof *call, cmp_double);
    qsort(bare, (size_t)batches, sizeof *bare, cmp_double);
    qsort(diff, (size_t)batches, sizeof *diff, cmp_double);
    printf("pwrite-pairs batches=%ld call_ns=%.1f bare_ns=%.1f diff_ns=%.1f\n", batches,
           call[batches / 2], bare[batches / 2], diff[batches / 2]);
    free(call);
    free(bare);
    free(diff);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4)
        return usage();
    int is_pairs = strcmp(argv[1], "pwrite-pairs") == 0;
    int is_pwrite = is_pairs || strcmp(argv[1], "pwrite") == 0;
    if (!is_pwrite && strcmp(argv[1], "devnull") != 0)
        return usage();
    char *end;
    long n = strtol(argv[2], &end, 10);
    if (*end || n <= 0)
        return usage();

    char path[4096];
    int fd;
    if (is_pwrite) {
        /* open, not mkstemp: glibc's mkstemp opens through an internal call
         * that no preloaded library sees, so the agent would not know it. */
        snprintf(path, sizeof path, "%s/bench_io.%d", argc == 4 ? argv[3] : "/tmp", (int)getpid());
        fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    } else {
        snprintf(path, sizeof path, "/dev/null");
        fd = open(path, O_WRONLY);
    }
    if (fd < 0) {
        fprintf(stderr, "bench_io: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }

    char buf[CALL_BYTES];
    memset(buf, 'x', sizeof buf);
    /* Fill the span first so the timed pwrites never allocate pages. */
    if (is_pwrite)
        for (off_t off = 0; off < PWRITE_SPAN; off += CALL_BYTES)
            if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
                fprintf(stderr, "bench_io: cannot write %s: %s\n", path, strerror(errno));
                return 1;
            }

    if (is_pairs) {
        int r = pairs(fd, n);
        close(fd);
        unlink(path);
        return r;
    }

    double w0 = now_ns(CLOCK_MONOTONIC), t0 = now_ns(CLOCK_THREAD_CPUTIME_ID),
           p0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    long bad = 0;
    for (long i = 0; i < n; i++) {
        ssize_t r = is_pwrite ? pwrite(fd, buf, sizeof buf, (off_t)(i * CALL_BYTES % PWRITE_SPAN))
                              : write(fd, buf, sizeof buf);
        bad += r != (ssize_t)sizeof buf;
    }
    double w1 = now_ns(CLOCK_MONOTONIC), t1 = now_ns(CLOCK_THREAD_CPUTIME_ID),
           p1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);

    close(fd);
    if (is_pwrite)
        unlink(path);
    if (bad) {
        fprintf(stderr, "bench_io: %ld of %ld calls failed\n", bad, n);
        return 1;
    }
    printf("%s calls=%ld wall_ns=%.1f thread_cpu_ns=%.1f process_cpu_ns=%.1f\n", argv[1], n,
           (w1 - w0) / (double)n, (t1 - t0) / (double)n, (p1 - p0) / (double)n);
    return 0;
}
