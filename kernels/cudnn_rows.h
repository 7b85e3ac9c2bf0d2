/* The host side of the softmax variants that call cuDNN's legacy API
 * (softmax cudnn, softmax_backward cudnn): one handle and one descriptor
 * of the R x C matrix as R x C x 1 x 1 (NCHW), under which MODE_INSTANCE
 * works on each row (an image's C*H*W), made in setup outside timing. */
#ifndef KBENCH_CUDNN_ROWS_H
#define KBENCH_CUDNN_ROWS_H

#include <cudnn.h>
#include <stdlib.h>

typedef struct {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t desc;
} kb_cudnn_rows;

static inline const char *kb_cudnn_status(cudnnStatus_t s)
{
    return s == CUDNN_STATUS_SUCCESS ? NULL : cudnnGetErrorString(s);
}

static void kb_cudnn_rows_teardown(void *p)
{
    kb_cudnn_rows *c = (kb_cudnn_rows *)p;
    if (!c)
        return;
    if (c->desc)
        cudnnDestroyTensorDescriptor(c->desc);
    if (c->handle)
        cudnnDestroy(c->handle);
    free(c);
}

/* A handle and the descriptor of R rows of C elements of type T into *ctx. */
static const char *kb_cudnn_rows_setup(int R, int C, cudnnDataType_t T, void **ctx)
{
    kb_cudnn_rows *c = (kb_cudnn_rows *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *e = kb_cudnn_status(cudnnCreate(&c->handle));
    if (!e)
        e = kb_cudnn_status(cudnnCreateTensorDescriptor(&c->desc));
    if (!e)
        e = kb_cudnn_status(cudnnSetTensor4dDescriptor(c->desc, CUDNN_TENSOR_NCHW, T, R, C, 1, 1));
    if (e) {
        kb_cudnn_rows_teardown(c);
        return e;
    }
    *ctx = c;
    return NULL;
}

/* The handle on the launch's stream. */
static const char *kb_cudnn_rows_on(kb_cudnn_rows *c, cudaStream_t stream)
{
    return kb_cudnn_status(cudnnSetStream(c->handle, stream));
}

#endif
