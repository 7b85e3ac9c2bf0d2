/* The model's file formats: safetensors weights (a valid file and every kind
 * of damage), .npy arrays (round trip, files from NumPy, rejections) and the
 * whitespace tokenizer with its vocabulary files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "tests/check.h"
#include "tests/make_safetensors.c"
#include "tokenizer/tokenizer.h"

/* np.save(f, (np.arange(6, dtype='<f4').reshape(2, 3) * 0.5 - 1)) from
 * NumPy 2.4.6, byte for byte. */
static const char numpy_npy[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape'"
    ": (2, 3), }                                                          \012"
    "\000\000\200\277\000\000\000\277\000\000\000\000\000\000\000\077\000\000"
    "\200\077\000\000\300\077";

/* safetensors.numpy.save({"encoder.norm.weight": [1, 2], "w": [[0.25, -3,
 * 7.5]]}, metadata={"format": "pt"}) from safetensors 0.8.0, the writer that
 * safetensors.torch.save_file also uses. */
static const char python_safetensors[] =
    "\240\000\000\000\000\000\000\000{\042__metadata__\042:{\042format\042:"
    "\042pt\042},\042encoder.norm.weight\042:{\042dtype\042:\042F32\042,\042"
    "shape\042:[2],\042data_offsets\042:[0,8]},\042w\042:{\042dtype\042:\042"
    "F32\042,\042shape\042:[1,3],\042data_offsets\042:[8,20]}} \000\000\200"
    "\077\000\000\000@\000\000\200>\000\000@\300\000\000\360@";

static char dir[] = "/tmp/kbench-model-XXXXXX";

typedef struct {
    char s[512];
} path_buf;

/* A path in the test's directory, returned by value so that no call
 * overwrites another's. */
static path_buf in_dir(const char *name)
{
    path_buf p;
    snprintf(p.s, sizeof p.s, "%s/%s", dir, name);
    return p;
}

static int write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static int has(const char *err, const char *phrase)
{
    if (strstr(err, phrase))
        return 1;
    fprintf(stderr, "expected \"%s\" in: %s\n", phrase, err);
    return 0;
}

static void test_st_valid(void)
{
    path_buf file = in_dir("valid.safetensors");
    const char *path = file.s;
    CHECK(st_write_variant(path, ST_VALID) == 0);
    kb_st_file f;
    char err[512] = "";
    CHECK(kb_st_open(path, &f, err, sizeof err) == 0);
    const float *a = NULL, *b = NULL, *s = NULL, *e = NULL;
    CHECK(kb_st_get(&f, "a", 2, (int64_t[]){2, 3}, &a, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "b.1", 1, (int64_t[]){4}, &b, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "s", 0, NULL, &s, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "e", 2, (int64_t[]){0, 3}, &e, err, sizeof err) == 0);
    for (int i = 0; a && i < 6; ++i)
        CHECK(a[i] == st_data[i]);
    for (int i = 0; b && i < 4; ++i)
        CHECK(b[i] == 10 + i);
    CHECK(s && *s == 42);

    int ndim = -1;
    int64_t shape[KB_ST_MAX_DIMS];
    CHECK(kb_st_shape(&f, "a", &ndim, shape) == 0 && ndim == 2 && shape[0] == 2 && shape[1] == 3);
    CHECK(kb_st_shape(&f, "s", &ndim, shape) == 0 && ndim == 0);
    CHECK(kb_st_shape(&f, "nope", &ndim, shape) == -1);

    /* A tensor that is not there, and one of the wrong shape. */
    CHECK(kb_st_get(&f, "encoder.norm.weight", 1, (int64_t[]){6}, &a, err, sizeof err) != 0);
    CHECK(has(err, "no tensor named 'encoder.norm.weight'") && has(err, "valid.safetensors"));
    CHECK(kb_st_get(&f, "a", 2, (int64_t[]){3, 2}, &a, err, sizeof err) != 0);
    CHECK(has(err, "tensor 'a' has shape [2, 3], expected [3, 2]"));
    CHECK(kb_st_get(&f, "b.1", 2, (int64_t[]){4, 1}, &b, err, sizeof err) != 0);
    CHECK(has(err, "has shape [4], expected [4, 1]"));
    kb_st_close(&f);
    unlink(path);
}

/* Each damaged file is refused at open, or at the lookup that meets the
 * damage, with a line naming the problem. */
static void test_st_damaged(void)
{
    static const struct {
        st_variant v;
        const char *phrase;
    } cases[] = {
        {ST_CUT_PREFIX, "truncated: 5 bytes, shorter than the 8-byte header length"},
        {ST_CUT_HEADER, "truncated: the header needs"},
        {ST_CUT_DATA, "tensor 'b.1': data_offsets [24, 40] past the end of the data section (38 bytes"},
        {ST_HEADER_TOO_LONG, "header length 1048576 is larger than the file"},
        {ST_BAD_JSON, "malformed header JSON at byte"},
        {ST_WRONG_DTYPE, "tensor 'a' has dtype F16; kbench loads only F32"},
        {ST_OFFSETS_PAST_END, "data_offsets [24, 4000] past the end of the data section"},
        {ST_END_BEFORE_BEGIN, "data_offsets [24, 0] end before begin"},
        {ST_SIZE_MISMATCH, "data_offsets [0, 20] hold 20 bytes but F32 [2, 3] needs 24"},
    };
    path_buf file = in_dir("damaged.safetensors");
    const char *path = file.s;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        CHECK(st_write_variant(path, cases[i].v) == 0);
        kb_st_file f;
        const float *a;
        char err[512] = "";
        int rc = kb_st_open(path, &f, err, sizeof err);
        if (rc == 0) {
            rc = kb_st_get(&f, "a", 2, (int64_t[]){2, 3}, &a, err, sizeof err);
            kb_st_close(&f);
        }
        CHECK(rc != 0);
        CHECK(has(err, cases[i].phrase) && has(err, "damaged.safetensors"));
        CHECK(strchr(err, '\n') == NULL);
    }
    unlink(path);
}

