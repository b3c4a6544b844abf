/* ptaux: see ptaux.h. */
#include "rec/ptaux.h"

#include <string.h>

static int
any_nonzero(const uint8_t *p, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 1;
	return 0;
}

int
ptaux_wrapped(struct ptaux_ring *r, uint64_t aux_head)
{
	uint64_t head = aux_head & (r->size - 1), n;

	if (r->wrapped)
		return 1;
	/*
	 * perf tests the last 4 KiB of the ring, which misfires while head is
	 * inside them; testing the bytes just past head does not (an
	 * inference from the zero-filled allocation, notes §2.5).
	 */
	n = r->size - head < PTAUX_WRAP_PROBE ? r->size - head :
	    PTAUX_WRAP_PROBE;
	if (any_nonzero(r->base + head, n))
		r->wrapped = 1;
	return r->wrapped;
}

uint64_t
ptaux_copy(struct ptaux_ring *r, uint64_t aux_head, uint8_t *out,
    int *truncated)
{
	uint64_t head = aux_head & (r->size - 1);

	*truncated = ptaux_wrapped(r, aux_head);
	if (!*truncated) {
		memcpy(out, r->base, head);
		return head;
	}
	memcpy(out, r->base + head, r->size - head);
	memcpy(out + (r->size - head), r->base, head);
	return r->size;
}
