/* The simulated NCCL's meeting place: one POSIX shared-memory segment per
 * communicator, named from the unique id, which every rank maps. Joining is the
 * only blocking step; the last rank to join unlinks the name, so nothing is left
 * in /dev/shm even when ranks die later. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "tools/sim/simnccl.h"

static uint64_t sim_nccl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

ncclResult_t sim_nccl_shm_attach(struct ncclComm *comm)
{
    int fd = shm_open(comm->name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return sim_nccl_error(ncclSystemError, "shm_open %s: %s", comm->name, strerror(errno));
    /* Every rank sizes it: the same length again changes nothing. */
    if (ftruncate(fd, sizeof(struct sim_nccl_shm)) != 0) {
        int e = errno;
        close(fd);
        return sim_nccl_error(ncclSystemError, "ftruncate %s: %s", comm->name, strerror(e));
    }
    void *p = mmap(NULL, sizeof(struct sim_nccl_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return sim_nccl_error(ncclSystemError, "mmap %s: %s", comm->name, strerror(errno));
    comm->shm = p;

    uint32_t n = 0;
    if (!atomic_compare_exchange_strong(&comm->shm->nranks, &n, (uint32_t)comm->nranks) &&
        n != (uint32_t)comm->nranks) {
        sim_nccl_shm_detach(comm);
        return sim_nccl_error(ncclInvalidUsage, "comm %s: rank %d says %d ranks, another said %u",
                             comm->id, comm->rank, comm->nranks, n);
    }
    int32_t none = 0;
    if (!atomic_compare_exchange_strong(&comm->shm->pid[comm->rank], &none, (int32_t)getpid())) {
        sim_nccl_shm_detach(comm);
        return sim_nccl_error(ncclInvalidUsage, "comm %s: rank %d joined twice (pids %d and %d)",
                             comm->id, comm->rank, (int)none, (int)getpid());
    }
    if (atomic_fetch_add(&comm->shm->joined, 1) + 1 == (uint32_t)comm->nranks)
        shm_unlink(comm->name);
    return ncclSuccess;
}

ncclResult_t sim_nccl_shm_wait_joined(struct ncclComm *comm)
{
    uint64_t deadline = sim_nccl_now_ns() + comm->timeout_ns;
    const struct timespec poll = { 0, 1000000 };
    while (atomic_load(&comm->shm->joined) < (uint32_t)comm->nranks) {
        if (sim_nccl_now_ns() > deadline) {
            shm_unlink(comm->name);
            return sim_nccl_error(ncclSystemError,
                                 "comm %s: rank %d: only %u of %d ranks joined within %llu s",
                                 comm->id, comm->rank, atomic_load(&comm->shm->joined), comm->nranks,
                                 (unsigned long long)(comm->timeout_ns / 1000000000u));
        }
        nanosleep(&poll, NULL);
    }
    return ncclSuccess;
}

void sim_nccl_shm_detach(struct ncclComm *comm)
{
    if (comm->shm)
        munmap(comm->shm, sizeof(struct sim_nccl_shm));
    comm->shm = NULL;
}

/* A process that has exited but not been reaped yet (a zombie) is dead too. */
int sim_nccl_shm_rank_dead(const struct ncclComm *comm, int r)
{
    pid_t pid = atomic_load(&comm->shm->pid[r]);
    char path[64], buf[512];
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) == -1 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *state = strrchr(buf, ')');
    return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}
