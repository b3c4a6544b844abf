/*
 * emu_enc: one guest thread's Intel PT packet stream, encoded straight
 * into a ring that overwrites its oldest bytes, byte for byte as libipt's
 * encoder (pt_enc_next) would write each packet: a call into libipt and
 * a struct pt_packet for every packet cost more than the rest of a
 * block's work.
 *
 * Owns the stream-level rules hardware follows and perf and libipt rely on
 * (notes/emu.md 6.7-6.8, notes/perfdata.md 4): pending TNT bits leave
 * before any other packet, at most 6 per short and 47 per long TNT; IP
 * compression against the last IP, which PSB resets; PSB+ carries TSC,
 * CBR, MODE.exec and, while tracing, FUP; the return-compression stack is
 * libipt's (64 entries, no push for a call to the next instruction, pop
 * only on a compressed return) and is emptied at every PSB; CYC counts the
 * virtual cycles since the last timed packet and is never inside PSB+.
 *
 * Packets are encoded straight into the ring, except the few that would
 * cross its end (encoded aside, then copied around it); emu_enc_commit(), which
 * the tracer calls at the end of every callback, publishes the ring's
 * total, so ptrec always sees it end on a packet boundary.  While
 * diverted, packets go to a side buffer instead (a signal handler whose
 * interruption point is not known yet, notes/emu.md 6.4) and
 * emu_enc_undivert() appends them.
 *
 * Functions return nothing: the one failure, no memory for the side
 * buffer, is counted in n_errors (what was diverted then is lost).
 */
#ifndef PTKIT_EMU_ENC_H
#define PTKIT_EMU_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "emu_handoff.h"

#define EMU_RS_DEPTH 64

/* Hot fields first, so they share cache lines. */
struct emu_enc {
	struct emu_ring_hdr *hdr;	/* shared with ptrec */
	uint8_t *ring;
	uint64_t ring_size, total;
	uint64_t pos;			/* total % ring_size */
	uint64_t published;		/* total as ptrec last saw it */

	int diverted;
	uint8_t *side;
	size_t side_n, side_cap;

	int cyc, retcomp;		/* configuration */
	uint64_t psb_period, since_psb;

	uint64_t last_ip;
	int have_last_ip;
	uint64_t tnt_payload;
	int tnt_bits;
	uint64_t last_cyc;
	int have_time;

	uint64_t rs[EMU_RS_DEPTH];
	int rs_n, rs_top;

	uint64_t n_psb, n_tip, n_tnt_bits, n_retcomp, n_errors;
	/* one packet that does not go straight into the ring (near its
	 * end, or diverted) */
	uint8_t scratch[32];		/* PACKET_ROOM */
};

/*
 * Sets up e to write into the ring after hdr (hdr->ring_size bytes).
 * Returns 0 (-1 is kept for an allocation it may need again).
 */
int emu_enc_init(struct emu_enc *e, struct emu_ring_hdr *hdr, int cyc,
    int retcomp, uint64_t psb_period);

/*
 * After emu_enc_init: goes on writing where hdr's ring ends, in a ring
 * that the same thread wrote before it exec'd (the program before keeps
 * its history; the first packet of the new one is a PSB as always).
 */
void emu_enc_resume(struct emu_enc *e);
void emu_enc_fini(struct emu_enc *e);

/* Publishes the ring's total to ptrec. */
void emu_enc_commit(struct emu_enc *e);

/* One conditional branch (or compressed return) outcome. */
void emu_enc_tnt(struct emu_enc *e, uint64_t now, int taken);
void emu_enc_tnt_flush(struct emu_enc *e);

/* TIP, TIP.PGE, FUP with the IP; TIP.PGD with the IP suppressed. */
void emu_enc_tip(struct emu_enc *e, uint64_t now, uint64_t ip);
void emu_enc_pge(struct emu_enc *e, uint64_t now, uint64_t ip);
void emu_enc_pgd(struct emu_enc *e, uint64_t now);
void emu_enc_pgd_ip(struct emu_enc *e, uint64_t now, uint64_t ip);
void emu_enc_fup(struct emu_enc *e, uint64_t now, uint64_t ip);
void emu_enc_tsc(struct emu_enc *e, uint64_t now);

/* PSB+; tracing says whether a FUP(ip) belongs in it. */
void emu_enc_psb(struct emu_enc *e, uint64_t now, int tracing, uint64_t ip);

/* Non-zero when the PSB period has passed since the last PSB+. */
static inline int
emu_enc_psb_due(const struct emu_enc *e)
{
	return e->since_psb >= e->psb_period;
}

/* Return-compression stack. */
void emu_enc_call(struct emu_enc *e, uint64_t ret_ip);
/* A return to ip: compressed (pop + TNT 1) if it may be, else TIP. */
void emu_enc_ret(struct emu_enc *e, uint64_t now, uint64_t ip);
void emu_enc_rs_clear(struct emu_enc *e);

/* Divert packets to the side buffer / append it to the stream. */
void emu_enc_divert(struct emu_enc *e);
void emu_enc_undivert(struct emu_enc *e);
/* Appends the side buffer to the stream and empties it. */
void emu_enc_append_side(struct emu_enc *e);

#endif
