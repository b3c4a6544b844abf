/*
 * ptspans: the span-line writer, inline trees, and the per-function
 * totals of the summary.  The other records are written by span/spandir.
 *
 * The one JSON writer of the project that does not go through struct
 * jsonw: span lines are built in memory (json_escape, json_format_u64,
 * cached number strings), with the keys and member order of span/spandir,
 * because they are a measured hot path: gigabytes of lines, where a
 * writer call per member shows (jsonw.h, json_format_u64).
 */
#include <limits.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/scratch.h"
#include "base/xxh64.h"
#include "spans.h"
#include "sym/symtab.h"

const char *
spans_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *
spans_fn_name(const struct cs_fn *fn, uint64_t entry, char *buf, size_t size)
{
	if (fn->name != NULL)
		return fn->name;
	/* A frame found below the stack's bottom has no entry, only a
	 * return address no symbol holds: which function it is is not
	 * known (its module member still says where). */
	if (entry == 0)
		snprintf(buf, size, "unknown");
	else if (fn->module != NULL)
		snprintf(buf, size, "%s+0x%" PRIx64,
		    spans_base_name(fn->module), entry - fn->module_base);
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

/* ----------------------------------------------------------------- */
/* Span lines */

/* Lines go out in writes of this size: a system call costs microseconds
 * on a paravirtualized guest, and 2 MiB wrote the bench's lines to
 * /dev/null a tenth faster than 1 MiB (4 MiB no faster). */
#define WBUF_SIZE ((size_t)1 << 21)
/* A span line without its head run (see run_slot): 413 bytes at most,
 * and room for the copies of fixed sizes that write past what they keep
 * (numbers: 20 bytes, runs: RUN_SLACK, site and tail runs: their size). */
#define LINE_MAX_FIXED 640
/* Runs are copied in blocks of this many bytes: up to RUN_SLACK - 1 more
 * are read from the run and written to the line. */
#define RUN_SLACK 32

/* The escaped fn, raw and module members of one function, in the arena. */
struct frag {
	const char *name, *raw, *module;	/* the key: the pointers */
	size_t off, len;
};

/*
 * The members of a line that depend on where the span is in the program
 * rather than on when, rendered once: a program runs the same calls again
 * and again, and copying two runs costs less than a dozen members.
 *   site: ,"call_site":...,"entry":...,"start_ns":      (SITE_RUN bytes)
 *   head: ,"tid":...,"pid":...,"fn":...,"raw":...,"module":...,
 *         "depth":...,"parent":                         (then RUN_SLACK)
 * Slots are direct mapped on the call site, entry, depth and thread, and
 * keyed by everything the runs are made of.
 */
#define SITE_RUN 80
#define HEAD_RUN 192
struct run_slot {
	const char *name, *raw, *module;
	uint64_t module_base, call_site, entry;
	uint32_t tid, pid;
	int32_t depth;
	uint8_t len_site;		/* 0: empty slot */
	uint32_t len_head;
	uint32_t cap;			/* of text */
	char *text;			/* site (SITE_RUN), head, slack */
};

/*
 * The start, end, tail_call and async members and the line's end, for
 * every value of each (start and end past their names as "unknown").
 * TAIL_RUN bytes are copied whatever the length.
 */
#define TAIL_RUN 80
#define TAILS ((CS_START_NR + 1) * (CS_END_NR + 1) * 4)
struct tail_run {
	char s[TAIL_RUN];
	uint8_t len;
};

/*
 * The leading digits of a number, all but the last four: the ids and
 * the start and end times of consecutive lines mostly share them.  24
 * bytes are copied whatever the length.
 */
struct num_head {
	uint64_t head;			/* number / 10^4, 0: none yet */
	size_t len;
	char s[24];
};

#define SLOT_BITS 11
#define SLOTS (1 << SLOT_BITS)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define SPANS_SCHEMA_STR STRINGIFY(SPANDIR_SCHEMA)
/* A member's key as the line has it, after the member before it. */
#define KEY(k) ",\"" k "\":"
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), \
	(p) + sizeof(lit) - 1)

