/*
 * aggregate: per-function (inlined function, module) totals over the
 * spans of an analysis, and the callers and callees of one function.
 *
 * Owns the definitions of the figures ptquery's hotpaths and calls kinds
 * print and ptdiff compares (man ptquery.1, "COLUMNS"):
 *   calls       spans entered by a call seen in the trace (start "seen")
 *   spans       every span, also those cut off by the ring start or a gap
 *   total_ns    time inside the function, callees included, counted once
 *               per outermost activation (recursion is not counted twice,
 *               so total_ns never exceeds the captured time of a thread)
 *   insns       instructions likewise (outermost activations)
 *   self_ns, self_insns   the function's own time and instructions
 *   sum_ns, max_ns        every span's duration summed (mean = sum/spans)
 *                         and the longest
 * Memory is bounded by the number of distinct groups and the deepest
 * stack, never by the number of spans (the spans stay in the mapping).
 * Function and module totals of the whole trace or of some threads come
 * from the aggregates ptspans kept (span/aggkeep, made by agg_split_walk
 * below) when the analysis has them: the same figures without a walk.
 */
#ifndef PTKIT_AGGREGATE_H
#define PTKIT_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "span/analysis.h"
#include "base/error.h"

enum agg_group { AGG_FUNCTION, AGG_INLINE, AGG_MODULE };

/*
 * Which spans count: has_tid selects one thread, has_tids a set of them
 * (one process's threads: tids are unique among a snapshot's processes);
 * start_ns in [from, to).  Incomplete spans (agg_incomplete) count in
 * agg_hotpaths only with incomplete set: their time is only the part
 * the history holds, so they would rank by where the history began.
 */
struct agg_filter {
	int has_tid;
	uint32_t tid;
	int has_tids;
	const uint32_t *tids;
	size_t n_tids;
	uint64_t from_ns, to_ns;
	int incomplete;
	const char *inside;	/* AGG_INLINE: only helpers inlined into it */
};

/*
 * Whether a span of start cause start (enum cs_start) is incomplete: it
 * began before the history it is in (open at the ring's start or when
 * the trace resumed after a gap), so it starts at the history's first
 * instant and its time and instructions are only what came after.
 */
int agg_incomplete(uint8_t start);

/* Does thread tid pass f's thread filters (f NULL: every thread)? */
int agg_filter_tid(const struct agg_filter *f, uint32_t tid);

struct agg_row {
	const char *name;		/* function, inlined function or module */
	const char *module;		/* "" for inline and module rows */
	int is_inline;			/* a row of inline.jsonl (AGG_INLINE) */
	uint64_t calls, spans, total_ns, self_ns, insns, self_insns;
	uint64_t outer;			/* outermost spans: those total_ns and
					   insns are summed over */
	uint64_t sum_ns, max_ns;
	uint64_t incomplete;		/* incomplete spans left out of it */
};

struct agg {
	struct agg_row *row;
	size_t n, cap;
	uint64_t incomplete_spans;	/* left out by agg_hotpaths, and */
	uint64_t incomplete_self_ns;	/* their self time */
	char **owned;			/* names not in the mapping */
	size_t n_owned;
};

/*
 * Fills out (zeroed by it) with one row per group, in no particular
 * order.  AGG_INLINE: the function rows' self_insns are their own
 * instructions without their inlined helpers, which are rows of their
 * own (calls = inlined instances; insns with, self_insns without nested
 * helpers; no times: inlined code has no call to time).  An instance
 * counts when the span holding it passes f (thread and window), and with
 * f->inside only when that span is of the function f->inside, so that a
 * helper's row is what it cost inside that function.  Returns 0,
 * -ERR_NOMEM, -ERR_NOTFOUND (no function f->inside), or
 * -ERR_FORMAT/-ERR_IO (inline.jsonl).  Incomplete spans a filter leaves out
 * are counted in out->incomplete_spans and incomplete_self_ns (with f
 * NULL every span counts).
 */
