/*
 * aggkeep: see aggkeep.h.
 */
#include "span/aggkeep.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/fdio.h"
#include "base/le.h"
#include "base/xxh64.h"
#include "span/aggregate.h"
#include "span/analysis.h"
#include "span/spandir.h"

/* ----------------------------------------------------------------- */
/* Writing */

/* The strings of the groups, each once. */
struct strings {
	char *buf;
	size_t len, cap;
	const char **key;		/* open addressing on the text */
	uint32_t *off;
	size_t slots;
};

static uint64_t
text_hash(const char *s)
{
	return xxh64(s, strlen(s), 0);
}

/* The offset of s in the table, added when new; -1 out of memory. */
static int64_t
strings_add(struct strings *t, const char *s)
{
	size_t n = strlen(s) + 1, j;

	if (s[0] == '\0')
		return 0;
	for (j = text_hash(s) & (t->slots - 1); t->key[j] != NULL;
	    j = (j + 1) & (t->slots - 1))
		if (strcmp(t->key[j], s) == 0)
			return t->off[j];
	if (t->len + n > t->cap) {
		size_t cap = t->cap * 2 > t->len + n ? t->cap * 2 :
		    t->len + n + 4096;
		char *b;

		/* Offsets are u32: a table past them is refused. */
		if (cap > UINT32_MAX || (b = realloc(t->buf, cap)) == NULL)
			return -1;
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->key[j] = s;
	t->off[j] = (uint32_t)t->len;
	t->len += n;
	return t->off[j];
}

static void
put_figs(uint8_t *p, const struct agg_row *r)
{
	const uint64_t v[AGGKEEP_FIGS] = { r->calls, r->spans, r->outer,
	    r->total_ns, r->insns, r->self_ns, r->self_insns, r->sum_ns,
	    r->max_ns };

	for (int i = 0; i < AGGKEEP_FIGS; i++)
		le_put_u64(p + 8 * i, v[i]);
}

static void
put_entry(uint8_t *q, const struct agg_split_entry *en)
{
	le_put_u32(q, en->group);
	le_put_u32(q + 4, en->tid);
	put_figs(q + 8, &en->fig[0]);
	put_figs(q + 8 + 8 * AGGKEEP_FIGS, &en->fig[1]);
}

static int
by_thread_group(const void *a, const void *b)
{
	const struct agg_split_entry *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->group < y->group ? -1 : x->group > y->group;
}

static int
by_tid(const void *a, const void *b)
{
	const struct agg_split_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The file's bytes for fn and mod (both of one walk) in *out. */
static int
encode(const struct agg_split *fn, struct agg_split *mod, uint64_t rows,
    uint64_t index_id, uint8_t **out, size_t *size)
{
	size_t ng = fn->groups.n + mod->groups.n, ne = fn->n_ent + mod->n_ent;
	struct strings t = { 0 };
	uint8_t *b = NULL, *p;
	size_t at, e_at, i;
	int rc = -ERR_NOMEM;

	t.slots = 64;
	while (t.slots < 4 * ng)
		t.slots *= 2;
	t.key = calloc(t.slots, sizeof(*t.key));
	t.off = calloc(t.slots, sizeof(*t.off));
	if (t.key == NULL || t.off == NULL ||
	    (t.buf = malloc(t.cap = 4096)) == NULL)
		goto out;
	t.buf[t.len++] = '\0';
	/* Module entries' groups follow the function groups'. */
	for (i = 0; i < mod->n_ent; i++)
		mod->ent[i].group += (uint32_t)fn->groups.n;
	qsort(fn->ent, fn->n_ent, sizeof(*fn->ent), by_thread_group);
	qsort(mod->ent, mod->n_ent, sizeof(*mod->ent), by_thread_group);
	qsort(fn->thr, fn->n_thr, sizeof(*fn->thr), by_tid);
	at = AGGKEEP_HEADER_SIZE + ng * AGGKEEP_GROUP_SIZE +
	    fn->n_thr * AGGKEEP_THREAD_SIZE;
	if ((b = calloc(1, at + ne * AGGKEEP_ENTRY_SIZE)) == NULL)
		goto out;
	p = b + AGGKEEP_HEADER_SIZE;
	for (i = 0; i < ng; i++, p += AGGKEEP_GROUP_SIZE) {
		const struct agg_row *r = i < fn->groups.n ? &fn->groups.row[i] :
		    &mod->groups.row[i - fn->groups.n];
		int64_t name = strings_add(&t, r->name);
		int64_t module = strings_add(&t, r->module);

		if (name < 0 || module < 0)
			goto out;
		le_put_u32(p, (uint32_t)name);
		le_put_u32(p + 4, (uint32_t)module);
	}
	/* Per thread: its function entries, then its module entries. */
	e_at = 0;
	for (size_t th = 0, fi = 0, mi = 0; th < fn->n_thr; th++) {
		uint32_t tid = fn->thr[th].tid;
		size_t first = e_at;

		for (; fi < fn->n_ent && fn->ent[fi].tid == tid; fi++)
			put_entry(b + at + e_at++ * AGGKEEP_ENTRY_SIZE,
			    &fn->ent[fi]);
		for (; mi < mod->n_ent && mod->ent[mi].tid == tid; mi++)
			put_entry(b + at + e_at++ * AGGKEEP_ENTRY_SIZE,
			    &mod->ent[mi]);
		le_put_u32(p, tid);
		le_put_u32(p + 4, fn->thr[th].pid);
		le_put_u32(p + 8, (uint32_t)first);
		le_put_u32(p + 12, (uint32_t)(e_at - first));
		p += AGGKEEP_THREAD_SIZE;
	}
	if (e_at != ne) {
		rc = -ERR_INTERNAL;	/* an entry of a thread without one */
		goto out;
	}
	{
		size_t total = at + ne * AGGKEEP_ENTRY_SIZE + t.len;
		uint8_t *nb = realloc(b, total);
		if (nb == NULL)
			goto out;
		b = nb;
		memcpy(b + at + ne * AGGKEEP_ENTRY_SIZE, t.buf, t.len);
		memcpy(b, AGGKEEP_MAGIC, 8);
		le_put_u32(b + 8, AGGKEEP_VERSION);
		le_put_u32(b + 12, AGGKEEP_HEADER_SIZE);
		le_put_u64(b + 16, rows);
		le_put_u64(b + 24, fn->late);
		le_put_u32(b + 32, (uint32_t)fn->groups.n);
		le_put_u32(b + 36, (uint32_t)mod->groups.n);
		le_put_u32(b + 40, (uint32_t)fn->n_thr);
		le_put_u32(b + 44, (uint32_t)t.len);
		le_put_u64(b + 48, ne);
		le_put_u64(b + AGGKEEP_INDEX_AT, index_id);
		le_put_u64(b + AGGKEEP_CHECKSUM_AT, aggkeep_checksum(b, total));
		*out = b;
		*size = total;
		b = NULL;
		rc = 0;
	}
out:
	free(b);
	free(t.buf);
	free(t.key);
	free(t.off);
	return rc;
}

int
aggkeep_write(const char *dir, const struct analysis *a, struct error *e)
{
	const char *name = spandir_file_name(SPANDIR_AGGREGATES);
	struct agg_split fn, mod;
	char path[PATH_MAX + 32];
	uint8_t *buf = NULL;
	size_t size = 0;
	int rc, fd;

	if (spandir_path(dir, SPANDIR_AGGREGATES, path, sizeof(path), e) < 0)
		return -e->code;
	if ((rc = agg_split_walk(&fn, &mod, a, e)) < 0)
		return error_prefix(e, "%s", name);
	if (fn.n_thr > UINT32_MAX || fn.n_ent + mod.n_ent > UINT32_MAX ||
	    fn.groups.n + mod.groups.n > UINT32_MAX)
		rc = error_set(e, ERR_RANGE, "%s: too many groups", name);
	else if ((rc = encode(&fn, &mod, a->ix.rows,
	    aggkeep_index_id(a->ix.base), &buf, &size)) < 0)
		rc = error_set(e, -rc, "%s: %s", name, rc == -ERR_NOMEM ?
		    "out of memory" : "entries of no thread");
	agg_split_free(&fn);
	agg_split_free(&mod);
	if (rc < 0)
		return rc;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd < 0 || fdio_write_full(fd, buf, size) < 0) {
		rc = error_set_errno(e, errno, "%s", path);
		if (fd >= 0)
			close(fd);
		free(buf);
		return rc;
	}
	free(buf);
	if (close(fd) < 0)
		return error_set_errno(e, errno, "%s", path);
	return 0;
}

int
aggkeep_write_dir(const char *dir, struct error *e)
{
	char path[PATH_MAX + 32];
	struct analysis *a = calloc(1, sizeof(*a));
	int rc;

	if (a == NULL)
		return error_set(e, ERR_NOMEM, "%s",
		    spandir_file_name(SPANDIR_AGGREGATES));
	if ((rc = spandir_path(dir, SPANDIR_INDEX, path, sizeof(path),
	    e)) == 0 && (rc = spanidx_open(&a->ix, path, e)) == 0) {
		snprintf(a->dir, sizeof(a->dir), "%s", dir);
		rc = aggkeep_write(dir, a, e);
		spanidx_close(&a->ix);
	}
	free(a);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Reading */

uint64_t
aggkeep_index_id(const uint8_t *header)
{
	return xxh64(header, SPANIDX_HEADER_SIZE, 0);
}

int
aggkeep_index_id_at(const char *dir, uint64_t *id, struct error *e)
{
	const char *name = spandir_file_name(SPANDIR_INDEX);
	uint8_t h[SPANIDX_HEADER_SIZE];
	size_t got = 0;
	int fd;

	if ((fd = beneath_open_at(dir, name, BENEATH_FILE, 0,
	    "the analysis directory", e)) < 0)
		return fd;
	while (got < sizeof(h)) {
		ssize_t n = pread(fd, h + got, sizeof(h) - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			close(fd);
			return error_set_errno(e, err, "%s", name);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got < sizeof(h))
		return error_set(e, ERR_FORMAT, "%s: %zu bytes, too short for "
		    "a span index", name, got);
	*id = aggkeep_index_id(h);
	return 0;
}

void
aggkeep_close(struct aggkeep *k)
{
	if (k->base != NULL)
		munmap(k->base, k->size);
	memset(k, 0, sizeof(*k));
}

static uint64_t
fig(const uint8_t *set, int i)
{
	return le_get_u64(set + 8 * i);
}

uint64_t
aggkeep_checksum(const uint8_t *b, size_t size)
{
	struct xxh64 h;

	xxh64_init(&h, 0);
	xxh64_update(&h, b, AGGKEEP_CHECKSUM_AT);
	xxh64_update(&h, b + AGGKEEP_HEADER_SIZE, size - AGGKEEP_HEADER_SIZE);
	return xxh64_digest(&h);
}

/* What is wrong with the mapped file (of at least a header, its magic
 * and version checked by aggkeep_open), or NULL. */
static const char *
check(struct aggkeep *k, uint64_t rows, uint64_t index_id, char *buf,
    size_t size)
{
	const uint8_t *b = k->base;
	uint64_t ng, want, spans[2] = { 0, 0 }, next = 0;

	if (le_get_u32(b + 12) != AGGKEEP_HEADER_SIZE)
		return "its header is not of its version's size";
	k->spans = le_get_u64(b + 16);
	k->late = le_get_u64(b + 24);
	k->n_fn = le_get_u32(b + 32);
	k->n_mod = le_get_u32(b + 36);
	k->n_threads = le_get_u32(b + 40);
	k->strtab_size = le_get_u32(b + 44);
	k->n_ent = le_get_u64(b + 48);
	ng = (uint64_t)k->n_fn + k->n_mod;
	if (k->n_ent > k->size / AGGKEEP_ENTRY_SIZE)
		return "its size does not match its counts";
	want = AGGKEEP_HEADER_SIZE + ng * AGGKEEP_GROUP_SIZE +
	    (uint64_t)k->n_threads * AGGKEEP_THREAD_SIZE +
	    k->n_ent * AGGKEEP_ENTRY_SIZE + k->strtab_size;
	if (want != k->size)
		return "its size does not match its counts";
	if (aggkeep_checksum(b, k->size) != le_get_u64(b + AGGKEEP_CHECKSUM_AT))
		return "checksum mismatch";
	if (k->spans != rows) {
		snprintf(buf, size, "made from %" PRIu64 " spans, index.bin "
		    "holds %" PRIu64, k->spans, rows);
		return buf;
	}
	/* As many spans is not the same spans: another analysis's file
	 * passes every check but this one. */
	if (le_get_u64(b + AGGKEEP_INDEX_AT) != index_id)
		return "made from another index.bin";
	k->groups = b + AGGKEEP_HEADER_SIZE;
	k->threads = k->groups + ng * AGGKEEP_GROUP_SIZE;
	k->ent = k->threads + (uint64_t)k->n_threads * AGGKEEP_THREAD_SIZE;
	k->strtab = (const char *)(k->ent + k->n_ent * AGGKEEP_ENTRY_SIZE);
	if (k->strtab_size == 0 || k->strtab[0] != '\0' ||
	    k->strtab[k->strtab_size - 1] != '\0')
		return "its string table is not NUL-terminated";
	for (uint64_t g = 0; g < ng; g++)
		if (le_get_u32(k->groups + g * AGGKEEP_GROUP_SIZE) >=
		    k->strtab_size || le_get_u32(k->groups + g *
		    AGGKEEP_GROUP_SIZE + 4) >= k->strtab_size)
			return "a group's name is outside the string table";
	for (uint32_t t = 0; t < k->n_threads; t++) {
		const uint8_t *p = k->threads + (uint64_t)t * AGGKEEP_THREAD_SIZE;
		uint32_t tid = le_get_u32(p), first = le_get_u32(p + 8);
		uint32_t n = le_get_u32(p + 12);
		uint64_t last = 0;

		if (t > 0 && le_get_u32(p - AGGKEEP_THREAD_SIZE) >= tid)
			return "its threads are not in order";
		if (first != next || (uint64_t)first + n > k->n_ent)
			return "a thread's entries are not its own";
		next = (uint64_t)first + n;
		for (uint64_t i = first; i < next; i++) {
			const uint8_t *q = k->ent + i * AGGKEEP_ENTRY_SIZE;
			uint32_t g = le_get_u32(q);

			if (le_get_u32(q + 4) != tid || g >= ng ||
			    (i > first && g <= last))
				return "an entry names another thread or "
				    "group";
			last = g;
			for (int s = 0; s < 2; s++) {
				const uint8_t *set = q + 8 + 8 * AGGKEEP_FIGS * s;

				/* calls, outer within spans; max within sum */
				if (fig(set, 0) > fig(set, 1) ||
				    fig(set, 2) > fig(set, 1) ||
				    fig(set, 8) > fig(set, 7))
					return "an entry's figures cannot be";
				spans[g >= k->n_fn] += fig(set, 1);
			}
		}
	}
	if (next != k->n_ent)
		return "entries of no thread";
	if (spans[0] + k->late != rows || spans[1] + k->late != rows)
		return "its entries do not count every span";
	return NULL;
}

int
aggkeep_open(struct aggkeep *k, const char *dir, uint64_t rows,
    uint64_t index_id, struct error *e)
{
	const char *name = spandir_file_name(SPANDIR_AGGREGATES), *why;
	char buf[128];
	struct stat sb;
	void *m;
	int fd;

	memset(k, 0, sizeof(*k));
	if ((fd = beneath_open_at(dir, name, BENEATH_FILE, 0,
	    "the analysis directory", e)) < 0)
		return fd;
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return error_set_errno(e, errno, "%s", name);
	}
	if (sb.st_size < AGGKEEP_HEADER_SIZE) {
		close(fd);
		return error_set(e, ERR_FORMAT, "%s: truncated (%jd bytes)",
		    name, (intmax_t)sb.st_size);
	}
	m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return error_set_errno(e, errno, "%s", name);
	k->base = m;
	k->size = (size_t)sb.st_size;
	why = memcmp(k->base, AGGKEEP_MAGIC, 8) != 0 ? "not an aggregates "
	    "file (bad magic)" : NULL;
	if (why == NULL && le_get_u32(k->base + 8) != AGGKEEP_VERSION) {
		uint32_t v = le_get_u32(k->base + 8);

		aggkeep_close(k);
		return error_set(e, ERR_UNSUPPORTED, "%s: version %" PRIu32
		    ", this ptkit reads %d", name, v, AGGKEEP_VERSION);
	}
	if (why == NULL)
		why = check(k, rows, index_id, buf, sizeof(buf));
	if (why != NULL) {
		aggkeep_close(k);
		return error_set(e, ERR_FORMAT, "%s: %s", name, why);
	}
	return 0;
}

int
aggkeep_pid_of(const struct aggkeep *k, uint32_t tid, uint32_t *pid)
{
	uint32_t lo = 0, hi = k->n_threads;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const uint8_t *p = k->threads + (uint64_t)mid *
		    AGGKEEP_THREAD_SIZE;

		if (le_get_u32(p) == tid) {
			if (pid != NULL)
				*pid = le_get_u32(p + 4);
			return 0;
		}
		if (le_get_u32(p) < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

uint32_t
aggkeep_pid(const struct aggkeep *k, uint32_t tid)
{
	uint32_t pid = 0;

	return aggkeep_pid_of(k, tid, &pid) == 0 ? pid : 0;
}

static void
add_figs(struct agg_row *r, const uint8_t *set)
{
	r->calls += fig(set, 0);
	r->spans += fig(set, 1);
	r->outer += fig(set, 2);
	r->total_ns += fig(set, 3);
	r->insns += fig(set, 4);
	r->self_ns += fig(set, 5);
	r->self_insns += fig(set, 6);
	r->sum_ns += fig(set, 7);
	if (fig(set, 8) > r->max_ns)
		r->max_ns = fig(set, 8);
}

int
aggkeep_answer(const struct aggkeep *k, struct agg *out, int group,
    const struct agg_filter *f, struct error *e)
{
	uint32_t g0, ng;
	int all = f == NULL || f->incomplete;

	memset(out, 0, sizeof(*out));
	if (group != AGG_FUNCTION && group != AGG_MODULE)
		return 0;
	/* f NULL counts every span; a query without --from and --to those
	 * before AGG_WINDOW_END, which are all but the late ones. */
	if (f == NULL ? k->late != 0 : f->from_ns != 0 ||
	    f->to_ns != AGG_WINDOW_END || f->inside != NULL)
		return 0;
	g0 = group == AGG_FUNCTION ? 0 : k->n_fn;
	ng = group == AGG_FUNCTION ? k->n_fn : k->n_mod;
	if ((out->row = calloc(ng ? ng : 1, sizeof(*out->row))) == NULL)
		return error_set(e, ERR_NOMEM, "hotpaths");
	out->n = out->cap = ng;
	for (uint32_t i = 0; i < ng; i++) {
		const uint8_t *p = k->groups + (uint64_t)(g0 + i) *
		    AGGKEEP_GROUP_SIZE;

		out->row[i].name = k->strtab + le_get_u32(p);
		out->row[i].module = k->strtab + le_get_u32(p + 4);
	}
	for (uint32_t t = 0; t < k->n_threads; t++) {
		const uint8_t *p = k->threads + (uint64_t)t * AGGKEEP_THREAD_SIZE;
		uint64_t first = le_get_u32(p + 8), n = le_get_u32(p + 12);

		if (f != NULL && !agg_filter_tid(f, le_get_u32(p)))
			continue;
		for (uint64_t i = first; i < first + n; i++) {
			const uint8_t *q = k->ent + i * AGGKEEP_ENTRY_SIZE;
			const uint8_t *inc = q + 8 + 8 * AGGKEEP_FIGS;
			uint32_t g = le_get_u32(q);
			struct agg_row *r;

			if (g < g0 || g - g0 >= ng)
				continue;
			r = &out->row[g - g0];
			add_figs(r, q + 8);
			if (all) {
				add_figs(r, inc);
				continue;
			}
			r->incomplete += fig(inc, 1);
			out->incomplete_spans += fig(inc, 1);
			out->incomplete_self_ns += fig(inc, 5);
		}
	}
	return 1;
}
