/* fdio: see fdio.h. */
#include "base/fdio.h"

#include <errno.h>
#include <stdlib.h>
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

int
fdio_read_all(int fd, size_t max, char **out, size_t *out_len)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *grown;
	ssize_t n;
	int err;

	if (buf == NULL)
		return -1;
	for (;;) {
		if (cap - len < 2) {
			if ((grown = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				errno = ENOMEM;
				return -1;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			break;
		if (n < 0 || (len += (size_t)n) > max) {
			err = n < 0 ? errno : EFBIG;
			free(buf);
			errno = err;
			return -1;
		}
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}
