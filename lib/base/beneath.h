/*
 * beneath: opening a path that came from a file or a request, beneath
 * the directory it belongs to.
 *
 * Owns the one rule for such paths: the path is relative, and it is
 * opened with openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS relative to a descriptor of its root, so no "..",
 * absolute path or symbolic link on the way (planted, or swapped in
 * between a check and the open) can take it elsewhere.  Where openat2 is
 * missing (ENOSYS, a seccomp filter) the same is done one component at a
 * time with O_NOFOLLOW.  The descriptor that comes back is the file that
 * was checked: there is no second open to race with.
 *
 * A file opened for reading is refused unless it is a regular file, and
 * that is found out before anything can block: it is opened O_NONBLOCK
 * and fstat'ed, so a FIFO or a device named as a tool's input never
 * hangs the open.  beneath_open_input does the same for a path a user
 * named, which may lead anywhere.
 *
 * Error messages name the path and what was wrong with it, never what
 * the file holds.
 */
#ifndef PTKIT_BENEATH_H
#define PTKIT_BENEATH_H

#include <sys/types.h>

#include "base/error.h"

/* What beneath_open opens. */
enum beneath_kind {
	BENEATH_FILE,		/* a regular file, to read (O_RDONLY) */
	BENEATH_DIR,		/* a directory (O_RDONLY | O_DIRECTORY) */
	BENEATH_CREATE,		/* a new regular file, O_WRONLY|O_CREAT|O_EXCL */
};

/*
 * Opens rel beneath the directory rootfd (a descriptor of it) as kind
 * (mode for BENEATH_CREATE).  what names the root in messages ("the
 * snapshot directory").  Returns the descriptor (O_CLOEXEC, blocking),
 * or -ERR_NOTFOUND ("REL: no such file"), -ERR_PERM ("REL: leads outside
 * WHAT" for "..", an absolute path or a symbolic link on the way; "REL:
 * not a regular file (a FIFO, a device?); refused"), -ERR_RANGE, -ERR_IO
 * with errno's text.
 */
int beneath_open(int rootfd, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e) PTKIT_MUST_CHECK;

/* beneath_open by the component walk alone (what openat2's absence
 * falls back to), for its tests. */
int beneath_open_walk(int rootfd, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e) PTKIT_MUST_CHECK;

/*
 * beneath_open with the root given as a path (itself opened as the user
 * named it: the root is trusted, what lies beneath it is not).
 */
int beneath_open_at(const char *root, const char *rel, enum beneath_kind kind,
    mode_t mode, const char *what, struct error *e) PTKIT_MUST_CHECK;

/*
 * Opens a path a user named, for reading: links are followed (the user
 * chose them), but anything other than a regular file is refused before
 * a blocking open.  Returns the descriptor, or -ERR_NOTFOUND, -ERR_PERM
 * ("PATH: not a regular file ..."), -ERR_IO.
 */
int beneath_open_input(const char *path, struct error *e) PTKIT_MUST_CHECK;

/*
 * Opens path for reading by the rule its place asks for: a path inside
 * root (root, a '/', then the rest: a snapshot's file as a block stream
 * or a symbol table names it) is opened beneath root as beneath_open_at
 * does, what (the root's name in messages) saying where; any other path
 * (root NULL or "", a file of the system) as beneath_open_input does.
 * For readers that get whole paths, so that a file of an untrusted
 * directory is never opened by its path.  Returns as those do.
 */
int beneath_open_under(const char *root, const char *path, const char *what,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The rest of path after root and a '/' when path lies inside root as
 * spelled (no resolving: beneath_open_at then refuses what leads out),
 * else NULL (root NULL or "" too).
 */
const char *beneath_inside(const char *root, const char *path);

/*
 * 0 if rel is a regular file beneath root as beneath_open finds it, else
 * as beneath_open fails: the check for a reader that opens by path.
 */
int beneath_check(const char *root, const char *rel, const char *what,
    struct error *e) PTKIT_MUST_CHECK;

#endif
