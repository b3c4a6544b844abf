/*
 * libFuzzer target for ptspans' engine: any block stream goes through the
 * reader, lib/callstack and the JSON Lines writers of cmd/ptspans without
 * a crash, a hang or a leak.  The code the engine asks about is made up
 * from the address bits (no files are read), so that every kind of branch
 * and function boundary the input can reach is exercised.
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
	return 0;
}
