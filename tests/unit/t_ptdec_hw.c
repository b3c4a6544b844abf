/*
 * lib/ptdec on a genuine hardware stream: tests/data/dynamorio-hello,
 * a Skylake-SP trace of a static `hello` (8 instructions: two syscalls),
 * decoded with the parameters its README gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "dec/ptdec.h"
#include "tap.h"

struct tally {
	uint64_t blocks, insns, user_insns, gaps, unknown_image, decode_errors;
	uint64_t enabled, disabled, first_ip, last_time;
	int time_backwards;
	char classes[64];
};

static int
tally_emit(void *ctx, const struct blks_record *r, struct error *e)
{
	struct tally *t = ctx;

	(void)e;
	if (r->type == BLKS_BLOCK) {
		size_t n = strlen(t->classes);

		if (t->blocks++ == 0)
			t->first_ip = r->u.block.ip;
		t->insns += r->u.block.ninsn;
		if (r->u.block.ip >= 0x401000 && r->u.block.ip < 0x401027)
			t->user_insns += r->u.block.ninsn;
		if (n + 2 < sizeof(t->classes))
			snprintf(t->classes + n, 3, "%c ", '0' + (r->u.block.iclass & 7));
		if (r->u.block.time < t->last_time)
			t->time_backwards++;
		t->last_time = r->u.block.time;
	} else if (r->type == BLKS_GAP) {
		t->gaps++;
		t->unknown_image += r->u.gap.cause == BLKS_GAP_UNKNOWN_IMAGE;
		t->decode_errors += r->u.gap.cause == BLKS_GAP_DECODE_ERROR;
		DIAG("gap %s at 0x%llx: %s", blks_gap_cause_name(r->u.gap.cause),
		    (unsigned long long)r->u.gap.ip, r->u.gap.text);
	} else if (r->type == BLKS_EVENT) {
		t->enabled += r->u.event.kind == BLKS_EV_ENABLED;
		t->disabled += r->u.event.kind == BLKS_EV_DISABLED;
	}
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

static void
run(const struct ptdec_images *im, const uint8_t *pt, size_t len,
    unsigned jobs, size_t chunk, struct tally *t)
{
	struct ptdec_config cfg;
	struct ptdec_thread th = { 1, 1, pt, len, 0 };
	struct ptdec_sink sink = { tally_emit, t };
	struct blks_end end;
	struct error e;

	memset(&cfg, 0, sizeof(cfg));
	memset(t, 0, sizeof(*t));
	cfg.cpu = (struct pt_cpu){ pcv_intel, 6, 85, 4 };
	cfg.mtc_freq = 3;
	cfg.nom_freq = 37;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 308;
	cfg.time = (struct ptdec_time){ 31, 581029125,
	    18444502336406842448ULL, 0, 1 };
	cfg.images = im;
	cfg.jobs = jobs;
	cfg.chunk_bytes = chunk;
	IS_INT(ptdec_decode_thread(&ptdec_backend_libipt, &cfg, &th, &sink,
	    &end, &e), 0, "decode, -j%u", jobs);
	IS_U64(end.c[BLKS_C_BLOCKS], t->blocks, "END counts the blocks");
	IS_U64(end.c[BLKS_C_INSNS], t->insns, "END counts the instructions");
	IS_U64(end.c[BLKS_C_TRACE_BYTES], len, "END counts the trace bytes");
}

int
main(void)
{
	const char *src = getenv("PTKIT_SRC");
	char dir[4096], path[4200];
	struct ptdec_images im;
	struct tally a, b;
	struct error e;
	uint8_t *pt;
	size_t len = 0;

	snprintf(dir, sizeof(dir), "%s/tests/data/dynamorio-hello",
	    src != NULL ? src : ".");
	snprintf(path, sizeof(path), "%s/pt.bin", dir);
	pt = slurp(path, &len);
	IS_U64(len, 2272, "pt.bin read");
	if (pt == NULL)
		return tap_done();
	snprintf(path, sizeof(path), "%s/hello", dir);
	IS_INT(ptdec_images_init(&im, &e), 0, "images");
	/* the R E segment: file offset 0x1000, 0x27 bytes at 0x401000 */
	IS_INT(ptdec_images_add(&im, 1, 0x401000, 0x27, 0x1000, path, &e), 0,
	    "hello's text added");
	run(&im, pt, len, 1, SIZE_MAX, &a);
	DIAG("%llu blocks, %llu insns (%llu in hello), %llu gaps; classes %s",
	    (unsigned long long)a.blocks, (unsigned long long)a.insns,
	    (unsigned long long)a.user_insns, (unsigned long long)a.gaps,
	    a.classes);
	IS_U64(a.user_insns, 8, "the 8 instructions of hello");
	IS_U64(a.insns, 8, "and nothing else");
	IS_U64(a.first_ip, 0x401000, "starting at _start");
	IS_STR(a.classes, "6 6 ", "two blocks, each ending in a syscall");
	IS_U64(a.gaps, 0, "no gaps (the trace is user space only)");
	IS_U64(a.decode_errors, 0, "no decode errors");
	IS_INT(a.time_backwards, 0, "times never go back");
	run(&im, pt, len, 2, 1, &b);
	IS_U64(b.insns, a.insns, "-j2 with every PSB a seam: same instructions");
	IS_U64(b.blocks, a.blocks, "and same blocks");
	IS_U64(b.gaps, a.gaps, "and same gaps");
	ptdec_images_fini(&im);
	free(pt);
	return tap_done();
}
