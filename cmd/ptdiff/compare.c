/* compare: see compare.h. */
#include "compare.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/json.h"
#include "fmt/spanidx.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"
#include "span/spandir.h"
#include "tool/report.h"

/* What a comparison goes without when a snapshot's manifest is refused. */
#define CONTEXT_LEFT_OUT "the snapshot's context (target, build id, clock) " \
	"is left out"

/* Relative change below which hardware times count as unchanged. */
#define TIME_NOISE_PCT 2.0

static const char *const metric_names[M_COUNT] = {
	[M_CALLS] = "calls",
	[M_TOTAL_NS] = "total_ns",
	[M_SELF_NS] = "self_ns",
	[M_INSNS] = "insns",
	[M_SELF_INSNS] = "self_insns",
	[M_MEAN_NS] = "mean_ns",
	[M_MEAN_SELF_NS] = "mean_self_ns",
	[M_MEAN_INSNS] = "mean_insns",
	[M_MEAN_SELF_INSNS] = "mean_self_insns",
};

const char *
metric_name(enum metric m)
{
	return (unsigned)m < M_COUNT ? metric_names[m] : NULL;
}

int
metric_is_time(enum metric m)
{
	return m == M_TOTAL_NS || m == M_SELF_NS || m == M_MEAN_NS ||
	    m == M_MEAN_SELF_NS;
}

const char *
row_class_name(enum row_class c)
{
	static const char *const names[] = {
		"same", "slower", "faster", "new", "vanished", "ambiguous",
	};

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] :
	    "unknown";
}

int
bound_parse(const char *s, struct bound *b, struct error *e)
{
	const char *colon = strchr(s, ':');
	char name[32], *end;
	size_t len;
	int m;

	if (colon == NULL || (len = (size_t)(colon - s)) == 0 ||
	    len >= sizeof(name))
		return error_set(e, ERR_INVALID,
		    "'%s': expected METRIC:+PCT, like self_ns:+10%%", s);
	memcpy(name, s, len);
	name[len] = '\0';
	for (m = 0; m < M_COUNT; m++)
		if (strcmp(name, metric_names[m]) == 0)
			break;
	if (m == M_COUNT)
		return error_set(e, ERR_INVALID, "'%s': unknown metric '%s' "
		    "(calls, total_ns, self_ns, insns, self_insns, mean_ns, "
		    "mean_self_ns, mean_insns, mean_self_insns)", s, name);
	colon++;
	if (*colon == '+')
		colon++;
	if (*colon < '0' || *colon > '9')
		return error_set(e, ERR_INVALID,
		    "'%s': the bound must be a growth like +10%%", s);
	b->pct = strtod(colon, &end);
	if (*end == '%')
		end++;
	if (*end != '\0' || !isfinite(b->pct))
		return error_set(e, ERR_INVALID,
		    "'%s': '%s' is not a percentage", s, colon);
	b->metric = (enum metric)m;
	b->text = s;
	return 0;
}

