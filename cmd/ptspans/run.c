/*
 * ptspans: one run.  The block stream is read record by record and fed to
 * the call-stack engine; spans, gaps and events go straight to their
 * files (or stdout), so memory stays bounded by the stacks, the symbol
 * tables and the per-function totals.  With -o the analysis directory is
 * written into a temporary directory beside DIR and renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <nettle/sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/scratch.h"
#include "base/cleanup.h"
#include "span/codemap.h"
#include "fmt/manifest.h"
#include "fmt/snapshot.h"
#include "base/mkpath.h"
#include "base/pipebuf.h"
#include "tool/progress.h"
#include "tool/report.h"
#include "fmt/spanidx.h"
#include "span/aggkeep.h"
#include "fmt/store.h"
#include "fmt/zstdfile.h"
#include "spans.h"

static const char *const tool = "ptspans";

/* The JSON Lines files, by their span/spandir numbers. */
enum {
	F_SPANS = SPANDIR_SPANS, F_INLINE = SPANDIR_INLINE,
	F_GAPS = SPANDIR_GAPS, F_THREADS = SPANDIR_THREADS,
	F_EVENTS = SPANDIR_EVENTS, F_NR = SPANDIR_JSONL_NR
};



/*
 * --format summary's per-function totals, gathered by the addresses of
 * a span's function strings (those live as long as the run) rather than
 * by the "fn\tmodule" key each span would render: the keys are made
 * once per function at the end (fn_totals_of_acc), where functions whose
 * keys are equal are merged.  unnamed_off tells unnamed functions apart
 * as their rendered names do: by offset in their module, or by address.
 */
struct fn_acc {
	const char *name, *module;	/* both NULL: a free slot */
	uint64_t unnamed_off;
	struct cs_fn fn;		/* one span's, to render the key */
	uint64_t entry;
	uint64_t calls, spans, self_ns, self_insns, insns;
	int used;
};

struct fn_accs {
	struct fn_acc *slot;
	size_t n, cap;			/* cap: a power of two */
};

struct run {
	const struct spans_options *o;
	struct blks_reader *rd;
	const struct blks_header *hdr;
	struct codemap *cm;
	struct callstack *cs;
	FILE *f[F_NR];
	struct jsonw w[F_NR];
	struct span_writer *sw;		/* spans, to f[F_SPANS] */
	struct spans_ixt *ixt;		/* -o: index.bin, on its thread */
	struct fn_accs acc;		/* --format summary */
	struct fn_totals totals;	/* made from acc at the end */
	struct inl_tree tree;
	uint64_t next_inline_id;
	struct blks_thread thread;
	char thread_name[BLKS_TEXT_MAX + 1];
	struct blks_end end;
	struct spandir_coverage *cov;
	size_t n_cov, cap_cov;
	struct spandir_quality q;
	struct spans_par *par;		/* -j above 1 */
	struct progress prog;		/* stderr's */
	uint64_t in_bytes;		/* the stream's size, 0 for a pipe */
	char tmp[PATH_MAX];
	int cleanup_slot;
	int owner_fd;			/* r->tmp's owner lock, or -1 */
	struct error err;
};

/* ----------------------------------------------------------------- */
/* Per-function totals */

static uint64_t
acc_off(const struct cs_span *s)
{
	if (s->fn.name != NULL)
		return 0;
	return s->fn.module != NULL ? s->entry - s->fn.module_base : s->entry;
}

static size_t
acc_hash(const char *name, const char *module, uint64_t off)
{
	uint64_t h = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)(uintptr_t)module + off * 0xff51afd7ed558ccdull;
	return (size_t)((h * 0xc4ceb9fe1a85ec53ull) >> 20);
}

static int
acc_grow(struct fn_accs *a)
{
	size_t cap = a->cap ? a->cap * 2 : 1024;
	struct fn_acc *ns = calloc(cap, sizeof(*ns));

	if (ns == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		const struct fn_acc *o = &a->slot[i];
		size_t j;

		if (!o->used)
			continue;
		for (j = acc_hash(o->name, o->module, o->unnamed_off) &
		    (cap - 1); ns[j].used; j = (j + 1) & (cap - 1))
			;
		ns[j] = *o;
	}
	free(a->slot);
	a->slot = ns;
	a->cap = cap;
	return 0;
}

