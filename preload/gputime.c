/* GPU timing: a pool of event pairs, one pair recorded around each timed
 * launch on its stream (start before, end after), read back by the writer
 * thread and mapped onto the host clock through an anchor event recorded on
 * a private idle stream at a known host time, renewed about every second so
 * that float milliseconds keep sub-microsecond precision. Hooks only pop a
 * pair and record two events; creating events, anchors and reading times
 * happen on the writer thread (the first pool is made at the first timed
 * launch, where the program's context is current). */
#include "preload/gpu.h"
#include "formats/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_PAIRS 65536u         /* pairs are numbered from 1 */
#define FIRST_PAIRS 4096u
#define GROW_PAIRS 4096u
#define LOW_PAIRS 1024
#define NANCHORS 16u
#define ANCHOR_EVERY_NS 1000000000u
#define ANCHOR_TRIES 50
#define ANCHOR_WINDOW_NS 1000u

enum { POOL_NONE, POOL_MAKING, POOL_READY, POOL_OFF };

static _Atomic int pool_state;
static _Atomic int closing, closed;
static CUcontext pool_ctx;
int rs_gpu_device = -1;
static CUevent *ev_start, *ev_end;           /* [MAX_PAIRS + 1] */
static _Atomic uint32_t *pair_next;          /* free-list links */
static _Atomic uint64_t free_head;           /* low 32: index; high: ABA tag */
static _Atomic int nfree;
static uint32_t npairs;                      /* created: 1..npairs (writer after the first) */
static CUstream anchor_stream;
static CUevent anchor_pair[NANCHORS][2];    /* the slot's events: one is anchor_ev */
static CUevent anchor_ev[NANCHORS];
static uint64_t anchor_ns[NANCHORS];
static _Atomic uint32_t anchor_gen;          /* current anchor: slot gen % NANCHORS */
static uint64_t anchor_due;
static int writer_ctx_set;
static __thread uint32_t sample_n RS_TLS;

static uint32_t pair_pop(void)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
    for (;;) {
        uint32_t idx = (uint32_t)head;
        if (idx == 0)
            return 0;
        uint32_t next = atomic_load_explicit(&pair_next[idx], memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            atomic_fetch_sub_explicit(&nfree, 1, memory_order_relaxed);
            return idx;
        }
    }
}

static void pair_push(uint32_t idx)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&pair_next[idx], (uint32_t)head, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | idx;
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want, memory_order_release,
                                                  memory_order_relaxed)) {
            atomic_fetch_add_explicit(&nfree, 1, memory_order_relaxed);
            return;
        }
    }
}

