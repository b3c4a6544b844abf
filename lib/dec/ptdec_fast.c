/*
 * ptdec_fast: the fast ptdec backend (ptdec_backend_fast).
 *
 * Owns the flow walk of one PSB interval by table lookups: packets read
 * straight from the trace (lib/ptdec_fast's own reader for the packets
 * user-space tracing writes), runs of instructions from lib/bbcache, and
 * the exact semantics of libipt's block decoder (v2.0) for what it
 * reports: the same blocks, the same times, the same events.
 *
 * Exactness rests on reproducing when libipt's query decoder updates the
 * time a block reports.  pt_blk_time() is the time at the last packet the
 * query decoder *consumed* (a TNT packet when its first bit is needed, a
 * TIP, an event), while timing packets after it are applied to a second
 * clock by its read-ahead; and the block decoder fetches a pending event
 * before it returns the block that ends where the event became visible.
 * The walker below therefore keeps both clocks and fetches events at the
 * same points (see fetch_event and trailing_event).
 *
 * Anything outside what is reproduced here (overflows, MTC/TMA timing,
 * CBR changes, TSX, paging, PTWRITE, power events, 16/32-bit code, errata
 * that change decoding, any decode error, code the block cache cannot
 * read) makes the walker give up on the interval: its records are
 * dropped and libipt's block decoder decodes it instead (counted in the
 * END record's fallbacks).  A mismatch with libipt is a bug here, never a
 * tolerance: tests/e2e/t5001-fast-decoder.sh and the fuzzer compare both.
 *
 * This file is the block walker (the emulated block decoder, the loop
 * over runs of blocks, the intervals) and the backend; the packets are
 * read by ptdec_fast_pkt.c and the emulated query decoder is
 * ptdec_fast_qry.c, with what the walker's loop calls at every branch
 * inline in ptdec_fast_qry.h.  All three build at -O3 (mk/fastdec.mk).
 */
#include <stdlib.h>
#include <string.h>

#include "dec/bbcache.h"
#include "dec/ptdec.h"
#include "dec/ptdec_fast_qry.h"

#define RS_SIZE 64

struct fworker {
	const struct ptdec_config *cfg;
	void *ipt;			/* libipt's worker, for fallbacks */
	struct bbcache cache;
	const uint8_t *buf;
	size_t len;
	struct fq q;
	/* block decoder state */
	uint64_t ip;
	int enabled;
	int mode;			/* enum pt_exec_mode */
	int status;
	int process_event;
	struct fev ev;
	uint64_t rs[RS_SIZE];
	unsigned rs_top, rs_n;
	/* where the interval's records go, under a mark until it is done */
	struct ptdec_out *out;
	struct error *err;
	int fatal;			/* the output failed: a real error */
	uint64_t now;			/* record time of last_time */
	uint64_t now_tsc;
	int now_valid;
	/* blocks since a packet was read, nearly (FAST_SPIN_MAX) */
	unsigned spin;
};

/*
 * How far the walker goes without reading a packet before it gives the
 * interval to libipt, which ends a loop of direct branches with a GAP
 * after PTDEC_SPIN_MAX blocks that read no packet (see ptdec.h).  The
 * walker counts (in spin) the blocks run_blocks ends at a direct branch
 * and every blk_next, and starts again at 0 when a packet is read; the
 * only blocks it does not count are those that take a bit of a TNT read
 * before, at most 47 since the count started.  So at 64 fewer it gives
 * up before libipt would: the GAP is always libipt's, and the records
 * the native decoder's.  Counting costs run_blocks an increment and a
 * compare at a direct branch only.
 */
#define FAST_SPIN_MAX (PTDEC_SPIN_MAX - 64)

/* The current block being built. */
struct fblock {
	uint64_t ip, end_ip;
	uint32_t ninsn;
	int iclass;
	int mode;
};

