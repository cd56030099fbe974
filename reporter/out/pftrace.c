/* `ringside export perfetto` in Perfetto's protobuf trace format (pftrace.h).
 * The summaries give each process its shift onto the job's clock, the steps
 * and the checkpoints; each chosen file is then walked once more and every
 * chunk's records become TracePackets on the spot. Field numbers are those
 * of Perfetto's perfetto_trace.proto (the tests check the output against it). */
#include "reporter/out/pftrace.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/trace.h"
#include "reporter/analyse/analyse.h"
#include "reporter/base/pb.h"
#include "reporter/analyse/steps.h"
#include "reporter/load/symbolize.h"
#include "reporter/base/array.h"
#include "reporter/base/table.h"

/* TracePacket */
#define TP_TIMESTAMP 8
#define TP_SEQ_ID 10
#define TP_INTERNED 12
#define TP_SEQ_FLAGS 13
#define TP_TRACK_EVENT 11
#define TP_TRACK_DESC 60
#define TP_PERF_SAMPLE 66
#define TP_CLOCK_SNAPSHOT 6
#define TP_DEFAULTS 59
#define TP_CLOCK_ID 58
#define SEQ_CLEARED 1
#define SEQ_NEEDS 2
/* TrackEvent */
#define TE_CATEGORY_IIDS 3
#define TE_DEBUG 4
#define TE_TYPE 9
#define TE_NAME_IID 10
#define TE_TRACK_UUID 11
#define TE_COUNTER_VALUE 30
#define TE_DOUBLE_COUNTER 44
#define TE_FLOW_IDS 47
#define TE_TERMINATING_FLOWS 48
#define TE_CALLSTACK_IID 56
#define TYPE_BEGIN 1
#define TYPE_END 2
#define TYPE_INSTANT 3
#define TYPE_COUNTER 4
/* InternedData */
#define ID_CATEGORIES 1
#define ID_NAMES 2
#define ID_DEBUG_NAMES 3
#define ID_FUNCTION_NAMES 5
#define ID_FRAMES 6
#define ID_CALLSTACKS 7
#define ID_BUILD_IDS 16
#define ID_MAPPING_PATHS 17
#define ID_MAPPINGS 19
/* TrackDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_PROCESS 3
#define TD_THREAD 4
#define TD_PARENT 5
#define TD_COUNTER 8
/* DebugAnnotation */
#define DA_NAME_IID 1
#define DA_UINT 3
#define DA_INT 4
#define DA_STRING 6

/* Categories, interned the same in every sequence. */
#define PF_CATEGORIES(X) X(KERNEL, "kernel") X(MEMCPY, "gpu_memcpy") X(MEMSET, "gpu_memset") \
    X(GRAPH, "cuda_graph") X(RUNTIME, "cuda_runtime") X(NCCL, "nccl") X(IO, "io") X(WAIT, "wait") \
    X(NVTX, "nvtx") X(STEP, "step") X(CHECKPOINT, "checkpoint")
enum pf_cat {
#define PF_CAT_ENUM(id, text) CAT_##id,
    PF_CATEGORIES(PF_CAT_ENUM)
#undef PF_CAT_ENUM
    CAT_N
};
static const char *const cat_names[] = {
#define PF_CAT_TEXT(id, text) text,
    PF_CATEGORIES(PF_CAT_TEXT)
#undef PF_CAT_TEXT
};

/* Debug annotation names, interned the same in every sequence. */
#define PF_ARGS(X) X(BYTES, "bytes") X(COUNT, "count") X(COMM, "comm") X(SEQ, "seq") X(PEER, "peer") \
    X(FILE, "file") X(OFFSET, "offset") X(RESULT, "result") X(REASON, "reason") X(WEIGHT, "weight_ns") \
    X(RANK, "rank") X(DIR, "direction") X(TARGET, "target") X(FILES, "files") X(GPU_STALL, "gpu_stall_ns") \
    X(INDEX, "index") X(DOMAIN, "domain")
enum pf_arg {
#define PF_ARG_ENUM(id, text) ARG_##id,
    PF_ARGS(PF_ARG_ENUM)
#undef PF_ARG_ENUM
    ARG_N
};
static const char *const arg_names[] = {
#define PF_ARG_TEXT(id, text) text,
    PF_ARGS(PF_ARG_TEXT)
#undef PF_ARG_TEXT
};

/* Event names that are not a file's strings: launch calls by GpuKind, NCCL
 * calls by CollOp, I/O calls by IoOp, CUDA syncs by SyncKind, waits by
 * WaitReason, step phases, "checkpoint". Their iids are their index in this
 * table from 1; a file string's iid is its id plus FIXED_MAX (iids are in
 * every event: small numbers are short varints). */
#define FIXED_MAX 160
static const char *fixed_text[FIXED_MAX];
static unsigned fixed_n, fx_launch, fx_coll, fx_io, fx_sync, fx_wait, fx_phase, fx_ckpt;
static char fixed_store[FIXED_MAX][48];

static unsigned fixed_add(const char *prefix, const char *a, const char *suffix)
{
    snprintf(fixed_store[fixed_n], sizeof fixed_store[0], "%s%s%s", prefix, a ? a : "?", suffix);
    fixed_text[fixed_n] = fixed_store[fixed_n];
    return fixed_n++;
}

static void fixed_init(void)
{
    static const char *const launch[] = { "cuLaunchKernel", "cuMemcpyAsync", "cuMemsetAsync", "cuGraphLaunch" };
    static const char *const sync[] = { "cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize",
                                        "cuMemcpy", "cuStreamWaitEvent", "cuStreamQuery" };
    if (fixed_n)
        return;
    fx_launch = fixed_n;
    for (unsigned k = 0; k < RSF_GPU_NKINDS; k++)
        fixed_add("", launch[k], "");
    fx_coll = fixed_n;
    for (unsigned k = 0; k < RSF_COLL_NOPS; k++)
        fixed_add("nccl:", rsf_coll_op_name(k), "");
    fx_io = fixed_n;
    for (unsigned k = 0; k < RSF_IO_NOPS; k++)
        fixed_add("", rsf_io_op_name(k), "");
    fx_sync = fixed_n;
    for (unsigned k = 0; k < RSF_SYNC_NKINDS; k++)
        fixed_add("", sync[k], "");
    fx_wait = fixed_n;
    for (unsigned k = 0; k < RSF_WAIT_NREASONS; k++)
        fixed_add("wait: ", rsf_wait_reason_label(k), "");
    fx_phase = fixed_n;
    for (int k = 0; k < RSR_NPHASES; k++)
        fixed_add("step (", rsr_step_phase_name(k), ")");
    fx_ckpt = fixed_add("", "checkpoint", "");
}

#define PF_NCLOCKS 3
enum { CLK_HOST, CLK_SERIAL, CLK_POINT };

/* What a track is for, within its process. */
enum pf_track_kind { TK_THREAD, TK_WAITS, TK_STREAM, TK_NCCL, TK_NVTX, TK_SERIES, TK_CPU };

struct pf_track {
    uint64_t key;
    uint64_t uuid;
    int64_t last_end;           /* serial tracks (serial_slice): where the last slice ended */
    uint32_t name;              /* threads: the string id of the name last described */
    int kind;
};

struct pf_series {
    uint32_t id;
    uint8_t kind, seen;
    uint64_t last_value;
    int64_t last_ts;
};

/* Frames by address, for interning: iid n is addr[n - 1]. */
struct pf_frames {
    uint64_t *addr;             /* by iid - 1 */
    size_t cap, n;
    struct rsr_table table;     /* an address -> iid - 1 */
};

struct pf_module {
    uint64_t start, end, file_off;
    uint32_t path, build_id;
    uint8_t sent;               /* its mapping is interned */
    int file;                   /* its ELF file for the symboliser (-2: not looked up; -1: none) */
    int have_bias;
    uint64_t bias;
};

