/* The CPU sampler: each thread has a timer on its own CPU-time clock
 * (timer_create(CLOCK_THREAD_CPUTIME_ID) directed at that thread with
 * SIGEV_THREAD_ID) that sends a free real-time signal every 1/RINGSIDE_SAMPLE_HZ
 * s of CPU; the handler unwinds from the interrupted context into a
 * preallocated per-thread buffer and writes one sample record. Threads get
 * their timer when they start through pthread_create and lose it when they
 * end. The program never sees the signal: it is installed with SA_RESTART,
 * kept out of calls that the kernel never restarts, and given up to the
 * program if it wants that signal. Also the wait samples of blocking calls. */
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define RS_MAX_TIMERS 4096

RS_REAL_DECL(sigaction);
/* The loader's record of where the main thread's stack began. */
extern void *__libc_stack_end;

_Atomic int rs_sample_sig;
static _Atomic int sampler_on;
static uint64_t interval_ns;
uint64_t rs_wait_ns = 1000000;
static uint32_t gpu_stack_every = 10;
static _Atomic uint64_t dropped;
/* the main thread's run-delay series id, 0 until its first point (run_delay_point) */
static _Atomic uint32_t run_delay_series;
/* Handler cost, in ticks, for RINGSIDE_LOG=2's line at exit (make bench):
 * the whole handler, its native unwinding and its Python frames, each as a
 * histogram (its median is what a sample costs; the mean is held up by the
 * first samples of each code path, which fault in unwind tables). */
static _Atomic uint64_t handled;
static struct cost_hist {
    _Atomic uint32_t b[64 * 8];
    _Atomic uint64_t sum;
} cost_all, cost_native, cost_python;
static double ns_per_tick = 1.0;
/* Kernel timer ids of live threads (id + 1; 0 free; SLOT_HELD: a thread's,
 * with no timer now, or one being made or moved to another signal):
 * whoever swaps a slot from an id deletes that timer, so none is deleted
 * twice (a reused id could be the program's own timer by then). tids holds
 * each slot's thread, for a move. */
#define SLOT_HELD (-1)
static _Atomic int timers[RS_MAX_TIMERS];
static _Atomic pid_t tids[RS_MAX_TIMERS];
/* Slots below this one have been tried by a thread: the loops over the
 * slots stop here (a forked child's clearing would otherwise write all of
 * them, a page fault each 4 KiB, in every child of a shell). */
static _Atomic int timers_hw;

static void timers_hw_raise(int n)
{
    int hw = atomic_load(&timers_hw);
    while (hw < n && !atomic_compare_exchange_weak(&timers_hw, &hw, n))
        ;
}

/* Per-thread sampler state, in static TLS (no allocation in the handler). */
struct sthread {
    int slot;                   /* index in timers + 1, 0: no timer */
    uint64_t pend_ts, pend_weight;
    uint64_t rnd;               /* xorshift state for the next expiry */
    uint64_t last_cpu;          /* the thread's CPU time at its last sample */
    uint32_t hits;              /* handler runs, to tell its EINTR from others' */
    uint64_t pending[RS_STACK_MAX];
    uint64_t scratch[RS_STACK_MAX];
};
static __thread struct sthread me RS_TLS;

uint64_t rs_sample_dropped(void)
{
    return atomic_load(&dropped);
}

static void drop(void)
{
    atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
}

/* Writes one sample record; the ring counts it if there is no room. */
static void put_sample(int kind, int reason, uint64_t ts, uint64_t weight, const uint64_t *f,
                       int n)
{
    size_t size = sizeof(struct rs_rec_sample) + (size_t)n * sizeof *f;
    struct rs_rec_sample *r = rs_reserve(size, RS_REC_SAMPLE);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ (uint16_t)size, RS_REC_SAMPLE, (uint8_t)kind,
                                (uint32_t)n | (uint32_t)reason << RS_SAMPLE_REASON_SHIFT };
    r->ts = ts;
    r->weight = weight;
    for (int i = 0; i < n; i++)
        r->frames[i] = f[i];
    rs_commit(size);
    if (rs_py_new_code(f, n))
        rs_writer_kick();
}

/* Log-linear buckets: 8 to each power of two, so a median is good to an
 * eighth of its value. */
