/* A process's summary: what the job's analyses need of one trace, built
 * while its records stream past in start order and never holding them:
 * GPU breakdown, kernel table, per-collective tuples, checkpoint bursts and
 * data loading, fine utilisation bins, sync totals. load_model.c feeds it
 * from a file through a reorder window; rsr_model_summarize from a whole
 * model (Kineto imports, tests). Memory grows with names, streams and files
 * written, not with kernels, copies or I/O calls; the collective tuples,
 * which grow with the job's length, go to a temporary file as they settle
 * past a bound (rsr_summary_run_max) or when asked (rsr_summary_spill), and
 * are read back in (communicator, sequence) order
 * by a cursor or, across processes, by a k-way merge. Step marks (below)
 * sample the process's cumulative GPU and I/O counters where steps may
 * begin, so that steps.c can cut the job into steps afterwards. */
#ifndef RSR_SUMMARY_H
#define RSR_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/flight.h"
#include "reporter/load/gpu_breakdown.h"
#include "reporter/load/kernels.h"
#include "reporter/load/model.h"

/* A burst counts as a checkpoint from this many bytes written (storage.h). */
#define RSR_CKPT_MIN_BYTES (1u << 20)

/* Data loading: reads of files other than checkpoints, and how much of
 * them the GPU sat idle through (storage.h). */
struct rsr_data_loading {
    int64_t read_ns;            /* union of reads of files other than checkpoints */
    int64_t read_idle_ns;       /* of that, while the GPU was idle (inside its span) */
    uint64_t read_bytes;
    double pct;                 /* read_idle_ns as % of the GPU span */
};

/* Fine bins per series: the job's timeline (at most RSR_TIMELINE_MAX_BINS
 * bins over the whole job) is re-binned from these, so each of its bins
 * draws on ten or more of them. */
#define RSR_FINE_BINS 4096

/* SM: SM-active ns (the share of SMs holding a block, from launch
 * geometry: gpu_breakdown.h's sm_active_ns) */
enum rsr_fine_series { RSR_FINE_BUSY, RSR_FINE_COMM, RSR_FINE_READ, RSR_FINE_WRITE, RSR_FINE_SM, RSR_FINE_NSERIES };

/* What a collective's call is, shared by all its calls with the same key.
 * A call may be an NCCL group's calls on one communicator, folded into one
 * (coll_groups.h): calls says how many (1: a call of its own). */
struct rsr_coll_key {
    uint64_t comm_id;
    uint64_t bytes;
    int32_t group_size;         /* -1: not known */
    int32_t peer;               /* a lone send's or receive's peer, its rank in the communicator; else -1 */
    int32_t rank;               /* this process's rank in the communicator; -1: not known */
    uint8_t op;                 /* enum rsr_coll_op */
    uint16_t calls;
};

/* Eighths of a collective's GPU time whose compute cover is kept. */
#define RSR_COLL_PARTS 8

/* One timed collective call: 32 bytes, the only per-call record kept.
 * hidden[k] is the share of the k-th eighth of [start_ns, end_ns) that
 * compute kernels covered, in 255ths: once the ranks' calls are matched,
 * the part of the call spent waiting for the last rank (which only then is
 * known) is split into what compute hid and what it did not
 * (rsr_coll_hidden_ns). */
struct rsr_coll_tuple {
    int64_t start_ns, end_ns;   /* GPU start (this rank's arrival) and end */
    uint32_t seq;               /* call number on its communicator */
    uint32_t key;               /* index into rsr_summary.keys */
    uint8_t hidden[RSR_COLL_PARTS];
};

/* The time in [t.start_ns, to) that compute hid, from t.hidden (exact at
 * the eighths' edges, in proportion inside one). */
int64_t rsr_coll_hidden_ns(const struct rsr_coll_tuple *t, int64_t to);

