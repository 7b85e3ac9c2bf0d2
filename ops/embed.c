/* The embed op: embedding lookup plus positional encoding. */
#include <stdlib.h>
#include "ops/embed.h"
#include "ops/posenc.h"

extern const kb_variant *const embed_variants[];

static int64_t tokens(const kb_shape *s) { return kb_mul_dims(s->d[0], s->d[1]); }
static double flops(const kb_shape *s) { return (double)tokens(s) * s->d[3]; }
static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    return 4.0 * tokens(s) + 8.0 * tokens(s) * s->d[3];
}
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int64_t n = tokens(s), V = s->d[2], D = s->d[3];
    switch (i) {
    case 0: return kb_tensor_of("ids", n, KB_I32, KB_IN, n, 1, 0, 0);
    case 1: return kb_tensor_of("table", kb_mul_dims(V, D), t, KB_IN, V, D, 0, 0);
    /* The positional encoding's sine of position * frequency: its argument
     * grows to T, its error with it, as posenc's (T^2 as a length). */
    default: return kb_tensor_of("y", kb_mul_dims(n, D), t, KB_OUT, n, D, kb_mul_dims(s->d[1], s->d[1]), 20.0 * D);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_embed_args *)args = (kb_embed_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3],
                                             dev[0], dev[1], dev[2]};
}

/* Row r is token r: its table row plus PE at position r % T. */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)out;
    const int T = (int)s->d[1], D = (int)s->d[3];
    const int *ids = in[0];
    const float *table = in[1];
    int64_t *pos = calloc((size_t)nrows + 1, sizeof *pos);
    for (int r = 0; r < nrows; ++r)
        pos[r] = rows[r] % T;
    posenc_reference_rows(D, KB_POSENC_SEED_SCALE, pos, nrows, ref);
    for (int r = 0; r < nrows; ++r)
        for (int j = 0; j < D; ++j)
            ref[(int64_t)r * D + j] += table[(int64_t)ids[rows[r]] * D + j];
    free(pos);
}

void kb_fill_ids(float *x, int64_t n, int64_t V, uint64_t seed)
{
    kb_fill_uniform(x, n, seed);
    for (int64_t k = 0; k < n; ++k) {
        int64_t id = (int64_t)((x[k] + 1.0f) * 0.5f * (float)V);
        x[k] = (float)(id < V ? id : V - 1);
    }
}

void kb_fill_embedding(int i, int64_t V, float *x, int64_t n, uint64_t seed)
{
    if (i == 0)
        kb_fill_ids(x, n, V, seed);
    else
        kb_fill_uniform(x, n, seed);
}

/* ids: integral values spread over [0, V); the table: the default uniform fill. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_embedding(i, s->d[2], x, n, seed);
}

const kb_op kb_op_embed = {
    .name = "embed",
    .summary = "y = table[ids] + PE: embedding lookup with the positional encoding",
    .shape_fields = "BxTxVxD",
    .nd = 4,
    /* models: BERT-ish, GPT-2, GPT-2 medium at 2048 tokens, a 4096-wide LLM */
    .families = (const kb_family[]){{"models", NULL, "32x128x32000x512,8x512x32000x768,4x2048x50257x1024,16x1024x32000x4096", 1},
                                    {"hostile", NULL, "1x1x1x1,3x77x1000x33", 1},
                                    {NULL}},
    .test_sizes = "1x1x1x1,1x5x7x5,2x3x10x4,3x77x1000x33,2x128x500x512,1x9x3x1001",
    .baseline = {[KB_F32] = "separate"},
    .variants = embed_variants,
    .fill = fill,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_embed_args),
};
