/* The agent's life cycle: start-up in the constructor (settings, buffers,
 * fd table, writer thread), and every way a process can end or change
 * image: exit (destructor), _exit, exec, fork (the child gets its own file),
 * SIGTERM/SIGINT, whose default action is preceded by a last flush, and the
 * fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), whose default
 * action is preceded by the thread's stack, a fatal mark and a last flush;
 * any handler the program installs for them is left to the program. */
#include "preload/agent.h"
#include "preload/nvml.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static _Atomic int finished;

void *rs_resolve(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p)
        rs_notice("cannot find the real %s: %s", name, dlerror());
    return p;
}

/* ---- the start at the first event (agent.h, rs_agent_start) ---- */

enum { START_DORMANT, START_GOING, START_DONE, START_NEVER };
static _Atomic uint32_t start_state;
/* Set on the thread that is starting the agent: a signal handler of ours
 * that interrupts it there must not wait for itself. */
static __thread int starting_here RS_TLS;

static void start_wait(void)
{
    while (!starting_here && atomic_load(&start_state) == START_GOING)
        syscall(SYS_futex, &start_state, FUTEX_WAIT_PRIVATE, START_GOING, NULL, NULL, 0);
}

int rs_agent_start(void)
{
    uint32_t st = atomic_load(&start_state);
    if (st == START_DORMANT && atomic_compare_exchange_strong(&start_state, &st, START_GOING)) {
        int saved = errno, was = rs_th.guard, cs = rs_nocancel();
        rs_th.guard = 1;
        starting_here = 1;
        int r = rs_ring_init();
        if (r != 0)
            rs_notice("cannot reserve %zu MiB for buffers; tracing is off", rs_cfg.buffer_bytes >> 20);
        if (r == 0 && rs_hot.io_active && rs_fdtab_start() != 0) {
            rs_notice("cannot set up the fd table; file I/O is not recorded");
            rs_hot.io_active = 0;
        }
        if (r == 0 && (r = rs_writer_start()) != 0)
            rs_notice("cannot start the writer thread; tracing is off");
        /* Stacks (CPU samples, and the wait samples a first long call
         * wants) need the unwinder, loaded on a thread of its own a few
         * milliseconds on (sample.h): most short processes end first. */
        if (r == 0)
            rs_sample_load_unwinder_soon();
        starting_here = 0;
        if (r != 0)
            atomic_store(&rs_hot.on, 0);
        atomic_store(&rs_hot.started, 1);
        atomic_store(&start_state, r == 0 ? START_DONE : START_NEVER);
        syscall(SYS_futex, &start_state, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
        rs_th.guard = was;
        rs_cancel_restore(cs);
        errno = saved;
        return r;
    }
    start_wait();
    return atomic_load(&start_state) == START_DONE ? 0 : -1;
}

int rs_agent_start_by(int kind)
{
    int r = rs_agent_start();
    if (r == 0 && kind > RS_REC_IO_LONG)
        rs_sample_load_unwinder();
    return r;
}

/* At the end: 1 when the agent never started and now never will (no event
 * was recorded), 0 when it runs (started meanwhile by another thread
 * included). */
static int stay_dormant(void)
{
    uint32_t st = START_DORMANT;
    if (atomic_compare_exchange_strong(&start_state, &st, START_NEVER)) {
        atomic_store(&rs_hot.started, 1);
        return 1;
    }
    start_wait();
    return atomic_load(&start_state) != START_DONE;
}

/* Writes out everything and the end mark; recording stops. A second caller
 * (SIGTERM arriving during _exit's flush) must not return before the first
 * one's flush is on disk, or the process dies mid-write: it asks for a
 * flush of its own, which the writer serves after the first. */
void rs_finish(void)
{
    int saved = errno, cs = rs_nocancel();
    /* A process that recorded no event ends with nothing to write: the
     * agent never starts (the names of files it inherited go unwritten,
     * as a started agent would not write them alone either). */
    if (!stay_dormant()) {
        /* The node's last sample, before the end is claimed: a signal that
         * ends the process during it finds the end unclaimed and writes it. */
        rs_metrics_final();
        rs_sample_ending();
        int first = !atomic_exchange(&finished, 1);
        rs_writer_flush(first);
    }
    atomic_store(&rs_hot.on, 0);
    rs_cancel_restore(cs);
    errno = saved;
}

/* ---- SIGTERM, SIGINT and the fatal signals ----
 * The program sees the dispositions it set (or inherited), never ours. When
 * its disposition is the default (death), ours runs instead: flush, then die
 * of the same signal. A handler or SIG_IGN of the program's is installed as
 * it is; such a program exits its own way, through the paths above. The
 * first two are the ends a launcher or a scheduler asks for; the rest
 * (from NSIG_ENDS on) are a crash: a fault, or abort() (PyTorch's NCCL
 * watchdog on a collective's timeout). */

#define NSIG_ENDS 2
static const int fatal_sigs[] = { SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
#define NSIG_OURS ((int)(sizeof fatal_sigs / sizeof fatal_sigs[0]))
static struct sigaction app_act[NSIG_OURS];
static int sig_virtual;
static _Atomic int crashing;
RS_REAL_DECL(sigaction);
RS_REAL_DECL(signal);

static int sig_index(int sig)
{
    for (int i = 0; i < NSIG_OURS; i++)
        if (fatal_sigs[i] == sig)
            return i;
    return -1;
}

_Atomic int rs_dying;

/* A process-directed SIGTERM or SIGINT may reach a thread other than the
 * main one (the kernel passes over a thread with another signal pending: a
 * sample's), a driver's own even, which the agent does not record: the
 * main thread's wait, where the process was when it was ended (a stuck
 * rank's sync, hang.h), would go unwritten. Such a thread hands the signal
 * to the main thread and returns once a thread has taken it (took); it
 * ends the process itself when none has within HANDOFF_MS (the main thread
 * blocks the signal, or is gone). Once per process. */
#define HANDOFF_MS 500
static _Atomic int handed, took;

static int hand_to_main(int sig)
{
    pid_t pid = getpid();
    if ((pid_t)syscall(SYS_gettid) == pid || atomic_exchange(&handed, 1))
        return 0;
    if (syscall(SYS_tgkill, pid, pid, sig) != 0)
        return 0;
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < HANDOFF_MS && !atomic_load(&took); i++)
        syscall(SYS_nanosleep, &ms, NULL);
    return atomic_load(&took);
}

static void on_fatal(int sig)
{
    int saved = errno;
    if (hand_to_main(sig)) {
        errno = saved;
        return;
    }
    atomic_store(&took, 1);
    atomic_store(&rs_dying, 1);
    rs_wait_interrupted(sig);
    /* the flush's own waits (for the writer) are not the program's */
    int guard = rs_th.guard;
    rs_th.guard = 1;
    rs_finish();
    rs_th.guard = guard;
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    RS_REAL(sigaction)(sig, &dfl, NULL);
    raise(sig); /* blocked while we run; delivered with the default action on return */
    errno = saved;
}

/* A crash: the faulting (or aborting) thread's stack and a fatal mark,
 * the last flush, then the default action: a fault returns to the
 * instruction, which faults again; a signal sent (abort's raise, kill) is
 * raised again, held until the handler returns. A crash inside the agent
 * itself, or a second one, goes straight to the default. */
static void on_crash(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    RS_REAL(sigaction)(sig, &dfl, NULL);
    if (!rs_th.guard && !atomic_exchange(&crashing, 1)) {
        atomic_store(&rs_dying, 1);
        rs_sample_fatal(sig, ucv);
        int guard = rs_th.guard;
        rs_th.guard = 1;
        rs_finish();
        rs_th.guard = guard;
    }
    if (!si || si->si_code <= 0)
        raise(sig);
    errno = saved;
}

static int install(int i, const struct sigaction *act)
{
    if (act->sa_handler != SIG_DFL || (act->sa_flags & SA_SIGINFO))
        return RS_REAL(sigaction)(fatal_sigs[i], act, NULL);
    struct sigaction ours = { .sa_handler = on_fatal };
    if (i >= NSIG_ENDS) {
        ours.sa_sigaction = on_crash;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    }
    sigemptyset(&ours.sa_mask);
    return RS_REAL(sigaction)(fatal_sigs[i], &ours, NULL);
}

static void signals_init(void)
{
    for (int i = 0; i < NSIG_OURS; i++) {
        if (RS_REAL(sigaction)(fatal_sigs[i], NULL, &app_act[i]) != 0)
            return;
        if (app_act[i].sa_handler == SIG_DFL && !(app_act[i].sa_flags & SA_SIGINFO))
            install(i, &app_act[i]);
    }
    sig_virtual = 1;
}

RS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (rs_in_vchild())
        return RS_REAL(sigaction)(sig, act, old);
    if (RS_UNLIKELY(sig == rs_sample_sig) && act && sig && !rs_sample_is_ours(act))
        rs_sample_yield();
    rs_sample_note_handler(sig, act);
    int i = sig_index(sig);
    if (i < 0 || !sig_virtual)
        return RS_REAL(sigaction)(sig, act, old);
    struct sigaction prev = app_act[i];
    if (act) {
        if (install(i, act) != 0)
            return -1;
        app_act[i] = *act;
    }
    if (old)
        *old = prev;
    return 0;
}