struct span_writer {
	FILE *out;
	char *buf;
	size_t n, cap;
	int error;			/* sticky: 0 or -ERR_* */
	int hashing;			/* lines hashed into hash */
	struct xxh64 hash;
	struct frag *frag;		/* open addressing, name NULL: free */
	size_t n_frag, cap_frag;
	char *arena;
	size_t n_arena, cap_arena;
	/* Members that repeat, rendered once. */
	struct run_slot *slot;		/* SLOTS of them */
	struct tail_run tail[TAILS];	/* see tails_init */
	struct num_head id_head, parent_head, start_head, end_head;
	uint32_t small[1000];		/* see smalls_init */
	uint32_t quad[10000];		/* 0000..9999, see smalls_init */
};

static size_t
tail_index(unsigned start, unsigned end, int tail_call, int async)
{
	start = start < CS_START_NR ? start : CS_START_NR;
	end = end < CS_END_NR ? end : CS_END_NR;
	return ((start * (CS_END_NR + 1) + end) << 2) |
	    (tail_call ? 2u : 0u) | (async ? 1u : 0u);
}

/* The digits of every number below 1000 and, in the top byte, their
 * count (the digits first in memory on this little-endian machine), and
 * the four digits of every number below 10000, leading zeros kept. */
static void
smalls_init(struct span_writer *w)
{
	char d[4];

	for (uint32_t v = 0; v < 1000; v++) {
		uint32_t n = (uint32_t)json_format_u64(d, v);

		memset(d + n, 0, 4 - n);
		memcpy(&w->small[v], d, 4);
		w->small[v] = (w->small[v] & 0xffffffu) | n << 24;
	}
	/* The last four digits of ids and times: one load, where two
	 * divisions and two pairs were a tenth of the formatting. */
	for (uint32_t v = 0; v < 10000; v++) {
		char q[4] = { (char)('0' + v / 1000), (char)('0' + v / 100 % 10),
		    (char)('0' + v / 10 % 10), (char)('0' + v % 10) };

		memcpy(&w->quad[v], q, 4);
	}
}

/* Every tail run (the names are short words: they fit). */
static void
tails_init(struct span_writer *w)
{
	for (unsigned st = 0; st <= CS_START_NR; st++)
		for (unsigned en = 0; en <= CS_END_NR; en++)
			for (int f = 0; f < 4; f++) {
				struct tail_run *t = &w->tail[tail_index(st, en,
				    f & 2, f & 1)];

				t->len = (uint8_t)snprintf(t->s, sizeof(t->s),
				    KEY(SPANDIR_SPAN_START) "\"%s\""
				    KEY(SPANDIR_SPAN_END) "\"%s\""
				    KEY(SPANDIR_SPAN_TAIL_CALL) "%s"
				    KEY(SPANDIR_SPAN_ASYNC) "%s}\n",
				    spandir_start_name(st), spandir_end_name(en),
				    f & 2 ? "true" : "false",
				    f & 1 ? "true" : "false");
			}
}

struct span_writer *
spans_writer_new(FILE *out)
{
	struct span_writer *w = calloc(1, sizeof(*w));

	if (w == NULL || (w->buf = malloc(WBUF_SIZE)) == NULL ||
	    (w->slot = calloc(SLOTS, sizeof(*w->slot))) == NULL) {
		if (w != NULL)
			free(w->buf);
		free(w);
		return NULL;
	}
	w->out = out;
	w->cap = WBUF_SIZE;
	tails_init(w);
	smalls_init(w);
	return w;
}

/* Writes out the line buffer. */
static void
writer_out(struct span_writer *w)
{
	if (w->hashing && w->n > 0)
		xxh64_update(&w->hash, w->buf, w->n);
	if (w->n > 0 && fwrite(w->buf, 1, w->n, w->out) != w->n &&
	    w->error == 0)
		w->error = -ERR_IO;
	w->n = 0;
}

void
spans_writer_hash_lines(struct span_writer *w)
{
	w->hashing = 1;
	xxh64_init(&w->hash, 0);
}

