/* The attention reference on hand-computed cases: one key, a dominant
 * score, the causal mask, and Tq != Tk; grouped-query attention against
 * the same heads with repeated KV heads, the bottom-right causal mask
 * against the last rows of the square one, decode (Tq = 1), rows that see
 * no key; the op's counts and its shape syntax. */
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/attention.h"
#include "tests/check.h"

static kb_attention_args args(int Tq, int Tk, int D, int causal, const float *q, const float *k,
                              const float *v)
{
    return (kb_attention_args){1, 1, Tq, Tk, D, causal, (float)(1 / sqrt(D)), q, k, v, NULL, 1};
}

int main(void)
{
    double o[6];
    /* One key: the output is its value row, whatever the score. */
    const float q1[] = {1, 2}, k1[] = {3, -1}, v1[] = {0.25f, -0.5f};
    kb_attention_args a = args(1, 1, 2, 0, q1, k1, v1);
    const int64_t row0[] = {0}, rows01[] = {0, 1};
    attention_reference_rows(&a, KB_F32, row0, 1, o);
    CHECK(o[0] == 0.25 && o[1] == -0.5);

    /* D = 1, two keys with scores 0 and ln 3: weights 1/4 and 3/4. */
    const float q2[] = {1}, k2[] = {0, (float)log(3.0)}, v2[] = {4, 8};
    a = args(1, 2, 1, 0, q2, k2, v2);
    attention_reference_rows(&a, KB_F32, row0, 1, o);
    CHECK_NEAR(o[0], 0.25 * 4 + 0.75 * 8, 1e-6);

    /* A dominant score: the output is (nearly) that key's value. */
    const float k3[] = {0, 60};
    a = args(1, 2, 1, 0, q2, k3, v2);
    attention_reference_rows(&a, KB_F32, row0, 1, o);
    CHECK_NEAR(o[0], 8, 1e-20 + 8 * exp(-60));

    /* Causal, T = 2: query 0 sees only key 0, query 1 sees both. */
    const float qc[] = {1, 1}, kc[] = {0, (float)log(3.0)}, vc[] = {4, 8};
    a = args(2, 2, 1, 1, qc, kc, vc);
    attention_reference_rows(&a, KB_F32, rows01, 2, o);
    CHECK(o[0] == 4);
    CHECK_NEAR(o[1], 7, 1e-6);

    /* Cross-attention, Tq = 1 < Tk = 3, equal scores: the mean of the values. */
    const float kx[] = {1, 1, 1}, vx[] = {1, 2, 6};
    a = args(1, 3, 1, 0, q2, kx, vx);
    attention_reference_rows(&a, KB_F32, row0, 1, o);
    CHECK_NEAR(o[0], 3, 1e-12);

    /* Rows index (b, h, i): the second head's query reads the second head's keys. */
    const float qh[] = {0, 0}, kh[] = {0, 0}, vh[] = {1, 5};
    kb_attention_args two_heads = {1, 2, 1, 1, 1, 0, 1, qh, kh, vh, NULL, 2};
    const int64_t row1[] = {1};
    attention_reference_rows(&two_heads, KB_F32, row1, 1, o);
    CHECK(o[0] == 5);

    /* GQA: B = 2, H = 4 query heads over Hkv = 2 KV heads (group 2) equals
     * multi-head attention with each KV head repeated for its two query
     * heads; exactly, since each row does the same arithmetic. */
    {
        enum { B = 2, H = 4, HKV = 2, TQ = 3, TK = 5, D = 4, G = H / HKV };
        static float q[B * H * TQ * D], k[B * HKV * TK * D], v[B * HKV * TK * D];
        static float kr[B * H * TK * D], vr[B * H * TK * D];
        for (int i = 0; i < B * H * TQ * D; ++i)
            q[i] = (float)sin(0.7 * i + 0.1);
        for (int i = 0; i < B * HKV * TK * D; ++i) {
            k[i] = (float)cos(1.3 * i);
            v[i] = (float)sin(0.37 * i - 2);
        }
        for (int b = 0; b < B; ++b)
            for (int h = 0; h < H; ++h)
                for (int e = 0; e < TK * D; ++e) {
                    kr[((b * H + h) * TK) * D + e] = k[((b * HKV + h / G) * TK) * D + e];
                    vr[((b * H + h) * TK) * D + e] = v[((b * HKV + h / G) * TK) * D + e];
                }
        int64_t rows[B * H * TQ];
        for (int r = 0; r < B * H * TQ; ++r)
            rows[r] = r;
        static double og[B * H * TQ * D], om[B * H * TQ * D];
        for (int causal = 0; causal < 2; ++causal) {
            kb_attention_args g = {B, H, TQ, TK, D, causal, 0.5f, q, k, v, NULL, HKV};
            kb_attention_args m = {B, H, TQ, TK, D, causal, 0.5f, q, kr, vr, NULL, 0}; /* Hkv 0: H */
            attention_reference_rows(&g, KB_F32, rows, B * H * TQ, og);
            attention_reference_rows(&m, KB_F32, rows, B * H * TQ, om);
            CHECK(memcmp(og, om, sizeof og) == 0);
        }
        /* Hand check: query head 3 of batch 1 reads KV head 1 of batch 1.
         * With Tk = 1 the output is that head's V row. */
        kb_attention_args one = {B, H, 1, 1, D, 0, 0.5f, q, k, v, NULL, HKV};
        const int64_t r7[] = {1 * H + 3};
        attention_reference_rows(&one, KB_F32, r7, 1, o);
        for (int d = 0; d < D; ++d)
            CHECK(o[d] == v[(1 * HKV + 1) * D + d]);
    }

    /* The bottom-right causal mask: Tq = 2 < Tk = 5 gives the last two rows
     * of the Tq = Tk = 5 causal case (query i sees keys j <= i + 3). */
    {
        enum { T = 5, D = 3 };
        float q[T * D], k[T * D], v[T * D];
        for (int i = 0; i < T * D; ++i) {
            q[i] = (float)sin(0.9 * i);
            k[i] = (float)cos(0.45 * i + 1);
            v[i] = (float)(i % 7) - 3;
        }
        double sq[T * D], part[2 * D];
        const int64_t all[] = {0, 1, 2, 3, 4};
        a = args(T, T, D, 1, q, k, v);
        attention_reference_rows(&a, KB_F32, all, T, sq);
        a = args(2, T, D, 1, q + 3 * D, k, v);
        attention_reference_rows(&a, KB_F32, rows01, 2, part);
        CHECK(memcmp(part, sq + 3 * D, sizeof part) == 0);
        /* Decode, Tq = 1: causal sees every key, as without the mask. */
        double dec_c[D], dec[D];
        a = args(1, T, D, 1, q + 4 * D, k, v);
        attention_reference_rows(&a, KB_F32, row0, 1, dec_c);
        a = args(1, T, D, 0, q + 4 * D, k, v);
        attention_reference_rows(&a, KB_F32, row0, 1, dec);
        CHECK(memcmp(dec_c, dec, sizeof dec) == 0 && memcmp(dec, sq + 4 * D, sizeof dec) == 0);
        /* Tq = 4 > Tk = 2: rows 0 and 1 see no key (zeros), row 2 sees key 0
         * only (its value row), row 3 both. */
        double over[4 * D];
        const int64_t four[] = {0, 1, 2, 3};
        a = args(4, 2, D, 1, q, k, v);
        attention_reference_rows(&a, KB_F32, four, 4, over);
        for (int d = 0; d < D; ++d) {
            CHECK(over[d] == 0 && over[D + d] == 0);
            CHECK(over[2 * D + d] == v[d]);
        }
        a = args(2, 2, D, 1, q + 2 * D, k, v);
        attention_reference_rows(&a, KB_F32, rows01, 2, part);
        CHECK(memcmp(part, over + 2 * D, sizeof part) == 0);
    }

    /* Decode by hand: Tq = 1, Tk = 3, equal scores under the causal mask:
     * the mean of the values. */
    a = args(1, 3, 1, 1, q2, kx, vx);
    attention_reference_rows(&a, KB_F32, row0, 1, o);
    CHECK_NEAR(o[0], 3, 1e-12);

    /* The op counts: FLOPs halve under the causal mask, bytes do not. */
    kb_shape s = {5, {2, 3, 64, 64, 32}, 0}, sc = s;
    sc.flags = 1;
    CHECK(kb_op_attention.flops(&s) == 4.0 * 6 * 64 * 64 * 32);
    CHECK(kb_op_attention.flops(&sc) == kb_op_attention.flops(&s) / 2);
    CHECK(kb_op_bytes(&kb_op_attention, &sc, KB_BF16) == kb_op_bytes(&kb_op_attention, &s, KB_F32) / 2);
    /* Causal Tq < Tk: Tq*Tk - Tq^2/2 pairs per head; Tq > Tk: Tk^2/2;
     * Tq = 1: Tk - 1/2 (the diagonal pair at half, as for Tq = Tk). */
    kb_shape chunk = {5, {1, 32, 512, 4096, 128}, 1}, over = {5, {1, 2, 100, 40, 16}, 1};
    CHECK(kb_op_attention.flops(&chunk) == 4.0 * 32 * 128 * (512.0 * 4096 - 512.0 * 512 / 2));
    CHECK(kb_op_attention.flops(&over) == 4.0 * 2 * 16 * (40.0 * 40 / 2));
    kb_shape dec1 = {5, {1, 1, 1, 8, 2}, 1};
    CHECK(kb_op_attention.flops(&dec1) == 4.0 * 2 * 7.5);

    /* GQA's counts and tensors: K and V at Hkv heads. */
    kb_shape gqa = {6, {8, 32, 1, 1024, 128, 8}, 0};
    CHECK(kb_op_attention.flops(&gqa) == 4.0 * 8 * 32 * 1024 * 128);
    CHECK(kb_op_bytes(&kb_op_attention, &gqa, KB_BF16) == 2.0 * 8 * 128 * (2.0 * 32 + 2.0 * 8 * 1024));
    CHECK(kb_op_attention.tensor(&gqa, KB_F32, 0).elems == 8 * 32 * 128);
    CHECK(kb_op_attention.tensor(&gqa, KB_F32, 1).elems == 8 * 8 * 1024 * 128);
    CHECK(kb_op_attention.tensor(&gqa, KB_F32, 2).rows == 8 * 8 * 1024);
    CHECK(kb_op_attention.tensor(&gqa, KB_F32, 3).rows == 8 * 32);
    kb_attention_args bound;
    void *none[4] = {NULL, NULL, NULL, NULL};
    kb_op_attention.bind(&gqa, none, &bound);
    CHECK(bound.Hkv == 8 && kb_attention_group(&bound) == 4);
    kb_op_attention.bind(&s, none, &bound);
    CHECK(bound.Hkv == 3 && kb_attention_group(&bound) == 1);

    /* The shape syntax: an optional sixth field, Hkv, dividing H. */
    const kb_op *op = kb_find_op("attention");
    kb_shape p;
    char err[256], text[128];
    CHECK(kb_parse_shape(op, "2x32x1x1024x128x8", &p, err, sizeof err) == 0 && p.nd == 6 && p.d[5] == 8);
    CHECK(kb_parse_shape(op, "1x32x512x4096x128x8c", &p, err, sizeof err) == 0 && p.flags == 1);
    kb_format_shape(op, &p, text, sizeof text);
    CHECK(strcmp(text, "1x32x512x4096x128x8c") == 0);
    CHECK(kb_parse_shape(op, "1x32x512x4096x128c", &p, err, sizeof err) == 0 && p.nd == 5);
    CHECK(kb_parse_shape(op, "1x4x8x3x16c", &p, err, sizeof err) == 0); /* Tq > Tk causal */
    CHECK(kb_parse_shape(op, "1x32x1x64x128x5", &p, err, sizeof err) != 0 && strstr(err, "must divide"));
    CHECK(kb_parse_shape(op, "1x32x1x64x128x64", &p, err, sizeof err) != 0 && strstr(err, "must divide"));
    CHECK(kb_parse_shape(op, "1x32x1x64x128x0", &p, err, sizeof err) != 0);
    CHECK(kb_parse_shape(op, "1x32x1x64x128x8x2", &p, err, sizeof err) != 0 && strstr(err, "expected 5 to 6"));
    CHECK(kb_parse_shape(op, "1x32x1x64", &p, err, sizeof err) != 0 && strstr(err, "malformed"));
    /* Sizes that overflow: the harness refuses them (kb_mul_dims gives -1). */
    CHECK(kb_parse_shape(op, "4x8x1x2147483647x2147483647x8", &p, err, sizeof err) == 0);
    CHECK(kb_op_attention.tensor(&p, KB_F32, 1).elems < 0 && kb_op_attention.tensor(&p, KB_F32, 0).elems > 0);

    /* The reference reads each 16-bit type as stored: values that bf16 and
     * f16 hold exactly give f32's output, bit for bit. */
    enum { T = 5, D = 8, N = T * D };
    float qkv[3][N];
    for (int k = 0; k < 3; ++k)
        for (int e = 0; e < N; ++e)
            qkv[k][e] = (float)((e * 7 + k * 3) % 17 - 8) / 8;
    double want[N], got[N];
    int64_t rows[T];
    for (int r = 0; r < T; ++r)
        rows[r] = r;
    a = args(T, T, D, 1, qkv[0], qkv[1], qkv[2]);
    attention_reference_rows(&a, KB_F32, rows, T, want);
    const kb_dtype halves[] = {KB_BF16, KB_F16};
    for (int h = 0; h < 2; ++h) {
        uint16_t stored[3][N];
        for (int k = 0; k < 3; ++k)
            kb_store_floats(halves[h], qkv[k], stored[k], N);
        kb_attention_args a16 = a;
        a16.q = stored[0], a16.k = stored[1], a16.v = stored[2];
        attention_reference_rows(&a16, halves[h], rows, T, got);
        CHECK(memcmp(want, got, sizeof want) == 0);
    }
    return CHECK_DONE();
}
