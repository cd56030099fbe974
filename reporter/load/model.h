/* The reporter's in-memory GPU timeline of one process: who the process is,
 * what ran on its GPUs (kernels, copies, sets, each with stream and class),
 * the host calls that launched that work, and the NCCL collective behind each
 * communication kernel where the source says. Loaders (ringside trace files,
 * Kineto traces) fill a model; analyses (gpu_breakdown.c, kernels.c) read it. */
#ifndef RSR_MODEL_H
#define RSR_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "formats/trace.h"
#include "reporter/base/table.h"
#include "reporter/load/waits.h"

/* Same values as Role in formats/trace.fbs. */
enum rsr_role { RSR_ROLE_RANK = 0, RSR_ROLE_CHILD = 1, RSR_ROLE_OTHER = 2 };

/* How a source ended: with its end mark; without it (the process was
 * killed, or is still running); or inside a frame (a full disk, a copy cut
 * short), the bytes after the last whole frame unread. */
enum rsr_unclosed { RSR_CLOSED = 0, RSR_NO_END_MARK = 1, RSR_CUT_SHORT = 2 };

/* Kernel classes (docs/analyses.md, 'The GPU time breakdown'). */
#define RSR_GPU_CLASSES(X) \
    X(COMPUTE, "compute") \
    X(COMM,    "communication") \
    X(MEMCPY,  "memcpy") \
    X(MEMSET,  "memset")

enum rsr_gpu_class {
#define RSR_GPU_CLASS_ENUM(name, text) RSR_GPU_##name,
    RSR_GPU_CLASSES(RSR_GPU_CLASS_ENUM)
#undef RSR_GPU_CLASS_ENUM
    RSR_GPU_NCLASSES
};

/* Collective operations; the text is NCCL's spelling (ncclAllReduce...).
 * The last two name NCCL groups folded into one unit (load_model.c): sends
 * and receives that are not an all-to-all, and collectives of several ops. */
#define RSR_COLL_OPS(X) \
    X(UNKNOWN,       "Unknown") \
    X(ALLREDUCE,     "AllReduce") \
    X(ALLGATHER,     "AllGather") \
    X(REDUCESCATTER, "ReduceScatter") \
    X(BROADCAST,     "Broadcast") \
    X(REDUCE,        "Reduce") \
    X(ALLTOALL,      "AlltoAll") \
    X(GATHER,        "Gather") \
    X(SCATTER,       "Scatter") \
    X(SEND,          "Send") \
    X(RECV,          "Recv") \
    X(BARRIER,       "Barrier") \
    X(SENDRECV,      "SendRecv") \
    X(GROUP,         "Group")

enum rsr_coll_op {
#define RSR_COLL_OP_ENUM(name, text) RSR_COLL_##name,
    RSR_COLL_OPS(RSR_COLL_OP_ENUM)
#undef RSR_COLL_OP_ENUM
    RSR_COLL_NOPS
};

/* One interval of GPU work. Times are ns on the process's host clock. */
struct rsr_gpu_op {
    int64_t start_ns;
    int64_t end_ns;
    uint64_t correlation;   /* the launching rsr_launch's correlation; 0: none */
    int64_t launch_ns;      /* its launch call's start when the loader knows it
                               without a launch record (streamed files); 0: look
                               the launch up by correlation */
    uint64_t bytes;         /* copies and sets; 0 for kernels */
    uint32_t name;          /* string id */
    int32_t stream;
    int32_t device;
    int32_t coll;           /* index into rsr_model.colls, -1: none */
    uint8_t cls;            /* enum rsr_gpu_class */
    /* a kernel's launch geometry worked out (occupancy.h), when has_geom */
    uint8_t has_geom;
    uint32_t threads_per_block;
    uint64_t blocks;
    float sm_coverage, occupancy, waves, warp_share;    /* 0..1, 0..1, waves */
    /* the launch as the source gave it (Kineto): index + 1 into
       rsr_model.geoms, 0: none */
    uint32_t launch_geom;
};

/* A host call that enqueued GPU work (cudaLaunchKernel, cuLaunchKernel,
 * cudaMemcpyAsync...). Host-wait idle is attributed through it. */
struct rsr_launch {
    int64_t start_ns;
    int64_t end_ns;
    uint64_t correlation;   /* shared with the rsr_gpu_op(s) it launched */
    uint32_t name;          /* string id */
    uint32_t tid;
};