/* One process being exported: its sequence and what it interned so far. */
struct pf_proc {
    struct rsr_pb *pb;
    uint32_t seq;
    uint64_t uuid;              /* its process track (its index from 1); its other tracks
                                   add k << 20 (small numbers: the track is in every event) */
    int64_t shift;              /* file clock -> job clock */
    int64_t from, to;           /* window on the job clock */
    int pid;
    uint64_t flow_base;
    uint64_t corr;              /* GPU records so far: the flows' ids */
    int started;                /* the sequence's first packets (sequence_start) went out */
    int clk;                    /* the clock of the packets being written (sequence_start) */
    int64_t last[PF_NCLOCKS];   /* each clock's last time written */

    char **strings;             /* file string id -> text, as read */
    uint32_t nstrings;
    uint8_t *name_sent;         /* per string id: interned as an event name */
    uint8_t fixed_sent[FIXED_MAX];
    uint32_t *fmap;             /* file id -> path string id */
    uint32_t nfmap;

    struct pf_track *tracks;
    size_t ntracks, captracks;
    uint64_t next_uuid;
    struct pf_series *series;
    size_t nseries;
    uint64_t cpu_busy, cpu_total, cpu_busy0, cpu_total0;
    int cpu_have;               /* 1: busy read, 2: total read, 3: both; 4: a pair kept */
    struct pf_frames frames;
    struct pf_module *modules;
    size_t nmodules;
    uint8_t map_sent[2];        /* the Python and unknown mappings are interned */
    struct rsr_sym *sym;        /* names native frames (the worker's; NULL: none) */

    uint64_t counts[8];         /* what went out, for the closing line */
    int failed;                 /* out of memory */
};

enum { CNT_GPU, CNT_COLL, CNT_IO, CNT_SYNC, CNT_SAMPLE, CNT_WAIT, CNT_RANGE, CNT_POINT };

/* ------------------------------------------------------------------ packets */

/* A sequence's first packets: its clocks and its fixed interning. Times
 * are deltas on one of three incremental clocks of the sequence (64: host
 * slices, 65: serial tracks, 66: samples and counters; each event kind
 * mostly comes in time order, so a delta is a byte or three where a time is
 * nine); one that would go back is written on BOOTTIME, which these clocks
 * equal. */
#define PF_CLOCK_BOOTTIME 6
#define PF_CLOCK_OWN 64

static void sequence_start(struct pf_proc *p)
{
    p->started = 1;
    rsr_pb_begin(p->pb, 1);
    rsr_pb_uint(p->pb, TP_SEQ_ID, p->seq);
    rsr_pb_uint(p->pb, TP_SEQ_FLAGS, SEQ_CLEARED);
    rsr_pb_begin(p->pb, TP_CLOCK_SNAPSHOT);
    rsr_pb_begin(p->pb, 1);                     /* ClockSnapshot.clocks */
    rsr_pb_uint(p->pb, 1, PF_CLOCK_BOOTTIME);      /* clock_id */
    rsr_pb_uint(p->pb, 2, 0);                   /* timestamp */
    rsr_pb_end(p->pb);
    for (unsigned k = 0; k < PF_NCLOCKS; k++) {
        rsr_pb_begin(p->pb, 1);
        rsr_pb_uint(p->pb, 1, PF_CLOCK_OWN + k);
        rsr_pb_uint(p->pb, 2, 0);
        rsr_pb_uint(p->pb, 3, 1);               /* is_incremental */
        rsr_pb_end(p->pb);
    }
    rsr_pb_end(p->pb);
    rsr_pb_end(p->pb);

    rsr_pb_begin(p->pb, 1);
    rsr_pb_uint(p->pb, TP_SEQ_ID, p->seq);
    rsr_pb_uint(p->pb, TP_SEQ_FLAGS, SEQ_NEEDS);
    rsr_pb_begin(p->pb, TP_DEFAULTS);
    rsr_pb_uint(p->pb, TP_CLOCK_ID, PF_CLOCK_OWN);
    rsr_pb_end(p->pb);
    rsr_pb_begin(p->pb, TP_INTERNED);
    for (unsigned k = 0; k < CAT_N; k++) {
        rsr_pb_begin(p->pb, ID_CATEGORIES);
        rsr_pb_uint(p->pb, 1, k + 1);
        rsr_pb_str(p->pb, 2, cat_names[k]);
        rsr_pb_end(p->pb);
    }
    for (unsigned k = 0; k < ARG_N; k++) {
        rsr_pb_begin(p->pb, ID_DEBUG_NAMES);
        rsr_pb_uint(p->pb, 1, k + 1);
        rsr_pb_str(p->pb, 2, arg_names[k]);
        rsr_pb_end(p->pb);
    }
    rsr_pb_end(p->pb);
    rsr_pb_end(p->pb);
}

/* Opens a packet of the process's sequence at ts (job clock; -1: none) on
 * clock p->clk. Later packets leave SEQ_NEEDS out: a sequence is never cut
 * short, and two bytes a packet are a tenth of a slice. */
static void packet_begin(struct pf_proc *p, int64_t ts)
{
    if (!p->started)
        sequence_start(p);
    rsr_pb_begin(p->pb, 1);
    rsr_pb_uint(p->pb, TP_SEQ_ID, p->seq);
    if (ts < 0)
        return;
    int64_t *last = &p->last[p->clk];
    if (ts >= *last) {
        rsr_pb_uint(p->pb, TP_TIMESTAMP, (uint64_t)(ts - *last));
        if (p->clk)
            rsr_pb_uint(p->pb, TP_CLOCK_ID, PF_CLOCK_OWN + (unsigned)p->clk);
        *last = ts;
    } else {
        rsr_pb_uint(p->pb, TP_TIMESTAMP, (uint64_t)ts);
        rsr_pb_uint(p->pb, TP_CLOCK_ID, PF_CLOCK_BOOTTIME);
    }
}

static void packet_end(struct pf_proc *p)
{
    rsr_pb_end(p->pb);
}

static const char *file_string(const struct pf_proc *p, uint32_t id)
{
    return id && id < p->nstrings && p->strings[id] ? p->strings[id] : NULL;
}

/* The iid of an event name, a file string's or a fixed name's (see
 * FIXED_MAX); interned into the packet being written when not yet in the
 * sequence. Call between packet_begin and the track event. */
static uint64_t name_iid_file(struct pf_proc *p, uint32_t sid)
{
    const char *s = file_string(p, sid);
    if (!s)
        return 0;
    if (!p->name_sent[sid]) {
        p->name_sent[sid] = 1;
        rsr_pb_begin(p->pb, TP_INTERNED);
        rsr_pb_begin(p->pb, ID_NAMES);
        rsr_pb_uint(p->pb, 1, (uint64_t)sid + FIXED_MAX);
        rsr_pb_str(p->pb, 2, s);
        rsr_pb_end(p->pb);
        rsr_pb_end(p->pb);
    }
    return (uint64_t)sid + FIXED_MAX;
}

static uint64_t name_iid_fixed(struct pf_proc *p, unsigned k)
{
    if (!p->fixed_sent[k]) {
        p->fixed_sent[k] = 1;
        rsr_pb_begin(p->pb, TP_INTERNED);
        rsr_pb_begin(p->pb, ID_NAMES);
        rsr_pb_uint(p->pb, 1, (uint64_t)k + 1);
        rsr_pb_str(p->pb, 2, fixed_text[k]);
        rsr_pb_end(p->pb);
        rsr_pb_end(p->pb);
    }
    return (uint64_t)k + 1;
}

static void arg_uint(struct pf_proc *p, int arg, uint64_t v)
{
    rsr_pb_begin(p->pb, TE_DEBUG);
    rsr_pb_uint(p->pb, DA_NAME_IID, (uint64_t)arg + 1);
    rsr_pb_uint(p->pb, DA_UINT, v);
    rsr_pb_end(p->pb);
}

static void arg_int(struct pf_proc *p, int arg, int64_t v)
{
    rsr_pb_begin(p->pb, TE_DEBUG);
    rsr_pb_uint(p->pb, DA_NAME_IID, (uint64_t)arg + 1);
    rsr_pb_int(p->pb, DA_INT, v);
    rsr_pb_end(p->pb);
}

static void arg_str(struct pf_proc *p, int arg, const char *s)
{
    rsr_pb_begin(p->pb, TE_DEBUG);
    rsr_pb_uint(p->pb, DA_NAME_IID, (uint64_t)arg + 1);
    rsr_pb_str(p->pb, DA_STRING, s);
    rsr_pb_end(p->pb);
}

