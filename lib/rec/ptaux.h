/*
 * ptaux: copying a snapshot-mode (overwrite) AUX ring oldest to newest.
 *
 * Owns the rule of notes/recorder.md §2.5 for a ring the hardware writes
 * round and round with no byte counter: aux_head is only the offset where
 * the next byte goes.  The ring starts zero-filled (the kernel allocates
 * it with __GFP_ZERO), so before its first wrap the bytes from head on are
 * still zero; once they are not, it has wrapped, and stays so (a sticky
 * flag per ring).  A wrapped ring is copied [head, size) then [0, head):
 * the newest size bytes, oldest first; an unwrapped one [0, head): all of
 * it since the event was enabled.  The caller stops the event
 * (PERF_EVENT_IOC_DISABLE) before, so that head is final.
 */
#ifndef PTKIT_PTAUX_H
#define PTKIT_PTAUX_H

#include <stdint.h>

/* Bytes after head that must be zero for "not wrapped yet". */
#define PTAUX_WRAP_PROBE 4096

struct ptaux_ring {
	const uint8_t *base;	/* the AUX mapping */
	uint64_t size;		/* a power of two */
	int wrapped;		/* sticky: once wrapped, always */
};

/*
 * 1 when the ring has wrapped at least once: the sticky flag, or a
 * non-zero byte in [head, min(head + PTAUX_WRAP_PROBE, size)).  Sets the
 * flag.  aux_head is the control page's value (reduced modulo size here).
 */
int ptaux_wrapped(struct ptaux_ring *r, uint64_t aux_head);

/*
 * Copies the ring oldest to newest into out (room for r->size bytes) and
 * returns the number of bytes copied: r->size when it has wrapped, else
 * head.  *truncated is set to 1 when older history was overwritten.
 */
uint64_t ptaux_copy(struct ptaux_ring *r, uint64_t aux_head, uint8_t *out,
    int *truncated);

#endif
