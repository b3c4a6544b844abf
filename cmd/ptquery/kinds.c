/*
 * ptquery: the row kinds (hotpaths, timeline, calls, at, gaps, threads)
 * as tables, and the summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include <jansson.h>

#include "span/callstack.h"
#include "span/spandir.h"
#include "base/jsonw.h"
#include "fmt/manifest.h"
#include "query.h"
#include "inlines.h"
#include "tool/report.h"

int
query_module_is(const char *path, const char *name)
{
	const char *base = strrchr(path, '/');

	return strcmp(path, name) == 0 ||
	    (base != NULL && strcmp(base + 1, name) == 0);
}

int
query_module_ok(const struct query_options *o, const char *path)
{
	size_t i;

	for (i = 0; i < o->n_exclude; i++)
		if (query_module_is(path, o->exclude[i]))
			return 0;
	if (o->n_modules == 0)
		return 1;
	for (i = 0; i < o->n_modules; i++)
		if (query_module_is(path, o->modules[i]))
			return 1;
	return 0;
}

int
query_module_filtered(const struct query_options *o)
{
	return o->n_modules > 0 || o->n_exclude > 0;
}

int
query_tid_ok(const struct query_options *o, uint32_t tid)
{
	struct agg_filter f;

	query_filter(o, &f);
	return agg_filter_tid(&f, tid);
}

void
query_filter(const struct query_options *o, struct agg_filter *f)
{
	f->has_tid = o->has_tid;
	f->tid = (uint32_t)o->tid;
	f->has_tids = o->has_pid;
	f->tids = o->pid_tids;
	f->n_tids = o->n_pid_tids;
	f->from_ns = o->from_ns;
	f->to_ns = o->to_ns;
	f->incomplete = o->incomplete;
	f->inside = NULL;
}

static int
nomem(void)
{
	report(query_tool, NULL, NULL, "out of memory");
	return EXIT_FAIL;
}

/* Sorts when --sort says so (or by dflt), then prints. */
static int
print_sorted(struct table *t, const struct query_options *o,
    const char *dflt)
{
	int rc = 0;

	if (o->sort != NULL || dflt != NULL)
		rc = table_sort(t, o->sort ? o->sort : dflt);
	if (rc == 0)
		rc = table_print(t, o);
	free(t->order);
	t->order = NULL;
	return rc;
}

static int
only_table_formats(const struct query_options *o, const char *kind)
{
	static const char *const names[] = { "text", "table", "csv", "json",
	    "folded", "chrome", "fxt" };

	if (o->format <= F_JSON)
		return 0;
	report(query_tool, "--format", "use text, table, csv or json",
	    "%s does not apply to --kind %s", names[o->format], kind);
	return EXIT_USAGE;
}

/* ----------------------------------------------------------------- */
/* hotpaths */

static const struct col hot_cols[] = {
	{ "calls", COL_U64, 0 }, { "spans", COL_U64, 0 },
	{ "total_ns", COL_U64, 0 }, { "self_ns", COL_U64, 0 },
	{ "insns", COL_U64, 0 }, { "self_insns", COL_U64, 0 },
	{ "mean_ns", COL_U64, 0 }, { "max_ns", COL_U64, 0 },
	{ "note", COL_STR, 0 },
	{ "module", COL_STR, 0 }, { "name", COL_STR, 0 },
};

struct hot_rows {
	struct agg g;
	size_t *sel;			/* rows of g shown (--function) */
};

static void
hot_get(void *ctx, size_t row, union cell *c)
{
	const struct hot_rows *h = ctx;
	const struct agg_row *r = &h->g.row[h->sel[row]];

	c[0].u = r->calls;
	c[1].u = r->spans;
	c[2].u = r->total_ns;
	c[3].u = r->self_ns;
	c[4].u = r->insns;
	c[5].u = r->self_insns;
	c[6].u = r->spans ? r->sum_ns / r->spans : 0;
	c[7].u = r->max_ns;
	c[8].s = r->incomplete > 0 ? "incomplete_left_out" :
	    r->self_ns == 0 && r->total_ns > 0 ? "all_in_callees" :
	    r->is_inline ? "inlined" : "-";
	c[9].s = r->module[0] ? r->module : "-";
	c[10].s = r->name;
}

/*
 * What the ranking left out: the incomplete spans (--incomplete counts
 * them), said after the totals.
 */
static const char *
incomplete_note(const struct agg *g, char *buf, size_t size)
{
	if (g->incomplete_spans == 0)
		return "";
	snprintf(buf, size, " (%" PRIu64 " incomplete spans, %" PRIu64
	    " ns of self time, left out)", g->incomplete_spans,
	    g->incomplete_self_ns);
	return buf;
}

