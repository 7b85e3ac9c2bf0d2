/* The transformer's C reference on a case small enough to check by hand:
 * d_model = 4, two heads, one encoder and one decoder layer.  Q and K
 * projections are zero, so attention is a uniform average; V and the output
 * projection are identities; the FFN is zero; norms are gamma 1, beta 0.
 * Every output is then a LayerNorm of sums of input rows, worked out below.
 * Also the GPU forward's choice of kernels by name, which needs no GPU:
 * unknown, bf16 and wrong-op names, shapes a variant refuses, and GPUs too
 * old for a variant. */
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "model/gpu.h"
#include "model/transformer.h"
#include "tests/check.h"

enum { D = 4, FF = 2 };

static float zeros[3 * D * D], ones[D], identity_in[3 * D * D], identity_out[D * D];

static kb_tf_attn averaging_attention(void)
{
    /* in_proj rows 2d..3d (the V block) are the identity; Q and K rows zero. */
    for (int i = 0; i < D; ++i) {
        identity_in[(2 * D + i) * D + i] = 1;
        identity_out[i * D + i] = 1;
    }
    return (kb_tf_attn){identity_in, zeros, identity_out, zeros};
}

/* LayerNorm of one row with gamma 1, beta 0, eps 1e-5. */
static void layernorm(const double *x, double *y)
{
    double mean = (x[0] + x[1] + x[2] + x[3]) / 4, var = 0;
    for (int c = 0; c < D; ++c)
        var += (x[c] - mean) * (x[c] - mean) / 4;
    for (int c = 0; c < D; ++c)
        y[c] = (x[c] - mean) / sqrt(var + 1e-5);
}

static void check_row(const float *got, const double *want)
{
    for (int c = 0; c < D; ++c)
        CHECK_NEAR(got[c], want[c], 1e-4);
}

/* kb_tf_kernels_check, _fit and _cc: NULL, or one line holding `want`. */
static void expect_refusal(const char *got, const char *want)
{
    printf("%s -> %s\n", want ? want : "(accepted)", got ? got : "accepted");
    CHECK(want ? got && strstr(got, want) && !strchr(got, '\n') : !got);
}

static void kernel_choice(void)
{
    char err[256];
    const kb_tf_kernels defaults = {NULL, NULL, NULL};
    CHECK(!strcmp(kb_tf_kernel_name(NULL, 0), "flash") && !strcmp(kb_tf_kernel_name(&defaults, 1), "fused") &&
          !strcmp(kb_tf_kernel_name(&defaults, 2), "welford"));
    expect_refusal(kb_tf_kernels_check(&defaults, err, sizeof err), NULL);
    const kb_tf_kernels unknown = {"nope", NULL, NULL}, bf16 = {"flash_mma", NULL, NULL},
                        wrong_op = {NULL, "welford", NULL}, other_op = {NULL, NULL, "fused"};
    expect_refusal(kb_tf_kernels_check(&unknown, err, sizeof err), "no attention variant 'nope'");
    expect_refusal(kb_tf_kernels_check(&bf16, err, sizeof err), "attention 'flash_mma' stores bf16");
    expect_refusal(kb_tf_kernels_check(&wrong_op, err, sizeof err), "no add_layernorm variant 'welford'");
    expect_refusal(kb_tf_kernels_check(&other_op, err, sizeof err), "no layernorm variant 'fused'");

    /* d_head 64, then 4: flash_3xtf32 needs a multiple of 8. */
    const kb_tf_config wide = {512, 8, 2048, 1, 1, 1e-5f, 1}, narrow = {512, 128, 2048, 1, 1, 1e-5f, 1};
    const kb_tf_kernels tf32x3 = {"flash_3xtf32", "unfused", "warp"};
    for (int mode = 0; mode < 3; ++mode) {
        expect_refusal(kb_tf_kernels_fit(&defaults, &wide, (kb_tf_mode)mode, 2, 7, 5), NULL);
        expect_refusal(kb_tf_kernels_fit(&tf32x3, &wide, (kb_tf_mode)mode, 2, 7, 5), NULL);
        expect_refusal(kb_tf_kernels_fit(&tf32x3, &narrow, (kb_tf_mode)mode, 2, 7, 5),
                       "attention flash_3xtf32 at the model's shape: D must be a multiple of 8");
    }
    expect_refusal(kb_tf_kernels_fit(&bf16, &wide, KB_TF_ENCODER, 2, 7, 5), "stores bf16");

    /* flash and flash_3xtf32 need sm_80; cuBLAS and the norms any GPU. */
    const kb_tf_kernels cublas = {"cublas", "unfused", "warp"};
    expect_refusal(kb_tf_kernels_cc(&defaults, KB_TF_ENCODER, 75),
                   "attention flash needs compute capability 8.0, the GPU has 7.5");
    expect_refusal(kb_tf_kernels_cc(&tf32x3, KB_TF_DECODER, 75),
                   "attention flash_3xtf32 needs compute capability 8.0, the GPU has 7.5");
    expect_refusal(kb_tf_kernels_cc(&defaults, KB_TF_SEQ2SEQ, 80), NULL);
    expect_refusal(kb_tf_kernels_cc(&cublas, KB_TF_SEQ2SEQ, 60), NULL);
    /* long_row, as the final norm, needs sm_90, and only seq2seq runs it;
     * builds without sm_90 leave it out of the table. */
    const kb_tf_kernels long_row = {"cublas", NULL, "long_row"};
    if (kb_find_variant(kb_find_op("layernorm"), "long_row", KB_F32)) {
        expect_refusal(kb_tf_kernels_cc(&long_row, KB_TF_SEQ2SEQ, 89),
                       "layernorm long_row needs compute capability 9.0, the GPU has 8.9");
        expect_refusal(kb_tf_kernels_cc(&long_row, KB_TF_DECODER, 75), NULL);
        expect_refusal(kb_tf_kernels_cc(&long_row, KB_TF_SEQ2SEQ, 90), NULL);
    } else
        expect_refusal(kb_tf_kernels_cc(&long_row, KB_TF_SEQ2SEQ, 90), "no layernorm variant 'long_row'");
}

