/*
 * ptdec_fast_qry: the fast decoder's emulated query decoder, the half of
 * libipt's block decoder (v2.0) that reads packets: struct fq follows the
 * trace from a PSB, keeps libipt's two clocks (the time at the last
 * packet consumed, which blocks report, and the read-ahead's, with the
 * TSC, CYC, MTC and TMA calibration of pt_time and pt_time_cal), caches
 * TNT bits, reconstructs compressed IPs and queues the events bound to a
 * TIP or a PSBEND, answering what the block walker (ptdec_fast.c) asks:
 * the next conditional branch, indirect branch or event.
 *
 * What the walker asks at every branch is inline here, for its loop; the
 * rest is ptdec_fast_qry.c.  FAIL from any of them gives the interval to
 * libipt.
 */
#ifndef PTKIT_PTDEC_FAST_QRY_H
#define PTKIT_PTDEC_FAST_QRY_H

#include <stddef.h>
#include <stdint.h>

#include "dec/ptdec_fast_pkt.h"

struct ftime {
	uint64_t tsc, base, fc;
	uint32_t ctc, ctc_cyc, lost_cyc;
	int have_tsc, have_tma, have_mtc;
};

struct ftcal {
	uint64_t fcr, min_fcr, max_fcr;
	uint64_t tsc, cyc_tsc, cyc_mtc;
	uint32_t ctc;
	int have_mtc, check_skl168;
};

/* What the time calculation needs of the configuration. */
struct ftconf {
	uint8_t nom_freq, mtc_freq;
	uint32_t eax, ebx;		/* CPUID 0x15 */
	int skl168;			/* erratum SKL168 applies */
};

#define FAIL (-1)		/* give the interval to libipt */

/* Query status bits (libipt's pts_*). */
#define ST_EVENT 0x1

#define ST_EOS 0x2

enum fev_type { EV_NONE, EV_ENABLED, EV_DISABLED, EV_ASYNC_DISABLED,
	EV_EXEC_MODE, EV_CBR, EV_ASYNC_BRANCH };

struct fev {
	int type;
	int status_update;
	int ip_suppressed;
	int has_tsc;
	uint64_t tsc;
	uint64_t ip, at;
	uint64_t arg;
};

#define EVQ_MAX 8

struct evq {
	struct fev ev[EVQ_MAX];
	unsigned head, n;
};

struct fq {
	const uint8_t *begin, *end, *pos;
	struct ftconf conf;
	struct ftime time;
	/* the time at the last consumed packet (pt_blk_time): its TSC */
	uint64_t last_tsc;
	int last_have_tsc;
	struct ftcal tcal;
	uint64_t tnt;		/* cached TNT bits, the next in bit tnt_n-1 */
	unsigned tnt_n;
	uint64_t last_ip;
	int have_ip, ip_suppressed;
	int consume_packet;
	struct pkt next;	/* the packet at pos */
	struct evq tipq, psbq;	/* events bound to TIP, to PSBEND */
	struct fev published;	/* the event the last decode made */
	int have_published;
};

/* Reads a PSB+ header (pos at the PSB) up to its PSBEND. */
int fast_read_psb_header(struct fq *q);

/* libipt's read-ahead: applies packets up to a TNT, TIP or event. */
int fast_read_ahead(struct fq *q);

/*
 * qry_cond without a cached TNT bit (pt_qry_cond_branch): takes the next
 * TNT.  Returns 0 or FAIL (also a bad query).
 */
int fast_qry_cond_fill(struct fq *q);

/* pt_qry_indirect_branch.  Returns status flags or FAIL. */
int fast_qry_indirect(struct fq *q, uint64_t *ip);

/* pt_qry_event: the next event into *ev.  Returns status flags or FAIL. */
int fast_qry_event(struct fq *q, struct fev *ev);

/* The last ip as an event ip: 0 and sets *suppressed if there is none. */
static inline uint64_t
event_ip(const struct fq *q, int *suppressed)
{
	if (!q->have_ip || q->ip_suppressed) {
		*suppressed = 1;
		return 0;
	}
	return q->last_ip;
}

static inline void
fetch(struct fq *q)
{
	fast_pkt_read(q->pos, q->end, &q->next);
}

/* libipt's pt_qry_will_event for the packet at pos. */
static inline int
will_event(const struct fq *q)
{
	switch (q->next.kind) {
	case PK_PGE:
	case PK_PGD:
	case PK_MODE:
	case PK_CBR:
	case PK_OTHER:		/* treated as an event: fetching it fails */
		return 1;
	case PK_PSBEND:
		return q->psbq.n > 0;
	case PK_TIP:
		return q->tipq.n > 0;
	default:
		return 0;
	}
}

static inline int
status_flags(const struct fq *q)
{
	if (q->tnt_n > 0)
		return 0;
	if (will_event(q))
		return ST_EVENT;
	return q->next.kind == PK_EOS ? ST_EOS : 0;
}

/* Is the next query a TIP (an uncompressed return)? */
static inline int
tip_next(const struct fq *q)
{
	return q->tnt_n == 0 && q->next.kind == PK_TIP && q->tipq.n == 0;
}

static inline int
qry_cond(struct fq *q, int *taken)
{
	if (q->tnt_n == 0 && fast_qry_cond_fill(q) < 0)
		return FAIL;
	*taken = (int)(q->tnt >> --q->tnt_n) & 1;
	return q->tnt_n > 0 ? 0 : status_flags(q);
}

#endif
