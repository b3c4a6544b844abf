/*
 * ptdec_ipt: the ptdec backend on libipt's block decoder (pt_blk_*).
 *
 * One worker = one pt_block_decoder over the thread's whole ring plus its
 * own pt_image holding the thread's sections from the shared iscache.
 * Each PSB interval of a chunk is decoded by synchronising at its PSB and
 * stopping at the status updates of the next PSB's PSB+ (see ptdec.h for
 * why that cuts seams exactly).  An error ends the interval
 * with a GAP; the next interval starts afresh at its own PSB, which is
 * where libipt's sync_forward would have gone, except when the error was
 * only noticed after the decoder had read that PSB+.  Code in 16- or
 * 32-bit mode is decoded through images of its own (see ptdec.h), switched
 * at MODE.exec events.
 */
#include <stdlib.h>
#include <string.h>

#include "dec/ptdec.h"
#include "dec/x86class.h"

/* Classes of instructions decoded so far, by address (direct mapped). */
#define CLASS_CACHE 4096

struct class_slot {
	uint64_t ip;
	int isid;
	uint8_t mode;
	uint8_t iclass;
};

struct ipt_worker {
	const struct ptdec_config *cfg;
	struct pt_block_decoder *dec;
	struct pt_image *image;		/* 64-bit code (and unknown mode) */
	struct pt_image *image_mode[PTDEC_NARROW_MODES];	/* see ptdec.h */
	uint64_t time;		/* last time, ns, or PTDEC_TIME_UNKNOWN */
	uint64_t last_tsc;	/* the TSC time was computed from */
	uint64_t last_ip;	/* last ip known */
	uint8_t last_class;	/* of the last block pushed */
	int mode;		/* the decoder's enum pt_exec_mode */
	struct class_slot classes[CLASS_CACHE];
};

static void
ipt_worker_free(void *wv)
{
	struct ipt_worker *w = wv;

	if (w == NULL)
		return;
	pt_blk_free_decoder(w->dec);
	pt_image_free(w->image);
	for (int m = 0; m < PTDEC_NARROW_MODES; m++)
		pt_image_free(w->image_mode[m]);
	free(w);
}

static int
ipt_image_add(struct pt_image **out, struct pt_image_section_cache *iscache,
    const struct ptdec_images *im, uint32_t pid, int mode,
    struct error *e)
{
	int rc, isid;

	if ((*out = pt_image_alloc(NULL)) == NULL)
		return error_set(e, ERR_NOMEM, "decoder image");
	for (size_t i = 0; im != NULL && i < im->nr; i++) {
		if (im->sec[i].pid != pid)
			continue;
		isid = mode < 0 ? im->sec[i].isid : im->sec[i].isid_mode[mode];
		if ((rc = pt_image_add_cached(*out, iscache, isid, NULL)) < 0)
			return error_set(e, ERR_INTERNAL,
			    "image section %d: %s", isid,
			    pt_errstr(pt_errcode(rc)));
	}
	return 0;
}

/* The worker's images of pid: one per mode (see ptdec.h). */
static int
ipt_build_image(struct ipt_worker *w, const struct ptdec_images *im,
    uint32_t pid, struct error *e)
{
	int rc;

	if ((rc = ipt_image_add(&w->image, im ? im->iscache : NULL, im, pid,
	    -1, e)) < 0)
		return rc;
	for (int m = 0; m < PTDEC_NARROW_MODES; m++)
		if ((rc = ipt_image_add(&w->image_mode[m],
		    im ? im->iscache_mode[m] : NULL, im, pid, m, e)) < 0)
			return rc;
	return 0;
}

/* The narrow mode (ptdec.h) of an enum pt_exec_mode, or -1 for 64-bit
 * code and the unknown mode. */
static int
ipt_narrow(int mode)
{
	if (mode == ptem_16bit)
		return PTDEC_MODE_16;
	if (mode == ptem_32bit)
		return PTDEC_MODE_32;
	return -1;
}

