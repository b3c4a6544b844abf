/*
 * gen_analysis DIR SPANS [FUNCS [THREADS [jsonl]]]: writes a synthetic
 * analysis directory for ptquery's bench and tests: SPANS spans over
 * THREADS threads (default 4) calling FUNCS distinct functions (default
 * 1000) in trees of fan-out 3, depth up to 8, with exact times (every
 * span: 2 ns before its callees, 3 ns after; one instruction a ns).
 * index.bin, aggregates.bin, manifest.json, threads.jsonl and empty gaps.jsonl and
 * inline.jsonl are always written; spans.jsonl only with "jsonl" (at
 * 10 M spans it would take gigabytes the bench does not need).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fmt/spanidx.h"
#include "span/aggkeep.h"
#include "span/spandir.h"

struct gen {
	struct spanidx_writer *w;
	FILE *jsonl;
	uint64_t left, next_id, funcs, t;
	uint32_t tid;
	char names[2][64];
	struct error e;
	int bad;
};

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

static void
emit(struct gen *g, const struct spanidx_row *r)
{
	if (spanidx_add(g->w, r, &g->e) < 0)
		g->bad = 1;
	if (g->jsonl == NULL)
		return;
	fprintf(g->jsonl, "{\"v\":1,\"id\":%" PRIu64 ",\"tid\":%u,\"pid\":%u,"
	    "\"fn\":\"%s\",\"raw\":\"%s\",\"module\":\"%s\",\"depth\":%d,"
	    "\"parent\":", r->id, r->tid, r->pid, r->fn, r->fn, r->module,
	    r->depth);
	if (r->parent)
		fprintf(g->jsonl, "%" PRIu64, r->parent);
	else
		fputs("null", g->jsonl);
	fprintf(g->jsonl, ",\"call_site\":null,\"entry\":\"0x%" PRIx64 "\","
	    "\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"dur_ns\":%"
	    PRIu64 ",\"self_ns\":%" PRIu64 ",\"insns\":%" PRIu64
	    ",\"self_insns\":%" PRIu64 ",\"inline_insns\":0,\"start\":\"seen\","
	    "\"end\":\"seen\",\"tail_call\":false,\"async\":false}\n",
	    r->entry, r->start_ns, r->end_ns, r->end_ns - r->start_ns,
	    r->self_ns, r->insns, r->self_insns);
}

/* One call and its callees; returns its duration. */
static uint64_t
call(struct gen *g, int depth, uint64_t parent)
{
	struct spanidx_row r;
	uint64_t f, callees = 0;

	memset(&r, 0, sizeof(r));
	g->left--;
	r.id = g->next_id++;
	r.parent = parent;
	r.tid = r.pid = g->tid;
	r.depth = depth;
	r.start_ns = g->t;
	g->t += 2;
	for (int i = 0; i < 3 && depth < 7 && g->left > 0; i++)
		callees += call(g, depth + 1, r.id);
	g->t += 3;
	r.end_ns = g->t;
	f = mix(r.id * 7 + (uint64_t)depth) % g->funcs;
	snprintf(g->names[0], sizeof(g->names[0]), "fn_%" PRIu64, f);
	snprintf(g->names[1], sizeof(g->names[1]), "/bench/mod%" PRIu64 ".so",
	    f % 4);
	r.fn = g->names[0];
	r.raw = g->names[0];
	r.module = g->names[1];
	r.entry = 0x400000 + f * 64;
	r.self_ns = r.end_ns - r.start_ns - callees;
	r.insns = r.end_ns - r.start_ns;
	r.self_insns = r.self_ns;
	emit(g, &r);
	return r.end_ns - r.start_ns;
}

static int
write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	rc = fputs(text, f) < 0;
	return fclose(f) != 0 || rc ? -1 : 0;
}