/* A process's cumulative counters at one moment t, ns from the start of its
 * stream up to t: GPU busy (any work), compute, communication, compute or
 * communication (so overlap = comm + compute - cc), I/O calls (union of
 * reads and writes), data loading (reading while the GPU idles, as
 * rsr_data_loading counts it), the GPU's idle time while the host did each
 * of rsr_host_class (each class's own union, so two classes may share a
 * moment; and where one class held half of a GPU idle gap or more, of
 * what followed a sync's return in it when one returned there, the rest
 * of the gap that none held: the host waking, launching after it, the gap
 * is that class's), read_ext (the same rest for reading, beside wait), and
 * sync_gap: GPU idle after a host synchronisation that waited for the GPU,
 * from the GPU's last work to the sync's return, when it returned before
 * the next work, at most as long as the host waited (what the sync cost:
 * without it the host would have been that far ahead of the GPU; what the
 * host did after the return is its own). blocking: the
 * communication-only time (cc less compute) while work launched on the
 * GPU waited to start (from 10 us after its launch: a launch's own latency
 * is no wait), the communication that held work back; the rest of it ran
 * while the GPU waited for the host to launch more. A step's figures are
 * the differences of the counters at its ends (critpath.h). */
struct rsr_step_counters {
    int64_t busy, compute, comm, cc, io, wait;
    int64_t host[RSR_HOST_NCLASSES];
    int64_t read_ext, sync_gap, blocking;
};

/* Where a step may begin (steps.h): a timed collective, or a kernel (see
 * kmarks), with the counters at t. For a collective, t is the end of the
 * longest GPU idle gap since the previous collective's start (the start of
 * the work after it: steps begin after the host's sync, data loading or
 * checkpoint), or its own start when the GPU was never idle in between;
 * gap is that gap's length (0: none; the first collective's, with none:
 * the time since the process's first GPU work, as if the GPU had been idle
 * before), and host_ns how long after the gap's start the last host
 * synchronisation that ended inside it returned (where the host saw the
 * step before end; 0: none). For a kernel, t is its start and gap the time
 * since the end of the kernel marked before it. */
struct rsr_step_mark {
    int64_t t, gap, host_ns;
    uint32_t key;               /* collective: index into keys; kernel: name string id */
    uint32_t pad;
    struct rsr_step_counters c;
};

/* A range the program marked a step with (an NVTX range, or a Kineto
 * ProfilerStep#N annotation: load_model.c picks those whose name says step
 * or iteration, rsr_step_range_name), with the counters at its two ends. */
struct rsr_step_range {
    int64_t start_ns, end_ns;
    uint32_t name;              /* model string id */
    uint32_t tid;
    uint16_t depth;             /* nesting: steps.c takes the outermost */
    uint8_t pad_[6];
    struct rsr_step_counters c0, c1;
};

/* Host synchronisations kept to find the one that waited for the end of
 * the GPU work (host_end_ns below): teardown's few come after it. */
#define RSR_SYNC_RECENT 16

/* Kernels marked before the kernel sequence's period is looked for. */
#define RSR_STEP_LEARN 4096
/* A main-thread wait that resumes with the same stack this soon after the
 * last one ended is the same wait (a condition variable's spurious wake-up,
 * a timed wait's retry): one mark (kmark_waits). */
#define RSR_WMARK_JOIN_NS 1000000

enum rsr_kmark_state {
    RSR_KMARK_LEARN,            /* every kernel marked so far (fewer than RSR_STEP_LEARN) */
    RSR_KMARK_ANCHOR,           /* past RSR_STEP_LEARN: only kernels named kmark_anchor, one per step */
    RSR_KMARK_NONE,             /* no period in the first RSR_STEP_LEARN kernels: none marked */
};

/* The GPU idle time while the main thread blocked in one stack's waits,
 * from the process's first collective on (without collectives, its first
 * GPU work): which of them were data loading is known once the stacks are
 * symbolised (waits.h's loader), after the summary is made. */
struct rsr_wait_stack {
    uint32_t stack;             /* the file's stack id */
    uint8_t cls;                /* enum rsr_host_class */
    uint8_t pad_[3];
    int64_t idle_ns;
    int64_t all_ns;             /* the waits' whole time, the GPU's idle or not, set-up's too */
};

/* Main-thread wait stacks a summary keeps apart at most; the rest add up in
 * one entry of stack 0. */
#define RSR_WAIT_STACKS_MAX 4096

struct rsr_summary {
    struct rsr_gpu_breakdown gpu;
    struct rsr_kernel_summary kernels;  /* names are the model's string ids */
    uint64_t n_ops;                     /* GPU ops summed */