/* The image for code in mode (an enum pt_exec_mode). */
static struct pt_image *
ipt_image_for(const struct ipt_worker *w, int mode)
{
	int m = ipt_narrow(mode);

	return m < 0 ? w->image : w->image_mode[m];
}

static int
ipt_worker_new(void **out, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	struct ipt_worker *w;
	struct pt_config pc;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "decoder");
	w->cfg = cfg;
	pt_config_init(&pc);
	pc.begin = (uint8_t *)(uintptr_t)th->buf;
	pc.end = pc.begin + th->len;
	pc.cpu = cfg->cpu;
	if (pc.cpu.vendor == pcv_intel &&
	    (rc = pt_cpu_errata(&pc.errata, &pc.cpu)) < 0) {
		free(w);
		return error_set(e, ERR_INVALID, "cpu %u/%u/%u: %s",
		    pc.cpu.family, pc.cpu.model, pc.cpu.stepping,
		    pt_errstr(pt_errcode(rc)));
	}
	pc.cpuid_0x15_eax = cfg->cpuid_0x15_eax;
	pc.cpuid_0x15_ebx = cfg->cpuid_0x15_ebx;
	pc.mtc_freq = cfg->mtc_freq;
	pc.nom_freq = cfg->nom_freq;
	/* Every branch ends a block, so a block's class is its only branch. */
	pc.flags.variant.block.end_on_call = 1;
	pc.flags.variant.block.end_on_jump = 1;
	if ((w->dec = pt_blk_alloc_decoder(&pc)) == NULL) {
		free(w);
		return error_set(e, ERR_NOMEM, "block decoder");
	}
	if ((rc = ipt_build_image(w, cfg->images, th->pid, e)) < 0 ||
	    (rc = pt_blk_set_image(w->dec, w->image)) < 0) {
		ipt_worker_free(w);
		return rc < 0 && e->code != 0 ? rc : error_set(e,
		    ERR_INTERNAL, "decoder image: %s",
		    pt_errstr(pt_errcode(rc)));
	}
	*out = w;
	return 0;
}

/*
 * The decoder's current time in record ns; the last one if it has none,
 * PTDEC_TIME_UNKNOWN before the interval's first timing packet.
 */
static uint64_t
ipt_now(struct ipt_worker *w)
{
	uint64_t tsc;
	uint32_t lost_mtc, lost_cyc;

	if (pt_blk_time(w->dec, &tsc, &lost_mtc, &lost_cyc) >= 0 &&
	    (tsc != w->last_tsc || w->time == PTDEC_TIME_UNKNOWN)) {
		w->time = ptdec_tsc_to_ns(&w->cfg->time, tsc);
		w->last_tsc = tsc;
	}
	return w->time;
}

static uint64_t
ipt_offset(const struct ipt_worker *w)
{
	uint64_t off = 0;

	(void)pt_blk_get_offset(w->dec, &off);
	return off;
}

/* The iscache whose isids a block in mode (enum pt_exec_mode) has. */
static struct pt_image_section_cache *
ipt_iscache_for(const struct ptdec_images *im, int mode)
{
	int m = ipt_narrow(mode);

	return m < 0 ? im->iscache : im->iscache_mode[m];
}

/*
 * The class of a block's last instruction when libipt's block cache did
 * not say (indirect and far branches): decoded from the image.
 */
static uint8_t
ipt_block_class(struct ipt_worker *w, const struct pt_block *b)
{
	struct class_slot *s;
	uint8_t insn[15];
	int n;

	if (b->iclass != ptic_error || b->isid <= 0 || w->cfg->images == NULL)
		return (uint8_t)b->iclass;
	s = &w->classes[(b->end_ip ^ b->end_ip >> 12) %
	    CLASS_CACHE];
	if (s->ip == b->end_ip && s->isid == b->isid && s->mode == b->mode)
		return s->iclass;
	n = pt_iscache_read(ipt_iscache_for(w->cfg->images, b->mode), insn,
	    sizeof(insn), b->isid, b->end_ip);
	if (n <= 0)
		return ptic_error;
	s->ip = b->end_ip;
	s->isid = b->isid;
	s->mode = (uint8_t)b->mode;
	s->iclass = (uint8_t)x86_insn_class(insn, (size_t)n,
	    b->mode == ptem_64bit);
	return s->iclass;
}

