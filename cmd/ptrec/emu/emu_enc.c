/* emu_enc: see emu_enc.h. */
#include "emu_enc.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

int
emu_enc_init(struct emu_enc *e, struct emu_ring_hdr *hdr, int cyc,
    int retcomp, uint64_t psb_period)
{
	memset(e, 0, sizeof(*e));
	e->hdr = hdr;
	e->ring = (uint8_t *)hdr + EMU_HDR_SIZE;
	e->ring_size = hdr->ring_size;
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
	/* the ring's first time stays the first program's */
	e->have_time = e->hdr->first_time != 0;
}

void
emu_enc_fini(struct emu_enc *e)
{
	free(e->side);
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
}

void
emu_enc_commit(struct emu_enc *e)
{
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

/*
 * Packets are written where they go: straight into the ring while it has
 * PACKET_ROOM bytes before its end and nothing is diverted (every packet
 * of a block but the rare few), else into the scratch buffer, from which
 * put() copies them around the ring's end or to the side buffer.  The
 * longest write, a long TNT, a CYC of 64 bits and a full IP packet
 * together (8 + 10 + 9 bytes), fits PACKET_ROOM.
 */
#define PACKET_ROOM 32

static inline uint8_t *
room(struct emu_enc *e)
{
	if (__builtin_expect(!e->diverted &&
	    e->ring_size - e->pos >= PACKET_ROOM, 1))
		return e->ring + e->pos;
	return e->scratch;
}

static inline void
put(struct emu_enc *e, const uint8_t *p, const uint8_t *end)
{
	size_t n = (size_t)(end - p);

	e->since_psb += n;
	if (__builtin_expect(p != e->scratch, 1)) {
		e->pos += n;
		e->total += n;
		return;
	}
	if (e->diverted)
		side_append(e, p, n);
	else
		ring_copy(e, p, n);
}

/* The n low bytes of v, least significant first.  Exactly n: the bytes
 * after a packet are the ring's oldest, still to be read. */
static inline uint8_t *
le_bytes(uint8_t *p, uint64_t v, int n)
{
	for (; n > 0; n--, v >>= 8)
		*p++ = (uint8_t)v;
	return p;
}

/*
 * The encodings, byte for byte what libipt's pt_enc_next writes for the
 * same packet (t_emu_enc re-encodes every packet of a stream with it and
 * compares).  Opcodes and layouts: Intel SDM vol. 3 "Trace Packets".
 */
enum {
	OPC_EXT = 0x02, OPC_TIP = 0x0d, OPC_TIP_PGE = 0x11,
	OPC_TIP_PGD = 0x01, OPC_FUP = 0x1d, OPC_MODE = 0x99, OPC_TSC = 0x19,
	OPC_CYC = 0x03, EXT_PSB = 0x82, EXT_TNT_64 = 0xa3, EXT_PSBEND = 0x23,
	EXT_CBR = 0x03,
	MODE_EXEC_CSL = 0x01,		/* leaf MODE.exec (0), 64-bit code */
	IPC_SHIFT = 5,
	PSB_LEN = 16, TSC_BYTES = 7, TNT_64_BYTES = 6,
};

/* The CYC of the cycles since the last timed packet, if any, at q. */
static inline uint8_t *
cyc_bytes(struct emu_enc *e, uint8_t *q, uint64_t now)
{
	uint64_t v;

	if (!e->cyc || now == e->last_cyc)
		return q;
	v = now - e->last_cyc;
	e->last_cyc = now;
	/* 5 bits in the first byte, 7 in each further one, each byte
	 * saying whether another follows */
	*q = (uint8_t)(OPC_CYC | (uint8_t)(v << 3));
	v >>= 5;
	if (v != 0)
		*q |= 0x04;
	q++;
	while (v != 0) {
		*q = (uint8_t)(v << 1);
		v >>= 7;
		if (v != 0)
			*q |= 0x01;
		q++;
	}
	return q;
}

/* The pending TNT bits as one packet at q, if there are any. */
static inline uint8_t *
tnt_bytes(struct emu_enc *e, uint8_t *q)
{
	uint64_t bits;

	if (e->tnt_bits == 0)
		return q;
	/* the payload's bits under a stop bit: short TNT for up to 6, after
	 * the opcode's low bit; long TNT for up to 47 */
	bits = e->tnt_payload | (1ull << e->tnt_bits);
	if (e->tnt_bits <= 6) {
		*q++ = (uint8_t)(bits << 1);
	} else {
		*q++ = OPC_EXT;
		*q++ = EXT_TNT_64;
		q = le_bytes(q, bits, TNT_64_BYTES);
	}
	e->tnt_bits = 0;
	e->tnt_payload = 0;
	publish_tnt(e);
	return q;
}

static void
emit_cyc(struct emu_enc *e, uint64_t now)
{
	uint8_t *p = room(e);

	put(e, p, cyc_bytes(e, p, now));
}

void
emu_enc_tnt_flush(struct emu_enc *e)
{
	uint8_t *p;

	if (e->tnt_bits == 0)
		return;
	p = room(e);
	put(e, p, tnt_bytes(e, p));
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

/* The IP bytes each compression carries. */
static int
ipc_bytes(enum pt_ip_compression ipc)
{
	switch (ipc) {
	case pt_ipc_update_16: return 2;
	case pt_ipc_update_32: return 4;
	case pt_ipc_update_48:
	case pt_ipc_sext_48: return 6;
	case pt_ipc_full: return 8;
	default: return 0;
	}
}

/* TNT bits first, then (timed) a CYC, then the IP packet: one write of
 * at most 8 + 10 + 9 bytes. */
static void
emit_ip(struct emu_enc *e, uint64_t now, uint8_t opc, uint64_t ip,
    int suppressed, int timed)
{
	enum pt_ip_compression ipc = pt_ipc_suppressed;
	uint8_t *p, *q;

	p = q = room(e);
	q = tnt_bytes(e, q);
	if (timed)
		q = cyc_bytes(e, q, now);
	if (!suppressed) {
		ipc = ip_compression(e, ip);
		e->last_ip = ip;
		e->have_last_ip = 1;
	}
	*q++ = (uint8_t)(opc | (unsigned)ipc << IPC_SHIFT);
	q = le_bytes(q, ip, ipc_bytes(ipc));
	put(e, p, q);
}

static void
emit_mode_exec(struct emu_enc *e)
{
	uint8_t *p = room(e);

	p[0] = OPC_MODE;
	p[1] = MODE_EXEC_CSL;
	put(e, p, p + 2);
}

void
emu_enc_tip(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, OPC_TIP, ip, 0, 1);
	e->n_tip++;
}

void
emu_enc_pge(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emu_enc_tnt_flush(e);
	emit_mode_exec(e);
	emit_ip(e, now, OPC_TIP_PGE, ip, 0, 1);
}

void
emu_enc_pgd(struct emu_enc *e, uint64_t now)
{
	emit_ip(e, now, OPC_TIP_PGD, 0, 1, 1);
}

void
emu_enc_pgd_ip(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, OPC_TIP_PGD, ip, 0, 1);
}

