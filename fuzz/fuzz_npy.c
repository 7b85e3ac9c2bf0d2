/* libFuzzer target: .npy read, then write and read back.  Any input must be
 * refused with one line or read; an array read must survive the round trip
 * bit for bit, shape and data. */
#include <string.h>
#include "formats/npy.h"
#include "fuzz/fuzz.h"

static char out_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char dir[] = "/tmp/kbench-fuzz-npy-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    snprintf(out_path, sizeof out_path, "%s/out.npy", dir);
    return 0;
}

static void round_trip(const kb_npy *a)
{
    char err[512];
    kb_npy b;
    if (kb_npy_write(out_path, a->ndim, a->shape, a->data, err, sizeof err) != 0 ||
        kb_npy_read(out_path, &b, err, sizeof err) != 0)
        fuzz_fail("an array read does not write and read back", err);
    if (b.ndim != a->ndim || b.count != a->count ||
        memcmp(b.shape, a->shape, (size_t)a->ndim * sizeof *a->shape) != 0 ||
        (a->count && memcmp(b.data, a->data, (size_t)a->count * sizeof *a->data) != 0))
        fuzz_fail("the round trip changed the array", NULL);
    kb_npy_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    const char *path = fuzz_file_put(&file, data, size);
    char err[512];
    kb_npy a;
    if (kb_npy_read(path, &a, err, sizeof err) == 0) {
        round_trip(&a);
        kb_npy_free(&a);
    } else
        fuzz_one_line(err);
    fuzz_refused_fifo(kb_npy_read(file.fifo, &a, err, sizeof err), err);
    return 0;
}
