/* Lookups by name in the op table (generated: harness/ops_table.c.in). */
#include <string.h>
#include "harness/harness.h"

const kb_op *kb_find_op(const char *name)
{
    for (int i = 0; kb_ops[i]; ++i)
        if (strcmp(kb_ops[i]->name, name) == 0)
            return kb_ops[i];
    return NULL;
}

/* A row's speedup is over the baseline of its own dtype: a bf16 kernel
 * measured against an fp32 library call would flatter it. */
const char *kb_baseline_for(const kb_op *op, kb_dtype t) { return op->baseline[t]; }

const kb_variant *kb_find_variant(const kb_op *op, const char *name, kb_dtype t)
{
    KB_FOR_EACH_VARIANT(op, v)
        if (v->dtype == t && strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

const kb_variant *kb_find_variant_named(const kb_op *op, const char *name)
{
    KB_FOR_EACH_VARIANT(op, v)
        if (strcmp(v->name, name) == 0)
            return v;
    return NULL;
}

static const char *const math_names[] = {[KB_MATH_F32] = "f32", [KB_MATH_TF32] = "tf32", [KB_MATH_BF16] = "bf16",
                                         [KB_MATH_3XTF32] = "3xtf32", [KB_MATH_F16] = "f16", [KB_MATH_FP8] = "fp8"};

const char *kb_math_name(kb_math m) { return math_names[m]; }

double kb_op_bytes(const kb_op *op, const kb_shape *s, kb_dtype t)
{
    if (op->bytes)
        return op->bytes(s, t);
    double sum = 0;
    for (int i = 0, n = op->ntensors(s); i < n; ++i) {
        kb_tensor x = op->tensor(s, t, i);
        sum += (double)x.elems * (double)kb_dtype_size(x.dtype) * (x.role == KB_INOUT ? 2 : 1);
    }
    return sum;
}

double kb_op_write_share(const kb_op *op, const kb_shape *s, kb_dtype t)
{
    if (op->bytes)
        return -1;
    double read = 0, written = 0;
    for (int i = 0, n = op->ntensors(s); i < n; ++i) {
        kb_tensor x = op->tensor(s, t, i);
        const double b = (double)x.elems * (double)kb_dtype_size(x.dtype);
        read += x.role != KB_OUT ? b : 0;
        written += x.role != KB_IN ? b : 0;
    }
    return read + written > 0 ? written / (read + written) : -1;
}

int kb_parse_math(const char *s, kb_math *out)
{
    for (int m = 0; m < KB_MATH_COUNT; ++m)
        if (strcmp(s, math_names[m]) == 0) {
            *out = (kb_math)m;
            return 0;
        }
    return -1;
}

const char *kb_status_name(kb_status s)
{
    return s == KB_PASS ? "PASS" : s == KB_FAIL ? "FAIL" : "SKIP";
}

int kb_in_list(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p; p = strchr(p, ',')) {
        p += *p == ',';
        if (!strncmp(p, item, n) && (p[n] == ',' || !p[n]))
            return 1;
    }
    return 0;
}