void
emu_enc_fup(struct emu_enc *e, uint64_t now, uint64_t ip)
{
	emit_ip(e, now, OPC_FUP, ip, 0, 1);
}

void
emu_enc_tsc(struct emu_enc *e, uint64_t now)
{
	uint8_t *p;

	emu_enc_tnt_flush(e);
	p = room(e);
	p[0] = OPC_TSC;
	put(e, p, le_bytes(p + 1, now, TSC_BYTES));
	e->last_cyc = now;
	if (!e->have_time) {
		e->have_time = 1;
		e->hdr->first_time = now;
	}
}

void
emu_enc_psb(struct emu_enc *e, uint64_t now, int tracing, uint64_t ip)
{
	uint8_t *p;
	int i;

	emu_enc_tnt_flush(e);
	p = room(e);
	for (i = 0; i < PSB_LEN; i += 2) {
		p[i] = OPC_EXT;
		p[i + 1] = EXT_PSB;
	}
	put(e, p, p + PSB_LEN);
	emu_enc_tsc(e, now);
	p = room(e);
	p[0] = OPC_EXT;
	p[1] = EXT_CBR;
	p[2] = 1;		/* the ratio: one cycle a TSC tick */
	p[3] = 0;
	put(e, p, p + 4);
	emit_mode_exec(e);
	e->have_last_ip = 0;
	/* A decoder starting here has an empty stack: so must we. */
	emu_enc_rs_clear(e);
	if (tracing)
		emit_ip(e, now, OPC_FUP, ip, 0, 0);
	p = room(e);
	p[0] = OPC_EXT;
	p[1] = EXT_PSBEND;
	put(e, p, p + 2);
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
