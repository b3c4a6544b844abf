/*
 * lib/codemap's per-block answers (cs_code.block, cached per distinct
 * block) against its per-question ones (insn at the end, inline_runs over
 * the block), on a real image with inlined code: the LTO fixture of
 * tests/fixtures/spans (PTKIT_BUILD).  Every block of every function, a
 * first time (a miss) and a second time (a hit), must give the same end
 * instruction, the same runs and the same counters (the manifest reports
 * inline_walks_failed and undecodable_insns), also for blocks whose walk
 * fails.  Then what loading symbol tables ahead (a thread started at
 * the MAP records) must not change: the same functions whichever image a
 * later MAP maps at an address already answered, images counted missing
 * only when a block needs them, and a code map freed while it loads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "span/codemap.h"
#include "base/error.h"
#include "tap.h"

#define BASE 0x555555554000ull
#define PID 7

struct tally {
	size_t blocks, with_runs, runs, failed, mismatches, reused;
};

/* The questions one by one, as the engine asks them without block. */
static void
ask_each(const struct cs_code *code, uint64_t ip, uint64_t end_ip,
    uint32_t n, struct cs_block_info *out, struct cs_inline_run *runs)
{
	int nr = code->inline_runs(code->ctx, PID, ip, end_ip, n, runs,
	    CS_MAX_RUNS);
	uint32_t kept = 0;

	/* block gives the runs through inlined code only. */
	for (int i = 0; i < nr; i++)
		if (runs[i].inl != NULL)
			runs[kept++] = runs[i];
	out->n_runs = kept;
	out->runs = runs;
	out->end_known = (uint8_t)code->insn(code->ctx, PID, end_ip,
	    &out->end);
}

static int
same_info(const struct cs_block_info *a, const struct cs_block_info *b)
{
	if (a->end_known != b->end_known || a->n_runs != b->n_runs)
		return 0;
	if (a->end_known && (a->end.len != b->end.len ||
	    a->end.kind != b->end.kind))
		return 0;
	for (uint32_t i = 0; i < a->n_runs; i++)
		if (a->runs[i].inl != b->runs[i].inl ||
		    a->runs[i].n != b->runs[i].n)
			return 0;
	return 1;
}

static void
counters(struct codemap *m, uint64_t *failed, uint64_t *undecodable)
{
	struct codemap_stats st;

	codemap_get_stats(m, &st);
	*failed = st.inline_walk_failed;
	*undecodable = st.insn_undecodable;
}

/* One block three ways: per question, block (miss), block (hit). */
static void
check_block(struct codemap *m, const struct cs_code *code, uint64_t ip,
    uint64_t end_ip, uint32_t n, struct tally *t)
{
	struct cs_inline_run runs[CS_MAX_RUNS], first[CS_MAX_RUNS];
	struct cs_block_info each, miss, hit;
	uint64_t f[4], u[4];

	counters(m, &f[0], &u[0]);
	ask_each(code, ip, end_ip, n, &each, runs);
	counters(m, &f[1], &u[1]);
	if (code->block(code->ctx, PID, ip, end_ip, n, &miss) != 0)
		t->mismatches++;
	/* The answer lives until the next call: keep a copy. */
	memcpy(first, miss.runs, miss.n_runs * sizeof(*first));
	miss.runs = first;
	counters(m, &f[2], &u[2]);
	if (code->block(code->ctx, PID, ip, end_ip, n, &hit) != 0)
		t->mismatches++;
	counters(m, &f[3], &u[3]);
	/* Reuse: only when asking again would move no reported counter. */
	if (miss.reuse != (f[2] == f[1] && u[2] == u[1]) ||
	    hit.reuse != miss.reuse)
		t->mismatches++;
	t->reused += hit.reuse;
	if (!same_info(&each, &miss) || !same_info(&miss, &hit) ||
	    f[1] - f[0] != f[2] - f[1] || f[2] - f[1] != f[3] - f[2] ||
	    u[1] - u[0] != u[2] - u[1] || u[2] - u[1] != u[3] - u[2]) {
		if (t->mismatches++ == 0)
			DIAG("block 0x%llx-0x%llx n=%u differs",
			    (unsigned long long)ip, (unsigned long long)end_ip,
			    n);
	}
	t->blocks++;
	t->failed += f[1] - f[0];
	if (each.n_runs > 0)
		t->with_runs++;
	t->runs += each.n_runs;
}

/*
 * The blocks of the function entered at lo: from each of its
 * instructions to the next branch (or its end); and each of those with
 * one instruction too many, whose walk runs past end_ip and fails.
 */
