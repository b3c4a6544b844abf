/*
 * Unit test of lib/callstack's chunks (ptspans -j) on random streams:
 * a made-up program, runs of it generated at random (calls, returns that
 * match, returns that do not and returns below the first frame, tail
 * calls, jumps into other functions and into cold parts, PLT stubs,
 * longjmp, system calls, signals and sigreturns, asynchronous branches,
 * gaps of every cause, execs, wrapped rings, times that repeat or go
 * back, threads of several processes), each fed once to one engine and
 * once cut into chunks at random blocks, rebuilt by other engines and
 * applied in order.  Everything the two hand out must be the same, in
 * the same order, down to every member.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "span/callstack.h"
#include "tap.h"

/* ----------------------------------------------------------------- */
/* The program: 16 functions of 0x1000 bytes; the branch at an address
 * is its low nibble's. */

#define BASE 0x100000ull
#define NFN 16
#define FN_LO(i) (BASE + (uint64_t)(i) * 0x1000)

enum { K_OTHER, K_CALL, K_RET, K_JMP, K_JCC, K_SYSCALL };

static const char *const fn_names[NFN] = {
	"main", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9",
	"longjmp", "g@plt", "f12", "f12.cold", NULL, "f15",
};

static int
kind_at(uint64_t ip, struct cs_insn *out)
{
	static const uint8_t kinds[6] = { CS_OTHER, CS_CALL, CS_RET, CS_JMP,
	    CS_JCC, CS_SYSCALL };
	static const uint8_t lens[6] = { 1, 5, 1, 2, 2, 2 };
	unsigned k = ip & 0xf;

	if (k > K_SYSCALL)
		k = K_OTHER;
	out->kind = kinds[k];
	out->len = lens[k];
	return 1;
}

static int
code_insn(void *ctx, uint32_t pid, uint64_t ip, struct cs_insn *out)
{
	(void)ctx;
	(void)pid;
	if (ip == BASE + 0xbad0)
		return 0;		/* an end that does not decode */
	return kind_at(ip, out);
}

static int
code_fn(void *ctx, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	unsigned i;

	(void)ctx;
	memset(out, 0, sizeof(*out));
	if (ip < BASE || ip >= FN_LO(NFN))
		return 0;
	i = (unsigned)((ip - BASE) >> 12);
	out->module = "prog";
	out->module_base = BASE;
	/* pid 2's program 1 (after an exec) has f15 where f1 was. */
	if (pid == (2u | 1u << BLKS_EXEC_SHIFT) && i == 1)
		i = 15;
	if (fn_names[i] == NULL || ip - FN_LO(i) >= 0xc00)
		return 0;
	out->lo = FN_LO(i);
	out->hi = FN_LO(i) + 0xc00;
	out->name = out->raw = fn_names[i];
	out->flags = i == 10 ? CS_FN_LONGJMP : i == 11 ? CS_FN_PLT :
	    i == 13 ? CS_FN_COLD : 0;
	return 1;
}

/* Inline ranges: any distinct objects do. */
static const char inl_objs[3];

static int
code_runs(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_inline_run *runs, size_t max)
{
	(void)ctx;
	(void)pid;
	(void)end_ip;
	if (max < 2 || ninsn < 2 || (ip & 0x30) == 0)
		return 1 + 0 * (int)(runs[0].inl = NULL, runs[0].n = ninsn);
	runs[0].inl = (const struct sym_inline *)&inl_objs[(ip >> 4) % 3];
	runs[0].n = 1;
	runs[1].inl = NULL;
	runs[1].n = ninsn - 1;
	return 2;
}

static uint64_t code_gen = 1;

static int
code_block(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	static struct cs_inline_run runs[CS_MAX_RUNS];
	int n = code_runs(ctx, pid, ip, end_ip, ninsn, runs, CS_MAX_RUNS);
	uint32_t kept = 0;

	for (int i = 0; i < n; i++)
		if (runs[i].inl != NULL)
			runs[kept++] = runs[i];
	out->runs = runs;
	out->n_runs = kept;
	out->end_known = (uint8_t)code_insn(ctx, pid, end_ip, &out->end);
	out->reuse = out->end_known;
	return 0;
}

