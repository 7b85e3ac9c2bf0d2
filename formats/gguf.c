/* The GGUF reader (formats/gguf.h).  One cursor walks the mapped file; each
 * read first checks that the bytes are there, and every count is bounded by
 * the bytes left before anything is allocated for it, so a hostile file
 * costs at most a few times its own size. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "formats/gguf.h"
#include "harness/harness.h"
#include "model/llama.h"       /* kb_f16_to_f32, kb_bf16_to_f32 */
#include "model/transformer.h" /* kb_size_muladd */

#define HEADER_BYTES 24     /* magic, version, tensor count, key/value count */
#define MAX_KEY 65535       /* the spec's limit on a key's length */
#define MAX_NESTING 8       /* arrays of arrays: deeper is refused */
#define MIN_KV_BYTES 14     /* key length 8 + 1 byte, type 4, value 1 */
#define MIN_TENSOR_BYTES 33 /* name length 8 + 1 byte, ndim 4, ne 8, type 4, offset 8 */

/* ---- ggml types: block size and bytes per block ----------------------------------------- */

typedef struct {
    const char *name;
    uint32_t block, bytes;
} ggml_type;

/* Indexed by the type's number; gaps are numbers ggml retired. */
static const ggml_type types[] = {
    [0] = {"F32", 1, 4},        [1] = {"F16", 1, 2},        [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},     [6] = {"Q5_0", 32, 22},     [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},     [9] = {"Q8_1", 32, 40},     [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110},  [12] = {"Q4_K", 256, 144},  [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},  [15] = {"Q8_K", 256, 292},  [16] = {"IQ2_XXS", 256, 66},
    [17] = {"IQ2_XS", 256, 74}, [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},
    [20] = {"IQ4_NL", 32, 18},  [21] = {"IQ3_S", 256, 110}, [22] = {"IQ2_S", 256, 82},
    [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},       [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},       [27] = {"I64", 1, 8},       [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 56},  [30] = {"BF16", 1, 2},      [34] = {"TQ1_0", 256, 54},
    [35] = {"TQ2_0", 256, 66},  [39] = {"MXFP4", 32, 17},
};

static const ggml_type *type_of(uint32_t t)
{
    return t < sizeof types / sizeof *types && types[t].name ? &types[t] : NULL;
}

const char *kb_gguf_type_name(uint32_t type)
{
    const ggml_type *g = type_of(type);
    return g ? g->name : NULL;
}

int kb_gguf_can_dequantize(uint32_t type)
{
    return type == KB_GGML_F32 || type == KB_GGML_F16 || type == KB_GGML_BF16 || type == KB_GGML_Q8_0 ||
           type == KB_GGML_Q4_1;
}

/* ---- the cursor ------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    uint64_t pos, size;
    const char *path;
    char *err;
    size_t errlen;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->pos; }

static int need(cursor *c, uint64_t n, const char *what)
{
    if (n <= left(c))
        return 0;
    return kb_report(c->err, c->errlen, "%s: truncated: %s needs %" PRIu64 " bytes at offset %" PRIu64 ", the file "
                     "ends %" PRIu64 " later", c->path, what, n, c->pos, left(c));
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i)
        v = v << 8 | p[i];
    return v;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what)
{
    if (need(c, 4, what))
        return -1;
    *v = (uint32_t)le(c->p + c->pos, 4);
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what)
{
    if (need(c, 8, what))
        return -1;
    *v = le(c->p + c->pos, 8);
    c->pos += 8;
    return 0;
}

static int rd_string(cursor *c, kb_gguf_str *s, const char *what)
{
    uint64_t n;
    if (rd_u64(c, &n, what) || need(c, n, what))
        return -1;
    s->ptr = (const char *)c->p + c->pos;
    s->len = n;
    c->pos += n;
    return 0;
}

static int has_control(kb_gguf_str s)
{
    for (uint64_t i = 0; i < s.len; ++i)
        if ((unsigned char)s.ptr[i] < 0x20 || s.ptr[i] == 0x7F)
            return 1;
    return 0;
}

/* A key or tensor name as a C string: 1 to max bytes, no control
 * characters (so that it can be named in a one-line message as it is). */
