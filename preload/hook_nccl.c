/* NCCL capture: every collective and send/receive call (op, count, type,
 * bytes as nccl-tests counts them, root or peer, communicator id, sequence
 * number (collectives: per communicator; sends and receives: per
 * communicator, peer and direction), stream, GPU start and end from an event pair
 * around the call, or around the group it belongs to; for a non-blocking
 * communicator, its end once NCCL reports the work enqueued), groups (each
 * grouped call carries its group's number), and the life of communicators
 * (creation with this process's rank and the size, read once it is ready;
 * end).
 * Communicator ids are equal on every rank: a hash of the unique id (split:
 * of the parent's id, the colour and the parent's split count). */
#include "preload/gpu.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <nccl.h>

ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

/* ---- resolving the real library ---- */

static void *nccl_handle;
static _Atomic int nccl_missing_said;

/* The real NCCL function name: the next definition, else the profiling
 * alias pncclX, else from the already loaded libnccl.so.2. */
static void *nccl_sym_quiet(const char *name)
{
    void *p = rs_cuda_sym_next(name);
    char alt[64];
    if (!p && strlen(name) + 2 < sizeof alt) {
        alt[0] = 'p';
        strcpy(alt + 1, name);
        p = rs_cuda_sym_next(alt);
    }
    if (!p) {
        if (!nccl_handle)
            nccl_handle = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
        if (nccl_handle)
            p = rs_dlsym_real(nccl_handle, name);
    }
    return p;
}

static _Atomic int nccl_version;
static _Atomic int version_asked;

/* The library's version, asked once on the program thread that first calls
 * NCCL (where the program has loaded it), for the writer to put in Meta. */
static void learn_version(void)
{
    if (atomic_exchange(&version_asked, 1))
        return;
    ncclResult_t (*get)(int *) = (ncclResult_t(*)(int *))nccl_sym_quiet("ncclGetVersion");
    int v = 0;
    if (get && get(&v) == ncclSuccess)
        atomic_store(&nccl_version, v);
}

static void *nccl_sym(const char *name)
{
    void *p = nccl_sym_quiet(name);
    if (!p && !atomic_exchange(&nccl_missing_said, 1))
        rs_notice("cannot find the real %s (libnccl.so.2 missing or unknown); NCCL calls fail", name);
    if (p)
        learn_version();
    return p;
}

