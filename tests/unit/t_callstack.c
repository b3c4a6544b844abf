/*
 * Unit tests of lib/callstack on synthetic block sequences: each scenario
 * is a made-up program (functions at fixed addresses, instructions given
 * by a table) and the records a decoder would write for one run of it;
 * the spans, gaps and events that come out are compared exactly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "span/callstack.h"
#include "span/spandir.h"
#include "tap.h"

/* The synthetic program. */
struct fake_fn {
	const char *name;
	uint64_t lo, hi;
	unsigned flags;
};

static const struct fake_fn fns[] = {
	{ "main", 0x1000, 0x1100, 0 },
	{ "main.cold", 0x1800, 0x1900, CS_FN_COLD },
	{ "f", 0x2000, 0x2100, 0 },
	{ "f.cold", 0x2800, 0x2900, CS_FN_COLD },
	{ "g", 0x3000, 0x3100, 0 },
	{ "h", 0x4000, 0x4100, 0 },
	{ "handler", 0x5000, 0x5100, 0 },
	{ "__restore_rt", 0x6000, 0x6010, 0 },
	{ "longjmp", 0x7000, 0x7100, CS_FN_LONGJMP },
	{ "_Unwind_RaiseException", 0x8000, 0x8100, 0 },
	{ "g@plt", 0x9000, 0x9010, CS_FN_PLT },
};

struct fake_insn {
	uint64_t ip;
	uint8_t len, kind;
};

/* Branches of the program; every other address is a 1-byte non-branch. */
static const struct fake_insn insns[] = {
	{ 0x1010, 5, CS_CALL }, { 0x1020, 5, CS_CALL }, { 0x1030, 2, CS_SYSCALL },
	{ 0x1040, 5, CS_CALL }, { 0x1810, 5, CS_JMP },
	{ 0x2010, 5, CS_CALL }, { 0x2020, 1, CS_RET }, { 0x2030, 5, CS_JMP },
	{ 0x2040, 6, CS_JCC }, { 0x2060, 1, CS_RET },
	{ 0x2810, 5, CS_JMP },
	{ 0x3010, 5, CS_CALL }, { 0x3020, 1, CS_RET },
	{ 0x4010, 5, CS_CALL }, { 0x4020, 1, CS_RET },
	{ 0x5010, 1, CS_RET }, { 0x5020, 5, CS_CALL },
	{ 0x6005, 2, CS_SYSCALL },
	{ 0x7010, 2, CS_JMP },
	{ 0x8010, 1, CS_RET }, { 0x8030, 2, CS_JMP },
	{ 0x9000, 6, CS_JMP },
};

static int
fake_insn(void *ctx, uint32_t pid, uint64_t ip, struct cs_insn *out)
{
	(void)ctx;
	(void)pid;
	for (size_t i = 0; i < sizeof(insns) / sizeof(insns[0]); i++)
		if (insns[i].ip == ip) {
			out->len = insns[i].len;
			out->kind = insns[i].kind;
			return 1;
		}
	out->len = 1;
	out->kind = CS_OTHER;
	return 1;
}

static int
fake_fn(void *ctx, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	(void)ctx;
	(void)pid;
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (ip >= fns[i].lo && ip < fns[i].hi) {
			out->lo = fns[i].lo;
			out->hi = fns[i].hi;
			out->name = out->raw = fns[i].name;
			out->module = "prog";
			out->flags = fns[i].flags;
			return 1;
		}
	return 0;
}

/*
 * Inlined ranges of the synthetic program: the engine only compares
 * their addresses, so any objects do.
 */
static const char inl_ranges[2];
#define INL_A ((const struct sym_inline *)&inl_ranges[0])
#define INL_B ((const struct sym_inline *)&inl_ranges[1])

static int
inl_index(const struct sym_inline *inl)
{
	return inl == INL_A ? 0 : inl == INL_B ? 1 : -1;
}

/* What came out, rendered as lines. */
struct got {
	struct cs_span span[64];
	uint64_t inl[64][2];		/* span's instructions in A, B */
	size_t n;
	char gaps[1024];
	char events[1024];
	struct cs_thread_stats st;
};

static const char *
name_of(const struct got *g, uint64_t id)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->span[i].id == id)
			return g->span[i].fn.name ? g->span[i].fn.name : "?";
	return id ? "(missing)" : "-";
}

