/*
 * spandir: the format of the analysis directory (man ptkit-spans.5), in
 * both directions.
 *
 * Owns the schema version, the names of the directory's files, the
 * members of its records and of manifest.json (written here, and named
 * here for the readers), the manifest's version and checksum (written
 * and checked here: every reader parses it through
 * spandir_manifest_read_fd), and the words of the span edge causes, gap
 * causes and event kinds: the "start"/"end" names of spans.jsonl, which
 * index.bin stores as their numbers in this order (enum cs_start,
 * enum cs_end of span/callstack), the "cause" of gaps.jsonl and the
 * "kind" of events.jsonl.
 *
 * ptspans writes the directory with it.  Its span-line writer, the hot
 * path, keeps its own hand-tuned formatting but takes every member name
 * from the SPANDIR_SPAN_* keys below, in the order SPANDIR_SPAN_* lists
 * them; the other records are written here.  span/analysis (the reader
 * ptquery and ptdiff use) turns span lines back into index rows here
 * (spandir_span_row), and readers look members up by the keys here.
 * index.bin's layout stays fmt/spanidx's.
 */
#ifndef PTKIT_SPANDIR_H
#define PTKIT_SPANDIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/error.h"
#include "base/jsonw.h"
#include "fmt/blkstream.h"
#include "fmt/spanidx.h"
#include "span/callstack.h"

/* The "v" of every record; members are only added.  The manifest has
 * its own, SPANDIR_MANIFEST_VERSION. */
#define SPANDIR_SCHEMA 1

/* The files, in the order the manifest's "files" lists them. */
enum spandir_file {
	SPANDIR_SPANS,			/* spans.jsonl */
	SPANDIR_INLINE,			/* inline.jsonl */
	SPANDIR_GAPS,			/* gaps.jsonl */
	SPANDIR_THREADS,		/* threads.jsonl */
	SPANDIR_EVENTS,			/* events.jsonl */
	SPANDIR_JSONL_NR,		/* the JSON Lines files end here */
	SPANDIR_INDEX = SPANDIR_JSONL_NR, /* index.bin */
	SPANDIR_AGGREGATES,		/* aggregates.bin (span/aggkeep) */
	SPANDIR_MANIFEST,		/* manifest.json (not in "files") */
	SPANDIR_FILE_NR
};

const char *spandir_file_name(enum spandir_file f);

/* dir/<file name>.  Returns 0 or -ERR_RANGE. */
int spandir_path(const char *dir, enum spandir_file f, char *buf,
    size_t size, struct error *e) PTKIT_MUST_CHECK;

/*
 * spans.jsonl and inline.jsonl, the large files, are written
 * zstd-compressed by default, as spans.jsonl.zst and inline.jsonl.zst
 * (SPANDIR_ZST appended); readers take either form.  The name of f's
 * compressed form, or NULL when f is only ever plain.
 */
#define SPANDIR_ZST ".zst"
const char *spandir_zst_name(enum spandir_file f);

/*
 * The path of the form of f that dir holds (the compressed one first) in
 * buf, and its file name in *name.  Returns 0, -ERR_NOTFOUND (neither)
 * or -ERR_RANGE.
 */
int spandir_find(const char *dir, enum spandir_file f, char *buf,
    size_t size, const char **name) PTKIT_MUST_CHECK;

/*
 * The words of the records.  *_name returns "unknown" past the table;
 * *_of returns the number of a name, or -1.
 */
const char *spandir_start_name(unsigned start);	/* enum cs_start */
const char *spandir_end_name(unsigned end);	/* enum cs_end */
const char *spandir_gap_cause_name(unsigned cause); /* enum cs_gap_cause */
const char *spandir_event_name(unsigned kind);	/* enum cs_event_kind */
int spandir_start_of(const char *name);
int spandir_end_of(const char *name);

/*
 * The members of a span line, in the order they are written.  Addresses
 * are "0x..." strings or null, ids null when 0.
 */
#define SPANDIR_SPAN_V		"v"
#define SPANDIR_SPAN_ID		"id"
#define SPANDIR_SPAN_TID	"tid"
#define SPANDIR_SPAN_PID	"pid"
#define SPANDIR_SPAN_FN		"fn"
#define SPANDIR_SPAN_RAW	"raw"
#define SPANDIR_SPAN_MODULE	"module"
#define SPANDIR_SPAN_DEPTH	"depth"
#define SPANDIR_SPAN_PARENT	"parent"
#define SPANDIR_SPAN_CALL_SITE	"call_site"
#define SPANDIR_SPAN_ENTRY	"entry"
#define SPANDIR_SPAN_START_NS	"start_ns"
#define SPANDIR_SPAN_END_NS	"end_ns"
#define SPANDIR_SPAN_DUR_NS	"dur_ns"
#define SPANDIR_SPAN_SELF_NS	"self_ns"
#define SPANDIR_SPAN_INSNS	"insns"
#define SPANDIR_SPAN_SELF_INSNS	"self_insns"
#define SPANDIR_SPAN_INLINE_INSNS "inline_insns"
#define SPANDIR_SPAN_START	"start"
#define SPANDIR_SPAN_END	"end"
#define SPANDIR_SPAN_TAIL_CALL	"tail_call"
#define SPANDIR_SPAN_ASYNC	"async"