static char *name_copy(cursor *c, kb_gguf_str s, uint64_t max, const char *what)
{
    char *out = NULL;
    if (s.len == 0 || s.len > max)
        kb_report(c->err, c->errlen, "%s: a %s of %" PRIu64 " bytes at offset %" PRIu64 " (1 to %" PRIu64 " allowed)",
                  c->path, what, s.len, c->pos, max);
    else if (has_control(s))
        kb_report(c->err, c->errlen, "%s: a %s before offset %" PRIu64 " holds a control character", c->path, what,
                  c->pos);
    else if (!(out = malloc(s.len + 1)))
        kb_report(c->err, c->errlen, "%s: out of memory", c->path);
    else {
        memcpy(out, s.ptr, s.len);
        out[s.len] = '\0';
    }
    return out;
}

/* ---- key/values --------------------------------------------------------------------------- */

static const uint8_t scalar_bytes[KB_GGUF_VTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static int skip_value(cursor *c, uint32_t type, int depth, const char *key);

/* An array's header; its count bounded by the bytes left (a string takes
 * at least 8, a nested array 12). */
static int array_head(cursor *c, uint32_t *elem, uint64_t *count, int depth, const char *key)
{
    if (rd_u32(c, elem, "an array's type") || rd_u64(c, count, "an array's count"))
        return -1;
    if (*elem >= KB_GGUF_VTYPES)
        return kb_report(c->err, c->errlen, "%s: key '%s': unknown array element type %" PRIu32, c->path, key, *elem);
    if (*elem == KB_GGUF_ARRAY && depth >= MAX_NESTING)
        return kb_report(c->err, c->errlen, "%s: key '%s': arrays nested over %d deep", c->path, key, MAX_NESTING);
    const uint64_t min = *elem == KB_GGUF_STRING ? 8 : *elem == KB_GGUF_ARRAY ? 12 : scalar_bytes[*elem];
    if (*count > left(c) / min)
        return kb_report(c->err, c->errlen, "%s: key '%s': an array of %" PRIu64 " elements of %" PRIu64 "+ bytes at "
                         "offset %" PRIu64 " runs past the end of the file", c->path, key, *count, min, c->pos);
    return 0;
}

static int check_bool(cursor *c, const char *key)
{
    if (c->p[c->pos] <= 1)
        return 0;
    return kb_report(c->err, c->errlen, "%s: key '%s': a bool of %u at offset %" PRIu64 " (0 or 1 allowed)", c->path,
                     key, c->p[c->pos], c->pos);
}

static int skip_value(cursor *c, uint32_t type, int depth, const char *key)
{
    kb_gguf_str s;
    if (type >= KB_GGUF_VTYPES)
        return kb_report(c->err, c->errlen, "%s: key '%s': unknown value type %" PRIu32, c->path, key, type);
    if (type == KB_GGUF_STRING)
        return rd_string(c, &s, "a string");
    if (type != KB_GGUF_ARRAY) {
        if (need(c, scalar_bytes[type], "a value") || (type == KB_GGUF_BOOL && check_bool(c, key)))
            return -1;
        c->pos += scalar_bytes[type];
        return 0;
    }
    uint32_t elem;
    uint64_t count;
    if (array_head(c, &elem, &count, depth, key))
        return -1;
    for (uint64_t i = 0; i < count; ++i)
        if (skip_value(c, elem, depth + 1, key))
            return -1;
    return 0;
}

/* An array value into kv: numbers and strings are kept, nested arrays only
 * checked. */
static int read_array(cursor *c, kb_gguf_kv *kv)
{
    uint32_t elem;
    if (array_head(c, &elem, &kv->count, 0, kv->key))
        return -1;
    kv->elem = (kb_gguf_vtype)elem;
    kv->at = c->p + c->pos;
    if (elem == KB_GGUF_STRING) {
        if (!(kv->strings = malloc(sizeof *kv->strings * (kv->count ? kv->count : 1))))
            return kb_report(c->err, c->errlen, "%s: out of memory", c->path);
        for (uint64_t i = 0; i < kv->count; ++i)
            if (rd_string(c, &kv->strings[i], "a string"))
                return -1;
        return 0;
    }
    for (uint64_t i = 0; i < kv->count; ++i)
        if (skip_value(c, elem, 1, kv->key))
            return -1;
    return 0;
}

static int read_kv(cursor *c, kb_gguf_kv *kv)
{
    kb_gguf_str key;
    uint32_t type;
    if (rd_string(c, &key, "a key") || !(kv->key = name_copy(c, key, MAX_KEY, "key")) ||
        rd_u32(c, &type, "a value type"))
        return -1;
    if (type >= KB_GGUF_VTYPES)
        return kb_report(c->err, c->errlen, "%s: key '%s': unknown value type %" PRIu32, c->path, kv->key, type);
    kv->type = (kb_gguf_vtype)type;
    if (type == KB_GGUF_ARRAY)
        return read_array(c, kv);
    kv->at = c->p + c->pos;
    kv->count = 1;
    if (type == KB_GGUF_STRING)
        return rd_string(c, &kv->string, "a string");
    return skip_value(c, type, 0, kv->key);
}

/* ---- tensor infos ------------------------------------------------------------------------ */

static int tensor_shape(cursor *c, kb_gguf_tensor *t)
{
    if (rd_u32(c, &t->ndim, "a tensor's dimension count"))
        return -1;
    if (t->ndim < 1 || t->ndim > KB_GGUF_MAX_DIMS)
        return kb_report(c->err, c->errlen, "%s: tensor '%s' has %" PRIu32 " dimensions (1 to %d allowed)", c->path,
                         t->name, t->ndim, KB_GGUF_MAX_DIMS);
    for (uint32_t k = 0; k < KB_GGUF_MAX_DIMS; ++k) {
        uint64_t ne = 1;
        if (k < t->ndim && rd_u64(c, &ne, "a tensor's dimension"))
            return -1;
        if (ne < 1 || ne > (uint64_t)1 << 40)
            return kb_report(c->err, c->errlen, "%s: tensor '%s' has dimension %" PRIu32 " of %" PRIu64 " (1 to 2^40 "
                             "allowed)", c->path, t->name, k, ne);
        t->ne[k] = (int64_t)ne;
    }
    return 0;
}

/* The tensor's byte count from its type; -1 on overflow or a first
 * dimension that is not a whole number of blocks. */
static int tensor_bytes(cursor *c, kb_gguf_tensor *t)
{
    const ggml_type *g = type_of(t->type);
    if (!g)
        return kb_report(c->err, c->errlen, "%s: tensor '%s' has unknown ggml type %" PRIu32, c->path, t->name,
                         t->type);
    if (t->ne[0] % g->block)
        return kb_report(c->err, c->errlen, "%s: tensor '%s' (%s) has %" PRId64 " columns, not a multiple of its block "
                         "of %" PRIu32, c->path, t->name, g->name, t->ne[0], g->block);
    int64_t n = kb_size_muladd(t->ne[0] / g->block, g->bytes, 0);
    for (int k = 1; k < KB_GGUF_MAX_DIMS; ++k)
        n = kb_size_muladd(n, t->ne[k], 0);
    if (n < 0)
        return kb_report(c->err, c->errlen, "%s: tensor '%s' is over 2^63 bytes", c->path, t->name);
    t->bytes = (uint64_t)n;
    return 0;
}

static int read_tensor(cursor *c, kb_gguf_tensor *t)
{
    kb_gguf_str name;
    if (rd_string(c, &name, "a tensor name") ||
        !(t->name = name_copy(c, name, KB_GGUF_MAX_NAME - 1, "tensor name")) || tensor_shape(c, t) ||
        rd_u32(c, &t->type, "a tensor's type") || rd_u64(c, &t->offset, "a tensor's offset"))
        return -1;
    return tensor_bytes(c, t);
}

/* ---- the whole file -------------------------------------------------------------------- */

static int by_key(const void *a, const void *b)
{
    return strcmp(((const kb_gguf_kv *)a)->key, ((const kb_gguf_kv *)b)->key);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const kb_gguf_tensor *)a)->name, ((const kb_gguf_tensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const uint64_t x = (*(const kb_gguf_tensor *const *)a)->offset, y = (*(const kb_gguf_tensor *const *)b)->offset;
    return x < y ? -1 : x > y;
}

static int header(cursor *c, kb_gguf_file *f)
{
    uint64_t nt, nkv;
    if (memcmp(c->p, "GGUF", 4))
        return kb_report(c->err, c->errlen, "%s: not a GGUF file (it does not start with \"GGUF\")", c->path);
    if (need(c, HEADER_BYTES, "the header"))
        return -1;
    c->pos = 4;
    if (rd_u32(c, &f->version, "the version") || rd_u64(c, &nt, "the tensor count") ||
        rd_u64(c, &nkv, "the key count"))
        return -1;
    if (f->version == 0x02000000u || f->version == 0x03000000u)
        return kb_report(c->err, c->errlen, "%s: a big-endian GGUF; kbench reads little-endian ones", c->path);
    if (f->version != 2 && f->version != 3)
        return kb_report(c->err, c->errlen, "%s: GGUF version %" PRIu32 "; kbench reads versions 2 and 3", c->path,
                         f->version);
    if (nkv > left(c) / MIN_KV_BYTES || nt > left(c) / MIN_TENSOR_BYTES)
        return kb_report(c->err, c->errlen, "%s: %" PRIu64 " keys and %" PRIu64 " tensors cannot fit in a file of %" PRIu64
                         " bytes", c->path, nkv, nt, c->size);
    f->n_kv = (int64_t)nkv;
    f->n_tensors = (int64_t)nt;
    f->kvs = calloc(nkv ? nkv : 1, sizeof *f->kvs);
    f->tensors = calloc(nt ? nt : 1, sizeof *f->tensors);
    if (!f->kvs || !f->tensors)
        return kb_report(c->err, c->errlen, "%s: out of memory", c->path);
    return 0;
}

/* general.alignment: a U32 power of two when present, else 32. */
static int alignment(cursor *c, kb_gguf_file *f)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, "general.alignment");
    f->alignment = 32;
    if (!kv)
        return 0;
    const uint64_t a = kv->type == KB_GGUF_U32 ? le(kv->at, 4) : 0;
    if (!a || (a & (a - 1)))
        return kb_report(c->err, c->errlen, "%s: general.alignment must be a u32 power of two", c->path);
    f->alignment = a;
    return 0;
}

