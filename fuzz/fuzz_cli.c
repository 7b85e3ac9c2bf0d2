/* libFuzzer target: the command line as a whole.  The input's NUL-separated
 * strings are kbench's arguments.  `run` is parsed and expanded into its
 * rows, `model` and `model generate` are parsed, as far as each goes
 * without a GPU or a file; any refusal must be one line.  An input that
 * names --kernel is left out: that flag runs nvcc on a file
 * (tests/test_own_kernel.sh covers it). */
#include <string.h>
#include "fuzz/fuzz.h"
#include "harness/harness.h"
#include "commands/model.h"
#include "commands/generate.h"

static void parse_run(int argc, char **argv)
{
    kb_options o;
    kb_job *jobs;
    char err[512];
    if (kb_parse_args(argc, argv, &o, err, sizeof err) != 0) {
        fuzz_one_line(err);
        return;
    }
    if (o.cmd != KB_CMD_RUN)
        return;
    int n = kb_expand_sweep(&o, &jobs, err, sizeof err);
    if (n < 0)
        fuzz_one_line(err);
    else
        free(jobs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[FUZZ_MAX_ARGS + 1] = {"kbench"}, *text, err[512];
    int argc = fuzz_args(data, size, argv, 1, &text);
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--kernel")) {
            free(text);
            return 0;
        }
    if (argc > 2 && !strcmp(argv[1], "model") && !strcmp(argv[2], "generate")) {
        kb_generate_opts g;
        if (kb_generate_parse(argc - 2, argv + 2, &g, err, sizeof err) != 0)
            fuzz_one_line(err);
        else
            kb_generate_opts_free(&g);
    } else if (argc > 1 && !strcmp(argv[1], "model")) {
        kb_model_opts o;
        if (kb_model_parse(argc - 1, argv + 1, &o, err, sizeof err) != 0)
            fuzz_one_line(err);
    } else
        parse_run(argc, argv);
    free(text);
    return 0;
}