/* A track event of type on track at ts, named by name (an iid taken with
 * name_iid_*, the caller having opened the packet). */
static void event_open(struct pf_proc *p, int type, uint64_t track, uint64_t name, int cat)
{
    rsr_pb_begin(p->pb, TP_TRACK_EVENT);
    rsr_pb_uint(p->pb, TE_TYPE, (uint64_t)type);
    rsr_pb_uint(p->pb, TE_TRACK_UUID, track);
    if (name)
        rsr_pb_uint(p->pb, TE_NAME_IID, name);
    if (cat >= 0)
        rsr_pb_uint(p->pb, TE_CATEGORY_IIDS, (uint64_t)cat + 1);
}

static void event_close(struct pf_proc *p)
{
    rsr_pb_end(p->pb);
    packet_end(p);
}

static void slice_end(struct pf_proc *p, int64_t ts, uint64_t track)
{
    packet_begin(p, ts);
    rsr_pb_begin(p->pb, TP_TRACK_EVENT);
    rsr_pb_uint(p->pb, TE_TYPE, TYPE_END);
    rsr_pb_uint(p->pb, TE_TRACK_UUID, track);
    rsr_pb_end(p->pb);
    packet_end(p);
}

/* ------------------------------------------------------------------- tracks */

static void desc_begin(struct pf_proc *p, uint64_t uuid, uint64_t parent)
{
    packet_begin(p, -1);
    rsr_pb_begin(p->pb, TP_TRACK_DESC);
    rsr_pb_uint(p->pb, TD_UUID, uuid);
    if (parent)
        rsr_pb_uint(p->pb, TD_PARENT, parent);
}

static void desc_end(struct pf_proc *p)
{
    rsr_pb_end(p->pb);
    packet_end(p);
}

/* A named track under parent; a counter track when unit is not NULL. */
static void desc_named(struct pf_proc *p, uint64_t uuid, uint64_t parent, const char *name, const char *unit)
{
    desc_begin(p, uuid, parent);
    rsr_pb_str(p->pb, TD_NAME, name);
    if (unit) {
        rsr_pb_begin(p->pb, TD_COUNTER);
        rsr_pb_str(p->pb, 6, unit);         /* CounterDescriptor.unit_name */
        rsr_pb_end(p->pb);
    }
    desc_end(p);
}

static void desc_thread(struct pf_proc *p, uint64_t uuid, uint32_t tid, const char *name)
{
    desc_begin(p, uuid, 0);
    rsr_pb_begin(p->pb, TD_THREAD);
    rsr_pb_uint(p->pb, 1, (uint64_t)p->pid);    /* ThreadDescriptor.pid */
    rsr_pb_uint(p->pb, 2, tid);                 /* tid */
    if (name)
        rsr_pb_str(p->pb, 5, name);             /* thread_name */
    rsr_pb_end(p->pb);
    desc_end(p);
}

static const char *series_unit(unsigned kind)
{
    if (kind <= RSF_SERIES_NFS_WRITE || kind >= RSF_SERIES_GPU_PCIE_TX)
        return "B/s";
    if (kind <= RSF_SERIES_CPU_TOTAL)
        return "%";
    if (kind <= RSF_SERIES_MEM_DIRTY)
        return "bytes";
    return "%";
}

/* The process's track of kind for key, its descriptor written (outside
 * any packet) the first time; NULL when out of memory. */
static struct pf_track *track_get(struct pf_proc *p, int kind, uint64_t key, int device)
{
    for (size_t i = p->ntracks; i-- > 0;)
        if (p->tracks[i].kind == kind && p->tracks[i].key == key)
            return &p->tracks[i];
    if (p->ntracks == p->captracks) {
        size_t cap = p->captracks ? 2 * p->captracks : 16;
        struct pf_track *t = realloc(p->tracks, cap * sizeof *t);
        if (!t) {
            p->failed = 1;
            return NULL;
        }
        p->tracks = t;
        p->captracks = cap;
    }
    uint64_t uuid = p->uuid + (++p->next_uuid << 20);
    struct pf_track *t = &p->tracks[p->ntracks++];
    *t = (struct pf_track){ .key = key, .uuid = uuid, .last_end = INT64_MIN, .kind = kind };
    char name[160];
    switch (kind) {
    case TK_THREAD:
        desc_thread(p, uuid, (uint32_t)key, NULL);
        return t;
    case TK_WAITS:
        snprintf(name, sizeof name, "thread %" PRIu64 " waits", key);
        break;
    case TK_STREAM:
        snprintf(name, sizeof name, "GPU %d stream %" PRIu64, device, key);
        break;
    case TK_NCCL:
        snprintf(name, sizeof name, "NCCL stream %" PRIu64, key);
        break;
    case TK_NVTX:
        snprintf(name, sizeof name, "thread %" PRIu64 " NVTX start/end ranges", key);
        break;
    case TK_CPU:
        desc_named(p, uuid, p->uuid, "node CPU busy", "%");
        return t;
    default:
        return t;   /* TK_SERIES: its caller describes it */
    }
    desc_named(p, uuid, p->uuid, name, NULL);
    return t;
}

static uint64_t track(struct pf_proc *p, int kind, uint64_t key, int device)
{
    struct pf_track *t = track_get(p, kind, key, device);
    return t ? t->uuid : 0;
}

/* ------------------------------------------------------------------ records */

static int in_window(const struct pf_proc *p, int64_t a, int64_t b)
{
    return b >= p->from && a <= p->to;
}

static int64_t job_ns(const struct pf_proc *p, uint64_t local)
{
    return (int64_t)local + p->shift;
}

static void take_strings(struct pf_proc *p, const struct rsf_chunk *c)
{
    uint64_t need = (uint64_t)c->strings_base + c->nstrings;
    if (!c->nstrings || need > UINT32_MAX)
        return;
    if (need > p->nstrings) {
        char **s = realloc(p->strings, need * sizeof *s);
        uint8_t *sent = realloc(p->name_sent, need);
        if (s)
            p->strings = s;
        if (sent)
            p->name_sent = sent;
        if (!s || !sent) {
            p->failed = 1;
            return;
        }
        memset(p->strings + p->nstrings, 0, (need - p->nstrings) * sizeof *s);
        memset(p->name_sent + p->nstrings, 0, need - p->nstrings);
        p->nstrings = (uint32_t)need;
    }
    for (uint32_t i = 0; i < c->nstrings; i++) {
        uint32_t id = c->strings_base + i;
        free(p->strings[id]);
        p->strings[id] = strdup(c->strings[i] ? c->strings[i] : "");
        p->name_sent[id] = 0;
        if (!p->strings[id])
            p->failed = 1;
    }
}

static void take_files(struct pf_proc *p, const struct rsf_chunk *c)
{
    for (uint32_t i = 0; i < c->nfiles; i++) {
        uint32_t id = c->files[i].id;
        if (id >= p->nfmap) {
            uint32_t n = id + 64;
            uint32_t *m = realloc(p->fmap, n * sizeof *m);
            if (!m) {
                p->failed = 1;
                return;
            }
            memset(m + p->nfmap, 0, (n - p->nfmap) * sizeof *m);
            p->fmap = m;
            p->nfmap = n;
        }
        p->fmap[id] = c->files[i].path;
    }
}

static void take_threads(struct pf_proc *p, const struct rsf_chunk *c)
{
    for (uint32_t i = 0; i < c->nthreads; i++) {
        struct pf_track *t = track_get(p, TK_THREAD, c->threads[i].tid, -1);
        const char *name = file_string(p, c->threads[i].name);
        if (t && name && t->name != c->threads[i].name) {
            t->name = c->threads[i].name;
            desc_thread(p, t->uuid, c->threads[i].tid, name);
        }
    }
}

/* A slice [a, b] (job clock) on track trk: its begin event with its name
 * (a fixed name's index, or a file string id), category, the record's
 * arguments (args, when not NULL) and flows (0: none), then its end. */
typedef void (*pf_args_fn)(struct pf_proc *p, const void *rec);

