/* The host side of kbench's Hopper code (tma.cuh and wgmma.cuh are the
 * device side): tensor maps, made by the driver's cuTensorMapEncodeTiled
 * reached through the runtime (so nothing links libcuda); launches in
 * thread-block clusters; the rule that sm_90a code runs on compute
 * capability 9.0 only; and what the 16-bit matmul rungs that load by TMA
 * share: their maps of A, B and C, kept from launch to launch, and
 * wgmma's kernel for the shapes that no map describes. */
#ifndef KBENCH_TMA_HOST_H
#define KBENCH_TMA_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include "ops/matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef CUresult (*kb_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);

/* *fn = cuTensorMapEncodeTiled; NULL, or why the driver has none. */
const char *kb_tensor_map_encoder(kb_encode_tiled_fn *fn);

/* A 16-bit tensor (t: bf16 or f16) of `rank` dimensions (dims[0]
 * innermost; strides in bytes for dims 1..), read or written in boxes of
 * `box` elements whose rows are one 128-byte swizzle line; loads fill zeros
 * outside, stores write nothing there. */
const char *kb_encode_16(kb_encode_tiled_fn encode, CUtensorMap *map, kb_dtype t, const void *base, int rank,
                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box);

/* A row-major outer x inner 16-bit matrix in boxes of box_inner x box_outer
 * elements (box_inner * 2 = 128 bytes: one swizzle line). */
const char *kb_encode_16_2d(kb_encode_tiled_fn encode, CUtensorMap *map, kb_dtype t, const void *base, int inner,
                            int outer, int box_inner, int box_outer);

/* The same for a matrix of 1-byte elements (fp8's e4m3 or e5m2, as raw
 * bytes: TMA copies them unchanged), box_inner = 128 a swizzle line. */
const char *kb_encode_8_2d(kb_encode_tiled_fn encode, CUtensorMap *map, const void *base, int inner, int outer,
                           int box_inner, int box_outer);

/* sm_90a code (wgmma, setmaxnreg) runs on compute capability 9.0 only:
 * NULL there, else the reason to SKIP. */
const char *kb_sm90a_unsupported(void);
/* The same as a variant's `unsupported`, for those that run every shape. */
const char *kb_sm90a_only(const kb_shape *s);

/* A launch of `grid` blocks of `threads` in clusters of `cluster` blocks
 * along x, set at launch (a __cluster_dims__ attribute would not compile
 * for the pre-Hopper archs of a mixed build); *attr holds the attribute. */
cudaLaunchConfig_t kb_cluster_config(cudaLaunchAttribute *attr, int grid, int threads, int cluster, int smem,
                                     cudaStream_t stream);

/* *n: how many clusters of `kernel` the GPU holds at once, for a
 * persistent grid.  That is sms / cluster when every GPC has a multiple of
 * `cluster` SMs free, fewer otherwise (then a grid of sms / cluster
 * clusters would run a second, nearly empty round).  NULL, or why none
 * fits. */
const char *kb_max_clusters(const void *kernel, int threads, int cluster, int smem, int sms, int *n);

/* The dynamic shared memory of each of n kernels (smem[i] bytes; a NULL
 * kernel ends the list early) opted into and, with cluster > 0, how many
 * clusters of each fit at once into clusters[i] (kb_max_clusters).  NULL,
 * or why not. */
const char *kb_setup_kernels(const void *const *kernels, const int *smem, int n, int threads, int cluster, int sms,
                             int *clusters);

/* ---- the 16-bit matmul rungs that load by TMA ------------------------------ */

static inline bool kb_aligned(const void *p, uintptr_t bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

/* Whether C's column pairs go in 4-byte stores (bf16_store_pair's `pair`). */
static inline bool kb_matmul_pair_stores(const kb_matmul_args *a) { return a->N % 2 == 0 && kb_aligned(a->C16, 4); }

/* Which way the reduction runs in the stored operands of C = op(A) op(B),
 * C being M x N and row-major, the reduction K long:
 *   NN: C = A B, A M x K, B K x N (the forward's);
 *   NT: C = A B^T, B stored N x K (a linear layer's input gradient, dC W^T);
 *   TN: C = A^T B, A stored K x M (its weight gradient, X^T dC). */
typedef enum { KB_GEMM_NN = 0, KB_GEMM_NT, KB_GEMM_TN } kb_gemm_layout;

/* What a rung loads and launches: A in boxes of bk x bm (k-columns x
 * rows: the block tile's), B in boxes of 64 columns x b_rows k-rows (bk,
 * or a cluster block's share of them), C, where c_rows > 0, stored in
 * boxes of 64 x c_rows; its kernels (one or two: tile widths) with their
 * dynamic shared memory, opted into at setup, and where cluster > 0 the
 * clusters of each that fit at once (kb_max_clusters). */
typedef struct {
    kb_dtype dtype; /* of A, B and C: bf16 or f16 */
    kb_gemm_layout layout; /* of A and B; outside NN, A's boxes are 64 x bk (rows x k) and there is no fallback */
    int bm, bk, b_rows, c_rows;
    int cluster, threads;
    const void *kernels[2];
    int smem[2];
} kb_matmul_tma_rung;

/* A rung's context: its maps, the arguments they describe, the GPU's SM
 * count and resident clusters of each kernel, and the context of
 * matmul_wgmma's form of the rung's dtype, whose kernel takes the shapes
 * that a map cannot describe (NN only: other layouts must not be given
 * such shapes, kb_matmul_tma_maps_apply). */
typedef struct {
    kb_matmul_tma_rung rung;
    kb_encode_tiled_fn encode;
    CUtensorMap map_a, map_b, map_c;
    const void *a, *b, *c;
    int M, N, K;
    int sms;
    int clusters[2];
    const struct kb_variant *fallback;
    void *fallback_ctx;
} kb_matmul_tma;

/* Whether tensor maps describe a's tensors in the layout: the rows of
 * each stored matrix (A, B and C) start 16-byte aligned. */
bool kb_matmul_tma_maps_apply(kb_gemm_layout layout, const kb_matmul_args *a, bool c_by_tma);

/* The rung's setup (kb_variant.setup): *ctx a kb_matmul_tma, with the
 * maps of args where they apply; on failure nothing is left to free. */
const char *kb_matmul_tma_setup(const void *args, const kb_matmul_tma_rung *rung, void **ctx);
void kb_matmul_tma_teardown(void *ctx);

/* Before a launch of the rung's kernel: true, the maps describing args'
 * tensors (made again, a few microseconds on the host, when they are not
 * those the maps were made for).  False when the launch is over: made by
 * wgmma's kernel (rows that are not 16-byte aligned), or failed; *err is
 * its result. */
bool kb_matmul_tma_begin(kb_matmul_tma *t, const void *args, cudaStream_t stream, const char **err);

#ifdef __cplusplus
}
#endif
#endif
