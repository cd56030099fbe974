/* Per-thread record buffers. A fixed pool of blocks (RINGSIDE_BUFFER_MB in
 * all) is shared out to threads: each thread appends to its own block and
 * publishes with a release store; full blocks go on a lock-free list to the
 * writer thread, which also reads the committed part of blocks still in use
 * once per flush interval, and returns drained blocks to the free list. */
#include "preload/agent.h"

#include <errno.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RS_MAX_THREADS 4096
#define RS_NIL 0u /* block index 0 means "none"; blocks are numbered from 1 */


__thread struct rs_thread_hot rs_th RS_TLS;

/* Points this thread's write cursor at the start of b (NULL: no block). */
static void cursor_set(struct rs_block *b)
{
    rs_th.wp = b ? b->data : NULL;
    rs_th.wend = b ? b->data + RS_BLOCK_SIZE : NULL;
    rs_th.wcommitted = b ? &b->committed : NULL;
}

struct rs_hot rs_hot = { .wait_ticks = UINT64_MAX };
_Atomic uint32_t rs_writer_wake;
_Atomic int rs_writer_sleeping;

#define KICK_BLOCKS 8u /* see rs_ring_init */

static struct rs_block *blocks;       /* blocks[1..nblocks] */
static uint32_t nblocks;
static uint8_t *pool;                 /* block data, nblocks x RS_BLOCK_SIZE */
static struct rs_thread *threads;     /* RS_MAX_THREADS slots */
static _Atomic unsigned threads_used; /* slots [0, threads_used) have been taken */
static _Atomic uint64_t free_head;    /* low 32 bits: index; high: ABA tag */
/* Blocks from here to nblocks were never used: free, their metadata not
 * written yet (a process that records little touches few of its pages). */
static _Atomic uint32_t fresh_next;
static _Atomic uint32_t full_head;
static _Atomic uint32_t full_pending; /* blocks handed over since the writer's last pass */
static uint32_t kick_at;              /* wake the writer at this many handed over */
static _Atomic uint64_t dropped_all, dropped_io, dropped_gpu, dropped_nccl, dropped_samples, dropped_ranges;
static pthread_key_t thread_key;
static int key_made;

#ifdef RS_RING_CHECK
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void rs_ring_check_failed(int kind)
{
    void *pc = __builtin_return_address(0);
    Dl_info di = { 0 };
    dladdr(pc, &di);
    char b[512];
    /* static functions have no dynamic symbol: addr2line -f -e FILE OFFSET */
    int n = snprintf(b, sizeof b, "ringside check: a record of kind %d reserved without the guard, from %s+%#lx\n",
                     kind, di.dli_fname ? di.dli_fname : "?",
                     (unsigned long)((char *)pc - (char *)di.dli_fbase));
    if (n > 0)
        (void)!write(2, b, (size_t)n); /* aborting anyway: nothing to do if it fails */
    abort();
}
#endif

static void count_drop(int kind)
{
    atomic_fetch_add_explicit(&dropped_all, 1, memory_order_relaxed);
    if (kind == RS_REC_IO || kind == RS_REC_IO_LONG || kind == RS_REC_OPEN)
        atomic_fetch_add_explicit(&dropped_io, 1, memory_order_relaxed);
    else if (kind == RS_REC_GPU || kind == RS_REC_KERNEL || kind == RS_REC_SYNC || kind == RS_REC_MEM)
        atomic_fetch_add_explicit(&dropped_gpu, 1, memory_order_relaxed);
    else if (kind == RS_REC_COLL || kind == RS_REC_COMM)
        atomic_fetch_add_explicit(&dropped_nccl, 1, memory_order_relaxed);
    else if (kind >= 48 && kind < 80)
        atomic_fetch_add_explicit(&dropped_samples, 1, memory_order_relaxed);
    else if (kind == RS_REC_RANGE)
        atomic_fetch_add_explicit(&dropped_ranges, 1, memory_order_relaxed);
}

void rs_ranges_lost(uint64_t n)
{
    atomic_fetch_add_explicit(&dropped_ranges, n, memory_order_relaxed);
}

