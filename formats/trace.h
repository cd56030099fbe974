/* The C mirror of formats/trace.fbs: struct layouts, enum values and table
 * field slots, shared by the agent's writer and the reporter's reader. The
 * layouts are held against flatc's generated code by tests/flatc_verify.cc;
 * change trace.fbs and this header together, adding at the end only. */
#ifndef RSF_TRACE_H
#define RSF_TRACE_H

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the trace format is little-endian and read in place: big-endian hosts are not supported"
#endif

#define RSF_FORMAT_VERSION 1
#define RSF_IDENT "RSDT"
/* A chunk (one LZ4 frame) never decompresses to more than this. */
#define RSF_CHUNK_MAX (64u << 20)

enum rsf_role { RSF_ROLE_RANK = 0, RSF_ROLE_CHILD = 1, RSF_ROLE_OTHER = 2 };

/* Direction of an I/O call, for byte totals. */
enum rsf_dir { RSF_DIR_NONE = 0, RSF_DIR_READ = 1, RSF_DIR_WRITE = 2 };

/* enum IoOp, in trace.fbs order: name as flatc prints it, and direction. */
#define RSF_IO_OPS(X) \
    X(OPEN, open, NONE) X(OPENAT, openat, NONE) X(CREAT, creat, NONE) \
    X(CLOSE, close, NONE) X(READ, read, READ) X(WRITE, write, WRITE) \
    X(PREAD, pread, READ) X(PWRITE, pwrite, WRITE) X(READV, readv, READ) \
    X(WRITEV, writev, WRITE) X(PREADV, preadv, READ) X(PWRITEV, pwritev, WRITE) \
    X(PREADV2, preadv2, READ) X(PWRITEV2, pwritev2, WRITE) X(FSYNC, fsync, NONE) \
    X(FDATASYNC, fdatasync, NONE) X(LSEEK, lseek, NONE) X(MMAP, mmap, NONE) \
    X(FOPEN, fopen, NONE) X(FDOPEN, fdopen, NONE) X(FCLOSE, fclose, NONE) \
    X(FREAD, fread, READ) X(FWRITE, fwrite, WRITE) X(FFLUSH, fflush, NONE) \
    X(FGETS, fgets, READ) X(FPUTS, fputs, WRITE) X(FGETC, fgetc, READ) \
    X(FPUTC, fputc, WRITE) X(FPRINTF, fprintf, WRITE) \
    X(COPY_IN, copy_file_range_in, READ) X(COPY_OUT, copy_file_range_out, WRITE) \
    X(SENDFILE_IN, sendfile_in, READ) X(SENDFILE_OUT, sendfile_out, WRITE)

enum rsf_io_op {
#define RSF_IO_ENUM(id, name, dir) RSF_IO_##id,
    RSF_IO_OPS(RSF_IO_ENUM)
#undef RSF_IO_ENUM
    RSF_IO_NOPS
};

/* The op's name as in trace.fbs, or NULL for a value outside the enum. */
const char *rsf_io_op_name(unsigned op);
/* The op's direction (enum rsf_dir); RSF_DIR_NONE outside the enum. */
int rsf_io_op_dir(unsigned op);

struct rsf_clock_pair { uint64_t mono_ns, real_ns; };

struct rsf_io_event {
    uint64_t start_ns, dur_ns;
    int64_t offset, result;
    uint32_t file, tid;
    uint8_t op;
    uint8_t pad_[7];
};

struct rsf_file_ref { uint32_t id, path; int32_t flags; };
struct rsf_thread_ref { uint32_t tid, name; };

/* enum GpuKind, CopyDir, SyncKind, CollOp, CommKind, MemKind, SampleKind:
 * the names as flatc prints them, in trace.fbs order. */
