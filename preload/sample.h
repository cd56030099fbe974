/* The sampler's internal interface: CPU-time samples taken by a per-thread
 * timer signal, wait stacks taken by the hooks, both unwound with a private
 * libunwind (unwind.c) with CPython frames spliced in (pyframes.c), written to
 * the ring as RS_REC_SAMPLE records; the writer's side (stackw.c) turns them
 * into the file's Stack, Sample and Module tables. */
#ifndef RS_SAMPLE_H
#define RS_SAMPLE_H

#include "preload/agent.h"

#include <stddef.h>
#include <stdint.h>

struct rsf_chunk;

/* Ring record kinds of the sampler: 48..79. */
enum { RS_REC_SAMPLE = 48 };

#define RS_STACK_MAX 128
/* In a sample record, a Python frame: bit 63 set, the code object's address
 * and the frame's position in the low bits (RS_PY_POS_SHIFT; the writer
 * turns them into a string id). */
#define RS_PYFRAME_BIT (1ull << 63)
#define RS_SAMPLE_NS 0x80

/* h.op = enum rsf_sample_kind, | RS_SAMPLE_NS when ts and weight are ns
 * (else ts is in ticks and a wait sample's weight too); h.file = number of
 * frames, | a wait sample's enum rsf_wait_reason << RS_SAMPLE_REASON_SHIFT.
 * A cpu sample's weight is always ns. Frames innermost first: native
 * addresses, or Python frames (RS_PYFRAME_BIT). */
#define RS_SAMPLE_REASON_SHIFT 16
#define RS_SAMPLE_NFRAMES_MASK 0xffffu
struct rs_rec_sample {
    struct rs_rec_hdr h;
    uint64_t ts;
    uint64_t weight;
    uint64_t frames[];
};

/* ---- sample.c ---- */

/* Starts the sampler when rs_cfg.sample_hz > 0: picks a free real-time
 * signal, installs its handler, arms this thread's timer; the unwinder is
 * loaded when the first sample wants it (rs_sample_want_unwinder). On
 * failure the sampler stays off with one notice. */
void rs_sample_init(void);
/* Looks up the real sigprocmask and pthread_sigmask (sample.c passes them
 * through), at start, whether the agent records or not. */
void rs_sample_resolve_early(void);
/* A stack is wanted and the unwinder is not loaded yet: the writer starts
 * a thread that loads it (and finds Python). Async-signal-safe. */
void rs_sample_want_unwinder(void);
/* The same, the thread started at once (a wait's stack is wanted now).
 * Not async-signal-safe but where the agent's start may run (agent.h,
 * rs_agent_start). */
void rs_sample_load_unwinder(void);
/* The agent's start: the writer starts that thread RS_UNWINDER_AFTER_NS
 * from now, or sooner when a sample wants it. A process that ends before
 * then (a shell's, a launcher's helpers) never loads libunwind, whose load
 * is most of what a short process pays for the agent; a process that
 * computes has it before its first sample (a thread's first comes after
 * 1/RINGSIDE_SAMPLE_HZ of its CPU time, 10 ms at the default 99 Hz). */
#define RS_UNWINDER_AFTER_NS 5000000u
void rs_sample_load_unwinder_soon(void);
/* When the writer's next pass must run for that start (rs_now() ns), 0
 * when none is due. */
uint64_t rs_sample_writer_due(void);
/* The process ends (rs_finish): an unwinder not asked for yet never is. */
void rs_sample_ending(void);
/* CPU samples off for good: every timer deleted. */
void rs_sample_off(void);
/* In a forked child: arms a timer for the one thread there is. */
void rs_sample_forked(void);
/* The sampling signal, 0 when the sampler is off. */
extern _Atomic int rs_sample_sig;
/* The program sets a disposition for rs_sample_sig (agent.c's sigaction and
 * signal hooks, before they install it): the sampler moves every thread's
 * timer to another free real-time signal and says so once; with none free
 * it steps aside (all timers deleted, one notice). Either way the signal is
 * the program's. */
void rs_sample_yield(void);
/* Whether act is the sampler's own handler (a program putting back the
 * disposition it read earlier: no move). */
