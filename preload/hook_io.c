/* File I/O hooks: each wrapper times only the real call, then appends one
 * record with the bytes, offset and result; the path is known from the fd
 * table (fdtab.c). Calls on fds that are not recorded files, calls made
 * while the agent itself runs (rs_th.guard) and calls after tracing stopped go
 * straight to the real function. errno is always left as the call set it. */
#include "preload/agent.h"
#include "preload/sample.h"
#include "formats/trace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc's _FORTIFY_SOURCE entry points, which programs built with it call
 * instead of the plain names; their headers declare them only then. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
size_t __fread_chk(void *p, size_t buflen, size_t size, size_t n, FILE *fp);
char *__fgets_chk(char *s, size_t size, int n, FILE *fp);

/* Records one I/O call for file (a tracked fd's id), in the long form when
 * it does not fit the short one. */
static __attribute__((noinline, cold)) void record_long(int op, uint32_t file, uint64_t t0,
                                                        uint64_t t1, int64_t offset, int64_t result)
{
    struct rs_rec_io_long *r = rs_reserve(sizeof *r, RS_REC_IO_LONG);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_IO_LONG, (uint8_t)op, file };
    r->start = t0;
    r->dur = t1 - t0;
    r->offset = offset;
    r->result = result;
    rs_commit(sizeof *r);
}

static inline void rs_io_record(int op, uint32_t file, uint64_t t0, uint64_t t1, int64_t offset,
                                int64_t result)
{
    if (RS_UNLIKELY(t1 - t0 > UINT32_MAX || result != (int32_t)result)) {
        record_long(op, file, t0, t1, offset, result);
        return;
    }
    struct rs_rec_io *r = rs_reserve(sizeof *r, RS_REC_IO);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_IO, (uint8_t)op, file };
    r->start = t0;
    r->offset = offset;
    r->dur = (uint32_t)(t1 - t0);
    r->result = (int32_t)result;
    rs_commit(sizeof *r);
}

/* tracked_entry for a call that is no event before the agent starts (a
 * close: a process closing every fd it might have inherited must not look
 * at each). */
static inline uint32_t known_entry(int fd)
{
    if (RS_UNLIKELY(rs_th.guard) || !atomic_load_explicit(&rs_hot.on, memory_order_relaxed))
        return 0;
    uint32_t e = rs_fd_entry(fd);
    return e == RS_FILE_EXCLUDED ? 0 : e;
}

/* fd's table entry (file id, maybe with RS_FILE_PLAIN) when a call on it
 * is recorded, else 0. */
static inline uint32_t tracked_entry(int fd)
{
    if (RS_UNLIKELY(rs_th.guard) || !atomic_load_explicit(&rs_hot.on, memory_order_relaxed))
        return 0;
    uint32_t e = rs_fd_entry(fd);
    /* Before the first event: an fd the process inherited or opened then
     * may name a file (fdtab.c, rs_fd_dormant). */
    if (RS_UNLIKELY(e == 0) && !atomic_load_explicit(&rs_hot.started, memory_order_relaxed))
        e = rs_fd_dormant(fd);
    return e == RS_FILE_EXCLUDED ? 0 : e;
}

/* Whether a call on fd is recorded; its file id in *file. */
static inline int tracked(int fd, uint32_t *file)
{
    return (*file = tracked_entry(fd) & ~RS_FILE_PLAIN) != 0;
}

static inline int opens_tracked(void)
{
    return !rs_th.guard && rs_hot.io_active && atomic_load_explicit(&rs_hot.on, memory_order_relaxed);
}

/* After a timed call's record: a wait sample when the call blocked long
 * enough, or a CPU sample the signal handler left pending; errno kept. fd:
 * the call's, whose kind (a FIFO opened by path, a file) names the wait's
 * reason, or -1 for a file known as such. */
static inline void after_call(uint64_t t0, uint64_t t1, int fd)
{
    if (RS_UNLIKELY(t1 - t0 >= rs_hot.wait_ticks || rs_th.sample_npending)) {
        int e = errno;
        rs_wait_sample(t0, t1, fd >= 0 && t1 - t0 >= rs_hot.wait_ticks ? rs_fd_reason(fd)
                                                                        : RSF_WAIT_FILE);
        errno = e;
    }
}

/* A wait sample for a call on fd, an fd the table does not hold. */
static __attribute__((noinline, cold)) void untracked_wait(uint64_t t0, uint64_t t1, int fd)
{
    int e = errno;
    rs_th.guard = 1;
    rs_wait_sample(t0, t1, rs_fd_reason(fd));
    rs_th.guard = 0;
    errno = e;
}

/* CALL (of result type T) on FD, an fd the table does not hold: a pipe, a
 * socket, an eventfd, a terminal... (fds of files the I/O hooks do not
 * record, RINGSIDE_IO_EXCLUDE's, are in the table, and go straight to the
 * real call). Timed for its wait sample only: no I/O record. */
#define RS_IO_UNTRACKED(T, FD, CALL)                                                \
    do {                                                                            \
        if (RS_UNLIKELY(rs_th.guard) || rs_fd_entry(FD) != 0 ||                      \
            !atomic_load_explicit(&rs_hot.on, memory_order_relaxed))                \
            return CALL;                                                            \
        uint64_t t0_ = rs_ticks();                                                  \
        T r_ = CALL;                                                                \
        uint64_t t1_ = rs_ticks();                                                  \
        if (RS_UNLIKELY(t1_ - t0_ >= rs_hot.wait_ticks))                            \
            untracked_wait(t0_, t1_, FD);                                           \
        return r_;                                                                  \
    } while (0)

