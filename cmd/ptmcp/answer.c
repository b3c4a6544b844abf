/* answer: see answer.h. */
#include "answer.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

#define LINE_ROWS 3		/* rows named in a summary line */

/* A summary line being written: what does not fit is cut. */
struct line {
	char *buf;
	size_t size, len;
};

static void __attribute__((format(printf, 2, 3)))
line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len + 1 >= l->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, l->size - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n < l->size - l->len ? (size_t)n :
		    l->size - l->len - 1;
}

static size_t
dumped_size(const json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t n = text != NULL ? strlen(text) : 0;

	free(text);
	return n;
}

size_t
answer_fit_rows(json_t *out, json_t *rows, size_t budget)
{
	size_t n = json_array_size(rows), lo = 1, hi = n, dropped;
	json_t *all;

	if (n <= 1 || dumped_size(out) <= budget)
		return 0;
	/* The most rows that fit, found by halving, from a copy. */
	if ((all = json_copy(rows)) == NULL)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;

		json_array_clear(rows);
		for (size_t i = 0; i < mid; i++)
			json_array_append(rows, json_array_get(all, i));
		if (dumped_size(out) <= budget)
			lo = mid;
		else
			hi = mid - 1;
	}
	json_array_clear(rows);
	for (size_t i = 0; i < lo; i++)
		json_array_append(rows, json_array_get(all, i));
	json_decref(all);
	dropped = n - lo;
	return dropped;
}

void
answer_cursor(size_t next_row, char *buf, size_t size)
{
	snprintf(buf, size, "o%zu", next_row);
}

int
answer_cursor_parse(const char *s, size_t *row)
{
	char *end;
	unsigned long long v;

	if (s == NULL || s[0] != 'o' || s[1] < '0' || s[1] > '9')
		return -1;
	v = strtoull(s + 1, &end, 10);
	if (*end != '\0')
		return -1;
	*row = (size_t)v;
	return 0;
}

/* A member as the line shows it: numbers, strings, else nothing. */
static void
line_value(struct line *l, const char *key, const json_t *v)
{
	if (json_is_integer(v))
		line_add(l, " %s=%" JSON_INTEGER_FORMAT, key,
		    json_integer_value(v));
	else if (json_is_real(v))
		line_add(l, " %s=%.6g", key, json_real_value(v));
	else if (json_is_string(v))
		line_add(l, " %s=%s", key, json_string_value(v));
}

/* The figures each kind's rows are named with in the line. */
static const char *const *
kind_figures(const char *kind)
{
	static const struct {
		const char *kind;
		const char *fig[5];
	} figs[] = {
		{ "hotpaths", { "self_ns", "total_ns", "calls", "self_insns" } },
		{ "calls", { "relation", "calls", "total_ns", "insns" } },
		{ "timeline", { "tid", "start_ns", "dur_ns", "insns",
		    "inline" } },
		{ "at", { "tid", "depth", "start_ns", "dur_ns" } },
		{ "branches", { "mnemonic", "taken", "not_taken", "target",
		    "line" } },
		{ "insns", { "time_ns", "ip", "insn", "line" } },
		{ "gaps", { "tid", "start_ns", "dur_ns", "cause" } },
		{ "threads", { "tid", "pid", "insns", "spans" } },
		{ "tree", { "depth", "calls", "total_ns", "insns" } },
		{ "source", { "site", "depth", "file", "line" } },
		{ "images", { "spans", "self_insns", "archived", "dwarf",
		    "why" } },
	};

	for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
		if (strcmp(figs[i].kind, kind) == 0)
			return figs[i].fig;
	return NULL;
}

static const char *
row_name(const json_t *row)
{
	static const char *const keys[] = { "name", "symbol", "fn", "path",
	    "function" };

	for (size_t i = 0; i < 5; i++)
		if (json_is_string(json_object_get(row, keys[i])))
			return json_string_value(json_object_get(row, keys[i]));
	return NULL;
}

/* How the times were kept, when the result says so. */
static void
line_clock(struct line *l, const char *clock)
{
	if (clock != NULL)
		line_add(l, " Times: %s; instruction counts are exact.", clock);
}

