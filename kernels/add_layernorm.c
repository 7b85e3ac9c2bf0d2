/* The add_layernorm op: residual add fused with LayerNorm. */
#include <stdlib.h>
#include "kernels/add_layernorm.h"
#include "kernels/layernorm.h"
#include "kernels/rowwise.h"

extern const kb_variant *const add_layernorm_variants[];

static double flops(const kb_shape *s) { return 9.0 * s->d[0] * s->d[1]; }
static double bytes(const kb_shape *s, kb_dtype t)
{
    return (4.0 * s->d[0] * s->d[1] + 2.0 * s->d[1]) * (t == KB_BF16 ? 2 : 4);
}
static int64_t reduction_len(const kb_shape *s) { return kb_cols_of(s); }
static int ntensors(const kb_shape *s) { (void)s; return 6; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    switch (i) {
    case 0: return kb_rowwise_matrix("x", s, t, 0);
    case 1: return kb_rowwise_matrix("r", s, t, 0);
    case 2: return kb_rowwise_vector("gamma", s, t);
    case 3: return kb_rowwise_vector("beta", s, t);
    case 4: return kb_rowwise_matrix("y", s, t, 1);
    default: return kb_rowwise_matrix("sum", s, t, 1);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_add_layernorm_args *)args = (kb_add_layernorm_args){
        (int)s->d[0], (int)s->d[1], KB_LAYERNORM_EPS, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]};
}

/* sum rows in fp32 (as stored), then the layernorm reference of those rows. */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in,
                      const int64_t *rows, int nrows, double **ref)
{
    (void)t;
    int C = (int)s->d[1];
    const float *x = in[0], *r = in[1];
    float *sum = malloc((size_t)nrows * C * sizeof *sum);
    int64_t *seq = malloc((size_t)nrows * sizeof *seq);
    for (int k = 0; k < nrows; ++k) {
        seq[k] = k;
        for (int j = 0; j < C; ++j) {
            sum[(int64_t)k * C + j] = x[rows[k] * C + j] + r[rows[k] * C + j];
            ref[1][(int64_t)k * C + j] = sum[(int64_t)k * C + j];
        }
    }
    layernorm_reference_rows(C, KB_LAYERNORM_EPS, sum, in[2], in[3], seq, nrows, ref[0]);
    free(sum);
    free(seq);
}

static double row_cost(const kb_shape *s) { return 5.0 * s->d[1]; }

const kb_op kb_op_add_layernorm = {
    .name = "add_layernorm",
    .summary = "sum = x + r, y = LayerNorm(sum): the post-LN residual step, fp32",
    KB_ROWWISE_SHAPES,
    .baseline = "unfused",
    .variants = add_layernorm_variants,
    KB_OP_CONTRACT(kb_add_layernorm_args),
    .fill = layernorm_fill,
};