/* Times CALL (of result type T) on a tracked fd and records it as OP with
 * offset OFF; the result is BYTES, or -errno when FAILED. Recording leaves
 * errno alone (rs_reserve), so it is read only when the call failed. */
#define RS_IO_TIMED(T, OP, FD, OFF, CALL, FAILED, BYTES)                            \
    do {                                                                            \
        uint32_t file_;                                                             \
        if (!tracked(FD, &file_))                                                   \
            return CALL;                                                            \
        rs_th.guard = 1;                                                            \
        uint64_t t0_ = rs_ticks();                                                  \
        T r = CALL;                                                                 \
        uint64_t t1_ = rs_ticks();                                                  \
        rs_io_record(OP, file_, t0_, t1_, OFF, (FAILED) ? -(int64_t)errno : (int64_t)(BYTES)); \
        after_call(t0_, t1_, FD);                                                   \
        rs_th.guard = 0;                                                            \
        return r;                                                                   \
    } while (0)

/* For calls returning ssize_t/int/off_t where -1 means failure. */
#define RS_IO_SYS(T, OP, FD, OFF, CALL) RS_IO_TIMED(T, OP, FD, OFF, CALL, r < 0, r)

/* ---- read, write, pread, pwrite, readv, writev: straight to the kernel ----
 * glibc's versions are cancellation points. In a process with more than one
 * thread, and the agent's writer thread makes every traced process one, each
 * call turns asynchronous cancellation on and off around the system call:
 * two atomic operations, about 30 ns, as much as the rest of the hook. So
 * these hooks make the system call themselves when that cannot change what
 * the program sees: the fd is a block device or a regular file on a local
 * file system (RS_FILE_PLAIN), on which a call never waits indefinitely and
 * so cannot hold up a cancellation; and the program has not called
 * pthread_cancel, so no cancellation can be pending. Otherwise they call
 * glibc's. The system call is the one glibc makes, with the same arguments,
 * and errno is set as glibc sets it. (A call that waits on its buffer, which
 * userfaultfd or a mapping of a FUSE file can hold back, is the exception:
 * a pthread_cancel that comes during it acts at the thread's next
 * cancellation point.) */

RS_REAL_DECL(pthread_cancel);

RS_EXPORT int pthread_cancel(pthread_t th)
{
    atomic_store_explicit(&rs_hot.cancel_seen, 1, memory_order_seq_cst);
    return RS_REAL(pthread_cancel)(th);
}

/* System call nr with up to four arguments: the result, or -errno. */
static inline long kernel_call(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__) && !defined(__ILP32__)
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
#else
    long r = syscall(nr, a, b, c, d);
    return r == -1 ? -errno : r;
#endif
}

/* Records system call NR(A, B, C, D) on FD as OP at offset OFF, made
 * directly when allowed (above), else through glibc's REAL call. */
#define RS_IO_KERNEL(OP, FD, OFF, REAL, NR, A, B, C, D)                             \
    do {                                                                            \
        if (RS_UNLIKELY((long)(FD) < -1) && rs_th.in_unwind) {                      \
            long u_ = rs_unwind_pipe_call(NR, (long)(FD), (long)(B), (long)(C));    \
            if (u_ < 0) {                                                           \
                errno = (int)-u_;                                                   \
                return -1;                                                          \
            }                                                                       \
            return u_;                                                              \
        }                                                                           \
        uint32_t e_ = tracked_entry(FD);                                            \
        if (!e_)                                                                    \
            RS_IO_UNTRACKED(ssize_t, FD, REAL);                                     \
        if (RS_UNLIKELY(!(e_ & RS_FILE_PLAIN) ||                                    \
                        atomic_load_explicit(&rs_hot.cancel_seen, memory_order_relaxed))) \
            RS_IO_SYS(ssize_t, OP, FD, OFF, REAL);                                  \
        rs_th.guard = 1;                                                            \
        uint64_t t0_ = rs_ticks();                                                  \
        long r_ = kernel_call(NR, (long)(A), (long)(B), (long)(C), (long)(D));      \
        uint64_t t1_ = rs_ticks();                                                  \
        rs_io_record(OP, e_ & ~RS_FILE_PLAIN, t0_, t1_, OFF, r_);                   \
        after_call(t0_, t1_, -1);                                                   \
        rs_th.guard = 0;                                                            \
        if (RS_UNLIKELY(r_ < 0)) {                                                  \
            errno = (int)-r_;                                                       \
            return -1;                                                              \
        }                                                                           \
        return r_;                                                                  \
    } while (0)

#if defined(__x86_64__) && !defined(__ILP32__)
/* System call nr(a, b, c, d) between two TSC reads: the first is stored at
 * *start, the ticks from it to the second at *dur; returns the result, or
 * -errno. One asm statement, so that no register has to keep the count out
 * of the way of rdtsc's rdx across the call: the hook then saves one
 * register fewer (1.5 ns a call less, in one process, 21 runs each). */
