/* Writes the fuzzer's seed corpus into the folder given: a few chunks as
 * bare size-prefixed FlatBuffers (chunk-*) and as trace files of LZ4 frames
 * (trace-*), encoded by formats/, so that mutations start from inputs that
 * reach deep into the verifier and the frame reader. Each file begins with
 * fuzz_chunk.c's mode byte: 1 for a bare chunk, 0 for a trace file. */
#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir;

static void save(const char *name, int mode, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || putc(mode, f) == EOF || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* Encodes c into buf (8-byte aligned, cap bytes); returns its size. */
static size_t encode(const struct rsf_chunk *c, uint64_t *buf, size_t cap)
{
    struct rsf_buf out = { (uint8_t *)buf, 0, cap };
    if (rsf_chunk_encode(c, &out) != RSF_ERR_OK) {
        fprintf(stderr, "gen_seeds: cannot encode chunk %u\n", c->seq);
        exit(1);
    }
    return out.len;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds DIR\n");
        return 2;
    }
    dir = argv[1];

    static const char *const args[] = { "python3", "train.py", "--lr=0.1" };
    static const char *const keys[] = { "flush_ms", "io_exclude" };
    static const char *const values[] = { "50", "/proc:/sys:/dev" };
    const struct rsf_meta meta = {
        .format_version = RSF_FORMAT_VERSION, .host = "node7", .pid = 4242, .ppid = 1,
        .rank = 3, .local_rank = 1, .world_size = 8, .parent_rank = -1, .role = RSF_ROLE_RANK,
        .job = "job-1", .argv = args, .argc = 3, .start = { 1000, 1700000000000000000ull },
        .setting_keys = keys, .setting_values = values, .nsettings = 2,
        .agent_version = "0.1.0", .cuda_version = 12040, .nccl_version = 22105,
    };
    static const char *const strings[] = { "python3", "/data/shard-0", "/ckpt/step-1.pt" };
    static const struct rsf_file_ref files[] = { { 1, 2, 0 }, { 2, 3, 0101 } };
    static const struct rsf_thread_ref threads[] = { { 4242, 1 } };
    static const struct rsf_clock_pair clocks[] = { { 2000, 1700000000000001000ull } };
    static const struct rsf_io_event io[] = {
        { 1100, 50, -1, 3, 1, 4242, RSF_IO_OPEN, {0} },
        { 1200, 900, 0, 65536, 1, 4242, RSF_IO_PREAD, {0} },
        { 1300, 70, -1, -28, 2, 4242, RSF_IO_WRITE, {0} },
    };
    static const struct rsf_counters counters = { 7, 1, 1, 0, 0, 2, 1 };
    static const struct rsf_range ranges[] = {
        { 1100, 2900, 4242, 4242, 1, 0, 0, 0, RSF_RANGE_PUSH, 0 },
        { 1200, 1200, 4242, 4242, 2, 3, 5, 0, RSF_RANGE_MARK, 0 },
    };
    static const struct rsf_gpu_event gpu[] = {
        { 1400, 1500, 1600, 7, 0, 900, 4242, 1, 0, RSF_GPU_KERNEL, RSF_COPY_NONE, 0, {0}, 0 },
        { 1700, 1800, 1900, 7, 4096, 50, 4242, 0, 0, RSF_GPU_MEMCPY, RSF_COPY_HTOD, 0, {0}, 0 },
    };
    static const struct rsf_coll_event colls[] = {
        { 2000, 2100, 2900, 1024, 4096, 99, 8, 30, 4242, 0, -1, RSF_COLL_ALLREDUCE, 7, 0, 0, 0, {0} },
    };
    static const struct rsf_frame frames[] = { { 0x401000 }, { RSF_FRAME_PYTHON | 2 } };
    static const struct rsf_stack stacks[] = { { 1, frames, 2 } };
    static const struct rsf_sample samples[] = {
        { 2500, 10000000, 4242, 1, RSF_SAMPLE_CPU, RSF_WAIT_NONE, {0} },
        { 2600, 50000000, 4242, 1, RSF_SAMPLE_WAIT, RSF_WAIT_CONDVAR, {0} },
    };
    const struct rsf_chunk chunks[] = {
        { .seq = 0, .meta = &meta, .strings_base = 1, .strings = strings, .nstrings = 3,
          .files = files, .nfiles = 2, .threads = threads, .nthreads = 1 },
        { .seq = 1, .strings_base = 4, .clocks = clocks, .nclocks = 1, .io = io, .nio = 3 },
        { .seq = 2, .strings_base = 4, .gpu = gpu, .ngpu = 2, .colls = colls, .ncolls = 1,
          .stacks = stacks, .nstacks = 1, .samples = samples, .nsamples = 2,
          .ranges = ranges, .nranges = 2 },
        { .seq = 3, .strings_base = 4, .counters = &counters, .end = true },
    };
    enum { NCHUNKS = sizeof chunks / sizeof chunks[0] };

    static uint64_t buf[4096];
    static uint8_t file[4 * 65536];
    size_t flen = 0;
    LZ4F_cctx *cctx;
    if (LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)))
        return 1;
    for (unsigned i = 0; i < NCHUNKS; i++) {
        size_t n = encode(&chunks[i], buf, sizeof buf);
        char name[32];
        snprintf(name, sizeof name, "chunk-%u", i);
        save(name, 1, buf, n);
        size_t f = rsf_frame_compress(cctx, buf, n, file + flen, sizeof file - flen);
        if (!f)
            return 1;
        flen += f;
    }
    save("trace-whole", 0, file, flen);
    /* A file that ends inside its last frame, as after a kill -9. */
    save("trace-cut", 0, file, flen - 5);
    /* A skippable frame ahead of the chunks: the reader passes over it. */
    static const uint8_t skip[] = { 0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 'n', 'o', 't', 'e' };
    memmove(file + sizeof skip, file, flen);
    memcpy(file, skip, sizeof skip);
    save("trace-skippable", 0, file, flen + sizeof skip);
    LZ4F_freeCompressionContext(cctx);
    return 0;
}