static int
sink_span(void *ctx, const struct cs_span *s)
{
	struct got *g = ctx;

	if (g->n >= 64)
		return 0;
	/* s->inl is the engine's, valid only now. */
	for (size_t k = 0; k < s->n_inl; k++)
		if (inl_index(s->inl[k].inl) >= 0)
			g->inl[g->n][inl_index(s->inl[k].inl)] +=
			    s->inl[k].insns;
	g->span[g->n++] = *s;
	return 0;
}

static int
sink_gap(void *ctx, const struct cs_gap *gp)
{
	struct got *g = ctx;
	size_t len = strlen(g->gaps);

	snprintf(g->gaps + len, sizeof(g->gaps) - len, "%s %" PRIu64 "-%"
	    PRIu64 " cut=%u;", spandir_gap_cause_name(gp->cause), gp->start_ns,
	    gp->end_ns, gp->frames_cut);
	return 0;
}

static int
sink_event(void *ctx, const struct cs_event *ev)
{
	struct got *g = ctx;
	size_t len = strlen(g->events);

	snprintf(g->events + len, sizeof(g->events) - len, "%s@%" PRIu64 ";",
	    spandir_event_name(ev->kind), ev->time);
	return 0;
}

static int
sink_end(void *ctx, const struct cs_thread_stats *st)
{
	struct got *g = ctx;

	g->st = *st;
	return 0;
}


/*
 * Spans, one per line: fn depth parent start end flags self/total time;
 * then, for a span with inline counts, how many and those of A and B.
 */
static char *
render(const struct got *g)
{
	static char buf[8192];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < g->n; i++) {
		const struct cs_span *s = &g->span[i];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		    "%s d=%d p=%s %s/%s%s%s i=%" PRIu64 "/%" PRIu64 " t=%"
		    PRIu64 "-%" PRIu64 "\n", s->fn.name ? s->fn.name : "?",
		    s->depth, name_of(g, s->parent),
		    spandir_start_name(s->start), spandir_end_name(s->end), s->tail_call ? " tail" : "",
		    s->async ? " async" : "", s->self_insns, s->insns,
		    s->start_ns, s->end_ns);
		if (s->n_inl > 0)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
			    "  n_inl=%zu A=%" PRIu64 " B=%" PRIu64 "\n",
			    s->n_inl, g->inl[i][0], g->inl[i][1]);
	}
	return buf;
}

/* Record builders. */
static struct blks_record recs[128];
static size_t nrec;

static void
thread(uint32_t flags)
{
	memset(&recs[nrec], 0, sizeof(recs[0]));
	recs[nrec].type = BLKS_THREAD;
	recs[nrec].u.thread.tid = 7;
	recs[nrec].u.thread.pid = 7;
	recs[nrec].u.thread.flags = flags;
	recs[nrec].u.thread.name = "t";
	nrec++;
}

static void
blk(uint64_t ip, uint64_t end_ip, uint32_t n, uint64_t time)
{
	memset(&recs[nrec], 0, sizeof(recs[0]));
	recs[nrec].type = BLKS_BLOCK;
	recs[nrec].u.block.ip = ip;
	recs[nrec].u.block.end_ip = end_ip;
	recs[nrec].u.block.ninsn = n;
	recs[nrec].u.block.time = time;
	nrec++;
}

static void
event(uint8_t kind, uint64_t ip, uint64_t at, uint64_t arg, uint64_t time)
{
	memset(&recs[nrec], 0, sizeof(recs[0]));
	recs[nrec].type = BLKS_EVENT;
	recs[nrec].u.event.kind = kind;
	recs[nrec].u.event.ip = ip;
	recs[nrec].u.event.at = at;
	recs[nrec].u.event.arg = arg;
	recs[nrec].u.event.time = time;
	nrec++;
}

static void
gap(uint8_t cause, uint64_t time)
{
	memset(&recs[nrec], 0, sizeof(recs[0]));
	recs[nrec].type = BLKS_GAP;
	recs[nrec].u.gap.cause = cause;
	recs[nrec].u.gap.time = time;
	recs[nrec].u.gap.text = "";
	nrec++;
}

static void
end(void)
{
	memset(&recs[nrec], 0, sizeof(recs[0]));
	recs[nrec].type = BLKS_END;
	recs[nrec].u.end.tid = 7;
	nrec++;
}

static struct got got;

/* The code.block form of the same program (no inline runs). */
static int
fake_block(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	(void)ip;
	(void)ninsn;
	out->n_runs = 0;
	out->runs = NULL;
	out->end_known = (uint8_t)fake_insn(ctx, pid, end_ip, &out->end);
	return 0;
}