static inline long timed_call(long nr, long a, long b, long c, long d, uint64_t *start,
                              uint64_t *dur)
{
    register long rdi __asm__("rdi") = a;
    register long rsi __asm__("rsi") = b; /* the result on the way out */
    register long r10 __asm__("r10") = d;
    uint64_t t;
    __asm__ volatile("rdtsc\n\t"
                     "shlq $32, %%rdx\n\t"
                     "orq %%rdx, %%rax\n\t"
                     "movq %%rax, %[st]\n\t"
                     "movq %[c], %%rdx\n\t"
                     "movq %[nr], %%rax\n\t"
                     "syscall\n\t"
                     "movq %%rax, %%rsi\n\t"
                     "rdtsc\n\t"
                     "shlq $32, %%rdx\n\t"
                     "orq %%rdx, %%rax\n\t"
                     "subq %[st], %%rax"
                     : "+S"(rsi), "=&a"(t), [st] "+m"(*start)
                     : "D"(rdi), "r"(r10), [c] "r"(c), [nr] "i"(nr)
                     : "rcx", "rdx", "r11", "memory");
    *dur = t;
    return rsi;
}
#endif

/* The common case of RS_IO_KERNEL, written to make no calls, so that it
 * saves no registers: a recorded RS_FILE_PLAIN file, no
 * pthread_cancel seen, TSC timestamps, the agent started (the first event
 * goes through rs_reserve, which starts it), room in the thread's block. The record
 * is reserved and filled in before the call (rs_th.guard keeps the sampler's
 * handler from reserving in between), so that after it only the times and
 * the result are left to store. Anything else goes to GENERAL (the full
 * RS_IO_KERNEL path) before the call; a duration or result that needs the
 * long form, a wait sample, a pending CPU sample or a failure go to
 * io_finish after it. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define RS_IO_FAST(OP, FD, OFF, GENERAL, NR, A, B, C, D)                            \
    do {                                                                            \
        uint32_t e_ = tracked_entry(FD);                                            \
        if (RS_UNLIKELY(!(e_ & RS_FILE_PLAIN) || !rs_hot.tsc_on ||                  \
                        atomic_load_explicit(&rs_hot.cancel_seen, memory_order_relaxed) || \
                        !atomic_load_explicit(&rs_hot.started, memory_order_relaxed))) \
            return GENERAL;                                                         \
        rs_th.guard = 1;                                                            \
        atomic_signal_fence(memory_order_seq_cst);                                  \
        struct rs_rec_io *rec_ = (struct rs_rec_io *)rs_th.wp;                      \
        if (RS_UNLIKELY((size_t)(rs_th.wend - rs_th.wp) < sizeof *rec_)) {          \
            rs_th.guard = 0;                                                        \
            return GENERAL;                                                         \
        }                                                                           \
        rec_->h = (struct rs_rec_hdr){ sizeof *rec_, RS_REC_IO, (uint8_t)(OP),      \
                                       e_ & ~RS_FILE_PLAIN };                       \
        rec_->offset = (OFF);                                                       \
        rs_th.wp = (uint8_t *)(rec_ + 1);                                           \
        uint64_t d_;                                                                \
        long r_ = timed_call(NR, (long)(A), (long)(B), (long)(C), (long)(D),        \
                             &rec_->start, &d_);                                    \
        if (RS_UNLIKELY(d_ >= io_fast_ticks() || r_ != (int32_t)r_ || r_ < 0 ||     \
                        rs_th.sample_npending))                                     \
            return io_finish(rec_, rec_->start + d_, r_);                           \
        rec_->dur = (uint32_t)d_;                                                   \
        rec_->result = (int32_t)r_;                                                 \
        rs_publish((uint8_t *)(rec_ + 1));                                          \
        atomic_signal_fence(memory_order_seq_cst);                                  \
        rs_th.guard = 0;                                                            \
        return r_;                                                                  \
    } while (0)
#else
#define RS_IO_FAST(OP, FD, OFF, GENERAL, NR, A, B, C, D) return GENERAL
#endif

/* Durations from this many ticks on leave RS_IO_FAST's path: those that need
 * the long record, and those that make a wait sample. */
static inline uint64_t io_fast_ticks(void)
{
    return rs_hot.wait_ticks < UINT32_MAX ? rs_hot.wait_ticks : UINT32_MAX;
}

/* RS_IO_FAST's way out after the call, which ended at t1 ticks with result
 * r (or -errno): its reservation rec (op, file, offset and start filled in)
 * is given back and the call recorded as any other, in whichever form fits,
 * then a sample written when one is due. Returns what the hook returns, with
 * errno set on failure. */
