/* The rope_backward op: rope's gradient, from head-major dq, dk, dv into the fused dqkv. */
#include <math.h>
#include "ops/rope.h"
#include "ops/rope_backward.h"

extern const kb_variant *const rope_backward_variants[];

static int64_t heads(const kb_shape *s) { return s->d[1] + 2 * s->d[2]; }
static double flops(const kb_shape *s) { return 3.0 * s->d[0] * (s->d[1] + s->d[2]) * s->d[3]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_RPB_TENSORS; }

/* A row of dqkv: its heads' elements and the token's D/2 angles (a cos and
 * a sin each, some 20 element operations). */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t T = s->d[0], H = s->d[1], KV = s->d[2], D = s->d[3];
    kb_tensor inv_freq = kb_tensor_of("inv_freq", D / 2, KB_F32, KB_IN, 1, D / 2, 0, 0);
    inv_freq.derived = 1;
    switch (i) {
    case KB_RPB_DQ: return kb_tensor_of("dq", kb_mul_dims(H * T, D), t, KB_IN, H * T, D, 0, 0);
    case KB_RPB_DK: return kb_tensor_of("dk", kb_mul_dims(KV * T, D), t, KB_IN, KV * T, D, 0, 0);
    case KB_RPB_DV: return kb_tensor_of("dv", kb_mul_dims(KV * T, D), t, KB_IN, KV * T, D, 0, 0);
    case KB_RPB_INV_FREQ: return inv_freq;
    default:
        return kb_tensor_of("dqkv", kb_mul_dims(T, kb_mul_dims(heads(s), D)), t, KB_OUT, T,
                            kb_mul_dims(heads(s), D), T, (double)heads(s) * D + 10.0 * D);
    }
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    return 2.0 * s->d[0] * heads(s) * s->d[3] * (t == KB_F32 ? 4 : 2);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_rope_backward_args *)args = (kb_rope_backward_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], dev[KB_RPB_DQ], dev[KB_RPB_DK], dev[KB_RPB_DV],
        dev[KB_RPB_INV_FREQ], dev[KB_RPB_DQKV]};
}

/* inv_freq as rope's prepare makes it. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    (void)t;
    const int D = (int)s->d[3];
    float *inv_freq = host[KB_RPB_INV_FREQ];
    for (int i = 0; i < D / 2; ++i)
        inv_freq[i] = (float)pow(KB_ROPE_THETA, -2.0 * i / D);
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    rope_backward_reference(s->d[0], s->d[1], s->d[2], s->d[3], t, in[KB_RPB_DQ], in[KB_RPB_DK], in[KB_RPB_DV],
                            rows, nrows, ref);
}

static const char *validate(const kb_shape *s)
{
    return s->d[3] % 2 ? "D must be even: RoPE turns pairs (x[i], x[i + D/2])" : NULL;
}

const kb_op kb_op_rope_backward = {
    .name = "rope_backward",
    .summary = "dqkv of rotary embedding from head-major dq, dk, dv (rope's adjoint, P = 0); f32 and bf16",
    .shape_fields = "TxHxKVxD",
    .nd = 4,
    /* a training step's 8192 tokens of Llama-3-8B (32 heads over 8, D 128)
     * and 4096 of a GPT-2-small-sized GQA model (12 over 4, D 64) */
    .families = (const kb_family[]){{"models", NULL, "4096x12x4x64,8192x32x8x128", 1},
                                    {"hostile", NULL, "1x1x1x2,3x5x1x6,77x4x2x24,7x3x3x2,1000x2x1x130"},
                                    {NULL}},
    .test_sizes = "1x1x1x2,3x5x1x6,77x4x2x24,7x3x3x2,2x1x1x130,17x8x2x64,9x3x3x128,33x4x4x16,5x2x1x8,64x12x4x64",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = rope_backward_variants,
    .bytes = bytes,
    .prepare = prepare,
    .validate = validate,
    KB_OP_CONTRACT(kb_rope_backward_args),
};