/* The syntax error's offset counts from the start of the file. */
static void test_st_json_offset(void)
{
    path_buf file = in_dir("offset.safetensors");
    const char *path = file.s;
    const char *json = st_json(ST_BAD_JSON);
    char want[64], err[512] = "";
    snprintf(want, sizeof want, "at byte %zu: expected ':'",
             8 + (size_t)(strstr(json, "\"a\" {") - json) + 4);
    CHECK(st_write_json(path, json) == 0);
    kb_st_file f;
    CHECK(kb_st_open(path, &f, err, sizeof err) != 0);
    CHECK(has(err, want));
    unlink(path);
}

/* Headers that are well-formed JSON only in part, or describe impossible
 * tensors. */
static void test_st_bad_headers(void)
{
    static const char *const cases[][2] = {
        {"", "expected '{'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}", "expected ',' or '}'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}} x", "unexpected text"},
        {"{\"a", "unterminated string"},
        {"{\"a\\q\": {}}", "bad escape"},
        {"{\"a\\ud800\": {}}", "unpaired surrogate"},
        {"{\"a\\u00\": {}}", "bad \\u escape"},
        {"{\"a\\u0000\": {}}", "\\u0000 in a string"},
        {"{\"a\tb\": {}}", "control character"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", "expected a non-negative integer"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1.0], \"data_offsets\": [0, 4]}}", "expected ',' or ']'"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [01], \"data_offsets\": [0, 4]}}", "leading zero"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 18446744073709551616]}}", "integer too large"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [9223372036854775808], \"data_offsets\": [0, 4]}}", "tensor 'a': dimension 0 is too large"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], \"data_offsets\": [0, 4]}}", "overflows"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", "shape has more than 8 entries"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]}}", "data_offsets has 1 entries"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], \"x\": 1}}", "unknown field \"x\""},
        {"{\"a\": {\"dtype\": \"F32\", \"dtype\": \"F32\"}}", "field \"dtype\" appears twice"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", "tensor 'a': no \"data_offsets\" field"},
        {"{\"a\": {\"dtype\": \"F32000000000000000\", \"shape\": [1], \"data_offsets\": [0, 4]}}", "not a safetensors dtype"},
        {"{\"__metadata__\": {\"k\": 1}}", "expected a string"},
        {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
         " \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", "tensor 'a' appears twice"},
    };
    path_buf file = in_dir("header.safetensors");
    const char *path = file.s;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        CHECK(st_write_json(path, cases[i][0]) == 0);
        kb_st_file f;
        char err[512] = "";
        CHECK(kb_st_open(path, &f, err, sizeof err) != 0);
        CHECK(has(err, cases[i][1]));
    }
    kb_st_file f;
    char err[512] = "";
    CHECK(kb_st_open(in_dir("absent.safetensors").s, &f, err, sizeof err) != 0);
    CHECK(has(err, "absent.safetensors: cannot open"));
    unlink(path);
}

