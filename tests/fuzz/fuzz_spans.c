/*
 * libFuzzer target for ptspans' engine: any block stream goes through the
 * reader, lib/callstack and the JSON Lines writers of cmd/ptspans without
 * a crash, a hang or a leak.  The code the engine asks about is made up
 * from the address bits (no files are read), so that every kind of branch
 * and function boundary the input can reach is exercised.  Then the same
 * records go once more through one engine and once cut into chunks
 * (ptspans -j: cs_chunk_begin, cs_chunk_apply), and what the two hand
 * out must be the same, member by member (a digest of it).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/blkstream.h"
#include "span/callstack.h"
#include "span/spandir.h"
#include "base/error.h"
#include "base/jsonw.h"
#include "spans.h"
#include "sym/symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[8] = {
	"main", "f", "g@plt", "h.cold", "longjmp", "handler", "k", NULL,
};

static int
fz_insn(void *ctx, uint32_t pid, uint64_t ip, struct cs_insn *out)
{
	(void)ctx;
	(void)pid;
	if ((ip & 0xf) == 0xf)
		return 0;
	out->len = (uint8_t)(1 + (ip >> 4) % 15);
	out->kind = (uint8_t)(ip % 7);
	return 1;
}

static int
fz_fn(void *ctx, uint32_t pid, uint64_t ip, struct cs_fn *out)
{
	unsigned i = (unsigned)(ip >> 8) & 7;

	(void)ctx;
	(void)pid;
	memset(out, 0, sizeof(*out));
	out->module = (ip >> 12) & 1 ? "/lib/x.so" : NULL;
	out->module_base = ip & ~0xfffull;
	if (names[i] == NULL)
		return 0;
	out->lo = ip & ~0xffull;
	out->hi = out->lo + 0x100;
	out->name = out->raw = names[i];
	out->flags = i == 2 ? CS_FN_PLT : i == 3 ? CS_FN_COLD :
	    i == 4 ? CS_FN_LONGJMP : 0;
	return 1;
}

/*
 * code.block over fz_insn: answers kept by the engine (reuse, gen), and
 * inline runs through two made-up ranges for blocks of function k, so
 * that the engine's kept answers (cs_feed_run's path) are fuzzed too.
 */
static const struct sym_inline inl_outer = {
	0, 0, "outer", "outer", "k.c", 10, 1, 1, 1, NULL,
};
static const struct sym_inline inl_ranges[2] = {
	{ 0, 0, "outer", "outer", "k.c", 10, 1, 1, 1, NULL },
	{ 0, 0, "inner", "inner", "k.c", 20, 1, 2, 2, &inl_outer },
};
static uint64_t fz_gen;

static int
fz_block(void *ctx, uint32_t pid, uint64_t ip, uint64_t end_ip,
    uint32_t ninsn, struct cs_block_info *out)
{
	static struct cs_inline_run runs[2];

	out->end_known = (uint8_t)fz_insn(ctx, pid, end_ip, &out->end);
	out->reuse = (ip & 0x30) != 0x30;
	out->n_runs = 0;
	out->runs = runs;
	if (((ip >> 8) & 7) == 6 && ninsn >= 2) {
		runs[0].inl = &inl_ranges[0];
		runs[0].n = 1;
		runs[1].inl = &inl_ranges[1];
		runs[1].n = ninsn - 1;
		out->n_runs = 2;
	}
	return 0;
}

struct fz {
	struct jsonw w;
	struct span_writer *sw;
	struct inl_tree tree;
};

static int
fz_span(void *ctx, const struct cs_span *s)
{
	struct fz *z = ctx;

	if (spans_inline_tree(&z->tree, s) < 0)
		return -ERR_NOMEM;
	return spans_write_span(z->sw, s);
}

static int
fz_gap(void *ctx, const struct cs_gap *g)
{
	spandir_write_gap(&((struct fz *)ctx)->w, g);
	return 0;
}

static int
fz_event(void *ctx, const struct cs_event *ev)
{
	spandir_write_event(&((struct fz *)ctx)->w, ev);
	return 0;
}

/* ----------------------------------------------------------------- */
/* Serial against chunked */

struct digest {
	uint64_t h;
};

static void
mix(struct digest *d, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		d->h = (d->h ^ b[i]) * 0x100000001b3ull;
}

static void
mix_u64(struct digest *d, uint64_t v)
{
	mix(d, &v, sizeof(v));
}

static void
mix_str(struct digest *d, const char *s)
{
	if (s != NULL)
		mix(d, s, strlen(s) + 1);
	else
		mix_u64(d, 0x5a5a);
}

