/* libFuzzer target: the shape parser of every op.  A shape it accepts must
 * print back to text that parses to the same shape, and have a byte count. */
#include <string.h>
#include "fuzz/fuzz.h"
#include "harness/harness.h"

static void check_round_trip(const kb_op *op, const kb_shape *s)
{
    char text[256], err[512];
    kb_shape again;
    int64_t bytes;
    kb_format_shape(op, s, text, sizeof text);
    if (kb_parse_shape(op, text, &again, err, sizeof err) != 0 || memcmp(&again, s, sizeof *s) != 0)
        fuzz_fail("a shape does not print back to itself", text);
    const kb_dtype types[] = {KB_F32, KB_BF16};
    for (size_t t = 0; t < sizeof types / sizeof *types; ++t)
        if (kb_shape_bytes(op, s, types[t], &bytes, err, sizeof err) == 0 && bytes <= 0)
            fuzz_fail("a shape has no bytes", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size), err[512];
    for (int i = 0; kb_ops[i]; ++i) {
        kb_shape *shapes;
        int n = kb_parse_shape_list(kb_ops[i], text, &shapes, err, sizeof err);
        if (n < 0) {
            fuzz_one_line(err);
            continue;
        }
        for (int j = 0; j < n; ++j)
            check_round_trip(kb_ops[i], &shapes[j]);
        free(shapes);
    }
    free(text);
    return 0;
}
