/* The tolerance policy: what passes, what fails, and how it scales. */
#include <math.h>
#include "harness/harness.h"
#include "tests/check.h"

static kb_check compare(const float *out, const double *ref, int n, kb_math m, int64_t L)
{
    kb_check c;
    kb_compare_rows(out, KB_F32, ref, n, m, L, &c);
    return c;
}

int main(void)
{
    /* Scales with the reduction length, and looser for lower precision. */
    CHECK(kb_tolerance(KB_MATH_F32, 4096, 0) > kb_tolerance(KB_MATH_F32, 64, 0));
    CHECK(kb_tolerance(KB_MATH_TF32, 4096, 0) > 100 * kb_tolerance(KB_MATH_F32, 4096, 0));
    CHECK(kb_tolerance(KB_MATH_BF16, 64, 1) > 100 * kb_tolerance(KB_MATH_F32, 64, 1));
    /* bf16 inputs reach the reference already rounded: its bound does not grow with sqrt(L). */
    CHECK(kb_tolerance(KB_MATH_BF16, 4096, 0) < 2 * kb_tolerance(KB_MATH_BF16, 1, 0));
    CHECK(kb_tolerance(KB_MATH_F32, 16, 100) > kb_tolerance(KB_MATH_F32, 16, 1));
    /* 3xtf32 promises fp32 accuracy and gets no slack for it. */
    CHECK(kb_tolerance(KB_MATH_3XTF32, 4096, 1) == kb_tolerance(KB_MATH_F32, 4096, 1));
    CHECK(kb_rel_l2_tolerance(KB_MATH_3XTF32, 64) == kb_rel_l2_tolerance(KB_MATH_F32, 64));

    /* f32, K = 4096: an fp32-rounding-sized error passes, a dropped term (~0.25) fails. */
    double ref[3] = {21.0, -3.5, 0.125};
    float ok[3] = {21.0f + 2e-4f, -3.5f, 0.125f};
    kb_check c = compare(ok, ref, 3, KB_MATH_F32, 4096);
    CHECK(c.pass && c.bad_elems == 0);
    CHECK_NEAR(c.max_abs_err, 2e-4, 1e-5);

    float dropped[3] = {21.0f - 0.25f, -3.5f, 0.125f};
    c = compare(dropped, ref, 3, KB_MATH_F32, 4096);
    CHECK(!c.pass && c.bad_elems == 1);

    /* The same error is within TF32's tolerance at that length. */
    float tf32_err[3] = {21.0f + 0.05f, -3.5f, 0.125f};
    CHECK(!compare(tf32_err, ref, 3, KB_MATH_F32, 4096).pass);
    CHECK(compare(tf32_err, ref, 3, KB_MATH_TF32, 4096).pass);

    /* NaN and Inf always fail, however loose the tolerance. */
    float nan_out[3] = {21.0f, NAN, 0.125f}, inf_out[3] = {INFINITY, -3.5f, 0.125f};
    c = compare(nan_out, ref, 3, KB_MATH_BF16, 1 << 20);
    CHECK(!c.pass && c.bad_elems == 1);
    CHECK(!compare(inf_out, ref, 3, KB_MATH_BF16, 1 << 20).pass);

    /* A softmax row of C = 1024 that misses one term of its sum: every element
     * is off by 1/C relative, within the per-element bound but not the L2 bound. */
    enum { C = 1024 };
    static double sm_ref[C];
    static float sm_out[C];
    for (int i = 0; i < C; ++i) {
        sm_ref[i] = 1.0 / C;
        sm_out[i] = (float)(sm_ref[i] * (1.0 + 1.0 / C));
    }
    c = compare(sm_out, sm_ref, C, KB_MATH_F32, C);
    CHECK(c.bad_elems == 0 && !c.pass);
    for (int i = 0; i < C; ++i)
        sm_out[i] = (float)sm_ref[i];
    CHECK(compare(sm_out, sm_ref, C, KB_MATH_F32, C).pass);
    CHECK(kb_rel_l2_tolerance(KB_MATH_TF32, 64) > kb_rel_l2_tolerance(KB_MATH_F32, 64));

    /* Relative L2 error: one element off by 1 of a reference with norm 5. */
    double r2[2] = {3, 4};
    float o2[2] = {3, 5};
    c = compare(o2, r2, 2, KB_MATH_BF16, 1);
    CHECK_NEAR(c.rel_l2_err, 0.2, 1e-12);
    CHECK(!c.pass);
    return CHECK_DONE();
}
