/* The tolerance policy: the only place where tolerances are set.
 *
 * Inputs are uniform in [-1, 1], so a reduction of length L has terms of
 * magnitude <= 1.  An element passes when
 *
 *     |out - ref| <= C * u * (sqrt(L) + |ref|)  +  A * u32 * L
 *
 * where u is the unit roundoff of the arithmetic the variant promises
 * (f32 2^-24, tf32 2^-11, bf16 2^-8): rounding the inputs gives errors that
 * add like a random walk (sqrt(L)), and rounding the result gives |ref|*u.
 * The second term is fp32 accumulation, which every variant uses: a running
 * sum grows like sqrt(k), so its rounding errors add up to ~u32*L.
 * C = 8 and A = 4 leave room for summation order while still failing a
 * variant that drops a single term of a long reduction in f32.
 * Over the checked rows, the relative L2 error must also stay under
 *
 *     16 * u * sqrt(L)
 *
 * which catches small systematic errors (a softmax that misses one term of
 * its sum is off by 1/C in every element, too little for the per-element
 * bound when outputs are tiny).  NaN and Inf always fail (check.c). */
#include <math.h>
#include "harness/harness.h"

#define TOL_C 8.0
#define TOL_A 4.0

static const double unit_roundoff[KB_MATH_COUNT] = {
    [KB_MATH_F32] = 0x1p-24,
    [KB_MATH_TF32] = 0x1p-11,
    [KB_MATH_BF16] = 0x1p-8,
};

double kb_unit_roundoff(kb_math m) { return unit_roundoff[m]; }

double kb_rel_l2_tolerance(kb_math m, int64_t reduction_len)
{
    double L = (double)(reduction_len < 1 ? 1 : reduction_len);
    return 2 * TOL_C * unit_roundoff[m] * sqrt(L);
}

double kb_tolerance(kb_math m, int64_t reduction_len, double ref)
{
    double L = (double)(reduction_len < 1 ? 1 : reduction_len);
    return TOL_C * unit_roundoff[m] * (sqrt(L) + fabs(ref)) + TOL_A * 0x1p-24 * L;
}
