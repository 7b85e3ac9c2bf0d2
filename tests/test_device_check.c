/* The check on the device (kb_device_compare_rows) gives the verdict of the
 * host's kb_compare_rows on the same rows: the bad count, the worst error
 * and its tolerance, the relative L2 error and pass/fail, for f32 and bf16
 * outputs with planted errors, a NaN and an Inf.  And the host's rounding of
 * floats to every floating type of the table (kb_store_floats) gives the
 * GPU's bits (kb_device_store_floats), on floats of every exponent, the
 * ties between two neighbours of each type among them, and the specials.
 * Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "tests/check.h"

enum { ROWS = 300, ROW_LEN = 1000, NROWS = 37 };

/* The sampled rows of out (host, dtype t) compared on the device and on the
 * host; both verdicts must agree. */
static void agree(const void *out, kb_dtype t, const int64_t *rows, const double *ref, kb_math m, int64_t L,
                  int expect_pass)
{
    size_t es = kb_dtype_size(t), bytes = (size_t)ROWS * ROW_LEN * es;
    void *dout, *drows, *dref;
    CHECK(cudaMalloc(&dout, bytes) == cudaSuccess && cudaMalloc(&drows, NROWS * sizeof *rows) == cudaSuccess &&
          cudaMalloc(&dref, (size_t)NROWS * ROW_LEN * sizeof *ref) == cudaSuccess);
    cudaMemcpy(dout, out, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(drows, rows, NROWS * sizeof *rows, cudaMemcpyHostToDevice);
    cudaMemcpy(dref, ref, (size_t)NROWS * ROW_LEN * sizeof *ref, cudaMemcpyHostToDevice);

    /* The host compares the sampled rows gathered into one block. */
    char *gathered = malloc((size_t)NROWS * ROW_LEN * es);
    for (int k = 0; k < NROWS; ++k)
        memcpy(gathered + (size_t)k * ROW_LEN * es, (const char *)out + (size_t)rows[k] * ROW_LEN * es, ROW_LEN * es);
    kb_check host, dev;
    kb_compare_rows(gathered, t, ref, (int64_t)NROWS * ROW_LEN, m, L, &host);
    CHECK(kb_device_compare_rows(dout, t, ROW_LEN, drows, NROWS, dref, m, L, &dev) == cudaSuccess);
    printf("dtype %d: host bad %lld max %.3g tol %.3g l2 %.3g pass %d; device bad %lld max %.3g tol %.3g l2 %.3g pass %d\n",
           (int)t, (long long)host.bad_elems, host.max_abs_err, host.worst_tol, host.rel_l2_err, host.pass,
           (long long)dev.bad_elems, dev.max_abs_err, dev.worst_tol, dev.rel_l2_err, dev.pass);
    CHECK(dev.bad_elems == host.bad_elems && dev.pass == host.pass && host.pass == expect_pass);
    CHECK(dev.max_abs_err == host.max_abs_err && dev.worst_tol == host.worst_tol);
    /* The sums run in another order: equal to rounding. */
    CHECK(host.rel_l2_err == INFINITY ? dev.rel_l2_err == INFINITY
                                      : fabs(dev.rel_l2_err - host.rel_l2_err) <= 1e-12 * host.rel_l2_err + 1e-300);
    free(gathered);
    cudaFree(dout);
    cudaFree(drows);
    cudaFree(dref);
}

/* Floats of every exponent, both signs, and the top 15 bits of their
 * fraction: every tie (and its neighbours) of bf16, f16 and fp8 is there,
 * since their fractions keep at most 10 bits.  Then infinity, NaN, zeros. */
static int64_t conversion_inputs(float *x)
{
    int64_t n = 0;
    for (uint32_t k = 0; k < (1u << 24); ++k) {
        uint32_t bits = k << 8;
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isnan(v))
            x[n++] = v;
    }
    const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; ++i)
        x[n++] = special[i];
    return n;
}

