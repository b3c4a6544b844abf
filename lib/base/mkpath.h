/*
 * mkpath: creating the directories above a path, as mkdir -p does.
 *
 * Owns one rule every tool that takes -o DIR follows: the directories
 * leading to DIR are created when missing (with mode, less the umask), so
 * that a recording or an analysis is never lost to a missing parent after
 * the work was done.  The last component is not created.
 */
#ifndef PTKIT_MKPATH_H
#define PTKIT_MKPATH_H

#include <sys/types.h>

#include "base/error.h"

/*
 * Creates every missing directory above the last component of path.
 * Returns 0, or -ERR_IO (e names the directory that could not be made),
 * -ERR_FORMAT (a component exists and is not a directory), -ERR_RANGE
 * (path too long).
 */
int mkpath_parents(const char *path, mode_t mode, struct error *e)
    PTKIT_MUST_CHECK;

#endif
