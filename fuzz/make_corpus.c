/* Seed corpora for the fuzz targets, written by kbench's own writers:
 * make_corpus DIR fills DIR/<target>/ with valid inputs that the fuzzer
 * then mutates. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/gguf.h"
#include "formats/npy.h"
#include "harness/harness.h"
#include "model/llama.h"
#include "model/transformer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/tokenizer.h"

static const char *root;

static void die(const char *what)
{
    fprintf(stderr, "make_corpus: %s\n", what);
    exit(1);
}

static const char *path_of(const char *target, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        die(strerror(errno));
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    return path;
}

static void put(const char *target, const char *name, const void *data, size_t len)
{
    FILE *f = fopen(path_of(target, name), "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die("cannot write a seed");
}

static void safetensors(void)
{
    const kb_tf_config configs[] = {{8, 2, 16, 1, 1, 1e-5f, 1}, {4, 1, 8, 2, 1, 1e-5f, 1}};
    char err[512], name[32];
    for (int i = 0; i < 2; ++i) {
        kb_tf_model m;
        snprintf(name, sizeof name, "tf%d.safetensors", i);
        if (kb_tf_init_random(&m, &configs[i], 1 + i) != 0 ||
            kb_tf_save(&m, path_of("safetensors", name), err, sizeof err) != 0)
            die(err);
        kb_tf_free(&m);
    }
}

/* Llama configs as kb_llama_save writes them (seeded, tied and untied), and
 * one in the shape Hugging Face's save_pretrained gives, transformers 5's
 * rope_parameters included. */
