/*
 * aggkeep: aggregates.bin, the whole-trace aggregates kept with an
 * analysis (man ptkit-spans.5, "aggregates.bin"), so that the function
 * and module totals of the whole trace or of some threads (ptquery's
 * summary and hotpaths, ptdiff) need no walk over every span.
 *
 * Owns the file's layout, writing it (from the finished index.bin, by
 * span/aggregate's own walk: the figures are agg_hotpaths's by
 * construction) and its checks when it is opened: magic, version, size,
 * an XXH64 of the whole file, the span count against the index's, the
 * identity of the index it was made from against the index there is (so
 * that a file copied from another analysis of as many spans is refused),
 * every entry's group and thread in their tables, and the entries' spans
 * summing to the index's.  A file refused is never answered from: the
 * caller (span/analysis) says why and the totals are found by the walk.
 * Memory is the file itself: its size is bounded by the distinct
 * (thread, function) pairs, never by the spans.
 */
#ifndef PTKIT_AGGKEEP_H
#define PTKIT_AGGKEEP_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AGGKEEP_MAGIC "PTKAGGR\n"
/* 2: the header carries the identity of its index (AGGKEEP_INDEX_AT). */
#define AGGKEEP_VERSION 2
#define AGGKEEP_HEADER_SIZE 72
#define AGGKEEP_GROUP_SIZE 8	/* name, module: string offsets, u32 */
#define AGGKEEP_THREAD_SIZE 16	/* tid, pid, first entry, entries: u32 */
#define AGGKEEP_FIGS 9		/* u64 figures of a set, in file order */
#define AGGKEEP_ENTRY_SIZE (8 + 2 * 8 * AGGKEEP_FIGS)

struct agg;
struct agg_filter;
struct analysis;

struct aggkeep {
	uint8_t *base;			/* the file, mapped; NULL: none */
	size_t size;
	uint64_t spans, late;
	uint32_t n_fn, n_mod, n_threads, strtab_size;
	uint64_t n_ent;
	const uint8_t *groups, *threads, *ent;
	const char *strtab;
};

/*
 * Writes dir/aggregates.bin from the index a holds open (only a->ix is
 * read).  Returns 0, -ERR_NOMEM or -ERR_IO (e names the file).
 */
int aggkeep_write(const char *dir, const struct analysis *a,
    struct error *e) PTKIT_MUST_CHECK;

/* The same from dir/index.bin, which it opens and closes: what ptspans
 * and the bench's generator call once the index is written. */
int aggkeep_write_dir(const char *dir, struct error *e) PTKIT_MUST_CHECK;

/*
 * Maps dir/aggregates.bin (beneath dir, no link followed) into k and
 * checks it against an index of rows spans whose identity is index_id
 * (aggkeep_index_id).  Returns 0, -ERR_NOTFOUND (no such file),
 * -ERR_FORMAT (damaged, or made from another index: e says what),
 * -ERR_UNSUPPORTED (another version), -ERR_PERM, -ERR_IO.  On failure k
 * holds nothing.
 */
int aggkeep_open(struct aggkeep *k, const char *dir, uint64_t rows,
    uint64_t index_id, struct error *e) PTKIT_MUST_CHECK;

/*
 * The identity of an index.bin: the XXH64 (seed 0) of its header, the
 * SPANIDX_HEADER_SIZE bytes at header.  The header holds the counts, the
 * checksum of the tables (the block directory with each block's column
 * checksums, the function, thread and call site tables, the strings)
 * and its own checksum, so another index, even of as many spans, has
 * another identity.  The writer stores the identity of the index it
 * walked; aggkeep_open compares it with the index's there is.
 */
uint64_t aggkeep_index_id(const uint8_t *header);

/*
 * The same of dir/index.bin, of which only the header is read (beneath
 * dir, no link followed; not checked: a damaged header has another
 * identity, which the aggregates then do not match).  For a query of
 * totals, which maps no index.  Returns 0, -ERR_NOTFOUND, -ERR_FORMAT
 * (shorter than a header), -ERR_PERM, -ERR_IO.
 */
int aggkeep_index_id_at(const char *dir, uint64_t *id, struct error *e)
    PTKIT_MUST_CHECK;
void aggkeep_close(struct aggkeep *k);

/*
 * agg_hotpaths's answer for group (enum agg_group) and f from k, into
 * out (zeroed by it): rows in the order the walk makes them, figures
 * summed over the threads f lets through.  Returns 1 when answered, 0
 * when k does not hold that answer (AGG_INLINE, a time window, inside),
 * -ERR_NOMEM.
 */
int aggkeep_answer(const struct aggkeep *k, struct agg *out, int group,
    const struct agg_filter *f, struct error *e) PTKIT_MUST_CHECK;

/* The process of thread tid (that of its first span); 0 when it has
 * no spans. */
uint32_t aggkeep_pid(const struct aggkeep *k, uint32_t tid);

/* The same into *pid (when not NULL): 0, or -1 when tid has no spans. */
int aggkeep_pid_of(const struct aggkeep *k, uint32_t tid, uint32_t *pid);

/*
 * The checksum of the size bytes of an aggregates file at b (size at
 * least AGGKEEP_HEADER_SIZE): the XXH64 of the header before the checksum
 * field, its last, and of everything after the header.  The writer
 * stores it, the reader compares it; tests and the fuzzer store it after
 * a change, as a forger would, to reach the checks behind it.
 */
uint64_t aggkeep_checksum(const uint8_t *b, size_t size);
#define AGGKEEP_INDEX_AT 56	/* the index's identity, u64 */
#define AGGKEEP_CHECKSUM_AT 64	/* the checksum's place in the header, u64 */

#endif
