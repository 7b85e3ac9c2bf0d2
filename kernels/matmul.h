/* matmul contract: C = A * B, fp32, row-major, A is MxK, B is KxN, C is MxN.
 * Any M, N, K >= 1.  Shapes are written MxNxK.
 *
 * FLOPs: 2*M*N*K.  Bytes: A and B read once, C written once.
 * Tolerance: the reduction is K long (harness/tolerance.c turns that into a bound).
 * Inputs: uniform in [-1, 1] (the harness default). */
#ifndef KBENCH_MATMUL_H
#define KBENCH_MATMUL_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int M, N, K;
    const float *A;  /* M x K */
    const float *B;  /* K x N */
    float *C;        /* M x N */
} kb_matmul_args;

extern const kb_op kb_op_matmul;

/* Reference rows of C in double: ref[r*N + j] = sum_k A[rows[r],k] * B[k,j]. */
void matmul_reference_rows(int M, int N, int K, const float *A, const float *B,
                           const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
