/* Unit tests of the agent's record buffers (preload/ring.c): records
 * reserved and committed by one thread or several, read back by the
 * writer's drain. Every record carries its writer, its sequence number and a
 * byte pattern made from them, so each one read back is checked against
 * what was written, and thread ids against the kernel's gettid. Drops are
 * counted against the reserves this test saw refused. */
#include "rs_agent_unit.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct test_rec {
    struct rs_rec_hdr h;
    uint64_t writer, seq;
    /* size - sizeof(struct test_rec) bytes of pattern follow */
};

static uint8_t pattern(uint64_t writer, uint64_t seq, size_t i)
{
    return (uint8_t)(writer * 131 + seq * 31 + i * 7);
}

/* Record sizes from 24 to 120 bytes, multiples of 8, varying with seq. */
static size_t size_of(uint64_t seq)
{
    return sizeof(struct test_rec) + 8 * (seq % 13);
}

/* Writes one record of kind; 1, or 0 when the ring refused it. */
static int put(int kind, uint64_t writer, uint64_t seq, size_t size)
{
    struct test_rec *r = rs_reserve(size, kind);
    if (!r)
        return 0;
    r->h.size = (uint16_t)size;
    r->h.kind = (uint8_t)kind;
    r->h.op = 0;
    r->h.file = (uint32_t)seq;
    r->writer = writer;
    r->seq = seq;
    uint8_t *tail = (uint8_t *)(r + 1);
    for (size_t i = 0; i < size - sizeof *r; i++)
        tail[i] = pattern(writer, seq, i);
    rs_commit(size);
    return 1;
}

/* Whether h is the record put(kind, writer, seq, size) wrote. */
static int is_rec(const struct rs_rec_hdr *h, uint64_t writer, uint64_t seq, size_t size)
{
    const struct test_rec *r = (const void *)h;
    if (h->size != size || h->kind != RS_REC_IO || h->file != (uint32_t)seq || r->writer != writer ||
        r->seq != seq)
        return 0;
    const uint8_t *tail = (const uint8_t *)(r + 1);
    for (size_t i = 0; i < size - sizeof *r; i++)
        if (tail[i] != pattern(writer, seq, i))
            return 0;
    return 1;
}

