/* Text into markup (see escape.h): the entities both contexts share, then
 * each context's rule for what it cannot hold. */
#include "reporter/base/escape.h"

#include <stdint.h>

/* The length of the whole, shortest-form UTF-8 sequence of an XML character
 * at p (its first byte at least 0x80), or 0 when there is none. */
static int xml_char_len(const unsigned char *p)
{
    unsigned c = *p;
    int len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c <= 0xdf ? 2 : 0;
    uint32_t cp = len == 4 ? c & 7 : len == 3 ? c & 15 : c & 31;
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
        return 0;
    return len;
}

void rsr_markup_escape(FILE *f, const char *s, enum rsr_markup m)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        const char *entity = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;"
                           : c == '"' ? "&quot;" : c == '\'' ? "&#39;" : NULL;
        if (entity) {
            fputs(entity, f);
        } else if (m == RSR_MARKUP_HTML) {
            if (c < 0x20 && c != '\t' && c != '\n')
                fputs("&#xFFFD;", f);
            else
                putc((int)c, f);
        } else if (c < 0x20 || c == 0x7f) {
            putc('?', f);
        } else if (c < 0x80) {
            putc((int)c, f);
        } else {
            int len = xml_char_len(p);
            if (len) {
                fwrite(p, 1, (size_t)len, f);
                p += len;
                continue;
            }
            fputs("\xef\xbf\xbd", f);
        }
        p++;
    }
}
