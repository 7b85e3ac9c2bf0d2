/* What every fuzz target shares: the input as a file that the parsers open
 * by path, and the input as a NUL-separated argument vector.
 *
 * The file is a memfd, reached through /proc/self/fd, so each input costs a
 * write and no disk I/O; the parsers see an ordinary regular file.  What the
 * parsers print is dropped by libFuzzer's -close_fd_mask=3 (tools/fuzz.sh),
 * which keeps the sanitizers' reports. */
#ifndef KBENCH_FUZZ_H
#define KBENCH_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    int fd;
    char path[64];
} fuzz_file;

/* A memfd holding exactly data[0..size); the same file each call. */
static inline const char *fuzz_file_put(fuzz_file *f, const uint8_t *data, size_t size)
{
    if (f->fd <= 0) {
        f->fd = memfd_create("kbench-fuzz", 0);
        if (f->fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
    }
    if (ftruncate(f->fd, 0) != 0 || (size && pwrite(f->fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz input file");
        abort();
    }
    return f->path;
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
