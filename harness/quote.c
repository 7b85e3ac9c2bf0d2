/* Untrusted text in messages and output: anything but printable UTF-8
 * escaped and long text cut, so an error about any input is always one
 * readable line; the UTF-8 decoder every reader shares; and kb_fail, which
 * formats such a line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"

size_t kb_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000}; /* below these a form is overlong */
    const size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] < 0xE0 ? 2 : s[0] >= 0xE0 && s[0] < 0xF0 ? 3
                       : s[0] >= 0xF0 && s[0] < 0xF5 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t c = len == 1 ? s[0] : s[0] & (0x7Fu >> len);
    for (size_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

/* The bytes of the character at s (n > 0 left) when it is written as it
 * is: valid UTF-8, not a control character (C0, DEL, C1) and not the
 * backslash that starts an escape; 0 for a byte written as \xNN. */
static size_t plain_len(const unsigned char *s, size_t n)
{
    uint32_t cp;
    const size_t len = kb_utf8_next(s, n, &cp);
    return len && cp >= 0x20 && cp != 0x7f && cp != '\\' && !(cp >= 0x80 && cp < 0xa0) ? len : 0;
}

const char *kb_quote(const char *s, char *buf, size_t len)
{
    static const char more[] = "...";
    const unsigned char *p = (const unsigned char *)s;
    size_t used = 0, left = strlen(s);
    if (len < sizeof more)
        return len ? (buf[0] = '\0', buf) : "";
    while (left) {
        const size_t plain = plain_len(p, left), need = plain ? plain : 4;
        /* Keep room for "..." so a cut is visible. */
        if (used + need + sizeof more > len) {
            memcpy(buf + used, more, sizeof more);
            return buf;
        }
        if (plain)
            memcpy(buf + used, p, plain);
        else
            snprintf(buf + used, len - used, "\\x%02x", *p);
        used += need;
        p += plain ? plain : 1;
        left -= plain ? plain : 1;
    }
    buf[used] = '\0';
    return buf;
}

void kb_put_escaped(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    while (n) {
        const size_t plain = plain_len(p, n);
        if (plain)
            fwrite(p, 1, plain, f);
        else
            fprintf(f, "\\x%02x", *p);
        p += plain ? plain : 1;
        n -= plain ? plain : 1;
    }
}

int kb_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
