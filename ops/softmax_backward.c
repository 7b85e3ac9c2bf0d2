/* The softmax_backward op. */
#include <math.h>
#include "ops/rowwise.h"
#include "ops/softmax_backward.h"

extern const kb_variant *const softmax_backward_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_SMB_TENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    switch (i) {
    case KB_SMB_Y: return kb_rowwise_matrix("y", s, t, KB_IN, 0);
    case KB_SMB_DY: return kb_rowwise_matrix("dy", s, t, KB_IN, 0);
    default: return kb_rowwise_matrix("dx", s, t, KB_OUT, 5.0 * s->d[1]);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_softmax_backward_args *)args =
        (kb_softmax_backward_args){(int)s->d[0], (int)s->d[1], dev[KB_SMB_Y], dev[KB_SMB_DY], dev[KB_SMB_DX]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    softmax_backward_reference(s->d[1], t, in[KB_SMB_Y], in[KB_SMB_DY], rows, nrows, ref);
}

/* y: the forward's probabilities of logits in [-4, 4], with its numerics
 * rows (softmax_backward.h); dy: uniform. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    const int64_t R = s->d[0], C = s->d[1];
    kb_fill_uniform(x, n, seed);
    if (i != KB_SMB_Y)
        return;
    for (int64_t k = 0; k < n; ++k)
        x[k] *= 4.0f;
    if (R >= 4 && C >= 2) {
        x[0] += 1000.0f;
        for (int64_t j = 0; j < C; ++j) {
            if (j % 3 == 0)
                x[C + j] = -INFINITY;
            x[2 * C + j] = -INFINITY;
        }
    }
    softmax_backward_probabilities(R, C, x);
}

const kb_op kb_op_softmax_backward = {
    .name = "softmax_backward",
    .summary = "dx of row-wise softmax from the forward's y and dy; f32 and bf16",
    KB_ROWWISE_SHAPES,
    .baseline = {[KB_F32] = "cudnn", [KB_BF16] = "naive"},
    .variants = softmax_backward_variants,
    KB_OP_CONTRACT(kb_softmax_backward_args),
    .fill = fill,
};
