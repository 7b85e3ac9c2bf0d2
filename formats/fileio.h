/* Small file helpers shared by the file-format readers and writers, the
 * tokenizers and the model code that opens files. */
#ifndef KBENCH_FORMATS_FILEIO_H
#define KBENCH_FORMATS_FILEIO_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* One line into err; returns -1, so that a failure can return it. */
__attribute__((format(printf, 3, 4))) static inline int kb_report(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The size of a regular file in bytes, leaving it positioned at the start:
 * NULL, or why not (a directory, a pipe or a device has no size to trust). */
static inline const char *kb_file_size(FILE *fp, uint64_t *size)
{
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode))
        return "not a regular file";
    if (fseek(fp, 0, SEEK_END) != 0)
        return "cannot determine the file size";
    long end = ftell(fp);
    if (end < 0 || fseek(fp, 0, SEEK_SET) != 0)
        return "cannot determine the file size";
    *size = (uint64_t)end;
    return NULL;
}

#endif