int
noise_parse(const char *s, struct noise_spec *n, struct error *e)
{
	char *end;

	n->value = strtod(s, &end);
	n->pct = *end == '%';
	if (end == s || (*end != '\0' && strcmp(end, "%") != 0) ||
	    !isfinite(n->value) || n->value < 0 || s[0] == '-' ||
	    s[0] == '+')
		return error_set(e, ERR_INVALID, "'%s': expected a number of "
		    "instructions like 200, or a share of the capture's like "
		    "0.1%%", s);
	n->given = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sides */

/*
 * The manifest of snapshot directory dir, opened beneath it (no link, no
 * FIFO: lib/fmt/snapshot) and read from that descriptor.  NULL with
 * warn->code 0 when there is none; NULL with warn saying "DIR: why" when
 * one is there but refused or not JSON.
 */
static json_t *
read_snapshot_manifest(const char *dir, struct error *warn)
{
	json_t *doc;
	int fd;

	if ((fd = snapshot_member_open(dir, SNAPSHOT_MANIFEST, warn)) < 0) {
		if (fd != -ERR_NOTFOUND)
			error_prefix(warn, "%s", dir);
		else
			error_clear(warn);
		return NULL;
	}
	doc = json_read_fd(fd, warn);
	close(fd);
	if (doc == NULL)
		error_prefix(warn, "%s: " SNAPSHOT_MANIFEST, dir);
	return doc;
}

/*
 * The snapshot's manifest: where the analysis says, else two levels up.
 * One that is there but refused stops the search and is in warn (the
 * next place could be another snapshot); one simply absent is not said.
 */
static json_t *
side_load_snapshot(struct side *s, struct error *warn)
{
	const char *snap = analysis_manifest_str(&s->an,
	    SPANDIR_M_SNAPSHOT, NULL);
	char dir[PATH_MAX + 8];
	json_t *doc;

	error_clear(warn);
	if (snap != NULL && snap[0] != '\0') {
		if ((doc = read_snapshot_manifest(snap, warn)) != NULL ||
		    warn->code != 0)
			return doc;
	}
	if (store_analysis_snapshot(s->an.dir, dir, sizeof(dir), NULL) < 0)
		return NULL;
	return read_snapshot_manifest(dir, warn);
}

static int
side_open(struct side *s, const char *path, enum agg_group group,
    struct error *warn, struct error *e)
{
	int rc;

	s->path = path;
	if ((rc = analysis_open(&s->an, path, e)) < 0)
		return error_prefix(e, "%s", path);
	s->opened = 1;
	if ((rc = agg_hotpaths(&s->agg, &s->an, group, NULL, e)) < 0)
		return error_prefix(e, "%s", path);
	s->snap = side_load_snapshot(s, warn);
	return 0;
}

static void
side_close(struct side *s)
{
	if (s->opened) {
		agg_free(&s->agg);
		analysis_close(&s->an);
	}
	json_decref(s->snap);
	memset(s, 0, sizeof(*s));
}

static void
row_values(const struct agg_row *r, double v[M_COUNT])
{
	double spans = r->spans > 0 ? (double)r->spans : 1;
	double calls = r->calls > 0 ? (double)r->calls : spans;

	v[M_CALLS] = (double)r->calls;
	v[M_TOTAL_NS] = (double)r->total_ns;
	v[M_SELF_NS] = (double)r->self_ns;
	v[M_INSNS] = (double)r->insns;
	v[M_SELF_INSNS] = (double)r->self_insns;
	v[M_MEAN_NS] = (double)r->sum_ns / spans;
	v[M_MEAN_SELF_NS] = (double)r->self_ns / spans;
	/* Per outermost call: a recursive call is inside one already. */
	v[M_MEAN_INSNS] = (double)r->insns / (r->outer > 0 ?
	    (double)r->outer : calls);
	v[M_MEAN_SELF_INSNS] = (double)r->self_insns / spans;
}

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* ------------------------------------------------------------------ */
/*
 * Ambiguity: one (name, module) that several raw symbols demangle to (an
 * overload set shown without parameters, say).  One raw name at several
 * addresses (a static function and its clone) is one function to a reader
 * and stays paired.
 */

struct entry_map {
	uint64_t *key, *entry;
	unsigned char *multi;
	size_t cap;
};

static int
entry_map_note(struct entry_map *m, uint64_t key, uint64_t entry)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (m->cap - 1);

	while (m->key[i] != 0 && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (m->key[i] == 0) {
		m->key[i] = key;
		m->entry[i] = entry;
	} else if (m->entry[i] != entry)
		m->multi[i] = 1;
	return 0;
}

static int
entry_map_is_multi(const struct entry_map *m, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (m->cap - 1);

	while (m->key[i] != 0) {
		if (m->key[i] == key)
			return m->multi[i];
		i = (i + 1) & (m->cap - 1);
	}
	return 0;
}

/*
 * Marks the function rows of one side whose name stands for several raw
 * symbols.  Inline and module rows are not checked: they have none.
 */
static int
side_find_ambiguous(const struct side *s, unsigned char *ambiguous,
    struct error *e)
{
	const struct spanidx *ix = &s->an.ix;
	struct entry_map m = { 0 };
	uint64_t r;
	size_t i;

	for (m.cap = 64; m.cap < 2 * (s->agg.n + 1); m.cap *= 2)
		;
	m.key = calloc(m.cap, sizeof(*m.key));
	m.entry = calloc(m.cap, sizeof(*m.entry));
	m.multi = calloc(m.cap, 1);
	if (m.key == NULL || m.entry == NULL || m.multi == NULL) {
		free(m.key);
		free(m.entry);
		free(m.multi);
		return error_set(e, ERR_NOMEM, "out of memory");
	}
	/* Keys are string offsets + 1, so that 0 stays "empty". */
	for (r = 0; r < ix->rows; r++)
		entry_map_note(&m, ((uint64_t)spanidx_u32(ix, SPANIDX_FN, r) <<
		    32 | spanidx_u32(ix, SPANIDX_MODULE, r)) + 1,
		    spanidx_u32(ix, SPANIDX_RAW, r));
	for (i = 0; i < s->agg.n; i++) {
		const struct agg_row *row = &s->agg.row[i];
		int64_t fn = agg_find_string(&s->an, row->name);
		int64_t mod = agg_find_string(&s->an, row->module);

		if (row->is_inline || fn < 0 || mod < 0)
			continue;
		ambiguous[i] = (unsigned char)entry_map_is_multi(&m,
		    ((uint64_t)fn << 32 | (uint64_t)mod) + 1);
	}
	free(m.key);
	free(m.entry);
	free(m.multi);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pairing */

struct keyed {
	const char *name, *module;	/* module: file name only */
	const char *key_module;		/* what pairs: "" for the executable */
	size_t index;
	int side;			/* 0 A, 1 B */
	int ambiguous;
};

static int
keyed_cmp(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c == 0)
		c = strcmp(a->key_module, b->key_module);
	if (c == 0)
		c = a->side - b->side;
	return c;
}

static struct diff_row *
new_row(struct comparison *c, const struct keyed *k)
{
	struct diff_row *r = &c->row[c->n++];

	memset(r, 0, sizeof(*r));
	r->name = k->name;
	r->module = k->module;
	return r;
}

static void
fill_side(struct comparison *c, struct diff_row *r, const struct keyed *k)
{
	const struct side *s = k->side == 0 ? &c->a : &c->b;

	row_values(&s->agg.row[k->index], k->side == 0 ? r->a : r->b);
	if (k->side == 0)
		r->has_a = 1;
	else
		r->has_b = 1;
}

/* Number of entries from i on with the same key (both sides). */
static size_t
run_length(const struct keyed *k, size_t n, size_t i)
{
	size_t j = i + 1;

	while (j < n && strcmp(k[j].name, k[i].name) == 0 &&
	    strcmp(k[j].key_module, k[i].key_module) == 0)
		j++;
	return j - i;
}

static void
pair_run(struct comparison *c, const struct keyed *k, size_t len)
{
	size_t na = 0, i, amb = 0;
	struct diff_row *r;

	for (i = 0; i < len; i++) {
		na += k[i].side == 0;
		amb |= (size_t)k[i].ambiguous;
	}
	if (len == 2 && na == 1 && !amb) {
		r = new_row(c, &k[0]);
		fill_side(c, r, &k[0]);
		fill_side(c, r, &k[1]);
		return;
	}
	if (len == 1 && !amb) {
		r = new_row(c, &k[0]);
		fill_side(c, r, &k[0]);
		r->cls = k[0].side == 0 ? C_VANISHED : C_NEW;
		return;
	}
	for (i = 0; i < len; i++) {
		r = new_row(c, &k[i]);
		fill_side(c, r, &k[i]);
		r->cls = C_AMBIGUOUS;
	}
}

/* The file name of the program the snapshot ran, or "" if unknown. */
static const char *
target_name(json_t *snap)
{
	json_t *argv0 = json_array_get(json_object_get(json_object_get(snap,
	    "target"), "argv"), 0);

	return json_is_string(argv0) ? base_name(json_string_value(argv0)) :
	    "";
}

/* Whether module (a path) is name: the same path or file name. */
static int
module_is(const char *module, const char *name)
{
	return strcmp(module, name) == 0 ||
	    strcmp(base_name(module), name) == 0;
}

/* Whether the options compare rows of module. */
static int
module_wanted(const struct compare_options *o, const char *module)
{
	size_t i;

	for (i = 0; i < o->n_excluded; i++)
		if (module_is(module, o->excluded[i]))
			return 0;
	if (o->n_modules == 0)
		return 1;
	for (i = 0; i < o->n_modules; i++)
		if (module_is(module, o->modules[i]))
			return 1;
	return 0;
}

static int
add_keys(struct comparison *c, struct keyed *k, size_t *n,
    const struct side *s, int side, const struct compare_options *o,
    struct error *e)
{
	unsigned char *amb = calloc(s->agg.n + 1, 1);
	const char *exe = target_name(s->snap);
	size_t i;
	int rc;

	if (amb == NULL)
		return error_set(e, ERR_NOMEM, "out of memory");
	if ((rc = side_find_ambiguous(s, amb, e)) < 0) {
		free(amb);
		return rc;
	}
	for (i = 0; i < s->agg.n; i++) {
		/* Inline rows name no module: they follow the function's. */
		if (s->agg.row[i].module[0] != '\0' &&
		    !module_wanted(o, s->agg.row[i].module)) {
			c->n_filtered[side]++;
			continue;
		}
		k[*n].name = s->agg.row[i].name;
		k[*n].module = base_name(s->agg.row[i].module);
		/* The program pairs with the program, whatever it is called. */
		k[*n].key_module = exe[0] != '\0' &&
		    strcmp(k[*n].module, exe) == 0 ? "" : k[*n].module;
		k[*n].index = i;
		k[*n].side = side;
		k[*n].ambiguous = amb[i];
		(*n)++;
	}
	free(amb);
	return 0;
}

static void pair_clones(struct comparison *c);

static int
pair_rows(struct comparison *c, const struct compare_options *o,
    struct error *e)
{
	size_t total = c->a.agg.n + c->b.agg.n, n = 0, i, len;
	struct keyed *k = calloc(total + 1, sizeof(*k));
	int rc;

	c->row = calloc(total + 1, sizeof(*c->row));
	if (k == NULL || c->row == NULL) {
		free(k);
		return error_set(e, ERR_NOMEM, "out of memory");
	}
	if ((rc = add_keys(c, k, &n, &c->a, 0, o, e)) < 0 ||
	    (rc = add_keys(c, k, &n, &c->b, 1, o, e)) < 0) {
		free(k);
		return rc;
	}
	qsort(k, n, sizeof(*k), keyed_cmp);
	for (i = 0; i < n; i += len) {
		len = run_length(k, n, i);
		pair_run(c, k + i, len);
	}
	free(k);
	pair_clones(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Clones: the same function under the name the compiler gave a version */

/* Length of name once its last clone suffix is cut, or 0 if none. */
static size_t
cut_suffix(const char *name, size_t len)
{
	static const char *const kinds[] = { ".constprop.", ".isra.",
	    ".part.", ".llvm.", ".lto_priv." };
	size_t d = len, k;

	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	if (d == len)
		return 0;		/* every suffix ends in its number */
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t n = strlen(kinds[k]);

		if (d > n && strncmp(name + d - n, kinds[k], n) == 0)
			return d - n;
	}
	return 0;
}

/* Where a trailing ".cold" or ".cold.N" (gcc's cold part) begins, or len. */
static size_t
cold_start(const char *name, size_t len)
{
	size_t d = len;

	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	if (d < len && d > 1 && name[d - 1] == '.')
		d--;			/* ".cold.N" */
	else
		d = len;
	if (d > 5 && strncmp(name + d - 5, ".cold", 5) == 0)
		return d - 5;
	return len;
}

size_t
clone_base(const char *name, char *buf, size_t size)
{
	size_t len = strlen(name), cut, cold = cold_start(name, len);
	size_t n = cold;

	while ((cut = cut_suffix(name, n)) > 0)
		n = cut;
	/* A cold part stays one: the cold part of the base's version. */
	if (size > 0)
		snprintf(buf, size, "%.*s%s", (int)n, name, cold < len ?
		    ".cold" : "");
	return n + (cold < len ? 5 : 0);
}

/* The rows with no counterpart whose base name and module equal r's. */
static size_t
clone_candidates(const struct comparison *c, const struct diff_row *r,
    int want_b, size_t *found)
{
	char base[512], other[512];
	size_t i, n = 0;

	clone_base(r->name, base, sizeof(base));
	for (i = 0; i < c->n; i++) {
		const struct diff_row *x = &c->row[i];

		if (x == r || x->has_a == x->has_b || x->has_b != want_b ||
		    strcmp(x->module, r->module) != 0)
			continue;
		clone_base(x->name, other, sizeof(other));
		if (strcmp(base, other) == 0) {
			*found = i;
			n++;
		}
	}
	return n;
}

/*
 * A row only A has and a row only B has that are one function under two
 * clone names (gcc's scale.constprop.0 against scale): one row, B's name
 * kept beside A's.  Only when the pair is the only one either way.
 */
static void
pair_clones(struct comparison *c)
{
	size_t i, j, back, n = 0;

	for (i = 0; i < c->n; i++) {
		struct diff_row *r = &c->row[i];

		if (!r->has_a || r->has_b || r->cls == C_AMBIGUOUS ||
		    clone_candidates(c, r, 1, &j) != 1 ||
		    c->row[j].cls == C_AMBIGUOUS ||
		    clone_candidates(c, &c->row[j], 0, &back) != 1 ||
		    back != i)
			continue;
		memcpy(r->b, c->row[j].b, sizeof(r->b));
		r->has_b = 1;
		r->cls = C_SAME;	/* classify() decides */
		r->name_b = c->row[j].name;
		c->row[j].has_b = 0;	/* merged: dropped below */
	}
	for (i = 0; i < c->n; i++)
		if (c->row[i].has_a || c->row[i].has_b)
			c->row[n++] = c->row[i];
	c->n = n;
}

/* ------------------------------------------------------------------ */
/* Comparability */

static const char *
manifest_str(json_t *doc, const char *path, char *buf, size_t size)
{
	char key[64];
	const char *p = path, *dot;
	json_t *v = doc;

	while (v != NULL && (dot = strchr(p, '.')) != NULL) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - p), p);
		v = json_object_get(v, key);
		p = dot + 1;
	}
	v = v != NULL ? json_object_get(v, p) : NULL;
	if (json_is_string(v))
		snprintf(buf, size, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	else
		snprintf(buf, size, "unknown");
	return buf;
}

