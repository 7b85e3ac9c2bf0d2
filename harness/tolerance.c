/* The tolerance policy: the only place where tolerances are set.
 *
 * Inputs are uniform in [-1, 1], so a reduction of length L has terms of
 * magnitude <= 1.  An element passes when
 *
 *     |out - ref| <= 8 * (u_in * sqrt(L) + u_out * (1 + |ref|))  +  4 * u32 * L
 *
 * u_in is the rounding the variant applies to its inputs: tf32 math rounds
 * fp32 inputs to 10 mantissa bits, and those errors add like a random walk
 * (sqrt(L)).  bf16 variants get inputs already rounded to bf16, and the
 * reference uses the same rounded values, so u_in is 0 there.  u_out is the
 * rounding of results and intermediates bounded by the output's magnitude
 * (a bf16 output, bf16 attention probabilities): bf16 keeps 8 significant
 * bits, so rounding to nearest is off by at most 2^-8 relative; f16 keeps
 * 11, 2^-11 (the element types' table, harness/dtype.c, holds them).  An
 * output stored in a type coarser than its arithmetic's results (fp32 math
 * writing a bf16 copy, as adamw's parameters) takes that type's rounding as
 * u_out: a stored value is no closer to the reference than one rounding to
 * its type, while the op's other outputs keep the arithmetic's bound.  The last term is fp32
 * accumulation, which every variant uses: a running sum grows like sqrt(k),
 * so its rounding errors add up to about u32 * L.  The factors 8 and 4
 * leave room for summation order while still failing a variant that drops a
 * single term of a long f32 reduction.
 *
 * A bf16 matmul (products of bf16 values are exact in fp32, summed in fp32,
 * the result rounded to bf16) lands within an eighth of its bound: the output
 * rounding is 2^-8 |ref| against 8 * 2^-8 (1 + |ref|).  A kernel that drops
 * one K-tile of 32 still fails: the missing terms sum to ~sqrt(32/9) = 1.9
 * while the bound is ~|ref| / 32 with |ref| ~ sqrt(K/9), which is about 1 at
 * K = 8192 (tests/test_tolerance.c measures both margins for K 64..8192).
 *
 * fp8 products are exact, but Hopper's fp8 MMA accumulates in some 14
 * bits, truncating (u_acc = 2^-13), so kbench's fp8 kernels promise a
 * promotion of their partial sums into fp32 every P = 128 of the
 * reduction at most.  Within a block the truncations share a sign and add
 * up to about u_acc P |partial|, P |partial| ~ P sqrt(P) / 3; across the
 * blocks they add like a random walk.  So fp8 adds
 *
 *     4 * u_acc * P * sqrt(ceil(L / P))      (P = min(L, 128))
 *
 * to the absolute term, with u_in = 0 (the inputs are fp8 already and the
 * reference takes the same values).  On the harness's inputs a correct
 * kernel lands at a tenth of the bound; one that never promotes is off by
 * about u_acc L^1.5 / 5, 9 times the bound or more from K = 4096, and one
 * that drops a block of 128 by some sqrt(128 / 9) = 3.8, 14 times it or
 * more (tests/test_tolerance.c measures all three).
 *
 * Over the checked rows, the relative L2 error must also stay under
 *
 *     16 * (u_in * sqrt(L) + u_out + u_acc * sqrt(P))
 *
 * which catches small systematic errors (a softmax that misses one term of
 * its sum is off by 1/C in every element, too little for the per-element
 * bound when outputs are tiny).  NaN and Inf always fail (check.c), and
 * integer outputs (indices, token ids) compare exactly. */
#include <math.h>
#include "harness/harness.h"

#define U32 0x1p-24
#define FP8_ACC 0x1p-13 /* the fp8 MMA's accumulator, truncating to some 14 bits */
#define FP8_PROMOTION 128 /* the longest run it sums before fp32 takes over */

typedef struct {
    double in, out;
    double acc; /* u_acc: a narrower accumulator than fp32's, in blocks of FP8_PROMOTION; 0 for none */
} roundoffs;

