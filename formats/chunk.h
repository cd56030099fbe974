/* A trace chunk in C: what the agent's writer fills to encode one, and what
 * the reader gives back after verifying one. Both sides use this struct, so
 * the format's field list exists once here (besides trace.fbs). */
#ifndef RSF_CHUNK_H
#define RSF_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/fb.h"
#include "formats/trace.h"

struct rsf_meta {
    uint32_t format_version;
    const char *host;
    int32_t pid, ppid;
    int32_t rank, local_rank, world_size, parent_rank; /* -1: unknown */
    uint8_t role;                                       /* enum rsf_role */
    const char *job;
    const char *const *argv;
    uint32_t argc;
    struct rsf_clock_pair start;
    const char *const *setting_keys;
    const char *const *setting_values;
    uint32_t nsettings;
    const char *agent_version;
    int32_t cuda_version, nccl_version;                 /* 0: unknown */
};

struct rsf_counters {
    uint64_t recorded;   /* records accepted so far */
    uint64_t dropped;    /* records lost to the memory bound so far */
    uint64_t dropped_io;
    uint64_t dropped_gpu;     /* GpuEvent, SyncEvent, MemEvent */
    uint64_t dropped_nccl;    /* CollEvent, CommEvent */
    uint64_t dropped_samples;
    uint64_t dropped_ranges;  /* NVTX records and ranges lost (trace.fbs) */
};

/* One Stack table: frames innermost first. */
struct rsf_stack {
    uint32_t id;
    const struct rsf_frame *frames;
    uint32_t nframes;
};

struct rsf_chunk {
    uint32_t seq;
    const struct rsf_meta *meta;         /* first chunk only, else NULL */
    uint32_t strings_base;               /* id of strings[0] */
    const char *const *strings;
    uint32_t nstrings;
    const struct rsf_file_ref *files;
    uint32_t nfiles;
    const struct rsf_thread_ref *threads;
    uint32_t nthreads;
    const struct rsf_clock_pair *clocks;
    uint32_t nclocks;
    const struct rsf_io_event *io;
    uint32_t nio;
    const struct rsf_counters *counters; /* NULL when absent */
    bool end;
    const struct rsf_gpu_event *gpu;
    uint32_t ngpu;
    const struct rsf_sync_event *syncs;
    uint32_t nsyncs;
    const struct rsf_coll_event *colls;
    uint32_t ncolls;
    const struct rsf_comm_event *comms;
    uint32_t ncomms;
    const struct rsf_mem_event *mems;
    uint32_t nmems;
    const struct rsf_stack *stacks;
    uint32_t nstacks;
    const struct rsf_sample *samples;
    uint32_t nsamples;
    const struct rsf_module *modules;
    uint32_t nmodules;
    const struct rsf_range *ranges;
    uint32_t nranges;
    const struct rsf_launch *launches;   /* nlaunches == ngpu, or 0: none */
    uint32_t nlaunches;
    const struct rsf_coll_group *coll_groups; /* ncoll_groups == ncolls, or 0: none */
    uint32_t ncoll_groups;
    const struct rsf_function *functions;
    uint32_t nfunctions;
    const struct rsf_device *devices;
    uint32_t ndevices;
    const struct rsf_series *series;
    uint32_t nseries;
    const struct rsf_point *points;
    uint32_t npoints;
    const struct rsf_graph_node *graph_nodes;     /* CUDA graphs' captured nodes */
    uint32_t ngraph_nodes;
    const struct rsf_graph_edge *graph_edges;
    uint32_t ngraph_edges;
    const struct rsf_mark *marks;       /* the agent's notes on the process (fatal signal, stuck call) */
    uint32_t nmarks;
    const struct rsf_mem_info *mem_info; /* nmem_info == nmems, or 0: none (files before it) */
    uint32_t nmem_info;
};

extern const struct rsf_table_desc rsf_chunk_desc;

/* Upper bound of the encoded size of c, size prefix included. */
size_t rsf_chunk_bound(const struct rsf_chunk *c);

/* Encodes c as one size-prefixed FlatBuffer into out (8-byte aligned).
 * Returns RSF_ERR_OK, or RSF_ERR_SPACE if out->cap is too small. */
int rsf_chunk_encode(const struct rsf_chunk *c, struct rsf_buf *out);

/* A decoded chunk: the fields point into the buffer given to
 * rsf_chunk_decode (which must outlive it) and into small arrays it owns. */
struct rsf_chunk_view {
    struct rsf_chunk c;
    struct rsf_meta meta;
    struct rsf_counters counters;
    void *owned; /* pointer arrays for strings, argv, settings */
    struct rsf_stack *owned_stacks;
};

/* Verifies buf (size bytes, 8-byte aligned, one size-prefixed chunk) and
 * fills v. Returns RSF_ERR_OK, or an error with *where set to the byte
 * offset of the fault in buf (v is then empty). Free with rsf_chunk_view_free. */
int rsf_chunk_decode(const uint8_t *buf, size_t size, struct rsf_chunk_view *v, size_t *where);
void rsf_chunk_view_free(struct rsf_chunk_view *v);

/* The value of the agent's setting key in m ("flush_ms", "gpu_stack_every":
 * the settings a file records in its meta), or NULL when it has none. */
const char *rsf_meta_setting(const struct rsf_meta *m, const char *key);

#endif
