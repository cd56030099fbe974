/* Reaches the driver the way the real CUDA runtime does, then does GPU work through
 * what it got: the test program of the cudart tests (build/tests/cudart/replay).
 *   replay --procaddr LOOKUPS   dlopen("libcuda.so.1"), dlsym cuGetProcAddress_v2, then
 *                               every lookup of the recorded list (tests/data/cudart-*-
 *                               lookups.txt) in its order, by the same getter, name,
 *                               version and flags; the work uses what those lookups gave.
 *   replay --dlsym              dlopen("libcuda.so.1"), then dlsym of the exported names
 *                               (the _v2, _ptsz, _ptds ones), as Triton does.
 * The work: kernels (legacy stream, per-thread stream, Ex, cooperative, a captured
 * graph replayed), copies and sets (synchronous and asynchronous, both stream kinds)
 * and waits (synchronous copies and sets count as waits too). Its own counts go to stdout as one JSON object, the truth the test
 * compares the trace with. Kernel durations follow tools/sim/simgpu.h (kernelParams[0]). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RP_PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

struct rp_lookup {
    char symbol[128];
    int version;
    unsigned long long flags;
    void *fn;
    int rc;
};

static struct rp_lookup rp_lookups[4096];
static int rp_nlookups;
static void *rp_lib;
static int rp_by_dlsym;

/* The exported names (dlsym mode) of the functions the work uses. */
static const struct { const char *base, *legacy, *ptds; } rp_exports[] = {
    { "cuInit", "cuInit", NULL },
    { "cuDeviceGet", "cuDeviceGet", NULL },
    { "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", NULL },
    { "cuCtxSetCurrent", "cuCtxSetCurrent", NULL },
    { "cuCtxSynchronize", "cuCtxSynchronize", NULL },
    { "cuModuleLoadData", "cuModuleLoadData", NULL },
    { "cuModuleGetFunction", "cuModuleGetFunction", NULL },
    { "cuLibraryLoadData", "cuLibraryLoadData", NULL },
    { "cuLibraryGetKernel", "cuLibraryGetKernel", NULL },
    { "cuKernelGetFunction", "cuKernelGetFunction", NULL },
    { "cuStreamCreate", "cuStreamCreate", NULL },
    { "cuStreamGetId", "cuStreamGetId", "cuStreamGetId_ptsz" },
    { "cuStreamSynchronize", "cuStreamSynchronize", "cuStreamSynchronize_ptsz" },
    { "cuStreamBeginCapture", "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz" },
    { "cuStreamEndCapture", "cuStreamEndCapture", "cuStreamEndCapture_ptsz" },
    { "cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", NULL },
    { "cuGraphLaunch", "cuGraphLaunch", "cuGraphLaunch_ptsz" },
    { "cuEventCreate", "cuEventCreate", NULL },
    { "cuEventRecord", "cuEventRecord", "cuEventRecord_ptsz" },
    { "cuEventSynchronize", "cuEventSynchronize", NULL },
    { "cuMemAlloc", "cuMemAlloc_v2", NULL },
    { "cuLaunchKernel", "cuLaunchKernel", "cuLaunchKernel_ptsz" },
    { "cuLaunchKernelEx", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz" },
    { "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz" },
    { "cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds" },
    { "cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds" },
    { "cuMemcpyDtoD", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds" },
    { "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz" },
    { "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz" },
    { "cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz" },
    { "cuMemcpyAsync", "cuMemcpyAsync", "cuMemcpyAsync_ptsz" },
    { "cuMemsetD8", "cuMemsetD8_v2", "cuMemsetD8_v2_ptds" },
    { "cuMemsetD8Async", "cuMemsetD8Async", "cuMemsetD8Async_ptsz" },
};

static void rp_die(const char *what)
{
    fprintf(stderr, "replay: %s\n", what);
    exit(2);
}

/* The function the runtime would use for base name `name` (per-thread variant when
 * ptds): the newest version of it the recorded lookups asked for and got. */
static void *rp_need(const char *name, int ptds)
{
    char why[256];
    if (rp_by_dlsym) {
        for (size_t i = 0; i < sizeof rp_exports / sizeof rp_exports[0]; i++) {
            const char *exp = ptds ? rp_exports[i].ptds : rp_exports[i].legacy;
            if (strcmp(rp_exports[i].base, name) != 0 || !exp)
                continue;
            void *fn = dlsym(rp_lib, exp);
            if (!fn) {
                snprintf(why, sizeof why, "dlsym(libcuda.so.1, %s): %s", exp, dlerror());
                rp_die(why);
            }
            return fn;
        }
        snprintf(why, sizeof why, "no exported name for %s%s", name, ptds ? " (per-thread)" : "");
        rp_die(why);
    }
    const struct rp_lookup *best = NULL;
    for (int i = 0; i < rp_nlookups; i++) {
        const struct rp_lookup *l = &rp_lookups[i];
        if (!strcmp(l->symbol, name) && !!(l->flags & RP_PTDS) == !!ptds && l->fn && l->rc == CUDA_SUCCESS
            && (!best || l->version > best->version))
            best = l;
    }
    if (!best) {
        snprintf(why, sizeof why, "the recorded lookups never got %s%s", name, ptds ? " (per-thread)" : "");
        rp_die(why);
    }
    return best->fn;
}

/* Calls base name `fn` (its cuda.h prototype; ptds: the per-thread variant); dies on error. */
#define RP(fn, ptds, ...)                                                                    \
    do {                                                                                     \
        CUresult rp_rc_ = ((__typeof__(&fn))rp_need(#fn, ptds))(__VA_ARGS__);                \
        if (rp_rc_ != CUDA_SUCCESS) {                                                        \
            fprintf(stderr, "replay: %s%s failed: %d\n", #fn, ptds ? " (per-thread)" : "", rp_rc_); \
            exit(2);                                                                         \
        }                                                                                    \
    } while (0)

typedef CUresult (*rp_getter)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* Reads LOOKUPS and performs each lookup in order. Lines: "lookup N SYMBOL VERSION FLAGS
 * VIA STATUS", tab-separated; VIA "v2": the dlsym'd cuGetProcAddress_v2, "v2/N": the
 * function lookup N gave; STATUS "null" or "ptr": whether a symbolStatus was passed. */
static void rp_replay(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    rp_getter first = (rp_getter)dlsym(rp_lib, "cuGetProcAddress_v2");
    if (!first)
        rp_die("dlsym(libcuda.so.1, cuGetProcAddress_v2) failed");
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (strncmp(line, "lookup\t", 7) != 0)
            continue;
        char *field[7];
        char *p = line;
        int n = 0;
        for (; n < 7 && p; n++) {
            field[n] = p;
            p = strpbrk(p, "\t\n");
            if (p)
                *p++ = '\0';
        }
        if (n < 7 || atoi(field[1]) != rp_nlookups || rp_nlookups >= (int)(sizeof rp_lookups / sizeof rp_lookups[0])) {
            fprintf(stderr, "replay: %s: line %d: not the lookup %d expected\n", path, lineno, rp_nlookups);
            exit(2);
        }
        struct rp_lookup *l = &rp_lookups[rp_nlookups];
        snprintf(l->symbol, sizeof l->symbol, "%s", field[2]);
        l->version = atoi(field[3]);
        l->flags = strtoull(field[4], NULL, 10);
        rp_getter get = first;
        if (!strncmp(field[5], "v2/", 3)) {
            int via = atoi(field[5] + 3);
            if (via < 0 || via >= rp_nlookups || !rp_lookups[via].fn) {
                fprintf(stderr, "replay: %s: line %d: lookup %d gave no getter\n", path, lineno, via);
                exit(2);
            }
            get = (rp_getter)rp_lookups[via].fn;
        } else if (strcmp(field[5], "v2") != 0) {
            fprintf(stderr, "replay: %s: line %d: unknown getter %s\n", path, lineno, field[5]);
            exit(2);
        }
        CUdriverProcAddressQueryResult status;
        l->rc = get(l->symbol, &l->fn, l->version, l->flags, strcmp(field[6], "ptr") ? NULL : &status);
        rp_nlookups++;
    }
    fclose(f);
    if (!rp_nlookups)
        rp_die("no lookups in the list");
}

static int n_kernel, n_kernel_ptds, n_captured, n_graph, n_copy, n_copy_ptds, n_set, n_set_ptds;
static int n_sync_stream, n_sync_event, n_sync_context, n_sync_copy;

static void rp_kernel(CUfunction f, CUstream s, int ptds, unsigned long long ns)
{
    void *params[] = { &ns };
    RP(cuLaunchKernel, ptds, f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--procaddr"))
        rp_by_dlsym = 0;
    else if (argc == 2 && !strcmp(argv[1], "--dlsym"))
        rp_by_dlsym = 1;
    else {
        fprintf(stderr, "usage: replay --procaddr LOOKUPS | --dlsym\n");
        return 2;
    }
    rp_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!rp_lib) {
        fprintf(stderr, "replay: dlopen(libcuda.so.1): %s\n", dlerror());
        return 2;
    }
    if (rp_by_dlsym && dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != rp_lib)  /* Triton's way */
        rp_die("dlopen(libcuda.so.1, RTLD_NOLOAD) gave another handle");
    if (!rp_by_dlsym)
        rp_replay(argv[2]);

    CUdevice dev;
    CUcontext ctx;
    CUfunction kern[5];
    static const char *const names[5] = { "k_legacy", "k_ptsz", "k_ex", "k_coop", "k_graph" };
    RP(cuInit, 0, 0);
    RP(cuDeviceGet, 0, &dev, 0);
    RP(cuDevicePrimaryCtxRetain, 0, &ctx, dev);
    RP(cuCtxSetCurrent, 0, ctx);
    if (rp_by_dlsym) {  /* Triton loads cubins as modules */
        CUmodule mod;
        RP(cuModuleLoadData, 0, &mod, "cubin");
        for (int i = 0; i < 5; i++)
            RP(cuModuleGetFunction, 0, &kern[i], mod, names[i]);
    } else {            /* the runtime, as libraries */
        CUlibrary lib;
        RP(cuLibraryLoadData, 0, &lib, "fatbin", NULL, NULL, 0, NULL, NULL, 0);
        for (int i = 0; i < 5; i++) {
            CUkernel k;
            RP(cuLibraryGetKernel, 0, &k, lib, names[i]);
            RP(cuKernelGetFunction, 0, &kern[i], k);
        }
    }
    CUstream s;
    CUevent ev;
    unsigned long long sid, ptsz_id;
    RP(cuStreamCreate, 0, &s, 0);
    RP(cuStreamGetId, 0, s, &sid);
    RP(cuStreamGetId, 1, NULL, &ptsz_id);
    RP(cuEventCreate, 0, &ev, 0);
    enum { N = 1 << 16 };
    static unsigned char host[N], back[N];
    CUdeviceptr d0, d1;
    RP(cuMemAlloc, 0, &d0, N);
    RP(cuMemAlloc, 0, &d1, N);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)i;

    /* Kernels: 5 on a stream, 4 on the per-thread stream, Ex and cooperative of each kind. */
    for (int i = 0; i < 5; i++, n_kernel++)
        rp_kernel(kern[0], s, 0, 20000);
    for (int i = 0; i < 4; i++, n_kernel++, n_kernel_ptds++)
        rp_kernel(kern[1], NULL, 1, 30000);
    for (int ptds = 0; ptds < 2; ptds++) {
        unsigned long long ns = 15000;
        void *params[] = { &ns };
        CUlaunchConfig cfg = { .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 64,
                               .blockDimY = 1, .blockDimZ = 1, .hStream = ptds ? NULL : s };
        RP(cuLaunchKernelEx, ptds, &cfg, kern[2], params, NULL);
        RP(cuLaunchCooperativeKernel, ptds, kern[3], 1, 1, 1, 32, 1, 1, 0, ptds ? NULL : s, params);
        n_kernel += 2;
        n_kernel_ptds += 2 * ptds;
    }
    RP(cuEventRecord, 0, ev, s);
    RP(cuEventSynchronize, 0, ev);
    n_sync_event++;

    /* Copies and sets: asynchronous on each stream kind, then synchronous ones. */
    for (int ptds = 0; ptds < 2; ptds++) {
        CUstream on = ptds ? NULL : s;
        RP(cuMemcpyHtoDAsync, ptds, d0, host, N, on);
        RP(cuMemcpyDtoDAsync, ptds, d1, d0, N / 2, on);
        RP(cuMemcpyAsync, ptds, d0, d1, N / 4, on);
        RP(cuMemcpyDtoHAsync, ptds, back, d1, N / 8, on);
        RP(cuMemsetD8Async, ptds, d1, 7, N / 16, on);
        n_copy += 4;
        n_copy_ptds += 4 * ptds;
        n_set++;
        n_set_ptds += ptds;
    }
    RP(cuStreamSynchronize, 0, s);
    RP(cuStreamSynchronize, 1, NULL);
    n_sync_stream += 2;
    for (int ptds = 0; ptds < 2; ptds++) {
        RP(cuMemcpyHtoD, ptds, d0, host, N);
        RP(cuMemcpyDtoD, ptds, d1, d0, N / 2);
        RP(cuMemcpyDtoH, ptds, back, d1, N / 2);
        RP(cuMemsetD8, ptds, d1, 3, N / 32);
        n_sync_copy += 4;
        n_copy += 3;
        n_copy_ptds += 3 * ptds;
        n_set++;
        n_set_ptds += ptds;
    }
    if (memcmp(host, back, N / 2) != 0)
        rp_die("the copies did not move the bytes");

    /* A graph: three kernels captured on s, replayed twice. */
    CUgraph graph;
    CUgraphExec exec;
    RP(cuStreamBeginCapture, 0, s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    for (int i = 0; i < 3; i++, n_captured++)
        rp_kernel(kern[4], s, 0, 10000);
    RP(cuStreamEndCapture, 0, s, &graph);
    RP(cuGraphInstantiateWithFlags, 0, &exec, graph, 0);
    for (int i = 0; i < 2; i++, n_graph++)
        RP(cuGraphLaunch, 0, exec, s);
    RP(cuStreamSynchronize, 0, s);
    n_sync_stream++;
    RP(cuCtxSynchronize, 0);
    n_sync_context++;

    printf("{\"mode\":\"%s\",\"lookups\":%d,\"kernel\":%d,\"kernel_ptds\":%d,\"captured\":%d,"
           "\"graph_launch\":%d,\"graph_kernels\":%d,\"memcpy\":%d,\"memcpy_ptds\":%d,"
           "\"memset\":%d,\"memset_ptds\":%d,\"sync_stream\":%d,\"sync_event\":%d,"
           "\"sync_context\":%d,\"sync_copy\":%d,\"stream\":%llu,\"ptsz_stream\":%llu}\n",
           rp_by_dlsym ? "dlsym" : "procaddr", rp_nlookups, n_kernel, n_kernel_ptds, n_captured,
           n_graph, n_graph * n_captured, n_copy, n_copy_ptds, n_set, n_set_ptds, n_sync_stream,
           n_sync_event, n_sync_context, n_sync_copy, sid, ptsz_id);
    return 0;
}
