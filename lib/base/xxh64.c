/*
 * xxh64: see xxh64.h.  The algorithm as xxHash's specification gives it
 * (doc/xxhash_spec.md): four lanes of 8-byte rounds, merged, then the
 * tail and the avalanche.
 */
#include "base/xxh64.h"

#include <string.h>

#include "base/le.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t
rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t
round1(uint64_t acc, uint64_t in)
{
	acc += in * P2;
	acc = rotl(acc, 31);
	return acc * P1;
}

static inline uint64_t
merge(uint64_t acc, uint64_t v)
{
	acc ^= round1(0, v);
	return acc * P1 + P4;
}

void
xxh64_init(struct xxh64 *h, uint64_t seed)
{
	memset(h, 0, sizeof(*h));
	h->seed = seed;
	h->v[0] = seed + P1 + P2;
	h->v[1] = seed + P2;
	h->v[2] = seed;
	h->v[3] = seed - P1;
}

static void
stripes(struct xxh64 *h, const uint8_t *p, size_t n)
{
	uint64_t v0 = h->v[0], v1 = h->v[1], v2 = h->v[2], v3 = h->v[3];

	for (; n >= 32; p += 32, n -= 32) {
		v0 = round1(v0, le_get_u64(p));
		v1 = round1(v1, le_get_u64(p + 8));
		v2 = round1(v2, le_get_u64(p + 16));
		v3 = round1(v3, le_get_u64(p + 24));
	}
	h->v[0] = v0;
	h->v[1] = v1;
	h->v[2] = v2;
	h->v[3] = v3;
}

void
xxh64_update(struct xxh64 *h, const void *data, size_t len)
{
	const uint8_t *p = data;

	h->total += len;
	if (h->n_buf > 0) {
		size_t take = 32 - h->n_buf < len ? 32 - h->n_buf : len;

		memcpy(h->buf + h->n_buf, p, take);
		h->n_buf += take;
		p += take;
		len -= take;
		if (h->n_buf < 32)
			return;
		stripes(h, h->buf, 32);
		h->n_buf = 0;
	}
	stripes(h, p, len & ~(size_t)31);
	p += len & ~(size_t)31;
	len &= 31;
	memcpy(h->buf, p, len);
	h->n_buf = len;
}

uint64_t
xxh64_digest(const struct xxh64 *h)
{
	const uint8_t *p = h->buf, *end = h->buf + h->n_buf;
	uint64_t acc;

	if (h->total >= 32) {
		acc = rotl(h->v[0], 1) + rotl(h->v[1], 7) + rotl(h->v[2], 12) +
		    rotl(h->v[3], 18);
		for (int i = 0; i < 4; i++)
			acc = merge(acc, h->v[i]);
	} else
		acc = h->seed + P5;
	acc += h->total;
	for (; p + 8 <= end; p += 8) {
		acc ^= round1(0, le_get_u64(p));
		acc = rotl(acc, 27) * P1 + P4;
	}
	if (p + 4 <= end) {
		acc ^= (uint64_t)le_get_u32(p) * P1;
		acc = rotl(acc, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++) {
		acc ^= *p * P5;
		acc = rotl(acc, 11) * P1;
	}
	acc ^= acc >> 33;
	acc *= P2;
	acc ^= acc >> 29;
	acc *= P3;
	acc ^= acc >> 32;
	return acc;
}

uint64_t
xxh64(const void *data, size_t len, uint64_t seed)
{
	struct xxh64 h;

	xxh64_init(&h, seed);
	xxh64_update(&h, data, len);
	return xxh64_digest(&h);
}