static int
out_push(struct fworker *w, const struct blks_record *r)
{
	int rc = ptdec_out_push(w->out, r, w->err);

	if (rc < 0) {
		w->fatal = rc;
		return FAIL;
	}
	return 0;
}

/* ipt_now of ptdec_ipt: the record time of the last consumed packet. */
static inline uint64_t
fast_now(struct fworker *w)
{
	const struct fq *q = &w->q;

	if (q->last_have_tsc && (!w->now_valid || q->last_tsc != w->now_tsc)) {
		w->now = ptdec_tsc_to_ns(&w->cfg->time, q->last_tsc);
		w->now_tsc = q->last_tsc;
		w->now_valid = 1;
	}
	return w->now;
}

/* Appends a block at time ns; an output failure is fatal, not FAIL's. */
static inline int
out_block(struct fworker *w, uint64_t ip, uint64_t end_ip, uint32_t ninsn,
    int iclass, int mode, uint64_t time)
{
	int rc = ptdec_out_push_block(w->out, ip, end_ip, ninsn,
	    (uint8_t)iclass, 0, (uint8_t)mode, time, w->err);

	if (rc < 0) {
		w->fatal = rc;
		return FAIL;
	}
	return 0;
}

/* out_block for a block that ends at a branch (see ptdec_out_push_final). */
static inline int
out_final(struct fworker *w, uint64_t ip, const struct bb *bb, uint64_t time)
{
	int rc = ptdec_out_push_final(w->out, ip, bb->end_ip, bb->ninsn,
	    bb->iclass, (uint8_t)w->mode, time, w->err);

	if (rc < 0) {
		w->fatal = rc;
		return FAIL;
	}
	return 0;
}

static inline int
push_block(struct fworker *w, const struct fblock *b)
{
	return out_block(w, b->ip, b->end_ip, b->ninsn, b->iclass, b->mode,
	    fast_now(w));
}

static int
push_event(struct fworker *w, const struct fev *ev)
{
	struct blks_record r;
	struct blks_event *be = &r.u.event;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_EVENT;
	be->flags = (uint8_t)(ev->ip_suppressed ? BLKS_EVF_IP_SUPPRESSED : 0);
	switch (ev->type) {
	case EV_ENABLED:
		be->kind = BLKS_EV_ENABLED;
		be->ip = ev->ip;
		be->arg = ev->arg;
		break;
	case EV_DISABLED:
		be->kind = BLKS_EV_DISABLED;
		be->ip = ev->ip;
		be->arg = BLKS_DIS_SYNC;
		break;
	case EV_ASYNC_DISABLED:
		be->kind = BLKS_EV_DISABLED;
		be->ip = ev->ip;
		be->at = ev->at;
		be->arg = BLKS_DIS_ASYNC;
		be->flags |= BLKS_EVF_ASYNC;
		break;
	case EV_EXEC_MODE:
		be->kind = BLKS_EV_EXEC_MODE;
		be->ip = ev->ip;
		be->arg = ev->arg == 1 ? ptem_64bit : ev->arg == 2 ?
		    ptem_32bit : ev->arg == 0 ? ptem_16bit : ptem_unknown;
		break;
	default:
		return FAIL;
	}
	be->time = ev->has_tsc ? ptdec_tsc_to_ns(&w->cfg->time, ev->tsc) :
	    fast_now(w);
	return out_push(w, &r);
}

static int
mode_of(uint64_t arg)
{
	/* MODE.exec bits: CS.L (bit 0), CS.D (bit 1) */
	switch (arg & 3) {
	case 1: return ptem_64bit;
	case 2: return ptem_32bit;
	case 0: return ptem_16bit;
	default: return ptem_unknown;
	}
}

/* pt_blk_fetch_event: 1 when an event is in process, 0 none, FAIL. */
static int
fetch_event(struct fworker *w)
{
	int st;

	if (w->process_event)
		return 1;
	if (!(w->status & ST_EVENT))
		return 0;
	if ((st = fast_qry_event(&w->q, &w->ev)) < 0)
		return FAIL;
	w->process_event = 1;
	w->status = st;
	return 1;
}