static unsigned hist_bucket(uint64_t v)
{
    if (v < 8)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    return (e - 2) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

static uint64_t hist_low(unsigned b)
{
    if (b < 8)
        return b;
    unsigned e = b / 8 + 2;
    return (8ull + (b & 7)) << (e - 3);
}

static void hist_add(struct cost_hist *h, uint64_t v)
{
    atomic_fetch_add_explicit(&h->b[hist_bucket(v)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
}

/* The median of h (the middle of its bucket), 0 when empty. */
static double hist_median(struct cost_hist *h)
{
    uint64_t n = 0, seen = 0;
    for (unsigned i = 0; i < 64 * 8; i++)
        n += atomic_load(&h->b[i]);
    for (unsigned i = 0; i < 64 * 8 && n; i++) {
        seen += atomic_load(&h->b[i]);
        if (2 * seen >= n)
            return ((double)hist_low(i) + (double)hist_low(i + 1)) / 2;
    }
    return 0;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The next expiry at a random point of [period/2, 3 period/2): a program
 * whose work repeats with the period (or with the kernel's tick, which
 * paces CPU-time timers) is not sampled at the same phase each time. */
static void rearm_jittered(struct sthread *t)
{
    int v = atomic_load_explicit(&timers[t->slot - 1], memory_order_relaxed);
    if (v <= 0)
        return;
    t->rnd ^= t->rnd << 13;
    t->rnd ^= t->rnd >> 7;
    t->rnd ^= t->rnd << 17;
    uint64_t next = interval_ns / 2 + t->rnd % (interval_ns ? interval_ns : 1);
    struct itimerspec its = {
        { (time_t)(interval_ns / 1000000000u), (long)(interval_ns % 1000000000u) },
        { (time_t)(next / 1000000000u), (long)(next % 1000000000u) },
    };
    syscall(SYS_timer_settime, v - 1, 0, &its, NULL);
}

/* ---- the agent's start from the sampler, and the unwinder's load ----
 * A process that only computes records no event, so its first sample
 * starts the agent (rs_agent_start): from the handler, which may start a
 * thread only where the interrupted code holds none of the locks that
 * takes (the C library's, the loader's, the allocator's, the agent's own).
 * So the thread must have been stopped outside those objects' code; in
 * them, the next expiry tries again. */
struct text_range {
    uint64_t lo, hi;
};
static void on_sample(int sig, siginfo_t *si, void *ucv);
static struct text_range locked_text[32];
static _Atomic int nlocked = -1;     /* -1: not looked up yet */
static const void *malloc_at;        /* the malloc the program calls */
/* The C library's system call wrappers that take no lock: a thread found
 * in one of them (where a CPU-time timer's signal finds a thread that keeps
 * calling the kernel) is not inside one the start needs. */
static const char *const free_calls[] = {
    "clock_gettime", "gettimeofday", "time", "getpid", "gettid", "sched_yield", "nanosleep", "clock_nanosleep",
    "read", "write", "pread64", "pwrite64", "readv", "writev", "poll", "ppoll", "select", "pselect", "epoll_wait",
    "epoll_pwait", "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg", "ioctl", "lseek", "fstat", "fsync",
};
static struct text_range free_text[sizeof free_calls / sizeof *free_calls];
static int nfree;

static int add_locked(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *n = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    int libc = strncmp(base, "libc.so", 7) == 0;
    if (libc)
        for (size_t k = 0; k < sizeof free_calls / sizeof *free_calls; k++) {
            uint64_t lo, hi;
            if (nfree < (int)(sizeof free_text / sizeof *free_text) && rs_elf_func(info, free_calls[k], &lo, &hi) == 0)
                free_text[nfree++] = (struct text_range){ lo, hi };
        }
    const uint64_t probes[] = { (uint64_t)(uintptr_t)malloc_at, (uint64_t)(uintptr_t)&getpid,
                                (uint64_t)(uintptr_t)&on_sample };
    int hit = libc || strncmp(base, "ld-linux", 8) == 0;
    for (int i = 0; i < info->dlpi_phnum && !hit; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        for (size_t k = 0; k < sizeof probes / sizeof *probes; k++)
            hit |= ph->p_type == PT_LOAD && probes[k] >= lo && probes[k] < lo + ph->p_memsz;
    }
    for (int i = 0; hit && i < info->dlpi_phnum && *n < (int)(sizeof locked_text / sizeof *locked_text); i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            locked_text[(*n)++] = (struct text_range){ info->dlpi_addr + ph->p_vaddr,
                                                       info->dlpi_addr + ph->p_vaddr + ph->p_memsz };
    }
    return 0;
}

/* Where the start was not safe, it tries again a millisecond later, from
 * a wall-clock timer's signal: a CPU-time timer's comes when the thread
 * leaves the kernel, so a thread that keeps calling the C library (a loop
 * around clock_gettime) would be found in it every time; a wall-clock one
 * comes where the tick finds the thread, most often in its own code. One
 * timer a process, made for the thread that needs it (its value tells its
 * signal from the sampling timers'). */
#define DOORBELL_VALUE 0x5253 /* "RS" */
static _Atomic int doorbell = -1;    /* kernel timer id */
static _Atomic pid_t doorbell_tid;

static void doorbell_retry(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int id = atomic_load(&doorbell);
    if (id < 0 || atomic_load(&doorbell_tid) != tid) {
        if (id >= 0 && atomic_compare_exchange_strong(&doorbell, &id, -1))
            syscall(SYS_timer_delete, id);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = atomic_load(&rs_sample_sig);
        sev.sigev_value.sival_int = DOORBELL_VALUE;
        sev._sigev_un._tid = tid;
        int nid = -1;
        if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &nid) != 0)
            return;
        int none = -1;
        if (!atomic_compare_exchange_strong(&doorbell, &none, nid)) {
            syscall(SYS_timer_delete, nid); /* another thread made one meanwhile */
            return;
        }
        atomic_store(&doorbell_tid, tid);
        id = nid;
    }
    struct itimerspec its = { { 0, 0 }, { 0, 1000000 } };
    syscall(SYS_timer_settime, id, 0, &its, NULL);
}

static void doorbell_off(void)
{
    int id = atomic_exchange(&doorbell, -1);
    if (id >= 0)
        syscall(SYS_timer_delete, id);
}

static int start_safe(void *ucv)
{
    if (atomic_load_explicit(&nlocked, memory_order_acquire) < 0) {
        if (!rs_dl_enter())
            return 0;
        int n = 0;
        dl_iterate_phdr(add_locked, &n);
        rs_dl_leave();
        atomic_store_explicit(&nlocked, n, memory_order_release);
    }
    uint64_t pc = (uint64_t)((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
    for (int i = 0; i < nfree; i++)
        if (pc >= free_text[i].lo && pc < free_text[i].hi)
            return 1;
    for (int i = 0, n = atomic_load_explicit(&nlocked, memory_order_acquire); i < n; i++)
        if (pc >= locked_text[i].lo && pc < locked_text[i].hi)
            return 0;
    return 1;
}

static _Atomic int unwinder_wanted, unwinder_asked;

void rs_sample_want_unwinder(void)
{
    if (rs_cfg.sample_hz > 0 && !atomic_exchange(&unwinder_wanted, 1))
        rs_writer_kick();
}

static void loader_start(void);

/* rs_now() at which the writer asks for the unwinder; 0: not due. */
static _Atomic uint64_t unwinder_due;

void rs_sample_load_unwinder_soon(void)
{
    if (rs_cfg.sample_hz > 0 && !rs_unwind_ready())
        atomic_store(&unwinder_due, rs_now() + RS_UNWINDER_AFTER_NS);
}

uint64_t rs_sample_writer_due(void)
{
    return atomic_load(&unwinder_due);
}

void rs_sample_ending(void)
{
    atomic_store(&unwinder_due, 0);
}

void rs_sample_load_unwinder(void)
{
    if (rs_cfg.sample_hz > 0 && !rs_unwind_ready()) {
        atomic_store(&unwinder_wanted, 1);
        loader_start();
    }
}

/* Runs fn inside the fork gate (unwind.c): a fork meanwhile waits for it,
 * for a child forked while this thread held the loader's locks would find
 * them held by no thread of its own. 0 when a child may never walk. */
static int gated(int (*fn)(void))
{
    for (;;) {
        if (rs_dl_enter()) {
            int r = fn();
            rs_dl_leave();
            return r;
        }
        if (rs_dl_shut())
            return -1;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
}

/* The unwinder's load and Python's set-up take the loader's lock (dlopen,
 * dlsym), which the writer never waits for: a thread of their own does
 * them, which nothing waits for. */
static void *loader_main(void *arg)
{
    (void)arg;
    rs_th.guard = 1;
    prctl(PR_SET_NAME, "ringside-load", 0, 0, 0);
    if (gated(rs_unwind_init) != 0)
        rs_sample_off();
    gated(rs_py_try_init);
    return NULL;
}

static void loader_start(void)
{
    if (!atomic_load(&unwinder_wanted) || atomic_exchange(&unwinder_asked, 1) || atomic_load(&rs_dying))
        return;
    pthread_t t;
    if (rs_thread_start(&t, loader_main, NULL, 256u << 10) != 0) {
        rs_notice("cannot start a thread to load libunwind.so.8; CPU samples are off");
        rs_sample_off();
    }
}

static void on_sample(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno;
    struct sthread *t = &me;
    t->hits++; /* whatever sent it, the signal is ours: a call it cut short is retried */
    if (RS_UNLIKELY(si->si_code == SI_QUEUE && si->si_value.sival_int == RS_STUCK_VALUE && si->si_pid == getpid())) {
        rs_wait_stuck(ucv); /* the hang watch asks where this thread waits (writer.c) */
        goto out;
    }
    /* Only our timer's signals, on a thread that has one. */
    if (si->si_code != SI_TIMER || !t->slot || !atomic_load_explicit(&sampler_on, memory_order_relaxed) ||
        !atomic_load_explicit(&rs_hot.on, memory_order_relaxed) || rs_in_vchild())
        goto out;
    int door = si->si_value.sival_int == DOORBELL_VALUE;
    if (RS_UNLIKELY(door) && atomic_load_explicit(&rs_hot.started, memory_order_relaxed))
        goto out; /* a retry's signal after all */
    /* Before the agent has started, or its unwinder has come: no sample
     * (the CPU time until then goes unsampled, as before the agent's
     * constructor, rather than weigh on a later stack it is not of). */
    if (RS_UNLIKELY(door || !atomic_load_explicit(&rs_hot.started, memory_order_relaxed) || !rs_unwind_ready())) {
        if (!door)
            t->last_cpu = thread_cpu_ns();
        if (!atomic_load_explicit(&rs_hot.started, memory_order_relaxed)) {
            if (!rs_th.guard && start_safe(ucv)) {
                doorbell_off();
                /* This sample wanted a stack: the unwinder loads now,
                 * not after the start's delay. */
                if (rs_agent_start() == 0)
                    rs_sample_want_unwinder();
            } else {
                doorbell_retry();
            }
        } else {
            rs_sample_want_unwinder();
        }
        goto out;
    }
    uint64_t ts = rs_ticks();
    /* The weight is the CPU time since the last sample, read from the same
     * clock: expiries come late by up to a kernel tick, are jittered, and
     * may have been taken during a blocking call without a sample. */
    uint64_t cpu = thread_cpu_ns();
    uint64_t weight = cpu - t->last_cpu;
    t->last_cpu = cpu;
    rearm_jittered(t);
    ucontext_t *uc = ucv;
    if (rs_loader_busy()) {
        drop(); /* the loader is changing the object list the unwinder reads */
        goto out;
    }
    /* The unwinder takes libunwind's own lock in places: the lock hooks
     * (hook_wait.c) must pass it straight through, as for any call the
     * agent makes, or a wait for that lock would unwind again, inside it,
     * and wait for itself. */
    int inside = rs_th.guard;
    rs_th.guard = 1;
    uint64_t sps[RS_STACK_MAX];
    rs_th.all_masked = 1;
    int n = rs_unwind(uc, t->scratch, sps, RS_STACK_MAX);
    rs_th.all_masked = 0;
    uint64_t native = rs_ticks();
    n = rs_py_splice(t->scratch, sps, n, RS_STACK_MAX);
    rs_th.guard = inside;
    uint64_t unwound = rs_ticks();
    if (inside) {
        /* The thread is inside the agent, maybe between reserving and
         * committing a record: keep the sample for the next handler. */
        if (rs_th.sample_npending) {
            drop();
        } else {
            memcpy(t->pending, t->scratch, (size_t)n * sizeof *t->scratch);
            rs_th.sample_npending = n;
            t->pend_ts = ts;
            t->pend_weight = weight;
        }
        goto out;
    }
    rs_th.guard = 1;
    if (rs_th.sample_npending) {
        put_sample(RSF_SAMPLE_CPU, RSF_WAIT_NONE, t->pend_ts, t->pend_weight, t->pending, rs_th.sample_npending);
        rs_th.sample_npending = 0;
    }
    put_sample(RSF_SAMPLE_CPU, RSF_WAIT_NONE, ts, weight, t->scratch, n);
    rs_th.guard = 0;
    atomic_fetch_add_explicit(&handled, 1, memory_order_relaxed);
    hist_add(&cost_native, native - ts);
    hist_add(&cost_python, unwound - native);
    hist_add(&cost_all, rs_ticks() - ts);
out:
    errno = saved;
}

RS_REAL_DECL(sigprocmask);
RS_REAL_DECL(pthread_sigmask);

/* The unwinder masks every signal around each of its locks (two system
 * calls, about 150 a sample of a deep C++ stack; libunwind 1.6 calls
 * sigprocmask, 1.8 pthread_sigmask); inside the sampling handler every
 * signal is already blocked, so that is answered here. */
static int all_masked_answer(sigset_t *old)
{
    if (old)
        sigfillset(old);
    return 0;
}

RS_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    if (RS_UNLIKELY(rs_th.all_masked))
        return all_masked_answer(old);
    return RS_REAL(sigprocmask)(how, set, old);
}

RS_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    if (RS_UNLIKELY(rs_th.all_masked))
        return all_masked_answer(old);
    return RS_REAL(pthread_sigmask)(how, set, old);
}

void rs_sample_resolve_early(void)
{
    /* A program's signal handler may be the first to call them: no
     * lookup there. */
    (void)RS_REAL(sigprocmask);
    (void)RS_REAL(pthread_sigmask);
}

/* ---- timers: raw system calls, so glibc's own timer bookkeeping (the
 * program's timer_create) is never involved ---- */

/* A timer on tid's CPU clock sending sig, started; its id, or -1. */
static int timer_make(pid_t tid, int sig)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev._sigev_un._tid = tid;
    int id = -1;
    if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &sev, &id) != 0)
        return -1;
    struct itimerspec its = {
        { (time_t)(interval_ns / 1000000000u), (long)(interval_ns % 1000000000u) },
        { (time_t)(interval_ns / 1000000000u), (long)(interval_ns % 1000000000u) },
    };
    syscall(SYS_timer_settime, id, 0, &its, NULL);
    return id;
}

