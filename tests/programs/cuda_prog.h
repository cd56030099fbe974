/* What the CUDA driver test programs (cuda_paths, cuda_contexts,
 * cuda_names) share: a failed driver call ends the program with one line
 * naming the call and its CUresult. Header only: each program is one
 * file; it sets prog_name before its first call. */
#ifndef CUDA_PROG_H
#define CUDA_PROG_H

#include <stdio.h>
#include <stdlib.h>

static const char *prog_name = "cuda";

static void die(const char *what, int r)
{
    fprintf(stderr, "%s: %s failed (%d)\n", prog_name, what, r);
    exit(1);
}

#define CU(call)                                                     \
    do {                                                             \
        CUresult r_ = (call);                                        \
        if (r_ != CUDA_SUCCESS)                                      \
            die(#call, (int)r_);                                     \
    } while (0)

#endif
