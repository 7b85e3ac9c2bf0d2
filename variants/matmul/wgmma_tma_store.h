/* matmul wgmma_tma_store's kernel for the other variants that run it on
 * other operand layouts (matmul_backward's dA = dC B^T and dB = A^T dC). */
#ifndef KBENCH_MATMUL_WGMMA_TMA_STORE_H
#define KBENCH_MATMUL_WGMMA_TMA_STORE_H

#include "kernels/tma_host.h"

/* The rung's kernels in bf16 for the layout, for kb_matmul_tma_setup. */
kb_matmul_tma_rung kb_wgmma_tma_store_rung(kb_gemm_layout layout);

/* C = op(A) op(B) as a describes it, on a context kb_matmul_tma_setup
 * made from that rung: the tile width that fits the GPU's clusters best,
 * a persistent grid. */
const char *kb_wgmma_tma_store_launch(void *ctx, const kb_matmul_args *a, cudaStream_t stream);

#endif
