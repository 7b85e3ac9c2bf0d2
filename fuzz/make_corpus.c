/* Seed corpora for the fuzz targets, written by kbench's own writers:
 * make_corpus DIR fills DIR/<target>/ with valid inputs that the fuzzer
 * then mutates. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/harness.h"
#include "model/llama.h"
#include "model/npy.h"
#include "model/tokenizer.h"
#include "model/transformer.h"

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
            *r = (kb_result){.op = kb_ops[i], .variant = kb_ops[i]->variants[j], .shape = s[0],
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
    return 0;
}
