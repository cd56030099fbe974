/* Symbolisation with libdwfl (see symbolize.h). Each ELF file gets its own
 * Dwfl holding that one file at its link-time addresses, so that one file is
 * read once however many processes mapped it, at whatever addresses; the
 * callers turn runtime addresses into file addresses with rsr_sym_bias. */
#include "reporter/load/symbolize.h"
#include "reporter/base/intern.h"
#include "reporter/load/sympack.h"
#include "reporter/base/array.h"
#include "reporter/base/table.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The C++ runtime's demangler (libstdc++'s __cxa_demangle, extern "C"),
 * opened at the first C++ name: linked in, libstdc++ cost every command
 * half a millisecond to start. */
static char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len, int *status);
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_open(void)
{
    void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (lib)
        *(void **)&cxa_demangle = dlsym(lib, "__cxa_demangle");
}

struct symfile {
    char *path, *build_id;
    const char *base;       /* basename of path */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    enum rsr_sym_file_state state;
    const char *why;        /* state not OK: in a few words */
    const struct rsr_sympack_mod *pack;  /* from the symbols file, else NULL */
};

/* An address looked up once, kept with its answer. */
struct cache_slot {
    uint64_t addr;
    int32_t file;
    struct rsr_sym_result *res;
};

struct rsr_sym {
    int quiet;
    struct symfile *files;
    uint32_t nfiles, capfiles;
    struct cache_slot *slots;       /* in the order looked up */
    size_t nused, capslots;
    struct rsr_table cache;         /* (file, address) -> its place in slots */
    struct rsr_intern names;  /* function names, file names, fallbacks */
};

static char *debuginfo_path;

/* What rsr_sym_configure set: process-wide, as the sources are the same for
 * every symboliser of one command. */
static struct {
    char *sysroot;                /* without a trailing slash; NULL: none */
    struct rsr_sympack pack;
    int have_pack;
    char *pack_path;
    const char *urls;             /* DEBUGINFOD_URLS; NULL: not set */
    debuginfod_client *client;
    int down;                     /* a query failed for want of the server: no more */
} src;

/* libdebuginfod, opened only where DEBUGINFOD_URLS asks for it: linked in,
 * its start-up (curl's and TLS's) cost every command 3.4 ms of the 6 it
 * took to start, and a PyTorch trace's import and report take 20. */
static struct {
    debuginfod_client *(*begin)(void);
    void (*end)(debuginfod_client *);
    void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
    int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
} dbg;

