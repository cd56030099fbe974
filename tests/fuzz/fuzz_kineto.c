/* libFuzzer target for the Kineto importer (kineto.c, import_kineto.c). The
 * first byte of an input says what the rest is: bit 0 clear, the file's bytes
 * as they are (plain JSON or gzip); set, JSON that the fuzzer gzips first, so
 * that mutations of the text reach the parser through the inflater. The file
 * is read as `ringside import-kineto` reads it (rsr_kineto_load_job), and
 * what loads is written as a ringside trace and read back. ISA-L inflates
 * gzip unless FUZZ_GZIP=zlib, which makes its dlopen fail so zlib does.
 * Besides the sanitizers, an error must be one line that starts with the
 * file's path and says where ("byte N", "compressed byte N") unless the file
 * is not a trace at all, and a written trace must read back whole. */
#include "reporter/job/import_kineto.h"
#include "reporter/load/kineto.h"
#include "reporter/load/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/fuzz/fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
static char dir[PATH_MAX], file[PATH_MAX + 16], out[PATH_MAX + 16];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_tree_root(dir, sizeof dir, "kineto");
    fuzz_tree_clear(dir);
    mkdir(dir, 0700);
    snprintf(file, sizeof file, "%s/t.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    return 0;
}

static void put(const uint8_t *data, size_t size)
{
    FILE *f = fopen(file, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
}

/* data gzipped into file. */
static void put_gzip(const uint8_t *data, size_t size)
{
    gzFile gz = gzopen(file, "wb1");
    if (!gz || (size && gzwrite(gz, data, (unsigned)size) != (int)size) || gzclose(gz) != Z_OK)
        abort();
}

/* The message of a failed load: one line naming the file, and where. */
static void check_msg(int err, const char *msg)
{
    size_t n = strlen(file);
    if (strncmp(msg, file, n) != 0 || strncmp(msg + n, ": ", 2) != 0 || strchr(msg, '\n')) {
        fprintf(stderr, "fuzz_kineto: error %d without the file's name: \"%s\"\n", err, msg);
        abort();
    }
    /* Where it went wrong: a byte, unless the whole file is at fault. */
    int whole = err == RSR_KINETO_ERR_NOT_TRACE || err == RSR_KINETO_ERR_NOMEM ||
                (err == RSR_KINETO_ERR_TRUNCATED && strstr(msg, "ends after"));
    if (!whole && !strstr(msg, "byte ")) {
        fprintf(stderr, "fuzz_kineto: error %d says not where: \"%s\"\n", err, msg);
        abort();
    }
}

static int count_chunk(const struct rsf_chunk *c, void *arg)
{
    (void)c;
    ++*(size_t *)arg;
    return 0;
}

/* Writes each model as a trace and reads it back. */
static void write_back(struct rsr_model **models, size_t n, const struct rsr_kineto_info *info)
{
    fuzz_tree_clear(out);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 64], msg[512];
        if (rsr_import_write(models[i], info, file, out, path, sizeof path, msg, sizeof msg) != 0) {
            fprintf(stderr, "fuzz_kineto: import of a loaded model failed: %s\n", msg);
            abort();
        }
        struct rsr_walk w;
        size_t chunks = 0;
        if (rsr_walk_file(path, count_chunk, &chunks, &w) != 0 || w.nproblems || w.bad_bytes || w.cut_short || !w.saw_end || chunks == 0) {
            fprintf(stderr, "fuzz_kineto: %s does not read back whole (%zu chunks)\n", path, chunks);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        put_gzip(data + 1, size - 1);
    else
        put(data + 1, size - 1);
    struct rsr_model **models;
    size_t n;
    struct rsr_kineto_info info;
    char msg[512];
    int err = rsr_kineto_load_job(file, &models, &n, &info, msg, sizeof msg);
    if (err != RSR_KINETO_ERR_OK) {
        check_msg(err, msg);
        if (models || n)
            abort();
        return 0;
    }
    write_back(models, n, &info);
    rsr_kineto_free_job(models, n);
    return 0;
}