static int
push_block(struct ipt_worker *w, const struct pt_block *b,
    struct ptdec_out *out, struct error *e)
{
	uint8_t iclass = w->last_class = ipt_block_class(w, b);
	uint8_t flags = (uint8_t)((b->speculative ? BLKS_BLOCK_SPECULATIVE :
	    0) | (b->truncated ? BLKS_BLOCK_TRUNCATED : 0));

	w->last_ip = b->end_ip;
	/* A block that ends at a branch is final: encoded here, as the fast
	 * walker's are, not by the one thread that writes. */
	if (flags == 0 && iclass != ptic_error && iclass != ptic_other)
		return ptdec_out_push_final(out, b->ip, b->end_ip, b->ninsn,
		    iclass, (uint8_t)b->mode, ipt_now(w), e);
	return ptdec_out_push_block(out, b->ip, b->end_ip, b->ninsn, iclass,
	    flags, (uint8_t)b->mode, ipt_now(w), e);
}

static int
push_gap_at(unsigned cause, uint64_t ip, uint64_t time, uint64_t off,
    uint64_t skipped, int err, const char *text, struct ptdec_out *out,
    struct error *e)
{
	struct blks_record r;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_GAP;
	r.u.gap.cause = (uint8_t)cause;
	r.u.gap.ip = ip;
	r.u.gap.time = time;
	r.u.gap.offset = off;
	r.u.gap.bytes_skipped = skipped;
	r.u.gap.errcode = err;
	r.u.gap.text = text;
	return ptdec_out_push(out, &r, e);
}

static int
push_gap(struct ipt_worker *w, unsigned cause, uint64_t ip, uint64_t off,
    uint64_t skipped, int err, const char *text, struct ptdec_out *out,
    struct error *e)
{
	return push_gap_at(cause, ip, ipt_now(w), off, skipped, err, text, out,
	    e);
}

