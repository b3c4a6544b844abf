/*
 * Tests for lib/ptdec on streams made here with libipt's encoder over a
 * tiny piece of code whose path is known exactly:
 *
 *   0x401000: add rax,1       48 83 c0 01
 *   0x401004: cmp rax,rbx     48 39 d8
 *   0x401007: jne 0x401000    75 f7
 *   0x401009: call 0x401010   e8 02 00 00 00
 *   0x40100e: jmp 0x401000    eb f0
 *   0x401010: nop             90
 *   0x401011: ret             c3
 *
 * A round runs the loop k times (k-1 taken jne, one not taken), calls,
 * returns (TIP) and jumps back: 3k + 4 instructions.  The last round ends
 * with TIP.PGD at the return.  PSB+ (with a FUP) sits between rounds or
 * between the add and the cmp, so chunk seams fall at block boundaries
 * and inside blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "dec/ptdec.h"
#include "tap.h"

#define CODE_VA 0x401000ULL
#define LOOP 0x401000ULL
#define AFTER_ADD 0x401004ULL
#define RET_TARGET 0x40100eULL

static const uint8_t code[] = {
	0x48, 0x83, 0xc0, 0x01, 0x48, 0x39, 0xd8, 0x75, 0xf7,
	0xe8, 0x02, 0x00, 0x00, 0x00, 0xeb, 0xf0, 0x90, 0xc3,
};

struct enc {
	struct pt_encoder *enc;
	uint8_t *buf;
	size_t cap;
	uint8_t tnt;		/* pending bits, oldest in the highest */
	int ntnt;
	uint64_t tsc;
	uint64_t insns;		/* instructions the path executes */
	uint64_t calls, rets;
	uint64_t branches;	/* jne, call, ret, jmp executed */
	uint64_t mid_psbs;	/* PSB+ inside a block: cuts it in two */
	int failed;
};

static void
emit(struct enc *s, struct pt_packet *p)
{
	if (pt_enc_next(s->enc, p) < 0)
		s->failed = 1;
}

static void
emit_ip(struct enc *s, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	emit(s, &p);
}

static void
flush_tnt(struct enc *s)
{
	struct pt_packet p;

	if (s->ntnt == 0)
		return;
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)s->ntnt;
	p.payload.tnt.payload = s->tnt;
	emit(s, &p);
	s->ntnt = 0;
	s->tnt = 0;
}

static void
tnt_bit(struct enc *s, int taken)
{
	s->tnt = (uint8_t)(s->tnt << 1 | (taken ? 1 : 0));
	if (++s->ntnt == 6)
		flush_tnt(s);
}

static void
emit_simple(struct enc *s, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	if (type == ppt_tsc)
		p.payload.tsc.tsc = s->tsc;
	if (type == ppt_mode) {
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
	}
	emit(s, &p);
}

/* PSB+; fup 0 means tracing is off (no FUP). */
static void
emit_psb(struct enc *s, uint64_t fup)
{
	flush_tnt(s);
	emit_simple(s, ppt_psb);
	emit_simple(s, ppt_tsc);
	emit_simple(s, ppt_mode);
	if (fup != 0)
		emit_ip(s, ppt_fup, fup);
	emit_simple(s, ppt_psbend);
}

/* One loop iteration; mid_psb puts a PSB+ between the add and the cmp. */
static void
iteration(struct enc *s, int taken, int mid_psb)
{
	s->tsc += 1;
	if (mid_psb) {
		emit_psb(s, AFTER_ADD);
		s->mid_psbs++;
	}
	s->tsc += 2;
	s->insns += 3;
	s->branches++;
	tnt_bit(s, taken);
}

/* Starts encoding into a fresh buffer of cap bytes. */
static void
enc_begin(struct enc *s, size_t cap)
{
	struct pt_config cfg;

	memset(s, 0, sizeof(*s));
	s->cap = cap;
	s->buf = calloc(1, s->cap);
	pt_config_init(&cfg);
	cfg.begin = s->buf;
	cfg.end = s->buf + s->cap;
	s->enc = pt_alloc_encoder(&cfg);
	s->tsc = 1000000;
}

