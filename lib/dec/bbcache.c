/* bbcache: see bbcache.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "fmt/blkstream.h"
#include "dec/bbcache.h"
#include "dec/x86class.h"

#define BB_MAX_INSNS (1u << 20)	/* a longer straight run is not cached */
#define BB_READ 256		/* code bytes read at a time */
#define BB_LOCAL_MAX (1u << 18)	/* runs a worker keeps (10 MiB) */
#define BB_SHARED_MAX (1u << 20)	/* runs a decode keeps (48 MiB) */

struct bb_keyed {
	uint32_t pid;
	struct bb b;
};

struct bbshared {
	pthread_mutex_t mu;
	struct bb_keyed *slot;
	size_t mask, nr;
};

static size_t
shared_slot(const struct bbshared *s, uint32_t pid, uint64_t ip)
{
	return (size_t)(((ip ^ (uint64_t)pid << 48) * 0x9E3779B97F4A7C15ull)
	    >> 40) & s->mask;
}

struct bbshared *
bbshared_new(void)
{
	struct bbshared *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->mask = 16383;
	if ((s->slot = calloc(s->mask + 1, sizeof(*s->slot))) == NULL) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void
bbshared_free(struct bbshared *s)
{
	if (s == NULL)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s->slot);
	free(s);
}

/* Grows (or, at its limit, empties) the shared table.  0 or -1. */
static int
shared_make_room(struct bbshared *s)
{
	size_t n = (s->mask + 1) * 2, old_n = s->mask + 1;
	struct bb_keyed *t, *old = s->slot;

	if (2 * (s->nr + 1) <= s->mask + 1)
		return 0;
	if (s->nr + 1 > BB_SHARED_MAX) {
		memset(s->slot, 0, old_n * sizeof(*s->slot));
		s->nr = 0;
		return 0;
	}
	if ((t = calloc(n, sizeof(*t))) == NULL)
		return -1;
	s->slot = t;
	s->mask = n - 1;
	for (size_t i = 0; i < old_n; i++) {
		size_t k;

		if (old[i].b.ip == 0)
			continue;
		for (k = shared_slot(s, old[i].pid, old[i].b.ip);
		    t[k].b.ip != 0; k = (k + 1) & s->mask)
			;
		t[k] = old[i];
	}
	free(old);
	return 0;
}

static int
section_cmp(const void *a, const void *b)
{
	const struct bb_section *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int
bbcache_init(struct bbcache *c, const struct ptdec_images *im, uint32_t pid,
    struct error *e)
{
	size_t n = 0;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->shared = im != NULL ? im->blocks : NULL;
	c->mask = 4095;
	if ((c->slot = calloc(c->mask + 1, sizeof(*c->slot))) == NULL)
		return error_set(e, ERR_NOMEM, "block cache");
	if (im == NULL)
		return 0;
	c->iscache = im->iscache;
	for (size_t i = 0; i < im->nr; i++)
		n += im->sec[i].pid == pid;
	if (n > 0 && (c->sec = calloc(n, sizeof(*c->sec))) == NULL) {
		bbcache_fini(c);
		return error_set(e, ERR_NOMEM, "block cache sections");
	}
	for (size_t i = 0; i < im->nr; i++) {
		if (im->sec[i].pid != pid)
			continue;
		c->sec[c->nr_sec++] = (struct bb_section){ im->sec[i].vaddr,
		    im->sec[i].vaddr + im->sec[i].size, im->sec[i].isid };
	}
	qsort(c->sec, c->nr_sec, sizeof(*c->sec), section_cmp);
	for (size_t i = 1; i < c->nr_sec; i++)
		if (c->sec[i].begin < c->sec[i - 1].end)
			c->unusable = 1;
	return 0;
}

void
bbcache_fini(struct bbcache *c)
{
	free(c->slot);
	free(c->sec);
	memset(c, 0, sizeof(*c));
}

static const struct bb_section *
section_of(const struct bbcache *c, uint64_t ip)
{
	size_t lo = 0, hi = c->nr_sec;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ip < c->sec[mid].begin)
			hi = mid;
		else if (ip >= c->sec[mid].end)
			lo = mid + 1;
		else
			return &c->sec[mid];
	}
	return NULL;
}

/* Reads up to want code bytes at ip, not past its section.  Returns n. */
static size_t
read_code(const struct bbcache *c, uint64_t ip, uint8_t *buf, size_t want)
{
	const struct bb_section *s;
	int n;

	if (c->unusable || (s = section_of(c, ip)) == NULL)
		return 0;
	if (want > s->end - ip)
		want = (size_t)(s->end - ip);
	n = pt_iscache_read(c->iscache, buf, want, s->isid, ip);
	return n > 0 ? (size_t)n : 0;
}

