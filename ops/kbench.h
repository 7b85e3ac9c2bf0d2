/* kbench's core contract: what an op and a variant are.
 *
 * An op (matmul, softmax, ...) is data: a shape syntax, FLOP and byte counts,
 * the tensors it reads and writes, a C reference and a table of variants.
 * The harness knows nothing op-specific; it allocates the tensors the op
 * describes, fills inputs, poisons outputs, runs variants, checks them
 * against the reference and times them.  Plain C so that .c and .cu files
 * share it. */
#ifndef KBENCH_H
#define KBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_MAX_DIMS 8
#define KB_MAX_TENSORS 16  /* an attention backward has 9 */
#define KB_MAX_RANKS 8     /* GPUs one row may span (kbench run --devices) */

/* Element types.  One table (harness/dtype.c) says, per type, its name,
 * size, rounding and range, and whether it carries a scale; every tensor of
 * an op has one, and a variant is keyed by (op, name, dtype), its dtype
 * being the one its rows are filed under (the CSV's dtype column).  e4m3 and
 * e5m2 are fp8's two encodings (OCP: e4m3 saturates at 448 with no
 * infinity, e5m2 keeps IEEE's); i32 holds integer inputs such as token ids. */
typedef enum { KB_F32 = 0, KB_BF16, KB_F16, KB_E4M3, KB_E5M2, KB_I32, KB_DTYPE_COUNT } kb_dtype;

typedef struct {
    const char *name;       /* as --dtype, the CSV and kbench list write it */
    int bytes;              /* storage per element */
    int mantissa_bits;      /* stored fraction bits: one rounding is off by 2^-(bits+1) relative; 0 for i32 */
    double max_finite;      /* the largest finite value (fp8 conversions saturate there) */
    int scaled;             /* stored with a scale beside it: the value is the element times its scale */
    int keys_variants;      /* variants may be filed under it (not i32, which is only an operand's) */
} kb_dtype_info;

extern const kb_dtype_info kb_dtypes[KB_DTYPE_COUNT];

/* Arithmetic a variant promises, which picks its tolerance (harness/tolerance.c)
 * and its compute ceiling (harness/ceilings.c).  3xTF32 keeps fp32 accuracy on
 * the tensor cores (each fp32 operand split into two tf32 parts, three
 * products): fp32's tolerance, a third of the tf32 rate as its ceiling.
 * bf16 and f16: inputs in that type, fp32 accumulation, results rounded to it.
 * fp8: e4m3 or e5m2 inputs on the tensor cores, whose accumulator keeps
 * some 14 bits, its partial sums promoted into fp32 at least every 128 of
 * the reduction (cuBLASLt without fast accumulation, DeepSeek-V3's
 * recipe); a kernel that never promotes fails its bound at large K. */
typedef enum {
    KB_MATH_F32 = 0, KB_MATH_TF32 = 1, KB_MATH_BF16 = 2, KB_MATH_3XTF32 = 3, KB_MATH_F16 = 4, KB_MATH_FP8 = 5,
    KB_MATH_COUNT
} kb_math;

/* What a variant needs beyond the CUDA runtime. */
enum { KB_NEEDS_CUBLAS = 1u << 0, KB_NEEDS_CUDNN = 1u << 1, KB_NEEDS_NCCL = 1u << 2 };

/* Documented ways a (library) variant departs from its op's conventions.
 * The op leaves the inputs that would trip them out of that variant's runs,
 * and `kbench list` shows them. */
enum {
    /* Gives NaN, not the op's zeros, for a row that is entirely -inf. */
    KB_QUIRK_NAN_ON_MASKED_ROW = 1u << 0,
};

typedef struct {
    int nd;                    /* number of fields */
    int64_t d[KB_MAX_DIMS];    /* each >= 1 */
    unsigned flags;            /* op-specific (e.g. a causal mask) */
    int ranks;                 /* a distributed op's GPUs (the run's --devices); 0 for other ops */
} kb_shape;

/* What a variant does with a tensor.  An input is restored from a pristine
 * copy before the variant runs; an output is poisoned with NaN and checked;
 * an inout (a gradient accumulated with +=, an optimizer's parameters) is
 * restored before every launch, outside timing, and checked after. */
typedef enum { KB_IN = 0, KB_OUT, KB_INOUT } kb_role;

/* One tensor an op reads or writes, for a given shape and variant dtype. */
typedef struct {
    const char *name;
    int64_t elems;
    kb_dtype dtype;
    kb_role role;
    /* Outputs (out and inout) are checked row by row: rows * row_len ==
     * elems, each output with its own sample of rows. */
    int64_t rows, row_len;
    /* An output's: the length of the reduction behind each element, which
     * scales its tolerance, and the relative CPU cost of one reference row,
     * which sets how many rows of a big shape are checked. */
    int64_t reduction_len;
    double row_cost;
    /* An input the op's prepare makes from the others (a forward's
     * statistics for its backward), not drawn at random. */
    int derived;
} kb_tensor;

static inline int kb_is_checked(const kb_tensor *t) { return t->role != KB_IN; }
static inline int kb_is_read(const kb_tensor *t) { return t->role != KB_OUT; }

