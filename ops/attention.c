/* The attention op. */
#include <math.h>
#include "ops/attention.h"

extern const kb_variant *const attention_variants[];

static int64_t bh(const kb_shape *s) { return s->d[0] * s->d[1]; }

/* Four FLOPs per D per (b, h, i, j) pair the mask keeps; causal counts the
 * area under the mask's diagonal (the header), Tq = Tk exactly half. */
double kb_attention_flops(const kb_shape *s)
{
    const double Tq = (double)s->d[2], Tk = (double)s->d[3];
    double f = 4.0 * bh(s) * s->d[2] * s->d[3] * s->d[4];
    if (!s->flags)
        return f;
    if (s->d[2] == s->d[3])
        return f / 2;
    const double pairs = Tq <= Tk ? Tq * Tk - Tq * Tq / 2 : Tk * Tk / 2;
    return 4.0 * bh(s) * s->d[4] * pairs;
}

static double flops(const kb_shape *s) { return kb_attention_flops(s); }
static int ntensors(const kb_shape *s) { (void)s; return 4; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int64_t q_rows = kb_mul_dims(bh(s), s->d[2]);
    int64_t kv_rows = kb_mul_dims(kb_mul_dims(s->d[0], kb_attention_shape_hkv(s)), s->d[3]);
    int64_t q_elems = kb_mul_dims(q_rows, s->d[4]), kv_elems = kb_mul_dims(kv_rows, s->d[4]);
    switch (i) {
    case 0: return kb_tensor_of("q", q_elems, t, KB_IN, q_rows, s->d[4], 0, 0);
    case 1: return kb_tensor_of("k", kv_elems, t, KB_IN, kv_rows, s->d[4], 0, 0);
    case 2: return kb_tensor_of("v", kv_elems, t, KB_IN, kv_rows, s->d[4], 0, 0);
    /* A row's scores and weighted sum over at most Tk keys: a decode row
     * (Tq = 1, Tk = 131072, D = 128) costs 3.4e7, so the harness's budget
     * checks about 30 such rows.  The reduction behind an element is the
     * score's dot product, D long: the weighted sum over keys is an average,
     * whose error does not grow with Tk. */
    default: return kb_tensor_of("o", q_elems, t, KB_OUT, q_rows, s->d[4], s->d[4], 2.0 * s->d[3] * s->d[4]);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_attention_args *)args = (kb_attention_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], (int)s->d[4], (int)s->flags,
        (float)(1.0 / sqrt((double)s->d[4])), dev[0], dev[1], dev[2], dev[3], (int)kb_attention_shape_hkv(s)};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    kb_attention_args a;
    void *host[4] = {(void *)in[0], (void *)in[1], (void *)in[2], NULL};
    bind(s, host, &a);
    attention_reference_rows(&a, t, rows, nrows, ref);
}

/* The parser has made every field 1..INT32_MAX; sizes that overflow are
 * caught by kb_mul_dims in `tensor`. */
const char *kb_attention_validate(const kb_shape *s)
{
    return s->d[1] % kb_attention_shape_hkv(s) ? "the KV heads (the sixth field, Hkv) must divide the query heads H"
                                                : NULL;
}

