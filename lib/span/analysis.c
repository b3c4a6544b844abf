/*
 * analysis: see analysis.h.
 */
#include "span/analysis.h"

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
#include "base/xxh64.h"
#include "fmt/store.h"
#include "fmt/zstdfile.h"
#include "span/spandir.h"
#include "base/json.h"

static int
is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Whether file f is in dir, in either form (its stat in *sb when sb is
 * not NULL). */
static int
has(const char *dir, enum spandir_file f, struct stat *sb)
{
	char path[PATH_MAX + 64];
	const char *name;
	struct stat tmp;

	return spandir_find(dir, f, path, sizeof(path), &name) == 0 &&
	    stat(path, sb ? sb : &tmp) == 0;
}

/* The analysis directory path names: itself, or a snapshot's default. */
static int
find_dir(struct analysis *a, const char *path, struct error *e)
{
	char sub[PATH_MAX + 32];

	if (!is_dir(path))
		return error_set(e, ERR_NOTFOUND, "no such directory");
	if (!has(path, SPANDIR_SPANS, NULL) &&
	    !has(path, SPANDIR_INDEX, NULL) &&
	    store_snapshot_analysis(path, STORE_DEFAULT_ANALYSIS, sub,
	    sizeof(sub), NULL) == 0 && is_dir(sub))
		path = sub;
	if (snprintf(a->dir, sizeof(a->dir), "%s", path) >=
	    (int)sizeof(a->dir))
		return error_set(e, ERR_INVALID, "path too long");
	if (!has(a->dir, SPANDIR_SPANS, NULL) &&
	    !has(a->dir, SPANDIR_INDEX, NULL))
		return error_set(e, ERR_NOTFOUND, "not an analysis directory "
		    "(no spans.jsonl, no index.bin)");
	return 0;
}

uint64_t
analysis_manifest_u64(const struct analysis *a, const char *path,
    uint64_t dflt)
{
	return spandir_manifest_u64(a->manifest, path, dflt);
}

const char *
analysis_manifest_str(const struct analysis *a, const char *path,
    const char *dflt)
{
	return spandir_manifest_str(a->manifest, path, dflt);
}

static int rebuild(struct analysis *a, struct error *e);

/* The manifest's span count, or -1 when it does not say. */
static int64_t
manifest_spans(const struct analysis *a)
{
	const json_t *v = spandir_manifest_member(a->manifest, SPANDIR_M_SPANS);

	return json_is_integer(v) && json_integer_value(v) >= 0 ?
	    (int64_t)json_integer_value(v) : -1;
}

/* Whether f, made from spans.jsonl, is older than it (so made from other
 * spans): 0 when either is missing. */
static int
older_than_spans(const struct analysis *a, enum spandir_file f)
{
	struct stat sf, sj;

	return has(a->dir, SPANDIR_SPANS, &sj) && has(a->dir, f, &sf) &&
	    (sf.st_mtim.tv_sec < sj.st_mtim.tv_sec ||
	    (sf.st_mtim.tv_sec == sj.st_mtim.tv_sec &&
	    sf.st_mtim.tv_nsec < sj.st_mtim.tv_nsec));
}

/* Whether the open index must be rebuilt; says why in a->rebuilt. */
static int
index_stale(struct analysis *a)
{
	int64_t want = manifest_spans(a);

	if (older_than_spans(a, SPANDIR_INDEX)) {
		snprintf(a->rebuilt, sizeof(a->rebuilt),
		    "older than spans.jsonl");
		return 1;
	}
	if (want >= 0 && (uint64_t)want != a->ix.rows) {
		snprintf(a->rebuilt, sizeof(a->rebuilt), "holds %" PRIu64
		    " spans, the manifest says %" PRId64, a->ix.rows, want);
		return 1;
	}
	return 0;
}