RS_EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
    if (rs_in_vchild())
        return RS_REAL(signal)(sig, handler);
    if (RS_UNLIKELY(sig == rs_sample_sig) && sig)
        rs_sample_yield();
    int i = sig_index(sig);
    if (i < 0 || !sig_virtual) {
        struct sigaction note = { .sa_handler = handler };
        rs_sample_note_handler(sig, &note);
        return RS_REAL(signal)(sig, handler);
    }
    struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART };
    sigemptyset(&act.sa_mask);
    struct sigaction old;
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

/* The other spellings of signal(): bsd_signal is signal; sysv_signal
 * resets to the default on delivery; sigset may also hold the signal. */
/* glibc still exports bsd_signal but no longer declares it; sigset is
 * declared deprecated. Both are hooked because programs still call them. */
__sighandler_t bsd_signal(int sig, __sighandler_t handler);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
RS_REAL_DECL(bsd_signal);
RS_REAL_DECL(sysv_signal);
RS_REAL_DECL(sigset);

/* The spellings below reach the C library's sigaction, not ours: the
 * sampling signal taken through them moves the sampler first too. */
static void taking(int sig)
{
    if (RS_UNLIKELY(sig == rs_sample_sig) && sig && !rs_in_vchild())
        rs_sample_yield();
}

