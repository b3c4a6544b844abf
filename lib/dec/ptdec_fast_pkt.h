/*
 * ptdec_fast_pkt: the fast decoder's packet reader: the Intel PT packets
 * user-space tracing writes (TNT, TIP and its kinds, FUP, PAD, CYC, TSC,
 * MTC, TMA, MODE, CBR, PSB, PSBEND), read straight from the trace into a
 * struct pkt, with libipt's checks of each packet's bounds and payload.
 * The readers of single packets are inline here for the query decoder's
 * read-ahead (ptdec_fast_qry.c), which tries the common packets first;
 * fast_pkt_read (ptdec_fast_pkt.c) reads any packet.  Anything else is
 * PK_OTHER, which makes the walker hand the interval to libipt.
 */
#ifndef PTKIT_PTDEC_FAST_PKT_H
#define PTKIT_PTDEC_FAST_PKT_H

#include <stddef.h>
#include <stdint.h>

enum pkind {
	PK_EOS, PK_BAD, PK_OTHER, PK_PAD, PK_TNT, PK_TIP, PK_PGE, PK_PGD,
	PK_FUP, PK_CYC, PK_TSC, PK_MODE, PK_PSB, PK_PSBEND, PK_CBR, PK_MTC,
	PK_TMA,
};

struct pkt {
	int kind;
	unsigned size;
	unsigned ipc;		/* IP packets: compression */
	unsigned nbits;		/* TNT: number of bits */
	uint64_t v;		/* payload */
};

static inline unsigned
bsr64(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

static inline uint64_t
le_bytes(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* A long TNT at p, its 8 bytes there: bits below the stop bit. */
static inline void
pkt_tnt64(const uint8_t *p, struct pkt *k)
{
	k->kind = PK_TNT;
	k->size = 8;
	if ((k->v = le_bytes(p + 2, 6)) == 0) {
		k->kind = PK_BAD;
		return;
	}
	k->nbits = bsr64(k->v);
	k->v &= ~(1ull << k->nbits);
}

static inline void
pkt_cyc(const uint8_t *p, const uint8_t *end, struct pkt *k)
{
	const uint8_t *q = p + 1;
	unsigned shift = 5;

	k->kind = PK_CYC;
	k->v = p[0] >> 3;
	if (p[0] & 4) {
		for (;;) {
			uint8_t x;

			if (q >= end) {
				k->kind = PK_BAD;
				return;
			}
			x = *q++;
			k->v |= (uint64_t)(x >> 1) << shift;
			/* libipt refuses a payload past 64 bits, even if 0 */
			if ((shift += 7) > 64) {
				k->kind = PK_BAD;
				return;
			}
			if (!(x & 1))
				break;
		}
	}
	k->size = (unsigned)(q - p);
}

/* A one-byte TNT: its bits below the stop bit, the first the highest. */
static inline void
pkt_tnt8(uint8_t b, struct pkt *k)
{
	k->kind = PK_TNT;
	k->size = 1;
	k->nbits = bsr64(b >> 1);
	k->v = (uint64_t)(b >> 1) & ~(1ull << k->nbits);
}

static const unsigned ip_bytes[8] = { 0, 2, 4, 6, 6, 99, 8, 99 };

/* A TIP, TIP.PGE, TIP.PGD or FUP (kind) at p: its compression and ip. */
static inline void
pkt_ip(const uint8_t *p, const uint8_t *end, int kind, struct pkt *k)
{
	k->kind = kind;
	k->ipc = p[0] >> 5;
	if (ip_bytes[k->ipc] > 8 ||
	    (size_t)(end - p) < 1 + ip_bytes[k->ipc]) {
		k->kind = PK_BAD;
		return;
	}
	k->size = 1 + ip_bytes[k->ipc];
	k->v = le_bytes(p + 1, ip_bytes[k->ipc]);
}

/* Reads the packet at p (p < end) into *k. */
void fast_pkt_read(const uint8_t *p, const uint8_t *end, struct pkt *k);

#endif