static void
check_function(struct codemap *m, const struct cs_code *code,
    const struct cs_fn *fn, struct tally *t)
{
	for (uint64_t start = fn->lo; start < fn->hi;) {
		struct cs_insn in;
		uint64_t ip = start, next_start = 0;
		uint32_t n = 0;

		while (ip < fn->hi && code->insn(code->ctx, PID, ip, &in)) {
			n++;
			if (next_start == 0)
				next_start = ip + in.len;
			if (in.kind != CS_OTHER)
				break;
			if (ip + in.len >= fn->hi)
				break;
			ip += in.len;
		}
		if (n == 0)
			return;
		check_block(m, code, start, ip, n, t);
		check_block(m, code, start, ip, n + 1, t);
		start = next_start;
	}
}

/* The function at BASE + off in a fresh lookup, or "" when none. */
static const char *
fn_name(const struct cs_code *code, uint64_t ip)
{
	struct cs_fn fn;

	return code->fn(code->ctx, PID, ip, &fn) == 1 ? fn.name : "";
}

static struct blks_map
map_of(const char *path, uint64_t start, uint64_t size)
{
	struct blks_map map = { 0 };

	map.pid = PID;
	map.start = start;
	map.size = size;
	map.name = path;
	map.image = path;
	map.symbols = "";
	return map;
}

/*
 * A MAP record after answers empties the caches (a MAP before any does
 * not need to): the same address then names the later image's function.
 */
static void
check_remap(const char *a, const char *b)
{
	struct codemap_options co = { 0 };
	struct codemap *m = NULL, *mb = NULL;
	struct codemap_stats st;
	struct blks_map map;
	struct cs_code code, code_b;
	struct error e;
	char first[256], other[256];
	uint64_t ip;

	IS_INT(codemap_new(&m, &co, &e), 0, "remap: code map");
	map = map_of("/nonexistent/image", BASE - 0x100000, 0x1000);
	IS_INT(codemap_add(m, &map, &e), 0, "remap: a missing image");
	map = map_of(a, BASE, 0x100000);
	IS_INT(codemap_add(m, &map, &e), 0, "remap: image a");
	codemap_code(m, &code);
	codemap_get_stats(m, &st);
	IS_U64(st.images_missing, 0, "remap: no image missing before a "
	    "block needs one");
	/* An address a names a function at, and b another (a code map of
	 * b alone says). */
	IS_INT(codemap_new(&mb, &co, &e), 0, "remap: b alone");
	map = map_of(b, BASE, 0x100000);
	IS_INT(codemap_add(mb, &map, &e), 0, "remap: image b alone");
	codemap_code(mb, &code_b);
	first[0] = '\0';
	for (ip = BASE; ip < BASE + 0x100000; ip += 16) {
		snprintf(first, sizeof(first), "%s", fn_name(&code, ip));
		snprintf(other, sizeof(other), "%s", fn_name(&code_b, ip));
		if (first[0] != '\0' && other[0] != '\0' &&
		    strcmp(first, other) != 0)
			break;
	}
	codemap_free(mb);
	OK(ip < BASE + 0x100000, "remap: a names %s at %#llx, b %s", first,
	    (unsigned long long)ip, other);
	map = map_of(b, BASE, 0x100000);
	IS_INT(codemap_add(m, &map, &e), 0, "remap: image b over a");
	IS_STR(fn_name(&code, ip), other, "remap: b's answer, not a's "
	    "cached one");
	IS_STR(fn_name(&code, BASE - 0x100000), "", "remap: nothing in the "
	    "missing image");
	codemap_get_stats(m, &st);
	IS_U64(st.images_missing, 1, "remap: the missing image counted once "
	    "a lookup needed it");
	IS_U64(st.images, 3, "remap: three images");
	codemap_free(m);
}

/*
 * More images than are loaded ahead (PRELOAD_MAX): the ones past it load
 * when first needed, and every copy names the same function.  The paths
 * differ ("dir/./././file") so that each is an image of its own.
 */
