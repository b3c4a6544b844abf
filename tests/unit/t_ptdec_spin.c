/*
 * Tests that neither decoder walks a loop of direct branches for ever.
 * The code (a spinning program's `for (;;);` and a function beside it):
 *
 *   0x401000: jmp 0x401000    eb fe     the spin loop
 *   0x401002: nop             90
 *   0x401003: ret             c3
 *
 * A direct jump needs no trace, so once the decoder is at 0x401000 and
 * the next packet does not stop it there (a TIP or TNT the loop never
 * asks for, an event whose ip it never reaches), libipt's block decoder
 * returns the same one-instruction block without reading a packet.  Both decoders give
 * up after PTDEC_SPIN_MAX such blocks with a decode_error GAP and go on
 * at the next PSB: after a TIP the loop never asks for, a stray TNT, a
 * FUP at an ip it never reaches; where the trace ends in the loop the
 * decode just ends.  The streams are made here with libipt's encoder; each
 * decode runs under an alarm, so a decoder that spins fails the test
 * instead of hanging it.
 *
 * `t_ptdec_spin PERF_DATA LOOP_IP` instead writes such a stream over the
 * first thread's trace in a snapshot's perf.data, for
 * tests/e2e/t5002-spin-loop.sh (see patch_snapshot); `t_ptdec_spin
 * --ring LOOP_IP` writes it to standard output (a fuzz seed, see
 * tests/fuzz/mkseeds-ptdec-fast.sh).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "fmt/perfdata.h"
#include "dec/ptdec.h"
#include "tap.h"

#define CODE_VA 0x401000ULL
#define SPIN 0x401000ULL
#define NOP 0x401002ULL
#define RET 0x401003ULL

static const uint8_t code[] = { 0xeb, 0xfe, 0x90, 0xc3 };

/* ------------------------------------------------------------------ */
/* Streams */

struct enc {
	struct pt_encoder *enc;
	uint8_t buf[4096];
	int failed;
};

static void
emit(struct enc *s, struct pt_packet *p)
{
	if (pt_enc_next(s->enc, p) < 0)
		s->failed = 1;
}

static void
emit_ip(struct enc *s, enum pt_packet_type type, enum pt_ip_compression ipc,
    uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	emit(s, &p);
}

static void
emit_tsc(struct enc *s, uint64_t tsc)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = tsc;
	emit(s, &p);
}

static void
emit_mode(struct enc *s)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	emit(s, &p);
}

static void
emit_type(struct enc *s, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	emit(s, &p);
}

/* PSB+ at time tsc; fup 0: tracing is off (no FUP). */
static void
emit_psb(struct enc *s, uint64_t tsc, uint64_t fup)
{
	emit_type(s, ppt_psb);
	emit_tsc(s, tsc);
	emit_mode(s);
	if (fup != 0)
		emit_ip(s, ppt_fup, pt_ipc_sext_48, fup);
	emit_type(s, ppt_psbend);
}

static void
enc_begin(struct enc *s)
{
	struct pt_config cfg;

	memset(s, 0, sizeof(*s));
	pt_config_init(&cfg);
	cfg.begin = s->buf;
	cfg.end = s->buf + sizeof(s->buf);
	s->enc = pt_alloc_encoder(&cfg);
	if (s->enc == NULL)
		s->failed = 1;
}

/* Returns the stream's length, 0 if the encoder failed. */
static uint64_t
enc_off(struct enc *s)
{
	uint64_t off = 0;

	if (s->enc != NULL)
		pt_enc_get_offset(s->enc, &off);
	return off;
}

static size_t
enc_end(struct enc *s)
{
	uint64_t off = 0;

	if (s->enc != NULL) {
		pt_enc_get_offset(s->enc, &off);
		pt_free_encoder(s->enc);
	}
	return s->failed ? 0 : (size_t)off;
}

/* ------------------------------------------------------------------ */
/* Decoding */

/* Records one decode emitted, and their bytes as a block stream. */
struct recs {
	struct blks_record *r;
	size_t nr, cap;
	struct blks_writer *w;
	char *bytes;
	size_t len;
	FILE *f;
	struct blks_end end;
};

/* More than a decode of these streams may emit: it spins. */
#define MAX_RECORDS (4 * PTDEC_SPIN_MAX)

