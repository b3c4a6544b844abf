/*
 * spanidx: index.bin, the binary columnar index of an analysis's spans
 * (man ptkit-spans.5, "index.bin"), written by ptspans and memory-mapped
 * by ptquery.
 *
 * Owns the file layout: a 64-byte header, a column directory, one array
 * per column (rows in spans.jsonl order, each array 8-byte aligned), and a
 * string table of NUL-terminated strings (offset 0 is ""), plus a
 * streaming writer (columns are spooled to temporary files, so memory is
 * bounded by the distinct strings, not by the rows) and a reader over a
 * read-only mapping.  All integers are little endian.
 */
#ifndef PTKIT_SPANIDX_H
#define PTKIT_SPANIDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define SPANIDX_MAGIC "PTKSPIX\n"
#define SPANIDX_VERSION 1
#define SPANIDX_HEADER_SIZE 64
#define SPANIDX_COL_NAME 16

/* Column value types (the directory's type byte). */
enum spanidx_type {
	SPANIDX_U8 = 1,
	SPANIDX_U32 = 2,
	SPANIDX_I32 = 3,
	SPANIDX_U64 = 4,
};

/* The columns of version 1, in file order. */
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

/* Returns 0, -ERR_NOMEM or -ERR_IO. */
int spanidx_add(struct spanidx_writer *w, const struct spanidx_row *r,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * Writes the index to path (created or truncated, 0644) and frees w.
 * Returns 0 or -ERR_IO (e names path).  spanidx_writer_free() drops a
 * writer without writing.
 */
int spanidx_writer_finish(struct spanidx_writer *w, const char *path,
    struct error *e) PTKIT_MUST_CHECK;
void spanidx_writer_free(struct spanidx_writer *w);

/* ----------------------------------------------------------------- */
/* Reader */

struct spanidx {
	const uint8_t *base;		/* the mapping */
	size_t size;
	uint64_t rows;
	const void *col[SPANIDX_NCOLS];	/* arrays of `rows` values */
	const char *strtab;
	uint64_t strtab_size;
};

/*
 * Maps path and checks it: magic, version, sizes, every column of
 * version 1 present with its type and inside the file, the string table
 * NUL-terminated.  Unknown extra columns are ignored.  Returns 0, or
 * -ERR_IO, -ERR_NOTFOUND, -ERR_FORMAT, -ERR_TRUNCATED, -ERR_UNSUPPORTED
 * (another version).
 */
int spanidx_open(struct spanidx *ix, const char *path, struct error *e)
    PTKIT_MUST_CHECK;

/* The string at off, or "" when off is outside the table. */
const char *spanidx_str(const struct spanidx *ix, uint32_t off);

uint64_t spanidx_u64(const struct spanidx *ix, unsigned col, uint64_t row);
uint32_t spanidx_u32(const struct spanidx *ix, unsigned col, uint64_t row);
int32_t spanidx_i32(const struct spanidx *ix, unsigned col, uint64_t row);
uint8_t spanidx_u8(const struct spanidx *ix, unsigned col, uint64_t row);

void spanidx_close(struct spanidx *ix);

#endif