uint64_t
spans_writer_digest(const struct span_writer *w)
{
	return xxh64_digest(&w->hash);
}

int
spans_writer_flush(struct span_writer *w)
{
	writer_out(w);
	return w->error;
}

void
spans_writer_free(struct span_writer *w)
{
	if (w == NULL)
		return;
	free(w->buf);
	if (w->slot != NULL)
		for (size_t i = 0; i < SLOTS; i++)
			free(w->slot[i].text);
	free(w->slot);
	free(w->frag);
	free(w->arena);
	free(w);
}

/* Makes room for need more bytes in the line buffer; 0 or -ERR_NOMEM. */
static int
writer_room(struct span_writer *w, size_t need)
{
	char *nb;

	if (w->cap - w->n >= need)
		return 0;
	writer_out(w);
	if (w->cap >= need)
		return 0;
	if ((nb = realloc(w->buf, need)) == NULL)
		return -ERR_NOMEM;
	w->buf = nb;
	w->cap = need;
	return 0;
}


static char *
put_str_or_null(char *p, const char *s)
{
	if (s == NULL)
		return PUT_LIT(p, "null");
	return p + json_escape(p, s, strlen(s));
}

/* The bytes put_fn_members writes at most for these strings. */
static size_t
fn_members_max(const char *fn, const char *raw, const char *module)
{
	return 32 + JSON_ESCAPED_MAX(strlen(fn)) +
	    (raw ? JSON_ESCAPED_MAX(strlen(raw)) : 4) +
	    (module ? JSON_ESCAPED_MAX(strlen(module)) : 4);
}

static char *
put_fn_members(char *p, const char *fn, const char *raw, const char *module)
{
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_FN));
	p += json_escape(p, fn, strlen(fn));
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_RAW));
	p = put_str_or_null(p, raw);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_MODULE));
	return put_str_or_null(p, module);
}

static size_t
frag_hash(const char *name, const char *raw, const char *module)
{
	uint64_t h = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)raw * 0xc2b2ae3d27d4eb4full;
	h ^= (uint64_t)(uintptr_t)module * 0x165667b19e3779f9ull;
	return (size_t)(h ^ (h >> 29));
}

static int
frags_grow(struct span_writer *w)
{
	size_t cap = w->cap_frag ? w->cap_frag * 2 : 1024;
	struct frag *nf = calloc(cap, sizeof(*nf));

	if (nf == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < w->cap_frag; i++) {
		const struct frag *f = &w->frag[i];
		size_t j;

		if (f->name == NULL)
			continue;
		for (j = frag_hash(f->name, f->raw, f->module) & (cap - 1);
		    nf[j].name != NULL; j = (j + 1) & (cap - 1))
			;
		nf[j] = *f;
	}
	free(w->frag);
	w->frag = nf;
	w->cap_frag = cap;
	return 0;
}

/*
 * The escaped members of a named function, rendered the first time the
 * function ends a span; NULL when out of memory.
 */
static const struct frag *
frag_for(struct span_writer *w, const struct cs_fn *fn)
{
	struct frag *f;
	size_t j, max;
	char *na;

	if (w->cap_frag > 0) {
		for (j = frag_hash(fn->name, fn->raw, fn->module) &
		    (w->cap_frag - 1); w->frag[j].name != NULL;
		    j = (j + 1) & (w->cap_frag - 1)) {
			f = &w->frag[j];
			if (f->name == fn->name && f->raw == fn->raw &&
			    f->module == fn->module)
				return f;
		}
	}
	if ((w->n_frag + 1) * 2 > w->cap_frag && frags_grow(w) < 0)
		return NULL;
	max = fn_members_max(fn->name, fn->raw, fn->module);
	if (w->cap_arena - w->n_arena < max) {
		size_t cap = w->cap_arena ? w->cap_arena * 2 : 65536;

		while (cap - w->n_arena < max)
			cap *= 2;
		if ((na = realloc(w->arena, cap)) == NULL)
			return NULL;
		w->arena = na;
		w->cap_arena = cap;
	}
	for (j = frag_hash(fn->name, fn->raw, fn->module) & (w->cap_frag - 1);
	    w->frag[j].name != NULL; j = (j + 1) & (w->cap_frag - 1))
		;
	f = &w->frag[j];
	f->name = fn->name;
	f->raw = fn->raw;
	f->module = fn->module;
	f->off = w->n_arena;
	f->len = (size_t)(put_fn_members(w->arena + w->n_arena, fn->name,
	    fn->raw, fn->module) - (w->arena + w->n_arena));
	w->n_arena += f->len;
	w->n_frag++;
	return f;
}

