/* The GGUF reader and the Llama loader on top of it (formats/gguf.h,
 * model/llama_gguf.h), on small files this test writes itself:
 *
 *   - hand-computed Q8_0 and Q4_1 blocks and F16/BF16 values dequantize to
 *     the numbers worked out here;
 *   - every metadata type reads back (nested arrays are skipped), v2 and v3;
 *   - a two-layer Llama whose weights are exact in their GGUF types (Q8_0,
 *     Q4_1, F16, BF16, F32, block scales varying) loads to the HF-layout
 *     values it was written from, Wq and Wk un-permuted (the writer permutes
 *     rows as llama.cpp's converter does), tied and untied;
 *   - each kind of damage is refused with one line naming it, and every
 *     truncation of the good file is refused. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/gguf.h"
#include "model/llama_gguf.h"
#include "tests/check.h"

/* ---- a byte buffer ---------------------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_le(buf *b, uint64_t v, int n)
{
    unsigned char x[8];
    for (int i = 0; i < n; ++i)
        x[i] = (unsigned char)(v >> (8 * i));
    put(b, x, (size_t)n);
}

static void put_str(buf *b, const char *s)
{
    put_le(b, strlen(s), 8);
    put(b, s, strlen(s));
}

static void put_f32(buf *b, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    put_le(b, u, 4);
}

/* ---- key/values ----------------------------------------------------------------------------- */

static void kv_head(buf *b, int *n, const char *key, uint32_t type)
{
    put_str(b, key);
    put_le(b, type, 4);
    ++*n;
}

static void kv_u32(buf *b, int *n, const char *key, uint32_t v)
{
    kv_head(b, n, key, KB_GGUF_U32);
    put_le(b, v, 4);
}

static void kv_f32(buf *b, int *n, const char *key, float v)
{
    kv_head(b, n, key, KB_GGUF_F32);
    put_f32(b, v);
}

static void kv_str(buf *b, int *n, const char *key, const char *v)
{
    kv_head(b, n, key, KB_GGUF_STRING);
    put_str(b, v);
}

/* ---- tensors ---------------------------------------------------------------------------------- */

typedef struct {
    char name[64];
    uint32_t type, ndim;
    int64_t ne[4];
    buf data;
    uint64_t offset; /* set by the writer unless fixed */
    int fixed_offset;
} tensor;

/* Block scales that vary from block to block, so that a reader using the
 * wrong block's scale is caught; all exact in f16. */
static float q8_scale(int64_t blk) { return (float)(1 + blk % 4) / 16; }
static float q4_scale(int64_t blk) { return (float)(1 + blk % 3) / 8; }
static float q4_min(int64_t blk) { return -(float)(blk % 5) / 4; }

static uint32_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* Values of a rows x cols weight that its type holds exactly (row-major,
 * blocks of 32 along a row). */
static void make_values(uint32_t type, int64_t rows, int64_t cols, uint64_t seed, float *w)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t blk = (r * cols + c) / 32;
            const uint32_t x = rng(&seed);
            float v;
            if (type == KB_GGML_Q8_0)
                v = q8_scale(blk) * (float)((int)(x % 255) - 127);
            else if (type == KB_GGML_Q4_1)
                v = q4_scale(blk) * (float)(x % 16) + q4_min(blk);
            else if (type == KB_GGML_F16 || type == KB_GGML_BF16)
                v = (float)((int)(x % 64) - 32) / 8;
            else
                v = (float)x / 4294967296.0f - 0.5f;
            w[r * cols + c] = v;
        }
}

/* One row (cols values, exact in type) appended to b; blk0 is the index
 * of its first block in the HF layout, which chose its scales. */
