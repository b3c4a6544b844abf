/*
 * t_emu_enc: the emu plugin's stream rules (emu_enc), its ring
 * (emu_handoff) and its instruction classes (emu_cls), checked by decoding
 * what they write with libipt's packet decoder.
 */
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cls.h"
#include "emu_enc.h"
#include "emu_handoff.h"
#include "tap.h"

struct stream {
	struct emu_ring_hdr *hdr;
	struct emu_enc enc;
	uint8_t *bytes;		/* unrolled ring */
	uint64_t len;
};

static void
stream_open(struct stream *s, uint64_t ring, int retcomp, uint64_t psb)
{
	memset(s, 0, sizeof(*s));
	s->hdr = calloc(1, EMU_HDR_SIZE + ring);
	s->hdr->ring_size = ring;
	if (emu_enc_init(&s->enc, s->hdr, 0, retcomp, psb) < 0)
		abort();
}

static void
stream_close(struct stream *s)
{
	emu_enc_fini(&s->enc);
	free(s->hdr);
	free(s->bytes);
}

/* Commits and unrolls the ring, oldest byte first. */
static void
stream_take(struct stream *s)
{
	emu_enc_tnt_flush(&s->enc);
	emu_enc_commit(&s->enc);
	free(s->bytes);
	s->bytes = malloc(s->hdr->ring_size);
	s->len = emu_ring_unroll((uint8_t *)s->hdr + EMU_HDR_SIZE,
	    s->hdr->ring_size, s->hdr->total, s->bytes);
}

/* The packet types of the stream (after its first PSB), as letters. */
static void
packet_kinds(const struct stream *s, char *out, size_t size,
    uint64_t *last_ip)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	size_t n = 0;

	pt_config_init(&cfg);
	cfg.begin = s->bytes;
	cfg.end = s->bytes + s->len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (d == NULL || pt_pkt_sync_forward(d) < 0) {
		snprintf(out, size, "no sync");
		pt_pkt_free_decoder(d);
		return;
	}
	while (n + 2 < size && pt_pkt_next(d, &p, sizeof(p)) > 0) {
		char c = '?';

		switch (p.type) {
		case ppt_psb: c = 'P'; break;
		case ppt_psbend: c = 'E'; break;
		case ppt_tsc: c = 'S'; break;
		case ppt_cbr: c = 'C'; break;
		case ppt_mode: c = 'M'; break;
		case ppt_tip_pge: c = 'G'; break;
		case ppt_tip_pgd: c = 'D'; break;
		case ppt_tip: c = 'T'; break;
		case ppt_fup: c = 'F'; break;
		case ppt_tnt_8: c = 'n'; break;
		case ppt_tnt_64: c = 'N'; break;
		case ppt_cyc: c = 'y'; break;
		case ppt_pad: continue;
		default: break;
		}
		/* the payload as written: (ipc << 60) | compressed ip */
		if (p.type == ppt_tip || p.type == ppt_tip_pge)
			*last_ip = ((uint64_t)p.payload.ip.ipc << 60) |
			    p.payload.ip.ip;
		out[n++] = c;
	}
	out[n] = '\0';
	pt_pkt_free_decoder(d);
}

static void
test_packets(void)
{
	struct stream s;
	char kinds[64];
	uint64_t ip = 0;

	stream_open(&s, 1 << 16, 1, 4096);
	emu_enc_psb(&s.enc, 100, 0, 0);
	emu_enc_pge(&s.enc, 100, 0x401000);
	emu_enc_tnt(&s.enc, 101, 1);
	emu_enc_tnt(&s.enc, 102, 0);
	emu_enc_tip(&s.enc, 103, 0x402000);
	emu_enc_pgd(&s.enc, 104);
	stream_take(&s);
	packet_kinds(&s, kinds, sizeof(kinds), &ip);
	IS_STR(kinds, "PSCMEMGnTD", "PSB+ (TSC CBR MODE), PGE, TNT flushed "
	    "before TIP, PGD");
	IS_U64(ip, ((uint64_t)pt_ipc_update_16 << 60) | 0x2000,
	    "TIP's target is compressed against the last IP (PGE's)");
	stream_close(&s);
}

static void
test_long_tnt(void)
{
	struct stream s;
	char kinds[64];
	uint64_t ip = 0;
	int i;

	stream_open(&s, 1 << 16, 1, 4096);
	emu_enc_psb(&s.enc, 1, 0, 0);
	emu_enc_pge(&s.enc, 1, 0x401000);
	for (i = 0; i < 50; i++)
		emu_enc_tnt(&s.enc, 2, i & 1);
	stream_take(&s);
	packet_kinds(&s, kinds, sizeof(kinds), &ip);
	IS_STR(kinds, "PSCMEMGNn", "47 bits make a long TNT, the rest a short");
	IS_U64(s.enc.n_tnt_bits, 50, "every bit counted");
	stream_close(&s);
}

