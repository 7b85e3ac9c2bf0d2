/* A test-only op that exercises what a backward op needs of the contract,
 * with one correct variant and broken ones the checks must catch:
 *
 *     acc[r][j] += x[r][j] - mean[r]      acc: inout, R rows of C
 *     colsum[j]  = sum over r of x[r][j]   colsum: out, C rows of 1
 *
 * mean is an input derived from x by the op's prepare (a forward's
 * statistics), acc is restored before every launch (gradient
 * accumulation), and colsum's rows are its own sample, each the end of a
 * reduction over R (dgamma's shape).  Shapes are RxC.  Not in kb_ops: the
 * GPU suite runs it by hand (test_gpu.c). */
#include <math.h>
#include <stdlib.h>
#include "ops/kbench.h"
#include "kernels/cuda_util.h"

typedef struct {
    int R, C;
    const float *x, *mean;
    float *acc, *colsum;
} probe_args;

enum { X, MEAN, ACC, COLSUM, NTENSORS };

static double flops(const kb_shape *s) { return 3.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return NTENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1], n = kb_mul_dims(R, C);
    switch (i) {
    case X: return kb_tensor_of("x", n, t, KB_IN, R, C, 0, 0);
    case MEAN: {
        kb_tensor m = kb_tensor_of("mean", R, t, KB_IN, R, 1, 0, 0);
        m.derived = 1;
        return m;
    }
    case ACC: return kb_tensor_of("acc", n, t, KB_INOUT, R, C, C, (double)C);
    default: return kb_tensor_of("colsum", C, t, KB_OUT, C, 1, R, (double)R);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(probe_args *)args = (probe_args){(int)s->d[0], (int)s->d[1], (const float *)dev[X],
                                       (const float *)dev[MEAN], (float *)dev[ACC], (float *)dev[COLSUM]};
}

static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    (void)t;
    const int64_t R = s->d[0], C = s->d[1];
    const float *x = (const float *)host[X];
    float *mean = (float *)host[MEAN];
    for (int64_t r = 0; r < R; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < C; ++j)
            sum += x[r * C + j];
        mean[r] = (float)(sum / C);
    }
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t;
    const int64_t R = s->d[0], C = s->d[1];
    const float *x = (const float *)in[X], *mean = (const float *)in[MEAN], *acc = (const float *)in[ACC];
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        if (out == ACC)
            for (int64_t j = 0; j < C; ++j)
                ref[k * C + j] = (double)acc[r * C + j] + x[r * C + j] - mean[r];
        else {
            double sum = 0;
            for (int64_t i = 0; i < R; ++i)
                sum += x[i * C + r];
            ref[k] = sum;
        }
    }
}

/* How a variant gets it wrong, if it does. */
enum { CORRECT, ASSIGNS, NO_MEAN, SHORT_SUM };

template <int HOW>
__global__ void accumulate_kernel(int R, int C, const float *x, const float *mean, float *acc)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)R * C)
        return;
    const float d = x[i] - (HOW == NO_MEAN ? 0.0f : mean[i / C]);
    acc[i] = HOW == ASSIGNS ? d : acc[i] + d;
}

template <int HOW>
__global__ void colsum_kernel(int R, int C, const float *x, float *colsum)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= C)
        return;
    float sum = 0;
    for (int r = 0; r < (HOW == SHORT_SUM ? R - 1 : R); ++r)
        sum += x[(int64_t)r * C + j];
    colsum[j] = sum;
}

template <int HOW>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const probe_args *a = (const probe_args *)args;
    (void)ctx;
    accumulate_kernel<HOW><<<KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(a->R, a->C, a->x, a->mean,
                                                                                       a->acc);
    colsum_kernel<HOW><<<KB_CEIL_DIV(a->C, 256), 256, 0, stream>>>(a->R, a->C, a->x, a->colsum);
    KB_LAUNCHED();
}

#define PROBE(NAME, HOW)                                                                                     \
    {.name = NAME, .summary = "the contract probe", .dtype = KB_F32, .math = KB_MATH_F32, .launch = launch<HOW>}

extern "C" const kb_variant probe_correct[] = {PROBE("correct", CORRECT), KB_VARIANT_END};
extern "C" const kb_variant probe_assigns[] = {PROBE("assigns", ASSIGNS), KB_VARIANT_END};
extern "C" const kb_variant probe_no_mean[] = {PROBE("no_mean", NO_MEAN), KB_VARIANT_END};
extern "C" const kb_variant probe_short_sum[] = {PROBE("short_sum", SHORT_SUM), KB_VARIANT_END};
static const kb_variant *const probe_variants[] = {probe_correct, probe_assigns, probe_no_mean, probe_short_sum,
                                                   NULL};

static const kb_family probe_families[] = {{"probe", NULL, "300x1000", 1}, {NULL}};

extern "C" const kb_op kb_op_probe = {
    .name = "probe",
    .summary = "acc += x - mean(x), colsum = column sums of x: the contract's inout, derived input and second output",
    .shape_fields = "RxC",
    .nd = 2,
    .families = probe_families,
    .test_sizes = "300x1000",
    .baseline = {"correct"},
    .variants = probe_variants,
    .flops = flops,
    .ntensors = ntensors,
    .tensor = tensor,
    .bind = bind,
    .args_size = sizeof(probe_args),
    .reference = reference,
    .prepare = prepare,
};
