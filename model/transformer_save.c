/* Writing a model's weights as .safetensors under torch.nn.Transformer's
 * names: what kb_tf_load reads back, and what PyTorch's
 * safetensors.torch.load_file reads. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "model/transformer.h"

typedef struct {
    FILE *out;        /* the header text on the first pass, the file's data on the second */
    uint64_t bytes;   /* data section so far */
    int first, bad;
} st_out;

static uint64_t count(int ndim, const int64_t *shape)
{
    uint64_t n = 1;
    for (int i = 0; i < ndim; ++i)
        n *= (uint64_t)shape[i];
    return n;
}

/* One tensor's header entry.  Weight names are kbench's own, plain ASCII,
 * so they need no JSON escapes. */
static void header_entry(const char *name, int ndim, const int64_t *shape, const float *data, void *user)
{
    st_out *w = user;
    (void)data;
    const uint64_t n = count(ndim, shape);
    fprintf(w->out, "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [", w->first ? "" : ", ", name);
    for (int i = 0; i < ndim; ++i)
        fprintf(w->out, i ? ", %lld" : "%lld", (long long)shape[i]);
    fprintf(w->out, "], \"data_offsets\": [%llu, %llu]}", (unsigned long long)w->bytes,
            (unsigned long long)(w->bytes + 4 * n));
    w->bytes += 4 * n;
    w->first = 0;
}

static void data_entry(const char *name, int ndim, const int64_t *shape, const float *data, void *user)
{
    st_out *w = user;
    (void)name;
    const uint64_t n = count(ndim, shape);
    w->bad |= fwrite(data, sizeof *data, n, w->out) != n;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes as the
 * Python writer does.  NULL when out of memory. */
static char *header(const kb_tf_model *m, size_t *len)
{
    char *text = NULL;
    st_out w = {open_memstream(&text, len), 0, 1, 0};
    if (!w.out)
        return NULL;
    fputc('{', w.out);
    kb_tf_each_weight(m, header_entry, &w);
    fputc('}', w.out);
    while (ftell(w.out) % 8)
        fputc(' ', w.out);
    return fclose(w.out) == 0 ? text : (free(text), NULL);
}

static int write_file(const kb_tf_model *m, const char *tmp, const char *head, size_t len)
{
    st_out w = {fopen(tmp, "wb"), 0, 1, 0};
    if (!w.out)
        return -1;
    unsigned char le[8];
    for (int i = 0; i < 8; ++i)
        le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    w.bad = fwrite(le, 1, 8, w.out) != 8 || fwrite(head, 1, len, w.out) != len;
    kb_tf_each_weight(m, data_entry, &w);
    return (fclose(w.out) != 0 || w.bad) ? -1 : 0;
}

int kb_tf_save(const kb_tf_model *m, const char *path, char *err, size_t errlen)
{
    char target[PATH_MAX], tmp[PATH_MAX + 32];
    if (kb_output_target(path, target, sizeof target, err, errlen) != 0)
        return -1;
    size_t len;
    char *head = header(m, &len);
    int rc = 0;
    if (!head) {
        snprintf(err, errlen, "%s: out of memory for the header", path);
        rc = -1;
    } else {
        /* A temporary file renamed into place: never a half-written file. */
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
        if (write_file(m, tmp, head, len) != 0 || rename(tmp, target) != 0) {
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
            unlink(tmp);
            rc = -1;
        }
    }
    free(head);
    return rc;
}
