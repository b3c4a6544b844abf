/*
 * bbcache: the basic blocks of one process's code, decoded once.
 *
 * Owns a map from an instruction address to the straight run of
 * instructions that starts there and ends at the first branch of any kind
 * (the unit of ptkit's block stream, see ptkit-blocks(5)), with what a
 * flow walker needs to follow it without looking at the code again: the
 * instruction count, the class of the branch, its size and, for a direct
 * branch, its target.  The code is read from the images of one pid
 * (struct ptdec_images, libipt's section cache) and decoded with
 * lib/x86class.
 *
 * A run that cannot be read whole (an address no image maps, an
 * instruction cut by the end of its section, bytes that do not decode,
 * overlapping images) is not cached: the caller hands that trace to
 * libipt, which reports it exactly.  One cache belongs to one worker.
 */
#ifndef PTKIT_BBCACHE_H
#define PTKIT_BBCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ptdec.h"

#define BB_DIRECT 0x1	/* direct near branch: target is valid */
#define BB_PUSH 0x2	/* a call whose return address libipt remembers */

struct bb {
	uint64_t ip;		/* first instruction; 0 marks a free slot */
	uint64_t end_ip;	/* the branch that ends the run */
	uint64_t target;	/* where a direct branch goes */
	uint32_t ninsn;
	uint8_t iclass;		/* enum pt_insn_class of end_ip */
	uint8_t size;		/* length of the branch in bytes */
	uint8_t flags;		/* BB_* */
};

struct bb_section {
	uint64_t begin, end;	/* [begin, end) in the process */
	int isid;
};

struct bbcache {
	struct bb *slot;	/* open addressing, a power of two */
	size_t mask, nr;
	struct pt_image_section_cache *iscache;
	struct bb_section *sec;	/* sorted by begin, disjoint */
	size_t nr_sec;
	int unusable;		/* images overlap: every lookup fails */
};

/*
 * Prepares c for the sections of pid in im.  Returns 0 or -ERR_NOMEM.
 * Overlapping sections make the cache unusable (bbcache_get fails), not
 * an error.
 */
int bbcache_init(struct bbcache *c, const struct ptdec_images *im,
    uint32_t pid, struct error *e);

/*
 * The run starting at ip (64-bit code), decoded on first use.  Returns
 * NULL when it cannot be read or decoded whole, or memory ran out.
 */
const struct bb *bbcache_get(struct bbcache *c, uint64_t ip);

/*
 * One instruction at ip: sets *length, *iclass, and *target for a direct
 * branch (0 otherwise).  Returns 0 or -1 (unreadable or undecodable).
 */
int bbcache_insn(struct bbcache *c, uint64_t ip, unsigned *length,
    int *iclass, uint64_t *target);

void bbcache_fini(struct bbcache *c);

#endif
