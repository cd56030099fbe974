/* A read of a regular file that takes a known, long time: the destination
 * page is registered with userfaultfd, so the kernel's copy into it waits
 * until a helper thread, HOLD_MS after the fault, supplies the page. Prints
 * "result=N blocked_ns=N" (read's result and how long it blocked by this
 * program's clock), or "unavailable: why" and exits 3 when userfaultfd
 * cannot be used here (not root, or a seccomp filter).
 * Usage: uffd_read FILE HOLD_MS */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static int uffd;
static long hold_ms;
static char *src;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *supplier(void *arg)
{
    (void)arg;
    struct pollfd p = { uffd, POLLIN, 0 };
    struct uffd_msg msg;
    if (poll(&p, 1, -1) != 1 || read(uffd, &msg, sizeof msg) != sizeof msg ||
        msg.event != UFFD_EVENT_PAGEFAULT) {
        perror("uffd_read: page fault event");
        exit(1);
    }
    struct timespec d = { hold_ms / 1000, hold_ms % 1000 * 1000000 };
    nanosleep(&d, NULL);
    struct uffdio_copy copy = {
        .dst = msg.arg.pagefault.address & ~(uint64_t)(PAGE - 1),
        .src = (uint64_t)(uintptr_t)src,
        .len = PAGE,
    };
    if (ioctl(uffd, UFFDIO_COPY, &copy) != 0) {
        perror("uffd_read: UFFDIO_COPY");
        exit(1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: uffd_read FILE HOLD_MS\n");
        return 2;
    }
    hold_ms = atol(argv[2]);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    char data[PAGE];
    memset(data, 'd', sizeof data);
    if (fd < 0 || write(fd, data, sizeof data) != sizeof data) {
        perror("uffd_read: cannot write the file");
        return 1;
    }

    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
    struct uffdio_api api = { .api = UFFD_API };
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0) {
        printf("unavailable: userfaultfd: %s\n", strerror(errno));
        return 3;
    }
    src = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *dst = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct uffdio_register reg = {
        .range = { .start = (uint64_t)(uintptr_t)dst, .len = PAGE },
        .mode = UFFDIO_REGISTER_MODE_MISSING,
    };
    if (src == MAP_FAILED || dst == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) {
        printf("unavailable: UFFDIO_REGISTER: %s\n", strerror(errno));
        return 3;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, supplier, NULL) != 0) {
        fprintf(stderr, "uffd_read: cannot start a thread\n");
        return 1;
    }

    long long t0 = now_ns();
    ssize_t r = pread(fd, dst, PAGE, 0);
    long long t1 = now_ns();
    pthread_join(th, NULL);
    printf("result=%zd blocked_ns=%lld\n", r, t1 - t0);
    return r == PAGE && memcmp(dst, data, PAGE) == 0 ? 0 : 1;
}
