/* The add_layernorm op: residual add fused with LayerNorm. */
#include <stdlib.h>
#include "ops/add_layernorm.h"
#include "ops/layernorm.h"
#include "ops/rowwise.h"

extern const kb_variant *const add_layernorm_variants[];

static double flops(const kb_shape *s) { return 9.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 6; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    switch (i) {
    case 0: return kb_rowwise_matrix("x", s, t, KB_IN, 0);
    case 1: return kb_rowwise_matrix("r", s, t, KB_IN, 0);
    case 2: return kb_rowwise_vector("gamma", s, t);
    case 3: return kb_rowwise_vector("beta", s, t);
    case 4: return kb_rowwise_matrix("y", s, t, KB_OUT, 5.0 * s->d[1]);
    default: return kb_rowwise_matrix("sum", s, t, KB_OUT, (double)s->d[1]);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_add_layernorm_args *)args = (kb_add_layernorm_args){
        (int)s->d[0], (int)s->d[1], KB_LAYERNORM_EPS, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]};
}

/* sum's rows in fp32, as stored; y's, the layernorm reference of those. */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t;
    int C = (int)s->d[1];
    const float *x = in[0], *r = in[1];
    float *sum = malloc((size_t)nrows * C * sizeof *sum + 1);
    int64_t *seq = malloc((size_t)nrows * sizeof *seq + 1);
    for (int k = 0; k < nrows; ++k) {
        seq[k] = k;
        for (int j = 0; j < C; ++j)
            sum[(int64_t)k * C + j] = x[rows[k] * C + j] + r[rows[k] * C + j];
    }
    if (out == 5)
        for (int64_t k = 0; k < (int64_t)nrows * C; ++k)
            ref[k] = sum[k];
    else
        layernorm_reference_rows(C, KB_LAYERNORM_EPS, KB_F32, sum, in[2], in[3], seq, nrows, ref);
    free(sum);
    free(seq);
}

const kb_op kb_op_add_layernorm = {
    .name = "add_layernorm",
    .summary = "sum = x + r, y = LayerNorm(sum): the post-LN residual step, fp32",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "unfused"},
    .variants = add_layernorm_variants,
    KB_OP_CONTRACT(kb_add_layernorm_args),
    .fill = layernorm_fill,
};
