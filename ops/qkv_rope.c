/* The qkv_rope op (ops/decode.h): a decode step's QKV product with RoPE
 * and the cache write. */
#include <math.h>
#include <stdlib.h>
#include "ops/decode.h"
#include "ops/rope.h"

extern const kb_variant *const qkv_rope_variants[];

enum { X, GAMMA, W, INV_FREQ, LEN, Q, K_CACHE, V_CACHE, NTENSORS };

static int64_t rows_of(const kb_shape *s) { return (s->d[1] + 2 * s->d[2]) * s->d[3]; }
static double flops(const kb_shape *s) { return 2.0 * rows_of(s) * s->d[0]; }
static int ntensors(const kb_shape *s) { (void)s; return NTENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    (void)t;
    const int64_t K = s->d[0], H = s->d[1], KV = s->d[2], D = s->d[3], L = s->d[4] + 1;
    kb_tensor x;
    switch (i) {
    case X: case GAMMA: case W: return kb_decode_input(i, K, rows_of(s));
    case INV_FREQ: x = kb_tensor_of("inv_freq", D / 2, KB_F32, KB_IN, 1, D / 2, 0, 0); break;
    case LEN: x = kb_tensor_of("len", 1, KB_I32, KB_IN, 1, 1, 0, 0); break;
    case Q: return kb_tensor_of("q", H * D, KB_BF16, KB_OUT, H, D, K, (double)D * K);
    default:
        return kb_tensor_of(i == K_CACHE ? "k" : "v", kb_mul_dims(KV * L, D), KB_BF16, KB_INOUT, KV * L, D, K,
                            (double)D * K);
    }
    x.derived = 1;
    return x;
}

/* W, x, g and the tables read; q and the cache's new rows written. */
static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    const double K = (double)s->d[0], D = (double)s->d[3];
    return 2 * rows_of(s) * K + 8 * K + 2 * D + 4 + 2 * (double)rows_of(s);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_qkv_rope_args *)args =
        (kb_qkv_rope_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], s->d[4] + 1, KB_DECODE_EPS,
                           dev[X], dev[GAMMA], dev[W], dev[INV_FREQ], dev[LEN], dev[Q], dev[K_CACHE], dev[V_CACHE]};
}

/* inv_freq as rope's; len = P + 1. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    (void)t;
    const int D = (int)s->d[3];
    float *inv_freq = host[INV_FREQ];
    for (int i = 0; i < D / 2; ++i)
        inv_freq[i] = (float)pow(KB_ROPE_THETA, -2.0 * i / D);
    *(int *)host[LEN] = (int)s->d[4] + 1;
}

/* Head `head` (of the H + 2 KV stacked) into y, turned at pos when `turn`. */
static void head_of(const kb_shape *s, const void *w, const double *xn, int64_t head, int64_t pos, int turn, double *y)
{
    const int K = (int)s->d[0], D = (int)s->d[3], half = D / 2;
    for (int j = 0; j < D; ++j)
        y[j] = kb_decode_dot(w, head * D + j, K, xn);
    for (int i = 0; turn && i < half; ++i) {
        const double a = y[i], b = y[i + half], c = cos(kb_rope_angle(pos, i, D)), sn = sin(kb_rope_angle(pos, i, D));
        y[i] = a * c - b * sn;
        y[i + half] = b * c + a * sn;
    }
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t;
    const int64_t K = s->d[0], H = s->d[1], KV = s->d[2], D = s->d[3], P = s->d[4], L = P + 1;
    double *xn = malloc((size_t)K * sizeof *xn);
    kb_decode_norm(in[X], in[GAMMA], (int)K, KB_DECODE_EPS, xn);
    for (int r = 0; r < nrows; ++r) {
        double *y = ref + r * D;
        const int64_t head = out == Q ? rows[r] : rows[r] / L;
        if (out == Q)
            head_of(s, in[W], xn, head, P, 1, y);
        else if (rows[r] % L < P)
            kb_widen(in[out], rows[r] * D, D, KB_BF16, y);
        else
            head_of(s, in[W], xn, H + (out == V_CACHE ? KV : 0) + head, P, out == K_CACHE, y);
    }
    free(xn);
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_decode_fill(i, s->d[0], x, n, seed);
}

static const char *validate(const kb_shape *s)
{
    return s->d[3] % 2 ? "D must be even: RoPE turns pairs (x[i], x[i + D/2])" : NULL;
}

const kb_op kb_op_qkv_rope = {
    .name = "qkv_rope",
    .summary = "q, and k, v into the cache = RoPE(W RMSNorm(x)) at the step's position: a decode step's QKV, bf16",
    .shape_fields = "KxHxKVxDxP",
    .nd = 5,
    /* SmolLM2-135M's and Llama-3.2-1B's decode steps at position 1023 */
    .families = (const kb_family[]){{"models", NULL, "576x9x3x64x1023,2048x32x8x64x1023", 1},
                                    {"hostile", NULL, "8x1x1x2x1,24x3x1x6x4,1000x5x1x24x77"},
                                    {NULL}},
    .test_sizes = "8x1x1x2x1,13x1x1x2x2,24x3x1x6x4,1000x5x1x24x77,576x9x3x64x9,256x4x2x64x1,4104x2x2x128x3",
    .baseline = {[KB_BF16] = "naive"},
    .variants = qkv_rope_variants,
    .fill = fill,
    .bytes = bytes,
    .prepare = prepare,
    .validate = validate,
    KB_OP_CONTRACT(kb_qkv_rope_args),
};