static void slice(struct pf_proc *p, uint64_t trk, int64_t a, int64_t b, int name_fixed, uint32_t name,
                  int cat, pf_args_fn args, const void *rec, uint64_t flow_out, uint64_t flow_in)
{
    if (!trk)
        return;
    p->clk = CLK_HOST;
    packet_begin(p, a);
    uint64_t iid = name_fixed ? name_iid_fixed(p, name) : name_iid_file(p, name);
    event_open(p, TYPE_BEGIN, trk, iid, cat);
    if (args)
        args(p, rec);
    if (flow_out)
        rsr_pb_fixed64(p->pb, TE_FLOW_IDS, flow_out);
    if (flow_in)
        rsr_pb_fixed64(p->pb, TE_TERMINATING_FLOWS, flow_in);
    event_close(p);
    slice_end(p, b < a ? a : b, trk);
}


/* The same on a track whose work runs one at a time (a stream, a thread's
 * waits): a slice starts no earlier than the previous one ended, so that
 * clock rounding never nests one inside another. */
static void serial_slice(struct pf_proc *p, struct pf_track *t, int64_t a, int64_t b, int name_fixed,
                         uint32_t name, int cat, pf_args_fn args, const void *rec, uint64_t flow_in,
                         uint64_t callstack)
{
    if (!t)
        return;
    if (a < t->last_end)
        a = t->last_end;
    if (b < a)
        b = a;
    t->last_end = b;
    p->clk = CLK_SERIAL;
    packet_begin(p, a);
    uint64_t iid = name_fixed ? name_iid_fixed(p, name) : name_iid_file(p, name);
    event_open(p, TYPE_BEGIN, t->uuid, iid, cat);
    if (args)
        args(p, rec);
    if (flow_in)
        rsr_pb_fixed64(p->pb, TE_TERMINATING_FLOWS, flow_in);
    if (callstack)
        rsr_pb_uint(p->pb, TE_CALLSTACK_IID, callstack);
    event_close(p);
    slice_end(p, b, t->uuid);
}

/* A GPU op's device and stream are its track's name, its launch the flow's
 * other end: only what neither says is an argument. */
static void gpu_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_gpu_event *g = rec;
    if (g->kind == RSF_GPU_MEMCPY || g->kind == RSF_GPU_MEMSET)
        arg_uint(p, ARG_BYTES, g->bytes);
    if (g->kind == RSF_GPU_MEMCPY && rsf_copy_dir_name(g->dir))
        arg_str(p, ARG_DIR, rsf_copy_dir_name(g->dir));
}

static void take_gpu(struct pf_proc *p, const struct rsf_gpu_event *g)
{
    static const int cats[] = { CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET, CAT_GRAPH };
    p->corr++;
    if (g->kind >= RSF_GPU_NKINDS)
        return;
    int timed = g->gpu_end_ns != 0;
    int64_t a = job_ns(p, g->launch_ns), b = a + g->call_ns;
    int64_t ga = job_ns(p, g->gpu_start_ns), gb = job_ns(p, g->gpu_end_ns);
    int call_in = in_window(p, a, b), gpu_in = timed && in_window(p, ga, gb);
    uint64_t flow = call_in && gpu_in ? p->flow_base + p->corr : 0;
    if (call_in)
        slice(p, track(p, TK_THREAD, g->tid, -1), a, b, 1, fx_launch + g->kind, CAT_RUNTIME, NULL, g, flow, 0);
    if (gpu_in) {
        p->counts[CNT_GPU]++;
        struct pf_track *t = track_get(p, TK_STREAM, g->stream, g->device);
        int named = file_string(p, g->name) != NULL;
        serial_slice(p, t, ga, gb, !named, named ? g->name : fx_launch + g->kind, cats[g->kind], gpu_args, g,
                     flow, 0);
    }
}

static void coll_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_coll_event *c = rec;
    arg_uint(p, ARG_BYTES, c->bytes);
    arg_uint(p, ARG_COUNT, c->count);
    arg_uint(p, ARG_COMM, c->comm);
    arg_uint(p, ARG_SEQ, c->seq);
    if (c->peer >= 0)
        arg_int(p, ARG_PEER, c->peer);
}

static void take_coll(struct pf_proc *p, const struct rsf_coll_event *c)
{
    p->corr++;
    if (c->op >= RSF_COLL_NOPS)
        return;
    int timed = c->gpu_end_ns != 0;
    int64_t a = job_ns(p, c->launch_ns), b = a + c->call_ns;
    int64_t ga = job_ns(p, c->gpu_start_ns), gb = job_ns(p, c->gpu_end_ns);
    int call_in = in_window(p, a, b), gpu_in = timed && in_window(p, ga, gb);
    uint64_t flow = call_in && gpu_in ? p->flow_base + p->corr : 0;
    if (call_in)
        slice(p, track(p, TK_THREAD, c->tid, -1), a, b, 1, fx_coll + c->op, CAT_NCCL, coll_args, c, flow, 0);
    if (gpu_in || (!timed && call_in))
        p->counts[CNT_COLL]++;
    if (gpu_in)
        serial_slice(p, track_get(p, TK_NCCL, c->stream, -1), ga, gb, 1, fx_coll + c->op, CAT_NCCL, coll_args,
                     c, flow, 0);
}

static void io_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_io_event *e = rec;
    const char *path = e->file < p->nfmap ? file_string(p, p->fmap[e->file]) : NULL;
    if (path)
        arg_str(p, ARG_FILE, path);
    if (rsf_io_op_dir(e->op) != RSF_DIR_NONE && e->result >= 0)
        arg_uint(p, ARG_BYTES, (uint64_t)e->result);
    else
        arg_int(p, ARG_RESULT, e->result);
    if (e->offset >= 0)
        arg_int(p, ARG_OFFSET, e->offset);
}

static void take_io(struct pf_proc *p, const struct rsf_io_event *e)
{
    int64_t a = job_ns(p, e->start_ns), b = a + (int64_t)e->dur_ns;
    if (e->op >= RSF_IO_NOPS || !in_window(p, a, b))
        return;
    p->counts[CNT_IO]++;
    slice(p, track(p, TK_THREAD, e->tid, -1), a, b, 1, fx_io + e->op, CAT_IO, io_args, e, 0, 0);
}

static void sync_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_sync_event *e = rec;
    arg_uint(p, ARG_TARGET, e->target);
    arg_str(p, ARG_REASON, rsf_wait_reason_label(RSF_WAIT_CUDA_SYNC));
}

static void take_sync(struct pf_proc *p, const struct rsf_sync_event *e)
{
    int64_t a = job_ns(p, e->start_ns), b = a + (int64_t)e->dur_ns;
    if (e->kind >= RSF_SYNC_NKINDS || !in_window(p, a, b))
        return;
    p->counts[CNT_SYNC]++;
    slice(p, track(p, TK_THREAD, e->tid, -1), a, b, 1, fx_sync + e->kind, CAT_WAIT, sync_args, e, 0, 0);
}

static void wait_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_sample *s = rec;
    arg_str(p, ARG_REASON, rsf_wait_reason_label(s->reason));
    arg_uint(p, ARG_WEIGHT, s->weight_ns);
}

/* A CPU sample is a PerfSample (Perfetto's UI draws a process's as a track
 * of marks and sums any stretch of them into a flame graph); a wait sample,
 * the time its thread was blocked up to it, is a slice on the thread's
 * waits track named by its reason, with its call stack. */
static void take_sample(struct pf_proc *p, const struct rsf_sample *s)
{
    int64_t ts = job_ns(p, s->ts_ns);
    if (s->kind == RSF_SAMPLE_CPU) {
        if (!in_window(p, ts, ts))
            return;
        p->counts[CNT_SAMPLE]++;
        p->clk = CLK_POINT;
        packet_begin(p, ts);
        rsr_pb_begin(p->pb, TP_PERF_SAMPLE);
        rsr_pb_uint(p->pb, 2, (uint64_t)p->pid);      /* PerfSample.pid */
        rsr_pb_uint(p->pb, 3, s->tid);                /* tid */
        rsr_pb_uint(p->pb, 6, s->weight_ns);          /* timebase_count: the CPU time it weighs */
        if (s->stack)
            rsr_pb_uint(p->pb, 4, s->stack);          /* callstack_iid */
        rsr_pb_end(p->pb);
        packet_end(p);
    } else if (s->kind == RSF_SAMPLE_WAIT && s->reason < RSF_WAIT_NREASONS) {
        int64_t a = ts - (int64_t)s->weight_ns;
        if (!in_window(p, a, ts))
            return;
        p->counts[CNT_WAIT]++;
        serial_slice(p, track_get(p, TK_WAITS, s->tid, -1), a, ts, 1, fx_wait + s->reason, CAT_WAIT, wait_args,
                     s, 0, s->stack);
    }
}

