/*
 * Tests for ptdec's driver around a backend: ptdec_out_push_block,
 * ptdec_out_push, marks and rollbacks, the joining of blocks that do not
 * end at a branch, unknown times, across chunk and buffer boundaries, with
 * one job and with several.  The backend is a script: each PSB interval
 * of a made-up trace pushes blocks (more than the driver buffers at once),
 * an event, and every third interval is given up on and pushed again.
 * The same script pushing the blocks that end at a branch with
 * ptdec_out_push_final, to a sink that takes encoded runs (decoded back
 * here from the format's bytes), must give the same records.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt/blkstream.h"

#include "dec/ptdec.h"
#include "tap.h"

#define NR_PSB 12
#define PSB_BYTES 32		/* PSB, PSBEND, padding */
#define PER_PSB 5000		/* blocks an interval pushes */

/* The block the script pushes as the k-th of interval i. */
static struct blks_block
script_block(size_t i, size_t k)
{
	struct blks_block b;

	memset(&b, 0, sizeof(b));
	b.ip = 0x1000 + 16 * (i * PER_PSB + k);
	b.end_ip = b.ip + 8;
	b.ninsn = 2 + (uint32_t)(k % 3);
	/* Every 700th block is cut short: it and the next are one. */
	b.iclass = k % 700 == 699 || k == PER_PSB - 1 ? ptic_other :
	    ptic_jump;
	b.mode = ptem_64bit;
	b.time = k == 0 ? PTDEC_TIME_UNKNOWN : 100 * i + k / 1000;
	return b;
}

static int
script_worker_new(void **w, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	(void)cfg;
	(void)th;
	(void)e;
	*w = NULL;
	return 0;
}

static void
script_worker_free(void *w)
{
	(void)w;
}

/*
 * The script pushes blocks that end at a branch as final ones (1), and
 * through a cursor where it can (2), as ptdec_fast's loop does.
 */
static int push_final;

/* A final block through the cursor c. */
static int
cursor_push(struct ptdec_out *out, struct ptdec_cursor *c,
    const struct blks_block *b, struct error *e)
{
	uint32_t rest = blks_block_rest(b->ip, b->end_ip, b->ninsn,
	    (uint64_t)blks_class_byte(b->iclass, 0, b->mode));
	int rc;

	if (b->time != PTDEC_TIME_UNKNOWN && rest != 0 &&
	    ptdec_cursor_put_rest(c, b->ip, b->end_ip, b->ninsn, rest,
	    b->time))
		return 0;
	ptdec_out_cursor_end(out, c);
	rc = ptdec_out_push_final(out, b->ip, b->end_ip, b->ninsn, b->iclass,
	    b->mode, b->time, e);
	if (rc == 0)
		(void)ptdec_out_cursor_begin(out, c);
	return rc;
}

static int
push_interval(size_t i, size_t n, struct ptdec_out *out, struct error *e)
{
	struct ptdec_cursor c = { 0 };
	struct blks_record ev;
	int rc = 0;

	for (size_t k = 0; k < n && rc == 0; k++) {
		struct blks_block b = script_block(i, k);

		if (push_final == 2 && b.iclass != ptic_other) {
			rc = cursor_push(out, &c, &b, e);
			continue;
		}
		ptdec_out_cursor_end(out, &c);
		if (push_final && b.iclass != ptic_other)
			rc = ptdec_out_push_final(out, b.ip, b.end_ip,
			    b.ninsn, b.iclass, b.mode, b.time, e);
		else
			rc = ptdec_out_push_block(out, b.ip, b.end_ip,
			    b.ninsn, b.iclass, b.flags, b.mode, b.time, e);
	}
	ptdec_out_cursor_end(out, &c);
	if (rc < 0)
		return rc;
	memset(&ev, 0, sizeof(ev));
	ev.type = BLKS_EVENT;
	ev.u.event.kind = BLKS_EV_PTWRITE;
	ev.u.event.arg = i;
	ev.u.event.time = 100 * i + 99;
	return ptdec_out_push(out, &ev, e);
}

static int
script_decode_chunk(void *w, const struct ptdec_chunk *c,
    struct ptdec_out *out, struct error *e)
{
	struct ptdec_out_mark m;
	int rc;

	(void)w;
	for (size_t j = 0; j < c->nr_psb; j++) {
		size_t i = c->psb[j] / PSB_BYTES;

		ptdec_out_mark(out, &m);
		if ((rc = push_interval(i, PER_PSB, out, e)) < 0)
			return rc;
		if (i % 3 == 1) {
			/* Given up on: what it pushed goes, a shorter try. */
			ptdec_out_rollback(out, &m);
			if ((rc = push_interval(i, PER_PSB / 2, out, e)) < 0)
				return rc;
			out->fallbacks++;
		}
		ptdec_out_unmark(out);
	}
	return 0;
}

