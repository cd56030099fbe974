/* The agent's only output besides its trace: one-line notices on stderr,
 * prefixed "ringside:", written with a raw write so they never touch the
 * program's stdio buffers. RINGSIDE_LOG=0 silences them, 2 adds debug. */
#include "preload/agent.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The program's stderr, for a thread with its own fd table (the writer,
 * rs_own_fds), where fd 2 is not the program's: a copy of the process's fd
 * 2 taken through a pidfd (pidfd_getfd works on the caller's own process
 * without privileges). Returns the fd to close after use, or -1. */
static int program_stderr(void)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (pidfd < 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, 2, 0);
    close(pidfd);
    return fd;
#else
    return -1;
#endif
}

static void emit(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "ringside: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    int saved = rs_th.guard, e = errno, cs = rs_nocancel();
    rs_th.guard = 1;
    int fd = rs_own_fds ? program_stderr() : 2;
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n);
        (void)w;
        if (fd != 2)
            close(fd);
    }
    rs_th.guard = saved;
    rs_cancel_restore(cs);
    errno = e;
}

void rs_notice(const char *fmt, ...)
{
    if (rs_cfg.log < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}

void rs_debug(const char *fmt, ...)
{
    if (rs_cfg.log < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}
