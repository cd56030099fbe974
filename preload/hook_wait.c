/* Hooks on the calls a thread blocks in (locks, condition variables,
 * semaphores, joins, barriers, child waits, file locks, sockets, raw futex
 * system calls): each one that waited at least RINGSIDE_WAIT_US becomes a
 * wait sample, the caller's stack weighted by the time blocked, with the
 * reason (sample.c). A call that does not wait costs next to nothing: the
 * locks try first and time only the call that has to wait. The sleeps and
 * polls are in sample.c, reads and writes on pipes and sockets in hook_io.c. */
#include "preload/agent.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The names glibc before 2.34 exported as well (libpthread's), still there
 * as compatibility symbols for programs linked then. */
int __pthread_mutex_lock(pthread_mutex_t *m);
int __pthread_rwlock_rdlock(pthread_rwlock_t *l);
int __pthread_rwlock_wrlock(pthread_rwlock_t *l);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                       struct sockaddr *from, socklen_t *fromlen);

/* Times CALL (of result type T) for REASON and returns its result. */
#define TIMED(T, REASON, CALL) RS_WAIT_TIMED(T, REASON, CALL)

/* The lock's real CALL, timed: the path of a try that found it taken. */
#define LOCK_SLOW(REASON, CALL)                                         \
    do {                                                                \
        if (!rs_wait_on())                                              \
            return CALL;                                                \
        uint64_t t0_ = rs_ticks();                                      \
        rs_wait_begin((REASON), t0_);                                   \
        int r_ = CALL;                                                  \
        t0_ = rs_wait_done(t0_);                                        \
        uint64_t t1_ = rs_ticks();                                      \
        if (RS_UNLIKELY(t1_ - t0_ >= rs_hot.wait_ticks))                \
            rs_wait_note(t0_, t1_, REASON);                             \
        return r_;                                                      \
    } while (0)

RS_REAL_DECL(pthread_mutex_trylock);
RS_REAL_DECL(pthread_mutex_lock);
RS_REAL_DECL(pthread_mutex_timedlock);
RS_REAL_DECL(pthread_mutex_clocklock);
RS_REAL_DECL(pthread_rwlock_tryrdlock);
RS_REAL_DECL(pthread_rwlock_trywrlock);
RS_REAL_DECL(pthread_rwlock_rdlock);
RS_REAL_DECL(pthread_rwlock_wrlock);
RS_REAL_DECL(pthread_rwlock_timedrdlock);
RS_REAL_DECL(pthread_rwlock_timedwrlock);
RS_REAL_DECL(pthread_rwlock_clockrdlock);
RS_REAL_DECL(pthread_rwlock_clockwrlock);
RS_REAL_DECL(pthread_spin_trylock);
RS_REAL_DECL(pthread_spin_lock);
RS_REAL_DECL(sem_trywait);
RS_REAL_DECL(sem_wait);
RS_REAL_DECL(sem_timedwait);
RS_REAL_DECL(sem_clockwait);
RS_REAL_DECL(pthread_join);
RS_REAL_DECL(pthread_timedjoin_np);
RS_REAL_DECL(pthread_clockjoin_np);
RS_REAL_DECL(pthread_barrier_wait);
RS_REAL_DECL(wait);
RS_REAL_DECL(waitpid);
RS_REAL_DECL(waitid);
RS_REAL_DECL(wait3);
RS_REAL_DECL(wait4);
RS_REAL_DECL(flock);
RS_REAL_DECL(syscall);
RS_REAL_DECL(recv);
RS_REAL_DECL(recvfrom);
RS_REAL_DECL(recvmsg);
RS_REAL_DECL(recvmmsg);
RS_REAL_DECL(send);
RS_REAL_DECL(sendto);
RS_REAL_DECL(sendmsg);
RS_REAL_DECL(sendmmsg);
RS_REAL_DECL(accept);
RS_REAL_DECL(accept4);
RS_REAL_DECL(connect);
RS_REAL_DECL(__recv_chk);
RS_REAL_DECL(__recvfrom_chk);

/* ---- condition variables ----
 * pthread_cond_wait and _timedwait have two versions in glibc: GLIBC_2.3.2,
 * the default that every program linked since 2003 uses, and GLIBC_2.2.5
 * for the condition variables of before (a pointer to one allocated on
 * first use). The hooks are unversioned, so the dynamic linker binds calls
 * to either version to them; they call the default version, found by name
 * and version (dlsym alone may give the oldest). */