static char *
put_u64(char *p, uint64_t v)
{
	return p + json_format_u64(p, v);
}

static char *
put_i64(char *p, int64_t v)
{
	if (v >= 0)
		return put_u64(p, (uint64_t)v);
	*p++ = '-';
	return put_u64(p, (uint64_t)0 - (uint64_t)v);
}

/*
 * The 8 nibbles of v as 8 lowercase hex digits, the first digit in the
 * lowest byte: spread one nibble to a byte, then add '0' or 'a' - 10 to
 * all eight at once (a call site or entry per line: a loop per digit
 * was a fifth of the formatting).
 */
static inline uint64_t
hex8(uint32_t v)
{
	uint64_t x = v, nine;

	x = ((x & 0xffff0000ull) << 16) | (x & 0xffffull);
	x = ((x & 0x0000ff000000ff00ull) << 8) | (x & 0x000000ff000000ffull);
	x = ((x & 0x00f000f000f000f0ull) << 4) | (x & 0x000f000f000f000full);
	/* Digits above 9 get 'a' - '0' - 10 more. */
	nine = ((x + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
	x += 0x3030303030303030ull + nine * ('a' - '0' - 10);
	return __builtin_bswap64(x);
}

/*
 * "0x..." with lowercase digits, or null for 0.  Writes 16 digits
 * (shifted so the first is the first significant one) and keeps as many
 * as there are: the line buffer has room past them (LINE_MAX_FIXED).
 */
static char *
put_addr(char *p, uint64_t a)
{
	uint64_t hi, lo;
	int digits;

	if (a == 0)
		return PUT_LIT(p, "null");
	digits = (64 - __builtin_clzll(a) + 3) / 4;
	a <<= 64 - 4 * digits;
	hi = hex8((uint32_t)(a >> 32));
	lo = hex8((uint32_t)a);
	p = PUT_LIT(p, "\"0x");
	memcpy(p, &hi, 8);
	memcpy(p + 8, &lo, 8);
	p += digits;
	*p++ = '"';
	return p;
}

/*
 * A count: mostly below 1000, in one, two or three digits about as
 * often, which a branch on the length would mispredict.  The line
 * buffer has room for 20 bytes.
 */
static inline char *
put_count(char *p, const struct span_writer *w, uint64_t v)
{
	uint32_t d;

	if (v < 1000) {
		d = w->small[v];
		memcpy(p, &d, 4);
		return p + (d >> 24);
	}
	return put_u64(p, v);
}

/*
 * A number whose head h may hold: ids and times, whose leading digits
 * consecutive lines mostly share.  The line buffer has room for 24.
 * Inlined: a call each was a third of the formatting.
 */
static inline __attribute__((always_inline)) char *
put_headed(char *p, const struct span_writer *w, struct num_head *h,
    uint64_t v)
{
	uint64_t head = v / 10000;
	unsigned tail = (unsigned)(v - head * 10000);

	if (head == 0)
		return put_count(p, w, v);
	if (head != h->head) {
		h->len = json_format_u64(h->s, head);
		h->head = head;
	}
	memcpy(p, h->s, sizeof(h->s));
	p += h->len;
	memcpy(p, &w->quad[tail], 4);
	return p + 4;
}

/* len bytes of a run with RUN_SLACK bytes after it, where the line
 * buffer has room for them too. */
static inline char *
put_run(char *p, const char *run, size_t len)
{
	if (len <= HEAD_RUN) {
		memcpy(p, run, HEAD_RUN);
		return p + len;
	}
	for (size_t i = 0; i < len; i += RUN_SLACK)
		memcpy(p + i, run + i, RUN_SLACK);
	return p + len;
}

/* Renders the runs of s into t; 0 or -ERR_NOMEM (t left empty). */
static int
slot_fill(struct span_writer *w, struct run_slot *t, const struct cs_span *s)
{
	const struct frag *f = NULL;
	const char *fn = NULL;
	char buf[512], *p;
	size_t need;

	t->len_site = 0;
	if (s->fn.name != NULL) {
		if ((f = frag_for(w, &s->fn)) == NULL)
			return -ERR_NOMEM;
		need = f->len;
	} else {
		struct cs_fn cf = { 0, 0, NULL, s->fn.raw, s->fn.module,
		    s->fn.module_base, 0 };

		fn = spans_fn_name(&cf, s->entry, buf, sizeof(buf));
		need = fn_members_max(fn, s->fn.raw, s->fn.module);
	}
	/* tid, pid, depth and parent: 64 bytes at most. */
	need += 64 + RUN_SLACK;
	need = SITE_RUN + (need > HEAD_RUN ? need : HEAD_RUN);
	if (t->cap < need) {
		free(t->text);
		t->cap = 0;
		if (need > UINT32_MAX || (t->text = malloc(need)) == NULL)
			return -ERR_NOMEM;
		t->cap = (uint32_t)need;
	}
	p = PUT_LIT(t->text, KEY(SPANDIR_SPAN_CALL_SITE));
	p = put_addr(p, s->call_site);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_ENTRY));
	p = put_addr(p, s->entry);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_START_NS));
	t->len_site = (uint8_t)(p - t->text);
	p = PUT_LIT(t->text + SITE_RUN, KEY(SPANDIR_SPAN_TID));
	p = put_u64(p, s->tid);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_PID));
	p = put_u64(p, s->pid);
	if (f != NULL) {
		memcpy(p, w->arena + f->off, f->len);
		p += f->len;
	} else
		p = put_fn_members(p, fn, s->fn.raw, s->fn.module);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_DEPTH));
	p = put_i64(p, s->depth);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_PARENT));
	t->len_head = (uint32_t)(p - (t->text + SITE_RUN));
	t->name = s->fn.name;
	t->raw = s->fn.raw;
	t->module = s->fn.module;
	t->module_base = s->fn.module_base;
	t->call_site = s->call_site;
	t->entry = s->entry;
	t->tid = s->tid;
	t->pid = s->pid;
	t->depth = s->depth;
	return 0;
}

