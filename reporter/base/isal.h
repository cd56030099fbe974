/* ISA-L (Debian's libisal), opened at first use rather than linked, so that
 * the programs built from the reporter's objects (unit tests, the
 * benchmark's generator) need nothing more on their link lines. Where the
 * library is missing, its users fall back to zlib. */
#ifndef RSR_ISAL_H
#define RSR_ISAL_H

#include <stdbool.h>

#include <isa-l/igzip_lib.h>

struct rsr_isal {
    /* inflate: all three or none */
    __typeof__(isal_inflate_init) *inflate_init;
    __typeof__(isal_inflate_reset) *inflate_reset;
    __typeof__(isal_inflate) *inflate;
    /* one-shot deflate: both or none */
    __typeof__(isal_deflate_stateless_init) *deflate_init;
    __typeof__(isal_deflate_stateless) *deflate;
    bool avx;               /* the CPU has AVX (kineto.c's reader asks) */
};

/* The library's functions, loaded once (thread-safe); NULL members where
 * the library or a function is missing. Never NULL itself. */
const struct rsr_isal *rsr_isal(void);

#endif
