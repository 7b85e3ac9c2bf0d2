/* One cuBLASLt product in row-major terms, shared by the ffn cublaslt
 * variants and the transformer's linear layers:
 *     Y (M x N) = epilogue(X (M x K) W (K x N) + bias[N])
 * row-major, densely packed, X, W and Y all of one storage type: fp32
 * (CUDA_R_32F) or bf16 (CUDA_R_16BF, the matmul cublaslt baseline);
 * the scales and the accumulation are fp32 either way.  Row-major Y = X W is column-major
 * Y^T = W^T X^T, and a row-major matrix read column-major is its
 * transpose, so this is a column-major matmul with no transposes, the
 * operands swapped: m = N, n = M, k = K.  cuBLASLt adds its bias vector
 * (length m) down each column of the column-major result, which is bias[col]
 * on every row of Y: a Linear layer's bias.
 *
 * The compute type picks the arithmetic: CUBLAS_COMPUTE_32F is plain fp32
 * FFMA; CUBLAS_COMPUTE_32F_FAST_TF32 runs the tensor cores on inputs cut to
 * tf32 (the model's 3xtf32 path feeds it pre-split operands).  bf16 takes
 * CUBLAS_COMPUTE_32F.  The bias, when the epilogue has one, is stored in
 * the output's type (cuBLASLt's default bias type): fp32 for fp32 products,
 * bf16 for bf16 ones (the ffn cublaslt and tensor-parallel variants);
 * the epilogue adds it and applies the ReLU in fp32, before Y is rounded. */
#ifndef KBENCH_LT_GEMM_H
#define KBENCH_LT_GEMM_H

#include <stddef.h>
#include <cublasLt.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_LT_WORKSPACE_BYTES ((size_t)32 << 20)

typedef struct {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t w, x, y;
    cublasLtMatmulAlgo_t algo;
    int accumulate; /* Y += the product (beta = 1) */
} kb_lt_product;

/* Describe the product and pick cuBLASLt's first heuristic algorithm for
 * these pointers (the heuristic sees their alignments).  Returns NULL or a
 * static error string; a half-made product is still safe to destroy. */
const char *kb_lt_plan(kb_lt_product *p, cublasLtHandle_t lt, cublasComputeType_t compute, cudaDataType_t type,
                       int M, int N, int K, cublasLtEpilogue_t epi, const void *bias, const void *X,
                       const void *W, const void *Y);
/* A Linear layer without bias in bf16: Y (M x N) = X (M x K) W^T with W
 * stored [N, K] (PyTorch's [out, in]), X and W bf16, fp32 accumulation;
 * Y is bf16, or fp32 with accumulate set, Y += X W^T (a residual added in
 * the epilogue).  As a column-major product: m = N, n = M, k = K, with W
 * read transposed. */
const char *kb_lt_plan_linear(kb_lt_product *p, cublasLtHandle_t lt, int M, int N, int K, int accumulate,
                              const void *X, const void *W, const void *Y);
/* The same Linear layer on fp8's tensor cores: X (M x K) and W ([N, K])
 * e4m3, Y bf16 = scale_x scale_w X W^T, the scales one fp32 value each in
 * device memory, read at every launch; fast accumulation off, so cuBLASLt
 * promotes its partial sums into fp32 (KB_MATH_FP8's promise). */
const char *kb_lt_plan_linear_fp8(kb_lt_product *p, cublasLtHandle_t lt, int M, int N, int K, const void *X,
                                  const void *W, const void *Y, const float *scale_x, const float *scale_w);
/* Enqueue Y = epi(X W + bias) with a planned product; bias may differ from
 * the one planned (same alignment), so one plan serves every layer. */
const char *kb_lt_run(const kb_lt_product *p, cublasLtHandle_t lt, const void *bias, const void *X,
                      const void *W, void *Y, void *workspace, cudaStream_t stream);
void kb_lt_destroy(kb_lt_product *p);

/* A library variant's context: one product with its own handle and
 * workspace.  kb_lt_single_open makes the handle and workspace (the
 * caller plans the product, then keeps it for every launch); NULL or one
 * line, and on failure nothing is left to free.  kb_lt_single_free takes
 * a half-made one too (a variant's teardown). */
typedef struct {
    cublasLtHandle_t lt;
    kb_lt_product product;
    void *workspace;
} kb_lt_single;
const char *kb_lt_single_open(kb_lt_single **out);
void kb_lt_single_free(void *ctx);
/* A setup's last step: err, the planning's outcome, and c kept in *ctx,
 * or freed when err is set. */
const char *kb_lt_single_done(kb_lt_single *c, const char *err, void **ctx);
/* Y = X W (+ Y) with its planned product, no bias. */
const char *kb_lt_single_run(const kb_lt_single *c, const void *X, const void *W, void *Y, cudaStream_t stream);
/* cuBLASLt's first handle and heuristic query on the current GPU, made and
 * dropped: the library's one-time costs, paid where nothing is timed.  No
 * kernel runs. */
void kb_lt_warm(void);

#ifdef __cplusplus
}
#endif
#endif
