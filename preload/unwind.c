/* Native stack unwinding for the sampler with libunwind, loaded privately:
 * dlopen("libunwind.so.8", RTLD_LOCAL) and function pointers, so that the
 * program's own unwinder (libgcc's _Unwind_*, which libunwind.so also
 * exports) is never replaced by ours and a program linked with a different
 * libunwind keeps its own. libunwind's local unwinding is async-signal-safe
 * (its own mmap-based allocator; the global cache is locked with signals
 * masked), which is why the signal handler can use it. */
#define UNW_LOCAL_ONLY
#include "preload/sample.h"

#include <dlfcn.h>
#include <link.h>
#include <libunwind.h>
#include <stdlib.h>
#include <string.h>

static int (*p_init_local2)(unw_cursor_t *, unw_context_t *, int);
static int (*p_step)(unw_cursor_t *);
static int (*p_get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
static int (*p_getcontext)(unw_context_t *);
static int (*p_set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
static int (*p_set_cache_size)(unw_addr_space_t, size_t, int);
static uint64_t agent_lo, agent_hi;

/* The agent's exported functions (its hooks), [start, end) sorted by start,
 * read at start from its own dynamic symbol table: the writer names the
 * hook a sample was taken in without asking the loader (dladdr takes the
 * loader's lock, which a hook waiting for the writer may hold). */
struct hook_span {
    uint64_t start, end;
};
static struct hook_span *hooks;
static size_t nhooks;

static int span_cmp(const void *a, const void *b)
{
    const struct hook_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The number of dynamic symbols, from the GNU hash table: past the highest
 * bucket's chain end. */
static size_t gnu_hash_count(const uint32_t *h)
{
    uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2];
    const uint32_t *buckets = h + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return (size_t)last + 1;
}

static void read_hooks(const struct dl_phdr_info *info)
{
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    const ElfW(Sym) *syms = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        /* the loader relocates these in place, unless the section is
         * read-only */
        uint64_t v = dyn->d_un.d_ptr < info->dlpi_addr ? dyn->d_un.d_ptr + info->dlpi_addr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_SYMTAB)
            syms = (const ElfW(Sym) *)v;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)v;
        else if (dyn->d_tag == DT_HASH)
            sysv = (const uint32_t *)v;
    }
    size_t n = sysv ? sysv[1] : gnu ? gnu_hash_count(gnu) : 0;
    if (!syms || !n)
        return;
    hooks = calloc(n, sizeof *hooks);
    if (!hooks)
        return;
    for (size_t i = 0; i < n; i++)
        if (ELF64_ST_TYPE(syms[i].st_info) == STT_FUNC && syms[i].st_shndx != SHN_UNDEF && syms[i].st_size)
            hooks[nhooks++] = (struct hook_span){ info->dlpi_addr + syms[i].st_value,
                                                  info->dlpi_addr + syms[i].st_value + syms[i].st_size };
    qsort(hooks, nhooks, sizeof *hooks, span_cmp);
}

/* The executable segment of libagent.so, so wait stacks start at the
 * program, and its hooks. */
static int find_agent(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if (info->dlpi_addr != (ElfW(Addr))base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            agent_lo = info->dlpi_addr + ph->p_vaddr;
            agent_hi = agent_lo + ph->p_memsz;
        }
    }
    read_hooks(info);
    return 1;
}

static void agent_range(void)
{
    Dl_info info;
    if (dladdr((void *)rs_unwind_init, &info) && info.dli_fbase)
        dl_iterate_phdr(find_agent, info.dli_fbase);
}

uint64_t rs_unwind_hook_entry(uint64_t pc)
{
    size_t lo = 0, hi = nhooks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hooks[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && pc < hooks[lo - 1].end ? hooks[lo - 1].start : 0;
}

int rs_unwind_is_agent(uint64_t pc)
{
    return pc >= agent_lo && pc < agent_hi;
}

int rs_unwind_ready(void)
{
    return p_step != NULL;
}

int rs_unwind_init(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        rs_notice("cannot load libunwind.so.8 (%s); CPU samples are off", dlerror());
        return -1;
    }
    /* UNW_LOCAL_ONLY names: _ULx86_64_*; getcontext is _Ux86_64_getcontext. */
    p_init_local2 = (__typeof__(p_init_local2))dlsym(h, "_ULx86_64_init_local2");
    p_step = (__typeof__(p_step))dlsym(h, "_ULx86_64_step");
    p_get_reg = (__typeof__(p_get_reg))dlsym(h, "_ULx86_64_get_reg");
    p_getcontext = (__typeof__(p_getcontext))dlsym(h, "_Ux86_64_getcontext");
    p_set_caching_policy = (__typeof__(p_set_caching_policy))dlsym(h, "_ULx86_64_set_caching_policy");
    p_set_cache_size = (__typeof__(p_set_cache_size))dlsym(h, "_ULx86_64_set_cache_size");
    unw_addr_space_t *local = dlsym(h, "_ULx86_64_local_addr_space");
    if (!p_init_local2 || !p_step || !p_get_reg || !p_getcontext) {
        rs_notice("libunwind.so.8 lacks init_local2/step/get_reg/getcontext; CPU samples are off");
        rs_dlclose_quiet(h);
        return -1;
    }
    /* The global cache is shared by all threads under a lock taken with all
     * signals masked; the per-thread cache would allocate TLS in a handler. */
    if (p_set_caching_policy && local)
        p_set_caching_policy(*local, UNW_CACHE_GLOBAL);
    /* Its default of 128 frame states is fewer than the distinct code
     * addresses a deep C++ and Python stack passes, and a miss looks the
     * object up again and parses its CFI: 4096 (under 1 MiB, mapped once). */
    if (p_set_cache_size && local)
        p_set_cache_size(*local, 4096, 0);
    agent_range();
    return 0;
}