RS_EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
    taking(sig);
    if (sig_index(sig) < 0 || !sig_virtual || rs_in_vchild())
        return RS_REAL(bsd_signal)(sig, handler);
    return signal(sig, handler);
}

RS_EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
    taking(sig);
    if (sig_index(sig) < 0 || !sig_virtual || rs_in_vchild())
        return RS_REAL(sysv_signal)(sig, handler);
    struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESETHAND | SA_NODEFER };
    sigemptyset(&act.sa_mask);
    struct sigaction old;
    if (sigaction(sig, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

RS_EXPORT __sighandler_t sigset(int sig, __sighandler_t disp)
{
    if (disp != SIG_HOLD)
        taking(sig);
    if (sig_index(sig) < 0 || !sig_virtual || rs_in_vchild())
        return RS_REAL(sigset)(sig, disp);
    sigset_t one, was;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct sigaction old;
    if (disp == SIG_HOLD) {
        if (sigaction(sig, NULL, &old) != 0 || sigprocmask(SIG_BLOCK, &one, &was) != 0)
            return SIG_ERR;
    } else {
        struct sigaction act = { .sa_handler = disp };
        sigemptyset(&act.sa_mask);
        if (sigaction(sig, &act, &old) != 0 || sigprocmask(SIG_UNBLOCK, &one, &was) != 0)
            return SIG_ERR;
    }
    return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}
#pragma GCC diagnostic pop

/* ---- exit, exec, fork ---- */

RS_REAL_DECL(_exit);
RS_REAL_DECL(_Exit);

RS_EXPORT void _exit(int status)
{
    if (!rs_in_vchild())
        rs_finish();
    RS_REAL(_exit)(status);
    __builtin_unreachable();
}

RS_EXPORT void _Exit(int status)
{
    if (!rs_in_vchild())
        rs_finish();
    RS_REAL(_Exit)(status);
    __builtin_unreachable();
}

/* Before an exec the file is finished (the new image starts its own); if
 * the exec fails, recording goes on in the same file. */
static int before_exec(void)
{
    if (rs_in_vchild())
        return 0;
    int saved = errno, cs = rs_nocancel();
    int rearm = rs_sample_before_exec();
    if (atomic_load(&rs_hot.on) && !rs_th.guard)
        rs_writer_exec_flush();
    rs_cancel_restore(cs);
    errno = saved;
    return rearm;
}

/* The exec failed (its result is r): sampling goes on. */
static int exec_failed(int rearm, int r)
{
    if (!rs_in_vchild())
        rs_writer_resume();
    if (rearm) {
        int saved = errno;
        rs_sample_after_exec_failed();
        errno = saved;
    }
    return r;
}

RS_REAL_DECL(execve);
RS_REAL_DECL(execv);
RS_REAL_DECL(execvp);
RS_REAL_DECL(execvpe);
RS_REAL_DECL(fexecve);
RS_REAL_DECL(execveat);

RS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(execve)(path, argv, envp));
}

