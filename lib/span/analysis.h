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
 * O(max depth) memory (analysis_walk).  ptquery and ptdiff use it.  The
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
};

/*
 * Opens path (analysis or snapshot directory) into a.  Returns 0, or
 * -ERR_NOTFOUND (no such directory, or neither index.bin nor spans.jsonl:
 * "not an analysis directory"), -ERR_FORMAT (spans.jsonl or manifest.json
 * unreadable, no manifest.json, spans.jsonl holding another number of
 * spans than the manifest, index.bin damaged with nothing to rebuild it
 * from; e says which and why), -ERR_IO, -ERR_NOMEM.  On failure nothing
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
 * File f of the analysis (a JSON Lines file) opened for reading, in
 * whichever form it has (compressed or plain), its file name in *name.
 * Returns the stream, or NULL with e: -ERR_NOTFOUND (neither form),
 * -ERR_IO, -ERR_NOMEM.  A damaged compressed file reads as a stream
 * error (ferror).
 */
FILE *analysis_open_jsonl(const struct analysis *a, enum spandir_file f,
    const char **name, struct error *e);

/* Convenience accessors of row r. */
static inline uint64_t
analysis_rows(const struct analysis *a)
{
	return a->ix.rows;
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
