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

uint64_t
emu_ring_unroll_from(const uint8_t *ring, uint64_t size, uint64_t total,
    uint64_t from, uint8_t *dst)
{
	uint64_t have = total - from;
	uint64_t pos = from % size;
	uint64_t first = size - pos < have ? size - pos : have;

	memcpy(dst, ring + pos, first);
	memcpy(dst + first, ring, have - first);
	return have;
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
