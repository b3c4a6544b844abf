/*
 * ptimages: the shape of a decode's images, shared by the decode driver
 * (dec/ptdec.h, which fills them: ptdec_images_init, ptdec_images_add)
 * and the fast decoder's block cache (dec/bbcache.h, which reads their
 * sections), so that the block cache needs nothing else of the driver
 * and the dependency goes one way: ptdec uses bbcache, both use this.
 */
#ifndef PTKIT_PTIMAGES_H
#define PTKIT_PTIMAGES_H

#include <stddef.h>
#include <stdint.h>

struct pt_image_section_cache;

/*
 * The images of a decode.  Read-only once the decode starts.
 * libipt keeps its block cache in the sections and uses an entry whatever
 * the execution mode it was filled in, so code run in 16- or 32-bit mode
 * is decoded through sections of its own (iscache_mode, same files): each
 * cache then only answers for its mode, and a decode does not depend on
 * what was decoded before it.
 */
enum { PTDEC_MODE_16, PTDEC_MODE_32, PTDEC_NARROW_MODES };

struct ptdec_section {
	uint32_t pid;
	uint64_t vaddr, size, offset;
	int isid;			/* in the iscache */
	int isid_mode[PTDEC_NARROW_MODES];	/* in iscache_mode */
};

struct bbshared;
struct ptdec_images {
	struct pt_image_section_cache *iscache;	/* 64-bit code */
	struct pt_image_section_cache *iscache_mode[PTDEC_NARROW_MODES];
	struct bbshared *blocks;	/* the fast decoder's runs (bbcache.h) */
	struct ptdec_section *sec;
	size_t nr, cap;
};

#endif
