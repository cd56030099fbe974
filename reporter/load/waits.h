/* Off-CPU time per process: its wait samples added up by reason, the
 * causes the findings name (a training loop waiting for its DataLoader,
 * threads waiting for the GIL, threads blocked in a CPU-side collective),
 * and its busiest threads' running against blocked time. flame.c fills it
 * while it symbolises each file's stacks; the model carries it
 * (model.h), report.json writes it (processes[].waits, wait_causes,
 * threads) and findings.c reads it. */
#ifndef RSR_WAITS_H
#define RSR_WAITS_H

#include <stdint.h>

#include "formats/trace.h"
#include "reporter/load/compile.h"

/* What a wait is for, when its stack says so (rsr_wait_cause). */
#define RSR_WAIT_CAUSES(X) X(DATALOADER, dataloader) X(GIL, gil) X(RENDEZVOUS, rendezvous) \
    X(COLLECTIVE, collective)
#define RSR_ENUM_CAUSE(id, name) RSR_CAUSE_##id,
enum rsr_wait_cause { RSR_WAIT_CAUSES(RSR_ENUM_CAUSE) RSR_NCAUSES };
#undef RSR_ENUM_CAUSE

/* The cause's name in report.json ("dataloader"); NULL outside the enum. */
const char *rsr_wait_cause_name(unsigned c);

/* What the host did while its GPU idled, beyond reading (summary.h's
 * rsr_step_counters): writing (any thread: writes, and fsync, fdatasync,
 * fflush and close, which wait for them), and its main thread blocked
 * asleep, on a lock (mutex, futex, condition variable, semaphore, join,
 * barrier, spin, file lock) or on another process or the network (poll,
 * pipe, socket, child). */
enum rsr_host_class { RSR_HOST_WRITE, RSR_HOST_SLEEP, RSR_HOST_LOCK, RSR_HOST_POLL, RSR_HOST_NCLASSES };

/* A wait reason's host class, or -1: none (file I/O and GPU syncs have
 * records of their own). */
int rsr_host_class(unsigned reason);

/* The heaviest RSR_LOADER_STACKS of a process's main-thread wait stacks
 * of one cause (the file's ids), with their wait samples' weight. */
#define RSR_LOADER_STACKS 64
struct rsr_stack_set {
    uint32_t stack[RSR_LOADER_STACKS];
    uint64_t ns[RSR_LOADER_STACKS];
    uint32_t n;
};

/* Whether stack (not 0) is in set. */
int rsr_stack_set_has(const struct rsr_stack_set *set, uint32_t stack);

/* Threads kept per process: the ones with the most running and blocked
 * time together. */
#define RSR_WAIT_THREADS 8

#define RSR_WHERE_FRAMES 8
#define RSR_WHERE_TEXT 400
#define RSR_WHERE_LONG_NS 1000000000ll

struct rsr_thread_time {
    uint32_t tid;
    char name[28];          /* the thread's name as recorded, cut to fit; "" when none */
    uint64_t cpu_ns;        /* CPU samples' weight: time running */
    uint64_t wait_ns;       /* wait samples' weight: time blocked */
};

/* A process's heaviest stacks of three kinds, kept to say what a late
 * rank was doing (report.json stragglers[].why.frames): on the CPU, blocked
 * in file I/O, waiting for its DataLoader; and two of its GPU memory
 * (memory.h), weighed in bytes: the allocating stacks holding the most at
 * its peak, and the one whose memory grows (rsr_memlive_growing). Each as
 * its innermost frames, root first, ";" between them (as folded stacks are
 * written). */
enum rsr_top_kind { RSR_TOP_CPU, RSR_TOP_IO, RSR_TOP_DATA, RSR_TOP_MEM, RSR_TOP_MEM_GROW, RSR_NTOP };
#define RSR_TOP_STACKS 3
#define RSR_TOP_FRAMES 4

struct rsr_top_stack {
    uint64_t ns;            /* its samples' weight; 0: none */
    char text[240];
};