static int debuginfod_open(void)
{
    void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    *(void **)&dbg.begin = dlsym(lib, "debuginfod_begin");
    *(void **)&dbg.end = dlsym(lib, "debuginfod_end");
    *(void **)&dbg.set_progressfn = dlsym(lib, "debuginfod_set_progressfn");
    *(void **)&dbg.find_executable = dlsym(lib, "debuginfod_find_executable");
    if (dbg.begin && dbg.end && dbg.set_progressfn && dbg.find_executable)
        return 0;
    memset(&dbg, 0, sizeof dbg);
    return -1;
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* Cancels debuginfod queries once a server has failed (said once), libdwfl's
 * own ones for debug info included: a dead server costs one time-out. */
static int debuginfod_progress(debuginfod_client *c, long a, long b)
{
    (void)c, (void)a, (void)b;
    return src.down;
}

int rsr_sym_configure(const char *sysroot, const char *symbols_file)
{
    if (sysroot) {
        struct stat st;
        if (stat(sysroot, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "ringside: --sysroot %s: %s\n", sysroot,
                    errno && stat(sysroot, &st) != 0 ? strerror(errno) : "not a folder");
            return -1;
        }
        src.sysroot = rsr_xstrdup(sysroot);
        size_t n = strlen(src.sysroot);
        while (n > 1 && src.sysroot[n - 1] == '/')
            src.sysroot[--n] = '\0';
        /* separate debug info by build id under the root too */
        size_t cap = 2 * n + 64;
        debuginfo_path = rsr_xmalloc(cap);
        snprintf(debuginfo_path, cap, ":.debug:%s/usr/lib/debug:/usr/lib/debug", src.sysroot);
    }
    if (symbols_file) {
        if (rsr_sympack_read(symbols_file, &src.pack) != 0)
            return -1;
        src.have_pack = 1;
        src.pack_path = rsr_xstrdup(symbols_file);
    }
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (urls && *urls) {
        src.urls = urls;
        /* the client's own default is 90 s a server: too long to wait */
        setenv("DEBUGINFOD_TIMEOUT", "5", 0);
        src.client = dbg.begin || debuginfod_open() == 0 ? dbg.begin() : NULL;
        if (src.client)
            dbg.set_progressfn(src.client, debuginfod_progress);
        else
            fprintf(stderr, "ringside: debuginfod: the client cannot start; DEBUGINFOD_URLS is not used\n");
    }
    return 0;
}

void rsr_sym_unconfigure(void)
{
    free(src.sysroot);
    free(src.pack_path);
    if (src.have_pack)
        rsr_sympack_free(&src.pack);
    if (src.client)
        dbg.end(src.client);
    free(debuginfo_path);
    debuginfo_path = NULL;
    memset(&src, 0, sizeof src);
}

void rsr_sym_sources(const char **sysroot, const char **symbols_file, const char **urls, int *down)
{
    *sysroot = src.sysroot;
    *symbols_file = src.pack_path;
    *urls = src.urls;
    *down = src.down;
}

struct rsr_sym *rsr_sym_new(int quiet)
{
    struct rsr_sym *s = calloc(1, sizeof *s);
    if (s)
        s->quiet = quiet;
    return s;
}

void rsr_sym_free(struct rsr_sym *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nfiles; i++) {
        if (s->files[i].dwfl)
            dwfl_end(s->files[i].dwfl);
        free(s->files[i].path);
        free(s->files[i].build_id);
    }
    free(s->files);
    for (size_t i = 0; i < s->nused; i++) {
        free((void *)s->slots[i].res->levels);
        free(s->slots[i].res);
    }
    free(s->slots);
    rsr_table_free(&s->cache);
    rsr_intern_free(&s->names);
    free(s);
}

char *rsr_sym_demangle(const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    pthread_once(&cxa_once, cxa_open);
    if (!cxa_demangle)
        return NULL;
    int status = -1;
    char *d = cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

/* The build id of the module as lowercase hex, in buf (NUL-terminated);
 * empty when it has none. */
static void module_build_id(Dwfl_Module *mod, char *buf, size_t cap)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    buf[0] = '\0';
    for (int i = 0; i < n && (size_t)(2 * i + 2) < cap; i++)
        snprintf(buf + 2 * i, 3, "%02x", bits[i]);
}

/* Opens path (as found) for f: 1 when usable (f->dwfl, f->mod set), 0 when
 * it is not a readable ELF file, -1 when its build id is not the traced
 * one (what it has in have). */
static int try_open(struct symfile *f, const char *path, char *have, size_t cap)
{
    have[0] = '\0';
    if (access(path, R_OK) != 0)
        return 0;
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl)
        return 0;
    if (src.client) {
        /* libdwfl's own client, for debug info: stopped as ours is */
        debuginfod_client *c = dwfl_get_debuginfod_client(dwfl);
        if (c)
            dbg.set_progressfn(c, debuginfod_progress);
    }
    dwfl_report_begin(dwfl);
    /* ET_DYN placed at its own p_vaddr: addresses are link-time ones. */
    Dwfl_Module *mod = dwfl_report_elf(dwfl, f->base, path, -1, 0, true);
    dwfl_report_end(dwfl, NULL, NULL);
    if (!mod) {
        dwfl_end(dwfl);
        return 0;
    }
    if (f->build_id[0]) {
        module_build_id(mod, have, cap);
        if (strcasecmp(have, f->build_id) != 0) {
            dwfl_end(dwfl);
            return -1;
        }
    }
    f->dwfl = dwfl;
    f->mod = mod;
    return 1;
}

/* path as the root's own processes see it: each symbolic link on the way
 * followed inside src.sysroot (an absolute target starts from the root, as
 * in a chroot: /etc/alternatives and the like), at most 40 of them. A
 * malloc'd path under the root; where a part is missing, the rest is
 * joined as it is. */
