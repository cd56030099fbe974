/* LZ4 framing of trace chunks: each chunk is one LZ4 frame (content size and
 * content checksum set), so `lz4 -dc` reads a trace, and a reader can skip a
 * damaged frame and go on with the next. */
#ifndef RSF_FRAME_H
#define RSF_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <lz4frame.h>

/* Most bytes one frame of n content bytes can take. */
size_t rsf_frame_bound(size_t n);

/* Compresses src[0..n) into one whole frame in dst (cap bytes, at least
 * rsf_frame_bound(n)), with the caller's context (made once, so no
 * allocation here). Returns the frame's size, or 0 on failure. */
size_t rsf_frame_compress(LZ4F_cctx *cctx, const void *src, size_t n, void *dst, size_t cap);

/* Makes *buf (64-byte aligned, *cap bytes, owned by the caller) hold at
 * least n bytes; its contents are not kept. Returns 0, or -1 when out of
 * memory (*buf is then unchanged). For the encode and frame buffers of
 * writers of trace chunks (the agent, import-kineto). */
int rsf_buf_reserve(uint8_t **buf, size_t *cap, size_t n);

/* Reads a trace file frame by frame with bounded memory. */
struct rsf_reader {
    int fd;
    uint8_t *in;           /* read buffer */
    size_t in_len, in_pos;
    uint64_t in_off;       /* file offset of in[0] */
    int eof;
    LZ4F_dctx *dctx;
    uint8_t *chunk;        /* the current chunk, 8-byte aligned */
    size_t chunk_cap;
    uint64_t frame_off;    /* file offset of the frame last returned or failed */
    uint64_t file_size;
    uint64_t bad_bytes;    /* bytes given up on by rsf_reader_resync */
};

/* Opens path. Returns RSF_ERR_OK, or RSF_ERR_IO with errno set. */
int rsf_reader_open(struct rsf_reader *r, const char *path);

/* The next chunk's bytes (valid until the next call), not yet verified.
 * Returns RSF_ERR_OK, RSF_ERR_EOF at a clean end, or an error about the
 * frame at r->frame_off: RSF_ERR_TRUNCATED when the file ends inside it. */
int rsf_reader_next(struct rsf_reader *r, const uint8_t **chunk, size_t *size);

/* After an error: skips to the next frame start after r->frame_off (the
 * magic and a header whose checksum holds, or that the file ends in), adding
 * the bytes passed over to r->bad_bytes. Returns RSF_ERR_OK if a frame start
 * was found, RSF_ERR_EOF if none (the rest of the file counts as bad). */
int rsf_reader_resync(struct rsf_reader *r);

/* Moves a reader that has read nothing yet to file offset off (a frame's
 * start). RSF_ERR_OK, or RSF_ERR_IO with errno set. */
int rsf_reader_seek(struct rsf_reader *r, uint64_t off);

/* Offset of the next unread byte in the file. */
uint64_t rsf_reader_offset(const struct rsf_reader *r);

void rsf_reader_close(struct rsf_reader *r);

#endif