/* The slot holding the runs of s, filled if need be; NULL: no memory. */
static inline struct run_slot *
slot_for(struct span_writer *w, const struct cs_span *s)
{
	uint64_t h = s->entry * 0x9e3779b97f4a7c15ull ^
	    s->call_site * 0xc2b2ae3d27d4eb4full ^
	    (((uint64_t)(uint32_t)s->depth << 32) | s->tid) *
	    0x165667b19e3779f9ull;
	struct run_slot *t = &w->slot[h >> (64 - SLOT_BITS)];

	/* One test for the whole key: it mostly matches. */
	if (t->len_site != 0 &&
	    ((t->entry ^ s->entry) | (t->call_site ^ s->call_site) |
	    ((uintptr_t)t->name ^ (uintptr_t)s->fn.name) |
	    ((uintptr_t)t->raw ^ (uintptr_t)s->fn.raw) |
	    ((uintptr_t)t->module ^ (uintptr_t)s->fn.module) |
	    (t->module_base ^ s->fn.module_base) | (t->tid ^ s->tid) |
	    (t->pid ^ s->pid) | (uint32_t)(t->depth ^ s->depth)) == 0)
		return t;
	return slot_fill(w, t, s) < 0 ? NULL : t;
}

uint64_t
spans_inline_insns(const struct cs_span *s)
{
	uint64_t n = 0;

	/* The totals of the inline tree's roots: every record's own. */
	for (size_t i = 0; i < s->n_inl; i++)
		n += s->inl[i].insns;
	return n;
}

