/*
 * ptquery: spans as traces.  folded is the flame-graph input (one line
 * per distinct stack with its self time, or self instructions with
 * --weight insns: the lines sum to those of the spans selected); chrome is the Chrome trace event JSON (complete
 * "X" events in call order, times laid out by nesting.h); fxt is the Fuchsia
 * trace format (duration begin and end events in call order, ticks of one
 * nanosecond, process and thread names in kernel object records), whose
 * string table (32767 entries) is reused round robin when a trace names
 * more strings, and whose thread table (255) holds the first threads, the
 * others being written inline in their events.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/xxh64.h"
#include "base/jsonw.h"
#include "query.h"
#include "tool/report.h"
#include "span/spandir.h"
#include "nesting.h"
#include "inlines.h"

/* ----------------------------------------------------------------- */
/* folded */

static const char *
base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

struct stack_sum {
	char *path;
	uint64_t ns;
};

struct folded {
	const struct analysis *a;
	const struct query_options *o;
	unsigned weight_col;		/* SPANIDX_SELF_NS or _SELF_INSNS */
	const char *sel;		/* rows to fold ([row] != 0), or NULL:
					   those that pass the filters */
	struct inlines in;		/* --inline: the inlined calls */
	int modules;			/* --group module: frames are images */
	struct agg_filter f;
	int64_t fn;			/* --function: stacks through it */
	struct stack_sum *slot;
	size_t cap, n;
	char *buf;
	size_t bufcap;
	struct error *e;
};

static uint64_t
str_hash(const char *s)
{
	return xxh64(s, strlen(s), 0);
}

static int
folded_grow(struct folded *fo)
{
	size_t cap = fo->cap ? fo->cap * 2 : 1024;
	struct stack_sum *ns = calloc(cap, sizeof(*ns));

	if (ns == NULL)
		return -1;
	for (size_t i = 0; i < fo->cap; i++) {
		size_t j;

		if (fo->slot[i].path == NULL)
			continue;
		for (j = str_hash(fo->slot[i].path) & (cap - 1);
		    ns[j].path != NULL; j = (j + 1) & (cap - 1))
			;
		ns[j] = fo->slot[i];
	}
	free(fo->slot);
	fo->slot = ns;
	fo->cap = cap;
	return 0;
}

static int
folded_add(struct folded *fo, const char *path, uint64_t ns)
{
	size_t j;

	if ((fo->n + 1) * 2 > fo->cap && folded_grow(fo) < 0)
		return -1;
	for (j = str_hash(path) & (fo->cap - 1); fo->slot[j].path != NULL;
	    j = (j + 1) & (fo->cap - 1))
		if (strcmp(fo->slot[j].path, path) == 0) {
			fo->slot[j].ns += ns;
			return 0;
		}
	if ((fo->slot[j].path = strdup(path)) == NULL)
		return -1;
	fo->slot[j].ns = ns;
	fo->n++;
	return 0;
}

/* Appends name to fo->buf at *len, ';' in names becoming ':'. */
static int
folded_append(struct folded *fo, size_t *len, const char *name)
{
	size_t n = strlen(name);

	if (*len + n + 2 > fo->bufcap) {
		size_t cap = (*len + n + 2) * 2;
		char *b = realloc(fo->buf, cap);

		if (b == NULL)
			return -1;
		fo->buf = b;
		fo->bufcap = cap;
	}
	if (*len > 0)
		fo->buf[(*len)++] = ';';
	for (size_t i = 0; i < n; i++)
		fo->buf[(*len)++] = name[i] == ';' ? ':' : name[i];
	fo->buf[*len] = '\0';
	return 0;
}

/*
 * The lines of a span's inlined calls (--inline): each call's own
 * instructions, or its share by them of the span's self time, on the
 * span's stack (fo->buf[0..len)) and its chain of inlined calls; the
 * span's own line gets the rest.  Returns that rest, or -1 out of memory.
 */
