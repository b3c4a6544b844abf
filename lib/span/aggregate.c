/*
 * aggregate: see aggregate.h.  Groups are found through an open
 * addressing table on a 64-bit key made of string table offsets (the
 * index interns every string once), so a span costs one probe.
 */
#include "span/aggregate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/xxh64.h"
#include "span/aggkeep.h"
#include "span/callstack.h"
#include "sym/demangle.h"

#define NO_KEY UINT64_MAX

struct keymap {
	uint64_t *key;
	uint32_t *val;
	size_t cap, n;
};

static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void
keymap_free(struct keymap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static int
keymap_grow(struct keymap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint64_t *k = malloc(cap * sizeof(*k));
	uint32_t *v = malloc(cap * sizeof(*v));

	if (k == NULL || v == NULL) {
		free(k);
		free(v);
		return -ERR_NOMEM;
	}
	memset(k, 0xff, cap * sizeof(*k));
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->key[i] == NO_KEY)
			continue;
		for (j = mix64(m->key[i]) & (cap - 1); k[j] != NO_KEY;
		    j = (j + 1) & (cap - 1))
			;
		k[j] = m->key[i];
		v[j] = m->val[i];
	}
	free(m->key);
	free(m->val);
	m->key = k;
	m->val = v;
	m->cap = cap;
	return 0;
}

/* The slot of key in *slot: 1 found, 0 inserted (val to set), <0 nomem. */
static int
keymap_get(struct keymap *m, uint64_t key, size_t *slot)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && keymap_grow(m) < 0)
		return -ERR_NOMEM;
	for (j = mix64(key) & (m->cap - 1); m->key[j] != NO_KEY;
	    j = (j + 1) & (m->cap - 1))
		if (m->key[j] == key) {
			*slot = j;
			return 1;
		}
	m->key[j] = key;
	m->n++;
	*slot = j;
	return 0;
}

void
agg_free(struct agg *g)
{
	for (size_t i = 0; i < g->n_owned; i++)
		free(g->owned[i]);
	free(g->owned);
	free(g->row);
	memset(g, 0, sizeof(*g));
}

static struct agg_row *
agg_new_row(struct agg *g)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct agg_row *r = realloc(g->row, cap * sizeof(*r));

		if (r == NULL)
			return NULL;
		g->row = r;
		g->cap = cap;
	}
	memset(&g->row[g->n], 0, sizeof(g->row[0]));
	return &g->row[g->n++];
}

static const char *
agg_own(struct agg *g, const char *s)
{
	char **o = realloc(g->owned, (g->n_owned + 1) * sizeof(*o));

	if (o == NULL)
		return NULL;
	g->owned = o;
	if ((o[g->n_owned] = strdup(s)) == NULL)
		return NULL;
	return o[g->n_owned++];
}

/* The row of key, created with name and module when new. */
static struct agg_row *
group_row(struct agg *g, struct keymap *m, uint64_t key, const char *name,
    const char *module, uint32_t *index)
{
	struct agg_row *r;
	size_t slot;
	int rc;

	if ((rc = keymap_get(m, key, &slot)) < 0)
		return NULL;
	if (rc == 1) {
		*index = m->val[slot];
		return &g->row[m->val[slot]];
	}
	if ((r = agg_new_row(g)) == NULL) {
		m->key[slot] = NO_KEY;	/* never leave a key without a row */
		m->n--;
		return NULL;
	}
	m->val[slot] = (uint32_t)(g->n - 1);
	*index = m->val[slot];
	r->name = name;
	r->module = module;
	return r;
}


/* The columns every aggregate reads, through the index's accessors. */
struct cols {
	const struct spanidx *ix;
};

static void
cols_init(struct cols *c, const struct analysis *a)
{
	c->ix = &a->ix;
}

static void
add_span(struct agg_row *r, const struct cols *c, uint64_t row,
    int outermost)
{
	uint64_t dur = spanidx_u64(c->ix, SPANIDX_END_NS, row) -
	    spanidx_u64(c->ix, SPANIDX_START_NS, row);

	r->spans++;
	r->calls += spanidx_u8(c->ix, SPANIDX_START, row) == CS_START_SEEN;
	r->self_ns += spanidx_u64(c->ix, SPANIDX_SELF_NS, row);
	r->self_insns += spanidx_u64(c->ix, SPANIDX_SELF_INSNS, row);
	r->sum_ns += dur;
	if (dur > r->max_ns)
		r->max_ns = dur;
	if (outermost) {
		r->outer++;
		r->total_ns += dur;
		r->insns += spanidx_u64(c->ix, SPANIDX_INSNS, row);
	}
}