static int
dg_span(void *ctx, const struct cs_span *s)
{
	struct digest *d = ctx;

	mix_u64(d, 1);
	mix_u64(d, s->id);
	mix_u64(d, s->parent);
	mix_u64(d, s->tid | (uint64_t)s->pid << 32);
	mix_u64(d, (uint64_t)(int64_t)s->depth);
	mix_u64(d, s->fn.lo);
	mix_u64(d, s->fn.hi);
	mix_str(d, s->fn.name);
	mix_str(d, s->fn.module);
	mix_u64(d, s->fn.flags);
	mix_u64(d, s->entry);
	mix_u64(d, s->call_site);
	mix_u64(d, s->start_ns);
	mix_u64(d, s->end_ns);
	mix_u64(d, s->self_ns);
	mix_u64(d, s->insns);
	mix_u64(d, s->self_insns);
	mix_u64(d, s->start | s->end << 8 | s->tail_call << 16 |
	    (uint64_t)s->async << 24);
	for (size_t i = 0; i < s->n_inl; i++) {
		mix_u64(d, (uint64_t)(uintptr_t)s->inl[i].inl);
		mix_u64(d, s->inl[i].insns);
	}
	return 0;
}

static int
dg_gap(void *ctx, const struct cs_gap *g)
{
	struct digest *d = ctx;

	mix_u64(d, 2);
	mix_u64(d, g->tid | (uint64_t)g->cause << 32);
	mix_u64(d, g->ip);
	mix_u64(d, g->resume_ip);
	mix_u64(d, g->start_ns);
	mix_u64(d, g->end_ns);
	mix_u64(d, g->frames_cut | (uint64_t)(uint32_t)g->errcode << 32);
	mix_str(d, g->text);
	return 0;
}

static int
dg_event(void *ctx, const struct cs_event *ev)
{
	struct digest *d = ctx;

	mix_u64(d, 3);
	mix_u64(d, ev->tid | (uint64_t)ev->kind << 32);
	mix_u64(d, ev->time);
	mix_u64(d, ev->ip);
	mix_u64(d, ev->at);
	return 0;
}

static int
dg_thread_end(void *ctx, const struct cs_thread_stats *st)
{
	mix(ctx, st, sizeof(*st));
	return 0;
}

/* The records of the stream, strings copied (they live as long as r). */
struct recs {
	struct blks_record *r;
	char (*text)[BLKS_TEXT_MAX + 1];
	size_t n, cap;
};

static int
recs_read(struct recs *s, const uint8_t *data, size_t size)
{
	struct blks_reader *r;
	struct blks_record rec;
	struct error e;
	int rc;

	if (blks_reader_open_mem(&r, data, size, "fuzz", &e) < 0)
		return -1;
	while ((rc = blks_read(r, &rec, &e)) == 1) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 256;
			void *nr = realloc(s->r, cap * sizeof(*s->r));
			void *nt;

			if (nr == NULL)
				break;
			s->r = nr;
			if ((nt = realloc(s->text, cap * sizeof(*s->text))) ==
			    NULL)
				break;
			s->text = nt;
			s->cap = cap;
		}
		s->r[s->n] = rec;
		if (rec.type == BLKS_GAP || rec.type == BLKS_THREAD) {
			const char *t = rec.type == BLKS_GAP ? rec.u.gap.text :
			    rec.u.thread.name;

			snprintf(s->text[s->n], sizeof(s->text[s->n]), "%s",
			    t ? t : "");
		}
		s->n++;
	}
	/* Only now: text moves while it grows. */
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i].type == BLKS_GAP)
			s->r[i].u.gap.text = s->text[i];
		else if (s->r[i].type == BLKS_THREAD)
			s->r[i].u.thread.name = s->text[i];
	blks_reader_free(r);
	return 0;
}

/* Feeds records [from, to) to cs the serial way; <0 stops. */
static int
feed_recs(struct callstack *cs, const struct recs *s, size_t from, size_t to)
{
	struct error e;

	for (size_t i = from; i < to; i++) {
		if (s->r[i].type == BLKS_MAP) {
			fz_gen++;
			continue;
		}
		if (cs_feed(cs, &s->r[i], &e) < 0)
			return -1;
	}
	return 0;
}

/*
 * The records through one engine, and cut after every `every`th block
 * into chunks applied in order; the digests must be equal.  A stream
 * the serial engine refuses (bad grouping) is not compared: where it
 * stops, a chunk stops elsewhere.
 */
