/* The gate_up op (ops/decode.h): a decode step's gate/up product with
 * SwiGLU. */
#include <math.h>
#include <stdlib.h>
#include "ops/decode.h"

extern const kb_variant *const gate_up_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 4; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    (void)t;
    const int64_t F = s->d[0], K = s->d[1];
    if (i < 3)
        return kb_decode_input(i, K, 2 * F);
    return kb_tensor_of("h", F, KB_BF16, KB_OUT, F, 1, K, 2.0 * K);
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    const double F = (double)s->d[0], K = (double)s->d[1];
    return 4 * F * K + 8 * K + 2 * F;
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_gate_up_args *)args =
        (kb_gate_up_args){(int)s->d[0], (int)s->d[1], KB_DECODE_EPS, dev[0], dev[1], dev[2], dev[3]};
}

/* Element i is silu(gate row i . xn) * (up row i . xn). */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)out;
    const int64_t F = s->d[0];
    const int K = (int)s->d[1];
    double *xn = malloc((size_t)K * sizeof *xn);
    kb_decode_norm(in[0], in[1], K, KB_DECODE_EPS, xn);
    for (int r = 0; r < nrows; ++r) {
        const double g = kb_decode_dot(in[2], rows[r], K, xn), u = kb_decode_dot(in[2], F + rows[r], K, xn);
        ref[r] = g / (1 + exp(-g)) * u;
    }
    free(xn);
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_decode_fill(i, s->d[1], x, n, seed);
}

const kb_op kb_op_gate_up = {
    .name = "gate_up",
    .summary = "h = silu(Wg RMSNorm(x)) * (Wu RMSNorm(x)): a decode step's gate/up product, bf16",
    .shape_fields = "FxK",
    .nd = 2,
    /* SmolLM2-135M's and Llama-3.2-1B's decode steps */
    .families = (const kb_family[]){{"models", NULL, "1536x576,8192x2048", 1},
                                    {"hostile", NULL, "1x8,3x24,1001x1000"},
                                    {NULL}},
    .test_sizes = "1x8,1x1,3x24,5x13,1001x1000,712x256,1536x576,33x4104",
    .baseline = {[KB_BF16] = "naive"},
    .variants = gate_up_variants,
    .fill = fill,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_gate_up_args),
};
