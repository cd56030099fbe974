/* NVTX ranges, captured the way NVIDIA's own tools capture them: through
 * NVTX's injection interface. NVTX (the header-only v3 in every library that
 * includes it, or libnvToolsExt) reads NVTX_INJECTION64_PATH on its first
 * call, dlopens that library and calls its InitializeInjectionNvtx2, which
 * fills NVTX's callback tables with the functions below. They append records
 * to the thread's buffer (ring.c); the writer pairs them into Range events
 * (writer.c). The README's 'NVTX ranges' says what happens in each case. */
#include "preload/agent.h"

#define NVTX_NO_IMPL          /* declarations and types only: this is a tool */
#define NVTX_AS_SYSTEM_HEADER /* not written for our warnings */
#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVTX_ENV "NVTX_INJECTION64_PATH"
#define NAME_MAX_BYTES 512u       /* longer names are cut (at a UTF-8 boundary) */
#define MAX_DEPTH 128u            /* push/pop levels recorded per thread and domain */
#define THREAD_DOMAINS 8          /* domains with open push ranges per thread, besides the default */
#define ARENA_BYTES (4u << 20)    /* domain names and registered strings */

/* Set once the variable names this library and the arena is there: only
 * then does InitializeInjectionNvtx2 attach to an NVTX instance. */
static _Atomic int nvtx_on;

/* ---- names that live as long as the process: a lock-free bump arena ---- */

static char *arena;
static _Atomic size_t arena_used;

/* Wide text (UTF-32 on Linux) as UTF-8 into dst (cap bytes, NUL included);
 * returns the bytes written before the NUL. Invalid code points become
 * U+FFFD; a code point that does not fit ends the text. */
static size_t utf8_of(char *dst, size_t cap, const wchar_t *w)
{
    size_t n = 0;
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000))
            c = 0xFFFD;
        size_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n + k >= cap)
            break;
        if (k == 1) {
            dst[n] = (char)c;
        } else {
            static const uint8_t lead[5] = { 0, 0, 0xC0, 0xE0, 0xF0 };
            for (size_t i = k - 1; i > 0; i--, c >>= 6)
                dst[n + i] = (char)(0x80 | (c & 0x3F));
            dst[n] = (char)(lead[k] | c);
        }
        n += k;
    }
    dst[n] = 0;
    return n;
}

/* Narrow text into dst (cap bytes, NUL included), cut at a character
 * boundary when too long; returns the bytes before the NUL. */
static size_t text_of(char *dst, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    if (s[n] != 0)
        while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
            n--;
    memcpy(dst, s, n);
    dst[n] = 0;
    return n;
}

/* A copy of a or w in the arena, or NULL (no text, or the arena is full). */
static const char *arena_copy(const char *a, const wchar_t *w)
{
    char tmp[NAME_MAX_BYTES];
    if (!a && !w)
        return NULL;
    size_t n = a ? text_of(tmp, sizeof tmp, a) : utf8_of(tmp, sizeof tmp, w);
    size_t at = atomic_fetch_add_explicit(&arena_used, n + 1, memory_order_relaxed);
    if (at + n + 1 > ARENA_BYTES)
        return NULL;
    memcpy(arena + at, tmp, n + 1);
    return arena + at;
}

/* ---- per thread: nesting levels, range ids ---- */

struct nvtx_thread {
    uint32_t depth0;    /* the default domain's nesting level */
    uint32_t tid;       /* 0 until the first start */
    uint32_t next_id;
    struct {
        const void *domain;
        uint32_t depth;
    } d[THREAD_DOMAINS];
};
static __thread struct nvtx_thread nt RS_TLS;

/* This thread's nesting level in domain (NULL: default), or NULL when the
 * thread has THREAD_DOMAINS others with ranges open. claim: take a free
 * slot for a domain not seen yet (a push; a pop does not). */
static uint32_t *depth_of(const void *domain, int claim)
{
    if (!domain)
        return &nt.depth0;
    for (int i = 0; i < THREAD_DOMAINS; i++)
        if (nt.d[i].domain == domain)
            return &nt.d[i].depth;
    if (!claim)
        return NULL;
    for (int i = 0; i < THREAD_DOMAINS; i++)
        if (nt.d[i].depth == 0) {
            nt.d[i].domain = domain;
            return &nt.d[i].depth;
        }
    return NULL;
}

