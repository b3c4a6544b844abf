/*
 * zstdfile: see zstdfile.h.  Both directions are fopencookie streams:
 * the cookie holds the zstd context, its buffer and the file descriptor.
 */
#include "fmt/zstdfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "base/fdio.h"

struct zin {
	int fd;
	ZSTD_DCtx *dc;
	ZSTD_inBuffer in;
	void *buf;
	size_t cap;
	int eof;
	size_t need;		/* ZSTD_decompressStream's last: 0 a frame ended */
};

static ssize_t
zin_read(void *cookie, char *out, size_t size)
{
	struct zin *z = cookie;
	ZSTD_outBuffer ob = { out, size, 0 };

	while (ob.pos == 0) {
		size_t rc;

		if (z->in.pos == z->in.size) {
			ssize_t n;

			if (z->eof && z->need != 0) {
				errno = EBADMSG;	/* cut inside a frame */
				return -1;
			}
			if (z->eof)
				return 0;
			do
				n = read(z->fd, z->buf, z->cap);
			while (n < 0 && errno == EINTR);
			if (n < 0)
				return -1;
			z->in.src = z->buf;
			z->in.size = (size_t)n;
			z->in.pos = 0;
			if (n == 0) {
				z->eof = 1;
				continue;
			}
		}
		rc = ZSTD_decompressStream(z->dc, &ob, &z->in);
		if (ZSTD_isError(rc)) {
			errno = EBADMSG;
			return -1;
		}
		z->need = rc;
	}
	return (ssize_t)ob.pos;
}

static int
zin_close(void *cookie)
{
	struct zin *z = cookie;
	int rc = close(z->fd);

	ZSTD_freeDCtx(z->dc);
	free(z->buf);
	free(z);
	return rc;
}

FILE *
zstdfile_open_read(const char *path, struct error *e)
{
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		int err = errno;

		if (err == ENOENT)
			error_set(e, ERR_NOTFOUND, "%s: no such file", path);
		else
			error_set_errno(e, err, "%s", path);
		return NULL;
	}
	return zstdfile_open_read_fd(fd, path, e);
}

FILE *
zstdfile_open_read_fd(int fd, const char *path, struct error *e)
{
	static const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	cookie_io_functions_t io = { .read = zin_read, .close = zin_close };
	uint8_t head[4];
	struct zin *z;
	ssize_t n;
	FILE *f;

	n = pread(fd, head, sizeof(head), 0);
	if (n != (ssize_t)sizeof(head) || memcmp(head, magic, 4) != 0) {
		/* plain: read from the start, through the same descriptor */
		if ((f = fdopen(fd, "r")) == NULL) {
			error_set_errno(e, errno, "%s", path);
			close(fd);
		}
		return f;
	}
	if ((z = calloc(1, sizeof(*z))) == NULL ||
	    (z->buf = malloc(ZSTD_DStreamInSize())) == NULL ||
	    (z->dc = ZSTD_createDCtx()) == NULL) {
		if (z != NULL)
			free(z->buf);
		free(z);
		close(fd);
		error_set(e, ERR_NOMEM, "%s", path);
		return NULL;
	}
	z->fd = fd;
	z->cap = ZSTD_DStreamInSize();
	z->need = 1;		/* nothing read yet: an empty frame is cut */
	if ((f = fopencookie(z, "r", io)) == NULL) {
		error_set(e, ERR_NOMEM, "%s", path);
		zin_close(z);
	}
	return f;
}

struct zout {
	int fd;
	ZSTD_CCtx *cc;
	void *buf;
	size_t cap;
	int failed;		/* errno of the first failure, 0 none */
};

/* Compresses in (or ends the frame, op ZSTD_e_end) and writes it out. */
static int
zout_push(struct zout *z, const void *src, size_t n, ZSTD_EndDirective op)
{
	ZSTD_inBuffer in = { src, n, 0 };
	size_t left;

	do {
		ZSTD_outBuffer ob = { z->buf, z->cap, 0 };

		left = ZSTD_compressStream2(z->cc, &ob, &in, op);
		if (ZSTD_isError(left)) {
			z->failed = EIO;
			return -1;
		}
		if (ob.pos > 0 && fdio_write_full(z->fd, z->buf, ob.pos) < 0) {
			z->failed = errno ? errno : EIO;
			return -1;
		}
	} while (op == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

static ssize_t
zout_write(void *cookie, const char *p, size_t n)
{
	struct zout *z = cookie;

	if (z->failed || zout_push(z, p, n, ZSTD_e_continue) < 0) {
		errno = z->failed;
		return -1;
	}
	return (ssize_t)n;
}

static int
zout_close(void *cookie)
{
	struct zout *z = cookie;
	int rc = 0;

	if (z->failed || zout_push(z, "", 0, ZSTD_e_end) < 0)
		rc = -1;
	if (close(z->fd) != 0 && rc == 0) {
		z->failed = errno;
		rc = -1;
	}
	if (rc < 0)
		errno = z->failed ? z->failed : EIO;
	ZSTD_freeCCtx(z->cc);
	free(z->buf);
	free(z);
	return rc;
}

FILE *
zstdfile_open_write(const char *path, int level, struct error *e)
{
	cookie_io_functions_t io = { .write = zout_write,
	    .close = zout_close };
	struct zout *z;
	FILE *f;
	int fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) < 0) {
		error_set_errno(e, errno, "%s", path);
		return NULL;
	}
	if ((z = calloc(1, sizeof(*z))) == NULL ||
	    (z->buf = malloc(ZSTD_CStreamOutSize())) == NULL ||
	    (z->cc = ZSTD_createCCtx()) == NULL ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cc, ZSTD_c_compressionLevel,
	    level))) {
		if (z != NULL) {
			ZSTD_freeCCtx(z->cc);
			free(z->buf);
		}
		free(z);
		close(fd);
		error_set(e, ERR_NOMEM, "%s", path);
		return NULL;
	}
	/* Only advice: a library without threads compresses inline. */
	(void)ZSTD_CCtx_setParameter(z->cc, ZSTD_c_nbWorkers, 1);
	/*
	 * A content checksum in every frame: without it a flipped bit can
	 * decompress to other JSON that parses, and a reader answers from
	 * it; with it the read fails (EBADMSG) at the frame's end.
	 */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cc, ZSTD_c_checksumFlag,
	    1))) {
		ZSTD_freeCCtx(z->cc);
		free(z->buf);
		free(z);
		close(fd);
		error_set(e, ERR_UNSUPPORTED, "%s: zstd without checksums",
		    path);
		return NULL;
	}
	z->fd = fd;
	z->cap = ZSTD_CStreamOutSize();
	if ((f = fopencookie(z, "w", io)) == NULL) {
		error_set(e, ERR_NOMEM, "%s", path);
		zout_close(z);
	}
	return f;
}