static void
differential(const struct recs *s, const struct cs_code *code,
    unsigned every, size_t max_depth)
{
	struct digest ds = { 0xcbf29ce484222325ull }, dc = ds, none = ds;
	struct cs_sink sink_s = { &ds, dg_span, dg_gap, dg_event,
	    dg_thread_end };
	struct cs_sink sink_c = { &dc, dg_span, dg_gap, dg_event,
	    dg_thread_end };
	struct cs_sink sink_w = { &none, dg_span, dg_gap, dg_event,
	    dg_thread_end };
	struct callstack *ser = cs_new(code, &sink_s, max_depth);
	struct callstack *real = cs_new(code, &sink_c, max_depth);
	struct callstack *w = cs_new(code, &sink_w, max_depth);
	struct cs_chunk *c = NULL;
	struct blks_block ctx;
	int have_ctx = 0, in_thread = 0, ok = 1;
	uint32_t tid = 0, pid = 0, space = 0;
	uint64_t gen0 = fz_gen;
	size_t i = 0, n = 0;
	struct error e;

	if (ser == NULL || real == NULL || w == NULL)
		goto out;
	if (feed_recs(ser, s, 0, s->n) < 0)
		goto out;
	fz_gen = gen0;
	while (i < s->n && ok) {
		struct cs_chunk_start start;
		size_t begin = i;
		int rc = 0;

		if (!in_thread) {
			/* Outside threads: MAP records, the serial way. */
			if (s->r[i].type != BLKS_THREAD) {
				if (feed_recs(real, s, i, i + 1) < 0)
					ok = 0;
				i++;
				continue;
			}
			tid = s->r[i].u.thread.tid;
			pid = space = s->r[i].u.thread.pid;
			have_ctx = 0;
			in_thread = 1;
		}
		memset(&start, 0, sizeof(start));
		start.tid = tid;
		start.pid = pid;
		start.space = space;
		start.ctx = have_ctx ? &ctx : NULL;
		start.reuse = c;
		c = NULL;
		if (cs_chunk_begin(w, &start, &e) < 0) {
			ok = 0;
			break;
		}
		while (i < s->n) {
			const struct blks_record *r = &s->r[i++];

			if (rc >= 0 && r->type != BLKS_MAP)
				rc = cs_feed(w, r, &e);
			if (r->type == BLKS_EVENT &&
			    r->u.event.kind == BLKS_EV_EXEC)
				space = blks_space(pid,
				    (uint32_t)r->u.event.arg);
			if (r->type == BLKS_END) {
				in_thread = 0;
				break;
			}
			if (r->type == BLKS_BLOCK && ++n % every == 0 &&
			    r->u.block.time != UINT64_MAX) {
				ctx = r->u.block;
				have_ctx = 1;
				break;
			}
		}
		if (rc < 0 && !cs_chunk_bailed(w))
			ok = 0;
		if (cs_chunk_end(w, &c, &e) < 0) {
			ok = 0;
			break;
		}
		if (!ok)
			break;
		if ((rc = cs_chunk_apply(real, c, &e)) < 0)
			ok = 0;
		else if (rc == 0 && feed_recs(real, s, begin, i) < 0)
			ok = 0;
	}
	if (ok && ds.h != dc.h) {
		fprintf(stderr, "fuzz_spans: serial and chunked engines differ "
		    "(chunks of %u blocks)\n", every);
		abort();
	}
out:
	fz_gen = gen0;
	cs_chunk_free(c);
	cs_free(ser);
	cs_free(real);
	cs_free(w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct cs_code code = { NULL, fz_insn, fz_fn, NULL };
	struct cs_code kept = { NULL, fz_insn, fz_fn, NULL, fz_block,
	    &fz_gen };
	struct blks_run run;
	int rc = 0;
	struct fz z;
	struct cs_sink cs_sink = { &z, fz_span, fz_gap, fz_event, NULL };
	struct blks_reader *r;
	struct blks_record rec;
	struct callstack *cs;
	struct error e;

	if (sink == NULL && (sink = fopen("/dev/null", "w")) == NULL)
		return 0;
	if (blks_reader_open_mem(&r, data, size, "fuzz", &e) < 0)
		return 0;
	memset(&z, 0, sizeof(z));
	jsonw_init(&z.w, sink);
	if ((z.sw = spans_writer_new(sink)) == NULL) {
		blks_reader_free(r);
		return 0;
	}
	/* A small depth limit reaches the stack-halving path too; half
	 * the inputs go as ptspans feeds them (runs, kept answers). */
	if ((cs = cs_new(size % 4 >= 2 ? &kept : &code, &cs_sink, 64)) ==
	    NULL) {
		spans_writer_free(z.sw);
		blks_reader_free(r);
		return 0;
	}
	while (rc == 0) {
		if (size % 4 >= 2 && blks_run_begin(r, &run)) {
			rc = cs_feed_run(cs, &run, &e);
			blks_run_end(r, &run);
			if (rc < 0)
				break;
		}
		if (blks_read(r, &rec, &e) <= 0)
			break;
		if (rec.type == BLKS_MAP)
			fz_gen++;
		else
			rc = cs_feed(cs, &rec, &e);
	}
	(void)spans_writer_flush(z.sw);
	(void)jsonw_finish(&z.w);
	spans_writer_free(z.sw);
	cs_free(cs);
	free(z.tree.node);
	blks_reader_free(r);
	{
		struct recs s = { NULL, NULL, 0, 0 };

		/* Every other input: three engines more an input. */
		if (size % 2 == 0 && recs_read(&s, data, size) == 0 &&
		    s.n > 0)
			differential(&s, size % 4 >= 2 ? &kept : &code,
			    1 + (unsigned)(size / 4 % 7), size % 3 ? 0 : 64);
		free(s.r);
		free(s.text);
	}
	return 0;
}