#define RSF_GPU_KINDS(X) X(KERNEL, kernel) X(MEMCPY, memcpy) X(MEMSET, memset) X(GRAPH, graph)
#define RSF_COPY_DIRS(X) X(NONE, none) X(HTOD, htod) X(DTOH, dtoh) X(DTOD, dtod) X(HTOH, htoh) \
    X(PEER, peer)
#define RSF_SYNC_KINDS(X) X(STREAM, stream) X(EVENT, event) X(CONTEXT, context) \
    X(MEMCPY, memcpy) X(STREAM_WAIT_EVENT, stream_wait_event) X(QUERY, query)
#define RSF_COLL_OPS(X) X(ALLREDUCE, allreduce) X(ALLGATHER, allgather) \
    X(REDUCESCATTER, reducescatter) X(BROADCAST, broadcast) X(REDUCE, reduce) \
    X(ALLTOALL, alltoall) X(GATHER, gather) X(SCATTER, scatter) X(SEND, send) X(RECV, recv)
#define RSF_COMM_KINDS(X) X(INIT, init) X(INIT_ALL, init_all) X(SPLIT, split) \
    X(DESTROY, destroy) X(ABORT, abort) X(FINALIZE, finalize)
#define RSF_MEM_KINDS(X) X(ALLOC, alloc) X(FREE, free) X(ALLOC_HOST, alloc_host) \
    X(FREE_HOST, free_host) X(ALLOC_MANAGED, alloc_managed) X(ALLOC_ASYNC, alloc_async) \
    X(FREE_ASYNC, free_async) X(VMM_CREATE, vmm_create) X(VMM_RELEASE, vmm_release) \
    X(VMM_MAP, vmm_map) X(VMM_UNMAP, vmm_unmap) X(ALLOC_FAILED, alloc_failed)
#define RSF_SAMPLE_KINDS(X) X(CPU, cpu) X(WAIT, wait) X(GPU, gpu) X(MEM, mem)
#define RSF_RANGE_KINDS(X) X(PUSH, push) X(START, start) X(MARK, mark)
/* enum WaitReason: X(ID, name in trace.fbs, name shown to users) */
#define RSF_WAIT_REASONS(X) X(NONE, none, "none") X(LOCK, lock, "lock") \
    X(RWLOCK, rwlock, "rwlock") X(SPIN, spin, "spin") X(CONDVAR, condvar, "condvar") \
    X(SEMAPHORE, semaphore, "semaphore") X(JOIN, join, "join") X(BARRIER, barrier, "barrier") \
    X(POLL, poll, "poll") X(SOCKET, socket, "socket") X(PIPE, pipe, "pipe") X(FILE, file, "file") \
    X(CHILD, child, "child") X(SLEEP, sleep, "sleep") X(FUTEX, futex, "futex") \
    X(CUDA_SYNC, cuda_sync, "cuda-sync") X(FILE_LOCK, file_lock, "file-lock")