#define REAL_DECL(name) static __typeof__(name) *real_##name
#define REAL(name)                                                                 \
    ({                                                                             \
        if (RS_UNLIKELY(real_##name == NULL))                                      \
            real_##name = (__typeof__(real_##name))nccl_sym(#name);                \
        real_##name;                                                               \
    })
#define CALL(name, ...) (REAL(name) ? real_##name(__VA_ARGS__) : ncclSystemError)

static inline int nccl_on(void)
{
    return RS_LIKELY(atomic_load_explicit(&rs_hot.on, memory_order_relaxed)) && !rs_th.guard && rs_cfg.nccl;
}

REAL_DECL(ncclCommCount);
REAL_DECL(ncclCommUserRank);
REAL_DECL(ncclCommCuDevice);
REAL_DECL(ncclCommGetAsyncError);

int rs_nccl_version(void)
{
    return atomic_load(&nccl_version);
}

/* ---- communicators: handle -> id, rank, size, sequence ---- */

#define COMM_SLOTS 1024u

struct comm_slot {
    _Atomic uintptr_t handle;
    uint64_t id;
    int32_t rank, nranks, device;
    _Atomic uint32_t seq, splits;
    _Atomic int ready;
    /* A non-blocking communicator cannot be asked its rank, size or device
     * until NCCL says it is ready (its creation returned ncclInProgress):
     * facts 0 until then, and its creation's record waits with them. */
    _Atomic int facts, settling;
    int kind;
    uint64_t t0, parent;
};
static struct comm_slot comms[COMM_SLOTS];

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
#define HASH_START 14695981039346656037ull

static struct comm_slot *comm_find(ncclComm_t c, int add)
{
    return rs_slot(comms, sizeof comms[0], offsetof(struct comm_slot, handle), COMM_SLOTS, COMM_SLOTS,
                   (uintptr_t)c, add);
}

/* The communicator's state as NCCL reports it (ncclInProgress while a
 * non-blocking one is not ready; ncclSuccess when it cannot be asked). */
static ncclResult_t comm_state(ncclComm_t c)
{
    ncclResult_t st = ncclSuccess;
    if (!REAL(ncclCommGetAsyncError) || real_ncclCommGetAsyncError(c, &st) != ncclSuccess)
        return ncclSuccess;
    return st;
}

/* Asks NCCL the rank, size and device not known yet. */
static void comm_facts(ncclComm_t c, struct comm_slot *s)
{
    int rank = s->rank, nranks = s->nranks, dev = -1;
    if (rank < 0 && REAL(ncclCommUserRank) && real_ncclCommUserRank(c, &rank) != ncclSuccess)
        rank = -1;
    if (nranks <= 0 && REAL(ncclCommCount) && real_ncclCommCount(c, &nranks) != ncclSuccess)
        nranks = 0;
    if (REAL(ncclCommCuDevice) && real_ncclCommCuDevice(c, &dev) != ncclSuccess)
        dev = -1;
    s->rank = rank;
    s->nranks = nranks;
    s->device = dev;
    atomic_store_explicit(&s->facts, 1, memory_order_release);
}

/* Remembers communicator c (new, or a handle reused) with its id; its
 * facts now, or, while its creation is in progress, once it is ready. */
static struct comm_slot *comm_add(ncclComm_t c, uint64_t id, int rank, int nranks, int in_progress)
{
    struct comm_slot *s = comm_find(c, 1);
    if (!s)
        return NULL;
    atomic_store(&s->ready, 0);
    s->id = id;
    s->rank = rank;
    s->nranks = nranks;
    s->device = -1;
    s->kind = -1;
    atomic_store(&s->facts, 0);
    atomic_store(&s->settling, 0);
    if (!in_progress)
        comm_facts(c, s);
    atomic_store(&s->seq, 0);
    atomic_store(&s->splits, 0);
    atomic_store_explicit(&s->ready, 1, memory_order_release);
    return s;
}

static void comm_record(int kind, uint64_t t0, uint64_t t1, ncclComm_t c, const struct comm_slot *s,
                        uint64_t parent);

/* A non-blocking communicator's creation is over (st: how it ended): its
 * facts are read and its creation recorded, ending now. Once. */
static void comm_settle(ncclComm_t c, struct comm_slot *s, ncclResult_t st)
{
    if (atomic_load_explicit(&s->facts, memory_order_acquire) || atomic_exchange(&s->settling, 1))
        return;
    if (st == ncclSuccess)
        comm_facts(c, s);
    else
        atomic_store(&s->facts, 1);
    if (s->kind >= 0)
        comm_record(s->kind, s->t0, rs_now(), c, s, s->parent);
}

/* The slot of a communicator used in a collective; one made now (id: the
 * handle) when its creation was not seen. */
static struct comm_slot *comm_get(ncclComm_t c)
{
    struct comm_slot *s = comm_find(c, 0);
    if (RS_LIKELY(s && atomic_load_explicit(&s->ready, memory_order_acquire))) {
        /* A call on it: NCCL wants it ready by now, unless the program
         * never asked through our ncclCommGetAsyncError. */
        if (RS_UNLIKELY(!atomic_load_explicit(&s->facts, memory_order_acquire))) {
            ncclResult_t st = comm_state(c);
            if (st != ncclInProgress)
                comm_settle(c, s, st);
        }
        return s;
    }
    return comm_add(c, (uint64_t)(uintptr_t)c, -1, 0, comm_state(c) == ncclInProgress);
}

static void comm_record(int kind, uint64_t t0, uint64_t t1, ncclComm_t c, const struct comm_slot *s,
                        uint64_t parent)
{
    int g = rs_guard_hold();
    struct rs_rec_comm *r = rs_reserve(sizeof *r, RS_REC_COMM);
    if (!r) {
        rs_guard_restore(g);
        return;
    }
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_COMM, (uint8_t)kind, 0 };
    r->start_ns = t0;
    r->dur_ns = t1 - t0;
    r->comm = s ? s->id : (uint64_t)(uintptr_t)c;
    r->handle = (uint64_t)(uintptr_t)c;
    r->parent = parent;
    r->rank = s ? s->rank : -1;
    r->nranks = s ? s->nranks : 0;
    r->device = s ? s->device : -1;
    r->pad_ = 0;
    rs_commit(sizeof *r);
    /* a communicator holds device memory from its creation: the driver's figure now */
    if (kind != RSF_COMM_DESTROY && kind != RSF_COMM_ABORT && kind != RSF_COMM_FINALIZE)
        rs_mem_info_tick(1);
    rs_guard_restore(g);
}

/* ---- communicator creation and end ---- */

REAL_DECL(ncclCommInitRank);
REAL_DECL(ncclCommInitRankConfig);
REAL_DECL(ncclCommInitRankScalable);
REAL_DECL(ncclCommInitAll);
REAL_DECL(ncclCommSplit);
REAL_DECL(ncclCommDestroy);
REAL_DECL(ncclCommAbort);
REAL_DECL(ncclCommFinalize);

static uint64_t id_hash(const ncclUniqueId *ids, int n)
{
    return hash_bytes(HASH_START, ids, (size_t)n * sizeof *ids);
}

static void comm_created(int kind, ncclResult_t r, uint64_t t0, ncclComm_t c, uint64_t id, int rank,
                         int nranks, uint64_t parent)
{
    if (r != ncclSuccess && r != ncclInProgress)
        return;
    if (!c)
        return;
    int saved = errno;
    struct comm_slot *s = comm_add(c, id, rank, nranks, r == ncclInProgress);
    if (s && r == ncclInProgress) {
        /* recorded when it is ready: the creation lasts until then */
        s->t0 = t0;
        s->parent = parent;
        s->kind = kind;
    } else {
        comm_record(kind, t0, rs_now(), c, s, parent);
    }
    errno = saved;
}

RS_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (!nccl_on())
        return CALL(ncclCommInitRank, comm, nranks, id, rank);
    uint64_t t0 = rs_now();
    ncclResult_t r = CALL(ncclCommInitRank, comm, nranks, id, rank);
    comm_created(RSF_COMM_INIT, r, t0, comm ? *comm : NULL, id_hash(&id, 1), rank, nranks, 0);
    return r;
}