RS_EXPORT int execv(const char *path, char *const argv[])
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(execv)(path, argv));
}

RS_EXPORT int execvp(const char *file, char *const argv[])
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(execvp)(file, argv));
}

RS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(execvpe)(file, argv, envp));
}

RS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(fexecve)(fd, argv, envp));
}

RS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    int rearm = before_exec();
    return exec_failed(rearm, RS_REAL(execveat)(dirfd, path, argv, envp, flags));
}

/* The execl family: gathers the variadic arguments into an argv, in
 * args (room for cap) or, past that, in memory mapped for it (gathered_done
 * gives it back when the exec fails). NULL when it cannot be had. */
static char **gather(const char *arg0, va_list ap, char ***envp_out, char **args, size_t cap)
{
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    while (arg0 && va_arg(count, char *))
        n++;
    va_end(count);
    if (n + 1 > cap) {
        void *m = mmap(NULL, (n + 1) * sizeof *args, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        args = m;
    }
    args[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        args[i] = va_arg(ap, char *);
    if (arg0)
        (void)va_arg(ap, char *); /* the terminating NULL */
    args[n] = NULL;
    if (envp_out)
        *envp_out = va_arg(ap, char **);
    return args;
}
#define GATHER_ON_STACK 512

/* After a failed exec: argv's memory back, errno kept; returns r. */
static int gathered_done(char **argv, char **args, int r)
{
    if (argv && argv != args) {
        int e = errno;
        size_t n = 0;
        while (argv[n])
            n++;
        munmap(argv, (n + 1) * sizeof *argv);
        errno = e;
    }
    return r;
}

RS_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    char *args[GATHER_ON_STACK];
    va_start(ap, arg);
    char **argv = gather(arg, ap, NULL, args, GATHER_ON_STACK);
    va_end(ap);
    return gathered_done(argv, args, argv ? execv(path, argv) : -1);
}

RS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    char *args[GATHER_ON_STACK];
    va_start(ap, arg);
    char **argv = gather(arg, ap, NULL, args, GATHER_ON_STACK);
    va_end(ap);
    return gathered_done(argv, args, argv ? execvp(file, argv) : -1);
}

RS_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char **envp;
    char *args[GATHER_ON_STACK];
    va_start(ap, arg);
    char **argv = gather(arg, ap, &envp, args, GATHER_ON_STACK);
    va_end(ap);
    return gathered_done(argv, args, argv ? execve(path, argv, envp) : -1);
}

/* The real functions a vfork child calls past hook_io.c's, looked up now
 * for the same reason (vfork.c). */
static void resolve_early(void)
{
    rs_io_resolve_early();
    rs_wait_resolve_early();
    (void)RS_REAL(signal);
    (void)RS_REAL(_exit);
    (void)RS_REAL(_Exit);
    (void)RS_REAL(execve);
    (void)RS_REAL(execv);
    (void)RS_REAL(execvp);
    (void)RS_REAL(execvpe);
}

