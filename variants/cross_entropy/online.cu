/* cross_entropy online: a 1024-thread block a row, two reads of the
 * logits.  The first read folds the row into one running (max, sum of
 * exponentials) pair per thread (Milakov & Gimelshein's online softmax)
 * and a running sum for the smoothing term's mean, merged over the block
 * by shuffles and shared memory; the second read writes dz from the row's
 * (max, sum).  16-byte (f32) or 8-byte (bf16) packs when V % 4 == 0, else
 * scalars.  The loss comes from the same pair and one load of the target's
 * logit.
 *
 * Builds on naive: a block a row, coalesced packed loads, and the max and
 * the sum in one pass instead of two.
 * Prediction: the first read keeps the row in L2 (cached loads) for the
 * second while the rows in flight fit it: 2 blocks an SM at V = 32000 are
 * 264 rows, 34 MB in f32 and 17 MB in bf16 of the 60 MB L2: ~85% of the
 * copy ceiling; at V = 128256 (135 and 68 MB in flight) the second read
 * comes mostly from memory: ~65%.
 * Measured (run 2 of docs/notes/backward.md, H200, cold L2): 2,846 GB/s
 * (f32) and 2,435 GB/s (bf16) at 8192x128256, 59.1% and 50.6% of the
 * datasheet's 4814 GB/s, 4.5x and 10x PyTorch eager's loss forward and
 * backward; 38.9% at V = 50257 (scalar loads).
 * Gap to the limit: 41 points in f32: the second read comes from memory,
 * not L2; bf16 is bound by its two exponentials an element as much as by
 * its bytes. */
#include "kernels/cross_entropy_row.cuh"

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    (void)ctx;
    const kb_cross_entropy_args *a = (const kb_cross_entropy_args *)args;
    return kb_cross_entropy_online<T>(*a, a->V, stream);
}

extern "C" const kb_variant cross_entropy_online[] = {
    {
        .name = "online",
        .summary = "a block a row, online (max, sum) in one read, dz from a second",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "online",
        .summary = "a block a row, online (max, sum) in one read, dz from a second; bf16 logits and dz",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
