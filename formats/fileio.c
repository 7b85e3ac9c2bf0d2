/* Opening the files kbench reads and replacing the files it writes: one way
 * for every reader and writer (formats/fileio.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "harness/harness.h"

/* A cap as messages show it: MiB below a GiB, GiB from there. */
static const char *cap_text(uint64_t max, char *buf, size_t len)
{
    if (max < (uint64_t)1 << 30)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(max >> 20));
    else
        snprintf(buf, len, "%llu GiB", (unsigned long long)(max >> 30));
    return buf;
}

int kb_input_open(const char *path, const char *name, uint64_t max, uint64_t *size, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below, as are devices and folders, whose size is nothing to trust. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return kb_report(err, errlen, "%s: cannot open: %s", name, strerror(errno));
    struct stat st;
    char cap[32];
    int flags;
    if (fstat(fd, &st) != 0)
        kb_report(err, errlen, "%s: cannot open: %s", name, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        kb_report(err, errlen, "%s: not a regular file", name);
    else if ((uint64_t)st.st_size > max)
        kb_report(err, errlen, "%s: larger than %s, the most kbench reads", name, cap_text(max, cap, sizeof cap));
    else if ((flags = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1)
        kb_report(err, errlen, "%s: cannot open: %s", name, strerror(errno));
    else {
        *size = (uint64_t)st.st_size;
        return fd;
    }
    close(fd);
    return -1;
}

/* Up to size bytes; the count read (short only at the end of the file), or -1. */
static ssize_t read_all(int fd, char *buf, size_t size)
{
    size_t len = 0;
    while (len < size) {
        ssize_t got = read(fd, buf + len, size - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -1;
        if (got == 0)
            break;
        len += (size_t)got;
    }
    return (ssize_t)len;
}

char *kb_input_read(const char *path, const char *name, uint64_t max, size_t *len, char *err, size_t errlen)
{
    uint64_t size;
    int fd = kb_input_open(path, name, max, &size, err, errlen);
    if (fd < 0)
        return NULL;
    /* The size fstat gave, never more: a file that grows while it is read
     * must not grow the buffer. */
    char *text = malloc((size_t)size + 1);
    ssize_t got = text ? read_all(fd, text, (size_t)size) : -1;
    if (!text)
        kb_report(err, errlen, "%s: out of memory", name);
    else if (got < 0)
        kb_report(err, errlen, "%s: read error: %s", name, strerror(errno));
    close(fd);
    if (got < 0) {
        free(text);
        return NULL;
    }
    text[got] = '\0';
    *len = (size_t)got;
    return text;
}

int kb_input_map(const char *path, const char *name, uint64_t max, unsigned char **map, uint64_t *size, char *err,
                 size_t errlen)
{
    *map = NULL;
    int fd = kb_input_open(path, name, max, size, err, errlen);
    if (fd < 0)
        return -1;
    int rc = 0;
    /* An empty file has nothing to map: the reader's own size check refuses it. */
    if (*size && (*map = mmap(NULL, (size_t)*size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        *map = NULL;
        rc = kb_report(err, errlen, "%s: cannot map: %s", name, strerror(errno));
    }
    close(fd);
    return rc;
}

void kb_input_unmap(unsigned char *map, uint64_t size)
{
    if (map)
        munmap(map, (size_t)size);
}

static int cannot_write(const char *path, const char *why, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    return kb_report(err, errlen, "cannot write %s: %s", kb_quote(path, q, sizeof q), why);
}

int kb_output_target(const char *path, char *target, size_t len, char *err, size_t errlen)
{
    struct stat st;
    char *real = NULL;
    const int exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return cannot_write(path, strerror(errno), err, errlen);
    if (exists && S_ISLNK(st.st_mode) && (!(real = realpath(path, NULL)) || stat(real, &st) != 0)) {
        const int e = errno;
        free(real);
        return cannot_write(path, e == ENOENT ? "a symbolic link to no file" : strerror(e), err, errlen);
    }
    const char *to = real ? real : path;
    char why[96];
    int rc = 0;
    if (strlen(to) >= len)
        rc = cannot_write(path, strerror(ENAMETOOLONG), err, errlen);
    else if (exists && !S_ISREG(st.st_mode))
        rc = cannot_write(path, "not a regular file", err, errlen);
    else if (exists && st.st_nlink > 1) {
        snprintf(why, sizeof why, "it has %ju hard links, which replacing it would split", (uintmax_t)st.st_nlink);
        rc = cannot_write(path, why, err, errlen);
    } else
        strcpy(target, to);
    free(real);
    return rc;
}