/* ----------------------------------------------------------------- */
/* What the engines hand out, as text. */

struct out {
	char *buf;
	size_t n, cap;
};

static void
put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->n, o->cap - o->n, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < o->cap - o->n) {
			o->n += (size_t)n;
			return;
		}
		o->cap = o->cap ? 2 * o->cap : 1 << 16;
		if ((o->buf = realloc(o->buf, o->cap)) == NULL)
			abort();
	}
}

static int
out_span(void *ctx, const struct cs_span *s)
{
	struct out *o = ctx;

	put(o, "span %" PRIu64 " %" PRIu64 " %u %u %d %s %" PRIx64 " %" PRIx64
	    " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRIu64 " %"
	    PRIu64 " %" PRIu64 " %" PRIu64 " %u %u %u %u", s->id, s->parent,
	    s->tid, s->pid, s->depth, s->fn.name ? s->fn.name : "-",
	    s->fn.lo, s->fn.hi, (uint64_t)s->fn.flags, s->entry, s->call_site,
	    s->start_ns, s->end_ns, s->self_ns, s->insns, s->self_insns,
	    s->start, s->end, s->tail_call, s->async);
	for (size_t i = 0; i < s->n_inl; i++)
		put(o, " %d:%" PRIu64, (int)((const char *)s->inl[i].inl -
		    inl_objs), s->inl[i].insns);
	put(o, "\n");
	return 0;
}

static int
out_gap(void *ctx, const struct cs_gap *g)
{
	put(ctx, "gap %u %u %" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRIu64
	    " %u %d %s\n", g->tid, g->cause, g->ip, g->resume_ip, g->start_ns,
	    g->end_ns, g->frames_cut, g->errcode, g->text ? g->text : "-");
	return 0;
}

static int
out_event(void *ctx, const struct cs_event *ev)
{
	put(ctx, "event %u %u %" PRIu64 " %" PRIx64 " %" PRIx64 "\n", ev->tid,
	    ev->kind, ev->time, ev->ip, ev->at);
	return 0;
}

static int
out_thread_end(void *ctx, const struct cs_thread_stats *st)
{
	put(ctx, "thread %u %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
	    " %" PRIu64 " %" PRIu64 " %d %" PRIu64 " %" PRIu64 " %" PRIu64
	    " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
	    PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", st->tid, st->pid,
	    st->first_ns, st->last_ns, st->blocks, st->insns, st->spans,
	    st->max_depth_seen, st->min_depth, st->gaps, st->gap_ns,
	    st->cut_frames, st->unwound, st->tail_calls, st->signals,
	    st->sigreturns, st->ret_mismatch, st->unknown_insn, st->unnamed,
	    st->ring_start, st->gaps);
	return 0;
}

/* ----------------------------------------------------------------- */
/* Random runs */

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)((rng >> 11) % n);
}

struct stream {
	struct blks_record *r;
	size_t n, cap;
};

static void
emit(struct stream *s, const struct blks_record *r)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		if ((s->r = realloc(s->r, s->cap * sizeof(*s->r))) == NULL)
			abort();
	}
	s->r[s->n++] = *r;
}

/* An address in function i whose branch is kind k, at or after ip. */
static uint64_t
end_in(unsigned i, unsigned k, uint64_t ip)
{
	uint64_t lo = FN_LO(i), e;

	if (ip < lo || ip >= lo + 0xb00)
		ip = lo;
	e = (ip & ~0xfull) + 0x10 * (1 + rnd(4)) + k;
	return e < lo + 0xbf0 ? e : lo + 0xbf0 + k;
}

static unsigned
fn_of(uint64_t ip)
{
	return ip >= BASE && ip < FN_LO(NFN) ? (unsigned)((ip - BASE) >> 12) :
	    0;
}

