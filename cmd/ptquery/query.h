/*
 * ptquery internals: the options, the row tables every row kind
 * produces, their rendering in the table formats (text, table, csv,
 * json) with paging, and the span formats (folded, chrome, fxt).
 */
#ifndef PTQUERY_QUERY_H
#define PTQUERY_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <limits.h>

#include "fmt/manifest.h"
#include "span/aggregate.h"
#include "span/analysis.h"
#include "sym/symcache.h"

extern const char *const query_tool;

enum query_kind { K_SUMMARY, K_HOTPATHS, K_TIMELINE, K_CALLS, K_AT,
	K_BRANCHES, K_INSNS, K_GAPS, K_THREADS, K_TREE, K_SOURCE, K_IMAGES };
enum query_format { F_TEXT, F_TABLE, F_CSV, F_JSON, F_FOLDED, F_CHROME,
	F_FXT };

struct query_options {
	const char *analysis;
	int kind, group, format;
	int weight;			/* --weight: 0 not given, 1 ns, 2 insns */
	const char *sort, *function, *cursor;
	const char **modules;		/* --module: images' paths or names */
	size_t n_modules;
	const char **exclude;		/* --exclude-module: likewise */
	size_t n_exclude;
	double min_share;		/* --min-share: percent, -1 not given */
	int inline_frames;		/* --inline: inlined calls as frames */
	const char *address;		/* --address: MODULE+OFFSET or ADDR */
	uint64_t tid, from_ns, to_ns, at_ns, span, limit, max_bytes;
	int has_tid, has_at, has_span, has_limit, has_depth, has_group;
	uint64_t depth;			/* --depth: tree levels below */
	uint64_t pid;			/* --pid: its threads, found in main */
	int has_pid;
	uint32_t *pid_tids;
	size_t n_pid_tids;
	const struct manifest *snap;	/* the snapshot's manifest, NULL when
					   it could not be read (main said so) */
	const char *clock;		/* manifest_clock_note of the snapshot */
	const char *function_asked;	/* --function as given */
	int function_inline;		/* --function is only ever inlined */
	int incomplete;			/* --incomplete: rank those spans too */
	int wall_clock;			/* --wall-clock: span times since the
					   epoch as well */
	uint64_t max_insns;		/* --max-insns: the decoded window of
					   branches and insns; 0: no cap */
};

/*
 * Instructions branches and insns decode at most by default: about ten
 * seconds of ptdecode's JSON Lines, so that a query over a long ring
 * answers (saying where it stopped) instead of running for minutes.
 */
#define QUERY_MAX_INSNS 20000000u

/*
 * Does an image path pass --module and --exclude-module (each naming an
 * image by its path or its file name)?
 */
int query_module_ok(const struct query_options *o, const char *path);

/* Whether image path is the one name names (its path or file name). */
int query_module_is(const char *path, const char *name);

/* Whether --module or --exclude-module was given. */
int query_module_filtered(const struct query_options *o);

/* Does thread tid pass --tid and --pid? */
int query_tid_ok(const struct query_options *o, uint32_t tid);

/*
 * The wall-clock time, in ns since the epoch, of span time 0: the
 * capture's end is known in both clocks (the recorder read them at one
 * instant; under emu the shared clock is host time from a wall origin
 * read once), and span times count from the capture's start.  0 when the
 * analysis does not know its capture.
 */
uint64_t query_wall_zero(const struct analysis *a);

/*
 * ns since the epoch as UTC ISO 8601 to the nanosecond
 * ("2026-12-02T00:30:21.222007960Z"): exact, where a JSON number that
 * large is not (jq and JavaScript read doubles).
 */
void query_wall_text(uint64_t ns, char *buf, size_t size);

enum col_type { COL_U64, COL_I64, COL_HEX, COL_STR };

struct col {
	const char *name;
	enum col_type type;
	int ascending;		/* --sort order: 1 smallest first */
};

union cell {
	uint64_t u;
	int64_t i;
	const char *s;
};

/*
 * A row kind's answer: nrows rows whose cells get() fills (ncols of
 * them; strings stay valid until the next get).  order, when set, is the
 * permutation table_sort made.
 */
struct table {
	const char *kind;
	const struct col *cols;
	size_t ncols;
	size_t nrows;
	void *ctx;
	void (*get)(void *ctx, size_t row, union cell *out);
	size_t *order;
	char summary[512];		/* json's one-line "summary" */
	uint64_t total;			/* rows in all, when more than nrows
					   (insns keeps only up to its page) */
	const char *function;		/* the function --function matched */
	const char *note;		/* how to read the rows, or NULL: text
					   and table end with "note=...", json
					   has a member */
};

/*
 * Sorts t by column name (numeric columns only; "start" means start_ns).
 * Returns 0, or prints a usage error and returns EXIT_USAGE.
 */
int table_sort(struct table *t, const char *name);

/*
 * Prints the page of t that o asks for (--cursor, --limit, --max-bytes)
 * in o->format to stdout.  Returns an exit status.
 */
int table_print(struct table *t, const struct query_options *o);

/* Parses --cursor into the first row; EXIT_USAGE (reported) when bad. */
int query_cursor(const struct query_options *o, size_t nrows, size_t *first);

/* The kinds: each returns an exit status, having reported failures. */
int kind_summary(const struct analysis *a, const struct query_options *o);
int kind_hotpaths(const struct analysis *a, const struct query_options *o);
int kind_timeline(const struct analysis *a, const struct query_options *o);
int kind_calls(const struct analysis *a, const struct query_options *o);
int kind_at(const struct analysis *a, const struct query_options *o);
int kind_gaps(const struct analysis *a, const struct query_options *o);
int kind_threads(const struct analysis *a, const struct query_options *o);
int kind_decoded(const struct analysis *a, const struct query_options *o);
int kind_tree(const struct analysis *a, const struct query_options *o);
int kind_source(const struct analysis *a, const struct query_options *o);
int kind_images(const struct analysis *a, const struct query_options *o);

/*
 * The snapshot an analysis was made from, for the kinds that read it
 * (source.c): its directory, manifest and symbol tables (debuginfo from
 * its images/ as well).
 */
struct query_images {
	char snap[PATH_MAX];
	struct manifest m;
	struct symcache *sc;
	char debug_dir[PATH_MAX + 16];
	const char *dirs[1];
};

/* The snapshot's directory into snap; -1 after reporting. */
int query_snapshot_dir(const struct analysis *a, char *snap, size_t size);

/* Opens qi (close it even on failure); -1 after reporting. */
int query_images_open(struct query_images *qi, const struct analysis *a);
void query_images_close(struct query_images *qi);

/*
 * The symbol table of the image mapped as mapped (its archived copy,
 * whose path goes to archived[size] when not NULL).  Returns 0, or -1
 * when the snapshot did not archive it or it cannot be read.
 */
int query_image_open(struct query_images *qi, const char *mapped,
    const struct symtab **st, char *archived, size_t size);

/* The filter of --tid, --from, --to. */
void query_filter(const struct query_options *o, struct agg_filter *f);

/*
 * Span formats over the rows (of the index) in rows[first..first+n):
 * folded (every span that passes the filters, or with sel the rows r
 * with sel[r] set, stacks with self time),
 * chrome and fxt (those rows as complete events).  Return exit statuses.
 */
int span_folded(const struct analysis *a, const struct query_options *o,
    const char *sel);
int span_chrome(const struct analysis *a, const uint64_t *rows, size_t n,
    const char *next_cursor, int inline_frames);
int span_fxt(const struct analysis *a, const uint64_t *rows, size_t n);

#endif
