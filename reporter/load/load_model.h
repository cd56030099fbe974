/* Ringside trace files into the reporter's timeline model (model.h): GPU
 * work with the launch calls behind it, NCCL collectives linked to the
 * kernels that ran them, communicators, host syncs, file I/O, memory calls
 * and clock pairs. load.c feeds it chunk by chunk while it walks a file, so
 * nothing of the decompressed chunks is kept. */
#ifndef RSR_LOAD_MODEL_H
#define RSR_LOAD_MODEL_H

#include <stdint.h>

#include "formats/chunk.h"
#include "reporter/load/memory.h"
#include "reporter/load/coll_groups.h"
#include "reporter/load/gpumetrics.h"
#include "reporter/load/model.h"

/* What the loader keeps between chunks of one file. */
struct rsr_model_loader {
    struct rsr_model *m;
    struct rsr_memlive mem_sampling;    /* the agent's sampling of allocation stacks (memory.h), from the meta */
    uint32_t *smap;             /* file string id -> model string id + 1 (0: not yet) */
    uint32_t nsmap;
    uint32_t *fmap;             /* file id -> file string id of its path */
    uint32_t nfmap;
    uint32_t *clsmap;           /* model string id -> kernel class + 1 (0: not yet) */
    uint32_t nclsmap;
    struct rsr_comm_info {
        uint64_t comm;
        int32_t rank, nranks;
        uint32_t replayed;      /* its calls replayed in CUDA graphs so far */
    } *comms;
    uint32_t ncomms, capcomms;
    uint64_t next_corr;
    uint32_t launch_names[RSF_GPU_NKINDS + 1];  /* string id + 1 per GpuKind (0: not yet) */
    /* what the file says of its devices (by ordinal, sm_count 0: none)
     * and launched functions (by id, id 0: none) */
    struct rsf_device devices[64];
    struct rsf_function *funcs;
    uint32_t nfuncs;
    struct rsr_gpum gpum;       /* NVML's figures (gpumetrics.h) */
    struct rsr_graphs *graphs;  /* CUDA graphs' nodes (graphs.h); NULL until a first kernel */
    struct rsr_group_fold groups;   /* NCCL groups being folded (coll_groups.h) */
    uint32_t run_delay_series;  /* the file's id of the main thread's run_delay series (0: none yet) */
    int have_run_delay;
    uint64_t run_delay_first;   /* its first reading (model.h's run_delay_ns counts from it) */
    int failed;                 /* out of memory: the model is incomplete */

    /* Streaming (rsr_model_loader_stream): the model's record arrays are a
     * window, settled into the summary builder up to a cut that trails the
     * latest start seen by lateness_ns (chunks come in time order, but a
     * record can reach the file later than records that started after it:
     * the agent flushes each thread's buffer on its own). */
    int stream;
    struct rsr_acc *acc;
    int64_t max_start;          /* latest start seen */
    int64_t lateness_ns;        /* how far behind max_start the cut trails */
    int64_t cut;                /* collectives settled before it, other records before cut - link tolerance */
    int settled;                /* cut is set */

    /* A window (rsr_model_loader_window): records wholly outside
     * [win_from, win_to] (the file's own clock) are not kept. */
    int windowed;
    int64_t win_from, win_to;
    uint64_t left_out;          /* GPU ops, syncs and I/O calls outside it */
};

/* Records behind the cut are settled when the window holds this many. */
#define RSR_STREAM_WINDOW 65536
/* The first lateness allowed; it grows to twice any lateness seen. */
#define RSR_STREAM_LATENESS_NS 3000000000ll

/* Starts loading into m (initialised by the caller, who owns it). */
void rsr_model_loader_init(struct rsr_model_loader *L, struct rsr_model *m);

/* Makes L (just initialised) summarise as it loads: the model then keeps
 * only a window of records and ends with no ops, launches, io or syncs but
 * with m->sum (summary.h). Memory no longer grows with the file. */
void rsr_model_loader_stream(struct rsr_model_loader *L);

/* Makes L (just initialised) keep only the records that overlap
 * [from_ns, to_ns] on the file's own clock: a full model of a stretch of
 * the file, in memory that grows with the stretch. */
void rsr_model_loader_window(struct rsr_model_loader *L, int64_t from_ns, int64_t to_ns);

/* Takes one verified chunk; strings[0..nstrings) are the file's strings by
 * id as far as read (the chunk's own included). Returns 0, or -1 when out
 * of memory (L->failed is then set and later chunks are ignored). */
int rsr_model_loader_chunk(struct rsr_model_loader *L, const struct rsf_chunk *c, char *const *strings,
                           uint32_t nstrings);

/* Ends loading: gives collectives their communicator ranks and sizes,
 * links each to the communication kernel that ran it (or adds an op for it
 * when its kernel was not seen), and finishes the model. Frees what the
 * loader holds, not the model. */
void rsr_model_loader_finish(struct rsr_model_loader *L);

/* Bytes per element of an ncclDataType_t, 0 when unknown, and its name. */
uint32_t rsr_nccl_dtype_size(unsigned dtype);
const char *rsr_nccl_dtype_name(unsigned dtype);

#endif