void
answer_query_line(const json_t *out, char *buf, size_t size)
{
	struct line l = { buf, size, 0 };
	const char *kind = json_string_value(json_object_get(out, "kind"));
	const json_t *res = json_object_get(out, "result");
	const json_t *rows = json_object_get(res, "rows"), *row, *top;
	const char *const *fig = kind_figures(kind ? kind : "");
	const char *sum = json_string_value(json_object_get(res, "summary"));
	const char *fn = json_string_value(json_object_get(res, "function"));
	const char *next = json_string_value(json_object_get(out,
	    "next_cursor"));
	size_t first = (size_t)json_integer_value(json_object_get(res,
	    "first_row")), n = json_array_size(rows), i;

	buf[0] = '\0';
	line_add(&l, "%s of %s", kind ? kind : "query", json_string_value(
	    json_object_get(out, "snapshot_id")));
	if (sum != NULL)
		line_add(&l, ": %s", sum);
	if (fn != NULL)
		line_add(&l, " (function %s)", fn);
	line_add(&l, ".");
	if (json_is_array(rows)) {
		if (n > 0) {
			line_add(&l, " Rows %zu-%zu", first + 1, first + n);
			if (json_is_integer(json_object_get(res, "total_rows")))
				line_add(&l, " of %" JSON_INTEGER_FORMAT,
				    json_integer_value(json_object_get(res,
				    "total_rows")));
			line_add(&l, ":");
		} else
			line_add(&l, " No rows.");
		json_array_foreach(rows, i, row) {
			if (i == LINE_ROWS)
				break;
			line_add(&l, "%s %s", i ? ";" : "", row_name(row) ?
			    row_name(row) : "-");
			for (size_t f = 0; fig != NULL && f < 5 && fig[f]; f++)
				line_value(&l, fig[f], json_object_get(row,
				    fig[f]));
		}
		if (n > 0)
			line_add(&l, "%s.", n > LINE_ROWS ? "; ..." : "");
	}
	top = json_object_get(res, "top");
	if (json_array_size(top) > 0) {
		line_add(&l, " Top by self time:");
		json_array_foreach(top, i, row) {
			line_add(&l, "%s %s", i ? "," : "",
			    row_name(row) ? row_name(row) : "-");
			line_value(&l, "self_ns", json_object_get(row,
			    "self_ns"));
			line_value(&l, "calls", json_object_get(row, "calls"));
		}
		line_add(&l, ".");
	}
	/* how to read the rows (branches' taken, a tree's pruned paths) */
	if (json_is_string(json_object_get(res, "note")))
		line_add(&l, " Note: %s.", json_string_value(json_object_get(res,
		    "note")));
	line_clock(&l, json_string_value(json_object_get(out, "clock")));
	if (json_is_true(json_object_get(out, "truncated")))
		line_add(&l, " Cut to fit 8 KB.");
	if (next != NULL)
		line_add(&l, " More rows: call again with cursor %s.", next);
	else if (json_is_array(rows))
		line_add(&l, " Last page.");
}

/* a -> b of a compare row in its class metric: "192077->255716". */
static void
line_change(struct line *l, const json_t *row, const char *metric)
{
	const json_t *a = json_object_get(json_object_get(row, "a"), metric);
	const json_t *b = json_object_get(json_object_get(row, "b"), metric);
	const json_t *d = json_object_get(row, "delta");

	line_add(l, " %s", json_string_value(json_object_get(row, "fn")));
	if (json_is_number(d))
		line_add(l, " %+.6g %s", json_number_value(d), metric);
	if (json_is_number(a) && json_is_number(b))
		line_add(l, " (%.6g->%.6g)", json_number_value(a),
		    json_number_value(b));
}

/* The rows of class cls in report, by name, the first LINE_ROWS. */
static void
line_class(struct line *l, const json_t *rows, const char *cls,
    const char *metric)
{
	const json_t *row;
	size_t i, n = 0, shown = 0;

	json_array_foreach(rows, i, row)
		n += strcmp(json_string_value(json_object_get(row, "class")) ?
		    json_string_value(json_object_get(row, "class")) : "",
		    cls) == 0;
	if (n == 0)
		return;
	line_add(l, " %s %zu:", cls, n);
	json_array_foreach(rows, i, row) {
		const char *c = json_string_value(json_object_get(row,
		    "class"));

		if (c == NULL || strcmp(c, cls) != 0)
			continue;
		if (shown++ == LINE_ROWS) {
			line_add(l, ", ...");
			break;
		}
		if (shown > 1)
			line_add(l, ",");
		line_change(l, row, metric);
	}
	line_add(l, ".");
}

