/* copy memcpy: cudaMemcpyAsync device to device, the baseline.  The driver
 * runs this on copy kernels of its own; what it reaches is the usual
 * reference for "the memory ceiling".
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 3,005 GB/s
 * at 268435456, 100.0% of the run's 3005 GB/s memory ceiling, which it sets.
 * Gap to the limit: none to the measured ceiling; 90% of the 3352 GB/s
 * datasheet figure (docs/ceilings.md says why the two differ). History:
 * docs/notes/elementwise.md. */
#include "ops/copy.h"
#include "kernels/cuda_util.h"

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_copy_args *a = (const kb_copy_args *)args;
    (void)ctx;
    return kb_cuda_status(cudaMemcpyAsync(a->dst, a->src, (size_t)a->n * sizeof(float),
                                          cudaMemcpyDeviceToDevice, stream));
}

extern "C" const kb_variant copy_memcpy[] = {
    {
        .name = "memcpy",
        .summary = "cudaMemcpyAsync device-to-device (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
