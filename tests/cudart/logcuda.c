/* A logging stand-in for the CUDA driver, for tests only (build/tests/logcuda/libcuda.so.1).
 * The real libcudart is pointed at it with LD_LIBRARY_PATH to record how the runtime
 * reaches the driver: every cuGetProcAddress lookup (symbol, cudaVersion, flags, in
 * order), every cuGetExportTable UUID and every call of what it handed out; and, at the
 * first cuGetExportTable call (after the lookups), which pointers the runtime holds.
 *
 * Every lookup is answered as a driver would choose (the newest variant of the name not
 * newer than the version asked for, the per-thread one when the flags ask for it and
 * one exists; the variants are cudaTypedefs.h's PFN types), with a function of the
 * stand-in's own for that variant: one of LC_NSTUBS stubs, made in lookup order, so a
 * pointer names the variant it stands for. A name cudaTypedefs.h lacks gets a stub per
 * version and flags. Lookups of the five exports (cuInit, cuDriverGetVersion,
 * cuGetProcAddress / _v2 by version, cuGetExportTable) give the exports themselves, as a
 * driver's do. A stub called later logs the call and says CUDA_ERROR_NOT_SUPPORTED;
 * so does cuGetExportTable, always: NVIDIA's private tables are not to be had.
 *
 * Environment:
 *   LOGCUDA_LOG      the log file (appended; nothing is logged without it)
 *   LOGCUDA_SCAN     a substring of the path of the loaded object that holds the
 *                    runtime (e.g. "libcudart.so"; "" names the main program): its
 *                    writable segments are scanned for the pointers the runtime holds
 *   LOGCUDA_VERSION  what cuDriverGetVersion says (default: this cuda.h's CUDA_VERSION)
 *
 * Log lines, tab-separated:
 *   lookup  N  SYMBOL  VERSION  FLAGS  VIA  STATUS(null|ptr)  CALLER  STUB  VARIANT
 *                    STUB: the stub's number, or the export's name; VARIANT: e.g.
 *                    cuLaunchKernel_v7000_ptsz, "-" for an unknown name or an export
 *                    VIA: v2 / v1, the exported cuGetProcAddress_v2 / cuGetProcAddress;
 *                    v2/M (v1/M): the function lookup M gave (through its stub)
 *   export  UUID(32 hex digits)  CALLER
 *   call    STUB|-  SYMBOL  CALLER           a stub (or an export) was called
 *   held    OFFSET  stub  STUB               the scanned object holds a stub
 *   held    OFFSET  self  SYMBOL             ... one of this library's exports
 *   held    OFFSET  other  MODULE  SYMBOL|-  REACHES  RC
 *                    ... a function in MODULE, an object that itself called
 *                    cuGetProcAddress (an interposer): it was called once (see
 *                    lc_scan_word for the arguments) and REACHES lists the stubs
 *                    (numbers) and exports (names) that call reached ("-": none;
 *                    "?": not called, an exported name that is not a driver's)
 *   probe-lookup / probe-call   as lookup / call, made while the scan called a function
 *   scan    OBJECT  WORDS                    the scan is complete
 * CALLER and MODULE are file names without their directories; OFFSET is the word's
 * offset from the scanned object's load address, in hex. The scan's calls assume the
 * x86-64 / AArch64 calling conventions (a function may be called through a pointer of
 * another prototype with integer arguments). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LC_EXPORT __attribute__((visibility("default")))
#define LC_NSTUBS 1000
#define LC_MAX_CALLERS 8
#define LC_MAX_REACHED 16

typedef CUresult (*lc_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

/* The driver's entry-point variants: PFN_<name>_v<version>[_ptds|_ptsz] of the
 * toolkit's cudaTypedefs.h (pfn.h is made from it by tests/cudart/cudart.mk). */
struct lc_pfn {
    const char *name;
    int version;
    const char *pt;            /* "", "_ptds" or "_ptsz" */
};

static const struct lc_pfn lc_pfns[] = {
#include "pfn.h"
};

