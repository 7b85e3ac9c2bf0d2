/* The copy op: the device-memory ceiling. */
#include <string.h>
#include "kernels/copy.h"

extern const kb_variant *const copy_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static double bytes(const kb_shape *s, kb_dtype t) { return 2.0 * s->d[0] * (t == KB_BF16 ? 2 : 4); }
static int64_t reduction_len(const kb_shape *s) { (void)s; return 1; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    return i == 0 ? (kb_tensor){"src", s->d[0], t, 0, 1, s->d[0]}
                  : (kb_tensor){"dst", s->d[0], t, 1, 1, s->d[0]};
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_copy_args *)args = (kb_copy_args){s->d[0], dev[0], dev[1]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in,
                      const int64_t *rows, int nrows, double **ref)
{
    (void)t, (void)rows, (void)nrows; /* one row: the whole vector, spread over the threads */
    const float *src = in[0];
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s->d[0]; ++i)
        ref[0][i] = src[i];
}

static double row_cost(const kb_shape *s) { return (double)s->d[0]; }

const kb_op kb_op_copy = {
    .name = "copy",
    .summary = "dst = src, fp32: the device-memory ceiling (bytes read + written)",
    .shape_fields = "N",
    .nd = 1,
    .families = (const kb_family[]){{"size", "N", "16777216,67108864,268435456", 1}, {NULL}},
    .test_sizes = "1,3,31,1000,4097,65537,1048579",
    .baseline = "memcpy",
    .variants = copy_variants,
    KB_OP_CONTRACT(kb_copy_args),
};