static uint32_t gettid_now(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static void ring_up(size_t bytes)
{
    rs_cfg.buffer_bytes = bytes;
    ck_assert_int_eq(rs_ring_init(), 0);
}

START_TEST(records_read_back)
{
    ring_up(1u << 20);
    for (uint64_t s = 0; s < 1000; s++)
        ck_assert(put(RS_REC_IO, 7, s, size_of(s)));
    struct drained d = { 0 };
    drain_into(&d);
    ck_assert_uint_eq(d.n, 1000);
    size_t off = 0;
    uint32_t tid;
    for (uint64_t s = 0; s < 1000; s++) {
        const struct rs_rec_hdr *h = drained_next(&d, &off, &tid);
        ck_assert_msg(is_rec(h, 7, s, size_of(s)), "record %lu differs from what was written", (unsigned long)s);
        ck_assert_uint_eq(tid, gettid_now());
    }
    ck_assert_uint_eq(rs_ring_dropped(), 0);
    drained_free(&d);
    /* a drain with nothing new gives nothing */
    drain_into(&d);
    ck_assert_uint_eq(d.n, 0);
    drained_free(&d);
}
END_TEST

/* Drains between records, at every point of a block and across blocks
 * handed over full: each record read once, in order. */
START_TEST(drains_between_records)
{
    ring_up(4u << 20);
    struct drained d = { 0 };
    uint64_t s = 0;
    size_t bytes = 0;
    /* about six blocks' worth, drained after every 1 to 97 records */
    for (int round = 0; bytes < 6 * (size_t)RS_BLOCK_SIZE; round++) {
        for (int k = 0; k < 1 + (round * 37) % 97; k++, s++) {
            ck_assert(put(RS_REC_IO, 1, s, size_of(s)));
            bytes += size_of(s);
        }
        drain_into(&d);
        ck_assert_uint_eq(d.n, s);
    }
    size_t off = 0;
    for (uint64_t i = 0; i < s; i++)
        ck_assert_msg(is_rec(drained_next(&d, &off, NULL), 1, i, size_of(i)), "record %lu", (unsigned long)i);
    ck_assert_uint_eq(rs_ring_dropped(), 0);
    drained_free(&d);
}
END_TEST

/* A pool of four blocks, never drained, takes records up to the memory it
 * was given and refuses the rest, counting them by kind; drained, it takes
 * as many again. */
START_TEST(full_pool_drops_and_recovers)
{
    const size_t pool = 4 * (size_t)RS_BLOCK_SIZE, size = 64;
    ring_up(pool);
    uint64_t accepted = 0;
    while (put(RS_REC_IO, 2, accepted, size))
        accepted++;
    /* 64-byte records tile the blocks: the whole bound is used, no more */
    ck_assert_uint_eq(accepted * size, pool);
    uint64_t refused_io = 1;
    for (int i = 0; i < 99; i++) {
        errno = EAGAIN;
        refused_io += !put(RS_REC_OPEN, 2, 0, size);
        ck_assert_int_eq(errno, EAGAIN);
    }
    int other_kinds[] = { RS_REC_GPU, RS_REC_COLL, 50, RS_REC_RANGE, RS_REC_SERIES };
    for (size_t i = 0; i < sizeof other_kinds / sizeof other_kinds[0]; i++)
        ck_assert(!put(other_kinds[i], 2, 0, size));
    ck_assert_uint_eq(refused_io, 100);
    ck_assert_uint_eq(rs_ring_dropped_io(), 100);
    ck_assert_uint_eq(rs_ring_dropped_gpu(), 1);
    ck_assert_uint_eq(rs_ring_dropped_nccl(), 1);
    ck_assert_uint_eq(rs_ring_dropped_samples(), 1);
    ck_assert_uint_eq(rs_ring_dropped_ranges(), 1);
    ck_assert_uint_eq(rs_ring_dropped(), 105);

    struct drained d = { 0 };
    drain_into(&d);
    ck_assert_uint_eq(d.n, accepted);
    size_t off = 0;
    for (uint64_t s = 0; s < accepted; s++)
        ck_assert(is_rec(drained_next(&d, &off, NULL), 2, s, size));
    drained_free(&d);

    /* the blocks are back: the whole bound again */
    uint64_t again = 0;
    while (put(RS_REC_IO, 3, again, size))
        again++;
    ck_assert_uint_eq(again * size, pool);
    drain_into(&d);
    ck_assert_uint_eq(d.n, again);
    drained_free(&d);
}
END_TEST

START_TEST(oversize_record_refused)
{
    ring_up(1u << 20);
    errno = ERANGE;
    ck_assert_ptr_null(rs_reserve(RS_BLOCK_SIZE + 8, RS_REC_IO));
    ck_assert_int_eq(errno, ERANGE);
    ck_assert_uint_eq(rs_ring_dropped(), 1);
    ck_assert(put(RS_REC_IO, 4, 0, 32));
    struct drained d = { 0 };
    drain_into(&d);
    ck_assert_uint_eq(d.n, 1);
    size_t off = 0;
    ck_assert(is_rec(drained_next(&d, &off, NULL), 4, 0, 32));
    drained_free(&d);
}
END_TEST

/* The slow path (a thread's first record, a block handed over, the
 * writer's wake-up) leaves errno as the program left it. */
START_TEST(errno_kept)
{
    ring_up(1u << 20);
    for (uint64_t s = 0; s < 3 * RS_BLOCK_SIZE / 64; s++) {
        errno = 12345 + (int)s;
        ck_assert(put(RS_REC_IO, 5, s, 64));
        ck_assert_int_eq(errno, 12345 + (int)s);
    }
}
END_TEST

#define WRITERS 4
#define PER_WRITER 20000

struct writer {
    pthread_t t;
    uint64_t index;
    uint32_t tid;
    int refused;
};

static _Atomic int writers_done;

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    w->tid = gettid_now();
    for (uint64_t s = 0; s < PER_WRITER; s++)
        w->refused += !put(RS_REC_IO, w->index, s, size_of(s + w->index));
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

/* Threads write while the drain runs beside them; threads that end hand
 * their last block over. Every record once, in its thread's order, under
 * its thread's id. The pool holds everything: nothing may be dropped. */
START_TEST(threads_each_record_once)
{
    ring_up(16u << 20);
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){ .index = (uint64_t)i + 10 };
        ck_assert_int_eq(pthread_create(&w[i].t, NULL, writer_main, &w[i]), 0);
    }
    struct drained d = { 0 };
    while (atomic_load(&writers_done) < WRITERS)
        drain_into(&d);
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i].t, NULL);
    drain_into(&d);
    drain_into(&d);

    uint64_t next[WRITERS] = { 0 };
    size_t off = 0;
    uint32_t tid;
    const struct rs_rec_hdr *h;
    while ((h = drained_next(&d, &off, &tid))) {
        const struct test_rec *r = (const void *)h;
        ck_assert_uint_ge(r->writer, 10);
        ck_assert_uint_lt(r->writer, 10 + WRITERS);
        int i = (int)(r->writer - 10);
        ck_assert_msg(is_rec(h, r->writer, next[i], size_of(next[i] + r->writer)),
                      "writer %d: record %lu out of order or changed", i, (unsigned long)next[i]);
        ck_assert_uint_eq(tid, w[i].tid);
        next[i]++;
    }
    for (int i = 0; i < WRITERS; i++) {
        ck_assert_int_eq(w[i].refused, 0);
        ck_assert_uint_eq(next[i], PER_WRITER);
    }
    ck_assert_uint_eq(d.n, (size_t)WRITERS * PER_WRITER);
    ck_assert_uint_eq(rs_ring_dropped(), 0);
    drained_free(&d);
}
END_TEST

