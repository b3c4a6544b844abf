/*
 * ptquery --kind source: where code is in the source.  For --address
 * (MODULE+OFFSET, a file offset as ptkit names unnamed frames, or an
 * absolute address of the snapshot's mappings) the function holding it
 * and the chain of inlined calls at it, outermost first, each with the
 * file:line where the code of that level is (a call site for the outer
 * levels, the line table's row for the innermost); for --function its
 * entry, and each place the function was inlined.  Read from the DWARF
 * of the images the snapshot archived (lib/sym), not from the analysis.
 * Also the snapshot's directory and images for the images kind.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/manifest.h"
#include "fmt/perfdata.h"
#include "fmt/snapshot.h"
#include "fmt/store.h"
#include "span/spandir.h"
#include "sym/symcache.h"
#include "query.h"
#include "tool/report.h"

#define SOURCE_MAX_DEPTH 64		/* inline levels shown */

int
query_snapshot_dir(const struct analysis *a, char *snap, size_t size)
{
	struct error e;

	if (store_analysis_source(a->dir, analysis_manifest_str(a,
	    SPANDIR_M_SNAPSHOT, ""), snap, size, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		return -1;
	}
	if (snap[0] == '\0') {
		report(query_tool, a->dir, NULL, "names no snapshot");
		return -1;
	}
	return 0;
}

int
query_image_open(struct query_images *qi, const char *mapped,
    const struct symtab **st, char *archived, size_t size)
{
	const struct manifest_image *im = manifest_find_image(&qi->m, mapped);
	struct error e;
	char *path = NULL;
	int rc;

	*st = NULL;
	if (archived != NULL && size > 0)
		archived[0] = '\0';
	if (im == NULL || im->archived == NULL ||
	    snapshot_member(qi->snap, im->archived, &path, &e) < 0)
		return -1;
	if (archived != NULL && size > 0)
		snprintf(archived, size, "%s", path);
	rc = symcache_get(qi->sc, path, 0, st, &e);
	free(path);
	return rc < 0 ? -1 : 0;
}

int
query_images_open(struct query_images *qi, const struct analysis *a)
{
	struct symtab_options so = { 0 };
	struct error e;

	memset(qi, 0, sizeof(*qi));
	manifest_init(&qi->m);
	if (query_snapshot_dir(a, qi->snap, sizeof(qi->snap)) < 0)
		return -1;
	if (snapshot_read_manifest(qi->snap, &qi->m, &e) < 0) {
		report_error(query_tool, qi->snap, &e, NULL);
		return -1;
	}
	/* A snapshot archives separate debuginfo in perf's layout. */
	snprintf(qi->debug_dir, sizeof(qi->debug_dir), "%s/images", qi->snap);
	qi->dirs[0] = qi->debug_dir;
	so.debug_dirs = qi->dirs;
	so.n_debug_dirs = 1;
	/* The archived images (and their debuginfo) open beneath it. */
	so.root = qi->snap;
	if ((qi->sc = symcache_new(&so)) == NULL) {
		report(query_tool, NULL, NULL, "out of memory");
		return -1;
	}
	return 0;
}

void
query_images_close(struct query_images *qi)
{
	symcache_free(qi->sc);
	manifest_free(&qi->m);
}

/* ----------------------------------------------------------------- */

static const struct col source_cols[] = {
	{ "site", COL_U64, 1 }, { "depth", COL_U64, 1 },
	{ "line", COL_U64, 1 }, { "column", COL_U64, 1 },
	{ "elf_addr", COL_HEX, 1 }, { "ip", COL_HEX, 1 },
	{ "file", COL_STR, 0 }, { "module", COL_STR, 0 },
	{ "function", COL_STR, 0 },
};

struct source_row {
	uint64_t site, depth, line, column, elf_addr, ip;
	const char *file, *module, *function;	/* owned by tables, or
						   by the analysis */
};

struct source {
	const struct analysis *a;
	const struct query_options *o;
	struct query_images qi;
	struct source_row *row;
	size_t n, cap;
	uint64_t sites;
	uint32_t *seen_calls;		/* inlined calls found (call_id) */
	size_t n_seen;
};

static void
source_get(void *ctx, size_t i, union cell *c)
{
	const struct source_row *r = &((struct source *)ctx)->row[i];

	c[0].u = r->site;
	c[1].u = r->depth;
	c[2].u = r->line;
	c[3].u = r->column;
	c[4].u = r->elf_addr;
	c[5].u = r->ip;
	c[6].s = r->file ? r->file : "-";
	c[7].s = r->module;
	c[8].s = r->function;
}

static int
source_add(struct source *s, const struct source_row *r)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct source_row *n = realloc(s->row, cap * sizeof(*n));

		if (n == NULL)
			return -1;
		s->row = n;
		s->cap = cap;
	}
	s->row[s->n++] = *r;
	return 0;
}

