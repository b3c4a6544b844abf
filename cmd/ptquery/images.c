/*
 * ptquery --kind images: what the snapshot holds and what was decoded
 * from it.  One row per image: each the snapshot's manifest lists (its
 * build-id, whether the recorder archived it and, when not, the reason
 * its warnings give; whether its symbols and DWARF were found, in the
 * image or as separate debuginfo) and each the spans name that the
 * manifest does not; with, from the analysis, the spans, functions and
 * instructions (the spans' own: every decoded instruction is in one
 * span's self_insns) of its code.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "tool/report.h"

static const struct col image_cols[] = {
	{ "spans", COL_U64, 0 }, { "functions", COL_U64, 0 },
	{ "self_insns", COL_U64, 0 }, { "size", COL_U64, 0 },
	{ "archived", COL_STR, 0 }, { "symbols", COL_STR, 0 },
	{ "dwarf", COL_STR, 0 }, { "debug", COL_STR, 0 },
	{ "build_id", COL_STR, 0 }, { "why", COL_STR, 0 },
	{ "path", COL_STR, 0 },
};

struct image_row {
	const char *path;		/* the manifest's, a warning's or the
					   analysis's: they outlive the rows */
	char *why;			/* owned */
	char *owned_path;		/* a warning's path, owned */
	const char *build_id, *symbols, *dwarf, *debug;
	int archived;
	uint64_t size, spans, functions, self_insns;
	uint32_t module;		/* string offset in the index, 0 none */
};

struct images {
	struct image_row *row;
	size_t n, cap;
	char debug_buf[4096];
};

static void
image_get(void *ctx, size_t i, union cell *c)
{
	const struct image_row *r = &((struct images *)ctx)->row[i];

	c[0].u = r->spans;
	c[1].u = r->functions;
	c[2].u = r->self_insns;
	c[3].u = r->size;
	c[4].s = r->archived ? "yes" : "no";
	c[5].s = r->symbols ? r->symbols : "-";
	c[6].s = r->dwarf ? r->dwarf : "-";
	c[7].s = r->debug ? r->debug : "-";
	c[8].s = r->build_id ? r->build_id : "-";
	c[9].s = r->why ? r->why : "-";
	c[10].s = r->path;
}

static struct image_row *
image_row(struct images *im, const char *path)
{
	for (size_t i = 0; i < im->n; i++)
		if (strcmp(im->row[i].path, path) == 0)
			return &im->row[i];
	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 32;
		struct image_row *n = realloc(im->row, cap * sizeof(*n));

		if (n == NULL)
			return NULL;
		im->row = n;
		im->cap = cap;
	}
	memset(&im->row[im->n], 0, sizeof(*im->row));
	im->row[im->n].path = path;
	return &im->row[im->n++];
}

/* What the symbol tables of an archived image found. */
static void
image_symbols(struct query_images *qi, struct image_row *r)
{
	const struct symtab *st;
	struct symtab_stats ss;

	if (query_image_open(qi, r->path, &st, NULL, 0) < 0) {
		r->symbols = "unreadable";
		return;
	}
	symtab_get_stats(st, &ss);
	r->symbols = ss.symbol_source;
	r->dwarf = ss.has_dwarf ? "yes" : "no";
	r->debug = symtab_debug_path(st) != NULL ? "separate" : ss.has_dwarf ?
	    "in_image" : "none";
}

/* "image PATH not archived: WHY", as the recorder warns. */
static int
image_warnings(struct query_images *qi, struct images *im)
{
	static const char mark[] = " not archived: ";

	for (size_t i = 0; i < qi->m.nr_warnings; i++) {
		const char *w = qi->m.warnings[i], *at;
		struct image_row *r;
		char *path;

		if (strncmp(w, "image ", 6) != 0 ||
		    (at = strstr(w, mark)) == NULL)
			continue;
		if ((path = strndup(w + 6, (size_t)(at - w - 6))) == NULL)
			return -1;
		if ((r = image_row(im, path)) == NULL) {
			free(path);
			return -1;
		}
		if (r->path == path)
			r->owned_path = path;
		else
			free(path);
		if (r->why == NULL && (r->why = strdup(at + strlen(mark))) == NULL)
			return -1;
	}
	return 0;
}

