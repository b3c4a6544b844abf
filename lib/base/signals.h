/*
 * signals: every signal disposition a ptkit tool sets, in one place.
 *
 * Owns the calls that change what a signal does to the process: catching
 * the stop signals (SIGINT and SIGTERM mean "take the snapshot now" to a
 * recorder), ignoring SIGPIPE (a reader that leaves is EPIPE, not death),
 * catching the signals that must not leave scratch directories behind
 * (cleanup.c), and giving a signal back its default action from inside a
 * handler.  The handlers stay with their owners, which know what a signal
 * means to them.  Each result is checked; failures fill a struct error
 * ("sigaction SIGINT: Invalid argument") for the tool to report.
 */
#ifndef PTKIT_SIGNALS_H
#define PTKIT_SIGNALS_H

#include <stddef.h>

#include "base/error.h"

/*
 * Catches SIGINT and SIGTERM with handler, blocking nothing more while it
 * runs; with restart non-zero (SA_RESTART) a system call the signal
 * interrupts resumes instead of failing with EINTR.  Returns 0, or fills
 * e and returns -ERR_IO.
 */
int signals_catch_stop(void (*handler)(int), int restart, struct error *e)
    PTKIT_MUST_CHECK;

/* Ignores SIGPIPE.  Returns 0, or fills e and returns -ERR_IO. */
int signals_ignore_pipe(struct error *e) PTKIT_MUST_CHECK;

/*
 * Catches each of the n signals in sigs with handler, all signals blocked
 * while it runs and system calls it interrupts resumed (SA_RESTART),
 * except those the process already ignores: that was the choice of
 * whoever started it.  Returns 0, or fills e and returns
 * -ERR_IO.
 */
int signals_catch_unless_ignored(const int *sigs, size_t n,
    void (*handler)(int), struct error *e) PTKIT_MUST_CHECK;

/*
 * From sig's handler: restores sig's default action and raises it, so the
 * exit status still says which signal ended the process.  When the
 * default action cannot be restored, ends the process with 128 + sig,
 * the status a shell gives a process killed by sig.  Async-signal-safe.
 */
void signals_reraise(int sig);

#endif
