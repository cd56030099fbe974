/* GPU timing: a pool of event pairs per CUDA context, one pair recorded
 * around each timed launch on its stream (start before, end after), read
 * back by the writer thread and mapped onto the host clock through an
 * anchor event of the same context, recorded on a private idle stream at a
 * known host time and renewed about every second so that float milliseconds
 * keep sub-microsecond precision. Hooks only pop a pair and record two
 * events; a context's pool is made by its first timed launch (the context
 * pushed current), anchors and reading times happen on the writer thread.
 * Destroying or resetting a context settles its pool first (rs_gpu_ctx_gone). */
#include "preload/gpu.h"
#include "formats/trace.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_PAIRS 65536u         /* pairs are numbered from 1 */
#define PAIR_BITS 17u            /* a pair id: pool slot << PAIR_BITS | pair */
#define MAX_POOLS 32u            /* contexts timed at once */
#define FIRST_PAIRS 4096u
#define GROW_PAIRS 4096u
#define LOW_PAIRS 1024
#define NANCHORS 16u
#define ANCHOR_EVERY_NS 1000000000u
#define ANCHOR_TRIES 50
#define ANCHOR_WINDOW_NS 1000u

/* A slot: NONE (free), MAKING, READY, DRAINING (its context is going: no new
 * pairs, the writer reads the pending ones), OFF (no timing in its context). */
enum { POOL_NONE, POOL_MAKING, POOL_READY, POOL_DRAINING, POOL_OFF };

struct pool {
    _Atomic uintptr_t ctx;                   /* the context; 0 when free */
    _Atomic int state;
    _Atomic int busy;                        /* the writer is calling the driver for it */
    int device;
    CUevent *ev_start, *ev_end;              /* [MAX_PAIRS + 1], mapped once per slot */
    _Atomic uint32_t *pair_next;             /* free-list links */
    _Atomic uint64_t free_head;              /* low 32: index; high: ABA tag */
    _Atomic int nfree;
    uint32_t npairs;                         /* created: 1..npairs */
    CUstream anchor_stream;
    CUevent anchor_pair[NANCHORS][2];        /* the slot's events: one is anchor_ev */
    CUevent anchor_ev[NANCHORS];
    uint64_t anchor_ns[NANCHORS];
    _Atomic uint32_t anchor_gen;             /* current anchor: slot gen % NANCHORS */
    uint32_t first_gen;                      /* this context's first anchor: older ones are a
                                              * destroyed context's, whose pairs are not ours */
    uint64_t anchor_due;
};

static struct pool pools[MAX_POOLS];
/* Slots [0, pools_used) have been made at least once: the writer's tick
 * and the other sweeps look at no others, so that a process that never
 * times a launch never touches the pools' pages (each a page fault at
 * start-up). */
static _Atomic uint32_t pools_used;
static _Atomic uint32_t pools_epoch;         /* bumped when a slot is freed */
static _Atomic int made_once, noticed;
static _Atomic int closing, closed;
int rs_gpu_device = -1;
static __thread uint32_t sample_n RS_TLS;
/* The calling thread's last context and its pool slot / device, valid while
 * pools_epoch is unchanged. */
static __thread struct {
    CUcontext ctx;
    uint32_t epoch, slot;
} tl_pool RS_TLS;
static __thread struct {
    CUcontext ctx;
    uint32_t epoch;
    int device;
} tl_dev RS_TLS;
/* The writer thread's current context (it may start over as a new thread). */
static __thread struct {
    CUcontext ctx;
    uint32_t epoch;
    int mode_set;
} writer_cur RS_TLS;

static uint32_t pair_pop(struct pool *p)
{
    uint64_t head = atomic_load_explicit(&p->free_head, memory_order_acquire);
    for (;;) {
        uint32_t idx = (uint32_t)head;
        if (idx == 0)
            return 0;
        uint32_t next = atomic_load_explicit(&p->pair_next[idx], memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&p->free_head, &head, want, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            atomic_fetch_sub_explicit(&p->nfree, 1, memory_order_relaxed);
            return idx;
        }
    }
}

static void pair_push(struct pool *p, uint32_t idx)
{
    uint64_t head = atomic_load_explicit(&p->free_head, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&p->pair_next[idx], (uint32_t)head, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | idx;
        if (atomic_compare_exchange_weak_explicit(&p->free_head, &head, want, memory_order_release,
                                                  memory_order_relaxed)) {
            atomic_fetch_add_explicit(&p->nfree, 1, memory_order_relaxed);
            return;
        }
    }
}

