/* Test driver for the HTML page: writes OUT.html from a report.json written
 * by hand and GPU timelines loaded from Kineto traces, plus (--hostile) a
 * process whose kernel names are HTML and script, so the tests can open the
 * page in a browser before `ringside report` carries timelines itself.
 * usage: html_driver OUT.html REPORT.json [--hostile] [--many N] [--ranks N]
 *        [--flame SVG]... [TRACE.json.gz]... */
#include "reporter/out/html.h"
#include "reporter/load/kineto.h"
#include "reporter/load/process.h"
#include "formats/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names a traced program could give its kernels; each must show as text. */
static const char *const hostile[] = {
    "<img src=x onerror=alert(1)>&\"'",
    "</script><script>alert(2)</script>",
    "<svg onload=alert(3)>\xe2\x80\xa8line\xe2\x80\xa9sep",
    "ncclKernel_<b>AllReduce</b>&amp;\"'",
};

/* Placed from t (ns), the start of the other timelines, so all share one span. */
static int add_hostile(struct rsr_model *m, int64_t t)
{
    m->rank = 7;
    m->pid = 4242;
    if (rsr_model_intern(m, "<i>host</i>&\"'", strlen("<i>host</i>&\"'"), &m->host) != 0)
        return -1;
    int64_t t0 = t;
    for (int i = 0; i < 400; i++) {
        const char *name = hostile[i % 4];
        struct rsr_gpu_op *op = rsr_model_add_op(m);
        if (!op || rsr_model_intern(m, name, strlen(name), &op->name) != 0)
            return -1;
        op->start_ns = t;
        /* Every fifth op is long; the rest are short enough to be merged. */
        op->end_ns = t + (i % 5 == 0 ? 2000000 : 3000);
        op->cls = i % 4 == 3 ? RSR_GPU_COMM : i % 7 == 0 ? RSR_GPU_MEMCPY : RSR_GPU_COMPUTE;
        op->stream = 7;
        t += i % 5 == 0 ? 2100000 : 5000;
    }
    /* 60 file writes named like the kernels, 30 synchronisations, spread
     * over the same time; every third of each is long. */
    int64_t step = (t - t0) / 60;
    for (int i = 0; i < 60; i++) {
        const char *name = hostile[i % 4];
        struct rsr_io *io = rsr_model_add_io(m);
        if (!io || rsr_model_intern(m, name, strlen(name), &io->path) != 0)
            return -1;
        io->start_ns = t0 + i * step;
        io->end_ns = io->start_ns + (i % 3 == 0 ? step / 2 : 2000);
        io->op = RSF_IO_WRITE;
        io->dir = RSF_DIR_WRITE;
        io->bytes = 4096;
    }
    for (int i = 0; i < 30; i++) {
        struct rsr_sync *sy = rsr_model_add_sync(m);
        if (!sy)
            return -1;
        sy->start_ns = t0 + i * 2 * step + step / 4;
        sy->end_ns = sy->start_ns + (i % 3 == 0 ? step : 1500);
        sy->kind = (uint8_t)(i % RSF_SYNC_NKINDS);
    }
    return rsr_model_finish(m);
}

/* n ops on one process (rank 9) from t: op i lasts 1 + i % 7 us and starts
 * 2 us after op i - 1; every 1000th lasts 3 ms. Even i compute, odd i
 * communication: a lane of n / 2 ops, to check the thinning's bound. */
static int add_many(struct rsr_model *m, int64_t t, long n)
{
    m->rank = 9;
    m->pid = 9999;
    uint32_t name;
    if (rsr_model_intern(m, "many_kernel", 11, &name) != 0)
        return -1;
    for (long i = 0; i < n; i++) {
        struct rsr_gpu_op *op = rsr_model_add_op(m);
        if (!op)
            return -1;
        op->name = name;
        op->start_ns = t + i * 2000;
        op->end_ns = op->start_ns + (i % 1000 == 0 ? 3000000 : 1000 * (1 + i % 7));
        op->cls = i % 2 ? RSR_GPU_COMM : RSR_GPU_COMPUTE;
    }
    return rsr_model_finish(m);
}