uint64_t rs_ring_dropped(void) { return atomic_load(&dropped_all); }
uint64_t rs_ring_dropped_io(void) { return atomic_load(&dropped_io); }
uint64_t rs_ring_dropped_gpu(void) { return atomic_load(&dropped_gpu); }
uint64_t rs_ring_dropped_nccl(void) { return atomic_load(&dropped_nccl); }
uint64_t rs_ring_dropped_samples(void) { return atomic_load(&dropped_samples); }
uint64_t rs_ring_dropped_ranges(void) { return atomic_load(&dropped_ranges); }

static uint32_t free_pop(void)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
    for (;;) {
        uint32_t idx = (uint32_t)head;
        if (idx == RS_NIL) {
            /* never past nblocks: a ring out of blocks is asked again and
             * again, and a count that kept growing would wrap */
            uint32_t fresh = atomic_load_explicit(&fresh_next, memory_order_relaxed);
            while (fresh <= nblocks && !atomic_compare_exchange_weak_explicit(&fresh_next, &fresh, fresh + 1,
                                                                               memory_order_relaxed,
                                                                               memory_order_relaxed))
                ;
            if (fresh > nblocks)
                return RS_NIL;
            blocks[fresh].data = pool + (size_t)(fresh - 1) * RS_BLOCK_SIZE;
            blocks[fresh].consumed = 0;
            atomic_store_explicit(&blocks[fresh].committed, 0, memory_order_relaxed);
            return fresh;
        }
        uint32_t next = atomic_load_explicit(&blocks[idx].next, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want,
                                                  memory_order_acq_rel, memory_order_acquire))
            return idx;
    }
}

static void free_push(uint32_t idx)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&blocks[idx].next, (uint32_t)head, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | idx;
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want,
                                                  memory_order_release, memory_order_relaxed))
            return;
    }
}

static void full_push(uint32_t idx)
{
    uint32_t head = atomic_load_explicit(&full_head, memory_order_relaxed);
    do
        atomic_store_explicit(&blocks[idx].next, head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&full_head, &head, idx,
                                                  memory_order_release, memory_order_relaxed));
}