static void range_args(struct pf_proc *p, const void *rec)
{
    const struct rsf_range *r = rec;
    const char *d = file_string(p, r->domain);
    if (d)
        arg_str(p, ARG_DOMAIN, d);
}

static void take_range(struct pf_proc *p, const struct rsf_range *r)
{
    int64_t a = job_ns(p, r->start_ns), b = job_ns(p, r->end_ns);
    if (!in_window(p, a, b) || !file_string(p, r->name))
        return;
    p->counts[CNT_RANGE]++;
    if (r->kind == RSF_RANGE_MARK) {
        uint64_t trk = track(p, TK_THREAD, r->tid, -1);
        p->clk = CLK_HOST;
        packet_begin(p, a);
        uint64_t iid = name_iid_file(p, r->name);
        event_open(p, TYPE_INSTANT, trk, iid, CAT_NVTX);
        range_args(p, r);
        event_close(p);
    } else if (r->kind == RSF_RANGE_START) {
        serial_slice(p, track_get(p, TK_NVTX, r->tid, -1), a, b, 0, r->name, CAT_NVTX, range_args, r, 0, 0);
    } else {
        slice(p, track(p, TK_THREAD, r->tid, -1), a, b, 0, r->name, CAT_NVTX, range_args, r, 0, 0);
    }
}

static void counter(struct pf_proc *p, uint64_t trk, int64_t ts, double v)
{
    if (!trk || !in_window(p, ts, ts))
        return;
    p->counts[CNT_POINT]++;
    p->clk = CLK_POINT;
    packet_begin(p, ts);
    event_open(p, TYPE_COUNTER, trk, 0, -1);
    rsr_pb_double(p->pb, TE_DOUBLE_COUNTER, v);
    event_close(p);
}

static void take_series(struct pf_proc *p, const struct rsf_series *s)
{
    if (s->kind == RSF_SERIES_CPU_BUSY || s->kind == RSF_SERIES_CPU_TOTAL || s->kind >= RSF_SERIES_NKINDS)
        goto keep;
    struct pf_track *t = track_get(p, TK_SERIES, s->id, -1);
    if (!t)
        return;
    const char *what = rsf_series_kind_name(s->kind), *name = file_string(p, s->name);
    char title[200];
    snprintf(title, sizeof title, "%s %s", name ? name : "", what ? what : "?");
    desc_named(p, t->uuid, p->uuid, title, series_unit(s->kind));
keep:;
    struct pf_series *v = realloc(p->series, (p->nseries + 1) * sizeof *v);
    if (!v) {
        p->failed = 1;
        return;
    }
    p->series = v;
    v[p->nseries++] = (struct pf_series){ .id = s->id, .kind = s->kind };
}

/* A point: cumulative byte counts become rates, the node's busy and total
 * CPU ticks one busy %, GPU figures (hundredths of a percent) percent,
 * memory (KiB) bytes. */
static void take_point(struct pf_proc *p, const struct rsf_point *pt)
{
    struct pf_series *s = NULL;
    for (size_t i = 0; i < p->nseries && !s; i++)
        if (p->series[i].id == pt->series)
            s = &p->series[i];
    if (!s)
        return;
    int64_t ts = job_ns(p, pt->ts_ns);
    uint64_t prev = s->last_value;
    int64_t prev_ts = s->last_ts;
    int seen = s->seen;
    s->last_value = pt->value;
    s->last_ts = ts;
    s->seen = 1;
    unsigned k = s->kind;
    if (k == RSF_SERIES_CPU_BUSY || k == RSF_SERIES_CPU_TOTAL) {
        if (k == RSF_SERIES_CPU_BUSY)
            p->cpu_busy = pt->value, p->cpu_have |= 1;
        else
            p->cpu_total = pt->value, p->cpu_have |= 2;
        if ((p->cpu_have & 3) != 3 || k != RSF_SERIES_CPU_TOTAL)
            return;
        if ((p->cpu_have & 4) && p->cpu_total > p->cpu_total0 && p->cpu_busy >= p->cpu_busy0)
            counter(p, track(p, TK_CPU, 0, -1), ts,
                    100.0 * (double)(p->cpu_busy - p->cpu_busy0) / (double)(p->cpu_total - p->cpu_total0));
        p->cpu_busy0 = p->cpu_busy;
        p->cpu_total0 = p->cpu_total;
        p->cpu_have |= 4;
        return;
    }
    uint64_t trk = track(p, TK_SERIES, s->id, -1);
    if (k <= RSF_SERIES_NFS_WRITE) {
        if (seen && ts > prev_ts && pt->value >= prev)
            counter(p, trk, ts, (double)(pt->value - prev) * 1e9 / (double)(ts - prev_ts));
    } else if (k <= RSF_SERIES_MEM_DIRTY) {
        counter(p, trk, ts, (double)pt->value * 1024.0);
    } else if (k < RSF_SERIES_GPU_PCIE_TX) {
        counter(p, trk, ts, (double)pt->value / 100.0);
    } else {
        counter(p, trk, ts, (double)pt->value);
    }
}

/* ------------------------------------------------------------------- stacks */

static uint64_t addr_hash_of(const void *ctx, size_t i)
{
    return rsr_hash_u64(((const struct pf_frames *)ctx)->addr[i]);
}

/* The frame's iid, *fresh set when it is new (then to be interned). */
static uint64_t frame_iid(struct pf_proc *p, uint64_t addr, int *fresh)
{
    struct pf_frames *F = &p->frames;
    *fresh = 0;
    struct rsr_probe at = rsr_table_probe(&F->table, rsr_hash_u64(addr));
    for (long i; (i = rsr_table_next(&F->table, &at)) >= 0;)
        if (F->addr[i] == addr)
            return (uint64_t)i + 1;
    if (RSR_GROW(F->addr, F->cap, F->n + 1, 1024) != 0) {
        p->failed = 1;
        return 0;
    }
    F->addr[F->n] = addr;
    if (rsr_table_put(&F->table, &at, F->n, 2048, addr_hash_of, F) != 0) {
        p->failed = 1;
        return 0;
    }
    *fresh = 1;
    return ++F->n;
}

/* The module an address lies in (the latest mapping of it wins), or -1. */
static long module_of(const struct pf_proc *p, uint64_t addr)
{
    for (size_t i = p->nmodules; i-- > 0;)
        if (addr >= p->modules[i].start && addr < p->modules[i].end)
            return (long)i;
    return -1;
}

/* A native frame's name: its function as the report's flame graphs name
 * it (symbolize.h: the out-of-line function where the address is inlined
 * code), else its module and offset in its file ("libfoo.so+0x1a2b3c",
 * which Perfetto's own symboliser can still resolve with the mapping).
 * exact: the address is the interrupted pc, not a return address. */
static void native_name(struct pf_proc *p, uint64_t addr, long mod, int exact, char *buf, size_t n)
{
    struct pf_module *m = &p->modules[mod];
    const char *path = file_string(p, m->path), *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path ? path : "?";
    if (m->file == -2) {
        const char *bid = file_string(p, m->build_id);
        m->file = p->sym && path && path[0] == '/' ? rsr_sym_file(p->sym, path, bid) : -1;
        m->have_bias = m->file >= 0 && rsr_sym_bias(p->sym, m->file, m->start, m->file_off, &m->bias) == 0;
    }
    if (m->have_bias) {
        const struct rsr_sym_result *r = rsr_sym_lookup(p->sym, m->file, addr - m->bias - (exact ? 0 : 1));
        if (r->known) {
            snprintf(buf, n, "%s", r->levels[0].func);
            return;
        }
    }
    snprintf(buf, n, "%s+0x%" PRIx64, base, addr - m->start + m->file_off);
}