static int64_t
folded_inline(struct folded *fo, uint64_t row, size_t len, uint64_t self)
{
	const struct spanidx *ix = &fo->a->ix;
	uint64_t self_insns = spanidx_u64(ix, SPANIDX_SELF_INSNS, row);
	uint64_t rest = self;
	const struct inline_rec *recs, *chain[64], *c;
	size_t n, k, at;

	recs = inlines_of(&fo->in, spanidx_u64(ix, SPANIDX_ID, row), &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t w = fo->weight_col == SPANIDX_SELF_INSNS ?
		    recs[i].insns : self_insns == 0 ? 0 : (uint64_t)(
		    (unsigned __int128)self * recs[i].insns / self_insns);

		if (w == 0 || w > rest)
			continue;
		for (k = 0, c = &recs[i]; c != NULL && k < 64;
		    c = inlines_parent(recs, n, c->parent))
			chain[k++] = c;
		at = len;
		while (k > 0)
			if (folded_append(fo, &at, chain[--k]->fn) < 0)
				return -1;
		if (folded_add(fo, fo->buf, w) < 0)
			return -1;
		fo->buf[len] = '\0';
		rest -= w;
	}
	return (int64_t)rest;
}

static int
folded_visit(void *ctx, const struct analysis_visit *v)
{
	struct folded *fo = ctx;
	const struct spanidx *ix = &fo->a->ix;
	uint64_t self = spanidx_u64(ix, fo->weight_col, v->row);
	uint64_t st = spanidx_u64(ix, SPANIDX_START_NS, v->row);
	const char *prev = NULL;
	size_t len = 0;
	int through = fo->fn < 0;
	int64_t rest;

	if (self == 0)
		return 0;
	if (fo->sel != NULL ? !fo->sel[v->row] : (st < fo->f.from_ns ||
	    st >= fo->f.to_ns || !agg_filter_tid(&fo->f,
	    spanidx_u32(ix, SPANIDX_TID, v->row)) ||
	    !query_module_ok(fo->o, analysis_module(fo->a, v->row))))
		return 0;
	for (size_t i = 0; i <= v->depth; i++) {
		uint64_t r = i < v->depth ? v->stack[i] : v->row;
		const char *name = fo->modules ? base_name(analysis_module(
		    fo->a, r)) : analysis_fn(fo->a, r);

		if (spanidx_u32(ix, SPANIDX_FN, r) == (uint32_t)fo->fn)
			through = 1;
		/* images: one frame for a run of calls inside one */
		if (fo->modules && prev != NULL && strcmp(prev, name) == 0)
			continue;
		prev = name;
		if (folded_append(fo, &len, name[0] ? name : "-") < 0)
			return error_set(fo->e, ERR_NOMEM, "folded stacks");
	}
	if (!through)
		return 0;
	rest = (int64_t)self;
	if (fo->in.n > 0 && (rest = folded_inline(fo, v->row, len, self)) < 0)
		return error_set(fo->e, ERR_NOMEM, "folded stacks");
	if (rest > 0 && folded_add(fo, fo->buf, (uint64_t)rest) < 0)
		return error_set(fo->e, ERR_NOMEM, "folded stacks");
	return 0;
}

static int
by_path(const void *a, const void *b)
{
	const struct stack_sum *x = a, *y = b;

	if (x->path == NULL || y->path == NULL)
		return (x->path == NULL) - (y->path == NULL);
	return strcmp(x->path, y->path);
}

