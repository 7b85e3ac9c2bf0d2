/* What the parts of `kbench model` share: the inputs (commands/model_inputs.c),
 * the C reference's outputs, and each GEMM path's run on the GPU
 * (commands/model_paths.c), which the command (commands/model.c) ties
 * together.  Internal to those three files. */
#ifndef KBENCH_MODEL_COMMAND_INTERNAL_H
#define KBENCH_MODEL_COMMAND_INTERNAL_H

#include <cuda_runtime_api.h>
#include "harness/harness.h"
#include "harness/timing.h"
#include "commands/model.h"
#include "model/gpu.h"

typedef struct {
    int B, Ts, Tt;
    float *src, *tgt; /* B x Ts x d, B x Tt x d */
} kb_model_inputs;

/* The tokens of the output per sequence: the source's for the encoder, else the target's. */
static inline int kb_model_out_len(kb_tf_mode mode, const kb_model_inputs *in)
{
    return mode == KB_TF_ENCODER ? in->Ts : in->Tt;
}

/* ---- model_inputs.c ---- */
/* Weights and inputs: sizes first, from the flags or the files, checked;
 * then the random ones are allocated.  0, or -1 with one line in err. */
int kb_model_load(const kb_model_opts *o, kb_tf_model *m, kb_model_inputs *in, char *err, size_t errlen);
/* FLOPs of one forward: every product as 2·M·N·K, attention as
 * 4·B·T_q·T_k·d, halved when causal. */
double kb_model_flops(const kb_tf_config *c, const kb_model_inputs *in);
/* Bytes of one forward: every weight, the inputs and the output, once. */
double kb_model_bytes(const kb_tf_config *c, kb_tf_mode mode, const kb_model_inputs *in);

/* The sequences checked against the reference, and its outputs for them. */
typedef struct {
    int n, *seq;
    float *ref;       /* n x T_out x d */
    double cpu_ms;    /* wall time of the reference on these n */
} kb_model_reference;

/* ---- model_paths.c ---- */
/* The phases of a forward on the GPU, as printed; its row's time is compute. */
enum { FWD_H2D, FWD_ENC, FWD_DEC, FWD_D2H, FWD_TOTAL, FWD_COMPUTE, FWD_COUNT };

/* A GPU run of the model: the model, its inputs and reference, the pinned
 * host buffers, and how its rows are timed. */
typedef struct {
    const kb_tf_model *m;
    kb_tf_mode mode;
    const kb_model_inputs *in;
    const kb_model_reference *ref;
    cudaStream_t stream;
    float *h_src, *h_tgt, *h_out; /* pinned */
    kb_time_opts timing;          /* the stop rule, --hot and the L2 flush buffer */
    const kb_tf_kernels *kernels;
} kb_model_gpu_run;

/* One GEMM path in one launch mode (plain stream launches, or graphs). */
typedef struct {
    kb_timing timing;          /* the engine's: the compute phase, and NVML over its samples */
    kb_stats phase[FWD_COUNT]; /* every phase over the same samples, for the printout */
    kb_check check, recheck;
    const char *error;
} kb_model_path;

/* Bytes of the source (tgt 0) or target (tgt 1) input, and of the output. */
size_t kb_model_in_bytes(const kb_model_gpu_run *r, int tgt);
size_t kb_model_out_bytes(const kb_model_gpu_run *r);
/* Check (poisoned outputs), time the plain launches, capture and time the
 * graphs, check again after each timing: res[0] stream, res[1] graph.  NULL,
 * or what stopped the path (a timing failure is the row's, in res[k].error). */
const char *kb_model_run_path(kb_tf_gpu *g, const kb_model_gpu_run *r, kb_model_path res[2]);
int kb_model_path_passed(const kb_model_path *p);
void kb_model_print_path(kb_tf_gemm gemm, kb_tf_mode mode, const kb_model_path res[2], const kb_model_reference *ref,
                         int B);

#endif
