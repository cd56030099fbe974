/* gen_job: writes a synthetic training job as ringside trace files, for the
 * reporter's benchmark (tools/bench/bench_report.py). Each rank runs the same
 * steps: compute kernels launched back to back on one stream, a copy, an
 * all-reduce on the NCCL stream (kernel, collective and communicator
 * records; every rank leaves it at the same time, as on a real cluster) and
 * a stream synchronise. The timeline is built as a reporter model and written
 * by import-kineto's writer (formats/ chunks in LZ4 frames), so the files are
 * what the reporter reads from real imports.
 *
 *   gen_job -n RANKS -e EVENTS -o DIR [-j THREADS] [-H RANK]
 *
 * EVENTS counts the records per rank (GPU, collective and sync records).
 * -H RANK: a hung job. After the steps, every rank but RANK enters one more
 * all-reduce, which never finishes (no GPU times), and waits in it
 * (a stream synchronise) HANG_NS before its file ends; RANK never enters it.
 * Prints "ranks R events E bytes B" (events and file bytes over the job). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reporter/job/import_kineto.h"
#include "reporter/load/model.h"
#include "reporter/load/process.h"

#define KERNELS_PER_STEP 40
#define STEP_NS 4000000         /* 4 ms a step */
#define BASE_NS 1000000000000ll /* the first step's start on the host clock */
#define HANG_NS 30000000000ll   /* -H: how long the others wait for the missing rank */

static const char *const kernel_names[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >()",
    "ampere_sgemm_128x64_tn", "ampere_sgemm_64x32_sliced1x4_nn",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float> >()",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>()",
    "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>()",
    "void at::native::unrolled_elementwise_kernel<at::native::MulFunctor<float> >()",
    "void at::native::layer_norm_kernel<float>()",
};
#define NKERNEL_NAMES (sizeof kernel_names / sizeof kernel_names[0])

struct job {
    int ranks;
    long events;
    int hang_rank;              /* -H; -1: none */
    const char *dir;
    pthread_mutex_t lock;
    int next, failed;
    unsigned long long total_events, total_bytes;
};

/* A small deterministic generator per rank: the same job every run. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int add_launch(struct rsr_model *m, uint32_t name, int64_t start, int64_t dur, uint64_t corr)
{
    struct rsr_launch *l = rsr_model_add_launch(m);
    if (!l)
        return -1;
    l->start_ns = start;
    l->end_ns = start + dur;
    l->correlation = corr;
    l->name = name;
    l->tid = 4242;
    return 0;
}

static int add_op(struct rsr_model *m, uint32_t name, int cls, int32_t stream, int64_t start,
                  int64_t end, uint64_t corr)
{
    struct rsr_gpu_op *op = rsr_model_add_op(m);
    if (!op)
        return -1;
    op->start_ns = start;
    op->end_ns = end;
    op->correlation = corr;
    op->name = name;
    op->stream = stream;
    op->cls = (uint8_t)cls;
    op->bytes = cls == RSR_GPU_MEMCPY ? 1 << 20 : 0;
    return 0;
}

/* One rank's timeline, events records in all. */
static int build_rank(struct rsr_model *m, int rank, int ranks, long events, int hang_rank)
{
    uint32_t kname[NKERNEL_NAMES], launch, copy, copy_call, nccl, sync, dtype, pg, members;
#define INTERN(s, id) rsr_model_intern(m, s, strlen(s), id)
    for (size_t i = 0; i < NKERNEL_NAMES; i++)
        if (INTERN(kernel_names[i], &kname[i]) < 0)
            return -1;
    if (INTERN("cudaLaunchKernel", &launch) < 0 || INTERN("Memcpy HtoD (Pinned -> Device)", &copy) < 0 ||
        INTERN("cudaMemcpyAsync", &copy_call) < 0 || INTERN("cudaStreamSynchronize", &sync) < 0 ||
        INTERN("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", &nccl) < 0 ||
        INTERN("Float", &dtype) < 0 || INTERN("0", &pg) < 0 || INTERN("[all]", &members) < 0)
        return -1;
#undef INTERN
    m->rank = rank;
    m->world_size = ranks;
    m->role = RSR_ROLE_RANK;
    m->pid = 100000 + rank;
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0xbf58476d1ce4e5b9ull;
    uint64_t corr = 0;
    long n = 0;
    int64_t last_end = BASE_NS;
    for (long step = 0; n < events; step++) {
        int64_t t = BASE_NS + step * STEP_NS;
        int64_t gpu = t + 20000;
        for (int k = 0; k < KERNELS_PER_STEP && n < events; k++, n++) {
            int64_t dur = 20000 + (int64_t)(next_rand(&seed) % 60000);
            if (add_launch(m, launch, t, 4000, ++corr) < 0 ||
                add_op(m, kname[next_rand(&seed) % NKERNEL_NAMES], RSR_GPU_COMPUTE, 7, gpu, gpu + dur, corr) < 0)
                return -1;
            t += 5000;
            gpu += dur + 2000;
        }
        if (n < events) {
            if (add_launch(m, copy_call, t, 6000, ++corr) < 0 ||
                add_op(m, copy, RSR_GPU_MEMCPY, 7, gpu, gpu + 30000, corr) < 0)
                return -1;
            n++;
            t += 7000;
        }
        /* The all-reduce: ranks arrive at different times (their compute
         * differs) and all leave at the step's fixed end. */
        int64_t coll_end = BASE_NS + step * STEP_NS + STEP_NS - 300000;
        int64_t coll_start = coll_end - 400000 - (int64_t)(next_rand(&seed) % 200000);
        if (n + 1 < events) {
            if (add_launch(m, launch, t, 5000, ++corr) < 0 ||
                add_op(m, nccl, RSR_GPU_COMM, 20, coll_start, coll_end, corr) < 0)
                return -1;
            struct rsr_coll *c = rsr_model_add_coll(m);
            if (!c)
                return -1;
            m->ops[m->n_ops - 1].coll = (int32_t)(m->n_colls - 1);
            c->op = RSR_COLL_ALLREDUCE;
            c->in_count = c->out_count = 16 << 20;
            c->elem_size = 4;
            c->bytes = 64 << 20;
            c->dtype = dtype;
            c->comm = pg;
            c->members = members;
            c->group_size = ranks;
            c->rank_in_group = rank;
            c->comm_id = 0x5eed00000000c0deull;
            c->seq = (uint32_t)(m->n_colls - 1);
            n += 2;
            t += 6000;
        }
        if (n < events) {
            /* A stream synchronise: a runtime call that launched nothing. */
            if (add_launch(m, sync, t, coll_end - t, ++corr) < 0)
                return -1;
            n++;
        }
        last_end = BASE_NS + (step + 1) * STEP_NS;
    }
    if (hang_rank >= 0 && rank != hang_rank) {
        /* -H: one more all-reduce, entered and never finished, and the wait in it */
        int64_t t = last_end + 100000;
        if (add_launch(m, launch, t, 5000, ++corr) < 0 || add_op(m, nccl, RSR_GPU_COMM, 20, 0, 0, corr) < 0)
            return -1;
        struct rsr_coll *c = rsr_model_add_coll(m);
        if (!c)
            return -1;
        m->ops[m->n_ops - 1].coll = (int32_t)(m->n_colls - 1);
        *c = (struct rsr_coll){ .op = RSR_COLL_ALLREDUCE, .in_count = 16 << 20, .out_count = 16 << 20, .elem_size = 4,
                                .bytes = 64 << 20, .dtype = dtype, .comm = pg, .members = members, .group_size = ranks,
                                .rank_in_group = rank, .comm_id = 0x5eed00000000c0deull,
                                .seq = (uint32_t)(m->n_colls - 1), .peer = -1 };
        if (add_launch(m, sync, t + 6000, HANG_NS, ++corr) < 0)
            return -1;
    }
    return rsr_model_finish(m);
}

