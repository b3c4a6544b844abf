/*
 * symcache: one parsed struct symtab per image, shared by threads.
 *
 * Owns the tables it loads: symcache_get() loads an image the first time
 * it is asked for (by path; a JIT map by its path too) and afterwards
 * returns the same table, or the same error, without touching the file
 * again.  Tables stay valid until symcache_free().
 *
 * Thread safety: symcache_get() may be called from any number of threads
 * at once; two threads asking for the same image wait for one load.  The
 * tables it returns need no locking by their users: what they read on
 * demand they read under a lock of their own (see symtab.h).
 */
#ifndef PTKIT_SYMCACHE_H
#define PTKIT_SYMCACHE_H

#include "base/error.h"
#include "sym/symtab.h"

struct symcache;

/*
 * A new, empty cache whose images load with opt (copied, including the
 * debug_dirs strings and root; NULL for the defaults).  Returns NULL
 * when out of memory.
 */
struct symcache *symcache_new(const struct symtab_options *opt);

/*
 * The table of the ELF image at path (jit != 0: the JIT map at path).
 * Returns 0 and *out, owned by the cache, or the error symtab_open (or
 * symtab_open_jitmap) gave for it, the same each time it is asked.
 * It takes a lock and compares paths: call it once per mapping and keep
 * the pointer, not once per address.
 */
int symcache_get(struct symcache *c, const char *path, int jit,
    const struct symtab **out, struct error *e) PTKIT_MUST_CHECK;

/*
 * The files refused while the cache's tables loaded (symtab_refused of
 * each, summed; the first of the first table that has one), after the
 * loads: the tables load with fewer names without them.
 */
struct symtab_refused symcache_refused(struct symcache *c);

/* Frees the cache and every table in it.  NULL is accepted. */
void symcache_free(struct symcache *c);

#endif