static void write_row(buf *b, uint32_t type, const float *v, int64_t cols, int64_t blk0)
{
    for (int64_t c0 = 0; c0 < cols; c0 += type == KB_GGML_Q8_0 || type == KB_GGML_Q4_1 ? 32 : cols) {
        const int64_t blk = blk0 + c0 / 32;
        if (type == KB_GGML_Q8_0) {
            put_le(b, kb_f32_to_f16(q8_scale(blk)), 2);
            for (int j = 0; j < 32; ++j) {
                const int8_t q = (int8_t)lrintf(v[c0 + j] / q8_scale(blk));
                put(b, &q, 1);
            }
        } else if (type == KB_GGML_Q4_1) {
            put_le(b, kb_f32_to_f16(q4_scale(blk)), 2);
            put_le(b, kb_f32_to_f16(q4_min(blk)), 2);
            for (int j = 0; j < 16; ++j) {
                const long lo = lrintf((v[c0 + j] - q4_min(blk)) / q4_scale(blk));
                const long hi = lrintf((v[c0 + j + 16] - q4_min(blk)) / q4_scale(blk));
                const unsigned char q = (unsigned char)(lo | hi << 4);
                put(b, &q, 1);
            }
        } else
            for (int64_t c = 0; c < cols; ++c) {
                if (type == KB_GGML_F32)
                    put_f32(b, v[c]);
                else
                    put_le(b, type == KB_GGML_F16 ? kb_f32_to_f16(v[c]) : kb_f32_to_bf16(v[c]), 2);
            }
    }
}

/* The GGUF row that llama.cpp's converter writes HF row hf of a permuted
 * weight to: within a head, row s * half + i goes to 2i + s. */
static int64_t gguf_row(int64_t hf, int head_dim)
{
    const int64_t half = head_dim / 2, j = hf % head_dim;
    return hf - j + 2 * (j % half) + j / half;
}

/* A weight of HF shape rows x cols (cols 0: a vector), written in type,
 * its rows permuted over heads of head_dim when permute. */
static void add_weight(tensor *t, const char *name, uint32_t type, int64_t rows, int64_t cols, const float *w,
                       int permute, int head_dim)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->ndim = cols ? 2 : 1;
    t->ne[0] = cols ? cols : rows;
    t->ne[1] = cols ? rows : 1;
    const int64_t n = cols ? cols : rows, nrows = cols ? rows : 1;
    for (int64_t g = 0; g < nrows; ++g) {
        int64_t h = permute ? 0 : g; /* the HF row that GGUF row g holds */
        while (gguf_row(h, head_dim) != g && permute)
            ++h;
        write_row(&t->data, type, w + h * n, n, h * n / 32);
    }
}

/* ---- the file --------------------------------------------------------------------------------- */

/* header, key/values, tensor infos, padding to align, each tensor at an
 * aligned offset. */
static buf assemble(uint32_t version, const buf *kvs, int n_kv, tensor *t, int nt, uint32_t align)
{
    buf b = {0};
    put(&b, "GGUF", 4);
    put_le(&b, version, 4);
    put_le(&b, (uint64_t)nt, 8);
    put_le(&b, (uint64_t)n_kv, 8);
    put(&b, kvs->p, kvs->n);
    uint64_t off = 0;
    for (int i = 0; i < nt; ++i) {
        if (!t[i].fixed_offset) {
            t[i].offset = off;
            off = (off + t[i].data.n + align - 1) / align * align;
        }
        put_str(&b, t[i].name);
        put_le(&b, t[i].ndim, 4);
        for (uint32_t k = 0; k < t[i].ndim; ++k)
            put_le(&b, k < 4 ? (uint64_t)t[i].ne[k] : 1, 8);
        put_le(&b, t[i].type, 4);
        put_le(&b, t[i].offset, 8);
    }
    const size_t data = (b.n + align - 1) / align * align;
    while (b.n < data)
        put(&b, "", 1);
    for (int i = 0; i < nt; ++i) {
        if (t[i].fixed_offset && t[i].offset >= 4096)
            continue; /* far outside the file: nothing to write */
        while (b.n < data + t[i].offset)
            put(&b, "", 1);
        put(&b, t[i].data.p, t[i].data.n);
    }
    return b;
}

static char path[] = "/tmp/kbench-gguf-XXXXXX";

static void write_file(const buf *b)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0)
        abort();
}

/* Open the bytes as a file: 0 or -1, err as the reader left it. */
static int open_bytes(const buf *b, kb_gguf_file *f, char *err, size_t errlen)
{
    write_file(b);
    err[0] = '\0';
    return kb_gguf_open(path, f, err, errlen);
}