/* The build-id of the image the target ran (argv[0] within cwd). */
static const char *
target_build_id(json_t *snap, char *buf, size_t size)
{
	json_t *argv0 = json_array_get(json_object_get(json_object_get(snap,
	    "target"), "argv"), 0);
	json_t *images = json_object_get(snap, "images"), *img;
	const char *want;
	size_t i;

	snprintf(buf, size, "unknown");
	if (!json_is_string(argv0))
		return buf;
	want = base_name(json_string_value(argv0));
	json_array_foreach(images, i, img) {
		json_t *p = json_object_get(img, "path");
		json_t *id = json_object_get(img, "build_id");

		if (json_is_string(p) && json_is_string(id) &&
		    strcmp(base_name(json_string_value(p)), want) == 0) {
			snprintf(buf, size, "%s", json_string_value(id));
			break;
		}
	}
	return buf;
}

static struct check *
add_check(struct comparison *c, const char *what)
{
	struct check *k = &c->check[c->n_checks++];

	k->what = what;
	return k;
}

static void
check_snapshot_field(struct comparison *c, const char *what,
    const char *path)
{
	struct check *k = add_check(c, what);

	manifest_str(c->a.snap, path, k->a, sizeof(k->a));
	manifest_str(c->b.snap, path, k->b, sizeof(k->b));
	k->same = strcmp(k->a, k->b) == 0;
}

