/* Shapes: parsing "AxBxC" text, printing it back, and overflow-checked sizes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

/* Largest accepted dimension: kernels index rows and columns with int. */
#define KB_MAX_DIM INT32_MAX

/* Digits only.  The value saturates just above KB_MAX_DIM: any longer
 * number is only "too large", and the arithmetic never leaves int64. */
static int parse_dim(const char *tok, size_t len, int64_t *out)
{
    if (len == 0)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; ++i) {
        if (tok[i] < '0' || tok[i] > '9')
            return -1;
        v = v > KB_MAX_DIM ? v : v * 10 + (tok[i] - '0');
    }
    *out = v;
    return 0;
}

/* Strip the op's flag suffix ("c" in "4x16x128x128x64c") into flags bit 0. */
static size_t strip_flag(const kb_op *op, const char *text, kb_shape *out)
{
    size_t len = strlen(text), sl = op->flag_suffix ? strlen(op->flag_suffix) : 0;
    if (sl && len > sl && !strcmp(text + len - sl, op->flag_suffix)) {
        out->flags = 1;
        return len - sl;
    }
    return len;
}

static int __attribute__((format(printf, 3, 4))) shape_error(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Fields are parsed in place, bounded by the body's length: a copy into a
 * fixed buffer would cut a long text and could accept what the cut hid. */
int kb_parse_shape(const kb_op *op, const char *text, kb_shape *out, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    const char *quoted = kb_quote(text, q, sizeof q);
    memset(out, 0, sizeof *out);
    const char *stop = text + strip_flag(op, text, out);
    const int nd_max = op->nd_max > op->nd ? op->nd_max : op->nd;
    int n = 0;
    for (const char *p = text;;) {
        const char *end = memchr(p, 'x', (size_t)(stop - p));
        int64_t v;
        if (parse_dim(p, (size_t)((end ? end : stop) - p), &v) != 0)
            return shape_error(err, errlen, "malformed %s shape '%s': expected %s with positive integers",
                               op->name, quoted, op->shape_fields);
        if (v < 1 || v > KB_MAX_DIM)
            return shape_error(err, errlen, "%s shape '%s': each dimension must be between 1 and %d",
                               op->name, quoted, KB_MAX_DIM);
        if (n < nd_max)
            out->d[n] = v;
        ++n;
        if (!end)
            break;
        p = end + 1;
    }
    if (n < op->nd || n > nd_max) {
        if (nd_max > op->nd)
            return shape_error(err, errlen, "malformed %s shape '%s': expected %d to %d fields, %s", op->name,
                               quoted, op->nd, nd_max, op->shape_fields);
        return shape_error(err, errlen, "malformed %s shape '%s': expected %d fields, %s", op->name,
                           quoted, op->nd, op->shape_fields);
    }
    out->nd = n;
    const char *why = op->validate ? op->validate(out) : NULL;
    return why ? shape_error(err, errlen, "%s shape '%s': %s", op->name, quoted, why) : 0;
}

int kb_parse_shape_list(const kb_op *op, const char *text, kb_shape **out, char *err, size_t errlen)
{
    char *copy = strdup(text), *rest = copy, *tok;
    int cap = 8, n = 0;
    kb_shape *v = malloc(cap * sizeof *v), *grown;
    if (!copy || !v)
        goto oom;
    /* strsep, unlike strtok, keeps empty items, so "8x8x8,," is an error. */
    while ((tok = strsep(&rest, ","))) {
        if (n == cap) {
            if (!(grown = realloc(v, (size_t)(cap *= 2) * sizeof *v)))
                goto oom;
            v = grown;
        }
        if (kb_parse_shape(op, tok, &v[n], err, errlen) != 0)
            goto fail;
        ++n;
    }
    free(copy);
    *out = v;
    return n;
oom:
    snprintf(err, errlen, "out of memory for the %s sizes", op->name);
fail:
    free(copy);
    free(v);
    return -1;
}

void kb_format_shape(const kb_op *op, const kb_shape *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nd && used < len; ++i)
        used += (size_t)snprintf(buf + used, len - used, i ? "x%lld" : "%lld", (long long)s->d[i]);
    if (s->flags && op->flag_suffix && used < len)
        snprintf(buf + used, len - used, "%s", op->flag_suffix);
}

int kb_shape_bytes(const kb_op *op, const kb_shape *s, kb_dtype t, int64_t *bytes, char *err, size_t errlen)
{
    int64_t total = 0;
    char shape[128];
    int n = op->ntensors(s);
    for (int i = 0; i < n; ++i) {
        kb_tensor x = op->tensor(s, t, i);
        int64_t b;
        if (x.elems <= 0 || __builtin_mul_overflow(x.elems, (int64_t)kb_dtype_size(x.dtype), &b) ||
            __builtin_add_overflow(total, b, &total)) {
            kb_format_shape(op, s, shape, sizeof shape);
            snprintf(err, errlen, "%s shape %s is too large: its byte count overflows 64 bits",
                     op->name, shape);
            return -1;
        }
    }
    *bytes = total;
    return 0;
}
