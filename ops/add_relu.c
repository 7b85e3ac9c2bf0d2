/* The add_relu op: residual add and ReLU. */
#include "ops/add_relu.h"
#include "ops/rowwise.h"

extern const kb_variant *const add_relu_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    if (i < 2)
        return kb_rowwise_matrix(i == 0 ? "x" : "r", s, t, KB_IN, 0);
    kb_tensor y = kb_rowwise_matrix("y", s, t, KB_OUT, (double)s->d[1]);
    y.reduction_len = 1; /* each element one add */
    return y;
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_add_relu_args *)args = (kb_add_relu_args){(int)s->d[0], (int)s->d[1], dev[0], dev[1], dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t C = s->d[1];
    for (int k = 0; k < nrows; ++k)
        for (int64_t j = 0; j < C; ++j) {
            double v = kb_tensor_value(in[0], rows[k] * C + j, t) + kb_tensor_value(in[1], rows[k] * C + j, t);
            ref[k * C + j] = v > 0 ? v : 0;
        }
}

const kb_op kb_op_add_relu = {
    .name = "add_relu",
    .summary = "y = relu(x + r), fp32: residual add and ReLU",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "separate"},
    .variants = add_relu_variants,
    KB_OP_CONTRACT(kb_add_relu_args),
};