static void
check_analysis_u64(struct comparison *c, const char *what, const char *path)
{
	struct check *k = add_check(c, what);

	snprintf(k->a, sizeof(k->a), "%llu", (unsigned long long)
	    analysis_manifest_u64(&c->a.an, path, 0));
	snprintf(k->b, sizeof(k->b), "%llu", (unsigned long long)
	    analysis_manifest_u64(&c->b.an, path, 0));
	k->same = strcmp(k->a, k->b) == 0;
}

static int
check_same(const struct comparison *c, const char *what)
{
	size_t i;

	for (i = 0; i < c->n_checks; i++)
		if (strcmp(c->check[i].what, what) == 0)
			return c->check[i].same;
	return 0;
}

static uint64_t
incomplete_windows(const struct analysis *a)
{
	return analysis_manifest_u64(a, SPANDIR_M_Q("wrapped_threads"), 0) +
	    analysis_manifest_u64(a, SPANDIR_M_Q("decode_errors"), 0) +
	    analysis_manifest_u64(a, SPANDIR_M_Q("overflows"), 0);
}

static void
judge_comparability(struct comparison *c)
{
	struct check *k = add_check(c, "executable build-id");
	char clock_a[32], clock_b[32];
	int time_classes;

	target_build_id(c->a.snap, k->a, sizeof(k->a));
	target_build_id(c->b.snap, k->b, sizeof(k->b));
	k->same = strcmp(k->a, k->b) == 0;
	check_snapshot_field(c, "recorder", "recorder.backend");
	check_snapshot_field(c, "timing profile", "pt.timing_profile");
	check_snapshot_field(c, "cpu vendor", "host.cpu.vendor");
	check_snapshot_field(c, "cpu model", "host.cpu.model");
	check_snapshot_field(c, "cpu emulated", "host.cpu.emulated");
	k = add_check(c, "decoder");
	snprintf(k->a, sizeof(k->a), "%s %s", analysis_manifest_str(&c->a.an,
	    SPANDIR_M_DECODER, "unknown"), analysis_manifest_str(&c->a.an,
	    SPANDIR_M_TOOL, ""));
	snprintf(k->b, sizeof(k->b), "%s %s", analysis_manifest_str(&c->b.an,
	    SPANDIR_M_DECODER, "unknown"), analysis_manifest_str(&c->b.an,
	    SPANDIR_M_TOOL, ""));
	k->same = strcmp(k->a, k->b) == 0;
	check_analysis_u64(c, "threads", "quality.threads");
	check_analysis_u64(c, "wrapped rings", "quality.wrapped_threads");
	check_analysis_u64(c, "decode errors", "quality.decode_errors");
	c->times_trusted = check_same(c, "recorder") &&
	    check_same(c, "timing profile") && check_same(c, "cpu vendor") &&
	    check_same(c, "cpu model") && check_same(c, "cpu emulated") &&
	    c->a.snap != NULL && c->b.snap != NULL;
	c->times_virtual = c->times_trusted &&
	    strcmp(manifest_str(c->a.snap, "pt.clock", clock_a,
	    sizeof(clock_a)), "virtual") == 0 &&
	    strcmp(manifest_str(c->b.snap, "pt.clock", clock_b,
	    sizeof(clock_b)), "virtual") == 0;
	c->per_call = incomplete_windows(&c->a.an) > 0 ||
	    incomplete_windows(&c->b.an) > 0;
	/*
	 * An emulated clock is host time under emulation, one ns per
	 * instruction between its reads of the host clock: not the
	 * program's native time; the instructions themselves are the truth.
	 */
	time_classes = c->times_trusted && !c->times_virtual;
	if (c->per_call)
		c->class_metric = time_classes ? M_MEAN_SELF_NS :
		    M_MEAN_SELF_INSNS;
	else
		c->class_metric = time_classes ? M_SELF_NS : M_SELF_INSNS;
}

