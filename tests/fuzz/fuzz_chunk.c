/* libFuzzer target for everything that reads a trace file. The first byte of
 * an input picks what the rest is: odd, one bare size-prefixed chunk for
 * rsf_chunk_decode; even, a whole trace file, walked as the reporter walks
 * one (frames, resync, verification). The two are kept apart because a file
 * costs LZ4's 4 MiB block buffers per read, a bare chunk nothing. Every field
 * of whatever verifies is read, so a verifier gap shows up as an ASan report. */
#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"
#include "reporter/load/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void touch_string(const char *s)
{
    if (s)
        sink += strlen(s);
}

/* Reads every field a verified chunk exposes. */
static int touch_chunk(const struct rsf_chunk *c, void *arg)
{
    (void)arg;
    sink += c->seq + c->strings_base + c->end;
    for (uint32_t i = 0; i < c->nstrings; i++)
        touch_string(c->strings[i]);
    for (uint32_t i = 0; i < c->nfiles; i++)
        sink += c->files[i].id + c->files[i].path + (uint32_t)c->files[i].flags;
    for (uint32_t i = 0; i < c->nthreads; i++)
        sink += c->threads[i].tid + c->threads[i].name;
    for (uint32_t i = 0; i < c->nclocks; i++)
        sink += c->clocks[i].mono_ns + c->clocks[i].real_ns;
    for (uint32_t i = 0; i < c->nio; i++) {
        const struct rsf_io_event *e = &c->io[i];
        sink += e->start_ns + e->dur_ns + (uint64_t)e->offset + (uint64_t)e->result + e->file + e->tid;
        touch_string(rsf_io_op_name(e->op));
    }
    if (c->counters)
        sink += c->counters->recorded + c->counters->dropped + c->counters->dropped_io;
    if (c->meta) {
        const struct rsf_meta *m = c->meta;
        touch_string(m->host);
        touch_string(m->job);
        touch_string(m->agent_version);
        for (uint32_t i = 0; i < m->argc; i++)
            touch_string(m->argv[i]);
        for (uint32_t i = 0; i < m->nsettings; i++) {
            touch_string(m->setting_keys[i]);
            touch_string(m->setting_values[i]);
        }
        sink += (uint64_t)m->pid + (uint64_t)m->rank + m->role + m->start.mono_ns;
    }
    return 0;
}

/* The input as a file: a memfd, reopened by path as the reporter opens one. */
static int fd = -1;
static char path[64];

static void read_as_file(const uint8_t *data, size_t size)
{
    if (fd < 0) {
        fd = memfd_create("fuzz-trace", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    struct rsr_walk w;
    if (rsr_walk_file(path, touch_chunk, NULL, &w) != 0)
        abort();
}

/* The input as one chunk, in a heap block of exactly its size so that any
 * read past the end is caught. */
static void decode_as_chunk(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    struct rsf_chunk_view v;
    size_t where = 0;
    if (rsf_chunk_decode(buf, size, &v, &where) == RSF_ERR_OK) {
        touch_chunk(&v.c, NULL);
        rsf_chunk_view_free(&v);
    } else if (where > size) {
        abort(); /* an error offset outside the buffer */
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        decode_as_chunk(data + 1, size - 1);
    else
        read_as_file(data + 1, size - 1);
    return 0;
}
