/*
 * lib/analysis and lib/aggregate on a small index written with the
 * spanidx writer, beside its manifest: the walk's ancestor stacks,
 * hotpaths figures (recursion counted once in total_ns), module grouping, filters,
 * callers and callees, and opening errors.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "span/aggregate.h"
#include "span/analysis.h"
#include "tap.h"

/* Thread 1: main [0,100) > work [10,50) > leaf [20,40);
 * main > work [60,90) > work [70,80).  Thread 2: main [5,25) (ring start)
 * > leaf [10,20).  In the order spans end, as ptspans writes them. */
static const struct {
	uint64_t id, parent;
	uint32_t tid;
	int32_t depth;
	const char *fn;
	uint64_t start, end, self;
	uint8_t cause;
} spans[] = {
	{ 3, 2, 1, 2, "leaf", 20, 40, 20, 0 },
	{ 2, 1, 1, 1, "work", 10, 50, 20, 0 },
	{ 5, 4, 1, 2, "work", 70, 80, 10, 0 },
	{ 4, 1, 1, 1, "work", 60, 90, 20, 0 },
	{ 1, 0, 1, 0, "main", 0, 100, 30, 0 },
	{ 7, 6, 2, 1, "leaf", 10, 20, 10, 0 },
	{ 6, 0, 2, 0, "main", 5, 25, 10, 1 },
};
#define NSPANS (sizeof(spans) / sizeof(spans[0]))