/* Slot i's timer again, on the sampling signal as it is now. Whoever takes
 * the slot from its id does it; the thread's leaving meanwhile (slot 0)
 * wins, and the new timer goes. */
static void timer_retarget(int i)
{
    int v = atomic_load(&timers[i]);
    if (v <= 0 || !atomic_compare_exchange_strong(&timers[i], &v, SLOT_HELD))
        return;
    syscall(SYS_timer_delete, v - 1);
    int id = timer_make(atomic_load(&tids[i]), atomic_load(&rs_sample_sig));
    if (id < 0)
        return; /* held, with no timer: the thread goes unsampled */
    int held = SLOT_HELD;
    if (!atomic_compare_exchange_strong(&timers[i], &held, id + 1))
        syscall(SYS_timer_delete, id);
}

static void thread_arm(void)
{
    if (!atomic_load(&sampler_on) || me.slot)
        return;
    int saved = errno;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < RS_MAX_TIMERS; i++) {
        int expect = 0;
        timers_hw_raise(i + 1);
        if (!atomic_compare_exchange_strong(&timers[i], &expect, SLOT_HELD))
            continue;
        atomic_store(&tids[i], tid);
        me.slot = i + 1;
        me.last_cpu = thread_cpu_ns();
        me.rnd = ((uint64_t)tid << 32) ^ rs_ticks() ^ 0x9e3779b97f4a7c15ull;
        int sig = atomic_load(&rs_sample_sig);
        int id = timer_make(tid, sig);
        int held = SLOT_HELD;
        if (id < 0)
            drop();
        else if (!atomic_compare_exchange_strong(&timers[i], &held, id + 1))
            syscall(SYS_timer_delete, id); /* the sampler stepped aside meanwhile */
        else if (atomic_load(&rs_sample_sig) != sig)
            timer_retarget(i); /* it moved meanwhile, and may have passed this slot by */
        errno = saved;
        return;
    }
    drop();
    errno = saved;
}

