/* matmul contract: C = A * B, row-major, A is MxK, B is KxN, C is MxN.
 * Any M, N, K >= 1.  Shapes are written MxNxK.
 * Three dtypes, as the variant's: f32, or bf16 or f16 storage of A, B and C with
 * fp32 accumulation (the tensor cores' 16-bit paths).
 *
 * FLOPs: 2*M*N*K.  Bytes: A and B read once, C written once, at 4 or 2
 * bytes an element.
 * Tolerance: the reduction is K long (harness/tolerance.c turns that into a
 * bound).  bf16 variants are checked against the reference computed from the
 * same bf16-rounded inputs, with bf16's output rounding.
 * Inputs: uniform in [-1, 1] (the harness default), rounded to bf16 for bf16. */
#ifndef KBENCH_MATMUL_H
#define KBENCH_MATMUL_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same pointers under the variant's dtype: f32 variants read A, B, C;
 * bf16 variants A16, B16, C16, bf16 bit patterns (__nv_bfloat16 on the
 * device).  Unions keep the f32 variants' typed access as it was. */
typedef struct {
    int M, N, K;
    union { const float *A; const uint16_t *A16; };  /* M x K */
    union { const float *B; const uint16_t *B16; };  /* K x N */
    union { float *C; uint16_t *C16; };              /* M x N */
} kb_matmul_args;

extern const kb_op kb_op_matmul;

/* Reference rows of C in double from A and B stored as dtype t (f32, bf16 or f16):
 * ref[r*N + j] = sum_k A[rows[r],k] * B[k,j]. */
void matmul_reference_rows(int M, int N, int K, kb_dtype t, const void *A, const void *B,
                           const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
