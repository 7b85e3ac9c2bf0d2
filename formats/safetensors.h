/* Reading .safetensors weight files, as written by
 * safetensors.torch.save_file(model.state_dict(), path).
 *
 * kb_st_open validates the whole header up front (every tensor's dtype, and
 * its offsets and size against its dtype and shape; the tensors must tile
 * the data section, none overlapping another), so later lookups only have
 * to check that the tensor is the one the model expects.  Every failure
 * writes one line, naming the file and the tensor, into err. */
#ifndef KBENCH_FORMATS_SAFETENSORS_H
#define KBENCH_FORMATS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_ST_MAX_DIMS 8

typedef struct {
    char *name;                      /* unescaped, NUL-terminated */
    char dtype[16];                  /* "F32", "F16", ... as written */
    int ndim;
    int64_t shape[KB_ST_MAX_DIMS];
    uint64_t begin, end;             /* byte range within the data section */
} kb_st_tensor;

typedef struct {
    char *path;                      /* as messages show it: control characters escaped */
    const unsigned char *data;       /* the data section: in map, or copy where unaligned */
    uint64_t data_size;
    unsigned char *map;              /* the whole file, mapped read-only */
    uint64_t map_size;
    unsigned char *copy;
    kb_st_tensor *tensors;
    int count;
} kb_st_file;

/* 0 on success; else -1, *f left empty, and one line in err. */
int kb_st_open(const char *path, kb_st_file *f, char *err, size_t errlen);

/* Point *data at tensor `name`, which must be F32 with exactly the given
 * shape.  The pointer lives until kb_st_close.  0 or -1 with err set. */
int kb_st_get(const kb_st_file *f, const char *name, int ndim, const int64_t *shape,
              const float **data, char *err, size_t errlen);

/* The tensor's index in f->tensors (which are sorted by name), or -1. */
int kb_st_index(const kb_st_file *f, const char *name);

/* The tensor's shape (shape needs KB_ST_MAX_DIMS slots), so a model can size
 * itself from its weights.  0, or -1 when there is no such tensor. */
int kb_st_shape(const kb_st_file *f, const char *name, int *ndim, int64_t *shape);

void kb_st_close(kb_st_file *f);

#ifdef __cplusplus
}
#endif

#endif