/* u_in, u_out and u_acc of each arithmetic, from the element types' table. */
static roundoffs unit_roundoff(kb_math m)
{
    switch (m) {
    case KB_MATH_TF32: return (roundoffs){0x1p-11, U32, 0};
    case KB_MATH_BF16: return (roundoffs){0, kb_dtype_unit_roundoff(KB_BF16), 0};
    case KB_MATH_F16: return (roundoffs){0, kb_dtype_unit_roundoff(KB_F16), 0};
    case KB_MATH_FP8: return (roundoffs){0, U32, FP8_ACC};
    default: return (roundoffs){U32, U32, 0}; /* f32, and 3xTF32, which promises fp32 accuracy */
    }
}

/* The same for an output stored as t: one rounding to t at the least (0
 * for i32, which leaves the arithmetic's). */
static roundoffs output_roundoff(kb_math m, kb_dtype t)
{
    roundoffs u = unit_roundoff(m);
    u.out = fmax(u.out, kb_dtype_unit_roundoff(t));
    return u;
}

static double length(int64_t reduction_len) { return (double)(reduction_len < 1 ? 1 : reduction_len); }

/* The blocks of at most FP8_PROMOTION a reduction of L takes: their
 * length P and how many, for the narrow accumulator's term. */
static double block_len(double L) { return fmin(L, FP8_PROMOTION); }
static double blocks(double L) { return ceil(L / FP8_PROMOTION); }

static double rel_l2(roundoffs u, int64_t reduction_len)
{
    const double L = length(reduction_len);
    return 16 * (u.in * sqrt(L) + u.out + u.acc * sqrt(block_len(L)));
}

double kb_rel_l2_tolerance(kb_math m, int64_t reduction_len) { return rel_l2(unit_roundoff(m), reduction_len); }

double kb_rel_l2_tolerance_for(kb_math m, kb_dtype t, int64_t reduction_len)
{
    return rel_l2(output_roundoff(m, t), reduction_len);
}

static void terms(roundoffs u, int64_t reduction_len, double *abs, double *rel)
{
    double L = length(reduction_len);
    *rel = 8 * u.out;
    *abs = 8 * (u.in * sqrt(L) + u.out) + 4 * U32 * L + 4 * u.acc * block_len(L) * sqrt(blocks(L));
}

/* The bound as abs + rel * |ref|: the form the device check (device_scan.cu) takes. */
void kb_tolerance_terms(kb_math m, int64_t reduction_len, double *abs, double *rel)
{
    terms(unit_roundoff(m), reduction_len, abs, rel);
}

/* An output's bound: integers (indices, token ids) compare exactly, whatever
 * the arithmetic that chose them; floats as kb_tolerance_terms, at their
 * type's rounding at the least. */
void kb_tolerance_terms_for(kb_math m, kb_dtype t, int64_t reduction_len, double *abs, double *rel)
{
    if (t == KB_I32)
        *abs = *rel = 0;
    else
        terms(output_roundoff(m, t), reduction_len, abs, rel);
}

double kb_tolerance(kb_math m, int64_t reduction_len, double ref)
{
    double abs, rel;
    kb_tolerance_terms(m, reduction_len, &abs, &rel);
    return abs + rel * fabs(ref);
}

/* A whole transformer forward (kbench model) chains dozens of reductions
 * through LayerNorms, which renormalize but also amplify a row's error by
 * 1/std.  Its output passes when its relative L2 error against the double
 * reference is under 1e-4: fp32 arithmetic lands near 1e-6, while a forward
 * in tf32 (u = 2^-11), a dropped bias or a wrong mask is off by 1e-3 or more. */
double kb_model_rel_l2_tolerance(void) { return 1e-4; }

/* A bf16 model's logits: bf16's relative L2 bound, as for one bf16 op. */
double kb_model_bf16_rel_l2_tolerance(void) { return kb_rel_l2_tolerance(KB_MATH_BF16, 1); }
