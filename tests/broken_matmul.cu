/* Deliberately broken matmul variants.  The GPU suite runs them to prove the
 * checks can fail: each must be reported FAIL, for the right reason. */
#include "kernels/matmul.h"
#include "kernels/cuda_util.h"

/* Correct coalesced matmul over the first `K - drop_k` terms, skipping output
 * (skip_row, skip_col), and adding `bias` to every output. */
__global__ void broken_matmul_kernel(int M, int N, int K, const float *A, const float *B,
                                     float *C, int drop_k, int skip_row, int skip_col, float bias)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N || (row == skip_row && col == skip_col))
        return;
    float acc = bias;
    for (int k = 0; k < K - drop_k; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}

static const char *launch_broken(const kb_matmul_args *a, int drop_k, int skip_row,
                                 int skip_col, float bias, cudaStream_t s)
{
    dim3 block(32, 8), grid(KB_CEIL_DIV(a->N, 32), KB_CEIL_DIV(a->M, 8));
    broken_matmul_kernel<<<grid, block, 0, s>>>(a->M, a->N, a->K, a->A, a->B, a->C, drop_k,
                                                skip_row, skip_col, bias);
    KB_LAUNCHED();
}

/* Leaves the last element of C unwritten: only the NaN poison can catch it. */
static const char *launch_unwritten(const void *args, void *ctx, cudaStream_t s)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    return launch_broken(a, 0, a->M - 1, a->N - 1, 0.0f, s);
}

/* Drops the last term of every dot product: finite but wrong. */
static const char *launch_drop_term(const void *args, void *ctx, cudaStream_t s)
{
    (void)ctx;
    return launch_broken((const kb_matmul_args *)args, 1, -1, -1, 0.0f, s);
}

/* Right on the first launch, then off by 0.5: only the check after timing sees it. */
static const char *launch_degrades(const void *args, void *ctx, cudaStream_t s)
{
    int *launches = (int *)ctx;
    return launch_broken((const kb_matmul_args *)args, 0, -1, -1, (*launches)++ ? 0.5f : 0.0f, s);
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