/* Ends encoding; the stream's length, 0 on failure. */
static size_t
enc_end(struct enc *s)
{
	uint64_t off = 0;

	flush_tnt(s);
	pt_enc_get_offset(s->enc, &off);
	pt_free_encoder(s->enc);
	return s->failed ? 0 : (size_t)off;
}

/* n taken loops, their TNT bits flushed. */
static void
loops(struct enc *s, int n)
{
	for (int i = 0; i < n; i++)
		iteration(s, 1, 0);
	flush_tnt(s);
}

struct shape {
	int rounds;
	int psb_every;		/* rounds between PSBs at round starts */
	int mid_every;		/* rounds between PSBs inside a loop */
};

/* Encodes the stream; returns its length (0 on failure). */
static size_t
build(struct enc *s, const struct shape *sh, unsigned seed)
{
	enc_begin(s, 1 << 20);
	emit_psb(s, 0);
	emit_simple(s, ppt_mode);
	emit_ip(s, ppt_tip_pge, LOOP);
	for (int r = 0; r < sh->rounds; r++) {
		int k = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 9;

		if (r > 0 && r % sh->psb_every == 0)
			emit_psb(s, LOOP);
		for (int i = 0; i < k; i++)
			iteration(s, i + 1 < k, sh->mid_every > 0 &&
			    r % sh->mid_every == 1 && i == k / 2 && i > 0);
		flush_tnt(s);
		s->insns += 3;	/* call, nop, ret */
		s->calls++;
		s->rets++;
		s->branches += 2;
		s->tsc += 3;
		if (r + 1 == sh->rounds) {
			emit_ip(s, ppt_tip_pgd, RET_TARGET);
			break;
		}
		emit_ip(s, ppt_tip, RET_TARGET);
		s->insns += 1;	/* jmp */
		s->branches++;
		s->tsc += 1;
		if (r % 5 == 4)
			emit_simple(s, ppt_tsc);
	}
	return enc_end(s);
}

/* A sink that encodes the records with blkstream and tallies them. */
struct collect {
	struct blks_writer *w;
	char *bytes;
	size_t len;
	FILE *f;
	uint64_t blocks, insns, calls, rets, gaps, events;
	uint64_t gap_cause[BLKS_GAP_CAUSE_MAX];
	uint64_t enabled, disabled;
	int gap_err;			/* the last GAP's */
	uint64_t gap_ip;
	struct blks_record first;
	int nr;
	uint64_t last_time;
	int time_backwards;
};

static int
collect_emit(void *ctx, const struct blks_record *r, struct error *e)
{
	struct collect *c = ctx;

	if (c->nr++ == 0)
		c->first = *r;
	if (r->type == BLKS_BLOCK) {
		c->blocks++;
		c->insns += r->u.block.ninsn;
		c->calls += r->u.block.iclass == ptic_call;
		c->rets += r->u.block.iclass == ptic_return;
		if (r->u.block.time < c->last_time)
			c->time_backwards++;
		c->last_time = r->u.block.time;
	} else if (r->type == BLKS_GAP) {
		c->gaps++;
		c->gap_err = r->u.gap.errcode;
		c->gap_ip = r->u.gap.ip;
		if (r->u.gap.cause < BLKS_GAP_CAUSE_MAX)
			c->gap_cause[r->u.gap.cause]++;
	} else if (r->type == BLKS_EVENT) {
		c->events++;
		c->enabled += r->u.event.kind == BLKS_EV_ENABLED;
		c->disabled += r->u.event.kind == BLKS_EV_DISABLED;
	}
	return blks_write(c->w, r, e);
}

static const struct blks_header hdr = { .snapshot = "test" };