/* Every instruction of a side: its rows' own instructions, summed. */
static double
side_insns(const struct side *s)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < s->agg.n; i++)
		sum += (double)s->agg.row[i].self_insns;
	return sum;
}

/*
 * The noise band.  One thread on each side runs the same instructions
 * for the same input, so every change is real: no band unless asked.
 * With more, how often a thread waits on a lock or spins depends on how
 * the threads were scheduled (libc's futex and spin paths), and so the
 * default band is a share of the capture's instructions.
 */
static void
judge_noise(struct comparison *c, const struct compare_options *o)
{
	double a = side_insns(&c->a), b = side_insns(&c->b);

	c->insns_total = a > b ? a : b;
	c->deterministic = analysis_manifest_u64(&c->a.an,
	    "quality.threads", 0) <= 1 && analysis_manifest_u64(&c->b.an,
	    "quality.threads", 0) <= 1;
	if (o->noise.given)
		c->noise_insns = o->noise.pct ? c->insns_total *
		    o->noise.value / 100.0 : o->noise.value;
	else
		c->noise_insns = c->deterministic ? 0 : c->insns_total *
		    NOISE_DEFAULT_PCT / 100.0;
	c->noise_insns = floor(c->noise_insns);
}

/* ------------------------------------------------------------------ */
/* Classes and bounds */

