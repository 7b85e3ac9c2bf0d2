/* split_tf32 contract: the 3xTF32 operand split of the fp32 transformer's
 * products (model/gpu.h): each row of x (M x K, fp32) becomes
 *     y[r] = [h h l]  (3K fp32),  h = x rounded to tf32, l = x - h
 * so that one tf32 tensor-core product over 3K columns with the weights
 * split as [Wh; Wl; Wh] computes xh Wh + xh Wl + xl Wh.  h keeps tf32's 10
 * fraction bits, rounded to nearest with ties away from zero (cvt.rna);
 * l = x - h is exact in fp32.  Shapes are written MxK.
 *
 * Bytes: x read once, y written (16*M*K).  FLOPs: one subtraction an
 * element.  Tolerance: exact.
 * Inputs: uniform in [-1, 1]; when M >= 2, row 0 holds ties, values
 * halfway between two tf32 numbers (+-(1 + 2^-11) and +-(2^-6 + 2^-17)),
 * which round away from zero. */
#ifndef KBENCH_SPLIT_TF32_H
#define KBENCH_SPLIT_TF32_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t M;
    int K;
    const float *x; /* M x K */
    float *y;       /* M x 3K */
} kb_split_tf32_args;

extern const kb_op kb_op_split_tf32;

/* x rounded to tf32, ties away from zero (as cvt.rna.tf32.f32). */
float kb_tf32_rna(float x);

#ifdef __cplusplus
}
#endif
#endif