/* Decodes buf with chunk size and jobs into c; returns ptdec's rc. */
static int
decode_with(struct collect *c, const struct ptdec_backend *be,
    const struct ptdec_images *im, const uint8_t *buf, size_t len,
    size_t chunk, unsigned jobs, int wrapped)
{
	struct ptdec_config cfg;
	struct ptdec_thread th = { 7, 1, buf, len, wrapped };
	struct ptdec_sink sink = { collect_emit, c };
	struct blks_record r;
	struct error e;
	int rc;

	memset(c, 0, sizeof(*c));
	memset(&cfg, 0, sizeof(cfg));
	cfg.time = (struct ptdec_time){ 0, 1, 0, 1000000, 1 };
	cfg.images = im;
	cfg.chunk_bytes = chunk;
	cfg.jobs = jobs;
	c->f = open_memstream(&c->bytes, &c->len);
	STEP(blks_writer_open_file(&c->w, c->f, &hdr, &e));
	memset(&r, 0, sizeof(r));
	r.type = BLKS_THREAD;
	r.u.thread = (struct blks_thread){ .tid = 7, .pid = 1, .name = "t" };
	STEP(blks_write(c->w, &r, &e));
	error_clear(&e);
	rc = ptdec_decode_thread(be, &cfg, &th, &sink, &r.u.end, &e);
	if (rc < 0)
		DIAG("decode: %s", e.msg);
	c->nr = (int)r.u.end.c[BLKS_C_PSBS];
	r.type = BLKS_END;
	STEP(blks_write(c->w, &r, &e));
	STEP(blks_writer_close(c->w, &e));
	fclose(c->f);
	return rc;
}

static int
decode(struct collect *c, const struct ptdec_images *im, const uint8_t *buf,
    size_t len, size_t chunk, unsigned jobs, int wrapped)
{
	return decode_with(c, &ptdec_backend_libipt, im, buf, len, chunk, jobs,
	    wrapped);
}

static void
collect_free(struct collect *c)
{
	free(c->bytes);
}

static int
same_bytes(const struct collect *a, const struct collect *b)
{
	static int dumped;
	int same = a->len == b->len && memcmp(a->bytes, b->bytes, a->len) == 0;

	if (!same && getenv("T_PTDEC_DUMP") != NULL && !dumped++) {
		FILE *f = fopen("/tmp/t_ptdec.a", "wb");

		fwrite(a->bytes, 1, a->len, f);
		fclose(f);
		f = fopen("/tmp/t_ptdec.b", "wb");
		fwrite(b->bytes, 1, b->len, f);
		fclose(f);
	}
	return same;
}

static void
check_clean(const struct ptdec_images *im)
{
	struct shape sh = { 300, 3, 4 };
	struct collect one, many, par, par2;
	struct enc s;
	size_t len = build(&s, &sh, 1);

	OK(len > 0, "encoded a %zu-byte stream of %llu instructions", len,
	    (unsigned long long)s.insns);
	IS_INT(decode(&one, im, s.buf, len, SIZE_MAX, 1, 0), 0,
	    "one decoder over the whole ring");
	IS_U64(one.insns, s.insns, "every instruction of the path decoded");
	IS_U64(one.calls, s.calls, "calls end blocks of class call");
	IS_U64(one.rets, s.rets, "returns end blocks of class return");
	IS_U64(one.blocks, s.branches,
	    "every branch ends a block, a PSB+ inside one does not");
	OK(s.mid_psbs > 10, "%llu PSB+ inside blocks",
	    (unsigned long long)s.mid_psbs);
	IS_U64(one.gaps, 0, "no gaps");
	IS_U64(one.enabled, 1, "one enable");
	IS_U64(one.disabled, 1, "one disable");
	IS_U64(one.time_backwards, 0, "block times never go back");
	DIAG("%llu blocks, %llu events", (unsigned long long)one.blocks,
	    (unsigned long long)one.events);

	IS_INT(decode(&many, im, s.buf, len, 1, 1, 0), 0,
	    "every PSB a seam, one job");
	OK(many.nr > 100, "%d PSBs, each a seam", many.nr);
	IS_U64(many.insns, s.insns, "seams lose no instruction");
	OK(same_bytes(&one, &many),
	    "block stream with seams == without (%zu bytes)", one.len);
	IS_INT(decode(&par, im, s.buf, len, 1, 3, 0), 0, "-j3, every PSB");
	OK(same_bytes(&one, &par), "-j3 output == -j1 output");
	IS_INT(par.nr, one.nr, "END counts the same PSBs");
	IS_INT(decode(&par2, im, s.buf, len, 700, 2, 0), 0, "-j2, 700 B");
	OK(same_bytes(&one, &par2), "-j2 700-byte chunks == -j1");
	collect_free(&one);
	collect_free(&many);
	collect_free(&par);
	collect_free(&par2);
	free(s.buf);
}

