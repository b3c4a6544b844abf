/*
 * spanidx: index.bin, the compact columnar index of an analysis's spans
 * (man ptkit-spans.5, "index.bin"), written by ptspans and memory-mapped
 * by ptquery and ptdiff.
 *
 * Owns the file layout and its checks: a 128-byte header (magic, version,
 * the counts of spans, threads, functions and string bytes, the sections'
 * offsets, an XXH64 of the header and one of everything after it), a
 * column directory, a function table (name, raw name, module, entry:
 * one entry per distinct function, so a span stores only its number), a
 * thread table (tid, pid, spans), a table of the distinct call sites
 * (likewise), the columns, and a string table of
 * NUL-terminated strings (offset 0 is "").  Each column is bit-packed
 * against its smallest value (frame of reference: a value takes the bits
 * its column's range needs, so that rows stay fixed-width and are read
 * in place, at any row, without decoding); end_ns is kept as the
 * duration, so no span ends before it starts.  All integers are little
 * endian.
 *
 * The writer streams (columns are spooled delta-coded to temporary
 * files, so memory is bounded by the distinct functions and threads, not
 * by the rows) and refuses a row the reader would refuse.  The reader
 * checks the checksums and every row (no span its own parent, function
 * numbers in the table, self figures within the span's, causes known,
 * tid, pid and depth in range) before
 * it hands the index out, so a damaged file is an error, never an
 * answer.
 */
#ifndef PTKIT_SPANIDX_H
#define PTKIT_SPANIDX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"

#define SPANIDX_MAGIC "PTKSPIX\n"
#define SPANIDX_VERSION 2
#define SPANIDX_HEADER_SIZE 128

/* The logical columns a row has, as the accessors below take them. */
enum spanidx_col {
	SPANIDX_ID,		/* u64 span id */
	SPANIDX_PARENT,		/* u64 parent span id, 0 none */
	SPANIDX_TID,		/* u32 */
	SPANIDX_PID,		/* u32 */
	SPANIDX_DEPTH,		/* i32 */
	SPANIDX_FN,		/* u32 string offset */
	SPANIDX_RAW,		/* u32 string offset, 0 none */
	SPANIDX_MODULE,		/* u32 string offset, 0 none */
	SPANIDX_CALL_SITE,	/* u64, 0 unknown */
	SPANIDX_ENTRY,		/* u64 */
	SPANIDX_START_NS,	/* u64 */
	SPANIDX_END_NS,		/* u64 */
	SPANIDX_SELF_NS,	/* u64 */
	SPANIDX_INSNS,		/* u64 */
	SPANIDX_SELF_INSNS,	/* u64 */
	SPANIDX_START,		/* u8 start cause (enum cs_start) */
	SPANIDX_END,		/* u8 end cause (enum cs_end) */
	SPANIDX_FLAGS,		/* u8 SPANIDX_F_* */
	SPANIDX_NCOLS
};

#define SPANIDX_F_TAIL_CALL 0x1
#define SPANIDX_F_ASYNC 0x2
#define SPANIDX_F_UNNAMED 0x4
#define SPANIDX_F_ALL 0x7

/* How many start and end causes there are (span/spandir checks these
 * against enum cs_start and enum cs_end). */
#define SPANIDX_START_NR 6
#define SPANIDX_END_NR 5

/* The columns as the file stores them, in file order. */
enum spanidx_pcol {
	SPANIDX_P_ID, SPANIDX_P_PARENT, SPANIDX_P_TID, SPANIDX_P_PID,
	SPANIDX_P_DEPTH, SPANIDX_P_FUNC, SPANIDX_P_CALL_SITE,
	SPANIDX_P_START_NS, SPANIDX_P_DUR_NS, SPANIDX_P_SELF_NS,
	SPANIDX_P_INSNS, SPANIDX_P_SELF_INSNS, SPANIDX_P_START,
	SPANIDX_P_END, SPANIDX_P_FLAGS,
	SPANIDX_NPCOLS
};

/* One row as the writer takes it (strings may be NULL: offset 0). */
struct spanidx_row {
	uint64_t id, parent;
	uint32_t tid, pid;
	int32_t depth;
	const char *fn, *raw, *module;
	uint64_t call_site, entry, start_ns, end_ns, self_ns, insns,
	    self_insns;
	uint8_t start, end, flags;
};

const char *spanidx_col_name(unsigned col);

struct spanidx_writer;

