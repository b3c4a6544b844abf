/* ptdec: see ptdec.h. */
#include "dec/bbcache.h"
#include "dec/ptdec.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ----------------------------------------------------------------- */
/* Images */

int
ptdec_images_init(struct ptdec_images *im, struct error *e)
{
	memset(im, 0, sizeof(*im));
	if ((im->iscache = pt_iscache_alloc("ptdec")) == NULL ||
	    (im->iscache_mode[PTDEC_MODE_16] = pt_iscache_alloc("ptdec16")) ==
	    NULL ||
	    (im->iscache_mode[PTDEC_MODE_32] = pt_iscache_alloc("ptdec32")) ==
	    NULL || (im->blocks = bbshared_new()) == NULL) {
		ptdec_images_fini(im);
		return error_set(e, ERR_NOMEM, "image section cache");
	}
	/* Keep every section mapped: the decode reads them constantly (the
	 * narrow modes' are only mapped if such code runs). */
	(void)pt_iscache_set_limit(im->iscache, 1ULL << 30);
	for (int m = 0; m < PTDEC_NARROW_MODES; m++)
		(void)pt_iscache_set_limit(im->iscache_mode[m], 1ULL << 30);
	return 0;
}

/* file: what libipt opens; name: what messages call it. */
static int
images_add(struct ptdec_images *im, uint32_t pid, uint64_t vaddr,
    uint64_t size, uint64_t offset, const char *file, const char *name,
    struct error *e)
{
	struct ptdec_section *s;
	int isid, isid_mode[PTDEC_NARROW_MODES];

	isid = pt_iscache_add_file(im->iscache, file, offset, size, vaddr);
	for (int m = 0; m < PTDEC_NARROW_MODES && isid >= 0; m++)
		if ((isid_mode[m] = pt_iscache_add_file(im->iscache_mode[m],
		    file, offset, size, vaddr)) < 0)
			isid = isid_mode[m];
	if (isid < 0)
		return error_set(e, ERR_NOTFOUND,
		    "%s: cannot map offset %#llx (+%#llx) at %#llx: %s", name,
		    (unsigned long long)offset, (unsigned long long)size,
		    (unsigned long long)vaddr, pt_errstr(pt_errcode(isid)));
	if (im->nr == im->cap) {
		size_t cap = im->cap ? 2 * im->cap : 16;

		if ((s = realloc(im->sec, cap * sizeof(*s))) == NULL)
			return error_set(e, ERR_NOMEM, "image sections");
		im->sec = s;
		im->cap = cap;
	}
	s = &im->sec[im->nr++];
	s->pid = pid;
	s->vaddr = vaddr;
	s->size = size;
	s->offset = offset;
	s->isid = isid;
	memcpy(s->isid_mode, isid_mode, sizeof(isid_mode));
	return 0;
}

int
ptdec_images_add(struct ptdec_images *im, uint32_t pid, uint64_t vaddr,
    uint64_t size, uint64_t offset, const char *file, struct error *e)
{
	return images_add(im, pid, vaddr, size, offset, file, file, e);
}

int
ptdec_images_add_fd(struct ptdec_images *im, uint32_t pid, uint64_t vaddr,
    uint64_t size, uint64_t offset, int fd, const char *name,
    struct error *e)
{
	char path[64];
	struct stat by_path, by_fd;