static void
check_damage(const struct ptdec_images *im)
{
	struct shape sh = { 200, 2, 0 };
	struct collect c, d;
	struct enc s;
	size_t len = build(&s, &sh, 2);
	uint8_t *bad = malloc(len + 64);
	uint64_t psb1 = 0;

	/* garbage inserted in the middle: one GAP, then decoding goes on */
	memcpy(bad, s.buf, len / 2);
	memset(bad + len / 2, 0xc9, 64);
	memcpy(bad + len / 2 + 64, s.buf + len / 2, len - len / 2);
	IS_INT(decode(&c, im, bad, len + 64, SIZE_MAX, 1, 0), 0,
	    "garbage: decode completes");
	IS_U64(c.gap_cause[BLKS_GAP_DECODE_ERROR], 1, "garbage: one GAP");
	OK(c.insns < s.insns && c.insns > s.insns / 2,
	    "garbage: %llu of %llu instructions", (unsigned long long)c.insns,
	    (unsigned long long)s.insns);
	IS_U64(c.disabled, 1, "garbage: decoding reached the end");
	IS_INT(decode(&d, im, bad, len + 64, 1, 2, 0), 0, "garbage, -j2");
	OK(same_bytes(&c, &d), "garbage: -j2 == -j1");
	collect_free(&c);
	collect_free(&d);

	/* bit flips: whatever happens, a clean end and -jN == -j1 */
	memcpy(bad, s.buf, len);
	for (unsigned i = 0, x = 7; i < 40; i++) {
		x = x * 1103515245 + 12345;
		bad[(x >> 8) % len] ^= (uint8_t)(1u << ((x >> 4) & 7));
	}
	IS_INT(decode(&c, im, bad, len, SIZE_MAX, 1, 0), 0,
	    "bit flips: decode completes");
	OK(c.gaps > 0, "bit flips: %llu gaps", (unsigned long long)c.gaps);
	IS_INT(decode(&d, im, bad, len, 1, 3, 0), 0, "bit flips, -j3");
	OK(same_bytes(&c, &d), "bit flips: -j3 == -j1");
	collect_free(&c);
	collect_free(&d);

	/* truncated in the middle of a packet */
	IS_INT(decode(&c, im, s.buf, len - 3, SIZE_MAX, 1, 0), 0,
	    "truncated: decode completes");
	OK(c.insns > 0 && c.disabled == 0, "truncated: %llu instructions, "
	    "no disable", (unsigned long long)c.insns);
	collect_free(&c);

	/* a wrapped ring: the first bytes are the tail of older trace */
	for (uint64_t o = 100; o + 16 < len; o++) {
		if (memcmp(s.buf + o, "\x02\x82\x02\x82", 4) == 0) {
			psb1 = o - 100;
			break;
		}
	}
	IS_INT(decode(&c, im, s.buf + 100, len - 100, 1, 2, 1), 0,
	    "wrapped: decode completes");
	IS_INT(c.first.type, BLKS_GAP, "wrapped: first record is a GAP");
	IS_INT(c.first.u.gap.cause, BLKS_GAP_RING_START, "of cause ring_start");
	IS_U64(c.first.u.gap.bytes_skipped, psb1,
	    "skipping the bytes before the first PSB");
	IS_U64(c.gaps, 1, "wrapped: no other gap");
	collect_free(&c);
	free(bad);
	free(s.buf);
}

static void
check_no_image(void)
{
	struct ptdec_images none;
	struct shape sh = { 20, 5, 0 };
	struct collect c;
	struct error e;
	struct enc s;
	size_t len = build(&s, &sh, 3);

	STEP(ptdec_images_init(&none, &e));
	IS_INT(decode(&c, &none, s.buf, len, SIZE_MAX, 1, 0), 0,
	    "no image: decode completes");
	IS_U64(c.gap_cause[BLKS_GAP_UNKNOWN_IMAGE], 4,
	    "no image: one unknown_image GAP per PSB");
	IS_U64(c.blocks, 0, "no image: no blocks");
	collect_free(&c);
	ptdec_images_fini(&none);
	free(s.buf);
}