static int
keep(void *ctx, const struct blks_record *r, struct error *e)
{
	struct recs *s = ctx;

	if (s->nr == MAX_RECORDS)
		return error_set(e, ERR_RANGE, "more than %d records",
		    MAX_RECORDS);
	if (s->nr == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct blks_record *n = realloc(s->r, cap * sizeof(*n));

		if (n == NULL)
			return error_set(e, ERR_NOMEM, "records");
		s->r = n;
		s->cap = cap;
	}
	s->r[s->nr++] = *r;
	return blks_write(s->w, r, e);
}

static const struct blks_header hdr = { .snapshot = "spin" };

static void
on_alarm(int sig)
{
	static const char msg[] = "Bail out! a decoder spins\n";

	(void)sig;
	(void)!write(1, msg, sizeof(msg) - 1);
	_exit(1);
}

/* Decodes buf with backend (chunk size, jobs) into s; ptdec's rc. */
static int
decode(struct recs *s, const struct ptdec_backend *be,
    const struct ptdec_images *im, const uint8_t *buf, size_t len,
    size_t chunk, unsigned jobs)
{
	struct ptdec_config cfg;
	struct ptdec_thread th = { 7, 1, buf, len, 0 };
	struct ptdec_sink sink = { keep, s, NULL, NULL };
	struct blks_record r;
	struct error e;
	int rc;

	memset(s, 0, sizeof(*s));
	memset(&cfg, 0, sizeof(cfg));
	cfg.time = (struct ptdec_time){ 0, 1, 0, 1000, 1 };
	cfg.images = im;
	cfg.chunk_bytes = chunk;
	cfg.jobs = jobs;
	s->f = open_memstream(&s->bytes, &s->len);
	error_clear(&e);
	STEP(blks_writer_open_file(&s->w, s->f, &hdr, &e));
	memset(&r, 0, sizeof(r));
	r.type = BLKS_THREAD;
	r.u.thread = (struct blks_thread){ .tid = 7, .pid = 1, .name = "t" };
	STEP(blks_write(s->w, &r, &e));
	alarm(30);
	rc = ptdec_decode_thread(be, &cfg, &th, &sink, &s->end, &e);
	alarm(0);
	if (rc < 0)
		DIAG("decode: %s", e.msg);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_END;
	r.u.end = s->end;
	r.u.end.c[BLKS_C_FALLBACKS] = 0;	/* the one field that differs */
	STEP(blks_write(s->w, &r, &e));
	STEP(blks_writer_close(s->w, &e));
	fclose(s->f);
	return rc;
}

static void
recs_free(struct recs *s)
{
	free(s->r);
	free(s->bytes);
}

static size_t
count_type(const struct recs *s, int type)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nr; i++)
		n += s->r[i].type == type;
	return n;
}

/* Whether r[from, to) are all the spin loop's one-instruction block. */
static int
spin_blocks(const struct recs *s, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		const struct blks_block *b = &s->r[i].u.block;

		if (s->r[i].type != BLKS_BLOCK || b->ip != SPIN ||
		    b->end_ip != SPIN || b->ninsn != 1 ||
		    b->iclass != ptic_jump || b->mode != ptem_64bit)
			return 0;
	}
	return 1;
}


/* The gap that ends a spin, at the loop. */
static void
check_gap(const char *what, const struct blks_record *r, uint64_t off,
    uint64_t skipped)
{
	IS_INT(r->type, BLKS_GAP, "%s: a GAP after the loop's blocks", what);
	if (r->type != BLKS_GAP)
		return;
	IS_INT(r->u.gap.cause, BLKS_GAP_DECODE_ERROR, "%s: decode_error",
	    what);
	IS_STR(r->u.gap.text,
	    "no trace for 65536 blocks: a loop of direct branches",
	    "%s: its text", what);
	IS_U64(r->u.gap.ip, SPIN, "%s: at the loop", what);
	IS_U64(r->u.gap.offset, off, "%s: where libipt stopped reading", what);
	IS_U64(r->u.gap.bytes_skipped, skipped, "%s: %llu bytes skipped",
	    what, (unsigned long long)skipped);
	IS_INT(r->u.gap.errcode, 0, "%s: libipt reported no error", what);
}

/* fast == native, in one chunk and one a PSB, -j1 and -j2. */
static void
check_same(const char *what, const struct ptdec_images *im,
    const struct recs *n, const uint8_t *buf, size_t len)
{
	static const struct { size_t chunk; unsigned jobs; } how[] = {
		{ SIZE_MAX, 1 }, { 1, 1 }, { 1, 2 },
	};
	struct recs f;

	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		IS_INT(decode(&f, &ptdec_backend_fast, im, buf, len,
		    how[i].chunk, how[i].jobs), 0, "%s: fast decoder ends "
		    "(chunk %zu, -j%u)", what, how[i].chunk, how[i].jobs);
		OK(n->len == f.len && memcmp(n->bytes, f.bytes, n->len) == 0,
		    "%s: fast == native, byte for byte (%zu bytes)", what,
		    n->len);
		IS_U64(f.end.c[BLKS_C_FALLBACKS], 1,
		    "%s: the spinning interval went to libipt", what);
		recs_free(&f);
	}
}