/* The same, marking every answer reuse and counting the questions. */
static uint64_t block_gen, block_calls;

static int
fake_block_reuse(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	block_calls++;
	fake_block(ctx, pid, ip, end_ip, ninsn, out);
	out->reuse = 1;
	return 0;
}

/*
 * The same with inline runs: a block of g with two or more instructions
 * has its first in range A, the others in B (as codemap answers, only
 * runs through inlined code).
 */
static int
fake_block_runs(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	static struct cs_inline_run runs[2];

	fake_block(ctx, pid, ip, end_ip, ninsn, out);
	if (ip >= 0x3000 && ip < 0x3100 && ninsn >= 2) {
		runs[0].inl = INL_A;
		runs[0].n = 1;
		runs[1].inl = INL_B;
		runs[1].n = ninsn - 1;
		out->runs = runs;
		out->n_runs = 2;
	}
	return 0;
}

static int
fake_block_runs_reuse(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	block_calls++;
	fake_block_runs(ctx, pid, ip, end_ip, ninsn, out);
	out->reuse = 1;
	return 0;
}

static int
run_code(const struct cs_code *code, size_t max_depth)
{
	struct cs_sink sink = { &got, sink_span, sink_gap, sink_event,
	    sink_end };
	struct callstack *cs = cs_new(code, &sink, max_depth);
	struct error e;
	int rc = 0;

	memset(&got, 0, sizeof(got));
	for (size_t i = 0; i < nrec && rc == 0; i++)
		rc = cs_feed(cs, &recs[i], &e);
	cs_free(cs);
	return rc;
}

/* The same, with each run of BLOCK records fed in one cs_feed_blocks. */
static int
run_in_runs(const struct cs_code *code, size_t max_depth)
{
	struct cs_sink sink = { &got, sink_span, sink_gap, sink_event,
	    sink_end };
	struct callstack *cs = cs_new(code, &sink, max_depth);
	struct blks_block b[128];
	struct error e;
	size_t n = 0;
	int rc = 0;

	memset(&got, 0, sizeof(got));
	for (size_t i = 0; i <= nrec && rc == 0; i++) {
		if (i < nrec && recs[i].type == BLKS_BLOCK) {
			b[n++] = recs[i].u.block;
			continue;
		}
		rc = cs_feed_blocks(cs, b, n, &e);
		n = 0;
		if (rc == 0 && i < nrec)
			rc = cs_feed(cs, &recs[i], &e);
	}
	cs_free(cs);
	return rc;
}

/* What run_inline's code that asks gave. */
static struct got got_inline;

/* Streams encoded by run_stream, and those it could not encode. */
static unsigned streams_fed, streams_refused;

/*
 * The same, through the block stream: the records encoded, read back and
 * fed as ptspans does (runs of BLOCK records by cs_feed_run).  Returns 1
 * when the writer refuses the records (a BLOCK outside a thread), *rc
 * the engine's return otherwise.
 */
static int
run_stream(const struct cs_code *code, size_t max_depth, int *rc)
{
	struct cs_sink sink = { &got, sink_span, sink_gap, sink_event,
	    sink_end };
	struct blks_header h = { 0 };
	struct blks_record rec;
	struct blks_writer *w;
	struct blks_reader *rd;
	struct blks_run br;
	struct callstack *cs;
	struct error e;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int bad = 0;

	h.snapshot = "";
	if (f == NULL || blks_writer_open_file(&w, f, &h, &e) < 0)
		return -1;
	memset(&rec, 0, sizeof(rec));
	rec.type = BLKS_EOS;
	for (size_t i = 0; i < nrec && !bad; i++) {
		bad = blks_write(w, &recs[i], &e) < 0;
		rec.u.eos.nr_threads += recs[i].type == BLKS_THREAD;
	}
	if (!bad)
		bad = blks_write(w, &rec, &e) < 0;
	bad |= blks_writer_close(w, &e) < 0;
	fclose(f);
	if (bad) {
		free(buf);
		streams_refused++;
		return 1;
	}
	streams_fed++;
	if (blks_reader_open_mem(&rd, buf, len, "test", &e) < 0) {
		free(buf);
		return -1;
	}
	memset(&got, 0, sizeof(got));
	cs = cs_new(code, &sink, max_depth);
	for (*rc = 0; *rc == 0;) {
		if (blks_run_begin(rd, &br)) {
			*rc = cs_feed_run(cs, &br, &e);
			blks_run_end(rd, &br);
			if (*rc < 0)
				break;
		}
		if (blks_read(rd, &rec, &e) != 1)
			break;
		*rc = cs_feed(cs, &rec, &e);
	}
	cs_free(cs);
	blks_reader_free(rd);
	free(buf);
	return 0;
}

