/*
 * ptquery --kind summary: the capture window, each thread's covered
 * time, the trigger, the top functions by self time, the quality
 * counters and the gaps, in a few lines (text) or one object (json).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "fmt/manifest.h"
#include "query.h"
#include "tool/report.h"
#include "span/spandir.h"

#define SUMMARY_TOP 5

struct summary {
	const struct analysis *a;
	const struct query_options *o;	/* threads, top: its filters */
	const struct manifest *snap;	/* the snapshot's, NULL: unreadable */
	struct agg g;
	size_t top[SUMMARY_TOP];
	size_t ntop;
	uint64_t gaps, gap_ns;
	uint64_t *pid;			/* each covered thread's process */
	size_t nproc;			/* distinct values of pid[] */
};

static const char *const quality_keys[] = {
	"spans", "insns", "blocks", "spans_unnamed", "tail_calls", "signals",
	"unwound", "cut_frames", "ret_mismatch", "decode_errors", "overflows",
	"wrapped_threads", "images_missing", "inline_insns",
};

static void
summary_top(struct summary *s)
{
	for (size_t i = 0; i < s->g.n; i++) {
		size_t at;

		if (!query_module_ok(s->o, s->g.row[i].module))
			continue;
		at = s->ntop < SUMMARY_TOP ? s->ntop++ : SUMMARY_TOP;

		if (at == SUMMARY_TOP) {
			const struct agg_row *last =
			    &s->g.row[s->top[SUMMARY_TOP - 1]];

			if (s->g.row[i].self_ns <= last->self_ns)
				continue;
			at = SUMMARY_TOP - 1;
		}
		while (at > 0 && s->g.row[s->top[at - 1]].self_ns <
		    s->g.row[i].self_ns) {
			s->top[at] = s->top[at - 1];
			at--;
		}
		s->top[at] = i;
	}
}

static void
summary_gaps(struct summary *s)
{
	const json_t *q = json_object_get(s->a->manifest,
	    SPANDIR_M_QUALITY);
	const json_t *g = json_object_get(q, SPANDIR_Q_GAPS);
	const json_t *ns = json_object_get(q, SPANDIR_Q_GAP_NS);
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)g, k, v)
		s->gaps += (uint64_t)json_integer_value(v);
	json_object_foreach((json_t *)ns, k, v)
		s->gap_ns += (uint64_t)json_integer_value(v);
}

static uint64_t
window_ns(const struct summary *s)
{
	uint64_t st = analysis_manifest_u64(s->a, SPANDIR_M_CAPTURE_START,
	    0);
	uint64_t en = analysis_manifest_u64(s->a, SPANDIR_M_CAPTURE_END, 0);

	return en > st ? en - st : 0;
}

static const char *
trigger(const struct summary *s)
{
	return s->snap != NULL && s->snap->trigger.kind ? s->snap->trigger.kind :
	    "unknown";
}

/* Threads of the run the snapshot has no trace of (its warnings say why). */
static uint64_t
untraced(const struct summary *s)
{
	return s->snap != NULL ? manifest_untraced(s->snap) : 0;
}

/* How the times were kept (fmt/manifest), NULL for a hardware clock. */
static const char *
clock_note(const struct summary *s)
{
	return s->snap != NULL ? manifest_clock_note(s->snap) : NULL;
}

/* Processes of the run the snapshot has no trace of: children not
 * followed, programs exec'd (its warnings say which). */
static uint64_t
untraced_processes(const struct summary *s)
{
	return s->snap != NULL ? manifest_untraced_processes(s->snap) : 0;
}

static uint64_t
thread_tid(const json_t *t)
{
	return (uint64_t)json_integer_value(json_object_get(t,
	    SPANDIR_COV_TID));
}

/*
 * Each covered thread's process, from its first span in the index (0: a
 * thread without spans), in one pass that ends once every thread has
 * one; then how many processes they make.
 */
static int
summary_pids(struct summary *s)
{
	const struct analysis *a = s->a;
	const json_t *th = json_object_get(a->manifest, SPANDIR_M_THREADS);
	size_t n = json_array_size(th), left = n, i, j;
	uint64_t *tid;
	char *found;

	s->pid = calloc(n ? n : 1, sizeof(*s->pid));
	tid = calloc(n ? n : 1, sizeof(*tid));
	found = calloc(n ? n : 1, 1);
	if (s->pid == NULL || tid == NULL || found == NULL) {
		free(tid);
		free(found);
		return -1;
	}
	for (i = 0; i < n; i++)
		tid[i] = thread_tid(json_array_get(th, i));
	/* The kept aggregates know each thread's process. */
	for (i = 0; a->kept.base != NULL && i < n; i++)
		s->pid[i] = aggkeep_pid(&a->kept, (uint32_t)tid[i]);
	if (a->kept.base != NULL)
		left = 0;
	for (uint64_t r = 0; r < a->ix.rows && left > 0; r++) {
		uint64_t t = spanidx_u32(&a->ix, SPANIDX_TID, r);

		for (i = 0; i < n; i++)
			if (!found[i] && tid[i] == t) {
				s->pid[i] = spanidx_u32(&a->ix, SPANIDX_PID, r);
				found[i] = 1;
				left--;
			}
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && s->pid[j] != s->pid[i]; j++)
			;
		s->nproc += j == i;
	}
	free(tid);
	free(found);
	return 0;
}

