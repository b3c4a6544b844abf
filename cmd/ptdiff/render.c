/* render: see render.h. */
#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "base/error.h"
#include "base/jsonw.h"

/* Metrics every format prints for both sides, in this order. */
static const enum metric shown[] = {
	M_CALLS, M_TOTAL_NS, M_SELF_NS, M_INSNS, M_SELF_INSNS,
	M_MEAN_NS, M_MEAN_SELF_INSNS,
};
#define N_SHOWN (sizeof(shown) / sizeof(shown[0]))

/* Counts print as integers, means with one decimal. */
static void
print_value(FILE *out, enum metric m, double v)
{
	if (m == M_MEAN_NS || m == M_MEAN_SELF_NS || m == M_MEAN_INSNS ||
	    m == M_MEAN_SELF_INSNS)
		fprintf(out, "%.1f", v);
	else
		fprintf(out, "%.0f", v);
}

static void
print_pct(FILE *out, double pct)
{
	if (isinf(pct))
		fputs("+inf%", out);
	else
		fprintf(out, "%+.1f%%", pct);
}

static const char *
times_label(const struct comparison *c)
{
	if (c->times_virtual)
		return "virtual";
	return c->times_trusted ? "trusted" : "untrusted";
}

/* ---------------------------------------------------------------- text */

static void
text_row(FILE *out, const struct diff_row *r, enum metric cm)
{
	size_t i;

	fprintf(out, "row class=%s", row_class_name(r->cls));
	if (r->crossed) {
		fprintf(out, " crossed=%s:", metric_name(r->crossed_metric));
		print_pct(out, r->crossed_pct);
	}
	for (i = 0; i < N_SHOWN; i++) {
		fprintf(out, " %s_a=", metric_name(shown[i]));
		if (r->has_a)
			print_value(out, shown[i], r->a[shown[i]]);
		else
			fputc('-', out);
		fprintf(out, " %s_b=", metric_name(shown[i]));
		if (r->has_b)
			print_value(out, shown[i], r->b[shown[i]]);
		else
			fputc('-', out);
	}
	fprintf(out, " d_%s=", metric_name(cm));
	fprintf(out, "%+.1f", r->primary_delta);
	fprintf(out, " module=%s fn=%s", r->module, r->name);
	if (r->name_b != NULL)
		fprintf(out, " fn_b=%s paired_by=clone", r->name_b);
	if (r->noise)
		fputs(" within=noise", out);
	fputc('\n', out);
}

static void
render_text(FILE *out, const struct comparison *c)
{
	size_t i;

	fprintf(out, "compare a=%s b=%s\n", c->a.path, c->b.path);
	for (i = 0; i < c->n_checks; i++)
		fprintf(out, "check %s a=%s b=%s what=%s\n",
		    c->check[i].same ? "same" : "differs", c->check[i].a,
		    c->check[i].b, c->check[i].what);
	fprintf(out, "verdict times=%s insns=exact per_call=%s class_by=%s "
	    "noise_insns=%.0f deterministic=%s filtered_a=%zu filtered_b=%zu\n",
	    times_label(c), c->per_call ? "yes" : "no",
	    metric_name(c->class_metric), c->noise_insns,
	    c->deterministic ? "yes" : "no", c->n_filtered[0],
	    c->n_filtered[1]);
	for (i = 0; i < c->n; i++)
		text_row(out, &c->row[i], c->class_metric);
	fprintf(out, "summary rows=%zu changed=%zu crossed=%zu ignored=%zu\n",
	    c->n, c->n_changed, c->n_crossed, c->n_ignored);
}

/* ---------------------------------------------------------------- json */

static void
json_metric(struct jsonw *w, enum metric m, double v)
{
	jsonw_key(w, metric_name(m));
	if (m == M_MEAN_NS || m == M_MEAN_SELF_NS || m == M_MEAN_INSNS ||
	    m == M_MEAN_SELF_INSNS)
		jsonw_double(w, v);
	else
		jsonw_u64(w, (uint64_t)v);
}

