/* The embedding_backward op. */
#include "ops/embed.h"
#include "ops/embedding_backward.h"

extern const kb_variant *const embedding_backward_variants[];

static double flops(const kb_shape *s) { return (double)s->d[0] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_EMB_TENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t T = s->d[0], V = s->d[1], D = s->d[2];
    switch (i) {
    case KB_EMB_IDS: return kb_tensor_of("ids", T, KB_I32, KB_IN, T, 1, 0, 0);
    case KB_EMB_DX: return kb_tensor_of("dx", kb_mul_dims(T, D), t, KB_IN, T, D, 0, 0);
    default: return kb_tensor_of("dE", kb_mul_dims(V, D), t, KB_OUT, V, D, T, (double)T + 2.0 * D);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_embedding_backward_args *)args = (kb_embedding_backward_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], dev[KB_EMB_IDS], dev[KB_EMB_DX], dev[KB_EMB_DE]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)out;
    embedding_backward_reference(s->d[0], s->d[2], in[KB_EMB_IDS], in[KB_EMB_DX], rows, nrows, ref);
}

/* ids spread over [0, V), every fourth one 0 when T >= 8; dx uniform. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_embedding(i, s->d[1], x, n, seed);
    for (int64_t t = 0; i == KB_EMB_IDS && s->d[0] >= 8 && t < n; t += 4)
        x[t] = 0;
}

const kb_op kb_op_embedding_backward = {
    .name = "embedding_backward",
    .summary = "dE = scatter-add of dx rows by token id: a token embedding's table gradient, fp32",
    .shape_fields = "TxVxD",
    .nd = 3,
    /* a training step's 8192 tokens into the tables of SmolLM2-135M
     * (49152 x 576), Llama-3.2-1B (128256 x 2048) and a 32000 x 4096 one */
    .families = (const kb_family[]){{"models", NULL, "8192x49152x576,8192x128256x2048,8192x32000x4096", 1},
                                    {"hostile", NULL, "1x1x1,3x1000x33,77x5x7,9x2x4097", 1},
                                    {NULL}},
    .test_sizes = "1x1x1,3x1000x33,77x5x7,8x1x3,9x2x4097,1000x17x256,4096x49152x576,13x1001x255",
    .baseline = {[KB_F32] = "atomic"},
    .variants = embedding_backward_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_embedding_backward_args),
};
