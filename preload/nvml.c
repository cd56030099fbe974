/* GPU counters measured by the driver: NVML's utilisation and, on Hopper and
 * newer, its GPM metrics (SM activity and occupancy, tensor and DRAM
 * activity, PCIe and NVLink throughput), sampled on the metrics thread for
 * the GPU this process uses and recorded as Series and Points beside the
 * kernel timeline. libnvidia-ml.so.1 is dlopen'd at the first tick that
 * finds CUDA in use, never linked; whatever is missing or refused costs one
 * notice, and the reporter falls back on the launch-geometry estimate. */
#include "preload/gpu.h"
#include "preload/nvml.h"
#include "preload/nvml_api.h"

#include <dlfcn.h>
#include <time.h>
#include <sys/prctl.h>
#include <signal.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>

/* NVML asks for the two GPM samples to be 100 ms apart or more ("GPM
 * Functions", nvmlGpmMetricsGet): a tick sooner than that after the last
 * sample takes none. The gap is measured between ticks, with 5% to spare,
 * so that the default 10 Hz ticks, 100 ms apart give or take their wake-up
 * jitter, each take one rather than every other. */
#define GPM_MIN_GAP_NS 95000000ull

static struct {
#define NV_FN(name) __typeof__(name) *name;
    NV_FN(nvmlInit_v2) NV_FN(nvmlShutdown) NV_FN(nvmlErrorString)
    NV_FN(nvmlDeviceGetHandleByUUID) NV_FN(nvmlDeviceGetHandleByPciBusId_v2)
    NV_FN(nvmlDeviceGetUtilizationRates) NV_FN(nvmlGpmQueryDeviceSupport)
    NV_FN(nvmlGpmSampleAlloc) NV_FN(nvmlGpmSampleFree) NV_FN(nvmlGpmSampleGet)
    NV_FN(nvmlGpmMetricsGet)
#undef NV_FN
} nv;

/* The GPM metrics recorded, each with its series kind and its scale to the
 * series' unit (percent to hundredths; MiB/s to bytes/s). */
static const struct {
    unsigned id;
    int kind;
    double scale;
} gpm_metrics[] = {
    { NVML_GPM_METRIC_SM_UTIL, RSF_SERIES_GPU_SM_ACTIVE, 100.0 },
    { NVML_GPM_METRIC_SM_OCCUPANCY, RSF_SERIES_GPU_SM_OCCUPANCY, 100.0 },
    { NVML_GPM_METRIC_ANY_TENSOR_UTIL, RSF_SERIES_GPU_TENSOR_ACTIVE, 100.0 },
    { NVML_GPM_METRIC_DRAM_BW_UTIL, RSF_SERIES_GPU_DRAM_ACTIVE, 100.0 },
    { NVML_GPM_METRIC_PCIE_TX_PER_SEC, RSF_SERIES_GPU_PCIE_TX, 1048576.0 },
    { NVML_GPM_METRIC_PCIE_RX_PER_SEC, RSF_SERIES_GPU_PCIE_RX, 1048576.0 },
    { NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, RSF_SERIES_GPU_NVLINK_TX, 1048576.0 },
    { NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, RSF_SERIES_GPU_NVLINK_RX, 1048576.0 },
};
#define NGPM (sizeof gpm_metrics / sizeof gpm_metrics[0])

/* What lives while the process runs: the library's state and the device's.
 * Only the metrics thread touches it (and a forked child, before its own). */
enum { NV_NONE, NV_READY, NV_OFF };
static int state;
static _Atomic int thread_started;   /* rs_nvml_start's thread */
static int own_fds_said;
static struct {
    int ordinal;                 /* CUDA ordinal; -1: none yet */
    nvmlDevice_t h;
    int util;                    /* utilisation sampled */
    int gpm;                     /* GPM sampled */
    nvmlGpmSample_t prev, next;  /* prev holds the last sample when have_prev */
    int have_prev;
    uint64_t prev_tick_ns;       /* the tick that took prev */
    uint32_t util_series;        /* 0: not defined yet */
    uint32_t gpm_series[NGPM];
    char name[16];               /* "gpu<ordinal>" */
} dev = { .ordinal = -1 };
static nvmlGpmMetricsGet_t mget; /* ~4 KiB: kept off the metrics thread's stack */

