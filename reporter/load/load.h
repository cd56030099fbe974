/* Reading trace files: a walker that hands every readable chunk to a
 * callback (skipping damaged frames and saying where they were), and the
 * loader that turns one file into a process summary for the report. */
#ifndef RSR_LOAD_H
#define RSR_LOAD_H

#include <stdint.h>

#include "formats/chunk.h"
#include "reporter/load/load_model.h"
#include "reporter/load/model.h"

#define RSR_MAX_PROBLEMS 8
/* The agent's RINGSIDE_FLUSH_MS default, for files whose settings lack it. */
#define RSR_FLUSH_MS_DEFAULT 1000

struct rsr_problem {
    uint64_t offset;     /* file offset of the frame */
    uint64_t chunk_off;  /* byte in the decompressed chunk, for verify errors */
    int err;             /* enum rsf_err */
    int in_chunk;        /* the frame was whole but its chunk did not verify */
};

struct rsr_walk {
    uint64_t file_size;
    uint64_t bad_bytes;  /* bytes that could not be read */
    uint32_t nchunks;    /* chunks read */
    uint32_t nproblems;
    struct rsr_problem problems[RSR_MAX_PROBLEMS];
    int cut_short;       /* the file ends inside a frame */
    int saw_end;         /* the last chunk read carries the end mark */
};

/* Called for each verified chunk, in file order; non-zero stops the walk. */
typedef int (*rsr_chunk_fn)(const struct rsf_chunk *c, void *arg);

/* Reads every whole, valid frame of path. Returns 0 when the file could be
 * read to its end (problems, if any, are in *walk), or -1 when it could not
 * be opened or read (errno set). */
int rsr_walk_file(const char *path, rsr_chunk_fn fn, void *arg, struct rsr_walk *walk);

/* The process's start on the real-time clock (ns), from the header of
 * path's first chunk; 0 when the file has none. */
int64_t rsr_file_start_real(const char *path);

/* The same from file offset from (a frame's start) on, adding to *walk
 * (not zeroed). With live set, the file may still be growing: a frame it
 * ends inside is not a problem but where the next call starts. *next gets
 * the offset after the last frame read. */
int rsr_walk_part(const char *path, uint64_t from, int live, rsr_chunk_fn fn, void *arg, struct rsr_walk *walk,
                  uint64_t *next);

/* Writes one line describing problem p of file path to stderr-like f. */
void rsr_problem_print(void *f, const char *path, const struct rsr_problem *p);

/* I/O totals for one path in one process. */
struct rsr_file_io {
    const char *path;
    uint64_t read_bytes, write_bytes, ops;
    uint64_t time_ns, read_ns, write_ns;
};

/* The words of a process's command line kept for report.json: enough to
 * name the program and its module or script, never a whole argument file. */
#define RSR_ARGV_MAX 16
#define RSR_ARGV_WORD_MAX 256

/* One trace file: who wrote it, what it holds, how well it read. */
struct rsr_input {
    char *file;                 /* the trace file */
    int has_meta;
    char *host, *job;
    char *series;               /* its RINGSIDE_SERIES (meta setting "series"), or NULL */
    int pid, ppid, rank, local_rank, world_size, parent_rank, role;
    int compile_kind;           /* enum rsr_compile_kind, from its argv */
    char **argv;                /* the command line, at most RSR_ARGV_MAX words (report.json) */
    uint32_t argc;
    uint64_t start_mono, end_mono;
    uint64_t recorded, dropped, dropped_io;
    uint32_t flush_ms;          /* the agent's flush interval (its settings; 1000 when not said) */
    uint64_t nio;
    struct rsr_walk walk;
    int open_failed;            /* errno when the file could not be read, else 0 */

    /* While loading: file id -> path id and totals, string id -> text.
     * Once loaded: by_id is gone and strings[i] is files[i].path. */
    struct rsr_file_io *by_id;
    uint32_t nids;
    char **strings;
    uint32_t nstrings;

