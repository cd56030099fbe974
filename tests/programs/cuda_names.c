/* Kernel names, memory calls and symbol lookups the way the CUDA runtime and
 * plugins reach the driver (dlopen libcuda.so.1 locally, cuGetProcAddress_v2 for
 * every entry point), for tests/integration/test_driver_names.py. argv[1]:
 *   "unload": functions from a module and kernels from a library, each
 *     launched, synchronised and unloaded, then a second one made in its place;
 *     prints "launch NAME" per launch, in order, and "reused_function 0|1",
 *     "reused_kernel 0|1" (whether the driver gave the old handle again)
 *   "memory": cuMemCreate / cuMemMap / cuMemUnmap / cuMemRelease, and
 *     cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync; prints
 *     "alloc BYTES" per allocation and "free" per free
 *   "dlsym LIB": dlopens LIB (tests/programs/lib/names_probe.c) RTLD_LOCAL and
 *     looks names up with dlsym(RTLD_DEFAULT) from inside it; prints per name
 *     "sym NAME found=0|1 same=0|1 agent=0|1": found at all, the very function
 *     of libcuda / libnccl, a function of an object whose path has "libagent". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>

#include "cuda_prog.h"

#define DRIVER(X)                                                                                  \
    X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuModuleLoadData)    \
    X(cuModuleGetFunction) X(cuModuleUnload) X(cuLibraryLoadData) X(cuLibraryGetKernel)           \
    X(cuKernelGetFunction) X(cuLibraryUnload) X(cuLaunchKernel) X(cuCtxSynchronize)               \
    X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemCreate)    \
    X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess) X(cuMemAllocAsync)                \
    X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync) X(cuDeviceGetDefaultMemPool)

static struct {
#define MEMBER(fn) __typeof__(fn) *fn;
    DRIVER(MEMBER)
#undef MEMBER
} d;

static void setup(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die(dlerror(), 0);
    __typeof__(cuGetProcAddress_v2) *get = (__typeof__(get))dlsym(h, "cuGetProcAddress_v2");
    if (!get)
        die("dlsym cuGetProcAddress_v2", 0);
    CUdriverProcAddressQueryResult st;
#define LOOKUP(fn) if (get(#fn, (void **)&d.fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st)) die(#fn, 0);
    DRIVER(LOOKUP)
#undef LOOKUP
    CUdevice dev;
    CUcontext ctx;
    CU(d.cuInit(0));
    CU(d.cuDeviceGet(&dev, 0));
    CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(d.cuCtxSetCurrent(ctx));
}

static void launch(CUfunction f, const char *name)
{
    CU(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CU(d.cuCtxSynchronize());
    printf("launch %s\n", name);
}

static void unload(void)
{
    static const char image[] = "cuda_names module";
    static const char *const fnames[] = { "alpha_kernel", "beta_kernel" };
    static const char *const knames[] = { "gamma_kernel", "delta_kernel" };
    CUfunction f[2];
    CUkernel k[2];
    for (int i = 0; i < 2; i++) {
        CUmodule m;
        CU(d.cuModuleLoadData(&m, image));
        CU(d.cuModuleGetFunction(&f[i], m, fnames[i]));
        launch(f[i], fnames[i]);
        CU(d.cuModuleUnload(m));
    }
    for (int i = 0; i < 2; i++) {
        CUlibrary lib;
        CUfunction fk;
        CU(d.cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
        CU(d.cuLibraryGetKernel(&k[i], lib, knames[i]));
        CU(d.cuKernelGetFunction(&fk, k[i]));
        launch(fk, knames[i]);
        CU(d.cuLibraryUnload(lib));
    }
    printf("reused_function %d\nreused_kernel %d\n", f[0] == f[1], k[0] == k[1]);
}

static void memory(void)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    size_t gran;
    CU(d.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    /* an expandable segment: a reserved range that grows by chunks of 1 and 3 granules */
    CUdeviceptr base;
    CU(d.cuMemAddressReserve(&base, 8 * gran, 0, 0, 0));
    CUmemGenericAllocationHandle h[2];
    size_t sizes[2] = { gran, 3 * gran }, at = 0;
    CUmemAccessDesc access = { .location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    for (int i = 0; i < 2; i++) {
        CU(d.cuMemCreate(&h[i], sizes[i], &prop, 0));
        printf("alloc %zu\n", sizes[i]);
        CU(d.cuMemMap(base + at, sizes[i], 0, h[i], 0));
        CU(d.cuMemSetAccess(base + at, sizes[i], &access, 1));
        at += sizes[i];
    }
    at = 0;
    for (int i = 0; i < 2; i++) {
        CU(d.cuMemUnmap(base + at, sizes[i]));
        CU(d.cuMemRelease(h[i]));
        printf("free\n");
        at += sizes[i];
    }
    CU(d.cuMemAddressFree(base, 8 * gran));
    /* stream-ordered: from the default pool and from a named one */
    CUmemoryPool pool;
    CUdeviceptr p, q;
    CU(d.cuDeviceGetDefaultMemPool(&pool, 0));
    CU(d.cuMemAllocAsync(&p, 1 << 20, NULL));
    printf("alloc %d\n", 1 << 20);
    CU(d.cuMemAllocFromPoolAsync(&q, 5 << 20, pool, NULL));
    printf("alloc %d\n", 5 << 20);
    CU(d.cuMemFreeAsync(p, NULL));
    printf("free\n");
    CU(d.cuMemFreeAsync(q, NULL));
    printf("free\n");
    CU(d.cuCtxSynchronize());
}

static void lookups(const char *lib)
{
    static const char *const names[] = { "cuDeviceGetName", "cuMemGetInfo_v2", "cuLaunchKernel",
                                         "cuModuleGetFunction", "ncclGetVersion", "ncclAllReduce",
                                         "cuNoSuchFunction", "ncclNoSuchFunction" };
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *probe_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!cuda || !probe_lib)
        die(dlerror(), 0);
    void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    void *(*probe)(const char *) = (void *(*)(const char *))dlsym(probe_lib, "names_probe");
    if (!probe || !nccl)
        die("names_probe / libnccl.so.2", 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = probe(names[i]);
        void *real = dlsym(names[i][0] == 'n' ? nccl : cuda, names[i]);
        Dl_info info;
        int agent = p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libagent");
        printf("sym %s found=%d same=%d agent=%d\n", names[i], p != NULL, p && p == real, agent);
    }
}

int main(int argc, char **argv)
{
    prog_name = "cuda_names";
    if (argc >= 3 && !strcmp(argv[1], "dlsym")) {
        lookups(argv[2]);
        return 0;
    }
    setup();
    if (argc >= 2 && !strcmp(argv[1], "unload"))
        unload();
    else if (argc >= 2 && !strcmp(argv[1], "memory"))
        memory();
    else
        die("usage: cuda_names unload|memory|dlsym LIB", 0);
    return 0;
}