static int
write_index(const char *dir)
{
	struct spanidx_writer *w;
	struct spanidx_row r;
	struct error e;
	char path[256];
	char text[256];
	size_t len;
	int short_write;
	FILE *f;

	if (spanidx_writer_new(&w, &e) < 0)
		return -1;
	for (size_t i = 0; i < NSPANS; i++) {
		memset(&r, 0, sizeof(r));
		r.id = spans[i].id;
		r.parent = spans[i].parent;
		r.tid = r.pid = spans[i].tid;
		r.depth = spans[i].depth;
		r.fn = r.raw = spans[i].fn;
		r.module = strcmp(spans[i].fn, "leaf") ? "/bin/a" : "/lib/b";
		r.start_ns = spans[i].start;
		r.end_ns = spans[i].end;
		r.self_ns = spans[i].self;
		r.insns = 2 * (spans[i].end - spans[i].start);
		r.self_insns = 2 * spans[i].self;
		r.start = spans[i].cause;
		if (spanidx_add(w, &r, &e) < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	if ((f = fopen(path, "w")) == NULL) {
		spanidx_writer_free(w);
		return -1;
	}
	/* Sealed as ptspans seals it (span/spandir). */
	len = (size_t)snprintf(text, sizeof(text),
	    "{\"v\":%d,\"quality\":{\"spans\":%zu},",
	    SPANDIR_MANIFEST_VERSION, NSPANS);
	spandir_manifest_tail(text, len, text + len);
	len += SPANDIR_MANIFEST_TAIL;
	short_write = fwrite(text, 1, len, f) != len;
	if (fclose(f) != 0 || short_write) {
		spanidx_writer_free(w);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/index.bin", dir);
	return spanidx_writer_finish(w, path, &e);
}

struct walk_log {
	const struct analysis *a;
	char text[512];
};

/* Logs "id:ancestor ids" per visit. */
static int
log_visit(void *ctx, const struct analysis_visit *v)
{
	struct walk_log *l = ctx;
	size_t n = strlen(l->text);

	n += (size_t)snprintf(l->text + n, sizeof(l->text) - n, "%s%" PRIu64
	    ":", n ? " " : "", spanidx_u64(&l->a->ix, SPANIDX_ID, v->row));
	for (size_t i = 0; i < v->depth; i++)
		n += (size_t)snprintf(l->text + n, sizeof(l->text) - n, "%"
		    PRIu64, spanidx_u64(&l->a->ix, SPANIDX_ID, v->stack[i]));
	return 0;
}

static const struct agg_row *
row_named(const struct agg *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->row[i].name, name) == 0)
			return &g->row[i];
	return NULL;
}

static void
test_hotpaths(const struct analysis *a)
{
	struct agg g;
	struct agg_filter f = { .from_ns = 0, .to_ns = UINT64_MAX,
	    .incomplete = 1 };
	struct error e;
	const struct agg_row *r;

	IS_INT(agg_hotpaths(&g, a, AGG_FUNCTION, &f, &e), 0, "hotpaths");
	IS_INT(g.n, 3, "three functions");
	r = row_named(&g, "work");
	OK(r != NULL, "work");
	if (r != NULL) {
		IS_U64(r->calls, 3, "work calls");
		IS_U64(r->total_ns, 70, "work total: the inner work once");
		IS_U64(r->self_ns, 50, "work self");
		IS_U64(r->insns, 140, "work insns, outermost");
		IS_U64(r->sum_ns, 80, "work durations summed");
		IS_U64(r->max_ns, 40, "work longest");
		IS_STR(r->module, "/bin/a", "work module");
	}
	r = row_named(&g, "main");
	if (r != NULL) {
		IS_U64(r->calls, 1, "main: one call seen, one ring start");
		IS_U64(r->spans, 2, "main spans");
		IS_U64(r->total_ns, 120, "main total");
	}
	IS_U64(g.incomplete_spans, 0, "incomplete spans counted when asked");
	agg_free(&g);

	/* Without incomplete, the ring start's span is left out, and said. */
	f.incomplete = 0;
	IS_INT(agg_hotpaths(&g, a, AGG_FUNCTION, &f, &e), 0,
	    "hotpaths, complete spans");
	r = row_named(&g, "main");
	OK(r != NULL, "main, complete");
	if (r != NULL) {
		IS_U64(r->spans, 1, "main spans: the ring start's left out");
		IS_U64(r->self_ns, 30, "main self: the complete span's");
		IS_U64(r->total_ns, 100, "main total: the complete span's");
		IS_U64(r->incomplete, 1, "main: one span left out of it");
	}
	IS_U64(g.incomplete_spans, 1, "one incomplete span left out");
	IS_U64(g.incomplete_self_ns, 10, "its self time");
	agg_free(&g);

	f.has_tid = 1;
	f.tid = 2;
	IS_INT(agg_hotpaths(&g, a, AGG_MODULE, &f, &e), 0, "modules, tid 2");
	IS_INT(g.n, 2, "two modules on thread 2");
	r = row_named(&g, "/lib/b");
	if (r != NULL)
		IS_U64(r->self_ns, 10, "thread 2's leaf");
	agg_free(&g);

	f.has_tid = 0;
	f.from_ns = 60;
	f.to_ns = 75;
	IS_INT(agg_hotpaths(&g, a, AGG_FUNCTION, &f, &e), 0, "window");
	r = row_named(&g, "work");
	OK(r != NULL && r->spans == 2 && r->total_ns == 30,
	    "spans starting in [60, 75): the outer work only counts total");
	agg_free(&g);
}

static void
test_calls(const struct analysis *a)
{
	struct agg callers, callees;
	struct agg_filter f = { .from_ns = 0, .to_ns = UINT64_MAX };
	struct error e;
	const struct agg_row *r;

	IS_INT(agg_calls(&callers, &callees, a, "work", &f, &e), 0, "calls");
	IS_INT(callers.n, 2, "main and work call work");
	r = row_named(&callers, "main");
	OK(r != NULL && r->calls == 2 && r->total_ns == 70, "main calls");
	r = row_named(&callers, "work");
	OK(r != NULL && r->calls == 1 && r->total_ns == 10, "work calls");
	IS_INT(callees.n, 2, "work calls leaf and work");
	r = row_named(&callees, "leaf");
	OK(r != NULL && r->calls == 1 && r->self_ns == 20, "leaf callee");
	agg_free(&callers);
	agg_free(&callees);
	IS_INT(agg_calls(&callers, &callees, a, "nope", &f, &e),
	    -ERR_NOTFOUND, "unknown function");
	IS_STR(e.msg, "no function named 'nope'", "its message");
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[200], path[256];
	struct walk_log log;
	struct analysis a;
	struct error e;

	snprintf(dir, sizeof(dir), "%s/t_aggregate.XXXXXX", tmp && *tmp &&
	    strlen(tmp) < 150 ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL || write_index(dir) < 0) {
		OK(0, "fixture");
		return tap_done();
	}
	IS_INT(analysis_open(&a, dir, &e), 0, "open");
	IS_STR(a.rebuilt, "", "nothing rebuilt");
	IS_U64(analysis_rows(&a), NSPANS, "rows");
	memset(&log, 0, sizeof(log));
	log.a = &a;
	IS_INT(analysis_walk(&a, log_visit, &log, &e), 0, "walk");
	IS_STR(log.text, "6: 7:6 1: 4:1 5:14 2:1 3:12",
	    "every span after its ancestors, with them");
	test_hotpaths(&a);
	test_calls(&a);
	IS_INT(analysis_find_span(&a, 5), 2, "span 5 is row 2");
	IS_INT(analysis_find_span(&a, 99), -1, "no span 99");
	analysis_close(&a);

	IS_INT(analysis_open(&a, "/nonexistent/x", &e), -ERR_NOTFOUND,
	    "missing directory");
	IS_STR(e.msg, "no such directory", "its message");
	snprintf(path, sizeof(path), "%s/index.bin", dir);
	unlink(path);
	IS_INT(analysis_open(&a, dir, &e), -ERR_NOTFOUND, "empty directory");
	IS_STR(e.msg, "not an analysis directory (no spans.jsonl, no "
	    "index.bin)", "its message");
	rmdir(dir);
	return tap_done();
}