static char *under_root(const char *path)
{
    size_t rl = strlen(src.sysroot), cap = rl + PATH_MAX * 2;
    char *out = rsr_xmalloc(cap), rest[PATH_MAX * 2], target[PATH_MAX];
    snprintf(rest, sizeof rest, "%s", path);
    memcpy(out, src.sysroot, rl + 1);
    size_t len = rl;   /* out holds the root and the resolved parts */
    char *p = rest;
    for (int hops = 0; *p;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > rl && out[len - 1] != '/')
                len--;
            if (len > rl)
                len--;
            out[len] = '\0';
        } else if (!(n == 1 && p[0] == '.')) {
            if (len + n + 2 > cap)
                break;
            out[len] = '/';
            memcpy(out + len + 1, p, n);
            out[len + 1 + n] = '\0';
            ssize_t t = hops < 40 ? readlink(out, target, sizeof target - 1) : -1;
            if (t > 0) {
                hops++;
                target[t] = '\0';
                char next[PATH_MAX * 2];
                snprintf(next, sizeof next, "%s%s%s", target, end ? "/" : "", end ? end + 1 : "");
                snprintf(rest, sizeof rest, "%s", next);
                p = rest;
                if (target[0] == '/') {
                    len = rl;
                    out[len] = '\0';
                }
                continue;
            }
            len += n + 1;
        }
        p = end ? end + 1 : p + n;
    }
    if (len == rl)
        snprintf(out + len, cap - len, "/");
    return out;
}

/* The traced file by build id from the debuginfod servers: its path in the
 * client's cache (malloc'd), or NULL with *why set. A failure other than
 * "not there" is said once and ends the asking. */
static char *from_debuginfod(struct rsr_sym *s, struct symfile *f, const char **why)
{
    if (!src.client || !f->build_id[0] || src.down)
        return NULL;
    char *path = NULL;
    int fd = dbg.find_executable(src.client, (const unsigned char *)f->build_id, 0, &path);
    if (fd >= 0) {
        close(fd);
        return path;
    }
    free(path);
    if (fd == -ENOENT) {
        *why = "file not found here nor on the debuginfod servers";
        return NULL;
    }
    src.down = 1;
    if (!s->quiet)
        fprintf(stderr, "ringside: debuginfod (%s): %s; no more files are asked of it\n", src.urls,
                strerror(-fd));
    return NULL;
}

static void open_file(struct rsr_sym *s, struct symfile *f)
{
    f->state = RSR_SYM_FILE_MISSING;
    f->why = "file not found here";
    if (src.have_pack) {
        const struct rsr_sympack_mod *m = rsr_sympack_find(&src.pack, f->path, f->build_id);
        if (m && m->ok) {
            f->pack = m;
            f->state = RSR_SYM_FILE_OK;
            f->why = NULL;
            return;
        }
        if (m)
            f->why = m->why;
    }
    char have[2 * 64 + 1], seen[2 * 64 + 1] = "";
    const char *changed = NULL;   /* the first file found with another build id */
    char *rooted = NULL;
    if (src.sysroot && f->path[0] == '/') {
        rooted = under_root(f->path);
        int r = try_open(f, rooted, have, sizeof have);
        if (r == 1) {
            free(rooted);
            f->state = RSR_SYM_FILE_OK;
            f->why = NULL;
            return;
        }
        if (r < 0) {
            changed = rooted;
            snprintf(seen, sizeof seen, "%s", have);
        }
    }
    int r = try_open(f, f->path, have, sizeof have);
    if (r < 0 && !changed) {
        changed = f->path;
        snprintf(seen, sizeof seen, "%s", have);
    }
    char *fetched = r == 1 ? NULL : from_debuginfod(s, f, &f->why);
    if (fetched && try_open(f, fetched, have, sizeof have) == 1)
        r = 1;
    free(fetched);
    if (r == 1) {
        free(rooted);
        f->state = RSR_SYM_FILE_OK;
        f->why = NULL;
        return;
    }
    if (changed) {
        f->state = RSR_SYM_FILE_CHANGED;
        f->why = "build id differs";
        if (!s->quiet)
            fprintf(stderr, "ringside: %s: build id %s, not the traced %s: the file changed since "
                    "the run (or is another one); "
                    "its frames are shown as [%s+0xOFFSET]\n", changed, seen[0] ? seen : "(none)",
                    f->build_id, f->base);
    } else if (!s->quiet) {
        fprintf(stderr, "ringside: %s: %s%s; its frames are shown as [%s+0xOFFSET]\n", f->path,
                strcmp(f->why, "file not found here") == 0 ? "cannot be read here" : f->why,
                src.sysroot && !src.have_pack ? " (nor under the --sysroot)" : "", f->base);
    }
    free(rooted);
}