/* What is known of the NCCL collective a communication kernel ran. Unknown
 * numbers are 0 (counts, sizes) or -1 (group size, rank in group). */
/* A call number's top bits say what numbers it: replayed in a CUDA graph
 * (load_model.c), a group of sends and receives (coll_groups.h); below
 * them, the number itself. */
#define RSR_SEQ_REPLAYED 0x80000000u
#define RSR_SEQ_P2P_GROUP 0x40000000u
#define RSR_SEQ_NUMBER 0x3fffffffu
struct rsr_coll {
    uint64_t in_count;      /* elements in the send buffer */
    uint64_t out_count;     /* elements in the receive buffer */
    uint64_t bytes;         /* as nccl-tests counts: the larger buffer */
    uint32_t dtype;         /* string id, the source's spelling */
    uint32_t comm;          /* string id naming the communicator or group */
    uint32_t members;       /* string id: the group's global ranks, "[0, 1]" */
    uint32_t elem_size;     /* bytes per element */
    int32_t group_size;
    int32_t rank_in_group;
    uint8_t op;             /* enum rsr_coll_op */
    /* Added for the multi-rank analyses (ringside files carry them; for
     * Kineto, rsr_model_finish fills the times from the linked op and seq
     * counts per comm string). Times are ns on the model's clock, 0: none. */
    uint64_t comm_id;       /* equal on every rank of the communicator; 0: none */
    uint32_t seq;           /* call number on that communicator, from 0; a
                             * call replayed in a CUDA graph: RSR_SEQ_REPLAYED
                             * plus its number among the communicator's
                             * replayed calls (ranks replay in the same order) */
    int32_t peer;           /* root or peer, -1: none */
    int64_t launch_ns, call_end_ns;  /* the ncclX call on the host */
    int64_t start_ns, end_ns;        /* its GPU work (start: this rank's arrival) */
    /* An NCCL group's calls on one communicator, folded into this one record
     * (load_model.c): how many; 0 or 1: a call of its own. */
    uint32_t group_calls;
    /* Enqueued later by NCCL's own thread (a non-blocking communicator):
     * its times are those of the kernel it is linked to (load_model.c) */
    uint8_t late;
};

/* One file I/O call (ringside files). path is a string id (0: not known);
 * dir is enum rsf_dir; bytes moved (0 for calls that move none). */
struct rsr_io {
    int64_t start_ns, end_ns;
    uint64_t bytes;
    uint32_t path;
    uint32_t tid;
    uint8_t op;             /* enum rsf_io_op */
    uint8_t dir;            /* enum rsf_dir */
};

/* A host thread blocked on the GPU (stream/event/context synchronise...). */
struct rsr_sync {
    int64_t start_ns, end_ns;
    uint64_t target;
    uint32_t tid;
    uint8_t kind;           /* enum rsf_sync_kind */
};

/* An annotation on a host thread: an NVTX range (push/pop, start/end, or a
 * mark, which has no length). name and domain are string ids (domain 0: the
 * default one); tid is the thread that began it. */
struct rsr_range {
    int64_t start_ns, end_ns;
    uint32_t name, domain;
    uint32_t tid;
    uint16_t depth;         /* push/pop nesting, from 0 */
    uint8_t kind;           /* enum rsf_range_kind */
    uint8_t open_at_exit;   /* still open when the process ended: end_ns is then */
};

/* A (monotonic, realtime) pair of the source's clocks, ns. */
struct rsr_clock {
    int64_t mono_ns, real_ns;
};

/* Interned strings: id 0 is "" (none); ids are dense. Owned by the model. */
struct rsr_strtab {
    struct rsr_str { const char *s; uint32_t len; uint32_t hash; } *strs;
    size_t n, cap;
    struct rsr_table table; /* a string's hash -> its id */
    char **blocks;          /* storage the strings point into */
    size_t nblocks, capblocks;
    size_t block_used, block_size;
    size_t block_bytes;     /* all blocks' sizes */
};

/* The main thread blocked in the kernel (a wait sample: sleep, lock,
 * poll...): what the host did while its GPU may have idled, for the
 * critical path (critpath.h). Other threads' waits are not kept. */
