/* CUDA driver capture: kernel launches, copies and sets, graph launches,
 * blocking waits and memory calls, reached through the exported symbols,
 * through cuGetProcAddress / _v2 (the way the CUDA runtime, PyTorch and NCCL
 * get there, which also covers cudaGetDriverEntryPoint*), and through dlsym
 * on a libcuda handle (Triton). Every wrapper exists in the legacy and, where
 * the driver has one, the per-thread default stream (_ptsz/_ptds) variant. */
#include "preload/gpu.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct rs_cuda_real rs_cu;
_Atomic int rs_captures;

enum { CU_NONE, CU_RESOLVING, CU_READY, CU_OFF };
static _Atomic int cu_state;
static _Atomic int cu_inited;        /* the program called cuInit successfully */
static void *cuda_handle;

/* ---- resolving the real driver ---- */

static void *(*real_dlsym)(void *, const char *);

static void dlsym_resolve(void)
{
    int saved = errno;
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17");
    real_dlsym = (void *(*)(void *, const char *))p;
    errno = saved;
}

void *rs_dlsym_real(void *handle, const char *name)
{
    if (RS_UNLIKELY(!real_dlsym))
        dlsym_resolve();
    return real_dlsym ? real_dlsym(handle, name) : NULL;
}

void *rs_cuda_sym_next(const char *name)
{
    return rs_dlsym_real(RTLD_NEXT, name);
}

void *rs_cuda_sym(const char *name)
{
    if (RS_UNLIKELY(!real_dlsym))
        dlsym_resolve();
    if (!real_dlsym)
        return NULL;
    void *p = real_dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    if (!cuda_handle)
        cuda_handle = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    return cuda_handle ? real_dlsym(cuda_handle, name) : NULL;
}

/* Resolves what the agent itself calls; the first hooked call does it. */
static int cuda_setup(void)
{
    int expect = CU_NONE;
    if (!atomic_compare_exchange_strong(&cu_state, &expect, CU_RESOLVING))
        return atomic_load(&cu_state) == CU_READY;
    int saved = errno;
#define R(field, name) rs_cu.field = (__typeof__(rs_cu.field))rs_cuda_sym(name)
    R(event_create, "cuEventCreate");
    R(event_record, "cuEventRecord");
    R(event_record_ptsz, "cuEventRecord_ptsz");
    R(event_query, "cuEventQuery");
    R(elapsed, "cuEventElapsedTime");
    R(stream_create, "cuStreamCreate");
    R(stream_get_id, "cuStreamGetId");
    R(stream_get_id_ptsz, "cuStreamGetId_ptsz");
    R(is_capturing, "cuStreamIsCapturing");
    R(is_capturing_ptsz, "cuStreamIsCapturing_ptsz");
    R(ctx_get_current, "cuCtxGetCurrent");
    R(ctx_set_current, "cuCtxSetCurrent");
    R(ctx_get_device, "cuCtxGetDevice");
    R(mem_get_info, "cuMemGetInfo_v2");
    R(ctx_push, "cuCtxPushCurrent_v2");
    R(ctx_pop, "cuCtxPopCurrent_v2");
    R(ctx_sync, "cuCtxSynchronize");
    R(stream_get_ctx, "cuStreamGetCtx");
    R(func_get_name, "cuFuncGetName");
    R(kernel_get_name, "cuKernelGetName");
    R(driver_version, "cuDriverGetVersion");
    R(exchange_capture_mode, "cuThreadExchangeStreamCaptureMode");
    R(pointer_attr, "cuPointerGetAttribute");
    R(array3d_desc, "cuArray3DGetDescriptor_v2");
    R(func_get_attribute, "cuFuncGetAttribute");
    R(kernel_get_attribute, "cuKernelGetAttribute");
    R(device_get_attribute, "cuDeviceGetAttribute");
    R(device_get_name, "cuDeviceGetName");
    R(device_get_uuid, "cuDeviceGetUuid_v2");
    if (!rs_cu.device_get_uuid)
        R(device_get_uuid, "cuDeviceGetUuid");
    R(device_get_pci_bus_id, "cuDeviceGetPCIBusId");
    R(capture_info_v3, "cuStreamGetCaptureInfo_v3");
    R(capture_info_v3_ptsz, "cuStreamGetCaptureInfo_v3_ptsz");
    R(capture_info_v2, "cuStreamGetCaptureInfo_v2");
    R(capture_info_v2_ptsz, "cuStreamGetCaptureInfo_v2_ptsz");
#undef R
    if (!rs_cu.ctx_get_current) {
        rs_notice("no CUDA driver functions found (libcuda.so.1 missing or unknown); CUDA capture is off");
        atomic_store(&cu_state, CU_OFF);
        errno = saved;
        return 0;
    }
    atomic_store(&cu_state, CU_READY);
    errno = saved;
    return 1;
}

int rs_cuda_ready(void)
{
    int st = atomic_load(&cu_state);
    if (st == CU_NONE && rs_cfg.cuda && atomic_load(&cu_inited))
        st = cuda_setup() ? CU_READY : CU_OFF;
    if (st == CU_OFF)
        return -1;
    return st == CU_READY && atomic_load(&cu_inited);
}

/* Read at cuInit: the writer may need it after the driver is gone. */
static _Atomic int cuda_version;

int rs_cuda_version(void)
{
    return atomic_load(&cuda_version);
}

/* Whether this call is recorded: tracing on, CUDA capture on, not the agent. */
static inline int cu_on(void)
{
    if (RS_UNLIKELY(!atomic_load_explicit(&rs_hot.on, memory_order_relaxed) || rs_th.guard || !rs_cfg.cuda))
        return 0;
    int st = atomic_load_explicit(&cu_state, memory_order_relaxed);
    if (RS_LIKELY(st == CU_READY))
        return 1;
    return st == CU_NONE && cuda_setup();
}

#define REAL_DECL(name) static __typeof__(name) *real_##name
#define REAL(name)                                                                 \
    ({                                                                             \
        if (RS_UNLIKELY(real_##name == NULL))                                      \
            real_##name = (__typeof__(real_##name))rs_cuda_sym(#name);             \
        real_##name;                                                               \
    })
/* Calls the real name(args), or fails as a driver without it would. */
#define CALL(name, ...) (REAL(name) ? real_##name(__VA_ARGS__) : CUDA_ERROR_NOT_FOUND)

/* ---- kernel names: a lock-free cache CUfunction -> name, the text copied
 * once into an arena that lives as long as the process ---- */

#define NAME_SLOTS 16384u
#define NAME_PROBES 64u
#define ARENA_BYTES (8u << 20)

struct name_slot {
    _Atomic uintptr_t key;
    _Atomic(const char *) name;
    _Atomic uint32_t id;       /* Launch.func (gpuinfo.c); 0: not described (yet) */
    _Atomic int stale;         /* its module was unloaded: describe the handle anew */
};
static struct name_slot *names;
static char *arena;
static _Atomic size_t arena_used;
static _Atomic int names_state;      /* 0 none, 1 ready, -1 off */

static int names_setup(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&names_state, &expect, 2))
        return atomic_load(&names_state) == 1;
    size_t bytes = NAME_SLOTS * sizeof *names + ARENA_BYTES;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        atomic_store(&names_state, -1);
        return 0;
    }
    names = m;
    arena = (char *)m + NAME_SLOTS * sizeof *names;
    atomic_store(&names_state, 1);
    return 1;
}

static const char *name_copy(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    if (n > 4096)
        n = 4096;
    size_t at = atomic_fetch_add_explicit(&arena_used, n, memory_order_relaxed);
    if (at + n > ARENA_BYTES)
        return NULL;
    memcpy(arena + at, s, n - 1);
    arena[at + n - 1] = 0;
    return arena + at;
}

/* f's name: as the call that made it gave it (funcnames.c), else the driver's. */
static const char *name_ask(CUfunction f)
{
    const char *s = rs_fname_of(f, NULL);
    if (s)
        return s;
    if (rs_cu.func_get_name && rs_cu.func_get_name(&s, f) == CUDA_SUCCESS && s)
        return s;
    s = NULL;
    if (rs_cu.kernel_get_name && rs_cu.kernel_get_name(&s, (CUkernel)f) == CUDA_SUCCESS)
        return s;
    return NULL;
}

/* A launched function: its name and id. */
struct func_ref {
    const char *name;
    uint32_t id;
};

/* The slot that found f's key: its name (asked for when another thread
 * took the slot and has not filled it yet) and id. */
static struct func_ref func_known(CUfunction f, struct name_slot *s)
{
    const char *n = atomic_load_explicit(&s->name, memory_order_acquire);
    return (struct func_ref){ n ? n : name_copy(name_ask(f)),
                              atomic_load_explicit(&s->id, memory_order_acquire) };
}

/* The slot taken for f (or found stale): f's name asked for, f described. */
static struct func_ref func_new(CUfunction f, struct name_slot *s)
{
    const char *n = name_copy(name_ask(f));
    atomic_store_explicit(&s->name, n, memory_order_release);
    uint32_t id = rs_func_describe(f, n);
    atomic_store_explicit(&s->id, id, memory_order_release);
    return (struct func_ref){ n, id };
}

/* f's name and id from a lock-free cache CUfunction -> (name, id), the
 * text copied once into an arena that lives as long as the process; the
 * thread that adds f describes it (FUNC record) before its launch record. */
static struct func_ref func_of(CUfunction f)
{
    if (!f || (RS_UNLIKELY(atomic_load_explicit(&names_state, memory_order_acquire) != 1) && !names_setup()))
        return (struct func_ref){ NULL, 0 };
    uintptr_t key = (uintptr_t)f;
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u);
    for (uint32_t i = 0; i < NAME_PROBES; i++) {
        struct name_slot *s = &names[(h + i) & (NAME_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == key && RS_UNLIKELY(atomic_load_explicit(&s->stale, memory_order_acquire)) &&
            atomic_exchange(&s->stale, 0))
            return func_new(f, s);
        if (k == key)
            return func_known(f, s);
        if (k == 0) {
            uintptr_t zero = 0;
            if (!atomic_compare_exchange_strong(&s->key, &zero, key)) {
                if (zero != key)
                    continue;
                return func_known(f, s);
            }
            return func_new(f, s);
        }
    }
    return (struct func_ref){ NULL, 0 };
}

void rs_func_forget(const void *f)
{
    if (atomic_load_explicit(&names_state, memory_order_acquire) != 1)
        return;
    uintptr_t key = (uintptr_t)f;
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u);
    for (uint32_t i = 0; i < NAME_PROBES; i++) {
        struct name_slot *s = &names[(h + i) & (NAME_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0)
            return;
        if (k == key) {
            atomic_store_explicit(&s->name, NULL, memory_order_release);
            atomic_store_explicit(&s->id, 0, memory_order_release);
            atomic_store_explicit(&s->stale, 1, memory_order_release);
            return;
        }
    }
}