static __attribute__((noinline, cold)) long io_finish(struct rs_rec_io *rec, uint64_t t1, long r)
{
    uint64_t t0 = rec->start;
    rs_th.wp = (uint8_t *)rec;
    rs_io_record(rec->h.op, rec->h.file, t0, t1, rec->offset, r);
    after_call(t0, t1, -1);
    rs_th.guard = 0;
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

/* Defines hook NAME(PARAMS) for system call NR(A, B, C, D) on fd, recorded as
 * OP at offset OFF: RS_IO_FAST in front of NAME##_general, the out-of-line
 * RS_IO_KERNEL path for everything else. */
#define RS_IO_HOOK(NAME, PARAMS, ARGS, OP, OFF, NR, A, B, C, D)                     \
    static __attribute__((noinline)) ssize_t NAME##_general PARAMS                  \
    {                                                                               \
        RS_IO_KERNEL(OP, fd, OFF, RS_REAL(NAME) ARGS, NR, A, B, C, D);              \
    }                                                                               \
    RS_EXPORT ssize_t NAME PARAMS                                                   \
    {                                                                               \
        RS_IO_FAST(OP, fd, OFF, NAME##_general ARGS, NR, A, B, C, D);               \
    }

/* ---- opens ---- */

static int mode_needed(int flags)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define RS_OPEN_VA(flags)                                   \
    mode_t mode = 0;                                        \
    if (mode_needed(flags)) {                               \
        va_list ap;                                         \
        va_start(ap, flags);                                \
        mode = (mode_t)va_arg(ap, int);                     \
        va_end(ap);                                         \
    }

/* Times an open-like CALL returning an fd and names the file. */
#define RS_OPEN_TIMED(OP, DIRFD, PATH, FLAGS, CALL)                                 \
    do {                                                                            \
        if (!opens_tracked())                                                       \
            return CALL;                                                            \
        rs_th.guard = 1;                                                            \
        uint64_t t0_ = rs_ticks();                                                  \
        int fd_ = CALL;                                                             \
        uint64_t t1_ = rs_ticks();                                                  \
        int e_ = errno;                                                             \
        if (fd_ >= 0)                                                               \
            rs_file_opened(OP, DIRFD, PATH, FLAGS, fd_, t0_, t1_);                  \
        rs_wait_sample(t0_, t1_, RSF_WAIT_FILE);                                    \
        errno = e_;                                                                 \
        rs_th.guard = 0;                                                            \
        return fd_;                                                                 \
    } while (0)

RS_REAL_DECL(open);
RS_REAL_DECL(open64);
RS_REAL_DECL(openat);
RS_REAL_DECL(openat64);
RS_REAL_DECL(creat);
RS_REAL_DECL(creat64);
RS_REAL_DECL(__open_2);
RS_REAL_DECL(__open64_2);
RS_REAL_DECL(__openat_2);
RS_REAL_DECL(__openat64_2);

RS_EXPORT int open(const char *path, int flags, ...)
{
    RS_OPEN_VA(flags);
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, path, flags, RS_REAL(open)(path, flags, mode));
}

RS_EXPORT int open64(const char *path, int flags, ...)
{
    RS_OPEN_VA(flags);
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, path, flags, RS_REAL(open64)(path, flags, mode));
}

RS_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    RS_OPEN_VA(flags);
    RS_OPEN_TIMED(RSF_IO_OPENAT, dirfd, path, flags, RS_REAL(openat)(dirfd, path, flags, mode));
}

RS_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    RS_OPEN_VA(flags);
    RS_OPEN_TIMED(RSF_IO_OPENAT, dirfd, path, flags, RS_REAL(openat64)(dirfd, path, flags, mode));
}

RS_EXPORT int creat(const char *path, mode_t mode)
{
    RS_OPEN_TIMED(RSF_IO_CREAT, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, RS_REAL(creat)(path, mode));
}

RS_EXPORT int creat64(const char *path, mode_t mode)
{
    RS_OPEN_TIMED(RSF_IO_CREAT, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, RS_REAL(creat64)(path, mode));
}

RS_EXPORT int __open_2(const char *path, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, path, flags, RS_REAL(__open_2)(path, flags));
}

RS_EXPORT int __open64_2(const char *path, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, path, flags, RS_REAL(__open64_2)(path, flags));
}

RS_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPENAT, dirfd, path, flags, RS_REAL(__openat_2)(dirfd, path, flags));
}

RS_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPENAT, dirfd, path, flags, RS_REAL(__openat64_2)(dirfd, path, flags));
}

/* Temporary files: glibc opens them internally, so the plain open hooks do
 * not see them; the name is known once the call returns. */
RS_REAL_DECL(mkstemp);
RS_REAL_DECL(mkostemp);
RS_REAL_DECL(mkstemps);
RS_REAL_DECL(mkostemps);
RS_REAL_DECL(mkstemp64);
RS_REAL_DECL(mkostemp64);
RS_REAL_DECL(mkstemps64);
RS_REAL_DECL(mkostemps64);

RS_EXPORT int mkstemp(char *tmpl)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL, RS_REAL(mkstemp)(tmpl));
}

RS_EXPORT int mkostemp(char *tmpl, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL | flags, RS_REAL(mkostemp)(tmpl, flags));
}

RS_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL, RS_REAL(mkstemps)(tmpl, suffixlen));
}

RS_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL | flags,
                  RS_REAL(mkostemps)(tmpl, suffixlen, flags));
}

RS_EXPORT int mkstemp64(char *tmpl)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL, RS_REAL(mkstemp64)(tmpl));
}

RS_EXPORT int mkostemp64(char *tmpl, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL | flags, RS_REAL(mkostemp64)(tmpl, flags));
}

RS_EXPORT int mkstemps64(char *tmpl, int suffixlen)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL, RS_REAL(mkstemps64)(tmpl, suffixlen));
}

RS_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
{
    RS_OPEN_TIMED(RSF_IO_OPEN, AT_FDCWD, tmpl, O_RDWR | O_CREAT | O_EXCL | flags,
                  RS_REAL(mkostemps64)(tmpl, suffixlen, flags));
}

/* ---- close and fd copies ---- */

RS_REAL_DECL(close);
RS_REAL_DECL(dup);
RS_REAL_DECL(dup2);
RS_REAL_DECL(dup3);
RS_REAL_DECL(fcntl);
RS_REAL_DECL(fcntl64);

