/* Flame graphs: the Sample, Stack and Module records of trace files become a
 * call tree (stacks symbolised, root first, weights in ns), written as folded
 * text ("root;...;leaf weight", what flamegraph.pl and speedscope read) or as
 * an interactive SVG (flame_svg.c). Used by `ringside flame` and `report`. */
#ifndef RSR_FLAME_H
#define RSR_FLAME_H

#include <stdint.h>
#include <stdio.h>

#include "reporter/base/intern.h"
#include "reporter/base/table.h"

struct rsr_sym;

/* What a frame is, for colours and hover text. */
enum rsr_frame_class {
    RSR_FRAME_NATIVE,     /* a function found in an ELF file */
    RSR_FRAME_INLINE,     /* a function inlined into its caller */
    RSR_FRAME_PYTHON,     /* "pkg/mod.py:qualname", ":LINE" added with lines */
    RSR_FRAME_UNKNOWN,    /* "[module+0xoff]" or [unknown] */
    RSR_FRAME_THREAD      /* a thread's name as a root frame (--threads) */
};

/* A node of the call tree; node 0 is the root, which has no frame. */
struct rsr_flame_node {
    uint32_t name;        /* frame name id in rsr_flame.names */
    uint32_t parent;
    uint32_t first_child, next_sibling; /* 0: none (the root is nobody's child) */
    uint64_t total;       /* weight of the samples under and at this frame */
    uint64_t self;        /* weight of the samples whose leaf this frame is */
    uint64_t count;       /* samples under and at this frame */
};

/* The frames of one module that could not be named, and why (the
 * symboliser's words: "file not found here", "build id differs", "no
 * symbols"...). path is the traced one, or "[vdso]" and the like, or
 * "[unknown]" for addresses no mapping holds. */
struct rsr_flame_unnamed {
    char *path, *why;             /* owned */
    uint64_t addresses;           /* distinct unnamed addresses */
    uint64_t samples;             /* samples whose stack holds one of them */
    uint64_t weight;              /* their weight (ns) */
};

/* Threads set apart from a wait graph: those that only waited on the
 * program's own (their CPU samples under RSR_FLAME_APART_CPU of their
 * waits, file waits under RSR_FLAME_APART_IO of them) in a process where
 * another thread worked (RSR_FLAME_WORK_NS of CPU or more), its main thread
 * never; every thread of a rank's child process (a DataLoader worker)
 * whose threads all only waited so; and a launcher's (a process neither a
 * rank nor a rank's child whose main thread's waits are RSR_FLAME_SUPERVISES
 * or more for its children or for time): its main thread and the threads
 * beside it that only waited. Parked helpers, pool threads, pollers, idle
 * workers, a launcher watching the job: their blocking holds nothing back.
 * By thread name, the heaviest RSR_FLAME_APART names. */
#define RSR_FLAME_APART 6
#define RSR_FLAME_APART_CPU 0.05
#define RSR_FLAME_APART_IO 0.1
#define RSR_FLAME_SUPERVISES 0.9
#define RSR_FLAME_WORK_NS 50000000ull
struct rsr_flame_apart {
    char name[28];                /* "" when the thread had none */
    uint32_t threads;
    uint64_t ns;
};

struct rsr_flame {
    int kind;                     /* enum rsf_sample_kind */
    struct rsr_intern names;      /* frame names */
    uint8_t *name_class;          /* per name id: enum rsr_frame_class */
    uint32_t *name_module;        /* per name id: id in modules (colours) */
    uint32_t ncap;
    struct rsr_intern modules;    /* module basenames; "python" for Python frames */
    struct rsr_flame_node *nodes;
    uint32_t nnodes, capnodes;
    struct rsr_table children;    /* (parent, name) -> node */
    uint32_t nprocs;              /* processes that contributed samples */
    /* GPU flame graphs: the processes' launch stack sampling, one timed
     * kernel launch in N per thread, least and most N (0: not recorded);
     * each thread's sampled stacks are scaled to its kernels' GPU time */
    uint32_t stack_every_min, stack_every_max;
    struct rsr_flame_unnamed *unnamed;  /* by module and reason */
    uint32_t nunnamed, capunnamed;
    /* wait graphs without --threads: what was set apart (above) */
    uint64_t apart_ns;
    uint32_t apart_threads;
    struct rsr_flame_apart apart[RSR_FLAME_APART];
    uint32_t napart;
};

/* Options of the loader. */
struct rsr_flame_opts {
    int kind;       /* enum rsf_sample_kind (rsr_flame_load reads fl->kind) */
    int rank;       /* only processes of this rank; -1 all */
    int threads;    /* thread names as root frames */
    int lines;      /* "func (file.c:line)" instead of "func", "mod.py:func:line" */
    int quiet;      /* no notices on stderr */
    int native;     /* every native frame; 0: a stack with Python frames keeps
                       only those, and the native frames below the innermost */
    /* Only samples inside [from_s, to_s) seconds from the job's start (the
     * earliest process's start, on the real-time clock): a wait sample
     * counts with the part of its wait inside; has_from/has_to: bounds given. */
    int has_from, has_to;
    double from_s, to_s;
    /* Or only the samples inside spans (nspans pairs [lo, hi), sorted and
     * apart, ns on the job's time line as the report aligns it: step_pick.h);
     * span_clock[i]: what takes file i's clock there (NULL: its real-time
     * clock). The caller owns both. */
    const int64_t *spans;
    size_t nspans;
    const int64_t *span_clock;
    struct rsr_sym *sym;  /* a symboliser to use (and keep); NULL: one of its own */
};

