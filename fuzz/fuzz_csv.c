/* libFuzzer target: the CSV readers, that of `kbench compare` and `kbench
 * report` and that of --append, and `kbench derive`.  The input is compared
 * with itself, which reads it twice and matches every row, made into a
 * report, read as a file to append to, and derived in a file of its own:
 * what derive accepts, a second derive must leave byte for byte.  A FIFO
 * for --append is refused at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fuzz/fuzz.h"
#include "harness/harness.h"
#include "commands/report.h"

/* The whole file, or NULL. */
static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)*len + 1)) && fread(text, 1, (size_t)*len, f) != (size_t)*len) {
        free(text);
        text = NULL;
    }
    if (f)
        fclose(f);
    return text;
}

/* derive rewrites its file, so it gets a real one (the memfd path cannot be
 * renamed over); an input of odd size is derived through a symbolic link to
 * it, which must stay a link. */
static void derive_twice(const uint8_t *data, size_t size)
{
    char path[64], link[80];
    snprintf(path, sizeof path, "/tmp/fuzz_derive.%ld.csv", (long)getpid());
    snprintf(link, sizeof link, "%s.link", path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        fuzz_fail("cannot write the derive input", path);
    unlink(link);
    if (size % 2 && symlink(path, link) != 0)
        fuzz_fail("cannot link the derive input", link);
    char *argv[] = {"derive", size % 2 ? link : path, NULL};
    int rc = kb_cmd_derive(2, argv);
    if (rc != 0 && rc != KB_EXIT_USAGE)
        fuzz_fail("derive exited with neither 0 nor 2", NULL);
    if (rc == 0) {
        long n1 = 0, n2 = 0;
        char *once = slurp(path, &n1);
        if (kb_cmd_derive(2, argv) != 0)
            fuzz_fail("derive refused its own output", NULL);
        char *twice = slurp(path, &n2);
        if (!once || !twice || n1 != n2 || memcmp(once, twice, (size_t)n1))
            fuzz_fail("a second derive changed the file", NULL);
        free(once);
        free(twice);
    }
    struct stat st;
    if (size % 2 && (lstat(link, &st) != 0 || !S_ISLNK(st.st_mode)))
        fuzz_fail("derive replaced its symbolic link with a file", NULL);
    unlink(link);
    unlink(path);
}

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
    fuzz_refused_fifo(kb_csv_read_for_append(file.fifo, err, sizeof err) ? 0 : -1, err);
    derive_twice(data, size);
    return 0;
}