/* Translates a libipt event; returns 0 and sets *keep when it is written. */
static void
ipt_event(const struct pt_event *ev, struct blks_event *be, int *keep)
{
	*keep = 1;
	memset(be, 0, sizeof(*be));
	be->flags = (uint8_t)(ev->ip_suppressed ? BLKS_EVF_IP_SUPPRESSED : 0);
	switch (ev->type) {
	case ptev_enabled:
		be->kind = BLKS_EV_ENABLED;
		be->ip = ev->variant.enabled.ip;
		be->arg = ev->variant.enabled.resumed;
		break;
	case ptev_disabled:
		be->kind = BLKS_EV_DISABLED;
		be->ip = ev->variant.disabled.ip;
		be->arg = BLKS_DIS_SYNC;
		break;
	case ptev_async_disabled:
		be->kind = BLKS_EV_DISABLED;
		be->ip = ev->variant.async_disabled.ip;
		be->at = ev->variant.async_disabled.at;
		be->arg = BLKS_DIS_ASYNC;
		be->flags |= BLKS_EVF_ASYNC;
		break;
	case ptev_async_branch:
		be->kind = BLKS_EV_ASYNC_BRANCH;
		be->ip = ev->variant.async_branch.to;
		be->at = ev->variant.async_branch.from;
		be->flags |= BLKS_EVF_ASYNC;
		break;
	case ptev_exec_mode:
		be->kind = BLKS_EV_EXEC_MODE;
		be->ip = ev->variant.exec_mode.ip;
		be->arg = ev->variant.exec_mode.mode;
		break;
	case ptev_paging:
	case ptev_async_paging:
		be->kind = BLKS_EV_PAGING;
		be->arg = ev->type == ptev_paging ? ev->variant.paging.cr3 :
		    ev->variant.async_paging.cr3;
		if (ev->type == ptev_paging ? ev->variant.paging.non_root :
		    ev->variant.async_paging.non_root)
			be->flags |= BLKS_EVF_NON_ROOT;
		if (ev->type == ptev_async_paging) {
			be->ip = ev->variant.async_paging.ip;
			be->flags |= BLKS_EVF_ASYNC;
		}
		break;
	case ptev_tsx:
		be->kind = BLKS_EV_TSX;
		be->ip = ev->variant.tsx.ip;
		be->arg = (uint64_t)ev->variant.tsx.speculative |
		    (uint64_t)ev->variant.tsx.aborted << 1;
		break;
	case ptev_stop:
		be->kind = BLKS_EV_STOP;
		break;
	case ptev_vmcs:
	case ptev_async_vmcs:
		be->kind = BLKS_EV_VMCS;
		be->arg = ev->type == ptev_vmcs ? ev->variant.vmcs.base :
		    ev->variant.async_vmcs.base;
		if (ev->type == ptev_async_vmcs) {
			be->ip = ev->variant.async_vmcs.ip;
			be->flags |= BLKS_EVF_ASYNC;
		}
		break;
	case ptev_exstop:
		be->kind = BLKS_EV_EXSTOP;
		be->ip = ev->variant.exstop.ip;
		break;
	case ptev_mwait:
		be->kind = BLKS_EV_MWAIT;
		be->ip = ev->variant.mwait.ip;
		be->arg = ev->variant.mwait.hints;
		be->at = ev->variant.mwait.ext;
		break;
	case ptev_pwre:
		be->kind = BLKS_EV_PWRE;
		be->arg = ev->variant.pwre.state |
		    (uint64_t)ev->variant.pwre.sub_state << 8 |
		    (uint64_t)ev->variant.pwre.hw << 16;
		break;
	case ptev_pwrx:
		be->kind = BLKS_EV_PWRX;
		be->arg = ev->variant.pwrx.last |
		    (uint64_t)ev->variant.pwrx.deepest << 8 |
		    (uint64_t)(ev->variant.pwrx.interrupt |
		    ev->variant.pwrx.store << 1 |
		    ev->variant.pwrx.autonomous << 2) << 16;
		break;
	case ptev_ptwrite:
		be->kind = BLKS_EV_PTWRITE;
		be->ip = ev->variant.ptwrite.ip;
		be->arg = ev->variant.ptwrite.payload;
		break;
	case ptev_cbr:
		be->kind = BLKS_EV_CBR;
		be->arg = ev->variant.cbr.ratio;
		break;
	default:		/* tick, mnt, overflow (a GAP) */
		*keep = 0;
		break;
	}
	/* A status update restates what the decoder knew: nothing happened. */
	if (ev->status_update)
		*keep = 0;
}

/*
 * Drains pending events.  Returns the decoder status, IPT_STOP at the
 * next interval's PSB+, or a negative error.
 *
 * The PSB+ at stop shows as status updates read beyond stop.  Other
 * events read beyond stop can still be this interval's: libipt reads
 * ahead past a PSB to bind events (a TIP.PGE just before it), and the
 * next interval, which starts after that PSB, does not see them.
 */
#define IPT_STOP (1 << 30)

static int
ipt_drain_events(struct ipt_worker *w, uint64_t stop, int status,
    struct ptdec_out *out, struct error *e, int *fatal)
{
	struct blks_record r;
	struct pt_event ev;
	int keep, rc;

