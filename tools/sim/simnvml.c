/* The tests' stand-in for libnvidia-ml.so.1 (build/sim, beside the simulated
 * libcuda.so.1): the subset of NVML the agent calls (preload/nvml_api.h),
 * answered from the simulated GPU's own model, simgpu_activity() in the
 * simulated libcuda, so that what the agent records can be held against the
 * simulator's truth.
 *
 *   utilisation   the share of time some operation ran on the device since
 *                 this process's previous call for it (the first call: over
 *                 the last second), in whole percent; memory 0
 *   GPM           a sample holds its time; the metrics between two samples
 *                 are the model's integrals over that time divided by it:
 *                 SM_UTIL (share of SMs holding a block), SM_OCCUPANCY (share
 *                 of warp slots in use), in percent; tensor, DRAM, PCIe and
 *                 NVLink read 0; any other metric NVML_ERROR_NOT_SUPPORTED
 *   devices       those the simulated libcuda has, known by the identity it
 *                 gives them: UUID bytes 0x5a + i (i < 15), then the ordinal;
 *                 PCI bus id 00000000:<0x10 + ordinal>:00.0
 *
 * ENVIRONMENT (read at nvmlInit_v2)
 *   SIMNVML_FAIL_INIT=1  nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *   SIMNVML_GPM=0        no device supports GPM
 *   SIMNVML_DENY=1       GPM is supported, but samples are refused
 *                        (NVML_ERROR_NO_PERMISSION), as where profiling is
 *                        kept to administrators */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "preload/nvml_api.h"

#define SIM_NVML_EXPORT __attribute__((visibility("default")))
#define SIM_NVML_DEVICES 256

/* The simulated libcuda's model (tools/simgpu_*.c): over [t0, t1) on
 * CLOCK_MONOTONIC, the ns some operation ran, and the time integrals of the
 * share of SMs holding a block (concurrent kernels summed, capped at 1) and of
 * the share of warp slots in use. 0, or -1 when there is no such device. */
struct simgpu_activity {
    uint64_t busy_ns;
    double sm_active_ns;
    double sm_occupancy_ns;
};
int simgpu_activity(int device, uint64_t t0_ns, uint64_t t1_ns, struct simgpu_activity *out);

struct nvmlDevice_st {
    int ordinal;
    uint64_t util_ns;            /* time of the previous utilisation call; 0: none */
};

struct nvmlGpmSample_st {
    int ordinal;                 /* -1: not filled */
    uint64_t t_ns;
};

static struct {
    int inits;
    int gpm, deny;
    __typeof__(simgpu_activity) *activity;
    struct nvmlDevice_st dev[SIM_NVML_DEVICES];
} sim_nvml;