#define RSF_ENUM_GPU(id, name) RSF_GPU_##id,
#define RSF_ENUM_DIR(id, name) RSF_COPY_##id,
#define RSF_ENUM_SYNC(id, name) RSF_SYNC_##id,
#define RSF_ENUM_COLL(id, name) RSF_COLL_##id,
#define RSF_ENUM_COMM(id, name) RSF_COMM_##id,
#define RSF_ENUM_MEM(id, name) RSF_MEM_##id,
#define RSF_ENUM_SAMPLE(id, name) RSF_SAMPLE_##id,
#define RSF_ENUM_RANGE(id, name) RSF_RANGE_##id,
enum rsf_gpu_kind { RSF_GPU_KINDS(RSF_ENUM_GPU) RSF_GPU_NKINDS };
enum rsf_copy_dir { RSF_COPY_DIRS(RSF_ENUM_DIR) RSF_COPY_NDIRS };
enum rsf_sync_kind { RSF_SYNC_KINDS(RSF_ENUM_SYNC) RSF_SYNC_NKINDS };
enum rsf_coll_op { RSF_COLL_OPS(RSF_ENUM_COLL) RSF_COLL_NOPS };
enum rsf_comm_kind { RSF_COMM_KINDS(RSF_ENUM_COMM) RSF_COMM_NKINDS };
enum rsf_mem_kind { RSF_MEM_KINDS(RSF_ENUM_MEM) RSF_MEM_NKINDS };
enum rsf_sample_kind { RSF_SAMPLE_KINDS(RSF_ENUM_SAMPLE) RSF_SAMPLE_NKINDS };
enum rsf_range_kind { RSF_RANGE_KINDS(RSF_ENUM_RANGE) RSF_RANGE_NKINDS };
#define RSF_ENUM_WAIT(id, name, label) RSF_WAIT_##id,
enum rsf_wait_reason { RSF_WAIT_REASONS(RSF_ENUM_WAIT) RSF_WAIT_NREASONS };
#undef RSF_ENUM_WAIT
#undef RSF_ENUM_GPU
#undef RSF_ENUM_DIR
#undef RSF_ENUM_SYNC
#undef RSF_ENUM_COLL
#undef RSF_ENUM_COMM
#undef RSF_ENUM_MEM
#undef RSF_ENUM_SAMPLE
#undef RSF_ENUM_RANGE

/* Names of those enums' values as in trace.fbs; NULL outside the enum. */
const char *rsf_gpu_kind_name(unsigned v);
const char *rsf_copy_dir_name(unsigned v);
const char *rsf_sync_kind_name(unsigned v);
const char *rsf_coll_op_name(unsigned v);
const char *rsf_comm_kind_name(unsigned v);
const char *rsf_mem_kind_name(unsigned v);
const char *rsf_sample_kind_name(unsigned v);
const char *rsf_range_kind_name(unsigned v);
const char *rsf_wait_reason_name(unsigned v);
/* A wait reason as users read it ("cuda-sync", the leaf of a wait stack);
 * NULL outside the enum. */
const char *rsf_wait_reason_label(unsigned v);

/* GpuEvent.flags and CollEvent.flags */
enum {
    RSF_GPUF_PTSZ = 1,        /* per-thread default stream */
    RSF_GPUF_CAPTURED = 2,    /* launched into a graph capture: not timed */
    RSF_GPUF_SYNC = 4,        /* synchronous copy or set */
    RSF_GPUF_COOPERATIVE = 8,
    RSF_GPUF_EX = 16,         /* cuLaunchKernelEx */
    /* CollEvent: a copy of a call written while it was in flight, RINGSIDE_HANG_S
     * after its launch (a stuck job's watchdog, writer.c); the call itself
     * follows, timed, if it ever finishes */
    RSF_COLLF_IN_FLIGHT = 32,
    /* CollEvent: enqueued after the call returned by NCCL's own thread (a
     * non-blocking communicator's ncclInProgress): its own events only bound
     * its GPU time; the kernel NCCL launched for it has its times */
    RSF_COLLF_LATE = 64
};

struct rsf_gpu_event {
    uint64_t launch_ns, gpu_start_ns, gpu_end_ns, stream, bytes;
    uint32_t call_ns, tid, name;
    int16_t device;
    uint8_t kind, dir, flags;
    uint8_t pad_[3];
    uint32_t graph;          /* graph launches: the GraphNode.graph run (0: not known) */
};

struct rsf_sync_event {
    uint64_t start_ns, dur_ns, target;
    uint32_t tid;
    uint8_t kind;
    uint8_t pad_[3];
};

struct rsf_coll_event {
    uint64_t launch_ns, gpu_start_ns, gpu_end_ns, count, bytes, comm, stream;
    uint32_t call_ns, tid, seq;
    int32_t peer;
    uint8_t op, datatype, redop, group, flags;
    uint8_t pad_[3];
};

struct rsf_comm_event {
    uint64_t start_ns, dur_ns, comm, handle, parent;
    uint32_t tid;
    int32_t rank, nranks, device;
    uint8_t kind;
    uint8_t pad_[7];
};