int
span_folded(const struct analysis *a, const struct query_options *o,
    const char *sel)
{
	struct folded fo;
	struct error e;
	int rc = EXIT_OK;

	memset(&fo, 0, sizeof(fo));
	fo.a = a;
	fo.o = o;
	fo.sel = sel;
	fo.e = &e;
	fo.fn = -1;
	fo.modules = o->group == AGG_MODULE;
	if ((o->inline_frames || o->group == AGG_INLINE) && !fo.modules &&
	    inlines_read(a, &fo.in) < 0)
		return EXIT_FAIL;
	/* instructions: code that took no time under emu still shows */
	fo.weight_col = o->weight == 2 ? SPANIDX_SELF_INSNS : SPANIDX_SELF_NS;
	query_filter(o, &fo.f);
	if (o->function != NULL && sel == NULL &&
	    (fo.fn = agg_find_string(a, o->function)) < 0) {
		report(query_tool, a->dir, NULL, "no function named '%s'",
		    o->function);
		inlines_free(&fo.in);
		return EXIT_FAIL;
	}
	if (analysis_walk(a, folded_visit, &fo, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		rc = EXIT_FAIL;
	} else {
		if (fo.cap > 0)
			qsort(fo.slot, fo.cap, sizeof(*fo.slot), by_path);
		for (size_t i = 0; i < fo.n; i++)
			printf("%s %" PRIu64 "\n", fo.slot[i].path,
			    fo.slot[i].ns);
	}
	for (size_t i = 0; i < fo.cap; i++)
		free(fo.slot[i].path);
	free(fo.slot);
	free(fo.buf);
	inlines_free(&fo.in);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Threads: names from threads.jsonl, for both trace formats */

struct thread_name {
	uint32_t tid, pid;
	char *name;
};

struct threads {
	struct thread_name *t;
	size_t n;
};

static void
threads_free(struct threads *th)
{
	for (size_t i = 0; i < th->n; i++)
		free(th->t[i].name);
	free(th->t);
}

/* A thread without a line is named by its tid, and an analysis without
 * threads.jsonl has threads unnamed; a threads.jsonl that does not match
 * the manifest's checksum is refused.  Returns 0, or -1 after saying
 * why. */
static int
threads_read(const struct analysis *a, struct threads *th)
{
	char *line = NULL;
	const char *name;
	size_t cap = 0;
	ssize_t len;
	struct error e;
	FILE *f;

	memset(th, 0, sizeof(*th));
	if ((f = analysis_open_jsonl(a, SPANDIR_THREADS, &name, &e)) == NULL) {
		if (e.code == ERR_NOTFOUND)
			return 0;	/* unnamed: their ids still say them */
		report_error(query_tool, a->dir, &e, NULL);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *v = json_loadb(line, (size_t)len, 0, NULL);
		const json_t *nm = json_object_get(v, SPANDIR_REC_NAME);
		struct thread_name *t = realloc(th->t, (th->n + 1) *
		    sizeof(*t));

		if (t != NULL) {
			th->t = t;
			t[th->n].tid = (uint32_t)json_integer_value(
			    json_object_get(v, SPANDIR_REC_TID));
			t[th->n].pid = (uint32_t)json_integer_value(
			    json_object_get(v, SPANDIR_REC_PID));
			t[th->n].name = strdup(json_is_string(nm) ?
			    json_string_value(nm) : "");
			if (t[th->n].name != NULL)
				th->n++;
		}
		json_decref(v);
	}
	free(line);
	fclose(f);
	return 0;
}

static const char *
thread_label(const struct threads *th, uint32_t tid)
{
	for (size_t i = 0; i < th->n; i++)
		if (th->t[i].tid == tid)
			return th->t[i].name;
	return NULL;
}

/* ----------------------------------------------------------------- */
/* chrome */

/* JSON written by hand: times are exact decimals of nesting's ticks. */
static void
chrome_str(const char *key, const char *s)
{
	printf("\"%s\":", key);
	/* A failed write stays in ferror(stdout): main's close reports it. */
	PTKIT_DROP(json_write_escaped(stdout, s, strlen(s)));
}

static void
chrome_us(const char *key, uint64_t ticks)
{
	char buf[48];

	nesting_print_us(buf, sizeof(buf), ticks);
	printf(",\"%s\":%s", key, buf);
}

static void
chrome_meta(const char *what, uint32_t pid, uint32_t tid, const char *label,
    int *first)
{
	printf("%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu32
	    ",\"tid\":%" PRIu32 ",\"args\":{", *first ? "" : ",", what, pid,
	    tid);
	chrome_str("name", label);
	printf("}}");
	*first = 0;
}

/* Names each process (by its first thread's label) and thread once. */
static void
chrome_names(const struct analysis *a, const struct threads *th,
    const uint64_t *rows, const size_t *order, size_t n, int *first)
{
	const struct spanidx *ix = &a->ix;
	uint32_t prev_tid = 0, prev_pid = 0;
	int have = 0;

	/* order is by thread: each thread's spans together */
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rows[order[i]];
		uint32_t tid = spanidx_u32(ix, SPANIDX_TID, r);
		uint32_t pid = spanidx_u32(ix, SPANIDX_PID, r);
		const char *label = thread_label(th, tid);

		if (have && tid == prev_tid)
			continue;
		if (label != NULL && (!have || pid != prev_pid))
			chrome_meta("process_name", pid, pid, label, first);
		if (label != NULL)
			chrome_meta("thread_name", pid, tid, label, first);
		prev_tid = tid;
		prev_pid = pid;
		have = 1;
	}
}

/*
 * One event: a span (fn its function) or an inlined call in it (fn the
 * inlined function), in the span's module and thread.  No per-span args,
 * which speedscope would fold into the frame name (no two frames would
 * merge); the span is found by time and thread with ptquery --kind at.
 */
static void
chrome_event(const struct analysis *a, uint64_t r, const char *fn,
    uint64_t start, uint64_t end, int *first)
{
	const struct spanidx *ix = &a->ix;

	printf("%s\n{\"ph\":\"X\",", *first ? "" : ",");
	chrome_str("name", fn);
	putchar(',');
	chrome_str("cat", base_name(analysis_module(a, r)));
	printf(",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32,
	    spanidx_u32(ix, SPANIDX_PID, r), spanidx_u32(ix, SPANIDX_TID, r));
	chrome_us("ts", start);
	chrome_us("dur", end - start);
	putchar('}');
	*first = 0;
}

/* The page's inlined calls (--inline): each with its parent event and
 * the row of its span.  Returns their number, or -1 out of memory. */
static int64_t
chrome_extras(const struct inlines *in, const struct analysis *a,
    const uint64_t *rows, size_t n, size_t **parent,
    const struct inline_rec ***rec, uint64_t **host)
{
	size_t m = 0, k;

	*parent = NULL;
	*rec = NULL;
	*host = NULL;
	for (size_t i = 0; i < n; i++) {
		inlines_of(in, spanidx_u64(&a->ix, SPANIDX_ID, rows[i]), &k);
		m += k;
	}
	*parent = malloc((m + 1) * sizeof(**parent));
	*rec = malloc((m + 1) * sizeof(**rec));
	*host = malloc((m + 1) * sizeof(**host));
	if (*parent == NULL || *rec == NULL || *host == NULL)
		return -1;
	m = 0;
	for (size_t i = 0; i < n; i++) {
		const struct inline_rec *recs = inlines_of(in,
		    spanidx_u64(&a->ix, SPANIDX_ID, rows[i]), &k);

		for (size_t j = 0; j < k; j++) {
			const struct inline_rec *up = inlines_parent(recs, k,
			    recs[j].parent);

			(*parent)[m + j] = up == NULL ? i :
			    n + m + (size_t)(up - recs);
			(*rec)[m + j] = &recs[j];
			(*host)[m + j] = rows[i];
		}
		m += k;
	}
	return (int64_t)m;
}

int
span_chrome(const struct analysis *a, const uint64_t *rows, size_t n,
    const char *next_cursor, int inline_frames)
{
	struct inlines in = { NULL, 0 };
	size_t *parent = NULL, *order = NULL, m = 0;
	const struct inline_rec **rec = NULL;
	uint64_t *host = NULL, *start = NULL, *end = NULL;
	int64_t got = 0;
	struct threads th;
	uint64_t wall;
	int first = 1;

	if (threads_read(a, &th) < 0)
		return EXIT_FAIL;
	if (inline_frames && inlines_read(a, &in) < 0) {
		threads_free(&th);
		return EXIT_FAIL;
	}
	if (in.n > 0 && (got = chrome_extras(&in, a, rows, n, &parent, &rec,
	    &host)) >= 0)
		m = (size_t)got;
	if (got >= 0) {
		order = malloc((n + m + 1) * sizeof(*order));
		start = malloc((n + m + 1) * sizeof(*start));
		end = malloc((n + m + 1) * sizeof(*end));
	}
	if (order == NULL || start == NULL || end == NULL ||
	    nesting_layout_extra(a, rows, n, parent, m, order, start,
	    end) < 0) {
		free(order);
		free(start);
		free(end);
		free(parent);
		free(rec);
		free(host);
		inlines_free(&in);
		threads_free(&th);
		report(query_tool, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	printf("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	/* the names need the spans alone, in order by thread */
	{
		size_t *spans_only = malloc((n + 1) * sizeof(*spans_only));
		size_t ns = 0;

		for (size_t i = 0; spans_only != NULL && i < n + m; i++)
			if (order[i] < n)
				spans_only[ns++] = order[i];
		chrome_names(a, &th, rows, spans_only != NULL ? spans_only :
		    order, n, &first);
		free(spans_only);
	}
	for (size_t i = 0; i < n + m; i++) {
		size_t x = order[i];

		if (x < n)
			chrome_event(a, rows[x], analysis_fn(a, rows[x]),
			    start[x], end[x], &first);
		else
			chrome_event(a, host[x - n], rec[x - n]->fn, start[x],
			    end[x], &first);
	}
	printf("\n],");
	/* where ts 0 is on the wall clock, to line spans up with logs */
	if ((wall = query_wall_zero(a)) != 0) {
		char text[40];

		query_wall_text(wall, text, sizeof(text));
		printf("\"otherData\":{\"wall_clock_at_ts_0\":\"%s\"},",
		    text);
	}
	printf("\"next_cursor\":");
	if (next_cursor != NULL)
		printf("\"%s\"}\n", next_cursor);
	else
		printf("null}\n");
	free(order);
	free(start);
	free(end);
	free(parent);
	free(rec);
	free(host);
	inlines_free(&in);
	threads_free(&th);
	return EXIT_OK;
}

/* ----------------------------------------------------------------- */
/* fxt */

#define FXT_MAGIC 0x0016547846040010ull
#define FXT_STRINGS 0x7fff		/* indices 1..32767 */
#define FXT_STRING_MAX 32000		/* bytes of one string */
#define FXT_THREADS 0xff		/* indices 1..255 */

#define FXT_BUCKETS 65536

struct fxt {
	FILE *out;
	char **str;			/* [index]: what the index holds */
	size_t next_str;		/* the last index (re)used */
	uint16_t *head;			/* [hash % FXT_BUCKETS]: an index */
	uint16_t *chain;		/* [index]: the next in its bucket */
	uint16_t pin[4];		/* indices the record being built uses */
	size_t npin;
	uint64_t *thr;			/* [index]: pid << 32 | tid | 1 << 63 */
	size_t next_thr;		/* the last index given */
	uint64_t *seen;			/* threads named: a hash set */
	size_t n_seen, cap_seen;
	int bad;
};

static void
fxt_word(struct fxt *x, uint64_t w)
{
	if (fwrite(&w, 8, 1, x->out) != 1)
		x->bad = 1;
}

static void
fxt_bytes(struct fxt *x, const char *s, size_t len)
{
	static const char zero[8];

	if (fwrite(s, 1, len, x->out) != len ||
	    fwrite(zero, 1, (8 - len % 8) % 8, x->out) != (8 - len % 8) % 8)
		x->bad = 1;
}

static size_t
fxt_bucket(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)(h % FXT_BUCKETS);
}

/* The record being built refers to idx: it must not be reused yet. */
static uint16_t
fxt_pin(struct fxt *x, size_t idx)
{
	if (x->npin < sizeof(x->pin) / sizeof(x->pin[0]))
		x->pin[x->npin++] = (uint16_t)idx;
	return (uint16_t)idx;
}

static int
fxt_pinned(const struct fxt *x, size_t idx)
{
	for (size_t i = 0; i < x->npin; i++)
		if (x->pin[i] == idx)
			return 1;
	return 0;
}

/* Forgets what index idx held, before it is reused. */
static void
fxt_evict(struct fxt *x, size_t idx)
{
	uint16_t *p;

	if (x->str[idx] == NULL)
		return;
	for (p = &x->head[fxt_bucket(x->str[idx], strlen(x->str[idx]))];
	    *p != 0; p = &x->chain[*p])
		if (*p == idx) {
			*p = x->chain[idx];
			break;
		}
	free(x->str[idx]);
	x->str[idx] = NULL;
}

/* The string table index of s, writing a string record when needed. */
static uint16_t
fxt_string(struct fxt *x, const char *s)
{
	size_t len = strlen(s), idx, b;

	if (len == 0)
		return 0;
	if (len > FXT_STRING_MAX)
		len = FXT_STRING_MAX;
	b = fxt_bucket(s, len);
	for (idx = x->head[b]; idx != 0; idx = x->chain[idx])
		if (strncmp(x->str[idx], s, len) == 0 &&
		    x->str[idx][len] == '\0')
			return fxt_pin(x, idx);
	do {
		idx = x->next_str % FXT_STRINGS + 1;
		x->next_str = idx;
	} while (fxt_pinned(x, idx));
	fxt_evict(x, idx);
	if ((x->str[idx] = strndup(s, len)) == NULL) {
		x->bad = 1;
		return 0;
	}
	x->chain[idx] = x->head[b];
	x->head[b] = (uint16_t)idx;
	fxt_word(x, 2 | (uint64_t)(1 + (len + 7) / 8) << 4 |
	    (uint64_t)idx << 16 | (uint64_t)len << 32);
	fxt_bytes(x, s, len);
	return fxt_pin(x, idx);
}

/* Whether (pid, tid) was seen before; remembers it.  -1 out of memory. */
static int
fxt_seen(struct fxt *x, uint64_t key)
{
	size_t j;

	if ((x->n_seen + 1) * 2 > x->cap_seen) {
		size_t cap = x->cap_seen ? x->cap_seen * 2 : 512;
		uint64_t *n = calloc(cap, sizeof(*n));

		if (n == NULL)
			return -1;
		for (size_t i = 0; i < x->cap_seen; i++) {
			if (x->seen[i] == 0)
				continue;
			for (j = (x->seen[i] * 0x9e3779b97f4a7c15ull) >> 20 &
			    (cap - 1); n[j] != 0; j = (j + 1) & (cap - 1))
				;
			n[j] = x->seen[i];
		}
		free(x->seen);
		x->seen = n;
		x->cap_seen = cap;
	}
	for (j = (key * 0x9e3779b97f4a7c15ull) >> 20 & (x->cap_seen - 1);
	    x->seen[j] != 0; j = (j + 1) & (x->cap_seen - 1))
		if (x->seen[j] == key)
			return 1;
	x->seen[j] = key;
	x->n_seen++;
	return 0;
}

/*
 * Names process pid once, with a kernel object record of type process:
 * Perfetto's importer gives the process that name.
 */
static void
fxt_process(struct fxt *x, uint32_t pid, const char *label)
{
	uint16_t name;
	int seen;

	/* bit 62: a process key, never a thread's (bit 63) nor empty (0) */
	if ((seen = fxt_seen(x, (uint64_t)pid | 1ull << 62)) < 0)
		x->bad = 1;
	if (seen != 0 || label == NULL || (name = fxt_string(x, label)) == 0)
		return;
	fxt_word(x, 7 | 2ull << 4 | 1ull << 16 | (uint64_t)name << 24);
	fxt_word(x, pid);
}

/*
 * The thread reference of (pid, tid): a table index for the first 255
 * threads, 0 (pid and tid written inline in the event) for the rest.
 * The first time a thread is seen, kernel object records name its
 * process (by this, its first thread's label, as chrome does) and it.
 */
static uint8_t
fxt_thread(struct fxt *x, uint32_t pid, uint32_t tid, const char *label)
{
	uint64_t key = (uint64_t)pid << 32 | tid | 1ull << 63;
	uint16_t name, pname;
	size_t idx;
	int seen;

	for (idx = 1; idx <= x->next_thr; idx++)
		if (x->thr[idx] == key)
			return (uint8_t)idx;
	if ((seen = fxt_seen(x, key)) < 0)
		x->bad = 1;
	x->npin = 0;
	if (seen == 0)
		fxt_process(x, pid, label);
	x->npin = 0;
	if (seen == 0 && label != NULL && (name = fxt_string(x, label)) != 0) {
		/* Kernel object: a thread named label, of process pid. */
		pname = fxt_string(x, "process");
		fxt_word(x, 7 | 4ull << 4 | 2ull << 16 | (uint64_t)name << 24 |
		    1ull << 40);
		fxt_word(x, tid);
		fxt_word(x, 8 | 2ull << 4 | (uint64_t)pname << 16);
		fxt_word(x, pid);
	}
	if (x->next_thr == FXT_THREADS)
		return 0;
	idx = ++x->next_thr;
	x->thr[idx] = key;
	fxt_word(x, 3 | 3ull << 4 | (uint64_t)idx << 16);
	fxt_word(x, pid);
	fxt_word(x, tid);
	return (uint8_t)idx;
}

#define FXT_BEGIN 2			/* event types */
#define FXT_END 3
#define FXT_COMPLETE 4

/*
 * Perfetto's importer keeps 512 levels of slices on a thread and drops
 * deeper ones (SliceTracker::kMaxDepth): a dropped begin would make its
 * end close the caller, so spans that deep are written as complete
 * events, which it drops alone.
 */
#define FXT_PERFETTO_DEPTH 512

/* The thread being written: its reference, pid and tid. */
struct fxt_thr {
	uint8_t ref;
	uint32_t pid, tid;
};

/*
 * A duration event of row r at ts: begin and complete carry the span id
 * as an argument, complete its end time too; end names the span again
 * (the format asks it to match its begin).
 */
static void
fxt_duration(struct fxt *x, const struct analysis *a, uint64_t r,
    const struct fxt_thr *t, unsigned type, uint64_t ts, uint64_t end)
{
	const struct spanidx *ix = &a->ix;
	uint64_t nargs = type == FXT_END ? 0 : 1;
	uint64_t words = 2 + (t->ref ? 0 : 2) + nargs * 2 +
	    (type == FXT_COMPLETE ? 1 : 0);
	uint16_t cat, name, id = 0;

	x->npin = 0;
	cat = fxt_string(x, base_name(analysis_module(a, r)));
	name = fxt_string(x, analysis_fn(a, r));
	if (nargs != 0)
		id = fxt_string(x, "id");
	fxt_word(x, 4 | words << 4 | (uint64_t)type << 16 | nargs << 20 |
	    (uint64_t)t->ref << 24 | (uint64_t)cat << 32 |
	    (uint64_t)name << 48);
	fxt_word(x, ts);
	if (t->ref == 0) {
		fxt_word(x, t->pid);
		fxt_word(x, t->tid);
	}
	if (nargs != 0) {
		fxt_word(x, 4 | 2ull << 4 | (uint64_t)id << 16); /* uint64 */
		fxt_word(x, spanidx_u64(ix, SPANIDX_ID, r));
	}
	if (type == FXT_COMPLETE)
		fxt_word(x, end);
}

/* The open spans of the thread being written, innermost last. */
struct fxt_open {
	size_t *row;			/* indices into rows */
	size_t n;
	uint64_t prev;			/* the thread's last time written */
	uint64_t deep;			/* spans written as complete events */
};

/* Ends the innermost open span, at its end or the thread's last time. */
static void
fxt_close(struct fxt *x, const struct analysis *a, const uint64_t *rows,
    struct fxt_open *o, const struct fxt_thr *t)
{
	uint64_t r = rows[o->row[--o->n]];
	uint64_t end = spanidx_u64(&a->ix, SPANIDX_END_NS, r);

	o->prev = end > o->prev ? end : o->prev;
	if (o->n < FXT_PERFETTO_DEPTH)
		fxt_duration(x, a, r, t, FXT_END, o->prev, 0);
}

/*
 * Every span of rows as a begin and an end event, in call-tree order
 * thread by thread: the importers nest begin/end events by their order
 * alone (Perfetto's sorts them by time, keeping the order of equal
 * times), so zero-duration spans, spans that start where their caller
 * ends and equal times all nest as ptkit's tree, with times to the
 * nanosecond.  nesting.h's layout gives the order; its ticks say where
 * each span ends among the begins.  A time earlier than the thread's last
 * one (an inconsistent analysis) is written as that last one, so that no
 * sort reorders the thread's events.
 */
static int
fxt_spans(struct fxt *x, const struct analysis *a, const uint64_t *rows,
    size_t n, const struct threads *th)
{
	const struct spanidx *ix = &a->ix;
	size_t *order = malloc((n + 1) * sizeof(*order));
	uint64_t *start = malloc((n + 1) * sizeof(*start));
	uint64_t *end = malloc((n + 1) * sizeof(*end));
	struct fxt_open o = { malloc((n + 1) * sizeof(size_t)), 0, 0, 0 };
	struct fxt_thr t = { 0, 0, 0 };
	int rc = -1;

	if (order == NULL || start == NULL || end == NULL || o.row == NULL ||
	    nesting_layout(a, rows, n, order, start, end) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t k = order[i];
		uint64_t r = rows[k], ts, te;
		uint32_t tid = spanidx_u32(ix, SPANIDX_TID, r);
		uint32_t pid = spanidx_u32(ix, SPANIDX_PID, r);

		/* a tid another process had first is another track */
		if (i == 0 || tid != t.tid || pid != t.pid) {
			while (o.n > 0)
				fxt_close(x, a, rows, &o, &t);
			t.tid = tid;
			t.pid = pid;
			t.ref = fxt_thread(x, t.pid, tid,
			    thread_label(th, tid));
			o.prev = 0;
		}
		while (o.n > 0 && end[o.row[o.n - 1]] < start[k])
			fxt_close(x, a, rows, &o, &t);
		ts = spanidx_u64(ix, SPANIDX_START_NS, r);
		o.prev = ts = ts > o.prev ? ts : o.prev;
		if (o.n < FXT_PERFETTO_DEPTH) {
			fxt_duration(x, a, r, &t, FXT_BEGIN, ts, 0);
		} else {
			te = spanidx_u64(ix, SPANIDX_END_NS, r);
			fxt_duration(x, a, r, &t, FXT_COMPLETE, ts,
			    te > ts ? te : ts);
			o.deep++;
		}
		o.row[o.n++] = k;
	}
	while (o.n > 0)
		fxt_close(x, a, rows, &o, &t);
	if (o.deep > 0)
		report_warning(query_tool, "fxt", "%" PRIu64 " spans nested "
		    "deeper than %d levels written as complete events, which "
		    "Perfetto's importer drops", o.deep, FXT_PERFETTO_DEPTH);
	rc = 0;
out:
	free(order);
	free(start);
	free(end);
	free(o.row);
	return rc;
}

int
span_fxt(const struct analysis *a, const uint64_t *rows, size_t n)
{
	struct fxt x = { stdout, NULL, 0, NULL, NULL, { 0 }, 0, NULL, 0, NULL, 0, 0,
	    0 };
	struct threads th;
	int nomem = 0;

	if (isatty(STDOUT_FILENO)) {
		report(query_tool, "stdout", "redirect it to a file",
		    "fxt is binary: not written to a terminal");
		return EXIT_FAIL;
	}
	if (threads_read(a, &th) < 0)
		return EXIT_FAIL;
	x.str = calloc(FXT_STRINGS + 1, sizeof(*x.str));
	x.thr = calloc(FXT_THREADS + 1, sizeof(*x.thr));
	x.head = calloc(FXT_BUCKETS, sizeof(*x.head));
	x.chain = calloc(FXT_STRINGS + 1, sizeof(*x.chain));
	if (x.str == NULL || x.thr == NULL || x.head == NULL ||
	    x.chain == NULL) {
		free(x.str);
		free(x.thr);
		free(x.head);
		free(x.chain);
		threads_free(&th);
		report(query_tool, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	fxt_word(&x, FXT_MAGIC);
	fxt_word(&x, 1 | 2ull << 4);		/* initialization */
	fxt_word(&x, 1000000000ull);		/* ticks per second */
	if (fxt_spans(&x, a, rows, n, &th) < 0)
		nomem = 1;
	for (size_t i = 0; i <= FXT_STRINGS; i++)
		free(x.str[i]);
	free(x.str);
	free(x.thr);
	free(x.head);
	free(x.chain);
	free(x.seen);
	threads_free(&th);
	if (nomem) {
		report(query_tool, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	if (x.bad) {
		report(query_tool, "stdout", NULL, "write failed");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
