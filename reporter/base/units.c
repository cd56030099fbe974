/* Sizes in binary units (see units.h), one formatting for the terminal,
 * the page, findings and diff. */
#include "reporter/base/units.h"

#include <math.h>
#include <stdio.h>

void rsr_fmt_bytes(char *b, size_t n, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int i = 0;
    while (fabs(bytes) >= 1024 && i < 5)
        bytes /= 1024, i++;
    snprintf(b, n, i ? "%.1f %s" : "%.0f %s", bytes, unit[i]);
}