int rsr_sym_file(struct rsr_sym *s, const char *path, const char *build_id)
{
    if (!build_id)
        build_id = "";
    for (uint32_t i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].path, path) == 0 && strcmp(s->files[i].build_id, build_id) == 0)
            return (int)i;
    if (s->nfiles == s->capfiles) {
        s->capfiles = s->capfiles ? s->capfiles * 2 : 16;
        s->files = rsr_xrealloc(s->files, s->capfiles * sizeof *s->files);
    }
    struct symfile *f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    f->path = rsr_xstrdup(path);
    f->build_id = rsr_xstrdup(build_id);
    const char *slash = strrchr(f->path, '/');
    f->base = slash && slash[1] ? slash + 1 : f->path;
    open_file(s, f);
    return (int)s->nfiles++;
}

enum rsr_sym_file_state rsr_sym_file_state(const struct rsr_sym *s, int file)
{
    return s->files[file].state;
}

const char *rsr_sym_file_why(const struct rsr_sym *s, int file)
{
    return s->files[file].state == RSR_SYM_FILE_OK ? NULL : s->files[file].why;
}

int rsr_sym_bias(struct rsr_sym *s, int file, uint64_t start, uint64_t file_off, uint64_t *bias)
{
    struct symfile *f = &s->files[file];
    if (f->state != RSR_SYM_FILE_OK)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t mask = (uint64_t)(page > 0 ? page : 4096) - 1;
    if (f->pack) {
        for (uint32_t i = 0; i < f->pack->nloads; i++) {
            const struct rsr_sympack_load *l = &f->pack->loads[i];
            if ((l->offset & ~mask) <= file_off && file_off < l->offset + l->filesz) {
                *bias = start - file_off - l->vaddr + l->offset;
                return 0;
            }
        }
        return -1;
    }
    GElf_Addr mbias;
    Elf *elf = dwfl_module_getelf(f->mod, &mbias);
    size_t nph;
    if (!elf || elf_getphdrnum(elf, &nph) != 0)
        return -1;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if ((ph.p_offset & ~mask) <= file_off && file_off < ph.p_offset + ph.p_filesz) {
            /* the file byte X of this segment is at bias + p_vaddr + X - p_offset */
            *bias = start - file_off - ph.p_vaddr + ph.p_offset;
            return 0;
        }
    }
    return -1;
}

/* The source-level name of a function DIE: the linkage name demangled, else
 * DW_AT_name (following abstract origins and specifications). */
static const char *die_name(struct rsr_sym *s, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (name) {
        char *d = rsr_sym_demangle(name);
        if (d) {
            const char *r = rsr_intern_str(&s->names, rsr_intern(&s->names, d));
            free(d);
            return r;
        }
    }
    name = dwarf_diename(die);
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    return name ? rsr_intern_str(&s->names, rsr_intern(&s->names, name)) : NULL;
}

static const char *keep(struct rsr_sym *s, const char *str)
{
    return str ? rsr_intern_str(&s->names, rsr_intern(&s->names, str)) : NULL;
}

static int is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point;
}

enum { MAX_SCOPES = 256 };

/* Appends to chain (outermost first, n so far) the DIEs under parent that
 * hold pc, down to the innermost; namespaces are searched through. Returns
 * the new length. Only the way down is read, not the whole unit, which is
 * what makes this cheaper than dwarf_getscopes + dwarf_getscopes_die. */
static int descend(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *chain, int n)
{
    Dwarf_Die child;
    if (n >= MAX_SCOPES || dwarf_child(parent, &child) != 0)
        return n;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_entry_point:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&child, pc) == 1) {
                chain[n] = child;
                return descend(&chain[n], pc, chain, n + 1);
            }
            break;
        case DW_TAG_namespace:
        case DW_TAG_module: {
            int k = descend(&child, pc, chain, n);
            if (k > n)
                return k;
            break;
        }
        default:
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return n;
}

/* The scopes holding pc, innermost first, through libdw's own search: for
 * what descend does not find (units that import others). */
