/* softmax_backward cudnn: the library baseline, cudnnSoftmaxBackward in its
 * accurate mode over each row (the R x C matrix described as R x C x 1 x 1,
 * MODE_INSTANCE: a row is an image's C*H*W), the forward's call mirrored.
 * The handle and the tensor descriptor are made in setup, outside timing.
 * Measured (run 2 of docs/notes/backward.md, H200, cold L2): 2,739 GB/s at
 * 65536x4096, 56.9% of the datasheet's 4814 GB/s; 9.5% at 128x262144.
 * Gap to the limit: 43 points at 65536x4096. */
#include <cudnn.h>
#include <stdlib.h>
#include "ops/softmax_backward.h"

typedef struct {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t desc;
} cudnn_ctx;

static const char *status(cudnnStatus_t s)
{
    return s == CUDNN_STATUS_SUCCESS ? NULL : cudnnGetErrorString(s);
}

static void teardown(void *p)
{
    cudnn_ctx *c = (cudnn_ctx *)p;
    if (!c)
        return;
    if (c->desc)
        cudnnDestroyTensorDescriptor(c->desc);
    if (c->handle)
        cudnnDestroy(c->handle);
    free(c);
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    cudnn_ctx *c = (cudnn_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *e = status(cudnnCreate(&c->handle));
    if (!e)
        e = status(cudnnCreateTensorDescriptor(&c->desc));
    if (!e)
        e = status(cudnnSetTensor4dDescriptor(c->desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, a->R, a->C, 1, 1));
    if (e) {
        teardown(c);
        return e;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    cudnn_ctx *c = (cudnn_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    const char *e = status(cudnnSetStream(c->handle, stream));
    if (e)
        return e;
    return status(cudnnSoftmaxBackward(c->handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, c->desc,
                                       a->y, c->desc, a->dy, &zero, c->desc, a->dx));
}

extern "C" const kb_variant softmax_backward_cudnn[] = {
    {
        .name = "cudnn",
        .summary = "cudnnSoftmaxBackward, accurate mode (library baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUDNN,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
