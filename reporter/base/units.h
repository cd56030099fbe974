/* How sizes read wherever a person sees them: the terminal summary, the
 * page, findings' evidence and diff print bytes through this one function,
 * in binary units (KiB, MiB, GiB: powers of 1024, as the agent's
 * RINGSIDE_BUFFER_MB and nvidia-smi count). Rates are not sizes: bandwidth
 * stays decimal GB/s (storage MB/s), as nccl-tests and iostat report it. */
#ifndef RSR_UNITS_H
#define RSR_UNITS_H

#include <stddef.h>

/* bytes into b (n bytes of room) as "512 B", "1.5 KiB", "32.0 MiB", ...
 * "2.0 PiB"; cut to fit when n is too small. */
void rsr_fmt_bytes(char *b, size_t n, double bytes);

#endif