static const struct ptdec_backend script_backend = {
	"script", script_worker_new, script_decode_chunk, script_worker_free,
};

struct seen {
	struct blks_record *r;
	size_t nr, cap;
	uint64_t runs, run_errors;	/* encoded runs, and bad ones */
};

static int
seen_add(void *ctx, const struct blks_record *r, struct error *e)
{
	struct seen *s = ctx;

	(void)e;
	if (s->nr == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->r = realloc(s->r, s->cap * sizeof(*s->r));
		if (s->r == NULL)
			abort();
	}
	s->r[s->nr++] = *r;
	return 0;
}

static int
seen_blocks(void *ctx, const struct blks_block *b, size_t n, struct error *e)
{
	struct blks_record r;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	for (size_t i = 0; i < n && rc == 0; i++) {
		r.u.block = b[i];
		rc = seen_add(ctx, &r, e);
	}
	return rc;
}

static uint64_t
get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static uint64_t
unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

/* The end ip and time the next record is encoded against. */
static void
delta_state(const struct seen *s, uint64_t *ip, uint64_t *time)
{
	*ip = *time = 0;
	for (size_t i = s->nr; i-- > 0;) {
		if (s->r[i].type == BLKS_BLOCK) {
			*ip = s->r[i].u.block.end_ip;
			break;
		}
	}
	if (s->nr > 0)
		*time = s->r[s->nr - 1].type == BLKS_BLOCK ?
		    s->r[s->nr - 1].u.block.time :
		    s->r[s->nr - 1].u.event.time;
}

/* An encoded run, decoded by ptkit-blocks(5), not by blkstream's reader. */
static int
seen_encoded(void *ctx, const uint8_t *p, size_t len, uint64_t last_ip,
    uint64_t last_time, struct error *e)
{
	const uint8_t *end = p + len;
	struct seen *s = ctx;
	struct blks_record r;
	uint64_t ip, time;

	s->runs++;
	delta_state(s, &ip, &time);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	while (p < end) {
		const uint8_t *next;
		uint8_t cls;

		if (p[0] != BLKS_BLOCK || end - p < 2 || p[1] >= 0x80) {
			s->run_errors++;
			return 0;
		}
		next = p + 2 + p[1];
		p += 2;
		r.u.block.ip = ip + unzigzag(get_varint(&p, next));
		r.u.block.end_ip = r.u.block.ip + unzigzag(get_varint(&p,
		    next));
		r.u.block.ninsn = (uint32_t)get_varint(&p, next);
		cls = p < next ? *p++ : 0xff;
		r.u.block.iclass = cls & 0xf;
		r.u.block.flags = cls >> 4 & 3;
		r.u.block.mode = cls >> 6;
		r.u.block.time = time + unzigzag(get_varint(&p, next));
		s->run_errors += p != next;
		p = next;
		ip = r.u.block.end_ip;
		time = r.u.block.time;
		seen_add(s, &r, e);
	}
	s->run_errors += ip != last_ip || time != last_time;
	return 0;
}

/* What the driver must write: the script's records, joined, timed. */
static void
expect(struct seen *s)
{
	uint64_t last = 0;
	struct blks_record r;

	for (size_t i = 0; i < NR_PSB; i++) {
		size_t n = i % 3 == 1 ? PER_PSB / 2 : PER_PSB;

		for (size_t k = 0; k < n; k++) {
			struct blks_block b = script_block(i, k);
			struct blks_block *p = s->nr > 0 &&
			    s->r[s->nr - 1].type == BLKS_BLOCK ?
			    &s->r[s->nr - 1].u.block : NULL;

			if (b.time == PTDEC_TIME_UNKNOWN)
				b.time = last;
			last = b.time;
			if (p != NULL && p->iclass == ptic_other) {
				p->end_ip = b.end_ip;
				p->ninsn += b.ninsn;
				p->iclass = b.iclass;
				p->time = b.time;
				continue;
			}
			memset(&r, 0, sizeof(r));
			r.type = BLKS_BLOCK;
			r.u.block = b;
			seen_add(s, &r, NULL);
		}
		memset(&r, 0, sizeof(r));
		r.type = BLKS_EVENT;
		r.u.event.kind = BLKS_EV_PTWRITE;
		r.u.event.arg = i;
		r.u.event.time = last = 100 * i + 99;
		seen_add(s, &r, NULL);
	}
}

/* Whether the driver may encode the script's block k of interval i. */
static int
is_final(size_t i, size_t k)
{
	struct blks_block b = script_block(i, k);

	return b.iclass != ptic_other && b.time != PTDEC_TIME_UNKNOWN;
}

