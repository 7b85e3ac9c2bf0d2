/* matmul_backward contract: the gradients of matmul (C = A B, ops/matmul.h)
 * as a linear layer's backward takes them:
 *     dA = dC B^T    (M x K: each element a sum over N)
 *     dB = A^T dC    (K x N: each element a sum over M)
 * for A (M x K), B (K x N) and dC (M x N), all row-major as the forward's.
 * Shapes are written MxNxK, the forward's; any M, N, K >= 1.  Both
 * products read an operand transposed against the forward: dA's B is
 * K-major (the reduction N runs along B's rows), dB's A is M-major (the
 * reduction M runs down A's columns), the layouts a GEMM kernel written
 * for C = A B alone does not take.  f32, or bf16 storage of every tensor
 * with fp32 accumulation.
 *
 * FLOPs: both products, 4 M N K.  Bytes: A, B and dC read, dA and dB
 * written, once each.
 * Tolerance: dA's reduction is N long, dB's M long.
 * Inputs: uniform in [-1, 1], rounded to bf16 for bf16. */
#ifndef KBENCH_MATMUL_BACKWARD_H
#define KBENCH_MATMUL_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pointers are f32, or bf16 bit patterns (__nv_bfloat16 on the device),
 * as the variant's dtype. */
typedef struct {
    int M, N, K;
    const void *a;  /* M x K */
    const void *b;  /* K x N */
    const void *dc; /* M x N */
    void *da;       /* M x K */
    void *db;       /* K x N */
} kb_matmul_backward_args;

enum { KB_MMB_A, KB_MMB_B, KB_MMB_DC, KB_MMB_DA, KB_MMB_DB, KB_MMB_TENSORS };

extern const kb_op kb_op_matmul_backward;

/* Reference rows of output `which` (KB_MMB_DA or KB_MMB_DB) in double from
 * a, b and dc stored as t (f32 or bf16): row r of dA is dA[rows[r]][0..K),
 * of dB dB[rows[r]][0..N). */
void matmul_backward_reference(int64_t M, int64_t N, int64_t K, kb_dtype t, const void *a, const void *b,
                               const void *dc, int which, const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