    struct rsr_coll_key *keys;
    size_t n_keys, cap_keys;
    /* The tuples by (keys[key].comm_id, seq), then start, end, key: in
     * colls, or, when spilled, n_colls of them at spill_off in the spill
     * file (colls NULL) with colls_shift_ns still to add to their times.
     * Read them with a cursor (below) either way. */
    struct rsr_coll_tuple *colls;
    size_t n_colls, cap_colls;
    int spilled;
    uint64_t spill_off;
    int64_t colls_shift_ns;

    /* Write bursts that may be checkpoints (storage.h): one per open of a
     * path written with RSR_CKPT_MIN_BYTES or more and never read, each
     * with the GPU busy time before its start and end, so that the idle
     * time inside any window of them follows (rsr_summary_idle_within). */
    struct rsr_burst {
        int64_t start_ns, end_ns;
        int64_t busy_start_ns, busy_end_ns; /* GPU busy time up to start, end */
        uint64_t bytes;
        uint32_t path;                  /* model string id */
    } *bursts;
    size_t n_bursts;
    struct rsr_data_loading loading;

    /* Utilisation in fine bins from fine_start_ns, fine_bin_ns wide: busy
     * ns of the GPU (its union), collective bytes spread over their GPU
     * time, bytes read and written spread over each call. */
    int64_t fine_start_ns, fine_bin_ns;
    double *fine[RSR_FINE_NSERIES];     /* RSR_FINE_BINS each, NULL: none */

    /* Step marks (see above), in time order: one per timed collective,
     * and for processes without collectives, per kernel (compute or
     * communication) up to RSR_STEP_LEARN, then, when the first
     * RSR_STEP_LEARN had a period, only at its anchor kernel (kmark_state,
     * kmark_anchor, kmark_period, kmark_score; steps.h), so that memory
     * grows with collectives and steps, not with kernels. end_counters are
     * the counters at the end of the stream.
     * A process with neither GPU work nor collectives (a rank training on
     * the CPU, gloo) has its main thread's waits as kmarks instead
     * (kmark_waits): each wait of a host class (rsr_host_class) a mark at
     * its end, its key the wait's stack, its gap its length (a wait that
     * resumes with the same stack within RSR_WMARK_JOIN_NS is one), the
     * same learning and anchor; their counters, and end_counters, are the
     * host's (its waits by class, reads and I/O, as if the GPU idled
     * throughout: summary.c's cpu_counters). The first
     * GPU work or collective drops them. */
    struct rsr_step_mark *cmarks, *kmarks;
    size_t n_cmarks, n_kmarks;
    /* cmarks grow with the job's length like the tuples: when spilled,
     * n_cmarks of them lie at marks_off in the spill file (cmarks NULL)
     * with marks_shift_ns still to add; read them with rsr_summary_cmarks. */
    int marks_spilled;
    uint64_t marks_off;
    int64_t marks_shift_ns;
    uint8_t kmark_state;        /* enum rsr_kmark_state */
    uint8_t kmark_waits;        /* the kmarks are the main thread's waits: a rank with no GPU work or collectives */
    uint32_t kmark_anchor;
    uint32_t kmark_period;
    double kmark_score;
    struct rsr_step_counters end_counters;
    /* Where the host began its first step, before its first GPU work:
     * the start of the main thread's first wait (data loading, say) after
     * its last communicator was made, before the first collective (0:
     * none), and the counters then. The first step begins there rather
     * than at its GPU work (steps.c), as later steps begin where the host
     * returned from the step before. */
    int64_t lead_ns;
    struct rsr_step_counters lead_counters;
    /* Step ranges (above) in the order they were given; memory grows with
     * steps. */
    struct rsr_step_range *ranges;
    size_t n_ranges;

    uint64_t n_syncs;
    int64_t sync_blocked_ns;
    /* When the host returned from waiting for the end of the process's GPU
     * work (one of its last RSR_SYNC_RECENT synchronisations began before
     * that end and returned after it), or 0: where the host saw the last
     * step end (steps.c). */
    int64_t host_end_ns;
    uint64_t late;      /* records that came after later ones had been summed (see load_model.c) */
    struct rsr_wait_stack *wstacks;     /* by first wait; memory grows with the stacks, not the waits */
    size_t n_wstacks;
    /* each communicator's calls as the file left them: in flight or not (hang.h) */
    struct rsr_flights flights;
};

