/* torch.compile's work in report.json and the summary (see compile_json.h). */
#include "reporter/out/compile_json.h"
#include "reporter/base/json.h"
#include "reporter/load/load.h"

#include <string.h>

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

void rsr_compile_process_json(struct rsr_jw *w, const struct rsr_input *ins, int n, int i)
{
    const struct rsr_input *in = &ins[i];
    if (in->compile_kind != RSR_COMPILE_NOT) {
        int owner = rsr_compile_owner(ins, n, i);
        rsr_jw_kobject(w, "compile", 0);
        rsr_jw_kstr(w, "kind", in->compile_kind == RSR_COMPILE_WORKER ? "worker" : "compiler");
        rsr_jw_key(w, "for_pid");
        if (owner >= 0)
            rsr_jw_int(w, ins[owner].pid);
        else
            rsr_jw_null(w);
        rsr_jw_end(w);
        return;
    }
    double d = part_s(in, RSR_COMPILE_DYNAMO), ind = part_s(in, RSR_COMPILE_INDUCTOR);
    struct owned o = owned_by(ins, n, i);
    if (d <= 0 && ind <= 0 && !o.workers && !o.compilers)
        return;
    rsr_jw_kobject(w, "compile", 0);
    rsr_jw_knum(w, "time_s", d + ind);
    rsr_jw_knum(w, "dynamo_s", d);
    rsr_jw_knum(w, "inductor_s", ind);
    rsr_jw_karray(w, "workers", 0);
    for (int k = 0; k < n; k++)
        if (ins[k].compile_kind == RSR_COMPILE_WORKER && rsr_compile_owner(ins, n, k) == i)
            rsr_jw_int(w, ins[k].pid);
    rsr_jw_end(w);
    rsr_jw_kint(w, "compiler_runs", o.compilers);
    rsr_jw_end(w);
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

void rsr_compile_job_json(struct rsr_jw *w, const struct rsr_input *ins, int n)
{
    struct job_compile j = job_compile(ins, n);
    if (!j.processes && !j.workers && !j.compilers)
        return;
    rsr_jw_line(w);
    rsr_jw_kobject(w, "compile", 0);
    rsr_jw_knum(w, "time_s", j.dynamo_s + j.inductor_s);
    rsr_jw_knum(w, "dynamo_s", j.dynamo_s);
    rsr_jw_knum(w, "inductor_s", j.inductor_s);
    rsr_jw_kint(w, "processes", j.processes);
    rsr_jw_kint(w, "workers", j.workers);
    rsr_jw_kint(w, "compiler_runs", j.compilers);
    rsr_jw_end(w);
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