/* pt_blk_status */
static int
blk_status(const struct fworker *w, int flags)
{
	if ((w->status & ST_EOS) && !w->process_event)
		flags |= ST_EOS;
	return flags;
}

/*
 * pt_blk_proceed_trailing_event: fetches an event that became pending
 * and says whether it applies here.  Returns status flags or FAIL.
 */
static int
trailing_event_slow(struct fworker *w)
{
	int rc = fetch_event(w);

	if (rc <= 0)
		return rc < 0 ? FAIL : blk_status(w, 0);
	switch (w->ev.type) {
	case EV_DISABLED:
		break;		/* binds on the event flow */
	case EV_ENABLED:
	case EV_CBR:
		return blk_status(w, ST_EVENT);
	case EV_ASYNC_DISABLED:
		if (w->ip != w->ev.at)
			break;
		return blk_status(w, ST_EVENT);
	case EV_EXEC_MODE:
		if (!w->ev.ip_suppressed && w->ip != w->ev.ip)
			break;
		return blk_status(w, ST_EVENT);
	default:
		return FAIL;
	}
	return blk_status(w, 0);
}

static inline int
trailing_event(struct fworker *w)
{
	if (!w->process_event && !(w->status & ST_EVENT))
		return w->status & ST_EOS;
	return trailing_event_slow(w);
}

static inline void
rs_push(struct fworker *w, uint64_t ip)
{
	w->rs[w->rs_top] = ip;
	w->rs_top = (w->rs_top + 1) % RS_SIZE;
	if (w->rs_n < RS_SIZE)
		w->rs_n++;
}

static inline int
rs_pop(struct fworker *w, uint64_t *ip)
{
	if (w->rs_n == 0)
		return FAIL;
	w->rs_top = (w->rs_top + RS_SIZE - 1) % RS_SIZE;
	w->rs_n--;
	*ip = w->rs[w->rs_top];
	return 0;
}

/* take_branch for a conditional jump: the next TNT bit. */
static inline int
take_cond(struct fworker *w, const struct bb *bb)
{
	int st, taken;

	if (!(bb->flags & BB_DIRECT) || (st = qry_cond(&w->q, &taken)) < 0)
		return FAIL;
	w->ip = taken ? bb->target : bb->end_ip + bb->size;
	w->status = st;
	return 0;
}

/* take_branch for a return: compressed (a taken bit) or to a TIP. */
static inline int
take_return(struct fworker *w)
{
	int st, taken;

	if (!tip_next(&w->q)) {
		if ((st = qry_cond(&w->q, &taken)) < 0 || !taken ||
		    rs_pop(w, &w->ip) < 0)
			return FAIL;
	} else if ((st = fast_qry_indirect(&w->q, &w->ip)) < 0) {
		return FAIL;
	}
	w->status = st;
	return 0;
}

/*
 * Takes the branch that ends bb using trace (pt_blk_next_ip): sets w->ip
 * and w->status.  Returns 0 or FAIL.
 */
static inline int
take_branch(struct fworker *w, const struct bb *bb)
{
	int st;

	switch (bb->iclass) {
	case ptic_cond_jump:
		return take_cond(w, bb);
	case ptic_return:
		return take_return(w);
	case ptic_call:
	case ptic_jump:
		if (bb->flags & BB_DIRECT)
			return FAIL;
		break;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		break;
	default:
		return FAIL;
	}
	if ((st = fast_qry_indirect(&w->q, &w->ip)) < 0)
		return FAIL;
	w->status = st;
	return 0;
}

