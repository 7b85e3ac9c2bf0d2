/* adamw naive: two kernels, one element a thread in each.  The first
 * squares its gradient element in double, sums a warp's 32 by shuffles and
 * adds the warp's sum to one double in device memory with atomicAdd (the
 * variant's workspace, zeroed by a memset before it); the second reads
 * that sum, turns it into clip_grad_norm_'s factor once a block, and steps
 * its element: 4- and 2-byte loads of grad, master, m and v, and stores of
 * master, m, v and the bf16 param.  Block 0 writes the norm.  Two forms,
 * the gradient's dtype; fp32 arithmetic in both (kernels/adamw.cuh).
 *
 * Builds on nothing: the rung the ladder starts from, and the baseline.
 * An atomic a warp, not a thread: a billion atomics on one address
 * serialize at one L2 slice (about a second at 1.2B); 38 million still
 * queue there, but behind the loads.  The sum's order is the atomics',
 * so the norm's last bits may differ from run to run.
 * Prediction: the step kernel near a copy kernel's share of the ceiling
 * (its 4-byte accesses coalesce, and 7 streams keep loads in flight); the
 * norm kernel bound by its atomics, some 2-3 ms at 1.2B against the step's
 * 7-8 ms: some 60-70% of the memory ceiling overall at 124M and 1.2B.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 479
 * GB/s f32 gradients, 450 bf16 at 124M (7.77 and 7.72 ms), 11.3% and 10.6%
 * of the run's 4239 GB/s memory ceiling.
 * Gap to the limit: 88.7 points in f32 and 89.4 in bf16, far over the 30-40
 * expected: the atomics' queue, the norm pass's second read of grad (2 or 4
 * bytes of 30 or 34 an element, not counted), and one load instruction per
 * element and stream. */
#include <cuda_bf16.h>
#include "ops/adamw.h"
#include "kernels/adamw.cuh"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

enum { THREADS = 256 };

template <typename G>
__global__ void __launch_bounds__(THREADS)
adamw_naive_norm_kernel(const G *__restrict__ grad, int64_t n, double *__restrict__ sumsq)
{
    const int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const double g = i < n ? (double)kb_to_float(grad[i]) : 0.0; /* every lane takes part in the shuffles */
    const double warp = kb_adamw_warp_sum(g * g);
    if (threadIdx.x % 32 == 0)
        atomicAdd(sumsq, warp);
}

template <typename G>
__global__ void __launch_bounds__(THREADS)
adamw_naive_step_kernel(const G *__restrict__ grad, int64_t n, const double *__restrict__ sumsq, KbAdamwStep k,
                        float *__restrict__ master, float *__restrict__ m, float *__restrict__ v,
                        __nv_bfloat16 *__restrict__ param, float *__restrict__ norm)
{
    __shared__ float scale;
    if (threadIdx.x == 0) {
        scale = kb_adamw_clip_scale(*sumsq);
        if (blockIdx.x == 0)
            *norm = (float)sqrt(*sumsq);
    }
    __syncthreads();
    const int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    if (i >= n)
        return;
    float p = master[i], mi = m[i], vi = v[i];
    kb_adamw_update(scale * kb_to_float(grad[i]), p, mi, vi, k);
    master[i] = p;
    m[i] = mi;
    v[i] = vi;
    param[i] = __float2bfloat16_rn(p);
}

/* The workspace: the sum of squares, one double. */
static const char *setup(const void *args, void **ctx)
{
    (void)args;
    KB_CUDA_TRY(cudaMalloc(ctx, sizeof(double)));
    return NULL;
}

static void teardown(void *ctx) { cudaFree(ctx); }

template <typename G>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_adamw_args *a = (const kb_adamw_args *)args;
    double *sumsq = (double *)ctx;
    const unsigned blocks = (unsigned)KB_CEIL_DIV(a->n, THREADS);
    KB_CUDA_TRY(cudaMemsetAsync(sumsq, 0, sizeof *sumsq, stream));
    adamw_naive_norm_kernel<G><<<blocks, THREADS, 0, stream>>>((const G *)a->grad, a->n, sumsq);
    adamw_naive_step_kernel<G><<<blocks, THREADS, 0, stream>>>((const G *)a->grad, a->n, sumsq,
                                                              kb_adamw_step_consts(), a->master, a->m, a->v,
                                                              (__nv_bfloat16 *)a->param, a->norm);
    KB_LAUNCHED();
}

extern "C" const kb_variant adamw_naive[] = {
    {
        .name = "naive",
        .summary = "norm by an atomicAdd a warp, then one element a thread; f32 gradients",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = setup,
        .teardown = teardown,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "norm by an atomicAdd a warp, then one element a thread; bf16 gradients",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .setup = setup,
        .teardown = teardown,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