/*
 * The rows of one site: elf address addr of image st (mapped as module),
 * runtime ip (0 unknown), the function fn holding it and the inlined
 * calls at it from inl (innermost) outwards.
 */
static int
source_site(struct source *s, const struct symtab *st, const char *module,
    const struct sym *fn, const struct sym_inline *inl, uint64_t addr,
    uint64_t ip)
{
	const struct sym_inline *chain[SOURCE_MAX_DEPTH];
	struct source_row r = { s->sites, 0, 0, 0, addr, ip, NULL, module,
	    fn ? fn->name : "?" };
	struct sym_line l;
	size_t n = 0;

	for (; inl != NULL && n < SOURCE_MAX_DEPTH; inl = inl->parent)
		chain[n++] = inl;
	/* Outermost first: the function, at the first call's site. */
	for (size_t k = 0; k <= n; k++) {
		const struct sym_inline *below = k < n ? chain[n - 1 - k] :
		    NULL;

		r.depth = k;
		if (k > 0)
			r.function = chain[n - k]->name;
		if (below != NULL) {
			r.file = below->call_file;
			r.line = below->call_line;
			r.column = below->call_column;
		} else if (symtab_line(st, addr, &l) == 1) {
			r.file = l.file;
			r.line = l.line;
			r.column = l.column;
		} else {
			r.file = NULL;
			r.line = r.column = 0;
		}
		if (source_add(s, &r) < 0)
			return -1;
	}
	s->sites++;
	return 0;
}

/* ----------------------------------------------------------------- */
/* --address */

/* A runtime address of the snapshot's mappings: the image and its
 * mapping (the last that holds it, of --pid when given). */
static int
address_absolute(struct source *s, uint64_t ip)
{
	char path[PATH_MAX + 32];
	const struct perfdata_mmap *hit = NULL;
	const struct symtab *st;
	struct perfdata *pd = NULL;
	struct sym_mapping sm;
	struct error e;
	uint64_t addr;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/perf.data", s->qi.snap);
	if (perfdata_read(&pd, path, &e) < 0) {
		report_error(query_tool, s->qi.snap, &e, NULL);
		return -1;
	}
	for (size_t i = 0; i < pd->nr_mmaps; i++) {
		const struct perfdata_mmap *m = &pd->mmaps[i];

		if (ip >= m->addr && ip - m->addr < m->len &&
		    (!s->o->has_pid || m->pid == s->o->pid))
			hit = m;
	}
	if (hit == NULL) {
		report(query_tool, s->o->address, NULL, "no mapping of the "
		    "snapshot holds this address%s", s->o->has_pid ? " in "
		    "that process" : "");
	} else if (query_image_open(&s->qi, hit->filename, &st, NULL, 0) < 0) {
		report(query_tool, s->o->address, NULL, "in %s, which the "
		    "snapshot did not archive (see --kind images)",
		    hit->filename);
	} else {
		sm.start = hit->addr;
		sm.end = hit->addr + hit->len;
		sm.pgoff = hit->pgoff;
		if (symtab_addr_from_map(st, &sm, ip, &addr) < 0) {
			report(query_tool, s->o->address, NULL, "in %s, outside "
			    "its loaded segments", hit->filename);
		} else {
			/* the name outlives pd: the manifest's copy */
			const struct manifest_image *im = manifest_find_image(
			    &s->qi.m, hit->filename);

			rc = source_site(s, st, im->path, symtab_lookup(st,
			    addr), symtab_inline_at(st, addr), addr, ip);
			if (rc < 0)
				report(query_tool, NULL, NULL, "out of memory");
		}
	}
	perfdata_free(pd);
	return rc;
}

