/*
 * ptspans: JSON Lines records (man ptkit-spans.5) and the per-function
 * totals of the summary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spans.h"
#include "symtab.h"

static void
kv_str_or_null(struct jsonw *w, const char *key, const char *s)
{
	jsonw_key(w, key);
	if (s == NULL)
		jsonw_null(w);
	else
		jsonw_string(w, s);
}

static void
kv_addr(struct jsonw *w, const char *key, uint64_t a)
{
	char buf[32];

	jsonw_key(w, key);
	if (a == 0) {
		jsonw_null(w);
		return;
	}
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	jsonw_string(w, buf);
}

static void
kv_id(struct jsonw *w, const char *key, uint64_t id)
{
	jsonw_key(w, key);
	if (id == 0)
		jsonw_null(w);
	else
		jsonw_u64(w, id);
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *
spans_fn_name(const struct cs_fn *fn, uint64_t entry, char *buf, size_t size)
{
	if (fn->name != NULL)
		return fn->name;
	if (fn->module != NULL)
		snprintf(buf, size, "%s+0x%" PRIx64, base_name(fn->module),
		    entry - fn->module_base);
	else
		snprintf(buf, size, "0x%" PRIx64, entry);
	return buf;
}

/* Two ranges of one inlined call: same callee, same call site, depth. */
static int
same_site(const struct sym_inline *a, const struct sym_inline *b)
{
	if (a == b)
		return 1;
	if (a == NULL || b == NULL)
		return 0;
	return a->depth == b->depth && a->call_line == b->call_line &&
	    a->call_column == b->call_column &&
	    strcmp(a->name, b->name) == 0 &&
	    (a->call_file == b->call_file || (a->call_file && b->call_file &&
	    strcmp(a->call_file, b->call_file) == 0));
}

/* The node for site under parent, created when new; -1 out of memory. */
static long
node_for(struct inl_tree *t, const struct sym_inline *site, long parent)
{
	struct inl_node *n;

	for (size_t i = 0; i < t->n; i++)
		if (t->node[i].parent == parent &&
		    same_site(t->node[i].site, site))
			return (long)i;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;

		if ((n = realloc(t->node, cap * sizeof(*n))) == NULL)
			return -1;
		t->node = n;
		t->cap = cap;
	}
	n = &t->node[t->n];
	memset(n, 0, sizeof(*n));
	n->site = site;
	n->parent = parent;
	return (long)t->n++;
}

int
spans_inline_tree(struct inl_tree *t, const struct cs_span *s)
{
	const struct sym_inline *chain[64];
	size_t depth;
	long at;

	t->n = 0;
	for (size_t i = 0; i < s->n_inl; i++) {
		const struct sym_inline *x = s->inl[i].inl;

		for (depth = 0; x != NULL && depth < 64; x = x->parent)
			chain[depth++] = x;
		at = -1;
		while (depth-- > 0)
			if ((at = node_for(t, chain[depth], at)) < 0)
				return -ERR_NOMEM;
		if (at >= 0)
			t->node[at].own += s->inl[i].insns;
	}
	/* Children come after their parents: sum totals backwards. */
	for (size_t i = t->n; i-- > 0;) {
		t->node[i].total += t->node[i].own;
		if (t->node[i].parent >= 0)
			t->node[t->node[i].parent].total += t->node[i].total;
	}
	return 0;
}

/*
 * Span lines are most of the output: they are built in a buffer and
 * written with one fwrite.  Strings of plain printable ASCII are copied
 * as they are (what jsonw writes for them too); any other string goes
 * through json_write_escaped, so the output is the same JSON either way.
 */
struct line {
	FILE *out;
	int first;			/* no member written yet */
	char buf[1024];
	size_t n;
};

static void
line_flush(struct line *l)
{
	if (l->n > 0 && fwrite(l->buf, 1, l->n, l->out) != l->n)
		l->n = 0;
	l->n = 0;
}

static void
line_raw(struct line *l, const char *s, size_t len)
{
	if (l->n + len > sizeof(l->buf)) {
		line_flush(l);
		if (len > sizeof(l->buf)) {
			fwrite(s, 1, len, l->out);
			return;
		}
	}
	memcpy(l->buf + l->n, s, len);
	l->n += len;
}

static void
line_key(struct line *l, const char *key)
{
	if (l->first)
		line_raw(l, "\"", 1);
	else
		line_raw(l, ",\"", 2);
	l->first = 0;
	line_raw(l, key, strlen(key));
	line_raw(l, "\":", 2);
}

