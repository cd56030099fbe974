/* Off-CPU time per process (see waits.h): what a wait stack is for, from
 * its symbolised frames, and the threads worth showing. */
#include "reporter/load/waits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rsr_wait_cause_name(unsigned c)
{
#define RSR_NAME_CAUSE(id, name) #name,
    static const char *const names[] = { RSR_WAIT_CAUSES(RSR_NAME_CAUSE) };
#undef RSR_NAME_CAUSE
    return c < RSR_NCAUSES ? names[c] : NULL;
}

static int starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The interpreter's own ELF file: python3.11, libpython3.12.so.1.0, ... */
static int is_interpreter(const char *module)
{
    return starts(module, "python3") || starts(module, "libpython3");
}

int rsr_host_class(unsigned reason)
{
    switch (reason) {
    case RSF_WAIT_SLEEP:
        return RSR_HOST_SLEEP;
    case RSF_WAIT_LOCK: case RSF_WAIT_RWLOCK: case RSF_WAIT_SPIN: case RSF_WAIT_CONDVAR: case RSF_WAIT_SEMAPHORE:
    case RSF_WAIT_JOIN: case RSF_WAIT_BARRIER: case RSF_WAIT_FUTEX: case RSF_WAIT_FILE_LOCK:
        return RSR_HOST_LOCK;
    case RSF_WAIT_POLL: case RSF_WAIT_SOCKET: case RSF_WAIT_PIPE: case RSF_WAIT_CHILD:
        return RSR_HOST_POLL;
    default:
        return -1;
    }
}

void rsr_stack_set_add(struct rsr_stack_set *set, uint32_t stack, uint64_t ns)
{
    uint32_t i, least = 0;
    for (i = 0; i < set->n; i++) {
        if (set->stack[i] == stack) {
            set->ns[i] += ns;
            return;
        }
        if (set->ns[i] < set->ns[least])
            least = i;
    }
    if (set->n < RSR_LOADER_STACKS)
        least = set->n++;
    else if (set->ns[least] >= ns)
        return;
    set->stack[least] = stack;
    set->ns[least] = ns;
}

int rsr_stack_set_has(const struct rsr_stack_set *set, uint32_t stack)
{
    for (uint32_t i = 0; stack && i < set->n; i++)
        if (set->stack[i] == stack)
            return 1;
    return 0;
}

/* A native function that loads data, by its name (waits.h). */
static int native_loader(const char *s)
{
    static const char *const words[] = { "dataloader", "data_loader", "load_batch", "next_batch" };
    for (size_t i = 0; s && i < sizeof words / sizeof words[0]; i++)
        if (strcasestr(s, words[i]))
            return 1;
    return 0;
}

int rsr_wait_cause(const char *const *names, const uint8_t *is_python, const char *const *modules, uint32_t n,
                   unsigned reason)
{
    int python = 0, loader = 0, loader_side = 0, distributed = 0, setup = 0, native_load = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *s = names[i];
        if (is_python[i]) {
            python = 1;
            loader |= starts(s, "torch/utils/data/dataloader.py:");
            loader_side |= starts(s, "torch/utils/data/_utils/");
            distributed |= starts(s, "torch/distributed/");
            setup |= starts(s, "torch/distributed/rendezvous.py:") || starts(s, "torch/distributed/elastic/") ||
                     starts(s, "torch/distributed/distributed_c10d.py:init_process_group");
        } else {
            native_load |= native_loader(s);
            distributed |= starts(s, "c10d::") || starts(s, "gloo::");
            setup |= starts(s, "c10d::TCPStore::TCPStore");
        }
    }
    if ((loader && !loader_side) || (!python && native_load))
        return RSR_CAUSE_DATALOADER;
    if (reason == RSF_WAIT_CONDVAR && n && !is_python[n - 1] && is_interpreter(modules[n - 1]))
        return RSR_CAUSE_GIL;
    if (!python || !distributed)
        return -1;
    return setup ? RSR_CAUSE_RENDEZVOUS : RSR_CAUSE_COLLECTIVE;
}