static uint64_t sim_nvml_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sim_nvml_env(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* The model of the simulated libcuda, wherever the program loaded it. */
static __typeof__(simgpu_activity) *sim_nvml_model(void)
{
    void *p = dlsym(RTLD_DEFAULT, "simgpu_activity");
    if (!p) {
        void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
        p = h ? dlsym(h, "simgpu_activity") : NULL;
    }
    return (__typeof__(simgpu_activity) *)p;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    if (sim_nvml_env("SIMNVML_FAIL_INIT", 0))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    if (!sim_nvml.activity)
        sim_nvml.activity = sim_nvml_model();
    if (!sim_nvml.activity)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    sim_nvml.gpm = sim_nvml_env("SIMNVML_GPM", 1) != 0;
    sim_nvml.deny = sim_nvml_env("SIMNVML_DENY", 0) != 0;
    sim_nvml.inits++;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (sim_nvml.inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    sim_nvml.inits--;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

/* Handle of simulated device `ordinal` (NULL: no such device). */
static struct nvmlDevice_st *sim_nvml_device(long ordinal)
{
    struct simgpu_activity a;
    if (ordinal < 0 || ordinal >= SIM_NVML_DEVICES || sim_nvml.activity((int)ordinal, 0, 0, &a) != 0)
        return NULL;
    sim_nvml.dev[ordinal].ordinal = (int)ordinal;
    return &sim_nvml.dev[ordinal];
}

static nvmlReturn_t sim_nvml_give(struct nvmlDevice_st *d, nvmlDevice_t *device)
{
    if (!d)
        return NVML_ERROR_NOT_FOUND;
    *device = d;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    /* "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits */
    unsigned char b[16];
    const char *p = uuid;
    if (strncmp(p, "GPU-", 4) != 0)
        return NVML_ERROR_NOT_FOUND;
    p += 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (*p++ != '-')
                return NVML_ERROR_NOT_FOUND;
        }
        unsigned v;
        if (sscanf(p, "%2x", &v) != 1 || !p[0] || !p[1])
            return NVML_ERROR_NOT_FOUND;
        b[i] = (unsigned char)v;
        p += 2;
    }
    if (*p)
        return NVML_ERROR_NOT_FOUND;
    for (int i = 0; i < 15; i++)
        if (b[i] != 0x5a + i)
            return NVML_ERROR_NOT_FOUND;
    return sim_nvml_give(sim_nvml_device(b[15]), device);
}

/* "domain:bus:device.function", "domain:bus:device" or "bus:device.function",
 * in hex, as nvmlDeviceGetHandleByPciBusId_v2 takes them. 0, or -1. */
static int sim_nvml_pci_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dv, unsigned *fn)
{
    int n = 0;
    *dom = *fn = 0;
    if (sscanf(s, "%x:%x:%x.%x%n", dom, bus, dv, fn, &n) == 4 && !s[n])
        return 0;
    n = 0;
    *fn = 0;
    if (sscanf(s, "%x:%x:%x%n", dom, bus, dv, &n) == 3 && !s[n])
        return 0;
    n = 0;
    *dom = 0;
    if (sscanf(s, "%x:%x.%x%n", bus, dv, fn, &n) == 3 && !s[n])
        return 0;
    return -1;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned dom, bus, dv, fn;
    if (sim_nvml_pci_parse(pciBusId, &dom, &bus, &dv, &fn) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (dom != 0 || dv != 0 || fn != 0 || bus < 0x10)
        return NVML_ERROR_NOT_FOUND;
    return sim_nvml_give(sim_nvml_device((long)bus - 0x10), device);
}

SIM_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || !utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t now = sim_nvml_now();
    uint64_t t0 = device->util_ns ? device->util_ns : now - 1000000000u;
    struct simgpu_activity a;
    if (now <= t0 || sim_nvml.activity(device->ordinal, t0, now, &a) != 0)
        return NVML_ERROR_UNKNOWN;
    device->util_ns = now;
    utilization->gpu = (unsigned)(100.0 * (double)a.busy_ns / (double)(now - t0) + 0.5);
    utilization->memory = 0;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || !gpmSupport || gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_INVALID_ARGUMENT;
    gpmSupport->isSupportedDevice = (unsigned)sim_nvml.gpm;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct nvmlGpmSample_st *s = malloc(sizeof *s);
    if (!s)
        return NVML_ERROR_UNKNOWN;
    s->ordinal = -1;
    *gpmSample = s;
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample)
{
    if (!gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(gpmSample);
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || !gpmSample)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!sim_nvml.gpm)
        return NVML_ERROR_NOT_SUPPORTED;
    if (sim_nvml.deny)
        return NVML_ERROR_NO_PERMISSION;
    gpmSample->ordinal = device->ordinal;
    gpmSample->t_ns = sim_nvml_now();
    return NVML_SUCCESS;
}

SIM_NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m)
{
    if (!sim_nvml.inits)
        return NVML_ERROR_UNINITIALIZED;
    if (!m || m->version != NVML_GPM_METRICS_GET_VERSION || m->numMetrics > NVML_GPM_METRIC_MAX ||
        !m->sample1 || !m->sample2 || m->sample1->ordinal < 0 ||
        m->sample1->ordinal != m->sample2->ordinal || m->sample2->t_ns <= m->sample1->t_ns)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t t0 = m->sample1->t_ns, t1 = m->sample2->t_ns;
    struct simgpu_activity a;
    if (sim_nvml.activity(m->sample1->ordinal, t0, t1, &a) != 0)
        return NVML_ERROR_UNKNOWN;
    double span = (double)(t1 - t0);
    for (unsigned i = 0; i < m->numMetrics; i++) {
        nvmlGpmMetric_t *g = &m->metrics[i];
        g->nvmlReturn = NVML_SUCCESS;
        g->metricInfo.shortName = g->metricInfo.longName = g->metricInfo.unit = NULL;
        switch (g->metricId) {
        case NVML_GPM_METRIC_SM_UTIL: g->value = 100.0 * a.sm_active_ns / span; break;
        case NVML_GPM_METRIC_SM_OCCUPANCY: g->value = 100.0 * a.sm_occupancy_ns / span; break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: g->value = 0; break;
        default:
            g->value = 0;
            g->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}
