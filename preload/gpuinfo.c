/* What the reporter needs to tell how much of the GPU a kernel used: each
 * launched function's attributes (registers, shared memory, its own block
 * limit) once per function, and each device's limits once per device, as
 * FUNC and DEVICE records (agent.h) on the thread that first launched it.
 * The launch's own geometry travels in its KERNEL record (hook_cuda.c). */
#include "preload/gpu.h"
#include "preload/nvml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static _Atomic uint32_t next_func;
static _Atomic uint64_t described;   /* devices 0..63 already described */
static _Atomic int first_device = -1;

static int dev_attr(CUdevice dev, CUdevice_attribute a)
{
    int v = 0;
    if (!rs_cu.device_get_attribute || rs_cu.device_get_attribute(&v, a, dev) != CUDA_SUCCESS)
        return 0;
    return v < 0 ? 0 : v;
}

static void device_describe(CUdevice dev)
{
    if (dev < 0 || dev >= 64)
        return;
    uint64_t bit = 1ull << dev;
    if (atomic_fetch_or(&described, bit) & bit)
        return;
    int none = -1;
    atomic_compare_exchange_strong(&first_device, &none, dev);
    struct rs_rec_device *r = rs_reserve(sizeof *r, RS_REC_DEVICE);
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_DEVICE, 0, 0 };
    r->d = (struct rsf_device){
        .ordinal = dev,
        .cc_major = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        .cc_minor = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        .sm_count = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        .max_threads_per_sm = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
        .max_blocks_per_sm = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
        .regs_per_sm = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
        .smem_per_sm = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        .max_threads_per_block = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        .regs_per_block = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
        .smem_per_block_optin = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        .smem_reserved_per_block = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK),
        .warp_size = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
        .clock_khz = (uint32_t)dev_attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
    };
    if (rs_cu.device_get_name && rs_cu.device_get_name(r->name, (int)sizeof r->name, dev) != CUDA_SUCCESS)
        r->name[0] = 0;
    r->name[sizeof r->name - 1] = 0;
    CUuuid u;
    if (rs_cu.device_get_uuid && rs_cu.device_get_uuid(&u, dev) == CUDA_SUCCESS) {
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(r->uuid, sizeof r->uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    }
    if (rs_cu.device_get_pci_bus_id &&
        rs_cu.device_get_pci_bus_id(r->pci, (int)sizeof r->pci, dev) != CUDA_SUCCESS)
        r->pci[0] = 0;
    r->pci[sizeof r->pci - 1] = 0;
    rs_commit(sizeof *r);
    /* this process uses a GPU: NVML's sampler starts, from this program
     * thread, whose fd table the driver's files are in */
    rs_nvml_start();
}

static int func_attr(CUfunction f, CUdevice dev, CUfunction_attribute a)
{
    int v = 0;
    if (rs_cu.func_get_attribute && rs_cu.func_get_attribute(&v, a, f) == CUDA_SUCCESS)
        return v < 0 ? 0 : v;
    /* a CUkernel (cuLibraryGetKernel) launched as a function */
    v = 0;
    if (rs_cu.kernel_get_attribute && dev >= 0 &&
        rs_cu.kernel_get_attribute(&v, a, (CUkernel)f, dev) == CUDA_SUCCESS)
        return v < 0 ? 0 : v;
    return 0;
}

static uint16_t u16(int v)
{
    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

uint32_t rs_func_describe(CUfunction f, const char *name)
{
    CUdevice dev = -1;
    if (!rs_cu.ctx_get_device || rs_cu.ctx_get_device(&dev) != CUDA_SUCCESS)
        dev = rs_gpu_device >= 0 ? rs_gpu_device : -1;
    device_describe(dev);
    struct rs_rec_func *r = rs_reserve(sizeof *r, RS_REC_FUNC);
    if (!r)
        return 0;
    uint32_t id = atomic_fetch_add(&next_func, 1) + 1;
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_FUNC, 0, id };
    r->name_ptr = name;
    r->f = (struct rsf_function){
        .id = id,
        .static_smem = (uint32_t)func_attr(f, dev, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        .local_bytes = (uint32_t)func_attr(f, dev, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        .max_threads = u16(func_attr(f, dev, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)),
        .regs = u16(func_attr(f, dev, CU_FUNC_ATTRIBUTE_NUM_REGS)),
        .device = (int16_t)dev,
        .binary_version = u16(func_attr(f, dev, CU_FUNC_ATTRIBUTE_BINARY_VERSION)),
    };
    rs_commit(sizeof *r);
    return id;
}

void rs_gpu_device_seen(int dev)
{
    device_describe(dev);
}

int rs_gpu_first_device(void)
{
    return atomic_load(&first_device);
}

void rs_gpuinfo_forked(void)
{
    /* the child's file has none of the parent's descriptions */
    atomic_store(&described, 0);
}