static int
open_index(struct analysis *a, int lazy, struct error *e)
{
	char path[PATH_MAX + 16];
	struct error ie;
	int rc, fd;

	if ((rc = spandir_path(a->dir, SPANDIR_INDEX, path, sizeof(path),
	    e)) < 0)
		return rc;
	/* Mapped from the descriptor checked beneath the analysis: no link
	 * swapped in after check_files is followed. */
	fd = beneath_open_at(a->dir, spandir_file_name(SPANDIR_INDEX),
	    BENEATH_FILE, 0, "the analysis directory", &ie);
	if (fd == -ERR_PERM) {
		*e = ie;
		return fd;
	}
	if (fd < 0) {
		rc = fd;
	} else {
		rc = lazy ? spanidx_open_lazy_fd(&a->ix, fd, path, &ie) :
		    spanidx_open_fd(&a->ix, fd, path, &ie);
		close(fd);
	}
	if (rc == 0 && !index_stale(a))
		return 0;
	if (rc == 0)
		spanidx_close(&a->ix);
	else if (rc == -ERR_NOTFOUND)
		snprintf(a->rebuilt, sizeof(a->rebuilt), "missing");
	else {
		const char *why = ie.msg[0] ? ie.msg : err_str(rc);
		size_t n = strlen(path);

		if (strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
			why += n + 2;
		snprintf(a->rebuilt, sizeof(a->rebuilt), "%s", why);
	}
	if (!has(a->dir, SPANDIR_SPANS, NULL)) {
		/* Nothing to rebuild from: the index's fault is the error. */
		return error_set(e, rc < 0 ? -rc : ERR_FORMAT, "%s %s%s and "
		    "there is no %s to rebuild it from",
		    spandir_file_name(SPANDIR_INDEX), rc < 0 ? "unreadable: " :
		    "", a->rebuilt, spandir_file_name(SPANDIR_SPANS));
	}
	return rebuild(a, e);
}

/*
 * Each file of the analysis that is there is a regular file of its own:
 * a link planted in the directory (spans.jsonl -> /etc/passwd) or a FIFO
 * is refused before any reader opens it (lib/base/beneath).
 */
static int
check_files(const struct analysis *a, struct error *e)
{
	int f, rc;

	for (f = 0; f < SPANDIR_FILE_NR; f++) {
		const char *zst = spandir_zst_name(f);

		rc = beneath_check(a->dir, spandir_file_name(f),
		    "the analysis directory", e);
		if (rc < 0 && rc != -ERR_NOTFOUND)
			return rc;
		if (zst == NULL)
			continue;
		rc = beneath_check(a->dir, zst, "the analysis directory", e);
		if (rc < 0 && rc != -ERR_NOTFOUND)
			return rc;
	}
	return 0;
}

/* Whether the manifest's "files" names f: an analysis written since f
 * was added to the format. */
static int
manifest_lists(const struct analysis *a, enum spandir_file f)
{
	const json_t *files = json_object_get(a->manifest,
	    SPANDIR_M_FILES), *v;
	size_t i;

	json_array_foreach(files, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v),
		    spandir_file_name(f)) == 0)
			return 1;
	return 0;
}

/*
 * The kept aggregates, when they can be answered from: not after the
 * index was rebuilt (spans.jsonl changed, or the index was damaged: the
 * aggregates were made from what is gone), not older than spans.jsonl,
 * and checked against the index.  Why not is in a->kept_refused; an
 * analysis older than the file is answered by the walk, silently.
 */
static void
open_kept(struct analysis *a)
{
	struct error ke;
	int rc;

	if (a->rebuilt[0] != '\0')
		return;
	if (older_than_spans(a, SPANDIR_AGGREGATES)) {
		snprintf(a->kept_refused, sizeof(a->kept_refused), "%s: older "
		    "than spans.jsonl",
		    spandir_file_name(SPANDIR_AGGREGATES));
		return;
	}
	rc = aggkeep_open(&a->kept, a->dir, a->ix.rows,
	    aggkeep_index_id(a->ix.base), &ke);
	if (rc == -ERR_NOTFOUND && !manifest_lists(a, SPANDIR_AGGREGATES))
		return;
	if (rc < 0)
		snprintf(a->kept_refused, sizeof(a->kept_refused), "%s",
		    ke.msg[0] ? ke.msg : err_str(rc));
}

/*
 * The kept aggregates alone, checked against the manifest's span count
 * and against the identity of the index.bin there is, of which only the
 * header is read (they were checked against the index when they were
 * made from it): what a query of totals needs.  Returns 0 when they can
 * answer; otherwise the index is opened and open_kept says why not.
 */
static int
open_kept_alone(struct analysis *a)
{
	struct error ke;
	int64_t want = manifest_spans(a);
	uint64_t id;

	if (want < 0 || (has(a->dir, SPANDIR_SPANS, NULL) &&
	    !has(a->dir, SPANDIR_AGGREGATES, NULL)) ||
	    older_than_spans(a, SPANDIR_AGGREGATES) ||
	    aggkeep_index_id_at(a->dir, &id, &ke) < 0)
		return -1;
	return aggkeep_open(&a->kept, a->dir, (uint64_t)want, id, &ke);
}

