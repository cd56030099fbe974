/* The process's module map for offline symbolisation: every PT_LOAD segment
 * of every loaded ELF object (path, GNU build id from its note, address
 * range, file offset), reported to the writer at start and whenever the
 * loader's adds/subs counters say objects came or went. dlclose is hooked so
 * the writer records samples and modules before an object is unmapped.
 * The writer never waits for the loader's lock (dlopen, dlsym, dladdr): a
 * hook waiting for the writer may hold it (a library's constructor, run
 * inside dlopen, that calls dlclose, as UCX's libucm does). */
#include "preload/sample.h"

#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

static unsigned long long seen_adds, seen_subs;
static int polled;
/* A libpython came with the last changes (the interpreter can start
 * inside a program that loads it: rs_modules_python_loaded). */
static _Atomic int python_lib;
/* The loader's own record for debuggers: r_state is RT_ADD or RT_DELETE
 * while it changes the list of loaded objects. */
static struct r_debug *loader_state;

struct counts {
    unsigned long long adds, subs;
};

static int read_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct counts *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c->adds = info->dlpi_adds;
        c->subs = info->dlpi_subs;
    }
    return 1;
}

/* The GNU build id of an object from its PT_NOTE segments, as hex. */
static void build_id(const struct dl_phdr_info *info, char *hex, size_t cap)
{
    hex[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const void *)p;
            size_t name = (n->n_namesz + 3u) & ~3u, desc = (n->n_descsz + 3u) & ~3u;
            const uint8_t *d = p + sizeof *n + name;
            if (d + n->n_descsz > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(p + sizeof *n, "GNU", 4) == 0) {
                size_t k = 0;
                for (uint32_t j = 0; j < n->n_descsz && k + 2 < cap; j++, k += 2) {
                    hex[k] = "0123456789abcdef"[d[j] >> 4];
                    hex[k + 1] = "0123456789abcdef"[d[j] & 15];
                }
                hex[k] = 0;
                return;
            }
            p = d + desc;
        }
    }
}

struct poll_arg {
    rs_module_fn fn;
    void *arg;
    char exe[PATH_MAX];
};

static int each_object(struct dl_phdr_info *info, size_t size, void *varg)
{
    (void)size;
    struct poll_arg *a = varg;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : a->exe;
    const char *base = strrchr(path, '/');
    if (strncmp(base ? base + 1 : path, "libpython3", 10) == 0)
        atomic_store(&python_lib, 1);
    char id[64];
    build_id(info, id, sizeof id);
    long page = sysconf(_SC_PAGESIZE);
    uint64_t mask = ~(uint64_t)(page - 1);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
            continue;
        uint64_t va = info->dlpi_addr + ph->p_vaddr;
        uint64_t start = va & mask;
        uint64_t end = (va + ph->p_memsz + (uint64_t)page - 1) & mask;
        a->fn(start, end, ph->p_offset & mask, path, id, a->arg);
    }
    return 0;
}

void rs_modules_poll(rs_module_fn fn, void *arg)
{
    struct counts c = { 0, 0 };
    if (!rs_dl_enter())
        return; /* a fork is under way: the next poll */
    dl_iterate_phdr(read_counts, &c);
    if (polled && c.adds == seen_adds && c.subs == seen_subs) {
        rs_dl_leave();
        return;
    }
    polled = 1;
    seen_adds = c.adds;
    seen_subs = c.subs;
    struct poll_arg a = { fn, arg, "" };
    ssize_t n = readlink("/proc/self/exe", a.exe, sizeof a.exe - 1);
    a.exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(each_object, &a);
    rs_dl_leave();
}

void rs_modules_reset(void)
{
    polled = 0;
}

int rs_modules_python_loaded(void)
{
    return atomic_load(&python_lib);
}

void rs_modules_init(void)
{
    loader_state = dlsym(RTLD_DEFAULT, "_r_debug");
}

int rs_loader_busy(void)
{
    return loader_state && loader_state->r_state != RT_CONSISTENT;
}

RS_REAL_DECL(dlclose);

/* Before an object goes away, the writer takes every sample so far and the
 * module map that explains them (rs_writer_sync_modules: it waits for the
 * writer's drain alone, never for a file write or the GPU's times). */
RS_EXPORT int dlclose(void *handle)
{
    if (rs_sample_sig && !rs_th.guard && atomic_load_explicit(&rs_hot.on, memory_order_relaxed)) {
        int saved = errno;
        rs_writer_sync_modules();
        errno = saved;
    }
    return RS_REAL(dlclose)(handle);
}

int rs_dlclose_quiet(void *handle)
{
    return RS_REAL(dlclose)(handle);
}