RS_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                              ncclConfig_t *config)
{
    if (!nccl_on())
        return CALL(ncclCommInitRankConfig, comm, nranks, id, rank, config);
    uint64_t t0 = rs_now();
    ncclResult_t r = CALL(ncclCommInitRankConfig, comm, nranks, id, rank, config);
    comm_created(RSF_COMM_INIT, r, t0, comm ? *comm : NULL, id_hash(&id, 1), rank, nranks, 0);
    return r;
}

RS_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
                                                ncclUniqueId *ids, ncclConfig_t *config)
{
    if (!nccl_on())
        return CALL(ncclCommInitRankScalable, comm, nranks, rank, nids, ids, config);
    uint64_t t0 = rs_now();
    ncclResult_t r = CALL(ncclCommInitRankScalable, comm, nranks, rank, nids, ids, config);
    comm_created(RSF_COMM_INIT, r, t0, comm ? *comm : NULL, ids && nids > 0 ? id_hash(ids, nids) : 0, rank,
                 nranks, 0);
    return r;
}

RS_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    if (!nccl_on())
        return CALL(ncclCommInitAll, comm, ndev, devlist);
    uint64_t t0 = rs_now();
    ncclResult_t r = CALL(ncclCommInitAll, comm, ndev, devlist);
    if (r == ncclSuccess && comm && ndev > 0) {
        /* All ranks are in this process: an id of its own (pid, time). */
        uint64_t seed[2] = { (uint64_t)rs_id.pid, rs_now() };
        uint64_t id = hash_bytes(HASH_START, seed, sizeof seed);
        for (int i = 0; i < ndev; i++)
            comm_created(RSF_COMM_INIT_ALL, r, t0, comm[i], id, i, ndev, 0);
    }
    return r;
}