static void
json_side(struct jsonw *w, const char *key, int has, const double *v)
{
	size_t i;

	jsonw_key(w, key);
	if (!has) {
		jsonw_null(w);
		return;
	}
	jsonw_object_begin(w);
	for (i = 0; i < M_COUNT; i++)
		json_metric(w, (enum metric)i, v[i]);
	jsonw_object_end(w);
}

static void
json_row(struct jsonw *w, const struct diff_row *r)
{
	jsonw_object_begin(w);
	jsonw_kv_string(w, "fn", r->name);
	if (r->name_b != NULL) {
		jsonw_kv_string(w, "fn_b", r->name_b);
		jsonw_kv_string(w, "paired_by", "clone");
	}
	jsonw_kv_string(w, "module", r->module);
	jsonw_kv_string(w, "class", row_class_name(r->cls));
	if (r->noise)
		jsonw_kv_bool(w, "within_noise", 1);
	json_side(w, "a", r->has_a, r->a);
	json_side(w, "b", r->has_b, r->b);
	jsonw_key(w, "delta");
	jsonw_double(w, r->primary_delta);
	jsonw_key(w, "crossed");
	if (r->crossed) {
		jsonw_object_begin(w);
		jsonw_kv_string(w, "metric", metric_name(r->crossed_metric));
		jsonw_key(w, "pct");
		jsonw_double(w, r->crossed_pct);	/* inf: null */
		jsonw_object_end(w);
	} else
		jsonw_null(w);
	jsonw_object_end(w);
}

static void
json_checks(struct jsonw *w, const struct comparison *c)
{
	size_t i;

	jsonw_key(w, "checks");
	jsonw_array_begin(w);
	for (i = 0; i < c->n_checks; i++) {
		jsonw_object_begin(w);
		jsonw_kv_string(w, "what", c->check[i].what);
		jsonw_kv_string(w, "a", c->check[i].a);
		jsonw_kv_string(w, "b", c->check[i].b);
		jsonw_kv_bool(w, "same", c->check[i].same);
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static int
render_json(FILE *out, const struct comparison *c)
{
	struct jsonw w;
	size_t i;

	jsonw_init(&w, out);
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "v", 1);
	jsonw_kv_string(&w, "a", c->a.path);
	jsonw_kv_string(&w, "b", c->b.path);
	jsonw_key(&w, "comparable");
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "times", times_label(c));
	jsonw_kv_string(&w, "insns", "exact");
	jsonw_kv_bool(&w, "per_call", c->per_call);
	jsonw_kv_string(&w, "class_by", metric_name(c->class_metric));
	jsonw_kv_bool(&w, "deterministic", c->deterministic);
	jsonw_kv_u64(&w, "noise_insns", (uint64_t)c->noise_insns);
	json_checks(&w, c);
	jsonw_object_end(&w);
	jsonw_key(&w, "rows");
	jsonw_array_begin(&w);
	for (i = 0; i < c->n; i++)
		json_row(&w, &c->row[i]);
	jsonw_array_end(&w);
	jsonw_key(&w, "summary");
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "rows", c->n);
	jsonw_kv_u64(&w, "changed", c->n_changed);
	jsonw_kv_u64(&w, "crossed", c->n_crossed);
	jsonw_kv_u64(&w, "ignored", c->n_ignored);
	jsonw_kv_u64(&w, "noise", c->n_noise);
	jsonw_kv_u64(&w, "filtered_a", c->n_filtered[0]);
	jsonw_kv_u64(&w, "filtered_b", c->n_filtered[1]);
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	return jsonw_finish(&w);
}

/* ----------------------------------------------------------------- csv */