static int
acc_add(struct fn_accs *a, const struct cs_span *s)
{
	uint64_t off = acc_off(s);
	struct fn_acc *f;
	size_t j;

	if ((a->n + 1) * 2 > a->cap && acc_grow(a) < 0)
		return -ERR_NOMEM;
	for (j = acc_hash(s->fn.name, s->fn.module, off) & (a->cap - 1);
	    a->slot[j].used; j = (j + 1) & (a->cap - 1)) {
		f = &a->slot[j];
		if (f->name == s->fn.name && f->module == s->fn.module &&
		    f->unnamed_off == off)
			goto add;
	}
	f = &a->slot[j];
	f->used = 1;
	f->name = s->fn.name;
	f->module = s->fn.module;
	f->unnamed_off = off;
	f->fn = s->fn;
	f->entry = s->entry;
	a->n++;
add:
	f->spans++;
	f->calls += s->start == CS_START_SEEN;
	f->self_ns += s->self_ns;
	f->self_insns += s->self_insns;
	f->insns += s->insns;
	return 0;
}

/* The "fn\tmodule" key of a's spans: display name, module base name. */
static int
acc_key(const struct fn_acc *a, char **out)
{
	char buf[512], key[1024];
	const char *name = spans_fn_name(&a->fn, a->entry, buf, sizeof(buf));

	snprintf(key, sizeof(key), "%s\t%s", name,
	    a->module ? spans_base_name(a->module) : "");
	return (*out = strdup(key)) == NULL ? -ERR_NOMEM : 0;
}

static int
by_key(const void *a, const void *b)
{
	return strcmp(((const struct fn_total *)a)->key,
	    ((const struct fn_total *)b)->key);
}

/* r->totals from r->acc: one fn_total per key, the rows that share it summed. */
static int
fn_totals_of_acc(struct run *r)
{
	struct fn_total *t;
	size_t n = 0, k = 0;

	if (r->acc.n == 0)
		return 0;
	if ((t = calloc(r->acc.n, sizeof(*t))) == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < r->acc.cap; i++) {
		const struct fn_acc *a = &r->acc.slot[i];

		if (!a->used)
			continue;
		if (acc_key(a, &t[n].key) < 0)
			goto nomem;
		t[n].calls = a->calls;
		t[n].spans = a->spans;
		t[n].self_ns = a->self_ns;
		t[n].self_insns = a->self_insns;
		t[n].insns = a->insns;
		n++;
	}
	qsort(t, n, sizeof(*t), by_key);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(t[i].key, t[k].key) != 0) {
			t[++k] = t[i];
			continue;
		}
		t[k].calls += t[i].calls;
		t[k].spans += t[i].spans;
		t[k].self_ns += t[i].self_ns;
		t[k].self_insns += t[i].self_insns;
		t[k].insns += t[i].insns;
		free(t[i].key);
	}
	for (size_t i = k + 1; i < n; i++)
		t[i].key = NULL;
	r->totals.slot = t;
	r->totals.n = k + 1;
	r->totals.cap = n;
	return 0;
nomem:
	for (size_t i = 0; i < n; i++)
		free(t[i].key);
	free(t);
	return -ERR_NOMEM;
}

/* ----------------------------------------------------------------- */
/* Sinks */

static int
sink_span(void *ctx, const struct cs_span *s)
{
	struct run *r = ctx;
	struct spanidx_row row;
	char buf[512];
	const char *name;
	int rc;

	/* A failed write is reported once, at the end, as it always was. */
	if (r->sw != NULL && spans_write_span(r->sw, s) == -ERR_NOMEM)
		return error_set(&r->err, ERR_NOMEM, "span lines");
	if (r->f[F_INLINE] != NULL && s->n_inl > 0) {
		if (spans_inline_tree(&r->tree, s) < 0)
			return error_set(&r->err, ERR_NOMEM, "inline tree");
		spans_write_inline(&r->w[F_INLINE], s, &r->tree,
		    &r->next_inline_id);
		r->q.inline_records += r->tree.n;
		for (size_t i = 0; i < r->tree.n; i++)
			r->q.inline_insns += r->tree.node[i].own;
	}
	if (r->o->format == 1 && acc_add(&r->acc, s) < 0)
		return error_set(&r->err, ERR_NOMEM, "function totals");
	if (r->ixt != NULL) {
		name = spans_fn_name(&s->fn, s->entry, buf, sizeof(buf));
		memset(&row, 0, sizeof(row));
		row.id = s->id;
		row.parent = s->parent;
		row.tid = s->tid;
		row.pid = s->pid;
		row.depth = s->depth;
		row.fn = name;
		row.raw = s->fn.raw;
		row.module = s->fn.module;
		row.call_site = s->call_site;
		row.entry = s->entry;
		row.start_ns = s->start_ns;
		row.end_ns = s->end_ns;
		row.self_ns = s->self_ns;
		row.insns = s->insns;
		row.self_insns = s->self_insns;
		row.start = s->start;
		row.end = s->end;
		row.flags = (uint8_t)((s->tail_call ? SPANIDX_F_TAIL_CALL : 0) |
		    (s->async ? SPANIDX_F_ASYNC : 0) |
		    (s->fn.name == NULL ? SPANIDX_F_UNNAMED : 0));
		if ((rc = spans_ixt_add(r->ixt, &row, &r->err)) < 0)
			return rc;
	}
	return 0;
}