/* Returns 0 and *out, or -ERR_NOMEM, -ERR_IO (no temporary file). */
int spanidx_writer_new(struct spanidx_writer **out, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Returns 0, -ERR_NOMEM, -ERR_IO, or -ERR_RANGE for a row the index
 * cannot hold (it ends before it starts, it is its own parent, its self
 * figures exceed its totals, an unknown cause; e says which span and
 * why).
 */
int spanidx_add(struct spanidx_writer *w, const struct spanidx_row *r,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Writes the index to path (created or truncated, 0644), or to the open
 * file descriptor fd (from its current offset 0; not closed), and frees
 * w.  Returns 0 or -ERR_IO (e names path).  spanidx_writer_free() drops a
 * writer without writing.
 */
int spanidx_writer_finish(struct spanidx_writer *w, const char *path,
    struct error *e) PTKIT_MUST_CHECK;
int spanidx_writer_finish_fd(struct spanidx_writer *w, int fd,
    const char *name, struct error *e) PTKIT_MUST_CHECK;
void spanidx_writer_free(struct spanidx_writer *w);

/* ----------------------------------------------------------------- */
/* Reader */

/* One stored column: value = base + the bits at row * bits. */
struct spanidx_packed {
	const uint8_t *data;
	uint64_t base, mask;
	unsigned bits;
};

struct spanidx {
	const uint8_t *base;		/* the mapping */
	size_t size;
	uint64_t rows, n_threads, n_funcs, n_sites;
	struct spanidx_packed pc[SPANIDX_NPCOLS];
	const uint8_t *funcs;		/* n_funcs entries */
	const uint8_t *threads;		/* n_threads entries */
	const uint8_t *sites;		/* n_sites call sites, u64 each */
	const char *strtab;
	uint64_t strtab_size;
};

/* The function and thread tables' entries. */
#define SPANIDX_FUNC_SIZE 24	/* fn, raw, module u32, 0 u32, entry u64 */
#define SPANIDX_THREAD_SIZE 16	/* tid u32, pid u32, spans u64 */

/*
 * Maps path (or the open descriptor fd, kept by nobody after) and checks
 * it: magic, version, both checksums, sizes, sections inside the file,
 * the string table NUL-terminated and every row.  Returns 0, or -ERR_IO,
 * -ERR_NOTFOUND, -ERR_FORMAT (damaged: e says what), -ERR_TRUNCATED,
 * -ERR_UNSUPPORTED (another version).
 */
int spanidx_open(struct spanidx *ix, const char *path, struct error *e)
    PTKIT_MUST_CHECK;
int spanidx_open_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e) PTKIT_MUST_CHECK;

/* The string at off, or "" when off is outside the table. */
const char *spanidx_str(const struct spanidx *ix, uint32_t off);

static inline uint64_t
spanidx_packed_get(const struct spanidx_packed *c, uint64_t row)
{
	uint64_t bit = row * c->bits, v;

	memcpy(&v, c->data + (bit >> 3), sizeof(v));
	return c->base + ((v >> (bit & 7)) & c->mask);
}

static inline uint64_t
spanidx_pget(const struct spanidx *ix, unsigned pcol, uint64_t row)
{
	return spanidx_packed_get(&ix->pc[pcol], row);
}

/* Function f's entry (f < n_funcs, as every row's is once opened). */
static inline const uint8_t *
spanidx_func(const struct spanidx *ix, uint64_t f)
{
	return ix->funcs + (f < ix->n_funcs ? f : 0) * SPANIDX_FUNC_SIZE;
}

/* Row row's value of logical column col, whatever its type. */
static inline uint64_t
spanidx_value(const struct spanidx *ix, unsigned col, uint64_t row)
{
	static const unsigned char direct[SPANIDX_NCOLS] = {
		[SPANIDX_ID] = SPANIDX_P_ID,
		[SPANIDX_PARENT] = SPANIDX_P_PARENT,
		[SPANIDX_TID] = SPANIDX_P_TID,
		[SPANIDX_PID] = SPANIDX_P_PID,
		[SPANIDX_DEPTH] = SPANIDX_P_DEPTH,
		[SPANIDX_START_NS] = SPANIDX_P_START_NS,
		[SPANIDX_SELF_NS] = SPANIDX_P_SELF_NS,
		[SPANIDX_INSNS] = SPANIDX_P_INSNS,
		[SPANIDX_SELF_INSNS] = SPANIDX_P_SELF_INSNS,
		[SPANIDX_START] = SPANIDX_P_START,
		[SPANIDX_END] = SPANIDX_P_END,
		[SPANIDX_FLAGS] = SPANIDX_P_FLAGS,
	};
	const uint8_t *f;
	uint64_t v;

	switch (col) {
	case SPANIDX_CALL_SITE:
		v = spanidx_pget(ix, SPANIDX_P_CALL_SITE, row);
		memcpy(&v, ix->sites + (v < ix->n_sites ? v : 0) * 8,
		    sizeof(v));
		return v;
	case SPANIDX_END_NS:
		return spanidx_pget(ix, SPANIDX_P_START_NS, row) +
		    spanidx_pget(ix, SPANIDX_P_DUR_NS, row);
	case SPANIDX_FN:
	case SPANIDX_RAW:
	case SPANIDX_MODULE:
	case SPANIDX_ENTRY:
		f = spanidx_func(ix, spanidx_pget(ix, SPANIDX_P_FUNC, row));
		if (col == SPANIDX_ENTRY) {
			memcpy(&v, f + 16, sizeof(v));
			return v;
		}
		{
			uint32_t off;

			memcpy(&off, f + 4 * (col - SPANIDX_FN), sizeof(off));
			return off;
		}
	default:
		return spanidx_pget(ix, direct[col < SPANIDX_NCOLS ? col : 0],
		    row);
	}
}

static inline uint64_t
spanidx_u64(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return spanidx_value(ix, col, row);
}

static inline uint32_t
spanidx_u32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (uint32_t)spanidx_value(ix, col, row);
}

static inline int32_t
spanidx_i32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (int32_t)(uint32_t)spanidx_value(ix, col, row);
}

static inline uint8_t
spanidx_u8(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (uint8_t)spanidx_value(ix, col, row);
}

/* Thread t of the thread table (t < n_threads). */
void spanidx_thread(const struct spanidx *ix, uint64_t t, uint32_t *tid,
    uint32_t *pid, uint64_t *spans);

void spanidx_close(struct spanidx *ix);

#endif