struct rsr_hwait {
    int64_t start_ns, end_ns;
    uint32_t stack;         /* the file's stack id */
    uint8_t reason;         /* enum rsf_wait_reason, or RSR_HWAIT_SETUP */
};
/* RSR_HWAIT_SETUP: no wait but the end, at start_ns = end_ns, of a
 * communicator's creation (the host's set-up before its steps) */
#define RSR_HWAIT_SETUP 254

struct rsr_summary;
struct rsr_node_proc;
struct rsr_memory;

struct rsr_model {
    /* Identity; -1 or 0 where the source does not say. */
    int32_t rank, local_rank, world_size;
    int64_t pid;
    uint32_t host, job;     /* string ids */
    uint8_t role;           /* enum rsr_role */
    int64_t wall_start_ns, wall_end_ns;  /* first and last time observed */
    uint64_t dropped;       /* records the source had that the model lacks */

    struct rsr_gpu_op *ops;         /* start order once rsr_model_finish ran */
    size_t n_ops, cap_ops;
    struct rsr_launch *launches;    /* correlation order once finished */
    size_t n_launches, cap_launches;
    struct rsr_coll *colls;
    size_t n_colls, cap_colls;
    struct rsr_strtab strings;

    /* Added for the multi-rank analyses (owned by `report`). */
    struct rsr_io *io;              /* start order once finished */
    size_t n_io, cap_io;
    struct rsr_sync *syncs;         /* start order once finished */
    size_t n_syncs, cap_syncs;
    struct rsr_hwait *hwaits;       /* start order once finished */
    size_t n_hwaits, cap_hwaits;
    struct rsr_range *ranges;       /* start order once finished; none when streamed */
    size_t n_ranges, cap_ranges;
    struct rsr_clock *clocks;       /* as read, on the source's own clocks */
    size_t n_clocks, cap_clocks;
    uint64_t mem_allocs, mem_frees; /* cuMemAlloc* / cuMemFree* calls */
    uint64_t mem_alloc_bytes;
    uint64_t graph_ops;             /* GPU ops that are CUDA graph nodes, timed by their share (graphs.h) */
    uint64_t graph_colls;           /* collectives replayed in CUDA graphs, timed the same way */
    /* What rsr_model_shift added to every time: after rsr_align, the model's
     * times are on the job's time line (ns, about CLOCK_REALTIME) and
     * local = job - clock_offset_ns. */
    int64_t clock_offset_ns;
    /* What the analyses read (summary.h), owned: made by the streaming
     * loader, whose model then holds no ops, launches, io or syncs, or by
     * rsr_model_summarize from the records. */
    struct rsr_summary *sum;
    /* Launch geometry as a Kineto trace gives it, for import-kineto to
     * write as the agent would: distinct launches (rsr_gpu_op.launch_geom),
     * the functions they name (functions[i].id == i + 1; name a string id)
     * and the GPUs' limits (devices, name a string id). Owned; none from
     * ringside files, whose loader works the figures out as it reads. */
    struct rsf_launch *geoms;
    size_t n_geoms, cap_geoms;
    struct rsf_function *functions;
    size_t n_functions, cap_functions;
    struct rsf_device *devices;
    size_t n_devices;
    /* The node counters the process sampled (nodes.h), owned; NULL: none. */
    struct rsr_node_proc *node;
    /* Its GPU memory (memory.h), owned; NULL: no memory call and no
     * driver memory figure in the source. */
    struct rsr_memory *mem;
    uint64_t late;          /* records the streaming loader got out of order */
    /* How its source ended (enum rsr_unclosed; RSR_CLOSED for a source
     * that is not a ringside file), and the most a killed process's file
     * lacks (its agent's flush interval): what rsr_ends_find reads. */
    uint8_t unclosed;
    /* The fatal signal it died of (the agent's fatal mark: a fault or an
     * abort) and when; 0: none */
    uint8_t fatal_sig;
    int64_t fatal_ns;
    /* The signal that ended it (SIGTERM, SIGINT: the agent's killed mark),
     * and whether the thread that took it was in a wait; 0: none */
    uint8_t killed_sig, killed_waiting;
    int64_t flush_ns;
    /* The main thread's time runnable without a CPU between the first and
     * the last of its readings (trace.fbs's run_delay series; 0: none). */
    int64_t run_delay_ns;
    /* Set by rsr_ends_find: where its records stop before the job's end,
     * on the job's time line; 0 where they do not. */
    int64_t early_end_ns;
    /* Off-CPU time from the process's samples (waits.h), filled where the
     * flame graphs are loaded; zero without samples. */
    struct rsr_proc_waits waits;
    /* Added for the modern framework: the rank whose process
     * started this one (role child; -1: none), to which its checkpoint
     * writes count (a background checkpoint writer); and what it is to
     * torch.compile (enum rsr_compile_kind, from its argv): what compile
     * workers and compilers write is code, never a checkpoint. */
    int32_t parent_rank;
    uint8_t compile_kind;
};