/* What a stub stands for: one driver variant, or (a name cudaTypedefs.h does not
 * know) one symbol, version and flags. */
struct lc_stub_info {
    char *symbol;
    int version;               /* the variant's version, else the one asked for */
    unsigned long long flags;  /* only for unknown names */
    const struct lc_pfn *pfn;  /* the variant, or NULL */
    int first_lookup;          /* the lookup that first got it */
};

static pthread_mutex_t lc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lc_stub_info lc_stub_infos[LC_NSTUBS];
static int lc_nstubs, lc_nlookups;
static int lc_fd = -2;                    /* -2: not opened yet, -1: no log */
static int lc_scanned;
static const void *lc_callers[LC_MAX_CALLERS]; /* load addresses of objects that looked up */
static int lc_ncallers;
static __thread int lc_probing;           /* > 0 while the scan calls a held function */
static __thread int lc_reached[LC_MAX_REACHED]; /* stub numbers; < 0: LC_SELF_* */
static __thread int lc_nreached;

/* This library's exports, as lc_reached notes them. */
enum { LC_SELF_INIT = -1, LC_SELF_VERSION = -2, LC_SELF_PROC = -3, LC_SELF_PROC_V2 = -4, LC_SELF_EXPORT = -5 };
static const char *const lc_self_names[] = { "cuInit", "cuDriverGetVersion", "cuGetProcAddress",
                                             "cuGetProcAddress_v2", "cuGetExportTable" };

static void lc_note_reached(int n)
{
    if (lc_probing && lc_nreached < LC_MAX_REACHED)
        lc_reached[lc_nreached++] = n;
}

static void lc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void lc_log(const char *fmt, ...)
{
    if (lc_fd == -2) {
        const char *path = getenv("LOGCUDA_LOG");
        lc_fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    }
    if (lc_fd < 0)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    if (write(lc_fd, line, (size_t)n) != n)
        lc_fd = -1;
}

/* The file name (without directories) of the object holding addr, "?" if none. */
static const char *lc_module(const void *addr, const void **base)
{
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fname) {
        if (base)
            *base = NULL;
        return "?";
    }
    if (base)
        *base = info.dli_fbase;
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : (*info.dli_fname ? info.dli_fname : "<main>");
}

static CUresult lc_stub_call(int n, const void *caller, uintptr_t a0, uintptr_t a1, uintptr_t a2,
                             uintptr_t a3, uintptr_t a4, uintptr_t a5);

/* LC_NSTUBS distinct functions, numbered 1000..1999 (stub N is lc_stubs[N - 1000]). */
#define LC_STUB(i)                                                                            \
    static CUresult lc_stub##i(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,         \
                               uintptr_t a4, uintptr_t a5)                                     \
    {                                                                                         \
        return lc_stub_call(i - 1000, __builtin_return_address(0), a0, a1, a2, a3, a4, a5);   \
    }
