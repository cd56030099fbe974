/* A deliberately small interposer, the control for test_cudart_runtime's slot check
 * (build/tests/logcuda/fakehook.so, LD_PRELOAD): it answers dlsym("cuGetProcAddress_v2")
 * with its own getter, which hands out its own wrappers for cuLaunchKernel and
 * cuLaunchKernel_ptsz (the per-thread one when the flags ask for it) and for the getter
 * itself. FAKEHOOK_WRONG=1 makes the mistake the check must catch: the legacy wrapper
 * is handed out for the per-thread lookup too. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define FH_EXPORT __attribute__((visibility("default")))

typedef __typeof__(&cuLaunchKernel) fh_fn;
typedef CUresult (*fh_getter)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef void *(*fh_dlsym_fn)(void *, const char *);

static fh_fn fh_real_launch, fh_real_launch_ptsz;
static fh_getter fh_real_getter;

FH_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status);
FH_EXPORT void *dlsym(void *handle, const char *name);

FH_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                  unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                                  void **extra)
{
    return fh_real_launch ? fh_real_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
                          : CUDA_ERROR_NOT_INITIALIZED;
}

FH_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                       CUstream s, void **params, void **extra)
{
    return fh_real_launch_ptsz ? fh_real_launch_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
                               : CUDA_ERROR_NOT_INITIALIZED;
}

FH_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status)
{
    if (!fh_real_getter)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = fh_real_getter(symbol, pfn, version, flags, status);
    if (rc != CUDA_SUCCESS || !symbol || !pfn)
        return rc;
    int ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    if (!strcmp(symbol, "cuLaunchKernel")) {
        if (ptds && !getenv("FAKEHOOK_WRONG")) {
            fh_real_launch_ptsz = (fh_fn)*pfn;
            *pfn = (void *)cuLaunchKernel_ptsz;
        } else {
            if (!ptds)
                fh_real_launch = (fh_fn)*pfn;
            *pfn = (void *)cuLaunchKernel;
        }
    } else if (!strcmp(symbol, "cuGetProcAddress") && version >= 12000) {
        fh_real_getter = (fh_getter)*pfn;
        *pfn = (void *)cuGetProcAddress_v2;
    }
    return rc;
}

FH_EXPORT void *dlsym(void *handle, const char *name)
{
    static fh_dlsym_fn real;
    if (!real)
        real = (fh_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real)
        real = (fh_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!real)
        return NULL;
    void *p = real(handle, name);
    if (p && !strcmp(name, "cuGetProcAddress_v2")) {
        fh_real_getter = (fh_getter)p;
        return (void *)cuGetProcAddress_v2;
    }
    return p;
}