static void
line_u64(struct line *l, const char *key, uint64_t v)
{
	char d[24];
	size_t i = sizeof(d);

	line_key(l, key);
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	line_raw(l, d + i, sizeof(d) - i);
}

static void
line_i64(struct line *l, const char *key, int64_t v)
{
	if (v >= 0) {
		line_u64(l, key, (uint64_t)v);
		return;
	}
	char d[24];
	size_t i = sizeof(d);
	uint64_t u = (uint64_t)0 - (uint64_t)v;

	line_key(l, key);
	do {
		d[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	d[--i] = '-';
	line_raw(l, d + i, sizeof(d) - i);
}

static void
line_str(struct line *l, const char *key, const char *s)
{
	size_t len;

	line_key(l, key);
	if (s == NULL) {
		line_raw(l, "null", 4);
		return;
	}
	for (len = 0; s[len] != '\0'; len++)
		if ((unsigned char)s[len] < 0x20 || s[len] == '"' ||
		    s[len] == '\\' || (unsigned char)s[len] >= 0x7f)
			break;
	if (s[len] == '\0') {
		line_raw(l, "\"", 1);
		line_raw(l, s, len);
		line_raw(l, "\"", 1);
		return;
	}
	line_flush(l);
	(void)json_write_escaped(l->out, s, strlen(s));
}

static void
line_addr(struct line *l, const char *key, uint64_t a)
{
	char buf[24];

	if (a == 0) {
		line_key(l, key);
		line_raw(l, "null", 4);
		return;
	}
	snprintf(buf, sizeof(buf), "0x%" PRIx64, a);
	line_str(l, key, buf);
}

static void
line_bool(struct line *l, const char *key, int v)
{
	line_key(l, key);
	line_raw(l, v ? "true" : "false", v ? 4 : 5);
}

void
spans_write_span(FILE *out, const struct cs_span *s, const struct inl_tree *t)
{
	struct line l;
	char buf[512];
	uint64_t inl = 0;

	for (size_t i = 0; t != NULL && i < t->n; i++)
		if (t->node[i].parent < 0)
			inl += t->node[i].total;
	l.out = out;
	l.n = 0;
	l.first = 1;
	line_raw(&l, "{", 1);
	line_u64(&l, "v", SPANS_SCHEMA);
	line_u64(&l, "id", s->id);
	line_u64(&l, "tid", s->tid);
	line_u64(&l, "pid", s->pid);
	line_str(&l, "fn", spans_fn_name(&s->fn, s->entry, buf, sizeof(buf)));
	line_str(&l, "raw", s->fn.raw);
	line_str(&l, "module", s->fn.module);
	line_i64(&l, "depth", s->depth);
	if (s->parent == 0) {
		line_key(&l, "parent");
		line_raw(&l, "null", 4);
	} else
		line_u64(&l, "parent", s->parent);
	line_addr(&l, "call_site", s->call_site);
	line_addr(&l, "entry", s->entry);
	line_u64(&l, "start_ns", s->start_ns);
	line_u64(&l, "end_ns", s->end_ns);
	line_u64(&l, "dur_ns", s->end_ns - s->start_ns);
	line_u64(&l, "self_ns", s->self_ns);
	line_u64(&l, "insns", s->insns);
	line_u64(&l, "self_insns", s->self_insns);
	line_u64(&l, "inline_insns", inl);
	line_str(&l, "start", cs_start_name(s->start));
	line_str(&l, "end", cs_end_name(s->end));
	line_bool(&l, "tail_call", s->tail_call);
	line_bool(&l, "async", s->async);
	line_raw(&l, "}\n", 2);
	line_flush(&l);
}

void
spans_write_inline(struct jsonw *w, const struct cs_span *s,
    struct inl_tree *t, uint64_t *next_id)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct inl_node *n = &t->node[i];

		t->node[i].id = (*next_id)++;
		jsonw_object_begin(w);
		jsonw_kv_u64(w, "v", SPANS_SCHEMA);
		jsonw_kv_u64(w, "id", n->id);
		jsonw_kv_u64(w, "span", s->id);
		jsonw_kv_u64(w, "tid", s->tid);
		kv_id(w, "parent", n->parent < 0 ? 0 :
		    t->node[n->parent].id);
		jsonw_kv_string(w, "fn", n->site->name);
		kv_str_or_null(w, "raw", n->site->raw);
		jsonw_kv_u64(w, "depth", n->site->depth);
		kv_str_or_null(w, "call_file", n->site->call_file);
		jsonw_kv_u64(w, "call_line", n->site->call_line);
		jsonw_kv_u64(w, "call_column", n->site->call_column);
		jsonw_kv_u64(w, "insns", n->own);
		jsonw_kv_u64(w, "total_insns", n->total);
		jsonw_object_end(w);
		jsonw_newline(w);
	}
}

