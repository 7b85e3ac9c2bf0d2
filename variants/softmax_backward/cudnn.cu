/* softmax_backward cudnn: the library baseline, cudnnSoftmaxBackward in its
 * accurate mode over each row (the R x C matrix described as R x C x 1 x 1,
 * MODE_INSTANCE: a row is an image's C*H*W), the forward's call mirrored.
 * The handle and the tensor descriptor (kernels/cudnn_rows.h) are made in
 * setup, outside timing.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 2743
 * GB/s at 65536x4096 (1.17 ms), 64.7% of the run's 4239 GB/s memory
 * ceiling; 459 GB/s (10.8%) at 128x262144.
 * Gap to the limit: 35.3 points at 65536x4096. */
#include "ops/softmax_backward.h"
#include "kernels/cudnn_rows.h"

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    return kb_cudnn_rows_setup(a->R, a->C, CUDNN_DATA_FLOAT, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    kb_cudnn_rows *c = (kb_cudnn_rows *)ctx;
    const float one = 1.0f, zero = 0.0f;
    const char *e = kb_cudnn_rows_on(c, stream);
    if (e)
        return e;
    return kb_cudnn_status(cudnnSoftmaxBackward(c->handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                                &one, c->desc, a->y, c->desc, a->dy, &zero, c->desc, a->dx));
}

extern "C" const kb_variant softmax_backward_cudnn[] = {
    {
        .name = "cudnn",
        .summary = "cudnnSoftmaxBackward, accurate mode (library baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUDNN,
        .setup = setup,
        .teardown = kb_cudnn_rows_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
