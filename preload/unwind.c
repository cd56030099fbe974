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
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

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

/* An object's dynamic symbol table, from its PT_DYNAMIC. Reads memory the
 * loader mapped, takes no lock, allocates nothing. 0, or -1 when it has no
 * table or hash. */
struct dyn_syms {
    const ElfW(Sym) *syms;
    const char *strs;
    const uint32_t *gnu, *sysv;
};

static int dyn_syms(const struct dl_phdr_info *info, struct dyn_syms *d)
{
    const ElfW(Dyn) *dyn = NULL;
    memset(d, 0, sizeof *d);
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        /* the loader relocates these in place, unless the section is
         * read-only */
        uint64_t v = dyn->d_un.d_ptr < info->dlpi_addr ? dyn->d_un.d_ptr + info->dlpi_addr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_SYMTAB)
            d->syms = (const ElfW(Sym) *)v;
        else if (dyn->d_tag == DT_STRTAB)
            d->strs = (const char *)v;
        else if (dyn->d_tag == DT_GNU_HASH)
            d->gnu = (const uint32_t *)v;
        else if (dyn->d_tag == DT_HASH)
            d->sysv = (const uint32_t *)v;
    }
    return d->syms && d->strs && (d->gnu || d->sysv) ? 0 : -1;
}

int rs_elf_func(const struct dl_phdr_info *info, const char *name, uint64_t *lo, uint64_t *hi)
{
    struct dyn_syms d;
    if (dyn_syms(info, &d) != 0 || !d.gnu)
        return -1;
    uint32_t h = 5381;
    for (const char *c = name; *c; c++)
        h = h * 33 + (uint8_t)*c;
    uint32_t nbuckets = d.gnu[0], symoffset = d.gnu[1], bloom = d.gnu[2];
    const uint32_t *buckets = d.gnu + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    if (!nbuckets)
        return -1;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
        uint32_t h2 = chain[i - symoffset];
        const ElfW(Sym) *sym = &d.syms[i];
        if ((h | 1) == (h2 | 1) && sym->st_shndx != SHN_UNDEF && sym->st_size &&
            ELF64_ST_TYPE(sym->st_info) == STT_FUNC && strcmp(d.strs + sym->st_name, name) == 0) {
            *lo = info->dlpi_addr + sym->st_value;
            *hi = *lo + sym->st_size;
            return 0;
        }
        if (h2 & 1)
            break;
    }
    return -1;
}

static void read_hooks(const struct dl_phdr_info *info)
{
    struct dyn_syms d;
    if (dyn_syms(info, &d) != 0)
        return;
    size_t n = d.sysv ? d.sysv[1] : gnu_hash_count(d.gnu);
    if (!n)
        return;
    hooks = calloc(n, sizeof *hooks);
    if (!hooks)
        return;
    for (size_t i = 0; i < n; i++)
        if (ELF64_ST_TYPE(d.syms[i].st_info) == STT_FUNC && d.syms[i].st_shndx != SHN_UNDEF && d.syms[i].st_size)
            hooks[nhooks++] = (struct hook_span){ info->dlpi_addr + d.syms[i].st_value,
                                                  info->dlpi_addr + d.syms[i].st_value + d.syms[i].st_size };
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

/* Set last, once every pointer above is: a thread that reads it set sees
 * them all. */
static _Atomic int unwind_ready;

int rs_unwind_ready(void)
{
    return atomic_load_explicit(&unwind_ready, memory_order_acquire);
}

int rs_unwind_init(void)
{
    /* Its start may make its pipe (RS_UNW_PIPE_READ): this thread runs it
     * from here on. */
    rs_th.in_unwind = 1;
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
    atomic_store_explicit(&unwind_ready, 1, memory_order_release);
    return 0;
}

/* ---- libunwind's pipe (agent.h, RS_UNW_PIPE_READ) ---- */

RS_REAL_DECL(pipe2);

RS_EXPORT int pipe2(int fds[2], int flags)
{
    if (RS_UNLIKELY(rs_th.in_unwind)) {
        fds[0] = RS_UNW_PIPE_READ;
        fds[1] = RS_UNW_PIPE_WRITE;
        return 0;
    }
    return RS_REAL(pipe2)(fds, flags);
}

/* Pages this thread's walk under way has found readable (libunwind 1.8
 * checks a page at each of many reads, keeping four for all threads): a
 * walk's own, forgotten when it ends, so that a page another thread unmaps
 * is found out at the next walk. */
#define CHECKED_PAGES 32
static __thread struct {
    uint64_t page[CHECKED_PAGES];
    unsigned n;
} checked RS_TLS;

/* The top of this thread's stack, as far as it is known (0: not): from the
 * stack pointer there down to the top, the stack is mapped. */
static __thread uint64_t stack_top RS_TLS;

void rs_unwind_stack_top(uint64_t top)
{
    stack_top = (top + 4095) & ~(uint64_t)4095;
}

long rs_unwind_pipe_call(long nr, long fd, long buf, long n)
{
    /* fd as an int: syscall(2)'s variadic arguments carry it zero-extended */
    if (nr == SYS_read && (int)fd == RS_UNW_PIPE_READ)
        return -EAGAIN; /* always empty */
    if (nr != SYS_write || (int)fd != RS_UNW_PIPE_WRITE || n <= 0)
        return -EBADF;
    uint64_t page = (uint64_t)buf & ~(uint64_t)4095;
    /* this thread's own stack, between here and its top: mapped */
    uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0) & ~(uint64_t)4095;
    if (page >= here && (uint64_t)buf + (uint64_t)n <= stack_top)
        return n;
    unsigned k = checked.n < CHECKED_PAGES ? checked.n : CHECKED_PAGES;
    for (unsigned i = 0; i < k; i++)
        if (checked.page[i] == page)
            return n;
    char b[64];
    size_t want = (size_t)n < sizeof b ? (size_t)n : sizeof b;
    struct iovec l = { b, want }, r = { (void *)buf, want };
    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)want)
        return -EFAULT;
    if (page + 4096 >= (uint64_t)buf + want)
        checked.page[checked.n++ % CHECKED_PAGES] = page;
    return n;
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

int rs_dl_shut(void)
{
    return dl_shut;
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
    if (!rs_unwind_ready())
        return 0;
    if (!uc) {
        if (p_getcontext(&here) != 0)
            return 0;
        uc = &here;
        flags = 0;
    }
    if (!rs_dl_enter())
        return 0;
    int cs = rs_nocancel();
    int was = rs_th.in_unwind;
    rs_th.in_unwind = 1;
    checked.n = 0;
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
    rs_th.in_unwind = was;
    rs_cancel_restore(cs);
    rs_dl_leave();
    return n;
}