static void thread_disarm(void)
{
    if (!me.slot)
        return;
    int saved = errno;
    int v = atomic_exchange(&timers[me.slot - 1], 0);
    me.slot = 0;
    if (v > 0)
        syscall(SYS_timer_delete, v - 1);
    if (rs_th.sample_npending)
        drop();
    rs_th.sample_npending = 0;
    errno = saved;
}

void rs_sample_off(void)
{
    if (!atomic_exchange(&sampler_on, 0))
        return;
    for (int i = 0, n = atomic_load(&timers_hw); i < n; i++) {
        int v = atomic_exchange(&timers[i], 0);
        if (v > 0)
            syscall(SYS_timer_delete, v - 1);
    }
}

static int pick_signal(int except);

int rs_sample_is_ours(const struct sigaction *act)
{
    return act && (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == on_sample;
}

void rs_sample_yield(void)
{
    static atomic_flag moving = ATOMIC_FLAG_INIT;
    static _Atomic int said;
    if (!atomic_load(&sampler_on) || atomic_flag_test_and_set(&moving))
        return;
    int old = atomic_load(&rs_sample_sig);
    int sig = pick_signal(old);
    doorbell_off(); /* its signal was the old one: the next expiry makes another */
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_sample;
    act.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&act.sa_mask);
    if (sig && RS_REAL(sigaction)(sig, &act, NULL) == 0) {
        /* Every thread's timer to the new signal, then the old one is the
         * program's (its sigaction goes on after this returns). */
        atomic_store(&rs_sample_sig, sig);
        for (int i = 0, n = atomic_load(&timers_hw); i < n; i++)
            timer_retarget(i);
        if (!atomic_exchange(&said, 1))
            rs_notice("the program takes signal %d, which sampled CPU stacks; they are sampled with signal %d now",
                      old, sig);
        else
            rs_debug("the program takes signal %d; CPU stacks are sampled with signal %d now", old, sig);
        atomic_flag_clear(&moving);
        return;
    }
    rs_sample_off();
    rs_notice("the program takes signal %d, which sampled CPU stacks, and no other real-time signal is free; "
              "CPU samples are off",
              old);
    atomic_flag_clear(&moving);
}

/* ---- threads ---- */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void thread_end(void *arg)
{
    (void)arg;
    thread_disarm();
}

static void *thread_start(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    rs_unwind_stack_top((uint64_t)(uintptr_t)__builtin_frame_address(0));
    thread_arm();
    void *ret;
    pthread_cleanup_push(thread_end, NULL);
    ret = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return ret;
}

RS_REAL_DECL(pthread_create);

/* Threads the program starts get a timer of their own. Threads started
 * some other way (a raw clone, or a library constructor that ran before
 * the agent's) have none and are not sampled. */
RS_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (rs_th.guard || !atomic_load_explicit(&sampler_on, memory_order_relaxed))
        return RS_REAL(pthread_create)(th, attr, fn, arg);
    struct start *s = malloc(sizeof *s);
    if (!s)
        return RS_REAL(pthread_create)(th, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    int r = RS_REAL(pthread_create)(th, attr, thread_start, s);
    if (r)
        free(s);
    return r;
}

/* ---- start ---- */

/* A real-time signal nobody has claimed, other than except: from
 * SIGRTMAX-2 down, skipping the top ones and SIGRTMIN..+2, which programs
 * pick first. */
