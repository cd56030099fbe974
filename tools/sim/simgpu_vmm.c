/* The simulated driver's virtual memory management and stream-ordered
 * allocation: address ranges reserved (an inaccessible mapping), physical
 * allocations (a memfd each, its bytes taken from its device's memory), mapped
 * into a range and made accessible, unmapped and released as the real driver
 * allows (a released allocation lives on, and holds its bytes, while mapped);
 * cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync allocate
 * and free at once (the simulator moves a copy's bytes when it is enqueued, so
 * nothing queued reads freed memory), from one default pool per device. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tools/sim/simgpu_internal.h"

#define SIM_VMM_GRANULARITY (2u << 20)
#define SIM_POOL_MAGIC 0x5c7c70a1u
#define SIM_MAX_POOLS 64

struct sim_phys {
    unsigned magic;
    int fd;
    int device;
    size_t size;
    int maps;           /* mappings of it alive */
    int released;       /* cuMemRelease done: freed with its last mapping */
};
#define SIM_PHYS_MAGIC 0x5c7c70b2u

struct CUmemPoolHandle_st {
    unsigned magic;
    int device;
};
static struct CUmemPoolHandle_st sim_pools[SIM_MAX_POOLS];

/* Mappings: address -> the allocation behind it (few: a list). */
struct sim_map {
    uintptr_t at;
    size_t size;
    struct sim_phys *phys;
    struct sim_map *next;
};
static struct sim_map *sim_maps;

/* Under sim_lock. */
static void sim_phys_drop(struct sim_phys *p)
{
    if (p->released && p->maps == 0) {
        sim_mem_give(p->device, p->size, SIM_MEM_ALLOC);
        close(p->fd);
        p->magic = 0;
        free(p);
    }
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = SIM_VMM_GRANULARITY;
    return sim_check_init();
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                        unsigned long long flags)
{
    (void)alignment;
    (void)flags;
    if (!ptr || size == 0 || size % SIM_VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap((void *)(uintptr_t)addr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!ptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return munmap((void *)(uintptr_t)ptr, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                unsigned long long flags)
{
    (void)flags;
    if (!handle || !prop || size == 0 || size % SIM_VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_check_init() != CUDA_SUCCESS)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
        prop->location.id >= sim_cfg.devices)
        return CUDA_ERROR_INVALID_DEVICE;
    struct sim_phys *p = calloc(1, sizeof *p);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    p->device = prop->location.id;
    pthread_mutex_lock(&sim_lock);
    CUresult r = sim_mem_take(p->device, size, SIM_MEM_ALLOC);
    pthread_mutex_unlock(&sim_lock);
    if (r != CUDA_SUCCESS) {
        free(p);
        return r;
    }
    p->fd = memfd_create("simgpu-vmm", MFD_CLOEXEC);
    if (p->fd < 0 || ftruncate(p->fd, (off_t)size) != 0) {
        if (p->fd >= 0)
            close(p->fd);
        pthread_mutex_lock(&sim_lock);
        sim_mem_give(p->device, size, SIM_MEM_ALLOC);
        pthread_mutex_unlock(&sim_lock);
        free(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->magic = SIM_PHYS_MAGIC;
    p->size = size;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct sim_phys *p = (struct sim_phys *)(uintptr_t)handle;
    pthread_mutex_lock(&sim_lock);
    CUresult r = p && p->magic == SIM_PHYS_MAGIC && !p->released ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        p->released = 1;
        sim_phys_drop(p);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                             unsigned long long flags)
{
    struct sim_phys *p = (struct sim_phys *)(uintptr_t)handle;
    if (!ptr || size == 0 || flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_map *m = malloc(sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    CUresult r = p && p->magic == SIM_PHYS_MAGIC && !p->released && offset + size <= p->size
                     ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    /* mapped without access, as the driver does until cuMemSetAccess */
    if (r == CUDA_SUCCESS && mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd,
                                  (off_t)offset) == MAP_FAILED)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        *m = (struct sim_map){ (uintptr_t)ptr, size, p, sim_maps };
        sim_maps = m;
        p->maps++;
    } else {
        free(m);
    }
    pthread_mutex_unlock(&sim_lock);
    return r;
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    struct sim_map **pp, *m = NULL;
    pthread_mutex_lock(&sim_lock);
    for (pp = &sim_maps; *pp; pp = &(*pp)->next) {
        if ((*pp)->at == (uintptr_t)ptr && (*pp)->size == size) {
            m = *pp;
            *pp = m->next;
            break;
        }
    }
    if (m) {
        /* back to a reserved, inaccessible range */
        mmap((void *)m->at, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
        m->phys->maps--;
        sim_phys_drop(m->phys);
        free(m);
    }
    pthread_mutex_unlock(&sim_lock);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (!ptr || !desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = desc[0].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
             : desc[0].flags == CU_MEM_ACCESS_FLAGS_PROT_READ ? PROT_READ : PROT_NONE;
    return mprotect((void *)(uintptr_t)ptr, size, prot) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- stream-ordered allocation ---- */

SIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_check_init() != CUDA_SUCCESS)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= sim_cfg.devices || dev >= SIM_MAX_POOLS)
        return CUDA_ERROR_INVALID_DEVICE;
    sim_pools[dev] = (struct CUmemPoolHandle_st){ SIM_POOL_MAGIC, dev };
    *pool = &sim_pools[dev];
    return CUDA_SUCCESS;
}

static CUresult sim_alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    void *p = NULL;
    (void)s;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = sim_alloc_new(&p, bytes, 0);
    if (r == CUDA_SUCCESS)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    return sim_alloc_async(dptr, bytes, s);
}

SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s)
{
    return sim_alloc_async(dptr, bytes, s);
}

/* (The simulator's own calls never go through its exported names: a tool that
 * interposes them would see one call twice.) */
static CUresult sim_alloc_pool(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
    if (!pool || pool->magic != SIM_POOL_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_alloc_async(dptr, bytes, s);
}

SIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
    return sim_alloc_pool(dptr, bytes, pool, s);
}

SIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s)
{
    return sim_alloc_pool(dptr, bytes, pool, s);
}

SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    (void)s;
    return sim_alloc_free((uintptr_t)dptr, 0);
}

SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    (void)s;
    return sim_alloc_free((uintptr_t)dptr, 0);
}