static int
sink_gap(void *ctx, const struct cs_gap *g)
{
	struct run *r = ctx;

	if (g->cause < CS_GAP_NR) {
		r->q.gaps[g->cause]++;
		r->q.gap_ns[g->cause] += g->end_ns - g->start_ns;
	}
	if (r->f[F_GAPS] != NULL)
		spandir_write_gap(&r->w[F_GAPS], g);
	return 0;
}

static int
sink_event(void *ctx, const struct cs_event *ev)
{
	struct run *r = ctx;

	if (r->f[F_EVENTS] != NULL)
		spandir_write_event(&r->w[F_EVENTS], ev);
	return 0;
}

static void
write_thread(struct run *r, const struct cs_thread_stats *st)
{
	struct spandir_thread t = { st, r->thread_name, r->end.c };

	spandir_write_thread(&r->w[F_THREADS], &t);
}

static int
sink_thread_end(void *ctx, const struct cs_thread_stats *st)
{
	struct run *r = ctx;
	struct spandir_coverage *c;

	r->q.threads++;
	r->q.blocks += st->blocks;
	r->q.insns += st->insns;
	r->q.spans += st->spans;
	r->q.unnamed += st->unnamed;
	r->q.unwound += st->unwound;
	r->q.cut_frames += st->cut_frames;
	r->q.tail_calls += st->tail_calls;
	r->q.signals += st->signals;
	r->q.sigreturns += st->sigreturns;
	r->q.ret_mismatch += st->ret_mismatch;
	r->q.unknown_insn += st->unknown_insn;
	r->q.ring_start_threads += st->ring_start != 0;
	r->q.decode_errors += r->end.c[BLKS_C_DECODE_ERRORS];
	r->q.overflows += r->end.c[BLKS_C_OVERFLOWS];
	if (st->min_depth < r->q.min_depth)
		r->q.min_depth = st->min_depth;
	if (st->max_depth_seen > r->q.max_depth)
		r->q.max_depth = st->max_depth_seen;
	if (r->f[F_THREADS] != NULL)
		write_thread(r, st);
	if (r->n_cov == r->cap_cov) {
		size_t cap = r->cap_cov ? r->cap_cov * 2 : 16;

		if ((c = realloc(r->cov, cap * sizeof(*c))) == NULL)
			return error_set(&r->err, ERR_NOMEM, "threads");
		r->cov = c;
		r->cap_cov = cap;
	}
	c = &r->cov[r->n_cov++];
	c->tid = st->tid;
	c->first_ns = st->first_ns;
	c->last_ns = st->last_ns;
	c->gap_ns = st->gap_ns;
	c->insns = st->insns;
	c->spans = st->spans;
	return 0;
}

/* ----------------------------------------------------------------- */
/* The analysis directory */