static int pick_signal(int except)
{
    for (int s = SIGRTMAX - 2; s >= SIGRTMIN + 3; s--) {
        struct sigaction old;
        if (s != except && RS_REAL(sigaction)(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            return s;
    }
    return 0;
}

void rs_sample_init(void)
{
    rs_wait_ns = (uint64_t)rs_cfg.wait_us * 1000u;
    rs_hot.wait_ticks = rs_wait_ns; /* until the writer knows the tick rate */
    gpu_stack_every = (uint32_t)rs_cfg.gpu_stack_every;
    rs_modules_init();
    if (rs_cfg.sample_hz <= 0)
        return;
    malloc_at = dlsym(RTLD_DEFAULT, "malloc");
    interval_ns = 1000000000u / (uint64_t)rs_cfg.sample_hz;
    int sig = pick_signal(0);
    if (!sig) {
        rs_notice("no free real-time signal; CPU samples are off");
        return;
    }
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_sample;
    act.sa_flags = SA_SIGINFO | SA_RESTART;
    /* Every signal held off while the handler runs (tens of microseconds):
     * no handler of the program's can run inside an unwind holding the
     * unwinder's locks, and the unwinder's own masking is then free
     * (rs_th.all_masked). */
    sigfillset(&act.sa_mask);
    if (RS_REAL(sigaction)(sig, &act, NULL) != 0) {
        rs_notice("cannot install the sampling signal %d; CPU samples are off", sig);
        return;
    }
    atomic_store(&rs_sample_sig, sig);
    atomic_store(&sampler_on, 1);
    rs_unwind_stack_top((uint64_t)(uintptr_t)__libc_stack_end);
    thread_arm();
}

void rs_sample_forked(void)
{
    /* Timers are not inherited: only this thread lives, with none. */
    atomic_store(&doorbell, -1);
    for (int i = 0, n = atomic_load(&timers_hw); i < n; i++)
        atomic_store(&timers[i], 0);
    atomic_store(&timers_hw, 0);
    me.slot = 0;
    rs_th.sample_npending = 0;
    atomic_store(&run_delay_series, 0);
    rs_py_forked();
    /* A load under way in the parent is not the child's: it asks again,
     * when a sample wants it or as after a start. */
    if (!rs_unwind_ready()) {
        int asked = atomic_load(&unwinder_wanted) || atomic_load(&unwinder_due);
        atomic_store(&unwinder_wanted, 0);
        atomic_store(&unwinder_asked, 0);
        atomic_store(&unwinder_due, 0);
        if (asked)
            rs_sample_load_unwinder_soon();
    }
    thread_arm();
}

/* Before exec: this thread's timer goes, and a signal of it still pending
 * is taken, or it would kill the new image (default action). Others' die
 * with their threads. Returns whether the timer must come back (exec failed). */
int rs_sample_before_exec(void)
{
    doorbell_off();
    if (!me.slot)
        return 0;
    thread_disarm();
    sigset_t ours, old;
    sigemptyset(&ours);
    sigaddset(&ours, rs_sample_sig);
    pthread_sigmask(SIG_BLOCK, &ours, &old);
    struct timespec zero = { 0, 0 };
    while (syscall(SYS_rt_sigtimedwait, &ours, NULL, &zero, _NSIG / 8) == rs_sample_sig)
        ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 1;
}

void rs_sample_after_exec_failed(void)
{
    thread_arm();
}

/* Python's set-up in a program that loads libpython itself: its lookups
 * (dlsym) take the loader's lock, which the writer never waits for (a hook
 * waiting for the writer may hold it), so a thread of its own does them,
 * once a module poll has seen the library; nothing waits for that thread. */
static void *py_late_main(void *arg)
{
    (void)arg;
    rs_th.guard = 1;
    gated(rs_py_try_init);
    return NULL;
}

static void py_late_start(void)
{
    static int started;
    if (started || !atomic_load(&unwinder_asked) || atomic_load(&rs_py_ready) || !rs_modules_python_loaded() ||
        atomic_load(&rs_dying))
        return;
    started = 1;
    pthread_t t;
    if (rs_thread_start(&t, py_late_main, NULL, 64u << 10) != 0)
        rs_debug("cannot start a thread to find Python; Python frames are not recorded");
}

void rs_sample_writer_tick(const struct rs_tick_map *map)
{
    if (map->ns_per_tick > 0) {
        ns_per_tick = map->ns_per_tick;
        rs_hot.wait_ticks = (uint64_t)((double)rs_wait_ns / map->ns_per_tick);
    }
    uint64_t due = atomic_load(&unwinder_due);
    if (due && rs_now() >= due && atomic_compare_exchange_strong(&unwinder_due, &due, 0))
        atomic_store(&unwinder_wanted, 1);
    loader_start();
    py_late_start();
}

__attribute__((destructor)) static void sample_stats(void)
{
    uint64_t n = atomic_load(&handled);
    if (n)
        rs_debug("sampler: %llu samples; handler median %.0f ns (mean %.0f), native unwinding median %.0f ns "
                 "(mean %.0f), Python frames median %.0f ns (mean %.0f)",
                 (unsigned long long)n, hist_median(&cost_all) * ns_per_tick,
                 (double)atomic_load(&cost_all.sum) * ns_per_tick / (double)n,
                 hist_median(&cost_native) * ns_per_tick,
                 (double)atomic_load(&cost_native.sum) * ns_per_tick / (double)n,
                 hist_median(&cost_python) * ns_per_tick,
                 (double)atomic_load(&cost_python.sum) * ns_per_tick / (double)n);
}

/* ---- stacks from ordinary code: wait samples ---- */

int rs_stack_capture(uint64_t *buf, int max)
{
    uint64_t sps[RS_STACK_MAX];
    int n = rs_unwind(NULL, buf, sps, max < RS_STACK_MAX ? max : RS_STACK_MAX);
    int skip = 0;
    while (skip < n && rs_unwind_is_agent(buf[skip]))
        skip++;
    memmove(buf, buf + skip, (size_t)(n - skip) * sizeof *buf);
    return rs_py_splice(buf, sps + skip, n - skip, max);
}

void rs_sample_flush_pending(void)
{
    /* A handler that runs meanwhile sees the slot taken and drops its
     * sample rather than overwrite this one. */
    uint64_t buf[RS_STACK_MAX];
    int n = rs_th.sample_npending;
    memcpy(buf, me.pending, (size_t)n * sizeof *buf);
    put_sample(RSF_SAMPLE_CPU, RSF_WAIT_NONE, me.pend_ts, me.pend_weight, buf, n);
    rs_th.sample_npending = 0;
}

static __thread uint32_t launches RS_TLS;

void rs_gpu_stack_sample(uint64_t t0)
{
    if (gpu_stack_every && launches++ % gpu_stack_every == 0)
        rs_gpu_stack_sample_always(t0);
}

void rs_gpu_stack_sample_always(uint64_t t0)
{
    if (!rs_unwind_ready()) {
        rs_sample_want_unwinder();
        return;
    }
    uint64_t buf[RS_STACK_MAX];
    int n = rs_stack_capture(buf, RS_STACK_MAX);
    put_sample(RSF_SAMPLE_GPU | RS_SAMPLE_NS, RSF_WAIT_NONE, t0, 0, buf, n);
}

/* The main thread's run delay (trace.fbs's series run_delay): at the end
 * of each of its waits long enough for a wait sample, the time it has
 * spent runnable without a CPU so far, the second figure of
 * /proc/thread-self/schedstat, as a point. A thread woken from a sync
 * that cannot run for want of a CPU leaves the GPU idle, and the reporter
 * tells that from the sync's own cost (critpath.h). Three system calls,
 * after a wait of a millisecond or more; other threads' waits read
 * nothing. The series is defined on the first point (again in a forked
 * child's file). Holds guard; errno kept. */
static void run_delay_point(int reason)
{
    /* a process that only waits for children, pipes or time (a launcher,
     * a shell) makes no file for it */
    if ((!atomic_load_explicit(&rs_have_file, memory_order_relaxed) && !rs_wait_opens_file(reason)) || !rs_th.self ||
        (pid_t)rs_th.self->tid != getpid())
        return;
    int e = errno;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = e;
        return;
    }
    char b[96];
    ssize_t n = syscall(SYS_read, fd, b, sizeof b - 1);
    syscall(SYS_close, fd);
    errno = e;
    if (n <= 0)
        return;
    b[n] = 0;
    /* "<on cpu ns> <run delay ns> <slices>" */
    const char *q = b;
    while (*q >= '0' && *q <= '9')
        q++;
    if (*q != ' ')
        return;
    uint64_t delay = 0;
    int digits = 0;
    for (q++; *q >= '0' && *q <= '9'; q++, digits++)
        delay = delay * 10 + (uint64_t)(*q - '0');
    if (!digits)
        return;
    int was = rs_guard_hold();
    uint32_t id = atomic_load(&run_delay_series);
    if (!id) {
        id = rs_series_define(RSF_SERIES_RUN_DELAY, RSF_LINK_NONE, "main", -1, 0);
        atomic_store(&run_delay_series, id);
    }
    rs_series_point(id, rs_now(), delay);
    rs_guard_restore(was);
}

void rs_wait_sample_ns_slow(uint64_t t0, uint64_t t1, int reason)
{
    if (!atomic_load_explicit(&rs_hot.on, memory_order_relaxed) || !rs_unwind_ready())
        return;
    uint64_t buf[RS_STACK_MAX];
    int n = rs_stack_capture(buf, RS_STACK_MAX);
    put_sample(RSF_SAMPLE_WAIT | RS_SAMPLE_NS, reason, t0, t1 - t0, buf, n);
    run_delay_point(reason);
}

void rs_wait_sample_slow(uint64_t t0, uint64_t t1, int reason)
{
    if (!atomic_load_explicit(&rs_hot.on, memory_order_relaxed))
        return;
    /* A process whose first event is a wait on a lock, a condition, a
     * file (one that only waits keeps its trace): the agent starts, and
     * this thread, which has just waited that long anyway, waits for the
     * unwinder a little more; a bound, as the loading thread may need the
     * loader's lock, which a thread waiting inside a library's constructor
     * holds (its sample then has no stack). */
    if (!rs_unwind_ready()) {
        /* A wait on a child, pipe, socket, poll or sleep starts nothing
         * (a shell's, a launcher's). */
        if (rs_cfg.sample_hz <= 0 ||
            (!atomic_load_explicit(&rs_hot.started, memory_order_relaxed) && !rs_wait_opens_file(reason)) ||
            rs_agent_start() != 0)
            return;
        rs_sample_load_unwinder();
        for (int i = 0; i < 200 && !rs_unwind_ready() && atomic_load(&unwinder_asked); i++) {
            struct timespec half_ms = { 0, 500000 };
            nanosleep(&half_ms, NULL);
        }
        if (!rs_unwind_ready())
            return;
    }
    uint64_t buf[RS_STACK_MAX];
    int n = rs_stack_capture(buf, RS_STACK_MAX);
    put_sample(RSF_SAMPLE_WAIT, reason, t0, t1 - t0, buf, n);
    run_delay_point(reason);
}

/* The stack without buf's first k frames (and sps'), Python's frames
 * spliced in: its new length. */
static int stack_from(uint64_t *buf, uint64_t *sps, int n, int k)
{
    memmove(buf, buf + k, (size_t)(n - k) * sizeof *buf);
    memmove(sps, sps + k, (size_t)(n - k) * sizeof *sps);
    return rs_py_splice(buf, sps, n - k, RS_STACK_MAX);
}

/* Where a blocking call's caller's frames begin: past the frames from k on
 * that are not the agent's (the C library's call, a driver's), then the
 * agent's (the hook the program called); k when there is no hook. */
static int past_hook(const uint64_t *buf, int n, int k)
{
    int h = k;
    while (h < n && !rs_unwind_is_agent(buf[h]))
        h++;
    if (h == n)
        return k;
    while (h < n && rs_unwind_is_agent(buf[h]))
        h++;
    return h;
}

/* A mark of kind, with sig, at t1 and since t0 (ticks). Call with guard
 * held. */
static void put_mark(int kind, int sig, uint64_t t0, uint64_t t1)
{
    struct rs_rec_mark *r = rs_reserve(sizeof *r, RS_REC_MARK);
    if (r) {
        r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_MARK, 0, 0 };
        r->m = (struct rsf_mark){ .ts_ns = t1, .since_ns = t0, .kind = (uint8_t)kind, .sig = (uint8_t)sig };
        rs_commit(sizeof *r);
    }
}

