/* Kernel names from the calls that make the handles: cuModuleGetFunction,
 * cuLibraryGetKernel and cuKernelGetFunction (hook_cuda.c) note each handle
 * with its name and the module or library that owns it, so that names do not
 * need cuFuncGetName / cuKernelGetName, which drivers before CUDA 12.3 lack.
 * An unload forgets its handles here and in the launch cache: a driver reuses
 * the addresses of handles it freed. */
#include "preload/gpu.h"

#include <string.h>
#include <sys/mman.h>

#define FN_SLOTS 32768u
#define FN_PROBES 64u
#define FN_ARENA_BYTES (8u << 20)
#define FN_NAME_MAX 4096u

struct fn_slot {
    _Atomic uintptr_t key;           /* the handle; kept once taken, for its next use */
    _Atomic uintptr_t owner;         /* the CUmodule or CUlibrary; 0: forgotten */
    _Atomic(const char *) name;      /* in the arena; NULL: forgotten */
};

static struct fn_slot *slots;
static char *arena;
static _Atomic size_t arena_used;
static _Atomic int fn_state;         /* 0 none, 2 being set up, 1 ready, -1 off */

static int fn_setup(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&fn_state, &expect, 2))
        return atomic_load(&fn_state) == 1;
    size_t bytes = FN_SLOTS * sizeof *slots + FN_ARENA_BYTES;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        atomic_store(&fn_state, -1);
        return 0;
    }
    slots = m;
    arena = (char *)m + FN_SLOTS * sizeof *slots;
    atomic_store(&fn_state, 1);
    return 1;
}

static inline int fn_ready(void)
{
    int st = atomic_load_explicit(&fn_state, memory_order_acquire);
    return st == 1 || (st == 0 && fn_setup());
}

/* The slot of key; with add, taken for it when there is none. NULL: none
 * (or the table is full around key's place). */
static struct fn_slot *fn_slot(uintptr_t key, int add)
{
    return rs_slot(slots, sizeof *slots, offsetof(struct fn_slot, key), FN_SLOTS, FN_PROBES, key, add);
}

/* A copy of s in the arena, which lives as long as the process; NULL when
 * the arena is full. */
static const char *fn_copy(const char *s)
{
    size_t n = strnlen(s, FN_NAME_MAX - 1) + 1;
    size_t at = atomic_fetch_add_explicit(&arena_used, n, memory_order_relaxed);
    if (at + n > FN_ARENA_BYTES)
        return NULL;
    memcpy(arena + at, s, n - 1);
    arena[at + n - 1] = 0;
    return arena + at;
}

void rs_fname_note(const void *handle, const char *name, const void *owner)
{
    if (!handle || !name || !fn_ready())
        return;
    struct fn_slot *s = fn_slot((uintptr_t)handle, 1);
    if (!s)
        return;
    const char *old = atomic_load_explicit(&s->name, memory_order_acquire);
    if (old && atomic_load_explicit(&s->owner, memory_order_relaxed) == (uintptr_t)owner && !strcmp(old, name))
        return;
    const char *n = fn_copy(name);
    if (!n)
        return;
    atomic_store_explicit(&s->owner, (uintptr_t)owner, memory_order_relaxed);
    atomic_store_explicit(&s->name, n, memory_order_release);
    /* the handle was another function's: what the launches knew of it is stale */
    if (old)
        rs_func_forget(handle);
}

const char *rs_fname_of(const void *handle, const void **owner)
{
    if (!handle || atomic_load_explicit(&fn_state, memory_order_acquire) != 1)
        return NULL;
    struct fn_slot *s = fn_slot((uintptr_t)handle, 0);
    if (!s)
        return NULL;
    const char *n = atomic_load_explicit(&s->name, memory_order_acquire);
    if (n && owner)
        *owner = (const void *)atomic_load_explicit(&s->owner, memory_order_relaxed);
    return n;
}

void rs_fname_forget(const void *owner)
{
    if (!owner || atomic_load_explicit(&fn_state, memory_order_acquire) != 1)
        return;
    /* unloads are rare: a pass over the whole table */
    for (uint32_t i = 0; i < FN_SLOTS; i++) {
        struct fn_slot *s = &slots[i];
        if (atomic_load_explicit(&s->owner, memory_order_relaxed) != (uintptr_t)owner)
            continue;
        atomic_store_explicit(&s->name, NULL, memory_order_release);
        atomic_store_explicit(&s->owner, 0, memory_order_relaxed);
        rs_func_forget((const void *)atomic_load_explicit(&s->key, memory_order_relaxed));
    }
}