/* A frame's name: a Python frame's "file.py:qualname", a native one's
 * (native_name), or its address where no module holds it. */
/* The one frame of a stack that has none (a sample the agent could not
 * unwind): trace_processor drops a callstack without frames. */
#define PF_NO_STACK (RSF_FRAME_TRUNCATED | 1)

static void frame_name(struct pf_proc *p, uint64_t addr, long mod, int exact, char *buf, size_t n)
{
    if (addr == PF_NO_STACK) {
        snprintf(buf, n, "[no stack]");
        return;
    }
    if (addr == RSF_FRAME_TRUNCATED) {
        snprintf(buf, n, "[truncated]");
        return;
    }
    if (addr & RSF_FRAME_PYTHON) {
        const char *s = file_string(p, (uint32_t)addr);
        snprintf(buf, n, "%s", s ? s : "[python]");
        return;
    }
    if (mod >= 0)
        native_name(p, addr, mod, exact, buf, n);
    else
        snprintf(buf, n, "0x%" PRIx64, addr);
}

/* Mappings: trace_processor drops a frame without one. A module's is its
 * index plus MAP_MODULE; Python frames and addresses in no known module
 * have one each, named as perf names such. */
#define MAP_PYTHON 1
#define MAP_UNKNOWN 2
#define MAP_MODULE 3

/* The mapping iid of a frame, interned into the open InternedData first
 * when new. */
static uint64_t frame_mapping(struct pf_proc *p, uint64_t addr, long mod)
{
    int python = (addr & RSF_FRAME_PYTHON) && addr != RSF_FRAME_TRUNCATED;
    uint64_t iid = python ? MAP_PYTHON : mod < 0 ? MAP_UNKNOWN : MAP_MODULE + (uint64_t)mod;
    uint8_t *sent = python ? &p->map_sent[0] : mod < 0 ? &p->map_sent[1] : &p->modules[mod].sent;
    if (*sent)
        return iid;
    *sent = 1;
    const char *path = python ? "[python]" : mod < 0 ? "[unknown]" : file_string(p, p->modules[mod].path);
    rsr_pb_begin(p->pb, ID_MAPPING_PATHS);
    rsr_pb_uint(p->pb, 1, iid);
    rsr_pb_str(p->pb, 2, path ? path : "[unknown]");
    rsr_pb_end(p->pb);
    const char *build_id = mod >= 0 && !python ? file_string(p, p->modules[mod].build_id) : NULL;
    if (build_id && *build_id) {
        rsr_pb_begin(p->pb, ID_BUILD_IDS);
        rsr_pb_uint(p->pb, 1, iid);
        rsr_pb_str(p->pb, 2, build_id);
        rsr_pb_end(p->pb);
    }
    rsr_pb_begin(p->pb, ID_MAPPINGS);
    rsr_pb_uint(p->pb, 1, iid);
    if (build_id && *build_id)
        rsr_pb_uint(p->pb, 2, iid);                 /* Mapping.build_id */
    if (mod >= 0 && !python) {
        const struct pf_module *m = &p->modules[mod];
        rsr_pb_uint(p->pb, 3, m->file_off);         /* start_offset */
        rsr_pb_uint(p->pb, 4, m->start);            /* start */
        rsr_pb_uint(p->pb, 5, m->end);              /* end */
    }
    rsr_pb_uint(p->pb, 7, iid);                     /* path_string_ids */
    rsr_pb_end(p->pb);
    return iid;
}

/* The chunk's stacks as interned callstacks (iid: the stack's id in the
 * file), with the frames (and their mappings) not interned before. */
static void take_stacks(struct pf_proc *p, const struct rsf_chunk *c)
{
    if (!c->nstacks)
        return;
    packet_begin(p, -1);
    rsr_pb_begin(p->pb, TP_INTERNED);
    for (uint32_t i = 0; i < c->nstacks; i++) {
        const struct rsf_stack *st = &c->stacks[i];
        uint32_t nf = st->nframes ? st->nframes : 1;
        for (uint32_t k = 0; k < nf; k++) {
            int fresh;
            uint64_t addr = st->nframes ? st->frames[k].addr : PF_NO_STACK;
            uint64_t iid = frame_iid(p, addr, &fresh);
            if (!fresh)
                continue;
            long mod = addr & RSF_FRAME_PYTHON ? -1 : module_of(p, addr);
            uint64_t map = frame_mapping(p, addr, mod);
            char name[400];
            frame_name(p, addr, mod, k == 0, name, sizeof name);
            rsr_pb_begin(p->pb, ID_FUNCTION_NAMES);
            rsr_pb_uint(p->pb, 1, iid);
            rsr_pb_str(p->pb, 2, name);
            rsr_pb_end(p->pb);
            rsr_pb_begin(p->pb, ID_FRAMES);
            rsr_pb_uint(p->pb, 1, iid);
            rsr_pb_uint(p->pb, 2, iid);     /* Frame.function_name_id */
            rsr_pb_uint(p->pb, 3, map);     /* mapping_id */
            if (mod >= 0)
                rsr_pb_uint(p->pb, 4, addr - p->modules[mod].start + p->modules[mod].file_off);   /* rel_pc */
            rsr_pb_end(p->pb);
        }
        rsr_pb_begin(p->pb, ID_CALLSTACKS);
        rsr_pb_uint(p->pb, 1, st->id);
        for (uint32_t k = nf; k-- > 0;) {  /* outermost first */
            int fresh;
            rsr_pb_uint(p->pb, 2, frame_iid(p, st->nframes ? st->frames[k].addr : PF_NO_STACK, &fresh));
        }
        rsr_pb_end(p->pb);
    }
    rsr_pb_end(p->pb);
    packet_end(p);
}

static void take_modules(struct pf_proc *p, const struct rsf_chunk *c)
{
    if (!c->nmodules)
        return;
    struct pf_module *m = realloc(p->modules, (p->nmodules + c->nmodules) * sizeof *m);
    if (!m) {
        p->failed = 1;
        return;
    }
    p->modules = m;
    for (uint32_t i = 0; i < c->nmodules; i++)
        m[p->nmodules++] = (struct pf_module){ .start = c->modules[i].start, .end = c->modules[i].end,
                                               .file_off = c->modules[i].file_off, .path = c->modules[i].path,
                                               .build_id = c->modules[i].build_id, .file = -2 };
}

/* One verified chunk of the process's file, in file order. */
static int take_chunk(const struct rsf_chunk *c, void *arg)
{
    struct pf_proc *p = arg;
    take_strings(p, c);
    take_files(p, c);
    take_threads(p, c);
    take_modules(p, c);
    take_stacks(p, c);
    for (uint32_t i = 0; i < c->nseries; i++)
        take_series(p, &c->series[i]);
    for (uint32_t i = 0; i < c->ngpu; i++)
        take_gpu(p, &c->gpu[i]);
    for (uint32_t i = 0; i < c->ncolls; i++)
        take_coll(p, &c->colls[i]);
    for (uint32_t i = 0; i < c->nio; i++)
        take_io(p, &c->io[i]);
    for (uint32_t i = 0; i < c->nsyncs; i++)
        take_sync(p, &c->syncs[i]);
    for (uint32_t i = 0; i < c->nsamples; i++)
        take_sample(p, &c->samples[i]);
    for (uint32_t i = 0; i < c->nranges; i++)
        take_range(p, &c->ranges[i]);
    for (uint32_t i = 0; i < c->npoints; i++)
        take_point(p, &c->points[i]);
    return p->failed || p->pb->failed ? -1 : 0;
}

static void proc_free(struct pf_proc *p)
{
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->name_sent);
    free(p->fmap);
    free(p->tracks);
    free(p->series);
    free(p->frames.addr);
    rsr_table_free(&p->frames.table);
    free(p->modules);
}

/* ---------------------------------------------------------------- the job */