/* A bound on a total is checked on its per-call mean when windows differ. */
static enum metric
normalised(const struct comparison *c, enum metric m)
{
	if (!c->per_call)
		return m;
	switch (m) {
	case M_TOTAL_NS: return M_MEAN_NS;
	case M_SELF_NS: return M_MEAN_SELF_NS;
	case M_INSNS: return M_MEAN_INSNS;
	case M_SELF_INSNS: return M_MEAN_SELF_INSNS;
	default: return m;
	}
}

static double
percent_change(double a, double b)
{
	if (a == 0)
		return b == 0 ? 0 : INFINITY;
	return (b - a) / a * 100.0;
}

/* The instruction total a metric's change is measured in, or -1. */
static int
insns_total_of(enum metric m)
{
	switch (m) {
	case M_INSNS: case M_MEAN_INSNS: return M_INSNS;
	case M_SELF_INSNS: case M_MEAN_SELF_INSNS: return M_SELF_INSNS;
	default: return -1;
	}
}

/* Whether r's change of metric m is within the instructions' noise band. */
static int
within_noise(const struct comparison *c, const struct diff_row *r,
    enum metric m)
{
	int t = insns_total_of(m);
	double a, b;

	if (t < 0 || c->noise_insns <= 0)
		return 0;
	/* A row one side lacks changed by all it counts. */
	a = r->has_a ? r->a[t] : 0;
	b = r->has_b ? r->b[t] : 0;
	return fabs(b - a) <= c->noise_insns;
}

