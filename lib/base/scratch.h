/*
 * scratch: the per-process scratch directory.
 *
 * Owns $TMPDIR/ptkit-<uid>/ (created 0700, refused if another user owns
 * it or it is not a plain directory) and one directory per process inside
 * it, <tool>.XXXXXX, which is removed on every exit path: normal exit,
 * scratch_close(), and SIGINT/SIGTERM/SIGHUP/SIGPIPE through the cleanup
 * module.  A process killed past all of these (SIGKILL, a crash) leaves
 * its directory to the next scratch_open of any tool, which removes
 * every directory whose owner is gone: each owner holds a lock on a file
 * in its directory for as long as it lives.  PTKIT_KEEP_WASTE=1 keeps the
 * directory and takes no lock, so that nothing sweeps it; the caller says
 * where it is (lib prints nothing).
 */
#ifndef PTKIT_SCRATCH_H
#define PTKIT_SCRATCH_H

#include <stddef.h>

#include "base/error.h"

struct scratch {
	char path[4096];	/* the process's own directory */
	int slot;		/* cleanup slot, or -1 */
	int lock_fd;		/* holds the owner lock, or -1 */
	unsigned swept;		/* dead processes' directories removed */
};

/*
 * Creates the scratch directory for tool, after removing those of dead
 * processes (counted in s->swept).  Installs the cleanup handlers if that
 * has not been done.  Returns 0, or -ERR_IO / -ERR_PERM with e naming the
 * directory.
 */
int scratch_open(struct scratch *s, const char *tool, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Writes "<scratch>/<name>" into buf.  Returns 0, or -ERR_RANGE when it
 * does not fit.
 */
int scratch_path(const struct scratch *s, const char *name, char *buf,
    size_t size) PTKIT_MUST_CHECK;

/*
 * The owner lock, for other directories a process makes and must not
 * leave behind if it is killed (a snapshot being written beside its
 * destination).  scratch_own makes dir's owner file and locks it (*lock_fd
 * holds the lock: keep it open while dir is being made).  Returns 0, or
 * -ERR_IO with e.
 */
int scratch_own(const char *dir, int *lock_fd, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Done with dir (about to rename it into place, where it is no waste):
 * removes its owner file, then lets go of the lock.  Returns 0, or
 * -ERR_IO with e (the lock is let go of in any case).
 */
int scratch_disown(const char *dir, int lock_fd, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Removes each directory in parent whose owner file nobody holds: its
 * process is gone.  infix NULL: the names that do not start with '.';
 * else only those that do and hold infix (".tmp-").  Returns how many it
 * removed.
 */
unsigned scratch_sweep_dead(const char *parent, const char *infix);

/*
 * Removes the directory (unless PTKIT_KEEP_WASTE=1) and forgets it.
 * Returns 0, or -ERR_IO if something could not be removed.
 */
int scratch_close(struct scratch *s) PTKIT_MUST_CHECK;

#endif
