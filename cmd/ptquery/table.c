/*
 * ptquery: row tables in the text, table, csv and json formats, sorted
 * and paged.  A page is rendered into memory first, so --max-bytes can
 * shrink it until it fits and still end with a valid document.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "query.h"
#include "tool/report.h"

struct sort_key {
	uint64_t key;
	size_t row;
};

static int
by_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

static void
sort_usage(const struct table *t, const char *name)
{
	char list[512] = "";
	size_t len = 0;

	for (size_t c = 0; c < t->ncols; c++)
		if (t->cols[c].type != COL_STR && len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len,
			    "%s%s", len ? "|" : "", t->cols[c].name);
	report(query_tool, "--sort", NULL, "'%s' is not a numeric column of "
	    "%s (%s)", name, t->kind, list);
}

int
table_sort(struct table *t, const char *name)
{
	union cell *cells;
	struct sort_key *k;
	size_t c;

	if (strcmp(name, "start") == 0)
		name = "start_ns";
	for (c = 0; c < t->ncols; c++)
		if (strcmp(t->cols[c].name, name) == 0 &&
		    t->cols[c].type != COL_STR)
			break;
	if (c == t->ncols) {
		sort_usage(t, name);
		return EXIT_USAGE;
	}
	cells = calloc(t->ncols, sizeof(*cells));
	k = malloc((t->nrows ? t->nrows : 1) * sizeof(*k));
	free(t->order);
	t->order = malloc((t->nrows ? t->nrows : 1) * sizeof(*t->order));
	if (cells == NULL || k == NULL || t->order == NULL) {
		free(cells);
		free(k);
		report(query_tool, NULL, NULL, "out of memory");
		return EXIT_FAIL;
	}
	for (size_t r = 0; r < t->nrows; r++) {
		uint64_t v;

		t->get(t->ctx, r, cells);
		v = t->cols[c].type == COL_I64 ?
		    (uint64_t)cells[c].i ^ (1ull << 63) : cells[c].u;
		k[r].key = t->cols[c].ascending ? v : ~v;
		k[r].row = r;
	}
	qsort(k, t->nrows, sizeof(*k), by_key);
	for (size_t r = 0; r < t->nrows; r++)
		t->order[r] = k[r].row;
	free(k);
	free(cells);
	return 0;
}

int
query_cursor(const struct query_options *o, size_t nrows, size_t *first)
{
	const char *s = o->cursor;
	char *end;
	unsigned long long v;

	*first = 0;
	if (s == NULL)
		return 0;
	if (s[0] == 'o' && s[1] >= '0' && s[1] <= '9') {
		v = strtoull(s + 1, &end, 10);
		if (*end == '\0' && v <= nrows) {
			*first = (size_t)v;
			return 0;
		}
	}
	report(query_tool, "--cursor", "use the next_cursor of the previous "
	    "page", "'%s' is not a cursor of this query", s);
	return EXIT_USAGE;
}

/* ----------------------------------------------------------------- */
/* Cells */

static void
cell_text(const struct col *c, const union cell *v, char *buf, size_t size)
{
	switch (c->type) {
	case COL_U64:
		snprintf(buf, size, "%" PRIu64, v->u);
		break;
	case COL_I64:
		snprintf(buf, size, "%" PRId64, v->i);
		break;
	case COL_HEX:
		snprintf(buf, size, "0x%" PRIx64, v->u);
		break;
	case COL_STR:
		snprintf(buf, size, "%s", v->s ? v->s : "");
		break;
	}
}