/*
 * Tracing enables at the loop and the next packet is a TIP, which a
 * direct jump never asks for: the decoder walks the loop until the bound.
 */
static void
check_tip(const struct ptdec_images *im)
{
	struct recs n;
	struct enc s;
	uint64_t tip;
	size_t len;

	enc_begin(&s);
	emit_psb(&s, 1000000, 0);
	emit_mode(&s);
	emit_ip(&s, ppt_tip_pge, pt_ipc_sext_48, SPIN);
	tip = enc_off(&s);
	emit_ip(&s, ppt_tip, pt_ipc_sext_48, RET);
	len = enc_end(&s);
	OK(len > 0, "tip: a %zu-byte stream", len);
	IS_INT(decode(&n, &ptdec_backend_libipt, im, s.buf, len, SIZE_MAX, 1),
	    0, "tip: native decoder ends");
	IS_U64(n.nr, 1 + PTDEC_SPIN_MAX + 1, "tip: enable, blocks, gap");
	if (n.nr == 1 + PTDEC_SPIN_MAX + 1) {
		IS_INT(n.r[0].type, BLKS_EVENT, "tip: the enable first");
		IS_INT(n.r[0].u.event.kind, BLKS_EV_ENABLED, "of kind enabled");
		OK(spin_blocks(&n, 1, 1 + PTDEC_SPIN_MAX),
		    "tip: then 65536 blocks of the loop's jmp");
		check_gap("tip", &n.r[1 + PTDEC_SPIN_MAX], tip, len - tip);
	}
	IS_U64(n.end.c[BLKS_C_DECODE_ERRORS], 1, "tip: END counts it");
	check_same("tip", im, &n, s.buf, len);
	recs_free(&n);
}

/*
 * The loop from a PSB+, then a TNT it never asks for (trace the decoder
 * cannot follow), then more trace: the next PSB+ at the nop, whose ret
 * goes back to the loop, where tracing stops.  The gap ends the first
 * interval only: decoding resumes at the next PSB.
 */
static void
check_resync(const struct ptdec_images *im)
{
	struct pt_packet p;
	struct recs n;
	struct enc s;
	uint64_t tnt, psb;
	size_t len;

	enc_begin(&s);
	emit_psb(&s, 1000000, SPIN);
	tnt = enc_off(&s);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 1;
	p.payload.tnt.payload = 1;
	emit(&s, &p);
	psb = enc_off(&s);
	emit_psb(&s, 2000000, NOP);
	emit_ip(&s, ppt_tip, pt_ipc_sext_48, SPIN);
	emit_ip(&s, ppt_tip_pgd, pt_ipc_sext_48, SPIN);
	len = enc_end(&s);
	OK(len > 0, "resync: a %zu-byte stream", len);
	IS_INT(decode(&n, &ptdec_backend_libipt, im, s.buf, len, SIZE_MAX, 1),
	    0, "resync: native decoder ends");
	IS_U64(n.nr, PTDEC_SPIN_MAX + 3, "resync: blocks, gap, block, event");
	if (n.nr == PTDEC_SPIN_MAX + 3) {
		const struct blks_record *r = &n.r[PTDEC_SPIN_MAX + 1];

		OK(spin_blocks(&n, 0, PTDEC_SPIN_MAX),
		    "resync: 65536 blocks of the loop's jmp");
		check_gap("resync", &n.r[PTDEC_SPIN_MAX], tnt, psb - tnt);
		OK(r->type == BLKS_BLOCK && r->u.block.ip == NOP &&
		    r->u.block.end_ip == RET && r->u.block.ninsn == 2 &&
		    r->u.block.iclass == ptic_return,
		    "resync: then the nop and ret from the next PSB");
		r++;
		OK(r->type == BLKS_EVENT && r->u.event.kind ==
		    BLKS_EV_DISABLED && r->u.event.ip == SPIN,
		    "resync: and tracing stops at the loop");
	}
	IS_U64(n.end.c[BLKS_C_PSBS], 2, "resync: both PSBs decoded");
	check_same("resync", im, &n, s.buf, len);
	recs_free(&n);
}

