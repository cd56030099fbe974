/* What of a process is torch.compile's compilation (compile.h): the
 * frames that mark it in a stack, and the argv that marks its workers. */
#include "reporter/load/compile.h"

#include <string.h>

#include "reporter/base/json.h"
#include "reporter/load/load.h"

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

int rsr_compile_owner(const struct rsr_input *ins, int n, int i)
{
    if (ins[i].compile_kind == RSR_COMPILE_NOT)
        return -1;
    int cur = i;
    /* at most n steps: a pid reused within the job cannot make it loop */
    for (int step = 0; step < n; step++) {
        int parent = -1;
        for (int k = 0; k < n && parent < 0; k++)
            if (k != cur && ins[k].pid == ins[cur].ppid && ins[k].host && ins[cur].host &&
                strcmp(ins[k].host, ins[cur].host) == 0)
                parent = k;
        if (parent < 0)
            return -1;
        if (ins[parent].compile_kind == RSR_COMPILE_NOT)
            return parent;
        cur = parent;
    }
    return -1;
}

/* Seconds in each part of compilation of a process's samples. */
static double part_s(const struct rsr_input *in, int part)
{
    return in->model ? (double)in->model->waits.compile_ns[part] / 1e9 : 0;
}

struct owned {
    int workers, compilers;
};

static struct owned owned_by(const struct rsr_input *ins, int n, int i)
{
    struct owned o = { 0, 0 };
    for (int k = 0; k < n; k++) {
        if (ins[k].compile_kind == RSR_COMPILE_NOT || rsr_compile_owner(ins, n, k) != i)
            continue;
        o.workers += ins[k].compile_kind == RSR_COMPILE_WORKER;
        o.compilers += ins[k].compile_kind == RSR_COMPILE_COMPILER;
    }
    return o;
}

void rsr_compile_process_json(FILE *f, const struct rsr_input *ins, int n, int i)
{
    const struct rsr_input *in = &ins[i];
    if (in->compile_kind != RSR_COMPILE_NOT) {
        int owner = rsr_compile_owner(ins, n, i);
        fprintf(f, ",\"compile\":{\"kind\":\"%s\",\"for_pid\":",
                in->compile_kind == RSR_COMPILE_WORKER ? "worker" : "compiler");
        if (owner >= 0)
            fprintf(f, "%d}", ins[owner].pid);
        else
            fputs("null}", f);
        return;
    }
    double d = part_s(in, RSR_COMPILE_DYNAMO), ind = part_s(in, RSR_COMPILE_INDUCTOR);
    struct owned o = owned_by(ins, n, i);
    if (d <= 0 && ind <= 0 && !o.workers && !o.compilers)
        return;
    fputs(",\"compile\":{\"time_s\":", f);
    rsr_json_num(f, d + ind);
    fputs(",\"dynamo_s\":", f);
    rsr_json_num(f, d);
    fputs(",\"inductor_s\":", f);
    rsr_json_num(f, ind);
    fputs(",\"workers\":[", f);
    int w = 0;
    for (int k = 0; k < n; k++)
        if (ins[k].compile_kind == RSR_COMPILE_WORKER && rsr_compile_owner(ins, n, k) == i)
            fprintf(f, w++ ? ",%d" : "%d", ins[k].pid);
    fprintf(f, "],\"compiler_runs\":%d}", o.compilers);
}

struct job_compile {
    double dynamo_s, inductor_s;
    int processes, workers, compilers;
};

static struct job_compile job_compile(const struct rsr_input *ins, int n)
{
    struct job_compile j = { 0, 0, 0, 0, 0 };
    for (int i = 0; i < n; i++) {
        double d = part_s(&ins[i], RSR_COMPILE_DYNAMO), ind = part_s(&ins[i], RSR_COMPILE_INDUCTOR);
        j.dynamo_s += d, j.inductor_s += ind;
        j.processes += d + ind > 0;
        j.workers += ins[i].compile_kind == RSR_COMPILE_WORKER;
        j.compilers += ins[i].compile_kind == RSR_COMPILE_COMPILER;
    }
    return j;
}

void rsr_compile_job_json(FILE *f, const struct rsr_input *ins, int n)
{
    struct job_compile j = job_compile(ins, n);
    if (!j.processes && !j.workers && !j.compilers)
        return;
    fputs(",\n\"compile\":{\"time_s\":", f);
    rsr_json_num(f, j.dynamo_s + j.inductor_s);
    fputs(",\"dynamo_s\":", f);
    rsr_json_num(f, j.dynamo_s);
    fputs(",\"inductor_s\":", f);
    rsr_json_num(f, j.inductor_s);
    fprintf(f, ",\"processes\":%d,\"workers\":%d,\"compiler_runs\":%d}", j.processes, j.workers, j.compilers);
}

void rsr_compile_summary(FILE *f, const struct rsr_input *ins, int n)
{
    struct job_compile j = job_compile(ins, n);
    if (!j.processes && !j.workers && !j.compilers)
        return;
    fprintf(f, "  torch.compile: %.2f s compiling (Dynamo %.2f s, Inductor %.2f s) in %d process%s; "
               "%d compile worker%s, %d compiler run%s\n",
            j.dynamo_s + j.inductor_s, j.dynamo_s, j.inductor_s, j.processes, j.processes == 1 ? "" : "es",
            j.workers, j.workers == 1 ? "" : "s", j.compilers, j.compilers == 1 ? "" : "s");
}