struct pf_job {
    struct pf_proc seqj;        /* the job's own sequence: steps, checkpoints, the timeline */
    const struct rsr_export_opts *o;
    struct rsr_pb *pb;
    int64_t from, to;           /* the window, once the job's start is known */
    int window_set;
    int64_t step_from, step_to; /* --steps: the chosen steps' stretch (INT64_MAX, INT64_MIN: none) */
    uint64_t steps;
    struct pf_track steps_track;
    struct pf_track *ckpt_tracks;   /* per chosen process */
};

static void job_window(struct pf_job *J, const struct rsr_job *job)
{
    if (J->window_set)
        return;
    J->window_set = 1;
    int64_t t0 = job->storage.job_start_ns;
    J->from = J->o->has_from ? t0 + (int64_t)(J->o->from_s * 1e9) : INT64_MIN;
    J->to = J->o->has_to ? t0 + (int64_t)(J->o->to_s * 1e9) : INT64_MAX;
    J->seqj.from = J->from;
    J->seqj.to = J->to;
}

static void step_args(struct pf_proc *p, const void *rec)
{
    arg_uint(p, ARG_INDEX, *(const size_t *)rec);
}

/* Each step, as the analyses find it: a slice on the job's steps track. */
static int visit_step(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    struct pf_job *J = ctx;
    job_window(J, job);
    if (J->o->has_steps && (i < J->o->step_first || i > J->o->step_last))
        return 0;
    if (J->o->has_steps) {
        if (s->start_ns < J->step_from)
            J->step_from = s->start_ns;
        if (s->end_ns > J->step_to)
            J->step_to = s->end_ns;
    }
    if (!in_window(&J->seqj, s->start_ns, s->end_ns))
        return 0;
    J->steps++;
    unsigned phase = s->phase < RSR_NPHASES ? s->phase : 0;
    serial_slice(&J->seqj, &J->steps_track, s->start_ns, s->end_ns, 1, fx_phase + phase, CAT_STEP, step_args, &i,
                 0, 0);
    return J->pb->failed ? -1 : 0;
}

static void ckpt_args(struct pf_proc *p, const void *rec)
{
    const struct rsr_checkpoint *c = rec;
    arg_uint(p, ARG_BYTES, c->bytes);
    arg_uint(p, ARG_FILES, c->files);
    arg_int(p, ARG_GPU_STALL, c->gpu_stall_ns);
    arg_int(p, ARG_RANK, c->rank);
}

/* The process's track that the job's sequence writes on: its checkpoints
 * (k 0) and the report's timeline counters (k 1..). */
#define PF_JOB_TRACK(proc_uuid, k) ((proc_uuid) + ((0xfff00ull + (k)) << 20))

static void job_timeline(struct pf_job *J, const struct rsr_job *job, const int *proc_of, const uint64_t *uuids)
{
    static const char *const names[] = { "GPU busy", "SM active", "NCCL throughput", "storage read",
                                         "storage write" };
    static const char *const units[] = { "%", "%", "GB/s", "MB/s", "MB/s" };
    const struct rsr_timeline *tl = &job->timeline;
    struct pf_proc *p = &J->seqj;
    for (size_t r = 0; r < tl->n_ranks; r++) {
        const struct rsr_timeline_rank *tr = &tl->ranks[r];
        int pi = proc_of[tr->model];
        if (pi < 0)
            continue;
        const double *v[] = { tr->gpu_busy_pct, tr->sm_active_pct, tr->comm_gbs, tr->read_mbs, tr->write_mbs };
        for (unsigned k = 0; k < 5; k++) {
            if (!v[k])
                continue;
            uint64_t uuid = PF_JOB_TRACK(uuids[pi], k + 1);
            desc_named(p, uuid, uuids[pi], names[k], units[k]);
            for (size_t b = 0; b < tl->nbins; b++)
                counter(p, uuid, tl->start_ns + (int64_t)b * tl->bin_ns, v[k][b]);
        }
    }
}

static void job_checkpoints(struct pf_job *J, const struct rsr_job *job, const int *proc_of, const uint64_t *uuids)
{
    struct pf_proc *p = &J->seqj;
    for (size_t i = 0; i < job->storage.n_ckpts; i++) {
        const struct rsr_checkpoint *c = &job->storage.ckpts[i];
        int pi = proc_of[c->model];
        if (pi < 0 || !in_window(p, c->start_ns, c->end_ns))
            continue;
        struct pf_track *t = &J->ckpt_tracks[pi];
        if (!t->uuid) {
            *t = (struct pf_track){ .uuid = PF_JOB_TRACK(uuids[pi], 0), .last_end = INT64_MIN };
            desc_named(p, t->uuid, uuids[pi], "checkpoints", NULL);
        }
        serial_slice(p, t, c->start_ns, c->end_ns, 1, fx_ckpt, CAT_CHECKPOINT, ckpt_args, c, 0, 0);
    }
}

static void process_descriptor(struct pf_proc *jp, uint64_t uuid, int pid, const struct rsr_input *in)
{
    char name[200];
    if (in->rank >= 0)
        snprintf(name, sizeof name, "rank %d (pid %d on %s)", in->rank, in->pid, in->host ? in->host : "?");
    else
        snprintf(name, sizeof name, "pid %d on %s", in->pid, in->host ? in->host : "?");
    desc_begin(jp, uuid, 0);
    rsr_pb_begin(jp->pb, TD_PROCESS);
    rsr_pb_uint(jp->pb, 1, (uint64_t)pid);          /* ProcessDescriptor.pid */
    for (uint32_t k = 0; k < in->argc; k++)
        rsr_pb_str(jp->pb, 2, in->argv[k]);         /* cmdline */
    rsr_pb_str(jp->pb, 6, name);                    /* process_name */
    if (in->rank >= 0)
        rsr_pb_uint(jp->pb, 3, (uint64_t)in->rank); /* legacy_sort_index: ranks in order */
    rsr_pb_end(jp->pb);
    desc_end(jp);
}

/* The second pass: workers take the chosen files in turn, each writing
 * its own batches (compressed outside the lock) to the one file. */
struct pf_pass {
    struct rsr_input *ins;
    struct rsr_model **models;
    const int *proc_of, *pids;
    const uint64_t *uuids;
    int n, next;
    int64_t from, to;
    FILE *f;
    int zlib;
    pthread_mutex_t lock;
    uint64_t counts[8];
    int rc;
};

static void *pass_worker(void *arg)
{
    struct pf_pass *W = arg;
    struct rsr_pb pb;
    rsr_pb_init_shared(&pb, W->f, W->zlib, &W->lock);
    struct rsr_sym *sym = rsr_sym_new(1);
    for (;;) {
        pthread_mutex_lock(&W->lock);
        int i = W->next++;
        pthread_mutex_unlock(&W->lock);
        if (i >= W->n || pb.failed)
            break;
        int pi = W->proc_of[i];
        if (pi < 0)
            continue;
        struct pf_proc p = { .pb = &pb, .seq = (uint32_t)pi + 1, .uuid = W->uuids[pi],
                             .shift = W->models[i]->clock_offset_ns, .from = W->from, .to = W->to,
                             .pid = W->pids[pi], .flow_base = (uint64_t)(pi + 1) << 40, .sym = sym };
        struct rsr_walk w;
        int rc = 0;
        if (rsr_walk_file(W->ins[i].file, take_chunk, &p, &w) != 0 && !p.failed) {
            fprintf(stderr, "ringside: %s: %s\n", W->ins[i].file, strerror(errno));
            rc = 1;
        }
        if (p.failed) {
            fprintf(stderr, "ringside: out of memory exporting %s\n", W->ins[i].file);
            rc = 1;
        }
        pthread_mutex_lock(&W->lock);
        for (int k = 0; k < 8; k++)
            W->counts[k] += p.counts[k];
        W->rc |= rc;
        pthread_mutex_unlock(&W->lock);
        proc_free(&p);
    }
    rsr_sym_free(sym);
    int failed = rsr_pb_finish(&pb) != 0;
    pthread_mutex_lock(&W->lock);
    W->rc |= failed ? 2 : 0;
    pthread_mutex_unlock(&W->lock);
    return NULL;
}

int rsr_pftrace_wanted(const char *out)
{
    size_t n = strlen(out);
    return !(n >= 5 && strcmp(out + n - 5, ".json") == 0);
}