static int unique(cursor *c, const kb_gguf_file *f)
{
    for (int64_t i = 1; i < f->n_kv; ++i)
        if (!strcmp(f->kvs[i - 1].key, f->kvs[i].key))
            return kb_report(c->err, c->errlen, "%s: key '%s' appears twice", c->path, f->kvs[i].key);
    for (int64_t i = 1; i < f->n_tensors; ++i)
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return kb_report(c->err, c->errlen, "%s: tensor '%s' appears twice", c->path, f->tensors[i].name);
    return 0;
}

/* Each tensor aligned, inside the data section, and clear of the next one
 * by offset. */
static int place_tensors(cursor *c, kb_gguf_file *f, uint64_t data)
{
    const uint64_t data_size = data < c->size ? c->size - data : 0;
    const kb_gguf_tensor **order = malloc(sizeof *order * (size_t)(f->n_tensors ? f->n_tensors : 1));
    if (!order)
        return kb_report(c->err, c->errlen, "%s: out of memory", c->path);
    int rc = 0;
    for (int64_t i = 0; i < f->n_tensors && rc == 0; ++i) {
        kb_gguf_tensor *t = &f->tensors[i];
        order[i] = t;
        if (t->offset % f->alignment)
            rc = kb_report(c->err, c->errlen, "%s: tensor '%s' at data offset %" PRIu64 " is not aligned to %" PRIu64,
                           c->path, t->name, t->offset, f->alignment);
        else if (t->offset > data_size || t->bytes > data_size - t->offset)
            rc = kb_report(c->err, c->errlen, "%s: tensor '%s' (%" PRIu64 " bytes at data offset %" PRIu64 ") runs past "
                           "the end of the file (%" PRIu64 " bytes of data)", c->path, t->name, t->bytes, t->offset,
                           data_size);
        else
            t->data = c->p + data + t->offset;
    }
    if (rc == 0)
        qsort(order, (size_t)f->n_tensors, sizeof *order, by_offset);
    for (int64_t i = 1; i < f->n_tensors && rc == 0; ++i)
        if (order[i - 1]->offset + order[i - 1]->bytes > order[i]->offset)
            rc = kb_report(c->err, c->errlen, "%s: tensors '%s' and '%s' overlap", c->path, order[i - 1]->name,
                           order[i]->name);
    free(order);
    return rc;
}