struct rsf_mem_event {
    uint64_t start_ns, dur_ns, ptr, bytes;
    uint32_t tid;
    uint8_t kind;
    uint8_t pad_[3];
};

/* MemInfo: what else is known of mems[i] (trace.fbs). */
struct rsf_mem_info {
    uint64_t stream;
    uint32_t stack;
    int32_t device;
    int32_t result;
    uint8_t asked;
    uint8_t flags;          /* RSF_MEMF_* */
    uint8_t pad_[2];
};
/* MemInfo.flags: the call's stack was taken (sampled; stack 0 then: the
 * unwinder was not ready) */
#define RSF_MEMF_SAMPLED 1

/* Stack frames: bit 63 marks a Python frame (low 32 bits: string id);
 * RSF_FRAME_TRUNCATED, the outermost frame of a stack cut at its depth
 * limit, stands for the frames cut (no address has bit 62 set). */
#define RSF_FRAME_PYTHON (1ull << 63)
#define RSF_FRAME_TRUNCATED (1ull << 62)
struct rsf_frame { uint64_t addr; };

struct rsf_sample {
    uint64_t ts_ns, weight_ns;
    uint32_t tid, stack;
    uint8_t kind;
    uint8_t reason;          /* enum rsf_wait_reason */
    uint8_t pad_[6];
};

struct rsf_module {
    uint64_t ts_ns, start, end, file_off;
    uint32_t path, build_id;
};

/* Range.flags */
enum { RSF_RANGEF_OPEN_AT_EXIT = 1 };

struct rsf_range {
    uint64_t start_ns, end_ns;
    uint32_t tid, end_tid, name, domain, category;
    uint16_t depth;
    uint8_t kind, flags;
};

/* Launch: a kernel launch's geometry, gpu[i]'s when in launches[i]. */
struct rsf_launch {
    uint32_t grid_x, grid_y, grid_z, smem_dyn, func;
    uint16_t block_x, block_y, block_z, cluster_x, cluster_y, cluster_z;
};

/* CollGroup: the NCCL group of colls[i] when in coll_groups[i] (0: none). */
struct rsf_coll_group {
    uint64_t group;
};

/* Function: a launched function's attributes, once per file. */
struct rsf_function {
    uint32_t id, name, static_smem, local_bytes;
    uint16_t max_threads, regs;
    int16_t device;
    uint16_t binary_version;
};

/* Device: a GPU's limits, once per file. */
struct rsf_device {
    int32_t ordinal;
    uint32_t cc_major, cc_minor, sm_count, max_threads_per_sm, max_blocks_per_sm, regs_per_sm,
        smem_per_sm, max_threads_per_block, regs_per_block, smem_per_block_optin,
        smem_reserved_per_block, warp_size, clock_khz, name, uuid, pci;
};

/* CUDA graphs: enum GraphNodeKind; a captured node and an edge between two. */
#define RSF_GRAPH_NODE_KINDS(X) X(KERNEL, kernel) X(COLLECTIVE, collective) X(MEMCPY, memcpy) \
    X(MEMSET, memset)
#define RSF_ENUM_GNODE(id, name) RSF_GNODE_##id,
enum rsf_graph_node_kind { RSF_GRAPH_NODE_KINDS(RSF_ENUM_GNODE) RSF_GNODE_NKINDS };
#undef RSF_ENUM_GNODE
const char *rsf_graph_node_kind_name(unsigned v);

struct rsf_graph_node {
    uint64_t bytes, comm;
    uint32_t graph, node, name, stack;
    uint32_t grid_x, grid_y, grid_z, smem_dyn, func;
    uint16_t block_x, block_y, block_z;
    int16_t device;
    uint8_t kind, op, dir;
    uint8_t pad_[1];
};

struct rsf_graph_edge { uint32_t graph, from, to; };