static int scopes_by_libdw(Dwfl_Module *mod, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die **out)
{
    Dwarf_Addr bias;
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cudie, pc, &scopes);
    if (n <= 0) {
        free(scopes);
        return 0;
    }
    /* The physical chain of DIEs around the innermost scope. */
    Dwarf_Die inner;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    if (!dw || !dwarf_offdie(dw, dwarf_dieoffset(&scopes[0]), &inner)) {
        free(scopes);
        return 0;
    }
    free(scopes);
    scopes = NULL;
    n = dwarf_getscopes_die(&inner, &scopes);
    if (n <= 0) {
        free(scopes);
        return 0;
    }
    *out = scopes;
    return n;
}

/* Fills levels (innermost first) from the DWARF scopes at addr; returns
 * how many, 0 when there is no DWARF function there. */
static uint32_t dwarf_levels(struct rsr_sym *s, Dwfl_Module *mod, uint64_t addr,
                             struct rsr_sym_level **out)
{
    Dwarf_Addr bias;
    Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &bias);
    if (!cudie)
        return 0;
    Dwarf_Die chain[MAX_SCOPES];
    int n = descend(cudie, addr - bias, chain, 0);
    Dwarf_Die *scopes;
    if (n > 0) {
        scopes = rsr_xmalloc((size_t)n * sizeof *scopes);
        for (int i = 0; i < n; i++)
            scopes[i] = chain[n - 1 - i];
    } else {
        n = scopes_by_libdw(mod, cudie, addr - bias, &scopes);
        if (n <= 0)
            return 0;
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
        files = NULL;

    struct rsr_sym_level *lv = rsr_xcalloc((size_t)n, sizeof *lv);
    uint32_t nl = 0;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(mod, addr);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);
    for (int i = 0; i < n; i++) {
        if (!is_function(&scopes[i]))
            continue;
        const char *name = die_name(s, &scopes[i]);
        lv[nl].func = name ? name : "??";
        lv[nl].file = keep(s, file);
        lv[nl].line = line;
        nl++;
        if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
            break;
        /* The next level out is at this inline's call site. */
        Dwarf_Attribute attr;
        Dwarf_Word val;
        file = NULL;
        line = 0;
        if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &val) == 0)
            file = dwarf_filesrc(files, val, NULL, NULL);
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &val) == 0)
            line = (int)val;
    }
    free(scopes);
    *out = lv;
    return nl;
}

/* The relocation (of .rela.plt) whose function the PLT stub at vaddr jumps
 * to, or -1: .plt.sec's entry i (x86-64 with IBT) and .plt's entry i + 1
 * (the first is the lazy resolver's: 16 bytes on x86-64, 32 on AArch64)
 * are relocation i; entries are 16 bytes. */
static long plt_slot(Elf *elf, const GElf_Shdr *sh, const char *name, uint64_t vaddr)
{
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh) || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
        return -1;
    uint64_t at = vaddr - sh->sh_addr;
    if (strcmp(name, ".plt.sec") == 0)
        return (long)(at / 16);
    uint64_t first = eh.e_machine == EM_AARCH64 ? 32 : 16;
    return strcmp(name, ".plt") == 0 && at >= first ? (long)((at - first) / 16) : -1;
}

/* "name@plt" for an address in a PLT section (a stub that jumps to a
 * function of another library: the symbol tables name no code there, and
 * a sample lands in one now and then), "[plt]" where the stub's function
 * cannot be told; NULL elsewhere. */