/* The history got holds, as one string. */
static const char *
history(int rc)
{
	static char s[8192 + 2048 + 64];

	snprintf(s, sizeof(s), "%d\n%s%s\n%s\n%llu", rc, render(&got),
	    got.gaps, got.events, (unsigned long long)got.st.unknown_insn);
	return s;
}

/*
 * The scenario with inline runs in g: kept by the engine, fed by
 * cs_feed_blocks and through the stream, the same as asked each time.
 */
static void
run_inline(size_t max_depth)
{
	struct cs_code asked = { NULL, fake_insn, fake_fn, NULL,
	    fake_block_runs };
	struct cs_code kept = { NULL, fake_insn, fake_fn, NULL,
	    fake_block_runs_reuse, &block_gen };
	static char want[8192 + 2048 + 64];
	int rc;

	rc = run_code(&asked, max_depth);
	got_inline = got;
	snprintf(want, sizeof(want), "%s", history(rc));
	rc = run_in_runs(&kept, max_depth);
	IS_STR(want, history(rc), "kept inline runs give the same history");
	if (run_stream(&kept, max_depth, &rc) == 0)
		IS_STR(want, history(rc),
		    "kept inline runs through the stream: the same history");
}

/*
 * Runs the records built so far through a fresh engine; first through
 * one that asks code.block, which must give the very same history.
 */
static int
run(size_t max_depth)
{
	struct cs_code code = { NULL, fake_insn, fake_fn, NULL, NULL };
	struct cs_code by_block = { NULL, fake_insn, fake_fn, NULL,
	    fake_block };
	struct cs_code kept = { NULL, fake_insn, fake_fn, NULL,
	    fake_block_reuse, &block_gen };
	static char want[8192 + 2048 + 64];
	char have[sizeof(want)];
	int rc;

	rc = run_code(&by_block, max_depth);
	snprintf(want, sizeof(want), "%d\n%s%s\n%s\n%llu", rc, render(&got),
	    got.gaps, got.events, (unsigned long long)got.st.unknown_insn);
	rc = run_in_runs(&code, max_depth);
	snprintf(have, sizeof(have), "%d\n%s%s\n%s\n%llu", rc, render(&got),
	    got.gaps, got.events, (unsigned long long)got.st.unknown_insn);
	IS_STR(want, have, "blocks fed in runs give the same history");
	rc = run_code(&code, max_depth);
	snprintf(have, sizeof(have), "%d\n%s%s\n%s\n%llu", rc, render(&got),
	    got.gaps, got.events, (unsigned long long)got.st.unknown_insn);
	IS_STR(want, have, "asking code.block gives the same history");
	rc = run_in_runs(&kept, max_depth);
	snprintf(have, sizeof(have), "%d\n%s%s\n%s\n%llu", rc, render(&got),
	    got.gaps, got.events, (unsigned long long)got.st.unknown_insn);
	IS_STR(want, have, "answers kept by the engine give the same history");
	if (run_stream(&kept, max_depth, &rc) == 0) {
		snprintf(have, sizeof(have), "%s", history(rc));
		IS_STR(want, have, "fed through the stream (cs_feed_run): "
		    "the same history");
	}
	run_inline(max_depth);
	rc = run_code(&by_block, max_depth);
	nrec = 0;
	return rc;
}

/*
 * A loop of three blocks run 100 times: with reuse marked, code.block is
 * asked once per distinct block, and again after *gen moves.
 */
