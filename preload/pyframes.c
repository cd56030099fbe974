/* CPython 3.10-3.14 frames for the sampler. The signal handler reads the
 * sampled thread's own frame chain (the thread is stopped in the handler,
 * but a frame may be half pushed or torn down, so every read goes through
 * process_vm_readv on this process, which fails cleanly on a bad address)
 * and puts each frame's code object address and instruction index where the
 * interpreter's _PyEval_EvalFrameDefault frames were; the writer turns them
 * into "pkg/mod.py:qualname:line" strings later (pynames.c). Offsets:
 * _Py_DebugOffsets in 3.13 and 3.14 (read from _PyRuntime at run time),
 * the generated table pyoffsets.h (tools/scripts/pyoffsets.sh) for 3.10-3.12. */
#include "preload/sample.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

enum { RS_PY_ENTRY_EACH, RS_PY_ENTRY_FLAG, RS_PY_ENTRY_SHIM };

/* Where things are in one CPython minor version. entry_mode says how native
 * eval calls map to Python frames: EACH (3.10: one frame per call), FLAG
 * (3.11: a call runs frames up to one whose frame_entry byte is set), SHIM
 * (3.12+: a frame not owned by Python code, frame_entry >= cstack_owner,
 * lies outside the frames of each call, in the eval call's own C stack
 * frame: that, not the program counter, finds the call, since a compiler
 * may split _PyEval_EvalFrameDefault into parts its symbol does not cover,
 * as Debian's GCC build of 3.14 does). */
struct rs_pyoffsets {
    unsigned minor;
    size_t tstate_frame;     /* 3.11/3.12: tstate->cframe; else the frame */
    size_t cframe_current;   /* 3.11/3.12: cframe->current_frame */
    size_t tstate_chunk;     /* 3.11+: tstate->datastack_chunk; 0: none */
    size_t frame_previous, frame_code, frame_entry;
    int entry_mode, cstack_owner;
    uint64_t code_tag;       /* 3.14: tag bits of the _PyStackRef f_executable */
    /* The frame's instruction at frame_instr: an int index in code units
     * when instr_index is set (3.10's f_lasti), else a pointer into the
     * code object, whose code units start at code_units. */
    size_t frame_instr;
    int instr_index;
    size_t code_units;
    size_t code_filename, code_name, code_linetable, code_firstlineno;
    size_t ascii_size, compact_size;
    size_t bytes_size, bytes_data;
};

#include "preload/pyoffsets.h"

_Atomic int rs_py_ready;
static struct rs_pyoffsets off;
static int via_cframe, by_stack;
static size_t frame_span;
static uint64_t eval_lo, eval_hi;
static uint64_t code_type, unicode_type, bytes_type;
static void *(*p_this_tstate)(void);
static int (*p_initialized)(void);
static pid_t self_pid;
static int given_up;

/* Code objects seen in samples, by a hash of their address: a slot holds
 * the last one that hashed there, so a sample of many alternating code
 * objects that collide wakes the writer more often, never less. */
#define SEEN_SLOTS 4096u
static _Atomic uint64_t seen[SEEN_SLOTS];

/* Names taken in the signal handler, when a sample first shows a code
 * object (rs_py_new_code): the writer names code objects later, and by then
 * one may be gone, its memory taken (a module's top-level code is freed as
 * its import ends, a function made at run time as it returns). A code
 * object goes in the older of two slots by a hash of its address (2048
 * slots hold the new code objects of a writer held off for seconds); seq is
 * odd while a handler writes a slot (a handler finding it odd passes it
 * by), and a reader that sees seq change under it takes nothing. text is
 * the file name, a NUL, the qualified name. */
#define STASH_SLOTS 2048u
struct stash_slot {
    _Atomic uint32_t seq;
    uint32_t stamp;            /* when it was written: the lower is older */
    uint64_t code;
    struct rs_py_ident id;
    char text[216];
};
static struct stash_slot stash[STASH_SLOTS];
static _Atomic uint32_t stash_clock;