/* A variant: one file under variants/<op>/, one line in the op's table.
 * The file defines its forms, one per dtype it runs in, as an array that
 * ends with an empty entry (KB_VARIANT_END): `matmul cublas` has an f32, a
 * bf16 and an f16 form, each its own row.  The forms share the name; each
 * has its own math, launch and whatever else differs.
 * `launch` enqueues the work on `stream` and returns NULL, or a static string
 * naming the failure.  `setup`/`teardown` hold handles and workspaces, which
 * the harness creates before and destroys after all timing. */
typedef struct kb_variant {
    const char *name;
    const char *summary;               /* one line for `kbench list` */
    kb_dtype dtype;
    kb_math math;
    unsigned needs;                    /* KB_NEEDS_* */
    unsigned quirks;                   /* KB_QUIRK_* */
    int min_cc;                        /* e.g. 80 for sm_80 and newer; 0 for any */
    /* GPUs it needs, 0 or 1 for one.  A tensor-parallel variant of a
     * one-GPU op finds its tensors on the run's first GPU and spreads the
     * work over the others (kb_run_devices); it SKIPs on fewer. */
    int min_devices;
    /* NULL when the variant runs this shape, else why not. Optional. */
    const char *(*unsupported)(const kb_shape *s);
    const char *(*setup)(const void *args, void **ctx);  /* optional; args as in launch */
    void (*teardown)(void *ctx);       /* optional */
    const char *(*launch)(const void *args, void *ctx, cudaStream_t stream);
} kb_variant;

/* The entry that ends a variant file's forms. */
#define KB_VARIANT_END {NULL}

/* A named family of an op's default shapes.  Most sweep one field, the
 * axis, with the others fixed (or derived from it), so that a plot draws
 * the family as one line over the axis; shapes that share no such sweep
 * (tile-hostile ones) have a NULL axis and are drawn as points. */
typedef struct {
    const char *name;                  /* e.g. "square" */
    const char *axis;                  /* a field of shape_fields, e.g. "N", or NULL */
    const char *sizes;                 /* comma-separated shapes */
    int quick;                         /* in the --quick sweep */
    const char *quick_sizes;           /* the --quick sweep's shapes when not all of sizes (NULL: all) */
} kb_family;

typedef struct kb_op {
    const char *name;
    const char *summary;
    const char *shape_fields;          /* e.g. "MxNxK" */
    int nd;                            /* fields in a shape */
    const kb_family *families;         /* the default sweep; ends with a NULL name */
    const char *test_sizes;            /* regular and tile-hostile shapes for the GPU tests */
    /* Per dtype, the variant its rows' speedups are measured against (a
     * form of that dtype); NULL: that dtype's rows have none. */
    const char *baseline[KB_DTYPE_COUNT];
    /* The variant files' forms: each entry an array ending with
     * KB_VARIANT_END, the table NULL-terminated (KB_FOR_EACH_VARIANT walks it). */
    const kb_variant *const *variants;

    double (*flops)(const kb_shape *s);
    int (*ntensors)(const kb_shape *s);
    kb_tensor (*tensor)(const kb_shape *s, kb_dtype t, int i);
    /* Fill the op's argument struct (`args`) from device pointers. */
    void (*bind)(const kb_shape *s, void *const *dev, void *args);
    size_t args_size;
    /* Reference in double for the listed rows of output tensor `out`
     * (an index into the tensors, role out or inout).  `in` holds host
     * copies of every input and inout tensor as it stands before the
     * variant runs, outputs NULL; ref receives nrows * row_len doubles. */
    void (*reference)(const kb_shape *s, kb_dtype t, const void *const *in, int out,
                      const int64_t *rows, int nrows, double *ref);
    /* Optional: the bytes a launch must move, when not each tensor once
     * (an inout twice), which kb_op_bytes counts from the tensors. */
    double (*bytes)(const kb_shape *s, kb_dtype t);
    /* Optional: fill input tensor i (default: uniform in [-1, 1]) for a
     * variant with these KB_QUIRK_* bits. */
    void (*fill)(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks);
    /* Optional: make the derived inputs from the others, in place in the
     * host copies (every input's, in its storage dtype; outputs NULL), as
     * the op's forward would (mean and rstd from x; O and the log-sum-exp
     * from Q, K and V), from the reference so that they are exact.  Runs
     * outside timing after the inputs are drawn, so it is as reproducible
     * as they are. */
    void (*prepare)(const kb_shape *s, kb_dtype t, void *const *host);
    /* Optional: a letter that may end a shape and sets bit 0 of its flags
     * (attention: "c" for a causal mask). */
    const char *flag_suffix;
    /* Optional: the conventions a variant must honour that random inputs
     * alone would not show, in one sentence, for a failed row's hint (the
     * verdict on a kernel of one's own prints it). */
    const char *conventions;
    /* Optional: why a well-formed shape is still invalid (exit 2), or NULL. */
    const char *(*validate)(const kb_shape *s);
    /* Optional: the most fields a shape may have when its last ones may be
     * left out (attention: 6, the KV heads after D); 0 means exactly nd.  A
     * shape's nd says how many it gave. */
    int nd_max;
    /* Optional: a collective over the run's GPUs (shape.ranks of them).
     * Every tensor has one row per GPU, row r living on GPU r, and bind
     * receives dev[i * ranks + r]: tensor i's row on GPU r.  Every rank's
     * rows are checked; rows are timed with L2 left warm (as nccl-tests
     * does), and the op SKIPs on one GPU. */
    int distributed;
} kb_op;

