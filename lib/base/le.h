/*
 * le: unaligned little-endian loads and stores for the binary formats we
 * read and write (perf.data, index.bin).
 *
 * ptkit runs on x86-64, which is little endian, so each is a memcpy (the
 * compiler makes it one move); a big-endian port changes only this file.
 */
#ifndef PTKIT_LE_H
#define PTKIT_LE_H

#include <stdint.h>
#include <string.h>

static inline uint16_t
le_get_u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t
le_get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t
le_get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void
le_put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void
le_put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

#endif
