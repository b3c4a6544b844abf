/*
 * numparse: numbers from command lines and text files, with range checks.
 *
 * Owns the rules for what a number looks like: decimal, or hexadecimal
 * with 0x; no sign on unsigned values; no leading or trailing space;
 * sizes take K, M or G (powers of 1024) and, spelled out, KiB/MiB/GiB.
 * Every function leaves *out untouched on failure.
 */
#ifndef PTKIT_NUMPARSE_H
#define PTKIT_NUMPARSE_H

#include <stdint.h>

#include "base/error.h"

/*
 * Parses s as an unsigned integer in [min, max] into *out.
 * Returns 0, or -ERR_INVALID (not a number; e says why) or -ERR_RANGE
 * (e names the bound crossed).
 */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    struct error *e) PTKIT_MUST_CHECK;

/* Like parse_u64 for signed values; a leading '-' is allowed. */
int parse_i64(const char *s, int64_t min, int64_t max, int64_t *out,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Parses a size: an unsigned integer with an optional suffix K, M, G
 * (also KiB, MiB, GiB; case-insensitive), powers of 1024.  Overflow of
 * the multiplication is -ERR_RANGE.
 */
int parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    struct error *e) PTKIT_MUST_CHECK;

#endif