/* Creates pairs npairs+1 .. npairs+n in the current context. */
static void pool_grow(uint32_t n)
{
    uint32_t made = 0;
    while (made < n && npairs < MAX_PAIRS) {
        uint32_t i = npairs + 1;
        if (rs_cu.event_create(&ev_start[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            break;
        if (rs_cu.event_create(&ev_end[i], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            break;
        npairs = i;
        pair_push(i);
        made++;
    }
}

static void anchor_renew(void)
{
    uint32_t gen = atomic_load_explicit(&anchor_gen, memory_order_relaxed) + 1;
    uint32_t slot = gen % NANCHORS;
    /* The event's time lies between t0 and t1: record again, into the
     * slot's other event, until that window is narrow (a preempted thread
     * makes it wide), and keep the event of the narrowest. */
    uint64_t best = UINT64_MAX, best_ns = 0;
    int have = -1;                   /* which of the slot's two events is best */
    for (int i = 0; i < ANCHOR_TRIES && best > ANCHOR_WINDOW_NS; i++) {
        int e = have == 0 ? 1 : 0;
        uint64_t t0 = rs_now();
        if (rs_cu.event_record(anchor_pair[slot][e], anchor_stream) != CUDA_SUCCESS)
            return;
        uint64_t t1 = rs_now();
        if (t1 - t0 < best) {
            best = t1 - t0;
            best_ns = t0 + (t1 - t0) / 2;
            have = e;
        }
    }
    anchor_ev[slot] = anchor_pair[slot][have];
    anchor_ns[slot] = best_ns;
    atomic_store_explicit(&anchor_gen, gen, memory_order_release);
    anchor_due = rs_now() + ANCHOR_EVERY_NS;
}

static void at_exit(void)
{
    /* Runs before the driver's own exit handlers (registered earlier):
     * settle what is pending while the driver still answers. */
    atomic_store(&closing, 1);
    rs_writer_flush(0);
    rs_gpu_closed();
}

/* The first pool, made by the first timed launch in the program's context. */
static int pool_make(void)
{
    int expect = POOL_NONE;
    if (!atomic_compare_exchange_strong(&pool_state, &expect, POOL_MAKING))
        return -1;
    CUcontext ctx = NULL;
    if (!rs_cu.event_create || !rs_cu.event_record || !rs_cu.event_query || !rs_cu.elapsed ||
        !rs_cu.stream_create || !rs_cu.ctx_get_current || !rs_cu.ctx_set_current ||
        rs_cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) {
        atomic_store(&pool_state, ctx || !rs_cu.ctx_get_current ? POOL_OFF : POOL_NONE);
        return -1;
    }
    /* From here on the writer calls the driver, whose fds are in the
     * program's fd table. */
    if (rs_writer_share() != 0)
        goto off;
    size_t bytes = (MAX_PAIRS + 1) * (2 * sizeof(CUevent) + sizeof(uint32_t));
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        goto off;
    ev_start = m;
    ev_end = ev_start + MAX_PAIRS + 1;
    pair_next = (_Atomic uint32_t *)(ev_end + MAX_PAIRS + 1);
    if (rs_cu.stream_create(&anchor_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        goto off;
    for (unsigned i = 0; i < NANCHORS; i++)
        if (rs_cu.event_create(&anchor_pair[i][0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            rs_cu.event_create(&anchor_pair[i][1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
            goto off;
    atomic_store(&anchor_gen, NANCHORS - 1);
    anchor_renew();
    if (atomic_load(&anchor_gen) != NANCHORS)
        goto off;
    pool_ctx = ctx;
    CUdevice dev;
    if (rs_cu.ctx_get_device && rs_cu.ctx_get_device(&dev) == CUDA_SUCCESS)
        rs_gpu_device = dev;
    pool_grow(FIRST_PAIRS);
    if (!npairs)
        goto off;
    atexit(at_exit);
    atomic_store(&pool_state, POOL_READY);
    return 0;
off:
    rs_notice("cannot set up GPU timing events; launches are recorded without GPU times");
    atomic_store(&pool_state, POOL_OFF);
    return -1;
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
    int st = atomic_load_explicit(&pool_state, memory_order_acquire);
    if (RS_UNLIKELY(st != POOL_READY)) {
        if (st != POOL_NONE || pool_make() != 0)
            return 0;
    }
    if (atomic_load_explicit(&closed, memory_order_relaxed))
        return 0;
    uint32_t pair = pair_pop();
    if (RS_UNLIKELY(atomic_load_explicit(&nfree, memory_order_relaxed) < LOW_PAIRS)) {
        /* The writer reads pairs back and grows the pool on its passes,
         * which full record blocks alone start only now and then. */
        int e = errno;
        rs_writer_kick();
        errno = e;
    }
    if (!pair)
        return 0;
    *anchor = atomic_load_explicit(&anchor_gen, memory_order_acquire);
    __typeof__(cuEventRecord) *rec = ptsz && rs_cu.event_record_ptsz ? rs_cu.event_record_ptsz : rs_cu.event_record;
    if (rec(ev_start[pair], s) != CUDA_SUCCESS) {
        pair_push(pair);
        return 0;
    }
    return pair;
}

uint32_t rs_gpu_end(uint32_t pair, CUstream s, int ptsz, int ok)
{
    if (!pair)
        return 0;
    __typeof__(cuEventRecord) *rec = ptsz && rs_cu.event_record_ptsz ? rs_cu.event_record_ptsz : rs_cu.event_record;
    if (ok && rec(ev_end[pair], s) == CUDA_SUCCESS)
        return pair;
    /* The start event may still be pending on the stream; re-recording the
     * pair later is fine (a record replaces the event's state). */
    pair_push(pair);
    return 0;
}

/* Makes the pool's context current on the writer thread, once. */
static int writer_ctx(void)
{
    if (writer_ctx_set)
        return writer_ctx_set > 0;
    writer_ctx_set = rs_cu.ctx_set_current(pool_ctx) == CUDA_SUCCESS ? 1 : -1;
    if (writer_ctx_set > 0 && rs_cu.exchange_capture_mode) {
        /* Other threads' global-mode captures must not forbid our queries. */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        rs_cu.exchange_capture_mode(&mode);
    }
    return writer_ctx_set > 0;
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
    if (atomic_load(&pool_state) != POOL_READY || atomic_load(&closed) || pair == 0 ||
        pair > npairs || !writer_ctx())
        return -1;
    CUresult q = rs_cu.event_query(ev_end[pair]);
    if (q == CUDA_ERROR_NOT_READY)
        return 0;
    uint32_t gen = atomic_load_explicit(&anchor_gen, memory_order_relaxed);
    float ms0, ms1;
    if (q == CUDA_SUCCESS && gen - anchor >= NANCHORS) {
        uint32_t slot = gen % NANCHORS;
        float span;
        if (elapsed_signed(&ms1, anchor_ev[slot], ev_end[pair]) != 0 ||
            rs_cu.elapsed(&span, ev_start[pair], ev_end[pair]) != CUDA_SUCCESS || span < 0) {
            pair_push(pair);
            return -1;
        }
        int64_t e = (int64_t)anchor_ns[slot] + (int64_t)((double)ms1 * 1e6 + (ms1 < 0 ? -0.5 : 0.5));
        int64_t b = e - (int64_t)((double)span * 1e6 + 0.5);
        pair_push(pair);
        if (b < 0)
            return -1;
        *start = (uint64_t)b;
        *end = (uint64_t)e;
        return 1;
    }
    uint32_t slot = anchor % NANCHORS;
    if (q != CUDA_SUCCESS || rs_cu.elapsed(&ms0, anchor_ev[slot], ev_start[pair]) != CUDA_SUCCESS ||
        rs_cu.elapsed(&ms1, anchor_ev[slot], ev_end[pair]) != CUDA_SUCCESS || ms0 < 0 || ms1 < ms0) {
        pair_push(pair);
        return -1;
    }
    *start = anchor_ns[slot] + (uint64_t)((double)ms0 * 1e6 + 0.5);
    *end = anchor_ns[slot] + (uint64_t)((double)ms1 * 1e6 + 0.5);
    pair_push(pair);
    return 1;
}

void rs_gpu_tick(void)
{
    if (atomic_load(&pool_state) != POOL_READY || atomic_load(&closed) || !writer_ctx())
        return;
    /* A capture in progress: no driver calls that could disturb it. */
    if (atomic_load(&rs_captures) > 0)
        return;
    if (rs_now() >= anchor_due)
        anchor_renew();
    if (atomic_load(&nfree) < LOW_PAIRS && npairs < MAX_PAIRS)
        pool_grow(GROW_PAIRS);
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
    /* CUDA does not survive fork: the child never touches the parent's pool. */
    if (atomic_load(&pool_state) != POOL_NONE)
        atomic_store(&pool_state, POOL_OFF);
    writer_ctx_set = 0;
    rs_gpuinfo_forked();
    rs_func_cache_forked();
}