#define LC_REF(i) lc_stub##i,
#define LC_10(X, p) X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) X(p##5) X(p##6) X(p##7) X(p##8) X(p##9)
#define LC_100(X, p) LC_10(X, p##0) LC_10(X, p##1) LC_10(X, p##2) LC_10(X, p##3) LC_10(X, p##4) \
    LC_10(X, p##5) LC_10(X, p##6) LC_10(X, p##7) LC_10(X, p##8) LC_10(X, p##9)
#define LC_1000(X) LC_100(X, 10) LC_100(X, 11) LC_100(X, 12) LC_100(X, 13) LC_100(X, 14) \
    LC_100(X, 15) LC_100(X, 16) LC_100(X, 17) LC_100(X, 18) LC_100(X, 19)
LC_1000(LC_STUB)
static const lc_fn lc_stubs[LC_NSTUBS] = { LC_1000(LC_REF) };

static void lc_note_caller(const void *caller)
{
    const void *base;
    lc_module(caller, &base);
    for (int i = 0; i < lc_ncallers; i++)
        if (lc_callers[i] == base)
            return;
    if (lc_ncallers < LC_MAX_CALLERS)
        lc_callers[lc_ncallers++] = base;
}

/* The stand-in's exports stand for themselves, as a driver's do: the name of the
 * export a lookup gives, or NULL. */
static const char *lc_self_variant(const char *symbol, int version)
{
    if (!strcmp(symbol, "cuGetProcAddress"))
        return version >= 12000 ? "cuGetProcAddress_v2" : version >= 11030 ? "cuGetProcAddress" : NULL;
    if (!strcmp(symbol, "cuInit") || !strcmp(symbol, "cuDriverGetVersion") || !strcmp(symbol, "cuGetExportTable"))
        return symbol;
    return NULL;
}

static void *lc_self_fn(const char *name);

/* The variant a driver gives for symbol, version and flags: the newest one not newer
 * than version, the per-thread one when the flags ask for it and there is one. */
static const struct lc_pfn *lc_variant(const char *symbol, int version, cuuint64_t flags)
{
    const struct lc_pfn *best = NULL, *best_pt = NULL;
    for (size_t i = 0; i < sizeof lc_pfns / sizeof lc_pfns[0]; i++) {
        const struct lc_pfn *e = &lc_pfns[i];
        if (e->version > version || strcmp(e->name, symbol) != 0)
            continue;
        if (*e->pt) {
            if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && (!best_pt || e->version > best_pt->version))
                best_pt = e;
        } else if (!best || e->version > best->version) {
            best = e;
        }
    }
    return best_pt ? best_pt : best;
}

/* The stub for a lookup (lookup n): the variant's own, made on first need; -1 when
 * all are taken. Called with lc_lock held. */
static int lc_stub_for(const char *symbol, int version, cuuint64_t flags, int n)
{
    const struct lc_pfn *v = lc_variant(symbol, version, flags);
    for (int k = 0; k < lc_nstubs; k++) {
        const struct lc_stub_info *s = &lc_stub_infos[k];
        if (v ? s->pfn == v : !s->pfn && s->version == version && s->flags == flags && !strcmp(s->symbol, symbol))
            return k;
    }
    if (lc_nstubs >= LC_NSTUBS)
        return -1;
    struct lc_stub_info *s = &lc_stub_infos[lc_nstubs];
    s->symbol = strdup(symbol);
    s->version = v ? v->version : version;
    s->flags = flags;
    s->pfn = v;
    s->first_lookup = n;
    return s->symbol ? lc_nstubs++ : -1;
}