static int parse(cursor *c, kb_gguf_file *f)
{
    if (header(c, f))
        return -1;
    for (int64_t i = 0; i < f->n_kv; ++i)
        if (read_kv(c, &f->kvs[i]))
            return -1;
    for (int64_t i = 0; i < f->n_tensors; ++i)
        if (read_tensor(c, &f->tensors[i]))
            return -1;
    qsort(f->kvs, (size_t)f->n_kv, sizeof *f->kvs, by_key);
    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, by_name);
    if (unique(c, f) || alignment(c, f))
        return -1;
    const uint64_t data = (c->pos + f->alignment - 1) / f->alignment * f->alignment;
    return place_tensors(c, f, data);
}

static int map_file(const char *path, kb_gguf_file *f, char *err, size_t errlen)
{
    if (kb_input_map(path, f->path, KB_MAPPED_MAX_BYTES, &f->map, &f->size, err, errlen) != 0)
        return -1;
    if (f->size < 4)
        return kb_report(err, errlen, "%s: %" PRIu64 " bytes, too short for a GGUF file", f->path, f->size);
    return 0;
}

int kb_gguf_open(const char *path, kb_gguf_file *f, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(kb_quote(path, q, sizeof q))))
        return kb_report(err, errlen, "out of memory");
    cursor c = {NULL, 0, 0, f->path, err, errlen};
    int rc = map_file(path, f, err, errlen);
    if (rc == 0) {
        c.p = f->map;
        c.size = f->size;
        rc = parse(&c, f);
    }
    if (rc)
        kb_gguf_close(f);
    return rc;
}

