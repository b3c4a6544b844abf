/*
 * analysis: see analysis.h.
 */
#include "span/analysis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "fmt/store.h"
#include "span/spandir.h"
#include "base/json.h"

static int
is_dir(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Whether file f is in dir (its stat in *sb when sb is not NULL). */
static int
has(const char *dir, enum spandir_file f, struct stat *sb)
{
	char path[PATH_MAX + 64];
	struct stat tmp;

	return spandir_path(dir, f, path, sizeof(path), NULL) == 0 &&
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

/* Whether the open index must be rebuilt; says why in a->rebuilt. */
static int
index_stale(struct analysis *a)
{
	struct stat si, sj;
	uint64_t want;

	if (has(a->dir, SPANDIR_SPANS, &sj) &&
	    has(a->dir, SPANDIR_INDEX, &si) &&
	    (si.st_mtim.tv_sec < sj.st_mtim.tv_sec ||
	    (si.st_mtim.tv_sec == sj.st_mtim.tv_sec &&
	    si.st_mtim.tv_nsec < sj.st_mtim.tv_nsec))) {
		snprintf(a->rebuilt, sizeof(a->rebuilt),
		    "older than spans.jsonl");
		return 1;
	}
	want = analysis_manifest_u64(a, SPANDIR_M_SPANS, a->ix.rows);
	if (want != a->ix.rows && has(a->dir, SPANDIR_SPANS, NULL)) {
		snprintf(a->rebuilt, sizeof(a->rebuilt), "holds %" PRIu64
		    " spans, the manifest says %" PRIu64, a->ix.rows, want);
		return 1;
	}
	return 0;
}

/* The writer aligns every column; the array accessors rely on it. */
static int
columns_aligned(const struct spanidx *ix)
{
	for (unsigned c = 0; c < SPANIDX_NCOLS; c++)
		if ((uintptr_t)ix->col[c] % 8 != 0)
			return 0;
	return 1;
}

static int
open_index(struct analysis *a, struct error *e)
{
	char path[PATH_MAX + 16];
	struct error ie;
	int rc;

	if ((rc = spandir_path(a->dir, SPANDIR_INDEX, path, sizeof(path),
	    e)) < 0)
		return rc;
	rc = spanidx_open(&a->ix, path, &ie);
	if (rc == 0 && !columns_aligned(&a->ix)) {
		spanidx_close(&a->ix);
		rc = error_set(&ie, ERR_FORMAT, "columns not 8-byte aligned");
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
		if (rc < 0)
			*e = ie;
		return rc < 0 ? rc : error_set(e, ERR_INTERNAL, "stale");
	}
	if (analysis_rebuild_index(a->dir, e) < 0)
		return -e->code;
	if ((rc = spanidx_open(&a->ix, path, e)) < 0)
		return rc;
	return 0;
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
		rc = beneath_check(a->dir, spandir_file_name(f),
		    "the analysis directory", e);
		if (rc < 0 && rc != -ERR_NOTFOUND)
			return rc;
	}
	return 0;
}

int
analysis_open(struct analysis *a, const char *path, struct error *e)
{
	char mpath[PATH_MAX + 16];
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = find_dir(a, path, e)) < 0 || (rc = check_files(a, e)) < 0)
		return rc;
	if ((rc = spandir_path(a->dir, SPANDIR_MANIFEST, mpath, sizeof(mpath),
	    e)) < 0)
		return rc;
	if (has(a->dir, SPANDIR_MANIFEST, NULL) &&
	    (a->manifest = json_read_file(mpath, e)) == NULL)
		return error_prefix(e, spandir_file_name(SPANDIR_MANIFEST));
	if ((rc = open_index(a, e)) < 0) {
		json_decref(a->manifest);
		a->manifest = NULL;
		return rc;
	}
	return 0;
}

