/* A library whose constructor, run inside the dlopen that loads it (the
 * loader's lock held), closes a handle and looks a CUDA name up by dlsym,
 * as UCX's libucm does on load (ucm_mmap_install); with CTOR_EXIT=N in the
 * environment it calls exit(N) there instead, after the same. */
#include <dlfcn.h>
#include <stdlib.h>

__attribute__((constructor)) static void ctor_dlclose(void)
{
    void *self = dlopen(NULL, RTLD_NOW);
    if (self)
        dlclose(self);
    (void)dlsym(RTLD_DEFAULT, "cuCtorProbe");
    const char *e = getenv("CTOR_EXIT");
    if (e)
        exit(atoi(e));
}
