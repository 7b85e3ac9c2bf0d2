/* libFuzzer target: the safetensors reader and the torch.nn.Transformer
 * loader on top of it.  Any input must give 0 or -1 with a one-line error:
 * no crash, no leak, no read outside the file, no undefined behaviour. */
#include <string.h>
#include "formats/safetensors.h"
#include "fuzz/fuzz.h"
#include "model/transformer.h"

static void read_tensors(const kb_st_file *f)
{
    char err[512];
    for (int i = 0; i < f->count; ++i) {
        const float *data;
        const kb_st_tensor *t = &f->tensors[i];
        if (kb_st_get(f, t->name, t->ndim, t->shape, &data, err, sizeof err) == 0) {
            /* Touch the first and last float: the range must lie in the file. */
            uint64_t n = (t->end - t->begin) / sizeof(float);
            volatile float sink = n ? data[0] + data[n - 1] : 0;
            (void)sink;
        } else
            fuzz_one_line(err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    const char *path = fuzz_file_put(&file, data, size);
    char err[512];
    kb_st_file f;
    if (kb_st_open(path, &f, err, sizeof err) == 0) {
        read_tensors(&f);
        kb_st_close(&f);
    } else
        fuzz_one_line(err);
    fuzz_refused_fifo(kb_st_open(file.fifo, &f, err, sizeof err), err);
    /* The loader sizes a model from the file: the heads must divide d_model,
     * so try the counts a small model could have. */
    for (int heads = 1; heads <= 2; ++heads) {
        kb_tf_model m;
        if (kb_tf_load(&m, path, heads, 1, err, sizeof err) == 0)
            kb_tf_free(&m);
        else
            fuzz_one_line(err);
    }
    return 0;
}
