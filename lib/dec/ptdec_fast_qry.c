/*
 * ptdec_fast_qry: the fast decoder's emulated query decoder (see
 * ptdec_fast_qry.h): the time calculation, the event queues, the PSB+
 * header, the read-ahead between branches and the queries that consume
 * a TNT, a TIP or an event.
 */
#include <string.h>

#include "dec/ptdec_fast_qry.h"

#define FCR_SHIFT 8		/* libipt's pt_tcal_fcr_shr */

static void
tcal_set_fcr(struct ftcal *c, uint64_t fcr)
{
	c->fcr = fcr;
	if (fcr < c->min_fcr)
		c->min_fcr = fcr;
	if (fcr > c->max_fcr)
		c->max_fcr = fcr;
}

#define BAD_CONFIG (-2)		/* libipt's -pte_bad_config: ignored */

/* A packet is consumed: blocks now report the time so far. */
static inline void
consume_time(struct fq *q)
{
	q->last_tsc = q->time.tsc;
	q->last_have_tsc = q->time.have_tsc;
}

static int
evq_push(struct evq *q, const struct fev *ev)
{
	if (q->n == EVQ_MAX)
		return FAIL;
	q->ev[(q->head + q->n++) % EVQ_MAX] = *ev;
	return 0;
}

static struct fev *
evq_pop(struct evq *q)
{
	struct fev *ev;

	if (q->n == 0)
		return NULL;
	ev = &q->ev[q->head];
	q->head = (q->head + 1) % EVQ_MAX;
	q->n--;
	return ev;
}

static void
event_time(const struct fq *q, struct fev *ev)
{
	ev->has_tsc = q->time.have_tsc;
	ev->tsc = q->time.tsc;
}

static void
apply_tsc(struct fq *q, uint64_t tsc, int header)
{
	struct ftcal *c = &q->tcal;

	if (header) {
		uint64_t last = c->tsc, cyc = c->cyc_tsc;

		c->tsc = tsc;
		c->cyc_tsc = 0;
		if (last != 0 && cyc != 0 && !c->have_mtc) {
			uint64_t t = tsc, d;

			if (t < last)
				t += 1ull << 56;
			d = t - last;
			/* libipt fails these; so do we (to libipt) */
			if (t >= last && !(d & ~(~0ull >> FCR_SHIFT)))
				tcal_set_fcr(c, (d << FCR_SHIFT) / cyc);
		}
	} else {
		c->tsc = tsc;
		c->cyc_tsc = 0;
	}
	q->time.have_tsc = 1;
	q->time.have_tma = 0;
	q->time.have_mtc = 0;
	q->time.tsc = q->time.base = tsc;
	q->time.ctc = 0;
	q->time.fc = 0;
	q->time.lost_cyc = 0;
}

/* CTC difference, correcting one wrap.  0 or FAIL. */
static int
ctc_delta(const struct fq *q, uint32_t ctc, uint32_t last, uint32_t *d)
{
	if (ctc < last) {
		ctc += 1u << (q->conf.mtc_freq + 8);
		if (ctc < last)
			return FAIL;
	}
	*d = ctc - last;
	return 0;
}

/* Fast-counter ticks of a CTC difference.  0 or BAD_CONFIG. */
static int
ctc_fc(const struct fq *q, uint64_t ctc, uint64_t *fc)
{
	if (q->conf.eax == 0 || q->conf.ebx == 0)
		return BAD_CONFIG;
	*fc = (ctc * q->conf.ebx) / q->conf.eax;
	return 0;
}

static int
apply_tma(struct fq *q, uint32_t ctc, uint32_t fc)
{
	struct ftime *t = &q->time;
	unsigned hi = q->conf.mtc_freq + 8u;

	if (!t->have_tsc || t->have_tma || t->have_mtc)
		return FAIL;
	t->have_tma = 1;
	t->base -= fc;
	t->fc += fc;
	if (hi <= 16)
		t->have_mtc = 1;
	t->ctc = t->ctc_cyc = ctc & ((1u << hi) - 1u);
	return 0;
}