	/*
	 * libipt opens its sections by name (when they are added and again
	 * when mapped): the descriptor's entry in /proc is a name that
	 * reopens this very file, whatever is swapped in at its path.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (stat(path, &by_path) != 0 || fstat(fd, &by_fd) != 0 ||
	    by_path.st_dev != by_fd.st_dev || by_path.st_ino != by_fd.st_ino)
		return error_set(e, ERR_UNSUPPORTED, "%s: no /proc/self/fd to "
		    "read it through its descriptor", name);
	return images_add(im, pid, vaddr, size, offset, path, name, e);
}

void
ptdec_images_fini(struct ptdec_images *im)
{
	pt_iscache_free(im->iscache);
	for (int m = 0; m < PTDEC_NARROW_MODES; m++)
		pt_iscache_free(im->iscache_mode[m]);
	bbshared_free(im->blocks);
	free(im->sec);
	memset(im, 0, sizeof(*im));
}

/* ----------------------------------------------------------------- */
/* Records of one chunk */

/* An event, gap or run, and the number of blocks pushed before it. */
struct ptdec_other {
	size_t at;
	int is_run;
	struct ptdec_run run;		/* is_run */
	struct blks_record r;		/* !is_run */
};

/* Bytes of encoded runs a one-job decode holds before writing them. */
#define OUT_ENC_BATCH (256 * 1024)

/* Blocks a one-job decode holds before writing them: they stay cached. */
#define OUT_BATCH 4096

static int
grow(void **p, size_t *cap, size_t size, struct error *e)
{
	size_t c = *cap ? 2 * *cap : OUT_BATCH;
	void *n = realloc(*p, c * size);

	if (n == NULL)
		return error_set(e, ERR_NOMEM, "decoded records");
	*p = n;
	*cap = c;
	return 0;
}

/* One job, no mark held: hands the records so far to the emitter. */
static int
out_flush(struct ptdec_out *o, struct error *e)
{
	if (o->flush == NULL || o->held)
		return 0;
	return o->flush(o->flush_ctx, o, e);
}

/* Appends an event, gap or run entry (not yet filled) at *x. */
static int
push_other(struct ptdec_out *o, struct ptdec_other **x, struct error *e)
{
	int rc;

	o->run = NULL;
	if (o->nr_other == o->cap_other) {
		if ((rc = out_flush(o, e)) < 0)
			return rc;
		if (o->nr_other == o->cap_other && (rc = grow(
		    (void **)&o->other, &o->cap_other, sizeof(*o->other),
		    e)) < 0)
			return rc;
	}
	*x = &o->other[o->nr_other++];
	(*x)->at = o->nr_blk;
	return 0;
}

int
ptdec_out_room(struct ptdec_out *o, struct error *e)
{
	int rc;

	if (o->nr_blk < o->cap_blk)
		return 0;
	if (o->nr_blk > 0 && (rc = out_flush(o, e)) < 0)
		return rc;
	if (o->nr_blk < o->cap_blk)
		return 0;
	return grow((void **)&o->blk, &o->cap_blk, sizeof(*o->blk), e);
}

int
ptdec_out_push(struct ptdec_out *o, const struct blks_record *r,
    struct error *e)
{
	const struct blks_block *b = &r->u.block;
	struct ptdec_other *x;
	int rc;

