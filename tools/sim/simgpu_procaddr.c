/* cuGetProcAddress for the simulated driver: the way the CUDA runtime (and so
 * PyTorch, NCCL, Triton) reaches the driver. A base name and the caller's CUDA
 * version pick the newest ABI variant that version knows (cuMemAlloc -> _v2,
 * cuCtxCreate -> _v4 ...); the per-thread-default-stream flag picks the _ptsz/_ptds
 * variant where one exists; symbolStatus is always filled. Variants newer than the
 * driver version played (SIMGPU_DRIVER_VERSION) are not there at all. */
#include <string.h>
#include "tools/sim/simgpu_internal.h"

struct sim_proc {
    const char *name;
    int version;       /* the CUDA version that introduced this variant */
    void *fn;          /* the legacy-stream variant */
    void *fn_ptds;     /* the per-thread default stream variant, or NULL */
};

/* X(name, version, function, per-thread function or NULL); for each name the
 * newest variant first. */
#define SIM_PROCS(X)                                                                        \
    X("cuInit", 2000, cuInit, NULL)                                                         \
    X("cuDriverGetVersion", 2020, cuDriverGetVersion, NULL)                                 \
    X("cuGetErrorName", 6000, cuGetErrorName, NULL)                                         \
    X("cuGetErrorString", 6000, cuGetErrorString, NULL)                                     \
    X("cuGetProcAddress", 12000, cuGetProcAddress_v2, NULL)                                 \
    X("cuGetProcAddress", 11030, cuGetProcAddress, NULL)                                    \
    X("cuGetExportTable", 3000, cuGetExportTable, NULL)                                     \
    X("cuDeviceGet", 2000, cuDeviceGet, NULL)                                               \
    X("cuDeviceGetCount", 2000, cuDeviceGetCount, NULL)                                     \
    X("cuDeviceGetName", 2000, cuDeviceGetName, NULL)                                       \
    X("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute, NULL)                             \
    X("cuDeviceComputeCapability", 2000, cuDeviceComputeCapability, NULL)                   \
    X("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2, NULL)                                  \
    X("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2, NULL)                                   \
    X("cuDeviceGetUuid", 9020, cuDeviceGetUuid, NULL)                                       \
    X("cuDeviceGetPCIBusId", 4010, cuDeviceGetPCIBusId, NULL)                               \
    X("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain, NULL)                     \
    X("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2, NULL)               \
    X("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease, NULL)                   \
    X("cuDevicePrimaryCtxGetState", 7000, cuDevicePrimaryCtxGetState, NULL)                 \
    X("cuDevicePrimaryCtxSetFlags", 11000, cuDevicePrimaryCtxSetFlags_v2, NULL)             \
    X("cuDevicePrimaryCtxSetFlags", 7000, cuDevicePrimaryCtxSetFlags, NULL)                 \
    X("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2, NULL)                   \
    X("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset, NULL)                       \
    X("cuCtxCreate", 12050, sim_impl_cuCtxCreate_v4, NULL)                                           \
    X("cuCtxCreate", 11040, cuCtxCreate_v3, NULL)                                           \
    X("cuCtxCreate", 3020, cuCtxCreate_v2, NULL)                                            \
    X("cuCtxCreate", 2000, cuCtxCreate, NULL)                                               \
    X("cuCtxDestroy", 4000, cuCtxDestroy_v2, NULL)                                          \
    X("cuCtxDestroy", 2000, cuCtxDestroy, NULL)                                             \
    X("cuCtxSetCurrent", 4000, cuCtxSetCurrent, NULL)                                       \
    X("cuCtxGetCurrent", 4000, cuCtxGetCurrent, NULL)                                       \
    X("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2, NULL)                                  \
    X("cuCtxPushCurrent", 2000, cuCtxPushCurrent, NULL)                                     \
    X("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2, NULL)                                    \
    X("cuCtxPopCurrent", 2000, cuCtxPopCurrent, NULL)                                       \
    X("cuCtxGetDevice", 2000, cuCtxGetDevice, NULL)                                         \
    X("cuCtxGetFlags", 7000, cuCtxGetFlags, NULL)                                           \
    X("cuCtxGetApiVersion", 3020, cuCtxGetApiVersion, NULL)                                 \
    X("cuCtxGetStreamPriorityRange", 5050, cuCtxGetStreamPriorityRange, NULL)               \
    X("cuCtxSynchronize", 2000, cuCtxSynchronize, NULL)                                     \
    X("cuMemAlloc", 3020, cuMemAlloc_v2, NULL)                                              \
    X("cuMemFree", 3020, cuMemFree_v2, NULL)                                                \
    X("cuMemAllocPitch", 3020, cuMemAllocPitch_v2, NULL)                                    \
    X("cuMemAllocManaged", 6000, cuMemAllocManaged, NULL)                                   \
    X("cuMemAllocHost", 3020, cuMemAllocHost_v2, NULL)                                      \
    X("cuMemHostAlloc", 2020, cuMemHostAlloc, NULL)                                         \
    X("cuMemFreeHost", 2000, cuMemFreeHost, NULL)                                           \
    X("cuMemGetInfo", 3020, cuMemGetInfo_v2, NULL)                                          \
    X("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz)                     \
    X("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz) \
    X("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz)                        \
    X("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool, NULL)                  \
    X("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity, NULL)          \
    X("cuMemAddressReserve", 10020, cuMemAddressReserve, NULL)                              \
    X("cuMemAddressFree", 10020, cuMemAddressFree, NULL)                                    \
    X("cuMemCreate", 10020, cuMemCreate, NULL)                                              \
    X("cuMemRelease", 10020, cuMemRelease, NULL)                                            \
    X("cuMemMap", 10020, cuMemMap, NULL)                                                    \
    X("cuMemUnmap", 10020, cuMemUnmap, NULL)                                                \
    X("cuMemSetAccess", 10020, cuMemSetAccess, NULL)                                        \
    X("cuPointerGetAttribute", 4000, cuPointerGetAttribute, NULL)                           \
    X("cuModuleLoad", 2000, cuModuleLoad, NULL)                                             \
    X("cuModuleLoadData", 2000, cuModuleLoadData, NULL)                                     \
    X("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx, NULL)                                 \
    X("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary, NULL)                           \
    X("cuModuleUnload", 2000, cuModuleUnload, NULL)                                         \
    X("cuModuleGetFunction", 2000, cuModuleGetFunction, NULL)                               \
    X("cuFuncGetName", 12030, sim_impl_cuFuncGetName, NULL)                                          \
    X("cuFuncGetAttribute", 2020, cuFuncGetAttribute, NULL)                                 \
    X("cuFuncSetAttribute", 9000, cuFuncSetAttribute, NULL)                                 \
    X("cuFuncSetCacheConfig", 3000, cuFuncSetCacheConfig, NULL)                             \
    X("cuLibraryLoadData", 12000, cuLibraryLoadData, NULL)                                  \
    X("cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile, NULL)                          \
    X("cuLibraryUnload", 12000, cuLibraryUnload, NULL)                                      \
    X("cuLibraryGetKernel", 12000, cuLibraryGetKernel, NULL)                                \
    X("cuLibraryGetModule", 12000, cuLibraryGetModule, NULL)                                \
    X("cuKernelGetFunction", 12000, cuKernelGetFunction, NULL)                              \
    X("cuKernelGetName", 12030, sim_impl_cuKernelGetName, NULL)                                      \
    X("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz)                          \
    X("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz)                   \
    X("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz) \
    X("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds)                                            \
    X("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz)                             \
    X("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds)                          \
    X("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds)                          \
    X("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds)                          \
    X("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz)           \
    X("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz)           \
    X("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz)           \
    X("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds)                                \
    X("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds)                             \
    X("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds)                             \
    X("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz)                       \
    X("cuMemsetD2D8", 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds)                          \
    X("cuMemsetD2D16", 3020, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds)                       \
    X("cuMemsetD2D32", 3020, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds)                       \
    X("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz)                 \
    X("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz)              \
    X("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz)              \
    X("cuMemcpy3DPeer", 4000, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds)                          \
    X("cuMemcpy3DPeerAsync", 4000, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz)           \
    X("cuMemsetD16Async", 3020, cuMemsetD16Async, cuMemsetD16Async_ptsz)                    \
    X("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz)                    \
    X("cuStreamCreate", 2000, cuStreamCreate, NULL)                                         \
    X("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority, NULL)                 \
    X("cuStreamDestroy", 4000, cuStreamDestroy_v2, NULL)                                    \
    X("cuStreamDestroy", 2000, cuStreamDestroy, NULL)                                       \
    X("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz)           \
    X("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz)                             \
    X("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz)                 \
    X("cuStreamGetId", 12000, cuStreamGetId, cuStreamGetId_ptsz)                            \
    X("cuStreamGetFlags", 5050, cuStreamGetFlags, cuStreamGetFlags_ptsz)                    \
    X("cuStreamGetPriority", 5050, cuStreamGetPriority, cuStreamGetPriority_ptsz)           \
    X("cuStreamGetCtx", 9020, cuStreamGetCtx, cuStreamGetCtx_ptsz)                          \
    X("cuStreamGetDevice", 12080, sim_impl_cuStreamGetDevice, sim_impl_cuStreamGetDevice_ptsz)                \
    X("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz) \
    X("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz)       \
    X("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz)             \
    X("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz)          \
    X("cuStreamGetCaptureInfo", 12030, sim_impl_cuStreamGetCaptureInfo_v3, sim_impl_cuStreamGetCaptureInfo_v3_ptsz) \
    X("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz) \
    X("cuGraphCreate", 10000, cuGraphCreate, NULL)                                          \
    X("cuGraphDestroy", 10000, cuGraphDestroy, NULL)                                        \
    X("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags, NULL)                       \
    X("cuGraphInstantiate", 11000, cuGraphInstantiate_v2, NULL)                             \
    X("cuGraphInstantiate", 10000, cuGraphInstantiate, NULL)                                \
    X("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags, NULL)              \
    X("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz) \
    X("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz)                            \
    X("cuGraphUpload", 11010, cuGraphUpload, cuGraphUpload_ptsz)                            \
    X("cuGraphExecDestroy", 10000, cuGraphExecDestroy, NULL)                                \
    X("cuGraphExecUpdate", 12000, cuGraphExecUpdate_v2, NULL)                               \
    X("cuGraphClone", 10000, cuGraphClone, NULL)                                            \
    X("cuGraphGetNodes", 10000, cuGraphGetNodes, NULL)                                      \
    X("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode, NULL)  \
    X("cuEventCreate", 2000, cuEventCreate, NULL)                                           \
    X("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz)                             \
    X("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz) \
    X("cuEventQuery", 2000, cuEventQuery, NULL)                                             \
    X("cuEventSynchronize", 2000, cuEventSynchronize, NULL)                                 \
    X("cuEventElapsedTime", 12080, sim_impl_cuEventElapsedTime_v2, NULL)                             \
    X("cuEventElapsedTime", 2000, cuEventElapsedTime, NULL)                                 \
    X("cuEventDestroy", 4000, cuEventDestroy_v2, NULL)                                      \
    X("cuEventDestroy", 2000, cuEventDestroy, NULL)

#define SIM_PROC_ENTRY(name, version, fn, fn_ptds) { name, version, (void *)fn, (void *)fn_ptds },
static const struct sim_proc sim_procs[] = { SIM_PROCS(SIM_PROC_ENTRY) };
#undef SIM_PROC_ENTRY

static CUresult sim_proc_find(const char *symbol, void **pfn, int version, cuuint64_t flags,
                              CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn) {
        if (status)
            *status = st;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = NULL;
    for (size_t i = 0; i < sizeof(sim_procs) / sizeof(sim_procs[0]); i++) {
        const struct sim_proc *p = &sim_procs[i];
        /* an entry point newer than the driver played does not exist */
        if (strcmp(p->name, symbol) != 0 || p->version > sim_driver_version())
            continue;
        if (p->version > version) {
            st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            continue;
        }
        *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && p->fn_ptds ? p->fn_ptds : p->fn;
        st = CU_GET_PROC_ADDRESS_SUCCESS;
        break;
    }
    if (status)
        *status = st;
    return st == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    return sim_proc_find(symbol, pfn, cudaVersion, flags, symbolStatus);
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return sim_proc_find(symbol, pfn, cudaVersion, flags, NULL);
}