/*
 * One thread's run: a model stack of return addresses makes most
 * returns match; the rest of the choices are dice.
 */
static void
gen_thread(struct stream *s, uint32_t tid, uint32_t pid, unsigned blocks)
{
	struct blks_record r;
	uint64_t stack[64], ip, time = 1 + rnd(5);
	size_t sp = 0;
	uint32_t exec = 0;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_THREAD;
	r.u.thread.tid = tid;
	r.u.thread.pid = pid;
	r.u.thread.flags = rnd(3) == 0 ? BLKS_THREAD_WRAPPED : 0;
	r.u.thread.name = "t";
	emit(s, &r);
	if (r.u.thread.flags & BLKS_THREAD_WRAPPED) {
		memset(&r, 0, sizeof(r));
		r.type = BLKS_GAP;
		r.u.gap.cause = BLKS_GAP_RING_START;
		r.u.gap.time = time;
		r.u.gap.text = "ring start";
		emit(s, &r);
	}
	ip = FN_LO(rnd(10)) + 0x10 * rnd(8);
	for (unsigned b = 0; b < blocks; b++) {
		unsigned f = fn_of(ip), k = rnd(16), d = rnd(100);
		uint64_t end, next;

		k = k < 4 ? K_CALL : k < 8 ? K_RET : k < 10 ? K_JMP :
		    k < 12 ? K_JCC : k < 13 ? K_SYSCALL : K_OTHER;
		end = end_in(f, k, ip);
		if (d == 0)
			end = BASE + 0xbad0;
		memset(&r, 0, sizeof(r));
		r.type = BLKS_BLOCK;
		r.u.block.ip = ip;
		r.u.block.end_ip = end;
		r.u.block.ninsn = 1 + rnd(6);
		r.u.block.iclass = (uint8_t)(1 + rnd(8));
		/* Times mostly move on, sometimes stand, rarely go back. */
		time += rnd(40) == 0 ? (uint64_t)-1 : rnd(4);
		r.u.block.time = time;
		emit(s, &r);
		switch (k) {
		case K_CALL:
			next = FN_LO(rnd(13)) + (rnd(20) == 0 ? 0x40 : 0);
			if (rnd(30) == 0)
				next = end + 5;		/* a PIC thunk */
			if (sp < 64 && next != end + 5)
				stack[sp++] = end + 5;
			break;
		case K_RET:
			if (sp > 0 && rnd(25) != 0)
				next = stack[--sp];
			else if (rnd(2) == 0 && sp > 1)
				next = stack[(sp = rnd((uint32_t)sp))];
			else
				next = FN_LO(rnd(14)) + 0x10 * (1 + rnd(60));
			break;
		case K_JMP:
			d = rnd(10);
			next = d < 5 ? end_in(f, K_OTHER, ip) :
			    d < 7 ? FN_LO(rnd(13)) :
			    d < 8 ? FN_LO(13) + 0x20 :
			    d < 9 ? FN_LO(rnd(13)) + 0x100 : 0x99000;
			break;
		case K_JCC:
			next = rnd(2) ? end + 2 : end_in(f, K_OTHER, ip);
			break;
		default:
			next = end + (k == K_SYSCALL ? 2 : 1);
			break;
		}
		d = rnd(60);
		memset(&r, 0, sizeof(r));
		r.type = BLKS_EVENT;
		r.u.event.time = time + rnd(3);
		if (k == K_SYSCALL || d == 0) {
			r.u.event.kind = BLKS_EV_DISABLED;
			r.u.event.arg = d == 0 ? BLKS_DIS_ASYNC : BLKS_DIS_SYNC;
			r.u.event.at = d == 0 ? next : 0;
			emit(s, &r);
			r.u.event.kind = BLKS_EV_ENABLED;
			r.u.event.arg = 1;
			/* Back where it left, or in a handler. */
			if (rnd(4) == 0) {
				if (sp < 64)
					stack[sp++] = 0;
				next = FN_LO(rnd(13));
			}
			r.u.event.ip = next;
			if (rnd(3) != 0)
				emit(s, &r);
		} else if (d == 1) {
			r.u.event.kind = BLKS_EV_ASYNC_BRANCH;
			r.u.event.at = next;
			next = FN_LO(rnd(13)) + 0x10 * rnd(3);
			r.u.event.ip = next;
			emit(s, &r);
		} else if (d == 2) {
			r.u.event.kind = BLKS_EV_EXEC;
			r.u.event.arg = ++exec;
			emit(s, &r);
			sp = 0;
		} else if (d == 3 || d == 4) {
			memset(&r, 0, sizeof(r));
			r.type = BLKS_GAP;
			r.u.gap.cause = (uint8_t)(d == 3 ? BLKS_GAP_DECODE_ERROR :
			    1 + rnd(5));
			if (r.u.gap.cause == BLKS_GAP_RING_START)
				r.u.gap.cause = BLKS_GAP_LOST;
			r.u.gap.ip = rnd(2) ? end : 0;
			r.u.gap.time = time + rnd(3);
			r.u.gap.errcode = -(int32_t)rnd(20);
			r.u.gap.text = d == 3 ? "decode" : "";
			emit(s, &r);
			sp = 0;
			next = FN_LO(rnd(13)) + 0x10 * rnd(40);
		} else if (d == 5) {
			memset(&r, 0, sizeof(r));
			r.type = BLKS_EVENT;
			r.u.event.kind = BLKS_EV_OVERFLOW;
			r.u.event.time = time;
			emit(s, &r);
			sp = 0;
		} else if (d == 6) {
			/* An event the engine ignores. */
			r.u.event.kind = BLKS_EV_CBR;
			emit(s, &r);
		}
		ip = next;
		if (fn_of(ip) >= NFN || ip < BASE)
			ip = FN_LO(rnd(13));
	}
	memset(&r, 0, sizeof(r));
	r.type = BLKS_END;
	r.u.end.tid = tid;
	emit(s, &r);
}

