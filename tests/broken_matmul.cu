/* Deliberately broken matmul variants.  The GPU suite runs them to prove the
 * checks can fail: each must be reported FAIL, for the right reason. */
#include <cuda_bf16.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

/* Correct coalesced matmul in T (float, or bf16 storage with fp32
 * accumulation) over every k outside [drop_from, drop_to), skipping output
 * (skip_row, skip_col), and adding `bias` to every output. */
template <typename T>
__global__ void broken_matmul_kernel(int M, int N, int K, const T *A, const T *B, T *C, int drop_from,
                                     int drop_to, int skip_row, int skip_col, float bias)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N || (row == skip_row && col == skip_col))
        return;
    float acc = bias;
    for (int k = 0; k < K; ++k)
        if (k < drop_from || k >= drop_to)
            acc += (float)A[(size_t)row * K + k] * (float)B[(size_t)k * N + col];
    C[(size_t)row * N + col] = (T)acc;
}

template <typename T>
static const char *launch_broken(const kb_matmul_args *a, const T *A, const T *B, T *C, int drop_from,
                                 int drop_to, int skip_row, int skip_col, float bias, cudaStream_t s)
{
    dim3 block(32, 8), grid(KB_CEIL_DIV(a->N, 32), KB_CEIL_DIV(a->M, 8));
    broken_matmul_kernel<T><<<grid, block, 0, s>>>(a->M, a->N, a->K, A, B, C, drop_from, drop_to,
                                                    skip_row, skip_col, bias);
    KB_LAUNCHED();
}

/* The f32 ones, missing the last `drop_k` terms. */
static const char *launch_f32(const kb_matmul_args *a, int drop_k, int skip_row, int skip_col, float bias,
                              cudaStream_t s)
{
    return launch_broken(a, a->A, a->B, a->C, a->K - drop_k, a->K, skip_row, skip_col, bias, s);
}

/* Leaves the last element of C unwritten: only the NaN poison can catch it. */
static const char *launch_unwritten(const void *args, void *ctx, cudaStream_t s)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    return launch_f32(a, 0, a->M - 1, a->N - 1, 0.0f, s);
}

/* Drops the last term of every dot product: finite but wrong. */
static const char *launch_drop_term(const void *args, void *ctx, cudaStream_t s)
{
    (void)ctx;
    return launch_f32((const kb_matmul_args *)args, 1, -1, -1, 0.0f, s);
}

/* Right on the first launch, then off by 0.5: only the check after timing sees it. */
static const char *launch_degrades(const void *args, void *ctx, cudaStream_t s)
{
    int *launches = (int *)ctx;
    return launch_f32((const kb_matmul_args *)args, 0, -1, -1, (*launches)++ ? 0.5f : 0.0f, s);
}

/* bf16 with fp32 accumulation, missing the K-tile of 32 in the middle of K:
 * a tiled kernel that miscounts its tiles.  The bf16 tolerance is far looser
 * than f32's, and must still see 32 missing terms out of thousands. */
static const char *launch_drop_tile_bf16(const void *args, void *ctx, cudaStream_t s)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const int from = a->K / 64 * 32;
    (void)ctx;
    return launch_broken(a, (const __nv_bfloat16 *)a->A16, (const __nv_bfloat16 *)a->B16,
                         (__nv_bfloat16 *)a->C16, from, from + 32, -1, -1, 0.0f, s);
}

static const char *count_setup(const void *args, void **ctx)
{
    (void)args;
    static int launches;
    launches = 0;
    *ctx = &launches;
    return NULL;
}

extern "C" const kb_variant broken_matmul_unwritten = {
    .name = "broken_unwritten", .summary = "leaves one element unwritten",
    .dtype = KB_F32, .math = KB_MATH_F32, .launch = launch_unwritten};
extern "C" const kb_variant broken_matmul_drop_term = {
    .name = "broken_drop_term", .summary = "drops the last term of each dot product",
    .dtype = KB_F32, .math = KB_MATH_F32, .launch = launch_drop_term};
extern "C" const kb_variant broken_matmul_degrades = {
    .name = "broken_degrades", .summary = "wrong after its first launch",
    .dtype = KB_F32, .math = KB_MATH_F32, .setup = count_setup, .launch = launch_degrades};
extern "C" const kb_variant broken_matmul_drop_tile_bf16 = {
    .name = "broken_drop_tile_bf16", .summary = "bf16, drops one K-tile of 32",
    .dtype = KB_BF16, .math = KB_MATH_BF16, .min_cc = 80, .launch = launch_drop_tile_bf16};
