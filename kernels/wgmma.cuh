/* Hopper's warpgroup MMA (wgmma) and the register moves between warpgroups
 * (setmaxnreg), for the wgmma matmul rungs, flash_wgmma and the ceilings'
 * wgmma_peak.  The four warps of a warpgroup issue each wgmma together.
 * D is fp32: an m64nN product keeps N / 2 registers a thread, laid out as
 * mma.sync's m16n8 accumulator tiles side by side (warp w holds rows
 * 16w..16w+15; d[4j..4j+1] at row lane / 4, columns 8j + 2 (lane % 4)
 * and one more, d[4j+2..4j+3] 8 rows below).  B comes from shared memory
 * by a matrix descriptor; A from shared memory too (kb_wgmma_ss) or from
 * registers (kb_wgmma_rs: a k-slice of an accumulator as bf16 pairs is A's
 * fragment, as flash attention's P is).  16-bit types (bf16, f16) multiply
 * k16 slices, 8-bit ones (fp8 e4m3, e5m2) k32 slices of the same bytes.
 *
 * The products are asynchronous.  kb_wgmma_fence goes before a batch,
 * kb_wgmma_commit after it and kb_wgmma_wait before its results are read;
 * kb_fence_regs on the accumulators (and on registers that an MMA in
 * flight reads) keeps the compiler from moving their accesses across the
 * MMAs.  A register written between the fence and the batch's last MMA
 * makes ptxas serialize every wgmma of the kernel (warnings C7518 /
 * C7513), which tests/test_sass.sh catches.
 *
 * All of it exists in the sm_90a cubin only (__CUDA_ARCH_FEAT_SM90_ALL),
 * as does the code that uses it. */
#ifndef KBENCH_WGMMA_CUH
#define KBENCH_WGMMA_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

/* A shared-memory matrix descriptor: start address, leading and stride
 * byte offsets (all >> 4), 128-byte swizzle (mode 1 in bits 62-63): rows
 * of 128 bytes, 16-byte chunk c of row r at chunk c ^ (r % 8) of its
 * 1024-byte group of 8 rows, the layout of every kbench tile. */
__device__ __forceinline__ uint64_t kb_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
           1ull << 62;
}

__device__ __forceinline__ void kb_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kb_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

/* Wait until at most `Pending` committed batches of this warpgroup run. */
template <int Pending>
__device__ __forceinline__ void kb_wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}

/* Keep the compiler from moving accesses to these registers across the
 * asynchronous MMAs: accumulators, and A operands that an MMA in flight
 * still reads. */
