/*
 * spanidx: index.bin, the compact columnar index of an analysis's spans
 * (man ptkit-spans.5, "index.bin"), written by ptspans and memory-mapped
 * by ptquery and ptdiff.
 *
 * Owns the file layout and its checks: a 128-byte header (magic, version,
 * the counts of spans, blocks, threads, functions and string bytes, the
 * sections' offsets, an XXH64 of the header and one of the tables), a
 * block directory, a function table (name, raw name, module, entry: one
 * entry per distinct function, so a span stores only its number), a
 * thread table (tid, pid, spans: a span stores its thread's number), a
 * table of the distinct call sites (likewise), a string table of
 * NUL-terminated strings (offset 0 is ""), then the rows in blocks of
 * SPANIDX_BLOCK_ROWS.  Each block stores each column bit-packed against
 * the block's smallest value (frame of reference per block: a value
 * takes the bits its block's range needs, rows stay fixed-width within
 * the block and any row is read in place, without decoding).  What can
 * be implied is not stored: a span's id as its distance from its row
 * number, its parent as its distance from its id, its pid by its thread,
 * its duration and instructions as self plus callees' figures, so that
 * no span is its own parent or has self figures above its totals by
 * construction.  All integers are little endian.
 *
 * The writer streams (blocks are spooled to temporary files, so memory
 * is bounded by the distinct functions and threads, not by the rows) and
 * refuses a row the reader would refuse.  The reader checks the header
 * and the tables (their checksum, every block's place in the file) when
 * it opens; each block's columns are checked (their checksum, their
 * values in range) before they are read: all of them at spanidx_open,
 * or the ones a query asks for with spanidx_check after
 * spanidx_open_lazy, so that a damaged file is an error naming the file
 * and the block, never an answer.
 */
#ifndef PTKIT_SPANIDX_H
#define PTKIT_SPANIDX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"

#define SPANIDX_MAGIC "PTKSPIX\n"
#define SPANIDX_VERSION 3
#define SPANIDX_HEADER_SIZE 128
/* Rows a block holds (the last block may hold fewer). */
#define SPANIDX_BLOCK_SHIFT 10
#define SPANIDX_BLOCK_ROWS (1u << SPANIDX_BLOCK_SHIFT)

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

/* The columns as the file stores them, in a block's order. */
enum spanidx_pcol {
	SPANIDX_P_ID,		/* id - row number + 2^63 */
	SPANIDX_P_PARENT,	/* id - parent, 0 none */
	SPANIDX_P_THREAD,	/* the thread table's entry */
	SPANIDX_P_DEPTH,	/* depth + 2^31 */
	SPANIDX_P_FUNC,		/* the function table's entry */
	SPANIDX_P_CALL_SITE,	/* the call site table's entry */
	SPANIDX_P_START_NS, SPANIDX_P_SELF_NS,
	SPANIDX_P_CALLEE_NS,	/* dur_ns - self_ns */
	SPANIDX_P_SELF_INSNS,
	SPANIDX_P_CALLEE_INSNS,	/* insns - self_insns */
	SPANIDX_P_START, SPANIDX_P_END, SPANIDX_P_FLAGS,
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

struct spanidx_lazy;

struct spanidx {
	const uint8_t *base;		/* the mapping */
	size_t size;
	uint64_t rows, n_blocks, n_threads, n_funcs, n_sites;
	const uint8_t *blocks;		/* the block directory */
	const uint8_t *data;		/* the blocks' columns */
	const uint8_t *funcs;		/* n_funcs entries */
	const uint8_t *threads;		/* n_threads entries */
	const uint8_t *sites;		/* n_sites call sites, u64 each */
	const char *strtab;
	uint64_t strtab_size;
	struct spanidx_lazy *lazy;	/* which columns are checked */
};

/* The function and thread tables' entries. */
#define SPANIDX_FUNC_SIZE 24	/* fn, raw, module u32, 0 u32, entry u64 */
#define SPANIDX_THREAD_SIZE 16	/* tid u32, pid u32, spans u64 */

/*
 * A block directory entry: the block's data offset (from the first
 * block's) u64, then per stored column the base u64, the offset of its
 * bits in the block u32, the low 32 bits of the XXH64 of those bits u32
 * and its width u8 (0 to 56, or 64), padded to 8 bytes.
 */
#define SPANIDX_B_OFF 0
#define SPANIDX_B_BASE 8
#define SPANIDX_B_REL (SPANIDX_B_BASE + 8 * SPANIDX_NPCOLS)
#define SPANIDX_B_SUM (SPANIDX_B_REL + 4 * SPANIDX_NPCOLS)
#define SPANIDX_B_BITS (SPANIDX_B_SUM + 4 * SPANIDX_NPCOLS)
#define SPANIDX_BLOCK_SIZE ((SPANIDX_B_BITS + SPANIDX_NPCOLS + 7) & ~7)

/*
 * Maps path (or the open descriptor fd, kept by nobody after) and checks
 * it: magic, version, both checksums, sizes, sections and blocks inside
 * the file, the string table NUL-terminated, and every block's columns
 * (their checksums and values).  spanidx_open_lazy_fd checks all but the
 * blocks' columns, which spanidx_check then checks as they are needed.
 * Returns 0, or -ERR_IO, -ERR_NOTFOUND, -ERR_FORMAT (damaged: e says
 * what), -ERR_TRUNCATED, -ERR_UNSUPPORTED (another version: e says to
 * run ptspans again).
 */
int spanidx_open(struct spanidx *ix, const char *path, struct error *e)
    PTKIT_MUST_CHECK;
int spanidx_open_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e) PTKIT_MUST_CHECK;
int spanidx_open_lazy_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e) PTKIT_MUST_CHECK;

