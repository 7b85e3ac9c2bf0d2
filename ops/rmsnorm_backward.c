/* The rmsnorm_backward op. */
#include "ops/rmsnorm.h"
#include "ops/rmsnorm_backward.h"
#include "ops/rowwise.h"

extern const kb_variant *const rmsnorm_backward_variants[];

static double flops(const kb_shape *s) { return 10.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_RMB_TENSORS; }

/* Per row of dx: two passes of some 4 operations an element.  Per column
 * of dgamma: a sum over the R rows. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    kb_tensor rstd = kb_tensor_of("rstd", R, KB_F32, KB_IN, R, 1, 0, 0);
    rstd.derived = 1;
    switch (i) {
    case KB_RMB_X: return kb_rowwise_matrix("x", s, t, KB_IN, 0);
    case KB_RMB_GAMMA: return kb_rowwise_vector("gamma", s, t);
    case KB_RMB_DY: return kb_rowwise_matrix("dy", s, t, KB_IN, 0);
    case KB_RMB_RSTD: return rstd;
    case KB_RMB_DX: return kb_rowwise_matrix("dx", s, t, KB_OUT, 8.0 * C);
    default: return kb_tensor_of("dgamma", C, t, KB_OUT, C, 1, R, 3.0 * R);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_rmsnorm_backward_args *)args = (kb_rmsnorm_backward_args){
        (int)s->d[0], (int)s->d[1], dev[KB_RMB_X], dev[KB_RMB_GAMMA], dev[KB_RMB_DY], dev[KB_RMB_RSTD],
        dev[KB_RMB_DX], dev[KB_RMB_DGAMMA]};
}

/* rstd as the forward saves it. */
static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    rmsnorm_backward_stats(s->d[0], s->d[1], KB_RMSNORM_EPS, t, host[KB_RMB_X], host[KB_RMB_RSTD]);
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    rmsnorm_backward_reference(s->d[0], s->d[1], t, in[KB_RMB_X], in[KB_RMB_GAMMA], in[KB_RMB_DY], in[KB_RMB_RSTD],
                               out, rows, nrows, ref);
}

const kb_op kb_op_rmsnorm_backward = {
    .name = "rmsnorm_backward",
    .summary = "dx, dgamma of RMSNorm from x, gamma, dy and the forward's rstd; f32 and bf16",
    .shape_fields = KB_ROWWISE_FIELDS,
    .nd = 2,
    /* A transformer's widths at 16384 tokens, and 65536 tokens at 4096:
     * dgamma reduces over the tokens. */
    .families = (const kb_family[]){{"transformer", "C", "16384x768,16384x2048,16384x4096,16384x8192", 1},
                                    {"tokens", "R", "4096x4096,65536x4096"},
                                    {"hostile", NULL, "1x2,1x4097,4099x33,1023x1000,3x12289", 1},
                                    {NULL}},
    .test_sizes = "1x2,1x3,4x2,7x31,5x33,64x128,33x1000,8x1024,9x4097,1000x768,257x4096,3000x5,70x8192,5x8193,"
                  "3x12289,2x32768",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = rmsnorm_backward_variants,
    KB_OP_CONTRACT(kb_rmsnorm_backward_args),
    .fill = rmsnorm_fill, /* rmsnorm's numerics rows in x (tensor 0); dy and gamma uniform */
    .prepare = prepare,
};