/* Every form of every variant of an op, in table order, as v.  A `break`
 * leaves only the inner loop: a search returns from inside it instead. */
#define KB_FOR_EACH_VARIANT(op, v)                                                                 \
    for (const kb_variant *const *kb_file_ = (op)->variants; *kb_file_; ++kb_file_)                \
        for (const kb_variant *v = *kb_file_; v->name; ++v)

/* Product of dimensions, or -1 when it overflows 63 bits; ops use it for
 * tensor sizes so an absurd shape is rejected instead of wrapping. */
static inline int64_t kb_mul_dims(int64_t a, int64_t b)
{
    int64_t r;
    return (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) ? -1 : r;
}

/* The harness's default input: seeded, uniform in [-1, 1] (harness/inputs.c).
 * An op's `fill` calls it, then plants its special rows. */
void kb_fill_uniform(float *x, int64_t n, uint64_t seed);
/* An f16 value's bits as float, exactly (by bits: references read billions). */
static inline float kb_f16_bits_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
    union { uint32_t u; float f; } v;
    if (exp == 0) { /* zero or subnormal: frac * 2^-24, exact in float */
        v.f = (float)frac * 0x1p-24f;
        v.u |= sign;
    } else
        v.u = sign | (exp == 0x1f ? 0x7f800000u | frac << 13 : (exp + 112) << 23 | frac << 13);
    return v.f;
}

/* Element i of a host tensor of dtype t, as double (harness/dtype.c). */
double kb_tensor_value(const void *x, int64_t i, kb_dtype t);
/* Elements first .. first + n - 1 of it into out, as doubles. */
void kb_widen(const void *x, int64_t first, int64_t n, kb_dtype t, double *out);
/* n floats into dtype t's storage, rounded as the GPU rounds (to nearest
 * even; fp8 saturating, as cvt's satfinite; i32 takes integral values). */
void kb_store_floats(kb_dtype t, const float *src, void *dst, int64_t n);
/* The bytes a launch moves: each tensor once and an inout twice, unless the
 * op counts them itself (its bytes). */
double kb_op_bytes(const kb_op *op, const kb_shape *s, kb_dtype t);
/* The share of those bytes that are written (an inout's write half), from
 * the tensors' roles; -1 when the op counts its bytes itself, or none. */
double kb_op_write_share(const kb_op *op, const kb_shape *s, kb_dtype t);

/* An op's tensor of `elems` elements checked (when not KB_IN) as rows of
 * row_len, each the end of a reduction of reduction_len elements, at
 * row_cost a reference row: the common case of kb_tensor, named. */
static inline kb_tensor kb_tensor_of(const char *name, int64_t elems, kb_dtype t, kb_role role, int64_t rows,
                                     int64_t row_len, int64_t reduction_len, double row_cost)
{
    kb_tensor x = {name, elems, t, role, rows, row_len, reduction_len, row_cost, 0};
    return x;
}

/* Every op file defines its contract functions under these names; this
 * fills them into its kb_op. */
#define KB_OP_CONTRACT(args_type)                                                                  \
    .flops = flops, .ntensors = ntensors, .tensor = tensor, .bind = bind,                        \
    .args_size = sizeof(args_type), .reference = reference

/* ---- several GPUs (harness/ranks.c) ---- */
/* The run's GPUs, in --devices order, the current one first; their count. */
int kb_run_devices(const int **ids);
/* Peer access between every pair of the run's GPUs (once a process); NULL,
 * or why two of them cannot reach each other's memory. */
const char *kb_enable_peers(void);

/* A variant's work on each of the run's GPUs, ordered after what came
 * before on `stream` (the first GPU's, which the harness times) and joined
 * back into it.  The first GPU stays current after each call.  The streams
 * are one per GPU for the whole process, and a launch must put each GPU's
 * part on stream[r] only, between the fork and the join: the harness times
 * a collective by leaving both out and timing each GPU's stream itself. */
typedef struct {
    int n;
    int device[KB_MAX_RANKS];
    cudaStream_t stream[KB_MAX_RANKS];
    cudaEvent_t fork, joined[KB_MAX_RANKS];
} kb_ranks;
const char *kb_ranks_open(kb_ranks *g);   /* a stream and events on each GPU */
void kb_ranks_close(kb_ranks *g);
/* Every GPU's stream waits for the work enqueued on `stream` so far. */
const char *kb_ranks_fork(kb_ranks *g, cudaStream_t stream);
/* `stream` waits for the work enqueued on every GPU's stream so far. */
const char *kb_ranks_join(kb_ranks *g, cudaStream_t stream);

/* All ops, NULL-terminated (harness/registry.c). */
extern const kb_op *const kb_ops[];

#ifdef __cplusplus
}
#endif
#endif
