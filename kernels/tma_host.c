/* The host side of the Hopper variants: tma_host.h says what each piece is for. */
#include "kernels/tma_host.h"

#include <stdlib.h>
#include "kernels/cuda_util.h"

extern const kb_variant matmul_wgmma[]; /* the TMA rungs' fallback for unaligned rows, a form per dtype */

const char *kb_tensor_map_encoder(kb_encode_tiled_fn *fn)
{
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
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

/* A tensor of `type` in boxes whose rows are one 128-byte swizzle line. */
static const char *encode_swizzled(kb_encode_tiled_fn encode, CUtensorMap *map, CUtensorMapDataType type,
                                   const void *base, int rank, const cuuint64_t *dims, const cuuint64_t *strides,
                                   const cuuint32_t *box)
{
    const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    CUresult r = encode(map, type, (cuuint32_t)rank, (void *)base, dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? NULL : "cuTensorMapEncodeTiled rejected the tensor map";
}

const char *kb_encode_16(kb_encode_tiled_fn encode, CUtensorMap *map, kb_dtype t, const void *base, int rank,
                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box)
{
    const CUtensorMapDataType type = t == KB_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    return encode_swizzled(encode, map, type, base, rank, dims, strides, box);
}

/* A row-major outer x inner matrix of elem_bytes-wide elements of `type`. */
static const char *encode_2d(kb_encode_tiled_fn encode, CUtensorMap *map, CUtensorMapDataType type, int elem_bytes,
                             const void *base, int inner, int outer, int box_inner, int box_outer)
{
    const cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
    const cuuint64_t strides[1] = {(cuuint64_t)inner * elem_bytes}; /* bytes between rows */
    const cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
    return encode_swizzled(encode, map, type, base, 2, dims, strides, box);
}

const char *kb_encode_16_2d(kb_encode_tiled_fn encode, CUtensorMap *map, kb_dtype t, const void *base, int inner,
                            int outer, int box_inner, int box_outer)
{
    const CUtensorMapDataType type = t == KB_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    return encode_2d(encode, map, type, 2, base, inner, outer, box_inner, box_outer);
}

const char *kb_encode_8_2d(kb_encode_tiled_fn encode, CUtensorMap *map, const void *base, int inner, int outer,
                           int box_inner, int box_outer)
{
    return encode_2d(encode, map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, base, inner, outer, box_inner, box_outer);
}

const char *kb_sm90a_unsupported(void)
{
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0 ? NULL : "wgmma needs sm_90a: compute capability 9.0 only";
}

const char *kb_sm90a_only(const kb_shape *s)
{
    (void)s;
    return kb_sm90a_unsupported();
}

cudaLaunchConfig_t kb_cluster_config(cudaLaunchAttribute *attr, int grid, int threads, int cluster, int smem,
                                     cudaStream_t stream)
{
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)cluster, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {0};
    config.gridDim = (dim3){(unsigned)grid, 1, 1}, config.blockDim = (dim3){(unsigned)threads, 1, 1};
    config.dynamicSmemBytes = (size_t)smem, config.stream = stream, config.attrs = attr, config.numAttrs = 1;
    return config;
}

const char *kb_max_clusters(const void *kernel, int threads, int cluster, int smem, int sms, int *n)
{
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = kb_cluster_config(&attr, sms / cluster * cluster, threads, cluster, smem, NULL);
    const char *err = kb_cuda_status(cudaOccupancyMaxActiveClusters(n, kernel, &config));
    if (!err && *n < 1)
        err = "no cluster of the kernel's blocks fits on this GPU (shared memory, registers)";
    return err;
}

/* ---- the 16-bit matmul rungs that load by TMA ------------------------------ */

bool kb_matmul_tma_maps_apply(kb_gemm_layout layout, const kb_matmul_args *a, bool c_by_tma)
{
    const int a_inner = layout == KB_GEMM_TN ? a->M : a->K, b_inner = layout == KB_GEMM_NT ? a->K : a->N;
    return a_inner % 8 == 0 && b_inner % 8 == 0 && a->N % 8 == 0 && kb_aligned(a->A16, 16) &&
           kb_aligned(a->B16, 16) && (!c_by_tma || kb_aligned(a->C16, 16));
}

static bool maps_apply(const kb_matmul_tma *t, const kb_matmul_args *a)
{
    return kb_matmul_tma_maps_apply(t->rung.layout, a, t->rung.c_rows > 0);
}

/* The stored matrices, inner dimension first: A K x M (TN: M x K, in
 * 64-row panels), B N x K (NT: K x N), C N x M. */
static const char *make_maps(kb_matmul_tma *t, const kb_matmul_args *a)
{
    const kb_matmul_tma_rung *r = &t->rung;
    const char *err = r->layout == KB_GEMM_TN
                          ? kb_encode_16_2d(t->encode, &t->map_a, r->dtype, a->A16, a->M, a->K, 64, r->bk)
                          : kb_encode_16_2d(t->encode, &t->map_a, r->dtype, a->A16, a->K, a->M, r->bk, r->bm);
    if (!err)
        err = r->layout == KB_GEMM_NT ? kb_encode_16_2d(t->encode, &t->map_b, r->dtype, a->B16, a->K, a->N, 64, r->b_rows)
                                      : kb_encode_16_2d(t->encode, &t->map_b, r->dtype, a->B16, a->N, a->K, 64, r->b_rows);
    if (!err && r->c_rows)
        err = kb_encode_16_2d(t->encode, &t->map_c, r->dtype, a->C16, a->N, a->M, 64, r->c_rows);
    t->a = err ? NULL : a->A16;
    t->b = err ? NULL : a->B16;
    t->c = err || !r->c_rows ? NULL : a->C16;
    t->M = a->M, t->N = a->N, t->K = a->K;
    return err;
}

/* Whether the maps describe a's tensors. */
static bool same_tensors(const kb_matmul_tma *t, const kb_matmul_args *a)
{
    return t->a == a->A16 && t->b == a->B16 && (!t->rung.c_rows || t->c == a->C16) && t->M == a->M &&
           t->N == a->N && t->K == a->K;
}

void kb_matmul_tma_teardown(void *ctx)
{
    kb_matmul_tma *t = (kb_matmul_tma *)ctx;
    if (!t)
        return;
    if (t->fallback && t->fallback->teardown)
        t->fallback->teardown(t->fallback_ctx);
    free(t);
}

const char *kb_setup_kernels(const void *const *kernels, const int *smem, int n, int threads, int cluster, int sms,
                             int *clusters)
{
    const char *err = NULL;
    for (int i = 0; i < n && kernels[i] && !err; ++i) {
        err = kb_cuda_status(cudaFuncSetAttribute(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, smem[i]));
        if (!err && cluster)
            err = kb_max_clusters(kernels[i], threads, cluster, smem[i], sms, &clusters[i]);
    }
    return err;
}

/* The shared-memory opt-in of the rung's kernels and, in clusters, how
 * many of each fit at once. */
static const char *setup_kernels(kb_matmul_tma *t)
{
    const kb_matmul_tma_rung *r = &t->rung;
    return kb_setup_kernels(r->kernels, r->smem, 2, r->threads, r->cluster, t->sms, t->clusters);
}

/* The driver's cuTensorMapEncodeTiled through the runtime, the SM count,
 * the kernels' setup and wgmma's (the fallback), and the maps. */
const char *kb_matmul_tma_setup(const void *args, const kb_matmul_tma_rung *rung, void **ctx)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    kb_matmul_tma *t = (kb_matmul_tma *)calloc(1, sizeof *t);
    if (!t)
        return "out of host memory";
    t->rung = *rung;
    const char *err = kb_tensor_map_encoder(&t->encode);
    int dev = 0;
    if (!err)
        err = kb_cuda_status(cudaGetDevice(&dev));
    if (!err)
        err = kb_cuda_status(cudaDeviceGetAttribute(&t->sms, cudaDevAttrMultiProcessorCount, dev));
    if (!err)
        err = setup_kernels(t);
    for (const kb_variant *v = matmul_wgmma; rung->layout == KB_GEMM_NN && v->name && !t->fallback; ++v)
        t->fallback = v->dtype == rung->dtype ? v : NULL;
    if (!err && rung->layout == KB_GEMM_NN && !t->fallback)
        err = "matmul wgmma has no form of the rung's dtype";
    if (!err && t->fallback && t->fallback->setup)
        err = t->fallback->setup(args, &t->fallback_ctx);
    if (!err && maps_apply(t, a))
        err = make_maps(t, a);
    if (err) {
        kb_matmul_tma_teardown(t);
        return err;
    }
    *ctx = t;
    return NULL;
}

bool kb_matmul_tma_begin(kb_matmul_tma *t, const void *args, cudaStream_t stream, const char **err)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    if (!maps_apply(t, a)) {
        *err = t->fallback ? t->fallback->launch(args, t->fallback_ctx, stream)
                           : "rows that are not 16-byte aligned: no tensor map, and no fallback outside NN";
        return false;
    }
    *err = same_tensors(t, a) ? NULL : make_maps(t, a);
    return !*err;
}
