/* The transformer's GPU forward, composed from kbench's kernels: cuBLASLt
 * products for every linear layer (bias and ReLU in their epilogues), and
 * variants of the op tables chosen by name (kb_tf_kernels) for attention,
 * each residual step (add_layernorm) and nn.Transformer's final norms
 * (layernorm).  The forward enqueues work on a stream and never
 * synchronizes the host, so it can be captured in a CUDA graph. */
#ifndef KBENCH_MODEL_GPU_H
#define KBENCH_MODEL_GPU_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "model/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the linear layers multiply.  fp32: cuBLASLt SGEMM (FFMA).  3xtf32:
 * each fp32 operand is split into a tf32 head and an fp32 tail, x = h + l,
 * and one tf32 tensor-core product over K' = 3K computes
 * [xh xh xl] . [wh; wl; wh] = xh wh + xh wl + xl wh: only the tail x tail
 * term (~2^-22 relative) is dropped, so the result has fp32's accuracy. */
typedef enum { KB_TF_GEMM_FP32, KB_TF_GEMM_3XTF32, KB_TF_GEMM_COUNT } kb_tf_gemm;

const char *kb_tf_gemm_name(kb_tf_gemm g);

typedef struct kb_tf_gpu kb_tf_gpu;

/* The variants the forward composes, by name in the op tables (`kbench
 * list`): `attention` for self- and cross-attention, `add_norm` of
 * add_layernorm for each residual step, `norm` of layernorm for the final
 * norms.  NULL takes the default, the fastest measured in fp32. */
typedef struct {
    const char *attention, *add_norm, *norm;
} kb_tf_kernels;
#define KB_TF_DEFAULT_ATTENTION "flash"
#define KB_TF_DEFAULT_ADD_NORM "fused"
#define KB_TF_DEFAULT_NORM "welford"

/* The ops the three kinds come from, and a kind's name with its default. */
extern const char *const kb_tf_kernel_ops[3]; /* attention, add_layernorm, layernorm */
const char *kb_tf_kernel_name(const kb_tf_kernels *k, int kind);
/* Whether every name is an fp32 variant of its op: NULL, or one line why not. */
const char *kb_tf_kernels_check(const kb_tf_kernels *k, char *err, size_t errlen);
/* Whether they also run the model's shapes (each variant's `unsupported`),
 * without a GPU: NULL, or one line why not. */
const char *kb_tf_kernels_fit(const kb_tf_kernels *k, const kb_tf_config *c, kb_tf_mode mode, int B, int Ts,
                              int Tt);
/* Whether the GPU of compute capability cc (e.g. 90) runs every variant the
 * mode uses (each variant's min_cc), without touching the GPU: NULL, or one
 * line why not. */
const char *kb_tf_kernels_cc(const kb_tf_kernels *k, kb_tf_mode mode, int cc);

/* Upload the weights in the layout the gemm path wants, allocate every
 * activation for a batch of B sequences (Ts source and Tt target tokens),
 * create the cuBLASLt handle and workspace, and set up each kernel of `k`
 * (NULL: the defaults) at every shape it will run, keeping its context.
 * NULL on success, else one line (out of device memory, a library error, a
 * variant that cannot run this shape or GPU); *out is then NULL. */
const char *kb_tf_gpu_create(const kb_tf_model *m, kb_tf_mode mode, int B, int Ts, int Tt, kb_tf_gemm gemm,
                             const kb_tf_kernels *k, kb_tf_gpu **out);
void kb_tf_gpu_destroy(kb_tf_gpu *g);

/* Device inputs, B x Ts x d and B x Tt x d, and the output: B x Ts x d for
 * the encoder, else B x Tt x d. */
float *kb_tf_gpu_src(kb_tf_gpu *g);
float *kb_tf_gpu_tgt(kb_tf_gpu *g);
float *kb_tf_gpu_out(kb_tf_gpu *g);

/* Run the next forwards over Ts source and Tt target tokens a sequence, at
 * most those it was created for (the paper stage's decode recomputes a
 * growing sequence on one forward); the inputs and the output keep their
 * row strides (d), so their first B*Ts (B*Tt) rows are the ones used.
 * Products at a new length are planned on first use.  NULL or one line. */
const char *kb_tf_gpu_set_tokens(kb_tf_gpu *g, int Ts, int Tt);

/* Set every activation and the output (not the inputs) to NaN, so an
 * element the forward never writes is caught. */
const char *kb_tf_gpu_poison(kb_tf_gpu *g);

/* Enqueue the encoder part (the stack, and the final norm for seq2seq) and
 * the decoder part; either is empty where the mode has none.  The first
 * call of each plans its cuBLASLt products, so run both once before timing
 * or capturing them. */
const char *kb_tf_gpu_encode(kb_tf_gpu *g, cudaStream_t stream);
const char *kb_tf_gpu_decode(kb_tf_gpu *g, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