void
spans_write_gap(struct jsonw *w, const struct cs_gap *g)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANS_SCHEMA);
	jsonw_kv_u64(w, "tid", g->tid);
	jsonw_kv_string(w, "cause", cs_gap_cause_name(g->cause));
	kv_addr(w, "ip", g->ip);
	kv_addr(w, "resume_ip", g->resume_ip);
	jsonw_kv_u64(w, "start_ns", g->start_ns);
	jsonw_kv_u64(w, "end_ns", g->end_ns);
	jsonw_kv_u64(w, "dur_ns", g->end_ns - g->start_ns);
	jsonw_kv_u64(w, "frames_cut", g->frames_cut);
	if (g->errcode != 0)
		jsonw_kv_i64(w, "error", g->errcode);
	if (g->text != NULL && g->text[0] != '\0')
		jsonw_kv_string(w, "text", g->text);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spans_write_event(struct jsonw *w, const struct cs_event *ev)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANS_SCHEMA);
	jsonw_kv_string(w, "kind", cs_event_name(ev->kind));
	jsonw_kv_u64(w, "tid", ev->tid);
	jsonw_kv_u64(w, "time_ns", ev->time);
	kv_addr(w, "ip", ev->ip);
	if (ev->at != 0)
		kv_addr(w, "at", ev->at);
	jsonw_object_end(w);
	jsonw_newline(w);
}

void
spans_write_map(struct jsonw *w, const struct blks_map *m)
{
	jsonw_object_begin(w);
	jsonw_kv_u64(w, "v", SPANS_SCHEMA);
	jsonw_kv_string(w, "kind", "mmap");
	jsonw_kv_u64(w, "pid", m->pid);
	kv_addr(w, "start", m->start);
	kv_addr(w, "end", m->start + m->size);
	jsonw_kv_u64(w, "pgoff", m->pgoff);
	jsonw_kv_string(w, "name", m->name);
	if (m->flags & BLKS_MAP_MISSING)
		jsonw_kv_bool(w, "missing", 1);
	jsonw_object_end(w);
	jsonw_newline(w);
}

/* ----------------------------------------------------------------- */
/* Per-function totals: open addressing on the "fn\tmodule" key. */

static size_t
key_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static int
totals_grow(struct fn_totals *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct fn_total *ns = calloc(cap, sizeof(*ns));

	if (ns == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (t->slot[i].key == NULL)
			continue;
		for (j = key_hash(t->slot[i].key) & (cap - 1);
		    ns[j].key != NULL; j = (j + 1) & (cap - 1))
			;
		ns[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = cap;
	return 0;
}

int
fn_totals_add(struct fn_totals *t, const struct cs_span *s, const char *name)
{
	char key[1024];
	struct fn_total *f;
	size_t j;

	if ((t->n + 1) * 2 > t->cap && totals_grow(t) < 0)
		return -ERR_NOMEM;
	snprintf(key, sizeof(key), "%s\t%s", name,
	    s->fn.module ? base_name(s->fn.module) : "");
	for (j = key_hash(key) & (t->cap - 1); t->slot[j].key != NULL;
	    j = (j + 1) & (t->cap - 1))
		if (strcmp(t->slot[j].key, key) == 0)
			break;
	f = &t->slot[j];
	if (f->key == NULL) {
		if ((f->key = strdup(key)) == NULL)
			return -ERR_NOMEM;
		t->n++;
	}
	f->spans++;
	if (s->start == CS_START_SEEN)
		f->calls++;
	f->self_ns += s->self_ns;
	f->self_insns += s->self_insns;
	f->insns += s->insns;
	return 0;
}

void
fn_totals_free(struct fn_totals *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slot[i].key);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int
by_self_insns(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->key == NULL || y->key == NULL)
		return (x->key == NULL) - (y->key == NULL);
	if (x->self_insns != y->self_insns)
		return x->self_insns > y->self_insns ? -1 : 1;
	return strcmp(x->key, y->key);
}

void
fn_totals_sort(struct fn_totals *t)
{
	if (t->cap > 0)
		qsort(t->slot, t->cap, sizeof(*t->slot), by_self_insns);
}
