/* libFuzzer target: config.json of a Hugging Face Llama checkpoint, through
 * the flat JSON reader and the config rules, as text and as a file.  Any
 * input must give 0 or -1 with a one-line error; an accepted config must
 * pass kb_llama_config_check and have a weight count, and read the same
 * from the file as from the text. */
#include <string.h>
#include "formats/json_flat.h"
#include "fuzz/fuzz.h"
#include "model/llama.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    char err[512];
    kb_json_object o;
    if (kb_json_parse_flat((const char *)data, size, "fuzz", &o, err, sizeof err) == 0) {
        for (int i = 0; i < o.count; ++i)
            if (!o.members[i].key || o.members[i].end > size || o.members[i].begin > o.members[i].end)
                fuzz_fail("a member's span lies outside the text", o.members[i].key);
        kb_json_free(&o);
    } else
        fuzz_one_line(err);
    kb_llama_config a, b;
    const int rc = kb_llama_config_parse((const char *)data, size, "fuzz", &a, err, sizeof err);
    if (rc != 0)
        fuzz_one_line(err);
    else if (kb_llama_config_check(&a, "fuzz", err, sizeof err) != 0 || kb_llama_weight_count(&a) < 0)
        fuzz_fail("an accepted config fails its own check", err);
    const int frc = kb_llama_config_read(fuzz_file_put(&file, data, size), &b, err, sizeof err);
    if (frc != 0)
        fuzz_one_line(err);
    if ((frc == 0) != (rc == 0) ||
        (rc == 0 && (a.d_model != b.d_model || a.layers != b.layers || a.vocab != b.vocab || a.tied != b.tied)))
        fuzz_fail("the file and the text read differently", NULL);
    fuzz_refused_fifo(kb_llama_config_read(file.fifo, &b, err, sizeof err), err);
    return 0;
}
