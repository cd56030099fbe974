/* LZ4 frame writer and reader for trace chunks (see frame.h). The reader
 * streams through a fixed buffer so memory stays at one chunk plus the
 * buffer, whatever the file size. */
#include "formats/frame.h"
#include "formats/rsf_error.h"
#include "formats/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RSF_READ_BUF (1u << 20)
#define LZ4_MAGIC 0x184D2204u
#define LZ4_SKIP_MAGIC 0x184D2A50u /* skippable frames: 0x184D2A50..5F */

/* A chunk is compressed in one call, so independent blocks lose nothing,
 * and auto-flush lets LZ4 skip its internal staging buffer (which it would
 * otherwise allocate and zero for every frame). Each block carries the
 * checksum of its compressed bytes rather than the frame one of the decoded
 * content: damage is found the same way, before decoding, and hashing the
 * compressed bytes (about a third as many) took the writer 60 -> 49 ns a
 * 64-byte pwrite record. */
static const LZ4F_preferences_t rsf_prefs = {
    .frameInfo = { .blockSizeID = LZ4F_max4MB, .blockMode = LZ4F_blockIndependent,
                   .blockChecksumFlag = LZ4F_blockChecksumEnabled },
    .compressionLevel = 0,
    .autoFlush = 1,
};

size_t rsf_frame_bound(size_t n)
{
    return LZ4F_compressFrameBound(n, &rsf_prefs) + 32;
}

size_t rsf_frame_compress(LZ4F_cctx *cctx, const void *src, size_t n, void *dst, size_t cap)
{
    LZ4F_preferences_t prefs = rsf_prefs;
    prefs.frameInfo.contentSize = n;
    size_t h = LZ4F_compressBegin(cctx, dst, cap, &prefs);
    if (LZ4F_isError(h))
        return 0;
    size_t b = LZ4F_compressUpdate(cctx, (char *)dst + h, cap - h, src, n, NULL);
    if (LZ4F_isError(b))
        return 0;
    size_t e = LZ4F_compressEnd(cctx, (char *)dst + h + b, cap - h - b, NULL);
    if (LZ4F_isError(e))
        return 0;
    return h + b + e;
}

int rsf_reader_open(struct rsf_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0)
        return RSF_ERR_IO;
    struct stat st;
    if (fstat(r->fd, &st) == 0)
        r->file_size = (uint64_t)st.st_size;
    r->in = malloc(RSF_READ_BUF);
    if (!r->in || LZ4F_isError(LZ4F_createDecompressionContext(&r->dctx, LZ4F_VERSION))) {
        rsf_reader_close(r);
        errno = ENOMEM;
        return RSF_ERR_NOMEM;
    }
    return RSF_ERR_OK;
}

void rsf_reader_close(struct rsf_reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->in);
    free(r->chunk);
    if (r->dctx)
        LZ4F_freeDecompressionContext(r->dctx);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

int rsf_reader_seek(struct rsf_reader *r, uint64_t off)
{
    if (lseek(r->fd, (off_t)off, SEEK_SET) < 0)
        return RSF_ERR_IO;
    r->in_off = off;
    r->in_len = r->in_pos = 0;
    r->eof = 0;
    return RSF_ERR_OK;
}

uint64_t rsf_reader_offset(const struct rsf_reader *r)
{
    return r->in_off + r->in_pos;
}

/* Makes at least want bytes available at in_pos, unless the file ends
 * first. Returns the bytes available, or -1 on a read error. */
static long fill(struct rsf_reader *r, size_t want)
{
    if (r->in_len - r->in_pos >= want || r->eof)
        return (long)(r->in_len - r->in_pos);
    memmove(r->in, r->in + r->in_pos, r->in_len - r->in_pos);
    r->in_off += r->in_pos;
    r->in_len -= r->in_pos;
    r->in_pos = 0;
    while (r->in_len < RSF_READ_BUF && r->in_len < want) {
        ssize_t n = read(r->fd, r->in + r->in_len, RSF_READ_BUF - r->in_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            r->eof = 1;
            break;
        }
        r->in_len += (size_t)n;
    }
    return (long)(r->in_len - r->in_pos);
}

static uint32_t le32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

