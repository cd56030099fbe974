/* The driver version the simulator plays (SIMGPU_DRIVER_VERSION, default 13000):
 * cuDriverGetVersion says it, cuGetProcAddress (simgpu_procaddr.c) gives no variant
 * newer than it, and the exports newer than it are absent to dlsym and the dynamic
 * linker, as on an older driver (an R535 driver, 12020, has no cuFuncGetName). An
 * export is absent through an IFUNC whose resolver gives NULL; its implementation is
 * sim_impl_<name>, which the simulator's own code and tables use. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/sim/simgpu_internal.h"

extern char **environ;

/* The variable from the process's initial environment: a resolver may run while
 * the dynamic linker relocates, before the C library has set environ. */
static int sim_version_from_proc(void)
{
    static const char key[] = "SIMGPU_DRIVER_VERSION=";
    char buf[65536];
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    for (char *p = buf; p < buf + n; p += strlen(p) + 1)
        if (!strncmp(p, key, sizeof key - 1))
            return atoi(p + sizeof key - 1);
    return 0;
}

int sim_driver_version(void)
{
    static int version;
    if (!version) {
        const char *v = environ ? getenv("SIMGPU_DRIVER_VERSION") : NULL;
        int n = v ? atoi(v) : environ ? 0 : sim_version_from_proc();
        /* 2.0 is the oldest driver API version there is */
        version = n >= 2000 ? n : SIM_DRIVER_VERSION_DEFAULT;
    }
    return version;
}

/* name: present from CUDA version `since` on. */
#define SIM_SINCE_EXPORT(name, since)                                                        \
    static __typeof__(&sim_impl_##name) sim_resolve_##name(void)                             \
    {                                                                                        \
        return sim_driver_version() >= (since) ? sim_impl_##name : NULL;                     \
    }                                                                                        \
    SIM_EXPORT __typeof__(sim_impl_##name) name __attribute__((ifunc("sim_resolve_" #name)));

SIM_NEWER_EXPORTS(SIM_SINCE_EXPORT)
