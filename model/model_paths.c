/* One GEMM path of `kbench model` on the GPU (model/command_internal.h):
 * the forward enqueued with its copies between events, checked against the
 * C reference before and after timing, timed as plain stream launches and
 * as CUDA graphs, and printed phase by phase. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "model/command_internal.h"

#define WARMUP_S 0.05
#define MIN_SAMPLES 5
#define MAX_SAMPLES 2000
#define TARGET_NOISE 0.01

static double now_ms(void) { return omp_get_wtime() * 1e3; }

static const char *const phase_names[FWD_COUNT] = {"host-to-device copy", "encoder", "decoder",
                                                   "device-to-host copy", "total", "compute"};

/* Optional graphs replace the encode and decode calls. */
typedef struct {
    cudaGraphExec_t enc, dec;
} graphs;

size_t kb_model_in_bytes(const kb_model_gpu_run *r, int tgt)
{
    const int64_t T = tgt ? r->in->Tt : r->in->Ts;
    return sizeof(float) * (size_t)((int64_t)r->in->B * T * r->m->cfg.d_model);
}

size_t kb_model_out_bytes(const kb_model_gpu_run *r)
{
    return sizeof(float) * (size_t)((int64_t)r->in->B * kb_model_out_len(r->mode, r->in) * r->m->cfg.d_model);
}

static const char *enqueue(kb_tf_gpu *g, const kb_model_gpu_run *r, const graphs *gr, cudaEvent_t ev[5])
{
    cudaStream_t s = r->stream;
    const char *e = NULL;
    cudaEventRecord(ev[0], s);
    cudaMemcpyAsync(kb_tf_gpu_src(g), r->h_src, kb_model_in_bytes(r, 0), cudaMemcpyHostToDevice, s);
    if (r->mode != KB_TF_ENCODER)
        cudaMemcpyAsync(kb_tf_gpu_tgt(g), r->h_tgt, kb_model_in_bytes(r, 1), cudaMemcpyHostToDevice, s);
    cudaEventRecord(ev[1], s);
    if (gr && gr->enc)
        e = kb_cuda_status(cudaGraphLaunch(gr->enc, s));
    else if (!gr)
        e = kb_tf_gpu_encode(g, s);
    cudaEventRecord(ev[2], s);
    if (!e && gr && gr->dec)
        e = kb_cuda_status(cudaGraphLaunch(gr->dec, s));
    else if (!e && !gr)
        e = kb_tf_gpu_decode(g, s);
    cudaEventRecord(ev[3], s);
    cudaMemcpyAsync(r->h_out, kb_tf_gpu_out(g), kb_model_out_bytes(r), cudaMemcpyDeviceToHost, s);
    cudaEventRecord(ev[4], s);
    return e ? e : kb_cuda_status(cudaGetLastError());
}

static const char *run_once(kb_tf_gpu *g, const kb_model_gpu_run *r, const graphs *gr, cudaEvent_t ev[5],
                            double ms[FWD_COUNT])
{
    const char *e = enqueue(g, r, gr, ev);
    if (e)
        return e;
    if ((e = kb_cuda_status(cudaEventSynchronize(ev[4]))))
        return e;
    float t[4];
    for (int i = 0; i < 4; ++i)
        cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
    for (int i = 0; i < 4; ++i)
        ms[i] = t[i];
    ms[FWD_TOTAL] = t[0] + t[1] + t[2] + t[3];
    ms[FWD_COMPUTE] = t[1] + t[2];
    return NULL;
}

/* The checked sequences of the output against the reference; NaN or Inf
 * anywhere in the output fails. */
static void check_output(const kb_model_gpu_run *r, kb_check *c)
{
    const int64_t per_seq = (int64_t)kb_model_out_len(r->mode, r->in) * r->m->cfg.d_model;
    const int64_t total = per_seq * r->in->B;
    double err2 = 0, ref2 = 0;
    memset(c, 0, sizeof *c);
    for (int64_t i = 0; i < total; ++i)
        c->nonfinite += !isfinite(r->h_out[i]);
    for (int s = 0; s < r->ref->n; ++s)
        for (int64_t i = 0; i < per_seq; ++i) {
            const double got = r->h_out[r->ref->seq[s] * per_seq + i], want = r->ref->ref[s * per_seq + i];
            const double diff = fabs(got - want);
            c->max_abs_err = diff > c->max_abs_err ? diff : c->max_abs_err;
            err2 += diff * diff;
            ref2 += want * want;
        }
    c->rel_l2_err = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    c->worst_tol = kb_model_rel_l2_tolerance();
    c->pass = c->nonfinite == 0 && c->rel_l2_err <= c->worst_tol;
}