/* The bytes must be refused with one line holding `want`. */
static void refused(const buf *b, const char *want, int line)
{
    kb_gguf_file f;
    char err[512];
    const int rc = open_bytes(b, &f, err, sizeof err);
    if (rc == 0)
        kb_gguf_close(&f);
    if (rc == 0 || !strstr(err, want) || strchr(err, '\n'))
        fprintf(stderr, "line %d: expected a refusal with '%s', got rc %d: %s\n", line, want, rc, err);
    CHECK(rc != 0 && strstr(err, want) && !strchr(err, '\n'));
}

/* ---- hand-computed blocks --------------------------------------------------------------------- */

static void test_blocks(void)
{
    buf kvs = {0};
    tensor t[4];
    memset(t, 0, sizeof t);
    /* Q8_0: d = 0.5 (f16 0x3800), q_j = j - 16. */
    snprintf(t[0].name, 64, "q8");
    t[0].type = KB_GGML_Q8_0, t[0].ndim = 1, t[0].ne[0] = 32;
    put_le(&t[0].data, 0x3800, 2);
    for (int j = 0; j < 32; ++j) {
        const int8_t q = (int8_t)(j - 16);
        put(&t[0].data, &q, 1);
    }
    /* Q4_1: d = 0.25 (0x3400), m = -1 (0xBC00), byte j = j | (15 - j) << 4:
     * x_j = 0.25 j - 1 and x_{j+16} = 0.25 (15 - j) - 1. */
    snprintf(t[1].name, 64, "q4");
    t[1].type = KB_GGML_Q4_1, t[1].ndim = 1, t[1].ne[0] = 32;
    put_le(&t[1].data, 0x3400, 2);
    put_le(&t[1].data, 0xBC00, 2);
    for (int j = 0; j < 16; ++j) {
        const unsigned char q = (unsigned char)(j | (15 - j) << 4);
        put(&t[1].data, &q, 1);
    }
    /* F16 0x3C00 = 1, 0xC100 = -2.5; BF16 0x3FC0 = 1.5, 0xC040 = -3. */
    snprintf(t[2].name, 64, "f16");
    t[2].type = KB_GGML_F16, t[2].ndim = 2, t[2].ne[0] = 1, t[2].ne[1] = 2;
    put_le(&t[2].data, 0x3C00, 2);
    put_le(&t[2].data, 0xC100, 2);
    snprintf(t[3].name, 64, "bf16");
    t[3].type = KB_GGML_BF16, t[3].ndim = 1, t[3].ne[0] = 2;
    put_le(&t[3].data, 0x3FC0, 2);
    put_le(&t[3].data, 0xC040, 2);
    buf b = assemble(3, &kvs, 0, t, 4, 32);
    kb_gguf_file f;
    char err[512];
    float y[32];
    CHECK(open_bytes(&b, &f, err, sizeof err) == 0);
    if (f.n_tensors == 4) {
        kb_gguf_dequantize(kb_gguf_tensor_find(&f, "q8"), 0, 1, y);
        CHECK(y[0] == -8.0f && y[16] == 0.0f && y[31] == 7.5f);
        kb_gguf_dequantize(kb_gguf_tensor_find(&f, "q4"), 0, 1, y);
        CHECK(y[0] == -1.0f && y[15] == 2.75f && y[16] == 2.75f && y[31] == -1.0f && y[5] == 0.25f);
        kb_gguf_dequantize(kb_gguf_tensor_find(&f, "f16"), 1, 1, y);
        CHECK(y[0] == -2.5f);
        kb_gguf_dequantize(kb_gguf_tensor_find(&f, "bf16"), 0, 1, y);
        CHECK(y[0] == 1.5f && y[1] == -3.0f);
        CHECK(kb_gguf_tensor_find(&f, "q8")->bytes == 34 && kb_gguf_tensor_find(&f, "q4")->bytes == 20);
        kb_gguf_close(&f);
    }
    for (int i = 0; i < 4; ++i)
        free(t[i].data.p);
    free(b.p);
}

/* ---- metadata ------------------------------------------------------------------------------------ */