/* A forked child forgets its parent's records and counts (rs_ring_reset)
 * and records under its own thread id; the parent's records stay its own. */
START_TEST(fork_child_starts_afresh)
{
    ring_up(4 * (size_t)RS_BLOCK_SIZE);
    for (uint64_t s = 0; s < 100; s++)
        ck_assert(put(RS_REC_IO, 6, s, 64));
    ck_assert(!rs_reserve(RS_BLOCK_SIZE + 8, RS_REC_IO)); /* one drop */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* no ck_assert here: the exit status says what went wrong */
        rs_ring_reset();
        if (rs_ring_dropped() != 0)
            _exit(2);
        for (uint64_t s = 0; s < 10; s++)
            if (!put(RS_REC_IO, 8, s, 64))
                _exit(3);
        struct drained d = { 0 };
        drain_into(&d);
        size_t off = 0;
        uint32_t tid;
        for (uint64_t s = 0; s < 10; s++)
            if (!is_rec(drained_next(&d, &off, &tid), 8, s, 64) || tid != gettid_now())
                _exit(4);
        _exit(d.n == 10 ? 0 : 5);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
    struct drained d = { 0 };
    drain_into(&d);
    ck_assert_uint_eq(d.n, 100);
    size_t off = 0;
    uint32_t tid;
    for (uint64_t s = 0; s < 100; s++) {
        ck_assert(is_rec(drained_next(&d, &off, &tid), 6, s, 64));
        ck_assert_uint_eq(tid, gettid_now());
    }
    ck_assert_uint_eq(rs_ring_dropped(), 1);
    drained_free(&d);
}
END_TEST

/* A record whose header says size 0 (a block written over: make soak found
 * one after 10 minutes, and the writer read it forever): the drain gives the
 * records before it, counts one drop, says so once on stderr, and leaves
 * the rest of that block; the records after it in new blocks come through. */
START_TEST(broken_record_left)
{
    ring_up(4u << 20);
    struct drained d = { 0 };
    for (uint64_t s = 0; s < 3; s++)
        ck_assert(put(RS_REC_IO, 1, s, size_of(s)));
    struct test_rec *r = rs_reserve(sizeof *r, RS_REC_IO);
    ck_assert_ptr_nonnull(r);
    memset(r, 0, sizeof *r);
    r->h.kind = 100;             /* size 0 */
    rs_commit(sizeof *r);
    ck_assert(put(RS_REC_IO, 1, 3, size_of(3)));
    rs_cfg.log = 1;
    struct captured c = stderr_begin();
    drain_into(&d);
    char err[512];
    const char *said = stderr_end(c, err, sizeof err);
    ck_assert_uint_eq(d.n, 3);
    ck_assert_uint_eq(rs_ring_dropped(), 1);
    ck_assert_msg(strstr(said, "broken record") != NULL, "stderr: %s", said);
    size_t off = 0;
    for (uint64_t i = 0; i < 3; i++)
        ck_assert(is_rec(drained_next(&d, &off, NULL), 1, i, size_of(i)));
    /* the ring goes on: what is written next is read */
    ck_assert(put(RS_REC_IO, 1, 4, size_of(4)));
    drain_into(&d);
    ck_assert_uint_eq(d.n, 4);
    drained_free(&d);
}
END_TEST

static Suite *ring_suite(void)
{
    const struct rs_test tests[] = {
        { "ring_records_read_back", records_read_back },
        { "ring_drains_between_records", drains_between_records },
        { "ring_full_pool_drops_and_recovers", full_pool_drops_and_recovers },
        { "ring_oversize_record_refused", oversize_record_refused },
        { "ring_errno_kept", errno_kept },
        { "ring_threads_each_record_once", threads_each_record_once },
        { "ring_fork_child_starts_afresh", fork_child_starts_afresh },
        { "ring_broken_record_left", broken_record_left },
    };
    return RS_SUITE("ring", tests, 30);
}

RS_CHECK_MAIN(ring_suite)