/* Proceeds one run from w->ip (pt_blk_proceed_no_event).  0 or FAIL. */
static inline int
proceed_run(struct fworker *w, struct fblock *b)
{
	const struct bb *bb = bbcache_get(&w->cache, w->ip);

	if (bb == NULL)
		return FAIL;
	b->ninsn += bb->ninsn;
	b->end_ip = bb->end_ip;
	b->iclass = bb->iclass;
	if (bb->flags & BB_PUSH)
		rs_push(w, bb->end_ip + bb->size);
	if ((bb->iclass == ptic_call || bb->iclass == ptic_jump) &&
	    (bb->flags & BB_DIRECT)) {
		w->ip = bb->target;	/* end_on_call, end_on_jump */
		return 0;
	}
	return take_branch(w, bb);
}

/* What walk_to stops at. */
#define WALK_IP 0x1		/* stop_ip */

#define WALK_BRANCH 0x2		/* an instruction that needs trace */

#define WALK_CR3 0x4		/* a mov to CR3 */

/*
 * Walks instruction by instruction from w->ip, as libipt's
 * pt_blk_proceed_to_ip / _to_insn do.  Returns 1 at stop_ip (WALK_IP),
 * 3 at an instruction that needs trace (WALK_BRANCH; *branch and *blen
 * say which, w->ip stays at it), 2 at a mov to CR3 (WALK_CR3, w->ip at
 * it), 0 when the block ended first (a direct call or jump), FAIL when
 * the walk meets what it may not (trace needed without WALK_BRANCH).
 */
static int
walk_to(struct fworker *w, struct fblock *b, uint64_t stop_ip, int how,
    int *branch, unsigned *blen)
{
	unsigned len;
	int iclass, cr3;
	uint64_t target;

	for (;;) {
		if ((how & WALK_IP) && w->ip == stop_ip)
			return 1;
		if (w->mode != ptem_64bit)
			return FAIL;
		if (bbcache_insn(&w->cache, w->ip, &len, &iclass, &target,
		    &cr3) < 0)
			return FAIL;
		b->ninsn++;
		b->end_ip = w->ip;
		b->iclass = iclass;
		if (iclass == ptic_call && !(target != 0 &&
		    target == w->ip + len))
			rs_push(w, w->ip + len);
		if ((how & WALK_CR3) && cr3)
			return 2;
		if (iclass == ptic_other) {
			w->ip += len;
			continue;
		}
		if ((iclass == ptic_call || iclass == ptic_jump) &&
		    target != 0) {
			w->ip = target;
			return (how & WALK_IP) && w->ip == stop_ip;
		}
		if (!(how & WALK_BRANCH))
			return FAIL;	/* libipt would need trace: an error */
		*branch = iclass;
		*blen = len;
		return 3;
	}
}

/* pt_blk_proceed_event for the events handled here.  Status or FAIL. */
static int
proceed_event(struct fworker *w, struct fblock *b)
{
	int rc, branch = ptic_other;
	unsigned blen = 0;

	switch (w->ev.type) {
	case EV_ENABLED:
	case EV_CBR:
		break;
	case EV_DISABLED:
		/* binds at its ip, else at the next branch needing trace */
		rc = walk_to(w, b, w->ev.ip, w->ev.ip_suppressed ?
		    WALK_BRANCH | WALK_CR3 : WALK_IP | WALK_BRANCH, &branch,
		    &blen);
		if (rc <= 0)
			return rc;
		/* where tracing is expected to resume */
		if (rc == 3)
			w->ip = branch == ptic_call || branch == ptic_far_call ?
			    w->ip + blen : 0;
		break;
	case EV_ASYNC_DISABLED:
		if ((rc = walk_to(w, b, w->ev.at, WALK_IP, NULL, NULL)) <= 0)
			return rc;
		break;
	case EV_EXEC_MODE:
		if (w->ev.ip_suppressed)
			break;
		if ((rc = walk_to(w, b, w->ev.ip, WALK_IP, NULL, NULL)) < 0)
			return rc;
		if (w->ip != w->ev.ip)
			return 0;
		break;
	default:
		return FAIL;
	}
	return blk_status(w, ST_EVENT);
}

