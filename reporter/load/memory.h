/* A process's GPU memory as its allocation calls and the driver say
 * (trace.fbs's MemEvent, MemInfo and the gpu_mem_used/gpu_mem_total
 * series): what it holds from moment to moment, its peak, the calls that
 * failed, and which allocating stacks hold the memory.
 *
 * Two parts. rsr_memlive follows the live blocks themselves (address to
 * size and stack) while a file is read, and keeps each stack's bytes at the
 * peak and at the last failed call: the flame graph of memory (flame.c)
 * and the figures below both use it, and it is freed when the file ends.
 * rsr_memory is what stays of a process for the analyses: counts, a
 * timeline of RSR_MEM_BUCKETS bins (their width doubles as the file goes
 * on, so that it stays the same size however long the job), the peak, the
 * failed calls and the stack that grows. */
#ifndef RSR_MEMORY_H
#define RSR_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "formats/chunk.h"
#include "reporter/base/table.h"

/* A live (or once live) allocation: its address (a VMM allocation's
 * handle), bytes, and when its stack was taken (sampled), the stack (the
 * file's id; 0: the unwinder was not ready) and the bytes it stands for
 * (weight: the agent samples small allocations, trace.fbs's MemInfo). */
struct rsr_mem_block {
    uint64_t ptr, bytes, weight;
    uint32_t stack;
    uint8_t sampled;
    uint8_t pool;           /* enum rsr_mem_pool */
    uint8_t vmm;            /* a cuMemCreate handle, not an address */
    uint8_t host;           /* pinned host memory */
    uint8_t live;
};

/* Where device memory comes from: cuMemAlloc (and Pitch), the stream-ordered
 * pools (cuMemAllocAsync, cuMemAllocFromPoolAsync), VMM (cuMemCreate),
 * managed memory. */
enum rsr_mem_pool { RSR_POOL_ALLOC, RSR_POOL_ASYNC, RSR_POOL_VMM, RSR_POOL_MANAGED, RSR_NPOOLS };
const char *rsr_mem_pool_name(int pool);

/* The call that makes an allocation of kind (enum rsf_mem_kind; a failed
 * one's asked kind): "cuMemAlloc", "cuMemAllocAsync"... */
const char *rsr_mem_call_name(unsigned kind);

/* One allocating stack's device bytes (the weights of its sampled blocks):
 * held now, by how many blocks, and at the peak. */
struct rsr_mem_stack {
    uint32_t stack;
    uint32_t nlive;
    uint64_t live, at_peak;
};

struct rsr_memlive {
    struct rsr_mem_block *blocks;
    size_t nblocks, capblocks;
    struct rsr_table by_ptr;
    struct rsr_mem_stack *stacks;
    size_t nstacks, capstacks;
    struct rsr_table by_stack;
    uint64_t live;          /* device bytes held now */
    uint64_t pool_live[RSR_NPOOLS], pool_at_peak[RSR_NPOOLS];  /* of them by where they came from */
    uint64_t peak;          /* the most held at once, and when (the file's clock) */
    int64_t peak_ns;
    int peak_open;          /* at_peak not yet taken for the latest peak */
    uint64_t host_live, host_peak;
    /* the agent's sampling (meta settings mem_stack_mb, mem_sample_mb), bytes:
     * a sampled block under always and every stands for every bytes; 0: not
     * sampled (each stands for itself) */
    uint64_t always, every;
    /* the stacks' weights at the peak, all of them (the graph scales them
     * to the peak's bytes: unsampled blocks are shared out) */
    uint64_t weight_at_peak;
};

/* The agent's sampling of allocation stacks from a file's first chunk. */
void rsr_memlive_meta(struct rsr_memlive *l, const struct rsf_chunk *c);

/* Takes one memory call (mi: its MemInfo, NULL for files before it).
 * Frees of an address it never saw allocated change nothing. */
void rsr_memlive_event(struct rsr_memlive *l, const struct rsf_mem_event *e, const struct rsf_mem_info *mi);

/* The stack holding the most now among those with 3 or more blocks held
 * (memory one call site takes again and again and keeps): its id (0:
 * none), with its bytes and blocks when not NULL. */
uint32_t rsr_memlive_growing(const struct rsr_memlive *l, uint64_t *bytes, uint32_t *blocks);

