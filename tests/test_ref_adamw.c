/* adamw's reference through the op's contract, on a step of 3 elements
 * worked out by hand (to 17 digits in decimal arithmetic, apart from the
 * C), once with a gradient whose norm is under max_norm = 1 and once with
 * one over it: the clip leaves the first alone and scales the second by
 * 1 / (norm + 1e-6).  Element 2 has grad and v zero, so its denominator is
 * eps alone: a step of lr / (1 - 0.9^10) * 0.225 / 1e-8, some 34545. */
#include <math.h>
#include "harness/harness.h"
#include "ops/adamw.h"
#include "tests/check.h"

enum { N = 3 };

typedef struct {
    double master[N], m[N], v[N], norm;
} expected_step;

static const float master[N] = {1.0f, -0.5f, 0.25f}, m[N] = {0.125f, 0.0f, -0.25f},
                   v[N] = {0.0625f, 0.015625f, 0.0f}; /* exact in fp32, as the digits below assume */

static int near(double got, double want) { return fabs(got - want) <= 1e-12 * fmax(1, fabs(want)); }

/* Output `out` of the op's reference for gradient g stored as dtype t. */
static void reference(kb_dtype t, const float *g, int out, double *ref)
{
    const kb_shape s = {1, {N}};
    uint16_t bf[N];
    const void *in[KB_ADW_TENSORS] = {g, master, m, v};
    if (t == KB_BF16) {
        kb_store_floats(KB_BF16, g, bf, N);
        in[KB_ADW_GRAD] = bf;
    }
    const int64_t row0 = 0;
    kb_op_adamw.reference(&s, t, in, out, &row0, 1, ref);
}

static void check_step(const float *g, const expected_step *want)
{
    for (kb_dtype t = KB_F32; t <= KB_BF16; ++t) { /* the gradients are exact in bf16 */
        double got[N];
        reference(t, g, KB_ADW_NORM, got);
        CHECK(near(got[0], want->norm));
        reference(t, g, KB_ADW_MASTER, got);
        for (int i = 0; i < N; ++i)
            CHECK(near(got[i], want->master[i]));
        reference(t, g, KB_ADW_PARAM, got); /* master' in double: the check allows its bf16 rounding */
        for (int i = 0; i < N; ++i)
            CHECK(near(got[i], want->master[i]));
        reference(t, g, KB_ADW_M, got);
        for (int i = 0; i < N; ++i)
            CHECK(near(got[i], want->m[i]));
        reference(t, g, KB_ADW_V, got);
        for (int i = 0; i < N; ++i)
            CHECK(near(got[i], want->v[i]));
    }
}

/* norm 0.559: no clip, m' = 0.9 m + 0.1 g exactly as written. */
static void step_under_max_norm(void)
{
    static const float g[N] = {0.5f, -0.25f, 0.0f};
    static const expected_step want = {
        {0.99931050033497634, -0.49976861549197077, 34545.398462721664},
        {0.1625, -0.025, -0.225},
        {0.071875, 0.01796875, 0.0},
        0.55901699437494742,
    };
    check_step(g, &want);
    CHECK(adamw_clip_scale(0.5 * 0.5 + 0.25 * 0.25) == 1);
}

/* norm sqrt(5): g scaled by 1 / (sqrt(5) + 1e-6) = 0.44721339550004738
 * (m'[0] would be 0.3125 unclipped). */
static void step_over_max_norm(void)
{
    static const float g[N] = {2.0f, -1.0f, 0.0f};
    static const expected_step want = {
        {0.99927697030206744, -0.49967405315968603, 34545.398462721664},
        {0.20194267910000948, -0.044721339550004738, -0.225},
        {0.099374964222936360, 0.024843741055734090, 0.0},
        2.2360679774997897,
    };
    check_step(g, &want);
    CHECK(near(adamw_clip_scale(5), 0.44721339550004738));
}

/* The contract: fp32 state, bf16 param whatever the gradient's dtype, and
 * the bytes of each tensor once, an inout twice. */
static void contract(void)
{
    const kb_shape s = {1, {N}};
    for (kb_dtype t = KB_F32; t <= KB_BF16; ++t) {
        CHECK(kb_op_adamw.tensor(&s, t, KB_ADW_GRAD).dtype == t);
        CHECK(kb_op_adamw.tensor(&s, t, KB_ADW_MASTER).role == KB_INOUT);
        CHECK(kb_op_adamw.tensor(&s, t, KB_ADW_V).dtype == KB_F32);
        CHECK(kb_op_adamw.tensor(&s, t, KB_ADW_PARAM).dtype == KB_BF16);
        CHECK(kb_op_adamw.tensor(&s, t, KB_ADW_NORM).reduction_len == N);
    }
    CHECK(kb_op_bytes(&kb_op_adamw, &s, KB_BF16) == N * 28 + 4);
    CHECK(kb_op_bytes(&kb_op_adamw, &s, KB_F32) == N * 30 + 4);
}

int main(void)
{
    step_under_max_norm();
    step_over_max_norm();
    contract();
    return CHECK_DONE();
}
