/* A library that needs libcuda.so.1 and libnccl.so.2 and is loaded RTLD_LOCAL by
 * tests/programs/cuda_names.c: those libraries are then in its own scope only,
 * which dlsym(RTLD_DEFAULT) from here searches, as from a framework's plugin. */
#include <dlfcn.h>

void *names_probe(const char *name);
void *cuInit(unsigned);
void *ncclGetVersion(int *);

void *names_probe(const char *name)
{
    /* referenced, so that the linker keeps both libraries as needed */
    static void *volatile keep[] = { (void *)cuInit, (void *)ncclGetVersion };
    (void)keep;
    /* not a tail call: dlsym must see this library as its caller */
    void *volatile p = dlsym(RTLD_DEFAULT, name);
    return p;
}
