/* The agent's only output besides its trace: one-line notices on stderr,
 * prefixed "ringside:", written with a raw write so they never touch the
 * program's stdio buffers. RINGSIDE_LOG=0 silences them, 2 adds debug. */
#include "preload/agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

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
    int saved = rs_guard;
    rs_guard = 1;
    ssize_t w = write(2, line, (size_t)n);
    (void)w;
    rs_guard = saved;
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
