/*
 * dwarfimg: an in-memory ELF image of a debuginfo file whose DWARF
 * sections are compressed, holding only the sections symtab reads,
 * decompressed, for libdw to open with elf_memory().
 *
 * Why: libdw's dwarf_begin_elf() inflates every compressed .debug_*
 * section at once with zlib, location lists included; on libc6-dbg's libc
 * that is most of what opening its DWARF costs.  The image inflates only
 * .debug_info, .debug_abbrev, .debug_line, the string, address, range and
 * arange sections (and keeps .gnu_debugaltlink), with libdeflate, which
 * inflates the same data about 2.4 times faster than zlib.  The other
 * sections keep their headers as SHT_NOBITS, so section indices stay.
 *
 * Owns nothing after it returns: the caller frees *image with
 * dwarfimg_free() (after elf_end() of the Elf made from it).
 */
#ifndef PTKIT_DWARFIMG_H
#define PTKIT_DWARFIMG_H

#include <gelf.h>
#include <stddef.h>

#include "base/error.h"

/*
 * Builds the image of src.  Returns 1 and *image (*size bytes),
 * 0 when src is better read as it is (no zlib-compressed section that
 * symtab reads; a 32-bit, big-endian or relocatable file; GNU .zdebug
 * sections; a section that does not inflate: libdw then says what it
 * makes of it), or -ERR_NOMEM.
 */
int dwarfimg_build(Elf *src, char **image, size_t *size) PTKIT_MUST_CHECK;

/* Frees an image dwarfimg_build() made (NULL is accepted). */
void dwarfimg_free(char *image, size_t size);

#endif