/* enum MarkKind (trace.fbs): the agent's notes on the process itself */
#define RSF_MARK_KINDS(X) X(FATAL, fatal) X(STUCK, stuck) X(KILLED, killed)
#define RSF_ENUM_MARK(id, name) RSF_MARK_##id,
enum rsf_mark_kind { RSF_MARK_KINDS(RSF_ENUM_MARK) RSF_MARK_NKINDS };
#undef RSF_ENUM_MARK
const char *rsf_mark_kind_name(unsigned v);

struct rsf_mark {
    uint64_t ts_ns, since_ns;
    uint32_t tid, stack;
    uint8_t kind, sig;
    uint8_t pad_[6];
};

/* enum SeriesKind, LinkKind (trace.fbs says what each series' values are) */
#define RSF_SERIES_KINDS(X) X(LINK_TX, link_tx) X(LINK_RX, link_rx) X(DISK_READ, disk_read) \
    X(DISK_WRITE, disk_write) X(NFS_READ, nfs_read) X(NFS_WRITE, nfs_write) \
    X(CPU_BUSY, cpu_busy) X(CPU_TOTAL, cpu_total) X(MEM_TOTAL, mem_total) \
    X(MEM_AVAILABLE, mem_available) X(MEM_DIRTY, mem_dirty) X(GPU_UTIL, gpu_util) \
    X(GPU_SM_ACTIVE, gpu_sm_active) X(GPU_SM_OCCUPANCY, gpu_sm_occupancy) \
    X(GPU_TENSOR_ACTIVE, gpu_tensor_active) X(GPU_DRAM_ACTIVE, gpu_dram_active) \
    X(GPU_PCIE_TX, gpu_pcie_tx) X(GPU_PCIE_RX, gpu_pcie_rx) X(GPU_NVLINK_TX, gpu_nvlink_tx) \
    X(GPU_NVLINK_RX, gpu_nvlink_rx) X(GPU_MEM_USED, gpu_mem_used) X(GPU_MEM_TOTAL, gpu_mem_total) \
    X(RUN_DELAY, run_delay)
#define RSF_LINK_KINDS(X) X(NONE, none) X(IB, ib) X(ROCE, roce) X(ETH, eth) \
    X(LOOPBACK, loopback) X(NVLINK, nvlink)
#define RSF_ENUM_SERIES(id, name) RSF_SERIES_##id,
#define RSF_ENUM_LINK(id, name) RSF_LINK_##id,
enum rsf_series_kind { RSF_SERIES_KINDS(RSF_ENUM_SERIES) RSF_SERIES_NKINDS };
enum rsf_link_kind { RSF_LINK_KINDS(RSF_ENUM_LINK) RSF_LINK_NKINDS };
#undef RSF_ENUM_SERIES
#undef RSF_ENUM_LINK
const char *rsf_series_kind_name(unsigned v);
const char *rsf_link_kind_name(unsigned v);

struct rsf_series {
    uint64_t rate;           /* bytes per second; 0: not known */
    uint32_t id, name;
    int32_t device;
    uint8_t kind, link;
    uint8_t pad_[2];
};

struct rsf_point {
    uint64_t ts_ns, value;
    uint32_t series;
    uint8_t pad_[4];
};