void rs_wait_stuck(void *ucv)
{
    uint64_t t0 = rs_th.wait_t0;
    if (!t0 || rs_th.guard || !atomic_load_explicit(&rs_hot.on, memory_order_relaxed) || !rs_unwind_ready())
        return;
    int e = errno;
    rs_th.guard = 1;
    uint64_t now = rs_ticks();
    uint64_t buf[RS_STACK_MAX], sps[RS_STACK_MAX];
    rs_th.all_masked = 1;
    int n = rs_unwind(ucv, buf, sps, RS_STACK_MAX);
    rs_th.all_masked = 0;
    /* from the interrupted call: the C library's, then the hook (ours) */
    n = stack_from(buf, sps, n, past_hook(buf, n, 0));
    put_sample(RSF_SAMPLE_WAIT, rs_th.wait_reason, t0, now - t0, buf, n);
    /* the wait's sample at its end takes the rest */
    rs_th.wait_t0 = now;
    struct rs_thread *self = rs_th.self;
    if (self) {
        atomic_store_explicit(&self->stuck_t0, now, memory_order_relaxed);
        atomic_store_explicit(&self->wait_t0, now, memory_order_relaxed);
    }
    rs_th.guard = 0;
    errno = e;
}

__thread uintptr_t rs_sync_frame RS_TLS;

