/* Writes a trace file with hand-made Module, Stack, Sample and thread records
 * through formats/ (the agent's encoder), for the flame graph tests. Reads
 * lines from stdin (numbers in C notation, TEXT %XX-escaped):
 *   meta RANK PID | thread TID TEXT | module START END OFF TS PATH BUILDID(-)
 *   stack ID FRAME... (address, or py:TEXT) | sample KIND TID STACK WEIGHT TS
 *   chunk (ends a chunk; strings, stacks and samples may follow in the next)
 * usage: flame_mktrace OUT.trace.lz4 < spec */
#include "formats/chunk.h"
#include "formats/frame.h"
#include "formats/rsf_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 4096

static char *strs[MAXN];
static const char *chunk_strs[MAXN];
static uint32_t nstrs, base = 1, nchunk_strs;
static struct rsf_module mods[MAXN];
static struct rsf_thread_ref threads[MAXN];
static struct rsf_stack stacks[MAXN];
static struct rsf_sample samples[MAXN];
static uint32_t nmods, nthreads, nstacks, nsamples, seq;
static struct rsf_meta meta = { .format_version = RSF_FORMAT_VERSION, .host = "testhost",
                                .rank = -1, .local_rank = -1, .world_size = -1,
                                .parent_rank = -1, .role = RSF_ROLE_OTHER, .job = "flametest" };
static int meta_sent;
static FILE *out;
static LZ4F_cctx *cctx;

static void die(const char *what)
{
    fprintf(stderr, "flame_mktrace: %s\n", what);
    exit(1);
}

static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '%' && r[1] && r[2]) {
            char hex[3] = { r[1], r[2], 0 };
            *w++ = (char)strtol(hex, NULL, 16);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* The id of an escaped text, defined in the current chunk when new. */
static uint32_t string_id(char *text)
{
    unescape(text);
    for (uint32_t i = 0; i < nstrs; i++)
        if (strcmp(strs[i], text) == 0)
            return i + 1;
    if (nstrs == MAXN)
        die("too many strings");
    strs[nstrs] = strdup(text);
    chunk_strs[nchunk_strs++] = strs[nstrs];
    return ++nstrs;
}

static void flush_chunk(int end)
{
    struct rsf_chunk c = {
        .seq = seq++, .meta = meta_sent ? NULL : &meta, .strings_base = base,
        .strings = chunk_strs, .nstrings = nchunk_strs, .threads = threads, .nthreads = nthreads,
        .stacks = stacks, .nstacks = nstacks, .samples = samples, .nsamples = nsamples,
        .modules = mods, .nmodules = nmods, .end = end,
    };
    size_t cap = rsf_chunk_bound(&c);
    uint64_t *buf = malloc(cap + 8);
    struct rsf_buf b = { (uint8_t *)buf, 0, cap };
    if (!buf || rsf_chunk_encode(&c, &b) != RSF_ERR_OK)
        die("cannot encode");
    size_t fcap = rsf_frame_bound(b.len);
    void *fr = malloc(fcap);
    size_t n = fr ? rsf_frame_compress(cctx, buf, b.len, fr, fcap) : 0;
    if (!n || fwrite(fr, 1, n, out) != n)
        die("cannot write");
    free(fr);
    free(buf);
    for (uint32_t i = 0; i < nstacks; i++)
        free((void *)stacks[i].frames);
    meta_sent = 1;
    base = nstrs + 1;
    nchunk_strs = nmods = nthreads = nstacks = nsamples = 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: flame_mktrace OUT.trace.lz4 < spec");
    out = fopen(argv[1], "wb");
    if (!out || LZ4F_isError(LZ4F_createCompressionContext(&cctx, LZ4F_VERSION)))
        die("cannot open output");
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        char *save, *tok[1024];
        int n = 0;
        for (char *t = strtok_r(line, " \t\n", &save); t && n < 1024; t = strtok_r(NULL, " \t\n", &save))
            tok[n++] = t;
        if (n == 0)
            continue;
        if (nmods == MAXN || nthreads == MAXN || nstacks == MAXN || nsamples == MAXN)
            die("too many records in one chunk");
        if (strcmp(tok[0], "meta") == 0 && n == 3) {
            meta.rank = atoi(tok[1]);
            meta.pid = atoi(tok[2]);
            meta.role = meta.rank >= 0 ? RSF_ROLE_RANK : RSF_ROLE_OTHER;
        } else if (strcmp(tok[0], "thread") == 0 && n == 3) {
            threads[nthreads].tid = (uint32_t)strtoul(tok[1], NULL, 0);
            threads[nthreads++].name = string_id(tok[2]);
        } else if (strcmp(tok[0], "module") == 0 && n == 7) {
            struct rsf_module *m = &mods[nmods++];
            m->start = strtoull(tok[1], NULL, 0);
            m->end = strtoull(tok[2], NULL, 0);
            m->file_off = strtoull(tok[3], NULL, 0);
            m->ts_ns = strtoull(tok[4], NULL, 0);
            m->path = string_id(tok[5]);
            m->build_id = strcmp(tok[6], "-") ? string_id(tok[6]) : 0;
        } else if (strcmp(tok[0], "stack") == 0 && n >= 2) {
            struct rsf_frame *fr = calloc((size_t)n, sizeof *fr);
            if (!fr)
                die("out of memory");
            for (int i = 2; i < n; i++)
                fr[i - 2].addr = strncmp(tok[i], "py:", 3) == 0
                                     ? RSF_FRAME_PYTHON | string_id(tok[i] + 3)
                                     : strtoull(tok[i], NULL, 0);
            stacks[nstacks++] = (struct rsf_stack){ (uint32_t)strtoul(tok[1], NULL, 0), fr,
                                                    (uint32_t)(n - 2) };
        } else if (strcmp(tok[0], "sample") == 0 && n == 6) {
            struct rsf_sample *s = &samples[nsamples++];
            s->kind = (uint8_t)(strcmp(tok[1], "cpu") == 0 ? RSF_SAMPLE_CPU
                                : strcmp(tok[1], "wait") == 0 ? RSF_SAMPLE_WAIT : RSF_SAMPLE_GPU);
            s->tid = (uint32_t)strtoul(tok[2], NULL, 0);
            s->stack = (uint32_t)strtoul(tok[3], NULL, 0);
            s->weight_ns = strtoull(tok[4], NULL, 0);
            s->ts_ns = strtoull(tok[5], NULL, 0);
        } else if (strcmp(tok[0], "chunk") == 0) {
            flush_chunk(0);
        } else {
            fprintf(stderr, "flame_mktrace: bad line starting %s\n", tok[0]);
            return 1;
        }
    }
    flush_chunk(1);
    LZ4F_freeCompressionContext(cctx);
    return fclose(out) == 0 ? 0 : 1;
}