void rs_func_cache_forked(void)
{
    /* the child's file describes its functions anew: forget them (the names
     * stay in the arena) */
    if (atomic_load(&names_state) == 1)
        memset((void *)names, 0, NAME_SLOTS * sizeof *names);
}

/* ---- stream ids: a lock-free cache CUstream -> id ---- */

#define STREAM_SLOTS 4096u
#define STREAM_PROBES 32u

static struct {
    _Atomic uintptr_t key;
    _Atomic uint64_t id;       /* 0: not known (yet, or any more) */
} stream_ids[STREAM_SLOTS];

static uint64_t stream_ask(CUstream s, int ptsz)
{
    unsigned long long id;
    __typeof__(cuStreamGetId) *f = ptsz ? rs_cu.stream_get_id_ptsz : rs_cu.stream_get_id;
    if (RS_LIKELY(f != NULL) && f(s, &id) == CUDA_SUCCESS)
        return id;
    return (uint64_t)(uintptr_t)s;
}

uint64_t rs_stream_id(CUstream s, int ptsz)
{
    uintptr_t key = (uintptr_t)s;
    /* 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD depend on the context or thread */
    if (key <= 2)
        return stream_ask(s, ptsz);
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u);
    for (uint32_t i = 0; i < STREAM_PROBES; i++) {
        __typeof__(&stream_ids[0]) e = &stream_ids[(h + i) & (STREAM_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == 0) {
            uintptr_t zero = 0;
            if (!atomic_compare_exchange_strong(&e->key, &zero, key))
                k = zero;
            else
                k = key;
        }
        if (k != key)
            continue;
        uint64_t id = atomic_load_explicit(&e->id, memory_order_acquire);
        if (RS_LIKELY(id != 0))
            return id;
        id = stream_ask(s, ptsz);
        atomic_store_explicit(&e->id, id, memory_order_release);
        return id;
    }
    return stream_ask(s, ptsz);
}

/* The stream is gone: its handle may come back as another stream. */
static void stream_forget(CUstream s)
{
    uintptr_t key = (uintptr_t)s;
    if (key <= 2)
        return;
    uint32_t h = (uint32_t)((key >> 4) * 2654435761u);
    for (uint32_t i = 0; i < STREAM_PROBES; i++) {
        __typeof__(&stream_ids[0]) e = &stream_ids[(h + i) & (STREAM_SLOTS - 1)];
        uintptr_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == 0)
            return;
        if (k == key) {
            atomic_store_explicit(&e->id, 0, memory_order_release);
            return;
        }
    }
}

REAL_DECL(cuStreamDestroy);
REAL_DECL(cuStreamDestroy_v2);

RS_EXPORT CUresult cuStreamDestroy(CUstream s)
{
    stream_forget(s);
    return CALL(cuStreamDestroy, s);
}

RS_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    stream_forget(s);
    return CALL(cuStreamDestroy_v2, s);
}

/* ---- records ---- */

/* The graph a cuGraphLaunch on this thread runs, for its GPU record. */
static __thread uint32_t graph_launching RS_TLS;

/* GPU work launched; geom: a kernel's launch geometry (a KERNEL record),
 * NULL for other work (a GPU record). */
static void gpu_record(int kind, uint64_t t0, uint64_t ret, uint64_t t1, CUstream s, int ptsz, uint64_t bytes,
                       const char *name, int dir, uint8_t flags, uint32_t pair, uint32_t anchor,
                       const struct rsf_launch *geom)
{
    uint64_t sid = rs_stream_id(s, ptsz);
    /* before the reservation: a device seen first is described in a record of its own */
    int16_t dev = (int16_t)(pair ? rs_gpu_pair_device(pair) : rs_gpu_here());
    size_t size = geom ? sizeof(struct rs_rec_kernel) : sizeof(struct rs_rec_gpu);
    struct rs_rec_gpu *r = rs_reserve(size, geom ? RS_REC_KERNEL : RS_REC_GPU);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ (uint16_t)size, geom ? RS_REC_KERNEL : RS_REC_GPU, (uint8_t)kind, pair };
    r->start_ns = t0;
    r->dur_ns = t1 - t0;
    r->stream = sid;
    r->bytes = bytes;
    r->name = name;
    r->anchor = anchor;
    r->device = dev;
    r->dir = (uint8_t)dir;
    r->flags = flags;
    r->graph = kind == RSF_GPU_GRAPH ? graph_launching : 0;
    r->ret_ns = ret - t0 < UINT32_MAX ? (uint32_t)(ret - t0) : UINT32_MAX;
    if (geom)
        ((struct rs_rec_kernel *)r)->geom = *geom;
    rs_commit(size);
}

static void sync_record(int kind, uint64_t t0, uint64_t t1, uint64_t target)
{
    struct rs_rec_sync *r = rs_reserve(sizeof *r, RS_REC_SYNC);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_SYNC, (uint8_t)kind, 0 };
    r->start_ns = t0;
    r->dur_ns = t1 - t0;
    r->target = target;
    rs_commit(sizeof *r);
}

/* Whether a memory call of kind k makes an allocation (device or host). */
static int mem_allocates(int k)
{
    return k == RSF_MEM_ALLOC || k == RSF_MEM_ALLOC_HOST || k == RSF_MEM_ALLOC_MANAGED ||
           k == RSF_MEM_ALLOC_ASYNC || k == RSF_MEM_VMM_CREATE;
}

/* Whether an allocation of bytes has its stack taken: a failed one and
 * one of RINGSIDE_MEM_STACK_MB or more always (those hold the memory), a
 * smaller one with probability bytes / RINGSIDE_MEM_SAMPLE_MB (an
 * asynchronous allocator's calls can come by the thousand a step, and a
 * stack costs microseconds): the reporter weighs each sampled one by
 * the bytes it stands for (its own, or the sampling's MiB when more). */
static __thread uint64_t mem_rand;

static int mem_stack_wanted(uint64_t bytes, int failed)
{
    uint64_t always = (uint64_t)rs_cfg.mem_stack_mb << 20, every = (uint64_t)rs_cfg.mem_sample_mb << 20;
    if (failed || (always && bytes >= always))
        return 1;
    if (!every)
        return 0;
    if (bytes >= every)
        return 1;
    /* xorshift64*, seeded per thread from its clock */
    uint64_t x = mem_rand ? mem_rand : rs_now() | 1;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    mem_rand = x;
    return (x * 0x2545f4914f6cdd1dull) % every < bytes;
}

/* The driver's own figure of the device's memory (cuMemGetInfo), as points
 * of the series gpu_mem_used and gpu_mem_total of the calling thread's
 * device: at most every MEM_INFO_NS from memory calls, and at each failed
 * allocation. Never while a stream is being captured (a call the capture
 * does not allow would end it). */
#define MEM_INFO_NS 100000000ull
#define MEM_INFO_DEVICES 64
static _Atomic uint64_t mem_info_last;
static _Atomic uint32_t mem_used_series[MEM_INFO_DEVICES], mem_total_series[MEM_INFO_DEVICES];

static uint32_t mem_series(_Atomic uint32_t *slot, int kind, int device)
{
    uint32_t id = atomic_load(slot);
    if (id)
        return id;
    char name[8] = "gpu";
    if (device >= 10)
        name[3] = (char)('0' + device / 10), name[4] = (char)('0' + device % 10);
    else
        name[3] = (char)('0' + device);
    id = rs_series_define(kind, RSF_LINK_NONE, name, device, 0);
    uint32_t none = 0;
    if (!atomic_compare_exchange_strong(slot, &none, id))
        return none; /* another thread defined it first; ours stays unused */
    return id;
}

static void mem_info_read(uint64_t now, int device, int force)
{
    uint64_t last = atomic_load_explicit(&mem_info_last, memory_order_relaxed);
    if (!force && now - last < MEM_INFO_NS)
        return;
    if (!force && !atomic_compare_exchange_strong(&mem_info_last, &last, now))
        return;
    if (force)
        atomic_store(&mem_info_last, now);
    if (!rs_cu.mem_get_info || device < 0 || device >= MEM_INFO_DEVICES ||
        atomic_load_explicit(&rs_captures, memory_order_relaxed) > 0)
        return;
    size_t free_b = 0, total_b = 0;
    if (rs_cu.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS || free_b > total_b)
        return;
    uint64_t t = rs_now();
    rs_series_point(mem_series(&mem_used_series[device], RSF_SERIES_GPU_MEM_USED, device), t, total_b - free_b);
    rs_series_point(mem_series(&mem_total_series[device], RSF_SERIES_GPU_MEM_TOTAL, device), t, total_b);
}

void rs_mem_info_tick(int force)
{
    if (rs_cuda_ready() <= 0)
        return;
    uint64_t now = rs_now();
    if (!force && now - atomic_load_explicit(&mem_info_last, memory_order_relaxed) < MEM_INFO_NS)
        return;
    CUdevice dev;
    if (!rs_cu.ctx_get_device || rs_cu.ctx_get_device(&dev) != CUDA_SUCCESS)
        return;
    mem_info_read(now, dev, force);
}

/* A memory call of kind (enum rsf_mem_kind; RSF_MEM_ALLOC_FAILED with
 * result and asked, the kind it would have been), with the stream of an
 * asynchronous one (stream NULL and ptsz 0: none). */
static void mem_record(int kind, uint64_t t0, uint64_t t1, uint64_t ptr, uint64_t bytes, CUstream stream,
                       int ptsz, int result, int asked)
{
    int failed = kind == RSF_MEM_ALLOC_FAILED;
    int stacked = 0;
    if ((failed || mem_allocates(kind)) && mem_stack_wanted(bytes, failed)) {
        rs_gpu_stack_sample_always(t0);
        stacked = 1;
    }
    int host = kind == RSF_MEM_ALLOC_HOST || kind == RSF_MEM_FREE_HOST ||
               (failed && asked == RSF_MEM_ALLOC_HOST);
    CUdevice dev = -1;
    if (host || !rs_cu.ctx_get_device || rs_cu.ctx_get_device(&dev) != CUDA_SUCCESS)
        dev = -1;
    struct rs_rec_mem *r = rs_reserve(sizeof *r, RS_REC_MEM);
    if (r) {
        r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_MEM, (uint8_t)kind, (uint32_t)stacked };
        r->start_ns = t0;
        r->dur_ns = t1 - t0;
        r->ptr = ptr;
        r->bytes = bytes;
        r->stream = stream || ptsz ? rs_stream_id(stream, ptsz) : 0;
        r->device = dev;
        r->result = result;
        r->asked = (uint8_t)asked;
        r->sampled = (uint8_t)stacked;
        memset(r->pad_, 0, sizeof r->pad_);
        rs_commit(sizeof *r);
    }
    if (!host && kind != RSF_MEM_VMM_MAP && kind != RSF_MEM_VMM_UNMAP)
        mem_info_read(t1, dev, failed);
}

