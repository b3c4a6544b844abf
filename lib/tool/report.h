/*
 * report: how tools tell people what went wrong.
 *
 * Owns the one message shape of every tool, on stderr:
 *     tool: object: what went wrong[: hint]
 * lib/ modules never call this (they fill a struct error); tools do, from
 * main and their own helpers.  Writing to stderr is the only side effect.
 */
#ifndef PTKIT_REPORT_H
#define PTKIT_REPORT_H

#include <stdio.h>

#include "base/error.h"

/* Exit statuses shared by every tool (see each tool's EXIT STATUS). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
};

/*
 * Prints "tool: object: what[: hint]".  object and hint may be NULL.
 * what is a printf format.
 */
void report(const char *tool, const char *object, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Prints "tool: object: <e->msg or err_str(e->code)>[: hint]". */
void report_error(const char *tool, const char *object,
    const struct error *e, const char *hint);

/* Prints "tool: warning: object: what". */
void report_warning(const char *tool, const char *object,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Flushes and closes stdout, reporting a write error (full disk, EIO) as
 * "tool: stdout: ...".  Returns EXIT_OK or EXIT_FAIL, so main can end with
 * `return report_close_stdout(tool, status)`: a failed write can never exit 0.
 */
int report_close_stdout(const char *tool, int status);

/*
 * Makes stdout a stream over fd 1 that keeps the errno of the first write
 * that failed, and says it again at the final close: a tool whose writers
 * only look at ferror(stdout) at the end (stdio keeps no errno) then
 * reports "write failed: No space left on device", never "unknown
 * error".  fileno(stdout) is -1 afterwards: use STDOUT_FILENO.  Call it
 * first thing in main; returns 0, or -1 (stdout left as it was).
 */
struct report_kept_stdout {
	int err;		/* of the first write that failed */
};

/*
 * k holds the stream's state for as long as stdout lives, to the exit's
 * final flush: the caller's static (main.c's, the one place for process
 * state), so that no path out of main leaves it behind.
 */
int report_stdout_keep_errno(struct report_kept_stdout *k);

#endif