/* One cuGetProcAddress lookup: log it, answer with its variant's stub. */
static CUresult lc_lookup(const char *api, const char *symbol, void **pfn, int version,
                          cuuint64_t flags, CUdriverProcAddressQueryResult *status, const void *caller)
{
    if (!symbol || !pfn) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (lc_probing) {  /* a lookup made by the scan's call: logged, answered "not found" */
        lc_log("probe-lookup\t-\t%s\t%d\t%llu\t%s\t%s\t%s", symbol, version, (unsigned long long)flags,
               api, status ? "ptr" : "null", lc_module(caller, NULL));
        *pfn = NULL;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    pthread_mutex_lock(&lc_lock);
    lc_note_caller(caller);
    int n = lc_nlookups++;
    const char *self = lc_self_variant(symbol, version);
    int k = self ? -1 : lc_stub_for(symbol, version, flags, n);
    const struct lc_pfn *v = k >= 0 ? lc_stub_infos[k].pfn : NULL;
    char stub[32], variant[160] = "-";
    if (self)
        snprintf(stub, sizeof stub, "%s", self);
    else
        snprintf(stub, sizeof stub, "%d", k);
    if (v)
        snprintf(variant, sizeof variant, "%s_v%d%s", v->name, v->version, v->pt);
    lc_log("lookup\t%d\t%s\t%d\t%llu\t%s\t%s\t%s\t%s\t%s", n, symbol, version, (unsigned long long)flags,
           api, status ? "ptr" : "null", lc_module(caller, NULL), stub, variant);
    pthread_mutex_unlock(&lc_lock);
    if (!self && k < 0) {
        *pfn = NULL;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = self ? lc_self_fn(self) : (void *)lc_stubs[k];
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

static void lc_scan(void);

static CUresult lc_export(const void **table, const CUuuid *id, const void *caller)
{
    char hex[33] = "-";
    if (id)
        for (int i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id->bytes[i]);
    lc_log("%s\t%s\t%s", lc_probing ? "probe-call\t-\tcuGetExportTable" : "export", hex,
           lc_module(caller, NULL));
    if (table)
        *table = NULL;
    if (!lc_probing && !__atomic_exchange_n(&lc_scanned, 1, __ATOMIC_ACQ_REL))
        lc_scan();
    return CUDA_ERROR_NOT_SUPPORTED;
}

static int lc_driver_version(void)
{
    const char *v = getenv("LOGCUDA_VERSION");
    return v && *v ? atoi(v) : CUDA_VERSION;
}

static CUresult lc_stub_call(int n, const void *caller, uintptr_t a0, uintptr_t a1, uintptr_t a2,
                             uintptr_t a3, uintptr_t a4, uintptr_t a5)
{
    (void)a5;
    pthread_mutex_lock(&lc_lock);
    const char *symbol = n < lc_nstubs ? lc_stub_infos[n].symbol : "?";
    int version = n < lc_nstubs ? lc_stub_infos[n].version : 0;
    int first = n < lc_nstubs ? lc_stub_infos[n].first_lookup : -1;
    pthread_mutex_unlock(&lc_lock);
    lc_note_reached(n);
    lc_log("%s\t%d\t%s\t%s", lc_probing ? "probe-call" : "call", n, symbol, lc_module(caller, NULL));
    if (!strcmp(symbol, "cuInit"))
        return CUDA_SUCCESS;
    if (!strcmp(symbol, "cuDriverGetVersion")) {
        if (!a0)
            return CUDA_ERROR_INVALID_VALUE;
        *(int *)a0 = lc_driver_version();
        return CUDA_SUCCESS;
    }
    if (!strcmp(symbol, "cuGetProcAddress")) {  /* _v2 (with symbolStatus) from 12.0 on */
        char api[32];
        snprintf(api, sizeof api, "%s/%d", version >= 12000 ? "v2" : "v1", first);
        return lc_lookup(api, (const char *)a0, (void **)a1, (int)a2,
                         (cuuint64_t)a3, version >= 12000 ? (CUdriverProcAddressQueryResult *)a4 : NULL,
                         caller);
    }
    if (!strcmp(symbol, "cuGetExportTable"))
        return lc_export((const void **)a0, (const CUuuid *)a1, caller);
    return CUDA_ERROR_NOT_SUPPORTED;
}

LC_EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    lc_note_reached(LC_SELF_INIT);
    lc_log("%s\t-\tcuInit\t%s", lc_probing ? "probe-call" : "call", lc_module(__builtin_return_address(0), NULL));
    return CUDA_SUCCESS;
}

LC_EXPORT CUresult cuDriverGetVersion(int *version)
{
    lc_note_reached(LC_SELF_VERSION);
    lc_log("%s\t-\tcuDriverGetVersion\t%s", lc_probing ? "probe-call" : "call",
           lc_module(__builtin_return_address(0), NULL));
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = lc_driver_version();
    return CUDA_SUCCESS;
}

LC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    lc_note_reached(LC_SELF_PROC_V2);
    return lc_lookup("v2", symbol, pfn, cudaVersion, flags, symbolStatus, __builtin_return_address(0));
}

LC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    lc_note_reached(LC_SELF_PROC);
    return lc_lookup("v1", symbol, pfn, cudaVersion, flags, NULL, __builtin_return_address(0));
}

LC_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    lc_note_reached(LC_SELF_EXPORT);
    return lc_export(ppExportTable, pExportTableId, __builtin_return_address(0));
}

/* THE SCAN: the runtime keeps the driver's entry points in its own tables; read them. */

