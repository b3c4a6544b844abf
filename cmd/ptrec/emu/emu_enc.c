/* emu_enc: see emu_enc.h. */
#include "emu_enc.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

int
emu_enc_init(struct emu_enc *e, struct emu_ring_hdr *hdr, int cyc,
    int retcomp, uint64_t psb_period)
{
	struct pt_config cfg;

	memset(e, 0, sizeof(*e));
	e->hdr = hdr;
	e->ring = (uint8_t *)hdr + EMU_HDR_SIZE;
	e->ring_size = hdr->ring_size;
	pt_config_init(&cfg);
	cfg.begin = e->stage;
	cfg.end = e->stage + sizeof(e->stage);
	e->enc = pt_alloc_encoder(&cfg);
	cfg.begin = e->ring;
	cfg.end = e->ring + e->ring_size;
	e->direct = pt_alloc_encoder(&cfg);
	if (e->enc == NULL || e->direct == NULL) {
		pt_free_encoder(e->enc);
		pt_free_encoder(e->direct);
		return -1;
	}
	e->cyc = cyc;
	e->retcomp = retcomp;
	e->psb_period = psb_period;
	return 0;
}

void
emu_enc_resume(struct emu_enc *e)
{
	e->total = e->published = e->hdr->total;
	e->pos = e->total % e->ring_size;
	pt_enc_sync_set(e->direct, e->pos);
	/* the ring's first time stays the first program's */
	e->have_time = e->hdr->first_time != 0;
}

void
emu_enc_fini(struct emu_enc *e)
{
	pt_free_encoder(e->enc);
	pt_free_encoder(e->direct);
	free(e->side);
	e->enc = NULL;
	e->direct = NULL;
	e->side = NULL;
}

static void
side_append(struct emu_enc *e, const uint8_t *p, size_t n)
{
	size_t cap;
	uint8_t *s;

	if (e->side_n + n > e->side_cap) {
		cap = (e->side_n + n) * 2;
		if ((s = realloc(e->side, cap)) == NULL) {
			e->n_errors++;
			return;
		}
		e->side = s;
		e->side_cap = cap;
	}
	memcpy(e->side + e->side_n, p, n);
	e->side_n += n;
}

/* Copies n bytes into the ring at pos, around its end if need be. */
static void
ring_copy(struct emu_enc *e, const uint8_t *p, size_t n)
{
	emu_ring_put(e->ring, e->ring_size, &e->total, p, n);
	e->pos = e->total % e->ring_size;
	pt_enc_sync_set(e->direct, e->pos);
}

void
emu_enc_commit(struct emu_enc *e)
{
	if (e->staged > 0) {	/* diverted packets */
		side_append(e, e->stage, e->staged);
		pt_enc_sync_set(e->enc, 0);
		e->staged = 0;
	}
	if (e->total == e->published)
		return;		/* the common case: a block left no packet */
	/* Order: data, then the count that makes it visible. */
	__atomic_store_n(&e->hdr->total, e->total, __ATOMIC_RELEASE);
	e->published = e->total;
}

/* The pending TNT bits, where ptrec finds them if the guest crashes. */
static inline void
publish_tnt(struct emu_enc *e)
{
	e->hdr->tnt_payload = e->tnt_payload;
	e->hdr->tnt_bits = (uint32_t)e->tnt_bits;
}

/* The longest packet we write (PSB) fits this many times over. */
#define PACKET_ROOM 32

static void
emit(struct emu_enc *e, const struct pt_packet *p)
{
	int n;

	if (!e->diverted && e->ring_size - e->pos >= PACKET_ROOM) {
		n = pt_enc_next(e->direct, p);
		if (n < 0) {
			e->n_errors++;
			return;
		}
		e->pos += (uint64_t)n;
		e->total += (uint64_t)n;
		e->since_psb += (uint64_t)n;
		return;
	}
	if (e->staged + 64 > sizeof(e->stage))
		emu_enc_commit(e);
	n = pt_enc_next(e->enc, p);
	if (n < 0) {
		e->n_errors++;
		return;
	}
	e->since_psb += (uint64_t)n;
	if (e->diverted) {
		e->staged += (uint64_t)n;
		return;
	}
	/* near the ring's end: around it, from the stage */
	ring_copy(e, e->stage, (size_t)n);
	pt_enc_sync_set(e->enc, 0);
}

static void
emit_cyc(struct emu_enc *e, uint64_t now)
{
	struct pt_packet p = { .type = ppt_cyc };

	if (!e->cyc || now == e->last_cyc)
		return;
	p.payload.cyc.value = now - e->last_cyc;
	emit(e, &p);
	e->last_cyc = now;
}

void
emu_enc_tnt_flush(struct emu_enc *e)
{
	struct pt_packet p;

	if (e->tnt_bits == 0)
		return;
	memset(&p, 0, sizeof(p));
	p.type = e->tnt_bits <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p.payload.tnt.bit_size = (uint8_t)e->tnt_bits;
	p.payload.tnt.payload = e->tnt_payload;
	emit(e, &p);
	e->tnt_bits = 0;
	e->tnt_payload = 0;
	publish_tnt(e);
}

