/* The gather op: embedding rows into the fp32 residual stream. */
#include "ops/embed.h"
#include "ops/gather.h"

extern const kb_variant *const gather_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t T = s->d[0], V = s->d[1], D = s->d[2];
    switch (i) {
    case 0: return kb_tensor_of("ids", T, KB_I32, KB_IN, T, 1, 0, 0);
    case 1: return kb_tensor_of("table", kb_mul_dims(V, D), t, KB_IN, V, D, 0, 0);
    default: return kb_tensor_of("x", kb_mul_dims(T, D), KB_F32, KB_OUT, T, D, 1, (double)D);
    }
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    const double T = (double)s->d[0], D = (double)s->d[2];
    return 4 * T + T * D * (double)(t == KB_F32 ? 4 : 2) + 4 * T * D;
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_gather_args *)args = (kb_gather_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], dev[0], dev[1], dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t D = s->d[2];
    const int *ids = in[0];
    for (int r = 0; r < nrows; ++r)
        kb_widen(in[1], (int64_t)ids[rows[r]] * D, D, t, ref + r * D);
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_embedding(i, s->d[1], x, n, seed);
}

const kb_op kb_op_gather = {
    .name = "gather",
    .summary = "x = E[ids] as fp32 rows: a token embedding from an f32 or bf16 table",
    .shape_fields = "TxVxD",
    .nd = 3,
    /* a SmolLM2-135M prefill of 512 tokens, a 4096-wide decode step, a 2048-token prefill at d 2048 */
    .families = (const kb_family[]){{"models", NULL, "512x49152x576,1x32000x4096,2048x32000x2048", 1},
                                    {"hostile", NULL, "1x1x1,3x1000x33,77x5x7"},
                                    {NULL}},
    .test_sizes = "1x1x1,3x1000x33,77x5x7,1x49152x576,13x1001x256,5x3x4096",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = gather_variants,
    .fill = fill,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_gather_args),
};
