/* NVTX ranges of every kind, made with the CUDA toolkit's header-only NVTX
 * v3, for tests/integration/test_nvtx.py: nested push/pop (ASCII, wide,
 * attributes), start/end across two threads, a domain with a registered
 * string, push/pop interleaved across domains, a mark, a pop with nothing
 * open and a range left open at exit. Its own account of each range (the
 * truth: CLOCK_MONOTONIC read just before and just after each NVTX call)
 * goes to TRUTH as JSON lines; stdout holds only what is the same with and
 * without a tool attached (what the NVTX calls returned).
 *
 *   nvtx_ranges TRUTH        the ranges
 *   nvtx_ranges --probe      a few NVTX calls, then how the process looks:
 *                            threads, SIGTERM's disposition, whether the
 *                            library NVTX_INJECTION64_PATH names can load
 *   nvtx_ranges --exec-probe runs --probe by exec, LD_PRELOAD removed */
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static FILE *truth;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static unsigned tid(void)
{
    return (unsigned)syscall(SYS_gettid);
}

/* A range's truth: its start lies in [s0, s1], its end in [e0, e1]. */
static void emit(const char *name, const char *kind, const char *domain, int depth, unsigned t,
                 unsigned end_t, uint64_t s0, uint64_t s1, uint64_t e0, uint64_t e1)
{
    fprintf(truth, "{\"name\":\"%s\",\"kind\":\"%s\",\"domain\":%s%s%s,\"depth\":%d,\"tid\":%u,"
                   "\"end_tid\":%u,\"s0\":%llu,\"s1\":%llu,\"e0\":%llu,\"e1\":%llu}\n",
            name, kind, domain ? "\"" : "", domain ? domain : "null", domain ? "\"" : "", depth, t, end_t,
            (unsigned long long)s0, (unsigned long long)s1, (unsigned long long)e0,
            (unsigned long long)e1);
}

/* The start/end range begun on the main thread and ended on the worker. */
static nvtxRangeId_t handoff;
static uint64_t handoff_e0, handoff_e1;
static unsigned worker_tid;

static void *worker(void *arg)
{
    (void)arg;
    worker_tid = tid();
    sleep_ms(25);
    handoff_e0 = now_ns();
    nvtxRangeEnd(handoff);
    handoff_e1 = now_ns();

    uint64_t s0 = now_ns();
    nvtxRangeId_t own = nvtxRangeStartA("worker-own");
    uint64_t s1 = now_ns();
    uint64_t p0 = now_ns();
    int r = nvtxRangePushA("worker-push");
    uint64_t p1 = now_ns();
    sleep_ms(15);
    uint64_t q0 = now_ns();
    int r2 = nvtxRangePop();
    uint64_t q1 = now_ns();
    sleep_ms(5);
    uint64_t e0 = now_ns();
    nvtxRangeEnd(own);
    uint64_t e1 = now_ns();
    printf("worker push %d pop %d\n", r, r2);
    emit("worker-push", "push", NULL, 0, worker_tid, worker_tid, p0, p1, q0, q1);
    emit("worker-own", "start", NULL, 0, worker_tid, worker_tid, s0, s1, e0, e1);
    return NULL;
}

