/* torch.compile's own work made visible: which samples are compilation
 * (Dynamo's tracing, Inductor's code generation, the waits for its compile
 * workers), read by flame.c from each stack's Python frames into the
 * process's waits (waits.h); and which processes are compile workers or
 * the C++ compiler runs Inductor starts, from their argv, for report.c to
 * put under the process that compiles. */
#ifndef RSR_COMPILE_H
#define RSR_COMPILE_H

#include <stdint.h>
#include <stdio.h>

/* The part of compilation a stack is in. Dynamo: below its frame
 * converter (torch/_dynamo/convert_frame.py, which every compilation of a
 * Python frame goes through, recompilations too) and not in Inductor;
 * Inductor: below its compile_fx (torch/_inductor/compile_fx.py, which
 * compiles each graph: the forward at once, the backward at the first
 * backward call). Running the compiled code goes through neither. */
enum rsr_compile_part { RSR_COMPILE_DYNAMO, RSR_COMPILE_INDUCTOR, RSR_COMPILE_NPARTS };

/* The part a stack is in (enum rsr_compile_part), or -1 when it is not
 * compiling: names[0..n) its frames' names root first, is_python[i] set
 * for Python frames ("torch/_dynamo/convert_frame.py:_compile", a line may
 * follow). */
int rsr_compile_part(const char *const *names, const uint8_t *is_python, uint32_t n);

/* What a process is to torch.compile, from its argv. */
enum rsr_compile_kind {
    RSR_COMPILE_NOT = 0,
    RSR_COMPILE_WORKER,     /* Inductor's compile worker pool (torch/_inductor/compile_worker),
                               its subprocess and the forks it serves from */
    RSR_COMPILE_COMPILER    /* a C/C++ compiler or linker run (g++, cc1plus, as, ld...) */
};

/* The kind of a process whose argv is argv[0..argc) (NULL entries are
 * skipped). */
enum rsr_compile_kind rsr_compile_kind_of(char *const *argv, int argc);


#endif
