/* What the fp32 stages share on the GPU (model/stage_gpu.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "model/stage_gpu.h"
#include "ops/argmax.h"
#include "ops/embed_t.h"

int kb_stage_fault = 0;

/* Room left for what the stages do not allocate themselves: the CUDA
 * context's growth, cuBLASLt's and the variants' kernels. */
#define SLACK_BYTES ((int64_t)256 << 20)

extern "C" const char *kb_stage_alloc(kb_stage_mem *m, const kb_stage_buf *b, int n, int64_t bytes)
{
    static char why[160];
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        return "cannot read the device's free memory";
    const int64_t need = bytes + KB_LT_WORKSPACE_BYTES + SLACK_BYTES;
    if (need > (int64_t)free_b) {
        snprintf(why, sizeof why, "needs %.2f GiB of device memory, %.2f GiB are free", need / 1073741824.0,
                 free_b / 1073741824.0);
        return why;
    }
    for (int i = 0; i < n; ++i) {
        if (m->n == KB_STAGE_MAX_BUFFERS)
            return "too many device buffers for one stage";
        cudaError_t e = cudaMalloc(b[i].p, (size_t)b[i].bytes);
        if (e != cudaSuccess)
            return cudaGetErrorString(e);
        m->p[m->n++] = *b[i].p;
    }
    return NULL;
}

extern "C" void kb_stage_free(kb_stage_mem *m)
{
    for (int i = 0; i < m->n; ++i)
        cudaFree(m->p[i]);
    m->n = 0;
}

static int64_t slot_floats(int64_t n) { return (n + 63) / 64 * 64; }

extern "C" float *kb_stage_take(kb_stage_block *b, int64_t n, float **host)
{
    *host = b->host ? b->host + b->used : NULL;
    float *dev = b->dev ? b->dev + b->used : NULL;
    b->used += slot_floats(n);
    return dev;
}

extern "C" void kb_stage_transpose(float *dst, int64_t ld, const float *W, int64_t rows, int64_t cols)
{
    for (int64_t o = 0; o < rows; ++o)
        for (int64_t k = 0; k < cols; ++k)
            dst[k * ld + o] = W[o * cols + k];
}

extern "C" int64_t kb_stage_count(kb_stage_layout_fn lay_out, void *user)
{
    kb_stage_block b = {NULL, NULL, 0};
    lay_out(user, &b);
    return b.used;
}

extern "C" const char *kb_stage_upload(kb_stage_mem *m, kb_stage_layout_fn lay_out, void *user)
{
    kb_stage_block b = {NULL, NULL, kb_stage_count(lay_out, user)};
    const size_t bytes = (size_t)b.used * sizeof(float);
    const kb_stage_buf buf = {(void **)&b.dev, (int64_t)bytes};
    const char *err = kb_stage_alloc(m, &buf, 1, buf.bytes);
    if (err)
        return err;
    /* calloc: the slots' padding is copied up too, and should be defined */
    b.host = (float *)calloc((size_t)b.used, sizeof(float));
    if (!b.host)
        return "out of host memory for the weights";
    b.used = 0;
    lay_out(user, &b);
    const cudaError_t e = cudaMemcpy(b.dev, b.host, bytes, cudaMemcpyHostToDevice);
    free(b.host);
    return kb_cuda_status(e);
}

extern "C" const char *kb_stage_ends_setup(kb_stage_ends *e)
{
    const kb_embed_t_args embed = {};
    const kb_argmax_args pick = {};
    KB_TRY(kb_call_setup(&e->embed, "embed_t", "naive", KB_F32, &embed));
    return kb_call_setup(&e->pick, "argmax", "block", KB_F32, &pick);
}

extern "C" void kb_stage_ends_teardown(kb_stage_ends *e)
{
    kb_call_teardown(&e->embed);
    kb_call_teardown(&e->pick);
}

extern "C" const char *kb_stage_embed(const kb_stage_ends *e, const int *ids, int n, const float *table_t, int vocab,
                                      int d, float scale, const float *pe, float *x, cudaStream_t s)
{
    const kb_embed_t_args a = {n, vocab, d, scale, ids, table_t, pe, x};
    return kb_call_launch(&e->embed, &a, s);
}

extern "C" const char *kb_stage_argmax(const kb_stage_ends *e, const float *logits, int n, int *out, cudaStream_t s)
{
    const kb_argmax_args a = {1, n, logits, out};
    return kb_call_launch(&e->pick, &a, s);
}

extern "C" double kb_stage_rel_l2(const float *got, const float *ref, int64_t n)
{
    double e = 0, r = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!isfinite(got[i]) || !isfinite(ref[i]))
            return INFINITY;
        e += (got[i] - (double)ref[i]) * (got[i] - (double)ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return r > 0 ? sqrt(e / r) : sqrt(e);
}

extern "C" void kb_stage_checked(kb_stage_result *r, double worst)
{
    r->dtype = "f32";
    r->rel_l2 = worst;
    r->tolerance = kb_model_rel_l2_tolerance();
    r->pass = worst <= r->tolerance; /* false for NaN and infinity */
}
