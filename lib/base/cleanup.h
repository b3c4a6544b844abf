/*
 * cleanup: removing scratch directories on every exit path.
 *
 * Owns the process's list of directories to remove at exit and on SIGINT,
 * SIGTERM, SIGHUP and SIGPIPE.  A signal handler can only reach global
 * state, so this module holds the one global list in ptkit (see
 * DECISIONS.md); it is small and touched only through these functions.
 *
 * On a signal the handler removes the registered trees with
 * async-signal-safe calls only (openat, getdents64, unlinkat), then
 * re-raises the signal with its default action so the exit status still
 * says which signal ended the tool (the dispositions are set through
 * signals.h).  PTKIT_KEEP_WASTE=1 keeps everything.
 */
#ifndef PTKIT_CLEANUP_H
#define PTKIT_CLEANUP_H

#include "base/error.h"

#define CLEANUP_MAX_DIRS 16
#define CLEANUP_PATH_MAX 4096

/*
 * Installs the signal handlers and the atexit hook, once.
 * Returns 0 or -ERR_IO.
 */
int cleanup_install(void) PTKIT_MUST_CHECK;

/*
 * Makes the first SIGINT only noted: note (a static string, its own line)
 * goes to stderr and the process goes on, its system calls resumed; the
 * next SIGINT acts as without this.  For the stages of a pipeline that
 * read a pipe: a terminal's ^C reaches the whole job, and they finish
 * what the stage before them still delivers.  Installs as cleanup_install
 * does; returns as it does.
 */
int cleanup_note_first_sigint(const char *note) PTKIT_MUST_CHECK;

/*
 * Registers path (copied) for removal.  Returns a slot number >= 0, or
 * -ERR_RANGE when the list is full, -ERR_INVALID when path is too long.
 */
int cleanup_register(const char *path) PTKIT_MUST_CHECK;

/* Forgets slot (the directory stays).  */
void cleanup_unregister(int slot);

/*
 * Removes the tree at path now (not following symbolic links), without
 * allocating.  Returns 0 or -ERR_IO.
 */
int cleanup_remove_tree(const char *path) PTKIT_MUST_CHECK;

/* Non-zero when PTKIT_KEEP_WASTE=1 asks to keep scratch files. */
int cleanup_keep_waste(void);

#endif