struct sigaction;
int rs_sample_is_ours(const struct sigaction *act);
/* The program sets act for sig (agent.c's sigaction and signal hooks): the
 * sampler keeps count of the signals the program handles. */
void rs_sample_note_handler(int sig, const struct sigaction *act);
/* Around an exec: this thread's timer goes and no signal of it stays
 * pending (its default action would kill the new image); returns 1 when it
 * had one, to be re-armed by rs_sample_after_exec_failed if exec returns. */
int rs_sample_before_exec(void);
void rs_sample_after_exec_failed(void);
/* Samples lost by the sampler itself (no room, unwinder busy). */
uint64_t rs_sample_dropped(void);
/* Called by the writer on each pass: the unwinder's load once due or
 * wanted, Python set-up once the interpreter runs, the wait threshold in
 * ticks from the writer's tick rate. */
void rs_sample_writer_tick(const struct rs_tick_map *map);

/* Captures the calling thread's stack (the agent's own frames left out,
 * Python frames spliced in) into buf; returns the number of frames. Not for
 * signal handlers (the handler unwinds from its ucontext). */
int rs_stack_capture(uint64_t *buf, int max);

/* A blocking call on this thread took t1 - t0 ticks: when that is over the
 * wait threshold (RINGSIDE_WAIT_US, default 1000), records a wait sample with
 * the caller's stack weighted by the time blocked (the threshold in ticks:
 * rs_hot.wait_ticks) and why it blocked (reason: enum rsf_wait_reason). Call
 * with rs_th.guard set. */
void rs_wait_sample_slow(uint64_t t0, uint64_t t1, int reason);
/* rs_th.sample_npending (agent.h): a CPU sample kept for the hook to
 * write out. */
void rs_sample_flush_pending(void);
/* The same for calls timed with rs_now() (ns), as the CUDA hooks are. */
extern uint64_t rs_wait_ns;
void rs_wait_sample_ns_slow(uint64_t t0, uint64_t t1, int reason);
static inline void rs_wait_sample_ns(uint64_t t0, uint64_t t1, int reason)
{
    if (RS_UNLIKELY(t1 - t0 >= rs_wait_ns))
        rs_wait_sample_ns_slow(t0, t1, reason);
    if (RS_UNLIKELY(rs_th.sample_npending))
        rs_sample_flush_pending();
}
/* ---- hooks on calls that wait (hook_wait.c, and the sleeps and polls
 * below) ----
 * Whether a call on this thread is timed for a wait sample: the agent
 * records, and does not run on this thread itself (nor does a child that
 * shares its memory: rs_th.guard is set then). */
static inline int rs_wait_on(void)
{
    return !rs_th.guard && atomic_load_explicit(&rs_hot.on, memory_order_relaxed);
}
/* A call on this thread waited from t0 to t1 ticks, at least the
 * threshold, for reason (enum rsf_wait_reason): writes its wait sample.
 * Any thread state but rs_th.guard's; errno kept. */
void rs_wait_note(uint64_t t0, uint64_t t1, int reason);
/* Times CALL (of result type T), which may wait for REASON, and returns its
 * result; a wait sample when it waited long enough. Nothing is held during
 * the call, so a cancellation or a signal handler that does not return
 * finds the agent's state as it was. */
/* A blocking CUDA call's hook's frame address (hook_cuda.c's SYNC_WAIT), while
 * in_sync: the stack a signal that ends the process writes for it starts
 * at the frames above it, the program's (the driver's own, and the hooks it
 * calls, are below). */
extern __thread uintptr_t rs_sync_frame RS_TLS;

/* A hooked wait begins: its reason and start where a signal's handler
 * (rs_wait_interrupted, rs_wait_stuck) and the writer's hang watch find
 * them. */
static inline void rs_wait_begin(int reason, uint64_t t0)
{
    rs_th.wait_reason = (uint8_t)reason;
    rs_th.wait_t0 = t0;
    struct rs_thread *s = rs_th.self;
    if (s) {
        atomic_store_explicit(&s->wait_reason, reason, memory_order_relaxed);
        atomic_store_explicit(&s->wait_t0, t0, memory_order_relaxed);
    }
}