static void
check_split(void)
{
	struct shape sh = { 30, 10, 0 };
	struct ptdec_thread th;
	struct ptdec_plan pl;
	struct error e;
	struct enc s;
	size_t len = build(&s, &sh, 4);

	th = (struct ptdec_thread){ 1, 1, s.buf, len, 0 };
	IS_INT(ptdec_split(&th, 1, &pl, &e), 0, "split");
	IS_U64(pl.nr, 3, "three PSBs, three chunks");
	IS_U64(pl.first_psb, 0, "first PSB at 0");
	if (pl.nr == 3) {
		IS_U64(pl.chunk[0].next, pl.chunk[1].begin,
		    "chunks are contiguous");
		IS_U64(pl.chunk[1].nr_psb, 1, "one PSB per chunk");
		IS_U64(pl.chunk[2].next, len, "last chunk ends at the end");
	}
	ptdec_plan_free(&pl);
	IS_INT(ptdec_split(&th, 0, &pl, &e), 0, "split");
	IS_U64(pl.nr, 1, "chunk size 0: one chunk");
	IS_U64(pl.chunk[0].nr_psb, 3, "holding the three PSBs");
	ptdec_plan_free(&pl);
	free(s.buf);
}

static void
check_time(void)
{
	struct ptdec_time t = { 31, 581029125, 18444502336406842448ULL, 0, 1 };
	struct ptdec_time id = { 0, 1, 0, 100, 1 };

	/* perf's formula, by hand: (tsc>>31)*mult + ((tsc&mask)*mult>>31) */
	IS_U64(ptdec_tsc_to_perf_ns(&t, 0x1000000000ULL),
	    18444502336406842448ULL + 32ULL * 581029125, "2^36 ticks");
	IS_U64(ptdec_tsc_to_ns(&id, 150), 50, "base subtracted");
	IS_U64(ptdec_tsc_to_ns(&id, 50), 0, "before the base reads as 0");
}

/*
 * A PSB+ with a FUP but no MODE.exec (found by fuzz-ptdec-fast): libipt
 * cannot decode in an unknown mode, but its block cache, filled by the
 * loop before in 64-bit mode, answered anyway, so the blocks depended on
 * the decoder's history (one chunk or many, native or the fast decoder's
 * fallback).  Every way, the interval is now one GAP at the loop.  (The
 * first interval runs on through that PSB+, which has no status update
 * to stop it, to the end: 24 loops.)
 */
static void
check_modeless(const struct ptdec_images *im)
{
	struct collect one, many, fast;
	struct enc s;
	size_t len;

	enc_begin(&s, 1 << 16);
	emit_psb(&s, 0);
	emit_simple(&s, ppt_mode);
	emit_ip(&s, ppt_tip_pge, LOOP);
	loops(&s, 12);
	emit_simple(&s, ppt_psb);
	emit_simple(&s, ppt_tsc);
	emit_ip(&s, ppt_fup, LOOP);
	emit_simple(&s, ppt_psbend);
	loops(&s, 12);
	emit_ip(&s, ppt_tip_pgd, LOOP);
	len = enc_end(&s);
	OK(len > 0, "modeless: stream encoded");
	IS_INT(decode(&one, im, s.buf, len, 1 << 20, 1, 0), 0,
	    "modeless: one chunk decodes");
	IS_U64(one.gaps, 1, "modeless: one GAP");
	IS_INT(one.gap_err, -pte_bad_insn, "modeless: an undecodable insn");
	IS_U64(one.gap_ip, LOOP, "modeless: at the loop");
	IS_U64(one.insns, 24 * 3, "modeless: the first interval's insns");
	IS_INT(decode(&many, im, s.buf, len, 1, 2, 0), 0,
	    "modeless: a chunk per PSB, 2 jobs");
	OK(same_bytes(&one, &many), "modeless: the same records");
	IS_INT(decode_with(&fast, &ptdec_backend_fast, im, s.buf, len,
	    1 << 20, 1, 0), 0, "modeless: the fast decoder decodes");
	/* The same records but the END's fallback count (1 here). */
	OK(fast.blocks == one.blocks && fast.insns == one.insns &&
	    fast.gaps == one.gaps && fast.gap_err == one.gap_err &&
	    fast.gap_ip == one.gap_ip && fast.events == one.events &&
	    fast.len == one.len, "modeless: fast gives the same records");
	collect_free(&one);
	collect_free(&many);
	collect_free(&fast);
	free(s.buf);
}

