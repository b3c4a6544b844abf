/*
 * error: the one error vocabulary of lib/.
 *
 * Owns the error codes every lib/ function returns (as negative values),
 * their text, and struct error, which carries a code plus a sentence of
 * context ("AUXTRACE record 7 truncated at byte 4096") from the place that
 * knew it up to the tool that reports it.  lib/ never prints and never
 * exits; tools turn a struct error into a message with report_error().
 */
#ifndef PTKIT_ERROR_H
#define PTKIT_ERROR_H

#include <stddef.h>

/*
 * Marks a function whose int result says whether it failed (a negative
 * error code, or -1 after a report): a caller that drops the result has
 * lost an error, and the compiler says so.  Predicates and counts are not
 * marked.
 */
#define PTKIT_MUST_CHECK __attribute__((warn_unused_result))

/*
 * Drops such a result on purpose, where nothing better can be done with
 * it: tidying up on a path that already failed, or in a signal handler.
 * Each use says why; a (void) cast would not quieten the compiler.
 */
#define PTKIT_DROP(expr) do { if ((expr) < 0) { } } while (0)

enum err_code {
	ERR_OK = 0,
	ERR_NOMEM,		/* allocation failed */
	ERR_IO,			/* a system call failed; errno said why */
	ERR_INVALID,		/* the caller passed something unusable */
	ERR_RANGE,		/* a number outside its allowed range */
	ERR_FORMAT,		/* input is not of the expected format */
	ERR_TRUNCATED,		/* input ends before it should */
	ERR_NOTFOUND,		/* a file, key or symbol does not exist */
	ERR_EXISTS,		/* something is already there */
	ERR_UNSUPPORTED,	/* valid, but not something we handle */
	ERR_PERM,		/* not allowed */
	ERR_CHILD,		/* a child process failed */
	ERR_INTERRUPTED,	/* stopped by a signal or a cancel request */
	ERR_INTERNAL,		/* an invariant of ours broke: a bug */
	ERR_COUNT
};

/* Text of a code; accepts the code or its negation.  Never NULL. */
const char *err_str(int code);

#define ERROR_MSG_MAX 512

/*
 * A code and the context that goes with it.  msg is always a NUL-terminated
 * string (empty when nothing was said).
 */
struct error {
	int code;
	char msg[ERROR_MSG_MAX];
};

/* Clears e to ERR_OK with an empty message. */
void error_clear(struct error *e);

/*
 * Sets e to code with a printf-style message and returns -code, so that
 * library code can write `return error_set(e, ERR_FORMAT, "...", ...)`.
 * e may be NULL, in which case only the return value carries the code.
 */
int error_set(struct error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like error_set, with ": strerror(errnum)" appended; code is ERR_IO. */
int error_set_errno(struct error *e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Puts "prefix: " in front of e's message, so an outer layer can add where
 * it was ("perf.data: " + "AUXTRACE record 7 ...").  Returns -e->code.
 */
int error_prefix(struct error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
