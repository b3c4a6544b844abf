/*
 * perfdata_int: internals shared by the perf.data reader (perfdata.c) and
 * writer (perfdata_write.c): format constants and a growable byte buffer
 * for assembling records.  Not for use outside those two files.
 */
#ifndef PTKIT_PERFDATA_INT_H
#define PTKIT_PERFDATA_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define PD_MAGIC		0x32454c4946524550ULL	/* "PERFILE2" */
#define PD_MAGIC_SWAPPED	0x50455246494c4532ULL
#define PD_HEADER_SIZE		104
#define PD_PIPE_HEADER_SIZE	16
#define PD_ATTR_SIZE		128	/* PERF_ATTR_SIZE_VER7: perf 6.1's limit */
#define PD_ATTR_SIZE_VER0	64
#define PD_AUXTRACE_HDR_SIZE	48
#define PD_BUILD_ID_FIXED	36	/* header, pid, id[20], size, pad[3] */
#define PD_MISC_BUILD_ID_SIZE	(1U << 15)
/* header + attr + ids section, then the one id: data starts at 0x100. */
#define PD_WRITER_DATA_OFFSET	(PD_HEADER_SIZE + PD_ATTR_SIZE + 16 + 8)

/* Growable byte buffer; failed is sticky after an allocation failure. */
struct pd_buf {
	uint8_t *p;
	size_t len, cap;
	int failed;
};

void pd_put_bytes(struct pd_buf *b, const void *p, size_t n);
void pd_put_zeros(struct pd_buf *b, size_t n);
void pd_put_u8(struct pd_buf *b, uint8_t v);
void pd_put_u16(struct pd_buf *b, uint16_t v);
void pd_put_u32(struct pd_buf *b, uint32_t v);
void pd_put_u64(struct pd_buf *b, uint64_t v);

/*
 * Makes room for need elements of size elsize in *p (capacity *cap,
 * doubling).  Returns 0 or -1 (allocation failed; *p unchanged).
 */
int pd_grow(void **p, size_t *cap, size_t need, size_t elsize) PTKIT_MUST_CHECK;

#endif