static int
open_outputs(struct run *r)
{
	char path[PATH_MAX + 32];
	char *slash, parent[PATH_MAX];
	const char *dir = r->o->out_dir;
	struct spanidx_writer *ix;
	struct error e;
	struct stat sb;

	if (stat(dir, &sb) == 0 && !(S_ISDIR(sb.st_mode) && rmdir(dir) == 0)) {
		report(tool, dir, "remove it or choose another -o", "exists");
		return -1;
	}
	snprintf(parent, sizeof(parent), "%s", dir);
	while ((slash = strrchr(parent, '/')) != NULL && slash[1] == '\0')
		*slash = '\0';
	slash = strrchr(parent, '/');
	if (snprintf(r->tmp, sizeof(r->tmp), "%.*s.ptspans-XXXXXX",
	    (int)strlen(parent), parent) >= (int)sizeof(r->tmp)) {
		report(tool, dir, NULL, "path too long");
		return -1;
	}
	(void)slash;
	if (mkpath_parents(dir, 0755, &e) < 0) {
		report_error(tool, dir, &e, NULL);
		r->tmp[0] = '\0';
		return -1;
	}
	(void)spans_sweep_dead_temps(dir);	/* a killed run's, if any */
	if (mkdtemp(r->tmp) == NULL) {
		report(tool, dir, NULL, "cannot create a temporary directory "
		    "beside it: %s", strerror(errno));
		r->tmp[0] = '\0';
		return -1;
	}
	if (cleanup_install() == 0)
		r->cleanup_slot = cleanup_register(r->tmp);
	if (!cleanup_keep_waste() && scratch_own(r->tmp, &r->owner_fd,
	    &e) < 0) {
		report_error(tool, r->tmp, &e, NULL);
		return -1;
	}
	for (int i = 0; i < F_NR; i++) {
		if (spandir_path(r->tmp, (enum spandir_file)i, path,
		    sizeof(path), &r->err) < 0) {
			report_error(tool, r->o->out_dir, &r->err, NULL);
			return -1;
		}
		if (spandir_zst_name((enum spandir_file)i) != NULL &&
		    !r->o->no_compress) {
			/* The same lines in a 25th of the room. */
			strcat(path, SPANDIR_ZST);
			if ((r->f[i] = zstdfile_open_write(path, ZSTDFILE_LEVEL,
			    &e)) == NULL) {
				report_error(tool, path, &e, NULL);
				return -1;
			}
		} else if ((r->f[i] = fopen(path, "we")) == NULL) {
			report(tool, path, NULL, "%s", strerror(errno));
			return -1;
		}
		/* Big buffers: spans.jsonl runs to gigabytes. */
		setvbuf(r->f[i], NULL, _IOFBF, 1 << 20);
		jsonw_init(&r->w[i], r->f[i]);
	}
	if ((r->sw = spans_writer_new(r->f[F_SPANS])) == NULL) {
		report(tool, NULL, NULL, "out of memory");
		return -1;
	}
	if (r->o->no_compress)
		spans_writer_hash_lines(r->sw);
	if (spanidx_writer_new(&ix, &r->err) < 0 ||
	    spans_ixt_new(&r->ixt, ix, r->o->jobs > 1, &r->err) < 0) {
		report_error(tool, spandir_file_name(SPANDIR_INDEX), &r->err,
		    NULL);
		return -1;
	}
	return 0;
}

static void
remove_tmp(struct run *r)
{
	if (r->tmp[0] == '\0')
		return;
	if (!cleanup_keep_waste() && cleanup_remove_tree(r->tmp) < 0)
		report_warning(tool, r->tmp, "could not remove it");
	if (r->cleanup_slot >= 0)
		cleanup_unregister(r->cleanup_slot);
	if (r->owner_fd >= 0)
		close(r->owner_fd);	/* after: no sweeper races the removal */
	r->owner_fd = -1;
	r->tmp[0] = '\0';
}

static void
analysis_id(const struct spans_options *o, char *out, size_t size)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	char opts[64];

	if (!o->no_inline) {
		snprintf(out, size, "%s", STORE_DEFAULT_ANALYSIS);
		return;
	}
	snprintf(opts, sizeof(opts), "ptspans/%d inline=0", SPANDIR_SCHEMA);
	{
		struct sha256_ctx h;

		sha256_init(&h);
		sha256_update(&h, strlen(opts), (const uint8_t *)opts);
		sha256_digest(&h, SHA256_DIGEST_SIZE, d);
	}
	snprintf(out, size, "%02x%02x%02x%02x%02x%02x%02x%02x", d[0], d[1],
	    d[2], d[3], d[4], d[5], d[6], d[7]);
}

static void
fill_quality(const struct run *r, struct spandir_quality *q)
{
	struct codemap_stats cs;

	*q = r->q;
	codemap_get_stats(r->cm, &cs);
	if (r->par != NULL) {
		struct codemap_stats add;
		uint64_t chunks, rebuilt;

		spans_par_stats(r->par, &add, &chunks, &rebuilt);
		cs.inline_walk_failed += add.inline_walk_failed;
		cs.insn_undecodable += add.insn_undecodable;
	}
	q->inline_walks_failed = cs.inline_walk_failed;
	q->images = cs.images;
	q->images_missing = cs.images_missing;
	q->images_without_symbols = cs.images_no_symbols;
	q->undecodable_insns = cs.insn_undecodable;
}

/*
 * The snapshot's manifest, for the capture's times and the trigger: read
 * once, beneath the snapshot as ptdecode read it (a manifest.json swapped
 * for a link since is refused, not followed).  Returns 1 when *m holds
 * it; a manifest that cannot be read is said, with what the analysis
 * goes without.
 */