static void
print_text(const struct summary *s)
{
	const struct analysis *a = s->a;
	const json_t *th = json_object_get(a->manifest, SPANDIR_M_THREADS);
	const json_t *t;
	size_t i;

	printf("analysis=%s snapshot=%s decoder=%s recorder=%s\n", a->dir,
	    analysis_manifest_str(a, SPANDIR_M_SNAPSHOT_ID, "-"),
	    analysis_manifest_str(a, SPANDIR_M_DECODER, "-"),
	    s->snap != NULL && s->snap->recorder.backend ?
	    s->snap->recorder.backend : "-");
	printf("capture window_ns=%" PRIu64 " trigger=%s processes=%zu",
	    window_ns(s), trigger(s), s->nproc);
	if (untraced_processes(s) > 0)
		printf(" untraced_processes=%" PRIu64, untraced_processes(s));
	printf(" threads=%zu", json_array_size(th));
	if (untraced(s) > 0)
		printf(" untraced=%" PRIu64, untraced(s));
	printf("\n");
	if (clock_note(s) != NULL)
		printf("clock: %s\n", clock_note(s));
	json_array_foreach(th, i, t) {
		uint64_t first = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_FIRST_NS));
		uint64_t last = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_LAST_NS));
		uint64_t gap = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_GAP_NS));

		if (!query_tid_ok(s->o, (uint32_t)thread_tid(t)))
			continue;
		printf("thread pid=%" PRIu64 " tid=%" PRIu64 " first_ns=%"
		    PRIu64 " last_ns=%" PRIu64 " covered_ns=%" PRIu64
		    " spans=%" PRIu64 "\n", s->pid[i],
		    thread_tid(t),
		    first, last, last - first > gap ? last - first - gap : 0,
		    (uint64_t)json_integer_value(json_object_get(t, SPANDIR_COV_SPANS)));
	}
	for (i = 0; i < s->ntop; i++) {
		const struct agg_row *r = &s->g.row[s->top[i]];

		printf("top rank=%zu self_ns=%" PRIu64 " calls=%" PRIu64
		    " total_ns=%" PRIu64 " name=%s\n", i + 1, r->self_ns,
		    r->calls, r->total_ns, r->name);
	}
	if (s->g.incomplete_spans > 0)
		printf("incomplete spans=%" PRIu64 " self_ns=%" PRIu64
		    " left out of top (--incomplete ranks them)\n",
		    s->g.incomplete_spans, s->g.incomplete_self_ns);
	printf("quality");
	for (i = 0; i < sizeof(quality_keys) / sizeof(quality_keys[0]); i++) {
		char path[64];

		snprintf(path, sizeof(path), SPANDIR_M_Q("%s"),
		    quality_keys[i]);
		printf(" %s=%" PRIu64, quality_keys[i],
		    analysis_manifest_u64(a, path, 0));
	}
	printf("\ngaps count=%" PRIu64 " gap_ns=%" PRIu64, s->gaps, s->gap_ns);
	{
		const json_t *g = json_object_get(json_object_get(a->manifest,
		    SPANDIR_M_QUALITY), SPANDIR_Q_GAPS);
		const char *k;
		json_t *v;

		json_object_foreach((json_t *)g, k, v)
			if (json_integer_value(v) != 0)
				printf(" %s=%" PRIu64, k,
				    (uint64_t)json_integer_value(v));
	}
	printf("\n");
}

/* Per thread: its first and last times and the time not in gaps. */
static void
json_threads(struct jsonw *w, const struct summary *s)
{
	const struct analysis *a = s->a;
	const json_t *th = json_object_get(a->manifest, SPANDIR_M_THREADS), *t;
	size_t i;

	jsonw_key(w, "threads");
	jsonw_array_begin(w);
	json_array_foreach(th, i, t) {
		uint64_t first = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_FIRST_NS));
		uint64_t last = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_LAST_NS));
		uint64_t gap = (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_GAP_NS));

		if (!query_tid_ok(s->o, (uint32_t)thread_tid(t)))
			continue;
		jsonw_object_begin(w);
		jsonw_kv_u64(w, "pid", s->pid[i]);
		jsonw_kv_u64(w, "tid", thread_tid(t));
		jsonw_kv_u64(w, "first_ns", first);
		jsonw_kv_u64(w, "last_ns", last);
		jsonw_kv_u64(w, "covered_ns", last - first > gap ?
		    last - first - gap : 0);
		jsonw_kv_u64(w, "spans", (uint64_t)json_integer_value(
		    json_object_get(t, SPANDIR_COV_SPANS)));
		jsonw_object_end(w);
	}
	jsonw_array_end(w);
}