/* ----------------------------------------------------------------- */
/* The two ways */

static struct callstack *
engine(struct out *o, size_t max_depth)
{
	struct cs_code code = { NULL, code_insn, code_fn, code_runs,
	    code_block, &code_gen };
	struct cs_sink sink = { o, out_span, out_gap, out_event,
	    out_thread_end };
	struct callstack *cs = cs_new(&code, &sink, max_depth);

	if (cs == NULL)
		abort();
	return cs;
}

static void
serial(const struct stream *s, struct out *o, size_t max_depth)
{
	struct callstack *cs = engine(o, max_depth);
	struct error e;

	for (size_t i = 0; i < s->n; i++)
		if (cs_feed(cs, &s->r[i], &e) < 0)
			abort();
	cs_free(cs);
}

struct tally {
	uint64_t chunks, rebuilt;
};

/*
 * The stream cut after blocks at random (one in `every` blocks), each
 * piece rebuilt by one of two worker engines and applied in order.
 */
static void
chunked(const struct stream *s, struct out *o, unsigned every,
    size_t max_depth, struct tally *tl)
{
	struct out none = { 0 };
	struct callstack *real = engine(o, max_depth);
	struct callstack *w[2] = { engine(&none, max_depth),
	    engine(&none, max_depth) };
	struct cs_chunk *spare = NULL;
	struct error e;
	size_t i = 0, begin;
	uint32_t tid = 0, pid = 0, space = 0;
	const struct blks_block *ctx = NULL;

	while (i < s->n) {
		/* top_from and top_to NULL: this test finds no frame of
		 * another function's code (par.c's retry does) */
		struct cs_chunk_start start = { 0 };
		struct callstack *we = w[tl->chunks & 1];
		struct cs_chunk *c;
		int rc = 0;

		if (s->r[i].type == BLKS_THREAD) {
			tid = s->r[i].u.thread.tid;
			pid = space = s->r[i].u.thread.pid;
			ctx = NULL;
		}
		start.tid = tid;
		start.pid = pid;
		start.space = space;
		start.ctx = ctx;
		start.reuse = spare;
		spare = NULL;
		if (cs_chunk_begin(we, &start, &e) < 0)
			abort();
		/* One chunk: to a cut after a block, or the thread's END. */
		for (begin = i; i < s->n; ) {
			const struct blks_record *r = &s->r[i++];

			if (rc >= 0)
				rc = r->type == BLKS_BLOCK && rnd(2) ?
				    cs_feed_blocks(we, &r->u.block, 1, &e) :
				    cs_feed(we, r, &e);
			if (r->type == BLKS_EVENT &&
			    r->u.event.kind == BLKS_EV_EXEC)
				space = blks_space(pid, (uint32_t)r->u.event.arg);
			if (r->type == BLKS_END)
				break;
			if (r->type == BLKS_BLOCK && rnd(every) == 0) {
				ctx = &r->u.block;
				break;
			}
		}
		if (rc < 0 && !cs_chunk_bailed(we))
			abort();
		if (cs_chunk_end(we, &c, &e) < 0)
			abort();
		tl->chunks++;
		rc = cs_chunk_apply(real, c, &e);
		if (rc < 0)
			abort();
		if (rc == 0) {
			tl->rebuilt++;
			for (size_t k = begin; k < i; k++)
				if (cs_feed(real, &s->r[k], &e) < 0)
					abort();
		}
		if (s->r[i - 1].type == BLKS_END)
			ctx = NULL;
		cs_chunk_free(spare);
		spare = c;
	}
	cs_chunk_free(spare);
	cs_free(w[0]);
	cs_free(w[1]);
	cs_free(real);
	free(none.buf);
}