static char *plt_name(Dwfl_Module *mod, uint64_t addr)
{
    Dwarf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    size_t shstr;
    if (!elf || elf_getshdrstrndx(elf, &shstr) != 0)
        return NULL;
    uint64_t vaddr = addr - bias;
    long slot = -2;
    Elf_Scn *rela = NULL;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstr, sh.sh_name) : NULL;
        if (!name)
            continue;
        if (strcmp(name, ".rela.plt") == 0 && sh.sh_type == SHT_RELA)
            rela = scn;
        else if (strncmp(name, ".plt", 4) == 0 && (name[4] == 0 || name[4] == '.') && vaddr >= sh.sh_addr &&
                 vaddr < sh.sh_addr + sh.sh_size)
            slot = plt_slot(elf, &sh, name, vaddr);
    }
    if (slot == -2)
        return NULL;
    GElf_Shdr rsh, dsh;
    Elf_Data *rd = rela ? elf_getdata(rela, NULL) : NULL;
    Elf_Scn *dyn = rela && gelf_getshdr(rela, &rsh) ? elf_getscn(elf, rsh.sh_link) : NULL;
    Elf_Data *dd = dyn ? elf_getdata(dyn, NULL) : NULL;
    GElf_Rela r;
    GElf_Sym sym;
    const char *fn = NULL;
    if (slot >= 0 && rd && dd && gelf_getshdr(dyn, &dsh) && rsh.sh_entsize &&
        (uint64_t)slot < rsh.sh_size / rsh.sh_entsize && gelf_getrela(rd, (int)slot, &r) &&
        gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
        fn = elf_strptr(elf, dsh.sh_link, sym.st_name);
    if (!fn || !*fn)
        return rsr_xstrdup("[plt]");
    size_t n = strlen(fn) + 5;
    char *out = rsr_xmalloc(n);
    snprintf(out, n, "%s@plt", fn);
    return out;
}

static struct rsr_sym_result *resolve(struct rsr_sym *s, int file, uint64_t addr)
{
    struct symfile *f = &s->files[file];
    struct rsr_sym_result *r = rsr_xcalloc(1, sizeof *r);
    struct rsr_sym_level *inner_first = NULL;
    uint32_t n = 0;
    if (f->pack) {
        const struct rsr_sympack_addr *e = rsr_sympack_addr(f->pack, addr);
        if (e && e->res.known) {
            r->known = 1;
            r->nlevels = e->res.nlevels;
            struct rsr_sym_level *lv = rsr_xmalloc(e->res.nlevels * sizeof *lv);
            memcpy(lv, e->res.levels, e->res.nlevels * sizeof *lv);
            r->levels = lv;
            return r;
        }
        r->why = e ? e->res.why : "not in the symbols file";
    } else if (f->state == RSR_SYM_FILE_OK) {
        n = dwarf_levels(s, f->mod, addr, &inner_first);
        GElf_Off at;
        GElf_Sym fsym;
        if (n > 1 && dwfl_module_addrinfo(f->mod, addr, &at, &fsym, NULL, NULL, NULL) && at == 0) {
            /* A function's first instruction: none of what is inlined into
             * it has run yet, though the line table may give the address to
             * an inlined callee (the agent names a hook its program called by
             * the hook's entry: stackw.c). */
            inner_first[0] = inner_first[n - 1];
            n = 1;
        }
        if (n > 0 && strcmp(inner_first[n - 1].func, "??") == 0) {
            /* a function DIE without a name: the symbol table's */
            const char *name = dwfl_module_addrname(f->mod, addr);
            char *d = name ? rsr_sym_demangle(name) : NULL;
            if (name)
                inner_first[n - 1].func = keep(s, d ? d : name);
            free(d);
        }
        if (n == 0) {
            /* No DWARF here: the symbol table, and the line table if any. */
            GElf_Off off;
            GElf_Sym sym;
            GElf_Word shndx = 0;
            const char *name = dwfl_module_addrinfo(f->mod, addr, &off, &sym, &shndx, NULL, NULL);
            int type = name ? GELF_ST_TYPE(sym.st_info) : STT_NOTYPE;
            /* code only: not version names, objects or absolute values */
            if (name && (sym.st_shndx == SHN_ABS ||
                         (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)))
                name = NULL;
            if (name) {
                char *d = rsr_sym_demangle(name);
                inner_first = rsr_xcalloc(1, sizeof *inner_first);
                inner_first->func = keep(s, d ? d : name);
                free(d);
                Dwfl_Line *dl = dwfl_module_getsrc(f->mod, addr);
                if (dl)
                    inner_first->file = keep(s, dwfl_lineinfo(dl, NULL, &inner_first->line, NULL,
                                                                 NULL, NULL));
                n = 1;
            }
        }
        char *plt = n == 0 ? plt_name(f->mod, addr) : NULL;
        if (plt) {
            inner_first = rsr_xcalloc(1, sizeof *inner_first);
            inner_first->func = keep(s, plt);
            free(plt);
            n = 1;
        }
    }
    if (n == 0) {
        char buf[512];
        if (!r->why)
            r->why = f->state == RSR_SYM_FILE_OK ? "no symbols" : f->why;
        snprintf(buf, sizeof buf, "[%s+0x%" PRIx64 "]", f->base, addr);
        inner_first = rsr_xcalloc(1, sizeof *inner_first);
        inner_first->func = keep(s, buf);
        n = 1;
    } else {
        r->known = 1;
    }
    /* Callers want the out-of-line function first. */
    for (uint32_t i = 0; i < n / 2; i++) {
        struct rsr_sym_level t = inner_first[i];
        inner_first[i] = inner_first[n - 1 - i];
        inner_first[n - 1 - i] = t;
    }
    r->levels = inner_first;
    r->nlevels = n;
    return r;
}

