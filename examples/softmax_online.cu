/* An example of a kernel of one's own for `kbench run --kernel`: softmax
 * with one warp a row and the online recurrence (one read of x for the
 * max and the sum together, one more to write y), f32.
 *
 *     kbench run --kernel examples/softmax_online.cu --test-sizes
 *
 * It includes the op's contract (ops/softmax.h: the argument struct and
 * the numerics every variant honours, such as a fully masked row giving
 * zeros) and ends with KB_OWN_VARIANT; docs/own-kernel.md says what else a
 * file may define. */
#include <math.h>
#include "ops/softmax.h"
#include "ops/kbench_own.h"
#include "kernels/cuda_util.h"

/* Merge two partial (max, sum) pairs; a max of -inf carries no sum. */
__device__ static void merge(float &m, float &s, float m2, float s2)
{
    const float M = fmaxf(m, m2);
    if (M == -INFINITY)
        return;
    s = s * expf(m - M) + s2 * expf(m2 - M);
    m = M;
}

__global__ void own_softmax_online(int R, int C, const float *x, float *y)
{
    const int row = blockIdx.x * 4 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= R)
        return;
    const float *in = x + (size_t)row * C;
    float m = -INFINITY, s = 0.0f;
    for (int j = lane; j < C; j += 32)
        merge(m, s, in[j], 1.0f);
    for (int o = 16; o > 0; o /= 2)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    /* A fully masked row (max -inf) writes zeros, as the contract asks. */
    const float inv = m == -INFINITY ? 0.0f : 1.0f / s;
    for (int j = lane; j < C; j += 32)
        y[(size_t)row * C + j] = m == -INFINITY ? 0.0f : expf(in[j] - m) * inv;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    own_softmax_online<<<KB_CEIL_DIV(a->R, 4), 128, 0, stream>>>(a->R, a->C, a->x, a->y);
    KB_LAUNCHED();
}

KB_OWN_VARIANT("softmax", {.name = "online_warp", .summary = "one warp a row, online max and sum",
                           .dtype = KB_F32, .math = KB_MATH_F32, .launch = launch})