static int
read_snapshot_manifest(const struct run *r, struct manifest *m)
{
	const char *snap = r->hdr->snapshot;
	struct error e;

	manifest_init(m);
	if (snap[0] == '\0')
		return 0;
	if (snapshot_read_manifest(snap, m, &e) < 0) {
		report_warning(tool, snap, "%s (the analysis records neither "
		    "the capture's times nor its trigger)", e.msg);
		return 0;
	}
	return 1;
}

/*
 * The checksums of the JSON Lines files the manifest holds them of (the
 * small plain ones, span/spandir's spandir_xxh64_member), read back from
 * r->tmp once they are closed, into sm.  Returns 0, or -1 after saying
 * why.
 */
static int
hash_files(struct run *r, struct spandir_manifest *sm)
{
	char path[PATH_MAX + 32];

	for (int i = 0; i < F_NR; i++) {
		int fd, err;

		if (spandir_xxh64_member((enum spandir_file)i) == NULL)
			continue;
		if (spandir_path(r->tmp, (enum spandir_file)i, path,
		    sizeof(path), &r->err) < 0) {
			report_error(tool, r->o->out_dir, &r->err, NULL);
			return -1;
		}
		if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
		    spandir_fd_xxh64(fd, &sm->files_xxh64[i]) < 0) {
			err = errno;
			if (fd >= 0)
				close(fd);
			error_set_errno(&r->err, err, "reading it back for its "
			    "checksum");
			report_error(tool, path, &r->err, NULL);
			return -1;
		}
		close(fd);
	}
	sm->files_hashed = 1;
	return 0;
}

/* m: the snapshot's manifest, NULL when it could not be read. */
static int
write_manifest(struct run *r, const struct manifest *m)
{
	char path[PATH_MAX + 32], id[32];
	const struct blks_header *h = r->hdr;
	const char *snap = h->snapshot, *base = strrchr(snap, '/');
	struct spandir_quality q;
	struct spandir_manifest sm = {
		.analysis_id = id, .tool = "ptspans " PTKIT_VERSION,
		.snapshot = snap, .decoder = blks_decoder_name(h->decoder),
		.inline_on = !r->o->no_inline, .time = h, .quality = &q,
		.threads = r->cov, .n_threads = r->n_cov,
		.jsonl_zst = !r->o->no_compress,
		.spans_hashed = r->o->no_compress,
		.spans_xxh64 = r->o->no_compress ?
		    spans_writer_digest(r->sw) : 0,
	};
	FILE *f;
	int rc, err;

	if (hash_files(r, &sm) < 0)
		return -1;
	analysis_id(r->o, id, sizeof(id));
	fill_quality(r, &q);
	if (snap[0] == '\0')
		sm.capture.snapshot_id = NULL;
	else if (m == NULL)
		sm.capture.snapshot_id = base ? base + 1 : snap;
	else {
		sm.capture.known = 1;
		sm.capture.snapshot_id = m->id;
		sm.capture.start_ns = m->capture.start_ns;
		sm.capture.end_ns = m->capture.end_ns;
		sm.capture.start_wall_ns = m->capture.start_wall_ns;
		sm.capture.end_wall_ns = m->capture.end_wall_ns;
	}
	if (spandir_path(r->tmp, SPANDIR_MANIFEST, path, sizeof(path),
	    &r->err) < 0) {
		report_error(tool, r->o->out_dir, &r->err, NULL);
		return -1;
	}
	if ((f = fopen(path, "we")) == NULL) {
		report(tool, path, NULL, "%s", strerror(errno));
		return -1;
	}
	rc = spandir_write_manifest(f, &sm);
	err = rc == -ERR_IO ? errno : 0;
	/* A full disk is often only found when the buffer is flushed. */
	if (fclose(f) != 0 && rc == 0) {
		rc = -ERR_IO;
		err = errno;
	}
	if (rc == -ERR_IO)
		error_set_errno(&r->err, err ? err : EIO, "write failed");
	else if (rc < 0)
		error_set(&r->err, -rc, "write failed: %s", err_str(rc));
	if (rc < 0) {
		report_error(tool, path, &r->err, NULL);
		return -1;
	}
	return 0;
}

/*
 * The snapshot's trigger, from its manifest m (NULL: none read), as the
 * last event: record time is perf time minus the stream's time base.
 */
