/* What the unit tests of the agent's core (test_ring, test_fdtab,
 * test_settings, test_clock, test_gpustart, test_dlgate) share: the one
 * writer function the core's objects call (writer.c is not linked: no trace
 * file, so no fd is the writer's), a drain that copies every record out of the ring, and the
 * capture of what the agent prints on stderr. One translation unit each. */
#ifndef RS_AGENT_UNIT_H
#define RS_AGENT_UNIT_H

#include "preload/agent.h"
#include "rs_check.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rs_writer_owns_fd(int fd)
{
    (void)fd;
    return 0;
}

/* The agent's start (agent.c) as far as the core goes: buffers and the fd
 * table, no writer. Counted, for the tests of what starts it. */
static int agent_starts;
int rs_agent_start(void)
{
    if (atomic_load(&rs_hot.started))
        return 0;
    agent_starts++;
    if (rs_ring_init() != 0 || (rs_hot.io_active && rs_fdtab_start() != 0))
        return -1;
    atomic_store(&rs_hot.started, 1);
    return 0;
}

int rs_agent_start_by(int kind)
{
    (void)kind;
    return rs_agent_start();
}

/* Records copied out of the ring by rs_ring_drain, in the order it gave
 * them: each is its thread id, then the record's bytes, 8-byte aligned. */
struct drained {
    uint8_t *buf;
    size_t used, cap, n;
};

struct drained_rec {
    uint32_t tid, size;
    /* the record's bytes follow */
};

static inline void drained_add(const struct rs_rec_hdr *h, uint32_t tid, void *arg)
{
    struct drained *d = arg;
    size_t need = sizeof(struct drained_rec) + h->size;
    if (d->used + need > d->cap) {
        d->cap = (d->cap + need) * 2;
        d->buf = realloc(d->buf, d->cap);
        ck_assert_ptr_nonnull(d->buf);
    }
    struct drained_rec r = { tid, h->size };
    memcpy(d->buf + d->used, &r, sizeof r);
    memcpy(d->buf + d->used + sizeof r, h, h->size);
    d->used += need;
    d->n++;
}

/* Calls rs_ring_drain once, appending what it gives to d. */
static inline void drain_into(struct drained *d)
{
    rs_ring_drain(drained_add, d);
}

/* The next record of d after *off (start with *off = 0), or NULL. */
static inline const struct rs_rec_hdr *drained_next(const struct drained *d, size_t *off, uint32_t *tid)
{
    if (*off >= d->used)
        return NULL;
    struct drained_rec r;
    memcpy(&r, d->buf + *off, sizeof r);
    const struct rs_rec_hdr *h = (const void *)(d->buf + *off + sizeof r);
    if (tid)
        *tid = r.tid;
    *off += sizeof r + r.size;
    return h;
}

static inline void drained_free(struct drained *d)
{
    free(d->buf);
    memset(d, 0, sizeof *d);
}

/* Sends fd 2 to a temporary file until stderr_end, which puts back the
 * stderr that was and returns what was written there (NUL-terminated, in
 * buf of n bytes). */
struct captured {
    int saved, file;
};

static inline struct captured stderr_begin(void)
{
    char path[] = "/tmp/rs_unit_stderr_XXXXXX";
    struct captured c = { dup(2), mkstemp(path) };
    ck_assert_int_ge(c.file, 0);
    ck_assert_int_ge(c.saved, 0);
    unlink(path);
    ck_assert_int_eq(dup2(c.file, 2), 2);
    return c;
}

static inline const char *stderr_end(struct captured c, char *buf, size_t n)
{
    dup2(c.saved, 2);
    close(c.saved);
    ssize_t r = pread(c.file, buf, n - 1, 0);
    close(c.file);
    buf[r > 0 ? r : 0] = 0;
    return buf;
}

#endif