void rs_wait_interrupted(int sig)
{
    uint64_t t0 = rs_th.wait_t0;
    int guard = rs_th.guard;
    if ((guard && !rs_th.in_sync) || !atomic_load_explicit(&rs_hot.on, memory_order_relaxed))
        return;
    int e = errno;
    rs_th.guard = 1;
    rs_th.wait_t0 = 0;
    uint64_t t1 = rs_ticks();
    put_mark(RSF_MARK_KILLED, sig, t0, t1);   /* since t0: the wait it was in, 0 none */
    if (!t0 || !rs_unwind_ready()) {
        rs_th.guard = guard;
        errno = e;
        return;
    }
    uint64_t buf[RS_STACK_MAX], sps[RS_STACK_MAX];
    int n = rs_unwind(NULL, buf, sps, RS_STACK_MAX);
    /* the handler (ours), the C library's call the signal interrupted, the
     * hook (ours): the stack starts at the hook's caller */
    int k = 0;
    if (rs_th.in_sync && rs_sync_frame) {
        /* a blocking CUDA call: the frames above its hook's */
        while (k < n && sps[k] <= rs_sync_frame)
            k++;
        if (k == n)
            k = 0;
    } else {
        while (k < n && rs_unwind_is_agent(buf[k]))
            k++;
        k = past_hook(buf, n, k);
    }
    n = stack_from(buf, sps, n, k);
    put_sample(RSF_SAMPLE_WAIT, rs_th.wait_reason, t0, t1 - t0, buf, n);
    rs_th.guard = guard;
    errno = e;
}

void rs_sample_fatal(int sig, const void *ucv)
{
    if (rs_th.guard || !atomic_load_explicit(&rs_hot.on, memory_order_relaxed))
        return;
    int e = errno;
    rs_th.guard = 1;
    uint64_t now = rs_ticks();
    if (rs_unwind_ready()) {
        uint64_t buf[RS_STACK_MAX], sps[RS_STACK_MAX];
        int n = rs_unwind(NULL, buf, sps, RS_STACK_MAX);
        /* from the interrupted instruction on: the handler (ours) and the
         * kernel's return trampoline before it are not the program's */
        uint64_t pc = ucv ? (uint64_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP] : 0;
        int k = 0;
        while (k < n && rs_unwind_is_agent(buf[k]))
            k++;
        int at = k;
        while (at < n && pc && buf[at] != pc && buf[at] + 1 != pc && buf[at] != pc + 1)
            at++;
        k = at < n ? at : k + 1 < n ? k + 1 : k;
        n = stack_from(buf, sps, n, k);
        put_sample(RSF_SAMPLE_CPU, RSF_WAIT_NONE, now, 0, buf, n);
    }
    put_mark(RSF_MARK_FATAL, sig, 0, now);
    rs_th.guard = 0;
    errno = e;
}

void rs_wait_note(uint64_t t0, uint64_t t1, int reason)
{
    int e = errno;
    rs_th.guard = 1;
    rs_wait_sample(t0, t1, reason);
    rs_th.guard = 0;
    errno = e;
}

/* ---- calls the kernel never restarts after a handler ran ----
 * nanosleep, poll, select, epoll_wait, sigtimedwait... fail with EINTR
 * whatever SA_RESTART says. A CPU-time timer rarely fires inside them (the
 * thread uses no CPU while it sleeps), but it can on the way in; so the
 * sampling signal is blocked for their duration and arrives after. */

static inline int block_ours(sigset_t *old)
{
    if (!me.slot || !atomic_load_explicit(&sampler_on, memory_order_relaxed) || rs_in_vchild())
        return 0;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, rs_sample_sig);
    return pthread_sigmask(SIG_BLOCK, &s, old) == 0;
}

/* An expiry that came during the call is taken here rather than handled
 * at wake-up: the CPU time it stands for was spent before the call, and a
 * handler right at wake-up would delay the thread when it has just become
 * ready. That time weighs on the thread's next sample. */
static inline void unblock_ours(int blocked, const sigset_t *old)
{
    if (blocked) {
        int e = errno;
        sigset_t pend;
        if (sigpending(&pend) == 0 && sigismember(&pend, rs_sample_sig)) {
            sigset_t ours;
            siginfo_t si;
            struct timespec zero = { 0, 0 };
            sigemptyset(&ours);
            sigaddset(&ours, rs_sample_sig);
            syscall(SYS_rt_sigtimedwait, &ours, &si, &zero, _NSIG / 8);
        }
        pthread_sigmask(SIG_SETMASK, old, NULL);
        errno = e;
    }
}

/* A copy of a caller's signal mask with ours added (mask arguments of
 * ppoll, pselect, epoll_pwait, sigsuspend replace the thread's mask). */
static const sigset_t *with_ours(const sigset_t *m, sigset_t *copy)
{
    if (!m || !me.slot || !atomic_load_explicit(&sampler_on, memory_order_relaxed) || rs_in_vchild())
        return m;
    *copy = *m;
    sigaddset(copy, rs_sample_sig);
    return copy;
}

/* A copy of a set of signals to wait for without ours. */
static const sigset_t *without_ours(const sigset_t *m, sigset_t *copy)
{
    if (!m || !rs_sample_sig || !sigismember(m, rs_sample_sig))
        return m;
    *copy = *m;
    sigdelset(copy, rs_sample_sig);
    return copy;
}

#define RS_QUIET(T, CALL)                   \
    do {                                    \
        sigset_t old_;                      \
        int b_ = block_ours(&old_);         \
        T r_ = CALL;                        \
        unblock_ours(b_, &old_);            \
        return r_;                          \
    } while (0)

RS_REAL_DECL(nanosleep);
RS_REAL_DECL(clock_nanosleep);
RS_REAL_DECL(usleep);
RS_REAL_DECL(sleep);
RS_REAL_DECL(pause);
RS_REAL_DECL(poll);
RS_REAL_DECL(ppoll);
RS_REAL_DECL(select);
RS_REAL_DECL(pselect);
RS_REAL_DECL(epoll_wait);
RS_REAL_DECL(epoll_pwait);
RS_REAL_DECL(epoll_pwait2);
RS_REAL_DECL(sigsuspend);
RS_REAL_DECL(sigwait);
RS_REAL_DECL(sigwaitinfo);
RS_REAL_DECL(sigtimedwait);
RS_REAL_DECL(signalfd);

/* Signals the program has handlers for (set through sigaction/signal):
 * while there are none, an EINTR can only come from the sampling signal. */
static _Atomic uint64_t app_handlers[2];

void rs_sample_note_handler(int sig, const struct sigaction *act)
{
    if (!act || sig <= 0 || sig >= 128 || sig == rs_sample_sig)
        return;
    uint64_t bit = 1ull << (sig & 63);
    if ((act->sa_flags & SA_SIGINFO) || (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN))
        atomic_fetch_or(&app_handlers[sig >> 6], bit);
    else
        atomic_fetch_and(&app_handlers[sig >> 6], ~bit);
}