RS_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                     ncclConfig_t *config)
{
    if (!nccl_on())
        return CALL(ncclCommSplit, comm, color, key, newcomm, config);
    uint64_t t0 = rs_now();
    int saved = errno;
    struct comm_slot *p = comm_get(comm);
    /* Every rank of the parent splits it in the same order. */
    uint32_t nth = p ? atomic_fetch_add(&p->splits, 1) : 0;
    errno = saved;
    ncclResult_t r = CALL(ncclCommSplit, comm, color, key, newcomm, config);
    if (p && newcomm && *newcomm && color != NCCL_SPLIT_NOCOLOR) {
        uint64_t parts[3] = { p->id, (uint64_t)(int64_t)color, nth };
        comm_created(RSF_COMM_SPLIT, r, t0, *newcomm, hash_bytes(HASH_START, parts, sizeof parts), -1, 0, p->id);
    }
    return r;
}

static __thread int nwaiting RS_TLS;
static void waiting_check(ncclComm_t only);

/* Set while a communicator ends: a finalize that destroy makes is not a call of its own. */
static __thread int in_comm_end RS_TLS;

#define COMM_END(name, kind)                                                                   \
    RS_EXPORT ncclResult_t name(ncclComm_t comm)                                               \
    {                                                                                          \
        if (!nccl_on() || in_comm_end)                                                         \
            return CALL(name, comm);                                                           \
        int saved = errno;                                                                     \
        if (nwaiting > 0)                                                                      \
            waiting_check(comm);                                                               \
        struct comm_slot *s = comm_get(comm);                                                  \
        errno = saved;                                                                         \
        struct comm_slot copy;                                                                 \
        if (s) {                                                                               \
            copy.id = s->id;                                                                   \
            copy.rank = s->rank;                                                               \
            copy.nranks = s->nranks;                                                           \
            copy.device = s->device;                                                           \
        }                                                                                      \
        uint64_t t0 = rs_now();                                                                \
        in_comm_end = 1;                                                                       \
        ncclResult_t r = CALL(name, comm);                                                     \
        in_comm_end = 0;                                                                       \
        saved = errno;                                                                         \
        comm_record(kind, t0, rs_now(), comm, s ? &copy : NULL, 0);                            \
        errno = saved;                                                                         \
        return r;                                                                              \
    }

COMM_END(ncclCommDestroy, RSF_COMM_DESTROY)
COMM_END(ncclCommAbort, RSF_COMM_ABORT)
COMM_END(ncclCommFinalize, RSF_COMM_FINALIZE)

/* ---- collectives ---- */

static const uint8_t type_size[ncclNumTypes] = {
    [ncclInt8] = 1, [ncclUint8] = 1, [ncclInt32] = 4, [ncclUint32] = 4, [ncclInt64] = 8,
    [ncclUint64] = 8, [ncclFloat16] = 2, [ncclFloat32] = 4, [ncclFloat64] = 8, [ncclBfloat16] = 2,
    [ncclFloat8e4m3] = 1, [ncclFloat8e5m2] = 1,
};

#define GROUP_MAX 4096

/* Calls made inside a group: recorded at the group's end, when their work
 * is on the streams. */
struct pending {
    struct rs_rec_coll rec;
    CUstream stream;
    ncclComm_t comm;
};
static __thread int group_depth RS_TLS;
/* Inside a collective's real call: NCCL's own calls of its API (ncclBcast is
 * ncclBroadcast; they bind to our hooks) are part of the call recorded. */
static __thread int coll_inside RS_TLS;
static __thread int npending RS_TLS;
/* The outermost group the thread is in: its number in the process, from 1. */
static _Atomic uint64_t group_ids;
static __thread uint64_t group_cur RS_TLS;
/* A thread's list, mapped at its first group (a group of sends and receives
 * across many peers can hold thousands of calls); NULL: none or no memory. */
static __thread struct pending *pending RS_TLS;
static __thread int pending_failed RS_TLS;