static int by_time(const void *pa, const void *pb)
{
    const struct rsr_thread_time *a = pa, *b = pb;
    uint64_t x = a->cpu_ns + a->wait_ns, y = b->cpu_ns + b->wait_ns;
    if (x != y)
        return x > y ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

void rsr_waits_keep_threads(struct rsr_proc_waits *w, struct rsr_thread_time *all, uint32_t n)
{
    if (n > 1)
        qsort(all, n, sizeof *all, by_time);
    w->nthreads = n;
    w->most_wait_ns = 0;
    for (uint32_t i = 0; i < n; i++)
        if (all[i].wait_ns > w->most_wait_ns)
            w->most_wait_ns = all[i].wait_ns;
    w->nkept = n < RSR_WAIT_THREADS ? n : RSR_WAIT_THREADS;
    memcpy(w->threads, all, w->nkept * sizeof *all);
}

uint64_t rsr_waits_total_ns(const struct rsr_proc_waits *w)
{
    uint64_t t = 0;
    for (unsigned r = 0; r < RSF_WAIT_NREASONS; r++)
        t += w->ns[r];
    return t;
}

/* names[0..n) (innermost RSR_WHERE_FRAMES, root first) and a wait's leaf
 * into buf. */
static void where_text(char *buf, size_t size, const char *const *names, uint32_t n, unsigned reason)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t i = n > RSR_WHERE_FRAMES ? n - RSR_WHERE_FRAMES : 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? ";" : "", names[i] ? names[i] : "?");
    if (reason != RSF_WAIT_NONE && o < size)
        snprintf(buf + o, size - o, "%s[wait: %s]", o ? ";" : "", rsf_wait_reason_label(reason));
}

void rsr_waits_where(struct rsr_proc_waits *w, const char *const *names, uint32_t n, unsigned reason,
                     uint64_t wait_ns)
{
    where_text(w->where, sizeof w->where, names, n, reason);
    w->where_wait_ns = reason != RSF_WAIT_NONE ? wait_ns : 0;
}

void rsr_waits_long_where(struct rsr_proc_waits *w, const char *const *names, uint32_t n, unsigned reason,
                          uint64_t wait_ns, int cause, int64_t end_ns)
{
    where_text(w->long_where, sizeof w->long_where, names, n, reason);
    w->long_cause = cause;
    w->long_wait_ns = wait_ns;
    w->long_end_ns = end_ns;
}

void rsr_waits_top_offer(struct rsr_proc_waits *w, int kind, uint64_t ns, const char *const *names, uint32_t n)
{
    if (kind < 0 || kind >= RSR_NTOP || !ns || !n)
        return;
    struct rsr_top_stack *t = w->top[kind], one = { ns, "" };
    size_t o = 0;
    for (uint32_t i = n > RSR_TOP_FRAMES ? n - RSR_TOP_FRAMES : 0; i < n && o < sizeof one.text; i++)
        o += (size_t)snprintf(one.text + o, sizeof one.text - o, "%s%s", o ? ";" : "", names[i] ? names[i] : "?");
    int k = 0;
    while (k < RSR_TOP_STACKS && t[k].ns && strcmp(t[k].text, one.text) != 0)
        k++;
    if (k < RSR_TOP_STACKS && t[k].ns) {         /* the same frames: add up, move up */
        one.ns += t[k].ns;
        memmove(&t[k], &t[k + 1], (size_t)(RSR_TOP_STACKS - 1 - k) * sizeof *t);
        t[RSR_TOP_STACKS - 1].ns = 0;
    }
    for (k = 0; k < RSR_TOP_STACKS && t[k].ns >= one.ns; k++)
        ;
    if (k == RSR_TOP_STACKS)
        return;
    memmove(&t[k + 1], &t[k], (size_t)(RSR_TOP_STACKS - 1 - k) * sizeof *t);
    t[k] = one;
}