/* 1: sleep and, if the sampling signal (and nothing else can have)
 * interrupted it, sleep on; 2: keep the signal out meanwhile (the program
 * has handlers that may interrupt the call too); 0: plain call. Retrying
 * costs no system call, which matters to programs that sleep to keep time. */
static inline int sleep_mode(void)
{
    if (!me.slot || !atomic_load_explicit(&sampler_on, memory_order_relaxed) || rs_in_vchild())
        return 0;
    return atomic_load_explicit(&app_handlers[0], memory_order_relaxed) ||
           atomic_load_explicit(&app_handlers[1], memory_order_relaxed) ? 2 : 1;
}

static int quiet_nanosleep(const struct timespec *req, struct timespec *rem)
{
    int mode = req ? sleep_mode() : 0;
    if (mode == 2)
        RS_QUIET(int, RS_REAL(nanosleep)(req, rem));
    if (mode == 0)
        return RS_REAL(nanosleep)(req, rem);
    struct timespec left = *req, r2;
    for (;;) {
        uint32_t h = me.hits;
        int r = RS_REAL(nanosleep)(&left, &r2);
        if (r == 0 || errno != EINTR || me.hits == h) {
            if (r != 0 && errno == EINTR && rem)
                *rem = r2;
            return r;
        }
        left = r2;
    }
}

static int quiet_clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
    int mode = req ? sleep_mode() : 0;
    if (mode == 2)
        RS_QUIET(int, RS_REAL(clock_nanosleep)(c, flags, req, rem));
    if (mode == 0)
        return RS_REAL(clock_nanosleep)(c, flags, req, rem);
    struct timespec left = *req, r2;
    for (;;) {
        uint32_t h = me.hits;
        int r = RS_REAL(clock_nanosleep)(c, flags, &left, &r2);
        if (r != EINTR || me.hits == h) {
            if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
                *rem = r2;
            return r;
        }
        if (!(flags & TIMER_ABSTIME))
            left = r2;
    }
}

static int quiet_usleep(useconds_t us)
{
    RS_QUIET(int, RS_REAL(usleep)(us));
}

static unsigned quiet_sleep(unsigned s)
{
    RS_QUIET(unsigned, RS_REAL(sleep)(s));
}

RS_EXPORT int pause(void)
{
    RS_QUIET(int, RS_REAL(pause)());
}

static int quiet_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    RS_QUIET(int, RS_REAL(poll)(fds, n, timeout));
}

static int quiet_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(ppoll)(fds, n, t, with_ours(m, &c)));
}

static int quiet_select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    RS_QUIET(int, RS_REAL(select)(n, r, w, e, t));
}

static int quiet_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *m)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(pselect)(n, r, w, e, t, with_ours(m, &c)));
}

static int quiet_epoll_wait(int fd, struct epoll_event *ev, int n, int timeout)
{
    RS_QUIET(int, RS_REAL(epoll_wait)(fd, ev, n, timeout));
}

static int quiet_epoll_pwait(int fd, struct epoll_event *ev, int n, int timeout, const sigset_t *m)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(epoll_pwait)(fd, ev, n, timeout, with_ours(m, &c)));
}

static int quiet_epoll_pwait2(int fd, struct epoll_event *ev, int n, const struct timespec *t,
                              const sigset_t *m)
{
    sigset_t c;
    if (!RS_REAL(epoll_pwait2)) { /* a C library before 2.35 */
        errno = ENOSYS;
        return -1;
    }
    RS_QUIET(int, RS_REAL(epoll_pwait2)(fd, ev, n, t, with_ours(m, &c)));
}

RS_EXPORT int sigsuspend(const sigset_t *m)
{
    sigset_t c;
    return RS_REAL(sigsuspend)(with_ours(m, &c));
}

RS_EXPORT int sigwait(const sigset_t *set, int *sig)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(sigwait)(without_ours(set, &c), sig));
}

RS_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(sigwaitinfo)(without_ours(set, &c), info));
}

RS_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t)
{
    sigset_t c;
    RS_QUIET(int, RS_REAL(sigtimedwait)(without_ours(set, &c), info, t));
}

RS_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
    sigset_t c;
    return RS_REAL(signalfd)(fd, without_ours(mask, &c), flags);
}

/* The same, timed for their wait samples; a call that cannot wait (a zero
 * timeout) is not timed. */

static inline int zero_ts(const struct timespec *t)
{
    return t && t->tv_sec == 0 && t->tv_nsec == 0;
}

RS_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    RS_WAIT_TIMED(int, RSF_WAIT_SLEEP, quiet_nanosleep(req, rem));
}

RS_EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
    RS_WAIT_TIMED(int, RSF_WAIT_SLEEP, quiet_clock_nanosleep(c, flags, req, rem));
}

RS_EXPORT int usleep(useconds_t us)
{
    RS_WAIT_TIMED(int, RSF_WAIT_SLEEP, quiet_usleep(us));
}

RS_EXPORT unsigned sleep(unsigned sec)
{
    RS_WAIT_TIMED(unsigned, RSF_WAIT_SLEEP, quiet_sleep(sec));
}

RS_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (timeout == 0)
        return quiet_poll(fds, n, timeout);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_poll(fds, n, timeout));
}

RS_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m)
{
    if (zero_ts(t))
        return quiet_ppoll(fds, n, t, m);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_ppoll(fds, n, t, m));
}

RS_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{
    if (t && t->tv_sec == 0 && t->tv_usec == 0)
        return quiet_select(n, r, w, e, t);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_select(n, r, w, e, t));
}

RS_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *m)
{
    if (zero_ts(t))
        return quiet_pselect(n, r, w, e, t, m);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_pselect(n, r, w, e, t, m));
}

RS_EXPORT int epoll_wait(int fd, struct epoll_event *ev, int n, int timeout)
{
    if (timeout == 0)
        return quiet_epoll_wait(fd, ev, n, timeout);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_epoll_wait(fd, ev, n, timeout));
}

RS_EXPORT int epoll_pwait(int fd, struct epoll_event *ev, int n, int timeout, const sigset_t *m)
{
    if (timeout == 0)
        return quiet_epoll_pwait(fd, ev, n, timeout, m);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_epoll_pwait(fd, ev, n, timeout, m));
}

RS_EXPORT int epoll_pwait2(int fd, struct epoll_event *ev, int n, const struct timespec *t,
                           const sigset_t *m)
{
    if (zero_ts(t))
        return quiet_epoll_pwait2(fd, ev, n, t, m);
    RS_WAIT_TIMED(int, RSF_WAIT_POLL, quiet_epoll_pwait2(fd, ev, n, t, m));
}
