/* embedding_backward sorted: deterministic.  The token indices are sorted
 * by id (CUB's radix sort, which is stable: within an id the tokens stay
 * in their order), each id's run found by a binary search of the sorted
 * ids, and then a block a row of dE sums its run's dx rows in token order
 * and writes the row (zeros for an id no token names).  The same inputs
 * give the same bits on every run, whatever the GPU's scheduling.
 *
 * Builds on atomic: the same sums without atomics, in a fixed order.
 * Prediction: close to atomic where the writes of dE dominate (V D much
 * larger than T D, as at 8192x128256x2048), since each row is written once
 * without a memset first; the frequent token's row is one block's serial
 * sum of a quarter of dx, which the other rows cover while V is large.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 445
 * GB/s at 8192x128256x2048 (2.51 ms), 10.5% of the run's 4239 GB/s memory
 * ceiling, 0.12x atomic, 0.24x PyTorch eager.
 * Gap to the limit: 89.5 points: the frequent token's 2048 rows are one
 * block's serial sum (the notes give the next rung). */
#include <cub/cub.cuh>
#include <stdlib.h>
#include "ops/embedding_backward.h"
#include "kernels/cuda_util.h"

#define BLOCK 128
#define COLS 4 /* columns a thread sums at once */

typedef struct {
    int *order, *sorted_order, *sorted_ids, *start;
    void *temp;
    size_t temp_bytes;
    int end_bit;
} sorted_ctx;

__global__ void embedding_backward_iota(int *order, int T)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < T)
        order[t] = t;
}

/* start[v] = the first position of id v among the sorted ids, v = 0..V. */
__global__ void embedding_backward_runs(const int *sorted_ids, int T, int V, int *start)
{
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v > V)
        return;
    int lo = 0, hi = T;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (sorted_ids[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    start[v] = lo;
}

__global__ void __launch_bounds__(BLOCK) embedding_backward_rows(kb_embedding_backward_args a, const int *order,
                                                                 const int *start)
{
    const int v = blockIdx.x, first = start[v], last = start[v + 1];
    float *out = a.dE + (int64_t)v * a.D;
    for (int base = 0; base < a.D; base += BLOCK * COLS) {
        float sum[COLS] = {};
        for (int i = first; i < last; ++i) {
            const float *row = a.dx + (int64_t)order[i] * a.D;
#pragma unroll
            for (int c = 0; c < COLS; ++c) {
                const int j = base + c * BLOCK + threadIdx.x;
                if (j < a.D)
                    sum[c] += row[j];
            }
        }
#pragma unroll
        for (int c = 0; c < COLS; ++c) {
            const int j = base + c * BLOCK + threadIdx.x;
            if (j < a.D)
                out[j] = sum[c];
        }
    }
}

static void teardown(void *p)
{
    sorted_ctx *c = (sorted_ctx *)p;
    if (!c)
        return;
    cudaFree(c->order);
    cudaFree(c->sorted_order);
    cudaFree(c->sorted_ids);
    cudaFree(c->start);
    cudaFree(c->temp);
    free(c);
}

static const char *setup(const void *args, void **ctx)
{
    const kb_embedding_backward_args *a = (const kb_embedding_backward_args *)args;
    sorted_ctx *c = (sorted_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    c->end_bit = 1;
    while (c->end_bit < 31 && (1u << c->end_bit) < (unsigned)a->V)
        ++c->end_bit; /* ids are below V: only these bits need sorting */
    const size_t ints = (size_t)a->T * sizeof(int);
    const char *e = kb_cuda_status(cub::DeviceRadixSort::SortPairs(
        NULL, c->temp_bytes, a->ids, c->sorted_ids, c->order, c->sorted_order, a->T, 0, c->end_bit));
    if (!e)
        e = kb_cuda_status(cudaMalloc(&c->order, ints));
    if (!e)
        e = kb_cuda_status(cudaMalloc(&c->sorted_order, ints));
    if (!e)
        e = kb_cuda_status(cudaMalloc(&c->sorted_ids, ints));
    if (!e)
        e = kb_cuda_status(cudaMalloc(&c->start, ((size_t)a->V + 1) * sizeof(int)));
    if (!e)
        e = kb_cuda_status(cudaMalloc(&c->temp, c->temp_bytes));
    if (!e) {
        embedding_backward_iota<<<KB_CEIL_DIV(a->T, 256), 256>>>(c->order, a->T);
        e = kb_cuda_status(cudaDeviceSynchronize());
    }
    if (e) {
        teardown(c);
        return e;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_embedding_backward_args *a = (const kb_embedding_backward_args *)args;
    sorted_ctx *c = (sorted_ctx *)ctx;
    KB_CUDA_TRY(cub::DeviceRadixSort::SortPairs(c->temp, c->temp_bytes, a->ids, c->sorted_ids, c->order,
                                                c->sorted_order, a->T, 0, c->end_bit, stream));
    embedding_backward_runs<<<KB_CEIL_DIV(a->V + 1, 256), 256, 0, stream>>>(c->sorted_ids, a->T, a->V, c->start);
    KB_CUDA_TRY(cudaGetLastError());
    embedding_backward_rows<<<a->V, BLOCK, 0, stream>>>(*a, c->sorted_order, c->start);
    KB_LAUNCHED();
}

extern "C" const kb_variant embedding_backward_sorted[] = {
    {
        .name = "sorted",
        .summary = "tokens sorted by id (stable), a block a row sums its tokens in order: deterministic",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
