/* The simulated CUDA driver's entry points for everything that is not stream work:
 * initialisation and settings, devices, contexts (primary and created), device and
 * pinned memory (host memory underneath; each device's capacity and what is held of
 * it, see simgpu.h's DEVICE MEMORY), modules, libraries and functions (a module
 * may be any bytes; a function is made for any name asked), and error strings.
 * Stream work (launches, copies, events, graphs) is in simgpu_stream.c. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools/sim/simgpu_internal.h"
#include "tools/sim/simgpu_errors.h"

#define SIM_CTX_STACK 8

struct sim_settings sim_cfg;

/* Memory handed out by cuMemAlloc (device) and cuMemAllocHost (pinned host), to
 * tell copy directions apart and to refuse frees of foreign pointers. */
struct sim_alloc {
    uintptr_t base;
    size_t size;
    int host;
    int device;                   /* whose memory it holds (device memory) */
    struct sim_alloc *next;
};

static struct {
    int initialised;
    struct CUctx_st *primary;     /* one per device, made at cuInit */
    int *primary_refs;
    struct sim_alloc *allocs;
    struct sim_dev_mem *mem;      /* per device */
    struct CUlib_st *libraries;
} sim_drv;

/* Like the real driver, which talks to the kernel through /dev/nvidiactl and
 * friends, the stand-in opens a file of its own at cuInit (a memfd) and checks
 * it in the calls a tracer makes from a thread of its own (events, streams):
 * a thread whose fd table is not the program's (unshare, clone without
 * CLONE_FILES) finds another file or none under that number there and gets
 * CUDA_ERROR_OPERATING_SYSTEM, as it would from the real driver. */
static struct {
    int fd;
    dev_t dev;
    ino_t ino;
} sim_ctl = { -1, 0, 0 };

static int sim_ctl_open(void)
{
    struct stat st;
    int fd = memfd_create("simgpu-ctl", MFD_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    sim_ctl.fd = fd;
    sim_ctl.dev = st.st_dev;
    sim_ctl.ino = st.st_ino;
    return 0;
}

CUresult sim_check_fds(void)
{
    struct stat st;
    if (sim_ctl.fd < 0)
        return CUDA_SUCCESS; /* before cuInit: sim_check_init answers */
    if (fstat(sim_ctl.fd, &st) != 0 || st.st_dev != sim_ctl.dev || st.st_ino != sim_ctl.ino)
        return CUDA_ERROR_OPERATING_SYSTEM;
    return CUDA_SUCCESS;
}

static __thread struct CUctx_st *sim_ctx_stack[SIM_CTX_STACK];
static __thread int sim_ctx_depth;

static double sim_env_double(const char *name, double def)
{
    const char *v = getenv(name);
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || !*v)
        return def;
    if (*end || d <= 0) {
        fprintf(stderr, "simgpu: %s=%s is not a positive number; using %g\n", name, v, def);
        return def;
    }
    return d;
}

