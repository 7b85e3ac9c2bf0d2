/* Shared pieces of the row-wise ops (softmax, layernorm, rmsnorm, ...):
 * an R x C matrix processed one row of C elements at a time.  Shapes are
 * written RxC; every output is checked row by row; the reduction behind each
 * output element is the row, C long. */
#ifndef KBENCH_ROWWISE_H
#define KBENCH_ROWWISE_H

#include "kbench.h"

#define KB_ROWWISE_FIELDS "RxC"

/* The default sweep shared by the row-wise ops, in families:
 * - fixed-bytes: C from 32 to 262144 with R*C = 2^25 (256 MB moved by an
 *   x -> y op in fp32);
 * - transformer: 16384 tokens (B*T) over widths from GPT-2 small's to 8192
 *   (16384x2048 is in fixed-bytes);
 * - tokens: width 4096 over 1024 to 65536 tokens (the last, 1 GB a tensor);
 * - hostile: C in {1, 3, 31, 33, 1000, 4097} at R = 1, and a few odd R. */
#define KB_ROWWISE_FAMILIES                                                                             \
    ((const kb_family[]){                                                                               \
        {"fixed-bytes", "C",                                                                            \
         "1048576x32,262144x128,65536x512,32768x1024,16384x2048,8192x4096,4096x8192,2048x16384,"       \
         "1024x32768,512x65536,256x131072,128x262144"},                                                 \
        {"transformer", "C", "16384x768,16384x1024,16384x4096,16384x8192", 1},                          \
        {"tokens", "R", "1024x4096,4096x4096,65536x4096"},                                              \
        {"hostile", NULL, "1x1,1x3,1x31,1x33,1x1000,1x4097,4099x33,1023x1000,4097x4097", 1},           \
        {NULL}})
/* Regular, tile-hostile and long rows; R >= 4 where the op plants numerics rows.
 * 6x40964 ends each row in a chunk of four floats (persistent_row's bulk
 * copies of whole packs, not whole chunks); 700x8192 and 300x12289 give
 * persistent_row one and two chunks a row, dealt in their last rounds
 * (12289 takes scalars).  The last four have more long rows than an H100
 * holds clusters of long_row at once (clusters of 2, 5, 8 and 16 blocks;
 * 65537 takes scalars), and more chunks than split_row and persistent_row
 * have blocks resident (at 70x65537 persistent_row's classes of 14 blocks
 * deal their last round). */
#define KB_ROWWISE_TEST_SIZES                                                               \
    "1x1,1x3,4x2,7x31,5x33,64x128,33x1000,8x1024,9x4097,3x32768,5x65537,6x40964,2x262144," \
    "1000x768,257x4096,700x8192,300x12289,140x32768,70x65537,40x131072,20x262144"

/* The shape fields of a row-wise kb_op. */
#define KB_ROWWISE_SHAPES                                                                  \
    .shape_fields = KB_ROWWISE_FIELDS, .nd = 2, .families = KB_ROWWISE_FAMILIES, \
    .test_sizes = KB_ROWWISE_TEST_SIZES

static inline int64_t kb_rows_of(const kb_shape *s) { return s->d[0]; }
static inline int64_t kb_cols_of(const kb_shape *s) { return s->d[1]; }
static inline int64_t kb_rowwise_elems(const kb_shape *s) { return kb_mul_dims(s->d[0], s->d[1]); }

/* An R x C tensor.  As an output, checked row by row, each element the end
 * of a reduction over its row (C long), row_cost a reference row. */
static inline kb_tensor kb_rowwise_matrix(const char *name, const kb_shape *s, kb_dtype t, kb_role role,
                                          double row_cost)
{
    return kb_tensor_of(name, kb_rowwise_elems(s), t, role, s->d[0], s->d[1], s->d[1], row_cost);
}

/* A vector of C parameters (gamma, beta). */
static inline kb_tensor kb_rowwise_vector(const char *name, const kb_shape *s, kb_dtype t)
{
    return kb_tensor_of(name, s->d[1], t, KB_IN, 1, s->d[1], 0, 0);
}

#endif
