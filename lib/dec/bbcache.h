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
 * libipt, which reports it exactly.
 *
 * Two levels: a struct bbcache belongs to one worker and is read without
 * locks; on a miss it asks the struct bbshared of the decode (one per
 * struct ptdec_images, behind a mutex, keyed by pid and address), which
 * decodes a run only the first time any worker needs it.  Both are
 * bounded: a level that reaches its limit is emptied and refills, which
 * costs decoding again, never correctness (entries are copies).  Images
 * do not change during a decode, so nothing needs invalidating; code
 * whose mappings overlap (JIT code replaced at the same address) is not
 * cached at all (bbcache_init).
 */
#ifndef PTKIT_BBCACHE_H
#define PTKIT_BBCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "dec/ptimages.h"

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
	/*
	 * The run as a block of 64-bit code in the block stream, packed
	 * (blks_block_rest); 0 if it does not fit the short form or does
	 * not end at a branch (ptic_call .. ptic_ptwrite).
	 */
	uint32_t rest;
};

struct bb_section {
	uint64_t begin, end;	/* [begin, end) in the process */
	int isid;
};

/* The shared level (opaque). */
struct bbshared;

/* Returns a new shared level, or NULL (out of memory). */
struct bbshared *bbshared_new(void);

void bbshared_free(struct bbshared *s);

struct bbcache {
	struct bb *slot;	/* open addressing, a power of two */
	size_t mask, nr;
	struct bbshared *shared;	/* the decode's, or NULL */
	uint32_t pid;
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
    uint32_t pid, struct error *e) PTKIT_MUST_CHECK;

/* bbcache_get's first use of ip: decodes and caches the run. */
const struct bb *bbcache_fill(struct bbcache *c, uint64_t ip);

static inline size_t
bbcache_slot(const struct bbcache *c, uint64_t ip)
{
	return (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 40) & c->mask;
}

/*
 * The run starting at ip (64-bit code), decoded on first use.  Returns
 * NULL when it cannot be read or decoded whole, or memory ran out.
 */
static inline const struct bb *
bbcache_get(struct bbcache *c, uint64_t ip)
{
	size_t k = bbcache_slot(c, ip);

	for (;;) {
		if (c->slot[k].ip == ip && ip != 0)
			return &c->slot[k];
		if (c->slot[k].ip == 0)
			return bbcache_fill(c, ip);
		k = (k + 1) & c->mask;
	}
}

/*
 * One instruction at ip: sets *length, *iclass, *target for a direct
 * branch (0 otherwise) and *mov_cr3.  Returns 0 or -1 (unreadable or
 * undecodable).
 */
int bbcache_insn(struct bbcache *c, uint64_t ip, unsigned *length,
    int *iclass, uint64_t *target, int *mov_cr3) PTKIT_MUST_CHECK;

void bbcache_fini(struct bbcache *c);

#endif