static void *run(void *arg)
{
    struct job *j = arg;
    char path[4096], msg[1024];
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int r = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (r >= j->ranks)
            return NULL;
        struct rsr_model m;
        rsr_model_init(&m);
        int rc = build_rank(&m, r, j->ranks, j->events, j->hang_rank);
        if (rc != 0)
            snprintf(msg, sizeof msg, "rank %d: out of memory", r);
        else
            rc = rsr_import_write(&m, NULL, "gen_job", j->dir, path, sizeof path, msg, sizeof msg);
        struct stat st;
        pthread_mutex_lock(&j->lock);
        if (rc != 0) {
            fprintf(stderr, "gen_job: %s\n", msg);
            j->failed = 1;
        } else {
            j->total_events += m.n_ops + m.n_colls + (m.n_launches - m.n_ops);
            if (stat(path, &st) == 0)
                j->total_bytes += (unsigned long long)st.st_size;
        }
        pthread_mutex_unlock(&j->lock);
        rsr_model_free(&m);
    }
}

int main(int argc, char **argv)
{
    struct job j = { .ranks = 0, .hang_rank = -1 };
    int threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0)
            j.ranks = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-e") == 0)
            j.events = atol(argv[i + 1]);
        else if (strcmp(argv[i], "-o") == 0)
            j.dir = argv[i + 1];
        else if (strcmp(argv[i], "-j") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-H") == 0)
            j.hang_rank = atoi(argv[i + 1]);
    }
    if (j.ranks <= 0 || j.events <= 0 || !j.dir || threads <= 0 || j.hang_rank >= j.ranks) {
        fprintf(stderr, "usage: gen_job -n RANKS -e EVENTS -o DIR [-j THREADS] [-H RANK]\n");
        return 2;
    }
    pthread_mutex_init(&j.lock, NULL);
    pthread_t t[64];
    if (threads > 64)
        threads = 64;
    int started = 0;
    for (int i = 1; i < threads; i++, started++)
        if (pthread_create(&t[i], NULL, run, &j) != 0)
            break;
    run(&j);
    for (int i = 1; i <= started; i++)
        pthread_join(t[i], NULL);
    if (j.failed)
        return 1;
    printf("ranks %d events %llu bytes %llu\n", j.ranks, j.total_events, j.total_bytes);
    return 0;
}