static int pending_room(void)
{
    if (RS_LIKELY(pending != NULL))
        return npending < GROUP_MAX;
    if (pending_failed)
        return 0;
    void *m = mmap(NULL, GROUP_MAX * sizeof *pending, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        pending_failed = 1;
        return 0;
    }
    pending = m;
    return 1;
}

/* Non-blocking communicators. A call, or a group's end, that returns
 * ncclInProgress has not put its work on the stream: NCCL's own thread does
 * that later, and says so through ncclCommGetAsyncError, which the program
 * polls (PyTorch right after each call, on the calling thread) and must see
 * ncclSuccess from before it uses the communicator again. The start event
 * went on the stream at the call, before the work; the end event waits here
 * until the program's poll of that communicator on this thread reports it
 * ready, and goes on the stream then, after the work. The work cannot start
 * before it was enqueued, which on an idle stream is after the start event
 * ran: the GPU start is held to no earlier than the last poll that still
 * said ncclInProgress (enqueued_ns; NCCL marks the communicator ready right
 * after it enqueued, so that poll came before the work, give or take that
 * gap). The end event goes on the stream within one poll of the enqueue: a
 * collective shorter than the program's polling interval is stretched to
 * it. So such a call is written with flag RSF_COLLF_LATE: its own events
 * only bound its GPU time, and the reporter takes the times of the kernel
 * NCCL's thread launched for it (load_model.c's link), the stream's own
 * events around the work itself. Where the program never polls on this
 * thread, its next NCCL call here settles what NCCL reports ready, and a
 * communicator's end settles the rest without GPU times. */
struct waiting {
    struct rs_rec_coll rec;
    CUstream stream;
    ncclComm_t comm;
};
static __thread struct waiting *waiting RS_TLS;
static __thread int waiting_failed RS_TLS;
/* The last poll on this thread that said ncclInProgress, and of which communicator. */
static __thread uint64_t busy_ns RS_TLS;
static __thread ncclComm_t busy_comm RS_TLS;

static int waiting_room(void)
{
    if (RS_LIKELY(waiting != NULL))
        return nwaiting < GROUP_MAX;
    if (waiting_failed)
        return 0;
    void *m = mmap(NULL, GROUP_MAX * sizeof *waiting, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        waiting_failed = 1;
        return 0;
    }
    waiting = m;
    return 1;
}

static void coll_commit(const struct rs_rec_coll *c);

/* Records the calls waiting on comm: with an end event when ok. */
static void waiting_resolve(ncclComm_t comm, int ok)
{
    int k = 0;
    for (int i = 0; i < nwaiting; i++) {
        struct waiting *x = &waiting[i];
        if (x->comm != comm) {
            waiting[k++] = *x;
            continue;
        }
        rs_th.guard = 1;
        x->rec.h.file = rs_gpu_end(x->rec.h.file, x->stream, 0, ok);
        rs_th.guard = 0;
        x->rec.enqueued_ns = busy_comm == comm && busy_ns > x->rec.start_ns ? busy_ns : 0;
        x->rec.flags |= RSF_COLLF_LATE;
        coll_commit(&x->rec);
    }
    nwaiting = k;
}

/* Settles the calls whose communicator NCCL reports done; with only set,
 * that communicator's calls in any case (without GPU times if not done). */
static void waiting_check(ncclComm_t only)
{
    for (int i = 0; i < nwaiting;) {
        ncclComm_t c = waiting[i].comm;
        if (only && c != only) {
            i++;
            continue;
        }
        ncclResult_t st = comm_state(c);
        if (st == ncclInProgress && !only) {
            i++;
            continue;
        }
        waiting_resolve(c, st == ncclSuccess);
        i = 0;
    }
}

/* Sequence numbers of sends and receives: per communicator, peer and
 * direction, so that a rank's k-th send to P pairs with P's k-th receive. */
#define P2P_SLOTS 16384u
static struct {
    _Atomic uint64_t key;
    _Atomic uint32_t n;
} p2p_seq[P2P_SLOTS];