/* The tensors must tile the data section (st_data's 44 bytes), and every
 * dtype must be a safetensors dtype, even on a tensor nobody asks for. */
static void test_st_layout(void)
{
#define T(name, dtype, shape, begin, end) \
    "\"" name "\": {\"dtype\": \"" dtype "\", \"shape\": [" shape "], \"data_offsets\": [" #begin ", " #end "]}"
    static const char *const cases[][2] = {
        {"{" T("x", "F32", "4", 0, 16) ", " T("y", "F32", "4", 8, 24) ", " T("z", "F32", "5", 24, 44) "}",
         "tensors 'x' [0, 16) and 'y' [8, 24) overlap"},
        {"{" T("x", "F32", "4", 0, 16) ", " T("y", "F32", "4", 0, 16) ", " T("z", "F32", "7", 16, 44) "}",
         "tensors 'x' [0, 16) and 'y' [0, 16) overlap"},
        {"{" T("x", "F32", "4", 0, 16) ", " T("z", "F32", "5", 24, 44) "}",
         "bytes [16, 24) of the data section belong to no tensor"},
        {"{" T("x", "F32", "4", 0, 16) "}", "bytes [16, 44) of the data section belong to no tensor"},
        {"{" T("x", "F32", "11", 0, 44) ", " T("q", "Q99", "4294967296, 4294967296, 4294967296", 0, 44) "}",
         "tensor 'q': dtype \"Q99\" is not a safetensors dtype"},
        {"{" T("x", "F32", "10", 0, 40) ", " T("q", "F4", "3", 40, 44) "}", "F4 [3] is not a whole number of bytes"},
        {"{" T("a\\nb\\u001b", "F32", "4", 0, 16) ", " T("y", "F32", "9", 8, 44) "}", "'a\\x0ab\\x1b' [0, 16)"},
        /* A backslash before a raw newline: the message shows the byte escaped (found by fuzz_safetensors). */
        {"{" T("a\\\n", "F32", "11", 0, 44) "}", "bad escape '\\\\x0a'"},
    };
#undef T
    path_buf file = in_dir("layout.safetensors");
    const char *path = file.s;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        CHECK(st_write_json(path, cases[i][0]) == 0);
        kb_st_file f;
        char err[512] = "";
        CHECK(kb_st_open(path, &f, err, sizeof err) != 0);
        CHECK(has(err, cases[i][1]) && strchr(err, '\n') == NULL);
    }
    /* F4 is a dtype (two elements a byte): the file opens, the lookup refuses it. */
    CHECK(st_write_json(path, "{\"q\": {\"dtype\": \"F4\", \"shape\": [88], \"data_offsets\": [0, 44]}}") == 0);
    kb_st_file f;
    const float *q = NULL;
    char err[512] = "";
    CHECK(kb_st_open(path, &f, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "q", 1, (int64_t[]){88}, &q, err, sizeof err) != 0);
    CHECK(has(err, "tensor 'q' has dtype F4"));
    kb_st_close(&f);
    unlink(path);
}