/* The wait ended: the start its sample takes, t0 or later (a stuck stack
 * wrote its first part: rs_wait_stuck). */
static inline uint64_t rs_wait_done(uint64_t t0)
{
    uint64_t t = rs_th.wait_t0;
    rs_th.wait_t0 = 0;
    struct rs_thread *s = rs_th.self;
    if (s)
        atomic_store_explicit(&s->wait_t0, 0, memory_order_relaxed);
    return t > t0 ? t : t0;
}

#define RS_WAIT_TIMED(T, REASON, CALL)                                  \
    do {                                                                \
        if (!rs_wait_on())                                              \
            return CALL;                                                \
        uint64_t t0_ = rs_ticks();                                      \
        rs_wait_begin((REASON), t0_);                                   \
        T r_ = CALL;                                                    \
        t0_ = rs_wait_done(t0_);                                        \
        uint64_t t1_ = rs_ticks();                                      \
        if (RS_UNLIKELY(t1_ - t0_ >= rs_hot.wait_ticks))                \
            rs_wait_note(t0_, t1_, REASON);                             \
        return r_;                                                      \
    } while (0)
/* The process ends of sig (agent.c's SIGTERM and SIGINT), taken on the
 * calling thread: a killed mark, and the thread's wait (RS_WAIT_TIMED's),
 * if it was in one, written as a wait sample up to now, its stack the
 * waiting call's caller's. */
void rs_wait_interrupted(int sig);
/* The calling thread got the fatal signal sig (its handler's ucontext):
 * its stack from the interrupted instruction as a CPU sample of weight 0,
 * and a fatal mark (agent.c's crash handler). */
void rs_sample_fatal(int sig, const void *ucv);
/* The value the hang watch's signal carries (the sampling signal, queued
 * to one thread): write where that thread waits (rs_wait_stuck). */
#define RS_STUCK_VALUE 0x57c4
/* The sampling signal's handler, on the hang watch's request: the thread's
 * wait so far as a wait sample with its stack from the interrupted call's
 * caller (ucv: the handler's context); the wait's own sample at its end
 * then covers only the rest. */
void rs_wait_stuck(void *ucv);
/* Whether pc is in the agent's hooks of the waits for children (wait,
 * waitpid, waitid, wait3, wait4). */
int rs_child_wait_pc(uint64_t pc);
/* Looks up the real functions of hook_wait.c now (a vfork child must not be
 * the first: the lookup takes the loader's lock and allocates). */
void rs_wait_resolve_early(void);

/* A timed kernel launch at t0 (ns), right before its GPU record: one in
 * RINGSIDE_GPU_STACK_EVERY (default 10) per thread records the stack as a
 * gpu sample of weight 0, which the writer weights with that kernel's GPU
 * time once it is known. Call with rs_th.guard set. */
void rs_gpu_stack_sample(uint64_t t0);
/* The same, whatever RINGSIDE_GPU_STACK_EVERY says: a node captured into a
 * CUDA graph (once per node) keeps the stack of its capture. */
void rs_gpu_stack_sample_always(uint64_t t0);
static inline void rs_wait_sample(uint64_t t0, uint64_t t1, int reason)
{
    if (RS_UNLIKELY(t1 - t0 >= rs_hot.wait_ticks))
        rs_wait_sample_slow(t0, t1, reason);
    if (RS_UNLIKELY(rs_th.sample_npending))
        rs_sample_flush_pending();
}

/* ---- unwind.c: libunwind, loaded privately ---- */

/* Loads libunwind.so.8 with RTLD_LOCAL and takes its functions. 0 or -1.
 * Takes the loader's lock: on the agent's loader thread only (sample.c). */
int rs_unwind_init(void);
/* Whether rs_unwind_init has succeeded (any thread may ask). */
int rs_unwind_ready(void);
/* Unwinds from ucontext uc (a signal handler's third argument), or from
 * here when uc is NULL, into pcs (innermost first), and each frame's stack
 * pointer into sps unless it is NULL; returns the count.
 * Async-signal-safe. */