void kb_gguf_close(kb_gguf_file *f)
{
    for (int64_t i = 0; f->kvs && i < f->n_kv; ++i) {
        free(f->kvs[i].key);
        free(f->kvs[i].strings);
    }
    for (int64_t i = 0; f->tensors && i < f->n_tensors; ++i)
        free(f->tensors[i].name);
    kb_input_unmap(f->map, f->size);
    free(f->kvs);
    free(f->tensors);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---- lookups ------------------------------------------------------------------------------- */

const kb_gguf_kv *kb_gguf_find(const kb_gguf_file *f, const char *key)
{
    const kb_gguf_kv k = {.key = (char *)key};
    return f->n_kv ? bsearch(&k, f->kvs, (size_t)f->n_kv, sizeof *f->kvs, by_key) : NULL;
}

const kb_gguf_tensor *kb_gguf_tensor_find(const kb_gguf_file *f, const char *name)
{
    const kb_gguf_tensor t = {.name = (char *)name};
    return f->n_tensors ? bsearch(&t, f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, by_name) : NULL;
}

static const char *const vtype_names[KB_GGUF_VTYPES] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                                         "bool", "string", "array", "u64", "i64", "f64"};

static int wrong_type(const kb_gguf_file *f, const kb_gguf_kv *kv, const char *want, char *err, size_t errlen)
{
    return kb_report(err, errlen, "%s: key '%s' is a%s %s; kbench needs %s", f->path, kv->key,
                     kv->type == KB_GGUF_ARRAY || kv->type == KB_GGUF_U8 ? "n" : "", vtype_names[kv->type], want);
}

static int is_int(kb_gguf_vtype t)
{
    return t <= KB_GGUF_I32 || t == KB_GGUF_U64 || t == KB_GGUF_I64;
}

/* A number of an integer type at p, sign-extended when signed. */
static int64_t int_value(kb_gguf_vtype t, const unsigned char *p)
{
    const int n = scalar_bytes[t];
    const uint64_t u = le(p, n);
    const int is_signed = t == KB_GGUF_I8 || t == KB_GGUF_I16 || t == KB_GGUF_I32 || t == KB_GGUF_I64;
    if (!is_signed || n == 8 || !(u >> (8 * n - 1)))
        return (int64_t)u;
    return (int64_t)(u | ~(uint64_t)0 << (8 * n));
}