static void
test_kept_answers(void)
{
	struct cs_code kept = { NULL, fake_insn, fake_fn, NULL,
	    fake_block_reuse, &block_gen };
	struct cs_sink sink = { &got, sink_span, sink_gap, sink_event,
	    sink_end };
	struct callstack *cs = cs_new(&kept, &sink, 0);
	struct blks_block b[300];
	struct error e;
	size_t n = 0;
	int rc;

	memset(b, 0, sizeof(b));
	for (int i = 0; i < 100; i++) {
		b[n].ip = 0x1000;	/* main: jcc, not taken */
		b[n].end_ip = 0x1004;
		b[n].ninsn = 2;
		b[n++].time = 10 + 3 * (uint64_t)i;
		b[n].ip = 0x1006;	/* jcc, taken */
		b[n].end_ip = 0x1006;
		b[n].ninsn = 1;
		b[n++].time = 11 + 3 * (uint64_t)i;
		b[n].ip = 0x1004;	/* jmp back */
		b[n].end_ip = 0x1005;
		b[n].ninsn = 1;
		b[n++].time = 12 + 3 * (uint64_t)i;
	}
	block_calls = 0;
	memset(&got, 0, sizeof(got));
	thread(0);
	rc = cs_feed(cs, &recs[nrec - 1], &e);
	nrec = 0;
	rc = rc < 0 ? rc : cs_feed_blocks(cs, b, 150, &e);
	IS_U64(block_calls, 3, "asked once per distinct block");
	block_gen++;
	rc = rc < 0 ? rc : cs_feed_blocks(cs, b + 150, 150, &e);
	IS_U64(block_calls, 6, "asked again after the code changed");
	IS_INT(rc, 0, "no error");
	cs_free(cs);
}

/*
 * A loop in g whose blocks run through inlined code, in runs of blocks
 * of the fast shape: the inline counts of the kept answers, the same as
 * asked each time, and asked once per distinct block.
 */
static void
test_stream_inline(void)
{
	uint64_t t = 10;

	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, t);		/* main: call g */
	for (int call = 0; call < 2; call++) {
		for (int i = 0; i < 10; i++) {
			blk(0x3000, 0x3004, 3, t += 1);	/* g */
			blk(0x3005, 0x3008, 2, t += 2);
		}
		blk(0x3000, 0x3020, 4, t - 5);	/* ret, a time gone back */
		if (call == 0)
			blk(0x1015, 0x1020, 2, t += 1);	/* main: call g */
	}
	blk(0x1025, 0x1028, 2, t += 1);		/* main */
	end();
	IS_INT(run(0), 0, "inline loop: fed");
	IS_STR(render(&got_inline),
	    "g d=1 p=main seen/seen i=54/54 t=10-40\n"
	    "  n_inl=2 A=21 B=33\n"
	    "g d=1 p=main seen/seen i=54/54 t=41-71\n"
	    "  n_inl=2 A=21 B=33\n"
	    "main d=0 p=- trace_start/snapshot_end i=9/117 t=0-72\n",
	    "inline loop: g's own counts, its end the latest time");
}

static void
test_recursion(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2010, 3, 20);	/* f: call f */
	blk(0x2000, 0x2010, 3, 30);	/* f: call f */
	blk(0x2000, 0x2020, 4, 40);	/* f: ret */
	blk(0x2015, 0x2020, 2, 50);	/* f: ret */
	blk(0x2015, 0x2020, 2, 60);	/* f: ret */
	blk(0x1015, 0x1018, 2, 70);	/* main */
	end();
	IS_INT(run(0), 0, "recursion: fed");
	IS_STR(render(&got),
	    "f d=3 p=f seen/seen i=4/4 t=30-40\n"
	    "f d=2 p=f seen/seen i=5/9 t=20-50\n"
	    "f d=1 p=main seen/seen i=5/14 t=10-60\n"
	    "main d=0 p=- trace_start/snapshot_end i=7/21 t=0-70\n",
	    "recursion: exact depths, self and total instructions");
	IS_U64(got.st.max_depth_seen, 3, "recursion: max depth 3");
	IS_STR(got.events, "thread_start@0;thread_end@70;",
	    "recursion: thread events");
}

static void
test_tail_call(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2030, 3, 20);	/* f: jmp g */
	blk(0x3000, 0x3020, 4, 30);	/* g: ret to main */
	blk(0x1015, 0x1018, 2, 40);
	end();
	IS_INT(run(0), 0, "tail call: fed");
	IS_STR(render(&got),
	    "f d=1 p=main seen/seen i=3/3 t=10-20\n"
	    "g d=1 p=main seen/seen tail i=4/4 t=20-30\n"
	    "main d=0 p=- trace_start/snapshot_end i=7/14 t=0-40\n",
	    "tail call: g replaces f, marked, returns to main");
	IS_U64(got.st.tail_calls, 1, "tail call: counted");
	IS_U64(got.span[1].call_site, 0x2030, "tail call: call_site is the jmp");
}

