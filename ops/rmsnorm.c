/* The rmsnorm op. */
#include "ops/rmsnorm.h"
#include "ops/rowwise.h"

extern const kb_variant *const rmsnorm_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    /* bf16 stores y alone in bf16: x and gamma stay fp32 */
    switch (i) {
    case 0: return kb_rowwise_matrix("x", s, KB_F32, KB_IN, 0);
    case 1: return kb_rowwise_vector("gamma", s, KB_F32);
    default: return kb_rowwise_matrix("y", s, t, KB_OUT, 3.0 * s->d[1]);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_rmsnorm_args *)args = (kb_rmsnorm_args){
        (int)s->d[0], (int)s->d[1], KB_RMSNORM_EPS, dev[0], dev[1], {dev[2]}};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    rmsnorm_reference_rows((int)s->d[1], KB_RMSNORM_EPS, tensor(s, t, 0).dtype, in[0], in[1], rows, nrows, ref);
}

void rmsnorm_fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    int64_t R = s->d[0], C = s->d[1];
    kb_fill_uniform(x, n, seed);
    if (i != 0 || R < 4)
        return;
    for (int64_t j = 0; j < C; ++j) {
        x[j] *= 1e-3f;
        x[C + j] += 1e4f;
    }
}

const kb_op kb_op_rmsnorm = {
    .name = "rmsnorm",
    .summary = "row-wise RMSNorm over the last dim with gamma, eps=1e-5; f32, or bf16 y from fp32 x",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive", [KB_F16] = "naive"},
    .variants = rmsnorm_variants,
    KB_OP_CONTRACT(kb_rmsnorm_args),
    .fill = rmsnorm_fill,
};
