/* The file helpers shared by every reader and writer of files: the formats,
 * the tokenizers, the model code and the CSV and markdown writers. */
#ifndef KBENCH_FORMATS_FILEIO_H
#define KBENCH_FORMATS_FILEIO_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One line into err; returns -1, so that a failure can return it. */
__attribute__((format(printf, 3, 4))) static inline int kb_report(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The most a reader that maps its file (GGUF, safetensors) takes: only
 * the pages it touches cost memory, and no model kbench runs is near it. */
#define KB_MAPPED_MAX_BYTES ((uint64_t)1 << 40)

/* Every input file is opened here, so that none can block or mislead: a
 * FIFO, a device or a folder is refused at once, and so is a file over max
 * bytes.  name is how messages begin (the quoted path, or "cannot read
 * PATH"): "NAME: not a regular file".  The descriptor and *size, or -1 with
 * one line in err. */
int kb_input_open(const char *path, const char *name, uint64_t max, uint64_t *size, char *err, size_t errlen);

/* The whole file as kb_input_open finds it, NUL-terminated (*len bytes
 * before the NUL); NULL with one line in err. */
char *kb_input_read(const char *path, const char *name, uint64_t max, size_t *len, char *err, size_t errlen);

/* The whole file mapped read-only, for readers that check a header before
 * touching the data: a huge file with a bad header costs nothing.  *map is
 * NULL for an empty file.  0, or -1 with one line in err. */
int kb_input_map(const char *path, const char *name, uint64_t max, unsigned char **map, uint64_t *size, char *err,
                 size_t errlen);
void kb_input_unmap(unsigned char *map, uint64_t size);

/* What a writer that replaces path (a temporary file beside it, renamed
 * over it) must write and rename onto, into target (len bytes): path, or
 * for a symbolic link the file it names, since replacing the link would
 * leave its target as it was.  Refused, with "cannot write PATH: why": a
 * link to no file, anything but a regular file, and a file of several hard
 * links, which a rename would split (writing in place instead could leave
 * a half-written file). */
int kb_output_target(const char *path, char *target, size_t len, char *err, size_t errlen);

#endif