RS_EXPORT int close(int fd)
{
    /* The program closing every fd (a daemon's start-up) must not take the
     * trace file with it. */
    if (RS_UNLIKELY(rs_writer_owns_fd(fd)) && !rs_th.guard)
        return 0;
    uint32_t file = known_entry(fd) & ~RS_FILE_PLAIN;
    if (!file) {
        if (rs_hot.io_active && !rs_in_vchild())
            rs_fd_set(fd, 0);
        return RS_REAL(close)(fd);
    }
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    int r = RS_REAL(close)(fd);
    uint64_t t1 = rs_ticks();
    int e = errno;
    rs_fd_set(fd, 0);
    rs_io_record(RSF_IO_CLOSE, file, t0, t1, -1, r < 0 ? -(int64_t)e : r);
    rs_wait_sample(t0, t1, RSF_WAIT_FILE);
    errno = e;
    rs_th.guard = 0;
    return r;
}

/* The new fd names the same file as the old one. */
static int copied(int oldfd, int newfd)
{
    if (newfd >= 0 && newfd != oldfd && rs_hot.io_active && !rs_in_vchild()) {
        int e = errno;
        rs_fd_set(newfd, 0);
        if (oldfd >= 0) {
            uint32_t f = rs_fd_entry(oldfd);
            rs_fd_set(newfd, f);
        }
        errno = e;
    }
    return newfd;
}

RS_EXPORT int dup(int fd) { return copied(fd, RS_REAL(dup)(fd)); }

/* dup2/dup3 onto the trace file's number: the trace file moves away first,
 * so the program gets the number and the trace goes on. */
RS_EXPORT int dup2(int fd, int fd2)
{
    if (RS_UNLIKELY(rs_writer_owns_fd(fd2)) && fd != fd2 && !rs_th.guard) {
        int e = errno;
        rs_writer_fd_taken(fd2);
        errno = e;
    }
    return copied(fd, RS_REAL(dup2)(fd, fd2));
}

RS_EXPORT int dup3(int fd, int fd2, int flags)
{
    if (RS_UNLIKELY(rs_writer_owns_fd(fd2)) && fd != fd2 && !rs_th.guard) {
        int e = errno;
        rs_writer_fd_taken(fd2);
        errno = e;
    }
    return copied(fd, RS_REAL(dup3)(fd, fd2, flags));
}

RS_REAL_DECL(close_range);
RS_REAL_DECL(closefrom);

/* The fd table forgets fds [first, last] (closed by a range call). */
static void forget_range(unsigned first, unsigned last)
{
    if (!rs_hot.io_active || rs_in_vchild())
        return;
    for (size_t fd = first; fd < rs_hot.fdtab_n && fd <= last; fd++)
        rs_fd_set((int)fd, 0);
}

/* The trace file's fd when a range call in this process would close it. */
static int trace_fd_in(unsigned first, unsigned last)
{
    int fd = rs_writer_fd();
    if (fd < 0 || (unsigned)fd < first || (unsigned)fd > last || rs_th.guard || getpid() != rs_id.pid)
        return -1;
    return fd;
}

/* Closing a range of fds (daemons, subprocess set-up) leaves the trace file
 * open, as close() does: the range is split around it. */
RS_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    int fd = trace_fd_in(first, last);
    int r = 0;
    if (fd < 0) {
        r = RS_REAL(close_range)(first, last, flags);
    } else {
        if ((unsigned)fd > first)
            r = RS_REAL(close_range)(first, (unsigned)fd - 1, flags);
        if (r == 0 && (unsigned)fd < last)
            r = RS_REAL(close_range)((unsigned)fd + 1, last, flags);
    }
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
        int e = errno;
        forget_range(first, last);
        errno = e;
    }
    return r;
}

RS_EXPORT void closefrom(int low)
{
    unsigned first = low < 0 ? 0 : (unsigned)low;
    int fd = trace_fd_in(first, ~0u);
    int e = errno;
    if (fd >= 0) {
        if ((unsigned)fd > first)
            RS_REAL(close_range)(first, (unsigned)fd - 1, 0);
        RS_REAL(closefrom)(fd + 1);
    } else {
        RS_REAL(closefrom)(low);
    }
    forget_range(first, ~0u);
    errno = e;
}

static int fcntl_common(__typeof__(fcntl) *real, int fd, int cmd, va_list ap)
{
    /* Every fcntl command takes at most one argument, an int or a pointer. */
    void *arg = va_arg(ap, void *);
    if (cmd == F_SETLKW || cmd == F_OFD_SETLKW)
        RS_WAIT_TIMED(int, RSF_WAIT_FILE_LOCK, real(fd, cmd, arg));
    int r = real(fd, cmd, arg);
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        copied(fd, r);
    return r;
}

RS_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    int r = fcntl_common(RS_REAL(fcntl), fd, cmd, ap);
    va_end(ap);
    return r;
}

RS_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    int r = fcntl_common(RS_REAL(fcntl64), fd, cmd, ap);
    va_end(ap);
    return r;
}

/* ---- reads and writes ---- */

RS_REAL_DECL(read);
RS_REAL_DECL(write);
RS_REAL_DECL(pread);
RS_REAL_DECL(pread64);
RS_REAL_DECL(pwrite);
RS_REAL_DECL(pwrite64);
RS_REAL_DECL(readv);
RS_REAL_DECL(writev);
RS_REAL_DECL(preadv);
RS_REAL_DECL(preadv64);
RS_REAL_DECL(pwritev);
RS_REAL_DECL(pwritev64);
RS_REAL_DECL(preadv2);
RS_REAL_DECL(preadv64v2);
RS_REAL_DECL(pwritev2);
RS_REAL_DECL(pwritev64v2);
RS_REAL_DECL(__read_chk);
RS_REAL_DECL(__pread_chk);
RS_REAL_DECL(__pread64_chk);