int
spans_write_span(struct span_writer *w, const struct cs_span *s)
{
	const struct run_slot *t;
	const struct tail_run *tl;
	char *p;
	int rc;

	if (w->error != 0)
		return w->error;
	if ((t = slot_for(w, s)) == NULL)
		return w->error = -ERR_NOMEM;
	if ((rc = writer_room(w, LINE_MAX_FIXED + HEAD_RUN + t->len_head +
	    RUN_SLACK)) < 0)
		return w->error = rc;
	p = w->buf + w->n;
	p = PUT_LIT(p, "{\"" SPANDIR_SPAN_V "\":" SPANS_SCHEMA_STR
	    KEY(SPANDIR_SPAN_ID));
	p = put_headed(p, w, &w->id_head, s->id);
	p = put_run(p, t->text + SITE_RUN, t->len_head);
	p = s->parent == 0 ? PUT_LIT(p, "null") : put_headed(p, w,
	    &w->parent_head, s->parent);
	memcpy(p, t->text, SITE_RUN);
	p += t->len_site;
	p = put_headed(p, w, &w->start_head, s->start_ns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_END_NS));
	p = put_headed(p, w, &w->end_head, s->end_ns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_DUR_NS));
	p = put_count(p, w, s->end_ns - s->start_ns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_SELF_NS));
	p = put_count(p, w, s->self_ns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_INSNS));
	p = put_count(p, w, s->insns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_SELF_INSNS));
	p = put_count(p, w, s->self_insns);
	p = PUT_LIT(p, KEY(SPANDIR_SPAN_INLINE_INSNS));
	p = put_count(p, w, spans_inline_insns(s));
	tl = &w->tail[tail_index(s->start, s->end, s->tail_call, s->async)];
	memcpy(p, tl->s, TAIL_RUN);
	p += tl->len;
	w->n = (size_t)(p - w->buf);
	return 0;
}

void
spans_write_inline(struct jsonw *w, const struct cs_span *s,
    struct inl_tree *t, uint64_t *next_id)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct inl_node *n = &t->node[i];
		struct spandir_inline in;

		t->node[i].id = (*next_id)++;
		in.id = n->id;
		in.span = s->id;
		in.tid = s->tid;
		in.parent = n->parent < 0 ? 0 : t->node[n->parent].id;
		in.site = n->site;
		in.insns = n->own;
		in.total_insns = n->total;
		spandir_write_inline(w, &in);
	}
}

/* ----------------------------------------------------------------- */
/* Per-function totals (built in run.c, keyed "fn\tmodule"). */

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

unsigned
spans_sweep_dead_temps(const char *dir)
{
	char parent[PATH_MAX], prefix[PATH_MAX], path[2 * PATH_MAX];
	const char *base;
	struct dirent *d;
	unsigned n = 0;
	size_t len;
	DIR *dp;

	snprintf(parent, sizeof(parent), "%s", dir);
	len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	base = strrchr(parent, '/');
	if (base == NULL) {
		snprintf(prefix, sizeof(prefix), "%s.ptspans-", parent);
		snprintf(parent, sizeof(parent), ".");
	} else {
		snprintf(prefix, sizeof(prefix), "%s.ptspans-", base + 1);
		parent[base == parent ? 1 : (size_t)(base - parent)] = '\0';
	}
	if ((dp = opendir(parent)) == NULL)
		return 0;
	len = strlen(prefix);
	while ((d = readdir(dp)) != NULL) {
		if (strncmp(d->d_name, prefix, len) != 0 ||
		    strlen(d->d_name) != len + 6)
			continue;
		snprintf(path, sizeof(path), "%s/%s", parent, d->d_name);
		if (scratch_owner_of(path) == SCRATCH_OWNER_DEAD &&
		    cleanup_remove_tree(path) == 0)
			n++;
	}
	closedir(dp);
	return n;
}
