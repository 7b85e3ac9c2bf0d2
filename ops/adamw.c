/* The adamw op: a clipped, fused AdamW step over one flat buffer. */
#include <math.h>
#include "ops/adamw.h"

extern const kb_variant *const adamw_variants[];

static double flops(const kb_shape *s) { return 18.0 * s->d[0]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_ADW_TENSORS; }

/* Each output one row, as copy's: any N, and the reference spreads the
 * row over the threads.  A row costs the norm's pass and the step's. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    static const char *const names[KB_ADW_TENSORS] = {"grad", "master", "m", "v", "param", "norm"};
    const int64_t N = s->d[0];
    switch (i) {
    case KB_ADW_GRAD: return kb_tensor_of(names[i], N, t, KB_IN, 1, N, 0, 0);
    case KB_ADW_PARAM: return kb_tensor_of(names[i], N, KB_BF16, KB_OUT, 1, N, 1, 20.0 * N);
    case KB_ADW_NORM: return kb_tensor_of(names[i], 1, KB_F32, KB_OUT, 1, 1, N, 2.0 * N);
    default: return kb_tensor_of(names[i], N, KB_F32, KB_INOUT, 1, N, 1, 20.0 * N);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_adamw_args *)args = (kb_adamw_args){s->d[0], dev[KB_ADW_GRAD], dev[KB_ADW_MASTER], dev[KB_ADW_M],
                                             dev[KB_ADW_V], dev[KB_ADW_PARAM], dev[KB_ADW_NORM]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)rows, (void)nrows;
    adamw_reference(s->d[0], t, in[KB_ADW_GRAD], in[KB_ADW_MASTER], in[KB_ADW_M], in[KB_ADW_V], out, ref);
}

/* m and v at the clipped gradient's scale; element 0's grad and v zero. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    const int64_t N = s->d[0];
    const float scale = (float)fmin(1.0, KB_ADAMW_MAX_NORM / sqrt(N / 3.0));
    kb_fill_uniform(x, n, seed);
    if (i == KB_ADW_M || i == KB_ADW_V) {
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; ++j)
            x[j] = i == KB_ADW_M ? x[j] * scale : (x[j] * scale) * (x[j] * scale);
    }
    if ((i == KB_ADW_GRAD || i == KB_ADW_V) && N >= 2)
        x[0] = 0;
}

const kb_op kb_op_adamw = {
    .name = "adamw",
    .summary = "a fused AdamW step, global-norm clip 1.0: fp32 master, m, v, bf16 params; f32 or bf16 gradients",
    .shape_fields = "N",
    .nd = 1,
    /* GPT-2 small's 124M parameters and Llama-3.2-1B's 1.24B (tied embeddings) */
    .families = (const kb_family[]){{"models", "N", "124000000,1235814400", 1, "124000000"},
                                    {"hostile", NULL, "1,3,1001"},
                                    {NULL}},
    .test_sizes = "1,2,3,5,1001,4097,65537,1048579",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = adamw_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_adamw_args),
};