/* RFC 4180 quoting: names hold commas (C++ parameter lists) and quotes. */
static void
csv_field(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void
render_csv(FILE *out, const struct comparison *c)
{
	size_t i, j;

	fputs("class,crossed_metric,crossed_pct", out);
	for (j = 0; j < N_SHOWN; j++)
		fprintf(out, ",%s_a,%s_b", metric_name(shown[j]),
		    metric_name(shown[j]));
	fputs(",delta,module,fn,fn_b\n", out);
	for (i = 0; i < c->n; i++) {
		const struct diff_row *r = &c->row[i];

		fprintf(out, "%s,%s,", row_class_name(r->cls),
		    r->crossed ? metric_name(r->crossed_metric) : "");
		if (r->crossed)
			print_pct(out, r->crossed_pct);
		for (j = 0; j < N_SHOWN; j++) {
			fputc(',', out);
			if (r->has_a)
				print_value(out, shown[j], r->a[shown[j]]);
			fputc(',', out);
			if (r->has_b)
				print_value(out, shown[j], r->b[shown[j]]);
		}
		fprintf(out, ",%.1f,", r->primary_delta);
		csv_field(out, r->module);
		fputc(',', out);
		csv_field(out, r->name);
		fputc(',', out);
		if (r->name_b != NULL)
			csv_field(out, r->name_b);
		fputc('\n', out);
	}
}

/* ------------------------------------------------------------ markdown */

#define MARKDOWN_MAX_ROWS 50

static void
md_text(FILE *out, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '|' || *s == '`' || *s == '*' || *s == '_' ||
		    *s == '<' || *s == '>')
			fputc('\\', out);
		fputc(*s, out);
	}
}

static void
md_pair(FILE *out, const struct diff_row *r, enum metric m)
{
	fputs(" | ", out);
	if (r->has_a)
		print_value(out, m, r->a[m]);
	else
		fputs("–", out);
	fputs(" → ", out);
	if (r->has_b)
		print_value(out, m, r->b[m]);
	else
		fputs("–", out);
}

static void
render_markdown(FILE *out, const struct comparison *c)
{
	size_t i, shown_rows = 0;

	fprintf(out, "### ptdiff: %zu changed, %zu crossed a bound\n\n",
	    c->n_changed, c->n_crossed);
	fprintf(out, "Times are **%s**; instruction counts are exact%s.\n\n",
	    times_label(c), c->per_call ?
	    "; the windows differ, so means per call are compared" : "");
	for (i = 0; i < c->n_checks; i++)
		if (!c->check[i].same)
			fprintf(out, "- %s differs: `%s` vs `%s`\n",
			    c->check[i].what, c->check[i].a, c->check[i].b);
	fputs("\n| function | module | class | calls | self_ns | "
	    "self_insns |\n|---|---|---|---|---|---|\n", out);
	for (i = 0; i < c->n && shown_rows < MARKDOWN_MAX_ROWS; i++) {
		const struct diff_row *r = &c->row[i];

		if (r->cls == C_SAME || r->cls == C_AMBIGUOUS)
			continue;
		shown_rows++;
		fputs("| ", out);
		md_text(out, r->name);
		if (r->name_b != NULL) {
			fputs(" (B: ", out);
			md_text(out, r->name_b);
			fputc(')', out);
		}
		fputs(" | ", out);
		md_text(out, r->module);
		fprintf(out, " | %s%s", row_class_name(r->cls),
		    r->crossed ? " ⚠" : "");
		md_pair(out, r, M_CALLS);
		md_pair(out, r, M_SELF_NS);
		md_pair(out, r, M_SELF_INSNS);
		fputs(" |\n", out);
	}
	if (c->n_changed > shown_rows)
		fprintf(out, "\n%zu more changed rows not shown.\n",
		    c->n_changed - shown_rows);
}

int
render_comparison(FILE *out, const struct comparison *c, enum diff_format f)
{
	switch (f) {
	case FMT_JSON:
		return render_json(out, c) < 0 ? -ERR_IO : 0;
	case FMT_CSV:
		render_csv(out, c);
		break;
	case FMT_MARKDOWN:
		render_markdown(out, c);
		break;
	default:
		render_text(out, c);
	}
	return ferror(out) ? -ERR_IO : 0;
}