static __typeof__(pthread_cond_wait) *real_cond_wait;
static __typeof__(pthread_cond_timedwait) *real_cond_timedwait;
RS_REAL_DECL(pthread_cond_clockwait);

static void *resolve_default(const char *name)
{
    void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
    return p ? p : rs_resolve(name);
}

static inline __typeof__(pthread_cond_wait) *cond_wait_fn(void)
{
    if (RS_UNLIKELY(!real_cond_wait))
        real_cond_wait = resolve_default("pthread_cond_wait");
    return real_cond_wait;
}

static inline __typeof__(pthread_cond_timedwait) *cond_timedwait_fn(void)
{
    if (RS_UNLIKELY(!real_cond_timedwait))
        real_cond_timedwait = resolve_default("pthread_cond_timedwait");
    return real_cond_timedwait;
}

/* A wait on a condition variable always blocks: always timed. */
RS_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    TIMED(int, RSF_WAIT_CONDVAR, cond_wait_fn()(c, m));
}

RS_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_CONDVAR, cond_timedwait_fn()(c, m, t));
}

RS_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                                     const struct timespec *t)
{
    TIMED(int, RSF_WAIT_CONDVAR, RS_REAL(pthread_cond_clockwait)(c, m, clk, t));
}

/* ---- mutexes ----
 * pthread_mutex_trylock takes a free mutex as pthread_mutex_lock would
 * (the same atomic exchange) and, for every kind of mutex, says EBUSY
 * exactly when the lock would have to wait or fail: taken by another
 * thread, or by this one for a normal or error-checking mutex (lock then
 * deadlocks or says EDEADLK, as it does here). Any other answer (0,
 * EOWNERDEAD of a robust mutex, EAGAIN, EINVAL) is the lock's own. So only
 * EBUSY takes the timed path; an uncontended lock reads no clock. The
 * timed variants check their time-out before waiting, as the lock would
 * not after a try: they are timed whole. */

static __attribute__((noinline)) int mutex_lock_slow(pthread_mutex_t *m)
{
    LOCK_SLOW(RSF_WAIT_LOCK, RS_REAL(pthread_mutex_lock)(m));
}

RS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    int r = RS_REAL(pthread_mutex_trylock)(m);
    if (RS_LIKELY(r != EBUSY))
        return r;
    return mutex_lock_slow(m);
}

RS_EXPORT int __pthread_mutex_lock(pthread_mutex_t *m)
{
    return pthread_mutex_lock(m);
}

RS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_LOCK, RS_REAL(pthread_mutex_timedlock)(m, t));
}

RS_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_LOCK, RS_REAL(pthread_mutex_clocklock)(m, clk, t));
}

/* ---- reader-writer and spin locks: the same, try first ---- */

static __attribute__((noinline)) int rdlock_slow(pthread_rwlock_t *l)
{
    LOCK_SLOW(RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_rdlock)(l));
}

static __attribute__((noinline)) int wrlock_slow(pthread_rwlock_t *l)
{
    LOCK_SLOW(RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_wrlock)(l));
}

RS_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    int r = RS_REAL(pthread_rwlock_tryrdlock)(l);
    if (RS_LIKELY(r != EBUSY))
        return r;
    return rdlock_slow(l);
}

RS_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    int r = RS_REAL(pthread_rwlock_trywrlock)(l);
    if (RS_LIKELY(r != EBUSY))
        return r;
    return wrlock_slow(l);
}

RS_EXPORT int __pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return pthread_rwlock_rdlock(l);
}

RS_EXPORT int __pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return pthread_rwlock_wrlock(l);
}

RS_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_timedrdlock)(l, t));
}

RS_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_timedwrlock)(l, t));
}

RS_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_clockrdlock)(l, clk, t));
}

RS_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_RWLOCK, RS_REAL(pthread_rwlock_clockwrlock)(l, clk, t));
}

static __attribute__((noinline)) int spin_slow(pthread_spinlock_t *l)
{
    LOCK_SLOW(RSF_WAIT_SPIN, RS_REAL(pthread_spin_lock)(l));
}