	if (r->type == BLKS_BLOCK)
		return ptdec_out_push_block(o, b->ip, b->end_ip, b->ninsn,
		    b->iclass, b->flags, b->mode, b->time, e);
	if ((rc = push_other(o, &x, e)) < 0)
		return rc;
	x->is_run = 0;
	x->r = *r;
	return 0;
}

/* Room for one more encoded block: writes what is held, or grows. */
static int
enc_room(struct ptdec_out *o, struct error *e)
{
	size_t cap;
	uint8_t *p;
	int rc;

	if (o->enc_len > 0 && (rc = out_flush(o, e)) < 0)
		return rc;
	if (o->enc_len + BLKS_BLOCK_MAX <= o->enc_cap)
		return 0;
	cap = o->enc_cap ? 2 * o->enc_cap : OUT_ENC_BATCH;
	if ((p = realloc(o->enc, cap)) == NULL)
		return error_set(e, ERR_NOMEM, "encoded blocks");
	o->enc = p;
	o->enc_cap = cap;
	return 0;
}

/*
 * The delta state a run opened now starts from: 1 with the end ip and
 * time of the record pushed last when it is a block the emitter writes
 * as it is (it ends at a branch, its time is known) or a run; else 0.
 */
static int
out_base(const struct ptdec_out *o, uint64_t *ip, uint64_t *time)
{
	const struct ptdec_other *x;
	const struct blks_block *b;

	x = o->nr_other > 0 ? &o->other[o->nr_other - 1] : NULL;
	if (x != NULL && x->at == o->nr_blk) {
		if (!x->is_run)
			return 0;
		*ip = x->run.last_ip;
		*time = x->run.last_time;
		return 1;
	}
	if (o->nr_blk == 0)
		return 0;
	b = &o->blk[o->nr_blk - 1];
	if (b->iclass == ptic_other || b->time == PTDEC_TIME_UNKNOWN)
		return 0;
	*ip = b->end_ip;
	*time = b->time;
	return 1;
}

int
ptdec_out_push_final_slow(struct ptdec_out *o, uint64_t ip,
    uint64_t end_ip, uint32_t ninsn, uint8_t iclass, uint8_t mode,
    uint64_t time, struct error *e)
{
	struct ptdec_other *x;
	uint64_t base_ip, base_time;
	int rc;

	if (!o->enc_ok || time == PTDEC_TIME_UNKNOWN ||
	    (unsigned)iclass - 2u > 13u || mode > 3)
		goto as_struct;
	if (o->enc_len + BLKS_BLOCK_MAX > o->enc_cap &&
	    (rc = enc_room(o, e)) < 0)
		return rc;
	if (o->run == NULL) {
		if (!out_base(o, &base_ip, &base_time))
			goto as_struct;
		/* a flush here leaves the base pending in the emitter */
		if ((rc = push_other(o, &x, e)) < 0)
			return rc;
		x->is_run = 1;
		x->run = (struct ptdec_run){ .off = o->enc_len,
		    .last_ip = base_ip, .last_time = base_time };
		o->run = &x->run;
	}
	return ptdec_out_push_final(o, ip, end_ip, ninsn, iclass, mode, time,
	    e);
as_struct:
	return ptdec_out_push_block(o, ip, end_ip, ninsn, iclass, 0, mode,
	    time, e);
}

void
ptdec_out_mark(struct ptdec_out *o, struct ptdec_out_mark *m)
{
	m->nr_blk = o->nr_blk;
	m->nr_other = o->nr_other;
	m->enc_len = o->enc_len;
	o->held = 1;
	/* a rollback could not undo what the open run takes after this */
	o->run = NULL;
}

void
ptdec_out_rollback(struct ptdec_out *o, const struct ptdec_out_mark *m)
{
	o->nr_blk = m->nr_blk;
	o->nr_other = m->nr_other;
	o->enc_len = m->enc_len;
	o->run = NULL;
}

void
ptdec_out_unmark(struct ptdec_out *o)
{
	o->held = 0;
}

static void
out_reset(struct ptdec_out *o)
{
	o->nr_blk = 0;
	o->nr_other = 0;
	o->enc_len = 0;
	o->run = NULL;
	o->held = 0;
	o->fallbacks = 0;
}

static void
out_free(struct ptdec_out *o)
{
	free(o->blk);
	free(o->other);
	free(o->enc);
}

/* ----------------------------------------------------------------- */
/* Chunks */

/* Appends v to a growable u64 array.  Returns 0 or -1. */
static int
push_u64(uint64_t **a, size_t *nr, size_t *cap, uint64_t v)
{
	if (*nr == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		uint64_t *p = realloc(*a, c * sizeof(*p));

		if (p == NULL)
			return -1;
		*a = p;
		*cap = c;
	}
	(*a)[(*nr)++] = v;
	return 0;
}

/* Offsets of every PSB in the trace, in order. */
static int
find_psbs(const struct ptdec_thread *th, uint64_t **psb, size_t *nr,
    struct error *e)
{
	struct pt_packet_decoder *pkt;
	struct pt_config cfg;
	size_t cap = 0;
	uint64_t off;

	*psb = NULL;
	*nr = 0;
	if (th->len == 0)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)(uintptr_t)th->buf;
	cfg.end = cfg.begin + th->len;
	if ((pkt = pt_pkt_alloc_decoder(&cfg)) == NULL)
		return error_set(e, ERR_NOMEM, "packet decoder");
	while (pt_pkt_sync_forward(pkt) >= 0) {
		if (pt_pkt_get_sync_offset(pkt, &off) < 0)
			break;
		if (push_u64(psb, nr, &cap, off) < 0) {
			pt_pkt_free_decoder(pkt);
			free(*psb);
			*psb = NULL;
			return error_set(e, ERR_NOMEM, "PSB offsets");
		}
	}
	pt_pkt_free_decoder(pkt);
	return 0;
}

int
ptdec_split(const struct ptdec_thread *th, size_t chunk_bytes,
    struct ptdec_plan *plan, struct error *e)
{
	uint64_t *psb;
	size_t npsb, n = 0;
	int rc;