static void
test_cold_and_jcc(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2040, 3, 20);	/* f: jcc taken into f.cold */
	blk(0x2800, 0x2810, 2, 30);	/* f.cold: jmp back into f */
	blk(0x2050, 0x2060, 2, 40);	/* f: ret */
	blk(0x1015, 0x1018, 1, 50);
	end();
	IS_INT(run(0), 0, "cold: fed");
	IS_STR(render(&got),
	    "f d=1 p=main seen/seen i=7/7 t=10-40\n"
	    "main d=0 p=- trace_start/snapshot_end i=6/13 t=0-50\n",
	    "cold: a jump into f.cold and back stays in f");
}

static void
test_plt(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1040, 5, 10);	/* main: call g@plt */
	blk(0x9000, 0x9000, 1, 11);	/* stub: jmp g */
	blk(0x3000, 0x3020, 4, 20);	/* g: ret */
	blk(0x1045, 0x1048, 1, 30);
	end();
	IS_INT(run(0), 0, "plt: fed");
	IS_STR(render(&got),
	    "g d=1 p=main seen/seen i=5/5 t=10-20\n"
	    "main d=0 p=- trace_start/snapshot_end i=6/11 t=0-30\n",
	    "plt: the stub's jump continues the call, not a tail call");
}

static void
test_longjmp(void)
{
	/* The real scenario: main -> f -> g -> longjmp -> back into main. */
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2010, 2, 20);	/* f: call g */
	blk(0x3000, 0x3010, 2, 30);	/* g: call longjmp */
	blk(0x7000, 0x7010, 3, 40);	/* longjmp: jmp *%rdx into main */
	blk(0x1050, 0x1058, 4, 50);	/* main after setjmp */
	end();
	IS_INT(run(0), 0, "longjmp: fed");
	IS_STR(render(&got),
	    "longjmp d=3 p=g seen/unwound i=3/3 t=30-40\n"
	    "g d=2 p=f seen/unwound i=2/5 t=20-40\n"
	    "f d=1 p=main seen/unwound i=2/7 t=10-40\n"
	    "main d=0 p=- trace_start/snapshot_end i=9/16 t=0-50\n",
	    "longjmp: the skipped frames end unwound");
	IS_U64(got.st.unwound, 3, "longjmp: 3 unwound");
}

static void
test_longjmp_below(void)
{
	thread(BLKS_THREAD_WRAPPED);
	gap(BLKS_GAP_RING_START, 100);
	blk(0x7008, 0x7010, 3, 110);	/* longjmp: jmp into main */
	blk(0x1050, 0x1058, 4, 120);	/* main after setjmp */
	end();
	IS_INT(run(0), 0, "longjmp below bottom: fed");
	IS_STR(render(&got),
	    "longjmp d=0 p=- ring_start/unwound i=3/3 t=110-110\n"
	    "main d=-1 p=- ring_start/snapshot_end i=4/4 t=110-120\n",
	    "longjmp below bottom: the target's frame, one level down");
}

static void
test_exception(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2010, 2, 20);	/* f: call g */
	blk(0x3000, 0x3010, 2, 30);	/* g: call h */
	blk(0x4000, 0x4010, 2, 40);	/* h: call raise */
	blk(0x8000, 0x8010, 9, 50);	/* raise: ret to f's landing pad */
	blk(0x2050, 0x2060, 3, 60);	/* f: landing pad, ret */
	blk(0x1015, 0x1018, 1, 70);
	end();
	IS_INT(run(0), 0, "exception: fed");
	IS_STR(render(&got),
	    "_Unwind_RaiseException d=4 p=h seen/unwound i=9/9 t=40-50\n"
	    "h d=3 p=g seen/unwound i=2/11 t=30-50\n"
	    "g d=2 p=f seen/unwound i=2/13 t=20-50\n"
	    "f d=1 p=main seen/seen i=5/18 t=10-60\n"
	    "main d=0 p=- trace_start/snapshot_end i=6/24 t=0-70\n",
	    "exception: the frames between thrower and catcher end unwound");
}

/*
 * The landing pad in main's cold part (g++ -O2 puts catch blocks
 * there): reached by the unwinder's return, or by its jump, it is main's
 * frame that catches.
 */
