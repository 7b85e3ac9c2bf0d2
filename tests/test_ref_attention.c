/* The attention reference on hand-computed cases: one key, a dominant
 * score, the causal mask, and Tq != Tk. */
#include <math.h>
#include "harness/harness.h"
#include "kernels/attention.h"
#include "tests/check.h"

static kb_attention_args args(int Tq, int Tk, int D, int causal, const float *q, const float *k,
                              const float *v)
{
    return (kb_attention_args){1, 1, Tq, Tk, D, causal, (float)(1 / sqrt(D)), q, k, v, NULL};
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
    kb_attention_args two_heads = {1, 2, 1, 1, 1, 0, 1, qh, kh, vh, NULL};
    const int64_t row1[] = {1};
    attention_reference_rows(&two_heads, KB_F32, row1, 1, o);
    CHECK(o[0] == 5);

    /* The op counts: FLOPs halve under the causal mask, bytes do not. */
    kb_shape s = {5, {2, 3, 64, 64, 32}, 0}, sc = s;
    sc.flags = 1;
    CHECK(kb_op_attention.flops(&s) == 4.0 * 6 * 64 * 64 * 32);
    CHECK(kb_op_attention.flops(&sc) == kb_op_attention.flops(&s) / 2);
    CHECK(kb_op_attention.bytes(&sc, KB_BF16) == kb_op_attention.bytes(&s, KB_F32) / 2);
    return CHECK_DONE();
}
