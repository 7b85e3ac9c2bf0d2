/* Device code for the positional encoding, shared by the posenc and embed
 * variants: the frequency of pair i and the (sin, cos) of one position. */
#ifndef KBENCH_POSENC_CUH
#define KBENCH_POSENC_CUH

__device__ __forceinline__ float kb_pe_frequency(int i, int D, float scale)
{
    return expf(-logf(10000.0f) * scale * (float)i / (float)D);
}

/* PE(pos, 2i) and PE(pos, 2i + 1). */
__device__ __forceinline__ float2 kb_pe_pair(int pos, int i, int D, float scale)
{
    float s, c;
    sincosf((float)pos * kb_pe_frequency(i, D, scale), &s, &c);
    return make_float2(s, c);
}

#endif