struct rsr_proc_waits {
    uint64_t count[RSF_WAIT_NREASONS], ns[RSF_WAIT_NREASONS]; /* wait samples by reason */
    uint64_t cause_ns[RSR_NCAUSES];     /* part of those with a cause */
    uint64_t cpu_ns;                    /* CPU samples, all threads */
    /* Times above add up over threads (thread-seconds: more than the wall
     * time when threads block at once); the most blocked thread's alone is
     * within it. */
    uint64_t most_wait_ns;
    uint32_t nthreads;                  /* threads with samples (more than threads[] may hold) */
    uint32_t nkept;                     /* threads[0..nkept), most time first */
    struct rsr_thread_time threads[RSR_WAIT_THREADS];
    struct rsr_top_stack top[RSR_NTOP][RSR_TOP_STACKS];   /* heaviest first */
    /* torch.compile's compilation (compile.h): the CPU and wait samples'
     * weight of stacks in each part (enum rsr_compile_part), all threads */
    uint64_t compile_ns[RSR_COMPILE_NPARTS];
    /* the main thread's wait stacks (the file's ids, its id the
     * process's) that were data loading: its GPU idle in them is data
     * loading on the critical path (critpath.h; summary.h's wstacks); and
     * those that waited in a collective (a rank without GPU work: its wait
     * for the other ranks and its transfer) */
    struct rsr_stack_set loader, coll;
    /* Where the main thread was when the file ended (a stuck rank's, hang.h):
     * its last sample, the one ending latest, CPU or wait; its innermost
     * RSR_WHERE_FRAMES frames root first, ";" between them, a wait's
     * "[wait: REASON]" last; "" when it has none. where_wait_ns: that
     * wait's length (0: a CPU sample). */
    char where[RSR_WHERE_TEXT];
    uint64_t where_wait_ns;
    /* The main thread's last wait of RSR_WHERE_LONG_NS or more (the one
     * ending latest), as where: what a rank without NCCL records (gloo)
     * was stuck in (hang.h); its cause (enum rsr_wait_cause, -1: none), its
     * length and its end on the file's clock; long_wait_ns 0: none. */
    char long_where[RSR_WHERE_TEXT];
    int32_t long_cause;
    uint64_t long_wait_ns;
    int64_t long_end_ns;
};

/* Notes the frames names[0..n) (root first) of the main thread's last
 * sample as w's where, reason its wait's (RSF_WAIT_NONE: on the CPU) of
 * wait_ns. */
void rsr_waits_where(struct rsr_proc_waits *w, const char *const *names, uint32_t n, unsigned reason,
                     uint64_t wait_ns);
/* The same for its last long wait (long_where), of cause, ending at end_ns. */
void rsr_waits_long_where(struct rsr_proc_waits *w, const char *const *names, uint32_t n, unsigned reason,
                          uint64_t wait_ns, int cause, int64_t end_ns);

/* Notes a main-thread wait stack (the file's id) of ns in set (w's loader
 * or coll); past RSR_LOADER_STACKS, the heaviest are kept. */
void rsr_stack_set_add(struct rsr_stack_set *set, uint32_t stack, uint64_t ns);

/* Offers a stack of kind (enum rsr_top_kind) weighing ns, its frames'
 * names[0..n) root first, to w's heaviest: kept when it weighs more than
 * the lightest kept (the same text adds up). */
void rsr_waits_top_offer(struct rsr_proc_waits *w, int kind, uint64_t ns, const char *const *names, uint32_t n);

/* What one wait stack is for, or -1: frames are the stack's names root
 * first (no "[wait: ...]" leaf), with for each whether it is a Python frame
 * and the basename of the ELF file a native one is in ("" when not known).
 * The rules, most specific first:
 * - dataloader: a Python frame of torch/utils/data/dataloader.py (the
 *   loop's next() and iter() on a DataLoader), unless the stack is a
 *   worker's or the pin-memory thread's own (frames under
 *   torch/utils/data/_utils/: a forked worker keeps the loop's frames);
 *   or, without Python frames, a native function whose name says it loads
 *   data: "dataloader", "data_loader", "load_batch" or "next_batch" in any
 *   case (a C++ loader, simtrain's sim_train_load_batch);
 * - gil: a condition variable waited on by CPython itself (the innermost
 *   native frame in the interpreter's own file, python3.X or libpython3.X:
 *   on Linux CPython's locks are semaphores, and its only condition
 *   variables are the GIL's);
 * - rendezvous: setting up torch.distributed (init_process_group, its
 *   rendezvous handlers, the TCPStore's connect): ranks that start at
 *   different times, not a slow rank;
 * - collective: a program thread (one with Python frames) blocked inside
 *   torch.distributed (a Python frame under torch/distributed/, or a native
 *   c10d:: or gloo:: function): waiting for the other ranks. */
int rsr_wait_cause(const char *const *names, const uint8_t *is_python, const char *const *modules, uint32_t n,
                   unsigned reason);

/* Keeps the RSR_WAIT_THREADS threads of all[0..n) with the most time in
 * w->threads (sorted, most first); sets nthreads, nkept and most_wait_ns.
 * all is reordered. */
void rsr_waits_keep_threads(struct rsr_proc_waits *w, struct rsr_thread_time *all, uint32_t n);

/* Total blocked time of all reasons, ns. */
uint64_t rsr_waits_total_ns(const struct rsr_proc_waits *w);

#endif