static void
check_many(const char *path)
{
	struct codemap_options co = { 0 };
	struct codemap *m = NULL;
	struct codemap_stats st;
	struct blks_map map;
	struct cs_code code;
	struct error e;
	char p[12][4200], want[256] = "", dir[4096];
	const char *slash = strrchr(path, '/');
	size_t same = 0;
	uint64_t off = 0;

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	IS_INT(codemap_new(&m, &co, &e), 0, "many: code map");
	for (int i = 0; i < 12; i++) {
		int n = snprintf(p[i], sizeof(p[i]), "%s", dir);

		for (int k = 0; k < i; k++)
			n += snprintf(p[i] + n, sizeof(p[i]) - (size_t)n, "/.");
		snprintf(p[i] + n, sizeof(p[i]) - (size_t)n, "%s", slash);
		map = map_of(p[i], BASE + (uint64_t)i * 0x1000000, 0x100000);
		STEP(codemap_add(m, &map, &e));
	}
	codemap_code(m, &code);
	/* The function at the first offset the last copy names one at. */
	for (off = 0; off < 0x100000 && want[0] == '\0'; off += 16)
		snprintf(want, sizeof(want), "%s", fn_name(&code,
		    BASE + 11 * 0x1000000ull + off));
	off -= 16;
	for (int i = 0; i < 12; i++)
		same += strcmp(fn_name(&code, BASE + (uint64_t)i * 0x1000000 +
		    off), want) == 0;
	IS_U64(same, 12, "many: 12 copies name %s at +%#llx", want,
	    (unsigned long long)off);
	codemap_get_stats(m, &st);
	IS_U64(st.images, 12, "many: 12 images");
	IS_U64(st.images_missing + st.images_no_symbols, 0, "many: all "
	    "loaded, with symbols");
	codemap_free(m);
}

/* Freed while the thread may still be loading: no leak, no race. */
static void
check_free_while_loading(const char *const *paths, size_t n)
{
	struct codemap_options co = { 0 };
	struct codemap *m = NULL;
	struct blks_map map;
	struct error e;
	int rc = 0;

	IS_INT(codemap_new(&m, &co, &e), 0, "early free: code map");
	for (size_t i = 0; i < n; i++) {
		map = map_of(paths[i], BASE + i * 0x1000000, 0x100000);
		rc |= codemap_add(m, &map, &e);
	}
	IS_INT(rc, 0, "early free: %zu images mapped", n);
	codemap_free(m);
	OK(1, "early free: freed");
}

int
main(void)
{
	const char *build = getenv("PTKIT_BUILD");
	char path[4096];
	struct codemap_options co = { 0 };
	struct blks_map map = { 0 };
	struct codemap *m = NULL;
	struct cs_code code;
	struct tally t = { 0 };
	struct stat sb;
	struct error e;
	size_t fns = 0;

	snprintf(path, sizeof(path), "%s/tests/fixtures/spans/lto",
	    build != NULL ? build : "build");
	if (stat(path, &sb) < 0) {
		DIAG("%s: not built; skipping", path);
		OK(1, "# SKIP no LTO fixture");
		return tap_done();
	}
	IS_INT(codemap_new(&m, &co, &e), 0, "code map");
	map.pid = PID;
	map.start = BASE;
	map.size = ((uint64_t)sb.st_size + 0xfff) & ~0xfffull;
	map.name = path;
	map.image = path;
	map.symbols = "";
	IS_INT(codemap_add(m, &map, &e), 0, "the fixture mapped whole");
	codemap_code(m, &code);
	OK(code.block != NULL && code.inline_runs != NULL,
	    "block and inline_runs answered");
	for (uint64_t ip = BASE; ip < BASE + (uint64_t)sb.st_size; ip++) {
		struct cs_fn fn;

		if (code.fn(code.ctx, PID, ip, &fn) == 1 && fn.lo == ip &&
		    fn.hi > fn.lo && fn.hi - fn.lo < 65536) {
			check_function(m, &code, &fn, &t);
			fns++;
		}
	}
	DIAG("%zu functions, %zu blocks, %zu with inlined code, %zu runs, "
	    "%zu failed walks", fns, t.blocks, t.with_runs, t.runs,
	    t.failed);
	OK(fns >= 5, "functions found (%zu)", fns);
	OK(t.with_runs > 0, "some blocks run through inlined code");
	OK(t.failed >= t.blocks / 2, "the overlong blocks' walks fail");
	OK(t.reused > 0 && t.reused < t.blocks, "answers marked reuse: "
	    "those that replay nothing (%zu of %zu)", t.reused, t.blocks);
	{
		uint64_t gen = *code.gen;

		map.start = BASE + 0x1000000;
		IS_INT(codemap_add(m, &map, &e), 0, "a second mapping");
		OK(*code.gen != gen, "a MAP moves cs_code.gen");
	}
	IS_INT((int)t.mismatches, 0, "per block, per question, miss and hit "
	    "agree: ends, runs and counters");
	codemap_free(m);
	{
		char cxx[4096];
		const char *paths[3] = { path, cxx, "/nonexistent/x" };

		snprintf(cxx, sizeof(cxx), "%s/tests/fixtures/spans/cxx",
		    build != NULL ? build : "build");
		check_remap(path, cxx);
		check_many(path);
		check_free_while_loading(paths, 3);
	}
	return tap_done();
}