/* The streaming builder (opaque). */
struct rsr_acc;

/* One record, as the builder takes it. */
struct rsr_acc_op {
    int64_t start_ns, end_ns;
    int64_t launch_ns;          /* its launch call's start; 0: not known */
    uint32_t name;
    int32_t stream, device;
    uint8_t cls;                /* enum rsr_gpu_class */
    /* a kernel's geometry (rsr_gpu_op's), when has_geom */
    uint8_t has_geom;
    uint32_t threads_per_block;
    uint64_t blocks;
    float sm_coverage, occupancy, waves, warp_share;
};

/* A new builder; times before start_ns (the process's first) go to the
 * first fine bin. NULL when out of memory. */
struct rsr_acc *rsr_acc_new(int64_t start_ns);
/* Whether the process is a rank, whose main thread's waits may be its step
 * marks (kmark_waits; a launcher's or a DataLoader worker's are not, and
 * are not kept): off until said. */
void rsr_acc_set_rank(struct rsr_acc *a, int is_rank);

/* Records in start order (ops, I/O, syncs interleaved): a record that
 * starts before one already given is summed as if it started then, and
 * counted in late. */
void rsr_acc_op(struct rsr_acc *a, const struct rsr_acc_op *op);
/* The builder's record for op, field by field by name (a field added to
 * both structs is copied here, never shifted); launch_ns as the caller
 * resolved it (0: not known). */
struct rsr_acc_op rsr_acc_op_of(const struct rsr_gpu_op *op, int64_t launch_ns);
void rsr_acc_io(struct rsr_acc *a, const struct rsr_io *io);
/* A host synchronisation; one that does not block the host (a stream told
 * to wait for an event, a query) is counted, and is not where the host
 * saw the GPU's work end. */
void rsr_acc_sync(struct rsr_acc *a, const struct rsr_sync *y);
/* The main thread blocked (model.h's rsr_hwait), in start order with the rest. */
void rsr_acc_hwait(struct rsr_acc *a, const struct rsr_hwait *w);

/* A timed collective, in any order; group_size -1 when not known. */
void rsr_acc_coll(struct rsr_acc *a, const struct rsr_coll *c, int32_t group_size);

/* A step range (see rsr_step_range), given before the stream passes its
 * start (a later start is taken as the stream's position). */
void rsr_acc_range(struct rsr_acc *a, const struct rsr_range *r);

/* Ends the stream: fills *out (zeroed first; free with rsr_summary_free),
 * frees a. Returns 0, or -1 when out of memory at any point (then *out
 * lacks part of what it should hold). */
int rsr_acc_finish(struct rsr_acc *a, struct rsr_summary *out);

/* Summarises a finished model's records (ops, io, syncs, colls) into *out
 * (zeroed first) with the given thresholds (gpu_breakdown.h, kernels.h);
 * 0, or -1 when out of memory. */
int rsr_summary_of_records(const struct rsr_model *m, int64_t kernel_wait_ns, int64_t short_ns,
                           uint64_t min_count, struct rsr_summary *out);

/* The same over the ops alone (the GPU breakdown and kernel table of a
 * model, for rsr_gpu_breakdown_compute and rsr_kernels_summarize). */
int rsr_summary_of_ops(const struct rsr_model *m, int64_t kernel_wait_ns, int64_t short_ns, uint64_t min_count,
                       struct rsr_summary *out);

/* Summarises a finished model's records (ops, io, syncs, colls) into a
 * new m->sum, replacing any; 0, or -1 when out of memory. */
int rsr_model_summarize(struct rsr_model *m);

/* m's summary, made from its records when it has none yet (see above);
 * NULL when out of memory. */
struct rsr_summary *rsr_model_summary(struct rsr_model *m);

/* Moves s's tuples (sorted: see rsr_summary) and its collective step marks
 * to the spill file, a temporary file shared by all summaries, made on
 * first use and gone at exit. Returns 0, or -1 when it cannot be written
 * (what could not be written stays in memory). */
int rsr_summary_spill(struct rsr_summary *s);

/* The spill file for other analyses' data that grows with the job's
 * length (steps.c): room for len bytes at its end (offset in *off), a write
 * of len bytes at off (within what was reserved), a read. Each 0, or -1
 * (no spill file, or it failed). */
