/* Shapes: parsing "AxBxC" text, printing it back, and overflow-checked sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

/* Largest accepted dimension: kernels index rows and columns with int. */
#define KB_MAX_DIM INT32_MAX

static int parse_dim(const char *tok, size_t len, int64_t *out)
{
    if (len == 0 || len > 19)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; ++i) {
        if (tok[i] < '0' || tok[i] > '9')
            return -1;
        v = v * 10 + (tok[i] - '0');
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

int kb_parse_shape(const kb_op *op, const char *text, kb_shape *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char body[256];
    size_t len = strip_flag(op, text, out);
    snprintf(body, sizeof body, "%.*s", (int)(len < sizeof body ? len : sizeof body - 1), text);
    const char *p = body;
    for (;;) {
        const char *end = strchr(p, 'x');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (out->nd == op->nd) {
            out->nd++; /* too many fields */
            break;
        }
        int64_t v;
        if (parse_dim(p, len, &v) != 0) {
            snprintf(err, errlen, "malformed %s shape '%s': expected %s with positive integers",
                     op->name, text, op->shape_fields);
            return -1;
        }
        if (v < 1 || v > KB_MAX_DIM) {
            snprintf(err, errlen, "%s shape '%s': each dimension must be between 1 and %d",
                     op->name, text, KB_MAX_DIM);
            return -1;
        }
        out->d[out->nd++] = v;
        if (!end)
            break;
        p = end + 1;
    }
    if (out->nd != op->nd) {
        snprintf(err, errlen, "malformed %s shape '%s': expected %d fields, %s",
                 op->name, text, op->nd, op->shape_fields);
        return -1;
    }
    const char *why = op->validate ? op->validate(out) : NULL;
    if (why) {
        snprintf(err, errlen, "%s shape '%s': %s", op->name, text, why);
        return -1;
    }
    return 0;
}

int kb_parse_shape_list(const kb_op *op, const char *text, kb_shape **out, char *err, size_t errlen)
{
    char *copy = strdup(text), *rest = copy, *tok;
    int cap = 8, n = 0;
    kb_shape *v = malloc(cap * sizeof *v);
    /* strsep, unlike strtok, keeps empty items, so "8x8x8,," is an error. */
    while ((tok = strsep(&rest, ","))) {
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        if (kb_parse_shape(op, tok, &v[n], err, errlen) != 0) {
            free(copy);
            free(v);
            return -1;
        }
        ++n;
    }
    free(copy);
    if (n == 0) {
        snprintf(err, errlen, "no sizes given for %s (expected %s)", op->name, op->shape_fields);
        free(v);
        return -1;
    }
    *out = v;
    return n;
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