	memset(plan, 0, sizeof(*plan));
	plan->first_psb = th->len;
	if ((rc = find_psbs(th, &psb, &npsb, e)) < 0)
		return rc;
	plan->psb = psb;
	plan->nr_psb = npsb;
	if (npsb == 0)
		return 0;
	plan->first_psb = psb[0];
	if ((plan->chunk = calloc(npsb, sizeof(*plan->chunk))) == NULL) {
		ptdec_plan_free(plan);
		return error_set(e, ERR_NOMEM, "chunks");
	}
	for (size_t i = 0; i < npsb; ) {
		struct ptdec_chunk *c = &plan->chunk[n];
		size_t j = i + 1;

		while (j < npsb && (chunk_bytes == 0 ||
		    psb[j] - psb[i] < chunk_bytes))
			j++;
		c->index = n++;
		c->begin = psb[i];
		c->next = j < npsb ? psb[j] : th->len;
		c->psb = &psb[i];
		c->nr_psb = j - i;
		if (c->nr_psb > plan->chunk_psbs)
			plan->chunk_psbs = c->nr_psb;
		i = j;
	}
	plan->nr = n;
	return 0;
}

/* The TSC in the PSB+ at off, or 0 when it has none. */
static uint64_t
psb_tsc(struct pt_packet_decoder *pkt, uint64_t off)
{
	struct pt_packet p;

	if (pt_pkt_sync_set(pkt, off) < 0)
		return 0;
	while (pt_pkt_next(pkt, &p, sizeof(p)) >= 0 && p.type != ppt_psbend) {
		if (p.type == ppt_tsc)
			return p.payload.tsc.tsc;
	}
	return 0;
}

int
ptdec_psb_tscs(const struct ptdec_thread *th, const struct ptdec_plan *plan,
    uint64_t *tsc, struct error *e)
{
	struct pt_packet_decoder *pkt;
	struct pt_config pc;

	pt_config_init(&pc);
	pc.begin = (uint8_t *)(uintptr_t)th->buf;
	pc.end = pc.begin + th->len;
	if ((pkt = pt_pkt_alloc_decoder(&pc)) == NULL)
		return error_set(e, ERR_NOMEM, "PSB times");
	for (size_t i = 0; i < plan->nr_psb; i++)
		tsc[i] = psb_tsc(pkt, plan->psb[i]);
	pt_pkt_free_decoder(pkt);
	return 0;
}

/*
 * Keeps only the PSB intervals that can hold a record in [from, to]: an
 * interval runs from its PSB's TSC to the next one's.  Chunks become runs
 * of kept intervals; each still stops at its true next PSB.
 */
static int
plan_window(struct ptdec_plan *plan, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, struct error *e)
{
	uint64_t *t;
	size_t n = 0;
	int rc;

	if (!cfg->window || !cfg->time.valid || plan->nr_psb == 0)
		return 0;
	if ((t = calloc(plan->nr_psb + 1, sizeof(*t))) == NULL)
		return error_set(e, ERR_NOMEM, "PSB times");
	if ((rc = ptdec_psb_tscs(th, plan, t, e)) < 0) {
		free(t);
		return rc;
	}
	for (size_t i = 0; i < plan->nr_psb; i++)
		t[i] = t[i] ? ptdec_tsc_to_ns(&cfg->time, t[i]) : 0;
	t[plan->nr_psb] = UINT64_MAX;
	for (size_t i = 0; i < plan->nr_psb; i++) {
		int keep = (t[i + 1] == 0 || t[i + 1] >= cfg->from_ns) &&
		    (t[i] == 0 || t[i] <= cfg->to_ns);
		struct ptdec_chunk *c = &plan->chunk[n];

		if (!keep)
			continue;
		if (n > 0 && c[-1].psb + c[-1].nr_psb == &plan->psb[i] &&
		    c[-1].nr_psb < plan->chunk_psbs) {
			c[-1].nr_psb++;
			c[-1].next = i + 1 < plan->nr_psb ? plan->psb[i + 1] :
			    th->len;
			continue;
		}
		c->index = n++;
		c->begin = plan->psb[i];
		c->next = i + 1 < plan->nr_psb ? plan->psb[i + 1] : th->len;
		c->psb = &plan->psb[i];
		c->nr_psb = 1;
	}
	plan->nr = n;
	free(t);
	return 0;
}

