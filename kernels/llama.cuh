/* Device pieces of the Llama model's bf16 kernels (model/llama_gpu.cu),
 * shared by their variants: the programmatic dependent launch handshake,
 * the block sum of the RMSNorms, the RoPE rotation, SwiGLU, the greedy
 * pick's packed key and the decode state's step. */
#ifndef KBENCH_LLAMA_CUH
#define KBENCH_LLAMA_CUH

#include <cuda_runtime.h>
#include "kernels/reduce.cuh"
#include "ops/decode.h"

/* Programmatic dependent launch (Hopper): a kernel launched with the
 * attribute may start while the one before it finishes; it reads nothing
 * that kernel writes, and writes nothing, before kb_pdl_wait().  Each
 * kernel lets its successor start at once (kb_pdl_release), so the
 * successor's launch, and the weight loads it issues before waiting,
 * overlap the predecessor's tail.  No-ops before sm_90 and without the
 * attribute. */
__device__ __forceinline__ void kb_pdl_release()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ __forceinline__ void kb_pdl_wait()
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* The sum of every thread's s, on every thread of the block: the warps'
 * sums added in warp order. */
__device__ __forceinline__ float kb_llama_block_sum(float s)
{
    __shared__ float part[32];
    s = kb_warp_allreduce<32>(s, KbSum{});
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = s;
    __syncthreads();
    float t = 0;
    for (int w = 0; w < (int)blockDim.x / 32; ++w)
        t += part[w];
    __syncthreads(); /* part is reused by the next call */
    return t;
}

/* The rotation of pair (a, b) = (x[i], x[i + half]) at position pos. */
__device__ __forceinline__ void kb_rope_rotate(float &a, float &b, int pos, float inv_freq)
{
    float s, c;
    sincosf((float)pos * inv_freq, &s, &c);
    const float ra = a * c - b * s, rb = b * c + a * s;
    a = ra, b = rb;
}

/* silu(g) * u with the fast exponential. */
__device__ __forceinline__ float kb_swiglu_fast(float g, float u) { return g / (1.0f + __expf(-g)) * u; }

/* A value as a key that orders like the float, ties to the lower index:
 * the largest key is the first largest value. */
__device__ __forceinline__ unsigned long long kb_pick_key(float v, int i)
{
    const unsigned u = __float_as_uint(v), ordered = u & 0x80000000u ? ~u : u | 0x80000000u;
    return (unsigned long long)ordered << 32 | (unsigned)~i;
}

__device__ __forceinline__ int kb_pick_index(unsigned long long key) { return (int)~(unsigned)(key & 0xffffffffu); }

/* The largest key over the warp, on every lane. */
__device__ __forceinline__ unsigned long long kb_warp_max_key(unsigned long long k)
{
    for (int off = 16; off > 0; off /= 2) {
        const unsigned long long o = __shfl_xor_sync(0xffffffffu, k, off);
        k = o > k ? o : k;
    }
    return k;
}

/* The largest key of a block of 1024 threads, on every thread. */
__device__ __forceinline__ unsigned long long kb_block_max_key(unsigned long long k)
{
    __shared__ unsigned long long part[32];
    k = kb_warp_max_key(k);
    if (threadIdx.x % 32 == 0)
        part[threadIdx.x / 32] = k;
    __syncthreads();
    return kb_warp_max_key(part[threadIdx.x % 32]);
}

/* The greedy pick tok of generated token `step` becomes the next token;
 * set_len >= 0 (a prefill) sets the cache length for it, else it grows
 * by one (ops/decode.h's lm_head). */
__device__ __forceinline__ void kb_decode_advance(int *state, int *out, int max_tokens, int set_len, int step, int tok)
{
    if (step < max_tokens)
        out[step] = tok;
    state[KB_DECODE_TOKEN] = tok;
    state[KB_DECODE_STEP] = step + 1;
    state[KB_DECODE_LEN] = set_len >= 0 ? set_len : state[KB_DECODE_LEN] + 1;
}

#endif
