/*
 * perfdata reader (and the helpers the writer shares): see perfdata.h.
 *
 * The whole file is parsed up front.  Every length read from the file is
 * checked against the bytes that exist before anything is dereferenced;
 * errors name the file offset.  Records inside COMPRESSED records are
 * decompressed with one zstd stream for the whole file (perf compresses
 * one continuous stream, flushed per record, so a record may straddle two
 * COMPRESSED records) and parsed once the data section has been read.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/le.h"
#include "fmt/perfdata.h"
#include "fmt/perfdata_int.h"

/* ---- byte buffer ------------------------------------------------- */

int
pd_grow(void **p, size_t *cap, size_t need, size_t elsize)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elsize)
		return -1;
	np = realloc(*p, ncap * elsize);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

void
pd_put_bytes(struct pd_buf *b, const void *p, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (b->len > SIZE_MAX - n ||
	    pd_grow((void **)&b->p, &b->cap, b->len + n, 1) < 0) {
		b->failed = 1;
		return;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void
pd_put_zeros(struct pd_buf *b, size_t n)
{
	static const uint8_t z[64];

	while (n > 0) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		pd_put_bytes(b, z, k);
		n -= k;
	}
}

void
pd_put_u8(struct pd_buf *b, uint8_t v)
{
	pd_put_bytes(b, &v, 1);
}

void
pd_put_u16(struct pd_buf *b, uint16_t v)
{
	pd_put_bytes(b, &v, 2);
}

void
pd_put_u32(struct pd_buf *b, uint32_t v)
{
	pd_put_bytes(b, &v, 4);
}

void
pd_put_u64(struct pd_buf *b, uint64_t v)
{
	pd_put_bytes(b, &v, 8);
}

/* ---- reading primitives ------------------------------------------ */

/* off..off+size lies within len bytes (no overflow). */
static int
in_bounds(uint64_t off, uint64_t size, uint64_t len)
{
	return off <= len && size <= len - off;
}

/* Smallest decompressed-data limit; the real one also scales with the file. */
#define PD_DECOMP_FLOOR (64ULL << 20)
#define PD_DECOMP_RATIO 64

/* id -> attr, sorted by id, for the sample_id trailers */
struct id_ent {
	uint64_t id;
	size_t attr;
};

struct rd {
	struct perfdata *pd;
	struct id_ent *ids;
	size_t nr_ids;
	const char *name;
	struct error *e;
	int in_compressed;		/* parsing decompressed data */
	uint64_t st0;			/* attr 0 sample_type */
	int id_all;			/* attr 0 has sample_id_all */
	ZSTD_DStream *zds;
	struct pd_buf decomp;
	uint64_t decomp_limit;
	uint64_t first_compressed;	/* file offset of the first one */
};

/* Error naming where: "NAME: offset N: ..." (or the decompressed offset). */
static int
bad(struct rd *r, int code, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
bad(struct rd *r, int code, uint64_t off, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->in_compressed)
		return error_set(r->e, code,
		    "%s: offset %llu of the data decompressed from the "
		    "COMPRESSED records (first at file offset %llu): %s",
		    r->name, (unsigned long long)off,
		    (unsigned long long)r->first_compressed, msg);
	return error_set(r->e, code, "%s: file offset %llu: %s", r->name,
	    (unsigned long long)off, msg);
}

static void
warn(struct rd *r, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
warn(struct rd *r, uint64_t off, const char *fmt, ...)
{
	struct perfdata *pd = r->pd;
	char msg[200];
	va_list ap;

	pd->nr_warnings++;
	if (pd->first_warning[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(pd->first_warning, sizeof(pd->first_warning),
	    "%s offset %llu: %s", r->in_compressed ? "decompressed" : "file",
	    (unsigned long long)off, msg);
}

static int
nomem(struct rd *r, const char *what)
{
	return error_set(r->e, ERR_NOMEM, "%s: %s", r->name, what);
}

#define APPEND(r, arr, nr, what) \
	(pd_grow_nr((void **)&(arr), &(nr), sizeof(*(arr))) < 0 ? \
	    nomem((r), (what)) : 0)

/* Appends one zeroed element to an array whose capacity is its count. */
static int
pd_grow_nr(void **arr, size_t *nr, size_t elsize)
{
	size_t cap = *nr, need = *nr + 1;

	/* capacity doubles at powers of two, so it is implied by nr */
	if (cap == 0 || (cap & (cap - 1)) == 0) {
		size_t ncap = cap ? cap * 2 : 1;
		void *np;

		if (ncap > SIZE_MAX / elsize)
			return -1;
		np = realloc(*arr, ncap * elsize);
		if (np == NULL)
			return -1;
		*arr = np;
	}
	memset((uint8_t *)*arr + cap * elsize, 0, elsize);
	*nr = need;
	return 0;
}

/* A NUL-terminated string within max bytes at p; else a format error. */
static int
get_string(struct rd *r, const uint8_t *p, uint64_t max, uint64_t off,
    const char *what, const char **out)
{
	if (max == 0 || memchr(p, '\0', max) == NULL)
		return bad(r, ERR_FORMAT, off,
		    "%s is not NUL-terminated within its record", what);
	*out = (const char *)p;
	return 0;
}

/* ---- header and attrs -------------------------------------------- */

static int
parse_magic(struct rd *r, const uint8_t *b, uint64_t len)
{
	uint64_t magic, hsize;

	if (len < 8)
		return bad(r, ERR_TRUNCATED, 0,
		    "%llu bytes is shorter than the perf.data magic",
		    (unsigned long long)len);
	magic = le_get_u64(b);
	if (magic == PD_MAGIC_SWAPPED)
		return bad(r, ERR_UNSUPPORTED, 0,
		    "big-endian perf.data is not supported");
	if (memcmp(b, "PERFFILE", 8) == 0)
		return bad(r, ERR_UNSUPPORTED, 0,
		    "perf.data version 1 (PERFFILE) is not supported");
	if (magic != PD_MAGIC)
		return bad(r, ERR_FORMAT, 0, "not a perf.data file (no PERFILE2 magic)");
	if (len < 16)
		return bad(r, ERR_TRUNCATED, 8, "file ends inside the header");
	hsize = le_get_u64(b + 8);
	if (hsize == PD_PIPE_HEADER_SIZE)
		return bad(r, ERR_UNSUPPORTED, 8,
		    "pipe-mode perf.data (perf record -o -) is not supported");
	if (hsize != PD_HEADER_SIZE)
		return bad(r, ERR_FORMAT, 8, "header size %llu, expected %d",
		    (unsigned long long)hsize, PD_HEADER_SIZE);
	if (len < PD_HEADER_SIZE)
		return bad(r, ERR_TRUNCATED, 16,
		    "file of %llu bytes ends inside the %d-byte header",
		    (unsigned long long)len, PD_HEADER_SIZE);
	return 0;
}

/* u64 at off inside an attr of asz bytes, 0 if the attr is shorter. */
static uint64_t
attr_u64(const uint8_t *a, uint32_t asz, uint32_t off)
{
	return off + 8 <= asz ? le_get_u64(a + off) : 0;
}

static int
parse_one_attr(struct rd *r, const uint8_t *b, uint64_t len, uint64_t at,
    uint64_t attr_size, struct perfdata_attr *pa)
{
	const uint8_t *a = b + at;
	uint32_t asz = le_get_u32(a + 4);
	uint64_t ids_off, ids_size;

	if (asz == 0)
		asz = PD_ATTR_SIZE_VER0;
	if (asz < PD_ATTR_SIZE_VER0 || (uint64_t)asz + 16 > attr_size)
		return bad(r, ERR_FORMAT, at + 4,
		    "attr size %u does not fit the header's attr_size %llu",
		    asz, (unsigned long long)attr_size);
	pa->type = le_get_u32(a);
	pa->size = asz;
	pa->config = attr_u64(a, asz, 8);
	pa->sample_period = attr_u64(a, asz, 16);
	pa->sample_type = attr_u64(a, asz, 24);
	pa->read_format = attr_u64(a, asz, 32);
	pa->flags = attr_u64(a, asz, 40);
	pa->config1 = attr_u64(a, asz, 56);
	pa->config2 = attr_u64(a, asz, 64);
	ids_off = le_get_u64(a + asz);
	ids_size = le_get_u64(a + asz + 8);
	if (ids_size % 8 != 0 || !in_bounds(ids_off, ids_size, len))
		return bad(r, ids_size % 8 ? ERR_FORMAT : ERR_TRUNCATED,
		    at + asz, "attr ids section {offset %llu, size %llu} is "
		    "not within the %llu-byte file",
		    (unsigned long long)ids_off, (unsigned long long)ids_size,
		    (unsigned long long)len);
	pa->nr_ids = ids_size / 8;
	if (pa->nr_ids > 0) {
		pa->ids = malloc(ids_size);
		if (pa->ids == NULL)
			return nomem(r, "attr ids");
		memcpy(pa->ids, b + ids_off, ids_size);
	}
	return 0;
}

static const struct perfdata_attr *
attr_by_id(const struct rd *r, uint64_t id)
{
	size_t lo = 0, hi = r->nr_ids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->ids[mid].id == id)
			return &r->pd->attrs[r->ids[mid].attr];
		if (r->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int
cmp_id(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Builds the sorted id index over every attr's ids. */
static int
index_ids(struct rd *r)
{
	const struct perfdata *pd = r->pd;
	size_t n = 0;

	for (size_t i = 0; i < pd->nr_attrs; i++)
		n += pd->attrs[i].nr_ids;
	if (n == 0)
		return 0;
	r->ids = calloc(n, sizeof(*r->ids));
	if (r->ids == NULL)
		return nomem(r, "id index");
	for (size_t i = 0; i < pd->nr_attrs; i++)
		for (size_t j = 0; j < pd->attrs[i].nr_ids; j++) {
			r->ids[r->nr_ids].id = pd->attrs[i].ids[j];
			r->ids[r->nr_ids++].attr = i;
		}
	qsort(r->ids, r->nr_ids, sizeof(*r->ids), cmp_id);
	return 0;
}

static int
parse_attrs(struct rd *r, const uint8_t *b, uint64_t len)
{
	struct perfdata *pd = r->pd;
	uint64_t attr_size = le_get_u64(b + 16);
	uint64_t off = le_get_u64(b + 24), size = le_get_u64(b + 32);
	uint64_t total_ids = 0;
	int rc;

	if (attr_size < PD_ATTR_SIZE_VER0 + 16 || attr_size > 4096)
		return bad(r, ERR_FORMAT, 16, "attr_size %llu out of range",
		    (unsigned long long)attr_size);
	if (!in_bounds(off, size, len))
		return bad(r, ERR_TRUNCATED, 24,
		    "attr section {offset %llu, size %llu} runs past the end "
		    "of the %llu-byte file", (unsigned long long)off,
		    (unsigned long long)size, (unsigned long long)len);
	if (size % attr_size != 0)
		return bad(r, ERR_FORMAT, 32,
		    "attr section size %llu is not a multiple of attr_size %llu",
		    (unsigned long long)size, (unsigned long long)attr_size);
	pd->nr_attrs = size / attr_size;
	if (pd->nr_attrs == 0)
		return bad(r, ERR_FORMAT, 32, "no attrs");
	pd->attrs = calloc(pd->nr_attrs, sizeof(*pd->attrs));
	if (pd->attrs == NULL)
		return nomem(r, "attrs");
	for (size_t i = 0; i < pd->nr_attrs; i++) {
		rc = parse_one_attr(r, b, len, off + i * attr_size, attr_size,
		    &pd->attrs[i]);
		if (rc < 0)
			return rc;
		/* id arrays never share bytes: more ids than the file holds
		 * means overlapping sections (and a memory bomb) */
		total_ids += pd->attrs[i].nr_ids;
		if (total_ids > len / 8)
			return bad(r, ERR_FORMAT, off + i * attr_size,
			    "attr ids sections hold more ids than the file "
			    "has bytes for");
	}
	if ((rc = index_ids(r)) < 0)
		return rc;
	r->st0 = pd->attrs[0].sample_type;
	r->id_all = (pd->attrs[0].flags & PERFDATA_ATTR_SAMPLE_ID_ALL) != 0;
	return 0;
}

/* ---- sample_id trailer ------------------------------------------- */

#define SID_BITS (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | \
	PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/*
 * Parses the trailer at the end of body (blen bytes) into sid and sets
 * *fields to the bytes before it.
 */
static int
parse_sid(struct rd *r, const uint8_t *body, uint64_t blen, uint64_t off,
    struct perfdata_sid *sid, uint64_t *fields)
{
	uint64_t st = r->st0, tl;
	const uint8_t *p;

	memset(sid, 0, sizeof(*sid));
	sid->cpu = PERFDATA_NO_CPU;
	*fields = blen;
	if (!r->id_all)
		return 0;
	if ((st & PERF_SAMPLE_IDENTIFIER) && blen >= 8) {
		const struct perfdata_attr *a =
		    attr_by_id(r, le_get_u64(body + blen - 8));

		if (a != NULL)
			st = a->sample_type;
	}
	tl = 8 * (uint64_t)__builtin_popcountll(st & SID_BITS);
	if (tl > blen)
		return bad(r, ERR_TRUNCATED, off,
		    "record body of %llu bytes is shorter than its %llu-byte "
		    "sample_id trailer", (unsigned long long)blen,
		    (unsigned long long)tl);
	p = body + blen - tl;
	if (st & PERF_SAMPLE_TID) {
		sid->pid = le_get_u32(p);
		sid->tid = le_get_u32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME)
		sid->time = le_get_u64(p), p += 8;
	if (st & PERF_SAMPLE_ID)
		sid->id = le_get_u64(p), p += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		p += 8;
	if (st & PERF_SAMPLE_CPU)
		sid->cpu = le_get_u32(p), p += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		sid->id = le_get_u64(p);
	*fields = blen - tl;
	return 0;
}

/* ---- records ----------------------------------------------------- */

/* What a record handler gets. */
struct rec {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	const uint8_t *p;		/* the record, header included */
	uint64_t off;			/* its offset (file or decompressed) */
	const uint8_t *body;		/* after the header */
	uint64_t blen;
};

static int
need_fields(struct rd *r, const struct rec *rc, uint64_t have, uint64_t need,
    const char *name)
{
	if (have < need)
		return bad(r, ERR_TRUNCATED, rc->off,
		    "%s record has %llu bytes of fields, needs %llu", name,
		    (unsigned long long)have, (unsigned long long)need);
	return 0;
}

static int
rec_mmap(struct rd *r, const struct rec *rc)
{
	int is2 = rc->type == PERF_RECORD_MMAP2;
	uint64_t fixed = is2 ? 64 : 32, fields;
	struct perfdata_mmap *m;
	const uint8_t *b = rc->body;
	struct perfdata_sid sid;
	int err;

	if ((err = parse_sid(r, b, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, fixed + 1,
	    is2 ? "MMAP2" : "MMAP")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->mmaps, r->pd->nr_mmaps, "mmaps")) < 0)
		return err;
	m = &r->pd->mmaps[r->pd->nr_mmaps - 1];
	m->sid = sid;
	m->is_mmap2 = is2;
	m->misc = rc->misc;
	m->file_offset = rc->off;
	m->pid = le_get_u32(b);
	m->tid = le_get_u32(b + 4);
	m->addr = le_get_u64(b + 8);
	m->len = le_get_u64(b + 16);
	m->pgoff = le_get_u64(b + 24);
	if (is2 && (rc->misc & PERFDATA_MISC_MMAP_BUILD_ID)) {
		m->build_id_size = b[32];
		if (m->build_id_size > PERFDATA_BUILD_ID_MAX)
			return bad(r, ERR_FORMAT, rc->off,
			    "MMAP2 build-id size %u exceeds %d", b[32],
			    PERFDATA_BUILD_ID_MAX);
		memcpy(m->build_id, b + 36, m->build_id_size);
	} else if (is2) {
		m->maj = le_get_u32(b + 32);
		m->min = le_get_u32(b + 36);
		m->ino = le_get_u64(b + 40);
		m->ino_generation = le_get_u64(b + 48);
	}
	if (is2) {
		m->prot = le_get_u32(b + 56);
		m->flags = le_get_u32(b + 60);
	}
	return get_string(r, b + fixed, fields - fixed, rc->off,
	    is2 ? "MMAP2 file name" : "MMAP file name", &m->filename);
}

static int
rec_comm(struct rd *r, const struct rec *rc)
{
	struct perfdata_comm *c;
	struct perfdata_sid sid;
	uint64_t fields;
	int err;

	if ((err = parse_sid(r, rc->body, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, 9, "COMM")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->comms, r->pd->nr_comms, "comms")) < 0)
		return err;
	c = &r->pd->comms[r->pd->nr_comms - 1];
	c->sid = sid;
	c->file_offset = rc->off;
	c->pid = le_get_u32(rc->body);
	c->tid = le_get_u32(rc->body + 4);
	c->exec = (rc->misc & PERFDATA_MISC_COMM_EXEC) != 0;
	return get_string(r, rc->body + 8, fields - 8, rc->off, "COMM name",
	    &c->comm);
}

static int
rec_task(struct rd *r, const struct rec *rc)
{
	struct perfdata_task *t;
	struct perfdata_sid sid;
	uint64_t fields;
	int err;

	if ((err = parse_sid(r, rc->body, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, 24,
	    rc->type == PERF_RECORD_FORK ? "FORK" : "EXIT")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->tasks, r->pd->nr_tasks, "tasks")) < 0)
		return err;
	t = &r->pd->tasks[r->pd->nr_tasks - 1];
	t->sid = sid;
	t->file_offset = rc->off;
	t->is_fork = rc->type == PERF_RECORD_FORK;
	t->pid = le_get_u32(rc->body);
	t->ppid = le_get_u32(rc->body + 4);
	t->tid = le_get_u32(rc->body + 8);
	t->ptid = le_get_u32(rc->body + 12);
	t->time = le_get_u64(rc->body + 16);
	return 0;
}

static int
rec_itrace_start(struct rd *r, const struct rec *rc)
{
	struct perfdata_itrace_start *it;
	struct perfdata_sid sid;
	uint64_t fields;
	int err;

	if ((err = parse_sid(r, rc->body, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, 8, "ITRACE_START")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->itrace_starts, r->pd->nr_itrace_starts,
	    "itrace starts")) < 0)
		return err;
	it = &r->pd->itrace_starts[r->pd->nr_itrace_starts - 1];
	it->sid = sid;
	it->file_offset = rc->off;
	it->pid = le_get_u32(rc->body);
	it->tid = le_get_u32(rc->body + 4);
	return 0;
}

static int
rec_aux(struct rd *r, const struct rec *rc)
{
	struct perfdata_aux *a;
	struct perfdata_sid sid;
	uint64_t fields;
	int err;

	if ((err = parse_sid(r, rc->body, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, 24, "AUX")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->auxs, r->pd->nr_auxs, "aux records")) < 0)
		return err;
	a = &r->pd->auxs[r->pd->nr_auxs - 1];
	a->sid = sid;
	a->file_offset = rc->off;
	a->aux_offset = le_get_u64(rc->body);
	a->aux_size = le_get_u64(rc->body + 8);
	a->flags = le_get_u64(rc->body + 16);
	return 0;
}

static int
rec_switch(struct rd *r, const struct rec *rc)
{
	int wide = rc->type == PERF_RECORD_SWITCH_CPU_WIDE;
	struct perfdata_switch *sw;
	struct perfdata_sid sid;
	uint64_t fields;
	int err;

	if ((err = parse_sid(r, rc->body, rc->blen, rc->off, &sid, &fields)) < 0 ||
	    (err = need_fields(r, rc, fields, wide ? 8 : 0,
	    "SWITCH_CPU_WIDE")) < 0)
		return err;
	if ((err = APPEND(r, r->pd->switches, r->pd->nr_switches,
	    "switches")) < 0)
		return err;
	sw = &r->pd->switches[r->pd->nr_switches - 1];
	sw->sid = sid;
	sw->file_offset = rc->off;
	sw->cpu_wide = wide;
	sw->out = (rc->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
	sw->preempt = (rc->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
	if (wide) {
		sw->next_prev_pid = le_get_u32(rc->body);
		sw->next_prev_tid = le_get_u32(rc->body + 4);
	}
	return 0;
}

static int
rec_auxtrace_info(struct rd *r, const struct rec *rc)
{
	struct perfdata *pd = r->pd;
	uint64_t nr;
	uint32_t type;

	if (rc->blen < 8)
		return bad(r, ERR_TRUNCATED, rc->off,
		    "AUXTRACE_INFO record of %u bytes has no type", rc->size);
	if (pd->has_pt_info || pd->auxtrace_info_type != 0) {
		warn(r, rc->off, "second AUXTRACE_INFO ignored");
		return 0;
	}
	type = le_get_u32(rc->body);
	pd->auxtrace_info_type = type;
	if (type != PERFDATA_AUXTRACE_INTEL_PT)
		return 0;
	nr = (rc->blen - 8) / 8;
	if (nr < PERFDATA_PT_PER_CPU_MMAPS + 1)
		return bad(r, ERR_FORMAT, rc->off,
		    "intel_pt AUXTRACE_INFO holds %llu priv values, needs at "
		    "least %d", (unsigned long long)nr,
		    PERFDATA_PT_PER_CPU_MMAPS + 1);
	pd->pt.nr_priv = nr > PERFDATA_PT_PRIV_NR ? PERFDATA_PT_PRIV_NR :
	    (unsigned)nr;
	for (unsigned i = 0; i < pd->pt.nr_priv; i++)
		pd->pt.priv[i] = le_get_u64(rc->body + 8 + 8 * i);
	pd->has_pt_info = 1;
	if (pd->pt.nr_priv == PERFDATA_PT_PRIV_NR &&
	    pd->pt.priv[PERFDATA_PT_FILTER_STR_LEN] > 0) {
		uint64_t flen = pd->pt.priv[PERFDATA_PT_FILTER_STR_LEN];
		uint64_t avail = rc->blen - 8 - 8 * PERFDATA_PT_PRIV_NR;

		if (flen >= avail)
			return bad(r, ERR_TRUNCATED, rc->off,
			    "AUXTRACE_INFO filter of %llu bytes runs past the "
			    "record", (unsigned long long)flen);
		pd->pt.filter = strndup((const char *)rc->body + 8 +
		    8 * PERFDATA_PT_PRIV_NR, flen);
		if (pd->pt.filter == NULL)
			return nomem(r, "filter");
	}
	return 0;
}

static int
rec_time_conv(struct rd *r, const struct rec *rc)
{
	struct perfdata_time_conv *tc = &r->pd->time_conv;
	const uint8_t *b = rc->body;

	if (rc->blen < 24)
		return bad(r, ERR_TRUNCATED, rc->off,
		    "TIME_CONV record of %u bytes is too short", rc->size);
	if (r->pd->has_time_conv)
		warn(r, rc->off, "second TIME_CONV replaces the first");
	memset(tc, 0, sizeof(*tc));
	tc->time_shift = le_get_u64(b);
	tc->time_mult = le_get_u64(b + 8);
	tc->time_zero = le_get_u64(b + 16);
	if (rc->blen >= 42) {
		tc->time_cycles = le_get_u64(b + 24);
		tc->time_mask = le_get_u64(b + 32);
		tc->cap_user_time_zero = b[40];
		tc->cap_user_time_short = b[41];
	}
	r->pd->has_time_conv = 1;
	return 0;
}

static int
rec_auxtrace(struct rd *r, const struct rec *rc)
{
	struct perfdata_auxtrace *a;
	const uint8_t *b = rc->body;
	int err;

	if ((err = APPEND(r, r->pd->auxtrace, r->pd->nr_auxtrace,
	    "auxtrace records")) < 0)
		return err;
	a = &r->pd->auxtrace[r->pd->nr_auxtrace - 1];
	a->size = le_get_u64(b);
	a->offset = le_get_u64(b + 8);
	a->reference = le_get_u64(b + 16);
	a->idx = le_get_u32(b + 24);
	a->tid = le_get_u32(b + 28);
	a->cpu = le_get_u32(b + 32);
	a->data = rc->p + rc->size;
	a->file_offset = rc->off;
	a->in_compressed = r->in_compressed;
	return 0;
}

static int
ensure_decomp_room(struct rd *r, uint64_t off)
{
	size_t want = 256 * 1024;

	if (r->decomp.len + want > r->decomp_limit)
		return bad(r, ERR_FORMAT, off,
		    "COMPRESSED records expand past %llu bytes",
		    (unsigned long long)r->decomp_limit);
	if (pd_grow((void **)&r->decomp.p, &r->decomp.cap,
	    r->decomp.len + want, 1) < 0)
		return nomem(r, "decompression buffer");
	return 0;
}

static int
rec_compressed(struct rd *r, const struct rec *rc)
{
	ZSTD_inBuffer in = { rc->body, rc->blen, 0 };

	if (r->in_compressed)
		return bad(r, ERR_FORMAT, rc->off,
		    "COMPRESSED record inside compressed data");
	if (r->zds == NULL) {
		r->first_compressed = rc->off;
		r->zds = ZSTD_createDStream();
		if (r->zds == NULL)
			return nomem(r, "zstd stream");
		ZSTD_initDStream(r->zds);
	}
	r->pd->nr_compressed++;
	for (;;) {
		ZSTD_outBuffer out;
		size_t ret, in_before = in.pos;
		int err = ensure_decomp_room(r, rc->off);

		if (err < 0)
			return err;
		out.dst = r->decomp.p + r->decomp.len;
		out.size = r->decomp.cap - r->decomp.len;
		out.pos = 0;
		ret = ZSTD_decompressStream(r->zds, &out, &in);
		if (ZSTD_isError(ret))
			return bad(r, ERR_FORMAT, rc->off,
			    "COMPRESSED record: zstd: %s",
			    ZSTD_getErrorName(ret));
		r->decomp.len += out.pos;
		if (in.pos == in.size && out.pos < out.size)
			break;
		if (out.pos == 0 && in.pos == in_before)
			return bad(r, ERR_FORMAT, rc->off,
			    "COMPRESSED record: zstd made no progress");
	}
	return 0;
}

static int
dispatch(struct rd *r, const struct rec *rc)
{
	struct perfdata *pd = r->pd;

	switch (rc->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return rec_mmap(r, rc);
	case PERF_RECORD_COMM:
		return rec_comm(r, rc);
	case PERF_RECORD_EXIT:
	case PERF_RECORD_FORK:
		return rec_task(r, rc);
	case PERF_RECORD_ITRACE_START:
		return rec_itrace_start(r, rc);
	case PERF_RECORD_AUX:
		return rec_aux(r, rc);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return rec_switch(r, rc);
	case PERF_RECORD_SAMPLE:
		pd->nr_samples++;
		return 0;
	case PERF_RECORD_LOST:
		pd->nr_lost++;
		return 0;
	case PERFDATA_REC_AUXTRACE_INFO:
		return rec_auxtrace_info(r, rc);
	case PERFDATA_REC_AUXTRACE:
		return rec_auxtrace(r, rc);
	case PERFDATA_REC_TIME_CONV:
		return rec_time_conv(r, rc);
	case PERFDATA_REC_COMPRESSED:
		return rec_compressed(r, rc);
	default:
		break;
	}
	if ((rc->type > 0 && rc->type <= PERF_RECORD_AUX_OUTPUT_HW_ID) ||
	    (rc->type >= PERFDATA_REC_HEADER_ATTR &&
	    rc->type < PERFDATA_REC_USER_MAX)) {
		pd->nr_skipped_records++;
		return 0;
	}
	pd->nr_unknown_records++;
	warn(r, rc->off, "unknown record type %u skipped", rc->type);
	return 0;
}

/* Parses the records in b[start, end). */
static int
parse_records(struct rd *r, const uint8_t *b, uint64_t start, uint64_t end)
{
	uint64_t pos = start;

	while (pos < end) {
		struct rec rc;
		uint64_t total;
		int err;

		if (end - pos < 8)
			return bad(r, ERR_TRUNCATED, pos,
			    "record header cut off: %llu bytes left in the data",
			    (unsigned long long)(end - pos));
		rc.p = b + pos;
		rc.off = pos;
		rc.type = le_get_u32(rc.p);
		rc.misc = le_get_u16(rc.p + 4);
		rc.size = le_get_u16(rc.p + 6);
		if (rc.size < 8)
			return bad(r, ERR_FORMAT, pos,
			    "record of type %u has size %u, less than its header",
			    rc.type, rc.size);
		if (rc.size > end - pos)
			return bad(r, ERR_TRUNCATED, pos,
			    "record of type %u and %u bytes runs past the end of "
			    "the data at offset %llu", rc.type, rc.size,
			    (unsigned long long)end);
		rc.body = rc.p + 8;
		rc.blen = rc.size - 8u;
		total = rc.size;
		if (rc.type == PERFDATA_REC_AUXTRACE) {
			uint64_t psize;

			if (rc.size < PD_AUXTRACE_HDR_SIZE)
				return bad(r, ERR_FORMAT, pos,
				    "AUXTRACE record header of %u bytes, "
				    "expected %d", rc.size,
				    PD_AUXTRACE_HDR_SIZE);
			psize = le_get_u64(rc.body);
			if (psize > end - pos - rc.size)
				return bad(r, ERR_TRUNCATED, pos,
				    "AUXTRACE payload of %llu bytes runs past "
				    "the end of the data at offset %llu",
				    (unsigned long long)psize,
				    (unsigned long long)end);
			total += psize;
		}
		if ((err = dispatch(r, &rc)) < 0)
			return err;
		r->pd->nr_records++;
		pos += total;
	}
	return 0;
}

static int
parse_data(struct rd *r, const uint8_t *b, uint64_t len)
{
	struct perfdata *pd = r->pd;
	uint64_t off = le_get_u64(b + 40), size = le_get_u64(b + 48);
	int err;

	if (!in_bounds(off, size, len))
		return bad(r, ERR_TRUNCATED, 40,
		    "data section {offset %llu, size %llu} runs past the end "
		    "of the %llu-byte file", (unsigned long long)off,
		    (unsigned long long)size, (unsigned long long)len);
	if (off < PD_HEADER_SIZE && size > 0)
		return bad(r, ERR_FORMAT, 40,
		    "data section at offset %llu overlaps the header",
		    (unsigned long long)off);
	pd->data_offset = off;
	pd->data_size = size;
	if ((err = parse_records(r, b, off, off + size)) < 0)
		return err;
	if (r->decomp.len == 0)
		return 0;
	/* the decompressed buffer is stable from here: records point into it */
	if ((err = APPEND(r, pd->owned, pd->nr_owned, "buffers")) < 0)
		return err;
	pd->owned[pd->nr_owned - 1] = r->decomp.p;
	pd->decompressed_bytes = r->decomp.len;
	r->decomp.p = NULL;
	r->in_compressed = 1;
	err = parse_records(r, pd->owned[pd->nr_owned - 1], 0,
	    pd->decompressed_bytes);
	r->in_compressed = 0;
	return err;
}

/* ---- features ---------------------------------------------------- */

static int
feat_string(struct rd *r, const uint8_t *p, uint64_t size, uint64_t off,
    char **out)
{
	uint32_t n;

	if (size < 4)
		return bad(r, ERR_TRUNCATED, off, "string feature of %llu bytes",
		    (unsigned long long)size);
	n = le_get_u32(p);
	if (n > size - 4)
		return bad(r, ERR_TRUNCATED, off,
		    "string of %u bytes runs past its %llu-byte feature", n,
		    (unsigned long long)size);
	free(*out);
	*out = strndup((const char *)p + 4, n);
	return *out == NULL ? nomem(r, "feature string") : 0;
}

static int
feat_build_id(struct rd *r, const uint8_t *p, uint64_t size, uint64_t off)
{
	struct perfdata *pd = r->pd;
	uint64_t pos = 0;

	while (pos < size) {
		struct perfdata_build_id *bi;
		uint16_t bsize, misc;
		int err;

		if (size - pos < PD_BUILD_ID_FIXED)
			return bad(r, ERR_TRUNCATED, off + pos,
			    "HEADER_BUILD_ID entry cut off: %llu bytes left",
			    (unsigned long long)(size - pos));
		misc = le_get_u16(p + pos + 4);
		bsize = le_get_u16(p + pos + 6);
		if (bsize < PD_BUILD_ID_FIXED || bsize > size - pos)
			return bad(r, ERR_FORMAT, off + pos,
			    "HEADER_BUILD_ID entry size %u does not fit its "
			    "%llu remaining bytes", bsize,
			    (unsigned long long)(size - pos));
		if ((err = APPEND(r, pd->build_ids, pd->nr_build_ids,
		    "build-ids")) < 0)
			return err;
		bi = &pd->build_ids[pd->nr_build_ids - 1];
		bi->misc = misc;
		bi->pid = (int32_t)le_get_u32(p + pos + 8);
		memcpy(bi->id, p + pos + 12, PERFDATA_BUILD_ID_MAX);
		bi->size = PERFDATA_BUILD_ID_MAX;
		if (misc & PD_MISC_BUILD_ID_SIZE) {
			bi->size = p[pos + 32];
			if (bi->size > PERFDATA_BUILD_ID_MAX)
				return bad(r, ERR_FORMAT, off + pos,
				    "build-id size %u exceeds %d", bi->size,
				    PERFDATA_BUILD_ID_MAX);
		}
		bi->filename = strndup((const char *)p + pos + PD_BUILD_ID_FIXED,
		    bsize - PD_BUILD_ID_FIXED);
		if (bi->filename == NULL)
			return nomem(r, "build-id file name");
		pos += bsize;
	}
	return 0;
}

/* 1 if an AUXTRACE record read from the file itself starts at off. */
static int
auxtrace_at(const struct perfdata *pd, uint64_t off)
{
	size_t lo = 0, hi = pd->nr_auxtrace;

	/* records from the file come first, in file order */
	while (hi > 0 && pd->auxtrace[hi - 1].in_compressed)
		hi--;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pd->auxtrace[mid].file_offset == off)
			return 1;
		if (pd->auxtrace[mid].file_offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Counts (and warns about) index entries that point at no AUXTRACE. */
static void
check_index(struct rd *r, const uint8_t *p, uint64_t off)
{
	struct perfdata *pd = r->pd;

	for (uint64_t i = 0; i < pd->nr_auxtrace_index; i++) {
		uint64_t at = le_get_u64(p + 16 * i);

		if (auxtrace_at(pd, at))
			continue;
		if (pd->nr_bad_index++ == 0)
			warn(r, off + 16 * i, "HEADER_AUXTRACE entry points at "
			    "offset %llu, where no AUXTRACE record starts",
			    (unsigned long long)at);
	}
}

static const char *
feature_name(int bit)
{
	static const char *const names[] = {
		"RESERVED", "TRACING_DATA", "BUILD_ID", "HOSTNAME",
		"OSRELEASE", "VERSION", "ARCH", "NRCPUS", "CPUDESC", "CPUID",
		"TOTAL_MEM", "CMDLINE", "EVENT_DESC", "CPU_TOPOLOGY",
		"NUMA_TOPOLOGY", "BRANCH_STACK", "PMU_MAPPINGS", "GROUP_DESC",
		"AUXTRACE", "STAT", "CACHE", "SAMPLE_TIME", "MEM_TOPOLOGY",
		"CLOCKID", "DIR_FORMAT", "BPF_PROG_INFO", "BPF_BTF",
		"COMPRESSED", "CPU_PMU_CAPS", "CLOCK_DATA", "HYBRID_TOPOLOGY",
		"PMU_CAPS",
	};

	return bit >= 0 && bit < PERFDATA_FEAT_KNOWN_MAX ? names[bit] :
	    "unknown";
}

static int
parse_feature(struct rd *r, int bit, const uint8_t *p, uint64_t size,
    uint64_t off)
{
	struct perfdata *pd = r->pd;

	switch (bit) {
	case PERFDATA_FEAT_BUILD_ID:
		return feat_build_id(r, p, size, off);
	case PERFDATA_FEAT_HOSTNAME:
		return feat_string(r, p, size, off, &pd->hostname);
	case PERFDATA_FEAT_OSRELEASE:
		return feat_string(r, p, size, off, &pd->osrelease);
	case PERFDATA_FEAT_VERSION:
		return feat_string(r, p, size, off, &pd->version);
	case PERFDATA_FEAT_ARCH:
		return feat_string(r, p, size, off, &pd->arch);
	case PERFDATA_FEAT_CPUDESC:
		return feat_string(r, p, size, off, &pd->cpudesc);
	case PERFDATA_FEAT_CPUID:
		return feat_string(r, p, size, off, &pd->cpuid);
	case PERFDATA_FEAT_NRCPUS:
		if (size < 8)
			return bad(r, ERR_TRUNCATED, off,
			    "NRCPUS feature of %llu bytes",
			    (unsigned long long)size);
		pd->nr_cpus_avail = le_get_u32(p);
		pd->nr_cpus_online = le_get_u32(p + 4);
		return 0;
	case PERFDATA_FEAT_AUXTRACE:
		if (size < 8)
			return bad(r, ERR_TRUNCATED, off,
			    "AUXTRACE feature of %llu bytes",
			    (unsigned long long)size);
		pd->nr_auxtrace_index = le_get_u64(p);
		if (pd->nr_auxtrace_index > (size - 8) / 16)
			return bad(r, ERR_TRUNCATED, off,
			    "AUXTRACE index of %llu entries does not fit its "
			    "%llu bytes",
			    (unsigned long long)pd->nr_auxtrace_index,
			    (unsigned long long)size);
		check_index(r, p + 8, off + 8);
		return 0;
	default:
		if (bit >= PERFDATA_FEAT_KNOWN_MAX) {
			pd->nr_unknown_features++;
			warn(r, off, "unknown feature %d skipped", bit);
		}
		return 0;
	}
}

static int
parse_features(struct rd *r, const uint8_t *b, uint64_t len)
{
	struct perfdata *pd = r->pd;
	uint64_t table = pd->data_offset + pd->data_size;
	unsigned nr = 0, k = 0;

	for (int i = 0; i < 4; i++) {
		pd->features[i] = le_get_u64(b + 72 + 8 * i);
		nr += (unsigned)__builtin_popcountll(pd->features[i]);
	}
	if (nr == 0)
		return 0;
	if (!in_bounds(table, (uint64_t)nr * 16, len))
		return bad(r, ERR_TRUNCATED, table,
		    "feature table of %u entries runs past the end of the "
		    "%llu-byte file", nr, (unsigned long long)len);
	for (int bit = 0; bit < 256; bit++) {
		uint64_t foff, fsize;
		int err;

		if (!(pd->features[bit / 64] & (1ULL << (bit % 64))))
			continue;
		foff = le_get_u64(b + table + 16 * k);
		fsize = le_get_u64(b + table + 16 * k + 8);
		if (!in_bounds(foff, fsize, len))
			return bad(r, ERR_TRUNCATED, table + 16 * k,
			    "feature %d (%s) section {offset %llu, size %llu} "
			    "runs past the end of the %llu-byte file", bit,
			    feature_name(bit), (unsigned long long)foff,
			    (unsigned long long)fsize, (unsigned long long)len);
		err = parse_feature(r, bit, b + foff, fsize, foff);
		if (err < 0)
			return error_prefix(r->e, "feature %s", feature_name(bit));
		k++;
	}
	return 0;
}

/* ---- queues ------------------------------------------------------ */

static int
build_queues(struct rd *r)
{
	struct perfdata *pd = r->pd;

	for (size_t i = 0; i < pd->nr_auxtrace; i++) {
		const struct perfdata_auxtrace *a = &pd->auxtrace[i];
		struct perfdata_queue *q = NULL;
		size_t j;
		int err;

		for (j = 0; j < pd->nr_queues; j++)
			if (pd->queues[j].idx == a->idx)
				break;
		if (j == pd->nr_queues) {
			if ((err = APPEND(r, pd->queues, pd->nr_queues,
			    "queues")) < 0)
				return err;
			q = &pd->queues[j];
			q->idx = a->idx;
			q->tid = a->tid;
			q->cpu = a->cpu;
		}
		q = &pd->queues[j];
		if (q->tid != a->tid || q->cpu != a->cpu)
			warn(r, a->file_offset, "AUXTRACE queue %u conflict: "
			    "tid/cpu %d/%d after %d/%d", a->idx, (int)a->tid,
			    (int)a->cpu, (int)q->tid, (int)q->cpu);
		if ((err = APPEND(r, q->chunk, q->nr_chunks, "queue chunks")) < 0)
			return err;
		q->chunk[q->nr_chunks - 1] = i;
		q->total_size += a->size;
	}
	/* insertion sort by idx: queues are few */
	for (size_t i = 1; i < pd->nr_queues; i++) {
		struct perfdata_queue t = pd->queues[i];
		size_t j = i;

		while (j > 0 && pd->queues[j - 1].idx > t.idx) {
			pd->queues[j] = pd->queues[j - 1];
			j--;
		}
		pd->queues[j] = t;
	}
	return 0;
}

/* ---- entry points ------------------------------------------------ */

static int
parse_all(struct rd *r, const uint8_t *b, uint64_t len)
{
	int err;

	if ((err = parse_magic(r, b, len)) < 0 ||
	    (err = parse_attrs(r, b, len)) < 0 ||
	    (err = parse_data(r, b, len)) < 0 ||
	    (err = parse_features(r, b, len)) < 0)
		return err;
	return build_queues(r);
}

static int
parse(struct perfdata **out, const void *buf, size_t len, const char *name,
    void *map, struct error *e)
{
	struct perfdata *pd = calloc(1, sizeof(*pd));
	struct rd r = { 0 };
	int err;

	*out = NULL;
	if (pd == NULL) {
		if (map != NULL)
			munmap(map, len);
		return error_set(e, ERR_NOMEM, "%s: perfdata", name);
	}
	pd->map = map;
	pd->map_len = len;
	pd->file_size = len;
	pd->path = strdup(name);
	if (pd->path == NULL) {
		perfdata_free(pd);
		return error_set(e, ERR_NOMEM, "%s: perfdata", name);
	}
	r.pd = pd;
	r.name = name;
	r.e = e;
	r.decomp_limit = (uint64_t)len * PD_DECOMP_RATIO;
	if (r.decomp_limit < PD_DECOMP_FLOOR)
		r.decomp_limit = PD_DECOMP_FLOOR;
	err = parse_all(&r, buf, len);
	ZSTD_freeDStream(r.zds);
	free(r.decomp.p);
	free(r.ids);
	if (err < 0) {
		perfdata_free(pd);
		return err;
	}
	*out = pd;
	return 0;
}

int
perfdata_read_buffer(struct perfdata **out, const void *buf, size_t len,
    const char *name, struct error *e)
{
	return parse(out, buf, len, name, NULL, e);
}

int
perfdata_read(struct perfdata **out, const char *path, struct error *e)
{
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int saved = errno;
		int rc = error_set_errno(e, saved, "%s: open", path);

		if (saved == ENOENT) {
			e->code = ERR_NOTFOUND;
			rc = -ERR_NOTFOUND;
		}
		return rc;
	}
	return perfdata_read_fd(out, fd, path, e);
}

int
perfdata_read_fd(struct perfdata **out, int fd, const char *path,
    struct error *e)
{
	struct stat st;
	void *m;

	*out = NULL;
	if (fstat(fd, &st) < 0) {
		int rc = error_set_errno(e, errno, "%s: stat", path);

		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error_set(e, ERR_FORMAT, "%s: not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return error_set(e, ERR_TRUNCATED,
		    "%s: file offset 0: empty file", path);
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return error_set_errno(e, errno, "%s: mmap", path);
	return parse(out, m, (size_t)st.st_size, path, m, e);
}

void
perfdata_free(struct perfdata *pd)
{
	if (pd == NULL)
		return;
	for (size_t i = 0; i < pd->nr_attrs; i++)
		free(pd->attrs[i].ids);
	free(pd->attrs);
	free(pd->pt.filter);
	free(pd->mmaps);
	free(pd->comms);
	free(pd->tasks);
	free(pd->itrace_starts);
	free(pd->auxs);
	free(pd->switches);
	free(pd->auxtrace);
	for (size_t i = 0; i < pd->nr_queues; i++)
		free(pd->queues[i].chunk);
	free(pd->queues);
	for (size_t i = 0; i < pd->nr_build_ids; i++)
		free(pd->build_ids[i].filename);
	free(pd->build_ids);
	free(pd->hostname);
	free(pd->osrelease);
	free(pd->version);
	free(pd->arch);
	free(pd->cpudesc);
	free(pd->cpuid);
	for (size_t i = 0; i < pd->nr_owned; i++)
		free(pd->owned[i]);
	free(pd->owned);
	if (pd->map != NULL)
		munmap(pd->map, pd->map_len);
	free(pd->path);
	free(pd);
}

const struct perfdata_queue *
perfdata_queue_by_idx(const struct perfdata *pd, uint32_t idx)
{
	for (size_t i = 0; i < pd->nr_queues; i++)
		if (pd->queues[i].idx == idx)
			return &pd->queues[i];
	return NULL;
}

int
perfdata_queue_data(const struct perfdata *pd, const struct perfdata_queue *q,
    uint8_t **buf, size_t *len, struct error *e)
{
	uint8_t *b;
	size_t pos = 0;

	*buf = NULL;
	*len = 0;
	if (q->total_size > SIZE_MAX - 1)
		return error_set(e, ERR_NOMEM, "%s: queue %u", pd->path, q->idx);
	b = malloc(q->total_size ? (size_t)q->total_size : 1);
	if (b == NULL)
		return error_set(e, ERR_NOMEM, "%s: queue %u of %llu bytes",
		    pd->path, q->idx, (unsigned long long)q->total_size);
	for (size_t i = 0; i < q->nr_chunks; i++) {
		const struct perfdata_auxtrace *a = &pd->auxtrace[q->chunk[i]];

		memcpy(b + pos, a->data, a->size);
		pos += a->size;
	}
	*buf = b;
	*len = pos;
	return 0;
}

uint64_t
perfdata_tsc_to_perf_time(uint64_t tsc, const struct perfdata_time_conv *tc)
{
	uint64_t shift = tc->time_shift, quot, rem;

	if (tc->cap_user_time_short)
		tsc = tc->time_cycles + ((tsc - tc->time_cycles) & tc->time_mask);
	if (shift >= 64)
		return tc->time_zero;
	quot = tsc >> shift;
	rem = tsc & ((1ULL << shift) - 1);
	return tc->time_zero + quot * tc->time_mult +
	    ((rem * tc->time_mult) >> shift);
}

int
perfdata_pt_timing(const struct perfdata *pd, struct perfdata_pt_timing *out,
    struct error *e)
{
	const uint64_t *p = pd->pt.priv;
	const struct perfdata_attr *a = NULL;
	uint64_t mask;

	memset(out, 0, sizeof(*out));
	if (!pd->has_pt_info)
		return error_set(e, ERR_NOTFOUND,
		    "%s: no intel_pt AUXTRACE_INFO record", pd->path);
	for (size_t i = 0; i < pd->nr_attrs && a == NULL; i++)
		if (pd->attrs[i].type == p[PERFDATA_PT_PMU_TYPE])
			a = &pd->attrs[i];
	if (a == NULL)
		return error_set(e, ERR_NOTFOUND,
		    "%s: no attr of the intel_pt PMU type %llu", pd->path,
		    (unsigned long long)p[PERFDATA_PT_PMU_TYPE]);
	out->config = a->config;
	mask = p[PERFDATA_PT_MTC_FREQ_BITS];
	if (mask != 0)
		out->mtc_freq = (unsigned)((a->config & mask) >>
		    __builtin_ctzll(mask));
	out->tsc_ctc_n = (uint32_t)p[PERFDATA_PT_TSC_CTC_N];
	out->tsc_ctc_d = (uint32_t)p[PERFDATA_PT_TSC_CTC_D];
	out->max_nonturbo_ratio = (uint32_t)p[PERFDATA_PT_MAX_NONTURBO_RATIO];
	out->tsc = (a->config & p[PERFDATA_PT_TSC_BIT]) != 0;
	out->mtc = (a->config & p[PERFDATA_PT_MTC_BIT]) != 0;
	out->cyc = (a->config & p[PERFDATA_PT_CYC_BIT]) != 0;
	out->noretcomp = (a->config & p[PERFDATA_PT_NORETCOMP_BIT]) != 0;
	out->per_cpu = p[PERFDATA_PT_PER_CPU_MMAPS] != 0;
	return 0;
}