void
ptdec_plan_free(struct ptdec_plan *plan)
{
	free(plan->chunk);
	free(plan->psb);
	memset(plan, 0, sizeof(*plan));
}

/* ----------------------------------------------------------------- */
/* Output in order, with the window and the counters */

struct emitter {
	const struct ptdec_config *cfg;
	const struct ptdec_sink *sink;
	struct blks_end *end;
	uint64_t last_time;
	struct blks_block pending;	/* a block that may go on */
	int has_pending;
	uint64_t mode;			/* execution mode so far */
};

static uint64_t *
record_time(struct blks_record *r)
{
	switch (r->type) {
	case BLKS_BLOCK:
		return &r->u.block.time;
	case BLKS_EVENT:
		return &r->u.event.time;
	default:
		return &r->u.gap.time;
	}
}

static void
count_record(struct blks_end *end, const struct blks_record *r)
{
	switch (r->type) {
	case BLKS_EVENT:
		end->c[BLKS_C_EVENTS]++;
		break;
	case BLKS_GAP:
		end->c[BLKS_C_GAPS]++;
		end->c[BLKS_C_BYTES_SKIPPED] += r->u.gap.bytes_skipped;
		if (r->u.gap.cause == BLKS_GAP_DECODE_ERROR)
			end->c[BLKS_C_DECODE_ERRORS]++;
		else if (r->u.gap.cause == BLKS_GAP_UNKNOWN_IMAGE)
			end->c[BLKS_C_UNKNOWN_IMAGE]++;
		else if (r->u.gap.cause == BLKS_GAP_OVERFLOW)
			end->c[BLKS_C_OVERFLOWS]++;
		break;
	}
}

/* Hands n complete blocks to the sink. */
static int
sink_blocks(struct emitter *em, const struct blks_block *b, size_t n,
    struct error *e)
{
	const struct ptdec_sink *sink = em->sink;
	struct blks_record r;
	int rc = 0;

	if (n == 0)
		return 0;
	if (sink->emit_blocks != NULL)
		return sink->emit_blocks(sink->ctx, b, n, e);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	for (size_t i = 0; i < n && rc == 0; i++) {
		r.u.block = b[i];
		rc = sink->emit(sink->ctx, &r, e);
	}
	return rc;
}

/* Sends the pending block on: a record of another type comes. */
static int
emit_pending(struct emitter *em, struct error *e)
{
	if (!em->has_pending)
		return 0;
	em->has_pending = 0;
	em->end->c[BLKS_C_BLOCKS]++;
	em->end->c[BLKS_C_INSNS] += em->pending.ninsn;
	return sink_blocks(em, &em->pending, 1, e);
}

/*
 * A time the backend did not know becomes the last one; returns whether
 * the block is outside the window.
 */
static inline int
block_time(const struct ptdec_config *cfg, struct blks_block *b,
    uint64_t *last)
{
	if (b->time == PTDEC_TIME_UNKNOWN)
		b->time = *last;
	*last = b->time;
	return cfg->window && (b->time < cfg->from_ns || b->time > cfg->to_ns);
}

static inline void
join_block(struct blks_block *p, const struct blks_block *b)
{
	p->end_ip = b->end_ip;
	p->ninsn += b->ninsn;
	p->iclass = b->iclass;
	p->flags |= b->flags;
	p->mode = b->mode;
	p->time = b->time;
}

/*
 * Blocks in trace order, rewritten in place (b is the driver's): times
 * the backend did not know become the last one, the window filters, and
 * the blocks are joined where they did not end at a branch.  Blocks end
 * at branches only: where the decoder (its block cache, a section
 * boundary, a PSB+ we do not write) ended one at another instruction, the
 * next block is its fall-through and the two are one.  This makes the
 * stream the same however the decoder split the run.  A block is held
 * (pending) until the next one shows it complete; the complete ones go
 * to the sink as one run, straight from b.
 */
static int
emit_blocks(struct emitter *em, struct blks_block *b, size_t n,
    struct error *e)
{
	const struct ptdec_config *cfg = em->cfg;
	uint64_t last = em->last_time, insns = 0;
	size_t i = 0, s, w;
	int has = 0, rc;

	/* The block held from before takes what joins it, then goes. */
	for (; em->has_pending && i < n; i++) {
		if (block_time(cfg, &b[i], &last))
			continue;
		if (em->pending.iclass != ptic_other)
			break;
		join_block(&em->pending, &b[i]);
	}
	em->last_time = last;
	if (i == n)
		return 0;
	if ((rc = emit_pending(em, e)) < 0)
		return rc;
	/* b[s..w) are complete, b[w] is pending when has. */
	for (s = w = i; i < n; i++) {
		if (block_time(cfg, &b[i], &last))
			continue;
		if (has && b[w].iclass == ptic_other) {
			join_block(&b[w], &b[i]);
			continue;
		}
		if (has)
			insns += b[w++].ninsn;
		if (w != i)
			b[w] = b[i];
		has = 1;
	}
	em->last_time = last;
	em->end->c[BLKS_C_BLOCKS] += w - s;
	em->end->c[BLKS_C_INSNS] += insns;
	if (has) {
		em->pending = b[w];
		em->has_pending = 1;
	}
	return sink_blocks(em, b + s, w - s, e);
}

static int
emit_one(struct emitter *em, const struct blks_record *in, struct error *e)
{
	const struct blks_record *r = in;
	struct blks_record fixed;
	uint64_t *t;
	int rc;

	if (in->type == BLKS_BLOCK) {
		struct blks_block b = in->u.block;

		return emit_blocks(em, &b, 1, e);
	}
	t = record_time((struct blks_record *)in);
	if (*t == PTDEC_TIME_UNKNOWN) {
		fixed = *in;
		t = record_time(&fixed);
		*t = em->last_time;
		r = &fixed;
	}
	em->last_time = *t;
	if (em->cfg->window && (*t < em->cfg->from_ns || *t > em->cfg->to_ns))
		return 0;
	/* The decoder repeats the mode at every enable: only changes count. */
	if (r->type == BLKS_EVENT && r->u.event.kind == BLKS_EV_EXEC_MODE) {
		if (r->u.event.arg == em->mode)
			return 0;
		em->mode = r->u.event.arg;
	}
	if ((rc = emit_pending(em, e)) < 0)
		return rc;
	count_record(em->end, r);
	return em->sink->emit(em->sink->ctx, r, e);
}

static void
chunk_done(struct emitter *em, const struct ptdec_chunk *c)
{
	if (em->cfg->progress != NULL)
		em->cfg->progress(em->cfg->progress_ctx, c->next);
}

/*
 * An encoded run: its base (the block before it) is the pending block or
 * went out just before, so the sink's delta state is the one the run was
 * encoded against once the pending block is out.
 */
static int
emit_run(struct emitter *em, const struct ptdec_out *o,
    const struct ptdec_run *r, struct error *e)
{
	int rc;

	if (r->nblk == 0)
		return 0;
	if ((rc = emit_pending(em, e)) < 0)
		return rc;
	em->end->c[BLKS_C_BLOCKS] += r->nblk;
	em->end->c[BLKS_C_INSNS] += r->ninsn;
	em->last_time = r->last_time;
	return em->sink->emit_encoded(em->sink->ctx, o->enc + r->off, r->len,
	    r->last_ip, r->last_time, e);
}

/* Emits o's records in order: blocks between the others and the runs. */
static int
emit_out(struct emitter *em, struct ptdec_out *o, struct error *e)
{
	size_t done = 0;
	int rc;

	for (size_t k = 0; k < o->nr_other; k++) {
		const struct ptdec_other *x = &o->other[k];

		if (x->at > done && (rc = emit_blocks(em, o->blk + done,
		    x->at - done, e)) < 0)
			return rc;
		done = x->at;
		rc = x->is_run ? emit_run(em, o, &x->run, e) :
		    emit_one(em, &x->r, e);
		if (rc < 0)
			return rc;
	}
	if (o->nr_blk > done)
		return emit_blocks(em, o->blk + done, o->nr_blk - done, e);
	return 0;
}