/* pt_tcal_update_mtc.  0, BAD_CONFIG or FAIL. */
static int
tcal_mtc(struct fq *q, uint32_t ctc)
{
	struct ftcal *c = &q->tcal;
	uint32_t last = c->ctc, d;
	uint64_t cyc = c->cyc_mtc, fc, fcr;
	int check = c->check_skl168, rc;

	c->check_skl168 = 0;
	if (!c->have_mtc) {
		c->cyc_mtc = 0;
		c->ctc = ctc;
		c->have_mtc = 1;
		return 0;
	}
	if (cyc == 0)
		return 0;
	c->cyc_mtc = 0;
	c->ctc = ctc;
	if (ctc_delta(q, ctc, last, &d) < 0)
		return FAIL;
	if ((rc = ctc_fc(q, d, &fc)) < 0)
		return rc;
	if (fc & ~(~0ull >> FCR_SHIFT))
		return FAIL;
	fcr = (fc << FCR_SHIFT) / cyc;
	if (check) {
		if ((1u << q->conf.mtc_freq) < d)
			return 0;
		if (q->conf.mtc_freq < 10 && c->min_fcr <= c->max_fcr &&
		    ((c->fcr * (cyc + 0xf00)) >> FCR_SHIFT) < fc)
			return 0;
	}
	tcal_set_fcr(c, fcr);
	return 0;
}