	while (status & pts_event_pending) {
		status = pt_blk_event(w->dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
		if (ev.type == ptev_exec_mode) {
			w->mode = ev.variant.exec_mode.mode;
			(void)pt_blk_set_image(w->dec, ipt_image_for(w,
			    w->mode));
		}
		if (ev.status_update && ipt_offset(w) > stop)
			return IPT_STOP;
		if (ev.type == ptev_overflow) {
			w->last_ip = ev.variant.overflow.ip;
			rc = push_gap(w, BLKS_GAP_OVERFLOW, ev.variant.overflow.ip,
			    ipt_offset(w), 0, 0, "the CPU dropped trace packets",
			    out, e);
			if (rc < 0) {
				*fatal = rc;
				return IPT_STOP;
			}
			continue;
		}
		ipt_event(&ev, &r.u.event, &keep);
		if (!keep)
			continue;
		r.type = BLKS_EVENT;
		r.u.event.time = ev.has_tsc ?
		    ptdec_tsc_to_ns(&w->cfg->time, ev.tsc) : ipt_now(w);
		if (!ev.ip_suppressed && r.u.event.ip != 0)
			w->last_ip = r.u.event.ip;
		if ((rc = ptdec_out_push(out, &r, e)) < 0) {
			*fatal = rc;
			return IPT_STOP;
		}
	}
	return status;
}

/* A decoder error ends the interval [.., stop) with a GAP (0 or fatal). */
static int
ipt_error_gap(struct ipt_worker *w, uint64_t stop, int err, uint64_t ip,
    struct ptdec_out *out, struct error *e)
{
	uint64_t off = ipt_offset(w);

	/*
	 * A packet error found beyond stop is in the next interval's bytes,
	 * which that interval reads again and reports; a missing image is
	 * about an ip this interval's flow reached, so it is ours.
	 */
	if (err == -pte_eos || (off > stop && err != -pte_nomap))
		return 0;
	return push_gap(w, err == -pte_nomap ? BLKS_GAP_UNKNOWN_IMAGE :
	    BLKS_GAP_DECODE_ERROR, ip ? ip : w->last_ip, off,
	    stop > off ? stop - off : 0, err, pt_errstr(pt_errcode(err)), out,
	    e);
}

/*
 * A decoder that returns PTDEC_SPIN_MAX blocks in a row without reading
 * a packet walks a loop of direct branches (see ptdec.h): the stretch
 * ends with a GAP like a decoder error, at the loop, and decoding goes
 * on at the next PSB.
 *
 * The blocks counted are those that end at a branch (the driver's
 * records), not libipt's pieces of them: where libipt cuts a run
 * depends on its block cache, which the decodes of a process share, and
 * the records must not.  The query decoder's offset moves with every
 * packet read, and only forward, so it is looked at every IPT_SPIN_STEP
 * counted blocks, not at every one (a call into libipt at every block
 * showed in the bench): a stretch ends after PTDEC_SPIN_MAX blocks
 * counted from the first look that saw its offset, PTDEC_SPIN_MAX to
 * PTDEC_SPIN_MAX + IPT_SPIN_STEP - 1 blocks that read no packet.  The
 * count starts again after events.
 */
#define IPT_SPIN_STEP 64

struct ipt_spin {
	uint64_t off;		/* the offset at the last look */
	unsigned n;		/* blocks since the last look or events */
	unsigned blocks;	/* blocks counted with off the same */
};

static void
ipt_spin_reset(struct ipt_worker *w, struct ipt_spin *sp)
{
	sp->off = ipt_offset(w);
	sp->n = sp->blocks = 0;
}

/* At every IPT_SPIN_STEP-th block: whether the walk is a loop. */
static int
ipt_spinning(struct ipt_worker *w, struct ipt_spin *sp)
{
	uint64_t off = ipt_offset(w);

	if (off != sp->off) {
		sp->off = off;
		sp->blocks = 0;
		return 0;
	}
	sp->blocks += IPT_SPIN_STEP;
	return sp->blocks >= PTDEC_SPIN_MAX;
}

static int
ipt_spin_gap(struct ipt_worker *w, uint64_t stop, struct ptdec_out *out,
    struct error *e)
{
	uint64_t off = ipt_offset(w);

