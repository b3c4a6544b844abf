/*
 * analysis: an analysis directory (man ptkit-spans.5) opened for reading.
 *
 * Owns finding the directory (an analysis directory, or a snapshot
 * directory whose derived/default/ is used), its manifest.json (without
 * which an analysis is incomplete: what a killed ptspans leaves), and the
 * mapping of index.bin, which it rebuilds from spans.jsonl when the index
 * is missing, damaged, older than spans.jsonl or holds another number of
 * spans than the manifest says; a rebuild that finds another number of
 * spans in spans.jsonl than the manifest says is an error, and one that
 * cannot write into the directory (read-only) keeps the index in memory.  It also owns the one walk every
 * aggregate needs: the spans of each thread with their ancestors, in
 * O(max depth) memory (analysis_walk), and opening the aggregates kept
 * with it (span/aggkeep), which are refused when the manifest names them
 * and they are missing, damaged, older than spans.jsonl or of another
 * index (the walk answers then).  ptquery and ptdiff use it.  The
 * directory's format (file names, record members, the manifest) is
 * span/spandir's; the snapshot's derived/default/ is fmt/store's.
 */
#ifndef PTKIT_ANALYSIS_H
#define PTKIT_ANALYSIS_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/error.h"
#include "fmt/spanidx.h"
#include "span/aggkeep.h"
#include "span/spandir.h"

struct analysis {
	char dir[PATH_MAX];		/* the analysis directory itself */
	json_t *manifest;		/* manifest.json, NULL if absent */
	struct spanidx ix;		/* index.bin, mapped */
	/* Why index.bin was rebuilt by analysis_open ("" when it was not):
	 * "missing", "older than spans.jsonl", "holds 3 spans, the manifest
	 * says 4" or the reader's complaint. */
	char rebuilt[ERROR_MSG_MAX];
	/* Why the rebuilt index is only in memory ("" when it was saved):
	 * the error of writing it into the directory. */
	char unsaved[ERROR_MSG_MAX];
	/* aggregates.bin (span/aggkeep), kept.base NULL when it is not
	 * answered from: an analysis written before it (silently), an index
	 * rebuilt, or a file refused, whose reason is in kept_refused. */
	struct aggkeep kept;
	char kept_refused[ERROR_MSG_MAX];
	/* Opened for totals: ix is not open yet (analysis_open_index). */
	int index_deferred;
};

/*
 * Opens path (analysis or snapshot directory) into a.  Returns 0, or
 * -ERR_NOTFOUND (no such directory, or neither index.bin nor spans.jsonl:
 * "not an analysis directory"), -ERR_FORMAT (spans.jsonl or manifest.json
 * unreadable, no manifest.json, one that does not match its checksum
 * (span/spandir), spans.jsonl holding another number of
 * spans than the manifest, index.bin damaged with nothing to rebuild it
 * from; e says which and why), -ERR_UNSUPPORTED (a manifest or an index
 * of another version), -ERR_IO, -ERR_NOMEM.  On failure nothing
 * is left open.
 */
int analysis_open(struct analysis *a, const char *path, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * As analysis_open, but index.bin's blocks are left unchecked
 * (spanidx_open_lazy_fd): the caller checks with spanidx_check the rows
 * and columns it reads before it reads them, and a damaged block is then
 * its error (not rebuilt).  For queries that read a few blocks of a large
 * index.
 */
int analysis_open_lazy(struct analysis *a, const char *path,
    struct error *e) PTKIT_MUST_CHECK;
void analysis_close(struct analysis *a);

/*
 * What the caller will read: ANALYSIS_ALL (the index; analysis_open), or
 * ANALYSIS_TOTALS, the function and module totals of the whole trace or
 * of threads (agg_hotpaths without a window or inline rows), for which
 * the kept aggregates suffice: when they are there and whole, the index
 * is neither opened nor checked (index_deferred is set, analysis_rows is
 * theirs) until analysis_open_index; otherwise as ANALYSIS_ALL; or
 * ANALYSIS_LAZY, a few blocks of the index (analysis_open_lazy).
 */
enum analysis_need { ANALYSIS_ALL, ANALYSIS_TOTALS, ANALYSIS_LAZY };

int analysis_open_for(struct analysis *a, const char *path,
    enum analysis_need need, struct error *e) PTKIT_MUST_CHECK;

/* Opens and checks the index an ANALYSIS_TOTALS open deferred (else
 * nothing).  Returns 0 or as analysis_open. */
int analysis_open_index(struct analysis *a, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * File f of the analysis (a JSON Lines file) opened for reading, in
 * whichever form it has (compressed or plain), its file name in *name.
 * A file whose checksum the manifest holds (gaps.jsonl, threads.jsonl,
 * events.jsonl: span/spandir's spandir_xxh64_member) is checked against
 * it first.  Returns the stream, or NULL with e: -ERR_NOTFOUND (neither
 * form), -ERR_FORMAT (its bytes do not match the manifest's checksum, or
 * that checksum is damaged: e names the file and says to run ptspans
 * again), -ERR_IO, -ERR_NOMEM.  A damaged compressed file reads as a
 * stream error (ferror).
 */
FILE *analysis_open_jsonl(const struct analysis *a, enum spandir_file f,
    const char **name, struct error *e);

/* Convenience accessors of row r. */
static inline uint64_t
analysis_rows(const struct analysis *a)
{
	return a->index_deferred ? a->kept.spans : a->ix.rows;
}

const char *analysis_fn(const struct analysis *a, uint64_t r);
const char *analysis_module(const struct analysis *a, uint64_t r);

/*
 * A member of the manifest: "quality.spans" style dotted paths.  Returns
 * the value or dflt when absent or not a number / string.
 */
uint64_t analysis_manifest_u64(const struct analysis *a, const char *path,
    uint64_t dflt);
const char *analysis_manifest_str(const struct analysis *a, const char *path,
    const char *dflt);

/*
 * The walk.  Rows are visited from the last to the first: ptspans writes
 * a span when it ends, so backwards every span comes after its caller.
 * For each row, stack[0..depth) are the rows of its ancestors, outermost
 * first (as far as they are in the analysis).  visit returns 0 to go on
 * or a negative -ERR_* that stops the walk and is returned.
 */
struct analysis_visit {
	uint64_t row;
	const uint64_t *stack;		/* ancestor rows, outermost first */
	size_t depth;
};

int analysis_walk(const struct analysis *a,
    int (*visit)(void *ctx, const struct analysis_visit *v), void *ctx,
    struct error *e) PTKIT_MUST_CHECK;

/* The row of span id, or -1 (a linear scan: for one-off lookups). */
int64_t analysis_find_span(const struct analysis *a, uint64_t id);

#endif