/*
 * An asynchronous disable at an ip the loop never reaches (the FUP of a
 * corrupt trace): the nop and ret go to the loop, where the decoder walks
 * to the FUP's ip, reading ahead into the next PSB+ (the GAP's offset is
 * its PSBEND, past the interval: no bytes skipped).  The count starts
 * at the first look after the ret read its TIP, 63 blocks into the loop.
 * Decoding goes on at the next PSB+: at the nop again, and tracing stops
 * at the loop.
 */
static void
check_fup(const struct ptdec_images *im)
{
	const size_t loop = PTDEC_SPIN_MAX + 63;
	struct recs n;
	struct enc s;
	uint64_t psbend;
	size_t len;

	enc_begin(&s);
	emit_psb(&s, 1000000, NOP);
	emit_ip(&s, ppt_tip, pt_ipc_sext_48, SPIN);
	emit_ip(&s, ppt_fup, pt_ipc_sext_48, RET);
	emit_ip(&s, ppt_tip_pgd, pt_ipc_suppressed, 0);
	emit_psb(&s, 2000000, NOP);
	psbend = enc_off(&s) - 2;
	emit_ip(&s, ppt_tip, pt_ipc_sext_48, SPIN);
	emit_ip(&s, ppt_tip_pgd, pt_ipc_sext_48, SPIN);
	len = enc_end(&s);
	OK(len > 0, "fup: a %zu-byte stream", len);
	IS_INT(decode(&n, &ptdec_backend_libipt, im, s.buf, len, SIZE_MAX, 1),
	    0, "fup: native decoder ends");
	IS_U64(n.nr, 1 + loop + 3, "fup: block, loop, gap, block, event");
	if (n.nr == 1 + loop + 3) {
		const struct blks_record *r = &n.r[0];

		OK(r->type == BLKS_BLOCK && r->u.block.ip == NOP &&
		    r->u.block.end_ip == RET && r->u.block.ninsn == 2,
		    "fup: the nop and ret");
		OK(spin_blocks(&n, 1, 1 + loop),
		    "fup: then %zu blocks of the loop's jmp", loop);
		check_gap("fup", &n.r[1 + loop], psbend, 0);
		r = &n.r[2 + loop];
		OK(r->type == BLKS_BLOCK && r->u.block.ip == NOP &&
		    r->u.block.end_ip == RET && r->u.block.ninsn == 2,
		    "fup: the nop and ret again from the next PSB");
		r++;
		OK(r->type == BLKS_EVENT && r->u.event.kind ==
		    BLKS_EV_DISABLED && r->u.event.ip == SPIN,
		    "fup: and tracing stops at the loop");
	}
	check_same("fup", im, &n, s.buf, len);
	recs_free(&n);
}

/*
 * Where the trace ends in the loop, libipt says so (pts_eos) and the
 * decode ends without walking it: no block, no gap.  Tracing enabled by
 * a TIP.PGE, and by the FUP of a PSB+ (as a snapshot of a spinning
 * program on hardware ends), and PSB+ after PSB+ at the loop (its FUP
 * binds at once).
 */
static void
check_ends(const struct ptdec_images *im)
{
	struct recs n, f;
	struct enc s;
	size_t len;

	for (int k = 0; k < 3; k++) {
		enc_begin(&s);
		if (k == 0) {
			emit_psb(&s, 1000000, 0);
			emit_mode(&s);
			emit_ip(&s, ppt_tip_pge, pt_ipc_sext_48, SPIN);
		}
		for (int i = 0; i < (k == 2 ? 4 : k); i++) {
			emit_psb(&s, 1000000 + 1000 * (uint64_t)i, SPIN);
			for (int j = 0; j < 8; j++)
				emit_type(&s, ppt_pad);
		}
		len = enc_end(&s);
		IS_INT(decode(&n, &ptdec_backend_libipt, im, s.buf, len, 1, 1),
		    0, "end %d: native decoder ends", k);
		IS_U64(count_type(&n, BLKS_BLOCK) + count_type(&n, BLKS_GAP),
		    0, "end %d: no block, no gap", k);
		IS_INT(decode(&f, &ptdec_backend_fast, im, s.buf, len, 1, 1),
		    0, "end %d: fast decoder ends", k);
		OK(n.len == f.len && memcmp(n.bytes, f.bytes, n.len) == 0,
		    "end %d: fast == native", k);
		IS_U64(f.end.c[BLKS_C_FALLBACKS], 0,
		    "end %d: the fast decoder did it itself", k);
		recs_free(&n);
		recs_free(&f);
	}
}

