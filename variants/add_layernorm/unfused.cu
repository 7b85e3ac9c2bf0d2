/* add_layernorm unfused: the baseline, two kernels as an unfused framework
 * runs them: a residual-add kernel writes sum = x + r (grid-stride, float4
 * with a scalar tail), then a LayerNorm kernel reads sum back and writes y.
 * The LayerNorm step is the layernorm/welford variant itself, called through
 * its launcher on sum: row in registers, one read of sum.
 *
 * Idea: what fusion is measured against.
 * Prediction: 24 bytes moved per element (x, r read; sum written; sum read
 * back; y written) for 16 counted: ~2/3 of the copy ceiling at best, a bit
 * less for the second launch and, for small matrices, sum still in L2
 * helps (which it cannot for >= 256 MB).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,308 GB/s
 * at 65536x4096, 76.8% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 23 points, the round trip of sum through memory (fused
 * removes it).  History: docs/notes/softmax-layernorm.md. */
#include "ops/add_layernorm.h"
#include "kernels/cuda_util.h"
#include "ops/layernorm.h"

extern "C" const kb_variant layernorm_welford;

#define ADD_BLOCK 256
#define ADD_WAVES 8 /* blocks per SM for the grid-stride add */

__global__ void __launch_bounds__(ADD_BLOCK) add_layernorm_unfused_add_kernel(int64_t n, const float *__restrict__ x,
                                                                             const float *__restrict__ r,
                                                                             float *__restrict__ sum)
{
    const int64_t n4 = n / 4, stride = (int64_t)gridDim.x * ADD_BLOCK;
    const int64_t first = (int64_t)blockIdx.x * ADD_BLOCK + threadIdx.x;
    for (int64_t i = first; i < n4; i += stride) {
        float4 a = __ldcs(reinterpret_cast<const float4 *>(x) + i);
        float4 b = __ldcs(reinterpret_cast<const float4 *>(r) + i);
        /* plain store: the LayerNorm kernel reads sum back */
        reinterpret_cast<float4 *>(sum)[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    if (first < n - n4 * 4) /* the last n % 4 elements */
        sum[n4 * 4 + first] = x[n4 * 4 + first] + r[n4 * 4 + first];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_add_layernorm_args *a = (const kb_add_layernorm_args *)args;
    (void)ctx;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t n = (int64_t)a->R * a->C;
    const int64_t blocks = KB_CEIL_DIV(n / 4 > 0 ? n / 4 : 1, ADD_BLOCK);
    const int grid = (int)(blocks < (int64_t)ADD_WAVES * sms ? blocks : (int64_t)ADD_WAVES * sms);
    add_layernorm_unfused_add_kernel<<<grid, ADD_BLOCK, 0, stream>>>(n, a->x, a->r, a->sum);
    const char *e = kb_cuda_status(cudaGetLastError());
    if (e)
        return e;
    const kb_layernorm_args ln = {a->R, a->C, a->eps, a->sum, a->gamma, a->beta, a->y};
    return layernorm_welford.launch(&ln, NULL, stream);
}

extern "C" const kb_variant add_layernorm_unfused[] = {
    {
        .name = "unfused",
        .summary = "residual-add kernel, then layernorm welford's kernel reading sum back (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
