/* A whitespace tokenizer: text splits on spaces, tabs and newlines, and each
 * token maps to its id in a vocabulary, matched exactly (case-sensitive);
 * tokens not in it map to "<unk>", which every vocabulary must hold. */
#ifndef KBENCH_TOKENIZER_TOKENIZER_H
#define KBENCH_TOKENIZER_TOKENIZER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char *text;          /* every token, NUL-separated */
    char **tokens;       /* tokens[id] points into text */
    int size;
    int *slots;          /* hash table of ids, -1 where empty */
    size_t nslots;       /* a power of two */
    int unk_id;
} kb_vocab;

/* One token per line; its id is its 0-based line number.  0 on success;
 * else -1 and one line in err (missing file, empty vocabulary, an empty line,
 * a token with spaces, a duplicate, no "<unk>"). */
int kb_vocab_load(const char *path, kb_vocab *v, char *err, size_t errlen);

/* The built-in vocabulary: "<unk>" (id 0), "<pad>" (1), "<s>" (2), "</s>" (3)
 * and common lowercase English words.  0, or -1 when out of memory. */
int kb_vocab_default(kb_vocab *v);

int kb_vocab_size(const kb_vocab *v);

/* The token's id, or -1 when it is not in the vocabulary. */
int kb_vocab_id(const kb_vocab *v, const char *token);

/* Split text and store up to cap ids; returns the number of tokens in text,
 * which may exceed cap (call with cap 0 to size the array). */
int kb_encode(const kb_vocab *v, const char *text, int *ids, int cap);

void kb_vocab_free(kb_vocab *v);

#ifdef __cplusplus
}
#endif

#endif