static uint32_t coll_seq(struct comm_slot *s, int op, int peer)
{
    if (!s)
        return 0;
    if (op != RSF_COLL_SEND && op != RSF_COLL_RECV)
        return atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
    uint64_t key = (s->id * 1099511628211ull) ^ ((uint64_t)(uint32_t)peer << 1 | (op == RSF_COLL_RECV));
    key += !key; /* never 0, the empty slot (and the direction's bit kept) */
    uint32_t h = (uint32_t)(key ^ key >> 29) * 2654435761u;
    for (uint32_t i = 0; i < 64; i++) {
        __typeof__(&p2p_seq[0]) e = &p2p_seq[(h + i) & (P2P_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&e->key, &zero, key))
                k = key;
            else
                k = zero;
        }
        if (k == key)
            return atomic_fetch_add_explicit(&e->n, 1, memory_order_relaxed);
    }
    return UINT32_MAX; /* table full: unknown */
}

static void coll_commit(const struct rs_rec_coll *c)
{
    int g = rs_guard_hold();
    struct rs_rec_coll *r = rs_reserve(sizeof *r, RS_REC_COLL);
    if (r) {
        *r = *c;
        rs_commit(sizeof *r);
    }
    /* collectives come every step: the driver's memory figure at most every 100 ms */
    rs_mem_info_tick(0);
    rs_guard_restore(g);
}

/* Records one call: times_n: bytes count x nranks (nccl-tests). */
#define COLL(OP, NAME, COUNT, TYPE, REDOP, PEER, TIMES_N, COMM, STREAM, ...)                   \
    do {                                                                                       \
        if (!nccl_on() || coll_inside)                                                         \
            return CALL(NAME, __VA_ARGS__);                                                    \
        int saved_ = errno;                                                                    \
        if (RS_UNLIKELY(nwaiting > 0))                                                         \
            waiting_check(NULL);                                                               \
        struct comm_slot *s_ = comm_get(COMM);                                                 \
        struct rs_rec_coll c_ = { .h = { sizeof c_, RS_REC_COLL, OP, 0 } };                    \
        int timed_ = rs_cuda_ready() > 0;                                                      \
        uint8_t fl_ = 0;                                                                       \
        if (timed_) {                                                                          \
            rs_th.guard = 1;                                                                   \
            c_.h.file = rs_gpu_begin((CUstream)(STREAM), 0, &c_.anchor, &fl_);                 \
            c_.stream = rs_stream_id((CUstream)(STREAM), 0);                                   \
            rs_th.guard = 0;                                                                   \
        } else {                                                                               \
            c_.stream = (uint64_t)(uintptr_t)(STREAM);                                         \
        }                                                                                      \
        unsigned ts_ = (unsigned)(TYPE) < ncclNumTypes ? type_size[(unsigned)(TYPE)] : 0;      \
        c_.count = (COUNT);                                                                    \
        c_.bytes = (uint64_t)(COUNT) * ts_ * ((TIMES_N) && s_ ? (uint64_t)s_->nranks : 1);     \
        c_.comm = s_ ? s_->id : (uint64_t)(uintptr_t)(COMM);                                   \
        c_.seq = coll_seq(s_, OP, PEER);                                                       \
        c_.peer = (PEER);                                                                      \
        c_.datatype = (uint8_t)(TYPE);                                                         \
        c_.redop = (uint8_t)(REDOP);                                                           \
        c_.group = (uint8_t)(group_depth > 255 ? 255 : group_depth);                           \
        c_.flags = fl_;                                                                        \
        c_.group_id = group_depth > 0 ? group_cur : 0;                                         \
        struct rs_graph_capture gc_;                                                           \
        int captured_ = (fl_ & RSF_GPUF_CAPTURED) && group_depth == 0;                         \
        if (captured_) {                                                                       \
            rs_th.guard = 1;                                                                   \
            rs_graph_coll_begin(&gc_, (CUstream)(STREAM), OP, c_.bytes, c_.comm);              \
            rs_th.guard = 0;                                                                   \
        }                                                                                      \
        errno = saved_;                                                                        \
        c_.start_ns = rs_now();                                                                \
        coll_inside = 1;                                                                       \
        ncclResult_t r_ = CALL(NAME, __VA_ARGS__);                                             \
        saved_ = errno;                                                                        \
        coll_inside = 0;                                                                       \
        if (captured_) {                                                                       \
            rs_th.guard = 1;                                                                   \
            rs_graph_coll_end(&gc_, r_ == ncclSuccess);                                        \
            rs_th.guard = 0;                                                                   \
        }                                                                                      \
        if (group_depth > 0 && r_ == ncclSuccess && pending_room()) {                          \
            c_.dur_ns = rs_now() - c_.start_ns;                                                \
            pending[npending].rec = c_;                                                        \
            pending[npending].comm = (COMM);                                                   \
            pending[npending++].stream = (CUstream)(STREAM);                                   \
        } else if (r_ == ncclInProgress && c_.h.file && group_depth == 0 && waiting_room()) {  \
            c_.dur_ns = rs_now() - c_.start_ns;                                                \
            waiting[nwaiting++] = (struct waiting){ c_, (CUstream)(STREAM), (COMM) };          \
        } else {                                                                               \
            if (c_.h.file) {                                                                   \
                rs_th.guard = 1;                                                               \
                c_.h.file = rs_gpu_end(c_.h.file, (CUstream)(STREAM), 0,                       \
                                       r_ == ncclSuccess && group_depth == 0);                 \
                rs_th.guard = 0;                                                               \
            }                                                                                  \
            /* the end event is on the stream by now */                                        \
            c_.dur_ns = rs_now() - c_.start_ns;                                                \
            coll_commit(&c_);                                                                  \
        }                                                                                      \
        errno = saved_;                                                                        \
        return r_;                                                                             \
    } while (0)