void
emu_enc_tnt(struct emu_enc *e, uint64_t now, int taken)
{
	if (e->tnt_bits == 0)
		emit_cyc(e, now);	/* the time of the packet's first bit */
	/* libipt wants the oldest branch in the most significant bit. */
	e->tnt_payload = (e->tnt_payload << 1) | (uint64_t)(taken != 0);
	e->n_tnt_bits++;
	if (++e->tnt_bits == 47)
		emu_enc_tnt_flush(e);
	else
		publish_tnt(e);
}

static enum pt_ip_compression
ip_compression(const struct emu_enc *e, uint64_t ip)
{
	uint64_t diff = ip ^ e->last_ip;

	if (e->have_last_ip && (diff >> 16) == 0)
		return pt_ipc_update_16;
	if (e->have_last_ip && (diff >> 32) == 0)
		return pt_ipc_update_32;
	if ((uint64_t)((int64_t)(ip << 16) >> 16) == ip)
		return pt_ipc_sext_48;
	return pt_ipc_full;
}

static void
emit_ip(struct emu_enc *e, uint64_t now, enum pt_packet_type type,
    uint64_t ip, int suppressed, int timed)
{
	struct pt_packet p;

	emu_enc_tnt_flush(e);
	if (timed)
		emit_cyc(e, now);
	memset(&p, 0, sizeof(p));
	p.type = type;
	if (suppressed) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		p.payload.ip.ipc = ip_compression(e, ip);
		p.payload.ip.ip = ip;
		e->last_ip = ip;
		e->have_last_ip = 1;
	}
	emit(e, &p);
}

static void
emit_mode_exec(struct emu_enc *e)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;	/* 64-bit code */
	emit(e, &p);
}

void
emu_enc_tip(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, ppt_tip, ip, 0, 1);
	e->n_tip++;
}

void
emu_enc_pge(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emu_enc_tnt_flush(e);
	emit_mode_exec(e);
	emit_ip(e, now, ppt_tip_pge, ip, 0, 1);
}

void
emu_enc_pgd(struct emu_enc *e, uint64_t now)
{
	emit_ip(e, now, ppt_tip_pgd, 0, 1, 1);
}

void
emu_enc_pgd_ip(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, ppt_tip_pgd, ip, 0, 1);
}

void
emu_enc_fup(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, ppt_fup, ip, 0, 1);
}

void
emu_enc_tsc(struct emu_enc *e, uint64_t now)
{
	struct pt_packet p;

	emu_enc_tnt_flush(e);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = now;
	emit(e, &p);
	e->last_cyc = now;
	if (!e->have_time) {
		e->have_time = 1;
		e->hdr->first_time = now;
	}
}

void
emu_enc_psb(struct emu_enc *e, uint64_t now, int tracing, uint64_t ip)
{
	struct pt_packet p;

	emu_enc_tnt_flush(e);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	emit(e, &p);
	emu_enc_tsc(e, now);
	memset(&p, 0, sizeof(p));
	p.type = ppt_cbr;
	p.payload.cbr.ratio = 1;
	emit(e, &p);
	emit_mode_exec(e);
	e->have_last_ip = 0;
	/* A decoder starting here has an empty stack: so must we. */
	emu_enc_rs_clear(e);
	if (tracing)
		emit_ip(e, now, ppt_fup, ip, 0, 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	emit(e, &p);
	e->since_psb = 0;
	e->n_psb++;
}

void
emu_enc_call(struct emu_enc *e, uint64_t ret_ip)
{
	e->rs_top = (e->rs_top + 1) % EMU_RS_DEPTH;
	e->rs[e->rs_top] = ret_ip;
	if (e->rs_n < EMU_RS_DEPTH)
		e->rs_n++;
}

void
emu_enc_ret(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	if (e->retcomp && e->rs_n > 0 && e->rs[e->rs_top] == ip) {
		e->rs_top = (e->rs_top + EMU_RS_DEPTH - 1) % EMU_RS_DEPTH;
		e->rs_n--;
		emu_enc_tnt(e, now, 1);
		e->n_retcomp++;
		return;
	}
	/* libipt keeps its stack on an uncompressed return, perf pops it:
	 * with ours empty, no later return depends on which they did. */
	emu_enc_rs_clear(e);
	emu_enc_tip(e, now, ip);
}

void
emu_enc_rs_clear(struct emu_enc *e)
{
	e->rs_n = 0;
}

void
emu_enc_divert(struct emu_enc *e)
{
	emu_enc_tnt_flush(e);
	emu_enc_commit(e);
	e->diverted = 1;
}

void
emu_enc_undivert(struct emu_enc *e)
{
	emu_enc_tnt_flush(e);
	emu_enc_commit(e);	/* the side buffer is complete */
	e->diverted = 0;
}

void
emu_enc_append_side(struct emu_enc *e)
{
	emu_enc_commit(e);
	ring_copy(e, e->side, e->side_n);
	e->since_psb += e->side_n;
	e->side_n = 0;
	emu_enc_commit(e);
}