static void
test_exception_cold(int by_jump)
{
	const char *what = by_jump ? "exception into .cold by a jump" :
	    "exception into .cold";
	char name[96];

	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2010, 2, 20);	/* f: call g */
	blk(0x3000, 0x3010, 2, 30);	/* g: call raise */
	if (by_jump)
		blk(0x8020, 0x8030, 9, 40);	/* raise: jmp to the pad */
	else
		blk(0x8008, 0x8010, 9, 40);	/* raise: ret to the pad */
	blk(0x1800, 0x1810, 4, 50);	/* main.cold: the catch, jmp back */
	blk(0x1015, 0x1018, 1, 60);	/* main's hot code again */
	end();
	snprintf(name, sizeof(name), "%s: fed", what);
	IS_INT(run(0), 0, name);
	snprintf(name, sizeof(name), "%s: caught in main's frame", what);
	IS_STR(render(&got),
	    "_Unwind_RaiseException d=3 p=g seen/unwound i=9/9 t=30-40\n"
	    "g d=2 p=f seen/unwound i=2/11 t=20-40\n"
	    "f d=1 p=main seen/unwound i=2/13 t=10-40\n"
	    "main d=0 p=- trace_start/snapshot_end i=10/23 t=0-60\n", name);
}

static void
test_below_bottom(void)
{
	thread(BLKS_THREAD_WRAPPED);
	/* ptdecode gives a ring start no time (0): the overwritten trace. */
	gap(BLKS_GAP_RING_START, 0);
	blk(0x3018, 0x3020, 3, 110);	/* in g: ret into f */
	blk(0x2015, 0x2020, 2, 120);	/* f: ret into main */
	blk(0x1015, 0x1018, 1, 130);
	end();
	IS_INT(run(0), 0, "below bottom: fed");
	IS_STR(render(&got),
	    "g d=0 p=f ring_start/seen i=3/3 t=110-110\n"
	    "f d=-1 p=main ring_start/seen i=2/5 t=110-120\n"
	    "main d=-2 p=- ring_start/snapshot_end i=1/6 t=110-130\n",
	    "below bottom: callers start at the history's first instant");
	IS_INT(got.st.min_depth, -2, "below bottom: min depth");
	IS_STR(got.gaps, "ring_start 0-110 cut=0;",
	    "below bottom: the ring_start gap");
	IS_U64(got.st.first_ns, 110, "below bottom: the history's first ns");
	IS_U64(got.st.gap_ns, 0,
	    "below bottom: the overwritten trace is no gap of the history");
}

static void
test_signal(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1005, 5, 10);	/* main, interrupted at 0x1006 */
	event(BLKS_EV_DISABLED, 0, 0x1006, BLKS_DIS_ASYNC, 12);
	event(BLKS_EV_ENABLED, 0x5000, 0, 0, 20);
	blk(0x5000, 0x5010, 3, 30);	/* handler: ret to __restore_rt */
	blk(0x6000, 0x6005, 2, 40);	/* restorer: syscall rt_sigreturn */
	event(BLKS_EV_DISABLED, 0, 0, BLKS_DIS_SYNC, 41);
	event(BLKS_EV_ENABLED, 0x1006, 0, 0, 50);
	blk(0x1006, 0x1009, 4, 60);
	end();
	IS_INT(run(0), 0, "signal: fed");
	IS_STR(render(&got),
	    "handler d=1 p=main signal/seen async i=3/3 t=20-30\n"
	    "__restore_rt d=1 p=main return/sigreturn async i=2/2 t=30-50\n"
	    "main d=0 p=- trace_start/snapshot_end i=9/14 t=0-60\n",
	    "signal: handler and trampoline are async frames over main");
	IS_STR(got.gaps, "interrupt 12-20 cut=0;syscall 41-50 cut=0;",
	    "signal: kernel time as gaps");
	IS_STR(got.events,
	    "thread_start@0;signal@20;sigreturn@50;thread_end@60;",
	    "signal: events");
}

static void
test_signal_at_syscall(void)
{
	/* kill(getpid()): the handler runs at the syscall's return. */
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1030, 5, 10);	/* main: syscall */
	event(BLKS_EV_DISABLED, 0, 0, BLKS_DIS_SYNC, 11);
	event(BLKS_EV_ENABLED, 0x5000, 0, 0, 20);
	blk(0x5000, 0x5010, 3, 30);	/* handler: ret */
	blk(0x6000, 0x6005, 2, 40);	/* restorer: sigreturn */
	event(BLKS_EV_DISABLED, 0, 0, BLKS_DIS_SYNC, 41);
	event(BLKS_EV_ENABLED, 0x1032, 0, 0, 50);
	blk(0x1032, 0x1034, 2, 60);
	end();
	IS_INT(run(0), 0, "signal at syscall: fed");
	IS_STR(render(&got),
	    "handler d=1 p=main signal/seen async i=3/3 t=20-30\n"
	    "__restore_rt d=1 p=main return/sigreturn async i=2/2 t=30-50\n"
	    "main d=0 p=- trace_start/snapshot_end i=7/12 t=0-60\n",
	    "signal at syscall: resumes after the syscall");
	IS_STR(got.gaps, "syscall 11-20 cut=0;syscall 41-50 cut=0;",
	    "signal at syscall: gaps");
}