static int lc_stub_index(uintptr_t w)
{
    for (int i = 0; i < LC_NSTUBS; i++)
        if ((uintptr_t)lc_stubs[i] == w)
            return i;
    return -1;
}

static const struct { const char *name; void *fn; } lc_self[] = {
    { "cuInit", (void *)cuInit }, { "cuDriverGetVersion", (void *)cuDriverGetVersion },
    { "cuGetProcAddress", (void *)cuGetProcAddress }, { "cuGetProcAddress_v2", (void *)cuGetProcAddress_v2 },
    { "cuGetExportTable", (void *)cuGetExportTable },
};

/* Is w the address of one of this library's exports? Its name, or NULL. */
static const char *lc_self_name(uintptr_t w)
{
    for (size_t i = 0; i < sizeof lc_self / sizeof lc_self[0]; i++)
        if ((uintptr_t)lc_self[i].fn == w)
            return lc_self[i].name;
    return NULL;
}

static void *lc_self_fn(const char *name)
{
    for (size_t i = 0; i < sizeof lc_self / sizeof lc_self[0]; i++)
        if (!strcmp(lc_self[i].name, name))
            return lc_self[i].fn;
    return NULL;
}

/* What the scan reads, gathered first so that no call is made under the loader's lock:
 * the scanned object's writable segments, and the executable segments of the other
 * objects that called our cuGetProcAddress (interposers). */
#define LC_MAX_RANGES 16

struct lc_range {
    uintptr_t lo, hi;
};

struct lc_scan_ctx {
    const char *want;          /* LOGCUDA_SCAN */
    const char *name;          /* the scanned object's path */
    uintptr_t base;
    struct lc_range data[LC_MAX_RANGES], text[LC_MAX_RANGES];
    int ndata, ntext, found;
    const ElfW(Rela) *rela[2];  /* its dynamic relocations (DT_RELA, DT_JMPREL) */
    size_t nrela[2];
};

/* The scanned object's relocation tables. The dynamic linker stores what a symbol
 * binds to in the words they name (the GOT: dlsym, open, ... which may well be an
 * interposer's); those are not what the runtime looked up, and must not be called. */
static void lc_scan_relocs(struct lc_scan_ctx *c, const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        uintptr_t rela = 0, jmprel = 0;
        size_t relasz = 0, pltrelsz = 0;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
             d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_RELA)
                rela = d->d_un.d_ptr;
            else if (d->d_tag == DT_RELASZ)
                relasz = d->d_un.d_val;
            else if (d->d_tag == DT_JMPREL)
                jmprel = d->d_un.d_ptr;
            else if (d->d_tag == DT_PLTRELSZ)
                pltrelsz = d->d_un.d_val;
        }
        /* The loader relocates these addresses in place on some systems, not on others. */
        if (rela && rela < info->dlpi_addr)
            rela += info->dlpi_addr;
        if (jmprel && jmprel < info->dlpi_addr)
            jmprel += info->dlpi_addr;
        c->rela[0] = (const ElfW(Rela) *)rela;
        c->nrela[0] = rela ? relasz / sizeof(ElfW(Rela)) : 0;
        c->rela[1] = (const ElfW(Rela) *)jmprel;
        c->nrela[1] = jmprel ? pltrelsz / sizeof(ElfW(Rela)) : 0;
    }
}

/* Is the word at a bound by the dynamic linker to a symbol? */
static int lc_is_symbol_slot(const struct lc_scan_ctx *c, uintptr_t a)
{
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < c->nrela[t]; i++)
            if (c->base + c->rela[t][i].r_offset == a && ELF64_R_SYM(c->rela[t][i].r_info) != 0)
                return 1;
    return 0;
}