static void
test_return_compression(void)
{
	struct stream s;
	char kinds[64];
	uint64_t ip = 0;

	stream_open(&s, 1 << 16, 1, 1 << 20);
	emu_enc_psb(&s.enc, 1, 0, 0);
	emu_enc_pge(&s.enc, 1, 0x401000);
	emu_enc_call(&s.enc, 0x401005);
	emu_enc_ret(&s.enc, 2, 0x401005);	/* matches: one TNT bit */
	emu_enc_call(&s.enc, 0x401010);
	emu_enc_call(&s.enc, 0x401020);
	emu_enc_ret(&s.enc, 3, 0x409999);	/* mismatch: TIP, stack emptied */
	emu_enc_ret(&s.enc, 4, 0x401010);	/* would match the older call */
	stream_take(&s);
	packet_kinds(&s, kinds, sizeof(kinds), &ip);
	IS_STR(kinds, "PSCMEMGnTT", "compressed, then TIP, then TIP again");
	IS_U64(s.enc.n_retcomp, 1, "one compressed return");

	emu_enc_call(&s.enc, 0x401030);
	emu_enc_psb(&s.enc, 5, 1, 0x402000);
	emu_enc_ret(&s.enc, 6, 0x401030);	/* its call precedes the PSB */
	IS_U64(s.enc.n_retcomp, 1, "no compression across a PSB");
	stream_close(&s);

	stream_open(&s, 1 << 16, 0, 1 << 20);
	emu_enc_call(&s.enc, 0x401005);
	emu_enc_ret(&s.enc, 2, 0x401005);
	IS_U64(s.enc.n_retcomp, 0, "noretcomp: every return is a TIP");
	stream_close(&s);
}

/* A 4K ring keeps exactly the newest 4K of what a big one holds. */
static void
test_ring_wrap(void)
{
	struct stream small, big;
	uint64_t i, ip = 0x401000;
	char kinds[64];

	stream_open(&small, 4096, 1, 512);
	stream_open(&big, 1 << 20, 1, 512);
	for (i = 0; i < 3000; i++) {
		struct stream *s[2] = { &small, &big };
		int k;

		for (k = 0; k < 2; k++) {
			if (i == 0) {
				emu_enc_psb(&s[k]->enc, i, 0, 0);
				emu_enc_pge(&s[k]->enc, i, ip);
			}
			emu_enc_tnt(&s[k]->enc, i, (int)(i % 3 == 0));
			if (i % 7 == 0)
				emu_enc_tip(&s[k]->enc, i, ip + i * 16);
			if (emu_enc_psb_due(&s[k]->enc))
				emu_enc_psb(&s[k]->enc, i, 1, ip + i);
			emu_enc_commit(&s[k]->enc);
		}
	}
	stream_take(&small);
	stream_take(&big);
	OK(big.len > 4096, "the big ring holds %llu bytes",
	    (unsigned long long)big.len);
	IS_U64(small.len, 4096, "the small ring keeps its size");
	IS_U64(small.hdr->total, big.hdr->total, "both saw every byte");
	IS_MEM(small.bytes, big.bytes + big.len - 4096, 4096,
	    "the small ring is the big one's newest 4K");
	packet_kinds(&small, kinds, sizeof(kinds), &ip);
	OK(kinds[0] == 'P', "a decoder syncs on a PSB inside the wrapped ring");
	stream_close(&small);
	stream_close(&big);
}

/*
 * Every packet the stream holds, decoded by libipt and encoded again by
 * its pt_enc_next, gives the very bytes written: the encodings are
 * libipt's.  A random mix of every kind, CYC values and IP compressions
 * of every size, a ring small enough to wrap (packets copied around its
 * end) and signal diversions (packets through the side buffer).
 */
