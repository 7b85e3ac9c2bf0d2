/* The embed_t op: the fp32 stages' embedding from the transposed table. */
#include <math.h>
#include "ops/embed.h"
#include "ops/embed_t.h"

extern const kb_variant *const embed_t_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return 4; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t T = s->d[0], V = s->d[1], D = s->d[2];
    switch (i) {
    case 0: return kb_tensor_of("ids", T, KB_I32, KB_IN, T, 1, 0, 0);
    case 1: return kb_tensor_of("table_t", kb_mul_dims(D, V), t, KB_IN, D, V, 0, 0);
    case 2: return kb_tensor_of("pe", kb_mul_dims(T, D), t, KB_IN, T, D, 0, 0);
    default: return kb_tensor_of("x", kb_mul_dims(T, D), t, KB_OUT, T, D, 1, 2.0 * D);
    }
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    return 4.0 * s->d[0] + 12.0 * s->d[0] * s->d[2];
}

/* The paper stage's form: scale sqrt(D), with a positional table. */
static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_embed_t_args *)args = (kb_embed_t_args){(int)s->d[0], (int)s->d[1], (int)s->d[2],
                                                 sqrtf((float)s->d[2]), dev[0], dev[1], dev[2], dev[3]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)out;
    const int64_t V = s->d[1], D = s->d[2];
    const int *ids = in[0];
    const float *table_t = in[1], *pe = in[2], scale = sqrtf((float)D);
    for (int r = 0; r < nrows; ++r)
        for (int64_t c = 0; c < D; ++c)
            ref[r * D + c] = (double)scale * table_t[c * V + ids[rows[r]]] + pe[rows[r] * D + c];
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_embedding(i, s->d[1], x, n, seed);
}

const kb_op kb_op_embed_t = {
    .name = "embed_t",
    .summary = "x = scale * Et[:, ids] + pe, fp32: the fp32 stages' embedding from the transposed table",
    .shape_fields = "TxVxD",
    .nd = 3,
    /* the stages' shape (SmolLM2-135M's sizes) at a 512-token prompt, and a GPT-2 sized one */
    .families = (const kb_family[]){{"stages", NULL, "512x49152x576,1024x50257x768", 1},
                                    {"hostile", NULL, "1x1x1,3x1000x33,77x5x7"},
                                    {NULL}},
    .test_sizes = "1x1x1,3x1000x33,77x5x7,40x49152x576,13x1001x256",
    .baseline = {[KB_F32] = "naive"},
    .variants = embed_t_variants,
    .fill = fill,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_embed_t_args),
};