/* GPU work enqueued on STREAM by CALL: timed with a pair, recorded. The
 * synchronous forms (SYNC_KIND >= 0) also record the time blocked. */
#define GPU_WORK(KIND, STREAM, PTSZ, FLAGS, NAME, BYTES, DIR, SYNC_KIND, CALL)                 \
    GPU_WORK_GEOM(KIND, STREAM, PTSZ, FLAGS, NAME, BYTES, DIR, SYNC_KIND, NULL, CALL)

/* A kernel launch of function F with geometry GEOM (a struct rsf_launch
 * whose func the hook fills). */
#define KERNEL_WORK(F, GEOM, STREAM, PTSZ, FLAGS, CALL)                                        \
    GPU_WORK_GEOM(RSF_GPU_KERNEL, STREAM, PTSZ, FLAGS, (fn_ = func_of(F), (GEOM).func = fn_.id, fn_.name), \
                  0, 0, -1, &(GEOM), CALL)

#define GPU_WORK_GEOM(KIND, STREAM, PTSZ, FLAGS, NAME, BYTES, DIR, SYNC_KIND, GEOM, CALL)      \
    do {                                                                                       \
        if (!cu_on())                                                                          \
            return CALL;                                                                       \
        rs_th.guard = 1;                                                                       \
        int saved_ = errno;                                                                    \
        uint32_t anchor_ = 0;                                                                  \
        uint8_t fl_ = (uint8_t)((FLAGS) | ((PTSZ) ? RSF_GPUF_PTSZ : 0));                       \
        uint32_t pair_ = rs_gpu_begin(STREAM, PTSZ, &anchor_, &fl_);                           \
        struct rs_graph_capture gc_;                                                           \
        if (RS_UNLIKELY(fl_ & RSF_GPUF_CAPTURED))                                              \
            rs_graph_before(&gc_, STREAM, PTSZ);                                               \
        errno = saved_;                                                                        \
        uint64_t t0_ = rs_now();                                                               \
        CUresult r_ = CALL;                                                                    \
        saved_ = errno;                                                                        \
        uint64_t ret_ = rs_now(); /* the GPU has the work by now (writer.c) */                 \
        pair_ = rs_gpu_end(pair_, STREAM, PTSZ, r_ == CUDA_SUCCESS);                           \
        uint64_t t1_ = rs_now(); /* the end event is on the stream by now */                   \
        if (r_ == CUDA_SUCCESS) {                                                              \
            if ((KIND) == RSF_GPU_KERNEL && pair_)                                             \
                rs_gpu_stack_sample(t0_);                                                      \
            struct func_ref fn_ = { NULL, 0 };                                                 \
            (void)fn_;                                                                         \
            const char *name_ = NAME;                                                          \
            if (RS_UNLIKELY(fl_ & RSF_GPUF_CAPTURED))                                          \
                rs_graph_node(&gc_, KIND, name_, GEOM, BYTES, DIR);                            \
            gpu_record(KIND, t0_, ret_, t1_, STREAM, PTSZ, BYTES, name_, DIR, fl_, pair_, anchor_, GEOM); \
            if ((SYNC_KIND) >= 0)                                                              \
                sync_record(SYNC_KIND, t0_, t1_, rs_stream_id(STREAM, PTSZ));                  \
        }                                                                                      \
        if ((SYNC_KIND) >= 0)                                                                  \
            rs_wait_sample_ns(t0_, t1_, RSF_WAIT_CUDA_SYNC);                                   \
        rs_th.guard = 0;                                                                       \
        errno = saved_;                                                                        \
        return r_;                                                                             \
    } while (0)

/* A call that may block the host: recorded as a SyncEvent. */
#define SYNC_WAIT(KIND, TARGET, CALL)                                                          \
    do {                                                                                       \
        if (!cu_on())                                                                          \
            return CALL;                                                                       \
        rs_th.guard = 1;                                                                       \
        uint64_t t0_ = rs_now();                                                               \
        /* where a signal that ends the process finds it (rs_wait_interrupted) */             \
        rs_th.wait_reason = RSF_WAIT_CUDA_SYNC;                                                \
        rs_th.wait_t0 = rs_ticks();                                                            \
        rs_sync_frame = (uintptr_t)__builtin_frame_address(0);                                 \
        rs_th.in_sync = 1;                                                                     \
        CUresult r_ = CALL;                                                                    \
        rs_th.in_sync = 0;                                                                     \
        rs_th.wait_t0 = 0;                                                                     \
        uint64_t t1_ = rs_now();                                                               \
        int saved_ = errno;                                                                    \
        sync_record(KIND, t0_, t1_, TARGET);                                                   \
        rs_wait_sample_ns(t0_, t1_, RSF_WAIT_CUDA_SYNC);                                       \
        rs_th.guard = 0;                                                                       \
        errno = saved_;                                                                        \
        return r_;                                                                             \
    } while (0)

/* A memory call: PTR and BYTES are read after the call succeeded; ASKED,
 * the bytes an allocating call asked for, when it failed. STREAM and PTSZ:
 * an asynchronous call's stream (NULL, 0: none). */
#define MEM_CALL_ON(KIND, PTR, BYTES, ASKED, STREAM, PTSZ, CALL)                               \
    do {                                                                                       \
        if (!cu_on())                                                                          \
            return CALL;                                                                       \
        rs_th.guard = 1;                                                                       \
        uint64_t t0_ = rs_now();                                                               \
        CUresult r_ = CALL;                                                                    \
        uint64_t t1_ = rs_now();                                                               \
        int saved_ = errno;                                                                    \
        if (r_ == CUDA_SUCCESS)                                                                \
            mem_record(KIND, t0_, t1_, (uint64_t)(PTR), (uint64_t)(BYTES), STREAM, PTSZ, 0, 0); \
        else if (mem_allocates(KIND))                                                          \
            mem_record(RSF_MEM_ALLOC_FAILED, t0_, t1_, 0, (uint64_t)(ASKED), STREAM, PTSZ,     \
                       (int)r_, KIND);                                                         \
        rs_th.guard = 0;                                                                       \
        errno = saved_;                                                                        \
        return r_;                                                                             \
    } while (0)

#define MEM_CALL(KIND, PTR, BYTES, CALL) MEM_CALL_ON(KIND, PTR, BYTES, BYTES, NULL, 0, CALL)

/* ---- cuInit ---- */

REAL_DECL(cuInit);
RS_EXPORT CUresult cuInit(unsigned int flags)
{
    CUresult r = CALL(cuInit, flags);
    if (r == CUDA_SUCCESS && !atomic_exchange(&cu_inited, 1) && rs_cfg.cuda && !rs_th.guard) {
        int saved = errno, v = 0;
        rs_th.guard = 1;
        if (cuda_setup() && rs_cu.driver_version && rs_cu.driver_version(&v) == CUDA_SUCCESS)
            atomic_store(&cuda_version, v);
        /* Launches follow, each wanting its stack now and then: the
         * unwinder loads now, not after a start's delay (sample.h). */
        rs_sample_load_unwinder();
        rs_th.guard = 0;
        errno = saved;
    }
    return r;
}

/* ---- launches ---- */

#define LAUNCH_ARGS CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
    unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra
#define LAUNCH_PASS f, gx, gy, gz, bx, by, bz, shmem, s, params, extra

REAL_DECL(cuLaunchKernel);
REAL_DECL(cuLaunchKernel_ptsz);
REAL_DECL(cuLaunchCooperativeKernel);
REAL_DECL(cuLaunchCooperativeKernel_ptsz);
REAL_DECL(cuLaunchKernelEx);
REAL_DECL(cuLaunchKernelEx_ptsz);

/* A launch's geometry as trace.fbs's Launch has it (func: filled later). */
static inline struct rsf_launch geom_of(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                        unsigned bz, unsigned shmem)
{
    return (struct rsf_launch){ .grid_x = gx, .grid_y = gy, .grid_z = gz, .smem_dyn = shmem,
                                .block_x = (uint16_t)bx, .block_y = (uint16_t)by, .block_z = (uint16_t)bz };
}

RS_EXPORT CUresult cuLaunchKernel(LAUNCH_ARGS)
{
    struct rsf_launch g = geom_of(gx, gy, gz, bx, by, bz, shmem);
    KERNEL_WORK(f, g, s, 0, 0, CALL(cuLaunchKernel, LAUNCH_PASS));
}

RS_EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_ARGS)
{
    struct rsf_launch g = geom_of(gx, gy, gz, bx, by, bz, shmem);
    KERNEL_WORK(f, g, s, 1, 0, CALL(cuLaunchKernel_ptsz, LAUNCH_PASS));
}

#define COOP_ARGS CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
    unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params
#define COOP_PASS f, gx, gy, gz, bx, by, bz, shmem, s, params

RS_EXPORT CUresult cuLaunchCooperativeKernel(COOP_ARGS)
{
    struct rsf_launch g = geom_of(gx, gy, gz, bx, by, bz, shmem);
    KERNEL_WORK(f, g, s, 0, RSF_GPUF_COOPERATIVE, CALL(cuLaunchCooperativeKernel, COOP_PASS));
}

RS_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(COOP_ARGS)
{
    struct rsf_launch g = geom_of(gx, gy, gz, bx, by, bz, shmem);
    KERNEL_WORK(f, g, s, 1, RSF_GPUF_COOPERATIVE, CALL(cuLaunchCooperativeKernel_ptsz, COOP_PASS));
}

/* cuLaunchKernelEx's geometry, with its cluster; and whether it is cooperative. */
static struct rsf_launch ex_geom(const CUlaunchConfig *c, uint8_t *flags)
{
    *flags = RSF_GPUF_EX;
    if (!c)
        return (struct rsf_launch){ 0 };
    struct rsf_launch g = geom_of(c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                                  c->blockDimZ, c->sharedMemBytes);
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
            *flags |= RSF_GPUF_COOPERATIVE;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            g.cluster_x = (uint16_t)c->attrs[i].value.clusterDim.x;
            g.cluster_y = (uint16_t)c->attrs[i].value.clusterDim.y;
            g.cluster_z = (uint16_t)c->attrs[i].value.clusterDim.z;
        }
    }
    return g;
}