/* A file name with control characters stays one line in every message. */
static void test_quoted_paths(void)
{
    path_buf file = in_dir("new\nline\033.bin");
    const char *path = file.s;
    CHECK(write_bytes(path, "junk", 4) == 0);
    char err[512] = "";
    kb_st_file f;
    kb_npy a;
    kb_vocab v;
    CHECK(kb_st_open(path, &f, err, sizeof err) != 0 && has(err, "new\\x0aline\\x1b.bin"));
    CHECK(strchr(err, '\n') == NULL);
    CHECK(kb_npy_read(path, &a, err, sizeof err) != 0 && has(err, "new\\x0aline\\x1b.bin"));
    CHECK(strchr(err, '\n') == NULL);
    CHECK(kb_vocab_load(path, &v, err, sizeof err) != 0 && has(err, "new\\x0aline\\x1b.bin"));
    CHECK(strchr(err, '\n') == NULL);
    unlink(path);
    /* Not a regular file: a directory's size is no size to read. */
    CHECK(kb_st_open(dir, &f, err, sizeof err) != 0 && has(err, "not a regular file"));
    CHECK(kb_npy_read(dir, &a, err, sizeof err) != 0 && has(err, "not a regular file"));
    CHECK(kb_vocab_load(dir, &v, err, sizeof err) != 0 && has(err, "not a regular file"));
    CHECK(kb_vocab_load("/dev/zero", &v, err, sizeof err) != 0 && has(err, "not a regular file"));
}

static void test_st_python(void)
{
    path_buf file = in_dir("python.safetensors");
    const char *path = file.s;
    CHECK(write_bytes(path, python_safetensors, sizeof python_safetensors - 1) == 0);
    kb_st_file f;
    const float *norm = NULL, *w = NULL;
    char err[512] = "";
    CHECK(kb_st_open(path, &f, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "encoder.norm.weight", 1, (int64_t[]){2}, &norm, err, sizeof err) == 0);
    CHECK(kb_st_get(&f, "w", 2, (int64_t[]){1, 3}, &w, err, sizeof err) == 0);
    CHECK(norm && norm[0] == 1 && norm[1] == 2);
    CHECK(w && w[0] == 0.25f && w[1] == -3 && w[2] == 7.5f);
    kb_st_close(&f);
    unlink(path);
}

static int read_file(const char *path, char *buf, size_t cap, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    *n = fread(buf, 1, cap, f);
    fclose(f);
    return 0;
}

static void check_round_trip(int ndim, const int64_t *shape, int64_t count)
{
    path_buf file = in_dir("round.npy");
    const char *path = file.s;
    float *data = malloc((size_t)(count ? count : 1) * sizeof *data);
    for (int64_t i = 0; data && i < count; ++i)
        data[i] = (float)i * 0.25f - 3;
    char err[512] = "";
    CHECK(data && kb_npy_write(path, ndim, shape, data, err, sizeof err) == 0);
    kb_npy a;
    CHECK(kb_npy_read(path, &a, err, sizeof err) == 0);
    CHECK(a.ndim == ndim && a.count == count);
    for (int i = 0; i < ndim && i < a.ndim; ++i)
        CHECK(a.shape[i] == shape[i]);
    CHECK(count == 0 || (a.data && data && !memcmp(a.data, data, (size_t)count * sizeof *data)));
    /* The header pads the data out to a multiple of 64 bytes. */
    FILE *f = fopen(path, "rb");
    CHECK(f && fseek(f, 0, SEEK_END) == 0 && (ftell(f) - count * 4) % 64 == 0);
    if (f)
        fclose(f);
    kb_npy_free(&a);
    free(data);
    unlink(path);
}