RS_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
    int r = RS_REAL(pthread_spin_trylock)(l);
    if (RS_LIKELY(r != EBUSY))
        return r;
    return spin_slow(l);
}

/* ---- semaphores ----
 * sem_trywait first, as sem_wait itself starts; it says EAGAIN where
 * sem_wait would wait, and sets errno then, which the program must not see:
 * errno is put back before the real wait. The timed variants check their
 * arguments before trying: timed whole. */

static __attribute__((noinline)) int sem_wait_slow(sem_t *s, int e)
{
    errno = e;
    LOCK_SLOW(RSF_WAIT_SEMAPHORE, RS_REAL(sem_wait)(s));
}

RS_EXPORT int sem_wait(sem_t *s)
{
    int e = errno;
    if (RS_LIKELY(RS_REAL(sem_trywait)(s) == 0))
        return 0;
    return sem_wait_slow(s, e);
}

RS_EXPORT int sem_timedwait(sem_t *s, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_SEMAPHORE, RS_REAL(sem_timedwait)(s, t));
}

RS_EXPORT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_SEMAPHORE, RS_REAL(sem_clockwait)(s, clk, t));
}

/* ---- threads, barriers, children ---- */

RS_EXPORT int pthread_join(pthread_t th, void **ret)
{
    TIMED(int, RSF_WAIT_JOIN, RS_REAL(pthread_join)(th, ret));
}

RS_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_JOIN, RS_REAL(pthread_timedjoin_np)(th, ret, t));
}

RS_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk, const struct timespec *t)
{
    TIMED(int, RSF_WAIT_JOIN, RS_REAL(pthread_clockjoin_np)(th, ret, clk, t));
}

RS_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
    TIMED(int, RSF_WAIT_BARRIER, RS_REAL(pthread_barrier_wait)(b));
}

/* WNOHANG never waits: not timed. The child waits' text is a section of
 * its own (RS_CHILD_WAIT_TEXT): reaping a child costs the waiter kernel CPU
 * time (the child's /proc entries are torn down in the wait, tens of ms on
 * a loaded machine), and a CPU sample taken on the way out of that wait
 * is known by its stack as time spent waiting for children (stackw.c). */
#define RS_CHILD_WAIT_TEXT __attribute__((section("rs_child_wait_text"), noinline))
extern const char __start_rs_child_wait_text[], __stop_rs_child_wait_text[];

int rs_child_wait_pc(uint64_t pc)
{
    return pc >= (uintptr_t)__start_rs_child_wait_text && pc < (uintptr_t)__stop_rs_child_wait_text;
}

RS_EXPORT RS_CHILD_WAIT_TEXT pid_t wait(int *status)
{
    TIMED(pid_t, RSF_WAIT_CHILD, RS_REAL(wait)(status));
}

RS_EXPORT RS_CHILD_WAIT_TEXT pid_t waitpid(pid_t pid, int *status, int opts)
{
    if (opts & WNOHANG)
        return RS_REAL(waitpid)(pid, status, opts);
    TIMED(pid_t, RSF_WAIT_CHILD, RS_REAL(waitpid)(pid, status, opts));
}

RS_EXPORT RS_CHILD_WAIT_TEXT int waitid(idtype_t type, id_t id, siginfo_t *info, int opts)
{
    if (opts & WNOHANG)
        return RS_REAL(waitid)(type, id, info, opts);
    TIMED(int, RSF_WAIT_CHILD, RS_REAL(waitid)(type, id, info, opts));
}

RS_EXPORT RS_CHILD_WAIT_TEXT pid_t wait3(int *status, int opts, struct rusage *ru)
{
    if (opts & WNOHANG)
        return RS_REAL(wait3)(status, opts, ru);
    TIMED(pid_t, RSF_WAIT_CHILD, RS_REAL(wait3)(status, opts, ru));
}

RS_EXPORT RS_CHILD_WAIT_TEXT pid_t wait4(pid_t pid, int *status, int opts, struct rusage *ru)
{
    if (opts & WNOHANG)
        return RS_REAL(wait4)(pid, status, opts, ru);
    TIMED(pid_t, RSF_WAIT_CHILD, RS_REAL(wait4)(pid, status, opts, ru));
}

