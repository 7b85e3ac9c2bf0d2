/* The .npy reader and writer.  A file is the magic "\x93NUMPY", a major and
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4 in
 * 2.0 and 3.0), then a Python dict literal naming 'descr', 'fortran_order'
 * and 'shape', padded with spaces and ended by a newline, then the data. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"
#include "formats/npy.h"
#include "formats/fileio.h"

/* Data is read and written as the host's floats, without byte swapping. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error ".npy '<f4' data is little-endian; this code needs a little-endian host"
#endif

static const char magic[6] = "\x93NUMPY";

/* The largest .npy read: its data is read whole into memory. */
#define MAX_NPY_BYTES ((uint64_t)64 << 30)
/* A float32 array's header is its dtype, order and shape: well under this
 * (numpy writes 118 bytes for a matrix); a longer one is not read. */
#define MAX_NPY_HEADER 65536

/* The header dict, parsed in place. */
typedef struct {
    const char *path;        /* as messages show it, control characters escaped */
    const char *text;
    size_t len, pos;
    size_t base;             /* file offset of text[0], for messages */
    char *err;
    size_t errlen;
} parser;

typedef struct {
    const char *descr;       /* points into the header text */
    size_t descr_len;
    int fortran_order;
    unsigned seen;
} header_fields;

/* A string from the header (not NUL-terminated) as messages show it. */
static const char *shown(const char *s, size_t n, char *buf, size_t len)
{
    char raw[64];
    snprintf(raw, sizeof raw, "%.*s", (int)(n < sizeof raw ? n : sizeof raw - 1), s);
    return kb_quote(raw, buf, len);
}

static int malformed(parser *p, const char *what)
{
    return kb_report(p->err, p->errlen, "%s: malformed .npy header at byte %zu: %s",
                  p->path, p->base + p->pos, what);
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static char peek(parser *p)
{
    while (p->pos < p->len && is_space(p->text[p->pos]))
        p->pos++;
    return p->pos < p->len ? p->text[p->pos] : 0;
}

static int expect(parser *p, char c, const char *what)
{
    if (peek(p) != c)
        return malformed(p, what);
    p->pos++;
    return 0;
}

/* A quoted Python string without escapes (numpy writes none here). */
static int parse_string(parser *p, const char **s, size_t *n)
{
    char q = peek(p);
    if (q != '\'' && q != '"')
        return malformed(p, "expected a quoted string");
    size_t start = ++p->pos;
    while (p->pos < p->len && p->text[p->pos] != q)
        p->pos++;
    if (p->pos >= p->len)
        return malformed(p, "unterminated string");
    *s = p->text + start;
    *n = p->pos++ - start;
    return 0;
}

static int is_word(parser *p, const char *word)
{
    size_t n = strlen(word);
    return p->len - p->pos >= n && !memcmp(p->text + p->pos, word, n);
}

static int parse_bool(parser *p, int *out)
{
    peek(p);
    *out = is_word(p, "True");
    if (!*out && !is_word(p, "False"))
        return malformed(p, "expected True or False");
    p->pos += *out ? 4 : 5;
    return 0;
}

static int parse_dim(parser *p, int64_t *out)
{
    char c = peek(p);
    if (c < '0' || c > '9')
        return malformed(p, "expected a non-negative dimension");
    int64_t v = 0;
    for (; p->pos < p->len && (c = p->text[p->pos]) >= '0' && c <= '9'; p->pos++) {
        if (v > (INT64_MAX - (c - '0')) / 10)
            return malformed(p, "dimension too large");
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

/* A tuple of dimensions: "()", "(3,)" or "(2, 3)". */
static int parse_shape(parser *p, kb_npy *a)
{
    if (expect(p, '(', "expected a shape tuple") != 0)
        return -1;
    while (peek(p) != ')') {
        if (a->ndim == KB_NPY_MAX_DIMS)
            return malformed(p, "more dimensions than kbench supports (8)");
        if (parse_dim(p, &a->shape[a->ndim++]) != 0)
            return -1;
        if (peek(p) == ',')
            p->pos++;
        else if (peek(p) != ')')
            return malformed(p, "expected ',' or ')' in the shape");
    }
    p->pos++;
    return 0;
}

static int same(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && !memcmp(s, word, n);
}

enum { HAS_DESCR = 1, HAS_ORDER = 2, HAS_SHAPE = 4 };

static int parse_entry(parser *p, header_fields *h, kb_npy *a)
{
    const char *key = NULL;
    size_t n = 0;
    if (parse_string(p, &key, &n) != 0 || expect(p, ':', "expected ':'") != 0)
        return -1;
    unsigned field = same(key, n, "descr") ? HAS_DESCR
                   : same(key, n, "fortran_order") ? HAS_ORDER
                   : same(key, n, "shape") ? HAS_SHAPE : 0;
    char q[KB_QUOTE_LEN];
    if (!field || (h->seen & field))
        return kb_report(p->err, p->errlen, "%s: .npy header has %s key '%s'", p->path,
                      field ? "a repeated" : "an unexpected", shown(key, n, q, sizeof q));
    h->seen |= field;
    if (field == HAS_SHAPE)
        return parse_shape(p, a);
    if (field == HAS_ORDER)
        return parse_bool(p, &h->fortran_order);
    if (peek(p) != '\'' && peek(p) != '"')
        return kb_report(p->err, p->errlen, "%s: structured dtype; kbench reads only "
                      "little-endian float32 ('<f4')", p->path);
    return parse_string(p, &h->descr, &h->descr_len);
}

static int parse_dict(parser *p, header_fields *h, kb_npy *a)
{
    if (expect(p, '{', "expected '{'") != 0)
        return -1;
    while (peek(p) != '}') {
        if (parse_entry(p, h, a) != 0)
            return -1;
        if (peek(p) == ',')
            p->pos++;
        else if (peek(p) != '}')
            return malformed(p, "expected ',' or '}'");
    }
    p->pos++;
    if (peek(p) != 0)
        return malformed(p, "unexpected text after the header dict");
    return 0;
}

/* Parse the header and accept only '<f4' in C order. */
static int check_header(parser *p, kb_npy *a)
{
    header_fields h = {0};
    if (parse_dict(p, &h, a) != 0)
        return -1;
    const char *missing = !(h.seen & HAS_DESCR) ? "descr"
                        : !(h.seen & HAS_ORDER) ? "fortran_order"
                        : !(h.seen & HAS_SHAPE) ? "shape" : NULL;
    if (missing)
        return kb_report(p->err, p->errlen, "%s: .npy header lacks '%s'", p->path, missing);
    char q[KB_QUOTE_LEN];
    if (!same(h.descr, h.descr_len, "<f4"))
        return kb_report(p->err, p->errlen, "%s: dtype '%s'; kbench reads only little-endian "
                      "float32 ('<f4')", p->path, shown(h.descr, h.descr_len, q, sizeof q));
    if (h.fortran_order)
        return kb_report(p->err, p->errlen, "%s: fortran_order is True; kbench reads only "
                      "C-order arrays", p->path);
    return 0;
}

/* Element count, with the byte size kept within int64 and size_t. */
static int count_elements(int ndim, const int64_t *shape, int64_t *count)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] < 0 || (shape[i] && n > INT64_MAX / 4 / shape[i]))
            return -1;
        n *= shape[i];
    }
    if ((uint64_t)n > SIZE_MAX / sizeof(float))
        return -1;
    *count = n;
    return 0;
}