/* How the notices end: what is lost, what stands in for it. */
#define NO_NVML "GPU utilisation and SM activity are not measured (SM activity is estimated from launch geometry)"
#define NO_GPM "SM activity is estimated from launch geometry"

static const char *nv_error(nvmlReturn_t r)
{
    const char *s = nv.nvmlErrorString ? nv.nvmlErrorString(r) : NULL;
    return s ? s : "unknown NVML error";
}

/* Loads and starts NVML; 0, or -1 after a notice. */
static int nv_load(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        rs_notice("cannot load libnvidia-ml.so.1 (%s); " NO_NVML, dlerror());
        return -1;
    }
#define NV_SYM(name) nv.name = (__typeof__(nv.name))dlsym(h, #name)
    NV_SYM(nvmlInit_v2); NV_SYM(nvmlShutdown); NV_SYM(nvmlErrorString);
    NV_SYM(nvmlDeviceGetHandleByUUID); NV_SYM(nvmlDeviceGetHandleByPciBusId_v2);
    NV_SYM(nvmlDeviceGetUtilizationRates); NV_SYM(nvmlGpmQueryDeviceSupport);
    NV_SYM(nvmlGpmSampleAlloc); NV_SYM(nvmlGpmSampleFree); NV_SYM(nvmlGpmSampleGet);
    NV_SYM(nvmlGpmMetricsGet);
#undef NV_SYM
    if (!nv.nvmlInit_v2 || !nv.nvmlShutdown || !nv.nvmlDeviceGetUtilizationRates ||
        (!nv.nvmlDeviceGetHandleByUUID && !nv.nvmlDeviceGetHandleByPciBusId_v2)) {
        rs_notice("libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByUUID or "
                  "nvmlDeviceGetUtilizationRates; " NO_NVML);
        return -1;
    }
    nvmlReturn_t r = nv.nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        rs_notice("NVML does not start (nvmlInit_v2: %s); " NO_NVML, nv_error(r));
        return -1;
    }
    return 0;
}

/* Finds CUDA device `ordinal` in NVML, by UUID, else by PCI bus id (NVML's
 * indices are not CUDA's: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER renumber
 * the devices CUDA sees). 0, or -1 after a notice. */