/* ---- records ---- */

/* What names an event: ASCII or wide text, or a registered string (text in
 * the arena), from nvtxEventAttributes_t as far as its size covers. */
struct msg {
    const char *a, *reg;
    const wchar_t *w;
    uint32_t category;
};

static struct msg msg_of(const nvtxEventAttributes_t *at)
{
    struct msg m = { NULL, NULL, NULL, 0 };
    if (!at)
        return m;
    if (at->size >= offsetof(nvtxEventAttributes_t, category) + sizeof at->category)
        m.category = at->category;
    if (at->size < offsetof(nvtxEventAttributes_t, message) + sizeof at->message)
        return m;
    switch (at->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: m.a = at->message.ascii; break;
    case NVTX_MESSAGE_TYPE_UNICODE: m.w = at->message.unicode; break;
    case NVTX_MESSAGE_TYPE_REGISTERED: m.reg = (const char *)(const void *)at->message.registered; break;
    default: break;
    }
    return m;
}

/* Appends one record; the caller holds rs_th.guard. level: push/pop level,
 * id: range id. The text of m.a or m.w is copied into the record. */
static void put(int op, uint64_t ts, uint64_t id, uint32_t level, const void *domain, const struct msg *m)
{
    size_t cap = 1;
    if (m && m->a)
        cap = strnlen(m->a, NAME_MAX_BYTES - 1) + 1;
    else if (m && m->w)
        cap = NAME_MAX_BYTES;
    size_t size = (sizeof(struct rs_rec_range) + cap + 7) & ~(size_t)7;
    struct rs_rec_range *r = rs_reserve(size, RS_REC_RANGE);
    if (!r)
        return;
    size_t n = m && m->a ? text_of(r->name, cap, m->a) : m && m->w ? utf8_of(r->name, cap, m->w) : 0;
    r->name[n] = 0;
    size = (sizeof *r + n + 1 + 7) & ~(size_t)7;
    r->h = (struct rs_rec_hdr){ (uint16_t)size, RS_REC_RANGE, (uint8_t)op, level };
    r->ts = ts;
    r->id = id;
    r->domain = domain;
    r->name_ptr = m ? m->reg : NULL;
    r->category = m ? m->category : 0;
    r->pad_ = 0;
    rs_commit(size);
}

/* Recording, and not in a child that shares our memory (vfork): such a
 * child must not move the parent's nesting counters either. */
static inline int nvtx_live(void)
{
    return RS_LIKELY(atomic_load_explicit(&rs_hot.on, memory_order_relaxed)) && !rs_in_vchild();
}

/* The results the program gets are those of NVTX with no tool attached
 * (NVTX_NO_PUSH_POP_TRACKING for push and pop), so that nothing it sees
 * changes under the agent; only a range id must be ours, since the
 * program hands it back to nvtxRangeEnd. */
static int push(const void *domain, const struct msg *m)
{
    if (!nvtx_live())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ts = rs_ticks();
    int saved = errno;
    uint32_t *depth = depth_of(domain, 1);
    uint32_t level = depth ? (*depth)++ : MAX_DEPTH;
    if (level >= MAX_DEPTH)
        rs_ranges_lost(1);
    else if (!rs_th.guard) {
        rs_th.guard = 1;
        put(RS_NVTX_PUSH, ts, 0, level, domain, m);
        rs_th.guard = 0;
    }
    errno = saved;
    return NVTX_NO_PUSH_POP_TRACKING;
}

static int pop(const void *domain)
{
    if (!nvtx_live())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ts = rs_ticks();
    int saved = errno;
    uint32_t *depth = depth_of(domain, 0);
    if (depth && *depth > 0) {
        uint32_t level = --*depth;
        if (level < MAX_DEPTH && !rs_th.guard) {
            rs_th.guard = 1;
            put(RS_NVTX_POP, ts, 0, level, domain, NULL);
            rs_th.guard = 0;
        }
    }
    errno = saved;
    return NVTX_NO_PUSH_POP_TRACKING;
}

