/* GPU counters measured by the driver through NVML (nvml.c): the calls the
 * agent makes (the metrics thread, metrics.c, and gpuinfo.c). The NVML API
 * subset nvml.c calls is declared apart, in nvml_api.h. */
#ifndef RS_NVML_H
#define RS_NVML_H

#include <stdint.h>

/* Samples the GPU this process uses (the device of its CUDA context,
 * rs_gpu_device), when it uses one, and records its counters as Series and
 * Points (agent.h: kinds gpu_util, and with GPM gpu_sm_active,
 * gpu_sm_occupancy, gpu_tensor_active, gpu_dram_active, gpu_pcie_tx/rx,
 * gpu_nvlink_tx/rx; name "gpu<ordinal>"). A cheap no-op in a process without
 * CUDA. The first tick that finds CUDA in use loads libnvidia-ml.so.1; what
 * is missing or refused (the library, its init, the device, GPM) is said in
 * one notice and not tried again. Called from one thread only (the metrics
 * thread), which holds rs_th.guard; now_ns is the tick's CLOCK_MONOTONIC
 * time. The thread must share the program's fd table: NVML keeps the device
 * files it opens for the whole process, and the CUDA driver's are there; a
 * thread with its own table (rs_own_fds) samples nothing. Never changes
 * errno, takes no lock of the agent's own. */
void rs_nvml_tick(uint64_t now_ns);

/* In a forked child, before its first tick: forgets the parent's handles and
 * series (the child writes a new file). A child of a process that had a GPU
 * samples nothing: the GPU is the parent's, and CUDA does not work in such a
 * child. */
void rs_nvml_forked(void);

/* Starts the thread that calls rs_nvml_tick at RINGSIDE_METRICS_HZ, once,
 * when this process has a GPU; called on the program thread whose launch
 * first described a device (gpuinfo.c), in the program's fd table. */
void rs_nvml_start(void);

#endif