RS_IO_HOOK(read, (int fd, void *buf, size_t n), (fd, buf, n), RSF_IO_READ, -1, SYS_read, fd, buf, n, 0)

RS_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (!tracked_entry(fd))
        RS_IO_UNTRACKED(ssize_t, fd, RS_REAL(__read_chk)(fd, buf, n, buflen));
    RS_IO_SYS(ssize_t, RSF_IO_READ, fd, -1, RS_REAL(__read_chk)(fd, buf, n, buflen));
}

RS_IO_HOOK(write, (int fd, const void *buf, size_t n), (fd, buf, n), RSF_IO_WRITE, -1, SYS_write, fd, buf, n, 0)

RS_IO_HOOK(pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), RSF_IO_PREAD, off, SYS_pread64, fd, buf, n, off)

RS_IO_HOOK(pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), RSF_IO_PREAD, off, SYS_pread64, fd, buf, n, off)

RS_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREAD, fd, off, RS_REAL(__pread_chk)(fd, buf, n, off, buflen));
}

RS_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREAD, fd, off, RS_REAL(__pread64_chk)(fd, buf, n, off, buflen));
}

RS_IO_HOOK(pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), RSF_IO_PWRITE, off, SYS_pwrite64, fd, buf, n, off)

RS_IO_HOOK(pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), RSF_IO_PWRITE, off, SYS_pwrite64, fd, buf, n, off)

RS_IO_HOOK(readv, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), RSF_IO_READV, -1, SYS_readv, fd, iov, cnt, 0)

RS_IO_HOOK(writev, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), RSF_IO_WRITEV, -1, SYS_writev, fd, iov, cnt, 0)

RS_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREADV, fd, off, RS_REAL(preadv)(fd, iov, cnt, off));
}

RS_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREADV, fd, off, RS_REAL(preadv64)(fd, iov, cnt, off));
}

RS_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    RS_IO_SYS(ssize_t, RSF_IO_PWRITEV, fd, off, RS_REAL(pwritev)(fd, iov, cnt, off));
}

RS_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    RS_IO_SYS(ssize_t, RSF_IO_PWRITEV, fd, off, RS_REAL(pwritev64)(fd, iov, cnt, off));
}

RS_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREADV2, fd, off, RS_REAL(preadv2)(fd, iov, cnt, off, flags));
}

RS_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    RS_IO_SYS(ssize_t, RSF_IO_PREADV2, fd, off, RS_REAL(preadv64v2)(fd, iov, cnt, off, flags));
}

RS_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    RS_IO_SYS(ssize_t, RSF_IO_PWRITEV2, fd, off, RS_REAL(pwritev2)(fd, iov, cnt, off, flags));
}

RS_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    RS_IO_SYS(ssize_t, RSF_IO_PWRITEV2, fd, off, RS_REAL(pwritev64v2)(fd, iov, cnt, off, flags));
}

/* ---- sync, seek, map ---- */

RS_REAL_DECL(fsync);
RS_REAL_DECL(fdatasync);
RS_REAL_DECL(lseek);
RS_REAL_DECL(lseek64);
RS_REAL_DECL(mmap);
RS_REAL_DECL(mmap64);

RS_EXPORT int fsync(int fd) { RS_IO_SYS(int, RSF_IO_FSYNC, fd, -1, RS_REAL(fsync)(fd)); }
RS_EXPORT int fdatasync(int fd) { RS_IO_SYS(int, RSF_IO_FDATASYNC, fd, -1, RS_REAL(fdatasync)(fd)); }

RS_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    RS_IO_SYS(off_t, RSF_IO_LSEEK, fd, off, RS_REAL(lseek)(fd, off, whence));
}

RS_EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
    RS_IO_SYS(off64_t, RSF_IO_LSEEK, fd, off, RS_REAL(lseek64)(fd, off, whence));
}

/* A mapping of a file records its length as the result. */
RS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    RS_IO_TIMED(void *, RSF_IO_MMAP, (flags & MAP_ANONYMOUS) ? -1 : fd, off,
                RS_REAL(mmap)(addr, len, prot, flags, fd, off), r == MAP_FAILED, len);
}

RS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    RS_IO_TIMED(void *, RSF_IO_MMAP, (flags & MAP_ANONYMOUS) ? -1 : fd, off,
                RS_REAL(mmap64)(addr, len, prot, flags, fd, off), r == MAP_FAILED, len);
}

/* ---- in-kernel copies: one event on each side ---- */

RS_REAL_DECL(copy_file_range);
RS_REAL_DECL(sendfile);
RS_REAL_DECL(sendfile64);

static ssize_t two_sided(int op_in, int in, int64_t off_in, int op_out, int out, int64_t off_out,
                         uint64_t t0, ssize_t r)
{
    uint64_t t1 = rs_ticks();
    int e = errno;
    int64_t res = r < 0 ? -(int64_t)e : r;
    uint32_t fin = rs_fd_file(in), fout = rs_fd_file(out);
    if (fin)
        rs_io_record(op_in, fin, t0, t1, off_in, res);
    if (fout)
        rs_io_record(op_out, fout, t0, t1, off_out, res);
    rs_wait_sample(t0, t1, RSF_WAIT_FILE);
    errno = e;
    rs_th.guard = 0;
    return r;
}