/*
 * A trace for the loop of direct branches at loop_ip in a real program:
 * tracing enabled there, a TIP the loop never asks for, then PSB+ at the
 * loop and tracing off there.  Sets *tip and *psb to the offsets of the
 * TIP and of the second PSB.  Returns its length, 0 if encoding failed.
 */
static size_t
spin_ring(struct enc *s, uint64_t loop_ip, uint64_t *tip, uint64_t *psb)
{
	enc_begin(s);
	emit_psb(s, 1000000000000ULL, 0);
	emit_mode(s);
	emit_ip(s, ppt_tip_pge, pt_ipc_sext_48, loop_ip);
	*tip = enc_off(s);
	emit_ip(s, ppt_tip, pt_ipc_sext_48, loop_ip + 0x1000);
	for (int i = 0; i < 64; i++)
		emit_type(s, ppt_pad);
	*psb = enc_off(s);
	emit_psb(s, 1000000001000ULL, loop_ip);
	emit_ip(s, ppt_tip_pgd, pt_ipc_sext_48, loop_ip);
	return enc_end(s);
}

/*
 * Overwrites the trace of perf.data's first AUXTRACE queue, every byte
 * (its length stays), with spin_ring(loop_ip); PAD packets fill the
 * rest.  Prints the offsets of the TIP and of the second PSB in the
 * trace.  Returns 0 or 1.
 */
static int
patch_snapshot(const char *path, uint64_t loop_ip)
{
	struct perfdata *pd = NULL;
	const struct perfdata_queue *qu;
	struct enc s;
	struct error e;
	uint64_t tip, psb, done = 0;
	size_t len;
	FILE *f;
	int ok = 1;

	if ((len = spin_ring(&s, loop_ip, &tip, &psb)) == 0 ||
	    perfdata_read(&pd, path, &e) < 0 ||
	    pd->nr_queues == 0 || (f = fopen(path, "r+b")) == NULL) {
		fprintf(stderr, "t_ptdec_spin: %s: cannot patch\n", path);
		perfdata_free(pd);
		return 1;
	}
	qu = &pd->queues[0];
	for (size_t i = 0; i < qu->nr_chunks; i++) {
		const struct perfdata_auxtrace *a = &pd->auxtrace[qu->chunk[i]];
		uint8_t rh[8];

		/* the payload follows the record's header, of its size */
		ok = ok && fseek(f, (long)a->file_offset, SEEK_SET) == 0 &&
		    fread(rh, 1, 8, f) == 8 &&
		    fseek(f, (long)(a->file_offset + (rh[6] | rh[7] << 8)),
		    SEEK_SET) == 0;
		for (uint64_t k = 0; ok && k < a->size; k++, done++)
			ok = putc(done < len ? s.buf[done] : 0, f) != EOF;
	}
	ok = fclose(f) == 0 && ok && done >= len;
	perfdata_free(pd);
	if (!ok) {
		fprintf(stderr, "t_ptdec_spin: %s: patch failed\n", path);
		return 1;
	}
	printf("%llu %llu\n", (unsigned long long)tip,
	    (unsigned long long)psb);
	return 0;
}

int
main(int argc, char *argv[])
{
	char path[] = "/tmp/ptkit-t_ptdec_spin-XXXXXX";
	struct ptdec_images im;
	struct error e;
	int fd;

	if (argc == 3 && strcmp(argv[1], "--ring") == 0) {
		struct enc s;
		uint64_t tip, psb;
		size_t len = spin_ring(&s, strtoull(argv[2], NULL, 16), &tip,
		    &psb);

		return len == 0 || fwrite(s.buf, 1, len, stdout) != len ||
		    fflush(stdout) != 0;
	}
	if (argc == 3)
		return patch_snapshot(argv[1], strtoull(argv[2], NULL, 16));
	if ((fd = mkstemp(path)) < 0 || write(fd, code, sizeof(code)) != (ssize_t)sizeof(code))
		return 1;
	close(fd);
	signal(SIGALRM, on_alarm);
	IS_INT(ptdec_images_init(&im, &e), 0, "images");
	IS_INT(ptdec_images_add(&im, 1, CODE_VA, sizeof(code), 0, path, &e),
	    0, "code added");
	IS_STR(PTDEC_SPIN_TEXT,
	    "no trace for 65536 blocks: a loop of direct branches",
	    "the text says the bound");
	check_tip(&im);
	check_resync(&im);
	check_fup(&im);
	check_ends(&im);
	ptdec_images_fini(&im);
	unlink(path);
	return tap_done();
}
