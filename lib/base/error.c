/* error: see error.h. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const err_text[ERR_COUNT] = {
	[ERR_OK] = "success",
	[ERR_NOMEM] = "out of memory",
	[ERR_IO] = "input/output error",
	[ERR_INVALID] = "invalid argument",
	[ERR_RANGE] = "out of range",
	[ERR_FORMAT] = "bad format",
	[ERR_TRUNCATED] = "truncated",
	[ERR_NOTFOUND] = "not found",
	[ERR_EXISTS] = "already exists",
	[ERR_UNSUPPORTED] = "not supported",
	[ERR_PERM] = "permission denied",
	[ERR_CHILD] = "child process failed",
	[ERR_INTERRUPTED] = "interrupted",
	[ERR_INTERNAL] = "internal error",
};

const char *
err_str(int code)
{
	if (code < 0)
		code = -code;
	if (code >= ERR_COUNT)
		return "unknown error";
	return err_text[code];
}

void
error_clear(struct error *e)
{
	e->code = ERR_OK;
	e->msg[0] = '\0';
}

static void
error_vset(struct error *e, int code, const char *fmt, va_list ap)
{
	e->code = code;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
}

int
error_set(struct error *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e != NULL) {
		va_start(ap, fmt);
		error_vset(e, code, fmt, ap);
		va_end(ap);
	}
	return -code;
}

int
error_set_errno(struct error *e, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t len;

	if (e == NULL)
		return -ERR_IO;
	va_start(ap, fmt);
	error_vset(e, ERR_IO, fmt, ap);
	va_end(ap);
	len = strlen(e->msg);
	snprintf(e->msg + len, sizeof(e->msg) - len, ": %s", strerror(errnum));
	return -ERR_IO;
}

int
error_prefix(struct error *e, const char *fmt, ...)
{
	char old[ERROR_MSG_MAX];
	va_list ap;
	int n;

	memcpy(old, e->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	/* Cut the old message, not the new prefix, when both do not fit. */
	if (n >= 0 && (size_t)n + 3 <= sizeof(e->msg)) {
		size_t len = (size_t)n, keep = strlen(old);

		if (keep > sizeof(e->msg) - len - 3)
			keep = sizeof(e->msg) - len - 3;
		memcpy(e->msg + len, ": ", 2);
		memcpy(e->msg + len + 2, old, keep);
		e->msg[len + 2 + keep] = '\0';
	}
	return -e->code;
}