/* pt_blk_next: one block into *b.  Returns status flags or FAIL. */
static int
blk_next(struct fworker *w, struct fblock *b)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->ip = w->ip;
	b->mode = w->mode;
	if ((rc = fetch_event(w)) != 0)
		return rc < 0 ? FAIL : proceed_event(w, b);
	if (!w->enabled)
		return FAIL;	/* -pte_eos or -pte_no_enable: libipt's */
	if (proceed_run(w, b) < 0)
		return FAIL;
	return trailing_event(w);
}

/* pt_blk_event: applies the event in process.  Status flags or FAIL. */
static int
blk_event(struct fworker *w, struct fev *ev)
{
	*ev = w->ev;
	switch (ev->type) {
	case EV_ENABLED:
		if (ev->status_update || ev->ip_suppressed || w->enabled)
			return FAIL;
		ev->arg = ev->ip == w->ip;	/* resumed */
		w->ip = ev->ip;
		w->enabled = 1;
		break;
	case EV_ASYNC_DISABLED:
		if (w->ip != ev->at)
			return FAIL;
		/* fall through */
	case EV_DISABLED:
		if (ev->status_update || !w->enabled)
			return FAIL;
		w->enabled = 0;
		break;
	case EV_EXEC_MODE:
		if (!ev->ip_suppressed && w->ip != ev->ip)
			return FAIL;
		if (ev->status_update && w->enabled &&
		    w->mode != ptem_unknown && w->mode != mode_of(ev->arg))
			return FAIL;
		w->mode = mode_of(ev->arg);
		break;
	case EV_CBR:
		break;
	default:
		return FAIL;
	}
	w->process_event = 0;
	return trailing_event(w);
}

/*
 * Drains events like ptdec_ipt.  Returns the status, or FAIL; sets
 * *stopped at the next interval's PSB+.
 */
static int
drain_events(struct fworker *w, uint64_t stop, int status, int *stopped)
{
	struct fev ev;

	while (status & ST_EVENT) {
		if ((status = blk_event(w, &ev)) < 0)
			return FAIL;
		if (ev.status_update) {
			if ((uint64_t)(w->q.pos - w->q.begin) > stop) {
				*stopped = 1;
				return 0;
			}
			continue;
		}
		if (ev.type == EV_CBR || (ev.type == EV_EXEC_MODE &&
		    mode_of(ev.arg) != ptem_64bit))
			return FAIL;
		if (push_event(w, &ev) < 0)
			return FAIL;
	}
	return status;
}

/* pt_qry_start + pt_blk_start at the PSB at start.  Status or FAIL. */
static int
interval_start(struct fworker *w, uint64_t start)
{
	struct fq *q = &w->q;
	struct ftconf conf = q->conf;
	int sup = 0;

	memset(q, 0, sizeof(*q));
	q->begin = w->buf;
	q->end = w->buf + w->len;
	q->pos = w->buf + start;
	q->conf = conf;
	q->tcal.min_fcr = UINT64_MAX;
	fetch(q);
	if (q->next.kind != PK_PSB || fast_read_psb_header(q) < 0)
		return FAIL;
	w->ip = event_ip(q, &sup);
	w->enabled = !sup;
	w->mode = ptem_unknown;
	w->process_event = 0;
	w->rs_n = w->rs_top = 0;
	w->now_valid = 0;
	w->now = PTDEC_TIME_UNKNOWN;
	if (fast_read_ahead(q) < 0)
		return FAIL;
	w->status = status_flags(q);
	return trailing_event(w);
}

/*
 * out_final through the cursor c: most blocks are encoded in registers;
 * the others, and those that find no room, go through the out, which may
 * open a run or make room.  Always inline: c stays in registers only
 * while its address goes nowhere.
 */
