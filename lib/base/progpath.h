/*
 * progpath: where the programs a tool runs are.
 *
 * Owns the two ways ptkit finds a program before it runs it: a name
 * looked up along $PATH as execvp would look it up (perf, qemu-x86_64,
 * the program a recorder traces), and a file beside the running
 * executable (the sibling tools ptmcp and ptquery run, the emu plugin
 * ptrec finds at ../lib/ptkit/), read from /proc/self/exe.
 */
#ifndef PTKIT_PROGPATH_H
#define PTKIT_PROGPATH_H

#include <stddef.h>

#include "base/error.h"

/*
 * Finds name as execvp would: a name with a '/' is itself, when we may
 * execute it; any other name is the first "DIR/name" that is a regular
 * file we may execute, DIR taken from $PATH in order ("/usr/bin:/bin"
 * when $PATH is unset; an empty entry is the current directory).
 * Candidates that do not fit in size bytes are passed over.
 *
 * With root (not NULL; "" for the real "/"), each DIR is looked up under
 * root and relative entries are skipped: they would name our working
 * directory, not one under root.  out is then the path under root.
 *
 * Returns 0 with out filled, or -ERR_NOTFOUND with out "" and e saying
 * "NAME: not found in $PATH" or, when a candidate exists that we may not
 * execute, "DIR/NAME: not executable".
 */
int progpath_search(const char *name, const char *root, char *out,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * The directory of the running executable (/proc/self/exe without its
 * last component).  Returns 0, or -ERR_IO / -ERR_RANGE with e.
 */
int progpath_self_dir(char *out, size_t size, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * "<directory of the running executable>/<rel>" when that path exists
 * and access(2) allows mode on it (X_OK, R_OK).  Returns 0 with out
 * filled, or a negative err_code with e.
 */
int progpath_beside_self(const char *rel, int mode, char *out, size_t size,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The ptkit tool name as a sibling tool runs it: the executable of that
 * name beside the running one when there is one, else name alone (which
 * spawn then looks up in $PATH).  out always holds a usable name (cut
 * to size when name itself does not fit).
 */
void progpath_sibling_tool(const char *name, char *out, size_t size);

#endif
