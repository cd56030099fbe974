/* Children that share the parent's memory: vfork, and clone(CLONE_VM)
 * without a TLS of their own. Such a child runs on the parent thread's
 * thread-local storage and sees every agent global, so anything a hook did
 * there (forget fds, take a signal disposition as the program's, flush and
 * end the trace before exec, turn a part off) would be done to the parent.
 * Python's subprocess vforks and resets every signal handler in the child,
 * which used to turn the parent's sampler off for good. Here the child is
 * marked (rs_th.vchild, with guard), and every hook passes straight
 * through while the mark is on; the parent takes its own state back when
 * the call returns to it. posix_spawn, system and popen need nothing: glibc's
 * spawn child calls only its own internal functions, never a hook. */
#include "preload/agent.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- vfork ----
 * vfork cannot be wrapped by a C function: the child returns from it and
 * goes on using the stack, so a wrapper's frame (and its return address)
 * would be overwritten before the parent, resumed, returns through it. As
 * glibc's own vfork does, the assembly below keeps the return address in a
 * register across the system call (the kernel preserves it for each task)
 * and pushes it back after; the C helpers it calls run with the stack as it
 * is at that point, below anything the caller uses. */

/* Before the system call: this thread's guard and mark, for the parent to
 * take back afterwards (a vfork from within a vfork child keeps its mark). */
uint64_t rs_vfork_enter(void) __attribute__((visibility("hidden")));
uint64_t rs_vfork_enter(void)
{
    return (uint64_t)(uint32_t)rs_th.vchild << 32 | (uint32_t)rs_th.guard;
}

/* After it, in the child (r == 0) and in the parent (the child's pid, or
 * -errno), with what rs_vfork_enter returned. Returns vfork's result. */
long rs_vfork_returned(long r, uint64_t saved) __attribute__((visibility("hidden")));
long rs_vfork_returned(long r, uint64_t saved)
{
    if (r == 0) {
        rs_th.vchild = 1;
        rs_th.guard = 1;
        return 0;
    }
    /* The parent runs again: the child has exec'd or exited. */
    rs_th.guard = (int)(uint32_t)saved;
    rs_th.vchild = (int)(saved >> 32);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

#if defined(__x86_64__)
#if defined(__CET__)
#define RS_ENDBR "endbr64\n"
#else
#define RS_ENDBR ""
#endif
/* The stack at entry is 8 below a 16-byte boundary (the return address);
 * each helper call keeps the ABI's alignment with an extra 8 bytes. */
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        ".globl __vfork\n"
        ".type __vfork, @function\n"
        ".p2align 4\n"
        "vfork:\n"
        "__vfork:\n"
        ".cfi_startproc\n"
        RS_ENDBR
        "subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "call rs_vfork_enter\n"
        "addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "movq %rax, %rsi\n"
        "popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        ".cfi_register %rip, %rdi\n"
        "movl $58, %eax\n" /* SYS_vfork */
        "syscall\n"
        "pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        ".cfi_rel_offset %rip, 0\n"
        "movq %rax, %rdi\n"
        "subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "call rs_vfork_returned\n"
        "addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size vfork, .-vfork\n"
        ".size __vfork, .-__vfork\n");
#endif

/* ---- clone ----
 * A child made with CLONE_VM but without CLONE_SETTLS runs on the calling
 * thread's TLS. Its function is started through vm_child_start, which marks
 * it; the two words it needs go at the top of the child's own stack, so
 * nothing is allocated. With CLONE_VFORK the parent waits for the child's
 * exec or exit, then takes its state back. Without it both run at once on
 * one TLS, and the agent cannot tell them apart: it ends the trace (all of
 * it written, with the end mark) and records no more, rather than let two
 * threads write one buffer. */

struct vm_child {
    int (*fn)(void *);
    void *arg;
};

static int vm_child_start(void *p)
{
    struct vm_child c = *(struct vm_child *)p;
    rs_th.vchild = 1;
    rs_th.guard = 1;
    return c.fn(c.arg);
}

static int clone_common(__typeof__(clone) *real, int (*fn)(void *), void *stack, int flags, void *arg,
                        pid_t *ptid, void *tls, pid_t *ctid)
{
    if (!real)
        return errno = ENOSYS, -1;
    if (!(flags & CLONE_VM) || (flags & CLONE_SETTLS) || !fn || !stack || rs_in_vchild())
        return real(fn, stack, flags, arg, ptid, tls, ctid);
    struct vm_child *c = (struct vm_child *)(((uintptr_t)stack - sizeof *c) & ~(uintptr_t)15);
    c->fn = fn;
    c->arg = arg;
    if (!(flags & CLONE_VFORK)) {
        int e = errno;
        rs_notice("the program made a child that shares a thread's memory and TLS "
                  "(clone with CLONE_VM, without CLONE_VFORK or CLONE_SETTLS); tracing ends here");
        rs_finish();
        errno = e;
        return real(vm_child_start, c, flags, c, ptid, tls, ctid);
    }
    int guard = rs_th.guard, mark = rs_th.vchild;
    int r = real(vm_child_start, c, flags, c, ptid, tls, ctid);
    rs_th.guard = guard;
    rs_th.vchild = mark;
    return r;
}

RS_REAL_DECL(clone);

/* The arguments after arg are read whatever flags say, as glibc's clone
 * reads their registers: the kernel looks only at those its flags name. */
RS_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    return clone_common(RS_REAL(clone), fn, stack, flags, arg, ptid, tls, ctid);
}

int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
RS_REAL_DECL(__clone);

RS_EXPORT int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    return clone_common(RS_REAL(__clone), fn, stack, flags, arg, ptid, tls, ctid);
}