static void test_npy_round_trip(void)
{
    check_round_trip(3, (int64_t[]){2, 3, 4}, 24);
    check_round_trip(1, (int64_t[]){5}, 5);
    check_round_trip(0, NULL, 1);
    check_round_trip(2, (int64_t[]){0, 7}, 0);
    check_round_trip(8, (int64_t[]){1, 2, 1, 2, 1, 2, 1, 3}, 24);

    /* For this shape NumPy's header has the same length as ours, so the
     * files are identical. */
    const float values[6] = {-1, -0.5f, 0, 0.5f, 1, 1.5f};
    char err[512] = "", buf[512];
    size_t n = 0;
    CHECK(kb_npy_write(in_dir("mine.npy").s, 2, (int64_t[]){2, 3}, values, err, sizeof err) == 0);
    CHECK(read_file(in_dir("mine.npy").s, buf, sizeof buf, &n) == 0);
    CHECK(n == sizeof numpy_npy - 1 && !memcmp(buf, numpy_npy, n));
    unlink(in_dir("mine.npy").s);

    CHECK(kb_npy_write(in_dir("no/such/dir.npy").s, 1, (int64_t[]){1}, values, err, sizeof err) != 0);
    CHECK(has(err, "cannot write"));
    CHECK(kb_npy_write(in_dir("bad.npy").s, 1, (int64_t[]){-1}, values, err, sizeof err) != 0);
    CHECK(has(err, "bad shape"));
}

static void test_npy_from_numpy(void)
{
    path_buf file = in_dir("numpy.npy");
    const char *path = file.s;
    CHECK(write_bytes(path, numpy_npy, sizeof numpy_npy - 1) == 0);
    kb_npy a;
    char err[512] = "";
    CHECK(kb_npy_read(path, &a, err, sizeof err) == 0);
    CHECK(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3 && a.count == 6);
    for (int i = 0; a.data && i < 6; ++i)
        CHECK(a.data[i] == 0.5f * (float)i - 1);
    kb_npy_free(&a);
    unlink(path);
}

/* A .npy with this version and header text, padded like NumPy's, then n
 * bytes of data. */
