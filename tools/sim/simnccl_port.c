/* The simulated NCCL's network port (SIMNCCL_PORT_COUNTERS=DIR): the bytes
 * each rank's operations send and receive are added to a fake InfiniBand
 * port's counters, DIR/port_xmit_data and DIR/port_rcv_data, in the 4-byte
 * units of the real ones, so that the agent's node sampler (reading the
 * fake tree through RINGSIDE_TEST_SYSFS) sees a link carry the job's
 * collectives. Ranks on one fake node share the files: an update holds
 * flock on DIR/.lock, and a file is replaced whole (rename), so a reader
 * never sees half a number. Each update also appends "MONO_NS TX RX" (bytes,
 * the CLOCK_MONOTONIC time once the files are replaced) to DIR/.log, so a
 * test can tell what moved between two of the sampler's readings. The files
 * are reached through raw system calls: a NIC's counters are not file I/O
 * of the program's. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "tools/sim/simnccl.h"

static pthread_mutex_t sim_port_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sim_port_carry[2];   /* bytes short of a whole 4-byte unit, per counter */

static int sim_port_open(const char *dir, const char *name, int flags)
{
    char p[4096];
    if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
        return -1;
    return (int)syscall(SYS_openat, AT_FDCWD, p, flags | O_CLOEXEC, 0644);
}

/* Adds units to DIR/name (a decimal number; missing or garbled reads as 0). */
static void sim_port_bump(const char *dir, const char *name, uint64_t units)
{
    char buf[64] = "", tmp[128], p[4096], q[4096];
    int fd = sim_port_open(dir, name, O_RDONLY);
    uint64_t v = 0;
    if (fd >= 0) {
        long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
        syscall(SYS_close, fd);
        buf[n > 0 ? n : 0] = 0;
        v = strtoull(buf, NULL, 10);
    }
    snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
    fd = sim_port_open(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0)
        return;
    int n = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)(v + units));
    long w = syscall(SYS_write, fd, buf, (size_t)n);
    syscall(SYS_close, fd);
    snprintf(p, sizeof(p), "%s/%s", dir, tmp);
    snprintf(q, sizeof(q), "%s/%s", dir, name);
    if (w == n)
        syscall(SYS_renameat, AT_FDCWD, p, AT_FDCWD, q);
}

void sim_nccl_port_add(uint64_t tx, uint64_t rx)
{
    const char *dir = getenv("SIMNCCL_PORT_COUNTERS");
    if (!dir || !*dir || (!tx && !rx))
        return;
    pthread_mutex_lock(&sim_port_lock);
    sim_port_carry[0] += tx;
    sim_port_carry[1] += rx;
    uint64_t units[2] = { sim_port_carry[0] / 4, sim_port_carry[1] / 4 };
    sim_port_carry[0] %= 4;
    sim_port_carry[1] %= 4;
    int lock = sim_port_open(dir, ".lock", O_RDWR | O_CREAT);
    if (lock >= 0 && syscall(SYS_flock, lock, LOCK_EX) == 0) {
        if (units[0])
            sim_port_bump(dir, "port_xmit_data", units[0]);
        if (units[1])
            sim_port_bump(dir, "port_rcv_data", units[1]);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        char line[96];
        int n = snprintf(line, sizeof(line), "%llu %llu %llu\n",
                         (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                         (unsigned long long)units[0] * 4, (unsigned long long)units[1] * 4);
        int log = sim_port_open(dir, ".log", O_WRONLY | O_CREAT | O_APPEND);
        if (log >= 0) {
            long w = syscall(SYS_write, log, line, (size_t)n);
            (void)w;
            syscall(SYS_close, log);
        }
    }
    if (lock >= 0)
        syscall(SYS_close, lock);
    pthread_mutex_unlock(&sim_port_lock);
}