static void
gen_stream(struct stream *s, unsigned threads, unsigned blocks)
{
	s->n = 0;
	for (unsigned t = 0; t < threads; t++)
		gen_thread(s, 100 + t, t % 3 == 2 ? 2 : 1 + t % 2,
		    blocks / 2 + rnd(blocks));
}

int
main(void)
{
	static const unsigned every[] = { 1, 2, 5, 40 };
	struct stream s = { 0 };
	struct tally tl = { 0, 0 };
	int differ = 0, runs = 0;

	rng = 0x9e3779b97f4a7c15ull;
	for (int seed = 0; seed < 300; seed++) {
		struct out a = { 0 }, b = { 0 };
		size_t max_depth = seed % 5 == 4 ? 8 : 0;

		gen_stream(&s, 1 + (unsigned)seed % 4, 200 + (unsigned)rnd(600));
		serial(&s, &a, max_depth);
		chunked(&s, &b, every[seed % 4], max_depth, &tl);
		runs++;
		if (a.n != b.n || memcmp(a.buf, b.buf, a.n) != 0) {
			if (differ++ == 0) {
				FILE *f = fopen("t_callstack_chunk.serial", "w");
				FILE *g = fopen("t_callstack_chunk.chunked", "w");

				if (f != NULL)
					fwrite(a.buf, 1, a.n, f), fclose(f);
				if (g != NULL)
					fwrite(b.buf, 1, b.n, g), fclose(g);
				DIAG("seed %d differs first (outputs written to "
				    "t_callstack_chunk.serial, .chunked)", seed);
			}
		}
		free(a.buf);
		free(b.buf);
	}
	free(s.r);
	IS_INT(differ, 0, "chunked runs equal to serial ones");
	IS_INT(runs, 300, "runs compared");
	DIAG("%" PRIu64 " chunks, %" PRIu64 " rebuilt", tl.chunks, tl.rebuilt);
	OK(tl.chunks > 10000, "many chunks");
	/* Most chunks stand on the frames before them. */
	OK(tl.rebuilt * 2 < tl.chunks, "most chunks applied, not rebuilt");
	return tap_done();
}
