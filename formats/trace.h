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

_Static_assert(sizeof(struct rsf_clock_pair) == 16, "ClockPair layout");
_Static_assert(sizeof(struct rsf_io_event) == 48, "IoEvent layout");
_Static_assert(sizeof(struct rsf_file_ref) == 12, "FileRef layout");
_Static_assert(sizeof(struct rsf_thread_ref) == 8, "ThreadRef layout");

/* Field slots of each table, in trace.fbs declaration order. */
enum { RSF_SETTING_KEY, RSF_SETTING_VALUE, RSF_SETTING_NSLOTS };
enum {
    RSF_META_FORMAT_VERSION, RSF_META_HOST, RSF_META_PID, RSF_META_PPID, RSF_META_RANK,
    RSF_META_LOCAL_RANK, RSF_META_WORLD_SIZE, RSF_META_PARENT_RANK, RSF_META_ROLE,
    RSF_META_JOB, RSF_META_ARGV, RSF_META_START, RSF_META_SETTINGS,
    RSF_META_AGENT_VERSION, RSF_META_CUDA_VERSION, RSF_META_NCCL_VERSION, RSF_META_NSLOTS
};
enum { RSF_COUNTERS_RECORDED, RSF_COUNTERS_DROPPED, RSF_COUNTERS_DROPPED_IO, RSF_COUNTERS_NSLOTS };
enum {
    RSF_CHUNK_SEQ, RSF_CHUNK_META, RSF_CHUNK_STRINGS_BASE, RSF_CHUNK_STRINGS,
    RSF_CHUNK_FILES, RSF_CHUNK_THREADS, RSF_CHUNK_CLOCKS, RSF_CHUNK_IO,
    RSF_CHUNK_COUNTERS, RSF_CHUNK_END, RSF_CHUNK_NSLOTS
};

#endif
