/* Reading GGUF files (llama.cpp's single-file model format, versions 2
 * and 3), little-endian:
 *
 *   "GGUF" u32 version, u64 tensor count, u64 key/value count
 *   key/values:   string key, u32 value type, value
 *   tensor infos: string name, u32 ndim, u64 ne[ndim], u32 ggml type,
 *                 u64 offset (within the data section)
 *   padding to general.alignment (default 32), then the data section
 *
 * where a string is a u64 byte count and the bytes (no NUL), and an array
 * value is u32 element type, u64 count, the elements.  ne[0] is the
 * fastest-varying dimension: a matrix of R rows of C values has ne = {C, R}.
 *
 * kb_gguf_open maps the file and checks all of it up front, with checked
 * arithmetic on every count, size and offset read: counts bounded by what
 * the bytes left can hold, keys and tensor names unique and free of control
 * characters, each tensor's
 * bytes (from its type's block size) aligned, inside the file and
 * overlapping no other.  Later lookups then only check what a caller wants.
 * Every failure is one line in err naming the file. */
#ifndef KBENCH_FORMATS_GGUF_H
#define KBENCH_FORMATS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types, as numbered in the file. */
typedef enum {
    KB_GGUF_U8, KB_GGUF_I8, KB_GGUF_U16, KB_GGUF_I16, KB_GGUF_U32, KB_GGUF_I32, KB_GGUF_F32, KB_GGUF_BOOL,
    KB_GGUF_STRING, KB_GGUF_ARRAY, KB_GGUF_U64, KB_GGUF_I64, KB_GGUF_F64, KB_GGUF_VTYPES
} kb_gguf_vtype;

/* The ggml tensor types kbench converts to fp32 (others are read but refused
 * at kb_gguf_dequantize). */
enum { KB_GGML_F32 = 0, KB_GGML_F16 = 1, KB_GGML_Q4_1 = 3, KB_GGML_Q8_0 = 8, KB_GGML_BF16 = 30 };

#define KB_GGUF_MAX_DIMS 4
#define KB_GGUF_MAX_NAME 64 /* bytes of a tensor name, as in ggml */

typedef struct {
    const char *ptr; /* into the mapped file: not NUL-terminated */
    uint64_t len;
} kb_gguf_str;

typedef struct {
    char *key;              /* NUL-terminated copy */
    kb_gguf_vtype type;
    kb_gguf_vtype elem;     /* arrays: the element type */
    uint64_t count;         /* arrays: the element count */
    const unsigned char *at; /* a number's bytes; an array's elements */
    kb_gguf_str string;     /* a string value */
    kb_gguf_str *strings;   /* arrays of strings: each one (else NULL) */
} kb_gguf_kv;

typedef struct {
    char *name;             /* NUL-terminated copy */
    uint32_t ndim, type;
    int64_t ne[KB_GGUF_MAX_DIMS]; /* 1 past ndim */
    uint64_t offset;        /* within the data section */
    uint64_t bytes;
    const unsigned char *data;
} kb_gguf_tensor;

typedef struct {
    char *path;             /* as messages show it */
    unsigned char *map;
    uint64_t size;
    uint32_t version;
    uint64_t alignment;
    kb_gguf_kv *kvs;
    int64_t n_kv;
    kb_gguf_tensor *tensors;
    int64_t n_tensors;
} kb_gguf_file;

/* 0, or -1 with *f empty and one line in err. */
int kb_gguf_open(const char *path, kb_gguf_file *f, char *err, size_t errlen);
void kb_gguf_close(kb_gguf_file *f);

/* The key's entry, or NULL. */
const kb_gguf_kv *kb_gguf_find(const kb_gguf_file *f, const char *key);

/* Typed getters: 1 when the key is present and of a fitting type (any
 * integer type holding a value >= 0; F32 or F64; a string; an array of
 * strings; an array of any integer type), 0 when absent, -1 with one line
 * in err when present with another type or a negative value. */
int kb_gguf_get_uint(const kb_gguf_file *f, const char *key, uint64_t *v, char *err, size_t errlen);
int kb_gguf_get_float(const kb_gguf_file *f, const char *key, double *v, char *err, size_t errlen);
int kb_gguf_get_string(const kb_gguf_file *f, const char *key, kb_gguf_str *v, char *err, size_t errlen);
int kb_gguf_get_strings(const kb_gguf_file *f, const char *key, const kb_gguf_kv **v, char *err, size_t errlen);
int kb_gguf_get_ints(const kb_gguf_file *f, const char *key, const kb_gguf_kv **v, char *err, size_t errlen);
/* Element i of an integer array (see kb_gguf_get_ints), as int64. */
int64_t kb_gguf_int_at(const kb_gguf_kv *kv, uint64_t i);

/* Whether a string value equals s. */
int kb_gguf_str_is(kb_gguf_str v, const char *s);

/* The tensor named name, or NULL. */
const kb_gguf_tensor *kb_gguf_tensor_find(const kb_gguf_file *f, const char *name);

/* "Q4_1", ..., or NULL for a type ggml does not have. */
const char *kb_gguf_type_name(uint32_t type);

/* Whether kb_gguf_dequantize converts this type. */
int kb_gguf_can_dequantize(uint32_t type);

/* Rows [row, row + n) of t (a row: ne[0] values) into dst as fp32.  The
 * type must pass kb_gguf_can_dequantize and the rows exist. */
void kb_gguf_dequantize(const kb_gguf_tensor *t, int64_t row, int64_t n, float *dst);

#ifdef __cplusplus
}
#endif
#endif