RS_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    uint8_t fl;
    struct rsf_launch g = ex_geom(config, &fl);
    KERNEL_WORK(f, g, config ? config->hStream : NULL, 0, fl, CALL(cuLaunchKernelEx, config, f, params, extra));
}

RS_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
    uint8_t fl;
    struct rsf_launch g = ex_geom(config, &fl);
    KERNEL_WORK(f, g, config ? config->hStream : NULL, 1, fl,
                CALL(cuLaunchKernelEx_ptsz, config, f, params, extra));
}

/* ---- graphs ---- */

REAL_DECL(cuGraphLaunch);
REAL_DECL(cuGraphLaunch_ptsz);

RS_EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s)
{
    graph_launching = rs_graph_exec_gid(g);
    GPU_WORK(RSF_GPU_GRAPH, s, 0, 0, NULL, 0, 0, -1, CALL(cuGraphLaunch, g, s));
}

RS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
    graph_launching = rs_graph_exec_gid(g);
    GPU_WORK(RSF_GPU_GRAPH, s, 1, 0, NULL, 0, 0, -1, CALL(cuGraphLaunch_ptsz, g, s));
}

/* Graphs made from others run their nodes: followed so that a launch names
 * the graph it runs (graphs.c). The driver's answer passes through as is. */
#define GRAPH_FOLLOW(CALL, OK_DO)                                                              \
    do {                                                                                       \
        CUresult r_ = CALL;                                                                    \
        if (r_ == CUDA_SUCCESS && !rs_th.guard && rs_cfg.cuda) {                               \
            int saved_ = errno;                                                                \
            OK_DO;                                                                             \
            errno = saved_;                                                                    \
        }                                                                                      \
        return r_;                                                                             \
    } while (0)

REAL_DECL(cuGraphInstantiateWithFlags);
REAL_DECL(cuGraphInstantiate);
REAL_DECL(cuGraphInstantiate_v2);
REAL_DECL(cuGraphInstantiateWithParams);
REAL_DECL(cuGraphInstantiateWithParams_ptsz);
REAL_DECL(cuGraphExecUpdate_v2);
REAL_DECL(cuGraphClone);
REAL_DECL(cuGraphDestroy);
REAL_DECL(cuGraphExecDestroy);

RS_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long flags)
{
    GRAPH_FOLLOW(CALL(cuGraphInstantiateWithFlags, x, g, flags), rs_graph_made(*x, g));
}

RS_EXPORT CUresult cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t n)
{
    GRAPH_FOLLOW(CALL(cuGraphInstantiate, x, g, err, log, n), rs_graph_made(*x, g));
}

RS_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *err, char *log, size_t n)
{
    GRAPH_FOLLOW(CALL(cuGraphInstantiate_v2, x, g, err, log, n), rs_graph_made(*x, g));
}

RS_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    GRAPH_FOLLOW(CALL(cuGraphInstantiateWithParams, x, g, p), rs_graph_made(*x, g));
}

RS_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    GRAPH_FOLLOW(CALL(cuGraphInstantiateWithParams_ptsz, x, g, p), rs_graph_made(*x, g));
}

RS_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    GRAPH_FOLLOW(CALL(cuGraphExecUpdate_v2, x, g, info), rs_graph_made(x, g));
}

RS_EXPORT CUresult cuGraphClone(CUgraph *clone, CUgraph g)
{
    GRAPH_FOLLOW(CALL(cuGraphClone, clone, g), rs_graph_made(*clone, g));
}

RS_EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    rs_graph_gone(g);
    return CALL(cuGraphDestroy, g);
}

RS_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    rs_graph_gone(x);
    return CALL(cuGraphExecDestroy, x);
}

REAL_DECL(cuStreamBeginCapture);
REAL_DECL(cuStreamBeginCapture_ptsz);
REAL_DECL(cuStreamBeginCapture_v2);
REAL_DECL(cuStreamBeginCapture_v2_ptsz);
REAL_DECL(cuStreamBeginCaptureToGraph);
REAL_DECL(cuStreamBeginCaptureToGraph_ptsz);
REAL_DECL(cuStreamEndCapture);
REAL_DECL(cuStreamEndCapture_ptsz);

static CUresult capture_began(CUresult r)
{
    if (r == CUDA_SUCCESS)
        atomic_fetch_add(&rs_captures, 1);
    return r;
}

static CUresult capture_ended(CUresult r)
{
    /* The capture is over whatever the result (an invalidated one too). */
    int n = atomic_load(&rs_captures);
    while (n > 0 && !atomic_compare_exchange_weak(&rs_captures, &n, n - 1))
        ;
    return r;
}

RS_EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    return capture_began(CALL(cuStreamBeginCapture, s));
}

RS_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    return capture_began(CALL(cuStreamBeginCapture_ptsz, s));
}

RS_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    return capture_began(CALL(cuStreamBeginCapture_v2, s, mode));
}

RS_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    return capture_began(CALL(cuStreamBeginCapture_v2_ptsz, s, mode));
}

RS_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                               const CUgraphEdgeData *edges, size_t ndeps,
                                               CUstreamCaptureMode mode)
{
    return capture_began(CALL(cuStreamBeginCaptureToGraph, s, g, deps, edges, ndeps, mode));
}

RS_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                    const CUgraphEdgeData *edges, size_t ndeps,
                                                    CUstreamCaptureMode mode)
{
    return capture_began(CALL(cuStreamBeginCaptureToGraph_ptsz, s, g, deps, edges, ndeps, mode));
}

/* The capture's nodes are the graph's (graphs.c); asked before the end. */
static uint64_t capture_id_of(CUstream s, int ptsz)
{
    if (!cu_on())
        return 0;
    rs_th.guard = 1;
    int saved = errno;
    uint64_t id = rs_graph_capture_of(s, ptsz);
    errno = saved;
    rs_th.guard = 0;
    return id;
}

static CUresult capture_graph(CUresult r, uint64_t id, CUgraph *g)
{
    int saved = errno;
    rs_graph_capture_ended(id, r == CUDA_SUCCESS && g ? *g : NULL);
    errno = saved;
    return capture_ended(r);
}

RS_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    uint64_t id = capture_id_of(s, 0);
    return capture_graph(CALL(cuStreamEndCapture, s, g), id, g);
}

RS_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    uint64_t id = capture_id_of(s, 1);
    return capture_graph(CALL(cuStreamEndCapture_ptsz, s, g), id, g);
}

/* ---- copies and sets ---- */

#define UNPAREN(...) __VA_ARGS__

/* Where a pointer of unified addressing lives: 1 device, 0 host, -1 unknown. */
static int on_device(CUdeviceptr p)
{
    unsigned int type = 0;
    if (!rs_cu.pointer_attr)
        return -1;
    if (rs_cu.pointer_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
        return 0; /* not known to the driver: pageable host memory */
    return type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY;
}

/* The direction of a cuMemcpy / cuMemcpyAsync (unified addressing). Called
 * inside GPU_WORK, where capture is known to be on (and rs_th.guard set). */
static int copy_dir(CUdeviceptr dst, CUdeviceptr src)
{
    int d = on_device(dst), s = on_device(src);
    if (d < 0 || s < 0)
        return RSF_COPY_NONE;
    return d ? (s ? RSF_COPY_DTOD : RSF_COPY_HTOD) : (s ? RSF_COPY_DTOH : RSF_COPY_HTOH);
}

/* A synchronous copy blocks the host: a GpuEvent flagged SYNC and a SyncEvent. */
#define COPY_SYNC(name, ptsz, dir, args, pass, bytes)                                          \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name args                                                               \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMCPY, NULL, ptsz, RSF_GPUF_SYNC, NULL, bytes, dir, RSF_SYNC_MEMCPY, \
                 CALL(name, UNPAREN pass));                                                    \
    }
#define COPY_ASYNC(name, ptsz, dir, args, pass, bytes)                                         \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name args                                                               \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMCPY, s, ptsz, 0, NULL, bytes, dir, -1, CALL(name, UNPAREN pass));  \
    }

#define A_HTOD (CUdeviceptr dst, const void *src, size_t n)
#define A_DTOH (void *dst, CUdeviceptr src, size_t n)
#define A_DTOD (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define A_HTOD_S (CUdeviceptr dst, const void *src, size_t n, CUstream s)
#define A_DTOH_S (void *dst, CUdeviceptr src, size_t n, CUstream s)
#define A_DTOD_S (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
#define P3 (dst, src, n)
#define P4 (dst, src, n, s)

COPY_SYNC(cuMemcpyHtoD_v2, 0, RSF_COPY_HTOD, A_HTOD, P3, n)
COPY_SYNC(cuMemcpyHtoD_v2_ptds, 1, RSF_COPY_HTOD, A_HTOD, P3, n)
COPY_SYNC(cuMemcpyDtoH_v2, 0, RSF_COPY_DTOH, A_DTOH, P3, n)
COPY_SYNC(cuMemcpyDtoH_v2_ptds, 1, RSF_COPY_DTOH, A_DTOH, P3, n)
COPY_SYNC(cuMemcpyDtoD_v2, 0, RSF_COPY_DTOD, A_DTOD, P3, n)
COPY_SYNC(cuMemcpyDtoD_v2_ptds, 1, RSF_COPY_DTOD, A_DTOD, P3, n)
COPY_SYNC(cuMemcpy, 0, copy_dir(dst, src), A_DTOD, P3, n)
COPY_SYNC(cuMemcpy_ptds, 1, copy_dir(dst, src), A_DTOD, P3, n)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, 0, RSF_COPY_HTOD, A_HTOD_S, P4, n)
COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, 1, RSF_COPY_HTOD, A_HTOD_S, P4, n)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, 0, RSF_COPY_DTOH, A_DTOH_S, P4, n)
COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, 1, RSF_COPY_DTOH, A_DTOH_S, P4, n)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, 0, RSF_COPY_DTOD, A_DTOD_S, P4, n)
COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, 1, RSF_COPY_DTOD, A_DTOD_S, P4, n)
COPY_ASYNC(cuMemcpyAsync, 0, copy_dir(dst, src), A_DTOD_S, P4, n)
COPY_ASYNC(cuMemcpyAsync_ptsz, 1, copy_dir(dst, src), A_DTOD_S, P4, n)

#define A_PEER (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
#define A_PEER_S (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s)
COPY_SYNC(cuMemcpyPeer, 0, RSF_COPY_PEER, A_PEER, (dst, dctx, src, sctx, n), n)
COPY_SYNC(cuMemcpyPeer_ptds, 1, RSF_COPY_PEER, A_PEER, (dst, dctx, src, sctx, n), n)
COPY_ASYNC(cuMemcpyPeerAsync, 0, RSF_COPY_PEER, A_PEER_S, (dst, dctx, src, sctx, n, s), n)
COPY_ASYNC(cuMemcpyPeerAsync_ptsz, 1, RSF_COPY_PEER, A_PEER_S, (dst, dctx, src, sctx, n, s), n)