static const char *time_launches(kb_tf_gpu *g, const kb_model_gpu_run *r, const graphs *gr,
                                 kb_stats st[FWD_COUNT])
{
    cudaEvent_t ev[5];
    for (int i = 0; i < 5; ++i)
        cudaEventCreate(&ev[i]);
    double ms[FWD_COUNT], *samples[FWD_COUNT], *scratch = malloc(sizeof(double) * MAX_SAMPLES);
    for (int p = 0; p < FWD_COUNT; ++p)
        samples[p] = malloc(sizeof(double) * MAX_SAMPLES);
    const char *e = NULL;
    double t0 = now_ms();
    do
        e = run_once(g, r, gr, ev, ms);
    while (!e && now_ms() - t0 < WARMUP_S * 1e3);
    int n = 0;
    t0 = now_ms();
    while (!e) {
        if (!r->hot && (e = kb_cuda_status(cudaMemsetAsync(r->flush, n & 0xff, r->flush_bytes, r->stream))))
            break;
        if ((e = run_once(g, r, gr, ev, ms)))
            break;
        for (int p = 0; p < FWD_COUNT; ++p)
            samples[p][n] = ms[p];
        if (++n < MIN_SAMPLES)
            continue;
        memcpy(scratch, samples[FWD_COMPUTE], sizeof(double) * (size_t)n);
        kb_stats_compute(scratch, n, &st[FWD_COMPUTE]);
        if (n == MAX_SAMPLES || kb_median_noise(&st[FWD_COMPUTE]) < TARGET_NOISE || now_ms() - t0 > r->cap_s * 1e3)
            break;
    }
    for (int p = 0; p < FWD_COUNT; ++p) {
        if (!e)
            kb_stats_compute(samples[p], n, &st[p]);
        free(samples[p]);
    }
    free(scratch);
    for (int i = 0; i < 5; ++i)
        cudaEventDestroy(ev[i]);
    return e;
}

static const char *capture(kb_tf_gpu *g, cudaStream_t s, const char *(*part)(kb_tf_gpu *, cudaStream_t),
                           cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    const char *e = kb_cuda_status(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (e)
        return e;
    const char *fe = part(g, s);
    e = kb_cuda_status(cudaStreamEndCapture(s, &graph));
    if (!fe && !e)
        e = kb_cuda_status(cudaGraphInstantiate(exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    return fe ? fe : e;
}

const char *kb_model_run_path(kb_tf_gpu *g, const kb_model_gpu_run *r, kb_model_path res[2])
{
    cudaEvent_t ev[5];
    double ms[FWD_COUNT];
    const char *e = kb_tf_gpu_poison(g);
    for (int i = 0; i < 5; ++i)
        cudaEventCreate(&ev[i]);
    if (!e)
        e = run_once(g, r, NULL, ev, ms);
    for (int i = 0; i < 5; ++i)
        cudaEventDestroy(ev[i]);
    if (e)
        return e;
    check_output(r, &res[0].check);
    res[1].check = res[0].check;
    if (!res[0].check.pass)
        return NULL;
    res[0].error = time_launches(g, r, NULL, res[0].phase);
    check_output(r, &res[0].recheck);
    graphs gr = {NULL, NULL};
    if (r->mode != KB_TF_DECODER && (e = capture(g, r->stream, kb_tf_gpu_encode, &gr.enc)))
        return e;
    if (r->mode != KB_TF_ENCODER && (e = capture(g, r->stream, kb_tf_gpu_decode, &gr.dec)))
        return e;
    res[1].error = time_launches(g, r, &gr, res[1].phase);
    check_output(r, &res[1].recheck);
    if (gr.enc)
        cudaGraphExecDestroy(gr.enc);
    if (gr.dec)
        cudaGraphExecDestroy(gr.dec);
    return NULL;
}

int kb_model_path_passed(const kb_model_path *p)
{
    return !p->error && p->check.pass && p->recheck.pass;
}

void kb_model_print_path(kb_tf_gemm gemm, kb_tf_mode mode, const kb_model_path res[2], const kb_model_reference *ref,
                         int B)
{
    printf("GPU, %s linear layers          stream     graph (ms, median)\n", kb_tf_gemm_name(gemm));
    for (int p = 0; p <= FWD_TOTAL; ++p) {
        if ((p == FWD_ENC && mode == KB_TF_DECODER) || (p == FWD_DEC && mode == KB_TF_ENCODER))
            continue;
        printf("  %-28s", phase_names[p]);
        for (int k = 0; k < 2; ++k)
            if (kb_model_path_passed(&res[k]))
                printf(" %9.3f", res[k].phase[p].median);
            else
                printf(" %9s", "-");
        putchar('\n');
    }
    const kb_check *c = &res[0].check;
    printf("  GPU vs CPU: max abs error %.3e, relative L2 error %.3e over %d of %d sequences (bound %.0e): %s\n",
           c->max_abs_err, c->rel_l2_err, ref->n, B, c->worst_tol, c->pass ? "PASS" : "FAIL");
    for (int k = 0; k < 2; ++k) {
        if (res[k].error)
            printf("  %s timing failed: %s\n", k ? "graph" : "stream", res[k].error);
        else if (c->pass && !res[k].recheck.pass)
            printf("  after the %s timing: relative L2 error %.3e, %lld non-finite: FAIL\n", k ? "graph" : "stream",
                   res[k].recheck.rel_l2_err, (long long)res[k].recheck.nonfinite);
    }
}