int kb_gguf_get_uint(const kb_gguf_file *f, const char *key, uint64_t *v, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, key);
    if (!kv)
        return 0;
    if (!is_int(kv->type))
        return wrong_type(f, kv, "an integer", err, errlen);
    *v = kv->type == KB_GGUF_U64 ? le(kv->at, 8) : (uint64_t)int_value(kv->type, kv->at);
    if (kv->type != KB_GGUF_U64 && int_value(kv->type, kv->at) < 0)
        return kb_report(err, errlen, "%s: key '%s' is negative", f->path, key);
    return 1;
}

int kb_gguf_get_float(const kb_gguf_file *f, const char *key, double *v, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, key);
    if (!kv)
        return 0;
    if (kv->type == KB_GGUF_F32) {
        const uint32_t b = (uint32_t)le(kv->at, 4);
        float x;
        memcpy(&x, &b, 4);
        *v = x;
    } else if (kv->type == KB_GGUF_F64) {
        const uint64_t b = le(kv->at, 8);
        memcpy(v, &b, 8);
    } else
        return wrong_type(f, kv, "f32 or f64", err, errlen);
    return 1;
}

int kb_gguf_get_string(const kb_gguf_file *f, const char *key, kb_gguf_str *v, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, key);
    if (!kv)
        return 0;
    if (kv->type != KB_GGUF_STRING)
        return wrong_type(f, kv, "a string", err, errlen);
    *v = kv->string;
    return 1;
}

int kb_gguf_get_strings(const kb_gguf_file *f, const char *key, const kb_gguf_kv **v, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, key);
    if (!kv)
        return 0;
    if (kv->type != KB_GGUF_ARRAY || kv->elem != KB_GGUF_STRING)
        return wrong_type(f, kv, "an array of strings", err, errlen);
    *v = kv;
    return 1;
}

int kb_gguf_get_ints(const kb_gguf_file *f, const char *key, const kb_gguf_kv **v, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = kb_gguf_find(f, key);
    if (!kv)
        return 0;
    if (kv->type != KB_GGUF_ARRAY || !is_int(kv->elem))
        return wrong_type(f, kv, "an array of integers", err, errlen);
    *v = kv;
    return 1;
}

int64_t kb_gguf_int_at(const kb_gguf_kv *kv, uint64_t i)
{
    return int_value(kv->elem, kv->at + i * scalar_bytes[kv->elem]);
}

int kb_gguf_str_is(kb_gguf_str v, const char *s)
{
    return v.len == strlen(s) && !memcmp(v.ptr, s, v.len);
}

/* ---- dequantization ------------------------------------------------------------------------- */

static float f16_at(const unsigned char *p) { return kb_f16_to_f32((uint16_t)le(p, 2)); }

/* Q8_0: a block of 32 is an f16 scale d and 32 int8 q; x = d q. */
static void q8_0(const unsigned char *b, float *y)
{
    const float d = f16_at(b);
    for (int j = 0; j < 32; ++j)
        y[j] = d * (float)(int8_t)b[2 + j];
}

/* Q4_1: a block of 32 is an f16 scale d, an f16 minimum m and 16 bytes of
 * 4-bit q, the low nibbles holding values 0..15 and the high ones 16..31;
 * x = d q + m. */
static void q4_1(const unsigned char *b, float *y)
{
    const float d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)(b[4 + j] & 15) + m;
        y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
    }
}

void kb_gguf_dequantize(const kb_gguf_tensor *t, int64_t row, int64_t n, float *dst)
{
    const ggml_type *g = type_of(t->type);
    const int64_t blocks = t->ne[0] / g->block * n;
    const unsigned char *src = t->data + (uint64_t)row * (uint64_t)(t->ne[0] / g->block) * g->bytes;
    for (int64_t i = 0; i < blocks; ++i, src += g->bytes, dst += g->block) {
        if (t->type == KB_GGML_Q8_0)
            q8_0(src, dst);
        else if (t->type == KB_GGML_Q4_1)
            q4_1(src, dst);
        else if (t->type == KB_GGML_F32) {
            const uint32_t b = (uint32_t)le(src, 4);
            memcpy(dst, &b, 4);
        } else if (t->type == KB_GGML_F16)
            *dst = f16_at(src);
        else
            *dst = kb_bf16_to_f32((uint16_t)le(src, 2));
    }
}