static void
classify(const struct comparison *c, struct diff_row *r)
{
	enum metric m = c->class_metric;
	double noise = 0;

	if (r->cls == C_AMBIGUOUS)
		return;
	if (!r->has_a || !r->has_b) {
		/* New or vanished stays said; within the band it is no
		 * change that counts. */
		r->primary_delta = r->has_a ? -r->a[m] : r->b[m];
		r->noise = within_noise(c, r, m);
		return;
	}
	r->primary_delta = r->b[m] - r->a[m];
	if (metric_is_time(m))
		noise = fabs(r->a[m]) * TIME_NOISE_PCT / 100.0;
	if (fabs(r->primary_delta) <= noise)
		r->cls = C_SAME;
	else if (within_noise(c, r, m)) {
		r->cls = C_SAME;
		r->noise = 1;
	} else
		r->cls = r->primary_delta > 0 ? C_SLOWER : C_FASTER;
}

static void
check_bounds(const struct comparison *c, struct diff_row *r,
    const struct compare_options *o)
{
	size_t i;

	if (!r->has_a || !r->has_b || r->cls == C_AMBIGUOUS)
		return;
	for (i = 0; i < o->n_bounds && !r->crossed; i++) {
		enum metric m = normalised(c, o->bounds[i].metric);
		double pct = percent_change(r->a[m], r->b[m]);

		if (pct > o->bounds[i].pct && !within_noise(c, r, m)) {
			r->crossed = 1;
			r->crossed_metric = m;
			r->crossed_pct = pct;
		}
	}
}