static nvtxRangeId_t start(const void *domain, const struct msg *m)
{
    if (!nvtx_live())
        return 0;
    uint64_t ts = rs_ticks();
    int saved = errno;
    if (RS_UNLIKELY(nt.tid == 0))
        nt.tid = (uint32_t)syscall(SYS_gettid); /* once per thread */
    uint64_t id = (uint64_t)nt.tid << 32 | ++nt.next_id;
    if (!rs_th.guard) {
        rs_th.guard = 1;
        put(RS_NVTX_START, ts, id, 0, domain, m);
        rs_th.guard = 0;
    }
    errno = saved;
    return id;
}

static void end(nvtxRangeId_t id)
{
    if (!nvtx_live() || !id || rs_th.guard)
        return;
    uint64_t ts = rs_ticks();
    int saved = errno;
    rs_th.guard = 1;
    put(RS_NVTX_END, ts, id, 0, NULL, NULL);
    rs_th.guard = 0;
    errno = saved;
}

static void mark(const void *domain, const struct msg *m)
{
    if (!nvtx_live() || rs_th.guard)
        return;
    uint64_t ts = rs_ticks();
    int saved = errno;
    rs_th.guard = 1;
    put(RS_NVTX_MARK, ts, 0, 0, domain, m);
    rs_th.guard = 0;
    errno = saved;
}

/* ---- the callbacks NVTX calls ---- */

#define MSG_A(s) (&(struct msg){ .a = (s) })
#define MSG_W(s) (&(struct msg){ .w = (s) })

static void cb_mark_ex(const nvtxEventAttributes_t *at) { struct msg m = msg_of(at); mark(NULL, &m); }
static void cb_mark_a(const char *s) { mark(NULL, MSG_A(s)); }
static void cb_mark_w(const wchar_t *s) { mark(NULL, MSG_W(s)); }
static nvtxRangeId_t cb_start_ex(const nvtxEventAttributes_t *at) { struct msg m = msg_of(at); return start(NULL, &m); }
static nvtxRangeId_t cb_start_a(const char *s) { return start(NULL, MSG_A(s)); }
static nvtxRangeId_t cb_start_w(const wchar_t *s) { return start(NULL, MSG_W(s)); }
static void cb_end(nvtxRangeId_t id) { end(id); }
static int cb_push_ex(const nvtxEventAttributes_t *at) { struct msg m = msg_of(at); return push(NULL, &m); }
static int cb_push_a(const char *s) { return push(NULL, MSG_A(s)); }
static int cb_push_w(const wchar_t *s) { return push(NULL, MSG_W(s)); }
static int cb_pop(void) { return pop(NULL); }

static void cb_domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    struct msg m = msg_of(at);
    mark(d, &m);
}

static nvtxRangeId_t cb_domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    struct msg m = msg_of(at);
    return start(d, &m);
}

static void cb_domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    end(id);
}

static int cb_domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    struct msg m = msg_of(at);
    return push(d, &m);
}

static int cb_domain_pop(nvtxDomainHandle_t d) { return pop(d); }

/* A domain's handle and a registered string's handle are the text itself,
 * copied into the arena: the writer reads the name from the handle. Not a
 * hot path (once per domain or string); NULL, NVTX's own answer with no
 * tool, when the arena is full. */
static nvtxDomainHandle_t cb_domain_create_a(const char *s) { return (nvtxDomainHandle_t)(void *)arena_copy(s, NULL); }
static nvtxDomainHandle_t cb_domain_create_w(const wchar_t *s) { return (nvtxDomainHandle_t)(void *)arena_copy(NULL, s); }

static nvtxStringHandle_t cb_register_a(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)arena_copy(s, NULL);
}

static nvtxStringHandle_t cb_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return (nvtxStringHandle_t)(void *)arena_copy(NULL, s);
}

struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
};
#define SLOT(id, fn) { id, (NvtxFunctionPointer)fn }

