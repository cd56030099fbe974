/* The agent's life cycle: start-up in the constructor (settings, buffers,
 * fd table, writer thread), and every way a process can end or change
 * image: exit (destructor), _exit, exec, fork (the child gets its own file),
 * and SIGTERM/SIGINT, whose default action is preceded by a last flush while
 * any handler the program installs is left to the program. */
#include "preload/agent.h"
#include "preload/nvml.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

/* Writes out everything and the end mark; recording stops. A second caller
 * (SIGTERM arriving during _exit's flush) must not return before the first
 * one's flush is on disk, or the process dies mid-write: it asks for a
 * flush of its own, which the writer serves after the first. */
void rs_finish(void)
{
    int saved = errno, cs = rs_nocancel();
    /* The node's last sample, before the end is claimed: a signal that
     * ends the process during it finds the end unclaimed and writes it. */
    rs_metrics_final();
    int first = !atomic_exchange(&finished, 1);
    rs_writer_flush(first);
    atomic_store(&rs_hot.on, 0);
    rs_cancel_restore(cs);
    errno = saved;
}

/* ---- SIGTERM and SIGINT ----
 * The program sees the dispositions it set (or inherited), never ours. When
 * its disposition is the default (death), ours runs instead: flush, then die
 * of the same signal. A handler or SIG_IGN of the program's is installed as
 * it is; such a program exits its own way, through the paths above. */

static const int fatal_sigs[2] = { SIGTERM, SIGINT };
static struct sigaction app_act[2];
static int sig_virtual;
RS_REAL_DECL(sigaction);
RS_REAL_DECL(signal);

static int sig_index(int sig)
{
    return sig == SIGTERM ? 0 : sig == SIGINT ? 1 : -1;
}

_Atomic int rs_dying;

static void on_fatal(int sig)
{
    int saved = errno;
    atomic_store(&rs_dying, 1);
    rs_finish();
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    RS_REAL(sigaction)(sig, &dfl, NULL);
    raise(sig); /* blocked while we run; delivered with the default action on return */
    errno = saved;
}

static int install(int i, const struct sigaction *act)
{
    if (act->sa_handler != SIG_DFL || (act->sa_flags & SA_SIGINFO))
        return RS_REAL(sigaction)(fatal_sigs[i], act, NULL);
    struct sigaction ours = { .sa_handler = on_fatal };
    sigemptyset(&ours.sa_mask);
    return RS_REAL(sigaction)(fatal_sigs[i], &ours, NULL);
}

static void signals_init(void)
{
    for (int i = 0; i < 2; i++) {
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

/* The execl family: gathers the variadic arguments into an argv. */
#define RS_MAX_EXEC_ARGS 4096
static char **gather(const char *arg0, va_list ap, char ***envp_out)
{
    static __thread char *args[RS_MAX_EXEC_ARGS + 1];
    int n = 0;
    args[n++] = (char *)arg0;
    while (arg0 && n < RS_MAX_EXEC_ARGS && (args[n] = va_arg(ap, char *)))
        n++;
    args[n] = NULL;
    if (envp_out)
        *envp_out = va_arg(ap, char **);
    return args;
}

RS_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    char **argv = gather(arg, ap, NULL);
    va_end(ap);
    return execv(path, argv);
}

RS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    char **argv = gather(arg, ap, NULL);
    va_end(ap);
    return execvp(file, argv);
}

RS_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char **envp;
    va_start(ap, arg);
    char **argv = gather(arg, ap, &envp);
    va_end(ap);
    return execve(path, argv, envp);
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
    rs_th.guard = 1; /* the new writer thread is the agent's, not sampled */
    rs_writer_forked();
    if (rs_hot.io_active)
        rs_fdtab_forked();
    rs_metrics_forked();
    rs_th.guard = 0;
    rs_sample_forked();
    rs_cancel_restore(cs);
}

/* ---- start and end ---- */

int rs_agent_in_scope(void)
{
    /* C library functions we interpose, looked up by name: the global
     * scope comes first, so one of them being ours says the hooks are the
     * program's (another preloaded library may define one of them before
     * us, hardly all three). Not a symbol only we define: a library loaded
     * with RTLD_LOCAL finds its own symbols through RTLD_DEFAULT too. */
    static const char *const probe[] = { "open", "_exit", "sigaction" };
    Dl_info self, at;
    if (!dladdr((void *)rs_agent_in_scope, &self))
        return 0;
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
        void *p = dlsym(RTLD_DEFAULT, probe[i]);
        if (p && dladdr(p, &at) && at.dli_fbase == self.dli_fbase)
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
    if (rs_ring_init() != 0) {
        rs_notice("cannot reserve %zu MiB for buffers; tracing is off", rs_cfg.buffer_bytes >> 20);
        rs_th.guard = 0;
        return;
    }
    if (rs_cfg.io && rs_fdtab_init() != 0)
        rs_notice("cannot set up the fd table; file I/O is not recorded");
    if (rs_writer_start() != 0) {
        rs_notice("cannot start the writer thread; tracing is off");
        rs_th.guard = 0;
        return;
    }
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