/* The magic, the version and the header length; *start gets the header's
 * file offset and *len its length, which must fit in the file. */
static int read_preamble(FILE *fp, const char *path, uint64_t size, size_t *start,
                         size_t *len, char *err, size_t errlen)
{
    unsigned char b[12];
    size_t got = fread(b, 1, sizeof b, fp);
    if (got < sizeof magic || memcmp(b, magic, sizeof magic) != 0)
        return kb_report(err, errlen, "%s: not a .npy file (bad magic)", path);
    if (got < 10)
        return kb_report(err, errlen, "%s: truncated inside the .npy preamble", path);
    if (b[6] < 1 || b[6] > 3 || b[7] != 0)
        return kb_report(err, errlen, "%s: unsupported .npy version %d.%d (kbench reads 1.0, "
                      "2.0 and 3.0)", path, b[6], b[7]);
    int wide = b[6] > 1;
    if (wide && got < 12)
        return kb_report(err, errlen, "%s: truncated inside the .npy preamble", path);
    uint64_t n = (uint64_t)b[8] | (uint64_t)b[9] << 8;
    if (wide)
        n |= (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    *start = wide ? 12 : 10;
    if (n > MAX_NPY_HEADER)
        return kb_report(err, errlen, "%s: header length %" PRIu64 " is over the %d bytes an array of "
                      "float32 needs", path, n, MAX_NPY_HEADER);
    if (n > size - *start)
        return kb_report(err, errlen, "%s: header length %" PRIu64 " runs past the end of the "
                      "file (%" PRIu64 " bytes)", path, n, size);
    *len = (size_t)n;
    return 0;
}

static int read_header(FILE *fp, const char *path, uint64_t size, kb_npy *a, uint64_t *data_at,
                       char *err, size_t errlen)
{
    size_t start = 0, len = 0;
    if (read_preamble(fp, path, size, &start, &len, err, errlen) != 0)
        return -1;
    char *text = malloc(len ? len : 1);
    if (!text)
        return kb_report(err, errlen, "%s: out of memory", path);
    int rc = -1;
    if (fseek(fp, (long)start, SEEK_SET) != 0 || fread(text, 1, len, fp) != len)
        kb_report(err, errlen, "%s: read error", path);
    else {
        parser p = {.path = path, .text = text, .len = len, .base = start,
                    .err = err, .errlen = errlen};
        rc = check_header(&p, a);
    }
    free(text);
    *data_at = start + len;
    return rc;
}

static void format_shape(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, "%" PRId64 "%s", shape[i],
                              ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
    if (n < len)
        snprintf(buf + n, len - n, ")");
}

/* The data must fill the rest of the file exactly. */
static int read_data(FILE *fp, const char *path, uint64_t size, uint64_t data_at, kb_npy *a,
                     char *err, size_t errlen)
{
    char shape[256];
    format_shape(shape, sizeof shape, a->ndim, a->shape);
    if (count_elements(a->ndim, a->shape, &a->count) != 0)
        return kb_report(err, errlen, "%s: shape %s is too large", path, shape);
    uint64_t need = (uint64_t)a->count * sizeof(float), have = size - data_at;
    if (have < need)
        return kb_report(err, errlen, "%s: truncated: %" PRIu64 " bytes of data, shape %s "
                      "needs %" PRIu64, path, have, shape, need);
    if (have > need)
        return kb_report(err, errlen, "%s: %" PRIu64 " unexpected bytes after the data of shape %s",
                      path, have - need, shape);
    a->data = malloc(need ? (size_t)need : 1);
    if (!a->data)
        return kb_report(err, errlen, "%s: out of memory for %" PRIu64 " bytes", path, need);
    if (fseek(fp, (long)data_at, SEEK_SET) != 0 || fread(a->data, 1, (size_t)need, fp) != need)
        return kb_report(err, errlen, "%s: read error", path);
    return 0;
}

int kb_npy_read(const char *path, kb_npy *a, char *err, size_t errlen)
{
    char shown[KB_QUOTE_LEN];
    kb_quote(path, shown, sizeof shown);
    memset(a, 0, sizeof *a);
    uint64_t size = 0, data_at = 0;
    const int fd = kb_input_open(path, shown, MAX_NPY_BYTES, &size, err, errlen);
    if (fd < 0)
        return -1;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return kb_report(err, errlen, "%s: cannot open: %s", shown, strerror(errno));
    }
    int rc = -1;
    if (read_header(fp, shown, size, a, &data_at, err, errlen) == 0)
        rc = read_data(fp, shown, size, data_at, a, err, errlen);
    fclose(fp);
    if (rc != 0)
        kb_npy_free(a);
    return rc;
}