int
analysis_open_index(struct analysis *a, struct error *e)
{
	if (!a->index_deferred)
		return 0;
	a->index_deferred = 0;
	aggkeep_close(&a->kept);
	if (open_index(a, 0, e) < 0)
		return -e->code;
	open_kept(a);
	return 0;
}

int
analysis_open(struct analysis *a, const char *path, struct error *e)
{
	return analysis_open_for(a, path, ANALYSIS_ALL, e);
}

int
analysis_open_for(struct analysis *a, const char *path,
    enum analysis_need need, struct error *e)
{
	int rc, fd;

	memset(a, 0, sizeof(*a));
	if ((rc = find_dir(a, path, e)) < 0 || (rc = check_files(a, e)) < 0)
		return rc;
	/* ptspans writes the manifest last: without it nothing is whole. */
	if (!has(a->dir, SPANDIR_MANIFEST, NULL))
		return error_set(e, ERR_FORMAT, "incomplete analysis: no %s "
		    "(ptspans did not finish: run it again)",
		    spandir_file_name(SPANDIR_MANIFEST));
	if ((fd = beneath_open_at(a->dir, spandir_file_name(SPANDIR_MANIFEST),
	    BENEATH_FILE, 0, "the analysis directory", e)) < 0)
		return fd;
	/* Its numbers are answered as they are (summary), and checked
	 * against nothing else: its own checksum says they are whole. */
	a->manifest = spandir_manifest_read_fd(fd, e);
	close(fd);
	if (a->manifest == NULL)
		return -e->code;
	/* The count spans.jsonl and index.bin are checked against: without
	 * it (a damaged name, a damaged number) they would answer unchecked,
	 * and the summary would say 0 spans. */
	if (manifest_spans(a) < 0) {
		json_decref(a->manifest);
		a->manifest = NULL;
		return error_set(e, ERR_FORMAT, "%s: quality.spans is missing "
		    "or not a count: the manifest is damaged (run ptspans "
		    "again)", spandir_file_name(SPANDIR_MANIFEST));
	}
	if (need == ANALYSIS_TOTALS && open_kept_alone(a) == 0) {
		a->index_deferred = 1;
		return 0;
	}
	if ((rc = open_index(a, need == ANALYSIS_LAZY, e)) < 0) {
		json_decref(a->manifest);
		a->manifest = NULL;
		return rc;
	}
	open_kept(a);
	return 0;
}

int
analysis_open_lazy(struct analysis *a, const char *path, struct error *e)
{
	return analysis_open_for(a, path, ANALYSIS_LAZY, e);
}

void
analysis_close(struct analysis *a)
{
	aggkeep_close(&a->kept);
	spanidx_close(&a->ix);
	json_decref(a->manifest);
	a->manifest = NULL;
}

/*
 * Whether the bytes of file f, open at fd, are those the manifest holds
 * the checksum of (when it holds one: spandir_xxh64_member); fd is left
 * at its start.  A flipped digit of a gap or a thread would otherwise be
 * answered as if whole.  Returns 0, or -ERR_FORMAT, -ERR_IO with e.
 */
