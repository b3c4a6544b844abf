/*
 * fdio: writing a whole buffer to a file descriptor, the one loop every
 * writer of the project uses: it goes on after short writes and EINTR, and
 * says how far it got and why it stopped (a write of 0 bytes is taken as
 * a full device, ENOSPC); and reading a descriptor to its end into memory,
 * the one loop every reader of a whole stream uses.
 */
#ifndef PTKIT_FDIO_H
#define PTKIT_FDIO_H

#include <stddef.h>

/*
 * Writes len bytes of buf to fd.  Returns the bytes written: len, or
 * fewer when a write failed, with *err its errno (0 on success).
 */
size_t fdio_write_all(int fd, const void *buf, size_t len, int *err);

/* The same, as 0, or -1 with errno set to why. */
int fdio_write_full(int fd, const void *buf, size_t len);

/*
 * Reads fd to its end into a buffer of the caller's (*out, free it),
 * NUL-terminated after its *out_len bytes.  Returns 0, or -1 with errno:
 * ENOMEM, EFBIG when there are more than max bytes, or read's.
 */
int fdio_read_all(int fd, size_t max, char **out, size_t *out_len);

#endif