/* The trace being written: the job's sequence (written as the analyses
 * hand over each step), then, at rsr_pftrace_close, the chosen processes. */
struct rsr_pftrace {
    FILE *f;
    struct rsr_export_opts o;
    struct rsr_pb pb;
    pthread_mutex_t job_lock;
    struct pf_job J;
    int n;
};

struct rsr_pftrace *rsr_pftrace_open(const struct rsr_export_opts *o, int n)
{
    fixed_init();
    struct rsr_pftrace *P = calloc(1, sizeof *P);
    if (!P) {
        fprintf(stderr, "ringside: out of memory\n");
        return NULL;
    }
    P->o = *o;
    P->n = n;
    if (!(P->f = fopen(o->out, "wb"))) {
        fprintf(stderr, "ringside: %s: %s\n", o->out, strerror(errno));
        free(P);
        return NULL;
    }
    static char fbuf[1 << 20];
    setvbuf(P->f, fbuf, _IOFBF, sizeof fbuf);
    pthread_mutex_init(&P->job_lock, NULL);
    rsr_pb_init_shared(&P->pb, P->f, getenv("RINGSIDE_PFTRACE_PLAIN") == NULL, &P->job_lock);
    /* The job's sequence and track after the processes' (1..n): the same
     * numbers whichever processes are chosen later. */
    P->J = (struct pf_job){ .o = &P->o, .pb = &P->pb, .step_from = INT64_MAX, .step_to = INT64_MIN };
    P->J.seqj = (struct pf_proc){ .pb = &P->pb, .seq = (uint32_t)n + 1, .uuid = (uint64_t)n + 1,
                                  .from = INT64_MIN, .to = INT64_MAX };
    P->J.steps_track = (struct pf_track){ .uuid = P->J.seqj.uuid + (1ull << 20), .last_end = INT64_MIN };
    desc_named(&P->J.seqj, P->J.steps_track.uuid, 0, "steps", NULL);
    return P;
}

void rsr_pftrace_discard(struct rsr_pftrace *P)
{
    rsr_pb_finish(&P->pb);
    fclose(P->f);
    unlink(P->o.out);
    proc_free(&P->J.seqj);
    pthread_mutex_destroy(&P->job_lock);
    free(P);
}

int rsr_pftrace_visit_step(void *ctx, size_t i, const struct rsr_step *s, const struct rsr_job *job)
{
    return visit_step(&((struct rsr_pftrace *)ctx)->J, i, s, job);
}

int rsr_pftrace_close(struct rsr_pftrace *P, struct rsr_input *ins, struct rsr_model **models,
                      const struct rsr_job *job, const struct rsr_pftrace_pick *pick, int nthreads)
{
    const struct rsr_export_opts *o = &P->o;
    struct pf_job *J = &P->J;
    int n = P->n, rc = 0;
    int *proc_of = malloc((size_t)n * sizeof *proc_of);
    uint64_t *uuids = calloc((size_t)n, sizeof *uuids);
    int *pids = calloc((size_t)n, sizeof *pids);
    J->ckpt_tracks = calloc((size_t)n, sizeof *J->ckpt_tracks);
    if (!proc_of || !uuids || !pids || !J->ckpt_tracks) {
        fprintf(stderr, "ringside: out of memory\n");
        rc = 1;
        goto out;
    }
    /* The chosen processes; Perfetto tells processes apart by pid, so when
     * two share one (hosts, containers) all are numbered from 1 instead. */
    int nchosen = 0, clash = 0;
    for (int i = 0; i < n; i++) {
        int want = pick ? pick->chosen[i] : !o->nranks;
        for (int k = 0; !pick && k < o->nranks; k++)
            want |= ins[i].rank == o->ranks[k];
        proc_of[i] = want && !ins[i].open_failed ? nchosen++ : -1;
        if (proc_of[i] < 0)
            continue;
        uuids[proc_of[i]] = (uint64_t)proc_of[i] + 1;
        pids[proc_of[i]] = ins[i].pid;
        for (int k = 0; k < proc_of[i]; k++)
            clash |= pids[k] == ins[i].pid;
    }
    for (int k = 0; clash && k < nchosen; k++)
        pids[k] = k + 1;
    if (!nchosen && !pick) {
        fprintf(stderr, "ringside: export: none of the ranks asked for is in the job\n");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (proc_of[i] >= 0)
            process_descriptor(&J->seqj, uuids[proc_of[i]], pids[proc_of[i]], &ins[i]);
    job_window(J, job);
    if (o->has_steps) {
        if (J->step_from > J->step_to) {
            fprintf(stderr, "ringside: export: the job has no steps %zu to %zu (%zu found)\n", o->step_first,
                    o->step_last, job->steps.n);
            rc = 1;
        }
        if (J->step_from > J->from)
            J->from = J->step_from;
        if (J->step_to < J->to)
            J->to = J->step_to;
    }
    if (pick) {
        J->from = pick->from_ns;
        J->to = pick->to_ns;
    }
    J->seqj.from = J->from;
    J->seqj.to = J->to;
    if (!rc) {
        job_checkpoints(J, job, proc_of, uuids);
        job_timeline(J, job, proc_of, uuids);
    }
    uint64_t job_points = J->seqj.counts[CNT_POINT];
    int wrc = rsr_pb_finish(&P->pb) != 0;
    struct pf_pass W = { .ins = ins, .models = models, .proc_of = proc_of, .pids = pids, .uuids = uuids, .n = n,
                         .from = J->from, .to = J->to, .f = P->f, .zlib = P->pb.zlib };
    pthread_mutex_init(&W.lock, NULL);
    if (!rc && !wrc) {
        int nt = nthreads < 1 || nchosen < 1 ? 1 : nthreads > nchosen ? nchosen : nthreads;
        pthread_t *tids = calloc((size_t)nt, sizeof *tids);
        int started = 0;
        for (int t = 1; tids && t < nt; t++)
            started += pthread_create(&tids[started], NULL, pass_worker, &W) == 0;
        pass_worker(&W);
        for (int t = 0; t < started; t++)
            pthread_join(tids[t], NULL);
        free(tids);
        rc = W.rc & 1;
        wrc |= W.rc & 2;
    }
    pthread_mutex_destroy(&W.lock);
    if (wrc) {
        fprintf(stderr, "ringside: writing %s: %s\n", o->out, strerror(errno ? errno : EIO));
        rc = 1;
    } else if (!rc && !o->quiet) {
        const uint64_t *counts = W.counts;
        printf("ringside: %s: %d process%s, %" PRIu64 " GPU ops, %" PRIu64 " collectives, %" PRIu64
               " I/O calls, %" PRIu64 " syncs, %" PRIu64 " CPU samples, %" PRIu64 " wait samples, %" PRIu64
               " NVTX ranges, %" PRIu64 " steps, %" PRIu64 " counter values\n",
               o->out, nchosen, nchosen == 1 ? "" : "es", counts[CNT_GPU], counts[CNT_COLL], counts[CNT_IO],
               counts[CNT_SYNC], counts[CNT_SAMPLE], counts[CNT_WAIT], counts[CNT_RANGE], J->steps,
               counts[CNT_POINT] + job_points);
    }
out:
    if (fclose(P->f) != 0 && !rc) {
        fprintf(stderr, "ringside: writing %s: %s\n", o->out, strerror(errno ? errno : EIO));
        rc = 1;
    }
    proc_free(&J->seqj);
    pthread_mutex_destroy(&P->job_lock);
    free(J->ckpt_tracks);
    free(proc_of);
    free(uuids);
    free(pids);
    free(P);
    return rc;
}

int rsr_pftrace_export(struct rsr_input *ins, struct rsr_model **models, int n, const struct rsr_export_opts *o,
                       int nthreads)
{
    struct rsr_pftrace *P = rsr_pftrace_open(o, n);
    if (!P)
        return 1;
    struct rsr_job job;
    if (rsr_job_analyse_visit(models, (size_t)n, &job, rsr_pftrace_visit_step, P) != 0)
        fprintf(stderr, "ringside: out of memory: the clocks may be aligned less well\n");
    int rc = rsr_pftrace_close(P, ins, models, &job, NULL, nthreads);
    rsr_job_free(&job);
    return rc;
}
