/* One GEMM path of `kbench model` on the GPU (model/command_internal.h):
 * the forward enqueued with its copies between events, checked against the
 * C reference before and after timing, timed by the timing engine as plain
 * stream launches and as CUDA graphs, and printed phase by phase. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "harness/timing.h"
#include "kernels/cuda_util.h"
#include "commands/model_internal.h"

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

/* Each phase of the forward just enqueued, once ev[4] is done. */
static void read_phases(cudaEvent_t ev[5], double ms[FWD_COUNT])
{
    float t[4];
    for (int i = 0; i < 4; ++i)
        cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
    for (int i = 0; i < 4; ++i)
        ms[i] = t[i];
    ms[FWD_TOTAL] = t[0] + t[1] + t[2] + t[3];
    ms[FWD_COMPUTE] = t[1] + t[2];
}

static const char *run_once(kb_tf_gpu *g, const kb_model_gpu_run *r, const graphs *gr, cudaEvent_t ev[5],
                            double ms[FWD_COUNT])
{
    const char *e = enqueue(g, r, gr, ev);
    if (e)
        return e;
    if ((e = kb_cuda_status(cudaEventSynchronize(ev[4]))))
        return e;
    read_phases(ev, ms);
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

/* The timing engine's view of a path's forwards: each launch enqueues one
 * with its copies between five events, and each sample reads its phases
 * back. */
typedef struct {
    kb_tf_gpu *g;
    const kb_model_gpu_run *r;
    const graphs *gr;
    cudaEvent_t ev[5];
    double *phase[FWD_COUNT]; /* each sample's phases, KB_MAX_SAMPLES of them */
    int n;
} forwards;

static const char *launch_forward(void *arg, cudaStream_t stream)
{
    forwards *f = arg;
    (void)stream; /* the run's, on which enqueue records its events */
    return enqueue(f->g, f->r, f->gr, f->ev);
}

/* The row's time is the forward's without its copies; every phase is kept
 * for the printout. */
static const char *forward_sample(void *arg, double *ms)
{
    forwards *f = arg;
    double each[FWD_COUNT];
    read_phases(f->ev, each);
    for (int p = 0; p < FWD_COUNT; ++p)
        f->phase[p][f->n] = each[p];
    f->n++;
    *ms = each[FWD_COMPUTE];
    return NULL;
}

/* Time the path (graphs gr, or plain launches) into res: the engine's
 * timing, and each phase's statistics. */
static const char *time_path(kb_tf_gpu *g, const kb_model_gpu_run *r, const graphs *gr, kb_model_path *res)
{
    forwards f = {.g = g, .r = r, .gr = gr};
    const kb_timed w = {.launch = launch_forward, .arg = &f, .stream = r->stream, .sample_ms = forward_sample};
    const char *e = NULL;
    for (int i = 0; i < 5 && !e; ++i)
        e = kb_cuda_status(cudaEventCreate(&f.ev[i]));
    for (int p = 0; p < FWD_COUNT && !e; ++p)
        if (!(f.phase[p] = malloc(sizeof(double) * KB_MAX_SAMPLES)))
            e = "out of host memory for the samples";
    if (!e)
        e = kb_time(&w, &r->timing, &res->timing);
    for (int p = 0; p < FWD_COUNT; ++p) {
        if (!e)
            kb_stats_compute(f.phase[p], f.n, &res->phase[p]);
        free(f.phase[p]);
    }
    for (int i = 0; i < 5; ++i)
        if (f.ev[i])
            cudaEventDestroy(f.ev[i]);
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
    res[0].error = time_path(g, r, NULL, &res[0]);
    check_output(r, &res[0].recheck);
    graphs gr = {NULL, NULL};
    if (r->mode != KB_TF_DECODER && (e = capture(g, r->stream, kb_tf_gpu_encode, &gr.enc)))
        return e;
    if (r->mode != KB_TF_ENCODER && (e = capture(g, r->stream, kb_tf_gpu_decode, &gr.dec)))
        return e;
    res[1].error = time_path(g, r, &gr, &res[1]);
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
