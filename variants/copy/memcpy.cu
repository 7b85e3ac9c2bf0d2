/* copy memcpy: cudaMemcpyAsync device to device, the baseline.  The driver
 * runs this on copy kernels of its own; what it reaches is the usual
 * reference for "the memory ceiling".
 * Measured on H100 (results/h100/, cold L2): 3,002 GB/s (99.8% of the copy
 * ceiling) at 268435456. */
#include "kernels/copy.h"
#include "kernels/cuda_util.h"

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_copy_args *a = (const kb_copy_args *)args;
    (void)ctx;
    return kb_cuda_status(cudaMemcpyAsync(a->dst, a->src, (size_t)a->n * sizeof(float),
                                          cudaMemcpyDeviceToDevice, stream));
}

extern "C" const kb_variant copy_memcpy = {
    .name = "memcpy",
    .summary = "cudaMemcpyAsync device-to-device (baseline)",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .launch = launch,
};
