/* emu_handoff: see emu_handoff.h. */
#include "emu_handoff.h"

#include <string.h>

uint64_t
emu_ring_unroll(const uint8_t *ring, uint64_t size, uint64_t total,
    uint8_t *dst)
{
	return emu_ring_unroll_from(ring, size, total,
	    total < size ? 0 : total - size, dst);
}

uint64_t
emu_ring_first(const struct emu_ring_hdr *h, uint64_t total)
{
	uint64_t from = total > h->ring_size ? total - h->ring_size : 0;
	uint64_t freed = __atomic_load_n(&h->freed, __ATOMIC_ACQUIRE);

	if (freed > total)
		freed = total;
	return freed > from ? freed : from;
}

void
emu_ring_split(uint64_t size, uint64_t total, uint64_t from,
    uint64_t pos[2], uint64_t len[2])
{
	uint64_t have = total - from;

	pos[0] = from % size;
	len[0] = size - pos[0] < have ? size - pos[0] : have;
	pos[1] = 0;
	len[1] = have - len[0];
}

uint64_t
emu_ring_unroll_from(const uint8_t *ring, uint64_t size, uint64_t total,
    uint64_t from, uint8_t *dst)
{
	uint64_t pos[2], len[2];

	emu_ring_split(size, total, from, pos, len);
	memcpy(dst, ring + pos[0], len[0]);
	memcpy(dst + len[0], ring + pos[1], len[1]);
	return len[0] + len[1];
}

void
emu_ring_put(uint8_t *ring, uint64_t size, uint64_t *total,
    const uint8_t *p, size_t n)
{
	uint64_t pos, chunk;

	if (n > size) {		/* only the newest size bytes survive */
		*total += n - size;
		p += n - size;
		n = size;
	}
	while (n > 0) {
		pos = *total % size;
		chunk = size - pos < n ? size - pos : n;
		memcpy(ring + pos, p, chunk);
		*total += chunk;
		p += chunk;
		n -= chunk;
	}
}
