/* Seed corpora for the fuzz targets, written by kbench's own writers:
 * make_corpus DIR fills DIR/<target>/ with valid inputs that the fuzzer
 * then mutates. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "harness/harness.h"
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

/* Two rows of every op's first variant at its first quick shape: a run as
 * the sweep writes it. */
static void csv(void)
{
    kb_result rows[64];
    int n = 0;
    char err[512];
    for (int i = 0; kb_ops[i] && n + 2 <= 64; ++i) {
        kb_shape *s;
        if (kb_parse_shape_list(kb_ops[i], kb_ops[i]->quick_sizes, &s, err, sizeof err) < 1)
            die(err);
        for (int j = 0; j < 2 && kb_ops[i]->variants[j]; ++j, ++n) {
            kb_result *r = &rows[n];
            memset(r, 0, sizeof *r);
            *r = (kb_result){.op = kb_ops[i], .variant = kb_ops[i]->variants[j], .shape = s[0],
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
        const char *lists[] = {kb_ops[i]->default_sizes, kb_ops[i]->test_sizes};
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
    npy();
    csv();
    shapes();
    tokenizer();
    cli();
    return 0;
}