int rsr_spill_reserve(size_t len, uint64_t *off);
int rsr_spill_put(const void *p, size_t len, uint64_t off);
int rsr_spill_read(void *p, size_t len, uint64_t off);

/* Tuples a summary being built keeps in memory (collective marks: half as
 * many, at least 4) before the settled ones go to the spill file as sorted
 * runs, merged there at the end (default 131072; at least 4). For tests; not thread-safe
 * against summaries being built. */
void rsr_summary_run_max(size_t n);

/* Copies s's collective step marks [i, i + n) (within n_cmarks) into buf,
 * times shifted as the summary's, from memory or the spill file: read them
 * a block at a time, never all at once. 0, or -1 when the spill file
 * cannot be read. */
int rsr_summary_cmarks_read(const struct rsr_summary *s, size_t i, size_t n, struct rsr_step_mark *buf);

/* Reads spilled tuples back into s->colls, their shift applied (for
 * pack.c, which sends them as an array). 0, or -1 when out of memory or
 * the spill file cannot be read (s is then unchanged). */
int rsr_summary_unspill(struct rsr_summary *s);

/* Bytes of memory s holds (its arrays and fine bins, not the struct). */
size_t rsr_summary_bytes(const struct rsr_summary *s);

/* Reads a summary's tuples in order, times shifted as the summary's. */
struct rsr_coll_cursor {
    const struct rsr_summary *s;
    size_t next;                /* tuples read into buf so far */
    size_t at, n;               /* position in buf, tuples in it */
    struct rsr_coll_tuple buf[128];
};

void rsr_coll_cursor_open(struct rsr_coll_cursor *c, const struct rsr_summary *s);

/* The next tuple into *t: 1, 0 at the end, -1 when the spill file could
 * not be read (errno set). */
int rsr_coll_cursor_next(struct rsr_coll_cursor *c, struct rsr_coll_tuple *t);

/* One tuple of a merge: the model it is from and its key. */
struct rsr_coll_entry {
    uint32_t model;
    struct rsr_coll_tuple t;
    const struct rsr_coll_key *k;
};

/* A k-way merge of the tuples of models[0..n) (their summaries) in
 * (communicator, sequence, model) order, one cursor per model: memory
 * grows with the models and the largest group, not with the tuples. */
struct rsr_coll_merge {
    size_t n;
    struct rsr_model *const *models;
    struct rsr_coll_cursor *cur;
    struct rsr_coll_entry *head;        /* per model, its next tuple */
    uint32_t *heap;                     /* models with a head, least first */
    size_t n_heap;
    struct rsr_coll_entry *group;
    size_t cap_group;
    int failed;                         /* a spill read failed */
};

/* Opens a merge over models[0..n) (summarised: rsr_model_summary); 0, or
 * -1 when out of memory. */
int rsr_coll_merge_open(struct rsr_coll_merge *m, struct rsr_model *const *models, size_t n);

/* The next group: every tuple with the next (communicator, sequence), by
 * model, a model's repeats in its own order, into *entries (valid until
 * the next call). Returns their count, 0 at the end, or -1 when out of
 * memory or a read failed. */
long rsr_coll_merge_next(struct rsr_coll_merge *m, const struct rsr_coll_entry **entries);

void rsr_coll_merge_close(struct rsr_coll_merge *m);

/* Adds delta_ns to every time of s (not the busy times, which are sums). */
void rsr_summary_shift(struct rsr_summary *s, int64_t delta_ns);

/* GPU idle time inside [start, end), a window whose ends are those of
 * bursts b0 (start) and b1 (end), clipped to the GPU span. */
int64_t rsr_summary_idle_within(const struct rsr_summary *s, const struct rsr_burst *b0,
                                const struct rsr_burst *b1);

/* Adds the fine bins of s, shifted onto the job's time line, to the job's
 * bins v[series][0..nbins) from start_ns, bin_ns wide (in proportion of
 * each fine bin's overlap with them). */
void rsr_summary_rebin(const struct rsr_summary *s, int series, double *v, int64_t start_ns, int64_t bin_ns,
                       size_t nbins);

void rsr_summary_free(struct rsr_summary *s);

#endif