/* The process's start as its file's meta says it: a pair of clock readings. */
static void stamp_start(void)
{
    struct timespec real;
    rs_id.start_mono = rs_now();
    clock_gettime(CLOCK_REALTIME, &real);
    rs_id.start_real = (uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec;
}

static void after_fork_child(void)
{
    rs_dl_fork_child();
    if (!atomic_load(&rs_hot.on))
        return;
    int cs = rs_nocancel();
    rs_identity_forked();
    stamp_start();       /* a child starts at the fork, not at its parent's start */
    rs_gpu_forked();
    rs_nvml_forked();
    rs_ring_reset();
    atomic_store(&finished, 0);
    rs_th.guard = 1;
    /* The child starts as a process of its own would: at its first event. */
    rs_writer_forked();
    atomic_store(&start_state, START_DORMANT);
    atomic_store(&rs_hot.started, 0);
    starting_here = 0;
    if (rs_hot.io_active)
        rs_fdtab_forked();
    rs_metrics_forked();
    rs_th.guard = 0;
    rs_sample_forked();
    rs_cancel_restore(cs);
}

/* ---- start and end ---- */

/* Whether p lies in the agent's own loaded segments, from its program
 * headers (dladdr would scan the symbols of the object p is in, the C
 * library's thousands, in every process's constructor). */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
static int in_agent(const void *p)
{
    const ElfW(Ehdr) *eh = &__ehdr_start;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uintptr_t base = (uintptr_t)eh, at = (uintptr_t)p, first = UINTPTR_MAX;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first)
            first = ph[i].p_vaddr & ~(uintptr_t)(ph[i].p_align ? ph[i].p_align - 1 : 0);
    uintptr_t bias = base - first;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && at >= bias + ph[i].p_vaddr && at < bias + ph[i].p_vaddr + ph[i].p_memsz)
            return 1;
    return 0;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)&__ehdr_start >= lo && (uintptr_t)&__ehdr_start < lo + ph->p_memsz) {
            *(const char **)arg = info->dlpi_name;
            return 1;
        }
    }
    return 0;
}

const char *rs_self_path(void)
{
    const char *name = NULL;
    dl_iterate_phdr(find_self, &name);
    return name && name[0] ? name : NULL;
}

int rs_agent_in_scope(void)
{
    /* C library functions we interpose, looked up by name: the global
     * scope comes first, so one of them being ours says the hooks are the
     * program's (another preloaded library may define one of them before
     * us, hardly all three). Not a symbol only we define: a library loaded
     * with RTLD_LOCAL finds its own symbols through RTLD_DEFAULT too. */
    static const char *const probe[] = { "open", "_exit", "sigaction" };
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
        void *p = dlsym(RTLD_DEFAULT, probe[i]);
        if (p && in_agent(p))
            return 1;
    }
    return 0;
}

__attribute__((constructor)) static void rs_start(int argc, char **argv, char **envp)
{
    (void)envp;
    /* Loaded but not preloaded: NVTX dlopen'ed us in a process that only
     * inherited NVTX_INJECTION64_PATH (a child started without LD_PRELOAD).
     * No hook of ours is the program's there, so the agent does nothing at
     * all: no thread, no signal handler, no file, and InitializeInjectionNvtx2
     * answers 0, which leaves NVTX as it is with no tool and unloads us. */
    if (!rs_agent_in_scope())
        return;
    rs_th.guard = 1;
    rs_sample_resolve_early();
    rs_config_load(argc, argv);
    rs_clock_init();
    if (rs_cfg.disable) {
        rs_th.guard = 0;
        return;
    }
    stamp_start();
    if (rs_cfg.io)
        rs_fdtab_init();
    /* Buffers, the fd table and the writer wait for the first event
     * (rs_agent_start). */
    pthread_atfork(rs_dl_fork_prepare, rs_dl_fork_parent, after_fork_child);
    signals_init();
    resolve_early();
    atomic_store(&rs_hot.on, 1);
    rs_nvtx_init();
    rs_sample_init();
    rs_metrics_init();
    rs_th.guard = 0;
}

__attribute__((destructor)) static void rs_stop(void)
{
    /* exit() in a vfork child runs the parent's destructors. */
    if (atomic_load(&rs_hot.on) && !rs_in_vchild())
        rs_finish();
}