static void
test_syscall_gap(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2004, 2, 15);	/* f */
	blk(0x2005, 0x2010, 2, 20);	/* f: call g */
	blk(0x3000, 0x3020, 4, 25);	/* g: ret */
	blk(0x2015, 0x2020, 1, 30);	/* f: ret */
	blk(0x1015, 0x1030, 3, 40);	/* main: syscall */
	event(BLKS_EV_DISABLED, 0, 0, BLKS_DIS_SYNC, 41);
	event(BLKS_EV_ENABLED, 0x1032, 0, 0, 90);
	blk(0x1032, 0x1034, 2, 100);
	end();
	IS_INT(run(0), 0, "syscall: fed");
	IS_STR(render(&got),
	    "g d=2 p=f seen/seen i=4/4 t=20-25\n"
	    "f d=1 p=main seen/seen i=5/9 t=10-30\n"
	    "main d=0 p=- trace_start/snapshot_end i=10/19 t=0-100\n",
	    "syscall: the stack is kept");
	IS_STR(got.gaps, "syscall 41-90 cut=0;", "syscall: one gap, 49 ns");
}

static void
test_overflow_gap(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 5, 10);	/* main: call f */
	blk(0x2000, 0x2004, 2, 20);	/* f */
	gap(BLKS_GAP_OVERFLOW, 25);
	blk(0x3000, 0x3020, 4, 40);	/* g: ret into f */
	blk(0x2015, 0x2018, 1, 50);
	end();
	IS_INT(run(0), 0, "overflow: fed");
	IS_STR(render(&got),
	    "f d=1 p=main seen/gap i=2/2 t=10-25\n"
	    "main d=0 p=- trace_start/gap i=5/7 t=0-25\n"
	    "g d=0 p=f gap/seen i=4/4 t=40-40\n"
	    "f d=-1 p=- gap/snapshot_end i=1/5 t=40-50\n",
	    "overflow: open frames cut, the history resumes at the gap");
	IS_STR(got.gaps, "overflow 25-40 cut=2;", "overflow: gap 25-40");
	IS_U64(got.st.cut_frames, 2, "overflow: cut frames counted");
}

static void
test_depth_limit(void)
{
	thread(0);
	event(BLKS_EV_ENABLED, 0x1000, 0, 0, 0);
	blk(0x1000, 0x1010, 1, 1);
	for (int i = 0; i < 9; i++)
		blk(0x2000, 0x2010, 1, 2 + (uint64_t)i);
	end();
	IS_INT(run(8), 0, "depth limit: fed");
	IS_U64(got.n, 10, "depth limit: every frame reported once");
	IS_U64(got.st.cut_frames, 4, "depth limit: older half cut");
}

static void
test_bad_grouping(void)
{
	struct cs_code code = { NULL, fake_insn, fake_fn, NULL };
	struct cs_sink sink = { &got, sink_span, NULL, NULL, NULL };
	struct callstack *cs = cs_new(&code, &sink, 0);
	struct error e;

	blk(0x1000, 0x1010, 1, 1);
	IS_INT(cs_feed(cs, &recs[0], &e), -ERR_FORMAT,
	    "a block outside a thread is refused");
	IS_STR(e.msg, "block record outside a thread", "with a message");
	nrec = 0;
	cs_free(cs);
}

int
main(void)
{
	test_recursion();
	test_tail_call();
	test_cold_and_jcc();
	test_plt();
	test_longjmp();
	test_longjmp_below();
	test_exception();
	test_exception_cold(0);
	test_exception_cold(1);
	test_below_bottom();
	test_signal();
	test_signal_at_syscall();
	test_syscall_gap();
	test_overflow_gap();
	test_depth_limit();
	test_bad_grouping();
	test_kept_answers();
	test_stream_inline();
	/* Every scenario (run) went through the stream, twice. */
	IS_INT(streams_fed, 2 * 16, "scenarios fed through the stream");
	IS_INT(streams_refused, 0, "none refused by the writer");
	return tap_done();
}