/* Creates pairs npairs+1 .. npairs+n; p's context is current. */
static void pool_grow(struct pool *p, uint32_t n)
{
    uint32_t made = 0;
    while (made < n && p->npairs < MAX_PAIRS) {
        uint32_t i = p->npairs + 1;
        if (rs_cu.event_create(&p->ev_start[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            break;
        if (rs_cu.event_create(&p->ev_end[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            break;
        p->npairs = i;
        pair_push(p, i);
        made++;
    }
}

static void anchor_renew(struct pool *p)
{
    uint32_t gen = atomic_load_explicit(&p->anchor_gen, memory_order_relaxed) + 1;
    uint32_t slot = gen % NANCHORS;
    /* The event's time lies between t0 and t1: record again, into the
     * slot's other event, until that window is narrow (a preempted thread
     * makes it wide), and keep the event of the narrowest. */
    uint64_t best = UINT64_MAX, best_ns = 0;
    int have = -1;                   /* which of the slot's two events is best */
    for (int i = 0; i < ANCHOR_TRIES && best > ANCHOR_WINDOW_NS; i++) {
        int e = have == 0 ? 1 : 0;
        uint64_t t0 = rs_now();
        if (rs_cu.event_record(p->anchor_pair[slot][e], p->anchor_stream) != CUDA_SUCCESS)
            return;
        uint64_t t1 = rs_now();
        if (t1 - t0 < best) {
            best = t1 - t0;
            best_ns = t0 + (t1 - t0) / 2;
            have = e;
        }
    }
    p->anchor_ev[slot] = p->anchor_pair[slot][have];
    p->anchor_ns[slot] = best_ns;
    atomic_store_explicit(&p->anchor_gen, gen, memory_order_release);
    p->anchor_due = rs_now() + ANCHOR_EVERY_NS;
}

static void at_exit(void)
{
    /* Runs before the driver's own exit handlers (registered earlier):
     * settle what is pending while the driver still answers. */
    atomic_store(&closing, 1);
    rs_writer_flush(0);
    rs_gpu_closed();
}

static int have_driver(void)
{
    return rs_cu.event_create && rs_cu.event_record && rs_cu.event_query && rs_cu.elapsed &&
           rs_cu.stream_create && rs_cu.ctx_get_current && rs_cu.ctx_set_current && rs_cu.ctx_push &&
           rs_cu.ctx_pop;
}

/* Events, anchors and the first pairs of slot p for the context the caller
 * pushed current. Returns 0 or -1. */
static int pool_fill(struct pool *p)
{
    /* From here on the writer calls the driver, whose fds are in the
     * program's fd table. */
    if (rs_writer_share() != 0)
        return -1;
    if (!p->ev_start) {
        size_t bytes = (MAX_PAIRS + 1) * (2 * sizeof(CUevent) + sizeof(uint32_t));
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        p->ev_start = m;
        p->ev_end = p->ev_start + MAX_PAIRS + 1;
        p->pair_next = (_Atomic uint32_t *)(p->ev_end + MAX_PAIRS + 1);
    }
    atomic_store(&p->free_head, 0);
    atomic_store(&p->nfree, 0);
    p->npairs = 0;
    if (rs_cu.stream_create(&p->anchor_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return -1;
    for (unsigned i = 0; i < NANCHORS; i++)
        if (rs_cu.event_create(&p->anchor_pair[i][0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            rs_cu.event_create(&p->anchor_pair[i][1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            return -1;
    /* Anchors of this context begin past every one a pair of this slot's
     * previous context may still carry. */
    uint32_t start = atomic_load(&p->anchor_gen) + 2 * NANCHORS;
    start += NANCHORS - 1 - start % NANCHORS;
    p->first_gen = start + 1;
    atomic_store(&p->anchor_gen, start);
    anchor_renew(p);
    if (atomic_load(&p->anchor_gen) != p->first_gen)
        return -1;
    CUdevice dev = -1;
    p->device = rs_cu.ctx_get_device && rs_cu.ctx_get_device(&dev) == CUDA_SUCCESS ? dev : -1;
    pool_grow(p, FIRST_PAIRS);
    return p->npairs ? 0 : -1;
}

/* The pool of context ctx, made on its first timed launch; NULL while none
 * can be had. */
static struct pool *pool_of(CUcontext ctx)
{
    uint32_t epoch = atomic_load_explicit(&pools_epoch, memory_order_acquire);
    if (RS_LIKELY(tl_pool.ctx == ctx && tl_pool.epoch == epoch)) {
        struct pool *p = &pools[tl_pool.slot];
        return atomic_load_explicit(&p->state, memory_order_acquire) == POOL_READY ? p : NULL;
    }
    struct pool *p = NULL, *free_slot = NULL;
    for (uint32_t i = 0; i < MAX_POOLS && !p; i++) {
        uintptr_t k = atomic_load(&pools[i].ctx);
        if (k == (uintptr_t)ctx)
            p = &pools[i];
        else if (!k && !free_slot && atomic_load(&pools[i].state) == POOL_NONE)
            free_slot = &pools[i];
    }
    if (!p) {
        if (!free_slot || !have_driver())
            return NULL;
        int expect = POOL_NONE;
        if (!atomic_compare_exchange_strong(&free_slot->state, &expect, POOL_MAKING))
            return NULL;
        p = free_slot;
        uint32_t used = atomic_load(&pools_used), want = (uint32_t)(p - pools) + 1;
        while (used < want && !atomic_compare_exchange_weak(&pools_used, &used, want))
            ;
        atomic_store(&p->ctx, (uintptr_t)ctx);
        int ok = rs_cu.ctx_push(ctx) == CUDA_SUCCESS;
        if (ok) {
            ok = pool_fill(p) == 0;
            CUcontext popped;
            rs_cu.ctx_pop(&popped);
        }
        if (!ok) {
            if (!atomic_exchange(&noticed, 1))
                rs_notice("cannot set up GPU timing events; launches are recorded without GPU times");
            atomic_store(&p->state, POOL_OFF);
            return NULL;
        }
        if (!atomic_exchange(&made_once, 1)) {
            rs_gpu_device = p->device;
            atexit(at_exit);
        }
        atomic_store(&p->state, POOL_READY);
    }
    tl_pool.ctx = ctx;
    tl_pool.epoch = epoch;
    tl_pool.slot = (uint32_t)(p - pools);
    return atomic_load_explicit(&p->state, memory_order_acquire) == POOL_READY ? p : NULL;
}

static CUresult record(CUevent e, CUstream s, int ptsz)
{
    __typeof__(cuEventRecord) *rec = ptsz && rs_cu.event_record_ptsz ? rs_cu.event_record_ptsz : rs_cu.event_record;
    return rec(e, s);
}

/* A pair of pool p with its start event recorded on s; 0 when none (*r:
 * the record's result). */
static uint32_t begin_in(struct pool *p, CUstream s, int ptsz, uint32_t *anchor, CUresult *r)
{
    uint32_t pair = pair_pop(p);
    if (RS_UNLIKELY(atomic_load_explicit(&p->nfree, memory_order_relaxed) < LOW_PAIRS)) {
        /* The writer reads pairs back and grows the pool on its passes,
         * which full record blocks alone start only now and then. */
        int e = errno;
        rs_writer_kick();
        errno = e;
    }
    if (!pair)
        return 0;
    *anchor = atomic_load_explicit(&p->anchor_gen, memory_order_acquire);
    *r = record(p->ev_start[pair], s, ptsz);
    if (*r != CUDA_SUCCESS) {
        pair_push(p, pair);
        return 0;
    }
    return (uint32_t)(p - pools) << PAIR_BITS | pair;
}

uint32_t rs_gpu_begin(CUstream s, int ptsz, uint32_t *anchor, uint8_t *flags)
{
    if (RS_UNLIKELY(atomic_load_explicit(&rs_captures, memory_order_relaxed) > 0)) {
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        __typeof__(cuStreamIsCapturing) *f = ptsz ? rs_cu.is_capturing_ptsz : rs_cu.is_capturing;
        if (f && f(s, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE) {
            *flags |= RSF_GPUF_CAPTURED;
            return 0;
        }
    }
    int every = rs_cfg.gpu_timing;
    if (every != 1 && (every == 0 || sample_n++ % (unsigned)every != 0))
        return 0;
    if (atomic_load_explicit(&closed, memory_order_relaxed))
        return 0;
    CUcontext ctx = NULL;
    if (!rs_cu.ctx_get_current || rs_cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx)
        return 0;
    struct pool *p = pool_of(ctx);
    CUresult r = CUDA_ERROR_INVALID_CONTEXT;
    uint32_t pair = p ? begin_in(p, s, ptsz, anchor, &r) : 0;
    CUcontext sctx = NULL;
    /* A stream of another context than the current one: events of that
     * context's pool (the driver refuses one of another context's). */
    if (!pair && r == CUDA_ERROR_INVALID_HANDLE && (uintptr_t)s > 2 && rs_cu.stream_get_ctx &&
        rs_cu.stream_get_ctx(s, &sctx) == CUDA_SUCCESS && sctx && sctx != ctx && (p = pool_of(sctx)) != NULL)
        pair = begin_in(p, s, ptsz, anchor, &r);
    return pair;
}

uint32_t rs_gpu_end(uint32_t pair, CUstream s, int ptsz, int ok)
{
    if (!pair)
        return 0;
    struct pool *p = &pools[pair >> PAIR_BITS];
    uint32_t idx = pair & ((1u << PAIR_BITS) - 1);
    if (ok && record(p->ev_end[idx], s, ptsz) == CUDA_SUCCESS)
        return pair;
    /* The start event may still be pending on the stream; re-recording the
     * pair later is fine (a record replaces the event's state). */
    pair_push(p, idx);
    return 0;
}

int rs_gpu_pair_device(uint32_t pair)
{
    return pools[(pair >> PAIR_BITS) % MAX_POOLS].device;
}

int rs_gpu_here(void)
{
    CUcontext ctx = NULL;
    if (!rs_cu.ctx_get_current || rs_cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx)
        return rs_gpu_device;
    uint32_t epoch = atomic_load_explicit(&pools_epoch, memory_order_acquire);
    if (RS_LIKELY(tl_dev.ctx == ctx && tl_dev.epoch == epoch))
        return tl_dev.device;
    CUdevice dev = -1;
    if (!rs_cu.ctx_get_device || rs_cu.ctx_get_device(&dev) != CUDA_SUCCESS)
        return rs_gpu_device;
    rs_gpu_device_seen(dev);
    tl_dev.ctx = ctx;
    tl_dev.epoch = epoch;
    tl_dev.device = dev;
    return dev;
}

/* The writer takes pool p for driver calls (draining: also one whose
 * context is going); NULL when p is not in that state. Paired with
 * rs_gpu_ctx_gone, which marks the pool gone and then waits for busy to
 * clear (both sequentially consistent). */
static struct pool *pool_enter(struct pool *p, int draining)
{
    atomic_store(&p->busy, 1);
    int st = atomic_load(&p->state);
    if (st == POOL_READY || (draining && st == POOL_DRAINING))
        return p;
    atomic_store(&p->busy, 0);
    return NULL;
}

static void pool_leave(struct pool *p)
{
    atomic_store(&p->busy, 0);
}

/* Makes p's context current on the writer thread. */
static int writer_use(struct pool *p)
{
    CUcontext ctx = (CUcontext)atomic_load(&p->ctx);
    uint32_t epoch = atomic_load(&pools_epoch);
    if (writer_cur.ctx == ctx && writer_cur.epoch == epoch)
        return 1;
    if (rs_cu.ctx_set_current(ctx) != CUDA_SUCCESS)
        return 0;
    writer_cur.ctx = ctx;
    writer_cur.epoch = epoch;
    if (!writer_cur.mode_set && rs_cu.exchange_capture_mode) {
        /* Other threads' global-mode captures must not forbid our queries. */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        rs_cu.exchange_capture_mode(&mode);
        writer_cur.mode_set = 1;
    }
    return 1;
}

/* ms from event a to event b, negative when b came first: asked the other
 * way round too, for a driver that will not give a negative time. */
static int elapsed_signed(float *ms, CUevent a, CUevent b)
{
    if (rs_cu.elapsed(ms, a, b) == CUDA_SUCCESS)
        return 0;
    if (rs_cu.elapsed(ms, b, a) != CUDA_SUCCESS)
        return -1;
    *ms = -*ms;
    return 0;
}

/* A pair waits as long as its work does (a collective held up for minutes
 * by a straggler or a checkpoint): while its anchor still holds, it is
 * mapped through that anchor; once the anchor has been renewed away, its
 * end is mapped through the newest anchor and its start is the end less
 * the pair's own elapsed time (float ms: about 2 us lost over 20 s, far
 * less than such a wait). Nothing is kept for it but the pair itself. */
int rs_gpu_times(uint32_t pair, uint32_t anchor, uint64_t *start, uint64_t *end)
{
    *start = *end = 0;
    uint32_t slot = pair >> PAIR_BITS, idx = pair & ((1u << PAIR_BITS) - 1);
    if (atomic_load(&closed) || idx == 0 || slot >= MAX_POOLS)
        return -1;
    struct pool *p = pool_enter(&pools[slot], 1);
    if (!p)
        return -1;               /* its context is gone, and the pair with it */
    int r = -1;
    uint32_t gen = atomic_load_explicit(&p->anchor_gen, memory_order_relaxed);
    if (idx > p->npairs || anchor - p->first_gen > gen - p->first_gen)
        goto out;                /* a pair of the slot's previous context */
    if (!writer_use(p)) {
        pair_push(p, idx);
        goto out;
    }
    CUresult q = rs_cu.event_query(p->ev_end[idx]);
    if (q == CUDA_ERROR_NOT_READY) {
        r = 0;
        goto out;
    }
    float ms0, ms1;
    if (q == CUDA_SUCCESS && gen - anchor >= NANCHORS) {
        uint32_t a = gen % NANCHORS;
        float span;
        if (elapsed_signed(&ms1, p->anchor_ev[a], p->ev_end[idx]) != 0 ||
            rs_cu.elapsed(&span, p->ev_start[idx], p->ev_end[idx]) != CUDA_SUCCESS || span < 0) {
            pair_push(p, idx);
            goto out;
        }
        int64_t e = (int64_t)p->anchor_ns[a] + (int64_t)((double)ms1 * 1e6 + (ms1 < 0 ? -0.5 : 0.5));
        int64_t b = e - (int64_t)((double)span * 1e6 + 0.5);
        pair_push(p, idx);
        if (b < 0)
            goto out;
        *start = (uint64_t)b;
        *end = (uint64_t)e;
        r = 1;
        goto out;
    }
    uint32_t a = anchor % NANCHORS;
    if (q != CUDA_SUCCESS || rs_cu.elapsed(&ms0, p->anchor_ev[a], p->ev_start[idx]) != CUDA_SUCCESS ||
        rs_cu.elapsed(&ms1, p->anchor_ev[a], p->ev_end[idx]) != CUDA_SUCCESS || ms0 < 0 || ms1 < ms0) {
        pair_push(p, idx);
        goto out;
    }
    *start = p->anchor_ns[a] + (uint64_t)((double)ms0 * 1e6 + 0.5);
    *end = p->anchor_ns[a] + (uint64_t)((double)ms1 * 1e6 + 0.5);
    pair_push(p, idx);
    r = 1;
out:
    pool_leave(p);
    return r;
}

void rs_gpu_tick(void)
{
    /* A capture in progress: no driver calls that could disturb it. */
    if (atomic_load(&closed) || atomic_load(&rs_captures) > 0)
        return;
    for (uint32_t i = 0, n = atomic_load(&pools_used); i < n; i++) {
        struct pool *p = pool_enter(&pools[i], 0);
        if (!p)
            continue;
        if (writer_use(p)) {
            if (rs_now() >= p->anchor_due)
                anchor_renew(p);
            if (atomic_load(&p->nfree) < LOW_PAIRS && p->npairs < MAX_PAIRS)
                pool_grow(p, GROW_PAIRS);
        }
        pool_leave(p);
    }
}

void rs_gpu_ctx_gone(CUcontext ctx)
{
    if (!ctx)
        return;
    for (uint32_t i = 0, n = atomic_load(&pools_used); i < n; i++) {
        struct pool *p = &pools[i];
        if (atomic_load(&p->ctx) != (uintptr_t)ctx)
            continue;
        int st = POOL_READY;
        if (atomic_compare_exchange_strong(&p->state, &st, POOL_DRAINING) && !atomic_load(&closed)) {
            /* What was enqueued finishes (the driver would wait for it
             * too), then the writer reads the pairs while the events live. */
            if (rs_cu.ctx_push(ctx) == CUDA_SUCCESS) {
                CUcontext popped;
                if (rs_cu.ctx_sync)
                    rs_cu.ctx_sync();
                rs_cu.ctx_pop(&popped);
            }
            rs_writer_flush(0);
        } else if (st != POOL_OFF) {
            continue;            /* being made by another thread: not ours to free */
        }
        /* The driver frees the events with the context: none is used again. */
        atomic_store(&p->state, POOL_MAKING);
        while (atomic_load(&p->busy))
            sched_yield();
        atomic_store(&p->ctx, 0);
        atomic_fetch_add(&pools_epoch, 1);
        atomic_store(&p->state, POOL_NONE);
    }
}

int rs_gpu_closing(void)
{
    return atomic_load(&closing) || atomic_load(&closed);
}

void rs_gpu_closed(void)
{
    atomic_store(&closed, 1);
}

void rs_gpu_forked(void)
{
    /* CUDA does not survive fork: the child never touches the parent's pools. */
    for (uint32_t i = 0, n = atomic_load(&pools_used); i < n; i++)
        if (atomic_load(&pools[i].state) != POOL_NONE)
            atomic_store(&pools[i].state, POOL_OFF);
    writer_cur.ctx = NULL;
    writer_cur.mode_set = 0;
    rs_gpuinfo_forked();
    rs_func_cache_forked();
}
