/*
 * The call-stack engine on a stream real silicon wrote: DynamoRIO's
 * hello (tests/data/dynamorio-hello: a write syscall, then exit) decoded
 * by ptdec and symbolized by codemap from the binary itself.  The one
 * function, its 8 instructions, the interrupt the hardware took before
 * the first instruction (an asynchronous disable, resumed at the same ip)
 * and the two syscalls must come out exact.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "span/callstack.h"
#include "span/spandir.h"
#include "span/codemap.h"
#include "base/error.h"
#include "dec/ptdec.h"
#include "tap.h"

struct got {
	struct callstack *cs;
	int rc;
	size_t spans;
	int named;
	char text[512];
	char gaps[256];
};

static int
feed(void *ctx, const struct blks_record *r, struct error *e)
{
	struct got *g = ctx;

	if (r->type == BLKS_EVENT)
		DIAG("event %s ip 0x%llx at 0x%llx arg %llu",
		    blks_event_name(r->u.event.kind),
		    (unsigned long long)r->u.event.ip,
		    (unsigned long long)r->u.event.at,
		    (unsigned long long)r->u.event.arg);
	if (g->rc == 0)
		g->rc = cs_feed(g->cs, r, e);
	return 0;
}

static int
on_span(void *ctx, const struct cs_span *s)
{
	struct got *g = ctx;
	size_t n = strlen(g->text);

	g->spans++;
	/* _start is a NOTYPE symbol of size 0 in this assembler binary. */
	g->named = s->fn.name == NULL || strcmp(s->fn.name, "_start") == 0;
	snprintf(g->text + n, sizeof(g->text) - n, "%s/%s self=%llu "
	    "total=%llu depth=%d",
	    spandir_start_name(s->start), spandir_end_name(s->end),
	    (unsigned long long)s->self_insns, (unsigned long long)s->insns,
	    s->depth);
	return 0;
}

static int
on_gap(void *ctx, const struct cs_gap *gp)
{
	struct got *g = ctx;
	size_t n = strlen(g->gaps);

	snprintf(g->gaps + n, sizeof(g->gaps) - n, "%s;",
	    spandir_gap_cause_name(gp->cause));
	return 0;
}

static uint8_t *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n = 0;

	*len = 0;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL &&
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*len = buf != NULL ? (size_t)n : 0;
	fclose(f);
	return buf;
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char dir[4096], bin[4200], path[4200];
	struct codemap_options co = { 0 };
	struct blks_map map = { 0 };
	struct blks_record rec;
	struct ptdec_images im;
	struct ptdec_config cfg;
	struct ptdec_thread th;
	struct ptdec_sink sink;
	struct blks_end end;
	struct codemap *cm = NULL;
	struct cs_code code;
	struct cs_sink out;
	struct got g;
	struct error e;
	uint8_t *pt;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/tests/data/dynamorio-hello",
	    src != NULL ? src : ".");
	snprintf(path, sizeof(path), "%s/pt.bin", dir);
	snprintf(bin, sizeof(bin), "%s/hello", dir);
	if ((pt = slurp(path, &len)) == NULL) {
		OK(0, "pt.bin read");
		return tap_done();
	}
	memset(&g, 0, sizeof(g));
	IS_INT(codemap_new(&cm, &co, &e), 0, "code map");
	map.pid = 1;
	map.start = 0x401000;
	map.size = 0x27;
	map.pgoff = 0x1000;
	map.name = "hello";
	map.image = bin;
	IS_INT(codemap_add(cm, &map, &e), 0, "hello's text mapped");
	codemap_code(cm, &code);
	out = (struct cs_sink){ &g, on_span, on_gap, NULL, NULL };
	g.cs = cs_new(&code, &out, 0);

	memset(&rec, 0, sizeof(rec));
	rec.type = BLKS_THREAD;
	rec.u.thread = (struct blks_thread){ 1, 1, 0, len, "hello" };
	IS_INT(cs_feed(g.cs, &rec, &e), 0, "thread opened");

	IS_INT(ptdec_images_init(&im, &e), 0, "decoder images");
	IS_INT(ptdec_images_add(&im, 1, 0x401000, 0x27, 0x1000, bin, &e), 0,
	    "decoder has hello");
	memset(&cfg, 0, sizeof(cfg));
	cfg.cpu = (struct pt_cpu){ pcv_intel, 6, 85, 4 };
	cfg.mtc_freq = 3;
	cfg.nom_freq = 37;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 308;
	cfg.time = (struct ptdec_time){ 31, 581029125,
	    18444502336406842448ULL, 0, 1 };
	cfg.images = &im;
	cfg.jobs = 1;
	th = (struct ptdec_thread){ 1, 1, pt, len, 0 };
	sink = (struct ptdec_sink){ feed, &g };
	IS_INT(ptdec_decode_thread(&ptdec_backend_libipt, &cfg, &th, &sink,
	    &end, &e), 0, "decoded");
	IS_INT(g.rc, 0, "every record accepted");

	rec.type = BLKS_END;
	rec.u.end = end;
	IS_INT(cs_feed(g.cs, &rec, &e), 0, "thread closed");
	IS_U64(g.spans, 1, "one span");
	IS_STR(g.text,
	    "trace_start/snapshot_end self=8 total=8 depth=0",
	    "_start with its 8 instructions, both edges explained");
	OK(g.named, "named _start, or unnamed (NOTYPE symbol), never wrong");
	IS_STR(g.gaps, "interrupt;syscall;syscall;",
	    "the fault before the first instruction, write, exit");

	cs_free(g.cs);
	codemap_free(cm);
	ptdec_images_fini(&im);
	free(pt);
	return tap_done();
}