/* The host's and the GPU's rounding agree bit for bit; NaN need only stay NaN. */
static void conversions_agree(void)
{
    enum { MAX = (1 << 24) + 8 };
    float *x = malloc(MAX * sizeof *x), *dx;
    uint32_t *host = malloc(MAX * sizeof *host), *dev = malloc(MAX * sizeof *dev);
    const int64_t n = conversion_inputs(x);
    void *dout;
    CHECK(cudaMalloc((void **)&dx, n * sizeof *dx) == cudaSuccess && cudaMalloc(&dout, n * 4) == cudaSuccess);
    cudaMemcpy(dx, x, n * sizeof *dx, cudaMemcpyHostToDevice);
    for (int t = 0; t < KB_DTYPE_COUNT; ++t) {
        if (t == KB_I32)
            continue;
        const size_t es = kb_dtype_size((kb_dtype)t);
        kb_store_floats((kb_dtype)t, x, host, n);
        CHECK(kb_device_store_floats((kb_dtype)t, dx, dout, n) == cudaSuccess);
        cudaMemcpy(dev, dout, n * es, cudaMemcpyDeviceToHost);
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < n; ++i) {
            const double h = kb_tensor_value(host, i, (kb_dtype)t), d = kb_tensor_value(dev, i, (kb_dtype)t);
            const int same = memcmp((char *)host + i * es, (char *)dev + i * es, es) == 0 || (isnan(h) && isnan(d));
            differ += !same;
            if (!same && first < 0)
                first = i;
        }
        printf("%s: %lld of %lld conversions differ%s", kb_dtype_name((kb_dtype)t), (long long)differ, (long long)n,
               first < 0 ? "\n" : "");
        if (first >= 0)
            printf(", the first %a: host %g, GPU %g\n", x[first], kb_tensor_value(host, first, (kb_dtype)t),
                   kb_tensor_value(dev, first, (kb_dtype)t));
        CHECK(differ == 0);
    }
    cudaFree(dx);
    cudaFree(dout);
    free(x);
    free(host);
    free(dev);
}

int main(void)
{
    kb_device_info d;
    SKIP_WITHOUT_GPU("the device check test", &d);
    const int64_t L = 512;
    int64_t rows[NROWS];
    for (int k = 0; k < NROWS; ++k)
        rows[k] = (int64_t)k * (ROWS - 1) / (NROWS - 1); /* first and last included */
    float *f = malloc((size_t)ROWS * ROW_LEN * sizeof *f);
    uint16_t *b = malloc((size_t)ROWS * ROW_LEN * sizeof *b);
    double *ref = malloc((size_t)NROWS * ROW_LEN * sizeof *ref);
    kb_fill_uniform(f, (int64_t)ROWS * ROW_LEN, 7);
    for (int k = 0; k < NROWS; ++k)
        for (int j = 0; j < ROW_LEN; ++j)
            ref[(int64_t)k * ROW_LEN + j] = f[rows[k] * ROW_LEN + j] * (1 + 1e-9);

    agree(f, KB_F32, rows, ref, KB_MATH_F32, L, 1);
    f[rows[5] * ROW_LEN + 17] += 0.01f;  /* over fp32's bound */
    f[rows[30] * ROW_LEN + 999] -= 0.5f; /* the worst */
    f[rows[1] * ROW_LEN + 3 + ROW_LEN / 2] = 0; /* an unsampled row's neighbour stays unsampled: */
    f[(rows[1] + 1) * ROW_LEN] = NAN;            /* no effect on the sampled rows */
    agree(f, KB_F32, rows, ref, KB_MATH_F32, L, 0);
    f[rows[36] * ROW_LEN + 500] = INFINITY;
    agree(f, KB_F32, rows, ref, KB_MATH_F32, L, 0);

    kb_fill_uniform(f, (int64_t)ROWS * ROW_LEN, 8);
    for (int64_t i = 0; i < (int64_t)ROWS * ROW_LEN; ++i)
        b[i] = kb_float_to_bf16(f[i]);
    for (int k = 0; k < NROWS; ++k)
        for (int j = 0; j < ROW_LEN; ++j)
            ref[(int64_t)k * ROW_LEN + j] = f[rows[k] * ROW_LEN + j];
    agree(b, KB_BF16, rows, ref, KB_MATH_BF16, L, 1);
    b[rows[20] * ROW_LEN + 10] = kb_float_to_bf16(kb_bf16_to_float(b[rows[20] * ROW_LEN + 10]) + 0.25f);
    agree(b, KB_BF16, rows, ref, KB_MATH_BF16, L, 0);
    b[rows[0] * ROW_LEN] = 0x7fc0; /* NaN */
    agree(b, KB_BF16, rows, ref, KB_MATH_BF16, L, 0);
    free(f);
    free(b);
    free(ref);
    conversions_agree();
    return CHECK_DONE();
}