/*
 * A span line read back as an index row (fn, raw, module point into o).
 * Returns 0, or -1 when o is not a span record.
 */
int spandir_span_row(const json_t *o, struct spanidx_row *r);

/* Members of gaps.jsonl and threads.jsonl that readers look up. */
#define SPANDIR_REC_TID		"tid"
#define SPANDIR_REC_PID		"pid"
#define SPANDIR_REC_START_NS	"start_ns"
#define SPANDIR_REC_END_NS	"end_ns"
#define SPANDIR_REC_FIRST_NS	"first_ns"
#define SPANDIR_REC_LAST_NS	"last_ns"
#define SPANDIR_REC_NAME	"name"

/* One inlined call of inline.jsonl. */
struct spandir_inline {
	uint64_t id, span, parent;	/* parent 0: straight in the span */
	uint32_t tid;
	const struct sym_inline *site;
	uint64_t insns, total_insns;
};

/* One line of threads.jsonl. */
struct spandir_thread {
	const struct cs_thread_stats *st;
	const char *name;
	const uint64_t *counters;	/* the stream's end, BLKS_C_* */
};

/* The trigger event, from the snapshot's manifest. */
struct spandir_trigger {
	const char *kind, *detail;	/* detail may be NULL */
	uint64_t time_ns, wall_ns;
};

/* Each writes one record as a JSON object and a newline to w. */
void spandir_write_inline(struct jsonw *w, const struct spandir_inline *in);
void spandir_write_gap(struct jsonw *w, const struct cs_gap *g);
void spandir_write_event(struct jsonw *w, const struct cs_event *ev);
void spandir_write_map(struct jsonw *w, const struct blks_map *m);
void spandir_write_thread(struct jsonw *w, const struct spandir_thread *t);
void spandir_write_trigger(struct jsonw *w, const struct spandir_trigger *t);

/* ---- manifest.json ---- */

/* The "quality" object's counts. */
struct spandir_quality {
	uint64_t threads, blocks, insns, spans, unnamed, unwound, cut_frames;
	uint64_t tail_calls, signals, sigreturns, ret_mismatch, unknown_insn;
	uint64_t ring_start_threads, decode_errors, overflows, lost;
	uint64_t gaps[CS_GAP_NR], gap_ns[CS_GAP_NR];
	uint64_t inline_records, inline_insns;
	int32_t min_depth;
	uint64_t max_depth;
	/* From the code map. */
	uint64_t inline_walks_failed, images, images_missing;
	uint64_t images_without_symbols, undecodable_insns;
};

/* One entry of the "threads" array. */
struct spandir_coverage {
	uint32_t tid;
	uint64_t first_ns, last_ns, gap_ns, insns, spans;
};

/* The snapshot's manifest, when it could be read. */
struct spandir_capture {
	int known;			/* 0: only snapshot_id, from the path */
	const char *snapshot_id;
	uint64_t start_ns, end_ns, start_wall_ns, end_wall_ns;
};

struct spandir_manifest {
	const char *analysis_id, *tool;
	const char *snapshot;		/* its path, "" when unknown */
	struct spandir_capture capture;
	const char *decoder;
	int inline_on;
	const struct blks_header *time;	/* base, TIME_CONV, timed */
	const struct spandir_quality *quality;
	const struct spandir_coverage *threads;
	size_t n_threads;
	int jsonl_zst;			/* spans, inline written compressed */
	int spans_hashed;		/* spans_xxh64 is the lines' XXH64 */
	uint64_t spans_xxh64;
	/* files_xxh64[f] is the XXH64 of file f for each f that
	 * spandir_xxh64_member names (gaps, threads, events). */
	int files_hashed;
	uint64_t files_xxh64[SPANDIR_JSONL_NR];
};

/*
 * The manifest's own version, its "v" (the records' stays SPANDIR_SCHEMA):
 * 2 since it carries its checksum.  A manifest of another version is
 * refused (written by an older or a newer ptspans: run it again), as
 * index.bin of another version is.
 */
#define SPANDIR_MANIFEST_VERSION 2

/*
 * The manifest's checksum is its last member, written exactly as
 *
 *     "manifest_xxh64":"0x<16 lowercase hex digits>"}<newline>
 *
 * (SPANDIR_MANIFEST_TAIL bytes: the member, the object's closing brace
 * and a newline, nothing else), whose digits are the XXH64 (seed 0) of
 * every byte of the file before the member's opening quote: from the
 * opening brace through the comma that precedes it.  There is no
 * insignificant byte: whitespace anywhere is inside the hashed bytes,
 * and the tail is matched byte for byte.
 */
#define SPANDIR_M_MANIFEST_XXH64 "manifest_xxh64"
#define SPANDIR_MANIFEST_TAIL	(sizeof("\"" SPANDIR_M_MANIFEST_XXH64 \
    "\":\"0x0123456789abcdef\"}\n") - 1)