static void
test_encoding_is_libipts(void)
{
	static const uint64_t steps[] = { 0, 1, 31, 32, 4095, 1u << 20,
		1ull << 33, 1ull << 45 };
	struct pt_packet_decoder *d;
	struct pt_encoder *enc;
	struct pt_config cfg;
	struct pt_packet p;
	struct stream s;
	uint64_t now = 1000, ip = 0x401000, x = 88172645463325252ull, off;
	uint8_t again[64];
	int i, n, packets = 0, differ = 0, kinds[64] = { 0 };

	stream_open(&s, 1 << 16, 1, 2048);
	s.enc.cyc = 1;
	emu_enc_psb(&s.enc, now, 0, 0);
	emu_enc_pge(&s.enc, now, ip);
	for (i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		now += steps[x % 8];
		switch ((x >> 3) % 16) {
		case 0:	/* a far jump: sext-48 or full */
			ip = (x >> 8) & 1 ? x >> 16 : x;
			emu_enc_tip(&s.enc, now, ip);
			break;
		case 1:	/* another 4 GiB */
			ip ^= (x >> 20) << 32 & 0xffff00000000ull;
			emu_enc_tip(&s.enc, now, ip);
			break;
		case 2:
			ip ^= (x >> 24) & 0xffff0000;
			emu_enc_fup(&s.enc, now, ip);
			emu_enc_pgd(&s.enc, now);
			emu_enc_tsc(&s.enc, now);
			emu_enc_pge(&s.enc, now, ip);
			break;
		case 3:
			emu_enc_pgd_ip(&s.enc, now, ip);
			emu_enc_pge(&s.enc, now, ip + 16);
			break;
		case 4:
			emu_enc_call(&s.enc, ip + 5);
			emu_enc_ret(&s.enc, now, (x >> 9) & 1 ? ip + 5 : ip);
			break;
		case 5:
			if ((x >> 10) % 64 == 0) {
				emu_enc_divert(&s.enc);
				emu_enc_tip(&s.enc, now, ip + 64);
				emu_enc_tnt(&s.enc, now, 1);
				emu_enc_undivert(&s.enc);
				emu_enc_append_side(&s.enc);
			}
			break;
		default:
			ip ^= (x >> 30) & 0xfff0;
			if ((x >> 12) & 1)
				emu_enc_tip(&s.enc, now, ip);
			else
				emu_enc_tnt(&s.enc, now, (int)((x >> 13) & 1));
			break;
		}
		if (emu_enc_psb_due(&s.enc))
			emu_enc_psb(&s.enc, now, 1, ip);
		emu_enc_commit(&s.enc);
	}
	stream_take(&s);
	OK(s.hdr->total > 4 * s.hdr->ring_size, "the ring wrapped (%llu bytes)",
	    (unsigned long long)s.hdr->total);
	IS_U64(s.enc.n_errors, 0, "no packet was lost");

	pt_config_init(&cfg);
	cfg.begin = s.bytes;
	cfg.end = s.bytes + s.len;
	d = pt_pkt_alloc_decoder(&cfg);
	cfg.begin = again;
	cfg.end = again + sizeof(again);
	enc = pt_alloc_encoder(&cfg);
	if (d == NULL || enc == NULL || pt_pkt_sync_forward(d) < 0)
		abort();
	for (;;) {
		if (pt_pkt_get_offset(d, &off) < 0)
			abort();
		if (pt_pkt_next(d, &p, sizeof(p)) <= 0)
			break;
		if (pt_enc_sync_set(enc, 0) < 0)
			abort();
		n = pt_enc_next(enc, &p);
		if (n <= 0 || off + (uint64_t)n > s.len ||
		    memcmp(again, s.bytes + off, (size_t)n) != 0)
			differ++;
		kinds[(unsigned)p.type % 64]++;
		packets++;
	}
	OK(packets > 10000, "%d packets decoded", packets);
	IS_INT(differ, 0, "each is what pt_enc_next writes for it");
	OK(kinds[ppt_tnt_8] && kinds[ppt_tnt_64] && kinds[ppt_tip] &&
	    kinds[ppt_tip_pge] && kinds[ppt_tip_pgd] && kinds[ppt_fup] &&
	    kinds[ppt_cyc] && kinds[ppt_tsc] && kinds[ppt_psb] &&
	    kinds[ppt_psbend] && kinds[ppt_cbr] && kinds[ppt_mode],
	    "every kind we write is among them");
	pt_pkt_free_decoder(d);
	pt_free_encoder(enc);
	stream_close(&s);
}

static void
test_ring_put(void)
{
	uint8_t ring[8], src[20], out[8];
	uint64_t total = 0;
	int i;

	for (i = 0; i < 20; i++)
		src[i] = (uint8_t)i;
	emu_ring_put(ring, sizeof(ring), &total, src, 5);
	emu_ring_put(ring, sizeof(ring), &total, src + 5, 15);
	IS_U64(total, 20, "total counts every byte");
	IS_U64(emu_ring_unroll(ring, sizeof(ring), total, out), 8,
	    "unroll gives the ring's size");
	IS_MEM(out, src + 12, 8, "the newest 8 bytes, oldest first");
}