void
analysis_close(struct analysis *a)
{
	spanidx_close(&a->ix);
	json_decref(a->manifest);
	a->manifest = NULL;
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
rebuild_from(FILE *in, struct spanidx_writer *w, struct error *e)
{
	struct spanidx_row row;
	json_error_t je;
	char *line = NULL;
	size_t cap = 0;
	uint64_t lineno = 0;
	int64_t rows = 0;
	ssize_t n;
	json_t *o;

	while ((n = getline(&line, &cap, in)) > 0) {
		lineno++;
		if ((o = json_loadb(line, (size_t)n, 0, &je)) == NULL ||
		    !json_is_object(o) || spandir_span_row(o, &row) < 0) {
			json_decref(o);
			free(line);
			return error_set(e, ERR_FORMAT, "spans.jsonl line %"
			    PRIu64 ": not a span record", lineno);
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
		return error_set_errno(e, errno, "%s",
		    spandir_file_name(SPANDIR_SPANS));
	return rows;
}

int64_t
analysis_rebuild_index(const char *dir, struct error *e)
{
	char src[PATH_MAX + 16], dst[PATH_MAX + 16], tmp[PATH_MAX + 32];
	struct spanidx_writer *w;
	FILE *in;
	int64_t rows;

	if (spandir_path(dir, SPANDIR_SPANS, src, sizeof(src), e) < 0 ||
	    spandir_path(dir, SPANDIR_INDEX, dst, sizeof(dst), e) < 0)
		return -e->code;
	snprintf(tmp, sizeof(tmp), "%s/.index.bin.%ld", dir, (long)getpid());
	if ((in = fopen(src, "re")) == NULL)
		return error_set_errno(e, errno, "%s",
		    spandir_file_name(SPANDIR_SPANS));
	if (spanidx_writer_new(&w, e) < 0) {
		fclose(in);
		return -e->code;
	}
	rows = rebuild_from(in, w, e);
	fclose(in);
	if (rows < 0) {
		spanidx_writer_free(w);
		return rows;
	}
	if (spanidx_writer_finish(w, tmp, e) < 0) {
		unlink(tmp);
		return -e->code;
	}
	if (rename(tmp, dst) < 0) {
		int err = errno;

		unlink(tmp);
		return error_set_errno(e, err, "%s",
		    spandir_file_name(SPANDIR_INDEX));
	}
	return rows;
}

/* ----------------------------------------------------------------- */
/* The walk */

struct frame {
	uint64_t row, id;
	uint32_t tid;
};

/*
 * A walk reads every page of the columns aggregates use, backwards: fault
 * them in ahead (one system call per column instead of a fault every few
 * pages).  Only advice: without MADV_POPULATE_READ nothing changes.
 */
static void
prefault(const struct analysis *a)
{
#ifdef MADV_POPULATE_READ
	static const unsigned cols[] = { SPANIDX_ID, SPANIDX_PARENT,
	    SPANIDX_TID, SPANIDX_FN, SPANIDX_MODULE, SPANIDX_START_NS,
	    SPANIDX_END_NS, SPANIDX_SELF_NS, SPANIDX_INSNS,
	    SPANIDX_SELF_INSNS, SPANIDX_START };
	static const unsigned width[] = { 8, 8, 4, 4, 4, 8, 8, 8, 8, 8, 1 };

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		uintptr_t p = (uintptr_t)a->ix.col[cols[i]];
		uintptr_t page = p & ~(uintptr_t)4095;

		(void)madvise((void *)page, p - page + a->ix.rows * width[i],
		    MADV_POPULATE_READ);
	}
#else
	(void)a;
#endif
}

int
analysis_walk(const struct analysis *a,
    int (*visit)(void *ctx, const struct analysis_visit *v), void *ctx,
    struct error *e)
{
	const uint64_t *parents = analysis_u64s(a, SPANIDX_PARENT);
	const uint64_t *ids = analysis_u64s(a, SPANIDX_ID);
	const uint32_t *tids = analysis_u32s(a, SPANIDX_TID);
	struct frame *st = NULL;
	uint64_t *rows = NULL;
	size_t n = 0, cap = 0;
	struct analysis_visit v;
	int rc = 0;

	prefault(a);
	for (uint64_t r = a->ix.rows; r-- > 0;) {
		uint64_t parent = parents[r];
		uint32_t tid = tids[r];

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
		st[n].id = ids[r];
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
