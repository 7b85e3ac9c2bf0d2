/* matmul_fp8 contract: a scaled fp8 product, as a Linear layer on fp8
 * tensor cores runs it:
 *     C = scale_a * scale_b * (A B^T)
 * A is M x K (activations), B is N x K (weights, PyTorch's [out, in]),
 * both row-major, so both are K-major: the only layout Hopper's fp8 MMA
 * and cuBLASLt's fp8 GEMM ("TN") take.  A and B are e4m3, scale_a and
 * scale_b one fp32 value each (tensor-wise scales: the quantized tensors
 * are the real ones divided by them), C bf16.  Any M, N, K >= 1; shapes
 * are written MxNxK, as matmul's.
 *
 * The arithmetic is fp8's (KB_MATH_FP8, harness/tolerance.c): exact
 * products, the tensor cores' narrow accumulator promoted into fp32 at
 * least every 128 of K, one rounding to bf16.
 * FLOPs: 2 M N K.  Bytes: A and B once (1 byte an element), C once (2),
 * the scales' 8.
 * Inputs: uniform in [-1, 1] rounded to e4m3 (whose largest finite value
 * is 448), so the reference takes the same values; scale_a = 2 and
 * scale_b = 0.75, so that a kernel that drops either scale, or both, is
 * off by a third at least. */
#ifndef KBENCH_MATMUL_FP8_H
#define KBENCH_MATMUL_FP8_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int M, N, K;
    const uint8_t *A, *B;         /* e4m3 bit patterns, M x K and N x K */
    const float *scale_a, *scale_b; /* one value each, on the device */
    uint16_t *C;                  /* bf16 bit patterns, M x N */
} kb_matmul_fp8_args;

extern const kb_op kb_op_matmul_fp8;

enum { KB_MMF8_A, KB_MMF8_B, KB_MMF8_SCALE_A, KB_MMF8_SCALE_B, KB_MMF8_C, KB_MMF8_TENSORS };

#define KB_MATMUL_FP8_SCALE_A 2.0f
#define KB_MATMUL_FP8_SCALE_B 0.75f

/* Reference rows of C in double: ref[r * N + j] = sa sb sum_k A[rows[r], k]
 * B[j, k], A and B of dtype t (e4m3). */
void matmul_fp8_reference_rows(int N, int K, kb_dtype t, const void *A, const void *B, double sa, double sb,
                               const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