static int safe_read(uint64_t addr, void *dst, size_t n)
{
    struct iovec l = { dst, n }, r = { (void *)addr, n };
    return addr && process_vm_readv(self_pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* The parts of _Py_DebugOffsets the sampler reads that 3.13 and 3.14
 * share (3.14 adds fields at their ends). */
struct debug_frame {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
};
struct debug_code {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
};
struct debug_thread {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        status;
};

/* The layout of _Py_DebugOffsets (3.13) as far as the sampler reads it
 * (Include/internal/pycore_runtime.h of 3.13). */
struct debug_offsets_313 {
    char cookie[8];
    uint64_t version, free_threaded;
    uint64_t runtime_state[3];
    uint64_t interpreter_state[13];
    struct debug_thread thread_state;
    struct debug_frame interpreter_frame;
    struct debug_code code_object;
    uint64_t pyobject[2], type_object[4], tuple_object[3], list_object[3], dict_object[3];
    uint64_t float_object[2], long_object[3], bytes_object[3];
    struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};

/* The same for 3.14 (Include/internal/pycore_debug_offsets.h of 3.14): the
 * interpreter state, frame and code object grew fields, and a set object
 * came before the dict's. */
struct debug_offsets_314 {
    char cookie[8];
    uint64_t version, free_threaded;
    uint64_t runtime_state[3];
    uint64_t interpreter_state[16];
    struct debug_thread thread_state;
    struct debug_frame interpreter_frame;
    uint64_t stackpointer, tlbc_index;
    struct debug_code code_object;
    uint64_t co_tlbc;
    uint64_t pyobject[2], type_object[4], tuple_object[3], list_object[3], set_object[4];
    uint64_t dict_object[3], float_object[2], long_object[3], bytes_object[3];
    struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
};

/* _Py_DebugOffsets is the first member of _PyRuntime, so it is at the
 * symbol; 0 when it holds the cookie and version 3.minor. */
static int debug_offsets_read(void *d, size_t n, unsigned minor)
{
    struct { char cookie[8]; uint64_t version; } head;
    void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!rt || safe_read((uint64_t)rt, &head, sizeof head) != 0 || memcmp(head.cookie, "xdebugpy", 8) != 0 ||
        (head.version >> 16) != (0x0300u | minor))
        return -1;
    return safe_read((uint64_t)rt, d, n);
}

/* off from the parts both versions share; -1 when an offset lies past the
 * size the same table gives for its struct (not the layout read). */
static int debug_offsets_use(unsigned minor, const struct debug_thread *t, const struct debug_frame *f,
                             const struct debug_code *c, const uint64_t bytes[3], uint64_t ascii_size)
{
    off = (struct rs_pyoffsets){
        .minor = minor, .tstate_frame = t->current_frame, .tstate_chunk = t->datastack_chunk,
        .frame_previous = f->previous, .frame_code = f->executable, .frame_entry = f->owner,
        /* Frames with an owner of 3 or more are not Python code's: in 3.13
         * FRAME_OWNED_BY_CSTACK (3), the entry frame of each eval call; in
         * 3.14 that entry frame is FRAME_OWNED_BY_INTERPRETER (3), and
         * FRAME_OWNED_BY_CSTACK (4) other C frames. */
        .entry_mode = RS_PY_ENTRY_SHIM, .cstack_owner = 3,
        .frame_instr = f->instr_ptr, .code_units = c->co_code_adaptive,
        .code_filename = c->filename, .code_name = c->qualname,
        .code_linetable = c->linetable, .code_firstlineno = c->firstlineno,
        .bytes_size = bytes[1], .bytes_data = bytes[2],
        .ascii_size = ascii_size,
        /* PyCompactUnicodeObject adds utf8_length and utf8 in 3.12+. */
        .compact_size = ascii_size + 16,
    };
    if (off.frame_previous >= f->size || off.frame_code >= f->size || off.frame_entry >= f->size ||
        off.frame_instr >= f->size || off.code_units > c->size || off.code_filename >= c->size ||
        off.code_name >= c->size || off.code_linetable >= c->size || off.code_firstlineno >= c->size ||
        off.tstate_frame >= t->size || off.tstate_chunk >= t->size)
        return -1;
    return 0;
}

static int offsets_313(void)
{
    struct debug_offsets_313 d;
    if (debug_offsets_read(&d, sizeof d, 13) != 0 || d.free_threaded)
        return -1;
    return debug_offsets_use(13, &d.thread_state, &d.interpreter_frame, &d.code_object, d.bytes_object,
                             d.unicode_object.asciiobject_size);
}

static int offsets_314(void)
{
    struct debug_offsets_314 d;
    if (debug_offsets_read(&d, sizeof d, 14) != 0)
        return -1;
    if (d.free_threaded) {
        /* Its frames run per-thread copies of the bytecode (tlbc_index),
         * its objects have a larger header: not read here yet. */
        rs_notice("free-threaded Python 3.14 is not supported; Python frames are not recorded");
        return -2;
    }
    if (debug_offsets_use(14, &d.thread_state, &d.interpreter_frame, &d.code_object, d.bytes_object,
                          d.unicode_object.asciiobject_size) != 0)
        return -1;
    /* f_executable is a _PyStackRef: the object's address with a
     * reference-count tag in its low two bits (pycore_stackref.h). */
    off.code_tag = 3;
    return 0;
}

static size_t max4(size_t a, size_t b, size_t c, size_t d)
{
    size_t m = a > b ? a : b, n = c > d ? c : d;
    return m > n ? m : n;
}

int rs_py_try_init(void)
{
    if (atomic_load(&rs_py_ready) || given_up)
        return atomic_load(&rs_py_ready);
    /* Everything but the thread state can be found before the interpreter
     * starts (the version string and _PyRuntime's offsets are static data),
     * so this runs at start; Py_IsInitialized, a plain load, gates reads. */
    const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    p_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (!version || !p_initialized)
        return 0;
    given_up = 1; /* from here on, one decision */
    unsigned major = 0, minor = 0;
    if (sscanf(version(), "%u.%u", &major, &minor) != 2 || major != 3)
        return 0;
    self_pid = getpid();
    int found = -1;
    if (minor == 13) {
        found = offsets_313();
    } else if (minor == 14) {
        found = offsets_314();
    } else {
        for (size_t i = 0; i < sizeof rs_pyoffsets_table / sizeof rs_pyoffsets_table[0]; i++)
            if (rs_pyoffsets_table[i].minor == minor) {
                off = rs_pyoffsets_table[i];
                found = 0;
            }
    }
    if (found == -2)
        return 0;
    if (found != 0) {
        rs_notice("no frame offsets for Python %u.%u; Python frames are not recorded", major, minor);
        return 0;
    }
    via_cframe = minor == 11 || minor == 12;
    by_stack = off.entry_mode == RS_PY_ENTRY_SHIM;
    frame_span = max4(off.frame_previous, off.frame_code, off.frame_entry, off.frame_instr) + 8;
    void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!by_stack && (!eval || !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)) {
        rs_notice("cannot find _PyEval_EvalFrameDefault; Python frames are not recorded");
        return 0;
    }
    if (!by_stack) {
        eval_lo = (uint64_t)eval;
        eval_hi = eval_lo + sym->st_size;
    }
    code_type = (uint64_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    unicode_type = (uint64_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    bytes_type = (uint64_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    p_this_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    uint64_t probe = 0;
    if (!code_type || !unicode_type || !bytes_type || !p_this_tstate) {
        rs_notice("Python %u.%u lacks PyCode_Type, PyBytes_Type or PyGILState_GetThisThreadState; "
                  "Python frames are not recorded",
                  major, minor);
        return 0;
    }
    if (safe_read((uint64_t)&code_type, &probe, sizeof probe) != 0) {
        rs_notice("process_vm_readv on itself is refused (%s); Python frames are not recorded",
                  strerror(errno));
        return 0;
    }
    rs_debug("Python %u.%u frames on", major, minor);
    atomic_store(&rs_py_ready, 1);
    return 1;
}

void rs_py_forked(void)
{
    self_pid = getpid();
    rs_py_names_reset();
    if (!atomic_load(&rs_py_ready))
        return; /* nothing seen or stashed: the tables' pages stay untouched */
    for (unsigned i = 0; i < SEEN_SLOTS; i++) /* the child's file names its code objects anew */
        atomic_store_explicit(&seen[i], 0, memory_order_relaxed);
    for (unsigned i = 0; i < STASH_SLOTS; i++) { /* a slot a thread was writing as the parent forked */
        uint32_t seq = atomic_load_explicit(&stash[i].seq, memory_order_relaxed);
        if (seq & 1) {
            stash[i].code = 0;
            atomic_store_explicit(&stash[i].seq, seq + 1, memory_order_relaxed);
        }
    }
}

/* Reads of one stack's frames. A read through process_vm_readv costs a
 * system call (a microsecond, several when the caches are cold), and a
 * stack of Python frames took one each. But most of them lie in memory
 * known to be the thread's own and mapped, read directly: the thread's live
 * C stack, between the innermost and the outermost native frame's stack
 * pointer (3.11/3.12's cframe, 3.12+'s entry frames), and the chunks of the
 * interpreter's data stack (3.11+), which the thread's state lists and the
 * thread frees only after it has unlinked them. Elsewhere (a generator's
 * frame, 3.10's frame objects) one call copies the two pages up to the
 * frame's end, and frames further down are taken from that copy. */
#define WIN_PAGE 4096u
#define CHUNKS_KNOWN 4
struct frame_reader {
    uint64_t stk_lo, stk_hi;     /* the live C stack, [lo, hi); empty: 0, 0 */
    uint64_t chunk_lo[CHUNKS_KNOWN], chunk_hi[CHUNKS_KNOWN];
    int nchunks;
    uint64_t win_lo, win_hi;     /* what win holds, [lo, hi) */
    uint8_t win[2 * WIN_PAGE];
};

/* tstate's own fields and its data stack's chunks: the current thread's,
 * live while its state is the one PyGILState_GetThisThreadState gives
 * (CPython clears that before it frees the state). */
static void reader_start(struct frame_reader *r, const uint64_t *sps, int n, uint64_t ts)
{
    r->stk_lo = r->stk_hi = 0;
    r->win_lo = r->win_hi = 0;
    r->nchunks = 0;
    if (sps && n > 1 && sps[0] && sps[n - 1] > sps[0]) {
        r->stk_lo = sps[0];
        r->stk_hi = sps[n - 1];
    }
    if (!ts || !off.tstate_chunk)
        return;
    /* _PyStackChunk: previous, size, top, data[] */
    const uint64_t *chunk = *(const uint64_t *const *)(uintptr_t)(ts + off.tstate_chunk);
    while (chunk && r->nchunks < CHUNKS_KNOWN) {
        uint64_t size = chunk[1];
        if (size < 3 * sizeof(uint64_t) || size > (1ull << 32))
            break;
        r->chunk_lo[r->nchunks] = (uint64_t)(uintptr_t)chunk;
        r->chunk_hi[r->nchunks++] = (uint64_t)(uintptr_t)chunk + size;
        chunk = (const uint64_t *)(uintptr_t)chunk[0];
    }
}

static int reader_direct(const struct frame_reader *r, uint64_t addr, size_t n)
{
    if (addr + n < addr)
        return 0;
    if (addr >= r->stk_lo && addr + n <= r->stk_hi)
        return 1;
    for (int i = 0; i < r->nchunks; i++)
        if (addr >= r->chunk_lo[i] && addr + n <= r->chunk_hi[i])
            return 1;
    return 0;
}

static int reader_get(struct frame_reader *r, uint64_t addr, void *dst, size_t n)
{
    if (reader_direct(r, addr, n)) {
        memcpy(dst, (const void *)(uintptr_t)addr, n);
        return 0;
    }
    if (addr < r->win_lo || addr + n > r->win_hi || addr + n < addr) {
        /* the page holding the frame's end first: a fault in the one
         * below only shortens the copy */
        uint64_t top = (addr + n + WIN_PAGE - 1) & ~(uint64_t)(WIN_PAGE - 1);
        if (top < 2 * WIN_PAGE || addr + n < addr)
            return safe_read(addr, dst, n);
        struct iovec l[2] = { { r->win + WIN_PAGE, WIN_PAGE }, { r->win, WIN_PAGE } };
        struct iovec rem[2] = { { (void *)(uintptr_t)(top - WIN_PAGE), WIN_PAGE },
                                { (void *)(uintptr_t)(top - 2 * WIN_PAGE), WIN_PAGE } };
        ssize_t got = process_vm_readv(self_pid, l, 2, rem, 2, 0);
        r->win_hi = top;
        r->win_lo = got >= (ssize_t)(2 * WIN_PAGE) ? top - 2 * WIN_PAGE
                    : got >= (ssize_t)WIN_PAGE    ? top - WIN_PAGE
                                                  : top;
        if (addr < r->win_lo)
            return safe_read(addr, dst, n);
    }
    memcpy(dst, r->win + (addr - (r->win_hi - 2 * WIN_PAGE)), n);
    return 0;
}

/* One frame: its predecessor, code object, entry byte and position (the
 * instruction index + 1, 0 when not known; RS_PY_POS_SHIFT). */
static int read_frame(struct frame_reader *r, uint64_t frame, uint64_t *prev, uint64_t *code, uint8_t *entry,
                      uint64_t *pos)
{
    uint8_t buf[256];
    if (frame_span > sizeof buf || reader_get(r, frame, buf, frame_span) != 0)
        return -1;
    memcpy(prev, buf + off.frame_previous, 8);
    memcpy(code, buf + off.frame_code, 8);
    *code &= ~off.code_tag;
    *entry = off.entry_mode == RS_PY_ENTRY_EACH ? 0 : buf[off.frame_entry];
    int64_t unit;
    if (off.instr_index) {
        int32_t lasti;
        memcpy(&lasti, buf + off.frame_instr, 4);
        unit = lasti;
    } else {
        uint64_t instr;
        memcpy(&instr, buf + off.frame_instr, 8);
        unit = (int64_t)(instr - (*code + off.code_units)) / 2;
    }
    /* -1 is a frame that has not started yet */
    *pos = unit >= 0 && unit < RS_PY_POS_MAX ? (uint64_t)unit + 1 : 0;
    return 0;
}

/* Appends the Python frames one native eval call runs, from *frame on;
 * leaves *frame at the first frame of the next (outer) call. 3.10, 3.11. */
static int eval_frames(struct frame_reader *r, uint64_t *frame, uint64_t *out, int room)
{
    int got = 0, guard = 0;
    while (*frame && got < room && guard++ < 4096) {
        uint64_t prev, code, pos;
        uint8_t entry;
        if (read_frame(r, *frame, &prev, &code, &entry, &pos) != 0) {
            *frame = 0;
            break;
        }
        if (code && code <= RS_PY_CODE_MASK)
            out[got++] = RS_PYFRAME_BIT | pos << RS_PY_POS_SHIFT | code;
        *frame = prev;
        if (off.entry_mode == RS_PY_ENTRY_EACH || entry)
            break;
    }
    return got;
}

/* 3.12+: the Python frames from *frame on up to the next shim frame (at
 * most room of them kept), and that shim's address in *shim (0: the chain
 * ended first); *frame is left past the shim. Shims with no frames before
 * them are passed over. */
static int shim_group(struct frame_reader *r, uint64_t *frame, uint64_t *out, int room, uint64_t *shim)
{
    int got = 0, guard = 0;
    *shim = 0;
    while (*frame && guard++ < 4096) {
        uint64_t at = *frame, prev, code, pos;
        uint8_t entry;
        if (read_frame(r, at, &prev, &code, &entry, &pos) != 0) {
            *frame = 0;
            break;
        }
        *frame = prev;
        if (entry >= off.cstack_owner) {
            if (!got)
                continue;
            *shim = at;
            break;
        }
        if (code && code <= RS_PY_CODE_MASK && got < room)
            out[got++] = RS_PYFRAME_BIT | pos << RS_PY_POS_SHIFT | code;
    }
    return got;
}

/* The spliced stack out[0..m) of a stack of n frames: when the input was
 * cut at its depth limit, or the Python frames it gained left no room for
 * all of it (full: the last one did not fit), its outermost frame says so. */
static void mark_cut(uint64_t *out, int m, const uint64_t *in, int n, int full)
{
    if (m > 0 && (full || (n > 0 && in[n - 1] == RSF_FRAME_TRUNCATED)))
        out[m - 1] = RSF_FRAME_TRUNCATED;
}

/* 3.12+: each group of Python frames replaces the native frame whose stack
 * (from its stack pointer up to its caller's) holds the group's shim, the
 * eval call's own entry frame. */
static int splice_by_stack(struct frame_reader *r, uint64_t *pcs, const uint64_t *sps, int n, int cap,
                           uint64_t frame)
{
    uint64_t out[RS_STACK_MAX], group[RS_STACK_MAX], shim;
    int m = 0, ng = shim_group(r, &frame, group, cap, &shim), full = 0, i;
    for (i = 0; i < n && m < cap; i++) {
        /* a shim below this frame was in none unwound: its group is lost */
        while (shim && shim < sps[i])
            ng = shim_group(r, &frame, group, cap, &shim);
        uint64_t top = i + 1 < n ? sps[i + 1] : UINT64_MAX;
        if (shim && shim < top && ng) {
            int k = ng < cap - m ? ng : cap - m;
            memcpy(out + m, group, (size_t)k * sizeof *out);
            m += k;
            full |= k < ng;
            ng = shim_group(r, &frame, group, cap, &shim);
        } else {
            out[m++] = pcs[i];
        }
    }
    mark_cut(out, m, pcs, n, full || i < n);
    memcpy(pcs, out, (size_t)m * sizeof *pcs);
    return m;
}

int rs_py_splice(uint64_t *pcs, const uint64_t *sps, int n, int max)
{
    if (!atomic_load_explicit(&rs_py_ready, memory_order_relaxed))
        return n;
    int first = -1;
    for (int i = 0; i < n && first < 0 && !by_stack; i++)
        if (pcs[i] >= eval_lo && pcs[i] < eval_hi)
            first = i;
    if ((first < 0 && !by_stack) || n <= 0)
        return n;
    if (!p_initialized())
        return n;
    uint64_t ts = (uint64_t)p_this_tstate(), frame = 0;
    if (!ts)
        return n;
    /* the thread's own state (reader_start): read directly */
    memcpy(&frame, (const void *)(uintptr_t)(ts + off.tstate_frame), 8);
    struct frame_reader r;
    reader_start(&r, sps, n, ts);
    if (via_cframe && (!frame || reader_get(&r, frame + off.cframe_current, &frame, 8) != 0))
        return n;
    int cap = max < RS_STACK_MAX ? max : RS_STACK_MAX;
    if (by_stack)
        return frame ? splice_by_stack(&r, pcs, sps, n, cap, frame) : n;
    uint64_t out[RS_STACK_MAX];
    int m = 0, i;
    for (i = 0; i < n && m < cap; i++) {
        int got = 0;
        if (pcs[i] >= eval_lo && pcs[i] < eval_hi && frame)
            got = eval_frames(&r, &frame, out + m, cap - m);
        if (got)
            m += got;
        else
            out[m++] = pcs[i];
    }
    /* frames left over, or Python frames up to the last slot (maybe more) */
    mark_cut(out, m, pcs, n, i < n || (m == cap && i == n && pcs[n - 1] != out[m - 1]));
    memcpy(pcs, out, (size_t)m * sizeof *pcs);
    return m;
}

static int read_code(uint64_t code, struct rs_py_ident *id, int32_t *first);
static int read_str(uint64_t s, char *out, size_t cap);

static unsigned stash_at(uint64_t code)
{
    return (unsigned)((code >> 4) * 0x9E3779B97F4A7C15ull >> 53);
}

/* Async-signal-safe: five reads of the object and its two strings. Names
 * too long for a slot are not kept (the writer reads them, as before). */
static void stash_put(uint64_t code)
{
    unsigned i = stash_at(code), j = (i + 1) & (STASH_SLOTS - 1);
    struct stash_slot *t = (int32_t)(stash[j].stamp - stash[i].stamp) < 0 ? &stash[j] : &stash[i];
    uint32_t seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
    if ((seq & 1) || !atomic_compare_exchange_strong_explicit(&t->seq, &seq, seq + 1, memory_order_acquire,
                                                              memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    int32_t first;
    t->code = 0;
    t->stamp = atomic_fetch_add_explicit(&stash_clock, 1, memory_order_relaxed);
    if (read_code(code, &t->id, &first) == 0 && read_str(t->id.file, t->text, sizeof t->text) == 0) {
        size_t n = strlen(t->text) + 1;
        if (n < sizeof t->text && read_str(t->id.name, t->text + n, sizeof t->text - n) == 0)
            t->code = code;
    }
    atomic_store_explicit(&t->seq, seq + 2, memory_order_release);
}

int rs_py_stash_name(uint64_t code, char *out, size_t cap, struct rs_py_ident *id)
{
    unsigned i = stash_at(code);
    for (unsigned k = 0; k < 2; k++) {
        const struct stash_slot *t = &stash[(i + k) & (STASH_SLOTS - 1)];
        uint32_t seq = atomic_load_explicit(&t->seq, memory_order_acquire);
        if (seq & 1 || t->code != code)
            continue;
        char text[sizeof t->text];
        struct rs_py_ident was = t->id;
        memcpy(text, t->text, sizeof text);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&t->seq, memory_order_relaxed) != seq || t->code != code)
            continue;
        text[sizeof text - 1] = 0;
        size_t n = strlen(text);
        if (n + 1 >= sizeof text)
            continue;
        *id = was;
        snprintf(out, cap, "%s:%s", rs_py_relpath(text), text + n + 1);
        return 0;
    }
    return -1;
}

int rs_py_new_code(const uint64_t *f, int n)
{
    int fresh = 0;
    for (int i = 0; i < n; i++) {
        if (!(f[i] & RS_PYFRAME_BIT))
            continue;
        uint64_t code = f[i] & RS_PY_CODE_MASK;
        _Atomic uint64_t *slot = &seen[(code >> 4) * 0x9E3779B97F4A7C15ull >> 52];
        if (atomic_load_explicit(slot, memory_order_relaxed) != code) {
            atomic_store_explicit(slot, code, memory_order_relaxed);
            stash_put(code);
            fresh = 1;
        }
    }
    return fresh;
}

/* A str object as UTF-8 into out: 0, 1 when it did not fit (out holds
 * what did, whole characters), -1 when it is not one. Read in pieces: the
 * signal handler calls it too. */
static int read_str(uint64_t s, char *out, size_t cap)
{
    uint8_t hdr[128];
    if (!cap || off.ascii_size > sizeof hdr || safe_read(s, hdr, off.ascii_size) != 0)
        return -1;
    uint64_t type, len;
    uint32_t state;
    memcpy(&type, hdr + 8, 8);
    memcpy(&len, hdr + 16, 8);
    memcpy(&state, hdr + 32, 4);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (type != unicode_type || !compact || (kind != 1 && kind != 2 && kind != 4) || len > 4096)
        return -1;
    uint64_t at = s + (ascii ? off.ascii_size : off.compact_size);
    uint8_t data[256];
    size_t o = 0, per = sizeof data / kind;
    for (uint64_t i = 0; i < len; i += per) {
        size_t m = len - i < per ? (size_t)(len - i) : per;
        if (safe_read(at + i * kind, data, m * kind) != 0)
            return -1;
        for (size_t j = 0; j < m; j++) {
            uint32_t c = kind == 1   ? data[j]
                         : kind == 2 ? ((uint16_t *)(void *)data)[j]
                                     : ((uint32_t *)(void *)data)[j];
            char u[4];
            size_t k;
            if (c < 0x80) {
                u[0] = (char)c, k = 1;
            } else if (c < 0x800) {
                u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 63)), k = 2;
            } else if (c < 0x10000) {
                u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 63)), u[2] = (char)(0x80 | (c & 63)),
                k = 3;
            } else {
                u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 63)),
                u[2] = (char)(0x80 | ((c >> 6) & 63)), u[3] = (char)(0x80 | (c & 63)), k = 4;
            }
            if (o + k + 1 > cap) {
                out[o] = 0;
                return 1;
            }
            memcpy(out + o, u, k);
            o += k;
        }
    }
    out[o] = 0;
    return 0;
}