_Static_assert(sizeof(struct rsf_clock_pair) == 16, "ClockPair layout");
_Static_assert(sizeof(struct rsf_io_event) == 48, "IoEvent layout");
_Static_assert(sizeof(struct rsf_file_ref) == 12, "FileRef layout");
_Static_assert(sizeof(struct rsf_thread_ref) == 8, "ThreadRef layout");
_Static_assert(sizeof(struct rsf_gpu_event) == 64, "GpuEvent layout");
_Static_assert(sizeof(struct rsf_sync_event) == 32, "SyncEvent layout");
_Static_assert(sizeof(struct rsf_coll_event) == 80, "CollEvent layout");
_Static_assert(sizeof(struct rsf_comm_event) == 64, "CommEvent layout");
_Static_assert(sizeof(struct rsf_mem_event) == 40, "MemEvent layout");
_Static_assert(sizeof(struct rsf_mem_info) == 24, "MemInfo layout");
_Static_assert(sizeof(struct rsf_frame) == 8, "Frame layout");
_Static_assert(sizeof(struct rsf_sample) == 32, "Sample layout");
_Static_assert(sizeof(struct rsf_module) == 40, "Module layout");
_Static_assert(sizeof(struct rsf_range) == 40, "Range layout");
_Static_assert(sizeof(struct rsf_launch) == 32, "Launch layout");
_Static_assert(sizeof(struct rsf_function) == 24, "Function layout");
_Static_assert(sizeof(struct rsf_device) == 68, "Device layout");
_Static_assert(sizeof(struct rsf_series) == 24, "Series layout");
_Static_assert(sizeof(struct rsf_point) == 24, "Point layout");
_Static_assert(sizeof(struct rsf_coll_group) == 8, "CollGroup layout");
_Static_assert(sizeof(struct rsf_graph_node) == 64, "GraphNode layout");
_Static_assert(sizeof(struct rsf_graph_edge) == 12, "GraphEdge layout");
_Static_assert(sizeof(struct rsf_mark) == 32, "Mark layout");

/* Field slots of each table, in trace.fbs declaration order. */
enum { RSF_SETTING_KEY, RSF_SETTING_VALUE, RSF_SETTING_NSLOTS };
enum {
    RSF_META_FORMAT_VERSION, RSF_META_HOST, RSF_META_PID, RSF_META_PPID, RSF_META_RANK,
    RSF_META_LOCAL_RANK, RSF_META_WORLD_SIZE, RSF_META_PARENT_RANK, RSF_META_ROLE,
    RSF_META_JOB, RSF_META_ARGV, RSF_META_START, RSF_META_SETTINGS,
    RSF_META_AGENT_VERSION, RSF_META_CUDA_VERSION, RSF_META_NCCL_VERSION, RSF_META_NSLOTS
};
enum {
    RSF_COUNTERS_RECORDED, RSF_COUNTERS_DROPPED, RSF_COUNTERS_DROPPED_IO,
    RSF_COUNTERS_DROPPED_GPU, RSF_COUNTERS_DROPPED_NCCL, RSF_COUNTERS_DROPPED_SAMPLES,
    RSF_COUNTERS_DROPPED_RANGES, RSF_COUNTERS_NSLOTS
};
enum { RSF_STACK_ID, RSF_STACK_FRAMES, RSF_STACK_NSLOTS };
enum {
    RSF_CHUNK_SEQ, RSF_CHUNK_META, RSF_CHUNK_STRINGS_BASE, RSF_CHUNK_STRINGS,
    RSF_CHUNK_FILES, RSF_CHUNK_THREADS, RSF_CHUNK_CLOCKS, RSF_CHUNK_IO,
    RSF_CHUNK_COUNTERS, RSF_CHUNK_END, RSF_CHUNK_GPU, RSF_CHUNK_SYNCS, RSF_CHUNK_COLLS,
    RSF_CHUNK_COMMS, RSF_CHUNK_MEMS, RSF_CHUNK_STACKS, RSF_CHUNK_SAMPLES, RSF_CHUNK_MODULES,
    RSF_CHUNK_RANGES, RSF_CHUNK_LAUNCHES, RSF_CHUNK_FUNCTIONS, RSF_CHUNK_DEVICES, RSF_CHUNK_SERIES,
    RSF_CHUNK_POINTS, RSF_CHUNK_COLL_GROUPS, RSF_CHUNK_GRAPH_NODES, RSF_CHUNK_GRAPH_EDGES, RSF_CHUNK_MARKS,
    RSF_CHUNK_MEM_INFO, RSF_CHUNK_NSLOTS
};

#endif