int agg_hotpaths(struct agg *out, const struct analysis *a,
    enum agg_group group, const struct agg_filter *f, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Callers (the functions whose spans are the parents of fn's spans;
 * "(none)" for spans without a caller in the analysis) and callees (the
 * functions whose spans have a fn span as parent), each with calls =
 * spans, total_ns = their durations, self_ns, insns of those spans.  A
 * function only ever inlined has as callers the functions it was inlined
 * into (calls = instances, insns and self_insns theirs, no times) and no
 * callees.  Returns 0, -ERR_NOTFOUND (no span named fn: "no function named 'X'"),
 * -ERR_NOMEM.
 */
int agg_calls(struct agg *callers, struct agg *callees,
    const struct analysis *a, const char *fn, const struct agg_filter *f,
    struct error *e) PTKIT_MUST_CHECK;

/*
 * The function a typed name stands for, as the string table offset of
 * its name: the function of exactly that name; else the one whose name
 * is it with a compiler's clone suffix (lookup finds lookup.constprop.0,
 * .isra.N, .part.N, .cold, .lto_priv.N) or a demangled parameter list; a
 * mangled name (_Z..., _R...) is demangled first.  Returns the offset,
 * or -1 with e: -ERR_NOTFOUND ("no function named 'X'", with the closest
 * names when some hold it), -ERR_INVALID (several clones: which), or
 * -ERR_NOMEM.
 */
int64_t agg_resolve_function(const struct analysis *a, const char *name,
    struct error *e);

/* A span holding inlined instances of a function, and what they did. */
struct agg_host {
	uint64_t span;			/* the span's id */
	uint64_t instances, insns, self_insns;
};

/*
 * The spans on the threads f lets through that hold inlined instances
 * of fn (inline.jsonl), by span id, in *out (free it) and *n (0: fn is
 * never inlined).  Returns 0, -ERR_NOMEM or -ERR_IO.
 */
int agg_inline_hosts(const struct analysis *a, const char *fn,
    const struct agg_filter *f, struct agg_host **out, size_t *n,
    struct error *e) PTKIT_MUST_CHECK;

/* The entry of span in h (n entries, as agg_inline_hosts made), or NULL. */
const struct agg_host *agg_host_find(const struct agg_host *h, size_t n,
    uint64_t span);

/*
 * The figures of each thread's spans of each group, for span/aggkeep to
 * keep with the analysis: groups in the order agg_hotpaths makes its rows
 * (the walk's), an entry per thread and group that has spans, its
 * complete spans' figures in fig[0] and its incomplete ones' in fig[1]
 * (outermost as the walk of every span says), so that any set of threads,
 * with or without --incomplete, sums to what agg_hotpaths finds.  Spans
 * starting at or past AGG_WINDOW_END (no query without --to counts them)
 * are in no entry, counted in late.
 */
#define AGG_WINDOW_END ((uint64_t)INT64_MAX)

struct agg_split_entry {
	uint32_t tid, group;
	struct agg_row fig[2];
};

struct agg_split_thread {
	uint32_t tid, pid;		/* pid: that of its first row */
};

struct agg_split {
	struct agg groups;		/* names only, no figures */
	struct agg_split_entry *ent;
	size_t n_ent, cap_ent;
	struct agg_split_thread *thr;	/* threads with spans */
	size_t n_thr, cap_thr, last_thr;
	uint64_t late;
};

/* Both groupings (AGG_FUNCTION, AGG_MODULE) in one walk of every span. */
int agg_split_walk(struct agg_split *fn, struct agg_split *mod,
    const struct analysis *a, struct error *e) PTKIT_MUST_CHECK;
void agg_split_free(struct agg_split *s);

/* The string table offset of s in the index, or -1 when it has none. */
int64_t agg_find_string(const struct analysis *a, const char *s);

void agg_free(struct agg *g);

#endif