void kb_npy_free(kb_npy *a)
{
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* The 1.0 preamble and header, padded with spaces so the data that follows
 * starts at a multiple of 64 bytes.  Returns the total length. */
static size_t build_header(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    char dims[256];
    format_shape(dims, sizeof dims, ndim, shape);
    size_t n = 10 + (size_t)snprintf(buf + 10, cap - 10, "{'descr': '<f4', 'fortran_order': "
                                     "False, 'shape': %s, }", dims);
    size_t total = (n + 1 + 63) / 64 * 64;
    memset(buf + n, ' ', total - 1 - n);
    buf[total - 1] = '\n';
    size_t header_len = total - 10;
    memcpy(buf, magic, sizeof magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(header_len & 0xFF);
    buf[9] = (char)(header_len >> 8);
    return total;
}

static int write_file(const char *tmp, const char *head, size_t head_len, const float *data,
                      int64_t count)
{
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return -1;
    int bad = fwrite(head, 1, head_len, f) != head_len ||
              fwrite(data, sizeof *data, (size_t)count, f) != (size_t)count;
    return (fclose(f) != 0 || bad) ? -1 : 0;
}

int kb_npy_write(const char *path, int ndim, const int64_t *shape, const float *data,
                 char *err, size_t errlen)
{
    int64_t count;
    char shown[KB_QUOTE_LEN];
    kb_quote(path, shown, sizeof shown);
    if (ndim < 0 || ndim > KB_NPY_MAX_DIMS || count_elements(ndim, shape, &count) != 0)
        return kb_report(err, errlen, "%s: cannot write: bad shape (ndim %d)", shown, ndim);
    char head[512];
    size_t head_len = build_header(head, sizeof head, ndim, shape);
    char target[PATH_MAX], tmp[PATH_MAX + 32];
    if (kb_output_target(path, target, sizeof target, err, errlen) != 0)
        return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    int rc = 0;
    if (write_file(tmp, head, head_len, data, count) != 0 || rename(tmp, target) != 0) {
        rc = kb_report(err, errlen, "%s: cannot write: %s", shown, strerror(errno));
        unlink(tmp);
    }
    return rc;
}