/* The logical columns as a mask for spanidx_check. */
#define SPANIDX_COL(c) (1u << (c))
#define SPANIDX_COLS_ALL ((1u << SPANIDX_NCOLS) - 1)

/*
 * Checks, once, the columns cols (a mask of SPANIDX_COL()) of the blocks
 * holding rows [first, end), which a lazily opened index must have
 * checked before it reads them.  Returns 0, or -ERR_FORMAT with e naming
 * the file, the block, its rows and the column.
 */
int spanidx_check(const struct spanidx *ix, uint64_t first, uint64_t end,
    unsigned cols, struct error *e) PTKIT_MUST_CHECK;

/*
 * For tests and the fuzzer: makes the checksums and the size of the n
 * bytes of an index at buf match those bytes, as a forger would, so that
 * what lies behind the checksums is reached.  Parts that do not parse
 * are left as they are.
 */
void spanidx_reseal(uint8_t *buf, size_t n);

/* The string at off, or "" when off is outside the table. */
const char *spanidx_str(const struct spanidx *ix, uint32_t off);

static inline uint64_t
spanidx_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Block b's directory entry (b < n_blocks). */
static inline const uint8_t *
spanidx_block(const struct spanidx *ix, uint64_t b)
{
	return ix->blocks + b * SPANIDX_BLOCK_SIZE;
}

/*
 * Bounds of block b's spans' times, from its directory entry alone: no
 * span of it starts before *start or ends after *end (UINT64_MAX when
 * the bound is past the clock).  A query skips the blocks they rule out.
 */
void spanidx_block_times(const struct spanidx *ix, uint64_t b,
    uint64_t *start, uint64_t *end);

static inline __attribute__((always_inline)) uint64_t
spanidx_pget(const struct spanidx *ix, unsigned pcol, uint64_t row)
{
	const uint8_t *d = spanidx_block(ix, row >> SPANIDX_BLOCK_SHIFT);
	unsigned bits = d[SPANIDX_B_BITS + pcol];
	uint32_t rel;
	uint64_t bit = (row & (SPANIDX_BLOCK_ROWS - 1)) * bits, v;

	memcpy(&rel, d + SPANIDX_B_REL + 4 * pcol, sizeof(rel));
	memcpy(&v, ix->data + spanidx_le64(d + SPANIDX_B_OFF) + rel +
	    (bit >> 3), sizeof(v));
	return spanidx_le64(d + SPANIDX_B_BASE + 8 * pcol) + (bits == 64 ? v :
	    (v >> (bit & 7)) & ((1ull << bits) - 1));
}