    /* totals per path, filled by rsr_input_finish */
    struct rsr_file_io *files;
    uint32_t nfiles;

    /* The timeline (GPU work, collectives, I/O calls, syncs...), finished;
     * NULL only when out of memory. model_incomplete: it lacks records
     * (out of memory while loading). */
    struct rsr_model *model;
    int model_incomplete;
    struct rsr_model_loader loader;     /* while loading */
    uint64_t live_off;          /* rsr_input_feed: whole frames read up to here */
};

/* Loads path into in (zeroed first). Never fails as a whole: problems are
 * in in->walk and in->open_failed. */
void rsr_input_load(struct rsr_input *in, const char *path);
void rsr_input_free(struct rsr_input *in);

/* The same, summarising as it reads (rsr_model_loader_stream): in->model
 * then holds the process's identity, strings, clocks and summary, and no
 * records; memory does not grow with the file. */
void rsr_input_stream(struct rsr_input *in, const char *path);

/* Live loading (`report --watch`), the summary rsr_input_stream makes,
 * from a file that may still be growing: rsr_input_begin, then
 * rsr_input_feed as often as the file grows, each time reading only its
 * new whole frames (each chunk also handed to also(c, also_arg) when not
 * NULL) and leaving a frame the writer has not finished for the next call;
 * with last set, such a frame counts as cut short. Returns the bytes read,
 * or -1 when the file could not be read (errno; in->open_failed). Then
 * rsr_input_end finishes the summary as rsr_input_stream does. The input
 * can be copied (fork) and ended in the copy while the original goes on. */
void rsr_input_begin(struct rsr_input *in, const char *path);
long long rsr_input_feed(struct rsr_input *in, int last, rsr_chunk_fn also, void *also_arg);
void rsr_input_end(struct rsr_input *in);

/* The same as rsr_input_load with only the records that overlap [from_ns,
 * to_ns] on the file's own clock kept in in->model (in->loader.left_out
 * counts the others). */
void rsr_input_load_window(struct rsr_input *in, const char *path, int64_t from_ns, int64_t to_ns);

/* Loads files[0..n) with up to nthreads threads, streamed when stream is
 * set. With progress set, a line on stderr counts the files read (for
 * terminals). With a bound set (rsr_inputs_bound), streamed loads that
 * would hold more print one line (what did not fit and how much is needed)
 * and exit with status 1. */
void rsr_inputs_load(struct rsr_input *ins, char **files, int n, int nthreads, int progress, int stream);
/* The same, each chunk of file i also handed to also(chunk, also_args[i])
 * as it is read (the report's flame feeds: each file read once). */
void rsr_inputs_load_also(struct rsr_input *ins, char **files, int n, int nthreads, int progress, int stream,
                          rsr_chunk_fn also, void *const *also_args);

/* Sorts ins[0..n) in the order of a job's processes everywhere: the ranks
 * in rank order, then the other processes by pid. */
void rsr_inputs_sort(struct rsr_input *ins, int n);

/* What every command does between loading and analysing: sorts ins[0..n)
 * (rsr_inputs_sort) and points models[i] at ins[i]'s model, or, where
 * loading failed, at an empty one that all such inputs share (static, set
 * afresh by each call: the caller neither frees it nor keeps it past the
 * next call). */
void rsr_inputs_models(struct rsr_input *ins, int n, struct rsr_model **models);

/* --memory-mb: the reporter's memory bound in MB (0: none, the default).
 * What loading may hold is the bound less what the reporter needs besides
 * the summaries (reading files, the analyses' merge, the lanes drawn in
 * full, the outputs): RSR_MEMORY_BASE_MB and RSR_MEMORY_PROCESS_KB a
 * process, measured (gen_job: 46 MB peak for 64 processes, 295 MB for
 * 1,024, of which the summaries 9 and 153 MB). */
void rsr_inputs_bound(uint64_t mb);
#define RSR_MEMORY_BASE_MB 48
#define RSR_MEMORY_PROCESS_KB 128

#endif
