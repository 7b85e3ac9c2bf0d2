/* What every fuzz target shares: the input as a file that the parsers open
 * by path, and the input as a NUL-separated argument vector.
 *
 * The file is a memfd, reached through /proc/self/fd (or a symbolic link
 * to that), so each input costs a write and no disk I/O; the parsers see an
 * ordinary regular file.  A FIFO beside the link must be refused at once.  What the
 * parsers print is dropped by libFuzzer's -close_fd_mask=3 (tools/fuzz.sh),
 * which keeps the sanitizers' reports. */
#ifndef KBENCH_FUZZ_H
#define KBENCH_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int fd;
    char path[64];
    char link[96], fifo[96]; /* see fuzz_file_put */
} fuzz_file;

static char fuzz_dir[64];

static inline void fuzz_remove_dir(void)
{
    char p[96];
    snprintf(p, sizeof p, "%s/link", fuzz_dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/fifo", fuzz_dir);
    unlink(p);
    rmdir(fuzz_dir);
}

/* The other names a user could give an input, made once in a folder of
 * the process's own: a symbolic link to the memfd, and a FIFO that nothing
 * writes. */
static inline void fuzz_names_make(fuzz_file *f)
{
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/kbench-fuzz.XXXXXX");
    if (!mkdtemp(fuzz_dir)) {
        perror("mkdtemp");
        abort();
    }
    atexit(fuzz_remove_dir);
    snprintf(f->link, sizeof f->link, "%s/link", fuzz_dir);
    snprintf(f->fifo, sizeof f->fifo, "%s/fifo", fuzz_dir);
    if (symlink(f->path, f->link) != 0 || mkfifo(f->fifo, 0600) != 0) {
        perror("fuzz link or FIFO");
        abort();
    }
}

/* A memfd holding exactly data[0..size); the same file each call.  An input
 * of odd size is reached through a symbolic link to it, so that half the
 * inputs test the readers through a link (the same input, the same name). */
static inline const char *fuzz_file_put(fuzz_file *f, const uint8_t *data, size_t size)
{
    if (f->fd <= 0) {
        f->fd = memfd_create("kbench-fuzz", 0);
        if (f->fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
        fuzz_names_make(f);
    }
    if (ftruncate(f->fd, 0) != 0 || (size && pwrite(f->fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz input file");
        abort();
    }
    return size % 2 ? f->link : f->path;
}

/* The input as a NUL-terminated string (a copy; free it). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A broken promise: say which (seen when a crash file is replayed, since
 * fuzzing runs with the target's output closed), then abort for libFuzzer. */
static inline void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* Every refusal is one line. */
static inline void fuzz_one_line(const char *err)
{
    if (strchr(err, '\n'))
        fuzz_fail("an error spans lines", err);
}

/* What a reader gave for fuzz_file.fifo: a refusal at once (a reader that
 * waited for a writer would hang, which libFuzzer's -timeout reports). */
static inline void fuzz_refused_fifo(int rc, const char *err)
{
    if (rc == 0 || !strstr(err, "not a regular file"))
        fuzz_fail("a FIFO was not refused as not a regular file", rc ? err : NULL);
}

#define FUZZ_MAX_ARGS 64

/* Split the input at NUL bytes into argv[first..]; argv[0..first) are the
 * caller's.  Returns argc.  *text owns the strings (free it). */
static inline int fuzz_args(const uint8_t *data, size_t size, char **argv, int first, char **text)
{
    int argc = first;
    char *all = *text = fuzz_string(data, size), *arg = all;
    for (size_t i = 0; i <= size && argc < FUZZ_MAX_ARGS; ++i)
        if (all[i] == '\0') {
            argv[argc++] = arg;
            arg = all + i + 1;
        }
    argv[argc] = NULL;
    return argc;
}

#endif