int
main(int argc, char *argv[])
{
	static char threads[1 << 20], manifest[1 << 21];
	struct gen g;
	char path[4096];
	uint64_t total, nthreads, per;
	size_t tl = 0, ml = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: gen_analysis DIR SPANS [FUNCS [THREADS "
		    "[jsonl]]]\n");
		return 2;
	}
	memset(&g, 0, sizeof(g));
	total = strtoull(argv[2], NULL, 0);
	g.funcs = argc > 3 ? strtoull(argv[3], NULL, 0) : 1000;
	nthreads = argc > 4 ? strtoull(argv[4], NULL, 0) : 4;
	if (total == 0 || g.funcs == 0 || nthreads == 0 || nthreads > 10000 ||
	    (mkdir(argv[1], 0755) < 0) ||
	    spanidx_writer_new(&g.w, &g.e) < 0) {
		fprintf(stderr, "gen_analysis: bad arguments or %s exists\n",
		    argv[1]);
		return 1;
	}
	if (argc > 5 && strcmp(argv[5], "jsonl") == 0) {
		snprintf(path, sizeof(path), "%s/spans.jsonl", argv[1]);
		if ((g.jsonl = fopen(path, "w")) == NULL)
			return 1;
	}
	g.next_id = 1;
	ml = (size_t)snprintf(manifest, sizeof(manifest), "{\"v\":%d,"
	    "\"analysis_id\":\"default\",\"tool\":\"gen_analysis\","
	    "\"snapshot\":\"\",\"snapshot_id\":null,\"decoder\":\"native\","
	    "\"capture\":{\"start_ns\":0,\"end_ns\":0},\"quality\":{\"spans\":%"
	    PRIu64 ",\"gaps\":{},\"gap_ns\":{}},\"threads\":[",
	    SPANDIR_MANIFEST_VERSION, total);
	for (uint64_t t = 0; t < nthreads; t++) {
		per = total / nthreads + (t < total % nthreads);
		g.tid = (uint32_t)(1000 + t);
		g.t = 0;
		g.left = per;
		while (g.left > 0)
			call(&g, 0, 0);
		if (tl + 512 < sizeof(threads))
			tl += (size_t)snprintf(threads + tl, sizeof(threads) -
			    tl, "{\"v\":1,\"tid\":%u,\"pid\":%u,\"name\":"
			    "\"gen%" PRIu64 "\",\"first_ns\":0,\"last_ns\":%"
			    PRIu64 ",\"spans\":%" PRIu64 "}\n", g.tid, g.tid, t,
			    g.t, per);
		if (ml + 512 < sizeof(manifest))
			ml += (size_t)snprintf(manifest + ml,
			    sizeof(manifest) - ml, "%s{\"tid\":%u,\"first_ns\":0,"
			    "\"last_ns\":%" PRIu64 ",\"gap_ns\":0,\"spans\":%"
			    PRIu64 "}", t ? "," : "", g.tid, g.t, per);
	}
	/* Sealed with the checksum readers demand (span/spandir). */
	ml += (size_t)snprintf(manifest + ml, sizeof(manifest) - ml, "],");
	spandir_manifest_tail(manifest, ml, manifest + ml);
	manifest[ml + SPANDIR_MANIFEST_TAIL] = '\0';
	snprintf(path, sizeof(path), "%s/index.bin", argv[1]);
	if (g.jsonl != NULL && fclose(g.jsonl) != 0)
		g.bad = 1;
	if (g.bad || spanidx_writer_finish(g.w, path, &g.e) < 0 ||
	    aggkeep_write_dir(argv[1], &g.e) < 0 ||
	    write_text(argv[1], "manifest.json", manifest) < 0 ||
	    write_text(argv[1], "threads.jsonl", threads) < 0 ||
	    write_text(argv[1], "gaps.jsonl", "") < 0 ||
	    write_text(argv[1], "inline.jsonl", "") < 0) {
		fprintf(stderr, "gen_analysis: %s: %s\n", argv[1], g.e.msg);
		return 1;
	}
	printf("%s\n", argv[1]);
	return 0;
}
