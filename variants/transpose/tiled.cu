/* transpose tiled: a 32 x 32 tile of x through shared memory per block of
 * 32 x 8 threads (each four rows of the tile), read along x's rows and
 * written along y's, both coalesced; the tile's rows are padded to 33
 * floats so that reading a column hits 32 banks.
 *
 * Builds on naive: whole 128-byte lines both ways, for a shared-memory
 * round trip and a barrier a tile.
 * Prediction: ~80-90% of the copy ceiling on large matrices; a 512 x 64
 * one (the basic stage's keys) is a launch.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,071 GB/s
 * at 16384x1024, 72.5% of the run's 4237 GB/s memory ceiling, 6.47x naive;
 * 3,042 GB/s (71.8%, 5.87x) at 4096x4096; the basic stage's 512x64 in 4.4 us,
 * 0.96x naive.
 * Gap to the limit: 27.5-28.2 points on the large matrices, under the 80-90%
 * predicted, with no tail tiles there: one barrier per tile with a single
 * tile per block in flight. */
#include "ops/transpose.h"
#include "kernels/cuda_util.h"

#define TILE 32
#define ROWS 8

__global__ void __launch_bounds__(TILE * ROWS) transpose_tiled_kernel(const float *__restrict__ x, int R, int C,
                                                                      float *__restrict__ y)
{
    __shared__ float tile[TILE][TILE + 1];
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;
    for (int k = threadIdx.y; k < TILE; k += ROWS) {
        const int r = r0 + k, c = c0 + threadIdx.x;
        if (r < R && c < C)
            tile[k][threadIdx.x] = x[(int64_t)r * C + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TILE; k += ROWS) {
        const int c = c0 + k, r = r0 + threadIdx.x;
        if (r < R && c < C)
            y[(int64_t)c * R + r] = tile[threadIdx.x][k];
    }
}

static const char *unsupported(const kb_shape *s)
{
    return KB_CEIL_DIV(s->d[0], TILE) > 65535 ? "R over 65535 tiles of 32 rows (the grid's y)" : NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_transpose_args *a = (const kb_transpose_args *)args;
    (void)ctx;
    const dim3 grid(KB_CEIL_DIV(a->C, TILE), KB_CEIL_DIV(a->R, TILE)), block(TILE, ROWS);
    transpose_tiled_kernel<<<grid, block, 0, stream>>>(a->x, a->R, a->C, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant transpose_tiled[] = {
    {
        .name = "tiled",
        .summary = "32 x 32 tiles through shared memory, coalesced both ways",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = unsupported,
        .launch = launch,
    },
    KB_VARIANT_END,
};