const kb_op kb_op_attention = {
    .name = "attention",
    .summary = "softmax(Q K^T / sqrt(D) + mask) V, multi-head or grouped-query; f32, bf16 and f16",
    .shape_fields = "BxHxTqxTkxD[xHkv][c]",
    .nd = 5,
    .nd_max = 6,
    /* Self-attention at 4 x 16 heads over T from 128 to 8192, per head
     * size and mask; then prefill shapes of other layouts (GQA with H = 32
     * over 8 KV heads, chunked prefill with causal Tq < Tk, a
     * bottom-right mask, head dim 256); decode (Tq = 1, H = 32 over 8 KV heads, D = 128)
     * over Tk per batch: B = 64 stops at Tk = 8192 (at 32768 K alone is
     * 2^31 elements, at 131072 K and V are 69 GB in fp32, twice that with
     * the harness's pristine copies); tile-hostile shapes (Tk = 1, Tq = 1
     * with odd Tk, odd T and D). */
    .families =
        (const kb_family[]){
            {"d64", "Tk", "4x16x128x128x64,4x16x512x512x64,4x16x1024x1024x64,4x16x2048x2048x64,4x16x4096x4096x64,4x16x8192x8192x64"},
            {"d64-causal", "Tk", "4x16x128x128x64c,4x16x512x512x64c,4x16x1024x1024x64c,4x16x2048x2048x64c,4x16x4096x4096x64c,4x16x8192x8192x64c"},
            {"d128", "Tk", "4x16x128x128x128,4x16x512x512x128,4x16x1024x1024x128,4x16x2048x2048x128,4x16x4096x4096x128,4x16x8192x8192x128"},
            {"d128-causal", "Tk", "4x16x128x128x128c,4x16x512x512x128c,4x16x1024x1024x128c,4x16x2048x2048x128c,4x16x4096x4096x128c,4x16x8192x8192x128c"},
            {"prefill", NULL,
             "2x16x4096x4096x128,2x16x4096x4096x128c,4x16x128x1024x64,32x8x128x128x64,32x8x128x128x64c,"
             "2x32x4096x4096x128x8,2x32x4096x4096x128x8c,1x32x512x4096x128c,1x32x512x4096x128x8c,"
             "4x16x1024x4096x64c,2x16x4096x4096x256,2x16x4096x4096x256c"},
            {"decode-b1", "Tk", "1x32x1x1024x128x8,1x32x1x8192x128x8,1x32x1x32768x128x8,1x32x1x131072x128x8", 1},
            {"decode-b8", "Tk", "8x32x1x1024x128x8,8x32x1x8192x128x8,8x32x1x32768x128x8,8x32x1x131072x128x8"},
            {"decode-b64", "Tk", "64x32x1x1024x128x8,64x32x1x8192x128x8"},
            {"hostile", NULL,
             "2x4x1x1x64,2x4x77x77x64c,2x4x1000x1000x64,2x4x1000x1000x32,2x4x77x1000x80,2x4x1000x1000x80c,"
             "2x4x77x1x64,2x4x1x77x64x2,2x4x1x1000x64,4x32x1x1001x128x8", 1},
            {NULL}},
    .test_sizes = "1x1x1x1x64,1x2x3x5x64,2x2x17x17x64c,1x3x77x77x64,2x1x64x128x64,1x2x128x128x128c,"
                  "1x1x1000x77x64,2x2x77x77x32c,1x2x100x130x80,1x1x257x257x128c,"
                  /* GQA; causal Tq < Tk (offsets off the tiles); causal Tq > Tk (rows
                   * that see no key: zeros); decode, Tq = 1 with odd Tk, and Tq = 16 */
                  "2x8x33x70x64x2,1x4x77x300x64x2c,1x2x130x1000x128c,1x2x200x77x64c,1x4x3x1000x80x1c,"
                  "2x8x1x1x64x2,1x32x1x77x128x8,2x4x1x1001x64,1x32x1x1000x128x8c,1x32x16x1000x128x8c,"
                  "1x8x16x4099x64x2,1x4x16x5x64x2c,"
                  /* D = 256: tails, causal Tq < Tk and Tq > Tk, GQA, many key tiles, decode */
                  "2x4x77x77x256,1x2x130x200x256c,2x2x300x300x256x1c,1x2x300x100x256c,1x2x128x1000x256,"
                  "1x4x1x1000x256x2,"
                  /* more row tiles than SMs (persistent blocks take several; causal Tq > Tk: some see no key);
                   * 4.5 rounds of 32 key tiles on 132 SMs, flash_wgmma's last tiles split between blocks */
                  "4x32x260x300x128x8c,4x32x400x100x64c,1x600x1x4000x128x8",
    .baseline = {[KB_F32] = "cublas", [KB_BF16] = "cudnn", [KB_F16] = "cudnn"},
    .variants = attention_variants,
    KB_OP_CONTRACT(kb_attention_args),
    .flag_suffix = "c",
    .conventions = "the causal mask aligns to the bottom right (query i sees keys j <= i + Tk - Tq), and a query "
                   "that sees no key (causal, Tq > Tk) writes zeros, not NaN",
    .validate = kb_attention_validate,
};
