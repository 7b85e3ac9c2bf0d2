/* The transformer's GPU forward, composed from kbench's kernels: cuBLASLt
 * products for every linear layer (bias and ReLU in their epilogues), the
 * attention flash_f32 variant, add_layernorm fused for each residual step
 * and layernorm welford for nn.Transformer's final norms.  The forward
 * enqueues work on a stream and never synchronizes the host, so it can be
 * captured in a CUDA graph. */
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

/* Upload the weights in the layout the gemm path wants, allocate every
 * activation for a batch of B sequences (Ts source and Tt target tokens),
 * create the cuBLASLt handle and workspace.  NULL on success, else one line
 * (out of device memory, a library error); *out is then NULL. */
const char *kb_tf_gpu_create(const kb_tf_model *m, kb_tf_mode mode, int B, int Ts, int Tt, kb_tf_gemm gemm,
                             kb_tf_gpu **out);
void kb_tf_gpu_destroy(kb_tf_gpu *g);

/* Device inputs, B x Ts x d and B x Tt x d, and the output: B x Ts x d for
 * the encoder, else B x Tt x d. */
float *kb_tf_gpu_src(kb_tf_gpu *g);
float *kb_tf_gpu_tgt(kb_tf_gpu *g);
float *kb_tf_gpu_out(kb_tf_gpu *g);

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
