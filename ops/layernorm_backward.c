/* The layernorm_backward op. */
#include "ops/layernorm.h"
#include "ops/layernorm_backward.h"
#include "ops/rowwise.h"

extern const kb_variant *const layernorm_backward_variants[];

static double flops(const kb_shape *s) { return 14.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_LNB_TENSORS; }

/* Per row of dx: two passes of some 5 operations an element.  Per column
 * of dgamma or dbeta: a sum over the R rows. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    kb_tensor stat = kb_tensor_of(i == KB_LNB_MEAN ? "mean" : "rstd", R, KB_F32, KB_IN, R, 1, 0, 0);
    stat.derived = 1;
    switch (i) {
    case KB_LNB_X: return kb_rowwise_matrix("x", s, t, KB_IN, 0);
    case KB_LNB_GAMMA: return kb_rowwise_vector("gamma", s, t);
    case KB_LNB_DY: return kb_rowwise_matrix("dy", s, t, KB_IN, 0);
    case KB_LNB_MEAN:
    case KB_LNB_RSTD: return stat;
    case KB_LNB_DX: return kb_rowwise_matrix("dx", s, t, KB_OUT, 10.0 * C);
    case KB_LNB_DGAMMA: return kb_tensor_of("dgamma", C, t, KB_OUT, C, 1, R, 3.0 * R);
    default: return kb_tensor_of("dbeta", C, t, KB_OUT, C, 1, R, (double)R);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_layernorm_backward_args *)args = (kb_layernorm_backward_args){
        (int)s->d[0], (int)s->d[1], dev[KB_LNB_X], dev[KB_LNB_GAMMA], dev[KB_LNB_DY], dev[KB_LNB_MEAN],
        dev[KB_LNB_RSTD], dev[KB_LNB_DX], dev[KB_LNB_DGAMMA], dev[KB_LNB_DBETA]};
}

/* mean and rstd as the forward saves them. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    layernorm_backward_stats(s->d[0], s->d[1], KB_LAYERNORM_EPS, t, host[KB_LNB_X], host[KB_LNB_MEAN],
                             host[KB_LNB_RSTD]);
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    layernorm_backward_reference(s->d[0], s->d[1], t, in[KB_LNB_X], in[KB_LNB_GAMMA], in[KB_LNB_DY], in[KB_LNB_MEAN],
                                 in[KB_LNB_RSTD], out, rows, nrows, ref);
}

const kb_op kb_op_layernorm_backward = {
    .name = "layernorm_backward",
    .summary = "dx, dgamma, dbeta of LayerNorm from x, gamma, dy and the forward's mean and rstd; f32 and bf16",
    .shape_fields = KB_ROWWISE_FIELDS,
    .nd = 2,
    /* A transformer's widths at 16384 tokens, and 65536 tokens at 4096:
     * dgamma and dbeta reduce over the tokens. */
    .families = (const kb_family[]){{"transformer", "C", "16384x768,16384x4096", 1},
                                    {"tokens", "R", "4096x4096,65536x4096"},
                                    {"hostile", NULL, "1x1,1x4097,4099x33,1023x1000", 1},
                                    {NULL}},
    .test_sizes = "1x1,1x3,4x2,7x31,5x33,64x128,33x1000,8x1024,9x4097,1000x768,257x4096,3000x5",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = layernorm_backward_variants,
    KB_OP_CONTRACT(kb_layernorm_backward_args),
    .fill = layernorm_fill, /* layernorm's numerics rows in x (tensor 0); dy and gamma uniform */
    .prepare = prepare,
};
