/* libFuzzer target: the GGUF reader, the Llama loader and the BPE
 * tokenizer on top of it.  Any input must give 0 or -1 with a one-line
 * error: no crash, no leak, no read outside the file, no undefined
 * behaviour.  What opens is walked further: every tensor that can be
 * dequantized is, in full, and a tokenizer that loads encodes and decodes
 * a fixed text, which must come back whole. */
#include <string.h>
#include "formats/gguf.h"
#include "fuzz/fuzz.h"
#include "model/llama_gguf.h"
#include "tokenizer/bpe.h"

static void dequantize_all(const kb_gguf_file *f)
{
    float row[4096];
    for (int64_t i = 0; i < f->n_tensors; ++i) {
        const kb_gguf_tensor *t = &f->tensors[i];
        const int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
        if (!kb_gguf_can_dequantize(t->type) || t->ne[0] > 4096)
            continue;
        for (int64_t r = 0; r < rows && r < 4096; ++r)
            kb_gguf_dequantize(t, r, 1, row);
    }
}

static void tokenize(const kb_gguf_file *f)
{
    static const char text[] = "Hello, world! It's 2024 <|im_start|>caf\xc3\xa9\n\t  x";
    kb_bpe t;
    char err[512];
    if (kb_bpe_from_gguf(&t, f, err, sizeof err) != 0) {
        fuzz_one_line(err);
        return;
    }
    int *ids;
    size_t n, len;
    char *back;
    if (kb_bpe_encode(&t, text, sizeof text - 1, &ids, &n) == 0) {
        if (kb_bpe_decode(&t, ids, n, &back, &len) != 0)
            fuzz_fail("decoding the ids just encoded failed", NULL);
        int whole = 1; /* every byte of text has a token in the vocabulary: it must come back */
        for (size_t i = 0; i < sizeof text - 1; ++i)
            whole &= t.byte_id[(unsigned char)text[i]] >= 0;
        if (whole && (len != sizeof text - 1 || memcmp(back, text, len)))
            fuzz_fail("decode(encode(text)) is not the text", back);
        free(back);
        free(ids);
    }
    kb_bpe_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    const char *path = fuzz_file_put(&file, data, size);
    char err[512];
    kb_gguf_file f;
    fuzz_refused_fifo(kb_gguf_open(file.fifo, &f, err, sizeof err), err);
    if (kb_gguf_open(path, &f, err, sizeof err) != 0) {
        fuzz_one_line(err);
        return 0;
    }
    dequantize_all(&f);
    kb_llama_model m;
    if (kb_llama_from_gguf(&m, &f, err, sizeof err) == 0)
        kb_llama_free(&m);
    else
        fuzz_one_line(err);
    tokenize(&f);
    kb_gguf_close(&f);
    return 0;
}