static int
check_sum(const struct analysis *a, enum spandir_file f, int fd,
    const char *name, struct error *e)
{
	const char *member = spandir_xxh64_member(f);
	uint64_t want, got;
	int rc;

	if (member == NULL ||
	    (rc = spandir_manifest_xxh64(a->manifest, member, &want)) == 0)
		return 0;
	if (rc < 0)
		return error_set(e, ERR_FORMAT, "%s: %s is not a checksum: the "
		    "manifest is damaged (run ptspans again)",
		    spandir_file_name(SPANDIR_MANIFEST), member);
	if (spandir_fd_xxh64(fd, &got) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return error_set_errno(e, errno, "%s", name);
	if (got != want)
		return error_set(e, ERR_FORMAT, "%s does not match the checksum "
		    "the manifest holds (%s 0x%016" PRIx64 "): it was changed or "
		    "damaged (run ptspans again)", name, member, want);
	return 0;
}

FILE *
analysis_open_jsonl(const struct analysis *a, enum spandir_file f,
    const char **name, struct error *e)
{
	char path[PATH_MAX + 32];
	int rc, fd;

	*name = spandir_file_name(f);
	if ((rc = spandir_find(a->dir, f, path, sizeof(path), name)) < 0) {
		error_set(e, -rc, "%s: %s", *name, rc == -ERR_NOTFOUND ?
		    "no such file" : "path too long");
		return NULL;
	}
	/* Read through the descriptor checked beneath the analysis: no
	 * link swapped in after check_files is followed. */
	if ((fd = beneath_open_at(a->dir, *name, BENEATH_FILE, 0,
	    "the analysis directory", e)) < 0)
		return NULL;
	if (check_sum(a, f, fd, *name, e) < 0) {
		close(fd);
		return NULL;
	}
	return zstdfile_open_read_fd(fd, path, e);
}

const char *
analysis_fn(const struct analysis *a, uint64_t r)
{
	return spanidx_str(&a->ix, spanidx_u32(&a->ix, SPANIDX_FN, r));
}

const char *
analysis_module(const struct analysis *a, uint64_t r)
{
	return spanidx_str(&a->ix, spanidx_u32(&a->ix, SPANIDX_MODULE, r));
}

/* ----------------------------------------------------------------- */
/* Rebuilding index.bin from spans.jsonl */

static int64_t
rebuild_from(FILE *in, const char *name, struct spanidx_writer *w,
    uint64_t *hash, struct error *e)
{
	struct xxh64 h;
	struct spanidx_row row;
	json_error_t je;
	char *line = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;
	int64_t rows = 0;
	ssize_t n;
	json_t *o;

	xxh64_init(&h, 0);
	while ((n = getline(&line, &cap, in)) > 0) {
		lineno++;
		xxh64_update(&h, line, (size_t)n);
		if ((o = json_loadb(line, (size_t)n, 0, &je)) == NULL ||
		    !json_is_object(o) || spandir_span_row(o, &row) < 0) {
			json_decref(o);
			free(line);
			return error_set(e, ERR_FORMAT, "%s line %" PRIu64 ": "
			    "not a span record", name, lineno);
		}
		if (spanidx_add(w, &row, e) < 0) {
			json_decref(o);
			free(line);
			return -e->code;
		}
		json_decref(o);
		rows++;
	}
	free(line);
	if (ferror(in))
		return error_set_errno(e, errno, "%s", name);
	*hash = xxh64_digest(&h);
	return rows;
}

/*
 * The index of dir's spans.jsonl (or spans.jsonl.zst), written to fd; the
 * rows in *rows, the file's name in *src_name.  Returns 0 or a negative
 * code with e.
 */
static int
rebuild_to(const char *dir, int fd, const char *name, int64_t *rows,
    uint64_t *hash, const char **src_name, struct error *e)
{
	char src[PATH_MAX + 16];
	struct spanidx_writer *w;
	FILE *in;
	int src_fd;

	*src_name = spandir_file_name(SPANDIR_SPANS);
	if (spandir_find(dir, SPANDIR_SPANS, src, sizeof(src), src_name) < 0)
		return error_set(e, ERR_NOTFOUND, "no %s", *src_name);
	if ((src_fd = beneath_open_at(dir, *src_name, BENEATH_FILE, 0,
	    "the analysis directory", e)) < 0)
		return src_fd;		/* e names the file */
	if ((in = zstdfile_open_read_fd(src_fd, src, e)) == NULL)
		return error_prefix(e, "%s", *src_name);
	if (spanidx_writer_new(&w, e) < 0) {
		fclose(in);
		return -e->code;
	}
	*rows = rebuild_from(in, *src_name, w, hash, e);
	fclose(in);
	if (*rows < 0) {
		spanidx_writer_free(w);
		return (int)*rows;
	}
	return spanidx_writer_finish_fd(w, fd, name, e);
}

/* dir/.index.bin.PID, opened for a rebuild; -1 with errno when not. */
static int
open_beside(const char *dir, char *tmp, size_t size)
{
	if (snprintf(tmp, size, "%s/.index.bin.%ld", dir, (long)getpid()) >=
	    (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0644);
}

/*
 * Rebuilds the index into a->ix: into the directory when it can be
 * written, else into memory (a read-only analysis still answers; why it
 * was not saved is in a->unsaved).  A spans.jsonl of another number of
 * spans than the manifest says is refused, never indexed.
 */
static int
rebuild(struct analysis *a, struct error *e)
{
	char dst[PATH_MAX + 16], tmp[PATH_MAX + 32];
	const char *name = spandir_file_name(SPANDIR_INDEX), *src;
	int64_t rows = 0, want = manifest_spans(a);
	const json_t *jh = spandir_manifest_member(a->manifest,
	    SPANDIR_M_SPANS_XXH64);
	const char *want_hash = json_is_string(jh) ? json_string_value(jh) :
	    NULL;
	uint64_t hash = 0;
	int fd, rc;

	if (spandir_path(a->dir, SPANDIR_INDEX, dst, sizeof(dst), e) < 0)
		return -e->code;
	if ((fd = open_beside(a->dir, tmp, sizeof(tmp))) < 0) {
		snprintf(a->unsaved, sizeof(a->unsaved), "%s", strerror(errno));
		tmp[0] = '\0';
		if ((fd = memfd_create(name, MFD_CLOEXEC)) < 0)
			return error_set_errno(e, errno, "%s in memory", name);
	}
	rc = rebuild_to(a->dir, fd, name, &rows, &hash, &src, e);
	if (rc == 0 && want >= 0 && rows != want)
		rc = error_set(e, ERR_FORMAT, "%s holds %" PRId64 " spans, "
		    "the manifest says %" PRId64 ": it was cut short or "
		    "changed (run ptspans again)", src, rows, want);
	/* An uncompressed spans.jsonl has only this checksum: a changed
	 * byte would otherwise be indexed, and answered, as if whole. */
	if (rc == 0 && want_hash != NULL && (strncmp(want_hash, "0x", 2) != 0 ||
	    strtoull(want_hash + 2, NULL, 16) != hash))
		rc = error_set(e, ERR_FORMAT, "%s does not match the checksum "
		    "the manifest holds (%s %s): it was changed or damaged "
		    "(run ptspans again)", src, SPANDIR_M_SPANS_XXH64, want_hash);
	if (rc == 0)
		rc = spanidx_open_fd(&a->ix, fd, name, e);
	close(fd);
	if (rc < 0) {
		if (tmp[0] != '\0')
			unlink(tmp);
		return rc;
	}
	if (tmp[0] != '\0' && rename(tmp, dst) < 0) {
		/* The mapping outlives the name: answer from it anyway. */
		snprintf(a->unsaved, sizeof(a->unsaved), "%s", strerror(errno));
		unlink(tmp);
	}
	return 0;
}

/* ----------------------------------------------------------------- */
/* The walk */

struct frame {
	uint64_t row, id;
	uint32_t tid;
};

int
analysis_walk(const struct analysis *a,
    int (*visit)(void *ctx, const struct analysis_visit *v), void *ctx,
    struct error *e)
{
	const struct spanidx *ix = &a->ix;
	struct frame *st = NULL;
	uint64_t *rows = NULL;
	size_t n = 0, cap = 0;
	struct analysis_visit v;
	int rc = 0;

	for (uint64_t r = a->ix.rows; r-- > 0;) {
		uint64_t parent = spanidx_u64(ix, SPANIDX_PARENT, r);
		uint32_t tid = spanidx_u32(ix, SPANIDX_TID, r);

		while (n > 0 && (st[n - 1].id != parent || st[n - 1].tid != tid))
			n--;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct frame *ns = realloc(st, nc * sizeof(*ns));
			uint64_t *nr = realloc(rows, nc * sizeof(*nr));

			if (ns != NULL)
				st = ns;
			if (nr != NULL)
				rows = nr;
			if (ns == NULL || nr == NULL) {
				rc = error_set(e, ERR_NOMEM, "span stack");
				break;
			}
			cap = nc;
		}
		v.row = r;
		v.stack = rows;
		v.depth = n;
		if ((rc = visit(ctx, &v)) < 0)
			break;
		st[n].row = r;
		st[n].id = spanidx_u64(ix, SPANIDX_ID, r);
		st[n].tid = tid;
		rows[n] = r;
		n++;
	}
	free(st);
	free(rows);
	return rc;
}

int64_t
analysis_find_span(const struct analysis *a, uint64_t id)
{
	for (uint64_t r = 0; r < a->ix.rows; r++)
		if (spanidx_u64(&a->ix, SPANIDX_ID, r) == id)
			return (int64_t)r;
	return -1;
}