static int either_tracked(int a, int b)
{
    uint32_t f;
    return tracked(a, &f) || tracked(b, &f);
}

RS_EXPORT ssize_t copy_file_range(int in, off64_t *off_in, int out, off64_t *off_out, size_t len,
                                  unsigned flags)
{
    if (!either_tracked(in, out))
        return RS_REAL(copy_file_range)(in, off_in, out, off_out, len, flags);
    int64_t oi = off_in ? *off_in : -1, oo = off_out ? *off_out : -1;
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    ssize_t r = RS_REAL(copy_file_range)(in, off_in, out, off_out, len, flags);
    return two_sided(RSF_IO_COPY_IN, in, oi, RSF_IO_COPY_OUT, out, oo, t0, r);
}

RS_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
    if (!either_tracked(in, out))
        return RS_REAL(sendfile)(out, in, off, count);
    int64_t oi = off ? *off : -1;
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    ssize_t r = RS_REAL(sendfile)(out, in, off, count);
    return two_sided(RSF_IO_SENDFILE_IN, in, oi, RSF_IO_SENDFILE_OUT, out, -1, t0, r);
}

RS_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
    if (!either_tracked(in, out))
        return RS_REAL(sendfile64)(out, in, off, count);
    int64_t oi = off ? *off : -1;
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    ssize_t r = RS_REAL(sendfile64)(out, in, off, count);
    return two_sided(RSF_IO_SENDFILE_IN, in, oi, RSF_IO_SENDFILE_OUT, out, -1, t0, r);
}

/* ---- stdio: bytes as the program sees them; glibc's own flushes of the
 * stream buffer call write internally and are not seen twice ---- */

/* The fd of a stream without locking it or touching errno (glibc layout). */
static inline int stream_fd(FILE *fp)
{
    return fp ? fp->_fileno : -1;
}

RS_REAL_DECL(fopen);
RS_REAL_DECL(fopen64);
RS_REAL_DECL(fdopen);
RS_REAL_DECL(fclose);
RS_REAL_DECL(fflush);
RS_REAL_DECL(fread);
RS_REAL_DECL(fread_unlocked);
RS_REAL_DECL(__fread_chk);
RS_REAL_DECL(fwrite);
RS_REAL_DECL(fwrite_unlocked);
RS_REAL_DECL(fgets);
RS_REAL_DECL(__fgets_chk);
RS_REAL_DECL(fputs);
RS_REAL_DECL(fgetc);
RS_REAL_DECL(getc);
RS_REAL_DECL(fputc);
RS_REAL_DECL(putc);
RS_REAL_DECL(vfprintf);

static int fopen_flags(const char *mode)
{
    int plus = mode && strchr(mode, '+') != NULL;
    switch (mode ? mode[0] : 'r') {
    case 'w': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case 'a': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    default: return plus ? O_RDWR : O_RDONLY;
    }
}

static FILE *fopen_common(__typeof__(fopen) *real, const char *path, const char *mode)
{
    if (!opens_tracked())
        return real(path, mode);
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    FILE *fp = real(path, mode);
    uint64_t t1 = rs_ticks();
    int e = errno;
    if (fp && stream_fd(fp) >= 0)
        rs_file_opened(RSF_IO_FOPEN, AT_FDCWD, path, fopen_flags(mode), stream_fd(fp), t0, t1);
    rs_wait_sample(t0, t1, RSF_WAIT_FILE);
    errno = e;
    rs_th.guard = 0;
    return fp;
}

RS_EXPORT FILE *fopen(const char *path, const char *mode) { return fopen_common(RS_REAL(fopen), path, mode); }
RS_EXPORT FILE *fopen64(const char *path, const char *mode) { return fopen_common(RS_REAL(fopen64), path, mode); }

/* freopen closes the stream's file and opens path on it (glibc keeps the fd
 * number); with path NULL it only changes the mode, and the file stays. */
static FILE *freopen_common(__typeof__(freopen) *real, const char *path, const char *mode, FILE *fp)
{
    if (!opens_tracked() || path == NULL)
        return real(path, mode, fp);
    int oldfd = stream_fd(fp);
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    FILE *r = real(path, mode, fp);
    uint64_t t1 = rs_ticks();
    int e = errno;
    if (oldfd >= 0)
        rs_fd_set(oldfd, 0);
    if (r && stream_fd(r) >= 0)
        rs_file_opened(RSF_IO_FOPEN, AT_FDCWD, path, fopen_flags(mode), stream_fd(r), t0, t1);
    errno = e;
    rs_th.guard = 0;
    return r;
}

RS_REAL_DECL(freopen);
RS_REAL_DECL(freopen64);
RS_EXPORT FILE *freopen(const char *path, const char *mode, FILE *fp)
{
    return freopen_common(RS_REAL(freopen), path, mode, fp);
}
RS_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
    return freopen_common(RS_REAL(freopen64), path, mode, fp);
}

RS_EXPORT FILE *fdopen(int fd, const char *mode)
{
    RS_IO_TIMED(FILE *, RSF_IO_FDOPEN, fd, -1, RS_REAL(fdopen)(fd, mode), r == NULL, fd);
}