/* 2D and 3D copies: bytes of the rectangle or box; the direction from the
 * memory types of the two sides (unified ones asked of the driver). */
static int side_on_device(CUmemorytype t, CUdeviceptr p, const void *host)
{
    if (t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY)
        return 1;
    if (t == CU_MEMORYTYPE_UNIFIED)
        return on_device(p ? p : (CUdeviceptr)(uintptr_t)host);
    return 0;
}

static int dir_of(CUmemorytype st, CUdeviceptr sp, const void *sh, CUmemorytype dt, CUdeviceptr dp,
                  const void *dh)
{
    int s = side_on_device(st, sp, sh), d = side_on_device(dt, dp, dh);
    if (s < 0 || d < 0)
        return RSF_COPY_NONE;
    return d ? (s ? RSF_COPY_DTOD : RSF_COPY_HTOD) : (s ? RSF_COPY_DTOH : RSF_COPY_HTOH);
}

#define DIR2(p) (p ? dir_of(p->srcMemoryType, p->srcDevice, p->srcHost, p->dstMemoryType, p->dstDevice, \
                            p->dstHost) : RSF_COPY_NONE)
#define BYTES2(p) (p ? (uint64_t)p->WidthInBytes * p->Height : 0)
#define BYTES3(p) (p ? (uint64_t)p->WidthInBytes * p->Height * p->Depth : 0)

#define COPY2_SYNC(name, ptsz, type, bytes)                                                    \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(const type *p)                                                     \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMCPY, NULL, ptsz, RSF_GPUF_SYNC, NULL, bytes(p), DIR2(p),           \
                 RSF_SYNC_MEMCPY, CALL(name, p));                                              \
    }
#define COPY2_ASYNC(name, ptsz, type, bytes)                                                   \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(const type *p, CUstream s)                                         \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMCPY, s, ptsz, 0, NULL, bytes(p), DIR2(p), -1, CALL(name, p, s));   \
    }

COPY2_SYNC(cuMemcpy2D_v2, 0, CUDA_MEMCPY2D, BYTES2)
COPY2_SYNC(cuMemcpy2D_v2_ptds, 1, CUDA_MEMCPY2D, BYTES2)
COPY2_SYNC(cuMemcpy2DUnaligned_v2, 0, CUDA_MEMCPY2D, BYTES2)
COPY2_SYNC(cuMemcpy2DUnaligned_v2_ptds, 1, CUDA_MEMCPY2D, BYTES2)
COPY2_SYNC(cuMemcpy3D_v2, 0, CUDA_MEMCPY3D, BYTES3)
COPY2_SYNC(cuMemcpy3D_v2_ptds, 1, CUDA_MEMCPY3D, BYTES3)
COPY2_ASYNC(cuMemcpy2DAsync_v2, 0, CUDA_MEMCPY2D, BYTES2)
COPY2_ASYNC(cuMemcpy2DAsync_v2_ptsz, 1, CUDA_MEMCPY2D, BYTES2)
COPY2_ASYNC(cuMemcpy3DAsync_v2, 0, CUDA_MEMCPY3D, BYTES3)
COPY2_ASYNC(cuMemcpy3DAsync_v2_ptsz, 1, CUDA_MEMCPY3D, BYTES3)

/* 3D copies between contexts: a device-to-device one between two contexts is a
 * peer copy. */
static int dir_peer(const CUDA_MEMCPY3D_PEER *p)
{
    int d = dir_of(p->srcMemoryType, p->srcDevice, p->srcHost, p->dstMemoryType, p->dstDevice, p->dstHost);
    return d == RSF_COPY_DTOD && p->srcContext != p->dstContext ? RSF_COPY_PEER : d;
}
#define DIR_PEER(p) (p ? dir_peer(p) : RSF_COPY_NONE)

REAL_DECL(cuMemcpy3DPeer);
REAL_DECL(cuMemcpy3DPeer_ptds);
REAL_DECL(cuMemcpy3DPeerAsync);
REAL_DECL(cuMemcpy3DPeerAsync_ptsz);

RS_EXPORT CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p)
{
    GPU_WORK(RSF_GPU_MEMCPY, NULL, 0, RSF_GPUF_SYNC, NULL, BYTES3(p), DIR_PEER(p), RSF_SYNC_MEMCPY,
             CALL(cuMemcpy3DPeer, p));
}

RS_EXPORT CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p)
{
    GPU_WORK(RSF_GPU_MEMCPY, NULL, 1, RSF_GPUF_SYNC, NULL, BYTES3(p), DIR_PEER(p), RSF_SYNC_MEMCPY,
             CALL(cuMemcpy3DPeer_ptds, p));
}

RS_EXPORT CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    GPU_WORK(RSF_GPU_MEMCPY, s, 0, 0, NULL, BYTES3(p), DIR_PEER(p), -1, CALL(cuMemcpy3DPeerAsync, p, s));
}

RS_EXPORT CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
    GPU_WORK(RSF_GPU_MEMCPY, s, 1, 0, NULL, BYTES3(p), DIR_PEER(p), -1, CALL(cuMemcpy3DPeerAsync_ptsz, p, s));
}

#if CUDA_VERSION >= 13000
/* Batches of copies (CUDA 12.8: with failIdx; 13.0: _v2 without): ONE GpuEvent
 * per call, for the whole batch: bytes the sum over its copies, the direction
 * that of its copies when the first BATCH_DIRS agree, else none. */
#define BATCH_DIRS 8

static int batch_dir(const CUdeviceptr *dsts, const CUdeviceptr *srcs, size_t count)
{
    int dir = RSF_COPY_NONE;
    for (size_t i = 0; dsts && srcs && i < count && i < BATCH_DIRS; i++) {
        int d = copy_dir(dsts[i], srcs[i]);
        if (i > 0 && d != dir)
            return RSF_COPY_NONE;
        dir = d;
    }
    return dir;
}

static uint64_t batch_bytes(const size_t *sizes, size_t count)
{
    uint64_t n = 0;
    for (size_t i = 0; sizes && i < count; i++)
        n += sizes[i];
    return n;
}

/* Bytes of one element of a CUDA array (0: a format not known here). */
static uint64_t array_elem(CUarray a)
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    if (!rs_cu.array3d_desc || rs_cu.array3d_desc(&d, a) != CUDA_SUCCESS)
        return 0;
    uint64_t size;
    switch (d.Format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: size = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: size = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: size = 4; break;
    default: return 0;
    }
    return size * d.NumChannels;
}

/* A 3D batch: extents are in elements, of 1 byte between pointers, else of the
 * array's element size. */
static uint64_t batch3_bytes(const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; ops && i < n; i++) {
        const CUDA_MEMCPY3D_BATCH_OP *o = &ops[i];
        uint64_t elem = 1;
        if (o->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
            elem = array_elem(o->src.op.array.array);
        else if (o->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
            elem = array_elem(o->dst.op.array.array);
        total += elem * o->extent.width * o->extent.height * o->extent.depth;
    }
    return total;
}

static int operand_on_device(const CUmemcpy3DOperand *o)
{
    return o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? 1 : on_device(o->op.ptr.ptr);
}

static int batch3_dir(const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n)
{
    int dir = RSF_COPY_NONE;
    for (size_t i = 0; ops && i < n && i < BATCH_DIRS; i++) {
        int s = operand_on_device(&ops[i].src), d = operand_on_device(&ops[i].dst), x;
        if (s < 0 || d < 0)
            return RSF_COPY_NONE;
        x = d ? (s ? RSF_COPY_DTOD : RSF_COPY_HTOD) : (s ? RSF_COPY_DTOH : RSF_COPY_HTOH);
        if (i > 0 && x != dir)
            return RSF_COPY_NONE;
        dir = x;
    }
    return dir;
}

#define BATCH_ARGS CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, \
    CUmemcpyAttributes *attrs, size_t *attr_idxs, size_t nattrs
#define BATCH_PASS dsts, srcs, sizes, count, attrs, attr_idxs, nattrs
#define BATCH_WORK(ptsz, call) \
    GPU_WORK(RSF_GPU_MEMCPY, s, ptsz, 0, NULL, batch_bytes(sizes, count), batch_dir(dsts, srcs, count), -1, call)
#define BATCH3_WORK(ptsz, call) \
    GPU_WORK(RSF_GPU_MEMCPY, s, ptsz, 0, NULL, batch3_bytes(ops, n), batch3_dir(ops, n), -1, call)

REAL_DECL(cuMemcpyBatchAsync);
REAL_DECL(cuMemcpyBatchAsync_ptsz);
REAL_DECL(cuMemcpyBatchAsync_v2);
REAL_DECL(cuMemcpyBatchAsync_v2_ptsz);
REAL_DECL(cuMemcpy3DBatchAsync);
REAL_DECL(cuMemcpy3DBatchAsync_ptsz);
REAL_DECL(cuMemcpy3DBatchAsync_v2);
REAL_DECL(cuMemcpy3DBatchAsync_v2_ptsz);

RS_EXPORT CUresult cuMemcpyBatchAsync(BATCH_ARGS, size_t *fail, CUstream s)
{
    BATCH_WORK(0, CALL(cuMemcpyBatchAsync, BATCH_PASS, fail, s));
}

RS_EXPORT CUresult cuMemcpyBatchAsync_ptsz(BATCH_ARGS, size_t *fail, CUstream s)
{
    BATCH_WORK(1, CALL(cuMemcpyBatchAsync_ptsz, BATCH_PASS, fail, s));
}

RS_EXPORT CUresult cuMemcpyBatchAsync_v2(BATCH_ARGS, CUstream s)
{
    BATCH_WORK(0, CALL(cuMemcpyBatchAsync_v2, BATCH_PASS, s));
}

RS_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(BATCH_ARGS, CUstream s)
{
    BATCH_WORK(1, CALL(cuMemcpyBatchAsync_v2_ptsz, BATCH_PASS, s));
}

RS_EXPORT CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                        unsigned long long flags, CUstream s)
{
    BATCH3_WORK(0, CALL(cuMemcpy3DBatchAsync, n, ops, fail, flags, s));
}

RS_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                             unsigned long long flags, CUstream s)
{
    BATCH3_WORK(1, CALL(cuMemcpy3DBatchAsync_ptsz, n, ops, fail, flags, s));
}

RS_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                           CUstream s)
{
    BATCH3_WORK(0, CALL(cuMemcpy3DBatchAsync_v2, n, ops, flags, s));
}