/* Bytes of memory m's own records and strings hold (process.h's
 * rsr_model_bytes adds its summary and node series). */
size_t rsr_model_records_bytes(const struct rsr_model *m);

/* Makes an empty model (no rank, role other). Cannot fail. */
void rsr_model_init(struct rsr_model *m);

/* Frees the model's own records and strings and leaves it empty (as after
 * rsr_model_init); the summary and node series it points to must have been
 * freed already (process.h's rsr_model_free frees all of it). */
void rsr_model_records_free(struct rsr_model *m);

/* Interns len bytes at s (need not be NUL-terminated) and stores its id in
 * *id; the same text always gets the same id, "" gets 0. Returns 0, or -1
 * when out of memory (the model is unchanged). */
int rsr_model_intern(struct rsr_model *m, const char *s, size_t len, uint32_t *id);

/* The NUL-terminated text of a string id, owned by the model and valid until
 * rsr_model_free; "" for 0 or an id the model does not have. */
const char *rsr_model_str(const struct rsr_model *m, uint32_t id);

/* Append one zeroed record (rsr_gpu_op with coll -1, rsr_coll with group
 * size and rank -1) and return it to be filled in. The pointer is valid until
 * the next append of the same kind. NULL when out of memory. */
struct rsr_gpu_op *rsr_model_add_op(struct rsr_model *m);
struct rsr_launch *rsr_model_add_launch(struct rsr_model *m);
struct rsr_coll *rsr_model_add_coll(struct rsr_model *m);
struct rsr_io *rsr_model_add_io(struct rsr_model *m);
struct rsr_sync *rsr_model_add_sync(struct rsr_model *m);
struct rsr_hwait *rsr_model_add_hwait(struct rsr_model *m);
struct rsr_range *rsr_model_add_range(struct rsr_model *m);
struct rsr_clock *rsr_model_add_clock(struct rsr_model *m);

/* Adds delta_ns to every time of m's own records (ops, launches, colls, io,
 * syncs, wall_start/end; not clocks) and to m->clock_offset_ns
 * (process.h's rsr_model_shift moves its summary too). */
void rsr_model_records_shift(struct rsr_model *m, int64_t delta_ns);

/* Puts the ops in start order and the launches in correlation order, which
 * the analyses and rsr_model_find_launch rely on; io and syncs in start
 * order; colls without times get those of their op, and colls without a
 * comm_id get one from their comm string, with seq counted per comm. Every loader calls it when
 * it has added all records. Returns 0 (it allocates nothing). */
int rsr_model_finish(struct rsr_model *m);

/* The ordering part of rsr_model_finish alone: ops, io and syncs in start
 * order, launches in correlation order (the streaming loader sorts its
 * window with it). */
void rsr_model_sort(struct rsr_model *m);

/* The launch with this correlation in a finished model, or NULL. */
const struct rsr_launch *rsr_model_find_launch(const struct rsr_model *m, uint64_t correlation);

/* The class of a kernel from its name: communication when it starts with
 * "nccl" or contains "ncclKernel" / "ncclDevKernel", else compute. (Copies
 * and sets are told apart by the loader, which knows what they are.) */
enum rsr_gpu_class rsr_gpu_classify_kernel(const char *name);

/* Names for the enums above; never NULL ("?" when out of range). */
const char *rsr_gpu_class_name(int cls);
const char *rsr_coll_op_name(int op);

/* The collective that len bytes at name call by PyTorch's or NCCL's name
 * ("allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced",
 * "AllReduce"...): compared without case or underscores, by prefix, so the
 * "_base" and "_coalesced" variants count as their operation.
 * RSR_COLL_UNKNOWN when it is none of them. */
enum rsr_coll_op rsr_coll_op_parse(const char *name, size_t len);

#endif