/* A ring that gave history back for the budget holds only what follows. */
static void
test_ring_freed(void)
{
	struct emu_ring_hdr h;
	uint8_t ring[8], src[20], out[8];
	uint64_t total = 0;
	int i;

	for (i = 0; i < 20; i++)
		src[i] = (uint8_t)i;
	memset(&h, 0, sizeof(h));
	h.ring_size = sizeof(ring);
	emu_ring_put(ring, sizeof(ring), &total, src, 6);
	IS_U64(emu_ring_first(&h, total), 0, "nothing lost: from the start");
	h.freed = 4;
	IS_U64(emu_ring_first(&h, total), 4, "freed bytes are not held");
	IS_U64(emu_ring_unroll_from(ring, sizeof(ring), total, 4, out), 2,
	    "what follows them");
	IS_MEM(out, src + 4, 2, "the two newest bytes");
	emu_ring_put(ring, sizeof(ring), &total, src + 6, 14);
	IS_U64(emu_ring_first(&h, total), 12,
	    "overwritten beyond what was freed: the ring's size");
	h.freed = 17;
	IS_U64(emu_ring_unroll_from(ring, sizeof(ring), total,
	    emu_ring_first(&h, total), out), 3, "freed past the overwritten");
	IS_MEM(out, src + 17, 3, "around the ring's end, oldest first");
	h.freed = 99;
	IS_U64(emu_ring_first(&h, total), total, "never past the end");
}

static struct emu_insn_class
cls(const char *hex, uint64_t ip)
{
	uint8_t b[16];
	size_t n = 0;

	while (hex[0] && hex[1] && n < sizeof(b)) {
		b[n++] = (uint8_t)strtoul((char[]){ hex[0], hex[1], 0 }, NULL,
		    16);
		hex += 2;
		while (*hex == ' ')
			hex++;
	}
	return emu_cls_classify(b, n, ip);
}

static void
test_classes(void)
{
	struct emu_insn_class k;

	k = cls("e8 10 00 00 00", 0x1000);
	IS_INT(k.kind, EMU_CALL, "call rel32");
	IS_U64(k.target, 0x1015, "its target");
	k = cls("e8 00 00 00 00", 0x1000);
	IS_INT(k.call_next, 1, "call to the next instruction");
	IS_INT(cls("ff d0", 0).kind, EMU_CALL_IND, "call *%%rax");
	IS_INT(cls("ff 25 e2 3f 0a 00", 0).kind, EMU_JMP_IND,
	    "jmp *rip-relative is indirect");
	IS_INT(cls("3e ff e0", 0).kind, EMU_JMP_IND, "notrack jmp *%%rax");
	IS_INT(cls("f2 e9 00 01 00 00", 0).kind, EMU_JMP, "bnd jmp rel32");
	IS_INT(cls("c3", 0).kind, EMU_RET, "ret");
	IS_INT(cls("74 05", 0).kind, EMU_JCC, "je rel8");
	IS_INT(cls("e2 fe", 0).kind, EMU_JCC, "loop");
	IS_INT(cls("0f 05", 0).kind, EMU_SYSCALL, "syscall");
	IS_INT(cls("48 89 c3", 0).kind, EMU_OTHER, "mov");
	k = cls("0f 8e", 0);
	IS_INT(k.truncated, 1, "a jle cut to 2 bytes is a phantom");
	IS_INT(k.kind, EMU_OTHER, "and no branch");
	k = cls("f3 a4", 0);
	IS_INT(k.rep, 1, "rep movsb");
	/* x86class's classes, which libipt's decoder expects packets of */
	IS_INT(cls("0f 01 c1", 0).kind, EMU_SYSCALL, "vmcall leaves");
	IS_INT(cls("cc", 0).kind, EMU_SYSCALL, "int3 leaves");
	IS_INT(cls("ff 18", 0).kind, EMU_FAR, "call far [rax]");
	IS_INT(cls("48 cf", 0).kind, EMU_FAR, "iretq");
	IS_INT(cls("c7 f8 10 00 00 00", 0).kind, EMU_OTHER,
	    "xbegin: no TNT bit");
	IS_INT(cls("c6 f8 01", 0).kind, EMU_OTHER, "xabort: no TIP");
	IS_INT(cls("f3 48 0f ae e0", 0).kind, EMU_OTHER, "ptwrite");
}

int
main(void)
{
	test_packets();
	test_long_tnt();
	test_return_compression();
	test_ring_wrap();
	test_encoding_is_libipts();
	test_ring_put();
	test_ring_freed();
	test_classes();
	return tap_done();
}
