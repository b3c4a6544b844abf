/*
 * blkstream_int: what the block stream's writer (blkstream.c) and reader
 * (blkstream_read.c) share and no one else needs: the size bounds of a
 * varint and a record frame, and the varint, zigzag and little-endian
 * primitives of the encoding (man/ptkit-blocks.5).
 */
#ifndef PTKIT_BLKSTREAM_INT_H
#define PTKIT_BLKSTREAM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "fmt/blkstream.h"

#define VARINT_MAX 10
/* A record's frame: type byte and the length varint. */
#define FRAME_MAX (1 + VARINT_MAX)
_Static_assert(BLKS_BLOCK_MAX >= 2 + 4 * VARINT_MAX + 1,
    "a BLOCK record: frame, four varints, a byte, one byte of slack");

static inline uint64_t
zigzag(uint64_t delta)
{
	return blks_zigzag(delta);
}

static inline uint64_t
unzigzag(uint64_t z)
{
	return blks_unzigzag(z);
}

static inline size_t
put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline void
put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t
get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif
