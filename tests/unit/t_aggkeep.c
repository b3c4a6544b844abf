/*
 * lib/span/aggkeep: aggregates.bin written from a small index (threads
 * interleaved in the rows, recursion, incomplete spans) answers
 * agg_hotpaths exactly as the walk does, by function and by module, for
 * every thread filter with and without incomplete spans; a figure changed
 * (checksum made again) is what is answered, so the file is read; a
 * damaged or foreign file (another version, another index's) is refused
 * with its reason, for totals alone too; and what the file
 * does not hold (a window, inline rows) is left to the walk.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/le.h"
#include "span/aggkeep.h"
#include "span/aggregate.h"
#include "span/analysis.h"
#include "tap.h"

/* Thread 1 recurses (work > work), thread 2 starts at the ring's start;
 * their rows interleave, as they do when two threads run at once. */
static const struct {
	uint64_t id, parent;
	uint32_t tid, pid;
	int32_t depth;
	const char *fn;
	uint64_t start, end, self;
	uint8_t cause;
} spans[] = {
	{ 3, 2, 1, 10, 2, "leaf", 20, 40, 20, 0 },
	{ 7, 6, 2, 20, 1, "leaf", 10, 20, 10, 0 },
	{ 2, 1, 1, 10, 1, "work", 10, 50, 20, 0 },
	{ 5, 4, 1, 10, 2, "work", 70, 80, 10, 0 },
	{ 9, 8, 2, 20, 1, "work", 30, 40, 10, 2 },
	{ 4, 1, 1, 10, 1, "work", 60, 90, 20, 0 },
	{ 6, 0, 2, 20, 0, "main", 5, 25, 10, 1 },
	{ 8, 0, 2, 20, 0, "work", 28, 45, 7, 0 },
	{ 1, 0, 1, 10, 0, "main", 0, 100, 30, 0 },
};
#define NSPANS (sizeof(spans) / sizeof(spans[0]))

static int
write_analysis(const char *dir)
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
		r.tid = spans[i].tid;
		r.pid = spans[i].pid;
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
	    "{\"v\":%d,\"quality\":{\"spans\":%zu},\"files\":["
	    "\"index.bin\",\"aggregates.bin\"],",
	    SPANDIR_MANIFEST_VERSION, NSPANS);
	spandir_manifest_tail(text, len, text + len);
	len += SPANDIR_MANIFEST_TAIL;
	short_write = fwrite(text, 1, len, f) != len;
	if (fclose(f) != 0 || short_write) {
		spanidx_writer_free(w);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/index.bin", dir);
	if (spanidx_writer_finish(w, path, &e) < 0)
		return -1;
	return aggkeep_write_dir(dir, &e);
}

static int
same_rows(const struct agg *x, const struct agg *y)
{
	if (x->n != y->n || x->incomplete_spans != y->incomplete_spans ||
	    x->incomplete_self_ns != y->incomplete_self_ns)
		return 0;
	for (size_t i = 0; i < x->n; i++) {
		const struct agg_row *a = &x->row[i], *b = &y->row[i];

		if (strcmp(a->name, b->name) != 0 ||
		    strcmp(a->module, b->module) != 0 ||
		    a->calls != b->calls || a->spans != b->spans ||
		    a->total_ns != b->total_ns || a->self_ns != b->self_ns ||
		    a->insns != b->insns || a->self_insns != b->self_insns ||
		    a->outer != b->outer || a->sum_ns != b->sum_ns ||
		    a->max_ns != b->max_ns || a->incomplete != b->incomplete)
			return 0;
	}
	return 1;
}

