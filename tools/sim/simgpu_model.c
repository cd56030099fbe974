/* The simulated GPU's time model: every stream operation is a node that depends on
 * the previous one on its stream (and on an awaited event); it is resolved, i.e. its
 * start and end fixed on CLOCK_MONOTONIC, as soon as its dependencies are. Only
 * external operations (collectives) can stay unresolved for long: a progress thread
 * keeps asking them while any is pending, so that this rank publishes its arrival
 * to the others promptly even while the program's threads are busy elsewhere. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "tools/sim/simgpu_internal.h"

/* How often waiting threads and the progress thread look again at pending operations. */
#define SIM_POLL_NS 50000

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    struct sim_op *head, *tail;        /* unresolved operations, oldest first */
    struct CUstream_st *streams;
    uint64_t next_stream_id;
    int progress_started;
    pthread_cond_t wake;
} sim_model = { .wake = PTHREAD_COND_INITIALIZER, .next_stream_id = 1 };

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sim_sleep_ns(uint64_t ns)
{
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static void sim_sleep_until(uint64_t t_ns)
{
    struct timespec ts = { .tv_sec = (time_t)(t_ns / 1000000000u), .tv_nsec = (long)(t_ns % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void sim_op_ref(struct sim_op *op)
{
    op->refs++;
}

void sim_op_unref(struct sim_op *op)
{
    if (op && --op->refs == 0) {
        for (int i = 0; i < 2; i++)
            sim_op_unref(op->deps[i]);
        free(op);
    }
}

/* Fixes op's times if its dependencies allow; returns whether it is resolved. */
static int sim_op_try_resolve(struct sim_op *op)
{
    uint64_t ready = op->launch_ns;
    uint64_t gap = op->kind == SIM_KERNEL ? sim_cfg.kernel_gap_ns : 0;
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        const struct sim_op *d = op->deps[i];
        if (!d)
            continue;
        if (!d->resolved)
            return 0;
        if (d->end_ns + gap > ready)
            ready = d->end_ns + gap;
        failed |= d->failed;
    }
    op->ready_ns = ready;
    if (op->kind == SIM_EXT && !failed) {
        enum sim_arrival a = op->ext->arrive(op->ext_arg, ready, &op->start_ns, &op->end_ns);
        if (a == SIM_WAITING)
            return 0;
        failed = a == SIM_FAILED;
    }
    if (failed || op->kind != SIM_EXT) {
        op->start_ns = ready;
        op->end_ns = failed ? ready : ready + op->dur_ns;
    }
    op->failed = failed;
    op->resolved = 1;
    /* Successors only need the end time: let the chain behind go. */
    for (int i = 0; i < 2; i++) {
        sim_op_unref(op->deps[i]);
        op->deps[i] = NULL;
    }
    sim_truth_write(op);
    sim_activity_add(op);
    if (op->kind == SIM_EXT)
        op->ext->release(op->ext_arg);
    return 1;
}

static void sim_list_remove(struct sim_op *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        sim_model.head = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else
        sim_model.tail = op->prev;
    sim_op_unref(op);
}

/* Dependencies are always older operations, so one pass in creation order
 * resolves everything that can be. */
void sim_model_progress(void)
{
    struct sim_op *op = sim_model.head;
    while (op) {
        struct sim_op *next = op->next;
        if (sim_op_try_resolve(op))
            sim_list_remove(op);
        op = next;
    }
}

static void *sim_progress_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&sim_lock);
    for (;;) {
        sim_model_progress();
        sim_truth_flush();
        if (!sim_model.head) {
            pthread_cond_wait(&sim_model.wake, &sim_lock);
            continue;
        }
        pthread_mutex_unlock(&sim_lock);
        sim_sleep_ns(SIM_POLL_NS);
        pthread_mutex_lock(&sim_lock);
    }
    return NULL;
}

static void sim_progress_start(void)
{
    pthread_t t;
    pthread_attr_t attr;
    if (sim_model.progress_started)
        return;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Without the thread, waits still make progress themselves: only promptness suffers. */
    sim_model.progress_started = pthread_create(&t, &attr, sim_progress_main, NULL) == 0;
    pthread_attr_destroy(&attr);
}

struct sim_op *sim_model_enqueue(struct CUstream_st *s, enum sim_kind kind, struct sim_op *also)
{
    struct sim_op *op = calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    sim_truth_flush();
    op->refs = 1;
    op->kind = kind;
    op->launch_ns = sim_now_ns();
    op->stream_id = s->id;
    op->device = s->ctx->device;
    op->deps[0] = s->tail;         /* the stream's reference moves to the new op */
    op->deps[1] = also;
    if (also)
        sim_op_ref(also);
    s->tail = op;
    sim_op_ref(op);
    return op;
}

int sim_op_list_push(struct sim_op_list *l, struct sim_op *op)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct sim_op **ops = realloc(l->ops, cap * sizeof(*ops));
        if (!ops)
            return -1;
        l->ops = ops;
        l->cap = cap;
    }
    l->ops[l->n++] = op;
    return 0;
}