/*
 * The runs the script's final blocks make: one opens at a final block
 * after a final block that is not in a run (no run follows a block that
 * does not end at a branch, or has no known time).
 */
static uint64_t
expected_runs(void)
{
	uint64_t runs = 0;

	for (size_t i = 0; i < NR_PSB; i++) {
		size_t n = i % 3 == 1 ? PER_PSB / 2 : PER_PSB;

		for (size_t k = 1; k < n; k++)
			runs += is_final(i, k) && is_final(i, k - 1) &&
			    (k < 2 || !is_final(i, k - 2));
	}
	return runs;
}

static int
same(const struct blks_record *a, const struct blks_record *b)
{
	if (a->type != b->type)
		return 0;
	if (a->type == BLKS_EVENT)
		return a->u.event.arg == b->u.event.arg &&
		    a->u.event.time == b->u.event.time;
	return a->u.block.ip == b->u.block.ip &&
	    a->u.block.end_ip == b->u.block.end_ip &&
	    a->u.block.ninsn == b->u.block.ninsn &&
	    a->u.block.iclass == b->u.block.iclass &&
	    a->u.block.mode == b->u.block.mode &&
	    a->u.block.time == b->u.block.time;
}

static void
run(const uint8_t *trace, unsigned jobs, size_t chunk_psbs, int batch,
    int final, const struct seen *want)
{
	struct ptdec_thread th = { .tid = 1, .pid = 1, .buf = trace,
	    .len = NR_PSB * PSB_BYTES };
	struct ptdec_config cfg;
	struct ptdec_sink sink;
	struct seen got = { 0 };
	struct blks_end end;
	struct error e;
	size_t bad = 0, blocks = 0;
	uint64_t insns = 0;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.jobs = jobs;
	cfg.chunk_bytes = chunk_psbs * PSB_BYTES;
	memset(&sink, 0, sizeof(sink));
	sink.emit = seen_add;
	sink.emit_blocks = batch ? seen_blocks : NULL;
	sink.emit_encoded = final ? seen_encoded : NULL;
	sink.ctx = &got;
	push_final = final;
	rc = ptdec_decode_thread(&script_backend, &cfg, &th, &sink, &end, &e);
	DIAG("jobs %u, %zu PSBs a chunk, %s, %s", jobs, chunk_psbs,
	    batch ? "runs of blocks" : "one by one",
	    final == 2 ? "final blocks through a cursor" :
	    final ? "final blocks encoded" : "blocks as records");
	IS_INT(rc, 0, "decodes");
	if (final) {
		IS_U64(got.runs, expected_runs(),
		    "final blocks come as encoded runs");
		IS_U64(got.run_errors, 0, "the runs are well encoded");
	}
	IS_U64(got.nr, want->nr, "as many records as the script's, joined");
	for (size_t i = 0; i < got.nr && i < want->nr; i++) {
		bad += !same(&got.r[i], &want->r[i]);
		if (want->r[i].type == BLKS_BLOCK) {
			blocks++;
			insns += want->r[i].u.block.ninsn;
		}
	}
	IS_U64(bad, 0, "the same records");
	IS_U64(end.c[BLKS_C_BLOCKS], blocks, "END counts the blocks");
	IS_U64(end.c[BLKS_C_INSNS], insns, "END counts the instructions");
	IS_U64(end.c[BLKS_C_EVENTS], NR_PSB, "END counts the events");
	IS_U64(end.c[BLKS_C_FALLBACKS], NR_PSB / 3, "END counts fallbacks");
	free(got.r);
}

int
main(void)
{
	uint8_t trace[NR_PSB * PSB_BYTES];
	struct seen want = { 0 };

	memset(trace, 0, sizeof(trace));
	for (size_t i = 0; i < NR_PSB; i++) {
		for (size_t k = 0; k < 16; k += 2) {
			trace[i * PSB_BYTES + k] = 0x02;
			trace[i * PSB_BYTES + k + 1] = 0x82;
		}
		trace[i * PSB_BYTES + 16] = 0x02;
		trace[i * PSB_BYTES + 17] = 0x23;
	}
	expect(&want);
	DIAG("%zu records expected", want.nr);
	run(trace, 1, 1, 1, 0, &want);
	run(trace, 1, 5, 0, 0, &want);
	run(trace, 2, 1, 1, 0, &want);
	run(trace, 3, 4, 0, 0, &want);
	run(trace, 1, 1, 1, 1, &want);
	run(trace, 1, 5, 0, 1, &want);
	run(trace, 2, 1, 1, 1, &want);
	run(trace, 3, 4, 0, 1, &want);
	run(trace, 1, 1, 1, 2, &want);
	run(trace, 2, 5, 0, 2, &want);
	free(want.r);
	return tap_done();
}
