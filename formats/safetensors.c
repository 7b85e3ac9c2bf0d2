/* The safetensors reader.  A file is an 8-byte little-endian header length N,
 * N bytes of JSON mapping tensor names to {dtype, shape, data_offsets} (plus
 * an optional "__metadata__" object of strings), then the data section that
 * the offsets index.  The JSON parser below accepts exactly that structure,
 * so anything else is reported as a problem rather than silently skipped. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "formats/safetensors.h"
#include "formats/fileio.h"

/* Tensor data is handed out in place, without byte swapping. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader needs a little-endian host"
#endif

typedef struct {
    const char *path;       /* as messages show it (kb_st_file.path) */
    const char *text;       /* the header JSON, not NUL-terminated */
    size_t len, pos;
    const char *tensor;     /* the tensor being parsed, for messages */
    int cap;                /* allocated slots in the file's tensor array */
    char *err;
    size_t errlen;
} parser;

static int vreport(char *err, size_t errlen, const char *prefix, const char *fmt, va_list ap)
{
    int n = snprintf(err, errlen, "%s", prefix);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    return -1;
}

static int report(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(err, errlen, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* A syntax error: the JSON does not have the expected structure here. */
static int syntax(parser *p, const char *fmt, ...)
{
    char prefix[1024], name[KB_QUOTE_LEN];
    int n = snprintf(prefix, sizeof prefix, "%s: malformed header JSON at byte %zu: ",
                     p->path, 8 + p->pos);
    if (p->tensor && n >= 0 && (size_t)n < sizeof prefix)
        snprintf(prefix + n, sizeof prefix - (size_t)n, "(in tensor '%s') ",
                 kb_quote(p->tensor, name, sizeof name));
    va_list ap;
    va_start(ap, fmt);
    vreport(p->err, p->errlen, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

/* Well-formed JSON that describes an impossible tensor. */
static int invalid(parser *p, const char *fmt, ...)
{
    char prefix[1024], name[KB_QUOTE_LEN];
    snprintf(prefix, sizeof prefix, "%s: tensor '%s': ", p->path, kb_quote(p->tensor, name, sizeof name));
    va_list ap;
    va_start(ap, fmt);
    vreport(p->err, p->errlen, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    return c ? memcpy(c, s, n) : NULL;
}

static int is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The next non-space character, or 0 at the end of the header. */
static char peek(parser *p)
{
    while (p->pos < p->len && is_json_space(p->text[p->pos]))
        p->pos++;
    return p->pos < p->len ? p->text[p->pos] : 0;
}

static int expect(parser *p, char c)
{
    if (peek(p) != c)
        return syntax(p, "expected '%c'", c);
    p->pos++;
    return 0;
}

static int hex4(parser *p, size_t at, size_t end, unsigned *out)
{
    *out = 0;
    for (size_t i = at; i < at + 4; ++i) {
        char c = i < end ? p->text[i] : 0;
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return syntax(p, "bad \\u escape");
        *out = *out * 16 + (unsigned)d;
    }
    return 0;
}

static size_t put_utf8(char *s, unsigned cp)
{
    if (cp < 0x80) {
        s[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        s[0] = (char)(0xC0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12);
        s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    s[0] = (char)(0xF0 | cp >> 18);
    s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    s[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    s[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A \uXXXX escape (a surrogate pair takes two) at p->pos, before end. */
static int unicode_escape(parser *p, size_t end, char *s, size_t *n)
{
    unsigned cp, low;
    if (hex4(p, p->pos + 2, end, &cp) != 0)
        return -1;
    size_t used = 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return syntax(p, "unpaired surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        size_t at = p->pos + 6;
        if (at + 1 >= end || p->text[at] != '\\' || p->text[at + 1] != 'u' ||
            hex4(p, at + 2, end, &low) != 0 || low < 0xDC00 || low > 0xDFFF)
            return syntax(p, "unpaired surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        used = 12;
    }
    if (cp == 0)
        return syntax(p, "\\u0000 in a string");
    *n += put_utf8(s + *n, cp);
    p->pos += used;
    return 0;
}

/* The escape at p->pos (a backslash; the string's closing quote is at end). */
static int escape(parser *p, size_t end, char *s, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char c = p->text[p->pos + 1];
    if (c == 'u')
        return unicode_escape(p, end, s, n);
    const char *hit = c ? strchr(from, c) : NULL;
    if (!hit) {
        /* The byte may be anything: show it as kb_quote would. */
        const char text[2] = {c, 0};
        char q[8];
        return syntax(p, "bad escape '\\%s'", kb_quote(text, q, sizeof q));
    }
    s[(*n)++] = to[hit - from];
    p->pos += 2;
    return 0;
}

/* A string, unescaped into a new buffer.  Unescaping never lengthens it. */
static int parse_string(parser *p, char **out)
{
    *out = NULL;
    if (peek(p) != '"')
        return syntax(p, "expected a string");
    size_t end = ++p->pos;
    while (end < p->len && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->len)
        return syntax(p, "unterminated string");
    char *s = malloc(end - p->pos + 1);
    if (!s)
        return report(p->err, p->errlen, "%s: out of memory", p->path);
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->text[p->pos];
        int rc = 0;
        if (c < 0x20)
            rc = syntax(p, "control character in a string");
        else if (c == '\\')
            rc = escape(p, end, s, &n);
        else {
            s[n++] = (char)c;
            p->pos++;
        }
        if (rc != 0) {
            free(s);
            return -1;
        }
    }
    p->pos = end + 1;
    s[n] = '\0';
    *out = s;
    return 0;
}

static int parse_uint(parser *p, uint64_t *out)
{
    char c = peek(p);
    if (c < '0' || c > '9')
        return syntax(p, "expected a non-negative integer");
    size_t start = p->pos;
    uint64_t v = 0;
    for (; p->pos < p->len && (c = p->text[p->pos]) >= '0' && c <= '9'; p->pos++) {
        unsigned d = (unsigned)(c - '0');
        if (v > (UINT64_MAX - d) / 10) {
            p->pos = start;
            return syntax(p, "integer too large");
        }
        v = v * 10 + d;
    }
    if (p->text[start] == '0' && p->pos - start > 1) {
        p->pos = start;
        return syntax(p, "integer with a leading zero");
    }
    *out = v;
    return 0;
}

/* An array of at most max non-negative integers; *n gets the count. */
static int parse_uint_array(parser *p, const char *what, uint64_t *vals, int max, int *n)
{
    *n = 0;
    if (expect(p, '[') != 0)
        return -1;
    if (peek(p) == ']') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (*n == max)
            return invalid(p, "%s has more than %d entries", what, max);
        if (parse_uint(p, &vals[(*n)++]) != 0)
            return -1;
        char c = peek(p);
        p->pos++;
        if (c == ']')
            return 0;
        if (c != ',') {
            p->pos--;
            return syntax(p, "expected ',' or ']'");
        }
    }
}

typedef int (*member_fn)(parser *p, const char *key, void *ctx);

/* An object, calling member() with each key once the parser stands on its
 * value. */
static int parse_object(parser *p, member_fn member, void *ctx)
{
    if (expect(p, '{') != 0)
        return -1;
    if (peek(p) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        char *key;
        if (parse_string(p, &key) != 0)
            return -1;
        int rc = expect(p, ':') != 0 ? -1 : member(p, key, ctx);
        free(key);
        if (rc != 0)
            return -1;
        char c = peek(p);
        if (c != ',' && c != '}')
            return syntax(p, "expected ',' or '}'");
        p->pos++;
        if (c == '}')
            return 0;
    }
}

static int metadata_member(parser *p, const char *key, void *ctx)
{
    (void)key, (void)ctx;
    char *value;
    if (parse_string(p, &value) != 0)
        return -1;
    free(value);
    return 0;
}

enum { HAS_DTYPE = 1, HAS_SHAPE = 2, HAS_OFFSETS = 4 };

typedef struct {
    kb_st_tensor *t;
    unsigned seen;
} tensor_fields;

static int parse_dtype(parser *p, kb_st_tensor *t)
{
    char *s, q[KB_QUOTE_LEN];
    if (parse_string(p, &s) != 0)
        return -1;
    int fits = strlen(s) < sizeof t->dtype;
    if (fits)
        strcpy(t->dtype, s);
    else
        invalid(p, "dtype \"%s\" is not a safetensors dtype", kb_quote(s, q, 48));
    free(s);
    return fits ? 0 : -1;
}

static int parse_shape(parser *p, kb_st_tensor *t)
{
    uint64_t dims[KB_ST_MAX_DIMS];
    if (parse_uint_array(p, "shape", dims, KB_ST_MAX_DIMS, &t->ndim) != 0)
        return -1;
    for (int i = 0; i < t->ndim; ++i) {
        if (dims[i] > INT64_MAX)
            return invalid(p, "dimension %d is too large", i);
        t->shape[i] = (int64_t)dims[i];
    }
    return 0;
}

static int parse_offsets(parser *p, kb_st_tensor *t)
{
    uint64_t v[2];
    int n;
    if (parse_uint_array(p, "data_offsets", v, 2, &n) != 0)
        return -1;
    if (n != 2)
        return invalid(p, "data_offsets has %d entries, needs [begin, end]", n);
    t->begin = v[0];
    t->end = v[1];
    return 0;
}

static int tensor_member(parser *p, const char *key, void *ctx)
{
    tensor_fields *tf = ctx;
    unsigned field = !strcmp(key, "dtype") ? HAS_DTYPE
                   : !strcmp(key, "shape") ? HAS_SHAPE
                   : !strcmp(key, "data_offsets") ? HAS_OFFSETS : 0;
    char q[KB_QUOTE_LEN];
    if (!field)
        return invalid(p, "unknown field \"%s\"", kb_quote(key, q, 48));
    if (tf->seen & field)
        return invalid(p, "field \"%s\" appears twice", key);
    tf->seen |= field;
    return field == HAS_DTYPE ? parse_dtype(p, tf->t)
         : field == HAS_SHAPE ? parse_shape(p, tf->t) : parse_offsets(p, tf->t);
}

static kb_st_tensor *push_tensor(parser *p, kb_st_file *f)
{
    if (f->count == p->cap) {
        if (p->cap > INT_MAX / 2 || (size_t)p->cap * 2 + 16 > SIZE_MAX / sizeof *f->tensors)
            return NULL;
        int cap = p->cap ? p->cap * 2 : 16;
        kb_st_tensor *grown = realloc(f->tensors, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        f->tensors = grown;
        p->cap = cap;
    }
    kb_st_tensor *t = &f->tensors[f->count++];
    memset(t, 0, sizeof *t);
    return t;
}

static int top_member(parser *p, const char *key, void *ctx)
{
    if (!strcmp(key, "__metadata__"))
        return parse_object(p, metadata_member, NULL);
    kb_st_tensor *t = push_tensor(p, ctx);
    if (!t || !(t->name = copy_string(key)))
        return report(p->err, p->errlen, "%s: out of memory", p->path);
    p->tensor = t->name;
    tensor_fields tf = {t, 0};
    if (parse_object(p, tensor_member, &tf) != 0)
        return -1;
    const char *missing = !(tf.seen & HAS_DTYPE) ? "dtype"
                        : !(tf.seen & HAS_SHAPE) ? "shape"
                        : !(tf.seen & HAS_OFFSETS) ? "data_offsets" : NULL;
    if (missing)
        return invalid(p, "no \"%s\" field", missing);
    p->tensor = NULL;
    return 0;
}

static int parse_header(parser *p, kb_st_file *f)
{
    if (parse_object(p, top_member, f) != 0)
        return -1;
    if (peek(p) != 0)
        return syntax(p, "unexpected text after the header object");
    return 0;
}

/* Bits per element of every safetensors dtype, or 0 for a name that is
 * none: such a tensor is refused, as the reference reader refuses it. */
static uint64_t dtype_bits(const char *dtype)
{
    static const struct { const char *name; uint64_t bits; } sizes[] = {
        {"F64", 64}, {"I64", 64}, {"U64", 64}, {"C64", 64}, {"F32", 32}, {"I32", 32}, {"U32", 32},
        {"F16", 16}, {"BF16", 16}, {"I16", 16}, {"U16", 16}, {"I8", 8}, {"U8", 8}, {"BOOL", 8},
        {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E8M0", 8}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"F4", 4},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i)
        if (!strcmp(dtype, sizes[i].name))
            return sizes[i].bits;
    return 0;
}

static void format_shape(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* The tensor's size in bits from its shape; -1 when it does not fit 64 bits. */
static int shape_bits(const kb_st_tensor *t, uint64_t elem_bits, uint64_t *bits)
{
    uint64_t n = elem_bits;
    for (int i = 0; i < t->ndim; ++i)
        if (__builtin_mul_overflow(n, (uint64_t)t->shape[i], &n))
            return -1;
    *bits = n;
    return 0;
}

static int check_tensor(const kb_st_file *f, const kb_st_tensor *t, char *err, size_t errlen)
{
    char name[KB_QUOTE_LEN], dtype[KB_QUOTE_LEN], shape[256];
    kb_quote(t->name, name, sizeof name);
    if (t->end < t->begin)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] end before begin", f->path, name, t->begin, t->end);
    if (t->end > f->data_size)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] past the end of the data section (%" PRIu64 " bytes; truncated file?)",
                      f->path, name, t->begin, t->end, f->data_size);
    uint64_t elem = dtype_bits(t->dtype), need;
    if (!elem)
        return report(err, errlen, "%s: tensor '%s': dtype \"%s\" is not a safetensors dtype", f->path, name,
                      kb_quote(t->dtype, dtype, sizeof dtype));
    format_shape(shape, sizeof shape, t->ndim, t->shape);
    if (shape_bits(t, elem, &need) != 0)
        return report(err, errlen, "%s: tensor '%s': shape %s overflows 64-bit sizes",
                      f->path, name, shape);
    if (need % 8)
        return report(err, errlen, "%s: tensor '%s': %s %s is not a whole number of bytes", f->path, name,
                      t->dtype, shape);
    if (t->end - t->begin != need / 8)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] hold %" PRIu64 " bytes but %s %s needs %" PRIu64, f->path, name,
                      t->begin, t->end, t->end - t->begin, t->dtype, shape, need / 8);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const kb_st_tensor *)a)->name, ((const kb_st_tensor *)b)->name);
}

static int by_offsets(const void *a, const void *b)
{
    const kb_st_tensor *x = *(const kb_st_tensor *const *)a, *y = *(const kb_st_tensor *const *)b;
    return x->begin != y->begin ? (x->begin > y->begin) - (x->begin < y->begin)
                                : (x->end > y->end) - (x->end < y->end);
}

/* The tensors must tile the data section, as the reference reader demands:
 * no byte of two tensors (aliases would let writing one change another),
 * none of no tensor. */
static int check_layout(const kb_st_file *f, char *err, size_t errlen)
{
    const kb_st_tensor **order = malloc(sizeof *order * (size_t)(f->count ? f->count : 1));
    if (!order)
        return report(err, errlen, "%s: out of memory", f->path);
    for (int i = 0; i < f->count; ++i)
        order[i] = &f->tensors[i];
    qsort(order, (size_t)f->count, sizeof *order, by_offsets);
    char a[KB_QUOTE_LEN], b[KB_QUOTE_LEN];
    uint64_t at = 0;
    int rc = 0;
    /* The end of the data section closes the last gap. */
    for (int i = 0; i <= f->count && rc == 0; ++i) {
        const uint64_t begin = i < f->count ? order[i]->begin : f->data_size;
        if (begin < at)
            rc = report(err, errlen, "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %"
                        PRIu64 ") overlap", f->path, kb_quote(order[i - 1]->name, a, sizeof a), order[i - 1]->begin,
                        order[i - 1]->end, kb_quote(order[i]->name, b, sizeof b), begin, order[i]->end);
        else if (begin > at)
            rc = report(err, errlen, "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no "
                        "tensor", f->path, at, begin);
        if (i < f->count)
            at = order[i]->end;
    }
    free(order);
    return rc;
}

/* Sorted by name, so that lookups can bisect and duplicates sit side by side. */
static int index_tensors(kb_st_file *f, char *err, size_t errlen)
{
    char name[KB_QUOTE_LEN];
    if (f->count > 1)
        qsort(f->tensors, (size_t)f->count, sizeof *f->tensors, by_name);
    for (int i = 0; i < f->count; ++i) {
        if (i && !strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return report(err, errlen, "%s: tensor '%s' appears twice in the header",
                          f->path, kb_quote(f->tensors[i].name, name, sizeof name));
        if (check_tensor(f, &f->tensors[i], err, errlen) != 0)
            return -1;
    }
    return check_layout(f, err, errlen);
}

/* Check the length prefix against the file size; *header_len gets N. */
static int read_prefix(const unsigned char *b, const char *path, uint64_t size, uint64_t *header_len,
                       char *err, size_t errlen)
{
    if (size < 8)
        return report(err, errlen, "%s: truncated: %" PRIu64 " bytes, shorter than the "
                      "8-byte header length", path, size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = n << 8 | b[i];
    if (n > size)
        return report(err, errlen, "%s: header length %" PRIu64 " is larger than the file (%"
                      PRIu64 " bytes)", path, n, size);
    if (n > size - 8)
        return report(err, errlen, "%s: truncated: the header needs %" PRIu64 " bytes, the "
                      "file has %" PRIu64, path, n + 8, size);
    *header_len = n;
    return 0;
}

/* The file mapped, not read: the header is parsed in place and only the
 * tensors a loader asks for are ever paged in, so a huge file with a bad
 * header is refused at the cost of its first pages. */
static int map_file(const char *path, kb_st_file *f, uint64_t *header_len, char *err, size_t errlen)
{
    if (kb_input_map(path, f->path, KB_MAPPED_MAX_BYTES, &f->map, &f->map_size, err, errlen) != 0 ||
        read_prefix(f->map, f->path, f->map_size, header_len, err, errlen) != 0)
        return -1;
    f->data = f->map + 8 + *header_len;
    f->data_size = f->map_size - 8 - *header_len;
    return 0;
}

/* Tensors are handed out as float pointers into the data section: where
 * the header's length leaves it off an 8-byte boundary (writers pad the
 * header so that it is not), the checked data is copied to aligned memory. */
static int align_data(kb_st_file *f, char *err, size_t errlen)
{
    if ((uintptr_t)f->data % 8 == 0)
        return 0;
    if (!(f->copy = malloc(f->data_size ? f->data_size : 1)))
        return report(err, errlen, "%s: out of memory for %" PRIu64 " bytes", f->path, f->data_size);
    f->data = memcpy(f->copy, f->data, f->data_size);
    return 0;
}

int kb_st_open(const char *path, kb_st_file *f, char *err, size_t errlen)
{
    char shown[KB_QUOTE_LEN];
    kb_quote(path, shown, sizeof shown);
    memset(f, 0, sizeof *f);
    uint64_t text_len = 0;
    int rc = (f->path = copy_string(shown)) ? 0 : report(err, errlen, "%s: out of memory", shown);
    if (rc == 0)
        rc = map_file(path, f, &text_len, err, errlen);
    if (rc == 0) {
        parser p = {.path = f->path, .text = (const char *)f->map + 8, .len = text_len, .err = err,
                    .errlen = errlen};
        rc = parse_header(&p, f) != 0 || index_tensors(f, err, errlen) != 0 ? -1 : align_data(f, err, errlen);
    }
    if (rc != 0)
        kb_st_close(f);
    return rc;
}

static const kb_st_tensor *find(const kb_st_file *f, const char *name)
{
    kb_st_tensor key = {0};
    key.name = (char *)name;
    if (!f->count)
        return NULL;
    return bsearch(&key, f->tensors, (size_t)f->count, sizeof *f->tensors, by_name);
}

int kb_st_get(const kb_st_file *f, const char *name, int ndim, const int64_t *shape,
              const float **data, char *err, size_t errlen)
{
    const kb_st_tensor *t = find(f, name);
    if (!t)
        return report(err, errlen, "%s: no tensor named '%s'", f->path, name);
    if (strcmp(t->dtype, "F32") != 0)
        return report(err, errlen, "%s: tensor '%s' has dtype %s; kbench loads only F32",
                      f->path, name, t->dtype);
    int same = ndim == t->ndim;
    for (int i = 0; same && i < ndim; ++i)
        same = shape[i] == t->shape[i];
    if (!same) {
        char want[256], found[256];
        format_shape(want, sizeof want, ndim, shape);
        format_shape(found, sizeof found, t->ndim, t->shape);
        return report(err, errlen, "%s: tensor '%s' has shape %s, expected %s",
                      f->path, name, found, want);
    }
    if (t->begin % sizeof(float))
        return report(err, errlen, "%s: tensor '%s' starts at data offset %" PRIu64
                      ", not a multiple of 4", f->path, name, t->begin);
    *data = (const float *)(f->data + t->begin);
    return 0;
}

int kb_st_index(const kb_st_file *f, const char *name)
{
    const kb_st_tensor *t = find(f, name);
    return t ? (int)(t - f->tensors) : -1;
}

int kb_st_shape(const kb_st_file *f, const char *name, int *ndim, int64_t *shape)
{
    const kb_st_tensor *t = find(f, name);
    if (!t)
        return -1;
    *ndim = t->ndim;
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
    return 0;
}

void kb_st_close(kb_st_file *f)
{
    for (int i = 0; i < f->count; ++i)
        free(f->tensors[i].name);
    free(f->tensors);
    kb_input_unmap(f->map, f->map_size);
    free(f->copy);
    free(f->path);
    memset(f, 0, sizeof *f);
}
