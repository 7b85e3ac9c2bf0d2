/* The rope op: rotary embedding of a fused QKV product into q and a KV cache. */
#include <math.h>
#include "ops/rope.h"

extern const kb_variant *const rope_variants[];

enum { QKV, INV_FREQ, COS_SIN, Q, K, V, NTENSORS };

static int64_t P_of(const kb_shape *s) { return s->nd > 4 ? s->d[4] : 0; }
static int64_t heads(const kb_shape *s) { return s->d[1] + 2 * s->d[2]; }
static double flops(const kb_shape *s) { return 3.0 * s->d[0] * (s->d[1] + s->d[2]) * s->d[3]; }
static int ntensors(const kb_shape *s) { (void)s; return NTENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t T = s->d[0], H = s->d[1], KV = s->d[2], D = s->d[3], L = P_of(s) + T;
    const int64_t cache = kb_mul_dims(KV * L, D);
    kb_tensor x;
    switch (i) {
    case QKV: return kb_tensor_of("qkv", kb_mul_dims(T * heads(s), D), t, KB_IN, T, heads(s) * D, 0, 0);
    case INV_FREQ: x = kb_tensor_of("inv_freq", D / 2, KB_F32, KB_IN, 1, D / 2, 0, 0); break;
    case COS_SIN: x = kb_tensor_of("cos_sin", kb_mul_dims(L, D), KB_F32, KB_IN, L, D, 0, 0); break;
    case Q: return kb_tensor_of("q", kb_mul_dims(H * T, D), t, KB_OUT, H * T, D, L, (double)D);
    case K: return kb_tensor_of("k", cache, t, KB_INOUT, KV * L, D, L, (double)D);
    default: return kb_tensor_of("v", cache, t, KB_INOUT, KV * L, D, 1, (double)D);
    }
    x.derived = 1;
    return x;
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    return 2.0 * s->d[0] * heads(s) * s->d[3] * (t == KB_F32 ? 4 : 2);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_rope_args *)args = (kb_rope_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], (int)P_of(s),
                                           P_of(s) + s->d[0], dev[QKV], dev[INV_FREQ], dev[COS_SIN], dev[Q],
                                           dev[K], dev[V]};
}

double kb_rope_angle(int64_t pos, int i, int D) { return (double)pos * pow(KB_ROPE_THETA, -2.0 * i / D); }

/* The two angle tables, as the models make them. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    (void)t;
    const int D = (int)s->d[3], half = D / 2;
    float *inv_freq = host[INV_FREQ], *cs = host[COS_SIN];
    for (int i = 0; i < half; ++i)
        inv_freq[i] = (float)pow(KB_ROPE_THETA, -2.0 * i / D);
    for (int64_t p = 0; p < P_of(s) + s->d[0]; ++p)
        for (int i = 0; i < half; ++i) {
            cs[(p * half + i) * 2] = (float)cos(kb_rope_angle(p, i, D));
            cs[(p * half + i) * 2 + 1] = (float)sin(kb_rope_angle(p, i, D));
        }
}

/* Head `head` of token t's qkv row into y, rotated at pos unless a value head. */
static void head_row(const kb_shape *s, kb_dtype t, const void *qkv, int64_t tok, int64_t head, int64_t pos,
                     int rotate, double *y)
{
    const int D = (int)s->d[3], half = D / 2;
    kb_widen(qkv, (tok * heads(s) + head) * D, D, t, y);
    for (int i = 0; rotate && i < half; ++i) {
        const double a = y[i], b = y[i + half], c = cos(kb_rope_angle(pos, i, D)), sn = sin(kb_rope_angle(pos, i, D));
        y[i] = a * c - b * sn;
        y[i + half] = b * c + a * sn;
    }
}

/* q's row r is (head r / T, token r % T); k's and v's (head r / L, position r % L). */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    const int64_t T = s->d[0], H = s->d[1], KV = s->d[2], D = s->d[3], P = P_of(s), L = P + T;
    for (int r = 0; r < nrows; ++r) {
        double *y = ref + r * D;
        if (out == Q) {
            head_row(s, t, in[QKV], rows[r] % T, rows[r] / T, P + rows[r] % T, 1, y);
            continue;
        }
        const int64_t head = rows[r] / L, pos = rows[r] % L;
        if (pos < P)
            kb_widen(in[out], rows[r] * D, D, t, y);
        else
            head_row(s, t, in[QKV], pos - P, H + (out == V ? KV : 0) + head, pos, out == K, y);
    }
}

static const char *validate(const kb_shape *s)
{
    return s->d[3] % 2 ? "D must be even: RoPE turns pairs (x[i], x[i + D/2])" : NULL;
}

const kb_op kb_op_rope = {
    .name = "rope",
    .summary = "rotary embedding of a fused QKV product into q and a KV cache (HF's rotate_half); f32 and bf16",
    .shape_fields = "TxHxKVxD[xP]",
    .nd = 4,
    .nd_max = 5,
    /* SmolLM2-135M's (9 heads over 3, D 64) and Llama-3.2-1B's (32 over 8) prefills, and their decode steps */
    .families = (const kb_family[]){{"prefill", NULL, "512x9x3x64,2048x32x8x64", 1},
                                    {"decode", NULL, "1x9x3x64x1023,1x32x8x64x8191"},
                                    {"hostile", NULL, "1x1x1x2,3x5x1x6x7,77x4x2x24"},
                                    {NULL}},
    .test_sizes = "1x1x1x2,3x5x1x6x7,77x4x2x24,1x9x3x64x1023,17x8x2x64,33x4x4x128x5,2x2x1x2x100,9x3x3x128",
    .baseline = {[KB_F32] = "table", [KB_BF16] = "table"},
    .variants = rope_variants,
    .bytes = bytes,
    .prepare = prepare,
    .validate = validate,
    KB_OP_CONTRACT(kb_rope_args),
};