/* An empty tree for samples of kind. Free with rsr_flame_free. */
void rsr_flame_init(struct rsr_flame *fl, int kind);
void rsr_flame_free(struct rsr_flame *fl);

/* The id of a frame name, declaring its class and module (a name declared
 * more than once keeps the least class, then the least module by strcmp:
 * the same whatever order the declarations come in). */
uint32_t rsr_flame_frame(struct rsr_flame *fl, const char *name, enum rsr_frame_class cls,
                         const char *module);

/* Adds one stack (frame ids, root first, n >= 1) with its weight and the
 * number of samples it stands for. */
void rsr_flame_add(struct rsr_flame *fl, const uint32_t *frames, uint32_t n, uint64_t weight,
                   uint64_t count);

/* Loads the samples of fl->kind from the trace files (read in parallel) and
 * symbolises their stacks into fl. Files that cannot be read, or only in
 * part, are named on stderr (with the offset) and what can be read is used.
 * Returns the number of samples added. */
uint64_t rsr_flame_load(struct rsr_flame *fl, char **files, int nfiles,
                        const struct rsr_flame_opts *opts);

/* Fills fls[m * RSF_SAMPLE_NKINDS + kind] (initialised here; free each with
 * rsr_flame_free) for m < nsets with the samples of every kind inside [spans[2m], spans[2m+1])
 * (the job's aligned time line; clock[i] takes file i's clock there), all
 * ranks, each file read once for every set. */
void rsr_flame_load_spans(struct rsr_flame *fls, int nsets, const int64_t *spans,
                          const int64_t *clock, char **files, int nfiles, int quiet, int lines);

/* Writes the tree as folded lines, "root;...;leaf weight_ns", one per leaf
 * path with self weight, sorted by frame names. ';' in a name becomes ':'
 * and control characters '?', so that every line parses. Returns 0, or -1
 * on a write error. */
int rsr_flame_write_folded(FILE *f, const struct rsr_flame *fl);

/* The children of node in the order the outputs use (by name); *n gets the
 * count. The array is malloc'd: the caller frees it. */
uint32_t *rsr_flame_children(const struct rsr_flame *fl, uint32_t node, uint32_t *n);

/* The entry of (path, why) in fl->unnamed, added when new. */
struct rsr_flame_unnamed *rsr_flame_unnamed_of(struct rsr_flame *fl, const char *path, const char *why);

/* Adds every sample of src (a tree of the same kind) to dst. */
void rsr_flame_merge(struct rsr_flame *dst, const struct rsr_flame *src);

/* Writes the line that says what fl set apart ("set apart: 9 threads that
 * only waited (helpers, pools, pollers, idle workers), 41.2 s:
 * pt_autograd_0 x 4 (12 s), ..."), with end at its end; nothing when
 * nothing was. */
void rsr_flame_apart_line(FILE *f, const struct rsr_flame *fl, const char *end);

/* The report's trees: one per kind of sample in the default view, then one
 * per kind with every native frame (--native). */
#define RSR_FLAME_TREES (2 * RSF_SAMPLE_NKINDS)

struct rsr_proc_waits;

/* Symbolises every sampled stack of every kind in the files with sym (which
 * keeps what it looked up: `ringside symbols` packs it), as the report's
 * flame trees would. Returns the number of samples. */
uint64_t rsr_flame_symbolize(char **files, int nfiles, struct rsr_sym *sym, int quiet);

/* The report's trees (the report and `--watch`): a file's samples added up
 * as its chunks come (rsr_flame_feed_chunk, an rsr_chunk_fn, beside the
 * summaries' reader), then symbolised into fls[0..RSR_FLAME_TREES) by
 * rsr_flame_load_feeds (initialised there; free each with rsr_flame_free),
 * all ranks, with source lines in frame names when lines is set; waits[i]
 * (zeroed first) with feed i's off-CPU time (waits.h) when given. Symbolising leaves the feeds holding
 * the symboliser's handles: do it once in a process (a forked copy of the
 * process may do it, and the original still once). */
struct rsr_flame_feed;
struct rsf_chunk;
struct rsr_flame_feed *rsr_flame_feed_new(int quiet, int lines);
int rsr_flame_feed_chunk(const struct rsf_chunk *c, void *feed);
void rsr_flame_feed_free(struct rsr_flame_feed *f);
void rsr_flame_load_feeds(struct rsr_flame *fls, struct rsr_flame_feed *const *feeds, int n, int quiet, int lines,
                          struct rsr_proc_waits *waits);

/* Fills dst (initialised here) with src's stacks whose leaf is a wait
 * reason ("[wait: condvar]"), that reason moved to the root, so that each
 * reason's waits are one subtree. */
void rsr_flame_by_reason(const struct rsr_flame *src, struct rsr_flame *dst);

/* Adds the folded lines of f ("root;...;leaf weight", as
 * rsr_flame_write_folded writes them) to fl, each frame a native one; a
 * stack deeper than RSR_FLAME_DEPTH_MAX frames keeps its outermost ones,
 * the last of them "[N frames deeper]" for the rest (the graphs' walks
 * recurse once a level: a folded file from elsewhere must not exhaust the
 * stack). Returns 0, 1 when some lines were not folded lines (left out), or
 * -1 on a read error. */
#define RSR_FLAME_DEPTH_MAX 1024
int rsr_flame_read_folded(FILE *f, struct rsr_flame *fl);

/* For each node of fl, the node of other at the same path of names, or
 * UINT32_MAX where other has none (malloc'd, fl->nnodes entries; the root
 * maps to the root). other gains fl's names (not nodes). */
uint32_t *rsr_flame_match(const struct rsr_flame *fl, struct rsr_flame *other);

#endif
