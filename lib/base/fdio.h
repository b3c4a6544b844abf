/*
 * fdio: writing a whole buffer to a file descriptor, the one loop every
 * writer of the project uses: it goes on after short writes and EINTR, and
 * says how far it got and why it stopped (a write of 0 bytes is taken as
 * a full device, ENOSPC).
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

#endif
