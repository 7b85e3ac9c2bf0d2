/* Untrusted text in messages: control characters escaped and long text cut,
 * so an error about any input is always one readable line; and kb_fail, which
 * formats such a line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"

const char *kb_quote(const char *s, char *buf, size_t len)
{
    static const char more[] = "...";
    size_t used = 0;
    if (len < sizeof more)
        return len ? (buf[0] = '\0', buf) : "";
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        const int plain = *p >= 0x20 && *p != 0x7f && *p != '\\';
        const size_t need = plain ? 1 : 4;
        /* Keep room for "..." so a cut is visible. */
        if (used + need + sizeof more > len) {
            memcpy(buf + used, more, sizeof more);
            return buf;
        }
        if (plain)
            buf[used++] = (char)*p;
        else
            used += (size_t)snprintf(buf + used, len - used, "\\x%02x", *p);
    }
    buf[used] = '\0';
    return buf;
}

int kb_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
