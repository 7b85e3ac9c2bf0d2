/* ffn separate: the feed-forward block as an unfused framework runs it, four
 * kernels, two Linear layers and an activation:
 *   1. h = x W1            matmul double_buffered (M x F x D)
 *   2. h = relu(h + b1)    elementwise, in place
 *   3. y = h W2            matmul double_buffered (M x D x F)
 *   4. y = y + b2          elementwise, in place
 * The GEMMs are the matmul op's double_buffered variant, called through its
 * kb_variant (its setup from this setup, its launch with a kb_matmul_args).
 * The elementwise kernels run one thread per column of a 256-column strip,
 * which loads its bias once and walks down the rows, coalesced.  The M x F
 * hidden h is a workspace allocated in setup.
 *
 * Idea: the reference point for fused_epilogue: the same GEMMs, plus the
 * round trips an unfused bias and activation cost.
 * Prediction: the GEMMs plus a read and a write of h and of y: ~5-10%
 * slower than fused_epilogue.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 47.6
 * TFLOP/s at 8192x4096x16384, 75.6% of the run's 62.9 TFLOP/s fp32 ceiling,
 * 0.92x cublaslt.
 * Gap to the limit: 24 points: the two elementwise passes (fused_epilogue
 * removes them), then the GEMMs' own gap (see fused_epilogue). History:
 * docs/notes/matmul.md. */
#include <stdlib.h>
#include "ops/ffn.h"
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

extern "C" const kb_variant matmul_double_buffered;

#define BLOCK 256
#define MAX_GRID_Y 65535

typedef struct {
    float *h;              /* M x F hidden activation */
    void *gemm1, *gemm2;   /* the matmul variant's contexts, one per product */
    int have1, have2;      /* whether its setup succeeded (teardown is owed) */
} separate_ctx;

/* y[r][c] = max(y[r][c] + bias[c], 0) when Relu, else y[r][c] + bias[c],
 * for an R x C row-major y.  Grid: (ceil(C / BLOCK), <= MAX_GRID_Y). */
template <bool Relu>
__global__ void __launch_bounds__(BLOCK) ffn_bias_act_kernel(int R, int C, const float *__restrict__ bias,
                                                             float *__restrict__ y)
{
    const int col = blockIdx.x * BLOCK + threadIdx.x;
    if (col >= C)
        return;
    const float b = bias[col];
    for (int row = blockIdx.y; row < R; row += gridDim.y) {
        float *p = y + (size_t)row * C + col;
        const float v = *p + b;
        *p = Relu ? fmaxf(v, 0.0f) : v;
    }
}

template <bool Relu>
static void bias_act(int R, int C, const float *bias, float *y, cudaStream_t stream)
{
    dim3 grid(KB_CEIL_DIV(C, BLOCK), R < MAX_GRID_Y ? R : MAX_GRID_Y);
    ffn_bias_act_kernel<Relu><<<grid, BLOCK, 0, stream>>>(R, C, bias, y);
}

/* The two products as matmul args: h = x W1 (M x F x D), y = h W2 (M x D x F). */
static kb_matmul_args gemm1_args(const kb_ffn_args *a, float *h)
{
    const kb_matmul_args m = {a->M, a->F, a->D, a->x, a->w1, h};
    return m;
}

static kb_matmul_args gemm2_args(const kb_ffn_args *a, float *h)
{
    const kb_matmul_args m = {a->M, a->D, a->F, h, a->w2, a->y};
    return m;
}

static void teardown(void *ctx)
{
    separate_ctx *c = (separate_ctx *)ctx;
    if (!c)
        return;
    const kb_variant *g = &matmul_double_buffered;
    if (g->teardown && c->have1)
        g->teardown(c->gemm1);
    if (g->teardown && c->have2)
        g->teardown(c->gemm2);
    cudaFree(c->h);
    free(c);
}

static const char *setup(const void *args, void **ctx)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    const kb_variant *g = &matmul_double_buffered;
    separate_ctx *c = (separate_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    cudaError_t e = cudaMalloc(&c->h, (size_t)a->M * a->F * sizeof(float));
    if (e != cudaSuccess) {
        free(c);
        return cudaGetErrorString(e);
    }
    const char *err = NULL;
    if (g->setup) {
        const kb_matmul_args m1 = gemm1_args(a, c->h), m2 = gemm2_args(a, c->h);
        err = g->setup(&m1, &c->gemm1);
        c->have1 = !err;
        if (!err) {
            err = g->setup(&m2, &c->gemm2);
            c->have2 = !err;
        }
    } else {
        c->have1 = c->have2 = 1;
    }
    if (err) {
        teardown(c);
        return err;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    const separate_ctx *c = (const separate_ctx *)ctx;
    const kb_variant *g = &matmul_double_buffered;
    const kb_matmul_args m1 = gemm1_args(a, c->h), m2 = gemm2_args(a, c->h);
    const char *err = g->launch(&m1, c->gemm1, stream);
    if (err)
        return err;
    bias_act<true>(a->M, a->F, a->b1, c->h, stream);
    if ((err = g->launch(&m2, c->gemm2, stream)))
        return err;
    bias_act<false>(a->M, a->D, a->b2, a->y, stream);
    KB_LAUNCHED();
}

extern "C" const kb_variant ffn_separate[] = {
    {
        .name = "separate",
        .summary = "double_buffered GEMM, bias+ReLU kernel, GEMM, bias kernel (unfused)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 80,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