/* Function f's entry (f < n_funcs, as every row's is once checked). */
static inline const uint8_t *
spanidx_func(const struct spanidx *ix, uint64_t f)
{
	return ix->funcs + (f < ix->n_funcs ? f : 0) * SPANIDX_FUNC_SIZE;
}

/* Row row's value of logical column col, whatever its type (inlined
 * whole: callers name col as a constant, which leaves one case). */
static inline __attribute__((always_inline)) uint64_t
spanidx_value(const struct spanidx *ix, unsigned col, uint64_t row)
{
	static const unsigned char direct[SPANIDX_NCOLS] = {
		[SPANIDX_START_NS] = SPANIDX_P_START_NS,
		[SPANIDX_SELF_NS] = SPANIDX_P_SELF_NS,
		[SPANIDX_SELF_INSNS] = SPANIDX_P_SELF_INSNS,
		[SPANIDX_START] = SPANIDX_P_START,
		[SPANIDX_END] = SPANIDX_P_END,
		[SPANIDX_FLAGS] = SPANIDX_P_FLAGS,
	};
	const uint8_t *f;
	uint64_t v, t;

	switch (col) {
	case SPANIDX_ID:
		return spanidx_pget(ix, SPANIDX_P_ID, row) + row -
		    (1ull << 63);
	case SPANIDX_PARENT:
		v = spanidx_pget(ix, SPANIDX_P_PARENT, row);
		return v == 0 ? 0 : spanidx_pget(ix, SPANIDX_P_ID, row) + row -
		    (1ull << 63) - v;
	case SPANIDX_TID:
	case SPANIDX_PID:
		t = spanidx_pget(ix, SPANIDX_P_THREAD, row);
		f = ix->threads + (t < ix->n_threads ? t : 0) *
		    SPANIDX_THREAD_SIZE;
		{
			uint32_t id;

			memcpy(&id, f + (col == SPANIDX_PID ? 4 : 0),
			    sizeof(id));
			return id;
		}
	case SPANIDX_DEPTH:
		return spanidx_pget(ix, SPANIDX_P_DEPTH, row) - 0x80000000ull;
	case SPANIDX_CALL_SITE:
		v = spanidx_pget(ix, SPANIDX_P_CALL_SITE, row);
		memcpy(&v, ix->sites + (v < ix->n_sites ? v : 0) * 8,
		    sizeof(v));
		return v;
	case SPANIDX_END_NS:
		return spanidx_pget(ix, SPANIDX_P_START_NS, row) +
		    spanidx_pget(ix, SPANIDX_P_SELF_NS, row) +
		    spanidx_pget(ix, SPANIDX_P_CALLEE_NS, row);
	case SPANIDX_INSNS:
		return spanidx_pget(ix, SPANIDX_P_SELF_INSNS, row) +
		    spanidx_pget(ix, SPANIDX_P_CALLEE_INSNS, row);
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
		return spanidx_pget(ix, direct[col < SPANIDX_NCOLS ? col :
		    SPANIDX_START], row);
	}
}

static inline __attribute__((always_inline)) uint64_t
spanidx_u64(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return spanidx_value(ix, col, row);
}

static inline __attribute__((always_inline)) uint32_t
spanidx_u32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (uint32_t)spanidx_value(ix, col, row);
}

static inline __attribute__((always_inline)) int32_t
spanidx_i32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (int32_t)(uint32_t)spanidx_value(ix, col, row);
}

static inline __attribute__((always_inline)) uint8_t
spanidx_u8(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (uint8_t)spanidx_value(ix, col, row);
}

/* Thread t of the thread table (t < n_threads). */
void spanidx_thread(const struct spanidx *ix, uint64_t t, uint32_t *tid,
    uint32_t *pid, uint64_t *spans);

void spanidx_close(struct spanidx *ix);

#endif