int
bbcache_insn(struct bbcache *c, uint64_t ip, unsigned *length, int *iclass,
    uint64_t *target, int *mov_cr3)
{
	struct x86_insn in;
	uint8_t buf[16];
	size_t n = read_code(c, ip, buf, 15);

	if (n == 0 || x86_insn_decode(buf, n, 1, &in) < 0)
		return -1;
	*length = in.length;
	*iclass = in.iclass;
	*target = in.direct ? ip + in.length + (uint64_t)in.disp : 0;
	*mov_cr3 = in.mov_cr3;
	return 0;
}

/* Decodes the run at ip into *b.  Returns 0 or -1. */
static int
decode_run(const struct bbcache *c, uint64_t ip, struct bb *b)
{
	uint8_t buf[BB_READ];
	size_t have = 0, at = 0;
	struct x86_insn in;

	memset(b, 0, sizeof(*b));
	b->ip = ip;
	for (;;) {
		if (have - at < 15) {
			/* refill from ip: an instruction never spans reads */
			at = 0;
			have = read_code(c, ip, buf, sizeof(buf));
			if (have == 0)
				return -1;
		}
		if (x86_insn_decode(buf + at, have - at, 1, &in) < 0)
			return -1;
		if (++b->ninsn > BB_MAX_INSNS)
			return -1;
		if (in.iclass != ptic_other)
			break;
		at += in.length;
		ip += in.length;
	}
	b->end_ip = ip;
	b->iclass = (uint8_t)in.iclass;
	b->size = (uint8_t)in.length;
	if (in.direct) {
		b->flags |= BB_DIRECT;
		b->target = ip + in.length + (uint64_t)in.disp;
	}
	/* libipt does not remember "call next instruction" (PIC idiom) */
	if (in.iclass == ptic_call && !(in.direct && in.disp == 0))
		b->flags |= BB_PUSH;
	/* only runs the walker's blocks end with: they end at a branch */
	if (b->iclass >= ptic_call && b->iclass <= ptic_ptwrite)
		b->rest = blks_block_rest(b->ip, b->end_ip, b->ninsn,
		    (uint64_t)blks_class_byte(b->iclass, 0, ptem_64bit));
	return 0;
}

static int
grow(struct bbcache *c)
{
	size_t n = (c->mask + 1) * 2;
	struct bb *s = calloc(n, sizeof(*s)), *old = c->slot;
	size_t old_n = c->mask + 1;

	if (s == NULL)
		return -1;
	c->slot = s;
	c->mask = n - 1;
	for (size_t i = 0; i < old_n; i++) {
		size_t k;

		if (old[i].ip == 0)
			continue;
		for (k = bbcache_slot(c, old[i].ip); s[k].ip != 0;
		    k = (k + 1) & c->mask)
			;
		s[k] = old[i];
	}
	free(old);
	return 0;
}

/* The run at ip from the shared level, decoding it there if new. */
static int
shared_get(struct bbcache *c, uint64_t ip, struct bb *out)
{
	struct bbshared *s = c->shared;
	size_t k;
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	for (k = shared_slot(s, c->pid, ip); s->slot[k].b.ip != 0;
	    k = (k + 1) & s->mask) {
		if (s->slot[k].b.ip == ip && s->slot[k].pid == c->pid) {
			*out = s->slot[k].b;
			goto done;
		}
	}
	if (decode_run(c, ip, out) < 0 || shared_make_room(s) < 0) {
		rc = -1;
		goto done;
	}
	for (k = shared_slot(s, c->pid, ip); s->slot[k].b.ip != 0;
	    k = (k + 1) & s->mask)
		;
	s->slot[k].pid = c->pid;
	s->slot[k].b = *out;
	s->nr++;
done:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

const struct bb *
bbcache_fill(struct bbcache *c, uint64_t ip)
{
	size_t k;
	struct bb b;

	if (ip == 0 || (c->shared != NULL ? shared_get(c, ip, &b) :
	    decode_run(c, ip, &b)) < 0)
		return NULL;
	if (c->nr + 1 > BB_LOCAL_MAX) {
		memset(c->slot, 0, (c->mask + 1) * sizeof(*c->slot));
		c->nr = 0;
	}
	if (2 * (c->nr + 1) > c->mask + 1 && grow(c) < 0)
		return NULL;
	for (k = bbcache_slot(c, ip); c->slot[k].ip != 0;
	    k = (k + 1) & c->mask)
		;
	c->slot[k] = b;
	c->nr++;
	return &c->slot[k];
}
