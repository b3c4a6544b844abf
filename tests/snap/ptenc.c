/* ptenc: see ptenc.h. */
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "ptenc.h"

#define PTENC_MAX_TNT 6		/* bits in one TNT-8 packet */
#define PTENC_STACK 4096

struct ptenc {
	struct ptenc_opts o;
	uint8_t *buf;
	size_t len, cap;
	size_t *bounds;			/* offset of every packet */
	size_t nr_bounds, cap_bounds;
	size_t last_psb;		/* offset of the last PSB */
	uint64_t tnt_bits;
	unsigned tnt_n;
	uint64_t last_tsc;
	uint64_t stack[PTENC_STACK];	/* return addresses since last PSB */
	size_t depth_since_psb;
	int started;			/* first PSB written */
	size_t nr_lines;		/* expected-branch lines written */
	struct { size_t off, lines; } *psbs;	/* every PSB */
	size_t nr_psbs, cap_psbs;
	char *err;
	size_t errsize;
};

int
ptenc_new(struct ptenc **out, const struct ptenc_opts *o)
{
	struct ptenc *pe = calloc(1, sizeof(*pe));

	*out = NULL;
	if (pe == NULL)
		return -1;
	pe->o = *o;
	if (pe->o.tsc_every == 0)
		pe->o.tsc_every = 64;
	*out = pe;
	return 0;
}

void
ptenc_free(struct ptenc *pe)
{
	if (pe == NULL)
		return;
	free(pe->buf);
	free(pe->bounds);
	free(pe->psbs);
	free(pe);
}

const uint8_t *
ptenc_data(const struct ptenc *pe, size_t *len)
{
	*len = pe->len;
	return pe->buf;
}

uint64_t
ptenc_last_tsc(const struct ptenc *pe)
{
	return pe->last_tsc;
}

size_t
ptenc_boundary(const struct ptenc *pe, size_t off)
{
	size_t best = 0;

	for (size_t i = 0; i < pe->nr_bounds; i++)
		if (pe->bounds[i] <= off)
			best = pe->bounds[i];
	return best;
}

static int
fail(struct ptenc *pe, const char *msg, uint64_t ip)
{
	snprintf(pe->err, pe->errsize, "%s at %#llx", msg,
	    (unsigned long long)ip);
	return -1;
}

/* Encodes one packet at the end of the buffer. */
static int
put(struct ptenc *pe, struct pt_packet *p)
{
	struct pt_config cfg;
	struct pt_encoder *enc;
	int n;

	if (pe->cap - pe->len < 64) {
		size_t ncap = pe->cap ? pe->cap * 2 : 65536;
		uint8_t *nb = realloc(pe->buf, ncap);

		if (nb == NULL)
			return fail(pe, "out of memory", 0);
		pe->buf = nb;
		pe->cap = ncap;
	}
	if (pe->nr_bounds == pe->cap_bounds) {
		size_t nc = pe->cap_bounds ? pe->cap_bounds * 2 : 1024;
		size_t *nb = realloc(pe->bounds, nc * sizeof(*nb));

		if (nb == NULL)
			return fail(pe, "out of memory", 0);
		pe->bounds = nb;
		pe->cap_bounds = nc;
	}
	/* an encoder per packet keeps the buffer free to move */
	pt_config_init(&cfg);
	cfg.begin = pe->buf + pe->len;
	cfg.end = pe->buf + pe->cap;
	enc = pt_alloc_encoder(&cfg);
	if (enc == NULL)
		return fail(pe, "pt_alloc_encoder failed", 0);
	n = pt_enc_next(enc, p);
	pt_free_encoder(enc);
	if (n < 0) {
		snprintf(pe->err, pe->errsize, "pt_enc_next: %s",
		    pt_errstr(pt_errcode(n)));
		return -1;
	}
	pe->bounds[pe->nr_bounds++] = pe->len;
	pe->len += (size_t)n;
	return 0;
}

static int
put_simple(struct ptenc *pe, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	return put(pe, &p);
}

static int
put_ip(struct ptenc *pe, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	return put(pe, &p);
}

static int
put_tsc(struct ptenc *pe, uint64_t tsc)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = tsc;
	pe->last_tsc = tsc;
	return put(pe, &p);
}

static int
put_mode_exec(struct ptenc *pe)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	return put(pe, &p);
}

static int
flush_tnt(struct ptenc *pe)
{
	struct pt_packet p;

	if (pe->tnt_n == 0)
		return 0;
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)pe->tnt_n;
	p.payload.tnt.payload = pe->tnt_bits;	/* oldest bit highest */
	pe->tnt_bits = 0;
	pe->tnt_n = 0;
	return put(pe, &p);
}

static int
add_tnt(struct ptenc *pe, int taken)
{
	pe->tnt_bits = pe->tnt_bits << 1 | (taken ? 1 : 0);
	if (++pe->tnt_n == PTENC_MAX_TNT)
		return flush_tnt(pe);
	return 0;
}

static int
mark_psb(struct ptenc *pe)
{
	if (pe->nr_psbs == pe->cap_psbs) {
		size_t nc = pe->cap_psbs ? 2 * pe->cap_psbs : 64;
		void *np = realloc(pe->psbs, nc * sizeof(*pe->psbs));

		if (np == NULL)
			return fail(pe, "out of memory", 0);
		pe->psbs = np;
		pe->cap_psbs = nc;
	}
	pe->psbs[pe->nr_psbs].off = pe->len;
	pe->psbs[pe->nr_psbs].lines = pe->nr_lines;
	pe->nr_psbs++;
	return 0;
}