static void
write_trigger(struct run *r, const struct manifest *m)
{
	struct jsonw *w = &r->w[F_EVENTS];

	if (m != NULL && m->trigger.kind != NULL) {
		struct spandir_trigger t = {
			m->trigger.kind, m->trigger.detail,
			m->trigger.fired_ns > r->hdr->time_base_ns ?
			    m->trigger.fired_ns - r->hdr->time_base_ns : 0,
			m->trigger.fired_wall_ns,
		};

		spandir_write_trigger(w, &t);
	}
}

/* Files of the snapshot the code map refused (a link on the way): their
 * code counts as missing (images_missing), and why is said here. */
static void
warn_refused(const struct run *r)
{
	char note[ERROR_MSG_MAX + 128];

	if (codemap_refused_note(r->cm, note, sizeof(note)) > 0)
		report_warning(tool, r->hdr->snapshot, "%s", note);
}

/* m: the snapshot's manifest, NULL when it could not be read. */
static int
write_outputs(struct run *r, const struct manifest *m)
{
	char path[PATH_MAX + 32];
	int bad = 0;

	warn_refused(r);
	write_trigger(r, m);
	if (spans_writer_flush(r->sw) < 0)
		bad = 1;
	for (int i = 0; i < F_NR; i++) {
		if (jsonw_finish(&r->w[i]) < 0 || ferror(r->f[i]))
			bad = 1;
		if (fclose(r->f[i]) != 0)
			bad = 1;
		r->f[i] = NULL;
	}
	if (bad) {
		report(tool, r->o->out_dir, NULL, "writing the analysis failed: "
		    "%s", strerror(errno));
		return -1;
	}
	/* After the lines are closed: an index older than spans.jsonl is
	 * taken for a stale one when the analysis is opened. */
	if (spandir_path(r->tmp, SPANDIR_INDEX, path, sizeof(path),
	    &r->err) < 0) {
		report_error(tool, r->o->out_dir, &r->err, NULL);
		return -1;
	}
	if (spans_ixt_finish(r->ixt, path, &r->err) < 0) {
		report_error(tool, spandir_file_name(SPANDIR_INDEX), &r->err,
		    NULL);
		return -1;
	}
	/* The totals queries of the whole trace read instead of the spans. */
	if (aggkeep_write_dir(r->tmp, &r->err) < 0) {
		report_error(tool, r->o->out_dir, &r->err, NULL);
		return -1;
	}
	if (write_manifest(r, m) < 0)
		return -1;
	if (r->owner_fd >= 0) {
		int rc = scratch_disown(r->tmp, r->owner_fd, &r->err);

		r->owner_fd = -1;
		if (rc < 0) {
			report_error(tool, r->tmp, &r->err, NULL);
			return -1;
		}
	}
	if (rename(r->tmp, r->o->out_dir) < 0) {
		report(tool, r->o->out_dir, NULL, "cannot rename %s into "
		    "place: %s", r->tmp, strerror(errno));
		return -1;
	}
	if (r->cleanup_slot >= 0)
		cleanup_unregister(r->cleanup_slot);
	r->tmp[0] = '\0';
	printf("%s\n", r->o->out_dir);
	return 0;
}