int rs_unwind(void *uc, uint64_t *pcs, uint64_t *sps, int max);
/* The agent's own ways into the loader's object list (libunwind's walks and
 * the writer's module polls) pass this gate, which a fork closes: a thread
 * inside dl_iterate_phdr when another forks leaves the child the loader's
 * lock held by no thread of its own, and the child's first stack capture or
 * exception hangs (a multiprocessing Pool worker did, holding its queue's
 * lock). rs_dl_enter says whether the caller may go in (async-signal-safe;
 * 0 while a fork is under way or the loader changes its list, and always in
 * a child forked while another thread was inside: skip); rs_dl_leave after. */
int rs_dl_enter(void);
void rs_dl_leave(void);
/* Whether this process may never walk (forked while another thread was
 * inside): rs_dl_enter answers 0 for good. */
int rs_dl_shut(void);
/* pthread_atfork handlers (agent.c): close the gate and wait (up to 2 s)
 * for other threads inside; open it again in the parent, and in the child
 * unless one was still inside at the fork. */
void rs_dl_fork_prepare(void);
void rs_dl_fork_parent(void);
void rs_dl_fork_child(void);
/* The address range [*lo, *hi) of function name, as the dynamic symbol
 * table of the object info describes (dl_iterate_phdr's) has it: 0, or -1
 * when it has no such function. Reads the object's mapped tables only:
 * async-signal-safe. */
struct dl_phdr_info;
int rs_elf_func(const struct dl_phdr_info *info, const char *name, uint64_t *lo, uint64_t *hi);
/* This thread's stack is mapped from its stack pointer up to top (its
 * entry's stack pointer; the main thread's __libc_stack_end): the
 * unwinder's address checks there need no system call. */
void rs_unwind_stack_top(uint64_t top);
/* Whether pc lies in libagent.so itself. */
int rs_unwind_is_agent(uint64_t pc);
/* The entry of the agent's exported function (a hook) that holds pc, or 0
 * (one of its own). Reads a table made at start: asks the loader nothing. */
uint64_t rs_unwind_hook_entry(uint64_t pc);

/* ---- pyframes.c: CPython 3.10-3.14 frames ---- */

/* A Python frame's word: RS_PYFRAME_BIT; in bits 47-62 the index (in code
 * units) of the instruction the frame is at, plus one (0: not known, or past
 * RS_PY_POS_MAX); in bits 0-46 the code object's address (user space on
 * x86-64 and arm64 without a high-address mmap hint; a code object above it
 * is left out of the stack). */
#define RS_PY_POS_SHIFT 47
#define RS_PY_POS_MAX 0xFFFFu
#define RS_PY_CODE_MASK ((1ull << RS_PY_POS_SHIFT) - 1)

/* Finds the interpreter (once it has started); 1 when Python frames are on. */
int rs_py_try_init(void);
extern _Atomic int rs_py_ready;
/* Replaces, in pcs[0..n) (innermost first, capacity max), each native
 * _PyEval_EvalFrameDefault frame by the Python frames it runs, read from the
 * calling thread's frame chain; sps[0..n) are the frames' stack pointers
 * (rs_unwind), by which 3.12 and later find the eval calls. Returns the new
 * count. Async-signal-safe: every read of interpreter memory goes through
 * process_vm_readv. */
int rs_py_splice(uint64_t *pcs, const uint64_t *sps, int n, int max);
/* What tells one code object from another made later at the same address:
 * its filename, qualname and line table objects. */
struct rs_py_ident {
    uint64_t file, name, lines;
};
/* Writer side: the name of the code object at code into out,
 * "path/below/sys/path/entry.py:qualname" (rs_py_relpath), with ":LINE"
 * added when pos (a frame word's position field) is not 0 and the line
 * table has a line there; its identity into *id. Returns 0, or -1 when it
 * cannot be read as a code object. */
int rs_py_code_name(uint64_t code, unsigned pos, char *out, size_t cap, struct rs_py_ident *id);
/* The identity alone (one read of the object). 0, or -1 as above. */
int rs_py_code_ident(uint64_t code, struct rs_py_ident *id);
/* Whether frames f[0..n) of a sample just committed hold a Python code
 * object not seen before (remembered from now on, in a small table where a
 * newcomer may push out an old one). The writer names code objects when it
 * drains the sample, and the object may be gone by the next timed pass (a
 * script's own functions are freed as the interpreter ends, before the
 * agent's last flush): a new one is worth waking it for. Async-signal-safe. */