/* Settles each stack's at_peak (call when the file has ended). */
void rsr_memlive_end(struct rsr_memlive *l);

void rsr_memlive_free(struct rsr_memlive *l);

/* Bins of the timeline: device bytes held by the program (most and last in
 * the bin), and the driver's figure of the device's memory in use (most). */
#define RSR_MEM_BUCKETS 512
struct rsr_mem_bucket {
    uint64_t live_max, live_last, used_max;
    uint8_t set, used_set;
};

/* A failed allocation (CUDA_ERROR_OUT_OF_MEMORY mostly): when, what it
 * asked for, what the program held then, the driver's free and total
 * (0: not read), and whether a later allocation of the same thread of at
 * least that size succeeded within RSR_MEM_RETRY_NS (a caching allocator
 * that emptied its cache and tried again: retried, retry_ns after the
 * failure). */
#define RSR_MEM_FAILS 16
#define RSR_MEM_RETRY_NS 10000000000ll
struct rsr_mem_fail {
    int64_t ns, retry_ns;
    uint64_t asked, live, free_b, total_b;
    uint32_t tid, stack;
    int32_t result, device;
    uint8_t asked_kind, retried;
};

struct rsr_memory {
    struct rsr_memlive live;        /* while the file is read; freed by rsr_memory_end */
    uint64_t allocs, frees, failed, alloc_bytes;
    int32_t device;                 /* of its first device allocation, -1: not known */
    uint64_t total;                 /* the device's memory (the driver's), 0: not read */
    uint64_t peak;                  /* device bytes held at once, at most; when */
    int64_t peak_ns;
    uint64_t peak_by_pool[RSR_NPOOLS];  /* the peak's bytes by where they came from */
    uint64_t end_live;              /* held when the file ended */
    uint64_t host_peak;
    uint64_t used_max;              /* the driver's in-use figure: its most, and its latest and when */
    uint64_t used_last;
    int64_t used_last_ns;
    /* in use beyond the program's own bytes (the driver's figure less what
     * the program held as it was read), the most at any reading (-1: none
     * read; teardown gives NCCL's back before the program's, so the last
     * reading can miss it) */
    int64_t other_max;
    uint32_t used_series, total_series;  /* this file's series ids for them (0: none yet) */
    int64_t t0_ns, width_ns;        /* bin i covers [t0 + i * width, t0 + (i + 1) * width) */
    uint32_t nb;                    /* bins in use */
    struct rsr_mem_bucket b[RSR_MEM_BUCKETS];
    struct rsr_mem_fail fails[RSR_MEM_FAILS];   /* the first RSR_MEM_FAILS - 1 and the latest, in time order */
    uint32_t nfails;
    uint64_t retried;               /* failures a retry got past, and their time in all */
    int64_t retry_ns;
    /* The stack holding the most when the file ended among those with 3 or
     * more blocks still held (memory that one call site takes again and again
     * and keeps): its bytes and blocks (0: none). */
    uint64_t grow_bytes;
    uint32_t grow_blocks;
};

/* Takes a chunk's memory calls and the driver's memory points into *mem,
 * made (zeroed, device -1, sampling's always and every) when NULL and
 * there is something to take. Returns 0, or -1 when out of memory. */
int rsr_memory_chunk(struct rsr_memory **mem, const struct rsr_memlive *sampling, const struct rsf_chunk *c);

/* The file has ended: settles the peak and the growing stack, and frees the
 * live blocks. */
void rsr_memory_end(struct rsr_memory *mem);

/* Adds delta_ns to every time in it. */
void rsr_memory_shift(struct rsr_memory *mem, int64_t delta_ns);

/* Bin i's time span's start and end (ns). */
int64_t rsr_memory_bin_start(const struct rsr_memory *mem, uint32_t i);

/* The program's device bytes held at time ns: the last bin at or before it
 * with a figure (0 before the first). */
uint64_t rsr_memory_live_at(const struct rsr_memory *mem, int64_t ns);

/* The most held in [from, to), by the bins that meet it. */
uint64_t rsr_memory_max_in(const struct rsr_memory *mem, int64_t from, int64_t to);

size_t rsr_memory_bytes(const struct rsr_memory *mem);
void rsr_memory_free(struct rsr_memory *mem);

#endif