/* MODULE+OFFSET: a file offset in an image the snapshot holds. */
static int
address_in_module(struct source *s, const char *spec, const char *plus)
{
	char name[PATH_MAX], *end;
	const struct manifest_image *im = NULL;
	const struct symtab *st;
	uint64_t off, addr;

	snprintf(name, sizeof(name), "%.*s", (int)(plus - spec), spec);
	errno = 0;
	off = strtoull(plus + 1, &end, 0);
	if (errno != 0 || *end != '\0' || end == plus + 1) {
		report(query_tool, "--address", "give MODULE+0xOFFSET or 0xADDR",
		    "'%s': not an offset", plus + 1);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < s->qi.m.nr_images; i++)
		if (query_module_is(s->qi.m.images[i].path, name)) {
			im = &s->qi.m.images[i];
			break;
		}
	if (im == NULL) {
		report(query_tool, "--address", "see --kind images", "the "
		    "snapshot holds no image '%s'", name);
		return EXIT_FAIL;
	}
	if (query_image_open(&s->qi, im->path, &st, NULL, 0) < 0) {
		report(query_tool, im->path, NULL, "cannot be read from the "
		    "snapshot");
		return EXIT_FAIL;
	}
	if (symtab_addr_from_offset(st, off, &addr) < 0) {
		report(query_tool, "--address", NULL, "offset 0x%" PRIx64 " is "
		    "in no loaded segment of %s", off, im->path);
		return EXIT_FAIL;
	}
	if (source_site(s, st, im->path, symtab_lookup(st, addr),
	    symtab_inline_at(st, addr), addr, 0) < 0) {
		report(query_tool, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* ----------------------------------------------------------------- */
/* --function */

/* The inlined calls of name inside function host of st: a site each. */
static int
inlined_sites(struct source *s, const struct symtab *st, const char *module,
    const struct sym *host, const char *name)
{
	uint64_t addr = host->addr, lo, hi;

	while (addr < host->addr + host->size) {
		const struct sym_inline *in = symtab_inline_span(st, addr, &lo,
		    &hi), *at;
		size_t k;

		for (at = in; at != NULL; at = at->parent)
			if (strcmp(at->name, name) == 0 || strcmp(at->raw,
			    name) == 0)
				break;
		if (at != NULL) {
			for (k = 0; k < s->n_seen && s->seen_calls[k] !=
			    at->call_id; k++)
				;
			if (k == s->n_seen) {
				uint32_t *g = realloc(s->seen_calls,
				    (s->n_seen + 1) * sizeof(*g));

				if (g == NULL)
					return -1;
				s->seen_calls = g;
				s->seen_calls[s->n_seen++] = at->call_id;
				/* the call's first range: its entry */
				if (source_site(s, st, module, host, at,
				    at->lo, 0) < 0)
					return -1;
			}
		}
		if (hi <= addr)
			break;
		addr = hi;
	}
	return 0;
}

/* Each distinct (module, function) among the spans matching: visit. */
struct fn_ref {
	uint32_t fn, module;
	uint64_t entry, pid;
};

static int
fn_refs(const struct analysis *a, int (*match)(const struct analysis *,
    uint64_t, const void *), const void *arg, struct fn_ref **out,
    size_t *n)
{
	const struct spanidx *ix = &a->ix;
	struct fn_ref *refs = NULL, *g;
	size_t k;

	*n = 0;
	for (uint64_t r = 0; r < ix->rows; r++) {
		uint32_t fn = spanidx_u32(ix, SPANIDX_FN, r);
		uint32_t mod = spanidx_u32(ix, SPANIDX_MODULE, r);

		if (!match(a, r, arg))
			continue;
		for (k = 0; k < *n && (refs[k].fn != fn ||
		    refs[k].module != mod); k++)
			;
		if (k < *n)
			continue;
		if ((g = realloc(refs, (*n + 1) * sizeof(*g))) == NULL) {
			free(refs);
			return -1;
		}
		refs = g;
		refs[*n].fn = fn;
		refs[*n].module = mod;
		refs[*n].entry = spanidx_u64(ix, SPANIDX_ENTRY, r);
		refs[*n].pid = spanidx_u32(ix, SPANIDX_PID, r);
		(*n)++;
	}
	*out = refs;
	return 0;
}

static int
match_fn(const struct analysis *a, uint64_t r, const void *arg)
{
	return spanidx_u32(&a->ix, SPANIDX_FN, r) == *(const uint32_t *)arg;
}

struct host_set {
	const struct agg_host *h;
	size_t n;
};

static int
match_host(const struct analysis *a, uint64_t r, const void *arg)
{
	const struct host_set *hs = arg;

	return agg_host_find(hs->h, hs->n, spanidx_u64(&a->ix, SPANIDX_ID,
	    r)) != NULL;
}

static int
source_function(struct source *s)
{
	const struct analysis *a = s->a;
	struct agg_host *hosts = NULL;
	struct host_set hs;
	struct fn_ref *refs = NULL;
	size_t n = 0;
	struct error e;
	int64_t off;
	uint32_t fn;
	int rc = EXIT_FAIL;

	/* Its own code: the entry of each module's copy. */
	if (!s->o->function_inline &&
	    (off = agg_find_string(a, s->o->function)) >= 0) {
		fn = (uint32_t)off;
		if (fn_refs(a, match_fn, &fn, &refs, &n) < 0)
			goto nomem;
		for (size_t i = 0; i < n; i++) {
			const char *mod = spanidx_str(&a->ix, refs[i].module);
			const struct symtab *st;
			const struct sym *sym;

			if (!query_module_ok(s->o, mod) ||
			    query_image_open(&s->qi, mod, &st, NULL, 0) < 0 ||
			    (sym = symtab_find(st, s->o->function)) == NULL)
				continue;
			if (source_site(s, st, mod, sym, NULL, sym->addr,
			    refs[i].entry) < 0)
				goto nomem;
		}
		free(refs);
		refs = NULL;
	}
	/* Where it was inlined: the functions of the spans holding it. */
	if (agg_inline_hosts(a, s->o->function, NULL, &hosts, &hs.n, &e) <
	    0) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	hs.h = hosts;
	if (hs.n > 0 && fn_refs(a, match_host, &hs, &refs, &n) < 0)
		goto nomem;
	for (size_t i = 0; hs.n > 0 && i < n; i++) {
		const char *mod = spanidx_str(&a->ix, refs[i].module);
		const char *host = spanidx_str(&a->ix, refs[i].fn);
		const struct symtab *st;
		const struct sym *sym;

		if (!query_module_ok(s->o, mod) ||
		    query_image_open(&s->qi, mod, &st, NULL, 0) < 0 ||
		    (sym = symtab_find(st, host)) == NULL)
			continue;
		if (inlined_sites(s, st, mod, sym, s->o->function) < 0)
			goto nomem;
	}
	if (s->n == 0)
		report(query_tool, a->dir, "is the image archived? see --kind "
		    "images", "no source position of '%s' in the snapshot's "
		    "images", s->o->function);
	else
		rc = EXIT_OK;
	free(refs);
	free(hosts);
	return rc;
nomem:
	free(refs);
	free(hosts);
	report(query_tool, NULL, NULL, "out of memory");
	return EXIT_FAIL;
}

/* The one-line summary: the first site's chain, outermost first. */
static void
source_summary(const struct source *s, char *buf, size_t size)
{
	size_t len, i;

	if (s->o->address != NULL)
		len = (size_t)snprintf(buf, size, "%s:", s->o->address);
	else
		len = (size_t)snprintf(buf, size, "%s: %" PRIu64 " site%s; "
		    "the first:", s->o->function, s->sites, s->sites == 1 ?
		    "" : "s");
	for (i = 0; i < s->n && s->row[i].site == 0 && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s %s at %s:%"
		    PRIu64, i ? " >" : "", s->row[i].function, s->row[i].file ?
		    s->row[i].file : "?", s->row[i].line);
	if (i > 1 && len < size)
		snprintf(buf + len, size - len, " (outermost first, inlined "
		    "calls after the function)");
}

int
kind_source(const struct analysis *a, const struct query_options *o)
{
	struct source s;
	struct table t = { "source", source_cols, 9, 0, &s, source_get, NULL,
	    "" };
	const char *plus;
	int rc;

	if (o->format > F_JSON) {
		report(query_tool, "--format", "use text, table, csv or json",
		    "this format does not apply to --kind source");
		return EXIT_USAGE;
	}
	if ((o->function == NULL) == (o->address == NULL)) {
		report(query_tool, "--kind source", NULL, "needs --function "
		    "NAME or --address MODULE+OFFSET|ADDR (one of them)");
		return EXIT_USAGE;
	}
	memset(&s, 0, sizeof(s));
	s.a = a;
	s.o = o;
	if (query_images_open(&s.qi, a) < 0) {
		query_images_close(&s.qi);
		return EXIT_FAIL;
	}
	if (o->function != NULL) {
		rc = source_function(&s);
	} else if ((plus = strrchr(o->address, '+')) != NULL) {
		rc = address_in_module(&s, o->address, plus);
	} else {
		char *end;
		uint64_t ip;

		errno = 0;
		ip = strtoull(o->address, &end, 0);
		if (errno != 0 || *end != '\0' || end == o->address) {
			report(query_tool, "--address", "give MODULE+0xOFFSET "
			    "or 0xADDR", "'%s' is not an address", o->address);
			rc = EXIT_USAGE;
		} else {
			rc = address_absolute(&s, ip) < 0 ? EXIT_FAIL : EXIT_OK;
		}
	}
	if (rc == EXIT_OK) {
		t.nrows = s.n;
		source_summary(&s, t.summary, sizeof(t.summary));
		rc = table_print(&t, o);
	}
	free(s.row);
	free(s.seen_calls);
	query_images_close(&s.qi);
	return rc;
}