RS_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                                CUstream s)
{
    BATCH3_WORK(1, CALL(cuMemcpy3DBatchAsync_v2_ptsz, n, ops, flags, s));
}
#endif

#define SET_SYNC(name, ptsz, type, size)                                                       \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(CUdeviceptr dst, type v, size_t n)                                 \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMSET, NULL, ptsz, RSF_GPUF_SYNC, NULL, n * (size), 0, RSF_SYNC_MEMCPY, \
                 CALL(name, dst, v, n));                                                       \
    }
#define SET_ASYNC(name, ptsz, type, size)                                                      \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(CUdeviceptr dst, type v, size_t n, CUstream s)                     \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMSET, s, ptsz, 0, NULL, n * (size), 0, -1, CALL(name, dst, v, n, s)); \
    }

SET_SYNC(cuMemsetD8_v2, 0, unsigned char, 1)
SET_SYNC(cuMemsetD8_v2_ptds, 1, unsigned char, 1)
SET_SYNC(cuMemsetD16_v2, 0, unsigned short, 2)
SET_SYNC(cuMemsetD16_v2_ptds, 1, unsigned short, 2)
SET_SYNC(cuMemsetD32_v2, 0, unsigned int, 4)
SET_SYNC(cuMemsetD32_v2_ptds, 1, unsigned int, 4)
SET_ASYNC(cuMemsetD8Async, 0, unsigned char, 1)
SET_ASYNC(cuMemsetD8Async_ptsz, 1, unsigned char, 1)
SET_ASYNC(cuMemsetD16Async, 0, unsigned short, 2)
SET_ASYNC(cuMemsetD16Async_ptsz, 1, unsigned short, 2)
SET_ASYNC(cuMemsetD32Async, 0, unsigned int, 4)
SET_ASYNC(cuMemsetD32Async_ptsz, 1, unsigned int, 4)

/* 2D sets: Width elements by Height rows. */
#define SET2_SYNC(name, ptsz, type, size)                                                      \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h)         \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMSET, NULL, ptsz, RSF_GPUF_SYNC, NULL, (uint64_t)w * h * (size), 0, \
                 RSF_SYNC_MEMCPY, CALL(name, dst, pitch, v, w, h));                            \
    }
#define SET2_ASYNC(name, ptsz, type, size)                                                     \
    REAL_DECL(name);                                                                           \
    RS_EXPORT CUresult name(CUdeviceptr dst, size_t pitch, type v, size_t w, size_t h, CUstream s) \
    {                                                                                          \
        GPU_WORK(RSF_GPU_MEMSET, s, ptsz, 0, NULL, (uint64_t)w * h * (size), 0, -1,            \
                 CALL(name, dst, pitch, v, w, h, s));                                          \
    }

SET2_SYNC(cuMemsetD2D8_v2, 0, unsigned char, 1)
SET2_SYNC(cuMemsetD2D8_v2_ptds, 1, unsigned char, 1)
SET2_SYNC(cuMemsetD2D16_v2, 0, unsigned short, 2)
SET2_SYNC(cuMemsetD2D16_v2_ptds, 1, unsigned short, 2)
SET2_SYNC(cuMemsetD2D32_v2, 0, unsigned int, 4)
SET2_SYNC(cuMemsetD2D32_v2_ptds, 1, unsigned int, 4)
SET2_ASYNC(cuMemsetD2D8Async, 0, unsigned char, 1)
SET2_ASYNC(cuMemsetD2D8Async_ptsz, 1, unsigned char, 1)
SET2_ASYNC(cuMemsetD2D16Async, 0, unsigned short, 2)
SET2_ASYNC(cuMemsetD2D16Async_ptsz, 1, unsigned short, 2)
SET2_ASYNC(cuMemsetD2D32Async, 0, unsigned int, 4)
SET2_ASYNC(cuMemsetD2D32Async_ptsz, 1, unsigned int, 4)

/* ---- blocking waits ---- */

REAL_DECL(cuStreamSynchronize);
REAL_DECL(cuStreamSynchronize_ptsz);
REAL_DECL(cuEventSynchronize);
REAL_DECL(cuCtxSynchronize);

RS_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    SYNC_WAIT(RSF_SYNC_STREAM, rs_stream_id(s, 0), CALL(cuStreamSynchronize, s));
}

RS_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
    SYNC_WAIT(RSF_SYNC_STREAM, rs_stream_id(s, 1), CALL(cuStreamSynchronize_ptsz, s));
}

RS_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    SYNC_WAIT(RSF_SYNC_EVENT, (uint64_t)(uintptr_t)e, CALL(cuEventSynchronize, e));
}

RS_EXPORT CUresult cuCtxSynchronize(void)
{
    SYNC_WAIT(RSF_SYNC_CONTEXT, 0, CALL(cuCtxSynchronize));
}

/* Not a wait of the host: the stream waits for the event. A SyncEvent of kind
 * stream_wait_event, target the waiting stream, lasting the call (the edge
 * event -> stream is there for the reporter to use). */
REAL_DECL(cuStreamWaitEvent);
REAL_DECL(cuStreamWaitEvent_ptsz);

RS_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    SYNC_WAIT(RSF_SYNC_STREAM_WAIT_EVENT, rs_stream_id(s, 0), CALL(cuStreamWaitEvent, s, e, flags));
}

RS_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags)
{
    SYNC_WAIT(RSF_SYNC_STREAM_WAIT_EVENT, rs_stream_id(s, 1), CALL(cuStreamWaitEvent_ptsz, s, e, flags));
}

#if CUDA_VERSION >= 13000
REAL_DECL(cuCtxSynchronize_v2);

/* CUDA 13.0: cuCtxSynchronize of a given context (NULL: the current one). */
RS_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    SYNC_WAIT(RSF_SYNC_CONTEXT, (uint64_t)(uintptr_t)ctx, CALL(cuCtxSynchronize_v2, ctx));
}
#endif

/* ---- memory ---- */

REAL_DECL(cuMemAlloc_v2);
REAL_DECL(cuMemAllocPitch_v2);
REAL_DECL(cuMemFree_v2);
REAL_DECL(cuMemAllocHost_v2);
REAL_DECL(cuMemHostAlloc);
REAL_DECL(cuMemFreeHost);
REAL_DECL(cuMemAllocManaged);
REAL_DECL(cuMemAllocAsync);
REAL_DECL(cuMemAllocAsync_ptsz);
REAL_DECL(cuMemFreeAsync);
REAL_DECL(cuMemFreeAsync_ptsz);

RS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    MEM_CALL(RSF_MEM_ALLOC, *p, n, CALL(cuMemAlloc_v2, p, n));
}

RS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned int esize)
{
    MEM_CALL_ON(RSF_MEM_ALLOC, *p, *pitch * h, w * h, NULL, 0, CALL(cuMemAllocPitch_v2, p, pitch, w, h, esize));
}

RS_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    MEM_CALL(RSF_MEM_FREE, p, 0, CALL(cuMemFree_v2, p));
}

RS_EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n)
{
    MEM_CALL(RSF_MEM_ALLOC_HOST, (uintptr_t)*p, n, CALL(cuMemAllocHost_v2, p, n));
}

RS_EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
    MEM_CALL(RSF_MEM_ALLOC_HOST, (uintptr_t)*p, n, CALL(cuMemHostAlloc, p, n, flags));
}

RS_EXPORT CUresult cuMemFreeHost(void *p)
{
    MEM_CALL(RSF_MEM_FREE_HOST, (uintptr_t)p, 0, CALL(cuMemFreeHost, p));
}

RS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    MEM_CALL(RSF_MEM_ALLOC_MANAGED, *p, n, CALL(cuMemAllocManaged, p, n, flags));
}

RS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_ALLOC_ASYNC, *p, n, n, s, 0, CALL(cuMemAllocAsync, p, n, s));
}

RS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_ALLOC_ASYNC, *p, n, n, s, 1, CALL(cuMemAllocAsync_ptsz, p, n, s));
}

RS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_FREE_ASYNC, p, 0, 0, s, 0, CALL(cuMemFreeAsync, p, s));
}

RS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_FREE_ASYNC, p, 0, 0, s, 1, CALL(cuMemFreeAsync_ptsz, p, s));
}

/* ---- contexts: a timing pool is settled before its context goes ---- */

/* Primary contexts as this process retained them: the handle and how many
 * retains are not released, to tell the release that destroys it. */
#define PRIMARY_DEVICES 64
static struct {
    _Atomic uintptr_t ctx;
    _Atomic int refs;
} primaries[PRIMARY_DEVICES];

static CUcontext primary_of(CUdevice dev)
{
    return dev >= 0 && dev < PRIMARY_DEVICES ? (CUcontext)atomic_load(&primaries[dev].ctx) : NULL;
}

/* Before a call that destroys ctx: the agent's pool in it is settled. */
static void ctx_going(CUcontext ctx)
{
    if (!ctx || rs_th.guard || rs_cuda_ready() <= 0)
        return;
    int saved = errno;
    rs_th.guard = 1;
    rs_gpu_ctx_gone(ctx);
    rs_th.guard = 0;
    errno = saved;
}

REAL_DECL(cuCtxDestroy);
REAL_DECL(cuCtxDestroy_v2);
REAL_DECL(cuDevicePrimaryCtxRetain);
REAL_DECL(cuDevicePrimaryCtxRelease);
REAL_DECL(cuDevicePrimaryCtxRelease_v2);
REAL_DECL(cuDevicePrimaryCtxReset);
REAL_DECL(cuDevicePrimaryCtxReset_v2);

RS_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    ctx_going(ctx);
    return CALL(cuCtxDestroy, ctx);
}

RS_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ctx_going(ctx);
    return CALL(cuCtxDestroy_v2, ctx);
}

RS_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = CALL(cuDevicePrimaryCtxRetain, pctx, dev);
    if (r == CUDA_SUCCESS && pctx && dev >= 0 && dev < PRIMARY_DEVICES) {
        atomic_store(&primaries[dev].ctx, (uintptr_t)*pctx);
        atomic_fetch_add(&primaries[dev].refs, 1);
    }
    return r;
}

/* The last release resets the primary context. */
static void primary_releasing(CUdevice dev)
{
    if (dev >= 0 && dev < PRIMARY_DEVICES && atomic_load(&primaries[dev].refs) <= 1)
        ctx_going(primary_of(dev));
}

static CUresult primary_released(CUdevice dev, CUresult r)
{
    if (r == CUDA_SUCCESS && dev >= 0 && dev < PRIMARY_DEVICES) {
        int n = atomic_load(&primaries[dev].refs);
        while (n > 0 && !atomic_compare_exchange_weak(&primaries[dev].refs, &n, n - 1))
            ;
    }
    return r;
}

