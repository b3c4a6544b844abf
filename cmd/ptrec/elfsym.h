/*
 * elfsym: where a function of an ELF file lives in that file.
 *
 * Owns the one lookup ptrec needs before the program runs: a function
 * symbol's name to its file offset and size, the form address filters and
 * triggers take (notes/recorder.md 4: ranges are file offsets, so they
 * hold wherever the loader puts the image, PIE or not).
 */
#ifndef PTREC_ELFSYM_H
#define PTREC_ELFSYM_H

#include <stdint.h>

#include "base/error.h"

/*
 * Looks name up in path's .symtab, then .dynsym (functions only) and
 * converts its address to a file offset through the PT_LOAD segments.
 * Returns 0 with *off and *size, -ERR_NOTFOUND (no such function),
 * -ERR_FORMAT (not an ELF file), -ERR_IO.
 */
int elfsym_lookup(const char *path, const char *name, uint64_t *off,
    uint64_t *size, struct error *e);

#endif