static int write_npy(const char *path, int major, const char *header, const void *data, size_t n)
{
    char buf[1024];
    size_t pre = major == 1 ? 10 : 12, len = strlen(header);
    size_t total = (pre + len + 1 + 63) / 64 * 64;
    if (total + n > sizeof buf)
        return -1;
    memcpy(buf, "\223NUMPY", 6);
    buf[6] = (char)major;
    buf[7] = 0;
    for (size_t i = 0; i < pre - 8; ++i)
        buf[8 + i] = (char)((total - pre) >> (8 * i));
    memcpy(buf + pre, header, len);
    memset(buf + pre + len, ' ', total - pre - len - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    return write_bytes(path, buf, total + n);
}

static void test_npy_versions(void)
{
    const float v[3] = {1, 2, 3};
    path_buf file = in_dir("v.npy");
    const char *path = file.s;
    char err[512] = "";
    kb_npy a;
    for (int major = 2; major <= 3; ++major) {
        CHECK(write_npy(path, major, "{\"shape\": (3,), 'fortran_order': False, 'descr': '<f4'}",
                        v, sizeof v) == 0);
        CHECK(kb_npy_read(path, &a, err, sizeof err) == 0);
        CHECK(a.ndim == 1 && a.shape[0] == 3 && a.data && a.data[2] == 3);
        kb_npy_free(&a);
    }
    CHECK(write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", v, 4) == 0);
    CHECK(kb_npy_read(path, &a, err, sizeof err) == 0);
    CHECK(a.ndim == 0 && a.count == 1 && a.data && a.data[0] == 1);
    kb_npy_free(&a);
    unlink(path);
}

static void expect_npy_error(const char *bytes, size_t n, const char *phrase)
{
    path_buf file = in_dir("bad.npy");
    const char *path = file.s;
    CHECK(write_bytes(path, bytes, n) == 0);
    kb_npy a;
    char err[512] = "";
    CHECK(kb_npy_read(path, &a, err, sizeof err) != 0);
    CHECK(has(err, phrase) && has(err, "bad.npy"));
    CHECK(a.data == NULL);
    unlink(path);
}

/* NumPy's file with the first occurrence of `from` replaced by `to`. */
static void expect_edit_error(const char *from, const char *to, const char *phrase)
{
    char buf[sizeof numpy_npy];
    memcpy(buf, numpy_npy, sizeof buf);
    char *at = strstr(buf + 10, from);
    CHECK(at != NULL && strlen(from) == strlen(to));
    if (at)
        memcpy(at, to, strlen(to));
    expect_npy_error(buf, sizeof buf - 1, phrase);
}

static void test_npy_rejects(void)
{
    size_t n = sizeof numpy_npy - 1;
    char buf[sizeof numpy_npy];
    memcpy(buf, numpy_npy, sizeof buf);
    buf[1] = 'n';
    expect_npy_error(buf, n, "not a .npy file (bad magic)");
    expect_npy_error(numpy_npy, 4, "bad magic");
    expect_npy_error(numpy_npy, 9, "truncated inside the .npy preamble");
    memcpy(buf, numpy_npy, sizeof buf);
    buf[6] = 4;
    expect_npy_error(buf, n, "unsupported .npy version 4.0");
    memcpy(buf, numpy_npy, sizeof buf);
    buf[8] = buf[9] = (char)0xFF;
    expect_npy_error(buf, n, "header length 65535 runs past the end of the file");
    /* A 3.0 preamble claiming a 1 GiB header is refused before any of it
     * is read (a sparse file would cost that much memory). */
    memcpy(buf, numpy_npy, sizeof buf);
    buf[6] = 3, buf[8] = buf[9] = buf[10] = 0, buf[11] = 0x40;
    expect_npy_error(buf, n, "header length 1073741824 is over the 65536 bytes");
    expect_npy_error(numpy_npy, n - 4, "truncated: 20 bytes of data, shape (2, 3) needs 24");
    expect_npy_error(numpy_npy, 100, "header length 118 runs past the end");
    expect_edit_error("'<f4'", "'<f8'", "dtype '<f8'; kbench reads only little-endian float32");
    expect_edit_error("'<f4'", "'>f4'", "dtype '>f4'");
    expect_edit_error("False", "True ", "fortran_order is True");
    expect_edit_error("'shape'", "'shapx'", "unexpected key 'shapx'");
    expect_edit_error("(2, 3)", "(2, x)", "malformed .npy header at byte 64");
    expect_edit_error("'descr': '<f4'", "'descr': [1,2]", "structured dtype");

    const float v[4] = {0};
    path_buf file = in_dir("bad.npy");
    const char *path = file.s;
    char err[512] = "";
    kb_npy a;
    CHECK(write_npy(path, 1, "{'descr': '<f4', 'shape': (3,)}", v, 12) == 0);
    CHECK(kb_npy_read(path, &a, err, sizeof err) != 0 && has(err, "lacks 'fortran_order'"));
    CHECK(write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", v, 16) == 0);
    CHECK(kb_npy_read(path, &a, err, sizeof err) != 0 && has(err, "4 unexpected bytes after"));
    CHECK(write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                    "(4611686018427387904, 4)}", v, 16) == 0);
    CHECK(kb_npy_read(path, &a, err, sizeof err) != 0 && has(err, "is too large"));
    CHECK(kb_npy_read(in_dir("absent.npy").s, &a, err, sizeof err) != 0 && has(err, "cannot open"));
    unlink(path);
}

static void test_tokenizer(void)
{
    kb_vocab v;
    CHECK(kb_vocab_default(&v) == 0);
    CHECK(kb_vocab_size(&v) > 50);
    CHECK(kb_vocab_id(&v, "<unk>") == 0 && kb_vocab_id(&v, "<pad>") == 1);
    CHECK(kb_vocab_id(&v, "<s>") == 2 && kb_vocab_id(&v, "</s>") == 3);
    CHECK(kb_vocab_id(&v, "zebra") == -1);

    const char *text = "  the cat\tsat\n\non   the mat  zebra The\r\n";
    int ids[8] = {-9, -9, -9, -9, -9, -9, -9, -9};
    CHECK(kb_encode(&v, text, NULL, 0) == 8);
    CHECK(kb_encode(&v, text, ids, 8) == 8);
    const char *words[] = {"the", "cat", "sat", "on", "the", "mat"};
    for (int i = 0; i < 6; ++i)
        CHECK(ids[i] == kb_vocab_id(&v, words[i]) && ids[i] > 3);
    CHECK(ids[6] == 0 && ids[7] == 0);   /* unknown, and case matters */

    int few[3] = {-9, -9, -9};
    CHECK(kb_encode(&v, text, few, 2) == 8 && few[1] == ids[1] && few[2] == -9);
    CHECK(kb_encode(&v, "", ids, 8) == 0);
    CHECK(kb_encode(&v, " \t\n\r ", ids, 8) == 0);
    CHECK(kb_encode(&v, "hello", ids, 8) == 1 && ids[0] == kb_vocab_id(&v, "hello"));
    kb_vocab_free(&v);
}

static void expect_vocab(const char *contents, const char *phrase)
{
    path_buf file = in_dir("vocab.txt");
    const char *path = file.s;
    CHECK(write_bytes(path, contents, strlen(contents)) == 0);
    kb_vocab v;
    char err[512] = "";
    CHECK(kb_vocab_load(path, &v, err, sizeof err) != 0);
    CHECK(has(err, phrase) && has(err, "vocab.txt"));
    unlink(path);
}

static void test_vocab_file(void)
{
    path_buf file = in_dir("vocab.txt");
    const char *path = file.s;
    const char *contents = "<pad>\n<unk>\nhello\r\nworld";   /* CRLF, no final newline */
    CHECK(write_bytes(path, contents, strlen(contents)) == 0);
    kb_vocab v;
    char err[512] = "";
    CHECK(kb_vocab_load(path, &v, err, sizeof err) == 0);
    CHECK(kb_vocab_size(&v) == 4 && kb_vocab_id(&v, "hello") == 2 && kb_vocab_id(&v, "world") == 3);
    int ids[4];
    CHECK(kb_encode(&v, "hello there world", ids, 4) == 3);
    CHECK(ids[0] == 2 && ids[1] == 1 && ids[2] == 3);
    kb_vocab_free(&v);
    unlink(path);

    expect_vocab("", "the vocabulary is empty");
    expect_vocab("<unk>\na\nb\na\n", "vocab.txt:4: duplicate token 'a' (first on line 2)");
    expect_vocab("<unk>\n\nb\n", "vocab.txt:2: empty line");
    expect_vocab("<unk>\na b\n", "vocab.txt:2: token 'a b' contains whitespace");
    expect_vocab("a\nb\n", "no <unk> token");
    expect_vocab("<unk>\nx\033[2J\n\033[2J\nx\033[2J\n", "duplicate token 'x\\x1b[2J'");
    expect_vocab("<unk>\na\tb\n", "token 'a\\x09b' contains whitespace");
    /* A file far larger than any vocabulary is refused before it is read. */
    FILE *big = fopen(path, "wb");
    CHECK(big && ftruncate(fileno(big), (off_t)65 << 20) == 0);
    if (big)
        fclose(big);
    CHECK(kb_vocab_load(path, &v, err, sizeof err) != 0 && has(err, "vocab.txt: larger than 64 MiB"));
    unlink(path);
    CHECK(kb_vocab_load(in_dir("absent.txt").s, &v, err, sizeof err) != 0);
    CHECK(has(err, "absent.txt: cannot open"));
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_st_valid();
    test_st_damaged();
    test_st_json_offset();
    test_st_bad_headers();
    test_st_layout();
    test_quoted_paths();
    test_st_python();
    test_npy_round_trip();
    test_npy_from_numpy();
    test_npy_versions();
    test_npy_rejects();
    test_tokenizer();
    test_vocab_file();
    rmdir(dir);
    return CHECK_DONE();
}
