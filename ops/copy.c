/* The copy op: the device-memory ceiling. */
#include <string.h>
#include "ops/copy.h"

extern const kb_variant *const copy_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    /* One row, the whole vector, which the reference spreads over the threads. */
    return kb_tensor_of(i == 0 ? "src" : "dst", s->d[0], t, i == 0 ? KB_IN : KB_OUT, 1, s->d[0], 1, (double)s->d[0]);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_copy_args *)args = (kb_copy_args){s->d[0], dev[0], dev[1]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out, (void)rows, (void)nrows;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s->d[0]; ++i)
        ref[i] = kb_tensor_value(in[0], i, t);
}

const kb_op kb_op_copy = {
    .name = "copy",
    .summary = "dst = src, fp32: the device-memory ceiling (bytes read + written)",
    .shape_fields = "N",
    .nd = 1,
    .families = (const kb_family[]){{"size", "N", "16777216,67108864,268435456", 1}, {NULL}},
    .test_sizes = "1,3,31,1000,4097,65537,1048579",
    .baseline = {[KB_F32] = "memcpy"},
    .variants = copy_variants,
    KB_OP_CONTRACT(kb_copy_args),
};
