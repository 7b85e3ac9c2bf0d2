/* The attention_backward op. */
#include <math.h>
#include "ops/attention.h"
#include "ops/attention_backward.h"

extern const kb_variant *const attention_backward_variants[];

static double flops(const kb_shape *s) { return 2.5 * kb_attention_flops(s); }
static int ntensors(const kb_shape *s) { (void)s; return KB_ATB_TENSORS; }

/* A dq row: its Tk scores, dP values and the sum of dS k (some 3 Tk D
 * operations).  A dk or dv row: the group * Tq query rows of its KV head,
 * 3 D operations each. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t B = s->d[0], H = s->d[1], Tq = s->d[2], Tk = s->d[3], D = s->d[4];
    const int64_t hkv = kb_attention_shape_hkv(s), group = H / hkv;
    const int64_t q_rows = kb_mul_dims(B * H, Tq), kv_rows = kb_mul_dims(B * hkv, Tk);
    const int64_t q_elems = kb_mul_dims(q_rows, D), kv_elems = kb_mul_dims(kv_rows, D);
    kb_tensor x;
    switch (i) {
    case KB_ATB_Q: return kb_tensor_of("q", q_elems, t, KB_IN, q_rows, D, 0, 0);
    case KB_ATB_K: return kb_tensor_of("k", kv_elems, t, KB_IN, kv_rows, D, 0, 0);
    case KB_ATB_V: return kb_tensor_of("v", kv_elems, t, KB_IN, kv_rows, D, 0, 0);
    case KB_ATB_O:
    case KB_ATB_LSE:
        x = i == KB_ATB_O ? kb_tensor_of("o", q_elems, t, KB_IN, q_rows, D, 0, 0)
                          : kb_tensor_of("lse", q_rows, KB_F32, KB_IN, q_rows, 1, 0, 0);
        x.derived = 1;
        return x;
    case KB_ATB_DO: return kb_tensor_of("do", q_elems, t, KB_IN, q_rows, D, 0, 0);
    case KB_ATB_DQ: return kb_tensor_of("dq", q_elems, t, KB_OUT, q_rows, D, Tk, 3.0 * Tk * D);
    default:
        return kb_tensor_of(i == KB_ATB_DK ? "dk" : "dv", kv_elems, t, KB_OUT, kv_rows, D, group * Tq,
                            3.0 * group * Tq * D);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_attention_backward_args *)args = (kb_attention_backward_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], (int)s->d[4], (int)s->flags,
        (float)(1.0 / sqrt((double)s->d[4])), (int)kb_attention_shape_hkv(s), dev[KB_ATB_Q], dev[KB_ATB_K],
        dev[KB_ATB_V], dev[KB_ATB_O], dev[KB_ATB_DO], dev[KB_ATB_LSE], dev[KB_ATB_DQ], dev[KB_ATB_DK],
        dev[KB_ATB_DV]};
}

/* o and lse as the forward saves them. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    kb_attention_backward_args a;
    bind(s, host, &a);
    attention_backward_forward(&a, t, host[KB_ATB_O], host[KB_ATB_LSE]);
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    kb_attention_backward_args a;
    bind(s, (void *const *)in, &a);
    attention_backward_reference(&a, t, out, rows, nrows, ref);
}

const kb_op kb_op_attention_backward = {
    .name = "attention_backward",
    .summary = "dq, dk, dv of attention from q, k, v, do and the forward's o and log-sum-exp; bf16",
    .shape_fields = "BxHxTqxTkxD[xHkv][c]",
    .nd = 5,
    .nd_max = 6,
    /* Training shapes at 2 x 16 heads (FlashAttention's benchmark): T from
     * 1024 to 8192 at D = 128; then causal, D = 64 and GQA (32 heads over
     * 8) at T = 4096; tile-hostile shapes (odd T and D, causal Tq < Tk and
     * Tq > Tk, one key). */
    .families =
        (const kb_family[]){
            {"d128", "Tk", "2x16x1024x1024x128,2x16x2048x2048x128,2x16x4096x4096x128,2x16x8192x8192x128", 1,
             "2x16x4096x4096x128"},
            {"training", NULL,
             "2x16x4096x4096x128c,2x16x4096x4096x64,2x16x4096x4096x64c,2x32x4096x4096x128x8,"
             "2x32x4096x4096x128x8c",
             1},
            {"hostile", NULL, "2x4x77x77x64c,2x4x1000x1000x64,2x4x77x1000x80c,2x4x1000x1000x80c,2x4x1x77x64x2,"
                              "2x8x130x1000x128x2c,2x4x300x100x64c",
             1},
            {NULL}},
    .test_sizes = "1x1x1x1x64,1x2x3x5x64,2x2x17x17x64c,1x3x77x77x64,2x1x64x128x64,1x2x128x128x128c,"
                  "1x1x200x77x64c,2x8x33x70x64x2,1x4x77x300x64x2c,1x2x130x1000x128c,2x2x77x77x32c,"
                  "1x2x100x130x80,1x1x257x257x128c,2x8x128x128x128x2c,1x4x300x300x64x4,1x2x1x1000x128,"
                  "2x4x192x192x128x2c,1x2x512x512x64c",
    .baseline = {[KB_BF16] = "cudnn"},
    .variants = attention_backward_variants,
    KB_OP_CONTRACT(kb_attention_backward_args),
    .prepare = prepare,
    .flag_suffix = "c",
    .validate = kb_attention_validate,
};