static int nv_find(int ordinal)
{
    __typeof__(cuDeviceGet) *get = (__typeof__(get))rs_cuda_sym("cuDeviceGet");
    __typeof__(cuDeviceGetUuid) *get_uuid = (__typeof__(get_uuid))rs_cuda_sym("cuDeviceGetUuid_v2");
    if (!get_uuid)
        get_uuid = (__typeof__(get_uuid))rs_cuda_sym("cuDeviceGetUuid");
    __typeof__(cuDeviceGetPCIBusId) *get_pci = (__typeof__(get_pci))rs_cuda_sym("cuDeviceGetPCIBusId");
    CUdevice d = ordinal;
    if (get && get(&d, ordinal) != CUDA_SUCCESS)
        d = ordinal;
    char uuid[48] = "", pci[32] = "";
    CUuuid u;
    if (get_uuid && get_uuid(&u, d) == CUDA_SUCCESS) {
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(uuid, sizeof uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    }
    if (!get_pci || get_pci(pci, (int)sizeof pci, d) != CUDA_SUCCESS)
        pci[0] = 0;
    pci[sizeof pci - 1] = 0;
    nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
    if (uuid[0] && nv.nvmlDeviceGetHandleByUUID)
        r = nv.nvmlDeviceGetHandleByUUID(uuid, &dev.h);
    if (r != NVML_SUCCESS && pci[0] && nv.nvmlDeviceGetHandleByPciBusId_v2)
        r = nv.nvmlDeviceGetHandleByPciBusId_v2(pci, &dev.h);
    if (r != NVML_SUCCESS) {
        rs_notice("NVML does not find GPU %d (%s, %s: %s); " NO_NVML, ordinal, uuid[0] ? uuid : "no UUID",
                  pci[0] ? pci : "no PCI bus id", nv_error(r));
        return -1;
    }
    return 0;
}

/* Stops GPM on the device after a notice. */
static void gpm_off(const char *why, nvmlReturn_t r)
{
    rs_notice("GPU %d: %s (%s); " NO_GPM, dev.ordinal, why, nv_error(r));
    if (dev.prev)
        nv.nvmlGpmSampleFree(dev.prev);
    if (dev.next)
        nv.nvmlGpmSampleFree(dev.next);
    dev.prev = dev.next = NULL;
    dev.gpm = 0;
}

/* GPM on the device, if it has it: the two sample buffers. */
static void gpm_start(void)
{
    if (!nv.nvmlGpmQueryDeviceSupport || !nv.nvmlGpmSampleAlloc || !nv.nvmlGpmSampleFree ||
        !nv.nvmlGpmSampleGet || !nv.nvmlGpmMetricsGet) {
        rs_notice("GPU %d: libnvidia-ml.so.1 has no GPM functions; " NO_GPM, dev.ordinal);
        return;
    }
    dev.gpm = 1;
    nvmlGpmSupport_t s = { .version = NVML_GPM_SUPPORT_VERSION };
    nvmlReturn_t r = nv.nvmlGpmQueryDeviceSupport(dev.h, &s);
    if (r == NVML_SUCCESS && !s.isSupportedDevice)
        r = NVML_ERROR_NOT_SUPPORTED;
    if (r != NVML_SUCCESS)
        gpm_off("NVML has no GPM for it (Hopper and newer)", r);
    else if ((r = nv.nvmlGpmSampleAlloc(&dev.prev)) != NVML_SUCCESS ||
             (r = nv.nvmlGpmSampleAlloc(&dev.next)) != NVML_SUCCESS)
        gpm_off("cannot allocate NVML GPM samples", r);
}

/* A point of series *id (defined at its first point, so that a metric the
 * device never gives has no series). */
static void point(uint32_t *id, int kind, uint64_t ts, double value)
{
    if (!*id)
        *id = rs_series_define(kind, kind == RSF_SERIES_GPU_NVLINK_TX || kind == RSF_SERIES_GPU_NVLINK_RX
                                         ? RSF_LINK_NVLINK : RSF_LINK_NONE,
                               dev.name, dev.ordinal, 0);
    rs_series_point(*id, ts, value > 0 ? (uint64_t)(value + 0.5) : 0);
}

static void sample_util(void)
{
    nvmlUtilization_t u;
    nvmlReturn_t r = nv.nvmlDeviceGetUtilizationRates(dev.h, &u);
    uint64_t ts = rs_now();
    if (r != NVML_SUCCESS) {
        rs_notice("GPU %d: NVML gives no utilisation (%s); it is not measured", dev.ordinal, nv_error(r));
        dev.util = 0;
        return;
    }
    point(&dev.util_series, RSF_SERIES_GPU_UTIL, ts, u.gpu * 100.0);
}

static void sample_gpm(uint64_t now_ns)
{
    if (dev.have_prev && now_ns - dev.prev_tick_ns < GPM_MIN_GAP_NS)
        return;
    nvmlGpmSample_t s = dev.have_prev ? dev.next : dev.prev;
    nvmlReturn_t r = nv.nvmlGpmSampleGet(dev.h, s);
    uint64_t ts = rs_now();
    if (r != NVML_SUCCESS) {
        gpm_off("NVML refuses GPM samples", r);
        return;
    }
    if (!dev.have_prev) {
        dev.have_prev = 1;
        dev.prev_tick_ns = now_ns;
        return;
    }
    mget.version = NVML_GPM_METRICS_GET_VERSION;
    mget.numMetrics = NGPM;
    mget.sample1 = dev.prev;
    mget.sample2 = dev.next;
    for (unsigned i = 0; i < NGPM; i++)
        mget.metrics[i] = (nvmlGpmMetric_t){ .metricId = gpm_metrics[i].id };
    r = nv.nvmlGpmMetricsGet(&mget);
    if (r != NVML_SUCCESS) {
        gpm_off("NVML refuses GPM metrics", r);
        return;
    }
    for (unsigned i = 0; i < NGPM; i++)
        if (mget.metrics[i].nvmlReturn == NVML_SUCCESS)
            point(&dev.gpm_series[i], gpm_metrics[i].kind, ts, mget.metrics[i].value * gpm_metrics[i].scale);
    dev.next = dev.prev;
    dev.prev = s;
    dev.prev_tick_ns = now_ns;
}

/* The first tick with a GPU: NVML, the device, what it gives. */
static void nv_start(int ordinal)
{
    dev.ordinal = ordinal;
    snprintf(dev.name, sizeof dev.name, "gpu%d", ordinal);
    if (nv_load() != 0) {
        state = NV_OFF;
        return;
    }
    if (nv_find(ordinal) != 0) {
        nv.nvmlShutdown();
        state = NV_OFF;
        return;
    }
    dev.util = 1;
    gpm_start();
    state = NV_READY;
}

void rs_nvml_tick(uint64_t now_ns)
{
    /* the timing pool's device, else the first one a launch described
     * (RINGSIDE_GPU_TIMING=none has no pool) */
    int device = rs_gpu_device >= 0 ? rs_gpu_device : rs_gpu_first_device();
    if (state == NV_OFF || (state == NV_NONE && (device < 0 || rs_cuda_ready() != 1)))
        return;
    /* NVML opens the driver's device files and keeps them, with the rest of
     * its state, for the whole process: opened in a private fd table, they
     * would be wrong numbers for the program's own NVML calls. */
    if (rs_own_fds) {
        if (!own_fds_said)
            rs_debug("nvml: the calling thread has its own fd table; NVML is not used from it");
        own_fds_said = 1;
        return;
    }
    int saved = errno;
    if (state == NV_NONE)
        nv_start(device);
    if (state == NV_READY) {
        if (dev.util)
            sample_util();
        if (dev.gpm)
            sample_gpm(now_ns);
        if (!dev.util && !dev.gpm) {
            nv.nvmlShutdown();
            state = NV_OFF;
        }
    }
    errno = saved;
}

void rs_nvml_forked(void)
{
    atomic_store(&thread_started, 0);
    int had_gpu = state != NV_NONE || rs_gpu_device >= 0 || rs_gpu_first_device() >= 0;
    dev.ordinal = -1;
    dev.h = NULL;
    dev.util = dev.gpm = dev.have_prev = 0;
    dev.prev = dev.next = NULL;
    dev.util_series = 0;
    for (unsigned i = 0; i < NGPM; i++)
        dev.gpm_series[i] = 0;
    state = had_gpu ? NV_OFF : NV_NONE;
}

/* ---- the sampling thread ----
 * NVML must run in the program's fd table (see rs_nvml_tick), which the
 * node sampler (metrics.c) has left: the program thread whose launch first
 * describes a device starts this thread, which shares the table. */


static void *nvml_main(void *arg)
{
    (void)arg;
    rs_th.guard = 1; /* NVML's own calls are the agent's, never recorded */
    prctl(PR_SET_NAME, "ringside-gpu", 0, 0, 0);
    uint64_t period = 1000000000ull / (uint64_t)rs_cfg.metrics_hz;
    struct timespec ts = { (time_t)(period / 1000000000ull), (long)(period % 1000000000ull) };
    while (atomic_load(&rs_hot.on) && state != NV_OFF) {
        rs_nvml_tick(rs_now());
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void rs_nvml_start(void)
{
    if (rs_cfg.metrics_hz <= 0 || atomic_load(&thread_started) || rs_own_fds)
        return;
    int device = rs_gpu_device >= 0 ? rs_gpu_device : rs_gpu_first_device();
    if (device < 0 || rs_cuda_ready() != 1 || atomic_exchange(&thread_started, 1))
        return;
    pthread_t t;
    if (rs_thread_start(&t, nvml_main, NULL, 256u << 10) != 0)
        rs_debug("nvml: cannot start the sampling thread");
}
