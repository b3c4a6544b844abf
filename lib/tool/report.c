/* report: see report.h. */
#include "tool/report.h"
#include "base/fdio.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t
kept_write(void *cookie, const char *buf, size_t size)
{
	struct report_kept_stdout *k = cookie;
	size_t off;

	if (k->err != 0)
		return 0;
	off = fdio_write_all(STDOUT_FILENO, buf, size, &k->err);
	if (k->err != 0)
		errno = k->err;
	return (ssize_t)off;	/* stdio must not see -1 */
}

/* The last close says the first error again, however long ago it was. */
static int
kept_close(void *cookie)
{
	struct report_kept_stdout *k = cookie;
	int err = k->err;

	if (close(STDOUT_FILENO) < 0 && err == 0)
		err = errno;
	errno = err;
	return err != 0 ? -1 : 0;
}

int
report_stdout_keep_errno(struct report_kept_stdout *k)
{
	static const cookie_io_functions_t io = { .write = kept_write,
	    .close = kept_close };
	FILE *f;

	k->err = 0;
	if ((f = fopencookie(k, "w", io)) == NULL)
		return -1;
	if (setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF,
	    BUFSIZ) != 0) {
		fclose(f);
		return -1;
	}
	/* glibc's stdout is a plain variable, documented as settable. */
	stdout = f;
	return 0;
}

static void
report_prefix(const char *tool, const char *object)
{
	fprintf(stderr, "%s: ", tool);
	if (object != NULL && object[0] != '\0')
		fprintf(stderr, "%s: ", object);
}

void
report(const char *tool, const char *object, const char *hint,
    const char *fmt, ...)
{
	va_list ap;

	report_prefix(tool, object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (hint != NULL && hint[0] != '\0')
		fprintf(stderr, ": %s", hint);
	fputc('\n', stderr);
}

void
report_error(const char *tool, const char *object, const struct error *e,
    const char *hint)
{
	const char *what = e->msg[0] != '\0' ? e->msg : err_str(e->code);

	report(tool, object, hint, "%s", what);
}

void
report_warning(const char *tool, const char *object, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", tool);
	if (object != NULL && object[0] != '\0')
		fprintf(stderr, "%s: ", object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
report_close_stdout(const char *tool, int status)
{
	int failed;

	errno = 0;
	failed = fflush(stdout) != 0 || ferror(stdout);
	if (fclose(stdout) != 0)
		failed = 1;
	if (failed) {
		report(tool, "stdout", NULL, "write failed: %s",
		    errno != 0 ? strerror(errno) : "unknown error");
		return EXIT_FAIL;
	}
	return status;
}
