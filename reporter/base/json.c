/* JSON output helpers for dump and report.json (see json.h). */
#include "reporter/base/json.h"

#include <math.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

void rsr_json_str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    putc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                putc(*p, f);
            } else {
                int n = utf8_len(p);
                if (n) {
                    fwrite(p, 1, (size_t)n, f);
                    p += n - 1;
                } else {
                    fprintf(f, "\\u%04x", *p);
                }
            }
        }
    }
    putc('"', f);
}

void rsr_json_num(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == (double)(int64_t)v && fabs(v) < 1e15)
        fprintf(f, "%lld", (long long)v);
    else
        fprintf(f, "%.6g", v);
}

void rsr_json_num_key(FILE *f, const char *key, double v)
{
    fprintf(f, ",\"%s\":", key);
    rsr_json_num(f, v);
}

void rsr_json_int_or_null(FILE *f, int v)
{
    if (v < 0)
        fputs("null", f);
    else
        fprintf(f, "%d", v);
}