/* Every value type once, an array of i16, one of strings and one of arrays. */
static buf metadata_file(uint32_t version)
{
    buf k = {0};
    int n = 0;
    const uint32_t sizes[] = {1, 1, 2, 2, 4, 4, 0, 1, 0, 0, 8, 8, 0};
    const char *names[] = {"t.u8", "t.i8", "t.u16", "t.i16", "t.u32", "t.i32", "", "t.bool", "", "", "t.u64", "t.i64"};
    const uint64_t values[] = {200, 0xFE /* -2 */, 60000, 1234, 4000000000u, 0x7FFFFFFF, 0, 1, 0, 0,
                               (uint64_t)1 << 60, (uint64_t)-5};
    for (uint32_t ty = 0; ty < 12; ++ty)
        if (sizes[ty]) {
            kv_head(&k, &n, names[ty], ty);
            put_le(&k, values[ty], (int)sizes[ty]);
        }
    kv_f32(&k, &n, "t.f32", 0.375f);
    kv_head(&k, &n, "t.f64", KB_GGUF_F64);
    const double d = -1e300;
    put(&k, &d, 8);
    kv_str(&k, &n, "t.string", "h\xc3\xa9llo");
    kv_head(&k, &n, "t.i16s", KB_GGUF_ARRAY);
    put_le(&k, KB_GGUF_I16, 4);
    put_le(&k, 3, 8);
    put_le(&k, 7, 2), put_le(&k, 0xFFFF, 2), put_le(&k, 0x8000, 2);
    kv_head(&k, &n, "t.strings", KB_GGUF_ARRAY);
    put_le(&k, KB_GGUF_STRING, 4);
    put_le(&k, 2, 8);
    put_str(&k, "a b");
    put_str(&k, "");
    kv_head(&k, &n, "t.nested", KB_GGUF_ARRAY); /* [[1, 2], []] of u8 */
    put_le(&k, KB_GGUF_ARRAY, 4);
    put_le(&k, 2, 8);
    put_le(&k, KB_GGUF_U8, 4), put_le(&k, 2, 8), put_le(&k, 0x0201, 2);
    put_le(&k, KB_GGUF_U8, 4), put_le(&k, 0, 8);
    kv_u32(&k, &n, "general.alignment", 64);
    buf b = assemble(version, &k, n, NULL, 0, 64);
    free(k.p);
    return b;
}

static void test_metadata(void)
{
    for (uint32_t version = 2; version <= 3; ++version) {
        buf b = metadata_file(version);
        kb_gguf_file f;
        char err[512];
        uint64_t u = 0;
        double x = 0;
        kb_gguf_str s;
        const kb_gguf_kv *kv = NULL;
        CHECK(open_bytes(&b, &f, err, sizeof err) == 0);
        CHECK(f.version == version && f.alignment == 64 && f.n_kv == 16);
        CHECK(kb_gguf_get_uint(&f, "t.u8", &u, err, sizeof err) == 1 && u == 200);
        CHECK(kb_gguf_get_uint(&f, "t.u16", &u, err, sizeof err) == 1 && u == 60000);
        CHECK(kb_gguf_get_uint(&f, "t.i16", &u, err, sizeof err) == 1 && u == 1234);
        CHECK(kb_gguf_get_uint(&f, "t.u32", &u, err, sizeof err) == 1 && u == 4000000000u);
        CHECK(kb_gguf_get_uint(&f, "t.i32", &u, err, sizeof err) == 1 && u == 0x7FFFFFFF);
        CHECK(kb_gguf_get_uint(&f, "t.u64", &u, err, sizeof err) == 1 && u == (uint64_t)1 << 60);
        CHECK(kb_gguf_get_uint(&f, "t.bool", &u, err, sizeof err) == -1 && strstr(err, "is a bool"));
        CHECK(kb_gguf_get_uint(&f, "t.i8", &u, err, sizeof err) == -1 && strstr(err, "negative"));
        CHECK(kb_gguf_get_uint(&f, "t.i64", &u, err, sizeof err) == -1 && strstr(err, "negative"));
        CHECK(kb_gguf_get_uint(&f, "t.absent", &u, err, sizeof err) == 0);
        CHECK(kb_gguf_get_float(&f, "t.f32", &x, err, sizeof err) == 1 && x == 0.375);
        CHECK(kb_gguf_get_float(&f, "t.f64", &x, err, sizeof err) == 1 && x == -1e300);
        CHECK(kb_gguf_get_float(&f, "t.string", &x, err, sizeof err) == -1 && strstr(err, "'t.string' is a string"));
        CHECK(kb_gguf_get_string(&f, "t.string", &s, err, sizeof err) == 1 && kb_gguf_str_is(s, "h\xc3\xa9llo"));
        CHECK(kb_gguf_get_ints(&f, "t.i16s", &kv, err, sizeof err) == 1 && kv->count == 3);
        CHECK(kv && kb_gguf_int_at(kv, 0) == 7 && kb_gguf_int_at(kv, 1) == -1 && kb_gguf_int_at(kv, 2) == -32768);
        CHECK(kb_gguf_get_strings(&f, "t.strings", &kv, err, sizeof err) == 1 && kv->count == 2);
        CHECK(kv && kb_gguf_str_is(kv->strings[0], "a b") && kb_gguf_str_is(kv->strings[1], ""));
        CHECK(kb_gguf_get_strings(&f, "t.nested", &kv, err, sizeof err) == -1);
        CHECK(kb_gguf_find(&f, "t.nested") && kb_gguf_find(&f, "t.nested")->count == 2);
        kb_gguf_close(&f);
        free(b.p);
    }
}