/* The identity of the code object at code and its co_firstlineno. */
static int read_code(uint64_t code, struct rs_py_ident *id, int32_t *first)
{
    uint8_t buf[512];
    size_t span = max4(off.code_filename, off.code_name, off.code_linetable, off.code_firstlineno) + 8;
    uint64_t type;
    if (!atomic_load(&rs_py_ready) || span > sizeof buf || safe_read(code, buf, span) != 0)
        return -1;
    memcpy(&type, buf + 8, 8);
    memcpy(&id->file, buf + off.code_filename, 8);
    memcpy(&id->name, buf + off.code_name, 8);
    memcpy(&id->lines, buf + off.code_linetable, 8);
    memcpy(first, buf + off.code_firstlineno, 4);
    return type == code_type ? 0 : -1;
}

int rs_py_code_ident(uint64_t code, struct rs_py_ident *id)
{
    int32_t first;
    return read_code(code, id, &first);
}

/* The line of instruction unit in a code object whose co_linetable is the
 * bytes object at table; -1 when not known. Writer only (one buffer). */
static int code_line(uint64_t table, int32_t first, uint32_t unit)
{
    static uint8_t data[65536];
    uint8_t hdr[64];
    uint64_t type;
    int64_t n;
    if (off.bytes_size + 8 > sizeof hdr || safe_read(table, hdr, off.bytes_size + 8) != 0)
        return -1;
    memcpy(&type, hdr + 8, 8);
    memcpy(&n, hdr + off.bytes_size, 8);
    if (type != bytes_type || n <= 0 || n > (int64_t)sizeof data ||
        safe_read(table + off.bytes_data, data, (size_t)n) != 0)
        return -1;
    return rs_py_line(data, (size_t)n, first, unit, off.minor);
}

int rs_py_code_name(uint64_t code, unsigned pos, char *out, size_t cap, struct rs_py_ident *id)
{
    char f[1024], q[1024];
    int32_t first;
    if (read_code(code, id, &first) != 0 || read_str(id->file, f, sizeof f) < 0 || read_str(id->name, q, sizeof q) < 0)
        return -1;
    int n = snprintf(out, cap, "%s:%s", rs_py_relpath(f), q);
    int line = pos ? code_line(id->lines, first, pos - 1) : -1;
    if (line >= 0 && n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, ":%d", line);
    return 0;
}