static int
finish_outputs(struct run *r)
{
	struct manifest m;
	int have = read_snapshot_manifest(r, &m);
	int rc = write_outputs(r, have ? &m : NULL);

	manifest_free(&m);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Summary */

static int
print_summary(struct run *r)
{
	const struct spandir_quality *q = &r->q;
	size_t shown = 0;

	if (fn_totals_of_acc(r) < 0) {
		report(tool, NULL, NULL, "out of memory");
		return -1;
	}
	fn_totals_sort(&r->totals);
	printf("threads %" PRIu64 ", spans %" PRIu64 ", instructions %"
	    PRIu64 ", blocks %" PRIu64 "\n", q->threads, q->spans, q->insns,
	    q->blocks);
	printf("gaps:");
	for (unsigned i = 0; i < CS_GAP_NR; i++)
		if (q->gaps[i]) {
			printf(" %s %" PRIu64, spandir_gap_cause_name(i),
			    q->gaps[i]);
			shown++;
		}
	printf("%s\n", shown == 0 ? " none" : "");
	shown = 0;
	printf("tail calls %" PRIu64 ", signals %" PRIu64 ", unwound %"
	    PRIu64 ", cut by gaps %" PRIu64 ", unnamed %" PRIu64 "\n",
	    q->tail_calls, q->signals, q->unwound, q->cut_frames, q->unnamed);
	printf("%12s %12s %14s %14s  %s\n", "calls", "spans", "self_insns",
	    "self_ns", "function");
	for (size_t i = 0; i < r->totals.cap && shown < 30; i++) {
		const struct fn_total *t = &r->totals.slot[i];
		const char *tab;

		if (t->key == NULL)
			continue;
		tab = strchr(t->key, '\t');
		printf("%12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %14" PRIu64
		    "  %.*s%s%s%s\n", t->calls, t->spans, t->self_insns,
		    t->self_ns, (int)(tab - t->key), t->key,
		    tab[1] ? " (" : "", tab + 1, tab[1] ? ")" : "");
		shown++;
	}
	return 0;
}

/* ----------------------------------------------------------------- */
/* The run */

static int
setup(struct run *r)
{
	struct codemap_options co;
	struct cs_code code;
	struct cs_sink sink = { r, sink_span, sink_gap, sink_event,
	    sink_thread_end };

	r->hdr = blks_reader_header(r->rd);
	memset(&co, 0, sizeof(co));
	co.snapshot = r->hdr->snapshot;
	co.no_inline = r->o->no_inline;
	co.debug_dirs = r->o->debug_dirs;
	co.n_debug_dirs = r->o->n_debug_dirs;
	if (codemap_new(&r->cm, &co, &r->err) < 0) {
		report_error(tool, NULL, &r->err, NULL);
		return -1;
	}
	codemap_code(r->cm, &code);
	if ((r->cs = cs_new(&code, &sink, 0)) == NULL) {
		report(tool, NULL, NULL, "out of memory");
		return -1;
	}
	if (r->o->out_dir != NULL)
		return open_outputs(r);
	if (r->o->format == 0) {
		r->f[F_SPANS] = stdout;
		jsonw_init(&r->w[F_SPANS], stdout);
		if ((r->sw = spans_writer_new(stdout)) == NULL) {
			report(tool, NULL, NULL, "out of memory");
			return -1;
		}
	}
	return 0;
}

static int
feed(struct run *r, const struct blks_record *rec)
{
	if (rec->type == BLKS_MAP) {
		if (r->f[F_EVENTS] != NULL)
			spandir_write_map(&r->w[F_EVENTS], &rec->u.map);
		return codemap_add(r->cm, &rec->u.map, &r->err);
	}
	if (rec->type == BLKS_THREAD) {
		r->thread = rec->u.thread;
		snprintf(r->thread_name, sizeof(r->thread_name), "%s",
		    rec->u.thread.name);
		memset(&r->end, 0, sizeof(r->end));
	} else if (rec->type == BLKS_END)
		r->end = rec->u.end;
	return cs_feed(r->cs, rec, &r->err);
}

/*
 * Progress while reading: bytes of the block stream read, of the file's
 * size; of 0 (not known) from a pipe until its end, when the bytes read
 * are the total.
 */
static void
show_read(struct run *r)
{
	if (r->prog.enabled)
		progress_update(&r->prog, "reading",
		    blks_reader_offset(r->rd), r->in_bytes);
}

static void
show_read_end(struct run *r)
{
	uint64_t done = blks_reader_offset(r->rd);

	progress_update_now(&r->prog, "reading", done,
	    r->in_bytes > done ? r->in_bytes : done);
}

/*
 * Runs of plain BLOCK records go to the engine where the reader holds
 * them (cs_feed_run: no copy, no call per block); everything else,
 * record by record.
 */
static int
read_all(struct run *r)
{
	struct blks_record rec;
	struct blks_run run;
	int rc;

	for (;;) {
		if (blks_run_begin(r->rd, &run)) {
			rc = cs_feed_run(r->cs, &run, &r->err);
			blks_run_end(r->rd, &run);
			if (rc < 0) {
				report_error(tool, "stdin", &r->err, NULL);
				return -1;
			}
			show_read(r);
		}
		if ((rc = blks_read(r->rd, &rec, &r->err)) != 1)
			break;
		if ((rc = feed(r, &rec)) < 0) {
			report_error(tool, "stdin", &r->err, NULL);
			return -1;
		}
	}
	if (rc < 0) {
		/* The reader's messages name the stream themselves. */
		report_error(tool, NULL, &r->err, NULL);
		return -1;
	}
	return 0;
}

/* The serial read's work besides the engine, for the parallel engine. */
static int
par_map(void *ctx, const struct blks_map *m, struct error *e)
{
	struct run *r = ctx;

	if (r->f[F_EVENTS] != NULL)
		spandir_write_map(&r->w[F_EVENTS], m);
	return codemap_add(r->cm, m, e);
}

static void
par_thread(void *ctx, const struct blks_thread *th)
{
	struct run *r = ctx;

	r->thread = *th;
	snprintf(r->thread_name, sizeof(r->thread_name), "%s", th->name);
	memset(&r->end, 0, sizeof(r->end));
}

static void
par_end(void *ctx, const struct blks_end *end)
{
	struct run *r = ctx;

	r->end = *end;
}

static void
par_read(void *ctx)
{
	show_read(ctx);
}

/* read_all on every core: par.c. */
static int
read_all_par(struct run *r)
{
	struct spans_par_config cfg = {
		(unsigned)r->o->jobs, r->o->chunk_blocks, r->cm, r->cs,
		{ r, par_map, par_thread, par_end, par_read },
	};
	int read_error;

	if (spans_par_new(&r->par, &cfg, &r->err) < 0) {
		report_error(tool, NULL, &r->err, NULL);
		return -1;
	}
	if (spans_par_read(r->par, r->rd, &r->err, &read_error) < 0) {
		/* The reader's messages name the stream themselves. */
		report_error(tool, read_error ? NULL : "stdin", &r->err, NULL);
		return -1;
	}
	if (getenv("PTKIT_SPANS_STATS") != NULL) {
		struct codemap_stats add;
		uint64_t chunks, rebuilt;

		spans_par_stats(r->par, &add, &chunks, &rebuilt);
		fprintf(stderr, "ptspans: %" PRIu64 " chunks, %" PRIu64
		    " rebuilt by the serial engine\n", chunks, rebuilt);
	}
	return 0;
}

static void
run_free(struct run *r)
{
	/* Its thread may still be writing spans.jsonl (an error path). */
	spans_par_free(r->par);
	spans_writer_free(r->sw);
	for (int i = 0; i < F_NR; i++)
		if (r->f[i] != NULL && r->f[i] != stdout)
			fclose(r->f[i]);
	spans_ixt_free(r->ixt);
	remove_tmp(r);
	cs_free(r->cs);
	codemap_free(r->cm);
	blks_reader_free(r->rd);
	fn_totals_free(&r->totals);
	free(r->acc.slot);
	free(r->tree.node);
	free(r->cov);
}

/* The bytes from fd's offset to its end when it is a file, else 0. */
static uint64_t
stream_size(int fd)
{
	struct stat sb;
	off_t at;

	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (at = lseek(fd, 0, SEEK_CUR)) < 0 || at > sb.st_size)
		return 0;
	return (uint64_t)(sb.st_size - at);
}