/* Kept and walked answers, for every filter the file holds. */
static void
test_same(const char *dir)
{
	static const uint32_t both[] = { 1, 2 }, two[] = { 2 };
	struct analysis kept, walked;
	struct error e;

	if (analysis_open(&kept, dir, &e) < 0 ||
	    analysis_open(&walked, dir, &e) < 0) {
		OK(0, "open: %s", e.msg);
		return;
	}
	OK(kept.kept.base != NULL, "the aggregates are open");
	IS_STR(kept.kept_refused, "", "and not refused");
	aggkeep_close(&walked.kept);
	for (int group = 0; group < 3; group += 2)
		for (int fi = 0; fi < 6; fi++)
			for (int inc = 0; inc < 2; inc++) {
				struct agg_filter f = { .to_ns = AGG_WINDOW_END,
				    .incomplete = inc };
				struct agg gk, gw;

				if (fi == 1 || fi == 2) {
					f.has_tid = 1;
					f.tid = (uint32_t)fi;
				} else if (fi == 3 || fi == 4) {
					f.has_tids = 1;
					f.tids = fi == 3 ? both : two;
					f.n_tids = fi == 3 ? 2 : 1;
				}
				IS_INT(agg_hotpaths(&gk, &kept, (enum agg_group)
				    group, fi == 5 ? NULL : &f, &e), 0,
				    "kept: group %d filter %d incomplete %d",
				    group, fi, inc);
				IS_INT(agg_hotpaths(&gw, &walked, (enum agg_group)
				    group, fi == 5 ? NULL : &f, &e), 0, "walked");
				OK(same_rows(&gk, &gw), "the same rows");
				agg_free(&gk);
				agg_free(&gw);
			}
	IS_INT(aggkeep_pid(&kept.kept, 2), 20, "thread 2's process");
	IS_INT(aggkeep_pid(&kept.kept, 3), 0, "no thread 3");
	analysis_close(&kept);
	analysis_close(&walked);
}