void
answer_compare_line(const json_t *report, const json_t *out,
    int with_bounds, char *buf, size_t size)
{
	struct line l = { buf, size, 0 };
	const json_t *cmp = json_object_get(report, "comparable");
	const json_t *sum = json_object_get(report, "summary");
	const json_t *rows = json_object_get(report, "rows");
	const char *metric = json_string_value(json_object_get(cmp,
	    "class_by"));
	const char *times = json_string_value(json_object_get(cmp, "times"));
	const char *next = json_string_value(json_object_get(out,
	    "next_cursor"));
	const json_t *page = json_object_get(json_object_get(out,
	    "comparison"), "rows");
	size_t first = (size_t)json_integer_value(json_object_get(out,
	    "first_row"));

	buf[0] = '\0';
	line_add(&l, "%s -> %s:", json_string_value(json_object_get(out, "a")),
	    json_string_value(json_object_get(out, "b")));
	if (json_is_object(sum))
		line_add(&l, " %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT
		    " functions changed", json_integer_value(json_object_get(
		    sum, "changed")), json_integer_value(json_object_get(sum,
		    "rows")));
	if (metric != NULL)
		line_add(&l, " (judged by %s; times %s)", metric, times ?
		    times : "unknown");
	if (json_is_object(sum) || metric != NULL)
		line_add(&l, ".");
	if (metric != NULL) {
		line_class(&l, rows, "slower", metric);
		line_class(&l, rows, "faster", metric);
		line_class(&l, rows, "new", metric);
		line_class(&l, rows, "vanished", metric);
	}
	if (json_integer_value(json_object_get(sum, "noise")) > 0)
		line_add(&l, " %" JSON_INTEGER_FORMAT " more changed within "
		    "the noise band of %" JSON_INTEGER_FORMAT " instructions "
		    "(threads make runs differ): counted as same.",
		    json_integer_value(json_object_get(sum, "noise")),
		    json_integer_value(json_object_get(cmp, "noise_insns")));
	/* Crossing is said of bounds that were given, or crossed. */
	if (json_is_object(sum) && (with_bounds || json_integer_value(
	    json_object_get(sum, "crossed")) > 0))
		line_add(&l, " %" JSON_INTEGER_FORMAT " crossed a fail_on "
		    "bound.", json_integer_value(json_object_get(sum,
		    "crossed")));
	line_clock(&l, json_string_value(json_object_get(out, "clock")));
	line_add(&l, " Report %s", json_string_value(json_object_get(out,
	    "report_id")));
	if (json_array_size(page) > 0)
		line_add(&l, ": rows %zu-%zu of %" JSON_INTEGER_FORMAT, first + 1,
		    first + json_array_size(page), json_integer_value(
		    json_object_get(out, "total_rows")));
	line_add(&l, ".");
	if (next != NULL)
		line_add(&l, " More rows: call again with report_id and cursor "
		    "%s.", next);
}

/* Replaces the n bytes at p (inside msg) with with. */
static char *
splice(char *msg, size_t size, char *p, size_t n, const char *with)
{
	size_t wl = strlen(with), tail = strlen(p + n);

	if ((size_t)(p - msg) + wl + tail + 1 > size)
		return p + n;		/* would not fit: left as it was */
	memmove(p + wl, p + n, tail + 1);
	memcpy(p, with, wl);
	return p + wl;
}

/* An option starts at p: not inside a longer word. */
static int
word_at(const char *msg, const char *p, const char *word)
{
	size_t n = strlen(word);
	char after = p[n];

	return strncmp(p, word, n) == 0 && (p == msg || (p[-1] != '-' &&
	    (p[-1] < 'a' || p[-1] > 'z'))) && !(after == '-' ||
	    (after >= 'a' && after <= 'z'));
}

void
answer_in_call_words(char *msg, size_t size, const char *root,
    const struct tool_word *words)
{
	char prefix[PATH_MAX + 16], with[128];
	char *p, *end;
	size_t k, len;

	/* root/snapshots/ID[/derived/AID[/rest]] */
	snprintf(prefix, sizeof(prefix), "%s/snapshots/", root);
	len = strlen(prefix);
	while ((p = strstr(msg, prefix)) != NULL) {
		end = p + len;
		k = strcspn(end, "/: '\"");
		if (strncmp(end + k, "/derived/", 9) == 0) {
			size_t a = strcspn(end + k + 9, "/: '\"");

			snprintf(with, sizeof(with), "snapshot %.*s analysis "
			    "%.*s", (int)k, end, (int)a, end + k + 9);
			if (strncmp(end + k + 9, ".tmp-", 5) == 0)
				snprintf(with, sizeof(with), "snapshot %.*s "
				    "(its analysis being written)", (int)k,
				    end);
			k += 9 + a;
		} else {
			snprintf(with, sizeof(with), "snapshot %.*s", (int)k,
			    end);
		}
		/* "…/a" of an analysis being written: part of it. */
		if (strstr(with, "being written") != NULL &&
		    strncmp(end + k, "/a", 2) == 0 &&
		    strchr("/: '\"", end[k + 2]) != NULL)
			k += 2;
		splice(msg, size, p, len + k, with);
	}
	/* Anything else of the store: named from the store's top. */
	snprintf(prefix, sizeof(prefix), "%s/", root);
	while ((p = strstr(msg, prefix)) != NULL)
		splice(msg, size, p, strlen(prefix), "store:");
	for (p = msg; *p != '\0'; p++) {
		for (k = 0; words != NULL && words[k].cli != NULL; k++) {
			if (!word_at(msg, p, words[k].cli))
				continue;
			/* "option '--span'" is an argument now */
			if (p - msg >= 8 && strncmp(p - 8, "option '", 8) == 0)
				p = splice(msg, size, p - 8, 8, "argument '");
			p = splice(msg, size, p, strlen(words[k].cli),
			    words[k].arg) - 1;
			break;
		}
	}
}