REAL_DECL(ncclAllReduce);
REAL_DECL(ncclAllGather);
REAL_DECL(ncclReduceScatter);
REAL_DECL(ncclBroadcast);
REAL_DECL(ncclBcast);
REAL_DECL(ncclReduce);
REAL_DECL(ncclAlltoAll);
REAL_DECL(ncclGather);
REAL_DECL(ncclScatter);
REAL_DECL(ncclSend);
REAL_DECL(ncclRecv);
REAL_DECL(ncclGroupStart);
REAL_DECL(ncclGroupEnd);

RS_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_ALLREDUCE, ncclAllReduce, count, type, op, -1, 0, comm, stream, sendbuff, recvbuff, count,
         type, op, comm, stream);
}

RS_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                     ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_ALLGATHER, ncclAllGather, count, type, 0, -1, 1, comm, stream, sendbuff, recvbuff, count,
         type, comm, stream);
}

RS_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t count,
                                         ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream)
{
    COLL(RSF_COLL_REDUCESCATTER, ncclReduceScatter, count, type, op, -1, 1, comm, stream, sendbuff, recvbuff,
         count, type, op, comm, stream);
}

RS_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                     int root, ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_BROADCAST, ncclBroadcast, count, type, 0, root, 0, comm, stream, sendbuff, recvbuff, count,
         type, root, comm, stream);
}

RS_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    COLL(RSF_COLL_BROADCAST, ncclBcast, count, type, 0, root, 0, comm, stream, buff, count, type, root, comm,
         stream);
}

RS_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_REDUCE, ncclReduce, count, type, op, root, 0, comm, stream, sendbuff, recvbuff, count, type,
         op, root, comm, stream);
}

RS_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                    ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_ALLTOALL, ncclAlltoAll, count, type, 0, -1, 1, comm, stream, sendbuff, recvbuff, count,
         type, comm, stream);
}

RS_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                  int root, ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_GATHER, ncclGather, count, type, 0, root, 1, comm, stream, sendbuff, recvbuff, count, type,
         root, comm, stream);
}

RS_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t type,
                                   int root, ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_SCATTER, ncclScatter, count, type, 0, root, 1, comm, stream, sendbuff, recvbuff, count,
         type, root, comm, stream);
}

RS_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t type, int peer,
                                ncclComm_t comm, cudaStream_t stream)
{
    COLL(RSF_COLL_SEND, ncclSend, count, type, 0, peer, 0, comm, stream, sendbuff, count, type, peer, comm,
         stream);
}

