/* What of a process is torch.compile's compilation (compile.h): the
 * frames that mark it in a stack, and the argv that marks its workers. */
#include "reporter/load/compile.h"

#include <string.h>

/* Whether a Python frame name ("file.py:qualname[:line]") is in file. */
static int in_file(const char *name, const char *file)
{
    size_t n = strlen(file);
    return strncmp(name, file, n) == 0 && name[n] == ':';
}

int rsr_compile_part(const char *const *names, const uint8_t *is_python, uint32_t n)
{
    int part = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (!is_python[i])
            continue;
        if (in_file(names[i], "torch/_inductor/compile_fx.py"))
            return RSR_COMPILE_INDUCTOR;
        if (in_file(names[i], "torch/_dynamo/convert_frame.py"))
            part = RSR_COMPILE_DYNAMO;
    }
    return part;
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

enum rsr_compile_kind rsr_compile_kind_of(char *const *argv, int argc)
{
    static const char *const compilers[] = { "cc", "c++", "gcc", "g++", "clang", "clang++", "cc1",
                                             "cc1plus", "as", "ld", "collect2", NULL };
    if (argc < 1 || !argv[0])
        return RSR_COMPILE_NOT;
    const char *prog = base_of(argv[0]);
    /* versioned names: g++-14, x86_64-linux-gnu-g++-14 */
    for (int k = 0; compilers[k]; k++) {
        size_t n = strlen(compilers[k]);
        const char *p = strstr(prog, compilers[k]);
        if (p && (p == prog || p[-1] == '-') && (p[n] == 0 || (p[n] == '-' && p[n + 1] >= '0' && p[n + 1] <= '9')))
            return RSR_COMPILE_COMPILER;
    }
    /* python3 .../torch/_inductor/compile_worker/__main__.py ... or
     * python3 -m torch._inductor.compile_worker ... */
    for (int i = 1; i < argc && i < 4; i++)
        if (argv[i] && (strstr(argv[i], "torch/_inductor/compile_worker") ||
                        strstr(argv[i], "torch._inductor.compile_worker")))
            return RSR_COMPILE_WORKER;
    return RSR_COMPILE_NOT;
}