/*
 * The loop run in 32-bit mode, then (after a PSB+ that says 64-bit) in
 * 64-bit mode.  In 32-bit mode 48 is an instruction of its own (dec eax):
 * 5 instructions to the jne instead of 3.  libipt's block cache, shared
 * by both modes, made the 64-bit blocks 5 long in one decoder; each mode
 * now has sections (and a cache) of its own.
 */
static void
check_mode_caches(const struct ptdec_images *im)
{
	struct collect one, many;
	struct pt_packet p;
	struct enc s;
	size_t len;

	enc_begin(&s, 1 << 16);
	emit_simple(&s, ppt_psb);
	emit_simple(&s, ppt_tsc);
	emit_simple(&s, ppt_psbend);
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csd = 1;	/* 32-bit */
	emit(&s, &p);
	emit_ip(&s, ppt_tip_pge, LOOP);
	loops(&s, 12);
	emit_psb(&s, LOOP);			/* 64-bit from here */
	loops(&s, 12);
	emit_ip(&s, ppt_tip_pgd, LOOP);
	len = enc_end(&s);
	OK(len > 0, "modes: stream encoded");
	IS_INT(decode(&one, im, s.buf, len, 1 << 20, 1, 0), 0,
	    "modes: one chunk decodes");
	IS_U64(one.blocks, 24, "modes: 24 loops");
	IS_U64(one.insns, 12 * 5 + 12 * 3, "modes: 5 insns in 32-bit, 3 in 64");
	IS_U64(one.gaps, 0, "modes: no GAP");
	IS_INT(decode(&many, im, s.buf, len, 1, 2, 0), 0,
	    "modes: a chunk per PSB, 2 jobs");
	OK(same_bytes(&one, &many), "modes: the same records");
	collect_free(&one);
	collect_free(&many);
	free(s.buf);
}

/* Writes an encoded stream to path (the fuzz seed corpus). */
static int
write_seed(const char *path, int rounds, int psb_every, int mid_every)
{
	struct shape sh = { rounds, psb_every, mid_every };
	struct enc s;
	size_t len = build(&s, &sh, 5);
	FILE *f = fopen(path, "wb");
	int ok = f != NULL && len > 0 && fwrite(s.buf, 1, len, f) == len;

	ok = f != NULL && fclose(f) == 0 && ok;
	free(s.buf);
	return !ok;
}

/* t_ptdec DIR: writes the fuzz seeds to DIR instead of testing. */
int
main(int argc, char *argv[])
{
	char path[] = "/tmp/ptkit-t_ptdec-XXXXXX";
	struct ptdec_images im;
	struct error e;
	int fd;

	if (argc > 1) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/psb-rounds.pt", argv[1]);
		if (write_seed(p, 12, 3, 0))
			return 1;
		snprintf(p, sizeof(p), "%s/psb-mid-block.pt", argv[1]);
		return write_seed(p, 12, 2, 2);
	}
	fd = mkstemp(path);

	if (fd < 0 || write(fd, code, sizeof(code)) != (ssize_t)sizeof(code))
		return 1;
	close(fd);
	IS_INT(ptdec_images_init(&im, &e), 0, "images");
	IS_INT(ptdec_images_add(&im, 1, CODE_VA, sizeof(code), 0, path, &e),
	    0, "code added");
	IS_INT(ptdec_images_add(&im, 1, 0x500000, 16, 0, "/nonexistent", &e),
	    -ERR_NOTFOUND, "a missing file is refused");
	check_time();
	check_split();
	check_clean(&im);
	check_damage(&im);
	check_no_image();
	check_modeless(&im);
	check_mode_caches(&im);
	ptdec_images_fini(&im);
	unlink(path);
	return tap_done();
}
