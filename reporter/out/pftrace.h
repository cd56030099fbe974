/* `ringside export perfetto ... -o FILE` with FILE not ending in .json: the
 * job in Perfetto's own protobuf trace format. The summaries the report
 * makes (load.c, streamed) align the clocks and find the steps and
 * checkpoints; then each chosen file is read again, once, chunk by chunk,
 * and its records go out as TracePackets as they pass, so memory does not
 * grow with the length of the job. */
#ifndef RSR_PFTRACE_H
#define RSR_PFTRACE_H

#include "reporter/load/load.h"
#include "reporter/load/model.h"

/* Processes `ringside export perfetto` writes at most. */
#define RSR_EXPORT_MAX 64

struct rsr_export_opts {
    const char *out;       /* -o FILE */
    const int *ranks;      /* --ranks; none: every process */
    int nranks;
    int has_from, has_to;  /* --from S, --to S: seconds from the job's start */
    double from_s, to_s;
    int has_steps;         /* --steps A-B: the stretch from step A's start to step B's end (protobuf only) */
    size_t step_first, step_last;
    int quiet;
};

/* Writes ins[0..n) (streamed summaries, models[i] their models, not yet
 * aligned) chosen by o to o->out. Per process one packet sequence with its
 * own interning: a process track (named by rank), thread tracks (launch
 * calls, NCCL calls, file I/O, CUDA syncs, NVTX push ranges), a wait track
 * per thread (wait samples by reason, with their call stacks), GPU stream
 * tracks (kernels, copies, sets, graphs; flows from their launch calls),
 * NCCL stream tracks (collectives with bytes), an NVTX track (start/end
 * ranges), CPU samples as PerfSample packets with interned call stacks, and
 * counter tracks (the node's series; GPU busy, SM activity, communication
 * and storage throughput from the report's timeline). One job sequence:
 * steps and checkpoints. Batches of packets are zlib-compressed
 * (TracePacket.compressed_packets) unless RINGSIDE_PFTRACE_PLAIN is set.
 * The files are read by up to nthreads threads, each writing whole batches.
 * Returns the exit status, having said why on stderr when not 0. */
int rsr_pftrace_export(struct rsr_input *ins, struct rsr_model **models, int n, const struct rsr_export_opts *o,
                       int nthreads);

/* The same in steps, for a caller that runs the analyses itself (the
 * report): open the file (n inputs), hand rsr_pftrace_visit_step (ctx: the
 * handle) to rsr_job_analyse_visit, then close with the job: it writes the
 * chosen processes' records and frees the handle. pick NULL: o's ranks
 * and stretch; else the processes pick->chosen[i] marks, over [from_ns,
 * to_ns] of the job's time line (the steps are the whole job's). Both
 * return 1 or NULL having said why on stderr. */
struct rsr_pftrace;
struct rsr_step;
struct rsr_job;
struct rsr_pftrace_pick {
    const unsigned char *chosen;
    int64_t from_ns, to_ns;
};
struct rsr_pftrace *rsr_pftrace_open(const struct rsr_export_opts *o, int n);
int rsr_pftrace_visit_step(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job);
/* Gives up an opened trace: the file removed, the handle freed. */
void rsr_pftrace_discard(struct rsr_pftrace *P);
int rsr_pftrace_close(struct rsr_pftrace *P, struct rsr_input *ins, struct rsr_model **models,
                      const struct rsr_job *job, const struct rsr_pftrace_pick *pick, int nthreads);

/* Whether an output name asks for the protobuf format: any name but *.json. */
int rsr_pftrace_wanted(const char *out);

#endif
