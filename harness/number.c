/* The one grammar of numbers that kbench reads from a command line or a CSV
 * cell (harness.h), and the refusals of flags that take one, so every
 * command accepts the same spellings and states the range it enforces. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

/* Digits at s; their count. */
static size_t digits(const char *s)
{
    return strspn(s, "0123456789");
}

/* The grammar is checked by hand: strtod alone also takes leading spaces,
 * a '+', hex, "inf", "nan", ".5" and "5.". */
int kb_parse_decimal(const char *s, double *out)
{
    const char *p = s + (*s == '-');
    size_t n = digits(p);
    if (!n)
        return -1;
    p += n;
    if (*p == '.') {
        if (!(n = digits(p + 1)))
            return -1;
        p += 1 + n;
    }
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '+' || p[1] == '-');
        if (!(n = digits(p)))
            return -1;
        p += n;
    }
    if (*p)
        return -1;
    errno = 0;
    const double v = strtod(s, NULL);
    if (errno || !isfinite(v)) /* ERANGE: overflow, as 1e999, or underflow, as 1e-999 */
        return -1;
    *out = v;
    return 0;
}

int kb_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    const size_t n = digits(s);
    uint64_t v = 0;
    if (!n || s[n])
        return -1;
    for (size_t i = 0; i < n; ++i) {
        const unsigned d = (unsigned)(s[i] - '0');
        if (d > max || v > (max - d) / 10) /* v * 10 + d > max, without wrapping */
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* 2^64-1 and 2^31-1 read better than their digits. */
static const char *bound(uint64_t v, char *buf, size_t len)
{
    if (v == UINT64_MAX || v == INT_MAX)
        return v == INT_MAX ? "2^31-1" : "2^64-1";
    snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

int kb_int_flag(const char *flag, const char *val, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                size_t errlen)
{
    char q[KB_QUOTE_LEN], a[24], b[24];
    uint64_t v;
    if (kb_parse_count(val, hi, &v) != 0 || v < lo)
        return kb_fail(err, errlen, "%s needs an integer from %s to %s, got '%s'", flag, bound(lo, a, sizeof a),
                       bound(hi, b, sizeof b), kb_quote(val, q, sizeof q));
    *out = v;
    return 0;
}

int kb_real_flag(const char *flag, const char *val, double lo, int lo_open, double hi, const char *noun, double *out,
                 char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    double v;
    if (kb_parse_decimal(val, &v) != 0 || v < lo || (lo_open && v == lo) || v > hi)
        return kb_fail(err, errlen, lo_open ? "%s needs %s in (%.15g, %.15g], got '%s'"
                                            : "%s needs %s from %.15g to %.15g, got '%s'",
                       flag, noun, lo, hi, kb_quote(val, q, sizeof q));
    *out = v;
    return 0;
}

int kb_id_list(const char *flag, const char *list, uint64_t max, size_t most, int **ids, size_t *n, char *err,
               size_t errlen)
{
    char q[KB_QUOTE_LEN], b[24];
    size_t count = 1;
    for (const char *s = list; *s; ++s)
        count += *s == ',';
    *ids = NULL;
    *n = 0;
    if (count > most)
        return kb_fail(err, errlen, "%s holds over %zu ids", flag, most);
    char *copy = strdup(list), *rest = copy, *tok;
    if (!copy || !(*ids = malloc(sizeof(int) * count))) {
        free(copy);
        return kb_fail(err, errlen, "out of memory for %s", flag);
    }
    uint64_t v = 0;
    while ((tok = strsep(&rest, ",")) && kb_parse_count(tok, max, &v) == 0)
        (*ids)[(*n)++] = (int)v;
    free(copy);
    if (*n == count)
        return 0;
    free(*ids);
    *ids = NULL;
    *n = 0;
    return kb_fail(err, errlen, "%s needs token ids from 0 to %s, comma-separated, got '%s'", flag,
                   bound(max, b, sizeof b), kb_quote(list, q, sizeof q));
}
