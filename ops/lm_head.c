/* The lm_head op (ops/decode.h): a decode step's logits and greedy pick. */
#include <stdlib.h>
#include "ops/decode.h"

extern const kb_variant *const lm_head_variants[];

/* The checked step: state (len, step, token) = (7, 3, 11), 8 tokens of out and keep. */
#define CHECKED_TOKENS 8
static const int checked_state[KB_DECODE_STATE] = {7, 3, 11};

enum { X, GAMMA, W, LOGITS, STATE, OUT, KEEP, NTENSORS };

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return NTENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    (void)t;
    const int64_t V = s->d[0], K = s->d[1];
    switch (i) {
    case X: case GAMMA: case W: return kb_decode_input(i, K, V);
    case LOGITS: return kb_tensor_of("logits", V, KB_F32, KB_OUT, V, 1, K, (double)K);
    /* The pick needs every logit. */
    case STATE: return kb_tensor_of("state", KB_DECODE_STATE, KB_I32, KB_INOUT, 1, KB_DECODE_STATE, 1, (double)V * K);
    case OUT: return kb_tensor_of("out", CHECKED_TOKENS, KB_I32, KB_INOUT, 1, CHECKED_TOKENS, 1, (double)V * K);
    default: return kb_tensor_of("keep", kb_mul_dims(CHECKED_TOKENS, V), KB_F32, KB_INOUT, CHECKED_TOKENS * V, 1, K,
                                 (double)K);
    }
}

/* W, x and g read; the logits, a row of keep, the state and the token written. */
static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    const double V = (double)s->d[0], K = (double)s->d[1];
    return 2 * V * K + 8 * K + 8 * V + 4.0 * (2 * KB_DECODE_STATE + 1);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_lm_head_args *)args = (kb_lm_head_args){(int)s->d[0], (int)s->d[1], KB_DECODE_EPS, dev[X], dev[GAMMA],
                                                 dev[W], dev[LOGITS], dev[STATE], dev[OUT], CHECKED_TOKENS, -1,
                                                 dev[KEEP]};
}

/* Logit v of the step (xn already made). */
static double logit(const kb_shape *s, const void *const *in, const double *xn, int64_t v)
{
    return kb_decode_dot(in[W], v, (int)s->d[1], xn);
}

/* The first largest logit. */
static int pick(const kb_shape *s, const void *const *in, const double *xn)
{
    int best = 0;
    double top = logit(s, in, xn, 0);
    for (int64_t v = 1; v < s->d[0]; ++v) {
        const double l = logit(s, in, xn, v);
        if (l > top)
            top = l, best = (int)v;
    }
    return best;
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t;
    const int64_t V = s->d[0], K = s->d[1];
    const int *state = in[STATE], step = state[KB_DECODE_STEP];
    double *xn = malloc((size_t)K * sizeof *xn);
    kb_decode_norm(in[X], in[GAMMA], (int)K, KB_DECODE_EPS, xn);
    const int tok = out == STATE || out == OUT ? pick(s, in, xn) : -1;
    for (int r = 0; r < nrows; ++r) {
        if (out == LOGITS)
            ref[r] = logit(s, in, xn, rows[r]);
        else if (out == KEEP)
            ref[r] = rows[r] / V == step ? logit(s, in, xn, rows[r] % V) : kb_tensor_value(in[KEEP], rows[r], KB_F32);
    }
    if (out == STATE) {
        ref[KB_DECODE_LEN] = state[KB_DECODE_LEN] + 1, ref[KB_DECODE_STEP] = step + 1, ref[KB_DECODE_TOKEN] = tok;
    } else if (out == OUT) {
        for (int j = 0; j < CHECKED_TOKENS; ++j)
            ref[j] = j == step ? tok : ((const int *)in[OUT])[j];
    }
    free(xn);
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    if (i <= W)
        kb_decode_fill(i, s->d[1], x, n, seed);
    else if (i == STATE)
        for (int j = 0; j < KB_DECODE_STATE; ++j)
            x[j] = (float)checked_state[j];
    else if (i == OUT)
        for (int64_t j = 0; j < n; ++j)
            x[j] = (float)(1000 + j); /* earlier tokens, which stay */
    else
        kb_fill_uniform(x, n, seed);
}

const kb_op kb_op_lm_head = {
    .name = "lm_head",
    .summary = "logits = W RMSNorm(x), the greedy pick as the next token: a decode step's LM head, bf16",
    .shape_fields = "VxK",
    .nd = 2,
    /* SmolLM2-135M's (tied) head and Llama-3.2-1B's */
    .families = (const kb_family[]){{"models", NULL, "49152x576,128256x2048", 1},
                                    {"hostile", NULL, "1x8,3x24,1001x1000"},
                                    {NULL}},
    .test_sizes = "1x8,2x8,1x1,3x24,5x13,1001x1000,517x256,4097x4104",
    .baseline = {[KB_BF16] = "naive"},
    .variants = lm_head_variants,
    .fill = fill,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_lm_head_args),
};