/* ----------------------------------------------------------------- */
/* Hotpaths */

int
agg_filter_tid(const struct agg_filter *f, uint32_t tid)
{
	size_t i;

	if (f == NULL || (f->has_tid && tid != f->tid))
		return f == NULL;
	if (!f->has_tids)
		return 1;
	for (i = 0; i < f->n_tids; i++)
		if (f->tids[i] == tid)
			return 1;
	return 0;
}

static int
filter_pass(const struct cols *c, const struct agg_filter *f, uint64_t row)
{
	uint64_t start;

	if (f == NULL)
		return 1;
	if (!agg_filter_tid(f, spanidx_u32(c->ix, SPANIDX_TID, row)))
		return 0;
	start = spanidx_u64(c->ix, SPANIDX_START_NS, row);
	return start >= f->from_ns && start < f->to_ns;
}

int
agg_incomplete(uint8_t start)
{
	return start == CS_START_RING_START || start == CS_START_GAP;
}

/* An inlined instance: its row in the result and its instructions. */
struct inl_rec {
	uint64_t span;			/* the span of the function holding it */
	uint32_t row;			/* its inline row in the result */
	uint32_t top;			/* directly in the span (no parent) */
	uint64_t own, total;		/* insns, total_insns */
};

static int
by_span(const void *a, const void *b)
{
	const struct inl_rec *x = a, *y = b;

	return x->span < y->span ? -1 : x->span > y->span;
}