/* ---- a small Llama ---------------------------------------------------------------------------------- */

enum { D = 32, HEADS = 4, KV = 2, HD = 8, FF = 64, VOCAB = 40, LAYERS = 2, MAX_T = 2 + 9 * LAYERS + 2 }; /* untied, and one extra */

typedef struct {
    tensor t[MAX_T];
    float *w[MAX_T]; /* each weight in HF layout */
    int nt;
} llama_file;

static void add(llama_file *L, const char *name, uint32_t type, int64_t rows, int64_t cols, int permute)
{
    const int i = L->nt++;
    const int64_t n = rows * (cols ? cols : 1);
    L->w[i] = malloc(sizeof(float) * (size_t)n);
    make_values(type, cols ? rows : 1, cols ? cols : rows, 1000 + (uint64_t)i, L->w[i]);
    add_weight(&L->t[i], name, type, rows, cols, L->w[i], permute, HD);
}

/* Weights in the order kb_llama_each_weight hands them out. */
static void llama_weights(llama_file *L, int tied)
{
    char n[64];
    memset(L, 0, sizeof *L);
    add(L, "token_embd.weight", KB_GGML_Q8_0, VOCAB, D, 0);
    for (int l = 0; l < LAYERS; ++l) {
#define W(leaf, type, rows, cols, perm)                      \
        snprintf(n, sizeof n, "blk.%d.%s.weight", l, leaf);  \
        add(L, n, type, rows, cols, perm)
        W("attn_norm", KB_GGML_F32, D, 0, 0);
        W("attn_q", KB_GGML_Q4_1, HEADS * HD, D, 1);
        W("attn_k", l ? KB_GGML_F16 : KB_GGML_Q8_0, KV * HD, D, 1);
        W("attn_v", KB_GGML_BF16, KV * HD, D, 0);
        W("attn_output", KB_GGML_Q4_1, D, HEADS * HD, 0);
        W("ffn_norm", KB_GGML_F32, D, 0, 0);
        W("ffn_gate", KB_GGML_Q8_0, FF, D, 0);
        W("ffn_up", KB_GGML_Q4_1, FF, D, 0);
        W("ffn_down", KB_GGML_F16, D, FF, 0);
#undef W
    }
    add(L, "output_norm.weight", KB_GGML_F32, D, 0, 0);
    if (!tied)
        add(L, "output.weight", KB_GGML_F32, VOCAB, D, 0);
}

static void llama_free(llama_file *L)
{
    for (int i = 0; i < L->nt; ++i) {
        free(L->w[i]);
        free(L->t[i].data.p);
    }
}