RS_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    primary_releasing(dev);
    return primary_released(dev, CALL(cuDevicePrimaryCtxRelease, dev));
}

RS_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    primary_releasing(dev);
    return primary_released(dev, CALL(cuDevicePrimaryCtxRelease_v2, dev));
}

/* cudaDeviceReset comes here. */
RS_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ctx_going(primary_of(dev));
    return CALL(cuDevicePrimaryCtxReset, dev);
}

RS_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ctx_going(primary_of(dev));
    return CALL(cuDevicePrimaryCtxReset_v2, dev);
}

REAL_DECL(cuMemAllocFromPoolAsync);
REAL_DECL(cuMemAllocFromPoolAsync_ptsz);
REAL_DECL(cuMemCreate);
REAL_DECL(cuMemRelease);
REAL_DECL(cuMemMap);
REAL_DECL(cuMemUnmap);

RS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_ALLOC_ASYNC, *p, n, n, s, 0, CALL(cuMemAllocFromPoolAsync, p, n, pool, s));
}

RS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
    MEM_CALL_ON(RSF_MEM_ALLOC_ASYNC, *p, n, n, s, 1, CALL(cuMemAllocFromPoolAsync_ptsz, p, n, pool, s));
}

/* Virtual memory management (PyTorch's expandable segments, NCCL's buffers):
 * cuMemCreate allocates physical memory (ptr: the allocation handle),
 * cuMemRelease frees it; mapping it into an address range is not an
 * allocation, recorded apart (ptr: the address). */
RS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
    MEM_CALL(RSF_MEM_VMM_CREATE, *h, n, CALL(cuMemCreate, h, n, prop, flags));
}

RS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    MEM_CALL(RSF_MEM_VMM_RELEASE, h, 0, CALL(cuMemRelease, h));
}

RS_EXPORT CUresult cuMemMap(CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h,
                            unsigned long long flags)
{
    MEM_CALL(RSF_MEM_VMM_MAP, p, n, CALL(cuMemMap, p, n, offset, h, flags));
}

RS_EXPORT CUresult cuMemUnmap(CUdeviceptr p, size_t n)
{
    MEM_CALL(RSF_MEM_VMM_UNMAP, p, n, CALL(cuMemUnmap, p, n));
}

/* ---- modules and libraries: kernel names from the calls that make the
 * handles (funcnames.c), forgotten when their module or library goes ---- */

REAL_DECL(cuModuleGetFunction);
REAL_DECL(cuLibraryGetKernel);
REAL_DECL(cuKernelGetFunction);
REAL_DECL(cuModuleUnload);
REAL_DECL(cuLibraryUnload);
REAL_DECL(cuLibraryGetModule);

/* Names are noted whenever CUDA capture is on, tracing or not: a launch
 * traced later needs them. */
static inline int names_on(void)
{
    return rs_cfg.cuda && !rs_cfg.disable && !rs_th.guard;
}

RS_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
    CUresult r = CALL(cuModuleGetFunction, f, mod, name);
    if (r == CUDA_SUCCESS && f && names_on()) {
        int saved = errno;
        rs_fname_note(*f, name, mod);
        errno = saved;
    }
    return r;
}

RS_EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
    CUresult r = CALL(cuLibraryGetKernel, k, lib, name);
    if (r == CUDA_SUCCESS && k && names_on()) {
        int saved = errno;
        rs_fname_note(*k, name, lib);
        errno = saved;
    }
    return r;
}

/* The function of a kernel in the current context: the kernel's name, owned
 * by its library. */
RS_EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
    CUresult r = CALL(cuKernelGetFunction, f, k);
    if (r == CUDA_SUCCESS && f && names_on()) {
        int saved = errno;
        const void *owner = NULL;
        const char *name = rs_fname_of(k, &owner);
        if (name)
            rs_fname_note(*f, name, owner);
        errno = saved;
    }
    return r;
}

RS_EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    CUresult r = CALL(cuModuleUnload, mod);
    if (r == CUDA_SUCCESS && names_on()) {
        int saved = errno;
        rs_fname_forget(mod);
        errno = saved;
    }
    return r;
}

/* A library's kernels, and the functions of its module (cuLibraryGetModule),
 * go with it: the module is asked for before the library is gone. */
RS_EXPORT CUresult cuLibraryUnload(CUlibrary lib)
{
    CUmodule mod = NULL;
    int on = names_on();
    if (on) {
        int saved = errno;
        if (!REAL(cuLibraryGetModule) || real_cuLibraryGetModule(&mod, lib) != CUDA_SUCCESS)
            mod = NULL;
        errno = saved;
    }
    CUresult r = CALL(cuLibraryUnload, lib);
    if (r == CUDA_SUCCESS && on) {
        int saved = errno;
        rs_fname_forget(lib);
        rs_fname_forget(mod);
        errno = saved;
    }
    return r;
}

/* ---- the table of hooked entry points, for cuGetProcAddress and dlsym ----
 * X(exported name, name cuGetProcAddress is asked for, CUDA version of the
 * variant, per-thread variant): every variant of a hooked name as the
 * toolkit's cudaTypedefs.h lists them (PFN_<name>_v<version>[_ptds|_ptsz]),
 * from the first one with today's ABI (the 2.0 ones of 32-bit sizes are not
 * wrapped: the driver's own function is given for those). */
#if CUDA_VERSION >= 13000
#define HOOKS_13(X)                                                                           \
    X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, 0)                                      \
    X(cuMemcpyBatchAsync, "cuMemcpyBatchAsync", 12080, 0)                                     \
    X(cuMemcpyBatchAsync_ptsz, "cuMemcpyBatchAsync", 12080, 1)                                \
    X(cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync", 13000, 0)                                  \
    X(cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync", 13000, 1)                             \
    X(cuMemcpy3DBatchAsync, "cuMemcpy3DBatchAsync", 12080, 0)                                 \
    X(cuMemcpy3DBatchAsync_ptsz, "cuMemcpy3DBatchAsync", 12080, 1)                            \
    X(cuMemcpy3DBatchAsync_v2, "cuMemcpy3DBatchAsync", 13000, 0)                              \
    X(cuMemcpy3DBatchAsync_v2_ptsz, "cuMemcpy3DBatchAsync", 13000, 1)
#else
#define HOOKS_13(X)
#endif
#define HOOKS(X)                                                                              \
    X(cuInit, "cuInit", 2000, 0)                                                              \
    X(cuGetProcAddress, "cuGetProcAddress", 11030, 0)                                         \
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0)                                      \
    X(cuLaunchKernel, "cuLaunchKernel", 4000, 0)                                              \
    X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, 1)                                         \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, 0)                                         \
    X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 1)                                    \
    X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, 0)                        \
    X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, 1)                   \
    X(cuGraphLaunch, "cuGraphLaunch", 10000, 0)                                               \
    X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, 1)                                          \
    X(cuStreamBeginCapture, "cuStreamBeginCapture", 10000, 0)                                 \
    X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", 10000, 1)                            \
    X(cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010, 0)                              \
    X(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, 1)                         \
    X(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", 12030, 0)                   \
    X(cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph", 12030, 1)              \
    X(cuStreamEndCapture, "cuStreamEndCapture", 10000, 0)                                     \
    X(cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, 1)                                \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiate", 12000, 0)                            \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, 0)                   \
    X(cuGraphInstantiate_v2, "cuGraphInstantiate", 11000, 0)                                  \
    X(cuGraphInstantiate, "cuGraphInstantiate", 10000, 0)                                     \
    X(cuGraphInstantiateWithParams, "cuGraphInstantiateWithParams", 12000, 0)                 \
    X(cuGraphInstantiateWithParams_ptsz, "cuGraphInstantiateWithParams", 12000, 1)            \
    X(cuGraphExecUpdate_v2, "cuGraphExecUpdate", 12000, 0)                                    \
    X(cuGraphClone, "cuGraphClone", 10000, 0)                                                 \
    X(cuGraphDestroy, "cuGraphDestroy", 10000, 0)                                             \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", 10000, 0)                                     \
    X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, 0)                                               \
    X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, 1)                                          \
    X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, 0)                                               \
    X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, 1)                                          \
    X(cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020, 0)                                               \
    X(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 7000, 1)                                          \
    X(cuMemcpy, "cuMemcpy", 4000, 0)                                                          \
    X(cuMemcpy_ptds, "cuMemcpy", 7000, 1)                                                     \
    X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, 0)                                     \
    X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, 1)                                \
    X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, 0)                                     \
    X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, 1)                                \
    X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020, 0)                                     \
    X(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 7000, 1)                                \
    X(cuMemcpyAsync, "cuMemcpyAsync", 4000, 0)                                                \
    X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, 1)                                           \
    X(cuMemcpy2D_v2, "cuMemcpy2D", 3020, 0)                                                   \
    X(cuMemcpy2D_v2_ptds, "cuMemcpy2D", 7000, 1)                                              \
    X(cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 3020, 0)                                 \
    X(cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 7000, 1)                            \
    X(cuMemcpy3D_v2, "cuMemcpy3D", 3020, 0)                                                   \
    X(cuMemcpy3D_v2_ptds, "cuMemcpy3D", 7000, 1)                                              \
    X(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 3020, 0)                                         \
    X(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 7000, 1)                                    \
    X(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 3020, 0)                                         \
    X(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 7000, 1)                                    \
    X(cuMemcpyPeer, "cuMemcpyPeer", 4000, 0)                                                  \
    X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 7000, 1)                                             \
    X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, 0)                                        \
    X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 7000, 1)                                   \
    X(cuMemcpy3DPeer, "cuMemcpy3DPeer", 4000, 0)                                              \
    X(cuMemcpy3DPeer_ptds, "cuMemcpy3DPeer", 7000, 1)                                         \
    X(cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync", 4000, 0)                                    \
    X(cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync", 7000, 1)                               \
    X(cuMemsetD8_v2, "cuMemsetD8", 3020, 0)                                                   \
    X(cuMemsetD8_v2_ptds, "cuMemsetD8", 7000, 1)                                              \
    X(cuMemsetD16_v2, "cuMemsetD16", 3020, 0)                                                 \
    X(cuMemsetD16_v2_ptds, "cuMemsetD16", 7000, 1)                                            \
    X(cuMemsetD32_v2, "cuMemsetD32", 3020, 0)                                                 \
    X(cuMemsetD32_v2_ptds, "cuMemsetD32", 7000, 1)                                            \
    X(cuMemsetD8Async, "cuMemsetD8Async", 3020, 0)                                            \
    X(cuMemsetD8Async_ptsz, "cuMemsetD8Async", 7000, 1)                                       \
    X(cuMemsetD16Async, "cuMemsetD16Async", 3020, 0)                                          \
    X(cuMemsetD16Async_ptsz, "cuMemsetD16Async", 7000, 1)                                     \
    X(cuMemsetD32Async, "cuMemsetD32Async", 3020, 0)                                          \
    X(cuMemsetD32Async_ptsz, "cuMemsetD32Async", 7000, 1)                                     \
    X(cuMemsetD2D8_v2, "cuMemsetD2D8", 3020, 0)                                               \
    X(cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 7000, 1)                                          \
    X(cuMemsetD2D16_v2, "cuMemsetD2D16", 3020, 0)                                             \
    X(cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 7000, 1)                                        \
    X(cuMemsetD2D32_v2, "cuMemsetD2D32", 3020, 0)                                             \
    X(cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 7000, 1)                                        \
    X(cuMemsetD2D8Async, "cuMemsetD2D8Async", 3020, 0)                                        \
    X(cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 7000, 1)                                   \
    X(cuMemsetD2D16Async, "cuMemsetD2D16Async", 3020, 0)                                      \
    X(cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 7000, 1)                                 \
    X(cuMemsetD2D32Async, "cuMemsetD2D32Async", 3020, 0)                                      \
    X(cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 7000, 1)                                 \
    X(cuStreamSynchronize, "cuStreamSynchronize", 2000, 0)                                    \
    X(cuStreamSynchronize_ptsz, "cuStreamSynchronize", 7000, 1)                               \
    X(cuEventSynchronize, "cuEventSynchronize", 2000, 0)                                      \
    X(cuCtxSynchronize, "cuCtxSynchronize", 2000, 0)                                          \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", 3020, 0)                                        \
    X(cuStreamWaitEvent_ptsz, "cuStreamWaitEvent", 7000, 1)                                   \
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, 0)                                                   \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0)                                         \
    X(cuMemFree_v2, "cuMemFree", 3020, 0)                                                     \
    X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0)                                           \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020, 0)                                              \
    X(cuMemFreeHost, "cuMemFreeHost", 2000, 0)                                                \
    X(cuMemAllocManaged, "cuMemAllocManaged", 6000, 0)                                        \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, 0)                                           \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 1)                                      \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, 0)                                             \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 1)                                        \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0)                           \
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 1)                      \
    X(cuMemCreate, "cuMemCreate", 10020, 0)                                                   \
    X(cuMemRelease, "cuMemRelease", 10020, 0)                                                 \
    X(cuMemMap, "cuMemMap", 10020, 0)                                                         \
    X(cuMemUnmap, "cuMemUnmap", 10020, 0)                                                     \
    X(cuModuleGetFunction, "cuModuleGetFunction", 2000, 0)                                    \
    X(cuLibraryGetKernel, "cuLibraryGetKernel", 12000, 0)                                     \
    X(cuKernelGetFunction, "cuKernelGetFunction", 12000, 0)                                   \
    X(cuModuleUnload, "cuModuleUnload", 2000, 0)                                              \
    X(cuLibraryUnload, "cuLibraryUnload", 12000, 0)                                           \
    X(cuStreamDestroy, "cuStreamDestroy", 2000, 0)                                            \
    X(cuStreamDestroy_v2, "cuStreamDestroy", 4000, 0)                                         \
    X(cuCtxDestroy, "cuCtxDestroy", 2000, 0)                                                  \
    X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, 0)                                               \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, 0)                          \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 7000, 0)                        \
    X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, 0)                    \
    X(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, 0)                            \
    X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, 0)                        \
    HOOKS_13(X)