/* ---- file locks (fcntl's F_SETLKW is in hook_io.c) ---- */

RS_EXPORT int flock(int fd, int op)
{
    if (op & LOCK_NB)
        return RS_REAL(flock)(fd, op);
    TIMED(int, RSF_WAIT_FILE_LOCK, RS_REAL(flock)(fd, op));
}

/* ---- sockets ----
 * Every call here may wait (a non-blocking socket's return at once and
 * make no sample). */

RS_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(recv)(fd, buf, n, flags));
}

RS_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(__recv_chk)(fd, buf, n, buflen, flags));
}

RS_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(recvfrom)(fd, buf, n, flags, from, fromlen));
}

RS_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *from, socklen_t *fromlen)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, from, fromlen));
}

RS_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(recvmsg)(fd, msg, flags));
}

RS_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *t)
{
    TIMED(int, RSF_WAIT_SOCKET, RS_REAL(recvmmsg)(fd, v, n, flags, t));
}

RS_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(send)(fd, buf, n, flags));
}

RS_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                         socklen_t tolen)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(sendto)(fd, buf, n, flags, to, tolen));
}

RS_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    TIMED(ssize_t, RSF_WAIT_SOCKET, RS_REAL(sendmsg)(fd, msg, flags));
}

RS_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    TIMED(int, RSF_WAIT_SOCKET, RS_REAL(sendmmsg)(fd, v, n, flags));
}

RS_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    TIMED(int, RSF_WAIT_SOCKET, RS_REAL(accept)(fd, addr, len));
}

RS_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    TIMED(int, RSF_WAIT_SOCKET, RS_REAL(accept4)(fd, addr, len, flags));
}

RS_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    TIMED(int, RSF_WAIT_SOCKET, RS_REAL(connect)(fd, addr, len));
}

/* ---- futex waits made through syscall() ----
 * C++20's atomic::wait, some runtimes and hand-written locks call
 * syscall(SYS_futex, ...). Every other system call passes through with its
 * arguments as they came: syscall() takes a number and up to six longs,
 * which glibc's own syscall() reads the same way (registers and one stack
 * slot) whatever the caller passed; errno is the real call's. */

static int futex_waits(long op)
{
    switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_LOCK_PI:
#ifdef FUTEX_LOCK_PI2
    case FUTEX_LOCK_PI2:
#endif
    case FUTEX_WAIT_REQUEUE_PI:
        return 1;
    default:
        return 0;
    }
}

RS_EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    if (RS_UNLIKELY(nr == SYS_write && (int)a < -1 && rs_th.in_unwind)) {
        long r = rs_unwind_pipe_call(nr, a, b, c);
        if (r < 0) {
            errno = (int)-r;
            return -1;
        }
        return r;
    }
    if (nr == SYS_futex && futex_waits(b))
        TIMED(long, RSF_WAIT_FUTEX, RS_REAL(syscall)(nr, a, b, c, d, e, f));
#ifdef SYS_futex_waitv
    if (nr == SYS_futex_waitv)
        TIMED(long, RSF_WAIT_FUTEX, RS_REAL(syscall)(nr, a, b, c, d, e, f));
#endif
    return RS_REAL(syscall)(nr, a, b, c, d, e, f);
}

void rs_wait_resolve_early(void)
{
    (void)cond_wait_fn();
    (void)cond_timedwait_fn();
    (void)RS_REAL(pthread_cond_clockwait);
    (void)RS_REAL(pthread_mutex_trylock);
    (void)RS_REAL(pthread_mutex_lock);
    (void)RS_REAL(pthread_mutex_timedlock);
    (void)RS_REAL(pthread_mutex_clocklock);
    (void)RS_REAL(pthread_rwlock_tryrdlock);
    (void)RS_REAL(pthread_rwlock_trywrlock);
    (void)RS_REAL(pthread_rwlock_rdlock);
    (void)RS_REAL(pthread_rwlock_wrlock);
    (void)RS_REAL(pthread_spin_trylock);
    (void)RS_REAL(pthread_spin_lock);
    (void)RS_REAL(sem_trywait);
    (void)RS_REAL(sem_wait);
    (void)RS_REAL(pthread_join);
    (void)RS_REAL(waitpid);
    (void)RS_REAL(wait4);
    (void)RS_REAL(syscall);
}
