/* The add_relu op: residual add and ReLU. */
#include "kernels/add_relu.h"
#include "kernels/rowwise.h"

extern const kb_variant *const add_relu_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1]; }
static double bytes(const kb_shape *s, kb_dtype t) { return 3.0 * s->d[0] * s->d[1] * (t == KB_BF16 ? 2 : 4); }
static int64_t reduction_len(const kb_shape *s) { (void)s; return 1; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    return kb_rowwise_matrix(i == 0 ? "x" : i == 1 ? "r" : "y", s, t, i == 2);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_add_relu_args *)args = (kb_add_relu_args){(int)s->d[0], (int)s->d[1], dev[0], dev[1], dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in,
                      const int64_t *rows, int nrows, double **ref)
{
    (void)t;
    const int64_t C = s->d[1];
    const float *x = in[0], *r = in[1];
    for (int k = 0; k < nrows; ++k)
        for (int64_t j = 0; j < C; ++j) {
            double v = (double)x[rows[k] * C + j] + r[rows[k] * C + j];
            ref[0][k * C + j] = v > 0 ? v : 0;
        }
}

static double row_cost(const kb_shape *s) { return (double)s->d[1]; }

const kb_op kb_op_add_relu = {
    .name = "add_relu",
    .summary = "y = relu(x + r), fp32: residual add and ReLU",
    KB_ROWWISE_SHAPES,
    .baseline = "separate",
    .variants = add_relu_variants,
    KB_OP_CONTRACT(kb_add_relu_args),
};