static inline __attribute__((always_inline)) int
cursor_final(struct fworker *w, struct ptdec_cursor *c, uint64_t ip,
    const struct bb *bb, uint64_t time)
{
	if (time != PTDEC_TIME_UNKNOWN && bb->rest != 0 &&
	    ptdec_cursor_put_rest(c, ip, bb->end_ip, bb->ninsn, bb->rest,
	    time))
		return 0;
	ptdec_out_cursor_end(w->out, c);
	if (out_final(w, ip, bb, time) < 0)
		return FAIL;
	(void)ptdec_out_cursor_begin(w->out, c);
	return 0;
}

/*
 * The common case, as one loop: tracing is on and no event is in sight.
 * Each turn is what blk_next, take_branch and trailing_event do for a run
 * that ends in a branch, with the time kept in a local until a packet is
 * consumed.  The blocks go out through c (run_blocks holds it).  Returns
 * the status that ends the loop, or FAIL.
 */
static int
run_blocks_held(struct fworker *w, struct ptdec_cursor *c)
{
	struct fq *q = &w->q;
	uint64_t now = fast_now(w);
	unsigned spin = w->spin;

	for (;;) {
		const struct bb *bb = bbcache_get(&w->cache, w->ip);
		uint64_t ip = w->ip;
		int st;

		if (bb == NULL)
			return FAIL;
		if (bb->flags & BB_PUSH)
			rs_push(w, bb->end_ip + bb->size);
		if (bb->iclass == ptic_cond_jump && q->tnt_n > 0) {
			w->ip = (q->tnt >> --q->tnt_n) & 1 ? bb->target :
			    bb->end_ip + bb->size;
			if (q->tnt_n == 0)
				w->status = status_flags(q);
		} else if (bb->iclass == ptic_return && q->tnt_n > 0) {
			/* a compressed return: a taken bit, the call's ip */
			if (!((q->tnt >> --q->tnt_n) & 1) ||
			    rs_pop(w, &w->ip) < 0)
				return FAIL;
			if (q->tnt_n == 0)
				w->status = status_flags(q);
		} else if ((bb->iclass == ptic_call || bb->iclass ==
		    ptic_jump) && (bb->flags & BB_DIRECT)) {
			w->ip = bb->target;
			if (++spin >= FAST_SPIN_MAX)
				return FAIL;
		} else {
			/* a jump table for the rest: the common ones go around */
			if ((bb->iclass == ptic_cond_jump ? take_cond(w, bb) :
			    bb->iclass == ptic_return ? take_return(w) :
			    take_branch(w, bb)) < 0)
				return FAIL;
			now = fast_now(w);
			spin = 0;	/* each of those read a packet */
		}
		if (w->status & (ST_EVENT | ST_EOS)) {
			w->spin = spin;
			if ((st = trailing_event(w)) < 0)
				return FAIL;
			if (cursor_final(w, c, ip, bb, fast_now(w)) < 0)
				return FAIL;
			return st;
		}
		if (cursor_final(w, c, ip, bb, now) < 0)
			return FAIL;
	}
}

static int
run_blocks(struct fworker *w)
{
	struct ptdec_cursor c = { 0 };
	int rc;

	/* libipt decodes in the mode MODE.exec set: none is an error */
	if (w->mode != ptem_64bit)
		return FAIL;
	(void)ptdec_out_cursor_begin(w->out, &c);
	rc = run_blocks_held(w, &c);
	ptdec_out_cursor_end(w->out, &c);
	return rc;
}

