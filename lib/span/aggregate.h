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
 * helpers; no times: inlined code has no call to time).  Inline rows
 * honour has_tid only.  Incomplete spans a filter leaves out are counted
 * in out->incomplete_spans and incomplete_self_ns (with f NULL every
 * span counts).  Returns 0, -ERR_NOMEM, or -ERR_FORMAT/-ERR_IO
 * (inline.jsonl).
 */
int agg_hotpaths(struct agg *out, const struct analysis *a,
    enum agg_group group, const struct agg_filter *f, struct error *e)
    PTKIT_MUST_CHECK;

/*
 * Callers (the functions whose spans are the parents of fn's spans;
 * "(none)" for spans without a caller in the analysis) and callees (the
 * functions whose spans have a fn span as parent), each with calls =
 * spans, total_ns = their durations, self_ns, insns of those spans.
 * Returns 0, -ERR_NOTFOUND (no span named fn: "no function named 'X'"),
 * -ERR_NOMEM.
 */
int agg_calls(struct agg *callers, struct agg *callees,
    const struct analysis *a, const char *fn, const struct agg_filter *f,
    struct error *e) PTKIT_MUST_CHECK;

/* The string table offset of s in the index, or -1 when it has none. */
int64_t agg_find_string(const struct analysis *a, const char *s);

void agg_free(struct agg *g);

#endif