static int lc_scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct lc_scan_ctx *c = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    int scanned = !c->found && (*c->want ? strstr(name, c->want) != NULL : *name == '\0');
    int caller = 0;
    for (int i = 0; i < lc_ncallers; i++)
        if ((uintptr_t)lc_callers[i] == info->dlpi_addr)
            caller = 1;
    if (scanned) {
        c->found = 1;
        c->name = *name ? name : "<main>";
        c->base = info->dlpi_addr;
        lc_scan_relocs(c, info);
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        struct lc_range r = { info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz };
        if (ph->p_type != PT_LOAD)
            continue;
        if (scanned && (ph->p_flags & PF_W) && c->ndata < LC_MAX_RANGES)
            c->data[c->ndata++] = r;
        else if (!scanned && caller && (ph->p_flags & PF_X) && c->ntext < LC_MAX_RANGES)
            c->text[c->ntext++] = r;
    }
    return 0;
}

static void lc_scan_word(const struct lc_scan_ctx *c, uintptr_t w, uintptr_t a)
{
    uintptr_t off = a - c->base;
    int n = lc_stub_index(w);
    if (n >= 0) {
        lc_log("held\t%lx\tstub\t%d", (unsigned long)off, n);
        return;
    }
    const char *self = lc_self_name(w);
    if (self) {
        lc_log("held\t%lx\tself\t%s", (unsigned long)off, self);
        return;
    }
    int inside = 0;
    for (int i = 0; i < c->ntext; i++)
        if (w >= c->text[i].lo && w < c->text[i].hi)
            inside = 1;
    if (!inside || lc_is_symbol_slot(c, a))
        return;
    Dl_info info;
    const char *sname = dladdr((void *)w, &info) && info.dli_sname && (uintptr_t)info.dli_saddr == w
                        ? info.dli_sname : "-";
    if (strcmp(sname, "-") != 0 && strncmp(sname, "cu", 2) != 0) {
        /* The interposer's open, _exit, dlsym...: not a driver function; not called. */
        lc_log("held\t%lx\tother\t%s\t%s\t?\t0", (unsigned long)off, lc_module((void *)w, NULL), sname);
        return;
    }
    /* Call it once and see which of our stubs it reaches. The arguments make sense to a
     * getter (a name no driver has, a place for the answer, a version, no flags, a
     * status), and to everything else they are zeroed memory, a size and zeros. */
    static union { char name[4096]; uint64_t align; } probe_arg;
    static uint64_t probe_out[512];
    snprintf(probe_arg.name, sizeof probe_arg.name, "cuLogcudaProbe");
    memset(probe_out, 0, sizeof probe_out);
    lc_nreached = 0;
    lc_probing++;
    CUresult rc = ((lc_fn)w)((uintptr_t)probe_arg.name, (uintptr_t)probe_out, 13000, 0,
                             (uintptr_t)(probe_out + 256), 0);
    lc_probing--;
    char reached[LC_MAX_REACHED * 24] = "-";
    size_t len = 0;
    for (int i = 0; i < lc_nreached && len < sizeof reached; i++)
        len += lc_reached[i] >= 0
               ? (size_t)snprintf(reached + len, sizeof reached - len, "%s%d", i ? "," : "", lc_reached[i])
               : (size_t)snprintf(reached + len, sizeof reached - len, "%s%s", i ? "," : "",
                                  lc_self_names[-lc_reached[i] - 1]);
    lc_log("held\t%lx\tother\t%s\t%s\t%s\t%d", (unsigned long)off, lc_module((void *)w, NULL), sname,
           reached, (int)rc);
}

static void lc_scan(void)
{
    struct lc_scan_ctx c = { .want = getenv("LOGCUDA_SCAN") };
    if (!c.want)
        return;
    pthread_mutex_lock(&lc_lock);
    dl_iterate_phdr(lc_scan_cb, &c);
    pthread_mutex_unlock(&lc_lock);
    size_t words = 0;
    for (int i = 0; i < c.ndata; i++)
        for (uintptr_t a = (c.data[i].lo + 7) & ~(uintptr_t)7; a + 8 <= c.data[i].hi; a += 8, words++)
            lc_scan_word(&c, *(const uintptr_t *)a, a);
    lc_log("scan\t%s\t%zu", c.found ? c.name : "-", words);
}