int
kind_hotpaths(const struct analysis *a, const struct query_options *o)
{
	struct hot_rows h = { 0 };
	struct table t = { "hotpaths", hot_cols, 11, 0, &h, hot_get, NULL,
	    "" };
	struct agg_filter f;
	struct error e;
	uint64_t self = 0, spans = 0;
	const char *inside_module = NULL;
	char note[96];
	int rc;

	if (o->format == F_FOLDED)
		return span_folded(a, o, NULL);
	if ((rc = only_table_formats(o, "hotpaths")) != 0)
		return rc;
	query_filter(o, &f);
	/* Inline rows of one function: what its helpers cost inside it. */
	if (o->group == AGG_INLINE && o->function != NULL &&
	    !o->function_inline)
		f.inside = o->function;
	if (agg_hotpaths(&h.g, a, o->function_inline ? AGG_INLINE :
	    (enum agg_group)o->group, &f, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	if ((h.sel = malloc((h.g.n + 1) * sizeof(*h.sel))) == NULL) {
		agg_free(&h.g);
		return nomem();
	}
	/* Inlined helpers have no image of their own: inside --function,
	 * that function's. */
	for (size_t i = 0; f.inside != NULL && i < h.g.n; i++)
		if (!h.g.row[i].is_inline &&
		    strcmp(h.g.row[i].name, f.inside) == 0)
			inside_module = h.g.row[i].module;
	for (size_t i = 0; i < h.g.n; i++) {
		const char *mod = o->group == AGG_MODULE ? h.g.row[i].name :
		    h.g.row[i].is_inline ? inside_module : h.g.row[i].module;

		/* the totals: of the images --module lets through */
		if (query_module_filtered(o) &&
		    (mod == NULL || !query_module_ok(o, mod)))
			continue;
		if (!h.g.row[i].is_inline) {
			self += h.g.row[i].self_ns;
			spans += h.g.row[i].spans;
		}
		if (o->function == NULL ||
		    strcmp(h.g.row[i].name, o->function) == 0 ||
		    (f.inside != NULL && h.g.row[i].is_inline))
			h.sel[t.nrows++] = i;
	}
	if (o->function != NULL && t.nrows == 0) {
		report(query_tool, a->dir, NULL, "no function named '%s'",
		    o->function);
		rc = EXIT_FAIL;
	} else {
		snprintf(t.summary, sizeof(t.summary), "%zu %s, %" PRIu64
		    " spans, %" PRIu64 " ns of self time%s", t.nrows,
		    o->group == AGG_MODULE ? "modules" : "functions", spans,
		    self, incomplete_note(&h.g, note, sizeof(note)));
		rc = print_sorted(&t, o, "self_ns");
		if (rc == EXIT_OK && h.g.incomplete_spans > 0)
			report_warning(query_tool, a->dir, "%" PRIu64
			    " incomplete spans (begun before the history the "
			    "analysis holds) left out of the ranking: "
			    "--incomplete counts them", h.g.incomplete_spans);
	}
	free(h.sel);
	agg_free(&h.g);
	return rc;
}

/* ----------------------------------------------------------------- */
/* timeline and at: rows of the index */

static const struct col span_cols[] = {
	{ "id", COL_U64, 1 }, { "parent", COL_U64, 1 }, { "tid", COL_U64, 1 },
	{ "depth", COL_I64, 1 }, { "start_ns", COL_U64, 1 },
	{ "end_ns", COL_U64, 1 }, { "dur_ns", COL_U64, 0 },
	{ "self_ns", COL_U64, 0 }, { "insns", COL_U64, 0 },
	{ "self_insns", COL_U64, 0 }, { "start", COL_STR, 0 },
	{ "end", COL_STR, 0 }, { "module", COL_STR, 0 },
	{ "name", COL_STR, 0 },
	/* --wall-clock only */
	{ "start_wall", COL_STR, 1 }, { "end_wall", COL_STR, 1 },
};

/* --inline only, after the others */
static const struct col inline_col = { "inline", COL_STR, 0 };

struct span_rows {
	const struct analysis *a;
	uint64_t *row;
	size_t n, cap;
	uint64_t wall_zero;		/* wall ns at span time 0 */
	char wall[2][40];		/* the row's start_wall, end_wall */
	struct inlines in;		/* --inline: the inlined calls */
	size_t inline_at;		/* their column, 0: none */
	char *inl;			/* the row's inline cell */
	size_t inl_cap;
};

uint64_t
query_wall_zero(const struct analysis *a)
{
	uint64_t end_wall = analysis_manifest_u64(a, "capture.end_wall_ns", 0);
	uint64_t end = analysis_manifest_u64(a, "capture.end_ns", 0);
	uint64_t start = analysis_manifest_u64(a, "capture.start_ns", 0);

	if (end_wall == 0 || end < start || end - start > end_wall)
		return 0;
	return end_wall - (end - start);
}

void
query_wall_text(uint64_t ns, char *buf, size_t size)
{
	time_t sec = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;

	if (gmtime_r(&sec, &tm) == NULL ||
	    (n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(buf, size, "?");
		return;
	}
	snprintf(buf + n, size - n, ".%09" PRIu64 "Z", ns % 1000000000);
}

/*
 * A span's inlined calls as one cell: "outer>inner:INSNS" for each, its
 * chain and its own instructions, joined by ","; "-" for none.
 */
static const char *
inline_cell(struct span_rows *s, uint64_t span)
{
	const struct inline_rec *recs, *chain[64], *c;
	size_t n, len = 0, k, need;
	char num[24];

	recs = inlines_of(&s->in, span, &n);
	for (size_t i = 0; i < n; i++) {
		for (k = 0, c = &recs[i]; c != NULL && k < 64;
		    c = inlines_parent(recs, n, c->parent))
			chain[k++] = c;
		need = len + 24 + 2;
		for (size_t j = 0; j < k; j++)
			need += strlen(chain[j]->fn) + 1;
		if (need > s->inl_cap) {
			char *g = realloc(s->inl, need * 2);

			if (g == NULL)
				break;	/* the cell is cut; "..." says so */
			s->inl = g;
			s->inl_cap = need * 2;
		}
		if (len > 0)
			s->inl[len++] = ',';
		while (k > 0) {
			const char *fn = chain[--k]->fn;

			memcpy(s->inl + len, fn, strlen(fn));
			len += strlen(fn);
			if (k > 0)
				s->inl[len++] = '>';
		}
		snprintf(num, sizeof(num), ":%" PRIu64, recs[i].insns);
		memcpy(s->inl + len, num, strlen(num) + 1);
		len += strlen(num);
	}
	return len > 0 ? s->inl : "-";
}

static void
span_get(void *ctx, size_t i, union cell *c)
{
	struct span_rows *s = ctx;
	const struct spanidx *ix = &s->a->ix;
	uint64_t r = s->row[i];
	const char *mod = analysis_module(s->a, r);

	c[0].u = spanidx_u64(ix, SPANIDX_ID, r);
	c[1].u = spanidx_u64(ix, SPANIDX_PARENT, r);
	c[2].u = spanidx_u32(ix, SPANIDX_TID, r);
	c[3].i = spanidx_i32(ix, SPANIDX_DEPTH, r);
	c[4].u = spanidx_u64(ix, SPANIDX_START_NS, r);
	c[5].u = spanidx_u64(ix, SPANIDX_END_NS, r);
	c[6].u = c[5].u - c[4].u;
	c[7].u = spanidx_u64(ix, SPANIDX_SELF_NS, r);
	c[8].u = spanidx_u64(ix, SPANIDX_INSNS, r);
	c[9].u = spanidx_u64(ix, SPANIDX_SELF_INSNS, r);
	c[10].s = spandir_start_name(spanidx_u8(ix, SPANIDX_START, r));
	c[11].s = spandir_end_name(spanidx_u8(ix, SPANIDX_END, r));
	c[12].s = mod[0] ? mod : "-";
	c[13].s = analysis_fn(s->a, r);
	if (s->inline_at != 0)
		c[s->inline_at].s = inline_cell(s, c[0].u);
	if (s->wall_zero == 0)
		return;		/* no --wall-clock: the table has 14 columns */
	query_wall_text(s->wall_zero + c[4].u, s->wall[0], sizeof(s->wall[0]));
	query_wall_text(s->wall_zero + c[5].u, s->wall[1], sizeof(s->wall[1]));
	c[14].s = s->wall[0];
	c[15].s = s->wall[1];
}

static int
span_rows_add(struct span_rows *s, uint64_t r)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *n = realloc(s->row, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		s->row = n;
		s->cap = cap;
	}
	s->row[s->n++] = r;
	return 0;
}

/* Time order: start, then depth (callers first), then id. */
struct time_key {
	uint64_t start;
	int64_t depth;
	uint64_t id, row;
};

static int
by_time(const void *a, const void *b)
{
	const struct time_key *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int
sort_by_time(struct span_rows *s, int tid_first)
{
	const struct spanidx *ix = &s->a->ix;
	struct time_key *k = malloc((s->n + 1) * sizeof(*k));

	if (k == NULL)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		k[i].start = tid_first ? spanidx_u32(ix, SPANIDX_TID,
		    s->row[i]) : spanidx_u64(ix, SPANIDX_START_NS, s->row[i]);
		k[i].depth = spanidx_i32(ix, SPANIDX_DEPTH, s->row[i]);
		k[i].id = tid_first ? spanidx_u64(ix, SPANIDX_START_NS,
		    s->row[i]) : spanidx_u64(ix, SPANIDX_ID, s->row[i]);
		k[i].row = s->row[i];
	}
	qsort(k, s->n, sizeof(*k), by_time);
	for (size_t i = 0; i < s->n; i++)
		s->row[i] = k[i].row;
	free(k);
	return 0;
}

/*
 * The columns cols of the blocks of the index holding rows[0..n) checked
 * (a kind that reads few blocks opened the index lazily: main.c).
 * Returns 0, or EXIT_FAIL after reporting the damage.
 */
static int
check_rows(const struct analysis *a, const uint64_t *rows, size_t n,
    unsigned cols)
{
	uint64_t last = UINT64_MAX;
	struct error e;

	for (size_t i = 0; i < n; i++) {
		uint64_t b = rows[i] >> SPANIDX_BLOCK_SHIFT;

		if (b == last)
			continue;
		last = b;
		if (spanidx_check(&a->ix, b << SPANIDX_BLOCK_SHIFT,
		    (b + 1) << SPANIDX_BLOCK_SHIFT, cols, &e) < 0) {
			/* e names index.bin by its path */
			report_error(query_tool, NULL, &e, NULL);
			return EXIT_FAIL;
		}
	}
	return 0;
}

/*
 * Prints the rows of s as o asks, the span formats included.  total is
 * how many spans the query selects: s->n, or more when s holds only the
 * first page of them (timeline_first: a table format from the first row).
 */
static int
print_spans(struct span_rows *s, const struct query_options *o,
    const char *kind, size_t total)
{
	struct table t = { kind, span_cols, o->wall_clock ? 16 : 14, total, s,
	    span_get, NULL, "" };
	struct col cols[17];
	char next[32];
	size_t first, n;
	uint64_t *rows;
	int rc;

	if (o->inline_frames && o->format <= F_JSON) {
		if (inlines_read(s->a, &s->in) < 0)
			return EXIT_FAIL;
		memcpy(cols, span_cols, t.ncols * sizeof(*cols));
		cols[t.ncols] = inline_col;
		s->inline_at = t.ncols++;
		t.cols = cols;
	}

	/*
	 * What is printed checked first: without --sort or --cursor a table
	 * reads its first --limit rows alone.  (The span formats read the
	 * whole index, which main.c opened checked for them.)
	 */
	if (o->format <= F_JSON && o->sort == NULL && o->cursor == NULL &&
	    o->has_limit && o->limit < s->n)
		rc = check_rows(s->a, s->row, (size_t)o->limit,
		    SPANIDX_COLS_ALL);
	else
		rc = check_rows(s->a, s->row, s->n, SPANIDX_COLS_ALL);
	if (rc != 0)
		return rc;
	snprintf(t.summary, sizeof(t.summary), "%zu spans", total);
	if (o->wall_clock && (s->wall_zero = query_wall_zero(s->a)) == 0) {
		report(query_tool, s->a->dir, NULL, "--wall-clock: the "
		    "analysis has no capture times (its snapshot's manifest "
		    "could not be read)");
		return EXIT_FAIL;
	}
	if (o->format <= F_JSON)
		return print_sorted(&t, o, NULL);
	if (o->format == F_FOLDED && strcmp(kind, "at") == 0) {
		/* the stacks at the instant: those rows alone */
		char *sel = calloc(s->a->ix.rows + 1, 1);

		if (sel == NULL)
			return nomem();
		for (size_t i = 0; i < s->n; i++)
			sel[s->row[i]] = 1;
		rc = span_folded(s->a, o, sel);
		free(sel);
		return rc;
	}
	if (o->format == F_FOLDED)
		return span_folded(s->a, o, NULL);
	if (o->sort != NULL && (rc = table_sort(&t, o->sort)) != 0)
		return rc;
	if ((rc = query_cursor(o, s->n, &first)) != 0) {
		free(t.order);
		return rc;
	}
	n = s->n - first;
	if (o->has_limit && o->limit < n)
		n = (size_t)o->limit;
	if ((rows = malloc((n + 1) * sizeof(*rows))) == NULL) {
		free(t.order);
		return nomem();
	}
	for (size_t i = 0; i < n; i++)
		rows[i] = s->row[t.order ? t.order[first + i] : first + i];
	snprintf(next, sizeof(next), "o%zu", first + n);
	rc = o->format == F_CHROME ? span_chrome(s->a, rows, n,
	    first + n < s->n ? next : NULL, o->inline_frames) :
	    span_fxt(s->a, rows, n);
	/* a binary file has no place for the cursor: the rest is said here */
	if (rc == EXIT_OK && o->format == F_FXT && first + n < s->n)
		report_warning(query_tool, NULL, "fxt: wrote spans %zu to %zu "
		    "of %zu; the rest with --cursor %s", first, first + n,
		    s->n, next);
	free(rows);
	free(t.order);
	return rc;
}

/* The columns the selection of a timeline or of at reads. */
#define PICK_COLS (SPANIDX_COL(SPANIDX_START_NS) | \
    SPANIDX_COL(SPANIDX_END_NS) | SPANIDX_COL(SPANIDX_TID) | \
    SPANIDX_COL(SPANIDX_FN) | SPANIDX_COL(SPANIDX_ID))

/* Block b of the index checked for cols; 0, or EXIT_FAIL reported. */
static int
check_block(const struct analysis *a, uint64_t b, unsigned cols)
{
	uint64_t first = b << SPANIDX_BLOCK_SHIFT;

	return check_rows(a, &first, 1, cols);
}

/*
 * Whether a timeline's answer is its first --limit spans in time order
 * and their count alone (a table format, no --sort or --cursor, of the
 * whole trace: a window's count is kept nowhere), and the count can be
 * had without reading every span: from the kept aggregates.
 */
static int
timeline_first_only(const struct analysis *a, const struct query_options *o)
{
	return o->format <= F_JSON && o->sort == NULL && o->cursor == NULL &&
	    o->has_limit && !o->function_inline && o->from_ns == 0 &&
	    o->to_ns == AGG_WINDOW_END && a->kept.base != NULL;
}

/*
 * How many spans of --function (every function without it) pass --tid,
 * --pid and --module, complete or not, from the kept aggregates (their
 * entries are per thread and per function and module).  Returns 1 with
 * *n, 0 when they do not hold the answer, -1 out of memory.
 */
static int
kept_count(const struct analysis *a, const struct query_options *o,
    uint64_t *n)
{
	struct agg_filter f;
	struct error e;
	struct agg g;
	int rc;

	query_filter(o, &f);
	f.incomplete = 1;
	if ((rc = aggkeep_answer(&a->kept, &g, AGG_FUNCTION, &f, &e)) <= 0)
		return rc < 0 ? -1 : 0;
	*n = 0;
	for (size_t i = 0; i < g.n; i++)
		if ((o->function == NULL ||
		    strcmp(g.row[i].name, o->function) == 0) &&
		    query_module_ok(o, g.row[i].module))
			*n += g.row[i].spans;
	agg_free(&g);
	return 1;
}

/* A block by the earliest start its spans can have. */
struct block_at {
	uint64_t lo, b;
};

/* Sifts h[i] down the min-heap h[0..n) of blocks. */
static void
blocks_down(struct block_at *h, size_t n, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1, m = i;
		struct block_at t;

		if (c < n && h[c].lo < h[m].lo)
			m = c;
		if (c + 1 < n && h[c + 1].lo < h[m].lo)
			m = c + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Sifts h[i] down the max-heap h[0..n) of keys (by_time: the latest
 * on top). */
static void
keys_down(struct time_key *h, size_t n, size_t i)
{
	for (;;) {
		size_t c = 2 * i + 1, m = i;
		struct time_key t;

		if (c < n && by_time(&h[c], &h[m]) > 0)
			m = c;
		if (c + 1 < n && by_time(&h[c + 1], &h[m]) > 0)
			m = c + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void
keys_up(struct time_key *h, size_t i)
{
	while (i > 0 && by_time(&h[i], &h[(i - 1) / 2]) > 0) {
		struct time_key t = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/*
 * The first --limit spans of fn (-1: any) that pass the filters, of the
 * *count there are, in time order, into s, without collecting every one:
 * the blocks are read from the one whose spans can start first, the
 * latest of the spans kept so far is dropped for an earlier one, and the
 * reading stops at a block none of whose spans can start before it.
 * Only the blocks read are checked.  *count becomes the spans found when
 * every block was read.  Returns 0, EXIT_FAIL reported.
 */
static int
timeline_first(const struct analysis *a, const struct query_options *o,
    int64_t fn, struct span_rows *s, uint64_t *count)
{
	const struct spanidx *ix = &a->ix;
	size_t want = o->limit < *count ? (size_t)o->limit : (size_t)*count;
	size_t nb = (size_t)ix->n_blocks, kept = 0;
	struct block_at *bl = malloc((nb + 1) * sizeof(*bl));
	struct time_key *k = malloc((want + 1) * sizeof(*k));
	uint64_t found = 0, hi;
	int rc = EXIT_FAIL;

	if (bl == NULL || k == NULL) {
		rc = nomem();
		goto out;
	}
	for (size_t b = 0; b < nb; b++) {
		bl[b].b = b;
		spanidx_block_times(ix, b, &bl[b].lo, &hi);
	}
	for (size_t i = nb / 2; i-- > 0;)
		blocks_down(bl, nb, i);
	while (nb > 0 && !(kept == want && (want == 0 ||
	    bl[0].lo > k[0].start))) {
		uint64_t b = bl[0].b, first = b << SPANIDX_BLOCK_SHIFT;
		uint64_t end = first + SPANIDX_BLOCK_ROWS < ix->rows ?
		    first + SPANIDX_BLOCK_ROWS : ix->rows;
		int checked = 0;

		bl[0] = bl[--nb];
		blocks_down(bl, nb, 0);
		if (check_block(a, b, SPANIDX_COL(SPANIDX_FN)) != 0)
			goto out;
		for (uint64_t r = first; r < end; r++) {
			struct time_key t;

			if (fn >= 0 &&
			    spanidx_u32(ix, SPANIDX_FN, r) != (uint32_t)fn)
				continue;
			if (!checked && check_block(a, b, PICK_COLS |
			    SPANIDX_COL(SPANIDX_DEPTH)) != 0)
				goto out;
			checked = 1;
			t.start = spanidx_u64(ix, SPANIDX_START_NS, r);
			if (!query_tid_ok(o, spanidx_u32(ix, SPANIDX_TID, r)) ||
			    !query_module_ok(o, analysis_module(a, r)) ||
			    t.start >= o->to_ns)
				continue;
			found++;
			t.depth = spanidx_i32(ix, SPANIDX_DEPTH, r);
			t.id = spanidx_u64(ix, SPANIDX_ID, r);
			t.row = r;
			if (kept < want) {
				k[kept] = t;
				keys_up(k, kept++);
			} else if (want > 0 && by_time(&t, &k[0]) < 0) {
				k[0] = t;
				keys_down(k, kept, 0);
			}
		}
	}
	if (nb == 0)
		*count = found;
	if ((s->row = malloc((kept + 1) * sizeof(*s->row))) == NULL) {
		rc = nomem();
		goto out;
	}
	qsort(k, kept, sizeof(*k), by_time);
	for (size_t i = 0; i < kept; i++)
		s->row[i] = k[i].row;
	s->n = s->cap = kept;
	rc = 0;
out:
	free(bl);
	free(k);
	return rc;
}

int
kind_timeline(const struct analysis *a, const struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	struct span_rows s = { a, NULL, 0, 0 };
	int64_t fn = -1;
	uint64_t count;
	int rc;

	struct agg_host *hosts = NULL;
	size_t n_hosts = 0;
	struct error e;

	/* An inlined function: the spans of the functions holding it. */
	if (o->function_inline &&
	    (spanidx_check(ix, 0, ix->rows, SPANIDX_COLS_ALL, &e) < 0 ||
	    agg_inline_hosts(a, o->function, NULL, &hosts, &n_hosts, &e) < 0)) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	if (o->function != NULL && !o->function_inline &&
	    (fn = agg_find_string(a, o->function)) < 0) {
		report(query_tool, a->dir, NULL, "no function named '%s'",
		    o->function);
		return EXIT_FAIL;
	}
	if (timeline_first_only(a, o)) {
		int kept = kept_count(a, o, &count);

		if (kept < 0)
			return nomem();
		if (kept == 1 && (rc = timeline_first(a, o, fn, &s, &count)) != 0)
			goto done;
		/* a page of rows for the count (the aggregates were made
		 * from this index: anything else is the scan's to answer) */
		if (kept == 1 && s.n == (o->limit < count ? o->limit : count)) {
			rc = print_spans(&s, o, "timeline", (size_t)count);
			goto done;
		}
		free(s.row);
		s.row = NULL;
		s.n = s.cap = 0;
	}
	/*
	 * Block by block: those whose times lie outside the window are not
	 * read; of the others, the function column first, then the rest of
	 * a block once one of its spans is of the function.
	 */
	for (uint64_t b = 0; b < ix->n_blocks; b++) {
		uint64_t lo, hi, first = b << SPANIDX_BLOCK_SHIFT;
		uint64_t end = first + SPANIDX_BLOCK_ROWS < ix->rows ?
		    first + SPANIDX_BLOCK_ROWS : ix->rows;
		int checked = 0;

		spanidx_block_times(ix, b, &lo, &hi);
		if (lo >= o->to_ns || hi < o->from_ns)
			continue;
		if (check_block(a, b, SPANIDX_COL(SPANIDX_FN)) != 0)
			goto fail;
		for (uint64_t r = first; r < end; r++) {
			uint64_t st, en;

			if (fn >= 0 &&
			    spanidx_u32(ix, SPANIDX_FN, r) != (uint32_t)fn)
				continue;
			if (!checked && check_block(a, b, PICK_COLS) != 0)
				goto fail;
			checked = 1;
			st = spanidx_u64(ix, SPANIDX_START_NS, r);
			en = spanidx_u64(ix, SPANIDX_END_NS, r);
			if (!query_tid_ok(o, spanidx_u32(ix, SPANIDX_TID, r)))
				continue;
			if (hosts != NULL && agg_host_find(hosts, n_hosts,
			    spanidx_u64(ix, SPANIDX_ID, r)) == NULL)
				continue;
			if (!query_module_ok(o, analysis_module(a, r)))
				continue;
			if (st >= o->to_ns || en < o->from_ns)
				continue;
			if (span_rows_add(&s, r) < 0) {
				free(hosts);
				free(s.row);
				return nomem();
			}
		}
	}
	free(hosts);
	hosts = NULL;
	if (sort_by_time(&s, 0) < 0) {
		free(s.row);
		return nomem();
	}
	rc = print_spans(&s, o, "timeline", s.n);
done:
	inlines_free(&s.in);
	free(s.inl);
	free(s.row);
	return rc;
fail:
	free(hosts);
	free(s.row);
	return EXIT_FAIL;
}

int
kind_at(const struct analysis *a, const struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	struct span_rows s = { a, NULL, 0, 0 };
	uint64_t at = o->at_ns;
	struct error e;
	int64_t r0;
	int rc;

	if (o->has_span) {
		if (spanidx_check(ix, 0, ix->rows, SPANIDX_COL(SPANIDX_ID) |
		    SPANIDX_COL(SPANIDX_START_NS), &e) < 0) {
			report_error(query_tool, NULL, &e, NULL);
			return EXIT_FAIL;
		}
		if ((r0 = analysis_find_span(a, o->span)) < 0) {
			report(query_tool, a->dir, NULL, "no span with id %"
			    PRIu64, o->span);
			return EXIT_FAIL;
		}
		at = spanidx_u64(ix, SPANIDX_START_NS, (uint64_t)r0);
	} else if (!o->has_at) {
		report(query_tool, "--kind at", NULL, "needs --at NS or "
		    "--span ID");
		return EXIT_USAGE;
	}
	/* Only the blocks whose times hold the instant are read. */
	for (uint64_t b = 0; b < ix->n_blocks; b++) {
		uint64_t lo, hi, first = b << SPANIDX_BLOCK_SHIFT;
		uint64_t end = first + SPANIDX_BLOCK_ROWS < ix->rows ?
		    first + SPANIDX_BLOCK_ROWS : ix->rows;

		spanidx_block_times(ix, b, &lo, &hi);
		if (lo > at || hi <= at)
			continue;
		if (check_block(a, b, PICK_COLS) != 0) {
			free(s.row);
			return EXIT_FAIL;
		}
		for (uint64_t r = first; r < end; r++) {
			uint64_t st = spanidx_u64(ix, SPANIDX_START_NS, r);
			uint64_t en = spanidx_u64(ix, SPANIDX_END_NS, r);

			if (st > at || en <= at)
				continue;
			if (!query_tid_ok(o, spanidx_u32(ix, SPANIDX_TID, r)) ||
			    !query_module_ok(o, analysis_module(a, r)))
				continue;
			if (span_rows_add(&s, r) < 0) {
				free(s.row);
				return nomem();
			}
		}
	}
	if (sort_by_time(&s, 1) < 0) {
		free(s.row);
		return nomem();
	}
	rc = print_spans(&s, o, "at", s.n);
	inlines_free(&s.in);
	free(s.inl);
	free(s.row);
	return rc;
}

/* ----------------------------------------------------------------- */
/* calls */

static const struct col calls_cols[] = {
	{ "relation", COL_STR, 0 }, { "calls", COL_U64, 0 },
	{ "spans", COL_U64, 0 }, { "total_ns", COL_U64, 0 },
	{ "self_ns", COL_U64, 0 }, { "insns", COL_U64, 0 },
	{ "self_insns", COL_U64, 0 }, { "module", COL_STR, 0 },
	{ "name", COL_STR, 0 },
};

struct calls_rows {
	struct agg callers, callees;
	size_t *sel;
	size_t n_callers;		/* rows of sel that are callers */
};

static void
calls_get(void *ctx, size_t row, union cell *c)
{
	const struct calls_rows *h = ctx;
	int caller = row < h->n_callers;
	const struct agg_row *r = caller ? &h->callers.row[h->sel[row]] :
	    &h->callees.row[h->sel[row]];

	c[0].s = caller ? "caller" : "callee";
	c[1].u = r->calls;
	c[2].u = r->spans;
	c[3].u = r->total_ns;
	c[4].u = r->self_ns;
	c[5].u = r->insns;
	c[6].u = r->self_insns;
	c[7].s = r->module[0] ? r->module : "-";
	c[8].s = r->name;
}

static int
by_total(const void *a, const void *b, void *ctx)
{
	const struct agg *g = ctx;
	const struct agg_row *x = &g->row[*(const size_t *)a];
	const struct agg_row *y = &g->row[*(const size_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

int
kind_calls(const struct analysis *a, const struct query_options *o)
{
	struct calls_rows h;
	struct table t = { "calls", calls_cols, 9, 0, &h, calls_get, NULL,
	    "" };
	struct agg_filter f;
	struct error e;
	size_t n_callers;
	int rc;

	if ((rc = only_table_formats(o, "calls")) != 0)
		return rc;
	if (o->function == NULL) {
		report(query_tool, "--kind calls", NULL, "needs --function "
		    "NAME");
		return EXIT_USAGE;
	}
	query_filter(o, &f);
	if (agg_calls(&h.callers, &h.callees, a, o->function, &f, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	t.nrows = h.callers.n + h.callees.n;
	if ((h.sel = malloc((t.nrows + 1) * sizeof(*h.sel))) == NULL) {
		rc = nomem();
		goto out;
	}
	/* Callers then callees, each by total_ns; --module keeps the
	 * callers and callees of its images. */
	t.nrows = 0;
	for (size_t i = 0; i < h.callers.n; i++)
		if (query_module_ok(o, h.callers.row[i].module))
			h.sel[t.nrows++] = i;
	n_callers = t.nrows;
	for (size_t i = 0; i < h.callees.n; i++)
		if (query_module_ok(o, h.callees.row[i].module))
			h.sel[t.nrows++] = i;
	qsort_r(h.sel, n_callers, sizeof(*h.sel), by_total, &h.callers);
	qsort_r(h.sel + n_callers, t.nrows - n_callers, sizeof(*h.sel),
	    by_total, &h.callees);
	h.n_callers = n_callers;
	snprintf(t.summary, sizeof(t.summary), "%s: %zu callers, %zu callees",
	    o->function, n_callers, t.nrows - n_callers);
	rc = print_sorted(&t, o, NULL);
out:
	free(h.sel);
	agg_free(&h.callers);
	agg_free(&h.callees);
	return rc;
}

/* ----------------------------------------------------------------- */
/* gaps and threads: the rows of their JSON Lines files */

struct jsonl_rows {
	json_t **obj;
	size_t n, cap;
	const struct col *cols;
	size_t ncols;
	char hexbuf[4][32];
};

static void
jsonl_get(void *ctx, size_t row, union cell *c)
{
	struct jsonl_rows *j = ctx;
	const json_t *o = j->obj[row];

	for (size_t i = 0; i < j->ncols; i++) {
		const json_t *v = json_object_get(o, j->cols[i].name);

		if (j->cols[i].type == COL_STR) {
			c[i].s = json_is_string(v) ? json_string_value(v) :
			    "-";
		} else if (j->cols[i].type == COL_HEX) {
			c[i].u = json_is_string(v) ?
			    strtoull(json_string_value(v), NULL, 0) : 0;
		} else if (json_is_true(v) || json_is_false(v)) {
			c[i].u = json_is_true(v);
		} else if (j->cols[i].type == COL_I64) {
			c[i].i = json_integer_value(v);
		} else {
			c[i].u = (uint64_t)json_integer_value(v);
		}
	}
}

static void
jsonl_free(struct jsonl_rows *j)
{
	for (size_t i = 0; i < j->n; i++)
		json_decref(j->obj[i]);
	free(j->obj);
}

/* Reads dir/file, keeping the records that pass --tid, --from, --to. */
static int
jsonl_read(const struct analysis *a, enum spandir_file file,
    const struct query_options *o, int windowed, struct jsonl_rows *j)
{
	char *line = NULL;
	const char *name;
	size_t cap = 0;
	uint64_t lineno = 0;
	ssize_t len;
	struct error e;
	FILE *f;
	json_t *v;

	if ((f = analysis_open_jsonl(a, file, &name, &e)) == NULL) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		uint64_t st, en;

		lineno++;
		if ((v = json_loadb(line, (size_t)len, 0, NULL)) == NULL ||
		    !json_is_object(v)) {
			report(query_tool, a->dir, NULL, "%s line %" PRIu64
			    ": not a JSON object", name, lineno);
			json_decref(v);
			free(line);
			fclose(f);
			return EXIT_FAIL;
		}
		st = (uint64_t)json_integer_value(json_object_get(v,
		    windowed ? SPANDIR_REC_START_NS : SPANDIR_REC_FIRST_NS));
		en = (uint64_t)json_integer_value(json_object_get(v,
		    windowed ? SPANDIR_REC_END_NS : SPANDIR_REC_LAST_NS));
		if (!query_tid_ok(o, (uint32_t)json_integer_value(
		    json_object_get(v, SPANDIR_REC_TID))) ||
		    st >= o->to_ns || en < o->from_ns) {
			json_decref(v);
			continue;
		}
		if (j->n == j->cap) {
			size_t nc = j->cap ? j->cap * 2 : 64;
			json_t **n = realloc(j->obj, nc * sizeof(*n));

			if (n == NULL) {
				json_decref(v);
				free(line);
				fclose(f);
				return nomem();
			}
			j->obj = n;
			j->cap = nc;
		}
		j->obj[j->n++] = v;
	}
	free(line);
	fclose(f);
	return 0;
}

/* Named as the members of the records (span/spandir writes them): each
 * column is read by its name. */
static const struct col gap_cols[] = {
	{ "tid", COL_U64, 1 }, { "start_ns", COL_U64, 1 },
	{ "end_ns", COL_U64, 1 }, { "dur_ns", COL_U64, 0 },
	{ "frames_cut", COL_U64, 0 }, { "ip", COL_HEX, 1 },
	{ "resume_ip", COL_HEX, 1 }, { "cause", COL_STR, 0 },
};

static const struct col thread_cols[] = {
	{ "tid", COL_U64, 1 }, { "pid", COL_U64, 1 },
	{ "first_ns", COL_U64, 1 }, { "last_ns", COL_U64, 1 },
	{ "gap_ns", COL_U64, 0 }, { "blocks", COL_U64, 0 },
	{ "insns", COL_U64, 0 }, { "spans", COL_U64, 0 },
	{ "gaps", COL_U64, 0 }, { "max_depth", COL_U64, 0 },
	{ "min_depth", COL_I64, 0 }, { "tail_calls", COL_U64, 0 },
	{ "signals", COL_U64, 0 }, { "unwound", COL_U64, 0 },
	{ "cut_frames", COL_U64, 0 }, { "decode_errors", COL_U64, 0 },
	{ "overflows", COL_U64, 0 }, { "wrapped", COL_U64, 0 },
	{ "name", COL_STR, 0 },
};

static int
kind_jsonl(const struct analysis *a, const struct query_options *o,
    const char *kind, const struct col *cols, size_t ncols)
{
	struct jsonl_rows j = { NULL, 0, 0, cols, ncols, { "" } };
	struct table t = { kind, cols, ncols, 0, &j, jsonl_get, NULL, "" };
	int gaps = strcmp(kind, "gaps") == 0;
	int rc;

	if ((rc = only_table_formats(o, kind)) != 0)
		return rc;
	if ((rc = jsonl_read(a, gaps ? SPANDIR_GAPS : SPANDIR_THREADS, o,
	    gaps, &j)) != 0) {
		jsonl_free(&j);
		return rc;
	}
	t.nrows = j.n;
	snprintf(t.summary, sizeof(t.summary), "%zu %s", j.n, kind);
	rc = print_sorted(&t, o, NULL);
	jsonl_free(&j);
	return rc;
}

int
kind_gaps(const struct analysis *a, const struct query_options *o)
{
	return kind_jsonl(a, o, "gaps", gap_cols, 8);
}

int
kind_threads(const struct analysis *a, const struct query_options *o)
{
	return kind_jsonl(a, o, "threads", thread_cols, 19);
}

/* ----------------------------------------------------------------- */
/* tree: call paths below a function */

static const struct col tree_cols[] = {
	{ "depth", COL_U64, 1 }, { "calls", COL_U64, 0 },
	{ "spans", COL_U64, 0 }, { "total_ns", COL_U64, 0 },
	{ "self_ns", COL_U64, 0 }, { "insns", COL_U64, 0 },
	{ "self_insns", COL_U64, 0 }, { "path", COL_STR, 0 },
};

struct tree_row {
	char *path;
	uint64_t depth, calls, spans, total_ns, self_ns, insns, self_insns;
};

struct tree {
	const struct query_options *o;
	char note[256];
	const struct analysis *a;
	int64_t fn;			/* the root function, -1: every root */
	uint64_t max_depth;
	json_t *index;			/* path -> row number */
	struct tree_row *row;
	size_t n, cap;
	char buf[8192];
};

static void
tree_get(void *ctx, size_t i, union cell *c)
{
	const struct tree_row *r = &((struct tree *)ctx)->row[i];

	c[0].u = r->depth;
	c[1].u = r->calls;
	c[2].u = r->spans;
	c[3].u = r->total_ns;
	c[4].u = r->self_ns;
	c[5].u = r->insns;
	c[6].u = r->self_insns;
	c[7].s = r->path;
}

static int
tree_visit(void *ctx, const struct analysis_visit *v)
{
	struct tree *t = ctx;
	const struct spanidx *ix = &t->a->ix;
	size_t root = 0, len = 0, i, level;
	struct tree_row *r;
	json_t *at;

	if (!query_tid_ok(t->o, spanidx_u32(ix, SPANIDX_TID, v->row)))
		return 0;
	if (spanidx_u64(ix, SPANIDX_START_NS, v->row) < t->o->from_ns ||
	    spanidx_u64(ix, SPANIDX_START_NS, v->row) >= t->o->to_ns)
		return 0;
	/* The nearest span of the root function, itself included. */
	if (t->fn >= 0) {
		for (root = v->depth + 1; root-- > 0;)
			if (spanidx_u32(ix, SPANIDX_FN, root == v->depth ?
			    v->row : v->stack[root]) == (uint32_t)t->fn)
				break;
		if (root > v->depth)
			return 0;
	} else {
		/* the outermost frame that passes the module filters */
		while (root < v->depth && !query_module_ok(t->o,
		    analysis_module(t->a, v->stack[root])))
			root++;
	}
	/* --module, --exclude-module: the spans of those images, on paths
	 * of their frames alone (the others' are skipped, as a flame
	 * graph of one library shows it) */
	if (!query_module_ok(t->o, analysis_module(t->a, v->row)))
		return 0;
	for (i = root, level = 0; i <= v->depth && len < sizeof(t->buf); i++) {
		uint64_t fr = i == v->depth ? v->row : v->stack[i];

		if (i > root && i < v->depth &&
		    !query_module_ok(t->o, analysis_module(t->a, fr)))
			continue;
		len += (size_t)snprintf(t->buf + len, sizeof(t->buf) - len,
		    "%s%s", i > root ? ";" : "", analysis_fn(t->a, fr));
		level += i > root;
	}
	if (level > t->max_depth)
		return 0;
	if ((at = json_object_get(t->index, t->buf)) != NULL) {
		r = &t->row[json_integer_value(at)];
	} else {
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 256;
			struct tree_row *n = realloc(t->row, cap * sizeof(*n));

			if (n == NULL)
				return -ERR_NOMEM;
			t->row = n;
			t->cap = cap;
		}
		r = &t->row[t->n];
		memset(r, 0, sizeof(*r));
		if ((r->path = strdup(t->buf)) == NULL ||
		    json_object_set_new(t->index, t->buf,
		    json_integer((json_int_t)t->n)) < 0) {
			free(r->path);
			return -ERR_NOMEM;
		}
		r->depth = level;
		t->n++;
	}
	r->spans++;
	r->calls += spanidx_u8(ix, SPANIDX_START, v->row) == CS_START_SEEN;
	r->total_ns += spanidx_u64(ix, SPANIDX_END_NS, v->row) -
	    spanidx_u64(ix, SPANIDX_START_NS, v->row);
	r->self_ns += spanidx_u64(ix, SPANIDX_SELF_NS, v->row);
	r->insns += spanidx_u64(ix, SPANIDX_INSNS, v->row);
	r->self_insns += spanidx_u64(ix, SPANIDX_SELF_INSNS, v->row);
	return 0;
}

static int
by_path(const void *a, const void *b)
{
	return strcmp(((const struct tree_row *)a)->path,
	    ((const struct tree_row *)b)->path);
}

/* A path's share of the roots' instructions, in percent. */
static double
tree_share(const struct tree_row *r, uint64_t total)
{
	return total ? 100.0 * (double)r->insns / (double)total : 0;
}

static int
by_share(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x > y ? -1 : x < y;
}

/*
 * The share a path needs to be kept: --min-share, else the one that
 * fits the page: the --limit largest paths, and as many as a json row
 * each (about 110 bytes and a path of the average length) fit in
 * --max-bytes.  Returns the cut (paths of a share above it are kept, at
 * or above it with --min-share; -1: every path), or -2 out of memory.
 * A caller's share is never below its callee's (its instructions
 * include theirs), so a kept path's callers are kept.
 */
static double
tree_cut(const struct tree *tr, uint64_t total, int *explicit)
{
	const struct query_options *o = tr->o;
	size_t keep = tr->n, path_bytes = 0;
	double *share, cut;

	*explicit = o->min_share >= 0;
	if (*explicit)
		return o->min_share;
	if (o->has_limit && o->limit < keep)
		keep = (size_t)o->limit;
	if (o->max_bytes > 0 && tr->n > 0) {
		size_t row, fit;

		for (size_t i = 0; i < tr->n; i++)
			path_bytes += strlen(tr->row[i].path);
		row = 110 + path_bytes / tr->n;
		fit = o->max_bytes > 600 ? (size_t)(o->max_bytes - 600) / row :
		    1;
		if (fit < keep)
			keep = fit > 0 ? fit : 1;
	}
	if (keep >= tr->n)
		return -1;
	if ((share = malloc(tr->n * sizeof(*share))) == NULL)
		return -2;
	for (size_t i = 0; i < tr->n; i++)
		share[i] = tree_share(&tr->row[i], total);
	qsort(share, tr->n, sizeof(*share), by_share);
	cut = share[keep];
	free(share);
	return cut;
}

/*
 * Prunes the paths whose share of the instructions is below what
 * tree_cut says, and says so: how many, and the share of the subtrees
 * they made (the pruned paths whose caller was kept), in the summary and
 * the note of the answer.  Returns an exit status.
 */
static int
tree_prune(struct tree *tr, struct table *t)
{
	const struct query_options *o = tr->o;
	uint64_t total = 0, lost = 0;
	size_t kept = 0, pruned = 0;
	char *keep, *parent = NULL;
	int explicit;
	double cut;

	for (size_t i = 0; i < tr->n; i++)
		if (tr->row[i].depth == 0)
			total += tr->row[i].insns;
	if ((cut = tree_cut(tr, total, &explicit)) < -1 ||
	    (keep = calloc(tr->n + 1, 1)) == NULL)
		return nomem();
	/* tr->index numbers the paths as they were made: renumber */
	for (size_t i = 0; i < tr->n; i++) {
		double sh = tree_share(&tr->row[i], total);

		keep[i] = cut < 0 || (explicit ? sh >= cut : sh > cut);
		if (json_object_set_new(tr->index, tr->row[i].path,
		    json_integer((json_int_t)i)) < 0) {
			free(keep);
			return nomem();
		}
	}
	for (size_t i = 0; i < tr->n; i++) {
		struct tree_row *r = &tr->row[i];
		const char *semi = strrchr(r->path, ';');
		const json_t *up;

		if (keep[i]) {
			tr->row[kept++] = *r;
			continue;
		}
		pruned++;
		/* the top of a pruned subtree: a root, or its caller kept */
		free(parent);
		parent = semi ? strndup(r->path, (size_t)(semi - r->path)) :
		    NULL;
		if (semi != NULL && parent == NULL) {
			free(keep);
			return nomem();
		}
		if (r->depth == 0 || (parent != NULL && (up = json_object_get(
		    tr->index, parent)) != NULL && keep[json_integer_value(up)]))
			lost += r->insns;
		free(r->path);
	}
	free(parent);
	free(keep);
	tr->n = kept;
	if (pruned > 0) {
		snprintf(tr->note, sizeof(tr->note), "%zu call paths %s %.3g%% "
		    "of the instructions pruned, holding %.3g%% of them (%"
		    PRIu64 " instructions)%s", pruned, explicit ? "below" :
		    "of at most", cut, total ? 100.0 * (double)lost /
		    (double)total : 0, lost, explicit ? "" : " to fit the page; "
		    "--min-share 0 keeps every path");
		t->note = tr->note;
	}
	snprintf(t->summary, sizeof(t->summary), "%zu call paths%s%s, %"
	    PRIu64 " levels deep at most", kept, o->function ? " below " : "",
	    o->function ? o->function : "", tr->max_depth);
	if (pruned > 0)
		snprintf(t->summary + strlen(t->summary), sizeof(t->summary) -
		    strlen(t->summary), "; %zu more pruned, holding %.3g%% of "
		    "the instructions", pruned, total ? 100.0 * (double)lost /
		    (double)total : 0);
	if (pruned > 0 && o->format == F_CSV)
		report_warning(query_tool, tr->a->dir, "%s", tr->note);
	return EXIT_OK;
}

int
kind_tree(const struct analysis *a, const struct query_options *o)
{
	struct tree *tr = calloc(1, sizeof(*tr));
	struct table t = { "tree", tree_cols, 8, 0, tr, tree_get, NULL, "" };
	struct error e;
	int rc;

	if ((rc = only_table_formats(o, "tree")) != 0) {
		free(tr);
		return rc;
	}
	if (tr == NULL || (tr->index = json_object()) == NULL) {
		free(tr);
		return nomem();
	}
	tr->o = o;
	tr->a = a;
	tr->fn = -1;
	tr->max_depth = o->has_depth ? o->depth : 3;
	if (o->function != NULL && (o->function_inline ||
	    (tr->fn = agg_find_string(a, o->function)) < 0)) {
		report(query_tool, a->dir, NULL, "no function named '%s' with "
		    "spans of its own", o->function);
		rc = EXIT_FAIL;
	} else if (analysis_walk(a, tree_visit, tr, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		rc = EXIT_FAIL;
	} else {
		/* Paths in order: each below its caller, as a tree reads. */
		qsort(tr->row, tr->n, sizeof(*tr->row), by_path);
		if ((rc = tree_prune(tr, &t)) == EXIT_OK) {
			t.nrows = tr->n;
			rc = print_sorted(&t, o, NULL);
		}
	}
	for (size_t i = 0; i < tr->n; i++)
		free(tr->row[i].path);
	free(tr->row);
	json_decref(tr->index);
	free(tr);
	return rc;
}
