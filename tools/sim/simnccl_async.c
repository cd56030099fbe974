/* Non-blocking communicators of the simulated NCCL, as NCCL 2.14+ has them
 * (ncclConfig_t.blocking = 0): a communicator's creation, and every group
 * (a collective outside one is a group of its own), return ncclInProgress;
 * the rendezvous and the launches happen later on a thread of the library's
 * own (NCCL's groupLaunchNonBlocking thread), which then marks the
 * communicators ready for ncclCommGetAsyncError. Until then the communicator
 * cannot be used, nor asked its rank or size. SIMNCCL_NONBLOCKING=1 makes
 * every communicator non-blocking; the thread waits
 * SIMNCCL_NONBLOCKING_DELAY_US (default 500) before it launches, so that
 * work lands on the stream well after the call returned, as when NCCL
 * connects its peers first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/sim/simnccl.h"

struct sim_nccl_job {
    void *op;                /* NULL: the communicator's rendezvous */
    CUfunction f;
    cudaStream_t stream;
    struct ncclComm *comm;
};

static __thread struct {
    struct sim_nccl_job *jobs;
    size_t n, cap;
} sim_nccl_queue;

struct sim_nccl_batch {
    struct sim_nccl_job *jobs;
    size_t n;
    CUcontext ctx;
    uint64_t delay_ns;
    ncclResult_t (*launch)(void *op, CUfunction f, cudaStream_t stream);
};

static int sim_nccl_env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

int sim_nccl_async_wanted(const ncclConfig_t *config)
{
    if (sim_nccl_env_on("SIMNCCL_NONBLOCKING"))
        return 1;
    if (config && config->blocking != NCCL_CONFIG_UNDEF_INT)
        return config->blocking == 0;
    const char *v = getenv("NCCL_COMM_BLOCKING");
    return v && strcmp(v, "0") == 0;
}

ncclResult_t sim_nccl_async_state(const struct ncclComm *comm)
{
    return __atomic_load_n(&comm->async_error, __ATOMIC_ACQUIRE);
}

static ncclResult_t sim_nccl_queue_add(void *op, CUfunction f, cudaStream_t stream, struct ncclComm *comm)
{
    if (sim_nccl_queue.n == sim_nccl_queue.cap) {
        size_t cap = sim_nccl_queue.cap ? 2 * sim_nccl_queue.cap : 16;
        struct sim_nccl_job *a = realloc(sim_nccl_queue.jobs, cap * sizeof(*a));
        if (!a)
            return sim_nccl_error(ncclSystemError, "out of memory");
        sim_nccl_queue.jobs = a;
        sim_nccl_queue.cap = cap;
    }
    sim_nccl_queue.jobs[sim_nccl_queue.n++] = (struct sim_nccl_job){ op, f, stream, comm };
    return ncclSuccess;
}

ncclResult_t sim_nccl_async_queue(void *op, CUfunction f, cudaStream_t stream, struct ncclComm *comm)
{
    return sim_nccl_queue_add(op, f, stream, comm);
}

ncclResult_t sim_nccl_async_queue_join(struct ncclComm *comm)
{
    return sim_nccl_queue_add(NULL, NULL, NULL, comm);
}

int sim_nccl_async_pending(void)
{
    return sim_nccl_queue.n > 0;
}

static void sim_nccl_set_error(struct ncclComm *c, ncclResult_t r)
{
    atomic_store(&c->broken, 1);
    __atomic_store_n(&c->async_error, r, __ATOMIC_RELEASE);
}

/* Runs a batch: rendezvous and launches in call order, then every
 * communicator still in progress becomes ready. */
static void sim_nccl_batch_run(struct sim_nccl_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct sim_nccl_job *j = &b->jobs[i];
        ncclResult_t r = j->op ? b->launch(j->op, j->f, j->stream) : sim_nccl_shm_wait_joined(j->comm);
        if (r != ncclSuccess)
            sim_nccl_set_error(j->comm, r);
    }
    for (size_t i = 0; i < b->n; i++) {
        ncclResult_t expect = ncclInProgress;
        __atomic_compare_exchange_n(&b->jobs[i].comm->async_error, &expect, ncclSuccess, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED);
    }
}

static void *sim_nccl_batch_main(void *arg)
{
    struct sim_nccl_batch *b = arg;
    /* NCCL's thread sets the communicator's device before it launches. */
    if (b->ctx)
        cuCtxSetCurrent(b->ctx);
    struct timespec d = { (time_t)(b->delay_ns / 1000000000u), (long)(b->delay_ns % 1000000000u) };
    nanosleep(&d, NULL);
    sim_nccl_batch_run(b);
    free(b->jobs);
    free(b);
    return NULL;
}

ncclResult_t sim_nccl_async_flush(ncclResult_t (*launch)(void *op, CUfunction f, cudaStream_t stream))
{
    struct sim_nccl_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return sim_nccl_error(ncclSystemError, "out of memory");
    b->jobs = sim_nccl_queue.jobs;
    b->n = sim_nccl_queue.n;
    b->launch = launch;
    sim_nccl_queue.jobs = NULL;
    sim_nccl_queue.n = sim_nccl_queue.cap = 0;
    const char *v = getenv("SIMNCCL_NONBLOCKING_DELAY_US");
    double us = v && *v ? strtod(v, NULL) : 500;
    b->delay_ns = us > 0 && us < 60e6 ? (uint64_t)(us * 1000) : 0;
    if (cuCtxGetCurrent(&b->ctx) != CUDA_SUCCESS)
        b->ctx = NULL;
    for (size_t i = 0; i < b->n; i++)
        __atomic_store_n(&b->jobs[i].comm->async_error, ncclInProgress, __ATOMIC_RELEASE);
    pthread_t th;
    pthread_attr_t attr;
    int made = pthread_attr_init(&attr) == 0 && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
               pthread_create(&th, &attr, sim_nccl_batch_main, b) == 0;
    pthread_attr_destroy(&attr);
    if (made)
        return ncclInProgress;
    /* no thread: the work is done here, and the call reports how it went */
    sim_nccl_batch_run(b);
    ncclResult_t r = ncclSuccess;
    for (size_t i = 0; i < b->n && r == ncclSuccess; i++)
        r = sim_nccl_async_state(b->jobs[i].comm);
    free(b->jobs);
    free(b);
    return r;
}