/* The gate: the count of walks under way, and a bit set while a fork is
 * under way. One word, so that no thread counts itself in once the bit is
 * set (a child must not read a thread that was only trying to go in as one
 * inside). */
#define DL_FORKING 0x80000000u
static _Atomic unsigned dl_word;
/* This thread's walks under way (more than one when a signal handler's walk
 * interrupted one of its own). */
static __thread unsigned dl_mine RS_TLS;
/* Set in a child forked while another thread of its parent was inside a
 * walk: that thread's locks (the loader's list lock, libunwind's cache lock)
 * are held in the child by no thread, so the child never walks. */
static int dl_shut;

int rs_dl_enter(void)
{
    /* The loader changing its list (a dlopen or dlclose under way) holds
     * its lock; in a child forked meanwhile the change never ends, and the
     * lock is held by no thread: never walk there. */
    if (dl_shut || rs_loader_busy())
        return 0;
    unsigned w = atomic_load(&dl_word);
    do {
        if (w & DL_FORKING)
            return 0;
    } while (!atomic_compare_exchange_weak(&dl_word, &w, w + 1));
    dl_mine++;
    return 1;
}

void rs_dl_leave(void)
{
    dl_mine--;
    atomic_fetch_sub(&dl_word, 1);
}

void rs_dl_fork_prepare(void)
{
    atomic_fetch_or(&dl_word, DL_FORKING);
    /* Other threads' walks end in microseconds, unless their thread is off
     * the CPU (a loaded machine, a page fault on a busy disk): wait up to
     * 2 s. Not for this thread's own (a fork from a signal handler that
     * interrupted a walk here would wait for itself). After a wait that ran
     * out, 50 ms until one does not: a walk that never ends (its thread
     * jumped out of it from a signal handler of the program's) must not
     * cost every fork 2 s. */
    static int ran_out;
    uint64_t deadline = rs_now() + (ran_out ? 50000000u : 2000000000u);
    while ((atomic_load(&dl_word) & ~DL_FORKING) > dl_mine) {
        if (rs_now() >= deadline) {
            ran_out = 1;
            return;
        }
        struct timespec t = { 0, 50000 };
        nanosleep(&t, NULL);
    }
    ran_out = 0;
}

void rs_dl_fork_parent(void)
{
    atomic_fetch_and(&dl_word, ~DL_FORKING);
}

void rs_dl_fork_child(void)
{
    /* Still inside at the fork, another thread held what its walk took. */
    if ((atomic_load(&dl_word) & ~DL_FORKING) > dl_mine) {
        dl_shut = 1;
        rs_debug("forked while another thread walked a stack: this process records no native stacks");
    }
    atomic_store(&dl_word, dl_mine); /* the child has none of the other threads */
}

int rs_unwind(void *uc, uint64_t *pcs, uint64_t *sps, int max)
{
    unw_cursor_t cur;
    unw_context_t here;
    int flags = UNW_INIT_SIGNAL_FRAME;
    if (!uc) {
        if (p_getcontext(&here) != 0)
            return 0;
        uc = &here;
        flags = 0;
    }
    if (!rs_dl_enter())
        return 0;
    int cs = rs_nocancel(); /* libunwind tests addresses through a pipe */
    int n = 0;
    if (p_init_local2(&cur, uc, flags) == 0) {
        do {
            unw_word_t ip;
            unw_word_t sp = 0;
            if (p_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0 ||
                (sps && p_get_reg(&cur, UNW_REG_SP, &sp) != 0))
                break;
            if (sps)
                sps[n] = sp;
            pcs[n++] = ip;
        } while (n < max && p_step(&cur) > 0);
        /* More frames than room: the outermost one kept says so. */
        if (n == max && max > 1 && p_step(&cur) > 0)
            pcs[n - 1] = RSF_FRAME_TRUNCATED;
    }
    rs_cancel_restore(cs);
    rs_dl_leave();
    return n;
}
