/* The transformer's GPU forward against its C reference: every mode and
 * both GEMM paths at a tiny shape, a tile-hostile one (d_head = 6, odd
 * lengths, Tq != Tk) and a medium one (d_head = 64, 2+2 layers), causal and
 * not; a CUDA-graph replay must give the same output as the plain launches;
 * and a reference one bias away from the GPU's weights must fail the
 * model's tolerance.  Then kernels other than the defaults, chosen by name:
 * flash_3xtf32 attention with unfused residual norms and the warp final
 * norm, and cuBLAS attention (whose setup context holds its handle and
 * workspace); a variant that cannot run the model's shape is refused at
 * creation.  Exits 77 (skip) without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "model/gpu.h"
#include "tests/check.h"

typedef struct {
    const char *name;
    int d, heads, ff, layers, B, Ts, Tt, causal;
} model_case;

static const model_case cases[] = {
    {"tiny", 8, 2, 16, 1, 2, 5, 3, 1},
    {"hostile", 12, 2, 20, 2, 3, 7, 11, 1},
    {"hostile unmasked", 12, 2, 20, 2, 3, 13, 1, 0},
    {"medium", 256, 4, 1024, 2, 4, 77, 64, 1},
};

static double rel_l2(const float *a, const float *ref, int64_t n)
{
    double e = 0, r = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!isfinite(a[i]))
            return INFINITY;
        e += (a[i] - (double)ref[i]) * (a[i] - (double)ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(e / r);
}

/* Poison, upload, run both parts (or replay graphs of them), download. */
static const char *forward(kb_tf_gpu *g, kb_tf_mode mode, const float *src, const float *tgt, size_t src_bytes,
                           size_t tgt_bytes, float *out, size_t out_bytes, int use_graph)
{
    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    const char *e = kb_tf_gpu_poison(g);
    if (e || cudaStreamCreate(&s) != cudaSuccess)
        return e ? e : "cannot create a stream";
    cudaMemcpy(kb_tf_gpu_src(g), src, src_bytes, cudaMemcpyHostToDevice);
    if (mode != KB_TF_ENCODER)
        cudaMemcpy(kb_tf_gpu_tgt(g), tgt, tgt_bytes, cudaMemcpyHostToDevice);
    if (use_graph) {
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        e = kb_tf_gpu_encode(g, s);
        if (!e)
            e = kb_tf_gpu_decode(g, s);
        if (cudaStreamEndCapture(s, &graph) != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
            e = e ? e : "graph capture failed";
        if (!e)
            cudaGraphLaunch(exec, s);
    } else {
        e = kb_tf_gpu_encode(g, s);
        if (!e)
            e = kb_tf_gpu_decode(g, s);
    }
    cudaError_t ce = cudaStreamSynchronize(s);
    cudaMemcpy(out, kb_tf_gpu_out(g), out_bytes, cudaMemcpyDeviceToHost);
    cudaStreamDestroy(s);
    return e ? e : ce != cudaSuccess ? cudaGetErrorString(ce) : NULL;
}

/* The reference for every sequence of the batch. */
static void reference(const kb_tf_model *m, kb_tf_mode mode, const model_case *c, const float *src,
                      const float *tgt, float *out)
{
    const int64_t T = mode == KB_TF_ENCODER ? c->Ts : c->Tt;
    for (int b = 0; b < c->B; ++b)
        kb_tf_reference_seq(m, mode, c->Ts, c->Tt, src + (int64_t)b * c->Ts * c->d, tgt + (int64_t)b * c->Tt * c->d,
                            out + b * T * c->d);
}

static void run_case(const model_case *c, kb_tf_mode mode, kb_tf_gemm gemm, const kb_tf_kernels *k)
{
    kb_tf_config cfg = {c->d, c->heads, c->ff, mode == KB_TF_DECODER ? 0 : c->layers,
                        mode == KB_TF_ENCODER ? 0 : c->layers, 1e-5f, c->causal};
    kb_tf_model m;
    CHECK(kb_tf_init_random(&m, &cfg, 21) == 0);
    const int64_t ns = (int64_t)c->B * c->Ts * c->d, nt = (int64_t)c->B * c->Tt * c->d;
    const int64_t nout = mode == KB_TF_ENCODER ? ns : nt;
    float *src = malloc(sizeof(float) * ns), *tgt = malloc(sizeof(float) * nt);
    float *ref = malloc(sizeof(float) * nout), *out = malloc(sizeof(float) * nout), *replay = malloc(sizeof(float) * nout);
    kb_fill_uniform(src, ns, 5);
    kb_fill_uniform(tgt, nt, 6);
    reference(&m, mode, c, src, tgt, ref);

    kb_tf_gpu *g;
    const char *e = kb_tf_gpu_create(&m, mode, c->B, c->Ts, c->Tt, gemm, k, &g);
    if (!e)
        e = forward(g, mode, src, tgt, ns * 4, nt * 4, out, nout * 4, 0);
    if (!e)
        e = forward(g, mode, src, tgt, ns * 4, nt * 4, replay, nout * 4, 1);
    const double err = e ? INFINITY : rel_l2(out, ref, nout);
    printf("%-17s %-7s %-6s %s/%s/%s rel L2 %.3e %s%s\n", c->name,
           mode == KB_TF_ENCODER ? "encoder" : mode == KB_TF_DECODER ? "decoder" : "seq2seq", kb_tf_gemm_name(gemm),
           kb_tf_kernel_name(k, 0), kb_tf_kernel_name(k, 1), kb_tf_kernel_name(k, 2), err, e ? "error: " : "",
           e ? e : "");
    CHECK(!e);
    CHECK(err <= kb_model_rel_l2_tolerance());
    CHECK(!e && memcmp(out, replay, sizeof(float) * nout) == 0);
    kb_tf_gpu_destroy(g);
    free(src), free(tgt), free(ref), free(out), free(replay);
    kb_tf_free(&m);
}

/* The GPU runs the seeded weights; the reference gets one out_proj bias
 * 1e-2 higher in the last decoder layer.  The tolerance must see it. */
static void wrong_bias_is_caught(void)
{
    const model_case *c = &cases[0];
    kb_tf_config cfg = {c->d, c->heads, c->ff, c->layers, c->layers, 1e-5f, 1};
    kb_tf_model m;
    CHECK(kb_tf_init_random(&m, &cfg, 21) == 0);
    const int64_t ns = (int64_t)c->B * c->Ts * c->d, nt = (int64_t)c->B * c->Tt * c->d;
    float *src = malloc(sizeof(float) * ns), *tgt = malloc(sizeof(float) * nt);
    float *ref = malloc(sizeof(float) * nt), *out = malloc(sizeof(float) * nt);
    kb_fill_uniform(src, ns, 5);
    kb_fill_uniform(tgt, nt, 6);
    kb_tf_gpu *g;
    CHECK(kb_tf_gpu_create(&m, KB_TF_SEQ2SEQ, c->B, c->Ts, c->Tt, KB_TF_GEMM_FP32, NULL, &g) == NULL);
    CHECK(forward(g, KB_TF_SEQ2SEQ, src, tgt, ns * 4, nt * 4, out, nt * 4, 0) == NULL);
    ((float *)m.dec[c->layers - 1].cross_attn.out_b)[0] += 1e-2f;
    reference(&m, KB_TF_SEQ2SEQ, c, src, tgt, ref);
    const double err = rel_l2(out, ref, nt);
    printf("wrong bias: rel L2 %.3e (must exceed %.0e)\n", err, kb_model_rel_l2_tolerance());
    CHECK(err > kb_model_rel_l2_tolerance());
    kb_tf_gpu_destroy(g);
    free(src), free(tgt), free(ref), free(out);
    kb_tf_free(&m);
}

/* flash_3xtf32 needs d_head a multiple of 8; the tiny case has 4. */
static void unsupported_kernel_is_refused(void)
{
    const model_case *c = &cases[0];
    kb_tf_config cfg = {c->d, c->heads, c->ff, c->layers, c->layers, 1e-5f, 1};
    kb_tf_model m;
    CHECK(kb_tf_init_random(&m, &cfg, 21) == 0);
    const kb_tf_kernels k = {"flash_3xtf32", NULL, NULL};
    kb_tf_gpu *g = NULL;
    const char *e = kb_tf_gpu_create(&m, KB_TF_SEQ2SEQ, c->B, c->Ts, c->Tt, KB_TF_GEMM_FP32, &k, &g);
    printf("flash_3xtf32 at d_head 4: %s\n", e ? e : "accepted");
    CHECK(e && strstr(e, "attention flash_3xtf32 at the model's shape") && !g);
    kb_tf_free(&m);
}

int main(void)
{
    kb_device_info dev;
    SKIP_WITHOUT_GPU("the model's GPU tests", &dev);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i)
        for (int mode = 0; mode < 3; ++mode)
            for (int gemm = 0; gemm < KB_TF_GEMM_COUNT; ++gemm)
                if (cases[i].causal || mode != KB_TF_ENCODER)
                    run_case(&cases[i], (kb_tf_mode)mode, (kb_tf_gemm)gemm, NULL);
    wrong_bias_is_caught();
    const kb_tf_kernels tf32x3 = {"flash_3xtf32", "unfused", "warp"}, cublas = {"cublas", NULL, NULL};
    for (int mode = 0; mode < 3; ++mode) {
        run_case(&cases[3], (kb_tf_mode)mode, KB_TF_GEMM_FP32, &tf32x3);
        run_case(&cases[3], (kb_tf_mode)mode, KB_TF_GEMM_FP32, &cublas);
        run_case(&cases[1], (kb_tf_mode)mode, KB_TF_GEMM_FP32, &cublas);
    }
    unsupported_kernel_is_refused();
    return CHECK_DONE();
}
