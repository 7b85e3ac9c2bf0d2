/* The cross_entropy op. */
#include "ops/cross_entropy.h"
#include "ops/embed.h"

extern const kb_variant *const cross_entropy_variants[];

static double flops(const kb_shape *s) { return 5.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_CE_TENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], V = s->d[1];
    switch (i) {
    case KB_CE_Z: return kb_tensor_of("z", kb_mul_dims(R, V), t, KB_IN, R, V, 0, 0);
    case KB_CE_TARGETS: return kb_tensor_of("targets", R, KB_I32, KB_IN, R, 1, 0, 0);
    case KB_CE_LOSS: return kb_tensor_of("loss", R, KB_F32, KB_OUT, R, 1, V, 4.0 * V);
    default: return kb_tensor_of("dz", kb_mul_dims(R, V), t, KB_OUT, R, V, V, 6.0 * V);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_cross_entropy_args *)args = (kb_cross_entropy_args){
        (int)s->d[0], (int)s->d[1], (float)(1.0 / (double)cross_entropy_counted(s->d[0])), dev[KB_CE_Z],
        dev[KB_CE_TARGETS], dev[KB_CE_LOSS], dev[KB_CE_DZ]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    cross_entropy_reference(s->d[0], s->d[1], t, in[KB_CE_Z], in[KB_CE_TARGETS], out, rows, nrows, ref);
}

/* z in [-4, 4] and targets in [0, V), with the rows cross_entropy.h plants. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    const int64_t R = s->d[0], V = s->d[1];
    if (i == KB_CE_TARGETS) {
        kb_fill_ids(x, n, V, seed);
        for (int64_t r = 0; r < R; ++r)
            if (cross_entropy_ignored(r, R))
                x[r] = (float)KB_CE_IGNORE;
        if (R >= 4)
            x[0] = 0;
        return;
    }
    kb_fill_uniform(x, n, seed);
    for (int64_t k = 0; k < n; ++k)
        x[k] *= 4.0f;
    if (R >= 4)
        x[0] += 1000.0f;
}

const kb_op kb_op_cross_entropy = {
    .name = "cross_entropy",
    .summary = "loss and dlogits of softmax cross-entropy, label smoothing 0.1, ignore index -100; f32 and bf16",
    .shape_fields = "RxV",
    .nd = 2,
    /* 8192 tokens at the vocabularies of Llama 2 (32000), GPT-2 (50257:
     * no multiple of 4) and Llama 3 (128256) */
    .families = (const kb_family[]){{"vocab", "V", "8192x32000,8192x50257,8192x128256", 1},
                                    {"hostile", NULL, "1x1,3x5,7x1001,51x33,4x2", 1},
                                    {NULL}},
    .test_sizes = "1x1,1x3,4x2,7x31,5x33,64x128,33x1000,8x1024,9x4097,3x32768,5x65537,100x50257,2x128256",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = cross_entropy_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_cross_entropy_args),
};