static const struct slot core_slots[] = {
    SLOT(NVTX_CBID_CORE_MarkEx, cb_mark_ex), SLOT(NVTX_CBID_CORE_MarkA, cb_mark_a),
    SLOT(NVTX_CBID_CORE_MarkW, cb_mark_w), SLOT(NVTX_CBID_CORE_RangeStartEx, cb_start_ex),
    SLOT(NVTX_CBID_CORE_RangeStartA, cb_start_a), SLOT(NVTX_CBID_CORE_RangeStartW, cb_start_w),
    SLOT(NVTX_CBID_CORE_RangeEnd, cb_end), SLOT(NVTX_CBID_CORE_RangePushEx, cb_push_ex),
    SLOT(NVTX_CBID_CORE_RangePushA, cb_push_a), SLOT(NVTX_CBID_CORE_RangePushW, cb_push_w),
    SLOT(NVTX_CBID_CORE_RangePop, cb_pop),
};

static const struct slot core2_slots[] = {
    SLOT(NVTX_CBID_CORE2_DomainMarkEx, cb_domain_mark_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, cb_domain_start_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeEnd, cb_domain_end),
    SLOT(NVTX_CBID_CORE2_DomainRangePushEx, cb_domain_push_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangePop, cb_domain_pop),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, cb_register_a),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, cb_register_w),
    SLOT(NVTX_CBID_CORE2_DomainCreateA, cb_domain_create_a),
    SLOT(NVTX_CBID_CORE2_DomainCreateW, cb_domain_create_w),
};

/* Fills one module's callback table; slots NVTX does not have (an older
 * NVTX) stay as they are. Returns 1, or 0 when NVTX has no such table. */
static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const struct slot *s,
                size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].id < size && table[s[i].id])
            *table[s[i].id] = s[i].fn;
    return 1;
}

/* NVTX's entry point for an injection library: called once by every NVTX
 * instance (each library built with the v3 headers has its own) on its
 * first call. 0 leaves that instance as it is with no tool: every NVTX call
 * a no-op, and the library unloaded again if NVTX loaded it. That is the
 * answer where the agent does not trace this process: RINGSIDE_DISABLE=1,
 * another tool named in NVTX_INJECTION64_PATH, or a process that did not
 * preload the agent and only inherited the variable (see rs_start). */
RS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
RS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get || !atomic_load(&nvtx_on) || !nvtx_live())
        return 0;
    int saved = errno;
    const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
    int ok = cb && cb->struct_size >= sizeof *cb && cb->GetModuleFunctionTable &&
             fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof *core_slots);
    if (ok) {
        fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof *core2_slots);
        const NvtxExportTableVersionInfo *vi = get(NVTX_ETID_VERSIONINFO);
        if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
            vi->SetInjectionNvtxVersion(NVTX_VERSION);
    }
    errno = saved;
    return ok;
}

/* ---- start-up ---- */

static int same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* NVTX reads the variable once per instance, on that instance's first NVTX
 * call. An instance that made its first call before this runs (in the
 * constructor of a library initialised before the agent's) has looked
 * already and found nothing: its ranges are not recorded. Setting
 * NVTX_INJECTION64_PATH to this library beside LD_PRELOAD covers that. */
void rs_nvtx_init(void)
{
    static char self[PATH_MAX];
    /* The path the loader gave, when absolute (LD_PRELOAD's usually is):
     * resolving it costs a readlink per component at every start. */
    const char *name = rs_self_path();
    if (!name || (name[0] == '/' ? strlen(name) >= sizeof self || !strcpy(self, name) : !realpath(name, self))) {
        rs_notice("cannot find the agent's own file; NVTX ranges are not recorded");
        return;
    }
    const char *set = getenv(NVTX_ENV);
    if (set && *set && strcmp(set, self) != 0 && !same_file(set, self)) {
        rs_notice("%s names %s (another tool takes NVTX); NVTX ranges are not recorded", NVTX_ENV, set);
        return;
    }
    void *m = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        rs_notice("cannot map %u MiB for NVTX names; NVTX ranges are not recorded", ARENA_BYTES >> 20);
        return;
    }
    arena = m;
    if ((!set || !*set) && rs_env_put(NVTX_ENV, self) != 0) {
        rs_notice("cannot set %s: %s; NVTX ranges are not recorded", NVTX_ENV, strerror(errno));
        return;
    }
    atomic_store(&nvtx_on, 1);
}