int
ptenc_psb_from(const struct ptenc *pe, size_t off, size_t *psb_off,
    size_t *lines_before)
{
	for (size_t i = 0; i < pe->nr_psbs; i++) {
		if (pe->psbs[i].off >= off) {
			*psb_off = pe->psbs[i].off;
			*lines_before = pe->psbs[i].lines;
			return 0;
		}
	}
	return -1;
}

/* PSB+ while tracing is on: the decoder resyncs at ip. */
static int
psb_plus(struct ptenc *pe, uint64_t tsc, uint64_t ip)
{
	if (flush_tnt(pe) < 0 || mark_psb(pe) < 0)
		return -1;
	pe->last_psb = pe->len;
	pe->depth_since_psb = 0;
	if (put_simple(pe, ppt_psb) < 0 || put_tsc(pe, tsc) < 0 ||
	    put_mode_exec(pe) < 0 || put_ip(pe, ppt_fup, ip) < 0 ||
	    put_simple(pe, ppt_psbend) < 0)
		return -1;
	return 0;
}

static int
start_run(struct ptenc *pe, uint64_t tsc, uint64_t ip)
{
	if (!pe->started) {
		pe->started = 1;
		if (mark_psb(pe) < 0)
			return -1;
		pe->last_psb = pe->len;
		if (put_simple(pe, ppt_psb) < 0 || put_tsc(pe, tsc) < 0 ||
		    put_simple(pe, ppt_psbend) < 0)
			return -1;
	} else if (put_tsc(pe, tsc) < 0) {
		return -1;
	}
	pe->depth_since_psb = 0;
	if (put_mode_exec(pe) < 0 || put_ip(pe, ppt_tip_pge, ip) < 0)
		return -1;
	return 0;
}

static void
expect(struct ptenc *pe, FILE *f, uint32_t tid, const char *kind,
    uint64_t from, uint64_t to)
{
	pe->nr_lines++;
	if (f != NULL)
		fprintf(f, "%u %s %llx %llx\n", tid, kind,
		    (unsigned long long)from, (unsigned long long)to);
}

static int
push_call(struct ptenc *pe, uint64_t ret_addr)
{
	if (pe->depth_since_psb == PTENC_STACK)
		return fail(pe, "call stack too deep", ret_addr);
	pe->stack[pe->depth_since_psb++] = ret_addr;
	return 0;
}

/* A RET that is not the run's last. */
static int
encode_ret(struct ptenc *pe, const struct ptenc_step *s)
{
	int compress = !pe->o.noretcomp && pe->depth_since_psb > 0 &&
	    pe->stack[pe->depth_since_psb - 1] == s->next;

	if (pe->depth_since_psb > 0)
		pe->depth_since_psb--;
	if (compress)
		return add_tnt(pe, 1);
	if (flush_tnt(pe) < 0)
		return -1;
	return put_ip(pe, ppt_tip, s->next);
}

/* Encodes step s; *depth is the call depth within the run. */
static int
encode_step(struct ptenc *pe, const struct ptenc_step *s, long *depth,
    uint32_t tid, FILE *expected)
{
	switch (s->kind) {
	case PTENC_OTHER:
		return 0;
	case PTENC_JCC:
		if (s->next != s->ip + s->len)
			expect(pe, expected, tid, "jcc", s->ip, s->next);
		return add_tnt(pe, s->next != s->ip + s->len);
	case PTENC_JMP:
		expect(pe, expected, tid, "jmp", s->ip, s->next);
		return 0;
	case PTENC_JMP_IND:
		expect(pe, expected, tid, "jmp", s->ip, s->next);
		if (flush_tnt(pe) < 0)
			return -1;
		return put_ip(pe, ppt_tip, s->next);
	case PTENC_CALL:
	case PTENC_CALL_IND:
		expect(pe, expected, tid, "call", s->ip, s->next);
		(*depth)++;
		if (push_call(pe, s->ip + s->len) < 0)
			return -1;
		if (s->kind == PTENC_CALL)
			return 0;
		if (flush_tnt(pe) < 0)
			return -1;
		return put_ip(pe, ppt_tip, s->next);
	case PTENC_RET:
		if (*depth == 0) {
			expect(pe, expected, tid, "end", s->ip, s->next);
			if (flush_tnt(pe) < 0)
				return -1;
			(*depth)--;
			return put_ip(pe, ppt_tip_pgd, s->next);
		}
		expect(pe, expected, tid, "ret", s->ip, s->next);
		(*depth)--;
		return encode_ret(pe, s);
	default:
		return fail(pe, "far branch (syscall, interrupt) in the path",
		    s->ip);
	}
}

int
ptenc_run(struct ptenc *pe, const struct ptenc_step *steps, size_t n,
    uint64_t *tsc, uint32_t tid, FILE *expected, char *err, size_t errsize)
{
	long depth = 0;

	pe->err = err;
	pe->errsize = errsize;
	if (n == 0)
		return fail(pe, "empty run", 0);
	if (start_run(pe, *tsc, steps[0].ip) < 0)
		return -1;
	expect(pe, expected, tid, "strt", 0, steps[0].ip);
	for (size_t i = 0; i < n; i++) {
		const struct ptenc_step *s = &steps[i];

		if (i > 0 && i % pe->o.tsc_every == 0 &&
		    (flush_tnt(pe) < 0 || put_tsc(pe, *tsc) < 0))
			return -1;
		if (i > 0 && pe->o.psb_every > 0 &&
		    pe->len - pe->last_psb >= pe->o.psb_every &&
		    psb_plus(pe, *tsc, s->ip) < 0)
			return -1;
		if (encode_step(pe, s, &depth, tid, expected) < 0)
			return -1;
		(*tsc)++;
		if (depth < 0) {
			if (i + 1 != n)
				return fail(pe, "path continues after the "
				    "final return", s->ip);
			return 0;
		}
	}
	return fail(pe, "path ends without the final return",
	    steps[n - 1].ip);
}
