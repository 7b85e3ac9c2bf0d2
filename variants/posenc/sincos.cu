/* posenc sincos: one thread per (position, pair): the frequency of each
 * pair comes from a per-block shared-memory table (one expf per pair per
 * block, not per element), and one sincosf gives both columns, stored
 * together as a float2 when D is even.
 * Builds on naive: ~2x less SFU work per element (one sincos for two
 * values, no expf), so closer to store-bound.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,996 GB/s
 * at 8192x4096, 66.4% of the run's 3005 GB/s memory ceiling, 2.37x naive.
 * Gap to the limit: 34 points to the table's stores (4*T*D bytes) at the
 * ceiling.  History: docs/notes/elementwise.md. */
#include "kernels/cuda_util.h"
#include "kernels/posenc.cuh"
#include "ops/posenc.h"

#define BLOCK 256
#define MAX_PAIRS 4096 /* pairs with a shared-memory frequency; more use expf */

__global__ void __launch_bounds__(BLOCK) posenc_sincos_kernel(int T, int D, float scale, float *pe)
{
    __shared__ float w[MAX_PAIRS];
    const int pairs = (D + 1) / 2, cached = pairs < MAX_PAIRS ? pairs : MAX_PAIRS;
    for (int i = threadIdx.x; i < cached; i += BLOCK)
        w[i] = kb_pe_frequency(i, D, scale);
    __syncthreads();
    const int64_t n = (int64_t)T * pairs;
    for (int64_t idx = (int64_t)blockIdx.x * BLOCK + threadIdx.x; idx < n;
         idx += (int64_t)gridDim.x * BLOCK) {
        const int pos = (int)(idx / pairs), i = (int)(idx % pairs);
        const float wi = i < cached ? w[i] : kb_pe_frequency(i, D, scale);
        float s, c;
        sincosf((float)pos * wi, &s, &c);
        float *row = pe + (int64_t)pos * D;
        if (D % 2 == 0) {
            reinterpret_cast<float2 *>(row)[i] = make_float2(s, c);
        } else {
            row[2 * i] = s;
            if (2 * i + 1 < D)
                row[2 * i + 1] = c;
        }
    }
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_posenc_args *a = (const kb_posenc_args *)args;
    (void)ctx;
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int64_t blocks = KB_CEIL_DIV((int64_t)a->T * ((a->D + 1) / 2), BLOCK);
    int grid = (int)(blocks < 16 * sms ? blocks : 16 * sms);
    posenc_sincos_kernel<<<grid, BLOCK, 0, stream>>>(a->T, a->D, a->scale, a->pe);
    KB_LAUNCHED();
}

extern "C" const kb_variant posenc_sincos[] = {
    {
        .name = "sincos",
        .summary = "one thread per (pos, pair): shared frequencies, one sincosf, float2 stores",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
