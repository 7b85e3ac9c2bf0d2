/* softmax cudnn: the library baseline, cudnnSoftmaxForward in its accurate
 * (max-subtracting) mode over each row: the R x C matrix is described as
 * R x C x 1 x 1, and MODE_INSTANCE normalizes over C*H*W per image.
 * The handle and the tensor descriptor are made in setup, outside timing.
 * cuDNN gives NaN for a row that is entirely -inf (measured on H100), so it
 * carries KB_QUIRK_NAN_ON_MASKED_ROW and is not given such a row.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 3,008 GB/s
 * at 65536x4096, 100.1% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: none at 65536x4096; long rows fall off (77.4% at
 * 1024x32768, 12.6% at 128x262144).
 * History: docs/notes/softmax-layernorm.md.
 * The f16 form: the same call on CUDNN_DATA_HALF tensors.  Measured f16
 * (results/h200/kbench-20261202-075017.csv, H200, cold L2): 2,288 GB/s at
 * 65536x4096, 54.0% of that run's 4237 GB/s memory ceiling; 20.6% at
 * 1024x32768, 5.0% at 128x262144. */
#include "ops/softmax.h"
#include "kernels/cudnn_rows.h"

/* The tensors described as cuDNN type T (CUDNN_DATA_FLOAT or _HALF). */
template <cudnnDataType_t T>
static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    return kb_cudnn_rows_setup(a->R, a->C, T, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    kb_cudnn_rows *c = (kb_cudnn_rows *)ctx;
    const float one = 1.0f, zero = 0.0f;
    const char *e = kb_cudnn_rows_on(c, stream);
    if (e)
        return e;
    return kb_cudnn_status(cudnnSoftmaxForward(c->handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                               &one, c->desc, a->x, &zero, c->desc, a->y));
}

extern "C" const kb_variant softmax_cudnn[] = {
    {
        .name = "cudnn",
        .summary = "cudnnSoftmaxForward, accurate mode (library baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUDNN,
        .quirks = KB_QUIRK_NAN_ON_MASKED_ROW, /* cuDNN: an all -inf row gives NaN */
        .setup = setup<CUDNN_DATA_FLOAT>,
        .teardown = kb_cudnn_rows_teardown,
        .launch = launch,
    },
    {
        .name = "cudnn",
        .summary = "cudnnSoftmaxForward, accurate mode, f16 (library baseline)",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .needs = KB_NEEDS_CUDNN,
        .quirks = KB_QUIRK_NAN_ON_MASKED_ROW,
        .setup = setup<CUDNN_DATA_HALF>,
        .teardown = kb_cudnn_rows_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