/* pt_time_update_mtc.  0, BAD_CONFIG or FAIL. */
static int
time_mtc(struct fq *q, uint32_t ctc)
{
	struct ftime *t = &q->time;
	int had_tma = t->have_tma, had_mtc = t->have_mtc;
	uint32_t last = t->ctc, d;
	uint64_t base = t->base, fc;
	int rc;

	if (t->have_tsc && !had_tma)
		return 0;
	if (t->fc || t->lost_cyc || !had_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = 1;
	t->fc = 0;
	t->ctc = ctc;
	t->lost_cyc = 0;
	if (!had_mtc) {
		uint32_t lo = ctc & 0xffff, hi = ctc & ~0xffffu;

		if (!had_tma)
			return 0;
		if (last & ~0xffffu)
			return FAIL;
		if (lo < last) {
			hi -= 1u << 16;
			hi &= 0xffu << q->conf.mtc_freq;
		}
		last |= hi;
	}
	if (ctc_delta(q, ctc, last, &d) < 0)
		return FAIL;
	if ((rc = ctc_fc(q, d, &fc)) < 0)
		return rc;
	t->tsc = t->base = base + fc;
	return 0;
}

static int
apply_mtc(struct fq *q, uint8_t mtc)
{
	uint32_t ctc = (uint32_t)mtc << q->conf.mtc_freq;

	if (tcal_mtc(q, ctc) == FAIL || time_mtc(q, ctc) == FAIL)
		return FAIL;
	return 0;
}

/* pt_time_adjust_cyc: the part of cyc in earlier MTC periods.  0 or rc */
static int
adjust_cyc(const struct fq *q, uint64_t *cyc, uint64_t fcr)
{
	uint32_t d;
	uint64_t fc, old;
	int rc;

	if (q->time.ctc == q->time.ctc_cyc)
		return 0;
	if (ctc_delta(q, q->time.ctc, q->time.ctc_cyc, &d) < 0)
		return FAIL;
	if ((rc = ctc_fc(q, d, &fc)) < 0)
		return rc;
	old = (fc << FCR_SHIFT) / fcr;
	*cyc = (*cyc < old ? old : *cyc) - old;
	return 0;
}

static inline int
apply_cyc(struct fq *q, uint64_t cyc)
{
	uint64_t fcr;
	int rc;

	q->tcal.cyc_tsc += cyc;
	q->tcal.cyc_mtc += cyc;
	fcr = q->tcal.min_fcr <= q->tcal.max_fcr ? q->tcal.fcr : 0;
	if (fcr == 0) {
		q->time.lost_cyc++;
		return 0;
	}
	if (q->time.fc == 0 && (rc = adjust_cyc(q, &cyc, fcr)) < 0)
		return rc == FAIL ? FAIL : 0;
	q->time.fc += (cyc * fcr) >> FCR_SHIFT;
	q->time.tsc = q->time.base + q->time.fc;
	return 0;
}

static int
update_ip(struct fq *q, const struct pkt *k)
{
	uint64_t ip = q->last_ip;

	switch (k->ipc) {
	case 0:
		q->ip_suppressed = 1;
		return 0;
	case 1:
		ip = (ip & ~0xffffull) | (k->v & 0xffff);
		break;
	case 2:
		ip = (ip & ~0xffffffffull) | (k->v & 0xffffffff);
		break;
	case 3:
		ip = (k->v & 0xffffffffffffull) | ((k->v & (1ull << 47)) ?
		    0xffff000000000000ull : 0);
		break;
	case 4:
		ip = (ip & ~0xffffffffffffull) | (k->v & 0xffffffffffffull);
		break;
	case 6:
		ip = k->v;
		break;
	default:
		return FAIL;
	}
	q->last_ip = ip;
	q->have_ip = 1;
	q->ip_suppressed = 0;
	return 0;
}

/* Applies the timing packet q->next (CYC, MTC, TMA).  0 or FAIL. */
static int
apply_timing(struct fq *q)
{
	switch (q->next.kind) {
	case PK_CYC:
		return apply_cyc(q, q->next.v);
	case PK_MTC:
		return apply_mtc(q, (uint8_t)q->next.v);
	default:
		return apply_tma(q, (uint32_t)q->next.v, q->next.nbits);
	}
}

/* Reads a PSB+ header (pos at the PSB) up to its PSBEND. */
int
fast_read_psb_header(struct fq *q)
{
	struct fev ev;

	q->pos += q->next.size;
	if (q->conf.skl168)
		q->tcal.check_skl168 = 1;
	q->have_ip = 0;
	q->ip_suppressed = 0;
	q->last_ip = 0;
	for (;;) {
		fetch(q);
		memset(&ev, 0, sizeof(ev));
		switch (q->next.kind) {
		case PK_PSBEND:
			return 0;
		case PK_PAD:
			break;
		case PK_TSC:
			apply_tsc(q, q->next.v, 1);
			break;
		case PK_CBR:
			if (q->next.v == 0)
				return FAIL;
			if (q->conf.nom_freq != 0)
				tcal_set_fcr(&q->tcal, ((uint64_t)
				    q->conf.nom_freq << FCR_SHIFT) / q->next.v);
			ev.type = EV_CBR;
			ev.arg = q->next.v;
			if (evq_push(&q->psbq, &ev) < 0)
				return FAIL;
			break;
		case PK_MODE:
			if ((q->next.v >> 5) != 0)
				return FAIL;	/* MODE.TSX */
			ev.type = EV_EXEC_MODE;
			ev.arg = q->next.v & 3;
			if (evq_push(&q->psbq, &ev) < 0)
				return FAIL;
			break;
		case PK_FUP:
			if (update_ip(q, &q->next) < 0)
				return FAIL;
			break;
		case PK_CYC:
		case PK_MTC:
		case PK_TMA:
			if (apply_timing(q) < 0)
				return FAIL;
			break;
		default:
			return FAIL;
		}
		q->pos += q->next.size;
	}
}

/* libipt's read-ahead: applies packets up to a TNT, TIP or event. */
int
fast_read_ahead(struct fq *q)
{
	struct fev ev;

	for (;;) {
		/* the packets between branches, without the general reader */
		if (q->pos < q->end) {
			uint8_t b = *q->pos;

			/* a one-byte CYC, the most common packet of all */
			if ((b & 7) == 3) {
				if (apply_cyc(q, b >> 3) < 0)
					return FAIL;
				q->pos++;
				continue;
			}
			if ((b & 3) == 3) {
				pkt_cyc(q->pos, q->end, &q->next);
				if (q->next.kind != PK_CYC ||
				    apply_cyc(q, q->next.v) < 0)
					return FAIL;
				q->pos += q->next.size;
				continue;
			}
			if (!(b & 1) && b > 2) {
				pkt_tnt8(b, &q->next);
				return 0;
			}
			/* a TIP or a long TNT ends the read-ahead */
			if ((b & 0x1f) == 0x0d) {
				pkt_ip(q->pos, q->end, PK_TIP, &q->next);
				if (q->next.kind == PK_TIP)
					return 0;
			} else if (b == 2 && q->end - q->pos >= 8 &&
			    q->pos[1] == 0xa3) {
				pkt_tnt64(q->pos, &q->next);
				if (q->next.kind == PK_TNT)
					return 0;
			}
		}
		fetch(q);
		if (q->next.kind == PK_TNT || q->next.kind == PK_TIP ||
		    q->next.kind == PK_EOS || will_event(q))
			return 0;
		switch (q->next.kind) {
		case PK_PAD:
			break;
		case PK_CYC:
		case PK_MTC:
		case PK_TMA:
			if (apply_timing(q) < 0)
				return FAIL;
			break;
		case PK_TSC:
			apply_tsc(q, q->next.v, 0);
			break;
		case PK_PSBEND:		/* no events pending */
			break;
		case PK_PSB:
			if (fast_read_psb_header(q) < 0)
				return FAIL;
			continue;	/* pos is at the PSBEND */
		case PK_FUP:
			memset(&ev, 0, sizeof(ev));
			if (update_ip(q, &q->next) < 0 || !q->have_ip ||
			    q->ip_suppressed)
				return FAIL;
			ev.type = EV_ASYNC_BRANCH;
			ev.at = q->last_ip;
			event_time(q, &ev);
			if (evq_push(&q->tipq, &ev) < 0)
				return FAIL;
			break;
		default:
			return FAIL;
		}
		q->pos += q->next.size;
	}
}

/* pt_qry_cond_branch.  Returns status flags or FAIL (also bad query). */
int __attribute__((noinline))
fast_qry_cond_fill(struct fq *q)
{
	if (q->tnt_n == 0) {
		for (;;) {
			if (will_event(q) || q->next.kind != PK_TNT)
				return FAIL;
			q->tnt = q->next.v;
			q->tnt_n = q->next.nbits;
			q->pos += q->next.size;
			if (q->tnt_n > 0)
				break;
			return FAIL;	/* an empty TNT: libipt's */
		}
		consume_time(q);
		if (fast_read_ahead(q) < 0)
			return FAIL;
	}
	return 0;
}

/* pt_qry_indirect_branch.  Returns status flags or FAIL. */
int
fast_qry_indirect(struct fq *q, uint64_t *ip)
{
	int sup = 0;

	if (!tip_next(q))
		return FAIL;
	if (update_ip(q, &q->next) < 0)
		return FAIL;
	*ip = event_ip(q, &sup);
	if (sup)
		return FAIL;	/* libipt: -pte_noip in the block decoder */
	q->pos += q->next.size;
	consume_time(q);
	if (fast_read_ahead(q) < 0)
		return FAIL;
	return status_flags(q);
}

/* Decodes the event packet at pos; sets q->published when it made one. */
static int
decode_event_packet(struct fq *q)
{
	struct fev ev, *qe;
	int sup = 0;

	memset(&ev, 0, sizeof(ev));
	q->have_published = 0;
	switch (q->next.kind) {
	case PK_MODE:
		if ((q->next.v >> 5) != 0)
			return FAIL;
		ev.type = EV_EXEC_MODE;
		ev.arg = q->next.v & 3;
		event_time(q, &ev);
		if (evq_push(&q->tipq, &ev) < 0)
			return FAIL;
		q->pos += q->next.size;
		return 0;
	case PK_PSBEND:
		if ((qe = evq_pop(&q->psbq)) == NULL) {
			q->pos += q->next.size;
			return 0;
		}
		ev = *qe;
		ev.status_update = 1;
		event_time(q, &ev);
		if (ev.type == EV_EXEC_MODE)
			ev.ip = event_ip(q, &ev.ip_suppressed);
		break;
	case PK_PGE:
		if (update_ip(q, &q->next) < 0)
			return FAIL;
		if (!q->consume_packet) {
			ev.type = EV_ENABLED;
			ev.ip = event_ip(q, &sup);
			if (sup)
				return FAIL;
			event_time(q, &ev);
			q->tnt_n = 0;
			q->consume_packet = 1;
		} else {
			if ((qe = evq_pop(&q->tipq)) == NULL ||
			    qe->type != EV_EXEC_MODE)
				return FAIL;
			ev = *qe;
			ev.ip = event_ip(q, &ev.ip_suppressed);
		}
		if (q->tipq.n > 0)
			break;
		q->consume_packet = 0;
		q->pos += q->next.size;
		break;
	case PK_PGD:
		if (update_ip(q, &q->next) < 0)
			return FAIL;
		if ((qe = evq_pop(&q->tipq)) != NULL) {
			if (qe->type != EV_ASYNC_BRANCH)
				return FAIL;
			ev = *qe;
			ev.type = EV_ASYNC_DISABLED;
			ev.ip = event_ip(q, &ev.ip_suppressed);
		} else {
			ev.type = EV_DISABLED;
			ev.ip = event_ip(q, &ev.ip_suppressed);
			event_time(q, &ev);
		}
		if (q->tipq.n > 0)
			return FAIL;
		q->pos += q->next.size;
		break;
	default:
		return FAIL;	/* async branch, CBR, OVF, ...: libipt's */
	}
	q->published = ev;
	q->have_published = 1;
	return 0;
}

/* pt_qry_event: the next event into *ev.  Returns status flags or FAIL. */
int
fast_qry_event(struct fq *q, struct fev *ev)
{
	if (q->tnt_n > 0)
		return FAIL;
	for (;;) {
		if ((q->next.kind == PK_TIP || q->next.kind == PK_TNT) &&
		    !will_event(q))
			return FAIL;
		if (q->next.kind == PK_EOS || decode_event_packet(q) < 0)
			return FAIL;
		if (q->have_published)
			break;
		if (fast_read_ahead(q) < 0)
			return FAIL;
	}
	*ev = q->published;
	consume_time(q);
	/* stops at once where the packet still has events to give */
	if (fast_read_ahead(q) < 0)
		return FAIL;
	return status_flags(q);
}
