/* libFuzzer target: the CSV readers, that of `kbench compare` and `kbench
 * report` and that of --append.  The input is compared with itself, which
 * reads it twice and matches every row, made into a report, and read as a
 * file to append to. */
#include <string.h>
#include "fuzz/fuzz.h"
#include "harness/harness.h"
#include "harness/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fuzz_file file;
    const char *path = fuzz_file_put(&file, data, size);
    char *argv[] = {"compare", (char *)path, (char *)path, NULL}, err[512];
    int rc = kb_cmd_compare(3, argv);
    if (rc < 0 || rc > KB_EXIT_USAGE)
        fuzz_fail("compare exited with neither 0, 1 nor 2", NULL);
    char *report[] = {"report", (char *)path, NULL};
    rc = kb_cmd_report(2, report);
    if (rc < 0 || rc > KB_EXIT_USAGE)
        fuzz_fail("report exited with neither 0, 1 nor 2", NULL);
    char *text = kb_csv_read_for_append(path, err, sizeof err);
    if (text)
        free(text);
    else
        fuzz_one_line(err);
    return 0;
}