RS_EXPORT int fclose(FILE *fp)
{
    int fd = stream_fd(fp);
    uint32_t file = known_entry(fd) & ~RS_FILE_PLAIN;
    if (!file)
        return RS_REAL(fclose)(fp);
    rs_th.guard = 1;
    uint64_t t0 = rs_ticks();
    int r = RS_REAL(fclose)(fp);
    uint64_t t1 = rs_ticks();
    int e = errno;
    rs_fd_set(fd, 0);
    rs_io_record(RSF_IO_FCLOSE, file, t0, t1, -1, r == EOF ? -(int64_t)e : 0);
    rs_wait_sample(t0, t1, RSF_WAIT_FILE);
    errno = e;
    rs_th.guard = 0;
    return r;
}

RS_EXPORT int fflush(FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FFLUSH, stream_fd(fp), -1, RS_REAL(fflush)(fp), r == EOF, 0);
}

RS_EXPORT size_t fread(void *p, size_t size, size_t n, FILE *fp)
{
    RS_IO_TIMED(size_t, RSF_IO_FREAD, stream_fd(fp), -1, RS_REAL(fread)(p, size, n, fp), 0, r * size);
}

RS_EXPORT size_t (fread_unlocked)(void *p, size_t size, size_t n, FILE *fp)
{
    RS_IO_TIMED(size_t, RSF_IO_FREAD, stream_fd(fp), -1, RS_REAL(fread_unlocked)(p, size, n, fp), 0,
                r * size);
}

RS_EXPORT size_t __fread_chk(void *p, size_t buflen, size_t size, size_t n, FILE *fp)
{
    RS_IO_TIMED(size_t, RSF_IO_FREAD, stream_fd(fp), -1, RS_REAL(__fread_chk)(p, buflen, size, n, fp),
                0, r * size);
}

RS_EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *fp)
{
    RS_IO_TIMED(size_t, RSF_IO_FWRITE, stream_fd(fp), -1, RS_REAL(fwrite)(p, size, n, fp), 0, r * size);
}

RS_EXPORT size_t (fwrite_unlocked)(const void *p, size_t size, size_t n, FILE *fp)
{
    RS_IO_TIMED(size_t, RSF_IO_FWRITE, stream_fd(fp), -1, RS_REAL(fwrite_unlocked)(p, size, n, fp), 0,
                r * size);
}

RS_EXPORT char *fgets(char *s, int n, FILE *fp)
{
    RS_IO_TIMED(char *, RSF_IO_FGETS, stream_fd(fp), -1, RS_REAL(fgets)(s, n, fp), 0,
                r ? strlen(r) : 0);
}

RS_EXPORT char *__fgets_chk(char *s, size_t size, int n, FILE *fp)
{
    RS_IO_TIMED(char *, RSF_IO_FGETS, stream_fd(fp), -1, RS_REAL(__fgets_chk)(s, size, n, fp), 0,
                r ? strlen(r) : 0);
}

RS_EXPORT int fputs(const char *s, FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FPUTS, stream_fd(fp), -1, RS_REAL(fputs)(s, fp), r == EOF, strlen(s));
}

RS_EXPORT int fgetc(FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FGETC, stream_fd(fp), -1, RS_REAL(fgetc)(fp), 0, r != EOF);
}

RS_EXPORT int getc(FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FGETC, stream_fd(fp), -1, RS_REAL(getc)(fp), 0, r != EOF);
}

RS_EXPORT int fputc(int c, FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FPUTC, stream_fd(fp), -1, RS_REAL(fputc)(c, fp), r == EOF, 1);
}

RS_EXPORT int putc(int c, FILE *fp)
{
    RS_IO_TIMED(int, RSF_IO_FPUTC, stream_fd(fp), -1, RS_REAL(putc)(c, fp), r == EOF, 1);
}

RS_EXPORT int vfprintf(FILE *fp, const char *fmt, va_list ap)
{
    RS_IO_SYS(int, RSF_IO_FPRINTF, stream_fd(fp), -1, RS_REAL(vfprintf)(fp, fmt, ap));
}

RS_EXPORT int fprintf(FILE *fp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(fp, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- calls a vfork child makes ----
 * Resolved at start-up: a child that shares our memory (vfork.c) must not
 * be the first to look a real function up, which takes the loader's lock
 * and may allocate, in the parent's memory. */

RS_REAL_DECL(chdir);
RS_REAL_DECL(fchdir);

void rs_io_resolve_early(void)
{
    (void)RS_REAL(close);
    (void)RS_REAL(dup);
    (void)RS_REAL(dup2);
    (void)RS_REAL(dup3);
    (void)RS_REAL(fcntl);
    (void)RS_REAL(close_range);
    (void)RS_REAL(closefrom);
    (void)RS_REAL(chdir);
    (void)RS_REAL(fchdir);
    (void)RS_REAL(read);
    (void)RS_REAL(write);
}

/* ---- the current directory, for relative paths ---- */

RS_EXPORT int chdir(const char *path)
{
    int r = RS_REAL(chdir)(path);
    if (r == 0 && rs_hot.io_active && !rs_in_vchild()) {
        int e = errno;
        rs_cwd_changed();
        errno = e;
    }
    return r;
}

RS_EXPORT int fchdir(int fd)
{
    int r = RS_REAL(fchdir)(fd);
    if (r == 0 && rs_hot.io_active && !rs_in_vchild()) {
        int e = errno;
        rs_cwd_changed();
        errno = e;
    }
    return r;
}
