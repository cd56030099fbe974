#include "reporter/base/isal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static struct rsr_isal isal;
static pthread_once_t isal_once = PTHREAD_ONCE_INIT;

static void isal_load(void)
{
    void *lib = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    *(void **)&isal.inflate_init = dlsym(lib, "isal_inflate_init");
    *(void **)&isal.inflate_reset = dlsym(lib, "isal_inflate_reset");
    *(void **)&isal.inflate = dlsym(lib, "isal_inflate");
    if (!isal.inflate_init || !isal.inflate_reset || !isal.inflate)
        isal.inflate_init = NULL, isal.inflate_reset = NULL, isal.inflate = NULL;
    *(void **)&isal.deflate_init = dlsym(lib, "isal_deflate_stateless_init");
    *(void **)&isal.deflate = dlsym(lib, "isal_deflate_stateless");
    if (!isal.deflate_init || !isal.deflate)
        isal.deflate_init = NULL, isal.deflate = NULL;
#if defined(__x86_64__) || defined(__i386__)
    isal.avx = __builtin_cpu_supports("avx");
#endif
}

const struct rsr_isal *rsr_isal(void)
{
    pthread_once(&isal_once, isal_load);
    return &isal;
}
