/* Small file helpers shared by the model's readers. */
#ifndef KBENCH_MODEL_FILEIO_H
#define KBENCH_MODEL_FILEIO_H

#include <stdint.h>
#include <stdio.h>

/* The file's size in bytes, leaving it positioned at the start. */
static inline int kb_file_size(FILE *fp, uint64_t *size)
{
    if (fseek(fp, 0, SEEK_END) != 0)
        return -1;
    long end = ftell(fp);
    if (end < 0 || fseek(fp, 0, SEEK_SET) != 0)
        return -1;
    *size = (uint64_t)end;
    return 0;
}

#endif