/* The hyperparameters, one key left out when skip names it. */
static buf llama_kvs(int *n, const char *skip)
{
    buf k = {0};
    *n = 0;
#define U32(key, v) if (!skip || strcmp(skip, key)) kv_u32(&k, n, key, v)
    if (!skip || strcmp(skip, "general.architecture"))
        kv_str(&k, n, "general.architecture", "llama");
    U32("llama.block_count", LAYERS);
    U32("llama.embedding_length", D);
    U32("llama.feed_forward_length", FF);
    U32("llama.attention.head_count", HEADS);
    U32("llama.attention.head_count_kv", KV);
    U32("llama.context_length", 64);
    U32("llama.vocab_size", VOCAB);
    U32("llama.rope.dimension_count", HD);
#undef U32
    kv_f32(&k, n, "llama.rope.freq_base", 100000.0f);
    if (!skip || strcmp(skip, "llama.attention.layer_norm_rms_epsilon"))
        kv_f32(&k, n, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    return k;
}

static buf llama_bytes(llama_file *L, const char *skip)
{
    int n;
    buf k = llama_kvs(&n, skip);
    buf b = assemble(3, &k, n, L->t, L->nt, 32);
    free(k.p);
    return b;
}

typedef struct {
    const llama_file *L;
    int k, mismatches;
} cmp;

static void compare(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    cmp *c = user;
    const int64_t n = rows * (cols ? cols : 1);
    (void)name;
    if (memcmp(data, c->L->w[c->k++], sizeof(float) * (size_t)n))
        c->mismatches++;
}

static void test_llama(void)
{
    for (int tied = 0; tied < 2; ++tied) {
        llama_file L;
        llama_weights(&L, tied);
        buf b = llama_bytes(&L, NULL);
        kb_gguf_file f;
        kb_llama_model m;
        char err[512];
        CHECK(open_bytes(&b, &f, err, sizeof err) == 0);
        const int rc = kb_llama_from_gguf(&m, &f, err, sizeof err);
        CHECK(rc == 0);
        if (rc == 0) {
            const kb_llama_config *c = &m.cfg;
            CHECK(c->d_model == D && c->heads == HEADS && c->kv_heads == KV && c->head_dim == HD && c->d_ff == FF);
            CHECK(c->layers == LAYERS && c->vocab == VOCAB && c->max_pos == 64 && c->tied == tied);
            CHECK(c->eps == (double)1e-5f && c->rope_theta == 100000.0);
            cmp k = {&L, 0, 0};
            kb_llama_each_weight(&m, compare, &k);
            CHECK(k.k == L.nt && k.mismatches == 0);
            CHECK(!tied || m.lm_head == m.embed);
            kb_llama_free(&m);
        } else
            fprintf(stderr, "%s\n", err);
        kb_gguf_close(&f);
        free(b.p);
        llama_free(&L);
    }
}

/* ---- damage ------------------------------------------------------------------------------------------ */

static void patch(buf *b, size_t at, uint64_t v, int n)
{
    for (int i = 0; i < n; ++i)
        b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static void test_header_damage(void)
{
    llama_file L;
    llama_weights(&L, 0);
    buf good = llama_bytes(&L, NULL), b = {0};
#define FRESH() (free(b.p), b = (buf){0}, put(&b, good.p, good.n))
    FRESH(), b.p[0] = 'X';
    refused(&b, "not a GGUF file", __LINE__);
    FRESH(), patch(&b, 4, 1, 4);
    refused(&b, "GGUF version 1", __LINE__);
    FRESH(), patch(&b, 4, 0x03000000, 4);
    refused(&b, "big-endian", __LINE__);
    FRESH(), patch(&b, 8, UINT64_MAX, 8);
    refused(&b, "cannot fit", __LINE__);
    FRESH(), patch(&b, 16, (uint64_t)1 << 62, 8);
    refused(&b, "cannot fit", __LINE__);
    FRESH(), patch(&b, 24, UINT64_MAX - 2, 8); /* the first key's length */
    refused(&b, "truncated", __LINE__);
    /* Every proper prefix of the file. */
    int all = 1;
    for (size_t n = 0; n < good.n; ++n) {
        kb_gguf_file f;
        char err[512];
        buf cut = {good.p, n, n};
        if (open_bytes(&cut, &f, err, sizeof err) == 0) {
            all = 0;
            kb_gguf_close(&f);
        } else
            all &= !strchr(err, '\n') && strlen(err) > 0;
    }
    CHECK(all);
    free(b.p);
    free(good.p);
    llama_free(&L);
#undef FRESH
}

/* One key/value of raw bytes (after a valid one) must be refused. */
static void bad_kv(void (*write)(buf *), const char *want, int line)
{
    buf k = {0};
    int n = 0;
    kv_u32(&k, &n, "ok", 1);
    write(&k);
    buf b = assemble(3, &k, n + 1, NULL, 0, 32);
    refused(&b, want, line);
    free(k.p);
    free(b.p);
}

static void kv_array_overflow(buf *k)
{
    put_str(k, "big");
    put_le(k, KB_GGUF_ARRAY, 4);
    put_le(k, KB_GGUF_U64, 4);
    put_le(k, (uint64_t)1 << 61, 8); /* x 8 bytes overflows 2^64 */
}

static void kv_strings_overflow(buf *k)
{
    put_str(k, "strs");
    put_le(k, KB_GGUF_ARRAY, 4);
    put_le(k, KB_GGUF_STRING, 4);
    put_le(k, UINT64_MAX, 8);
}

static void kv_unknown_type(buf *k)
{
    put_str(k, "odd");
    put_le(k, 13, 4);
    put_le(k, 0, 8);
}

static void kv_bad_bool(buf *k)
{
    put_str(k, "flag");
    put_le(k, KB_GGUF_BOOL, 4);
    put_le(k, 2, 1);
}

static void kv_duplicate(buf *k)
{
    put_str(k, "ok");
    put_le(k, KB_GGUF_U8, 4);
    put_le(k, 1, 1);
}

static void kv_empty_key(buf *k)
{
    put_str(k, "");
    put_le(k, KB_GGUF_U8, 4);
    put_le(k, 1, 1);
}

static void kv_deep(buf *k)
{
    put_str(k, "deep");
    put_le(k, KB_GGUF_ARRAY, 4);
    for (int i = 0; i < 12; ++i) {
        put_le(k, KB_GGUF_ARRAY, 4);
        put_le(k, 1, 8);
    }
    put_le(k, KB_GGUF_U8, 4);
    put_le(k, 0, 8);
}

static void kv_alignment(buf *k)
{
    put_str(k, "general.alignment");
    put_le(k, KB_GGUF_U32, 4);
    put_le(k, 48, 4);
}

static void test_kv_damage(void)
{
    bad_kv(kv_array_overflow, "runs past the end", __LINE__);
    bad_kv(kv_strings_overflow, "runs past the end", __LINE__);
    bad_kv(kv_unknown_type, "unknown value type 13", __LINE__);
    bad_kv(kv_bad_bool, "a bool of 2", __LINE__);
    bad_kv(kv_duplicate, "key 'ok' appears twice", __LINE__);
    bad_kv(kv_empty_key, "a key of 0 bytes", __LINE__);
    bad_kv(kv_deep, "nested over", __LINE__);
    bad_kv(kv_alignment, "power of two", __LINE__);
}

/* The Llama file with tensor i changed by fn must be refused (by the
 * reader, or by the loader when loader is set) with `want`. */
static void bad_tensor(int i, void (*fn)(tensor *), const char *skip_key, int loader, const char *want, int line)
{
    llama_file L;
    llama_weights(&L, 0);
    if (fn)
        fn(&L.t[i]);
    buf b = llama_bytes(&L, skip_key);
    if (!loader)
        refused(&b, want, line);
    else {
        kb_gguf_file f;
        kb_llama_model m;
        char err[512] = "";
        CHECK(open_bytes(&b, &f, err, sizeof err) == 0);
        const int rc = kb_llama_from_gguf(&m, &f, err, sizeof err);
        if (rc == 0 || !strstr(err, want) || strchr(err, '\n'))
            fprintf(stderr, "line %d: expected the loader to refuse with '%s', got rc %d: %s\n", line, want, rc, err);
        CHECK(rc != 0 && strstr(err, want) && !strchr(err, '\n') && m.storage == NULL && m.layers == NULL);
        kb_gguf_close(&f);
    }
    free(b.p);
    llama_free(&L);
}

static void misalign(tensor *t) { t->offset = 32 * 7 + 1, t->fixed_offset = 1; }
static void far_away(tensor *t) { t->offset = (uint64_t)1 << 40, t->fixed_offset = 1; }
static void overlap(tensor *t) { t->offset = 0, t->fixed_offset = 1; }
static void newline_name(tensor *t) { snprintf(t->name, sizeof t->name, "blk.0\nx"); }
static void rename_dup(tensor *t) { snprintf(t->name, sizeof t->name, "token_embd.weight"); }
static void unknown_type(tensor *t) { t->type = 99; }
static void zero_dim(tensor *t) { t->ne[1] = 0; }
static void five_dims(tensor *t) { t->ndim = 5; }
static void bad_block(tensor *t) { t->ne[0] = 33, t->ne[1] = 1; }
static void wrong_shape(tensor *t) { t->ne[1] /= 2; }
static void q4_0(tensor *t) { t->type = 2; } /* Q4_0: 18 bytes for the 32 values of a norm */
static void extra(tensor *t) { snprintf(t->name, sizeof t->name, "rope_freqs.weight"); }
static void missing(tensor *t) { snprintf(t->name, sizeof t->name, "blk.0.attn_q.bias"); }
static void nan_value(tensor *t) { memcpy(t->data.p + 4, &(float){NAN}, 4); }

static void test_tensor_damage(void)
{
    bad_tensor(2, misalign, NULL, 0, "is not aligned to 32", __LINE__);
    bad_tensor(2, far_away, NULL, 0, "runs past the end of the file", __LINE__);
    bad_tensor(3, overlap, NULL, 0, "overlap", __LINE__);
    bad_tensor(4, rename_dup, NULL, 0, "tensor 'token_embd.weight' appears twice", __LINE__);
    bad_tensor(4, newline_name, NULL, 0, "a tensor name before offset", __LINE__);
    bad_tensor(4, unknown_type, NULL, 0, "unknown ggml type 99", __LINE__);
    bad_tensor(4, zero_dim, NULL, 0, "dimension 1 of 0", __LINE__);
    bad_tensor(4, five_dims, NULL, 0, "5 dimensions", __LINE__);
    bad_tensor(2, bad_block, NULL, 0, "not a multiple of its block of 32", __LINE__);
    bad_tensor(2, wrong_shape, NULL, 1, "tensor 'blk.0.attn_q.weight' has ne [32, 16], expected [32, 32]", __LINE__);
    bad_tensor(1, q4_0, NULL, 1, "tensor 'blk.0.attn_norm.weight' is Q4_0; kbench converts", __LINE__);
    bad_tensor(1, extra, NULL, 1, "no tensor named 'blk.0.attn_norm.weight'", __LINE__);
    bad_tensor(2, missing, NULL, 1, "no tensor named 'blk.0.attn_q.weight'", __LINE__);
    bad_tensor(1, nan_value, NULL, 1, "'blk.0.attn_norm.weight' holds NaN or Inf", __LINE__);
    bad_tensor(0, NULL, "llama.block_count", 1, "no key 'llama.block_count'", __LINE__);
    bad_tensor(0, NULL, "general.architecture", 1, "not \"llama\"", __LINE__);
    bad_tensor(0, NULL, "llama.attention.layer_norm_rms_epsilon", 1, "layer_norm_rms_epsilon", __LINE__);
}

/* A tensor the model does not have, beside all it does. */
static void test_extra_tensor(void)
{
    llama_file L;
    llama_weights(&L, 0);
    add(&L, "rope_freqs.weight", KB_GGML_F32, 4, 0, 0);
    buf b = llama_bytes(&L, NULL);
    kb_gguf_file f;
    kb_llama_model m;
    char err[512] = "";
    CHECK(open_bytes(&b, &f, err, sizeof err) == 0);
    CHECK(kb_llama_from_gguf(&m, &f, err, sizeof err) != 0 &&
          strstr(err, "tensor 'rope_freqs.weight' is not part of an untied Llama model with 2 layers"));
    kb_gguf_close(&f);
    free(b.p);
    llama_free(&L);
}

int main(void)
{
    const int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    test_blocks();
    test_metadata();
    test_llama();
    test_header_damage();
    test_kv_damage();
    test_tensor_damage();
    test_extra_tensor();
    unlink(path);
    return CHECK_DONE();
}