	return push_gap(w, BLKS_GAP_DECODE_ERROR, w->last_ip, off,
	    stop > off ? stop - off : 0, 0, PTDEC_SPIN_TEXT, out, e);
}

/*
 * A block libipt returned while no MODE.exec had set the execution mode
 * (a PSB+ without one, which trace should not have).  libipt cannot
 * decode an instruction then (-pte_bad_insn), and the block comes from
 * its block cache, filled in a mode earlier in the ring: the cache does
 * not check the mode.  Such an answer depends on what the decoder met
 * before (one chunk or many, native or the fast decoder's fallback), so
 * the interval ends as libipt ends it without the cache: a GAP at the
 * block's ip, with the offset and time from before pt_blk_next.
 */
static int
ipt_cached_modeless(const struct pt_block *b, uint64_t stop, uint64_t off,
    uint64_t time, struct ptdec_out *out, struct error *e)
{
	if (off > stop)
		return 0;
	return push_gap_at(BLKS_GAP_DECODE_ERROR, b->ip, time, off, stop - off,
	    -pte_bad_insn, pt_errstr(pte_bad_insn), out, e);
}

/* Decodes from the PSB at start until the decoder reads past stop. */
static int
ipt_decode_interval(struct ipt_worker *w, uint64_t start, uint64_t stop,
    struct ptdec_out *out, struct error *e)
{
	struct pt_block b;
	struct ipt_spin sp;
	uint64_t off = 0, time = 0;
	int status, fatal = 0, rc;

	w->last_ip = 0;
	w->time = PTDEC_TIME_UNKNOWN;
	w->mode = ptem_unknown;
	(void)pt_blk_set_image(w->dec, w->image);
	status = pt_blk_sync_set(w->dec, start);
	ipt_spin_reset(w, &sp);
	for (;;) {
		if (status >= 0 && (status & pts_event_pending)) {
			status = ipt_drain_events(w, stop, status, out, e,
			    &fatal);
			ipt_spin_reset(w, &sp);
		}
		if (status == IPT_STOP)
			return fatal;
		if (status < 0)
			return ipt_error_gap(w, stop, status, 0, out, e);
		if (status & pts_eos)
			return 0;
		if (w->mode == ptem_unknown) {
			off = ipt_offset(w);
			time = ipt_now(w);
		}
		memset(&b, 0, sizeof(b));
		status = pt_blk_next(w->dec, &b, sizeof(b));
		if (b.ninsn > 0 && w->mode == ptem_unknown)
			return ipt_cached_modeless(&b, stop, off, time, out, e);
		if (b.ninsn > 0 && (rc = push_block(w, &b, out, e)) < 0)
			return rc;
		if (status < 0)
			return ipt_error_gap(w, stop, status,
			    b.ninsn == 0 ? b.ip : 0, out, e);
		if (b.ninsn > 0 && w->last_class != ptic_other &&
		    ++sp.n % IPT_SPIN_STEP == 0 && ipt_spinning(w, &sp))
			return ipt_spin_gap(w, stop, out, e);
	}
}

static int
ipt_decode_chunk(void *wv, const struct ptdec_chunk *c, struct ptdec_out *out,
    struct error *e)
{
	struct ipt_worker *w = wv;
	int rc;

	for (size_t i = 0; i < c->nr_psb; i++) {
		uint64_t stop = i + 1 < c->nr_psb ? c->psb[i + 1] : c->next;

		if ((rc = ipt_decode_interval(w, c->psb[i], stop, out, e)) < 0)
			return rc;
	}
	return 0;
}

const struct ptdec_backend ptdec_backend_libipt = {
	"native",
	ipt_worker_new,
	ipt_decode_chunk,
	ipt_worker_free,
};