static void
print_json(const struct summary *s)
{
	const struct analysis *a = s->a;
	struct jsonw w;
	char line[512], lost[48] = "", lost_procs[48] = "";
	size_t i;

	if (untraced(s) > 0)
		snprintf(lost, sizeof(lost), " (untraced %" PRIu64 ")",
		    untraced(s));
	if (untraced_processes(s) > 0)
		snprintf(lost_procs, sizeof(lost_procs), " (untraced %" PRIu64
		    ")", untraced_processes(s));
	snprintf(line, sizeof(line), "%" PRIu64 " ns captured%s (trigger %s), %"
	    PRIu64 " spans on %zu threads%s of %zu process%s%s, %" PRIu64
	    " gaps; top %s", window_ns(s),
	    clock_note(s) != NULL ? " (emulated clock)" : "", trigger(s),
	    analysis_rows(a),
	    json_array_size(json_object_get(a->manifest, SPANDIR_M_THREADS)),
	    lost, s->nproc, s->nproc == 1 ? "" : "es", lost_procs,
	    s->gaps, s->ntop ? s->g.row[s->top[0]].name : "-");
	jsonw_init(&w, stdout);
	jsonw_object_begin(&w);
	jsonw_kv_string(&w, "kind", "summary");
	jsonw_kv_string(&w, "summary", line);
	jsonw_kv_string(&w, "analysis", a->dir);
	jsonw_kv_string(&w, "snapshot_id",
	    analysis_manifest_str(a, SPANDIR_M_SNAPSHOT_ID, ""));
	jsonw_kv_string(&w, "trigger", trigger(s));
	if (clock_note(s) != NULL)
		jsonw_kv_string(&w, "clock", clock_note(s));
	jsonw_kv_u64(&w, "window_ns", window_ns(s));
	jsonw_key(&w, "top");
	jsonw_array_begin(&w);
	for (i = 0; i < s->ntop; i++) {
		const struct agg_row *r = &s->g.row[s->top[i]];

		jsonw_object_begin(&w);
		jsonw_kv_string(&w, "name", r->name);
		jsonw_kv_u64(&w, "self_ns", r->self_ns);
		jsonw_kv_u64(&w, "calls", r->calls);
		jsonw_kv_u64(&w, "total_ns", r->total_ns);
		jsonw_object_end(&w);
	}
	jsonw_array_end(&w);
	jsonw_key(&w, "incomplete");
	jsonw_object_begin(&w);
	jsonw_kv_u64(&w, "spans", s->g.incomplete_spans);
	jsonw_kv_u64(&w, "self_ns", s->g.incomplete_self_ns);
	jsonw_object_end(&w);
	jsonw_kv_u64(&w, "gaps", s->gaps);
	jsonw_kv_u64(&w, "gap_ns", s->gap_ns);
	jsonw_kv_u64(&w, "untraced", untraced(s));
	jsonw_kv_u64(&w, "untraced_processes", untraced_processes(s));
	json_threads(&w, s);
	jsonw_key(&w, "quality");
	jsonw_object_begin(&w);
	for (i = 0; i < sizeof(quality_keys) / sizeof(quality_keys[0]); i++) {
		char path[64];

		snprintf(path, sizeof(path), SPANDIR_M_Q("%s"),
		    quality_keys[i]);
		jsonw_kv_u64(&w, quality_keys[i],
		    analysis_manifest_u64(a, path, 0));
	}
	jsonw_object_end(&w);
	jsonw_object_end(&w);
	jsonw_newline(&w);
	/* A failed write stays in ferror(stdout): main's close reports it. */
	PTKIT_DROP(jsonw_finish(&w));
}

int
kind_summary(const struct analysis *a, const struct query_options *o)
{
	struct summary s;
	struct agg_filter f;
	struct error e;

	if (o->format != F_TEXT && o->format != F_TABLE &&
	    o->format != F_JSON) {
		report(query_tool, "--format", "use text, table or json",
		    "%s does not apply to --kind summary", o->format == F_CSV ?
		    "csv" : o->format == F_FOLDED ? "folded" :
		    o->format == F_CHROME ? "chrome" : "fxt");
		return EXIT_USAGE;
	}
	memset(&s, 0, sizeof(s));
	s.a = a;
	s.o = o;
	s.snap = o->snap;
	query_filter(o, &f);
	if (agg_hotpaths(&s.g, a, AGG_FUNCTION, &f, &e) < 0) {
		report_error(query_tool, a->dir, &e, NULL);
		return EXIT_FAIL;
	}
	summary_top(&s);
	summary_gaps(&s);
	if (summary_pids(&s) < 0) {
		report(query_tool, NULL, NULL, "out of memory");
		free(s.pid);
		agg_free(&s.g);
		return EXIT_FAIL;
	}
	if (o->format == F_JSON)
		print_json(&s);
	else
		print_text(&s);
	free(s.pid);
	agg_free(&s.g);
	return EXIT_OK;
}
