/* libFuzzer target: the vocabulary reader and the tokenizer.  The input up
 * to its first NUL is a vocabulary file, the rest a text to encode with it
 * and with the built-in vocabulary.  Every id must lie in the vocabulary. */
#include <string.h>
#include "fuzz/fuzz.h"
#include "tokenizer/tokenizer.h"

static void encode(const kb_vocab *v, const char *text)
{
    int n = kb_encode(v, text, NULL, 0);
    if (n < 0)
        fuzz_fail("a negative token count", NULL);
    int *ids = malloc((size_t)n * sizeof *ids + 1);
    if (kb_encode(v, text, ids, n) != n)
        fuzz_fail("two encodings of one text differ in length", NULL);
    for (int i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= kb_vocab_size(v))
            fuzz_fail("an id outside the vocabulary", NULL);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    const uint8_t *nul = memchr(data, 0, size);
    const size_t vocab_len = nul ? (size_t)(nul - data) : size;
    const char *path = fuzz_file_put(&file, data, vocab_len);
    char *text = nul ? fuzz_string(nul + 1, size - vocab_len - 1) : fuzz_string(data, 0), err[512];
    kb_vocab v;
    if (kb_vocab_load(path, &v, err, sizeof err) == 0) {
        encode(&v, text);
        kb_vocab_free(&v);
    } else
        fuzz_one_line(err);
    fuzz_refused_fifo(kb_vocab_load(file.fifo, &v, err, sizeof err), err);
    if (kb_vocab_default(&v) != 0)
        fuzz_fail("no built-in vocabulary", NULL);
    encode(&v, text);
    kb_vocab_free(&v);
    free(text);
    return 0;
}