static int
below_min(const struct diff_row *r, uint64_t min_ns)
{
	double a = r->has_a ? r->a[M_TOTAL_NS] : 0;
	double b = r->has_b ? r->b[M_TOTAL_NS] : 0;

	return min_ns > 0 && a < (double)min_ns && b < (double)min_ns;
}

static int
row_order(const void *pa, const void *pb)
{
	const struct diff_row *a = pa, *b = pb;
	double da = fabs(a->primary_delta), db = fabs(b->primary_delta);
	int c;

	if (a->crossed != b->crossed)
		return b->crossed - a->crossed;
	if (da != db)
		return da < db ? 1 : -1;
	if ((c = strcmp(a->name, b->name)) != 0)
		return c;
	return strcmp(a->module, b->module);
}

static void
finish_rows(struct comparison *c, const struct compare_options *o)
{
	size_t i, kept = 0;

	for (i = 0; i < c->n; i++) {
		struct diff_row *r = &c->row[i];

		if (below_min(r, o->min_ns)) {
			c->n_ignored++;
			continue;
		}
		classify(c, r);
		check_bounds(c, r, o);
		c->n_changed += r->cls != C_SAME && r->cls != C_AMBIGUOUS &&
		    !r->noise;
		c->n_noise += (size_t)r->noise;
		c->n_crossed += (size_t)r->crossed;
		c->row[kept++] = *r;
	}
	c->n = kept;
	qsort(c->row, c->n, sizeof(*c->row), row_order);
}

int
comparison_run(struct comparison *c, const char *path_a, const char *path_b,
    const struct compare_options *o, struct error *e)
{
	struct error warn_a, warn_b;
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = side_open(&c->a, path_a, o->group, &warn_a, e)) < 0 ||
	    (rc = side_open(&c->b, path_b, o->group, &warn_b, e)) < 0)
		return rc;
	/* Told, not dropped in silence; once when both sides share it. */
	if (warn_a.code != 0)
		report_warning("ptdiff", NULL, "%s: %s", warn_a.msg,
		    CONTEXT_LEFT_OUT);
	if (warn_b.code != 0 && (warn_a.code == 0 ||
	    strcmp(warn_a.msg, warn_b.msg) != 0))
		report_warning("ptdiff", NULL, "%s: %s", warn_b.msg,
		    CONTEXT_LEFT_OUT);
	if ((rc = pair_rows(c, o, e)) < 0)
		return rc;
	judge_comparability(c);
	judge_noise(c, o);
	finish_rows(c, o);
	return 0;
}

void
comparison_free(struct comparison *c)
{
	side_close(&c->a);
	side_close(&c->b);
	free(c->row);
	c->row = NULL;
	c->n = 0;
}