int
kind_images(const struct analysis *a, const struct query_options *o)
{
	const struct spanidx *ix = &a->ix;
	struct query_images qi;
	struct images im = { NULL, 0, 0, "" };
	struct table t = { "images", image_cols, 11, 0, &im, image_get, NULL,
	    "" };
	size_t archived = 0, debug = 0, top = SIZE_MAX;
	int rc = EXIT_FAIL;

	if (o->format > F_JSON) {
		report(query_tool, "--format", "use text, table, csv or json",
		    "this format does not apply to --kind images");
		return EXIT_USAGE;
	}
	if (query_images_open(&qi, a) < 0)
		goto out;
	for (size_t i = 0; i < qi.m.nr_images; i++) {
		const struct manifest_image *mi = &qi.m.images[i];
		struct image_row *r = image_row(&im, mi->path);

		if (r == NULL)
			goto nomem;
		r->archived = mi->archived != NULL;
		r->build_id = mi->build_id;
		r->size = mi->size;
		if (r->archived)
			image_symbols(&qi, r);
	}
	if (image_warnings(&qi, &im) < 0)
		goto nomem;
	/* What the analysis decoded in each. */
	for (uint64_t row = 0; row < ix->rows; row++) {
		uint32_t mod = spanidx_u32(ix, SPANIDX_MODULE, row);
		const char *path = mod ? spanidx_str(ix, mod) : "-";
		uint64_t st = spanidx_u64(ix, SPANIDX_START_NS, row);
		struct image_row *r;

		/* --tid, --pid, the window: the spans that start in it */
		if (!query_tid_ok(o, spanidx_u32(ix, SPANIDX_TID, row)) ||
		    st < o->from_ns || st >= o->to_ns)
			continue;
		if ((r = image_row(&im, path)) == NULL)
			goto nomem;
		if (r->spans == 0 && !r->archived && r->why == NULL &&
		    manifest_find_image(&qi.m, path) == NULL &&
		    (r->why = strdup(mod ? "not in the snapshot's manifest" :
		    "code of no image")) == NULL)
			goto nomem;
		r->spans++;
		r->self_insns += spanidx_u64(ix, SPANIDX_SELF_INSNS, row);
	}
	/* functions: distinct names per image */
	{
		json_t *seen = json_object();
		char key[32];

		if (seen == NULL)
			goto nomem;
		for (uint64_t row = 0; row < ix->rows; row++) {
			uint64_t st = spanidx_u64(ix, SPANIDX_START_NS, row);
			uint32_t md = spanidx_u32(ix, SPANIDX_MODULE, row);
			struct image_row *r;

			if (!query_tid_ok(o, spanidx_u32(ix, SPANIDX_TID,
			    row)) || st < o->from_ns || st >= o->to_ns)
				continue;
			snprintf(key, sizeof(key), "%" PRIu32 ":%" PRIu32, md,
			    spanidx_u32(ix, SPANIDX_FN, row));
			if (json_object_get(seen, key) != NULL)
				continue;
			if (json_object_set_new(seen, key, json_true()) < 0 ||
			    (r = image_row(&im, md ? spanidx_str(ix,
			    md) : "-")) == NULL) {
				json_decref(seen);
				goto nomem;
			}
			r->functions++;
		}
		json_decref(seen);
	}
	/* --module, --exclude-module: those images' rows */
	for (size_t i = 0, k = 0; i < im.n; i++) {
		if (query_module_ok(o, im.row[i].path)) {
			struct image_row tmp = im.row[k];

			im.row[k] = im.row[i];
			im.row[i] = tmp;
			k++;
		}
		t.nrows = k;
	}
	for (size_t i = 0; i < t.nrows; i++) {
		struct image_row *r = &im.row[i];

		archived += r->archived;
		debug += r->dwarf != NULL && strcmp(r->dwarf, "yes") == 0;
		if (r->self_insns > 0 && (top == SIZE_MAX ||
		    r->self_insns > im.row[top].self_insns))
			top = i;
	}
	snprintf(t.summary, sizeof(t.summary), "%zu images, %zu archived, %zu "
	    "with DWARF; most instructions in %s (%" PRIu64 " of %" PRIu64
	    " decoded)", t.nrows, archived, debug, top == SIZE_MAX ? "none" :
	    im.row[top].path, top == SIZE_MAX ? 0 : im.row[top].self_insns,
	    analysis_manifest_u64(a, "quality.insns", 0));
	rc = table_print(&t, o);
	goto out;
nomem:
	report(query_tool, NULL, NULL, "out of memory");
	rc = EXIT_FAIL;
out:
	for (size_t i = 0; i < im.n; i++) {
		free(im.row[i].why);
		free(im.row[i].owned_path);
	}
	free(im.row);
	query_images_close(&qi);
	return rc;
}