int
spans_run(const struct spans_options *o, FILE *in)
{
	struct run r;
	int rc = EXIT_FAIL;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.cleanup_slot = -1;
	r.owner_fd = -1;
	r.next_inline_id = 1;
	progress_init(&r.prog, stderr, -1);
	r.in_bytes = stream_size(fileno(in));	/* before the reader reads */
	/* The reader reads as much at once, on a thread of its own. */
	pipebuf_widen(fileno(in), PIPEBUF_WANT);
	if (blks_reader_open_fd(&r.rd, fileno(in), "stdin", &r.err) < 0) {
		report_error(tool, NULL, &r.err, "expected a block stream "
		    "(ptdecode's output)");
		run_free(&r);
		return EXIT_FAIL;
	}
	if (setup(&r) < 0 ||
	    (o->jobs > 1 ? read_all_par(&r) : read_all(&r)) < 0)
		goto out;
	show_read_end(&r);
	/* What is left: closing the files, the index the longest. */
	if (o->out_dir != NULL)
		progress_update_now(&r.prog, "indexing", 0, r.q.spans);
	if (o->out_dir != NULL && finish_outputs(&r) < 0)
		goto out;
	if (o->out_dir == NULL && r.f[F_SPANS] != NULL &&
	    (spans_writer_flush(r.sw) < 0 ||
	    jsonw_finish(&r.w[F_SPANS]) < 0 || ferror(r.f[F_SPANS]))) {
		report(tool, "stdout", NULL, "write failed");
		goto out;
	}
	if (o->format == 1 && print_summary(&r) < 0)
		goto out;
	rc = EXIT_OK;
out:
	progress_done(&r.prog);
	/* What was made before an error is written, as it came. */
	if (o->out_dir == NULL && r.sw != NULL)
		(void)spans_writer_flush(r.sw);
	if (r.f[F_SPANS] == stdout)
		r.f[F_SPANS] = NULL;
	run_free(&r);
	return rc;
}