template <int N>
__device__ __forceinline__ void kb_fence_regs(float (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void kb_fence_regs(uint32_t (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+r"(r[i])::"memory");
}

/* This thread's generic writes to shared memory (st.shared, cp.async,
 * stmatrix) made visible to the async proxy, which wgmma's operand reads
 * and TMA stores use. */
__device__ __forceinline__ void kb_fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Give registers back to the SM (dec) or take them (inc): every thread of
 * the warpgroup executes the same one.  Regs: a multiple of 8 in 24..256. */
template <int Regs>
__device__ __forceinline__ void kb_setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void kb_setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

/* The 128 threads of one warpgroup meet at named barrier `id` (1..15; 0
 * is __syncthreads), the others of the block going on. */
__device__ __forceinline__ void kb_warpgroup_sync(int id)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

/* Four 8x8 b16 matrices from registers to shared memory: lanes 8i..8i+7
 * give the row addresses of matrix i, register i holds each lane's pair of
 * matrix i (the layout of an mma accumulator fragment), for epilogues that
 * stage C in shared memory for a TMA store. */
__device__ __forceinline__ void kb_stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

/* ---- the products --------------------------------------------------------- */

/* Element types of A and B; D is fp32. */
enum class KbWgmmaType { bf16, f16, e4m3, e5m2 };
/* How B lies in shared memory: K-major (each of its N columns runs along
 * K, as the rows of K do in attention's Q K^T) or N-major (as a row-major
 * K x N matrix, which the MMA transposes).  8-bit types take K-major only,
 * and A from shared memory is K-major but in kb_wgmma_ss_mn. */
enum class KbWgmmaB { k_major, n_major };

__host__ __device__ constexpr bool kb_wgmma_8bit(KbWgmmaType t)
{
    return t == KbWgmmaType::e4m3 || t == KbWgmmaType::e5m2;
}

/* The wgmma element type of a 16-bit storage type (a rung's template
 * parameter H): __nv_bfloat16 or __half. */
template <typename H> struct KbWgmmaTypeOf;
template <> struct KbWgmmaTypeOf<__nv_bfloat16> { static constexpr KbWgmmaType value = KbWgmmaType::bf16; };
template <> struct KbWgmmaTypeOf<__half> { static constexpr KbWgmmaType value = KbWgmmaType::f16; };

/* The forms that PTX has and this header stamps out. */
template <int N, KbWgmmaType A, KbWgmmaB BMajor, KbWgmmaType B>
__device__ constexpr void kb_wgmma_check()
{
    static_assert(N == 64 || N == 128 || N == 192 || N == 256,
                  "kb_wgmma: N of 64, 128, 192 or 256 (another needs its line in KB_WGMMA_BY_N)");
    static_assert(kb_wgmma_8bit(A) ? kb_wgmma_8bit(B) : A == B, "kb_wgmma: bf16 x bf16, f16 x f16 or fp8 x fp8");
    static_assert(!kb_wgmma_8bit(A) || BMajor == KbWgmmaB::k_major, "kb_wgmma: 8-bit B is K-major only");
}

/* An asm statement's text must be a string literal, so the products are
 * stamped out by macros: KB_WGMMA_D<R> lists the accumulator's R registers
 * (operands %0..%R-1, R = N / 2) and KB_WGMMA_ACC<R>(d) their
 * constraints; the inputs follow from %R. */
#define KB_WGMMA_D32                                                                                                   \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KB_WGMMA_D64                                                                                                   \
    KB_WGMMA_D32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                  \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KB_WGMMA_D96                                                                                                   \
    KB_WGMMA_D64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                  \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define KB_WGMMA_D128                                                                                                  \
    KB_WGMMA_D96 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "      \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define KB_WGMMA_F8(d, i)                                                                                              \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]),       \
        "+f"(d[i + 7])
#define KB_WGMMA_ACC32(d) KB_WGMMA_F8(d, 0), KB_WGMMA_F8(d, 8), KB_WGMMA_F8(d, 16), KB_WGMMA_F8(d, 24)
#define KB_WGMMA_ACC64(d)                                                                                              \
    KB_WGMMA_ACC32(d), KB_WGMMA_F8(d, 32), KB_WGMMA_F8(d, 40), KB_WGMMA_F8(d, 48), KB_WGMMA_F8(d, 56)
#define KB_WGMMA_ACC96(d)                                                                                              \
    KB_WGMMA_ACC64(d), KB_WGMMA_F8(d, 64), KB_WGMMA_F8(d, 72), KB_WGMMA_F8(d, 80), KB_WGMMA_F8(d, 88)
#define KB_WGMMA_ACC128(d)                                                                                             \
    KB_WGMMA_ACC96(d), KB_WGMMA_F8(d, 96), KB_WGMMA_F8(d, 104), KB_WGMMA_F8(d, 112), KB_WGMMA_F8(d, 120)

/* One wgmma: INSTR its shape and types, REGS and ACC its accumulator D
 * (ACC names the constraints' macro: expanded here, its commas would split
 * the arguments on the way), A_OP A's operand (a descriptor, or four
 * registers in braces), B_OP B's descriptor, P_OP the operand that gives
 * scale-d (0: D = A B, else D += A B), IMM the immediates after it, the
 * rest the inputs' constraints. */
#define KB_WGMMA_ASM(INSTR, REGS, ACC, D, A_OP, B_OP, P_OP, IMM, ...)                                                  \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P_OP ", 0;\n"                                                     \
                 "wgmma.mma_async.sync.aligned." INSTR " {" REGS "}, " A_OP ", " B_OP ", p, " IMM ";\n}\n"             \
                 : ACC(D)                                                                                              \
                 : __VA_ARGS__)

/* The forms of shape m64n<N> for the template's A, B and BMajor.  The
 * immediates: A's and B's scales (1), then for 16-bit types the
 * transposes, A's only where A is in shared memory (TA "0, ": K-major) and
 * B's (1: N-major); 8-bit types have none. */
#define KB_WGMMA_FORMS(N, TA, REGS, ACC, D, A_OP, B_OP, P_OP, ...)                                                     \
    if constexpr (A == KbWgmmaType::bf16 && BMajor == KbWgmmaB::n_major)                                               \
        KB_WGMMA_ASM("m64n" #N "k16.f32.bf16.bf16", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1, " TA "1", __VA_ARGS__);    \
    else if constexpr (A == KbWgmmaType::bf16)                                                                         \
        KB_WGMMA_ASM("m64n" #N "k16.f32.bf16.bf16", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1, " TA "0", __VA_ARGS__);    \
    else if constexpr (A == KbWgmmaType::f16 && BMajor == KbWgmmaB::n_major)                                           \
        KB_WGMMA_ASM("m64n" #N "k16.f32.f16.f16", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1, " TA "1", __VA_ARGS__);      \
    else if constexpr (A == KbWgmmaType::f16)                                                                          \
        KB_WGMMA_ASM("m64n" #N "k16.f32.f16.f16", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1, " TA "0", __VA_ARGS__);      \
    else if constexpr (A == KbWgmmaType::e4m3 && B == KbWgmmaType::e4m3)                                               \
        KB_WGMMA_ASM("m64n" #N "k32.f32.e4m3.e4m3", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1", __VA_ARGS__);             \
    else if constexpr (A == KbWgmmaType::e4m3)                                                                         \
        KB_WGMMA_ASM("m64n" #N "k32.f32.e4m3.e5m2", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1", __VA_ARGS__);             \
    else if constexpr (B == KbWgmmaType::e4m3)                                                                         \
        KB_WGMMA_ASM("m64n" #N "k32.f32.e5m2.e4m3", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1", __VA_ARGS__);             \
    else                                                                                                               \
        KB_WGMMA_ASM("m64n" #N "k32.f32.e5m2.e5m2", REGS, ACC, D, A_OP, B_OP, P_OP, "1, 1", __VA_ARGS__)

/* The operands after the accumulator's R = N / 2 registers, %R.., for each
 * N: FORM(N, R, the next six). */
#define KB_WGMMA_BY_N(FORM)                                                                                            \
    if constexpr (N == 64)                                                                                             \
        FORM(64, 32, "%32", "%33", "%34", "%35", "%36", "%37");                                                        \
    else if constexpr (N == 128)                                                                                       \
        FORM(128, 64, "%64", "%65", "%66", "%67", "%68", "%69");                                                       \
    else if constexpr (N == 192)                                                                                       \
        FORM(192, 96, "%96", "%97", "%98", "%99", "%100", "%101");                                                     \
    else                                                                                                               \
        FORM(256, 128, "%128", "%129", "%130", "%131", "%132", "%133")

/* In kb_wgmma_ss, A from shared memory: operands d, desc_a, desc_b, accumulate. */
#define KB_WGMMA_SS(N, R, X0, X1, X2, X3, X4, X5)                                                                      \
    KB_WGMMA_FORMS(N, "0, ", KB_WGMMA_D##R, KB_WGMMA_ACC##R, d, X0, X1, X2, "l"(desc_a), "l"(desc_b), "r"(accumulate))
/* In kb_wgmma_ss_mn, A from shared memory and M-major: the same operands. */
#define KB_WGMMA_SS_MN(N, R, X0, X1, X2, X3, X4, X5)                                                                   \
    KB_WGMMA_FORMS(N, "1, ", KB_WGMMA_D##R, KB_WGMMA_ACC##R, d, X0, X1, X2, "l"(desc_a), "l"(desc_b), "r"(accumulate))
/* In kb_wgmma_rs, A from registers: operands d, a[0..3], desc_b, accumulate. */
#define KB_WGMMA_RS(N, R, X0, X1, X2, X3, X4, X5)                                                                      \
    KB_WGMMA_FORMS(N, "", KB_WGMMA_D##R, KB_WGMMA_ACC##R, d, "{" X0 ", " X1 ", " X2 ", " X3 "}", X4, X5, "r"(a[0]),   \
                   "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))

/* d = A (64 x K, K-major, by descriptor) * B (K x N, by descriptor) +
 * (accumulate ? d : 0), K = 16 (16-bit types) or 32 (8-bit). */
template <int N, KbWgmmaType A, KbWgmmaB BMajor = KbWgmmaB::k_major, KbWgmmaType B = A>
__device__ __forceinline__ void kb_wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    kb_wgmma_check<N, A, BMajor, B>();
    KB_WGMMA_BY_N(KB_WGMMA_SS);
}

/* The same with A M-major: stored as a row-major K x 64 matrix (A^T),
 * which the MMA transposes, as a linear layer's weight gradient reads its
 * activations (dB = A^T dC).  16-bit types only. */
template <int N, KbWgmmaType A, KbWgmmaB BMajor = KbWgmmaB::k_major>
__device__ __forceinline__ void kb_wgmma_ss_mn(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    static_assert(!kb_wgmma_8bit(A), "kb_wgmma_ss_mn: 8-bit A is K-major only");
    constexpr KbWgmmaType B = A; /* for KB_WGMMA_FORMS's 8-bit branches, never taken */
    kb_wgmma_check<N, A, BMajor, B>();
    KB_WGMMA_BY_N(KB_WGMMA_SS_MN);
}

/* d = A (64 x K in registers, a[0..3]: the fragments of an m16n8
 * accumulator's k-slice, as bf16 / f16 pairs or fp8 quadruples) * B (K x N,
 * by descriptor) + (accumulate ? d : 0). */
template <int N, KbWgmmaType A, KbWgmmaB BMajor = KbWgmmaB::k_major, KbWgmmaType B = A>
__device__ __forceinline__ void kb_wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b, int accumulate)
{
    kb_wgmma_check<N, A, BMajor, B>();
    KB_WGMMA_BY_N(KB_WGMMA_RS);
}

#undef KB_WGMMA_RS
#undef KB_WGMMA_SS_MN
#undef KB_WGMMA_SS
#undef KB_WGMMA_BY_N
#undef KB_WGMMA_FORMS
#undef KB_WGMMA_ASM
#undef KB_WGMMA_ACC128
#undef KB_WGMMA_ACC96
#undef KB_WGMMA_ACC64
#undef KB_WGMMA_ACC32
#undef KB_WGMMA_F8
#undef KB_WGMMA_D128
#undef KB_WGMMA_D96
#undef KB_WGMMA_D64
#undef KB_WGMMA_D32

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

#endif
