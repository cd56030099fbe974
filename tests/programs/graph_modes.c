/* Stream capture's rules on the driver it runs on (the simulator here, a real
 * one in gpu-check): one line per case, "case result", the CUresult of the call
 * the case is about and of cuStreamEndCapture. The expected codes are cuda.h's
 * documented ones, held by tests/integration/test_graphs.py. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static CUstream a, b;

static void die(const char *what, CUresult r)
{
    fprintf(stderr, "graph_modes: %s: CUresult %d\n", what, (int)r);
    exit(1);
}
#define OK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) die(#call, r_); } while (0)

static void kernel(CUfunction f, CUstream s, CUresult *r)
{
    unsigned long long ns = 20000;
    void *p[] = { &ns };
    *r = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, p, NULL);
}

/* What an unsafe call on another thread does to a's capture. */
struct other { CUstreamCaptureMode mode; CUcontext ctx; CUresult r; };
static void *other_thread(void *arg)
{
    struct other *o = arg;
    cuCtxSetCurrent(o->ctx);
    cuThreadExchangeStreamCaptureMode(&o->mode);
    CUdeviceptr p;
    o->r = cuMemAlloc(&p, 256);
    if (o->r == CUDA_SUCCESS)
        cuMemFree(p);
    return NULL;
}

static void end(const char *name, CUresult call)
{
    CUgraph g = NULL;
    CUresult r = cuStreamEndCapture(a, &g);
    printf("%s %d %d %d\n", name, (int)call, (int)r, g != NULL);
    if (g)
        cuGraphDestroy(g);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUevent e, plain;
    CUresult r;
    OK(cuInit(0));
    OK(cuDeviceGet(&dev, 0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    OK(cuModuleLoadData(&mod, "graph_modes"));
    OK(cuModuleGetFunction(&f, mod, "k"));
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
    OK(cuEventRecord(plain, b));
    OK(cuStreamSynchronize(b));

    static const CUstreamCaptureMode modes[] = { CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                 CU_STREAM_CAPTURE_MODE_RELAXED };
    static const char *const names[] = { "global", "thread_local", "relaxed" };
    for (int m = 0; m < 3; m++) {
        char name[64];
        /* a synchronisation of another stream on the capturing thread */
        OK(cuStreamBeginCapture(a, modes[m]));
        kernel(f, a, &r);
        snprintf(name, sizeof name, "%s_sync_other", names[m]);
        end(name, cuStreamSynchronize(b));
        /* an event query on the capturing thread */
        OK(cuStreamBeginCapture(a, modes[m]));
        snprintf(name, sizeof name, "%s_event_query", names[m]);
        end(name, cuEventQuery(plain));
        /* an allocation on another thread whose own mode is global */
        OK(cuStreamBeginCapture(a, modes[m]));
        kernel(f, a, &r);
        struct other o = { CU_STREAM_CAPTURE_MODE_GLOBAL, ctx, 0 };
        pthread_t t;
        pthread_create(&t, NULL, other_thread, &o);
        pthread_join(t, NULL);
        snprintf(name, sizeof name, "%s_other_thread_alloc", names[m]);
        end(name, o.r);
    }
    /* a sync of the capturing stream itself, even relaxed */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    end("relaxed_sync_self", cuStreamSynchronize(a));
    /* a fork joined back: two kernels on b after a's, a waits for them */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    kernel(f, a, &r);
    OK(cuEventRecord(e, a));
    OK(cuStreamWaitEvent(b, e, 0));
    CUstreamCaptureStatus st;
    OK(cuStreamIsCapturing(b, &st));
    printf("joined_status %d\n", (int)st);
    kernel(f, b, &r);
    kernel(f, b, &r);
    OK(cuEventRecord(e, b));
    OK(cuStreamWaitEvent(a, e, 0));
    kernel(f, a, &r);
    {
        CUgraph g = NULL;
        r = cuStreamEndCapture(a, &g);
        size_t n = 0;
        if (g)
            cuGraphGetNodes(g, NULL, &n);
        OK(cuStreamIsCapturing(b, &st));
        printf("fork_join %d %zu %d\n", (int)r, n, (int)st);
        if (g) {
            CUgraphExec x;
            OK(cuGraphInstantiate(&x, g, 0));
            OK(cuGraphLaunch(x, a));
            OK(cuStreamSynchronize(a));
            OK(cuGraphExecDestroy(x));
            OK(cuGraphDestroy(g));
        }
    }
    /* a fork never joined */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    kernel(f, a, &r);
    OK(cuEventRecord(e, a));
    OK(cuStreamWaitEvent(b, e, 0));
    kernel(f, b, &r);
    end("unjoined", CUDA_SUCCESS);
    /* waiting in a capture on an event recorded outside it */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    end("isolation", cuStreamWaitEvent(a, plain, 0));
    /* ending from the wrong stream */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuEventRecord(e, a));
    OK(cuStreamWaitEvent(b, e, 0));
    {
        CUgraph g = NULL;
        printf("unmatched %d\n", (int)cuStreamEndCapture(b, &g));
    }
    OK(cuEventRecord(e, b));
    OK(cuStreamWaitEvent(a, e, 0));
    end("after_unmatched", CUDA_SUCCESS);
    /* a captured event cannot be queried */
    OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuEventRecord(e, a));
    end("captured_event_query", cuEventQuery(e));
    OK(cuStreamSynchronize(a));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
    return 0;
}
