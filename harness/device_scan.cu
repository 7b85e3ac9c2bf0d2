/* The check's device side: NaN and Inf counted over a whole output, and
 * the sampled rows compared with the reference where they lie. */
#include "harness/harness.h"
#include "kernels/dtype.cuh"

static unsigned long long *count; /* device_count's, allocated once */

/* A count made on the device: launch(count) enqueues kernels that add to
 * the zeroed counter, read back into *out. */
template <class F>
static cudaError_t device_count(F &&launch, int64_t *out)
{
    cudaError_t e = count ? cudaSuccess : cudaMalloc(&count, sizeof *count);
    if (e == cudaSuccess)
        e = cudaMemset(count, 0, sizeof *count);
    if (e == cudaSuccess)
        e = launch(count);
    unsigned long long host = 0;
    if (e == cudaSuccess && (e = cudaGetLastError()) == cudaSuccess)
        e = cudaMemcpy(&host, count, sizeof host, cudaMemcpyDeviceToHost);
    *out = (int64_t)host;
    return e;
}

/* Bytes where a and b differ; one atomic per warp that saw some. */
__global__ void count_differing_kernel(const unsigned char *a, const unsigned char *b, int64_t n,
                                       unsigned long long *count)
{
    unsigned local = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        local += a[i] != b[i];
    local = __reduce_add_sync(0xffffffffu, local);
    if ((threadIdx.x & 31) == 0 && local)
        atomicAdd(count, (unsigned long long)local);
}

extern "C" cudaError_t kb_device_count_differing(const void *a, const void *b, int64_t bytes, int64_t *out)
{
    return device_count(
        [&](unsigned long long *count) {
            count_differing_kernel<<<1024, 256>>>((const unsigned char *)a, (const unsigned char *)b, bytes, count);
            return cudaSuccess;
        },
        out);
}

template <typename T>
__global__ void count_nonfinite_kernel(const T *x, int64_t n, unsigned long long *count)
{
    unsigned long long local = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        local += !isfinite(kb_to_float(x[i]));
    /* One atomic per warp that saw something: cheap when the output is clean. */
    local = __reduce_add_sync(0xffffffffu, (unsigned)local);
    if ((threadIdx.x & 31) == 0 && local)
        atomicAdd(count, local);
}

extern "C" cudaError_t kb_device_count_nonfinite(const void *x, int64_t n, kb_dtype t, int64_t *out)
{
    return device_count(
        [&](unsigned long long *count) {
            return kb_with_dtype(t, [&](auto type) {
                count_nonfinite_kernel<<<1024, 256>>>((const decltype(type) *)x, n, count);
            });
        },
        out);
}

/* ---- the check on the device ----
 * Each block compares one fixed chunk of the sampled elements, its threads
 * in a fixed order, into a kb_check_part; the host merges them in block
 * order (kb_check_merge).  The verdict is that of kb_compare_rows on the
 * rows read back, without reading them: a row-wise op's sampled rows are
 * its whole 256 MB output, twice a variant. */
#define CMP_THREADS 256
#define CMP_MIN_PER_BLOCK 8192
#define CMP_MAX_BLOCKS 1024

/* An element as the reference compares it: ints exactly, floats widened. */
template <typename T> __device__ static double kb_to_value(T x) { return kb_to_float(x); }
__device__ static double kb_to_value(int32_t x) { return x; }

/* a += b, as kb_check_merge folds a later chunk into an earlier one. */
__device__ static void part_add(kb_check_part *a, const kb_check_part *b)
{
    a->bad_elems += b->bad_elems;
    if (b->max_abs_err == INFINITY || b->max_abs_err > a->max_abs_err) {
        a->max_abs_err = b->max_abs_err;
        a->worst_tol = b->worst_tol;
    }
    a->err2 += b->err2;
    a->ref2 += b->ref2;
}

template <typename T>
__global__ void compare_rows_kernel(const T *out, int64_t row_len, const int64_t *rows, const double *ref,
                                    int64_t n, int64_t per_block, double abs_tol, double rel_tol,
                                    kb_check_part *parts)
{
    kb_check_part p = {0, 0.0, 0.0, 0.0, 0.0};
    int64_t lo = blockIdx.x * per_block, hi = lo + per_block < n ? lo + per_block : n;
    for (int64_t i = lo + threadIdx.x; i < hi; i += CMP_THREADS) {
        int64_t k = i / row_len;
        double o = kb_to_value(out[rows[k] * row_len + (i - k * row_len)]), r = ref[i], e = fabs(o - r);
        double tol = abs_tol + rel_tol * fabs(r);
        if (!isfinite(o)) {
            p.bad_elems++;
            p.max_abs_err = INFINITY;
            p.worst_tol = tol;
            continue;
        }
        p.bad_elems += e > tol;
        if (e > p.max_abs_err) {
            p.max_abs_err = e;
            p.worst_tol = tol;
        }
        p.err2 += e * e;
        p.ref2 += r * r;
    }
    __shared__ kb_check_part all[CMP_THREADS];
    all[threadIdx.x] = p;
    __syncthreads();
    for (int stride = CMP_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            part_add(&all[threadIdx.x], &all[threadIdx.x + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        parts[blockIdx.x] = all[0];
}

extern "C" cudaError_t kb_device_compare_rows(const void *out, kb_dtype t, int64_t row_len, const int64_t *rows,
                                              int nrows, const double *ref, kb_math m, int64_t reduction_len,
                                              kb_check *c)
{
    static kb_check_part *parts;
    static kb_check_part host[CMP_MAX_BLOCKS];
    cudaError_t e = parts ? cudaSuccess : cudaMalloc(&parts, sizeof host);
    if (e != cudaSuccess)
        return e;
    int64_t n = (int64_t)nrows * row_len;
    int64_t blocks = (n + CMP_MIN_PER_BLOCK - 1) / CMP_MIN_PER_BLOCK;
    blocks = blocks < 1 ? 1 : blocks > CMP_MAX_BLOCKS ? CMP_MAX_BLOCKS : blocks;
    int64_t per_block = (n + blocks - 1) / blocks;
    double abs_tol, rel_tol;
    kb_tolerance_terms_for(m, t, reduction_len, &abs_tol, &rel_tol);
    e = kb_with_dtype(t, [&](auto type) {
        compare_rows_kernel<<<(unsigned)blocks, CMP_THREADS>>>((const decltype(type) *)out, row_len, rows, ref, n,
                                                               per_block, abs_tol, rel_tol, parts);
    });
    if (e == cudaSuccess && (e = cudaGetLastError()) == cudaSuccess)
        e = cudaMemcpy(host, parts, (size_t)blocks * sizeof *host, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        kb_check_merge(host, blocks, m, t, reduction_len, c);
    return e;
}

/* Whether this binary's kernels load on the current device: an error such as
 * cudaErrorNoKernelImageForDevice when it holds neither machine code for the
 * device nor PTX that the driver can compile for it.  Every .cu file is
 * built for the same archs, so one kernel stands for all. */
extern "C" cudaError_t kb_device_code_loads(void)
{
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, count_nonfinite_kernel<float>);
}
