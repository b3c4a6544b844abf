/* report: see report.h. */
#include "tool/report.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

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
