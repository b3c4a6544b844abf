/* inlines: see inlines.h. */
#include "inlines.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "query.h"
#include "span/spandir.h"
#include "tool/report.h"

static int
by_span(const void *a, const void *b)
{
	const struct inline_rec *x = a, *y = b;

	if (x->span != y->span)
		return x->span < y->span ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static uint64_t
member_u64(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

int
inlines_read(const struct analysis *a, struct inlines *in)
{
	char *line = NULL;
	const char *path;
	size_t cap = 0, rcap = 0;
	uint64_t lineno = 0;
	ssize_t len;
	struct error e;
	FILE *f;

	memset(in, 0, sizeof(*in));
	if ((f = analysis_open_jsonl(a, SPANDIR_INLINE, &path, &e)) == NULL) {
		if (e.code == ERR_NOTFOUND)
			return 0;	/* an analysis made with --no-inline */
		report_error(query_tool, a->dir, &e, NULL);
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		json_t *o = json_loadb(line, (size_t)len, 0, NULL);
		const json_t *fn = json_object_get(o, "fn");
		struct inline_rec *r;

		lineno++;
		if (!json_is_object(o) || !json_is_string(fn)) {
			report(query_tool, path, NULL, "line %" PRIu64 ": not "
			    "an inline record", lineno);
			goto fail_rec;
		}
		if (in->n == rcap) {
			size_t nc = rcap ? rcap * 2 : 256;

			if ((r = realloc(in->rec, nc * sizeof(*r))) == NULL)
				goto nomem;
			in->rec = r;
			rcap = nc;
		}
		r = &in->rec[in->n];
		r->id = member_u64(o, "id");
		r->span = member_u64(o, "span");
		r->parent = member_u64(o, "parent");
		r->insns = member_u64(o, "insns");
		r->depth = (uint32_t)member_u64(o, "depth");
		if ((r->fn = strdup(json_string_value(fn))) == NULL)
			goto nomem;
		in->n++;
		json_decref(o);
		continue;
nomem:
		report(query_tool, NULL, NULL, "out of memory");
fail_rec:
		json_decref(o);
		free(line);
		fclose(f);
		inlines_free(in);
		return -1;
	}
	free(line);
	if (ferror(f)) {	/* a damaged compressed file, or a read error */
		report(query_tool, a->dir, NULL, "%s: %s", path,
		    strerror(errno ? errno : EIO));
		fclose(f);
		inlines_free(in);
		return -1;
	}
	fclose(f);
	qsort(in->rec, in->n, sizeof(*in->rec), by_span);
	return 0;
}

void
inlines_free(struct inlines *in)
{
	for (size_t i = 0; i < in->n; i++)
		free(in->rec[i].fn);
	free(in->rec);
	memset(in, 0, sizeof(*in));
}

const struct inline_rec *
inlines_of(const struct inlines *in, uint64_t span, size_t *n)
{
	size_t lo = 0, hi = in->n, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (in->rec[mid].span < span)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo; end < in->n && in->rec[end].span == span; end++)
		;
	*n = end - lo;
	return *n ? &in->rec[lo] : NULL;
}

const struct inline_rec *
inlines_parent(const struct inline_rec *recs, size_t n, uint64_t id)
{
	for (size_t i = 0; id != 0 && i < n; i++)
		if (recs[i].id == id)
			return &recs[i];
	return NULL;
}
