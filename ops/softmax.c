/* The softmax op. */
#include <math.h>
#include "ops/rowwise.h"
#include "ops/softmax.h"

extern const kb_variant *const softmax_variants[];

static double flops(const kb_shape *s) { return 5.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    return i == 0 ? kb_rowwise_matrix("x", s, t, KB_IN, 0) : kb_rowwise_matrix("y", s, t, KB_OUT, 10.0 * s->d[1]);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_softmax_args *)args = (kb_softmax_args){(int)s->d[0], (int)s->d[1], dev[0], dev[1]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    softmax_reference_rows((int)s->d[1], t, in[0], rows, nrows, ref);
}

/* Plant the numerics rows described in softmax.h. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    int masked_row = !(quirks & KB_QUIRK_NAN_ON_MASKED_ROW);
    int64_t R = s->d[0], C = s->d[1];
    kb_fill_uniform(x, n, seed);
    if (i != 0 || R < 4 || C < 2)
        return;
    for (int64_t j = 0; j < C; ++j) {
        x[j] += 1000.0f;
        if (j % 3 == 0)
            x[C + j] = -INFINITY;
        if (masked_row)
            x[2 * C + j] = -INFINITY;
    }
}

const kb_op kb_op_softmax = {
    .name = "softmax",
    .summary = "row-wise softmax over the last dim; f32 and f16",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "cudnn", [KB_F16] = "cudnn"},
    .variants = softmax_variants,
    KB_OP_CONTRACT(kb_softmax_args),
    .fill = fill,
    .conventions = "when R >= 4 and C >= 2, row 0 is shifted by +1000 (subtract the row's max), row 1 has every "
                   "third entry -inf (0 there) and row 2 is entirely -inf (a fully masked row: zeros, not NaN)",
};