/* Decodes the interval [start, stop) into w->out.  0 or FAIL. */
static int
fast_interval(struct fworker *w, uint64_t start, uint64_t stop)
{
	struct fblock b;
	const uint8_t *pos;
	int status, stopped = 0;

	if ((status = interval_start(w, start)) < 0)
		return FAIL;
	w->spin = 0;
	pos = w->q.pos;
	for (;;) {
		if ((status = drain_events(w, stop, status, &stopped)) < 0)
			return FAIL;
		if (stopped)
			return 0;
		if (status & ST_EOS)
			return 0;
		/* a packet read since the last turn: no loop so far */
		if (w->q.pos != pos) {
			pos = w->q.pos;
			w->spin = 0;
		}
		if (!w->process_event && w->enabled) {
			if ((status = run_blocks(w)) < 0)
				return FAIL;
			pos = w->q.pos;		/* it counted its own */
			continue;
		}
		/* walking to an event's ip, which a loop may never reach */
		if (++w->spin >= FAST_SPIN_MAX)
			return FAIL;
		if ((status = blk_next(w, &b)) < 0)
			return FAIL;
		if (b.ninsn > 0 && push_block(w, &b) < 0)
			return FAIL;
	}
}

static void
fast_worker_free(void *wv)
{
	struct fworker *w = wv;

	if (w == NULL)
		return;
	ptdec_backend_libipt.worker_free(w->ipt);
	bbcache_fini(&w->cache);
	free(w);
}

static int
fast_worker_new(void **out, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	struct fworker *w;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "fast decoder");
	w->cfg = cfg;
	w->buf = th->buf;
	w->len = th->len;
	w->q.conf.nom_freq = cfg->nom_freq;
	w->q.conf.mtc_freq = cfg->mtc_freq;
	w->q.conf.eax = cfg->cpuid_0x15_eax;
	w->q.conf.ebx = cfg->cpuid_0x15_ebx;
	if (cfg->cpu.vendor == pcv_intel) {
		struct pt_errata er;

		memset(&er, 0, sizeof(er));
		if (pt_cpu_errata(&er, &cfg->cpu) == 0)
			w->q.conf.skl168 = er.skl168;
	}
	if ((rc = bbcache_init(&w->cache, cfg->images, th->pid, e)) < 0 ||
	    (rc = ptdec_backend_libipt.worker_new(&w->ipt, cfg, th, e)) < 0) {
		fast_worker_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/*
 * Whether the walker can decode this configuration at all: libipt works
 * around CPU errata in ways not reproduced here, and MTC needs the
 * CPUID 0x15 ratio the walker does not model yet.
 */
static int
fast_config_ok(const struct ptdec_config *cfg)
{
	struct pt_errata er;

	if (cfg->cpu.vendor != pcv_intel)
		return 1;
	memset(&er, 0, sizeof(er));
	if (pt_cpu_errata(&er, &cfg->cpu) < 0)
		return 0;
	return !er.bdm70 && !er.bdm64 && !er.skd007 && !er.skd022 &&
	    !er.skl014;
}

static int
fast_decode_chunk(void *wv, const struct ptdec_chunk *c,
    struct ptdec_out *out, struct error *e)
{
	struct fworker *w = wv;
	struct ptdec_out_mark mark;
	struct ptdec_chunk one;
	int rc;

	w->out = out;
	w->err = e;
	for (size_t i = 0; i < c->nr_psb; i++) {
		uint64_t stop = i + 1 < c->nr_psb ? c->psb[i + 1] : c->next;

		if (fast_config_ok(w->cfg)) {
			w->fatal = 0;
			ptdec_out_mark(out, &mark);
			rc = fast_interval(w, c->psb[i], stop);
			if (rc < 0)
				ptdec_out_rollback(out, &mark);
			ptdec_out_unmark(out);
			if (w->fatal < 0)
				return w->fatal;
			if (rc == 0)
				continue;
		}
		out->fallbacks++;
		one = *c;
		one.psb = &c->psb[i];
		one.nr_psb = 1;
		one.begin = c->psb[i];
		one.next = stop;
		if ((rc = ptdec_backend_libipt.decode_chunk(w->ipt, &one, out,
		    e)) < 0)
			return rc;
	}
	return 0;
}

const struct ptdec_backend ptdec_backend_fast = {
	"fast",
	fast_worker_new,
	fast_decode_chunk,
	fast_worker_free,
};