/* The GAP for trace bytes before the first PSB (or of a trace with none). */
static int
emit_head_gap(struct emitter *em, const struct ptdec_thread *th,
    uint64_t first_psb, struct error *e)
{
	struct blks_record r;

	if (!th->wrapped && first_psb == 0)
		return 0;
	memset(&r, 0, sizeof(r));
	r.type = BLKS_GAP;
	r.u.gap.cause = th->wrapped ? BLKS_GAP_RING_START :
	    BLKS_GAP_DECODE_ERROR;
	r.u.gap.bytes_skipped = first_psb;
	if (first_psb == th->len && th->len > 0)
		r.u.gap.text = "no PSB in the trace";
	else if (th->wrapped)
		r.u.gap.text = "the ring wrapped: older trace was overwritten";
	else
		r.u.gap.text = "trace does not start with a PSB";
	if (!th->wrapped)
		r.u.gap.errcode = -pte_nosync;
	return emit_one(em, &r, e);
}

/* Whether backends may hand the emitter encoded runs. */
static int
enc_ok(const struct emitter *em)
{
	return em->sink->emit_encoded != NULL && !em->cfg->window;
}

/* ----------------------------------------------------------------- */
/* Inline decode (one job) */

/* ptdec_out's flush with one job: the records so far go out now. */
static int
flush_inline(void *ctx, struct ptdec_out *o, struct error *e)
{
	int rc = emit_out(ctx, o, e);

	o->nr_blk = 0;
	o->nr_other = 0;
	o->enc_len = 0;
	o->run = NULL;
	return rc;
}

static int
decode_inline(const struct ptdec_backend *be, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, const struct ptdec_chunk *chunks,
    size_t nr, struct emitter *em, struct error *e)
{
	struct ptdec_out out;
	void *w;
	int rc;

	memset(&out, 0, sizeof(out));
	out.flush = flush_inline;
	out.flush_ctx = em;
	out.enc_ok = enc_ok(em);
	if ((rc = be->worker_new(&w, cfg, th, e)) < 0)
		return rc;
	for (size_t i = 0; i < nr && rc == 0; i++) {
		if ((rc = be->decode_chunk(w, &chunks[i], &out, e)) < 0)
			break;
		out.held = 0;
		if ((rc = flush_inline(em, &out, e)) == 0)
			chunk_done(em, &chunks[i]);
	}
	be->worker_free(w);
	em->end->c[BLKS_C_FALLBACKS] += out.fallbacks;
	out_free(&out);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Parallel decode: workers fill slots, the caller's thread emits in order */

enum { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

struct slot {
	struct ptdec_out out;
	int state;
	int rc;
	struct error err;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	const struct ptdec_backend *be;
	const struct ptdec_config *cfg;
	const struct ptdec_thread *th;
	const struct ptdec_chunk *chunks;
	size_t nr, window;
	struct slot *slots;
	size_t next_dispatch, next_emit;
	int stop;
	int failed;		/* a worker could not start */
	struct error fail_err;
};

/* Next chunk index for a worker, or nr when there is no more work. */
static size_t
pool_take(struct pool *p)
{
	size_t i;

	pthread_mutex_lock(&p->mu);
	while (!p->stop && p->next_dispatch < p->nr &&
	    p->next_dispatch >= p->next_emit + p->window)
		pthread_cond_wait(&p->work, &p->mu);
	if (p->stop || p->next_dispatch >= p->nr) {
		i = p->nr;
	} else {
		i = p->next_dispatch++;
		p->slots[i % p->window].state = SLOT_BUSY;
	}
	pthread_mutex_unlock(&p->mu);
	return i;
}

static void *
pool_worker(void *arg)
{
	struct pool *p = arg;
	struct error e;
	void *w;
	size_t i;

	error_clear(&e);
	if (p->be->worker_new(&w, p->cfg, p->th, &e) < 0) {
		pthread_mutex_lock(&p->mu);
		if (!p->failed)
			p->fail_err = e;
		p->failed = 1;
		p->stop = 1;
		pthread_cond_broadcast(&p->done);
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->mu);
		return NULL;
	}
	while ((i = pool_take(p)) < p->nr) {
		struct slot *s = &p->slots[i % p->window];

		out_reset(&s->out);
		error_clear(&s->err);
		s->rc = p->be->decode_chunk(w, &p->chunks[i], &s->out,
		    &s->err);
		pthread_mutex_lock(&p->mu);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&p->done);
		pthread_mutex_unlock(&p->mu);
	}
	p->be->worker_free(w);
	return NULL;
}