REAL_DECL(cuGetProcAddress);
REAL_DECL(cuGetProcAddress_v2);

struct hook {
    const char *sym, *base;
    int version, ptsz;
    void *wrapper;
    void **real;
};

#define HOOK_ENTRY(fn, base, version, ptsz) { #fn, base, version, ptsz, (void *)fn, (void **)&real_##fn },
static const struct hook hooks[] = { HOOKS(HOOK_ENTRY) };
#undef HOOK_ENTRY
#define NHOOKS (sizeof hooks / sizeof hooks[0])

/* The real address of a hook's function, resolved on first need. */
static void *hook_real(const struct hook *k)
{
    void *p = __atomic_load_n(k->real, __ATOMIC_ACQUIRE);
    if (!p) {
        p = rs_cuda_sym(k->sym);
        if (p)
            __atomic_store_n(k->real, p, __ATOMIC_RELEASE);
    }
    return p;
}

/* What cuGetProcAddress answers for symbol when the driver gave fn: our
 * wrapper of the same variant, or fn itself when it is not hooked. */
static void *proc_wrapper(const char *symbol, void *fn, int version, cuuint64_t flags)
{
    if (!fn || !symbol || !rs_cfg.cuda || rs_cfg.disable)
        return fn;
    /* The driver's own rule: the newest variant not newer than version, the
     * per-thread one when the flags ask for it and there is one by then. */
    const struct hook *best = NULL, *best_pt = NULL;
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (size_t i = 0; i < NHOOKS; i++) {
        const struct hook *k = &hooks[i];
        if (strcmp(k->base, symbol) != 0)
            continue;
        /* Resolved now, not on the wrapper's first call (inside its timing). */
        void *real = hook_real(k);
        /* Ours already: a driver whose own references to its functions bind
         * to the agent's (not linked -Bsymbolic, as the simulator) gives them. */
        if (k->wrapper == fn)
            return fn;
        if (real == fn)
            return k->wrapper;
        if (k->version > version)
            continue;
        if (k->ptsz) {
            if (ptsz && (!best_pt || k->version > best_pt->version))
                best_pt = k;
        } else if (!best || k->version > best->version) {
            best = k;
        }
    }
    if (best_pt)
        best = best_pt;
    if (!best)
        return fn;
    void *expect = NULL;
    if (__atomic_compare_exchange_n(best->real, &expect, fn, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
        expect == fn)
        return best->wrapper;
    /* The driver gave another address than its exported symbol of the
     * variant picked here (a driver may hand out internal entry points):
     * the same ABI, as long as the caller's version is one this agent's
     * table knows; a newer one may name a variant the table lacks. */
    if (version <= CUDA_VERSION)
        return best->wrapper;
    return fn;
}

RS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!REAL(cuGetProcAddress_v2)) {
        if (status)
            *status = st;
        return CUDA_ERROR_NOT_FOUND;
    }
    CUresult r = real_cuGetProcAddress_v2(symbol, pfn, version, flags, status ? status : &st);
    if (r == CUDA_SUCCESS && pfn) {
        int saved = errno;
        *pfn = proc_wrapper(symbol, *pfn, version, flags);
        errno = saved;
    }
    return r;
}

RS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    CUresult r = CALL(cuGetProcAddress, symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && pfn) {
        int saved = errno;
        *pfn = proc_wrapper(symbol, *pfn, version, flags);
        errno = saved;
    }
    return r;
}

/* ---- dlsym: a libcuda handle's hooked symbols give our wrappers ---- */

/* dlsym's answer for a name that must look absent: NULL with dlerror() set
 * (callers read it after a NULL), from a lookup in the C library, which has
 * no cu* or nccl* names; p itself when that cannot be arranged. */
static void *not_found(const char *name, void *p)
{
    static void *libc;
    if (!libc)
        libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    if (!libc || real_dlsym(libc, name) != NULL)
        return p;
    return NULL;
}

/* Whether p is a definition of the agent's own. */
static int is_ours(const void *p)
{
    static const void *base;
    Dl_info info;
    if (!base && dladdr((const void *)is_ours, &info))
        base = info.dli_fbase;
    return p && dladdr(p, &info) && info.dli_fbase == base;
}

/* What dlsym(RTLD_DEFAULT, name) gives caller without the agent: the global
 * scope after the agent (p, what the agent's own lookup found, when it is not
 * the agent's), then the caller's own scope, which holds the libraries of an
 * object loaded RTLD_LOCAL (a libcuda or libnccl only it sees). */
static void *default_sym(const char *name, void *p, const void *caller)
{
    if (is_ours(p))
        p = real_dlsym(RTLD_NEXT, name);
    if (p)
        return p;
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_name || !lm->l_name[0])
        return NULL;
    void *h = dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return NULL;
    p = real_dlsym(h, name);
    rs_dlclose_quiet(h);
    return p;
}

RS_EXPORT void *dlsym(void *handle, const char *name)
{
    if (RS_UNLIKELY(!real_dlsym)) {
        dlsym_resolve();
        if (!real_dlsym)
            return NULL;
    }
    /* RTLD_NEXT is relative to the caller: a tail call keeps the caller's
     * return address for the real dlsym to see. */
    int nccl = name[0] == 'n' && name[1] == 'c' && name[2] == 'c' && name[3] == 'l';
    if (handle == RTLD_NEXT || ((name[0] != 'c' || name[1] != 'u') && !nccl))
        return real_dlsym(handle, name);
    void *p = real_dlsym(handle, name);
    if (rs_th.guard)
        return p;
    int saved = errno;
    if (handle == RTLD_DEFAULT) {
        /* as the caller would find it, then our wrapper for a hooked function */
        void *q = default_sym(name, p, __builtin_return_address(0));
        if (q && nccl)
            q = rs_nccl_wrapper(name, q);
        else if (q && rs_cfg.cuda && !rs_cfg.disable)
            for (size_t i = 0; i < NHOOKS; i++)
                if (strcmp(hooks[i].sym, name) == 0) {
                    if (hook_real(&hooks[i]) == q)
                        q = hooks[i].wrapper;
                    break;
                }
        if (!q)
            q = not_found(name, p);
        errno = saved;
        return q;
    }
    if (!p) {
        errno = saved;
        return p;
    }
    if (nccl) {
        /* Our wrapper found by name (RTLD_DEFAULT) where no NCCL is loaded:
         * a program probing for NCCL must not be told it is there. */
        if (!rs_nccl_present(name, p))
            p = not_found(name, p);
        errno = saved;
        return p;
    }
    for (size_t i = 0; i < NHOOKS; i++) {
        if (strcmp(hooks[i].sym, name) == 0) {
            if (p == hooks[i].wrapper) {
                /* ours, found by name: only if there is a driver behind it */
                if (!hook_real(&hooks[i]))
                    p = not_found(name, p);
            } else if (rs_cfg.cuda && !rs_cfg.disable && hook_real(&hooks[i]) == p) {
                /* the driver's own function: our wrapper instead */
                p = hooks[i].wrapper;
            }
            break;
        }
    }
    errno = saved;
    return p;
}