int rsf_reader_next(struct rsf_reader *r, const uint8_t **chunk, size_t *size)
{
    for (;;) {
        long avail = fill(r, 8);
        if (avail < 0)
            return RSF_ERR_IO;
        r->frame_off = rsf_reader_offset(r);
        if (avail == 0)
            return RSF_ERR_EOF;
        if (avail < 4)
            return RSF_ERR_TRUNCATED;
        uint32_t magic = le32(r->in + r->in_pos);
        if ((magic & 0xFFFFFFF0u) == LZ4_SKIP_MAGIC) {
            if (avail < 8)
                return RSF_ERR_TRUNCATED;
            uint64_t skip = 8 + (uint64_t)le32(r->in + r->in_pos + 4);
            while (skip) {
                long a = fill(r, 1);
                if (a <= 0)
                    return a < 0 ? RSF_ERR_IO : RSF_ERR_TRUNCATED;
                size_t step = (uint64_t)a < skip ? (size_t)a : (size_t)skip;
                r->in_pos += step;
                skip -= step;
            }
            continue;
        }
        if (magic != LZ4_MAGIC)
            return RSF_ERR_BAD_MAGIC;
        break;
    }

    LZ4F_resetDecompressionContext(r->dctx);
    long avail = fill(r, LZ4F_HEADER_SIZE_MAX);
    if (avail < 0)
        return RSF_ERR_IO;
    LZ4F_frameInfo_t info;
    size_t hdr = (size_t)avail;
    size_t hint = LZ4F_getFrameInfo(r->dctx, &info, r->in + r->in_pos, &hdr);
    if (LZ4F_isError(hint))
        return r->eof && (size_t)avail < LZ4F_HEADER_SIZE_MAX ? RSF_ERR_TRUNCATED : RSF_ERR_LZ4;
    r->in_pos += hdr;
    if (info.contentSize == 0)
        return RSF_ERR_NO_SIZE;
    if (info.contentSize > RSF_CHUNK_MAX)
        return RSF_ERR_TOO_BIG;
    size_t want = (size_t)info.contentSize;
    if (want > r->chunk_cap) {
        free(r->chunk);
        r->chunk_cap = 0;
        if (posix_memalign((void **)&r->chunk, 64, want))
            return RSF_ERR_NOMEM;
        r->chunk_cap = want;
    }

    size_t got = 0;
    for (;;) {
        long a = fill(r, 1);
        if (a < 0)
            return RSF_ERR_IO;
        if (a == 0)
            return RSF_ERR_TRUNCATED;
        size_t src = (size_t)a, dst = r->chunk_cap - got;
        size_t ret = LZ4F_decompress(r->dctx, r->chunk + got, &dst, r->in + r->in_pos, &src, NULL);
        if (LZ4F_isError(ret))
            return RSF_ERR_LZ4;
        r->in_pos += src;
        got += dst;
        if (ret == 0)
            break;
        if (src == 0 && dst == 0 && got == r->chunk_cap)
            return RSF_ERR_LZ4; /* more output than the header announced */
    }
    if (got != want)
        return RSF_ERR_LZ4;
    *chunk = r->chunk;
    *size = got;
    return RSF_ERR_OK;
}

/* Whether the magic at in_pos begins a frame header that LZ4 accepts
 * (version, reserved bits, block size, header checksum): compressed bytes
 * hold the magic's four bytes now and then (once in 20 MB of traces), and
 * random bytes after it pass these checks once in 131,072. A header the
 * file ends inside counts (next says the file was cut there). 1 yes, 0 no,
 * -1 a read error. */
static int header_here(struct rsf_reader *r)
{
    long a = fill(r, LZ4F_HEADER_SIZE_MAX);
    if (a < 0)
        return -1;
    LZ4F_frameInfo_t info;
    size_t n = (size_t)a;
    LZ4F_resetDecompressionContext(r->dctx);
    size_t ret = LZ4F_getFrameInfo(r->dctx, &info, r->in + r->in_pos, &n);
    LZ4F_resetDecompressionContext(r->dctx);
    return !LZ4F_isError(ret) || (r->eof && (size_t)a < LZ4F_HEADER_SIZE_MAX);
}

int rsf_reader_resync(struct rsf_reader *r)
{
    uint64_t from = r->frame_off + 1;
    /* Rewind the buffer to the byte after the failed frame's start. */
    if (from < r->in_off || from > r->in_off + r->in_len) {
        if (lseek(r->fd, (off_t)from, SEEK_SET) < 0)
            return RSF_ERR_IO;
        r->in_off = from;
        r->in_len = r->in_pos = 0;
        r->eof = 0;
    } else {
        r->in_pos = (size_t)(from - r->in_off);
    }
    for (;;) {
        long a = fill(r, 4);
        if (a < 0)
            return RSF_ERR_IO;
        if (a < 4) {
            r->in_pos += (size_t)a;
            r->bad_bytes += rsf_reader_offset(r) - r->frame_off;
            return RSF_ERR_EOF;
        }
        const uint8_t *p = r->in + r->in_pos, *end = r->in + r->in_len - 3;
        for (; p < end; p++)
            if (le32(p) == LZ4_MAGIC)
                break;
        r->in_pos = (size_t)(p - r->in);
        if (p == end)
            continue;
        int h = header_here(r);
        if (h < 0)
            return RSF_ERR_IO;
        if (h) {
            r->bad_bytes += rsf_reader_offset(r) - r->frame_off;
            return RSF_ERR_OK;
        }
        r->in_pos++;
    }
}

int rsf_buf_reserve(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    void *p = NULL;
    if (posix_memalign(&p, 64, n))
        return -1;
    free(*buf);
    *buf = p;
    *cap = n;
    return 0;
}
