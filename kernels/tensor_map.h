/* Host pieces that the TMA rungs share: the driver's cuTensorMapEncodeTiled
 * reached through the runtime (so nothing links libcuda), the bf16 tensor
 * maps they build with it, and the rule that their sm_90a code runs on
 * compute capability 9.0 only. */
#ifndef KBENCH_TENSOR_MAP_H
#define KBENCH_TENSOR_MAP_H

#include <cuda.h>
#include <cuda_runtime.h>

typedef CUresult (*kb_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);

/* *fn = cuTensorMapEncodeTiled; NULL, or why the driver has none. */
static inline const char *kb_tensor_map_encoder(kb_encode_tiled_fn *fn)
{
    void *p = NULL;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found);
#endif
    *fn = (kb_encode_tiled_fn)p;
    return e != cudaSuccess ? cudaGetErrorString(e)
           : found != cudaDriverEntryPointSuccess || !p ? "the driver has no cuTensorMapEncodeTiled"
                                                        : NULL;
}

/* A bf16 tensor of `rank` dimensions (dims[0] innermost; strides in bytes
 * for dims 1..), read or written in boxes of `box` elements whose rows are
 * one 128-byte swizzle line; loads fill zeros outside, stores write
 * nothing there. */
static inline const char *kb_encode_bf16(kb_encode_tiled_fn encode, CUtensorMap *map, const void *base, int rank,
                                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box)
{
    const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (cuuint32_t)rank, (void *)base, dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? NULL : "cuTensorMapEncodeTiled rejected the tensor map";
}

/* sm_90a code (wgmma, setmaxnreg) runs on compute capability 9.0 only:
 * NULL there, else the reason to SKIP. */
static inline const char *kb_sm90a_unsupported(void)
{
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0 ? NULL : "wgmma needs sm_90a: compute capability 9.0 only";
}

#endif