static void sim_read_settings(void)
{
    const char *rank = getenv("RANK");
    sim_cfg.devices = (int)sim_env_double("SIMGPU_DEVICES", 8);
    /* SIMGPU_MEM_MB wins; SIMGPU_MEM_GB, the older name, keeps its GB of 1e9 bytes */
    const char *mb = getenv("SIMGPU_MEM_MB"), *gb = getenv("SIMGPU_MEM_GB"), *tm = getenv("SIMGPU_TRUTH_MEMORY");
    if (mb && *mb)
        sim_cfg.mem_bytes = (uint64_t)(sim_env_double("SIMGPU_MEM_MB", 81920) * 1048576.0);
    else if (gb && *gb)
        sim_cfg.mem_bytes = (uint64_t)(sim_env_double("SIMGPU_MEM_GB", 80) * 1e9);
    else
        sim_cfg.mem_bytes = 81920ull << 20;
    sim_cfg.ctx_bytes = (uint64_t)(sim_env_double("SIMGPU_CTX_MB", 0) * 1048576.0);
    sim_cfg.truth_memory = tm && !strcmp(tm, "1");
    sim_cfg.pid = (int)getpid();
    sim_cfg.kernel_ns = (uint64_t)sim_env_double("SIMGPU_KERNEL_NS", 10000);
    sim_cfg.copy_gbs = sim_env_double("SIMGPU_COPY_GBS", 25);
    sim_cfg.dtod_gbs = sim_env_double("SIMGPU_DTOD_GBS", 1000);
    sim_cfg.rank = rank && *rank ? atoi(rank) : -1;
    sim_cfg.sms = (int)sim_env_double("SIMGPU_SMS", 132);
    if (sim_cfg.sms < 1)
        sim_cfg.sms = 1;
    sim_cfg.regs = (int)sim_env_double("SIMGPU_REGS", 32);
    sim_cfg.static_smem = (int)sim_env_double("SIMGPU_STATIC_SMEM", 0);
    /* From a call's handover to the earliest start. An H200 runs a start event
     * recorded on an idle stream 2.7 us (median) after the recording call, on the
     * agent's clock, whose anchor events have that lag themselves: the lag is
     * more; 1 us keeps the agent's anchors within the tests' 2 us. */
    const char *pk = getenv("SIMGPU_PICKUP_NS");
    sim_cfg.pickup_ns = pk && !strcmp(pk, "0") ? 0 : (uint64_t)sim_env_double("SIMGPU_PICKUP_NS", 1000);
    /* An H200 begins a kernel 2.2 to 3.7 us (p1 to p99) after the event before it
     * on a busy stream; 0 by default: the tests' times were made without it. */
    const char *kg = getenv("SIMGPU_KERNEL_GAP_NS");
    sim_cfg.kernel_gap_ns = kg && !strcmp(kg, "0") ? 0 : (uint64_t)sim_env_double("SIMGPU_KERNEL_GAP_NS", 0.0);
    /* A thread held up (descheduled, or behind the driver's lock) just after
     * an event went on its stream: the work it hands over next comes late. */
    const char *hold = getenv("SIMGPU_RECORD_HOLD");
    unsigned every = 0;
    double us = 0;
    if (hold && sscanf(hold, "%u:%lf", &every, &us) == 2 && every > 0 && us > 0) {
        sim_cfg.record_hold_every = every;
        sim_cfg.record_hold_ns = (uint64_t)(us * 1e3);
    }
}

static CUresult sim_ctx_init(struct CUctx_st *c, int device, unsigned flags)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->magic = SIM_MAGIC_CTX;
    c->device = device;
    c->flags = flags;
    c->legacy = s;
    s->magic = SIM_MAGIC_STREAM;
    s->ctx = c;
    s->gen = c->gen;
    s->id = sim_model_next_stream_id();
    sim_model_register_stream(s);
    return CUDA_SUCCESS;
}

static CUresult sim_init(void)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    if (!sim_drv.initialised) {
        sim_read_settings();
        sim_drv.primary = calloc((size_t)sim_cfg.devices, sizeof(*sim_drv.primary));
        sim_drv.primary_refs = calloc((size_t)sim_cfg.devices, sizeof(int));
        sim_drv.mem = calloc((size_t)sim_cfg.devices, sizeof(*sim_drv.mem));
        if (!sim_drv.primary || !sim_drv.primary_refs || !sim_drv.mem)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        for (int d = 0; r == CUDA_SUCCESS && d < sim_cfg.devices; d++)
            r = sim_ctx_init(&sim_drv.primary[d], d, 0);
        if (r == CUDA_SUCCESS && sim_ctl_open() != 0)
            r = CUDA_ERROR_OPERATING_SYSTEM;
        sim_drv.initialised = r == CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_init();
}

CUresult sim_check_init(void)
{
    return sim_drv.initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

struct CUctx_st *sim_current_ctx(void)
{
    return sim_ctx_depth > 0 ? sim_ctx_stack[sim_ctx_depth - 1] : NULL;
}

CUresult sim_check_alive(const struct CUctx_st *c, unsigned gen, const char *what)
{
    if (c && c->magic == SIM_MAGIC_CTX && c->gen == gen)
        return CUDA_SUCCESS;
    fprintf(stderr, "simgpu: %s: a handle of a destroyed context\n", what);
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

/* Primary context d is reset: what it made is gone; a new legacy stream.
 * Under sim_lock. */
static CUresult sim_primary_reset(int d)
{
    struct CUctx_st *c = &sim_drv.primary[d];
    c->gen++;
    return sim_ctx_init(c, d, c->flags);
}

static CUresult sim_check_device(CUdevice dev)
{
    if (!sim_drv.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    return dev >= 0 && dev < sim_cfg.devices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult sim_check_ctx(CUcontext c)
{
    return c && c->magic == SIM_MAGIC_CTX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = sim_driver_version();
    return CUDA_SUCCESS;
}

/* ---- devices ---- */

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_drv.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    *count = sim_cfg.devices;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = sim_check_device(ordinal);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *device = ordinal;
    return r;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        snprintf(name, (size_t)len, "Simulated GPU %d (ringside)", dev);
    return r;
}

/* Figures of a recent data-centre GPU, so that programs that size work by them
 * take ordinary paths; anything not listed reads 0. */
static int sim_attribute(CUdevice_attribute a)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return sim_cfg.sms;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    default: return 0;
    }
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *pi = attrib == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID ? dev : sim_attribute(attrib);
    return r;
}

SIM_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *major = sim_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        *minor = sim_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    }
    return r;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *bytes = (size_t)sim_cfg.mem_bytes;
    return r;
}

SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        /* the stand-in NVML (simnvml.c) gives the same */
        for (int i = 0; i < 15; i++)
            uuid->bytes[i] = (char)(0x5A + i);
        uuid->bytes[15] = (char)dev;
    }
    return r;
}

SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *busid, int len, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!busid || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        snprintf(busid, (size_t)len, "0000:%02x:00.0", 0x10 + dev);
    return r;
}

/* ---- contexts ---- */

static void sim_ctx_set_top(struct CUctx_st *c)
{
    if (sim_ctx_depth == 0)
        sim_ctx_depth = 1;
    sim_ctx_stack[sim_ctx_depth - 1] = c;
}

static CUresult sim_ctx_new(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    struct CUctx_st *c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    r = sim_mem_take(dev, SIM_CTX_RESERVE_BYTES, SIM_MEM_CONTEXT);
    if (r == CUDA_SUCCESS && (r = sim_ctx_init(c, dev, flags)) != CUDA_SUCCESS)
        sim_mem_give(dev, SIM_CTX_RESERVE_BYTES, SIM_MEM_CONTEXT);
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(c);
        return r;
    }
    /* A new context is pushed onto the calling thread's stack. */
    if (sim_ctx_depth == SIM_CTX_STACK)
        sim_ctx_set_top(c);
    else
        sim_ctx_stack[sim_ctx_depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return sim_ctx_new(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return sim_ctx_new(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int nparams,
                                   unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)nparams;
    return sim_ctx_new(pctx, flags, dev);
}

CUresult sim_impl_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    (void)params;
    return sim_ctx_new(pctx, flags, dev);
}

/* A created context's streams stay valid until destroyed themselves: the model
 * keeps no pointer back to the context but for cuCtxSynchronize's filter. */
SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult r = sim_check_ctx(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (ctx >= sim_drv.primary && ctx < sim_drv.primary + sim_cfg.devices)
        return CUDA_ERROR_INVALID_CONTEXT;
    for (int i = 0; i < sim_ctx_depth; i++) {
        if (sim_ctx_stack[i] == ctx) {
            memmove(&sim_ctx_stack[i], &sim_ctx_stack[i + 1],
                    (size_t)(sim_ctx_depth - i - 1) * sizeof(sim_ctx_stack[0]));
            sim_ctx_depth--;
            i--;
        }
    }
    pthread_mutex_lock(&sim_lock);
    ctx->magic = SIM_MAGIC_DEAD;
    sim_mem_give(ctx->device, SIM_CTX_RESERVE_BYTES, SIM_MEM_CONTEXT);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!sim_drv.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) {
        if (sim_ctx_depth > 0)
            sim_ctx_depth--;
        return CUDA_SUCCESS;
    }
    CUresult r = sim_check_ctx(ctx);
    if (r == CUDA_SUCCESS)
        sim_ctx_set_top(ctx);
    return r;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_drv.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    *pctx = sim_current_ctx();
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult r = sim_check_ctx(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_ctx_depth == SIM_CTX_STACK)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_ctx_stack[sim_ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (sim_ctx_depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_ctx_depth--;
    if (pctx)
        *pctx = sim_ctx_stack[sim_ctx_depth];
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    struct CUctx_st *c = sim_current_ctx();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->device;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    struct CUctx_st *c = sim_current_ctx();
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        ctx = sim_current_ctx();
    CUresult r = sim_check_ctx(ctx);
    if (r == CUDA_SUCCESS)
        *version = 3020;
    return r;
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

static CUresult sim_ctx_sync(struct CUctx_st *c)
{
    struct sim_op *tails[256];
    CUresult r = CUDA_SUCCESS;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&sim_lock);
    r = sim_capture_forbid(NULL);
    size_t n = r == CUDA_SUCCESS ? sim_model_tails(c, tails, sizeof(tails) / sizeof(tails[0])) : 0;
    pthread_mutex_unlock(&sim_lock);
    for (size_t i = 0; i < n; i++) {
        CUresult w = sim_model_wait(tails[i]);
        if (r == CUDA_SUCCESS)
            r = w;
    }
    return r;
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
    return sim_ctx_sync(sim_current_ctx());
}

/* CUDA 13.0: of a given context, NULL the current one. Exported only: the
 * simulator's cuGetProcAddress gives the 2.0 variant for every version. */
CUresult sim_impl_cuCtxSynchronize_v2(CUcontext ctx)
{
    return sim_ctx_sync(ctx ? ctx : sim_current_ctx());
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    /* the first retain makes the context, and its state takes memory */
    pthread_mutex_lock(&sim_lock);
    if (sim_drv.primary_refs[dev] == 0)
        r = sim_mem_take(dev, SIM_CTX_RESERVE_BYTES, SIM_MEM_CONTEXT);
    if (r == CUDA_SUCCESS)
        sim_drv.primary_refs[dev]++;
    pthread_mutex_unlock(&sim_lock);
    if (r == CUDA_SUCCESS)
        *pctx = &sim_drv.primary[dev];
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    if (sim_drv.primary_refs[dev] == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (--sim_drv.primary_refs[dev] == 0) {
        r = sim_primary_reset(dev);  /* "automatically reset once the last reference ... is released" */
        sim_mem_give(dev, SIM_CTX_RESERVE_BYTES, SIM_MEM_CONTEXT);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = sim_check_device(dev);
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        *flags = sim_drv.primary[dev].flags;
        *active = sim_drv.primary_refs[dev] > 0;
    }
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult r = sim_check_device(dev);
    if (r == CUDA_SUCCESS)
        sim_drv.primary[dev].flags = flags;
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

/* Resetting does not release: the context stays retained, anew. */
SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    CUresult r = sim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    r = sim_primary_reset(dev);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}

/* ---- memory ---- */

CUresult sim_mem_take(int d, uint64_t bytes, enum sim_mem_part part)
{
    struct sim_dev_mem *m = &sim_drv.mem[d];
    if (bytes > sim_cfg.mem_bytes - m->used)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->held[part] += bytes;
    m->used += bytes;
    if (m->held[part] > m->peak[part])
        m->peak[part] = m->held[part];
    if (m->used > m->peak_used) {
        m->peak_used = m->used;
        m->peak_ns = sim_now_ns();
    }
    return CUDA_SUCCESS;
}

void sim_mem_give(int d, uint64_t bytes, enum sim_mem_part part)
{
    struct sim_dev_mem *m = &sim_drv.mem[d];
    m->held[part] -= bytes;
    m->used -= bytes;
}

const struct sim_dev_mem *sim_mem_of(int d)
{
    return sim_drv.initialised && d >= 0 && d < sim_cfg.devices ? &sim_drv.mem[d] : NULL;
}

SIM_EXPORT CUresult simgpu_internal_alloc(int device, uint64_t bytes)
{
    CUresult r = sim_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (device < 0 || device >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&sim_lock);
    r = sim_mem_take(device, bytes, SIM_MEM_INTERNAL);
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT void simgpu_internal_free(int device, uint64_t bytes)
{
    if (!sim_drv.initialised || device < 0 || device >= sim_cfg.devices)
        return;
    pthread_mutex_lock(&sim_lock);
    sim_mem_give(device, bytes, SIM_MEM_INTERNAL);
    pthread_mutex_unlock(&sim_lock);
}

CUresult sim_alloc_new(void **p, size_t bytes, int host)
{
    struct sim_alloc *a;
    struct CUctx_st *c = sim_current_ctx();
    if (!p || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* The device's memory is taken before the host's is had, under one hold of
     * the lock, so that two threads cannot both be given its last bytes. */
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    if (!host && (r = sim_mem_take(c->device, bytes, SIM_MEM_ALLOC)) == CUDA_SUCCESS &&
        (r = sim_capture_forbid(NULL)) != CUDA_SUCCESS)   /* cudaMalloc is unsafe in a capture */
        sim_mem_give(c->device, bytes, SIM_MEM_ALLOC);
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS)
        return r;
    void *block = NULL;
    a = malloc(sizeof(*a));
    /* Large blocks come from mmap: pages nobody touches cost nothing. */
    if (!a || posix_memalign(&block, 256, bytes) != 0) {
        free(a);
        if (!host) {
            pthread_mutex_lock(&sim_lock);
            sim_mem_give(c->device, bytes, SIM_MEM_ALLOC);
            pthread_mutex_unlock(&sim_lock);
        }
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = block;
    a->base = (uintptr_t)block;
    a->size = bytes;
    a->host = host;
    a->device = c->device;
    pthread_mutex_lock(&sim_lock);
    a->next = sim_drv.allocs;
    sim_drv.allocs = a;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

CUresult sim_alloc_free(uintptr_t base, int host)
{
    struct sim_alloc **pp, *a = NULL;
    if (!base)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_lock);
    for (pp = &sim_drv.allocs; *pp; pp = &(*pp)->next) {
        if ((*pp)->base == base && (*pp)->host == host) {
            a = *pp;
            *pp = a->next;
            if (!host)
                sim_mem_give(a->device, a->size, SIM_MEM_ALLOC);
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (!a)
        return CUDA_ERROR_INVALID_VALUE;
    free((void *)a->base);
    free(a);
    return CUDA_SUCCESS;
}

/* 1 if p lies in device memory, 0 otherwise (host, pinned or not). */
int sim_is_device_ptr(uintptr_t p)
{
    int device = 0;
    pthread_mutex_lock(&sim_lock);
    for (const struct sim_alloc *a = sim_drv.allocs; a; a = a->next) {
        if (p >= a->base && p - a->base < a->size) {
            device = !a->host;
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    return device;
}

/* What the driver says of a pointer: only its memory type (device or pinned host
 * memory of this simulator); any other pointer is unknown to it. */
SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    int found = 0, host = 0;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    for (const struct sim_alloc *a = sim_drv.allocs; a; a = a->next) {
        if (ptr >= a->base && ptr - a->base < a->size) {
            found = 1;
            host = a->host;
            break;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    CUresult r;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    r = sim_alloc_new(&p, bytesize, 0);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

/* Rows padded to 512 bytes, as the driver's pitch is on recent GPUs. */
SIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                       unsigned int element_bytes)
{
    void *p = NULL;
    if (!dptr || !pitch || width == 0 || height == 0 ||
        (element_bytes != 4 && element_bytes != 8 && element_bytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = (width + 511) & ~(size_t)511;
    if (height > SIZE_MAX / row)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = sim_alloc_new(&p, row * height, 0);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)(uintptr_t)p;
        *pitch = row;
    }
    return r;
}

/* Managed memory counts as device memory from the start: pages never
 * migrate in the simulator. */
SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    void *p = NULL;
    if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = sim_alloc_new(&p, bytesize, 0);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return sim_alloc_free((uintptr_t)dptr, 0);
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return sim_alloc_new(pp, bytesize, 1);
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    (void)flags;
    return sim_alloc_new(pp, bytesize, 1);
}

SIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    return sim_alloc_free((uintptr_t)p, 1);
}

/* Of the current context's device, everything counted (simgpu.h's DEVICE MEMORY). */
SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    struct CUctx_st *c = sim_current_ctx();
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&sim_lock);
    *total = (size_t)sim_cfg.mem_bytes;
    *free_bytes = (size_t)(sim_cfg.mem_bytes - sim_drv.mem[c->device].used);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* ---- modules, libraries, functions ---- */

static struct CUmod_st *sim_module_new(void)
{
    /* malloc, not calloc, which never takes a chunk just freed: handles come
     * back as a real driver's do */
    struct CUmod_st *m = malloc(sizeof(*m));
    if (m)
        *m = (struct CUmod_st){ .magic = SIM_MAGIC_MODULE };
    return m;
}

static CUresult sim_module_load(CUmodule *module, const void *image)
{
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_current_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    *module = sim_module_new();
    return *module ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return sim_module_load(module, image);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int nopts,
                                       CUjit_option *opts, void **values)
{
    (void)nopts;
    (void)opts;
    (void)values;
    return sim_module_load(module, image);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatbin)
{
    return sim_module_load(module, fatbin);
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    close(fd);
    return sim_module_load(module, fname);
}

/* The module and its functions are freed, so that their addresses come back
 * as other handles, as a real driver's do; their names are not: operations
 * still queued and captured graphs keep them. */
static CUresult sim_module_unload(struct CUmod_st *module)
{
    if (!module || module->magic != SIM_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    module->magic = SIM_MAGIC_DEAD;
    for (struct CUfunc_st *f = module->funcs, *next; f; f = next) {
        next = f->next;
        f->magic = SIM_MAGIC_DEAD;
        free(f);
    }
    pthread_mutex_unlock(&sim_lock);
    free(module);
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule module)
{
    return sim_module_unload(module);
}

static CUresult sim_func_find(struct CUfunc_st **out, struct CUmod_st *m, const char *name, size_t size)
{
    struct CUfunc_st *f;
    if (!out || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m || m->magic != SIM_MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    for (f = m->funcs; f && strcmp(f->name, name) != 0; f = f->next)
        ;
    if (!f && (f = malloc(size)) != NULL) {
        memset(f, 0, size);
        f->magic = SIM_MAGIC_FUNC;
        f->module = m;
        f->name = strdup(name);
        if (!f->name) {
            free(f);
            f = NULL;
        } else {
            f->next = m->funcs;
            m->funcs = f;
        }
    }
    pthread_mutex_unlock(&sim_lock);
    *out = f;
    return f ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    return sim_func_find(hfunc, hmod, name, sizeof(struct CUkern_st));
}

CUresult sim_impl_cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hfunc || hfunc->magic != SIM_MAGIC_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hfunc || hfunc->magic != SIM_MAGIC_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = sim_cfg.regs; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = sim_cfg.static_smem; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 90; break;
    default: *pi = 0; break;
    }
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)attrib;
    (void)value;
    return hfunc && hfunc->magic == SIM_MAGIC_FUNC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    (void)config;
    return hfunc && hfunc->magic == SIM_MAGIC_FUNC ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult sim_library_new(CUlibrary *library, const void *code)
{
    struct CUlib_st *l;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_drv.initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    l = malloc(sizeof(*l));
    if (!l || !(l->module = sim_module_new())) {
        free(l);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    l->magic = SIM_MAGIC_LIBRARY;
    *library = l;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit_opts,
                                      void **jit_values, unsigned int njit, CUlibraryOption *lib_opts,
                                      void **lib_values, unsigned int nlib)
{
    (void)jit_opts;
    (void)jit_values;
    (void)njit;
    (void)lib_opts;
    (void)lib_values;
    (void)nlib;
    return sim_library_new(library, code);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fname, CUjit_option *jit_opts,
                                          void **jit_values, unsigned int njit,
                                          CUlibraryOption *lib_opts, void **lib_values,
                                          unsigned int nlib)
{
    (void)jit_opts;
    (void)jit_values;
    (void)njit;
    (void)lib_opts;
    (void)lib_values;
    (void)nlib;
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    if (access(fname, R_OK) != 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    return sim_library_new(library, fname);
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    if (!library || library->magic != SIM_MAGIC_LIBRARY)
        return CUDA_ERROR_INVALID_HANDLE;
    library->magic = SIM_MAGIC_DEAD;
    CUresult r = sim_module_unload(library->module);
    free(library);
    return r;
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule *module, CUlibrary library)
{
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library || library->magic != SIM_MAGIC_LIBRARY)
        return CUDA_ERROR_INVALID_HANDLE;
    *module = library->module;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name)
{
    struct CUfunc_st *f = NULL;
    if (!kernel)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library || library->magic != SIM_MAGIC_LIBRARY)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = sim_func_find(&f, library->module, name, sizeof(struct CUkern_st));
    if (r == CUDA_SUCCESS)
        *kernel = (struct CUkern_st *)f;
    return r;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *func, CUkernel kernel)
{
    if (!func)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kernel || kernel->func.magic != SIM_MAGIC_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    *func = &kernel->func;
    return CUDA_SUCCESS;
}

CUresult sim_impl_cuKernelGetName(const char **name, CUkernel kernel)
{
    return sim_impl_cuFuncGetName(name, kernel ? &kernel->func : NULL);
}

SIM_EXPORT CUresult sim_func_set_ext(CUfunction func, const struct sim_ext_ops *ops)
{
    if (!ops)
        return CUDA_ERROR_INVALID_VALUE;
    if (!func || func->magic != SIM_MAGIC_FUNC)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    func->ext = ops;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* ---- errors ---- */

SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **str)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define SIM_ERROR_NAME(name, text) case name: *str = #name; return CUDA_SUCCESS;
    SIM_CU_ERRORS(SIM_ERROR_NAME)
#undef SIM_ERROR_NAME
    default:
        *str = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
#define SIM_ERROR_TEXT(name, text) case name: *str = text; return CUDA_SUCCESS;
    SIM_CU_ERRORS(SIM_ERROR_TEXT)
#undef SIM_ERROR_TEXT
    default:
        *str = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The CUDA runtime needs NVIDIA's private tables: the simulator has none. */
SIM_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    (void)id;
    if (table)
        *table = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}
