/* A C function for the Python + ctypes sampler test: spins for n rounds
 * (built as build/tests/prog/libspin.so). */
#include <stdint.h>

uint64_t spin_c(uint64_t n);

uint64_t spin_c(uint64_t n)
{
    volatile uint64_t x = 1;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}