static int sim_holding;
static struct sim_op_list sim_held;

static void sim_model_submit_now(struct sim_op *op, uint64_t handover);

void sim_model_hold(int on)
{
    sim_holding = on;
    if (on)
        return;
    uint64_t now = sim_now_ns();
    for (size_t i = 0; i < sim_held.n; i++)
        sim_model_submit_now(sim_held.ops[i], now);
    sim_held.n = 0;
}

/* The caller fills the operation after sim_model_enqueue and submits it with
 * sim_model_submit, which consumes the caller's reference. */
void sim_model_submit(struct sim_op *op)
{
    if (sim_holding && sim_op_list_push(&sim_held, op) == 0)
        return;
    sim_model_submit_now(op, sim_now_ns());
}

static void sim_model_submit_now(struct sim_op *op, uint64_t handover)
{
    /* The handover, at the end of the call; the GPU picks the work up a little later. */
    op->launch_ns = handover + sim_cfg.pickup_ns;
    if (!sim_op_try_resolve(op)) {
        op->prev = sim_model.tail;
        op->next = NULL;
        if (sim_model.tail)
            sim_model.tail->next = op;
        else
            sim_model.head = op;
        sim_model.tail = op;
        sim_op_ref(op);
        if (op->kind == SIM_EXT)
            sim_progress_start();
        pthread_cond_signal(&sim_model.wake);
    }
    sim_op_unref(op);
}

CUresult sim_model_wait(struct sim_op *op)
{
    pthread_mutex_lock(&sim_lock);
    sim_truth_flush();
    for (;;) {
        if (!op->resolved)
            sim_model_progress();
        if (op->resolved)
            break;
        pthread_mutex_unlock(&sim_lock);
        sim_sleep_ns(SIM_POLL_NS);
        pthread_mutex_lock(&sim_lock);
    }
    uint64_t end = op->end_ns;
    int failed = op->failed;
    sim_op_unref(op);
    sim_truth_flush();
    pthread_mutex_unlock(&sim_lock);
    sim_sleep_until(end);
    return failed ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
}

CUresult sim_model_query(struct sim_op *op)
{
    if (!op->resolved)
        sim_model_progress();
    sim_truth_flush();
    if (!op->resolved || op->end_ns > sim_now_ns())
        return CUDA_ERROR_NOT_READY;
    return op->failed ? CUDA_ERROR_LAUNCH_TIMEOUT : CUDA_SUCCESS;
}

void sim_model_register_stream(struct CUstream_st *s)
{
    s->prev_all = NULL;
    s->next_all = sim_model.streams;
    if (sim_model.streams)
        sim_model.streams->prev_all = s;
    sim_model.streams = s;
}

void sim_model_unregister_stream(struct CUstream_st *s)
{
    if (s->prev_all)
        s->prev_all->next_all = s->next_all;
    else
        sim_model.streams = s->next_all;
    if (s->next_all)
        s->next_all->prev_all = s->prev_all;
}

size_t sim_model_tails(struct CUctx_st *ctx, struct sim_op **tails, size_t max)
{
    size_t n = 0;
    for (struct CUstream_st *s = sim_model.streams; s && n < max; s = s->next_all) {
        if (s->tail && (!ctx || s->ctx == ctx)) {
            sim_op_ref(s->tail);
            tails[n++] = s->tail;
        }
    }
    return n;
}

uint64_t sim_model_next_stream_id(void)
{
    return sim_model.next_stream_id++;
}

/* fork: the child must not inherit a lock held by another thread, and has no
 * progress thread. */
static void sim_fork_prepare(void)
{
    pthread_mutex_lock(&sim_lock);
}

static void sim_fork_parent(void)
{
    pthread_mutex_unlock(&sim_lock);
}

static void sim_fork_child(void)
{
    sim_model.progress_started = 0;
    pthread_mutex_unlock(&sim_lock);
}

__attribute__((constructor)) static void sim_model_init(void)
{
    pthread_atfork(sim_fork_prepare, sim_fork_parent, sim_fork_child);
}

/* At exit, every operation must be decided so that the truth file is complete;
 * external ones give up by themselves after their timeout. */
__attribute__((destructor)) static void sim_model_drain(void)
{
    pthread_mutex_lock(&sim_lock);
    for (;;) {
        sim_model_progress();
        if (!sim_model.head)
            break;
        pthread_mutex_unlock(&sim_lock);
        sim_sleep_ns(SIM_POLL_NS);
        pthread_mutex_lock(&sim_lock);
    }
    sim_truth_flush();
    pthread_mutex_unlock(&sim_lock);
}