/*
 * Writes the manifest to f (not closed), its checksum last.  Returns 0,
 * or jsonw_finish's error, -ERR_NOMEM, -ERR_IO (errno says why).
 */
int spandir_write_manifest(FILE *f, const struct spandir_manifest *m)
    PTKIT_MUST_CHECK;

/*
 * The checksum member that ends a manifest whose bytes before it are
 * body[0..len) (ending with the comma after the last other member),
 * written into tail: SPANDIR_MANIFEST_TAIL bytes, no NUL.  For the
 * writer above and for tools that forge manifests (tests, benches).
 */
void spandir_manifest_tail(const void *body, size_t len, char *tail);

/*
 * A manifest's bytes, buf[0..len), checked and parsed: its checksum
 * (above) and its version.  Returns the document, or NULL with e
 * (-ERR_FORMAT: no checksum, one that does not match, not JSON;
 * -ERR_UNSUPPORTED: another version; -ERR_NOMEM), whose message names
 * manifest.json and says to run ptspans again.  Never a document the
 * checksum does not vouch for.
 */
json_t *spandir_manifest_parse(const char *buf, size_t len, struct error *e);

/* The same, read from fd (not closed) to its end.  Also -ERR_IO. */
json_t *spandir_manifest_read_fd(int fd, struct error *e);

/*
 * Reading the manifest: member path of m, a dotted path ("quality.spans":
 * member spans of object quality).  The _u64 and _str forms return dflt
 * when it is absent or not a number (>= 0) / a string.
 */
const json_t *spandir_manifest_member(const json_t *m, const char *path);

/*
 * The manifest member that holds file f's checksum, the XXH64 of its
 * bytes checked whenever it is opened (gaps_xxh64, threads_xxh64,
 * events_xxh64), or NULL when f has none there: spans.jsonl's
 * (spans_xxh64, or its zstd frames') is checked when it is indexed,
 * inline.jsonl's by its frames, index.bin and aggregates.bin have
 * their own.
 */
const char *spandir_xxh64_member(enum spandir_file f);

/*
 * The checksum member of m in *sum: 1, or 0 when m has no such member,
 * -1 when it is not "0x" and 16 hex digits (a damaged manifest).
 */
int spandir_manifest_xxh64(const json_t *m, const char *member,
    uint64_t *sum);

/*
 * The XXH64 (seed 0) of what fd holds from its offset to its end, in
 * *sum.  Returns 0, or -1 with errno (read's).
 */
int spandir_fd_xxh64(int fd, uint64_t *sum) PTKIT_MUST_CHECK;
uint64_t spandir_manifest_u64(const json_t *m, const char *path,
    uint64_t dflt);
const char *spandir_manifest_str(const json_t *m, const char *path,
    const char *dflt);

/* The manifest's members, as paths for the readers above. */
#define SPANDIR_M_ANALYSIS_ID	"analysis_id"
#define SPANDIR_M_TOOL		"tool"
#define SPANDIR_M_SNAPSHOT	"snapshot"	/* its path */
#define SPANDIR_M_SNAPSHOT_ID	"snapshot_id"
#define SPANDIR_M_CAPTURE	"capture"
#define SPANDIR_M_CAPTURE_START	SPANDIR_M_CAPTURE ".start_ns"
#define SPANDIR_M_CAPTURE_END	SPANDIR_M_CAPTURE ".end_ns"
#define SPANDIR_M_DECODER	"decoder"
/* The XXH64 (seed 0) of an uncompressed spans.jsonl's bytes, as
 * "0x" and 16 hex digits: its checksum (a zstd frame has its own). */
#define SPANDIR_M_SPANS_XXH64	"spans_xxh64"
/* The same of gaps.jsonl, threads.jsonl and events.jsonl, always
 * written plain: their checksums.  A manifest without them was written
 * by a ptspans before them, and its files are read unchecked. */
#define SPANDIR_M_GAPS_XXH64	"gaps_xxh64"
#define SPANDIR_M_THREADS_XXH64	"threads_xxh64"
#define SPANDIR_M_EVENTS_XXH64	"events_xxh64"
/* The names of the files written, as written (.zst or not). */
#define SPANDIR_M_FILES		"files"
#define SPANDIR_M_QUALITY	"quality"
#define SPANDIR_M_Q(k)		SPANDIR_M_QUALITY "." k	/* "quality.k" */
#define SPANDIR_Q_GAPS		"gaps"		/* by cause, in quality */
#define SPANDIR_Q_GAP_NS	"gap_ns"	/* by cause, in quality */
#define SPANDIR_M_SPANS		SPANDIR_M_Q("spans")
#define SPANDIR_M_THREADS	"threads"	/* array of coverage */
#define SPANDIR_COV_TID		"tid"
#define SPANDIR_COV_FIRST_NS	"first_ns"
#define SPANDIR_COV_LAST_NS	"last_ns"
#define SPANDIR_COV_GAP_NS	"gap_ns"
#define SPANDIR_COV_SPANS	"spans"

#endif