/* The first record of span id in recs (sorted), or n. */
static size_t
inl_first(const struct inl_rec *recs, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (recs[mid].span < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct hot {
	const struct analysis *a;
	struct cols c;
	uint64_t last_key;		/* the group of the previous span */
	uint32_t last_g;
	const struct agg_filter *f;
	enum agg_group group;
	struct agg *out;
	struct keymap groups;
	struct inl_rec *inl;		/* inline.jsonl's records, by span */
	size_t n_inl, cap_inl;
	int64_t inside;			/* f->inside's string offset, or -1 */
	/* Group of each stack position and how often a group is on it. */
	uint32_t *slot_at;
	size_t cap_at, n_at;
	uint32_t *active;
	size_t cap_active;
	/* Building the kept aggregates: each passing span goes to its
	 * thread's entry instead of the group's row. */
	struct agg_split *split;
	struct keymap thr;
	/* Per thread (by its place in split->thr), each group's entry + 1:
	 * an index, where a hash of (thread, group) cost a probe a span. */
	uint32_t **ent_of;
	size_t *cap_of, n_of;
	struct error *e;
};

static int
hot_track(struct hot *h, size_t depth, uint32_t g)
{
	while (h->n_at > depth)
		h->active[h->slot_at[--h->n_at]]--;
	if (depth >= h->cap_at) {
		size_t cap = h->cap_at ? h->cap_at * 2 : 64;
		uint32_t *n = realloc(h->slot_at, cap * sizeof(*n));

		if (n == NULL)
			return -ERR_NOMEM;
		h->slot_at = n;
		h->cap_at = cap;
	}
	if (g >= h->cap_active) {
		size_t cap = h->cap_active ? h->cap_active * 2 : 1024;
		uint32_t *n;

		while (cap <= g)
			cap *= 2;
		if ((n = realloc(h->active, cap * sizeof(*n))) == NULL)
			return -ERR_NOMEM;
		memset(n + h->cap_active, 0, (cap - h->cap_active) *
		    sizeof(*n));
		h->active = n;
		h->cap_active = cap;
	}
	/* The stack positions below depth are this span's ancestors. */
	h->slot_at[h->n_at++] = g;
	h->active[g]++;
	return 0;
}

static int split_add(struct hot *h, uint64_t row, uint32_t g, int outer);

static int
hot_visit(void *ctx, const struct analysis_visit *v)
{
	struct hot *h = ctx;
	const struct spanidx *ix = &h->a->ix;
	uint32_t fn = spanidx_u32(h->c.ix, SPANIDX_FN, v->row);
	uint32_t mod = spanidx_u32(h->c.ix, SPANIDX_MODULE, v->row);
	uint64_t key = h->group == AGG_MODULE ? mod :
	    (uint64_t)fn << 32 | mod;
	struct agg_row *r;
	uint32_t g;
	int outer;

	if (key == h->last_key && h->out->n > 0) {
		g = h->last_g;
		r = &h->out->row[g];
	} else if ((r = group_row(h->out, &h->groups, key, h->group ==
	    AGG_MODULE ? spanidx_str(ix, mod) : spanidx_str(ix, fn),
	    h->group == AGG_MODULE ? "" : spanidx_str(ix, mod), &g)) == NULL)
		return error_set(h->e, ERR_NOMEM, "hotpaths");
	h->last_key = key;
	h->last_g = g;
	while (h->n_at > v->depth)
		h->active[h->slot_at[--h->n_at]]--;
	outer = g >= h->cap_active || h->active[g] == 0;
	if (hot_track(h, v->depth, g) < 0)
		return error_set(h->e, ERR_NOMEM, "hotpaths");
	if (h->split != NULL)
		return split_add(h, v->row, g, outer);
	if (!filter_pass(&h->c, h->f, v->row))
		return 0;
	if (h->f != NULL && !h->f->incomplete &&
	    agg_incomplete(spanidx_u8(h->c.ix, SPANIDX_START, v->row))) {
		r->incomplete++;
		h->out->incomplete_spans++;
		h->out->incomplete_self_ns += spanidx_u64(h->c.ix,
		    SPANIDX_SELF_NS, v->row);
		return 0;
	}
	add_span(r, &h->c, v->row, outer);
	if (h->n_inl > 0) {
		uint64_t id = spanidx_u64(ix, SPANIDX_ID, v->row);
		int inside = h->inside < 0 || fn == (uint32_t)h->inside;

		/* The span's inlined helpers: rows of their own, and not
		 * part of the function's self_insns. */
		for (size_t i = inl_first(h->inl, h->n_inl, id);
		    i < h->n_inl && h->inl[i].span == id; i++) {
			struct agg_row *ir = &h->out->row[h->inl[i].row];

			if (h->inl[i].top)
				h->out->row[g].self_insns -= h->inl[i].total;
			if (!inside)
				continue;
			ir->calls++;
			ir->spans++;
			ir->insns += h->inl[i].total;
			ir->self_insns += h->inl[i].own;
		}
	}
	return 0;
}

/* A walk of the spans into out by group, filtered by f (NULL: all). */
static void
hot_init(struct hot *h, const struct analysis *a, enum agg_group group,
    const struct agg_filter *f, struct agg *out, struct error *e)
{
	memset(h, 0, sizeof(*h));
	h->a = a;
	cols_init(&h->c, a);
	h->last_key = NO_KEY;
	h->f = f;
	h->group = group;
	h->out = out;
	h->e = e;
	h->inside = -1;
}

/* What the walk holds (not out, the caller's). */
static void
hot_free(struct hot *h)
{
	keymap_free(&h->groups);
	keymap_free(&h->thr);
	for (size_t i = 0; i < h->n_of; i++)
		free(h->ent_of[i]);
	free(h->ent_of);
	free(h->cap_of);
	free(h->inl);
	free(h->slot_at);
	free(h->active);
}

/* ----------------------------------------------------------------- */
/* Per thread, for the kept aggregates */

static int
split_thread(struct agg_split *s, struct keymap *m, uint32_t tid,
    uint32_t pid)
{
	size_t slot;
	int rc;

	if (s->n_thr > 0 && s->thr[s->last_thr].tid == tid) {
		s->thr[s->last_thr].pid = pid;
		return 0;
	}
	if ((rc = keymap_get(m, tid, &slot)) < 0)
		return rc;
	if (rc == 0) {
		if (s->n_thr == s->cap_thr) {
			size_t cap = s->cap_thr ? s->cap_thr * 2 : 16;
			struct agg_split_thread *n = realloc(s->thr, cap *
			    sizeof(*n));

			if (n == NULL) {
				m->key[slot] = NO_KEY;
				m->n--;
				return -ERR_NOMEM;
			}
			s->thr = n;
			s->cap_thr = cap;
		}
		m->val[slot] = (uint32_t)s->n_thr;
		s->thr[s->n_thr++].tid = tid;
	}
	s->last_thr = m->val[slot];
	/* Visited backwards: the last write is the thread's first row. */
	s->thr[s->last_thr].pid = pid;
	return 0;
}

/* The entry slot of group g of thread t (its place), grown to hold g. */
static uint32_t *
split_slot(struct hot *h, size_t t, uint32_t g)
{
	if (t >= h->n_of) {
		size_t n = t + 16;
		uint32_t **e = realloc(h->ent_of, n * sizeof(*e));
		size_t *c;

		if (e == NULL)
			return NULL;
		h->ent_of = e;
		if ((c = realloc(h->cap_of, n * sizeof(*c))) == NULL)
			return NULL;
		h->cap_of = c;
		for (size_t i = h->n_of; i < n; i++) {
			h->ent_of[i] = NULL;
			h->cap_of[i] = 0;
		}
		h->n_of = n;
	}
	if (g >= h->cap_of[t]) {
		size_t cap = h->cap_of[t] ? h->cap_of[t] * 2 : 64;
		uint32_t *e;

		while (cap <= g)
			cap *= 2;
		if ((e = realloc(h->ent_of[t], cap * sizeof(*e))) == NULL)
			return NULL;
		memset(e + h->cap_of[t], 0, (cap - h->cap_of[t]) * sizeof(*e));
		h->ent_of[t] = e;
		h->cap_of[t] = cap;
	}
	return &h->ent_of[t][g];
}

static int
split_add(struct hot *h, uint64_t row, uint32_t g, int outer)
{
	struct agg_split *s = h->split;
	uint32_t tid = spanidx_u32(h->c.ix, SPANIDX_TID, row);
	uint32_t *slot;

	if (split_thread(s, &h->thr, tid, spanidx_u32(h->c.ix, SPANIDX_PID,
	    row)) < 0)
		return error_set(h->e, ERR_NOMEM, "aggregates");
	if (!filter_pass(&h->c, h->f, row)) {
		s->late++;
		return 0;
	}
	if ((slot = split_slot(h, s->last_thr, g)) == NULL)
		return error_set(h->e, ERR_NOMEM, "aggregates");
	if (*slot == 0) {
		if (s->n_ent == s->cap_ent) {
			size_t cap = s->cap_ent ? s->cap_ent * 2 : 256;
			struct agg_split_entry *n = realloc(s->ent, cap *
			    sizeof(*n));

			if (n == NULL)
				return error_set(h->e, ERR_NOMEM, "aggregates");
			s->ent = n;
			s->cap_ent = cap;
		}
		memset(&s->ent[s->n_ent], 0, sizeof(s->ent[0]));
		s->ent[s->n_ent].tid = tid;
		s->ent[s->n_ent].group = g;
		*slot = (uint32_t)++s->n_ent;
	}
	add_span(&s->ent[*slot - 1].fig[agg_incomplete(spanidx_u8(h->c.ix,
	    SPANIDX_START, row)) ? 1 : 0], &h->c, row, outer);
	return 0;
}

void
agg_split_free(struct agg_split *s)
{
	agg_free(&s->groups);
	free(s->ent);
	free(s->thr);
	memset(s, 0, sizeof(*s));
}

struct split_walk {
	struct hot fn, mod;
};

static int
split_visit(void *ctx, const struct analysis_visit *v)
{
	struct split_walk *w = ctx;
	int rc = hot_visit(&w->fn, v);

	return rc < 0 ? rc : hot_visit(&w->mod, v);
}

static void
split_hot(struct hot *h, const struct analysis *a, enum agg_group group,
    const struct agg_filter *window, struct agg_split *s, struct error *e)
{
	memset(s, 0, sizeof(*s));
	hot_init(h, a, group, window, &s->groups, e);
	h->split = s;
}

int
agg_split_walk(struct agg_split *fn, struct agg_split *mod,
    const struct analysis *a, struct error *e)
{
	/* The spans every query without --from and --to counts: incomplete
	 * ones too, kept apart, so that either choice is answered. */
	const struct agg_filter window = { .from_ns = 0,
	    .to_ns = AGG_WINDOW_END, .incomplete = 1 };
	struct split_walk w;
	int rc;

	split_hot(&w.fn, a, AGG_FUNCTION, &window, fn, e);
	split_hot(&w.mod, a, AGG_MODULE, &window, mod, e);
	rc = analysis_walk(a, split_visit, &w, e);
	hot_free(&w.fn);
	hot_free(&w.mod);
	if (rc < 0) {
		agg_split_free(fn);
		agg_split_free(mod);
	}
	return rc;
}

static uint64_t
name_hash(const char *s)
{
	uint64_t h = xxh64(s, strlen(s), 0);

	return h == NO_KEY ? 0 : h;
}

/* One record of inline.jsonl into the inline rows and the span sums. */
static int
inline_record(struct hot *h, struct keymap *names, const json_t *o)
{
	const json_t *fn = json_object_get(o, "fn");
	uint64_t span = (uint64_t)json_integer_value(json_object_get(o,
	    "span"));
	uint64_t own = (uint64_t)json_integer_value(json_object_get(o,
	    "insns"));
	uint64_t total = (uint64_t)json_integer_value(json_object_get(o,
	    "total_insns"));
	uint64_t tid = (uint64_t)json_integer_value(json_object_get(o, "tid"));
	struct agg_row *r = NULL;
	const char *name;
	uint64_t key;
	size_t slot, g;
	int rc;

	if (!json_is_string(fn))
		return -ERR_FORMAT;
	if (!agg_filter_tid(h->f, (uint32_t)tid))
		return 0;
	/* Inline rows by the hash of their name (a collision: a scan). */
	key = name_hash(json_string_value(fn));
	if ((rc = keymap_get(names, key, &slot)) < 0)
		return rc;
	if (rc == 1) {
		r = &h->out->row[names->val[slot]];
		if (strcmp(r->name, json_string_value(fn)) != 0)
			for (r = NULL, g = 0; g < h->out->n; g++)
				if (h->out->row[g].is_inline &&
				    strcmp(h->out->row[g].name,
				    json_string_value(fn)) == 0) {
					r = &h->out->row[g];
					break;
				}
	}
	if (r == NULL) {
		if ((name = agg_own(h->out, json_string_value(fn))) == NULL ||
		    (r = agg_new_row(h->out)) == NULL)
			return -ERR_NOMEM;
		r->name = name;
		r->module = "";
		r->is_inline = 1;
		if (rc == 0)
			names->val[slot] = (uint32_t)(h->out->n - 1);
	}
	if (h->n_inl == h->cap_inl) {
		size_t cap = h->cap_inl ? h->cap_inl * 2 : 256;
		struct inl_rec *n = realloc(h->inl, cap * sizeof(*n));

		if (n == NULL)
			return -ERR_NOMEM;
		h->inl = n;
		h->cap_inl = cap;
	}
	h->inl[h->n_inl].span = span;
	h->inl[h->n_inl].row = (uint32_t)(r - h->out->row);
	h->inl[h->n_inl].top = json_is_null(json_object_get(o, "parent"));
	h->inl[h->n_inl].own = own;
	h->inl[h->n_inl].total = total;
	h->n_inl++;
	return 0;
}

static int
read_inline(struct hot *h)
{
	const char *fname;
	struct keymap names = { 0 };
	char *line = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;
	ssize_t n;
	json_t *o;
	FILE *in;
	int rc = 0;

	if ((in = analysis_open_jsonl(h->a, SPANDIR_INLINE, &fname,
	    h->e)) == NULL)
		return h->e->code == ERR_NOTFOUND ? 0 : -h->e->code;
	while (rc == 0 && (n = getline(&line, &cap, in)) > 0) {
		lineno++;
		o = json_loadb(line, (size_t)n, 0, NULL);
		rc = o == NULL ? -ERR_FORMAT : inline_record(h, &names, o);
		json_decref(o);
	}
	if (rc == 0 && ferror(in))
		rc = -ERR_IO;
	free(line);
	fclose(in);
	keymap_free(&names);
	if (h->n_inl > 0)
		qsort(h->inl, h->n_inl, sizeof(*h->inl), by_span);
	if (rc == -ERR_FORMAT)
		return error_set(h->e, ERR_FORMAT, "%s line %" PRIu64
		    ": not an inline record", fname, lineno);
	if (rc == -ERR_IO)
		return error_set(h->e, ERR_IO, "%s: %s", fname,
		    strerror(EBADMSG));
	if (rc < 0)
		return error_set(h->e, -rc, "%s", fname);
	return 0;
}

int
agg_hotpaths(struct agg *out, const struct analysis *a,
    enum agg_group group, const struct agg_filter *f, struct error *e)
{
	struct hot h;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	/* The whole trace or some threads, no window: what ptspans kept. */
	if (group != AGG_INLINE && a->kept.base != NULL &&
	    (rc = aggkeep_answer(&a->kept, out, (int)group, f, e)) != 0)
		return rc < 0 ? rc : 0;
	if (a->index_deferred)		/* never an answer from no spans */
		return error_set(e, ERR_INTERNAL, "hotpaths: the index was "
		    "not opened");
	hot_init(&h, a, group, f, out, e);
	if (f != NULL && f->inside != NULL &&
	    (h.inside = agg_find_string(a, f->inside)) < 0)
		rc = error_set(e, ERR_NOTFOUND, "no function named '%s'",
		    f->inside);
	if (rc == 0 && group == AGG_INLINE)
		rc = read_inline(&h);
	if (rc == 0)
		rc = analysis_walk(a, hot_visit, &h, e);
	/* Helpers none of whose instances passed the filter: no row. */
	if (rc == 0 && h.n_inl > 0) {
		size_t kept = 0;

		for (size_t i = 0; i < out->n; i++)
			if (!out->row[i].is_inline || out->row[i].spans > 0)
				out->row[kept++] = out->row[i];
		out->n = kept;
	}
	hot_free(&h);
	if (rc < 0)
		agg_free(out);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Callers and callees */

int64_t
agg_find_string(const struct analysis *a, const char *s)
{
	const char *t = a->ix.strtab;
	size_t len = strlen(s);

	for (uint64_t off = 0; off < a->ix.strtab_size;) {
		size_t n = strlen(t + off);

		if (n == len && memcmp(t + off, s, len) == 0)
			return (int64_t)off;
		off += n + 1;
	}
	return -1;
}

/*
 * Marks, by string offset, the strings that name a span's function: from
 * the index's function table, which holds a function only once a span
 * has it (so no row is read, which at 100 M spans is seconds).
 */
static char *
function_strings(const struct analysis *a)
{
	char *is_fn = calloc(a->ix.strtab_size + 1, 1);

	if (is_fn == NULL)
		return NULL;
	for (uint64_t f = 0; f < a->ix.n_funcs; f++) {
		uint32_t off;

		memcpy(&off, spanidx_func(&a->ix, f), sizeof(off));
		if (off < a->ix.strtab_size)
			is_fn[off] = 1;
	}
	return is_fn;
}

/* Is s name followed by what a compiler or demangler appends: a clone
 * suffix (".constprop.0", ".isra.0", ".part.0", ".cold", ".lto_priv.0"),
 * a parameter list or " [clone ...]"? */
static int
is_suffixed(const char *s, const char *name, size_t len)
{
	return strncmp(s, name, len) == 0 && (s[len] == '.' ||
	    s[len] == '(' || strncmp(s + len, " [clone", 7) == 0);
}

int64_t
agg_resolve_function(const struct analysis *a, const char *name,
    struct error *e)
{
	const char *t = a->ix.strtab, *want = name;
	char *is_fn, *plain = NULL, list[256] = "";
	size_t len, n, found = 0, close = 0, ll = 0;
	int64_t hit = -1, exact = -1;

	if ((is_fn = function_strings(a)) == NULL)
		return error_set(e, ERR_NOMEM, "function names");
	if (strncmp(name, "_Z", 2) == 0 || strncmp(name, "_R", 2) == 0)
		if ((plain = demangle(name)) != NULL)
			want = plain;
	len = strlen(want);
	for (uint64_t off = 0; off < a->ix.strtab_size; off += n + 1) {
		n = strlen(t + off);
		if (!is_fn[off])
			continue;
		if (n == len && memcmp(t + off, want, len) == 0) {
			exact = (int64_t)off;
			break;
		}
		if (is_suffixed(t + off, want, len)) {
			if (found++ == 0)
				hit = (int64_t)off;
			if (ll < sizeof(list))
				ll += (size_t)snprintf(list + ll, sizeof(list) -
				    ll, "%s%s", found > 1 ? ", " : "", t + off);
		}
	}
	if (exact < 0 && found == 0)
		/* Nothing by that name: the functions whose names hold it. */
		for (uint64_t off = 0; off < a->ix.strtab_size && close < 5;
		    off += n + 1) {
			n = strlen(t + off);
			if (!is_fn[off] || strcasestr(t + off, want) == NULL)
				continue;
			if (ll < sizeof(list))
				ll += (size_t)snprintf(list + ll, sizeof(list) -
				    ll, "%s%s", close ? ", " : "", t + off);
			close++;
		}
	free(is_fn);
	if (exact >= 0 || found == 1) {
		free(plain);
		return exact >= 0 ? exact : hit;
	}
	if (found > 1)
		error_set(e, ERR_INVALID, "'%s' names %zu functions (%s): give "
		    "one of them", name, found, list);
	else if (close > 0)
		error_set(e, ERR_NOTFOUND, "no function named '%s'; the closest "
		    "names: %s", name, list);
	else
		error_set(e, ERR_NOTFOUND, "no function named '%s'", name);
	free(plain);
	return -1;
}

static int
by_host(const void *a, const void *b)
{
	const struct agg_host *x = a, *y = b;

	return x->span < y->span ? -1 : x->span > y->span;
}

int
agg_inline_hosts(const struct analysis *a, const char *fn,
    const struct agg_filter *f, struct agg_host **out, size_t *n,
    struct error *e)
{
	const char *fname;
	char *line = NULL;
	struct agg_host *h = NULL, *grown;
	size_t cap = 0, lcap = 0, kept = 0;
	ssize_t len;
	FILE *in;
	json_t *o;

	*out = NULL;
	*n = 0;
	if ((in = analysis_open_jsonl(a, SPANDIR_INLINE, &fname, e)) == NULL)
		return e->code == ERR_NOTFOUND ? 0 : -e->code;
	while ((len = getline(&line, &lcap, in)) > 0) {
		const char *name;

		if ((o = json_loadb(line, (size_t)len, 0, NULL)) == NULL)
			continue;
		name = json_string_value(json_object_get(o, "fn"));
		if (name == NULL || strcmp(name, fn) != 0 ||
		    !agg_filter_tid(f, (uint32_t)json_integer_value(
		    json_object_get(o, "tid")))) {
			json_decref(o);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((grown = realloc(h, cap * sizeof(*h))) == NULL) {
				json_decref(o);
				free(h);
				free(line);
				fclose(in);
				return error_set(e, ERR_NOMEM, "inline hosts");
			}
			h = grown;
		}
		h[*n].span = (uint64_t)json_integer_value(json_object_get(o,
		    "span"));
		h[*n].instances = 1;
		h[*n].insns = (uint64_t)json_integer_value(json_object_get(o,
		    "total_insns"));
		h[*n].self_insns = (uint64_t)json_integer_value(
		    json_object_get(o, "insns"));
		(*n)++;
		json_decref(o);
	}
	free(line);
	if (ferror(in)) {
		fclose(in);
		free(h);
		return error_set(e, ERR_IO, "%s: %s", fname, strerror(EBADMSG));
	}
	fclose(in);
	/* One entry per span, its instances summed. */
	if (*n > 0) {
		qsort(h, *n, sizeof(*h), by_host);
		for (size_t i = 0; i < *n; i++) {
			if (kept > 0 && h[kept - 1].span == h[i].span) {
				h[kept - 1].instances++;
				h[kept - 1].insns += h[i].insns;
				h[kept - 1].self_insns += h[i].self_insns;
			} else {
				h[kept++] = h[i];
			}
		}
		*n = kept;
	}
	*out = h;
	return 0;
}

const struct agg_host *
agg_host_find(const struct agg_host *h, size_t n, uint64_t span)
{
	struct agg_host key = { .span = span };

	return bsearch(&key, h, n, sizeof(*h), by_host);
}

struct calls {
	const struct analysis *a;
	struct cols c;
	const struct agg_filter *f;
	uint32_t fn;
	const struct agg_host *hosts;	/* an inlined fn: where it is */
	size_t n_hosts;
	struct agg *callers, *callees;
	struct keymap kcallers, kcallees;
	uint64_t seen;
	struct error *e;
};

static int
calls_add(struct calls *c, struct agg *g, struct keymap *m, uint64_t key_row,
    int has_key_row, uint64_t span_row)
{
	const struct spanidx *ix = &c->a->ix;
	uint64_t key = UINT64_MAX - 1;
	const char *name = "(none)", *mod = "";
	struct agg_row *r;
	uint32_t idx;

	if (has_key_row) {
		uint32_t fn = spanidx_u32(ix, SPANIDX_FN, key_row);
		uint32_t md = spanidx_u32(ix, SPANIDX_MODULE, key_row);

		key = (uint64_t)fn << 32 | md;
		name = spanidx_str(ix, fn);
		mod = spanidx_str(ix, md);
	}
	if ((r = group_row(g, m, key, name, mod, &idx)) == NULL)
		return error_set(c->e, ERR_NOMEM, "calls");
	add_span(r, &c->c, span_row, 1);
	return 0;
}

static int
calls_visit(void *ctx, const struct analysis_visit *v)
{
	struct calls *c = ctx;
	int rc = 0;

	if (!filter_pass(&c->c, c->f, v->row))
		return 0;
	if (c->hosts != NULL) {
		const struct agg_host *h = agg_host_find(c->hosts, c->n_hosts,
		    spanidx_u64(&c->a->ix, SPANIDX_ID, v->row));
		const struct spanidx *ix = &c->a->ix;
		struct agg_row *r;
		uint32_t idx, fn, mod;

		if (h == NULL)
			return 0;
		/* The function it was inlined into is its caller. */
		fn = spanidx_u32(ix, SPANIDX_FN, v->row);
		mod = spanidx_u32(ix, SPANIDX_MODULE, v->row);
		r = group_row(c->callers, &c->kcallers, (uint64_t)fn << 32 |
		    mod, spanidx_str(ix, fn), spanidx_str(ix, mod), &idx);
		if (r == NULL)
			return error_set(c->e, ERR_NOMEM, "calls");
		r->calls += h->instances;
		r->spans += h->instances;
		r->insns += h->insns;
		r->self_insns += h->self_insns;
		c->seen++;
		return 0;
	}
	if (spanidx_u32(c->c.ix, SPANIDX_FN, v->row) == c->fn) {
		c->seen++;
		rc = calls_add(c, c->callers, &c->kcallers,
		    v->depth ? v->stack[v->depth - 1] : 0, v->depth > 0,
		    v->row);
	}
	if (rc == 0 && v->depth > 0 && spanidx_u32(c->c.ix, SPANIDX_FN,
	    v->stack[v->depth - 1]) == c->fn)
		rc = calls_add(c, c->callees, &c->kcallees, v->row, 1, v->row);
	return rc;
}

int
agg_calls(struct agg *callers, struct agg *callees,
    const struct analysis *a, const char *fn, const struct agg_filter *f,
    struct error *e)
{
	struct calls c;
	int64_t off = agg_find_string(a, fn);
	struct agg_host *hosts = NULL;
	size_t n_hosts = 0;
	int rc;

	memset(callers, 0, sizeof(*callers));
	memset(callees, 0, sizeof(*callees));
	if (off < 0 && (rc = agg_inline_hosts(a, fn, f, &hosts, &n_hosts,
	    e)) < 0)
		return rc;
	if (off < 0 && n_hosts == 0) {
		free(hosts);
		return error_set(e, ERR_NOTFOUND, "no function named '%s'", fn);
	}
	memset(&c, 0, sizeof(c));
	c.hosts = hosts;
	c.n_hosts = n_hosts;
	c.a = a;
	cols_init(&c.c, a);
	c.f = f;
	c.fn = (uint32_t)off;
	c.callers = callers;
	c.callees = callees;
	c.e = e;
	rc = analysis_walk(a, calls_visit, &c, e);
	free(hosts);
	keymap_free(&c.kcallers);
	keymap_free(&c.kcallees);
	if (rc < 0) {
		agg_free(callers);
		agg_free(callees);
	}
	return rc;
}
