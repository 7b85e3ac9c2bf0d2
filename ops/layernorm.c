/* The layernorm op. */
#include <math.h>
#include "ops/layernorm.h"
#include "ops/rowwise.h"

extern const kb_variant *const layernorm_variants[];

static double flops(const kb_shape *s) { return 8.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 4; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    switch (i) {
    case 0: return kb_rowwise_matrix("x", s, t, KB_IN, 0);
    case 1: return kb_rowwise_vector("gamma", s, t);
    case 2: return kb_rowwise_vector("beta", s, t);
    default: return kb_rowwise_matrix("y", s, t, KB_OUT, 4.0 * s->d[1]);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_layernorm_args *)args = (kb_layernorm_args){
        (int)s->d[0], (int)s->d[1], KB_LAYERNORM_EPS, dev[0], dev[1], dev[2], dev[3]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    layernorm_reference_rows((int)s->d[1], KB_LAYERNORM_EPS, t, in[0], in[1], in[2], rows, nrows, ref);
}

void layernorm_plant_rows(int64_t R, int64_t C, float *x)
{
    if (R < 4)
        return;
    for (int64_t j = 0; j < C; ++j) {
        /* uniform [-1, 1] has variance 1/3: scale by 0.1*sqrt(3) for variance 1e-2 */
        x[j] = 1e4f + 0.17320508f * x[j];
        x[C + j] = 0.5f;
        x[2 * C + j] *= 100.0f;
    }
}

void layernorm_fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_uniform(x, n, seed);
    if (i == 0)
        layernorm_plant_rows(s->d[0], s->d[1], x);
}

const kb_op kb_op_layernorm = {
    .name = "layernorm",
    .summary = "row-wise LayerNorm over the last dim with gamma, beta, eps=1e-5; f32 and f16",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "naive", [KB_F16] = "naive"},
    .variants = layernorm_variants,
    KB_OP_CONTRACT(kb_layernorm_args),
    .fill = layernorm_fill,
};
