/* NumPy .npy arrays of little-endian float32 in C order: what a model reads
 * as input and writes as output, so that NumPy and PyTorch can compare. */
#ifndef KBENCH_FORMATS_NPY_H
#define KBENCH_FORMATS_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_NPY_MAX_DIMS 8

typedef struct {
    int ndim;
    int64_t shape[KB_NPY_MAX_DIMS];
    int64_t count;       /* product of shape; 1 for a 0-d array */
    float *data;         /* malloc'd; free with kb_npy_free */
} kb_npy;

/* Read a version 1.0, 2.0 or 3.0 file holding '<f4' in C order.  0 on
 * success; else -1, *a left empty, and one line in err. */
int kb_npy_read(const char *path, kb_npy *a, char *err, size_t errlen);

void kb_npy_free(kb_npy *a);

/* Write a version 1.0 file, its data starting at a multiple of 64 bytes, via
 * a temporary file renamed into place.  0 or -1 with err set. */
int kb_npy_write(const char *path, int ndim, const int64_t *shape, const float *data,
                 char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
