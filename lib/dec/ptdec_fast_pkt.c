/*
 * ptdec_fast_pkt: the general packet reader of the fast decoder (see
 * ptdec_fast_pkt.h): any packet at a position, the extended (0x02)
 * opcodes among them.
 */
#include <string.h>

#include "dec/ptdec_fast_pkt.h"

static void
pkt_ext(const uint8_t *p, const uint8_t *end, struct pkt *k)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
	    2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	size_t left = (size_t)(end - p);

	if (left < 2) {
		k->kind = PK_BAD;
		return;
	}
	switch (p[1]) {
	case 0xa3:
		if (left < 8) {
			k->kind = PK_BAD;
			k->size = 8;
			return;
		}
		pkt_tnt64(p, k);
		return;
	case 0x82:
		k->kind = left >= 16 && memcmp(p, psb, 16) == 0 ? PK_PSB :
		    PK_BAD;
		k->size = 16;
		return;
	case 0x23:
		k->kind = PK_PSBEND;
		k->size = 2;
		return;
	case 0x03:
		k->kind = left >= 4 ? PK_CBR : PK_BAD;
		k->size = 4;
		k->v = left >= 4 ? p[2] : 0;
		return;
	case 0x73:
		/* ctc in v, fast counter in nbits; reserved bits must be 0 */
		k->size = 7;
		if (left < 7 || p[4] != 0 || (p[6] & 0xfe) != 0) {
			k->kind = PK_BAD;
			return;
		}
		k->kind = PK_TMA;
		k->v = (uint64_t)p[2] | (uint64_t)p[3] << 8;
		k->nbits = (unsigned)p[5] | (unsigned)(p[6] & 1) << 8;
		return;
	default:
		k->kind = PK_OTHER;
		return;
	}
}

/* Reads the packet at p (p < end) into *k. */
void
fast_pkt_read(const uint8_t *p, const uint8_t *end, struct pkt *k)
{
	uint8_t b;

	if (p >= end) {
		k->kind = PK_EOS;
		return;
	}
	b = p[0];
	k->size = 1;
	if (b == 0) {
		k->kind = PK_PAD;
	} else if (b == 2) {
		pkt_ext(p, end, k);
	} else if (!(b & 1)) {
		pkt_tnt8(b, k);
	} else if ((b & 3) == 3) {
		pkt_cyc(p, end, k);
	} else if (b == 0x19) {
		k->kind = end - p >= 8 ? PK_TSC : PK_BAD;
		k->size = 8;
		k->v = end - p >= 8 ? le_bytes(p + 1, 7) : 0;
	} else if (b == 0x59) {
		k->kind = end - p >= 2 ? PK_MTC : PK_BAD;
		k->size = 2;
		k->v = end - p >= 2 ? p[1] : 0;
	} else if (b == 0x99) {
		k->kind = end - p >= 2 ? PK_MODE : PK_BAD;
		k->size = 2;
		k->v = end - p >= 2 ? p[1] : 0;
	} else {
		switch (b & 0x1f) {
		case 0x0d: pkt_ip(p, end, PK_TIP, k); break;
		case 0x11: pkt_ip(p, end, PK_PGE, k); break;
		case 0x01: pkt_ip(p, end, PK_PGD, k); break;
		case 0x1d: pkt_ip(p, end, PK_FUP, k); break;
		default: k->kind = PK_OTHER; return;
		}
	}
}