static int ranges(const char *path)
{
    truth = fopen(path, "w");
    if (!truth) {
        perror(path);
        return 1;
    }
    unsigned me = tid();

    /* Nested push/pop: ASCII, attributes, wide. */
    uint64_t a0 = now_ns();
    int ra = nvtxRangePushA("outer");
    uint64_t a1 = now_ns();
    sleep_ms(30);
    nvtxEventAttributes_t at = { 0 };
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.category = 3;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = "inner";
    uint64_t b0 = now_ns();
    int rb = nvtxRangePushEx(&at);
    uint64_t b1 = now_ns();
    sleep_ms(20);
    uint64_t c0 = now_ns();
    int rc = nvtxRangePushW(L"wide-\u00fc\u20ac");
    uint64_t c1 = now_ns();
    sleep_ms(10);
    uint64_t c2 = now_ns();
    int pc = nvtxRangePop();
    uint64_t c3 = now_ns();
    uint64_t b2 = now_ns();
    int pb = nvtxRangePop();
    uint64_t b3 = now_ns();
    sleep_ms(10);
    uint64_t a2 = now_ns();
    int pa = nvtxRangePop();
    uint64_t a3 = now_ns();
    printf("push %d %d %d pop %d %d %d\n", ra, rb, rc, pc, pb, pa);
    emit("outer", "push", NULL, 0, me, me, a0, a1, a2, a3);
    emit("inner", "push", NULL, 1, me, me, b0, b1, b2, b3);
    emit("wide-\u00fc\u20ac", "push", NULL, 2, me, me, c0, c1, c2, c3);

    /* A mark. */
    uint64_t m0 = now_ns();
    nvtxMarkA("checkpoint");
    uint64_t m1 = now_ns();
    emit("checkpoint", "mark", NULL, 0, me, me, m0, m1, m0, m1);

    /* Start/end across threads, with a category. */
    nvtxEventAttributes_t ha = at;
    ha.category = 7;
    ha.message.ascii = "handoff";
    uint64_t h0 = now_ns();
    handoff = nvtxRangeStartEx(&ha);
    uint64_t h1 = now_ns();
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    pthread_join(th, NULL);
    emit("handoff", "start", NULL, 0, me, worker_tid, h0, h1, handoff_e0, handoff_e1);

    /* A domain, a registered string, and push/pop interleaved across the
     * default domain and this one (each has its own stack). */
    nvtxDomainHandle_t dom = nvtxDomainCreateA("ringside-test");
    nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered-step");
    nvtxEventAttributes_t da = { 0 };
    da.version = NVTX_VERSION;
    da.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    da.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    da.message.registered = reg;
    uint64_t d0 = now_ns();
    int rd = nvtxDomainRangePushEx(dom, &da);
    uint64_t d1 = now_ns();
    sleep_ms(15);
    uint64_t i0 = now_ns();
    int ri = nvtxRangePushA("interleave-default");
    uint64_t i1 = now_ns();
    sleep_ms(10);
    uint64_t d2 = now_ns();
    int pd = nvtxDomainRangePop(dom);
    uint64_t d3 = now_ns();
    sleep_ms(10);
    uint64_t i2 = now_ns();
    int pi = nvtxRangePop();
    uint64_t i3 = now_ns();
    printf("domain push %d %d pop %d %d\n", rd, ri, pd, pi);
    emit("registered-step", "push", "ringside-test", 0, me, me, d0, d1, d2, d3);
    emit("interleave-default", "push", NULL, 0, me, me, i0, i1, i2, i3);

    /* A pop with nothing open: NVTX's answer, nothing recorded. */
    printf("stray pop %d\n", nvtxRangePop());

    /* Left open: written at exit, flagged. */
    uint64_t o0 = now_ns();
    int ro = nvtxRangePushA("left-open");
    uint64_t o1 = now_ns();
    printf("left open %d\n", ro);
    emit("left-open", "push", NULL, 0, me, me, o0, o1, 0, 0);
    fclose(truth);
    sleep_ms(5);
    return 0;
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int probe(void)
{
    int r = nvtxRangePushA("probe");
    nvtxMarkA("probe-mark");
    nvtxRangeId_t id = nvtxRangeStartA("probe-start");
    nvtxRangeEnd(id);
    int p = nvtxRangePop();
    struct sigaction sa;
    sigaction(SIGTERM, NULL, &sa);
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    int loadable = 0;
    if (inj) {
        void *h = dlopen(inj, RTLD_LAZY);
        loadable = h != NULL;
        if (h)
            dlclose(h);
    }
    printf("probe push %d pop %d threads %d sigterm %s\n", r, p, thread_count(),
           sa.sa_handler == SIG_DFL ? "default" : "changed");
    fprintf(stderr, "probe: injection library %s\n", loadable ? "loads" : "does not load");
    return 0;
}

static int exec_probe(const char *self)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("LD_PRELOAD");
        execl(self, self, "--probe", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--probe") == 0)
        return probe();
    if (argc == 2 && strcmp(argv[1], "--exec-probe") == 0)
        return exec_probe("/proc/self/exe");
    if (argc != 2) {
        fprintf(stderr, "usage: nvtx_ranges TRUTH | --probe | --exec-probe\n");
        return 2;
    }
    return ranges(argv[1]);
}