int main(void)
{
    kernel_choice();
    for (int i = 0; i < D; ++i)
        ones[i] = 1;
    kb_tf_attn attn = averaging_attention();
    kb_tf_norm norm = {ones, zeros};
    kb_tf_layer layer = {attn, attn, zeros, zeros, zeros, zeros, norm, norm, norm};
    kb_tf_model m = {{D, 2, FF, 1, 1, 1e-5f, 1}, &layer, &layer, norm, norm, NULL, NULL};

    const float src[2 * D] = {1, 2, 3, 4, 3, 2, 1, 0}, tgt[2 * D] = {1, 2, 3, 4, 0, 0, 0, 4};
    float out[2 * D];
    kb_tf_reference(&m, 1, 2, 2, src, tgt, out);

    /* Encoder: each row plus the mean row [2 2 2 2], normalized; the second
     * row's result is the first's negated, so their mean, what cross
     * attention adds in the decoder, is zero. */
    /* Decoder, causal: row 0 sees only itself: LN(2 y0) = LN(y0).  Row 1
     * sees both: LN(y1 + (y0 + y1) / 2) = LN([0.5 1 1.5 8]).  Cross
     * attention adds 0 and the FFN adds 0, so further norms keep them. */
    double y0[D], y1[D], in1[D] = {0.5, 1, 1.5, 8}, in0[D] = {1, 2, 3, 4};
    layernorm(in0, y0);
    layernorm(in1, y1);
    check_row(out, y0);
    check_row(out + D, y1);
    CHECK_NEAR(y1[3], 5.25 / sqrt(9.3125 + 1e-5), 1e-12); /* the hand arithmetic */

    /* Without the mask, row 0 sees row 1 too: LN([1.5 3 4.5 8]). */
    m.cfg.causal = 0;
    kb_tf_reference(&m, 1, 2, 2, src, tgt, out);
    double unmasked[D], in0u[D] = {1.5, 3, 4.5, 8};
    layernorm(in0u, unmasked);
    check_row(out, unmasked);

    /* Seeded weights: the count matches the layout, and the forward is finite. */
    kb_tf_config c = {8, 2, 16, 2, 2, 1e-5f, 1};
    kb_tf_model r;
    /* per encoder layer: attention 4d^2 + 4d, FFN 2 d ff + ff + d, two norms 4d;
     * per decoder layer: two attentions, the FFN, three norms 6d; final norms 4d. */
    CHECK(kb_tf_weight_count(&c) == 2 * (288 + 280 + 32) + 2 * (2 * 288 + 280 + 48) + 32);
    CHECK(kb_tf_init_random(&r, &c, 7) == 0);
    float s8[3 * 8], t8[2 * 8], o8[2 * 8];
    for (int i = 0; i < 24; ++i)
        s8[i] = t8[i % 16] = (float)sin(i);
    kb_tf_reference(&r, 1, 3, 2, s8, t8, o8);
    int finite = 1;
    for (int i = 0; i < 16; ++i)
        finite &= isfinite(o8[i]);
    CHECK(finite);
    kb_tf_free(&r);
    return CHECK_DONE();
}