int rs_py_new_code(const uint64_t *f, int n);
/* rs_py_new_code also takes each new one's name then, for the writer to
 * find should the object be gone, or another, when it comes by: 0 and the
 * name ("relpath:qualname", no line) with the identity it was taken from,
 * or -1 when none was kept for code. */
int rs_py_stash_name(uint64_t code, char *out, size_t cap, struct rs_py_ident *id);
/* In a forked child: process_vm_readv reads the new pid. */
void rs_py_forked(void);

/* ---- pynames.c: how the writer names Python frames ---- */

/* The part of an absolute co_filename below the sys.path entry its module
 * was imported from (a suffix of file), as the file system tells it (the
 * rule is in pynames.c); other names as they are. Each folder is looked at
 * once. Not async-signal-safe: stats and mallocs. */
const char *rs_py_relpath(const char *file);
/* The line of the instruction at index unit (code units) of a code object
 * whose co_linetable is table[0..n) and co_firstlineno first, in the format
 * of CPython 3.minor; -1 when the table gives it none. */
int rs_py_line(const uint8_t *table, size_t n, int first, uint32_t unit, unsigned minor);
/* In a forked child: folders are looked at anew. */
void rs_py_names_reset(void);

/* ---- modules.c ---- */

/* Calls fn for each loaded ELF segment mapping when the set of loaded
 * objects has changed since the last call (always on the first). */
typedef void (*rs_module_fn)(uint64_t start, uint64_t end, uint64_t file_off, const char *path,
                             const char *build_id, void *arg);
void rs_modules_poll(rs_module_fn fn, void *arg);
/* The next poll reports every object again (a new file). */
void rs_modules_reset(void);
/* Whether a poll has seen a libpython3* loaded (Python can then start in a
 * program that did not begin as python). */
int rs_modules_python_loaded(void);
/* Whether the dynamic loader is changing the list of loaded objects (that
 * the unwinder walks) right now: no unwinding then. Async-signal-safe. */
int rs_loader_busy(void);
/* Finds the loader's state; at start. */
void rs_modules_init(void);

/* ---- stackw.c: the writer's side ---- */

typedef uint32_t (*rs_intern_fn)(const char *s);
/* Takes one sampler record. Returns 1 when the chunk's sample table is full
 * (the writer should emit before the next record). */
int rs_stackw_take(const struct rs_rec_hdr *h, uint32_t tid, const struct rs_tick_map *map,
                   rs_intern_fn intern);
/* Once per writer pass, before its records: module changes since the last
 * pass, as Module records of the chunk. */
void rs_stackw_modules(rs_intern_fn intern);
/* Whether a wait for reason (enum rsf_wait_reason) calls for a trace file
 * of its own: not one on a child, a pipe, a socket, a poll or a sleep (a
 * launcher's, a shell's). Before the agent starts, those start nothing. */
int rs_wait_opens_file(int reason);
/* Whether the chunk being assembled has samples that call for a trace
 * file (all but waits on other processes, threads and time: opens_file). */
int rs_stackw_pending(void);
/* The same, CPU samples left out. */
int rs_stackw_pending_but_cpu(void);
/* With no such sample: lets the chunk's samples go (a process with no file
 * whose table filled with waits alone). */
void rs_stackw_drop_waits(void);
/* Whether it has anything at all (modules included). */
int rs_stackw_any(void);
/* Points c's stacks, samples and modules at the chunk's tables. */
void rs_stackw_fill(struct rsf_chunk *c);
/* After a chunk was written (or dropped). */
void rs_stackw_chunk_done(void);
/* A new file (forked child): stacks, code names and modules start over. */
void rs_stackw_new_file(void);
int rs_stackw_full(void);
/* A gpu sample record: its stack's id (0: none), held by the writer until
 * the kernel's GPU time is known; then rs_stackw_gpu_sample adds it. */
uint32_t rs_stackw_gpu_stack(const struct rs_rec_hdr *h, rs_intern_fn intern);
void rs_stackw_gpu_sample(uint64_t ts, uint64_t weight, uint32_t tid, uint32_t stack);

#endif