static void llama_config(void)
{
    const kb_llama_config c = {.d_model = 8, .d_ff = 12, .layers = 1, .heads = 2, .kv_heads = 1, .head_dim = 4,
                               .vocab = 5, .max_pos = 16, .eps = 1e-5, .rope_theta = 10000};
    char err[512], dir[4096];
    for (int tied = 0; tied < 2; ++tied) {
        kb_llama_config ct = c;
        ct.tied = tied;
        kb_llama_model m;
        snprintf(dir, sizeof dir, "%s/llama%d", root, tied);
        if (kb_llama_init_random(&m, &ct, 1) != 0 || kb_llama_save(&m, dir, KB_LLAMA_BF16, err, sizeof err) != 0)
            die(err);
        kb_llama_free(&m);
        char path[4200], name[32], text[4096];
        snprintf(path, sizeof path, "%s/config.json", dir);
        FILE *f = fopen(path, "r");
        const size_t n = f ? fread(text, 1, sizeof text, f) : 0;
        if (!f || fclose(f) != 0)
            die("cannot read a config.json back");
        snprintf(name, sizeof name, "saved%d.json", tied);
        put("llama_config", name, text, n);
        remove(path);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        remove(path);
        rmdir(dir);
    }
    static const char hf[] =
        "{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n  \"attention_bias\": false,\n"
        "  \"attention_dropout\": 0.0,\n  \"bos_token_id\": 1,\n  \"eos_token_id\": 2,\n  \"head_dim\": 64,\n"
        "  \"hidden_act\": \"silu\",\n  \"hidden_size\": 576,\n  \"initializer_range\": 0.041666666666666664,\n"
        "  \"intermediate_size\": 1536,\n  \"max_position_embeddings\": 8192,\n  \"mlp_bias\": false,\n"
        "  \"model_type\": \"llama\",\n  \"num_attention_heads\": 9,\n  \"num_hidden_layers\": 30,\n"
        "  \"num_key_value_heads\": 3,\n  \"pretraining_tp\": 1,\n  \"rms_norm_eps\": 1e-05,\n"
        "  \"rope_parameters\": {\"rope_theta\": 100000, \"rope_type\": \"default\"},\n"
        "  \"rope_scaling\": null,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"bfloat16\",\n"
        "  \"transformers_version\": \"4.42.3\",\n  \"use_cache\": true,\n  \"vocab_size\": 49152\n}\n";
    put("llama_config", "smollm2.json", hf, sizeof hf - 1);
    /* Llama 3.2-1B's, with its rope_scaling of rope_type "llama3". */
    static const char llama3[] =
        "{\n  \"hidden_size\": 2048,\n  \"intermediate_size\": 8192,\n  \"num_hidden_layers\": 16,\n"
        "  \"num_attention_heads\": 32,\n  \"num_key_value_heads\": 8,\n  \"head_dim\": 64,\n"
        "  \"vocab_size\": 128256,\n  \"max_position_embeddings\": 131072,\n  \"rms_norm_eps\": 1e-05,\n"
        "  \"rope_theta\": 500000.0,\n  \"rope_scaling\": {\n    \"factor\": 32.0,\n    \"high_freq_factor\": 4.0,\n"
        "    \"low_freq_factor\": 1.0,\n    \"original_max_position_embeddings\": 8192,\n"
        "    \"rope_type\": \"llama3\"\n  },\n  \"tie_word_embeddings\": true\n}\n";
    put("llama_config", "llama3.json", llama3, sizeof llama3 - 1);
    /* What the reader refuses, close to what it accepts: strings that are not
     * UTF-8 (a stray byte, an overlong '/', a surrogate, a cut-off euro sign),
     * a key twice in a nested object, and rope_theta given twice unalike. */
    static const char *const refused[][2] = {
        {"not_utf8.json", "{\"model_type\": \"lla\xffma\", \"x\": [\"\xc0\xaf\", {\"\xed\xa0\x80\": \"\xe2\x82\"}]}"},
        {"nested_twice.json", "{\"rope_parameters\": {\"rope_type\": \"default\", \"rope_type\": \"default\"}}"},
        {"theta_twice.json", "{\"hidden_size\": 8, \"intermediate_size\": 4, \"num_hidden_layers\": 1, "
                             "\"num_attention_heads\": 2, \"vocab_size\": 300, \"rope_theta\": 10000, "
                             "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 0}}"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; ++i)
        put("llama_config", refused[i][0], refused[i][1], strlen(refused[i][1]));
}

static void npy(void)
{
    const float data[24] = {-1.5f, 0, 1, 2.25f, 1e-30f, 3e38f, -0.0f, 7};
    const int64_t shapes[][3] = {{24}, {2, 3, 4}, {4, 0}};
    const int ndims[] = {1, 3, 2};
    char err[512], name[32];
    for (int i = 0; i < 3; ++i) {
        snprintf(name, sizeof name, "a%d.npy", i);
        if (kb_npy_write(path_of("npy", name), ndims[i], shapes[i], data, err, sizeof err) != 0)
            die(err);
    }
    if (kb_npy_write(path_of("npy", "scalar.npy"), 0, NULL, data, err, sizeof err) != 0)
        die(err);
}

/* Two rows of every op's first variant at its first family's first shape:
 * a run as the sweep writes it. */
static void csv(void)
{
    kb_result rows[64];
    int n = 0;
    char err[512];
    for (int i = 0; kb_ops[i] && n + 2 <= 64; ++i) {
        kb_shape *s;
        if (kb_parse_shape_list(kb_ops[i], kb_ops[i]->families[0].sizes, &s, err, sizeof err) < 1)
            die(err);
        for (int j = 0; j < 2 && kb_ops[i]->variants[j]; ++j, ++n) {
            kb_result *r = &rows[n];
            memset(r, 0, sizeof *r);
            *r = (kb_result){.op = kb_ops[i], .variant = &kb_ops[i]->variants[j][0], .shape = s[0],
                             .family = kb_ops[i]->families[0].name, .axis = kb_ops[i]->families[0].axis,
                             .flops = 1e9, .bytes = 1e8, .timed = 1, .speedup = 1.0 + j,
                             .time_ms = {.median = 0.5 + j, .min = 0.4, .max = 0.9 + j, .rel_stdev = 0.01, .n = 20},
                             .check = {.max_abs_err = 1e-6, .rel_l2_err = 1e-7, .worst_tol = 1e-4, .pass = 1},
                             .rows_checked = 8, .rows_total = 8, .status = j ? KB_PASS : KB_FAIL};
        }
        free(s);
    }
    const kb_meta meta[] = {{"gpu", "NVIDIA H100 80GB HBM3"}, {"date", "2026-11-23T12:00:00Z"}};
    if (kb_csv_write(path_of("csv", "run.csv"), meta, 2, rows, n, err, sizeof err) != 0 ||
        kb_csv_write(path_of("csv", "one.csv"), meta, 2, rows, 1, err, sizeof err) != 0)
        die(err);
}

static void shapes(void)
{
    char name[64];
    for (int i = 0; kb_ops[i]; ++i) {
        const char *lists[] = {kb_ops[i]->families[0].sizes, kb_ops[i]->test_sizes};
        for (int j = 0; j < 2; ++j) {
            snprintf(name, sizeof name, "%s-%d", kb_ops[i]->name, j);
            put("shape", name, lists[j], strlen(lists[j]));
        }
    }
}

/* The built-in vocabulary as a file, a NUL, then a sentence. */
static void tokenizer(void)
{
    kb_vocab v;
    if (kb_vocab_default(&v) != 0)
        die("out of memory");
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    for (int id = 0; id < kb_vocab_size(&v); ++id)
        fprintf(f, "%s\n", v.tokens[id]);
    fprintf(f, "%cthe cat sat on the mat\tzebra\n", 0);
    fclose(f);
    put("tokenizer", "default", text, len);
    free(text);
    kb_vocab_free(&v);
}

/* ---- GGUF seeds: one-layer Llamas (tied F32, untied F32, tied with Q4_1 and Q8_0) with a
 * SmolLM-style byte-level BPE tokenizer, each loading in full.  kbench has no GGUF writer, so
 * this is a compact one. */

static void le(FILE *f, uint64_t v, int n)
{
    for (int i = 0; i < n; ++i)
        fputc((int)(v >> 8 * i & 0xFF), f);
}

static void gstr(FILE *f, const char *s)
{
    le(f, strlen(s), 8);
    fputs(s, f);
}

/* A key, its value type and (bytes > 0) a number of that size; *n counts the keys. */
static void gkey(FILE *f, int *n, const char *key, uint32_t type, uint64_t value, int bytes)
{
    gstr(f, key);
    le(f, type, 4);
    le(f, value, bytes);
    ++*n;
}

static void gu32(FILE *f, int *n, const char *key, uint32_t v) { gkey(f, n, key, KB_GGUF_U32, v, 4); }

static void gf32(FILE *f, int *n, const char *key, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    gkey(f, n, key, KB_GGUF_F32, u, 4);
}

static void gtext(FILE *f, int *n, const char *key, const char *v)
{
    gkey(f, n, key, KB_GGUF_STRING, 0, 0);
    gstr(f, v);
}

/* An array's key, element type and count (the elements follow). */
static void garray(FILE *f, int *n, const char *key, uint32_t elem, uint64_t count)
{
    gkey(f, n, key, KB_GGUF_ARRAY, elem, 4);
    le(f, count, 8);
}

static unsigned gnext(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 24;
}

/* bytes of F32, Q8_0 or Q4_1 data: small values from s. */
static void gdata(FILE *f, uint32_t type, uint64_t bytes, uint32_t *s)
{
    const int q8 = type == KB_GGML_Q8_0, q4 = type == KB_GGML_Q4_1, per = q8 ? 34 : q4 ? 20 : 4;
    for (uint64_t b = 0; b < bytes / per; ++b) {
        if (q8 || q4)
            le(f, kb_f32_to_f16(q8 ? 1 / 256.0f : 1 / 64.0f), 2);
        if (q4)
            le(f, kb_f32_to_f16(-0.125f), 2);
        for (int j = 0; j < per - (q8 ? 2 : q4 ? 4 : per); ++j)
            fputc((int)gnext(s), f);
        if (!q8 && !q4) {
            const float v = (float)gnext(s) / 512 - 0.25f;
            uint32_t u;
            memcpy(&u, &v, 4);
            le(f, u, 4);
        }
    }
}

/* Tokens: three specials (bos 1, eos 2), the 256 of GPT-2's byte alphabet,
 * then what the merges make ("Hello", "Ġworld").  not_utf8 spells the
 * first special with an overlong '/', which the loader refuses. */
static void gtokenizer(FILE *f, int *n, int not_utf8)
{
    const char *const specials[] = {not_utf8 ? "<|end\xc0\xaf|>" : "<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    static const char *const merges[] = {"H e", "l l", "He ll", "Hell o", "\xc4\xa0 w", "o r", "\xc4\xa0w or", "l d",
                                         "\xc4\xa0wor ld"};
    const int nm = sizeof merges / sizeof *merges, nt = 3 + 256 + nm;
    gtext(f, n, "tokenizer.ggml.model", "gpt2");
    gtext(f, n, "tokenizer.ggml.pre", "smollm");
    garray(f, n, "tokenizer.ggml.tokens", KB_GGUF_STRING, (uint64_t)nt);
    for (int i = 0; i < 3; ++i)
        gstr(f, specials[i]);
    for (unsigned b = 0, next = 256; b < 256; ++b) {
        const unsigned cp = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174 ? b : next++;
        const char s[3] = {(char)(cp < 128 ? cp : 0xC0 | cp >> 6), (char)(cp < 128 ? 0 : 0x80 | (cp & 0x3F)), 0};
        gstr(f, s);
    }
    for (int i = 0; i < nm; ++i) {
        char s[32];
        const char *space = strchr(merges[i], ' ');
        snprintf(s, sizeof s, "%.*s%s", (int)(space - merges[i]), merges[i], space + 1);
        gstr(f, s);
    }
    garray(f, n, "tokenizer.ggml.merges", KB_GGUF_STRING, (uint64_t)nm);
    for (int i = 0; i < nm; ++i)
        gstr(f, merges[i]);
    garray(f, n, "tokenizer.ggml.token_type", KB_GGUF_I32, (uint64_t)nt);
    for (int i = 0; i < nt; ++i)
        le(f, i < 3 ? KB_TOKEN_CONTROL : KB_TOKEN_NORMAL, 4);
    gu32(f, n, "tokenizer.ggml.bos_token_id", 1);
    gu32(f, n, "tokenizer.ggml.eos_token_id", 2);
}

/* One GGUF v3 file: F32 weights, but Q4_1 attn_output and Q8_0 ffn_down
 * when quant; head_dim hd > 0 given as key_length (else d / heads); a
 * token that is not UTF-8 when not_utf8. */
static void gguf_seed(const char *name, int d, int ff, int heads, int kv, int hd, int untied, int quant,
                      int not_utf8)
{
    const int64_t V = 3 + 256 + 9, h = hd ? hd : d / heads, qd = heads * h, kvd = kv * h;
    const struct {
        const char *name;
        int64_t ne0, ne1; /* ne1 0: a vector */
        uint32_t quant;
    } w[] = {{"token_embd.weight", d, V, 0},         {"blk.0.attn_norm.weight", d, 0, 0},
             {"blk.0.attn_q.weight", d, qd, 0},      {"blk.0.attn_k.weight", d, kvd, 0},
             {"blk.0.attn_v.weight", d, kvd, 0},     {"blk.0.attn_output.weight", qd, d, KB_GGML_Q4_1},
             {"blk.0.ffn_norm.weight", d, 0, 0},     {"blk.0.ffn_gate.weight", d, ff, 0},
             {"blk.0.ffn_up.weight", d, ff, 0},      {"blk.0.ffn_down.weight", ff, d, KB_GGML_Q8_0},
             {"output_norm.weight", d, 0, 0},        {"output.weight", d, V, 0}};
    const int nt = untied ? 12 : 11;
    char *kvs = NULL;
    size_t kv_len = 0;
    int n = 0;
    FILE *k = open_memstream(&kvs, &kv_len);
    if (!k)
        die("out of memory");
    gtext(k, &n, "general.architecture", "llama");
    gu32(k, &n, "llama.block_count", 1);
    gu32(k, &n, "llama.context_length", 64);
    gu32(k, &n, "llama.embedding_length", (uint32_t)d);
    gu32(k, &n, "llama.feed_forward_length", (uint32_t)ff);
    gu32(k, &n, "llama.attention.head_count", (uint32_t)heads);
    gu32(k, &n, "llama.attention.head_count_kv", (uint32_t)kv);
    gf32(k, &n, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (hd) {
        gu32(k, &n, "llama.attention.key_length", (uint32_t)hd);
        gu32(k, &n, "llama.attention.value_length", (uint32_t)hd);
        gu32(k, &n, "llama.rope.dimension_count", (uint32_t)hd);
    }
    if (untied) {
        gf32(k, &n, "llama.rope.freq_base", 100000);
        gu32(k, &n, "llama.vocab_size", (uint32_t)V);
    }
    gtokenizer(k, &n, not_utf8);
    fclose(k);
    FILE *f = fopen(path_of("gguf", name), "wb");
    if (!f)
        die("cannot write a seed");
    fputs("GGUF", f);
    le(f, 3, 4);
    le(f, (uint64_t)nt, 8);
    le(f, (uint64_t)n, 8);
    fwrite(kvs, 1, kv_len, f);
    free(kvs);
    uint64_t bytes[12], off = 0;
    for (int i = 0; i < nt; ++i) {
        const uint32_t type = quant ? w[i].quant : KB_GGML_F32;
        const uint64_t rows = w[i].ne1 ? (uint64_t)w[i].ne1 : 1;
        bytes[i] = rows * (uint64_t)(type == KB_GGML_Q8_0 ? w[i].ne0 / 32 * 34
                                     : type == KB_GGML_Q4_1 ? w[i].ne0 / 32 * 20 : w[i].ne0 * 4);
        gstr(f, w[i].name);
        le(f, w[i].ne1 ? 2 : 1, 4);
        le(f, (uint64_t)w[i].ne0, 8);
        if (w[i].ne1)
            le(f, (uint64_t)w[i].ne1, 8);
        le(f, type, 4);
        le(f, off, 8);
        off += (bytes[i] + 31) / 32 * 32;
    }
    uint32_t s = 1;
    for (int i = 0; i < nt; ++i) {
        while (ftell(f) % 32)
            fputc(0, f);
        gdata(f, quant ? w[i].quant : KB_GGML_F32, bytes[i], &s);
    }
    if (fclose(f) != 0)
        die("cannot write a seed");
}

static void gguf(void)
{
    gguf_seed("tied.gguf", 8, 12, 2, 1, 0, 0, 0, 0);
    gguf_seed("untied.gguf", 8, 16, 2, 2, 0, 1, 0, 0);
    gguf_seed("quant.gguf", 8, 32, 2, 1, 16, 0, 1, 0);
    gguf_seed("not_utf8_token.gguf", 8, 12, 2, 1, 0, 0, 0, 1);
}

/* Command lines as the README and tests give them, NUL-separated. */
#define LINE(text) {text, sizeof text - 1}
static void cli(void)
{
    static const struct {
        const char *text;
        size_t len;
    } lines[] = {
        LINE("run\0--op\0matmul\0--sizes\0" "128x128x128,127x129x65\0--dtype\0f32\0--check"),
        LINE("run\0--op\0attention\0--sizes\0" "2x4x64x64x64c\0--variant\0flash_*\0--max-time\0" "0.5"),
        LINE("run\0--quick\0--csv\0out.csv\0--device\0" "0\0--hot"),
        LINE("run\0--test-sizes\0--op\0softmax,layernorm\0--out-dir\0res"),
        LINE("pe\0--seq-len\0" "16\0--d-model\0" "8\0--paper"),
        LINE("model\0seq2seq\0--batch\0" "2\0--src-len\0" "5\0--tgt-len\0" "4\0--d-model\0" "16\0--heads\0"
             "2\0--d-ff\0" "24\0--layers\0" "2\0--cpu-only\0--seed\0" "7"),
        LINE("model\0decoder\0--src\0the cat\0--tgt\0a dog\0--gemm\0fp32,3xtf32\0--check-seqs\0" "1"),
        LINE("model\0generate\0--cpu-only\0--d-model\0" "64\0--heads\0" "4\0--kv-heads\0" "2\0--prompt-ids\0"
             "1,2,3\0--tokens\0" "8\0--seed\0" "3\0--save\0d\0--save-dtype\0bf16"),
        LINE("list"),
        LINE("ceilings\0--device\0" "1"),
    };
    char name[16];
    for (size_t i = 0; i < sizeof lines / sizeof *lines; ++i) {
        snprintf(name, sizeof name, "line%zu", i);
        put("cli", name, lines[i].text, lines[i].len);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: make_corpus DIR");
    root = argv[1];
    if (mkdir(root, 0777) != 0 && errno != EEXIST)
        die(strerror(errno));
    safetensors();
    llama_config();
    npy();
    csv();
    shapes();
    tokenizer();
    cli();
    gguf();
    return 0;
}