/* Rank r of a job of equal ranks (--ranks): 20 compute ops of 1 ms, one
 * every 2 ms from t, and a communication op after each. */
static int add_rank(struct rsr_model *m, int64_t t, int r)
{
    m->rank = r;
    m->pid = 1000 + r;
    m->role = RSR_ROLE_RANK;
    uint32_t name[2];
    if (rsr_model_intern(m, "gemm", 4, &name[0]) != 0 || rsr_model_intern(m, "ncclKernel", 10, &name[1]) != 0)
        return -1;
    for (int i = 0; i < 40; i++) {
        struct rsr_gpu_op *op = rsr_model_add_op(m);
        if (!op)
            return -1;
        op->name = name[i % 2];
        op->start_ns = t + (i / 2) * 2000000 + (i % 2) * 1000000;
        op->end_ns = op->start_ns + (i % 2 ? 500000 : 1000000);
        op->cls = i % 2 ? RSR_GPU_COMM : RSR_GPU_COMPUTE;
    }
    return rsr_model_finish(m);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: html_driver OUT.html REPORT.json [--hostile] [--many N] [--ranks N] "
                        "[--flame SVG]... [TRACE.json.gz]...\n");
        return 2;
    }
    FILE *in = fopen(argv[2], "rb");
    if (!in) {
        fprintf(stderr, "html_driver: %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    static char json[1 << 22];
    size_t len = fread(json, 1, sizeof json, in);
    fclose(in);
    struct rsr_model *models[64];
    const char *flames[16];
    size_t n = 0, nflames = 0;
    int with_hostile = 0;
    long many = 0, ranks = 0;
    for (int i = 3; i < argc && n < 63; i++) {
        if (strcmp(argv[i], "--flame") == 0 && i + 1 < argc && nflames < 16) {
            flames[nflames++] = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--many") == 0 && i + 1 < argc) {
            many = atol(argv[++i]);
            continue;
        }
        if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
            ranks = atol(argv[++i]);
            continue;
        }
        if (strcmp(argv[i], "--hostile") == 0) {
            with_hostile = 1;
            continue;
        }
        struct rsr_model *m = malloc(sizeof *m);
        if (!m)
            return 1;
        rsr_model_init(m);
        models[n++] = m;
        char msg[512];
        int err = rsr_kineto_load(argv[i], m, msg, sizeof msg);
        if (err) {
            fprintf(stderr, "html_driver: %s\n", msg);
            return 1;
        }
    }
    if (with_hostile) {
        struct rsr_model *m = malloc(sizeof *m);
        if (!m)
            return 1;
        rsr_model_init(m);
        int64_t t = n && models[0]->n_ops ? models[0]->ops[0].start_ns : 1000000;
        models[n++] = m;
        if (add_hostile(m, t) != 0)
            return 1;
    }
    if (many > 0) {
        struct rsr_model *m = malloc(sizeof *m);
        if (!m)
            return 1;
        rsr_model_init(m);
        int64_t t = n && models[0]->n_ops ? models[0]->ops[0].start_ns : 1000000;
        models[n++] = m;
        if (add_many(m, t, many) != 0)
            return 1;
    }
    for (long r = 0; r < ranks && n < 63; r++) {
        struct rsr_model *m = malloc(sizeof *m);
        if (!m)
            return 1;
        rsr_model_init(m);
        models[n++] = m;
        if (add_rank(m, 1000000, (int)r) != 0)
            return 1;
    }
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        fprintf(stderr, "html_driver: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int rc = nflames ? rsr_html_write_flames(out, json, len, models, n, flames, nflames)
                     : rsr_html_write(out, json, len, models, n);
    if (rc != 0)
        fprintf(stderr, "html_driver: %s: %s\n", argv[1], strerror(errno));
    if (fclose(out) != 0)
        rc = -1;
    for (size_t i = 0; i < n; i++) {
        rsr_model_free(models[i]);
        free(models[i]);
    }
    return rc ? 1 : 0;
}
