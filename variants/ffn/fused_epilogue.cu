/* ffn fused_epilogue: the two GEMMs of separate, with the bias (+ ReLU)
 * folded into each GEMM's store: matmul double_buffered's kernel
 * (kernels/gemm_pipeline.cuh) instantiated with an epilogue that adds
 * bias[col] to each output, and clamps at 0 for the first product, just
 * before it is written:
 *   1. h = relu(x W1 + b1)   GEMM M x F x D, GemmBias<true>{b1}
 *   2. y = h W2 + b2         GEMM M x D x F, GemmBias<false>{b2}
 * The M x F hidden h is a workspace allocated in setup; the shared-memory
 * opt-in of all four instantiations is done there too.
 *
 * Builds on separate: no elementwise kernels.  The bias loads hit L1 (one
 * block reads 256 bias values, the same for every row of its tile) and the
 * few extra instructions run once per output, after the K loop.
 * Prediction: ~5-10% faster than separate (two passes over h and one over y
 * saved, and two launches); ~90% of cublaslt at the large shapes, as matmul
 * double_buffered to cuBLAS, well under it where d_model is narrow.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 48.6
 * TFLOP/s at 8192x4096x16384, 77.3% of the run's 62.9 TFLOP/s fp32 ceiling,
 * 0.94x cublaslt.
 * Gap to the limit: 23 points: the GEMMs' own gap to the FFMA peak (see
 * matmul/double_buffered.cu) and, for a narrow d_model, the idle SMs of the
 * second GEMM (smaller tiles or split-K would fill them); h still makes a round
 * trip through memory (M x F written, then read by the second GEMM), which only
 * a two-GEMM kernel keeping h on chip would remove. History:
 * docs/notes/matmul.md. */
#include <stdint.h>
#include <stdlib.h>
#include "ops/ffn.h"
#include "kernels/cuda_util.h"
#include "kernels/gemm_pipeline.cuh"

typedef DbFlagship Cfg;
typedef GemmBias<true> BiasRelu;
typedef GemmBias<false> BiasOnly;

typedef struct {
    float *h; /* M x F hidden activation */
} fused_epilogue_ctx;

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* C = epi(A B) with A M x K, B K x N, C M x N: the 16-byte path when the rows
 * of B and C are 16-byte aligned. */
template <class Epi>
static void gemm(int M, int N, int K, const float *A, const float *B, float *C, Epi epi,
                 cudaStream_t stream)
{
    const bool vec_b = N % 4 == 0 && aligned16(B) && aligned16(C);
    dim3 grid(KB_CEIL_DIV(N, Cfg::kBN), KB_CEIL_DIV(M, Cfg::kBM));
    if (vec_b)
        gemm_pipeline_kernel<Cfg, true, Epi><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            M, N, K, A, B, C, epi);
    else
        gemm_pipeline_kernel<Cfg, false, Epi><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            M, N, K, A, B, C, epi);
}

static void teardown(void *ctx)
{
    fused_epilogue_ctx *c = (fused_epilogue_ctx *)ctx;
    if (!c)
        return;
    cudaFree(c->h);
    free(c);
}

static const char *setup(const void *args, void **ctx)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    const void *kernels[] = {(const void *)gemm_pipeline_kernel<Cfg, true, BiasRelu>,
                             (const void *)gemm_pipeline_kernel<Cfg, false, BiasRelu>,
                             (const void *)gemm_pipeline_kernel<Cfg, true, BiasOnly>,
                             (const void *)gemm_pipeline_kernel<Cfg, false, BiasOnly>};
    for (const void *k : kernels) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             Cfg::kSmemBytes);
        if (e != cudaSuccess)
            return cudaGetErrorString(e);
    }
    fused_epilogue_ctx *c = (fused_epilogue_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    cudaError_t e = cudaMalloc(&c->h, (size_t)a->M * a->F * sizeof(float));
    if (e != cudaSuccess) {
        free(c);
        return cudaGetErrorString(e);
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    const fused_epilogue_ctx *c = (const fused_epilogue_ctx *)ctx;
    gemm(a->M, a->F, a->D, a->x, a->w1, c->h, BiasRelu{a->b1}, stream);
    gemm(a->M, a->D, a->F, c->h, a->w2, a->y, BiasOnly{a->b2}, stream);
    KB_LAUNCHED();
}

extern "C" const kb_variant ffn_fused_epilogue[] = {
    {
        .name = "fused_epilogue",
        .summary = "two double_buffered GEMMs, bias (+ ReLU) applied in each GEMM's store",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 80,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