/* Rewrites the checksum of the file at path after a change. */
static int
rechecksum(const char *path)
{
	static uint8_t buf[1 << 16];
	ssize_t n;
	int fd = open(path, O_RDWR);

	if (fd < 0 || (n = read(fd, buf, sizeof(buf))) < AGGKEEP_HEADER_SIZE) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	le_put_u64(buf + AGGKEEP_CHECKSUM_AT, aggkeep_checksum(buf, (size_t)n));
	if (pwrite(fd, buf, AGGKEEP_HEADER_SIZE, 0) != AGGKEEP_HEADER_SIZE) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void
patch(const char *path, long off, const void *bytes, size_t n)
{
	int fd = open(path, O_RDWR);

	OK(fd >= 0 && pwrite(fd, bytes, n, off) == (ssize_t)n &&
	    close(fd) == 0, "patched at %ld", off);
}

static void
test_read_and_refused(const char *dir)
{
	struct agg_filter window = { .from_ns = 10, .to_ns = AGG_WINDOW_END };
	char path[256], saved[256];
	struct analysis a;
	struct error e;
	struct agg g;
	uint8_t v[8];
	uint64_t self = 0;

	snprintf(path, sizeof(path), "%s/aggregates.bin", dir);
	snprintf(saved, sizeof(saved), "%s/saved.bin", dir);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "cp %s %s", path, saved);
		OK(system(cmd) == 0, "saved a copy");
	}
	/* The first entry's complete self_ns (figure 5) plus 1000. */
	{
		struct aggkeep k;
		uint64_t id;

		IS_INT(aggkeep_index_id_at(dir, &id, &e), 0, "the index's id");
		IS_INT(aggkeep_open(&k, dir, NSPANS, id, &e), 0, "open alone");
		le_put_u64(v, le_get_u64(k.ent + 8 + 8 * 5) + 1000);
		self = (uint64_t)(k.ent - k.base) + 8 + 8 * 5;
		aggkeep_close(&k);
	}
	patch(path, (long)self, v, 8);
	OK(rechecksum(path) == 0, "checksum made again");
	STEP(analysis_open(&a, dir, &e));
	IS_INT(agg_hotpaths(&g, &a, AGG_FUNCTION, NULL, &e), 0, "hotpaths");
	{
		uint64_t sum = 0;

		for (size_t i = 0; i < g.n; i++)
			sum += g.row[i].self_ns;
		IS_U64(sum, 1000 + 20 + 10 + 20 + 10 + 10 + 20 + 10 + 7 + 30,
		    "the changed figure is answered: the file is read");
	}
	agg_free(&g);
	/* A window is the walk's: the true figures. */
	IS_INT(agg_hotpaths(&g, &a, AGG_FUNCTION, &window, &e), 0, "window");
	{
		uint64_t sum = 0;

		for (size_t i = 0; i < g.n; i++)
			sum += g.row[i].self_ns;
		IS_U64(sum, 20 + 10 + 20 + 10 + 20 + 7, "walked (spans from 10, "
		    "complete)");
	}
	agg_free(&g);
	analysis_close(&a);

	/* A changed byte without a new checksum: refused. */
	patch(path, (long)self, "\x01", 1);
	STEP(analysis_open(&a, dir, &e));
	OK(a.kept.base == NULL, "not answered from");
	IS_STR(a.kept_refused, "aggregates.bin: checksum mismatch",
	    "the reason");
	analysis_close(&a);

	/* Another version. */
	patch(path, 8, "\x07", 1);
	STEP(analysis_open(&a, dir, &e));
	IS_STR(a.kept_refused, "aggregates.bin: version 7, this ptkit reads 2",
	    "another version");
	analysis_close(&a);

	/* Missing, named by the manifest. */
	unlink(path);
	STEP(analysis_open(&a, dir, &e));
	IS_STR(a.kept_refused, "aggregates.bin: no such file", "missing");
	analysis_close(&a);

	/* Totals only: the index is not opened, and opened when asked. */
	OK(rename(saved, path) == 0, "the good file back");
	STEP(analysis_open_for(&a, dir, ANALYSIS_TOTALS, &e));
	OK(a.index_deferred && a.ix.base == NULL, "the index deferred");
	IS_U64(analysis_rows(&a), NSPANS, "rows from the aggregates");
	IS_INT(agg_hotpaths(&g, &a, AGG_FUNCTION, &window, &e),
	    -ERR_INTERNAL, "a window without the index: an error, no answer");
	IS_INT(analysis_open_index(&a, &e), 0, "the index opened");
	IS_U64(analysis_rows(&a), NSPANS, "rows from the index");
	IS_INT(agg_hotpaths(&g, &a, AGG_FUNCTION, &window, &e), 0,
	    "then walked");
	agg_free(&g);
	analysis_close(&a);

	/* Made from another index (its checksum made again, as a file of
	 * another analysis of as many spans has one of its own): refused,
	 * whether the index is opened or totals alone are asked for. */
	{
		uint64_t id = 0;

		IS_INT(aggkeep_index_id_at(dir, &id, &e), 0, "the index's id");
		le_put_u64(v, id + 1);
		patch(path, AGGKEEP_INDEX_AT, v, 8);
	}
	OK(rechecksum(path) == 0, "checksum made again");
	STEP(analysis_open(&a, dir, &e));
	OK(a.kept.base == NULL, "another index's: not answered from");
	IS_STR(a.kept_refused, "aggregates.bin: made from another index.bin",
	    "the reason");
	analysis_close(&a);
	STEP(analysis_open_for(&a, dir, ANALYSIS_TOTALS, &e));
	OK(!a.index_deferred && a.ix.base != NULL && a.kept.base == NULL,
	    "totals: the index opened, the file not answered from");
	IS_STR(a.kept_refused, "aggregates.bin: made from another index.bin",
	    "the same reason");
	analysis_close(&a);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[200], cmd[300];

	snprintf(dir, sizeof(dir), "%s/t_aggkeep.XXXXXX", tmp && *tmp &&
	    strlen(tmp) < 150 ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL || write_analysis(dir) < 0) {
		OK(0, "fixture");
		return tap_done();
	}
	test_same(dir);
	test_read_and_refused(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	PTKIT_DROP(system(cmd));
	return tap_done();
}
