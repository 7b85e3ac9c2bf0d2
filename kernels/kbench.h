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
#define KB_MAX_TENSORS 8
#define KB_MAX_RANKS 8     /* GPUs one row may span (kbench run --devices) */

/* Storage type of a variant's tensors (KB_I32 for integer inputs such as
 * token ids, whatever the variant's dtype). */
typedef enum { KB_F32 = 0, KB_BF16 = 1, KB_I32 = 2 } kb_dtype;

/* Arithmetic a variant promises, which picks its tolerance (harness/tolerance.c)
 * and its compute ceiling (harness/ceilings.c).  3xTF32 keeps fp32 accuracy on
 * the tensor cores (each fp32 operand split into two tf32 parts, three
 * products): fp32's tolerance, a third of the tf32 rate as its ceiling. */
typedef enum { KB_MATH_F32 = 0, KB_MATH_TF32 = 1, KB_MATH_BF16 = 2, KB_MATH_3XTF32 = 3, KB_MATH_COUNT } kb_math;

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

/* One tensor an op reads or writes, for a given shape and dtype. */
typedef struct {
    const char *name;
    int64_t elems;
    kb_dtype dtype;
    int is_output;
    /* Outputs are checked row by row: rows * row_len == elems. */
    int64_t rows, row_len;
} kb_tensor;

/* A variant: one file under variants/<op>/, one line in the op's table.
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
    const char *baseline;              /* variant that speedups are measured against */
    const char *baseline_bf16;         /* the bf16 rows' baseline; NULL: they have none */
    const kb_variant *const *variants; /* NULL-terminated table */

    double (*flops)(const kb_shape *s);
    double (*bytes)(const kb_shape *s, kb_dtype t);
    /* Length of the reduction behind each output element; scales the tolerance. */
    int64_t (*reduction_len)(const kb_shape *s);
    int (*ntensors)(const kb_shape *s);
    kb_tensor (*tensor)(const kb_shape *s, kb_dtype t, int i);
    /* Fill the op's argument struct (`args`) from device pointers. */
    void (*bind)(const kb_shape *s, void *const *dev, void *args);
    size_t args_size;
    /* Reference in double for the listed rows of every output.  `in` holds
     * host copies of all tensors (outputs unset); ref[o] receives
     * nrows * row_len doubles for output o, in output order. */
    void (*reference)(const kb_shape *s, kb_dtype t, const void *const *in,
                      const int64_t *rows, int nrows, double **ref);
    /* Relative CPU cost of one reference row, used to sample rows of big shapes. */
    double (*row_cost)(const kb_shape *s);
    /* Optional: fill input tensor i (default: uniform in [-1, 1]) for a
     * variant with these KB_QUIRK_* bits. */
    void (*fill)(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks);
    /* Optional: a letter that may end a shape and sets bit 0 of its flags
     * (attention: "c" for a causal mask). */
    const char *flag_suffix;
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
/* Element i of a host tensor of dtype t, as double (harness/inputs.c). */
double kb_tensor_value(const void *x, int64_t i, kb_dtype t);

/* Every op file defines its contract functions under these names; this
 * fills them into its kb_op. */
#define KB_OP_CONTRACT(args_type)                                                                  \
    .flops = flops, .bytes = bytes, .reduction_len = reduction_len, .ntensors = ntensors,          \
    .tensor = tensor, .bind = bind, .args_size = sizeof(args_type), .reference = reference,        \
    .row_cost = row_cost

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