RS_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                                cudaStream_t stream)
{
    COLL(RSF_COLL_RECV, ncclRecv, count, type, 0, peer, 0, comm, stream, recvbuff, count, type, peer, comm,
         stream);
}

RS_EXPORT ncclResult_t ncclGroupStart(void)
{
    ncclResult_t r = CALL(ncclGroupStart);
    if (r == ncclSuccess && group_depth++ == 0)
        group_cur = atomic_fetch_add_explicit(&group_ids, 1, memory_order_relaxed) + 1;
    return r;
}

RS_EXPORT ncclResult_t ncclGroupEnd(void)
{
    ncclResult_t r = CALL(ncclGroupEnd);
    if (group_depth > 0)
        group_depth--;
    if (group_depth == 0 && npending > 0) {
        int saved = errno;
        /* A non-blocking group's work is launched later (see struct waiting). */
        int later = r == ncclInProgress && nccl_on();
        rs_th.guard = 1;
        for (int i = 0; i < npending && !later; i++) {
            struct pending *p = &pending[i];
            if (p->rec.h.file)
                p->rec.h.file = rs_gpu_end(p->rec.h.file, p->stream, 0, r == ncclSuccess);
        }
        rs_th.guard = 0;
        /* A grouped call's work is launched here: its call lasts until now. */
        uint64_t t1 = rs_now();
        for (int i = 0; i < npending; i++) {
            struct pending *p = &pending[i];
            p->rec.dur_ns = t1 - p->rec.start_ns;
            if (later && p->rec.h.file && waiting_room()) {
                waiting[nwaiting++] = (struct waiting){ p->rec, p->stream, p->comm };
                continue;
            }
            if (later && p->rec.h.file) {
                rs_th.guard = 1;
                p->rec.h.file = rs_gpu_end(p->rec.h.file, p->stream, 0, 0);
                rs_th.guard = 0;
            }
            coll_commit(&p->rec);
        }
        npending = 0;
        errno = saved;
    }
    return r;
}

RS_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    ncclResult_t r = CALL(ncclCommGetAsyncError, comm, asyncError);
    if (r != ncclSuccess || !asyncError || !nccl_on())
        return r;
    if (*asyncError == ncclInProgress) {
        if (nwaiting > 0) {
            busy_ns = rs_now();
            busy_comm = comm;
        }
        return r;
    }
    int saved = errno;
    struct comm_slot *s = comm_find(comm, 0);
    if (s && atomic_load_explicit(&s->ready, memory_order_acquire) && !atomic_load(&s->facts))
        comm_settle(comm, s, *asyncError);
    if (nwaiting > 0)
        waiting_resolve(comm, *asyncError == ncclSuccess);
    errno = saved;
    return r;
}

/* The functions this file exports, for rs_nccl_present. */
#define NCCL_HOOKS(X)                                                                            \
    X(ncclCommInitRank) X(ncclCommInitRankConfig) X(ncclCommInitRankScalable) X(ncclCommInitAll) \
    X(ncclCommSplit) X(ncclCommDestroy) X(ncclCommAbort) X(ncclCommFinalize) X(ncclAllReduce)    \
    X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) X(ncclBcast) X(ncclReduce)            \
    X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv) X(ncclGroupStart)       \
    X(ncclGroupEnd) X(ncclCommGetAsyncError)

void *rs_nccl_wrapper(const char *name, void *p)
{
#define NCCL_WRAP(fn) if (!strcmp(name, #fn)) return p && p == nccl_sym_quiet(#fn) ? (void *)fn : p;
    NCCL_HOOKS(NCCL_WRAP)
#undef NCCL_WRAP
    return p;
}

int rs_nccl_present(const char *name, void *p)
{
#define NCCL_IS_OURS(fn) if (p == (void *)fn) return strcmp(name, #fn) != 0 || nccl_sym_quiet(#fn) != NULL;
    NCCL_HOOKS(NCCL_IS_OURS)
#undef NCCL_IS_OURS
    return 1;
}
