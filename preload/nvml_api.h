/* The subset of NVML's C API that nvml.c calls and tools/sim/simnvml.c, the
 * tests' stand-in libnvidia-ml.so.1, implements. No nvml.h is packaged here,
 * so the subset is declared below, once, from NVIDIA's documented API; where
 * each value was checked is said beside it. */
#ifndef RS_NVML_API_H
#define RS_NVML_API_H

#include <stddef.h>

/* Checked against nvml.h of NVML 12.2.140 as NVIDIA's go-nvml carries it
 * (github.com/NVIDIA/go-nvml, gen/nvml/nvml.h, commit 075f45fd) and the NVML
 * API Reference (docs.nvidia.com/deploy/nvml-api, "GPM Functions", "GPM
 * Structs"); the error numbers also against NCCL's and CUDA.jl's copies. */

/* nvmlReturn_t: enum nvmlReturn_enum (an int). Values: go-nvml nvml.h. */
typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_UNKNOWN 999

typedef struct nvmlDevice_st *nvmlDevice_t;

/* "Percent of time over the past sample period during which one or more
 * kernels was executing on the GPU" (gpu); the period is NVML's own, "between
 * 1 second and 1/6 second, depending on the product". */
typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* GPM (Hopper and newer): two samples, then the metrics between them. The
 * versions are plain 1, not NVML_STRUCT_VERSION(...) (go-nvml nvml.h:
 * "#define NVML_GPM_METRICS_GET_VERSION 1", "#define
 * NVML_GPM_SUPPORT_VERSION 1"). */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

/* nvmlGpmMetricId_t (go-nvml nvml.h). SM_UTIL is "Percentage of SMs that
 * were busy" (DCGM's SM_ACTIVE); the others in 0.0 - 100.0, except the
 * PER_SEC ones, which are MiB/s. NVLink RX (60) comes before TX (61). */
#define NVML_GPM_METRIC_SM_UTIL 2
#define NVML_GPM_METRIC_SM_OCCUPANCY 3
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5
#define NVML_GPM_METRIC_DRAM_BW_UTIL 10
#define NVML_GPM_METRIC_PCIE_TX_PER_SEC 20
#define NVML_GPM_METRIC_PCIE_RX_PER_SEC 21
#define NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC 60
#define NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC 61
/* The array length of nvmlGpmMetricsGet_t in that header; the library reads
 * and writes numMetrics entries of it. */
#define NVML_GPM_METRIC_MAX 98

typedef struct {
    unsigned int metricId;     /* IN */
    nvmlReturn_t nvmlReturn;   /* OUT: nonzero: value is not valid */
    double value;              /* OUT */
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;              /* OUT: may be NULL */
} nvmlGpmMetric_t;

typedef struct {
    unsigned int version;      /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;   /* the earlier sample */
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1

typedef struct {
    unsigned int version;      /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1

/* Layouts on LP64, derived by hand from the go-nvml header's declarations. */
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t layout");
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8, "nvmlGpmMetric_t.value");
_Static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == 16, "nvmlGpmMetric_t.metricInfo");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8, "nvmlGpmMetricsGet_t.sample1");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample2) == 16, "nvmlGpmMetricsGet_t.sample2");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "nvmlGpmMetricsGet_t.metrics");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 98 * 40, "nvmlGpmMetricsGet_t layout");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t layout");

/* The functions, as nvml.h declares them (nvmlInit is #defined to
 * nvmlInit_v2 there; GetHandleByUUID takes "GPU-xxxxxxxx-xxxx-xxxx-xxxx-
 * xxxxxxxxxxxx", the 16 bytes of cuDeviceGetUuid in order; GetHandleByPciBusId_v2
 * takes "domain:bus:device.function" in hex, as cuDeviceGetPCIBusId gives it). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet);

#endif