static void
csv_field(FILE *f, const char *s)
{
	if (strpbrk(s, ",\"\n\r") == NULL) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* ----------------------------------------------------------------- */
/* Formats: each writes rows [first, first + n) of t to f. */

struct page {
	struct table *t;
	size_t first, n;
	const char *next;		/* next_cursor, or NULL */
	union cell *cells;
	const char *clock;		/* how times were kept, or NULL */
};

static size_t
page_row(const struct page *p, size_t i)
{
	size_t r = p->first + i;

	return p->t->order ? p->t->order[r] : r;
}

static void
render_text(FILE *f, const struct page *p)
{
	char buf[4096];

	for (size_t i = 0; i < p->n; i++) {
		p->t->get(p->t->ctx, page_row(p, i), p->cells);
		for (size_t c = 0; c < p->t->ncols; c++) {
			cell_text(&p->t->cols[c], &p->cells[c], buf,
			    sizeof(buf));
			fprintf(f, "%s%s=%s", c ? " " : "", p->t->cols[c].name,
			    buf);
		}
		fputc('\n', f);
	}
	if (p->t->note != NULL)
		fprintf(f, "note=%s\n", p->t->note);
	if (p->next != NULL)
		fprintf(f, "next_cursor=%s\n", p->next);
}

static void
render_table(FILE *f, const struct page *p)
{
	size_t w[64] = { 0 }, nc = p->t->ncols < 64 ? p->t->ncols : 64;
	char buf[4096];

	for (size_t c = 0; c < nc; c++)
		w[c] = strlen(p->t->cols[c].name);
	for (size_t i = 0; i < p->n; i++) {
		p->t->get(p->t->ctx, page_row(p, i), p->cells);
		for (size_t c = 0; c < nc; c++) {
			cell_text(&p->t->cols[c], &p->cells[c], buf,
			    sizeof(buf));
			if (strlen(buf) > w[c])
				w[c] = strlen(buf);
		}
	}
	for (size_t c = 0; c < nc; c++)
		fprintf(f, c + 1 < nc ? (p->t->cols[c].type == COL_STR ?
		    "%-*s  " : "%*s  ") : "%-*s\n", c + 1 < nc ? (int)w[c] : 0,
		    p->t->cols[c].name);
	for (size_t i = 0; i < p->n; i++) {
		p->t->get(p->t->ctx, page_row(p, i), p->cells);
		for (size_t c = 0; c < nc; c++) {
			cell_text(&p->t->cols[c], &p->cells[c], buf,
			    sizeof(buf));
			if (c + 1 == nc)
				fprintf(f, "%s\n", buf);
			else
				fprintf(f, p->t->cols[c].type == COL_STR ?
				    "%-*s  " : "%*s  ", (int)w[c], buf);
		}
	}
	if (p->t->note != NULL)
		fprintf(f, "note=%s\n", p->t->note);
	if (p->next != NULL)
		fprintf(f, "next_cursor=%s\n", p->next);
}

static void
render_csv(FILE *f, const struct page *p)
{
	char buf[4096];

	for (size_t c = 0; c < p->t->ncols; c++)
		fprintf(f, "%s,", p->t->cols[c].name);
	fputs("next_cursor\n", f);
	for (size_t i = 0; i < p->n; i++) {
		p->t->get(p->t->ctx, page_row(p, i), p->cells);
		for (size_t c = 0; c < p->t->ncols; c++) {
			cell_text(&p->t->cols[c], &p->cells[c], buf,
			    sizeof(buf));
			csv_field(f, buf);
			fputc(',', f);
		}
		fprintf(f, "%s\n", p->next ? p->next : "");
	}
}

static void
render_json(FILE *f, const struct page *p)
{
	struct jsonw w;
	char buf[64];

	jsonw_init(&w, f);
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "kind", p->t->kind);
	jsonw_kv_string(&w, "summary", p->t->summary);
	if (p->t->function != NULL)
		jsonw_kv_string(&w, "function", p->t->function);
	if (p->clock != NULL)
		jsonw_kv_string(&w, "clock", p->clock);
	if (p->t->note != NULL)
		jsonw_kv_string(&w, "note", p->t->note);
	jsonw_kv_u64(&w, "total_rows", p->t->total > p->t->nrows ?
	    p->t->total : p->t->nrows);
	jsonw_kv_u64(&w, "first_row", p->first);
	jsonw_key(&w, "rows");
	jsonw_array_begin(&w);
	for (size_t i = 0; i < p->n; i++) {
		p->t->get(p->t->ctx, page_row(p, i), p->cells);
		jsonw_object_begin(&w);
		for (size_t c = 0; c < p->t->ncols; c++) {
			const union cell *v = &p->cells[c];

			jsonw_key(&w, p->t->cols[c].name);
			switch (p->t->cols[c].type) {
			case COL_U64:
				jsonw_u64(&w, v->u);
				break;
			case COL_I64:
				jsonw_i64(&w, v->i);
				break;
			case COL_HEX:
				snprintf(buf, sizeof(buf), "0x%" PRIx64, v->u);
				jsonw_string(&w, buf);
				break;
			case COL_STR:
				jsonw_string(&w, v->s ? v->s : "");
				break;
			}
		}
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_key(&w, "next_cursor");
	if (p->next)
		jsonw_string(&w, p->next);
	else
		jsonw_null(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	/* A failed write stays in ferror(stdout): main's close reports it. */
	PTKIT_DROP(jsonw_finish(&w));
}

/* Renders n rows from first into a malloc'd buffer; its size in *len. */
static char *
render(struct table *t, const struct query_options *o, size_t first,
    size_t n, union cell *cells, size_t *len)
{
	char next[32];
	struct page p = { t, first, n, NULL, cells, o->clock };
	char *buf = NULL;
	FILE *f;

	if (first + n < t->nrows) {
		snprintf(next, sizeof(next), "o%zu", first + n);
		p.next = next;
	}
	if ((f = open_memstream(&buf, len)) == NULL)
		return NULL;
	switch (o->format) {
	case F_TABLE:
		render_table(f, &p);
		break;
	case F_CSV:
		render_csv(f, &p);
		break;
	case F_JSON:
		render_json(f, &p);
		break;
	default:
		render_text(f, &p);
		break;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int
table_print(struct table *t, const struct query_options *o)
{
	size_t first, n, lo, hi, len = 0;
	union cell *cells;
	char *out = NULL, *try;
	int rc;

	if ((rc = query_cursor(o, t->nrows, &first)) != 0)
		return rc;
	if (t->function == NULL)
		t->function = o->function;
	n = t->nrows - first;
	if (o->has_limit && o->limit < n)
		n = (size_t)o->limit;
	if ((cells = calloc(t->ncols, sizeof(*cells))) == NULL ||
	    (out = render(t, o, first, n, cells, &len)) == NULL)
		goto nomem;
	if (o->max_bytes > 0 && len > o->max_bytes) {
		/* The most rows whose rendering fits, at least one. */
		lo = 0;
		hi = n;
		while (lo + 1 < hi) {
			size_t mid = lo + (hi - lo) / 2, l;

			if ((try = render(t, o, first, mid, cells, &l)) == NULL)
				goto nomem;
			free(try);
			if (l <= o->max_bytes)
				lo = mid;
			else
				hi = mid;
		}
		free(out);
		out = NULL;
		if (lo == 0 && n > 0) {
			/* No row: a cursor that does not advance. */
			if ((try = render(t, o, first, 1, cells, &len)) ==
			    NULL)
				goto nomem;
			free(try);
			free(cells);
			report(query_tool, "--max-bytes", "give a larger "
			    "budget", "%" PRIu64 " bytes do not hold row %zu, "
			    "which needs %zu", o->max_bytes, first, len);
			return EXIT_USAGE;
		}
		if ((out = render(t, o, first, lo, cells, &len)) == NULL)
			goto nomem;
	}
	fwrite(out, 1, len, stdout);
	free(out);
	free(cells);
	return EXIT_OK;
nomem:
	free(out);
	free(cells);
	report(query_tool, NULL, NULL, "out of memory");
	return EXIT_FAIL;
}