static uint64_t slot_hash(int file, uint64_t addr)
{
    return rsr_hash_u64(addr * 31 + (uint64_t)file);
}

static uint64_t slot_hash_of(const void *ctx, size_t i)
{
    const struct cache_slot *c = &((const struct rsr_sym *)ctx)->slots[i];
    return slot_hash(c->file, c->addr);
}

const struct rsr_sym_result *rsr_sym_lookup(struct rsr_sym *s, int file, uint64_t addr)
{
    struct rsr_probe p = rsr_table_probe(&s->cache, slot_hash(file, addr));
    for (long i; (i = rsr_table_next(&s->cache, &p)) >= 0;)
        if (s->slots[i].file == file && s->slots[i].addr == addr)
            return s->slots[i].res;
    struct rsr_sym_result *res = resolve(s, file, addr);
    RSR_XGROW(s->slots, s->capslots, s->nused + 1, 1024);
    s->slots[s->nused] = (struct cache_slot){ addr, file, res };
    if (rsr_table_put(&s->cache, &p, s->nused, 2048, slot_hash_of, s) != 0)
        rsr_out_of_memory();
    s->nused++;
    return res;
}

static int by_slot_addr(const void *a, const void *b)
{
    const struct cache_slot *x = *(const struct cache_slot *const *)a, *y = *(const struct cache_slot *const *)b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The PT_LOAD segments of f, for the symbols file. */
static uint32_t file_loads(const struct symfile *f, struct rsr_sympack_load *loads)
{
    if (f->pack) {
        memcpy(loads, f->pack->loads, f->pack->nloads * sizeof *loads);
        return f->pack->nloads;
    }
    GElf_Addr mbias;
    Elf *elf = f->mod ? dwfl_module_getelf(f->mod, &mbias) : NULL;
    size_t nph;
    uint32_t n = 0;
    if (!elf || elf_getphdrnum(elf, &nph) != 0)
        return 0;
    for (size_t i = 0; i < nph && n < RSR_SYMPACK_MAXLOADS; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            loads[n++] = (struct rsr_sympack_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
    }
    return n;
}

int rsr_sym_write_pack(const struct rsr_sym *s, FILE *f)
{
    if (rsr_sympack_write_head(f) != 0)
        return -1;
    const struct cache_slot **mine = rsr_xcalloc(s->nused + 1, sizeof *mine);
    int rc = 0;
    for (uint32_t i = 0; i < s->nfiles && !rc; i++) {
        const struct symfile *sf = &s->files[i];
        struct rsr_sympack_load loads[RSR_SYMPACK_MAXLOADS];
        uint32_t nloads = sf->state == RSR_SYM_FILE_OK ? file_loads(sf, loads) : 0;
        const char *state = sf->state == RSR_SYM_FILE_OK ? "ok" : sf->state == RSR_SYM_FILE_CHANGED ? "changed" : "missing";
        if (rsr_sympack_write_mod(f, state, sf->build_id, sf->path, loads, nloads) != 0) {
            rc = -1;
            break;
        }
        if (sf->state != RSR_SYM_FILE_OK)
            continue;
        uint32_t n = 0;
        for (size_t k = 0; k < s->nused; k++)
            if (s->slots[k].file == (int32_t)i)
                mine[n++] = &s->slots[k];
        qsort(mine, n, sizeof *mine, by_slot_addr);
        for (uint32_t k = 0; k < n && !rc; k++)
            rc = rsr_sympack_write_addr(f, mine[k]->addr, mine[k]->res);
    }
    free(mine);
    return rc;
}