/* Waits for chunk i and emits it.  Returns 0 or an error. */
static int
pool_emit(struct pool *p, size_t i, struct emitter *em, struct error *e)
{
	struct slot *s = &p->slots[i % p->window];
	int rc;

	pthread_mutex_lock(&p->mu);
	while (s->state != SLOT_DONE && !p->failed)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (s->state != SLOT_DONE) {
		*e = p->fail_err;
		return -p->fail_err.code;
	}
	if (s->rc < 0) {
		*e = s->err;
		return s->rc;
	}
	if ((rc = emit_out(em, &s->out, e)) == 0)
		chunk_done(em, &p->chunks[i]);
	em->end->c[BLKS_C_FALLBACKS] += s->out.fallbacks;
	pthread_mutex_lock(&p->mu);
	s->state = SLOT_FREE;
	p->next_emit++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static void
pool_stop(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
}

static int
decode_parallel(const struct ptdec_backend *be, const struct ptdec_config *cfg,
    const struct ptdec_thread *th, const struct ptdec_chunk *chunks,
    size_t nr, struct emitter *em, struct error *e)
{
	unsigned jobs = cfg->jobs < nr ? cfg->jobs : (unsigned)nr;
	struct pool p = { .be = be, .cfg = cfg, .th = th, .chunks = chunks,
	    .nr = nr, .window = 2 * (size_t)jobs };
	pthread_t *tids;
	unsigned started = 0;
	int rc = 0;

	p.slots = calloc(p.window, sizeof(*p.slots));
	tids = calloc(jobs, sizeof(*tids));
	if (p.slots == NULL || tids == NULL) {
		free(p.slots);
		free(tids);
		return error_set(e, ERR_NOMEM, "decode workers");
	}
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.work, NULL);
	pthread_cond_init(&p.done, NULL);
	for (size_t k = 0; k < p.window; k++)
		p.slots[k].out.enc_ok = enc_ok(em);
	for (; started < jobs; started++) {
		if ((errno = pthread_create(&tids[started], NULL, pool_worker,
		    &p)) != 0) {
			rc = error_set_errno(e, errno, "decode worker");
			break;
		}
	}
	for (size_t i = 0; rc == 0 && i < nr; i++)
		rc = pool_emit(&p, i, em, e);
	pool_stop(&p);
	for (unsigned k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
	for (size_t k = 0; k < p.window; k++)
		out_free(&p.slots[k].out);
	pthread_cond_destroy(&p.done);
	pthread_cond_destroy(&p.work);
	pthread_mutex_destroy(&p.mu);
	free(p.slots);
	free(tids);
	return rc;
}

int
ptdec_decode_thread(const struct ptdec_backend *be,
    const struct ptdec_config *cfg, const struct ptdec_thread *th,
    const struct ptdec_sink *sink, struct blks_end *end, struct error *e)
{
	struct emitter em;
	size_t chunk_bytes = cfg->chunk_bytes ? cfg->chunk_bytes :
	    PTDEC_CHUNK_DEFAULT;
	struct ptdec_plan plan;
	int rc;

	memset(&em, 0, sizeof(em));
	em.cfg = cfg;
	em.sink = sink;
	em.end = end;
	em.mode = ptem_64bit;
	memset(end, 0, sizeof(*end));
	end->tid = th->tid;
	end->c[BLKS_C_TRACE_BYTES] = th->len;
	if (chunk_bytes == SIZE_MAX)
		chunk_bytes = 0;
	if ((rc = ptdec_split(th, chunk_bytes, &plan, e)) < 0)
		return rc;
	if ((rc = plan_window(&plan, cfg, th, e)) < 0) {
		ptdec_plan_free(&plan);
		return rc;
	}
	end->c[BLKS_C_PSBS] = plan.nr_psb;
	rc = emit_head_gap(&em, th, plan.first_psb, e);
	if (rc == 0 && plan.nr > 0) {
		if (cfg->jobs <= 1 || plan.nr == 1)
			rc = decode_inline(be, cfg, th, plan.chunk, plan.nr,
			    &em, e);
		else
			rc = decode_parallel(be, cfg, th, plan.chunk, plan.nr,
			    &em, e);
	}
	if (rc == 0)
		rc = emit_pending(&em, e);
	ptdec_plan_free(&plan);
	return rc;
}
