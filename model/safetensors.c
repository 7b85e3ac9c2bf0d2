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
#include "model/safetensors.h"
#include "model/fileio.h"

/* Tensor data is handed out in place, without byte swapping. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader needs a little-endian host"
#endif

typedef struct {
    const char *path;
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
    char prefix[1024];
    int n = snprintf(prefix, sizeof prefix, "%s: malformed header JSON at byte %zu: ",
                     p->path, 8 + p->pos);
    if (p->tensor && n >= 0 && (size_t)n < sizeof prefix)
        snprintf(prefix + n, sizeof prefix - (size_t)n, "(in tensor '%s') ", p->tensor);
    va_list ap;
    va_start(ap, fmt);
    vreport(p->err, p->errlen, prefix, fmt, ap);
    va_end(ap);
    return -1;
}

/* Well-formed JSON that describes an impossible tensor. */
static int invalid(parser *p, const char *fmt, ...)
{
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s: tensor '%s': ", p->path, p->tensor);
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
    if (!hit)
        return syntax(p, "bad escape '\\%c'", c);
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
    char *s;
    if (parse_string(p, &s) != 0)
        return -1;
    int fits = strlen(s) < sizeof t->dtype;
    if (fits)
        strcpy(t->dtype, s);
    else
        invalid(p, "dtype \"%.40s\" is not a safetensors dtype", s);
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
    if (!field)
        return invalid(p, "unknown field \"%.40s\"", key);
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

/* Bytes per element, or 0 for a dtype whose size is not checked here
 * (kb_st_get rejects everything but F32 anyway). */
static uint64_t dtype_size(const char *dtype)
{
    static const struct { const char *name; uint64_t size; } sizes[] = {
        {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4},
        {"F16", 2}, {"BF16", 2}, {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1},
        {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i)
        if (!strcmp(dtype, sizes[i].name))
            return sizes[i].size;
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

/* The tensor's byte size from its shape; -1 when it does not fit 64 bits. */
static int shape_bytes(const kb_st_tensor *t, uint64_t elem_size, uint64_t *bytes)
{
    uint64_t n = elem_size;
    for (int i = 0; i < t->ndim; ++i) {
        uint64_t d = (uint64_t)t->shape[i];
        if (d && n > UINT64_MAX / d)
            return -1;
        n *= d;
    }
    *bytes = n;
    return 0;
}

static int check_tensor(const kb_st_file *f, const kb_st_tensor *t, char *err, size_t errlen)
{
    if (t->end < t->begin)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] end before begin", f->path, t->name, t->begin, t->end);
    if (t->end > f->data_size)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] past the end of the data section (%" PRIu64 " bytes; truncated file?)",
                      f->path, t->name, t->begin, t->end, f->data_size);
    uint64_t elem = dtype_size(t->dtype), need;
    if (!elem)
        return 0;
    char shape[256];
    format_shape(shape, sizeof shape, t->ndim, t->shape);
    if (shape_bytes(t, elem, &need) != 0)
        return report(err, errlen, "%s: tensor '%s': shape %s overflows 64-bit sizes",
                      f->path, t->name, shape);
    if (t->end - t->begin != need)
        return report(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                      "] hold %" PRIu64 " bytes but %s %s needs %" PRIu64, f->path, t->name,
                      t->begin, t->end, t->end - t->begin, t->dtype, shape, need);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const kb_st_tensor *)a)->name, ((const kb_st_tensor *)b)->name);
}

/* Sorted by name, so that lookups can bisect and duplicates sit side by side. */
static int index_tensors(kb_st_file *f, char *err, size_t errlen)
{
    if (f->count > 1)
        qsort(f->tensors, (size_t)f->count, sizeof *f->tensors, by_name);
    for (int i = 0; i < f->count; ++i) {
        if (i && !strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return report(err, errlen, "%s: tensor '%s' appears twice in the header",
                          f->path, f->tensors[i].name);
        if (check_tensor(f, &f->tensors[i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int read_exact(FILE *fp, void *buf, size_t n)
{
    return fread(buf, 1, n, fp) == n ? 0 : -1;
}

/* Check the length prefix against the file size; *header_len gets N. */
static int read_prefix(FILE *fp, const char *path, uint64_t size, uint64_t *header_len,
                       char *err, size_t errlen)
{
    unsigned char b[8];
    if (size < 8)
        return report(err, errlen, "%s: truncated: %" PRIu64 " bytes, shorter than the "
                      "8-byte header length", path, size);
    if (read_exact(fp, b, 8) != 0)
        return report(err, errlen, "%s: read error", path);
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

/* Read the header into *text and the data section into f->data. */
static int read_file(FILE *fp, kb_st_file *f, char **text, uint64_t *text_len,
                     char *err, size_t errlen)
{
    uint64_t size;
    if (kb_file_size(fp, &size) != 0)
        return report(err, errlen, "%s: cannot determine the file size", f->path);
    if (read_prefix(fp, f->path, size, text_len, err, errlen) != 0)
        return -1;
    f->data_size = size - 8 - *text_len;
    *text = malloc(*text_len + 1);
    f->data = malloc(f->data_size ? f->data_size : 1);
    if (!*text || !f->data)
        return report(err, errlen, "%s: out of memory for %" PRIu64 " bytes", f->path, size);
    if (read_exact(fp, *text, *text_len) != 0 || read_exact(fp, f->data, f->data_size) != 0)
        return report(err, errlen, "%s: read error", f->path);
    return 0;
}

int kb_st_open(const char *path, kb_st_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return report(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    uint64_t text_len = 0;
    int rc = (f->path = copy_string(path)) ? 0 : report(err, errlen, "%s: out of memory", path);
    if (rc == 0)
        rc = read_file(fp, f, &text, &text_len, err, errlen);
    fclose(fp);
    if (rc == 0) {
        parser p = {.path = path, .text = text, .len = text_len, .err = err, .errlen = errlen};
        rc = parse_header(&p, f) != 0 ? -1 : index_tensors(f, err, errlen);
    }
    free(text);
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
    free(f->data);
    free(f->path);
    memset(f, 0, sizeof *f);
}
