/* fdio: see fdio.h. */
#include "base/fdio.h"

#include <errno.h>
#include <unistd.h>

size_t
fdio_write_all(int fd, const void *buf, size_t len, int *err)
{
	const char *p = buf;
	size_t off = 0;
	ssize_t n;

	*err = 0;
	while (off < len) {
		n = write(fd, p + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = n < 0 ? errno : ENOSPC;
			break;
		}
		off += (size_t)n;
	}
	return off;
}

int
fdio_write_full(int fd, const void *buf, size_t len)
{
	int err;

	if (fdio_write_all(fd, buf, len, &err) == len)
		return 0;
	errno = err;
	return -1;
}