void rs_writer_kick(void)
{
    atomic_fetch_add_explicit(&rs_writer_wake, 1, memory_order_release);
    if (atomic_load_explicit(&rs_writer_sleeping, memory_order_acquire))
        syscall(SYS_futex, &rs_writer_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline uint32_t block_index(const struct rs_block *b)
{
    return (uint32_t)(b - blocks);
}

/* Hands the owner's full block to the writer and takes a fresh one. */
static struct rs_block *rotate(struct rs_thread *t)
{
    struct rs_block *old = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (old) {
        atomic_fetch_add_explicit(&t->unread, 1, memory_order_relaxed);
        atomic_store_explicit(&t->cur, NULL, memory_order_release);
        full_push(block_index(old));
        if (atomic_fetch_add_explicit(&full_pending, 1, memory_order_relaxed) + 1 >= kick_at)
            rs_writer_kick();
    }
    uint32_t idx = free_pop();
    if (idx == RS_NIL) {
        rs_writer_kick();
        cursor_set(NULL);
        return NULL;
    }
    struct rs_block *b = &blocks[idx];
    b->tid = t->tid;
    b->slot = (uint32_t)(t - threads);
    atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
    cursor_set(b);
    /* The start of the block, which no earlier record prefetched (rs_publish). */
    for (uint32_t off = 0; off < RS_PREFETCH_AHEAD; off += 64)
        rs_prefetch_write(b->data + off);
    atomic_store_explicit(&t->cur, b, memory_order_release);
    return b;
}

/* At thread exit: the thread's block goes to the writer, its slot is freed. */
static void thread_gone(void *arg)
{
    struct rs_thread *t = arg;
    struct rs_block *b = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (b) {
        atomic_fetch_add_explicit(&t->unread, 1, memory_order_relaxed);
        atomic_store_explicit(&t->cur, NULL, memory_order_release);
        full_push(block_index(b));
    }
    atomic_store_explicit(&t->state, RS_THREAD_FREE, memory_order_release);
    rs_th.self = NULL;
    cursor_set(NULL);
}

static struct rs_thread *thread_register(void)
{
    for (unsigned i = 0; i < RS_MAX_THREADS; i++) {
        int expect = RS_THREAD_FREE;
        struct rs_thread *t = &threads[i];
        if (atomic_load_explicit(&t->state, memory_order_relaxed) != RS_THREAD_FREE ||
            !atomic_compare_exchange_strong(&t->state, &expect, RS_THREAD_LIVE))
            continue;
        unsigned used = atomic_load_explicit(&threads_used, memory_order_relaxed);
        while (used <= i && !atomic_compare_exchange_weak(&threads_used, &used, i + 1))
            ;
        t->tid = (uint32_t)syscall(SYS_gettid);
        cursor_set(NULL);
        atomic_store_explicit(&t->cur, NULL, memory_order_relaxed);
        if (key_made)
            pthread_setspecific(thread_key, t);
        rs_th.self = t;
        return t;
    }
    return NULL;
}

void rs_ring_threads(void (*fn)(void *arg, struct rs_thread *t), void *arg)
{
    unsigned used = atomic_load(&threads_used);
    for (unsigned i = 0; threads && i < used && i < RS_MAX_THREADS; i++)
        if (atomic_load_explicit(&threads[i].state, memory_order_acquire) == RS_THREAD_LIVE)
            fn(arg, &threads[i]);
}

static void *reserve_slow(size_t size, int kind)
{
    struct rs_thread *t = rs_th.self;
    if (!t && !(t = thread_register())) {
        count_drop(kind);
        return NULL;
    }
    /* A full block goes to the writer; a thread without a block (its
     * cursor is NULL) tries the free list again. */
    if ((size_t)(rs_th.wend - rs_th.wp) < size && (size > RS_BLOCK_SIZE || !rotate(t))) {
        count_drop(kind);
        return NULL;
    }
    return rs_th.wp;
}

/* The hooks call this between the program's call and returning its result,
 * without saving errno themselves: the writer's wake-up and a new thread's
 * registration must not change it. */
void *rs_reserve_slow(size_t size, int kind)
{
    int e = errno;
    void *p = reserve_slow(size, kind);
    errno = e;
    return p;
}

static void pool_fill(void)
{
    atomic_store(&free_head, RS_NIL);
    atomic_store(&full_head, RS_NIL);
    atomic_store(&fresh_next, 1);
}

int rs_ring_init(void)
{
    if (blocks)
        return 0; /* a forked child's, set up by its parent */
#if defined(__x86_64__)
    unsigned a, b, c, d;
    rs_hot.prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & bit_PRFCHW);
#endif
    nblocks = (uint32_t)(rs_cfg.buffer_bytes / RS_BLOCK_SIZE);
    if (nblocks < 4)
        nblocks = 4;
    /* The writer is woken once KICK_BLOCKS blocks wait (fewer in a small
     * pool), or none is free. Blocks are reused last-freed first, so the
     * memory the threads write to is about the blocks in flight: waking it
     * at 8 (512 KiB) rather than at a sixteenth of the default pool (4 MiB)
     * touches fewer new pages, which cost a page fault each (200k pwrites:
     * 12 ns a call less) and stay resident, for about 10 ns more writer CPU
     * per record at 2.5 M records/s. */
    kick_at = nblocks / 16 < KICK_BLOCKS ? nblocks / 16 : KICK_BLOCKS;
    if (kick_at == 0)
        kick_at = 1;
    /* Reserved, not touched: untouched pages cost a process nothing. */
    size_t meta = (nblocks + 1) * sizeof *blocks + RS_MAX_THREADS * sizeof *threads;
    void *m = mmap(NULL, meta, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *p = mmap(NULL, (size_t)nblocks * RS_BLOCK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED || p == MAP_FAILED) {
        if (m != MAP_FAILED)
            munmap(m, meta);
        if (p != MAP_FAILED)
            munmap(p, (size_t)nblocks * RS_BLOCK_SIZE);
        return -1;
    }
    blocks = m;
    threads = (struct rs_thread *)(blocks + nblocks + 1);
    pool = p;
    pool_fill();
    if (pthread_key_create(&thread_key, thread_gone) == 0)
        key_made = 1;
    return 0;
}

void rs_ring_reset(void)
{
    if (!blocks)
        return;
    unsigned used = atomic_load(&threads_used);
    for (unsigned i = 0; i < used; i++) {
        atomic_store(&threads[i].state, RS_THREAD_FREE);
        atomic_store(&threads[i].cur, NULL);
        atomic_store(&threads[i].unread, 0);
    }
    atomic_store(&threads_used, 0);
    if (rs_th.self && key_made)
        pthread_setspecific(thread_key, NULL);
    rs_th.self = NULL;
    cursor_set(NULL);
    atomic_store(&dropped_all, 0);
    atomic_store(&dropped_io, 0);
    atomic_store(&dropped_gpu, 0);
    atomic_store(&dropped_nccl, 0);
    atomic_store(&dropped_samples, 0);
    atomic_store(&dropped_ranges, 0);
    pool_fill();
}

/* Blocks whose records stopped making sense (a record smaller than its header, or past
 * what was committed): the rest of such a block is lost, counted, and said
 * once, rather than read forever. make soak found a writer spinning on a
 * record of size 0 after 10 minutes: NCCL's records were written without
 * rs_th.guard, and a CPU sample's record landed inside one (test_agent_guard
 * now runs the agent built with RS_RING_CHECK, which refuses that). */
static _Atomic int broken_said;

static void drain_block(struct rs_block *b, uint32_t upto, rs_rec_fn fn, void *arg)
{
    while (b->consumed < upto) {
        const struct rs_rec_hdr *h = (const void *)(b->data + b->consumed);
        if (RS_UNLIKELY(h->size < sizeof *h || h->size > upto - b->consumed)) {
            atomic_fetch_add_explicit(&dropped_all, 1, memory_order_relaxed);
            if (!atomic_exchange(&broken_said, 1))
                rs_notice("a buffer of thread %u holds a broken record (size %u at byte %u of %u); "
                          "the rest of that buffer is lost", b->tid, h->size, b->consumed, upto);
            b->consumed = upto;
            return;
        }
        fn(h, b->tid, arg);
        b->consumed += h->size;
    }
}

void rs_ring_drain(rs_rec_fn fn, void *arg)
{
    /* Full blocks first, oldest first (the list is last-in first-out). */
    atomic_store_explicit(&full_pending, 0, memory_order_relaxed);
    uint32_t idx = atomic_exchange_explicit(&full_head, RS_NIL, memory_order_acquire);
    uint32_t rev = RS_NIL;
    while (idx != RS_NIL) {
        uint32_t next = atomic_load_explicit(&blocks[idx].next, memory_order_relaxed);
        atomic_store_explicit(&blocks[idx].next, rev, memory_order_relaxed);
        rev = idx;
        idx = next;
    }
    for (idx = rev; idx != RS_NIL;) {
        struct rs_block *b = &blocks[idx];
        uint32_t next = atomic_load_explicit(&b->next, memory_order_relaxed);
        drain_block(b, atomic_load_explicit(&b->committed, memory_order_acquire), fn, arg);
        b->consumed = 0;
        atomic_fetch_sub_explicit(&threads[b->slot].unread, 1, memory_order_relaxed);
        free_push(idx);
        idx = next;
    }
    /* Then what live threads have committed in the blocks they still hold
     * (slots past threads_used were never taken: not read at all, so that a
     * pass costs what the threads in use cost). */
    unsigned used = atomic_load_explicit(&threads_used, memory_order_acquire);
    for (unsigned i = 0; i < used; i++) {
        struct rs_thread *t = &threads[i];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != RS_THREAD_LIVE)
            continue;
        /* cur before unread: a thread counts a block it hands over before
         * it publishes the next one (rotate), so a new block seen here
         * comes with its count, and waits for the pass that drains the old
         * block's rest first. */
        struct rs_block *b = atomic_load_explicit(&t->cur, memory_order_acquire);
        if (b && atomic_load_explicit(&t->unread, memory_order_acquire) == 0)
            drain_block(b, atomic_load_explicit(&b->committed, memory_order_acquire), fn, arg);
    }
}
