/*
 * debugfind: locating the separate debuginfo file of an ELF image.
 *
 * Owns the search order and the checks that a candidate really belongs to
 * the image.  Candidates, in order:
 *   1. by build-id, under each root in roots[] and then /usr/lib/debug
 *      (unless DEBUGFIND_NO_SYSTEM): ROOT/.build-id/xx/rest.debug, then
 *      ROOT/.build-id/xx/rest/debug (perf's build-id cache layout);
 *   2. by .gnu_debuglink NAME (unless DEBUGFIND_NO_DEBUGLINK), as GDB
 *      looks: DIR/NAME, DIR/.debug/NAME, then ROOT/DIR/NAME for each root
 *      and /usr/lib/debug, where DIR is the image's directory.
 * A candidate is accepted when its build-id equals the image's (when both
 * have one), otherwise when its CRC-32 equals the debuglink's.  A file
 * equal to the image itself is never returned.  A candidate inside root
 * (symtab_options.root: the snapshot the image came from) is opened
 * beneath it, as lib/sym opens every file there (symfile_open); one
 * refused there (a link, a path out of root) is no candidate, and is
 * counted in *refused (NULL: not counted) for the tool to say.
 */
#ifndef PTKIT_DEBUGFIND_H
#define PTKIT_DEBUGFIND_H

#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include "base/error.h"
#include "sym/symtab.h"

#define DEBUGFIND_SYSTEM_DIR "/usr/lib/debug"

enum debugfind_flag {
	DEBUGFIND_NO_SYSTEM = 1 << 0,
	DEBUGFIND_NO_DEBUGLINK = 1 << 1,
};

/*
 * Finds the debuginfo of elf, the image read from image_path.
 * Returns 1 and *out (a malloc'd path the caller frees), 0 when there is
 * none, -ERR_NOMEM.
 */
int debugfind(Elf *elf, const char *image_path, const char *root,
    const char *const *roots, size_t n_roots, unsigned flags,
    struct symtab_refused *refused, char **out, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Finds a dwz supplementary file (.gnu_debugaltlink: name and build-id)
 * for the DWARF in debug_path: by build-id under roots[] then
 * /usr/lib/debug, then name (relative names from debug_path's
 * directory).  The build-id must match.  Returns 1 and *out (malloc'd),
 * 0 when not found, -ERR_NOMEM.
 */
int debugfind_alt(const char *name, const unsigned char *id, size_t id_len,
    const char *debug_path, const char *root, const char *const *roots,
    size_t n_roots, unsigned flags, struct symtab_refused *refused,
    char **out, struct error *e) PTKIT_MUST_CHECK;

/*
 * The build-id of elf: returns its length (> 0) and points *id into elf's
 * data, or 0 when it has none.
 */
size_t debugfind_build_id(Elf *elf, const unsigned char **id);

/* The CRC-32 that .gnu_debuglink uses (zlib's), continuing from crc. */
uint32_t debugfind_crc32(uint32_t crc, const unsigned char *buf, size_t len);

#endif
