/*
 * spanidx: see spanidx.h.  The host is little endian (x86-64 is the only
 * target of Intel PT), so values are written and read as they lie in
 * memory; the reader copies each value out with memcpy, never through a
 * misaligned pointer, and every packed column is followed by 8 bytes of
 * slack so that the last row's 8-byte load stays inside the column.
 *
 * Header (128 bytes): magic[8], version u32, header size u32, rows u64,
 * threads u64, functions u64, string bytes u64, columns u32, 0 u32,
 * then the offsets of the column directory, the function table, the
 * thread table and the string table, the file's size, the XXH64 of bytes
 * [128, size), the number and the offset of the call sites, and the
 * XXH64 of bytes [0, 120).
 * Directory entry (32 bytes): column u32, bits u32, base u64, offset u64,
 * bytes u64.
 */
#include "base/fdio.h"
#include "base/le.h"
#include "base/xxh64.h"
#include "fmt/spanidx.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_ENTRY 32
#define MAX_PACKED_BITS 56	/* wider columns are stored as 64 bits */
#define SLACK 8
/* Depths are stored plus this, so that a column of negative and positive
 * depths has one unsigned range. */
#define DEPTH_BIAS 0x80000000ull

#define H_VERSION 8
#define H_HSIZE 12
#define H_ROWS 16
#define H_THREADS 24
#define H_FUNCS 32
#define H_STRTAB_SIZE 40
#define H_NCOLS 48
#define H_DIR_OFF 56
#define H_FUNCS_OFF 64
#define H_THREADS_OFF 72
#define H_STRTAB_OFF 80
#define H_FILE_SIZE 88
#define H_BODY_SUM 96
#define H_SITES 104
#define H_SITES_OFF 112
#define H_HEAD_SUM 120

static const char *const col_names[SPANIDX_NCOLS] = {
	"id", "parent", "tid", "pid", "depth", "fn", "raw", "module",
	"call_site", "entry", "start_ns", "end_ns", "self_ns", "insns",
	"self_insns", "start", "end", "flags",
};

static const char *const pcol_names[SPANIDX_NPCOLS] = {
	"id", "parent", "tid", "pid", "depth", "function", "call_site",
	"start_ns", "dur_ns", "self_ns", "insns", "self_insns", "start",
	"end", "flags",
};

const char *
spanidx_col_name(unsigned col)
{
	return col < SPANIDX_NCOLS ? col_names[col] : "unknown";
}

/* ----------------------------------------------------------------- */
/* Writer */

struct str_slot {
	char *s;
	uint32_t off;
};

struct func {
	uint32_t fn, raw, module;
	uint64_t entry;
};

struct thread {
	uint32_t tid, pid;
	uint64_t spans;
};

#define COL_BUF 65536		/* bytes buffered per column */
#define RECENT 64		/* recently interned strings, by address */

/* One column on its way: zigzag deltas as LEB128 in a temporary file. */
struct spool {
	FILE *f;
	uint8_t *buf;
	size_t n;
	uint64_t prev, min, max;
};

struct spanidx_writer {
	struct spool col[SPANIDX_NPCOLS];
	/*
	 * The same few names come row after row: an address seen lately
	 * gives its offset without hashing, once strcmp with the table's
	 * copy says the string there is still the same.
	 */
	struct {
		const char *s;
		uint32_t off;
	} recent[RECENT];
	uint64_t rows;
	char *strtab;
	size_t strtab_len, strtab_cap;
	struct str_slot *slot;
	size_t n_slot, cap_slot;	/* open addressing, cap a power of 2 */
	struct func *func;
	size_t n_func, cap_func;
	uint32_t *fslot;		/* function numbers + 1, 0 free */
	size_t cap_fslot;
	struct thread *thread;
	size_t n_thread, cap_thread, last_thread;
	uint64_t *site;			/* distinct call sites */
	size_t n_site, cap_site;
	uint32_t *sslot;		/* site numbers + 1, 0 free */
	size_t cap_sslot;
	uint64_t last_site_addr, last_site;
};

void
spanidx_writer_free(struct spanidx_writer *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < SPANIDX_NPCOLS; i++) {
		if (w->col[i].f != NULL)
			fclose(w->col[i].f);
		free(w->col[i].buf);
	}
	for (size_t i = 0; i < w->cap_slot; i++)
		free(w->slot[i].s);
	free(w->slot);
	free(w->strtab);
	free(w->func);
	free(w->fslot);
	free(w->thread);
	free(w->site);
	free(w->sslot);
	free(w);
}

int
spanidx_writer_new(struct spanidx_writer **out, struct error *e)
{
	struct spanidx_writer *w;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "span index");
	for (int i = 0; i < SPANIDX_NPCOLS; i++) {
		if ((w->col[i].f = tmpfile()) == NULL) {
			int err = errno;

			spanidx_writer_free(w);
			return error_set_errno(e, err, "span index column");
		}
		if ((w->col[i].buf = malloc(COL_BUF)) == NULL) {
			spanidx_writer_free(w);
			return error_set(e, ERR_NOMEM, "span index");
		}
		w->col[i].min = UINT64_MAX;
	}
	w->cap_slot = 1024;
	w->slot = calloc(w->cap_slot, sizeof(*w->slot));
	w->cap_fslot = 1024;
	w->fslot = calloc(w->cap_fslot, sizeof(*w->fslot));
	w->cap_sslot = 1024;
	w->sslot = calloc(w->cap_sslot, sizeof(*w->sslot));
	w->last_site_addr = UINT64_MAX;
	w->strtab_cap = 4096;
	w->strtab = malloc(w->strtab_cap);
	if (w->slot == NULL || w->fslot == NULL || w->sslot == NULL ||
	    w->strtab == NULL) {
		spanidx_writer_free(w);
		return error_set(e, ERR_NOMEM, "span index");
	}
	w->strtab[0] = '\0';
	w->strtab_len = 1;
	*out = w;
	return 0;
}

static size_t
str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static int
rehash(struct spanidx_writer *w)
{
	size_t cap = w->cap_slot * 2;
	struct str_slot *ns = calloc(cap, sizeof(*ns));

	if (ns == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < w->cap_slot; i++) {
		size_t j;

		if (w->slot[i].s == NULL)
			continue;
		for (j = str_hash(w->slot[i].s) & (cap - 1); ns[j].s != NULL;
		    j = (j + 1) & (cap - 1))
			;
		ns[j] = w->slot[i];
	}
	free(w->slot);
	w->slot = ns;
	w->cap_slot = cap;
	return 0;
}

/* The offset of s in the string table, adding it once. */
static int
intern(struct spanidx_writer *w, const char *s, uint32_t *off)
{
	size_t j, len, r;
	char *grown;

	*off = 0;
	if (s == NULL || *s == '\0')
		return 0;
	r = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 11) % RECENT;
	if (w->recent[r].s == s &&
	    strcmp(w->strtab + w->recent[r].off, s) == 0) {
		*off = w->recent[r].off;
		return 0;
	}
	for (j = str_hash(s) & (w->cap_slot - 1); w->slot[j].s != NULL;
	    j = (j + 1) & (w->cap_slot - 1))
		if (strcmp(w->slot[j].s, s) == 0) {
			*off = w->slot[j].off;
			w->recent[r].s = s;
			w->recent[r].off = *off;
			return 0;
		}
	len = strlen(s) + 1;
	if (w->strtab_len + len > UINT32_MAX)
		return -ERR_RANGE;
	while (w->strtab_len + len > w->strtab_cap) {
		if ((grown = realloc(w->strtab, w->strtab_cap * 2)) == NULL)
			return -ERR_NOMEM;
		w->strtab = grown;
		w->strtab_cap *= 2;
	}
	if ((w->slot[j].s = strdup(s)) == NULL)
		return -ERR_NOMEM;
	w->slot[j].off = (uint32_t)w->strtab_len;
	memcpy(w->strtab + w->strtab_len, s, len);
	*off = (uint32_t)w->strtab_len;
	w->strtab_len += len;
	w->recent[r].s = s;
	w->recent[r].off = *off;
	if (++w->n_slot * 2 > w->cap_slot)
		return rehash(w);
	return 0;
}

static size_t
func_hash(const struct func *f)
{
	uint64_t h = f->fn * 0x9E3779B97F4A7C15ull;

	h ^= (h >> 29) + f->raw * 0xC2B2AE3D27D4EB4Full;
	h ^= (h >> 31) + f->module * 0x165667B19E3779F9ull;
	h ^= (h >> 27) + f->entry * 0x85EBCA77C2B2AE63ull;
	return (size_t)(h ^ h >> 32);
}

static int
func_eq(const struct func *a, const struct func *b)
{
	return a->fn == b->fn && a->raw == b->raw && a->module == b->module &&
	    a->entry == b->entry;
}

/*
 * Doubles the slot table *slots (*cap slots, each an entry's number + 1,
 * 0 empty) of a table of n entries, placing entry i by hash_of(w, i).
 */
static int
slots_grow(const struct spanidx_writer *w, uint32_t **slots, size_t *cap,
    size_t n, size_t (*hash_of)(const struct spanidx_writer *, size_t))
{
	size_t ncap = *cap * 2, j;
	uint32_t *ns = calloc(ncap, sizeof(*ns));

	if (ns == NULL)
		return -ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		for (j = hash_of(w, i) & (ncap - 1); ns[j] != 0;
		    j = (j + 1) & (ncap - 1))
			;
		ns[j] = (uint32_t)i + 1;
	}
	free(*slots);
	*slots = ns;
	*cap = ncap;
	return 0;
}

static size_t
func_hash_of(const struct spanidx_writer *w, size_t i)
{
	return func_hash(&w->func[i]);
}

/* The number of function f in the table, adding it once. */
static int
func_number(struct spanidx_writer *w, const struct func *f, uint64_t *num)
{
	size_t j, mask = w->cap_fslot - 1;

	for (j = func_hash(f) & mask; w->fslot[j] != 0; j = (j + 1) & mask)
		if (func_eq(&w->func[w->fslot[j] - 1], f)) {
			*num = w->fslot[j] - 1;
			return 0;
		}
	if (w->n_func == UINT32_MAX - 1)
		return -ERR_RANGE;
	if (w->n_func == w->cap_func) {
		size_t cap = w->cap_func ? w->cap_func * 2 : 256;
		struct func *n = realloc(w->func, cap * sizeof(*n));

		if (n == NULL)
			return -ERR_NOMEM;
		w->func = n;
		w->cap_func = cap;
	}
	w->func[w->n_func] = *f;
	*num = w->n_func++;
	w->fslot[j] = (uint32_t)w->n_func;
	if (w->n_func * 2 > w->cap_fslot)
		return slots_grow(w, &w->fslot, &w->cap_fslot, w->n_func,
		    func_hash_of);
	return 0;
}

static size_t
site_hash(uint64_t a)
{
	a *= 0x9E3779B97F4A7C15ull;
	return (size_t)(a ^ a >> 29);
}

static size_t
site_hash_of(const struct spanidx_writer *w, size_t i)
{
	return site_hash(w->site[i]);
}

/* The number of call site a in the table, adding it once. */
static int
site_number(struct spanidx_writer *w, uint64_t a, uint64_t *num)
{
	size_t j, mask = w->cap_sslot - 1;
	int rc;

	if (a == w->last_site_addr) {
		*num = w->last_site;
		return 0;
	}
	for (j = site_hash(a) & mask; w->sslot[j] != 0; j = (j + 1) & mask)
		if (w->site[w->sslot[j] - 1] == a) {
			*num = w->sslot[j] - 1;
			goto found;
		}
	if (w->n_site == UINT32_MAX - 1)
		return -ERR_RANGE;
	if (w->n_site == w->cap_site) {
		size_t cap = w->cap_site ? w->cap_site * 2 : 256;
		uint64_t *n = realloc(w->site, cap * sizeof(*n));

		if (n == NULL)
			return -ERR_NOMEM;
		w->site = n;
		w->cap_site = cap;
	}
	w->site[w->n_site] = a;
	*num = w->n_site++;
	w->sslot[j] = (uint32_t)w->n_site;
	if (w->n_site * 2 > w->cap_sslot &&
	    (rc = slots_grow(w, &w->sslot, &w->cap_sslot, w->n_site,
	    site_hash_of)) < 0)
		return rc;
found:
	w->last_site_addr = a;
	w->last_site = *num;
	return 0;
}

/* Counts a span of thread tid (threads are few: a scan from the last). */
static int
thread_count(struct spanidx_writer *w, uint32_t tid, uint32_t pid)
{
	size_t i;

	if (w->n_thread > 0 && w->thread[w->last_thread].tid == tid &&
	    w->thread[w->last_thread].pid == pid) {
		w->thread[w->last_thread].spans++;
		return 0;
	}
	for (i = 0; i < w->n_thread; i++)
		if (w->thread[i].tid == tid && w->thread[i].pid == pid)
			break;
	if (i == w->n_thread) {
		if (w->n_thread == w->cap_thread) {
			size_t cap = w->cap_thread ? w->cap_thread * 2 : 16;
			struct thread *n = realloc(w->thread, cap * sizeof(*n));

			if (n == NULL)
				return -ERR_NOMEM;
			w->thread = n;
			w->cap_thread = cap;
		}
		w->thread[i].tid = tid;
		w->thread[i].pid = pid;
		w->thread[i].spans = 0;
		w->n_thread++;
	}
	w->thread[i].spans++;
	w->last_thread = i;
	return 0;
}

/* Writes column c's buffered bytes to its file; 0, or 1 on error. */
static int
spool_flush(struct spool *s)
{
	size_t n = s->n;

	s->n = 0;
	return n > 0 && fwrite(s->buf, 1, n, s->f) != n;
}

static int
spool_put(struct spool *s, uint64_t v)
{
	uint64_t d = v - s->prev;
	uint64_t z = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
	int bad = 0;

	if (s->n + 10 > COL_BUF)
		bad = spool_flush(s);
	do {
		uint8_t b = z & 0x7f;

		z >>= 7;
		s->buf[s->n++] = (uint8_t)(b | (z ? 0x80 : 0));
	} while (z);
	s->prev = v;
	if (v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	return bad;
}

/*
 * The rows the reader refuses, refused here first: a file ptspans wrote
 * must open.  Returns 0 or -ERR_RANGE with e naming the span.
 */
static int
row_check(const struct spanidx_row *r, struct error *e)
{
	uint64_t dur = r->end_ns - r->start_ns;

	if (r->end_ns < r->start_ns)
		return error_set(e, ERR_RANGE, "span %" PRIu64 " ends at %"
		    PRIu64 " ns, before it starts at %" PRIu64 " ns", r->id,
		    r->end_ns, r->start_ns);
	/*
	 * Not parent < id: a caller found below a wrapped ring's bottom is
	 * numbered when its callee returns into it, after the callee.
	 */
	if (r->parent != 0 && r->parent == r->id)
		return error_set(e, ERR_RANGE, "span %" PRIu64 " is its own "
		    "parent", r->id);
	if (r->self_ns > dur || r->self_insns > r->insns)
		return error_set(e, ERR_RANGE, "span %" PRIu64 ": self %" PRIu64
		    " ns and %" PRIu64 " instructions exceed its %" PRIu64
		    " ns and %" PRIu64, r->id, r->self_ns, r->self_insns, dur,
		    r->insns);
	if (r->start >= SPANIDX_START_NR || r->end >= SPANIDX_END_NR ||
	    (r->flags & ~SPANIDX_F_ALL) != 0)
		return error_set(e, ERR_RANGE, "span %" PRIu64 ": unknown "
		    "start %u, end %u or flags %#x", r->id, r->start, r->end,
		    r->flags);
	return 0;
}

int
spanidx_add(struct spanidx_writer *w, const struct spanidx_row *r,
    struct error *e)
{
	struct func f;
	uint64_t num, site;
	int rc, bad = 0;

	if ((rc = row_check(r, e)) < 0)
		return rc;
	if ((rc = intern(w, r->fn, &f.fn)) < 0 ||
	    (rc = intern(w, r->raw, &f.raw)) < 0 ||
	    (rc = intern(w, r->module, &f.module)) < 0)
		return error_set(e, -rc, "span index strings");
	f.entry = r->entry;
	if ((rc = func_number(w, &f, &num)) < 0 ||
	    (rc = site_number(w, r->call_site, &site)) < 0 ||
	    (rc = thread_count(w, r->tid, r->pid)) < 0)
		return error_set(e, -rc, "span index tables");
	bad |= spool_put(&w->col[SPANIDX_P_ID], r->id);
	bad |= spool_put(&w->col[SPANIDX_P_PARENT], r->parent);
	bad |= spool_put(&w->col[SPANIDX_P_TID], r->tid);
	bad |= spool_put(&w->col[SPANIDX_P_PID], r->pid);
	bad |= spool_put(&w->col[SPANIDX_P_DEPTH],
	    (uint64_t)((int64_t)r->depth + DEPTH_BIAS));
	bad |= spool_put(&w->col[SPANIDX_P_FUNC], num);
	bad |= spool_put(&w->col[SPANIDX_P_CALL_SITE], site);
	bad |= spool_put(&w->col[SPANIDX_P_START_NS], r->start_ns);
	bad |= spool_put(&w->col[SPANIDX_P_DUR_NS], r->end_ns - r->start_ns);
	bad |= spool_put(&w->col[SPANIDX_P_SELF_NS], r->self_ns);
	bad |= spool_put(&w->col[SPANIDX_P_INSNS], r->insns);
	bad |= spool_put(&w->col[SPANIDX_P_SELF_INSNS], r->self_insns);
	bad |= spool_put(&w->col[SPANIDX_P_START], r->start);
	bad |= spool_put(&w->col[SPANIDX_P_END], r->end);
	bad |= spool_put(&w->col[SPANIDX_P_FLAGS], r->flags);
	if (bad)
		return error_set_errno(e, errno, "span index column");
	w->rows++;
	return 0;
}

/* The file as it is written: a buffer, its offset and the body's hash. */
struct out {
	int fd;
	uint8_t *buf;
	size_t n;
	uint64_t off;
	struct xxh64 sum;
	int err;
};

#define OUT_BUF (1 << 20)

static int
out_flush(struct out *o)
{
	if (o->n > 0 && fdio_write_full(o->fd, o->buf, o->n) < 0) {
		o->err = errno ? errno : EIO;
		return -1;
	}
	o->n = 0;
	return 0;
}

static int
out_put(struct out *o, const void *p, size_t len)
{
	const uint8_t *b = p;

	xxh64_update(&o->sum, p, len);
	o->off += len;
	while (len > 0) {
		size_t take = OUT_BUF - o->n < len ? OUT_BUF - o->n : len;

		memcpy(o->buf + o->n, b, take);
		o->n += take;
		b += take;
		len -= take;
		if (o->n == OUT_BUF && out_flush(o) < 0)
			return -1;
	}
	return 0;
}

static int
out_zero(struct out *o, uint64_t n)
{
	static const uint8_t zero[64];

	while (n > 0) {
		size_t take = n < sizeof(zero) ? (size_t)n : sizeof(zero);

		if (out_put(o, zero, take) < 0)
			return -1;
		n -= take;
	}
	return 0;
}

static uint64_t
align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static unsigned
col_bits(const struct spool *s, uint64_t rows)
{
	uint64_t range;
	unsigned bits;

	if (rows == 0 || (range = s->max - s->min) == 0)
		return 0;
	bits = 64 - (unsigned)__builtin_clzll(range);
	return bits > MAX_PACKED_BITS ? 64 : bits;
}

static uint64_t
col_bytes(uint64_t rows, unsigned bits)
{
	return (rows * bits + 7) / 8 + SLACK;
}

/* Column c read back from its spool and packed into o. */
static int
pack_col(struct spanidx_writer *w, int c, unsigned bits, struct out *o)
{
	struct spool *s = &w->col[c];
	uint8_t in[65536];
	size_t n = 0, at = 0;
	uint64_t v = 0, acc = 0, mask = bits == 64 ? UINT64_MAX :
	    (1ull << bits) - 1;
	unsigned nacc = 0;
	uint8_t b;

	if (spool_flush(s) != 0 || fflush(s->f) != 0 ||
	    fseek(s->f, 0, SEEK_SET) != 0)
		return -1;
	for (uint64_t r = 0; r < w->rows; r++) {
		uint64_t z = 0;
		unsigned shift = 0;

		do {
			if (at == n) {
				n = fread(in, 1, sizeof(in), s->f);
				at = 0;
				if (n == 0) {
					errno = ferror(s->f) ? errno : EIO;
					return -1;
				}
			}
			b = in[at++];
			z |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while ((b & 0x80) && shift < 70);
		v += (z >> 1) ^ (0 - (z & 1));
		if (bits == 64) {
			uint8_t le[8];

			le_put_u64(le, v - s->min);
			if (out_put(o, le, 8) < 0)
				return -1;
			continue;
		}
		acc |= ((v - s->min) & mask) << nacc;
		nacc += bits;
		while (nacc >= 8) {
			b = (uint8_t)acc;
			if (out_put(o, &b, 1) < 0)
				return -1;
			acc >>= 8;
			nacc -= 8;
		}
	}
	if (nacc > 0) {
		b = (uint8_t)acc;
		if (out_put(o, &b, 1) < 0)
			return -1;
	}
	return out_zero(o, SLACK);
}

static int
write_index(struct spanidx_writer *w, struct out *o)
{
	uint8_t hdr[SPANIDX_HEADER_SIZE] = { 0 };
	uint8_t dir[SPANIDX_NPCOLS * DIR_ENTRY] = { 0 };
	uint64_t off, funcs_off, threads_off, sites_off, strtab_off, size;
	uint64_t col_off[SPANIDX_NPCOLS];
	unsigned bits[SPANIDX_NPCOLS];

	funcs_off = SPANIDX_HEADER_SIZE + sizeof(dir);
	threads_off = funcs_off + w->n_func * SPANIDX_FUNC_SIZE;
	sites_off = threads_off + w->n_thread * SPANIDX_THREAD_SIZE;
	off = sites_off + w->n_site * 8;
	for (int i = 0; i < SPANIDX_NPCOLS; i++) {
		uint8_t *d = dir + i * DIR_ENTRY;

		bits[i] = col_bits(&w->col[i], w->rows);
		off = align8(off);
		col_off[i] = off;
		le_put_u32(d, (uint32_t)i);
		le_put_u32(d + 4, bits[i]);
		le_put_u64(d + 8, w->rows ? w->col[i].min : 0);
		le_put_u64(d + 16, off);
		le_put_u64(d + 24, col_bytes(w->rows, bits[i]));
		off += col_bytes(w->rows, bits[i]);
	}
	strtab_off = off;
	size = strtab_off + w->strtab_len;
	memcpy(hdr, SPANIDX_MAGIC, 8);
	le_put_u32(hdr + H_VERSION, SPANIDX_VERSION);
	le_put_u32(hdr + H_HSIZE, SPANIDX_HEADER_SIZE);
	le_put_u64(hdr + H_ROWS, w->rows);
	le_put_u64(hdr + H_THREADS, w->n_thread);
	le_put_u64(hdr + H_FUNCS, w->n_func);
	le_put_u64(hdr + H_STRTAB_SIZE, w->strtab_len);
	le_put_u32(hdr + H_NCOLS, SPANIDX_NPCOLS);
	le_put_u64(hdr + H_DIR_OFF, SPANIDX_HEADER_SIZE);
	le_put_u64(hdr + H_FUNCS_OFF, funcs_off);
	le_put_u64(hdr + H_THREADS_OFF, threads_off);
	le_put_u64(hdr + H_STRTAB_OFF, strtab_off);
	le_put_u64(hdr + H_FILE_SIZE, size);
	le_put_u64(hdr + H_SITES, w->n_site);
	le_put_u64(hdr + H_SITES_OFF, sites_off);
	/* The header goes last, once the body's hash is known: a hole. */
	o->off = SPANIDX_HEADER_SIZE;
	if (lseek(o->fd, SPANIDX_HEADER_SIZE, SEEK_SET) < 0) {
		o->err = errno;
		return -1;
	}
	if (out_put(o, dir, sizeof(dir)) < 0)
		return -1;
	for (size_t i = 0; i < w->n_func; i++) {
		uint8_t f[SPANIDX_FUNC_SIZE] = { 0 };

		le_put_u32(f, w->func[i].fn);
		le_put_u32(f + 4, w->func[i].raw);
		le_put_u32(f + 8, w->func[i].module);
		le_put_u64(f + 16, w->func[i].entry);
		if (out_put(o, f, sizeof(f)) < 0)
			return -1;
	}
	for (size_t i = 0; i < w->n_thread; i++) {
		uint8_t t[SPANIDX_THREAD_SIZE];

		le_put_u32(t, w->thread[i].tid);
		le_put_u32(t + 4, w->thread[i].pid);
		le_put_u64(t + 8, w->thread[i].spans);
		if (out_put(o, t, sizeof(t)) < 0)
			return -1;
	}
	for (size_t i = 0; i < w->n_site; i++) {
		uint8_t a[8];

		le_put_u64(a, w->site[i]);
		if (out_put(o, a, sizeof(a)) < 0)
			return -1;
	}
	for (int i = 0; i < SPANIDX_NPCOLS; i++)
		if (out_zero(o, col_off[i] - o->off) < 0 ||
		    pack_col(w, i, bits[i], o) < 0) {
			if (o->err == 0)
				o->err = errno ? errno : EIO;
			return -1;
		}
	if (out_put(o, w->strtab, w->strtab_len) < 0 || out_flush(o) < 0)
		return -1;
	le_put_u64(hdr + H_BODY_SUM, xxh64_digest(&o->sum));
	le_put_u64(hdr + H_HEAD_SUM, xxh64(hdr, H_HEAD_SUM, 0));
	if (pwrite(o->fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
		o->err = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

int
spanidx_writer_finish_fd(struct spanidx_writer *w, int fd, const char *name,
    struct error *e)
{
	struct out o = { .fd = fd };
	int rc = 0;

	xxh64_init(&o.sum, 0);
	if ((o.buf = malloc(OUT_BUF)) == NULL) {
		spanidx_writer_free(w);
		return error_set(e, ERR_NOMEM, "%s", name);
	}
	if (write_index(w, &o) < 0)
		rc = error_set_errno(e, o.err ? o.err : EIO, "%s", name);
	free(o.buf);
	spanidx_writer_free(w);
	return rc;
}

int
spanidx_writer_finish(struct spanidx_writer *w, const char *path,
    struct error *e)
{
	int fd, rc, err;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) < 0) {
		err = errno;
		spanidx_writer_free(w);
		return error_set_errno(e, err, "%s", path);
	}
	rc = spanidx_writer_finish_fd(w, fd, path, e);
	if (close(fd) != 0 && rc == 0)
		rc = error_set_errno(e, errno, "%s", path);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Reader */

/* Whether [off, off + n * each) lies inside a file of size bytes. */
static int
inside(uint64_t off, uint64_t n, uint64_t each, uint64_t size)
{
	return off <= size && (each == 0 || n <= (size - off) / each);
}

static int
check_cols(struct spanidx *ix, const char *name, struct error *e)
{
	const uint8_t *d = ix->base + le_get_u64(ix->base + H_DIR_OFF);

	for (unsigned c = 0; c < SPANIDX_NPCOLS; c++, d += DIR_ENTRY) {
		unsigned bits = le_get_u32(d + 4);
		uint64_t off = le_get_u64(d + 16), bytes = le_get_u64(d + 24);
		struct spanidx_packed *p = &ix->pc[c];

		if (le_get_u32(d) != c)
			return error_set(e, ERR_FORMAT, "%s: column %u is not "
			    "%s", name, c, pcol_names[c]);
		if (bits > 64 || (bits > MAX_PACKED_BITS && bits != 64))
			return error_set(e, ERR_FORMAT, "%s: column %s has %u "
			    "bits", name, pcol_names[c], bits);
		if (ix->rows > (UINT64_MAX - 7 - 8 * SLACK) / 64 ||
		    bytes != col_bytes(ix->rows, bits) ||
		    !inside(off, bytes, 1, ix->size))
			return error_set(e, ERR_FORMAT, "%s: column %s runs "
			    "past the end of the file", name, pcol_names[c]);
		p->data = ix->base + off;
		p->bits = bits;
		p->base = le_get_u64(d + 8);
		if (c == SPANIDX_P_DEPTH)
			p->base -= DEPTH_BIAS;	/* values are the depths */
		p->mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	}
	return 0;
}

/* The functions' strings and the threads' counts. */
static int
check_tables(struct spanidx *ix, const char *name, struct error *e)
{
	uint64_t sum = 0;

	for (uint64_t f = 0; f < ix->n_funcs; f++) {
		const uint8_t *p = ix->funcs + f * SPANIDX_FUNC_SIZE;

		for (int i = 0; i < 3; i++)
			if (le_get_u32(p + 4 * i) >= ix->strtab_size)
				return error_set(e, ERR_FORMAT, "%s: function "
				    "%" PRIu64 " names string %u, past the "
				    "table", name, f, le_get_u32(p + 4 * i));
	}
	for (uint64_t t = 0; t < ix->n_threads; t++)
		sum += le_get_u64(ix->threads + t * SPANIDX_THREAD_SIZE + 8);
	if (sum != ix->rows)
		return error_set(e, ERR_FORMAT, "%s: the thread table counts %"
		    PRIu64 " spans, the header %" PRIu64, name, sum, ix->rows);
	return 0;
}

/* The largest value column c can hold, or UINT64_MAX past the range. */
static uint64_t
col_max(const struct spanidx *ix, unsigned c)
{
	const struct spanidx_packed *p = &ix->pc[c];

	return p->base + p->mask < p->base ? UINT64_MAX : p->base + p->mask;
}

/*
 * Every row, as row_check had it (a file not written by us may lie).
 * What a column's range already rules out (a function number past the
 * table, an unknown cause, a tid past 32 bits) is checked once for the
 * column; the rest row by row.
 */
static int
check_rows(const struct spanidx *ix, const char *name, struct error *e)
{
	const struct spanidx_packed *depth = &ix->pc[SPANIDX_P_DEPTH];
	int funcs_ok = col_max(ix, SPANIDX_P_FUNC) < ix->n_funcs &&
	    col_max(ix, SPANIDX_P_CALL_SITE) < ix->n_sites;
	int causes_ok = col_max(ix, SPANIDX_P_START) < SPANIDX_START_NR &&
	    col_max(ix, SPANIDX_P_END) < SPANIDX_END_NR &&
	    col_max(ix, SPANIDX_P_FLAGS) <= SPANIDX_F_ALL;
	int ids_ok = col_max(ix, SPANIDX_P_TID) <= UINT32_MAX &&
	    col_max(ix, SPANIDX_P_PID) <= UINT32_MAX &&
	    depth->mask <= UINT32_MAX &&
	    (int64_t)depth->base == (int32_t)depth->base &&
	    (int64_t)(depth->base + depth->mask) ==
	    (int32_t)(depth->base + depth->mask) &&
	    (int64_t)depth->base <= (int64_t)(depth->base + depth->mask);
	int time_ok = col_max(ix, SPANIDX_P_START_NS) <= UINT64_MAX -
	    col_max(ix, SPANIDX_P_DUR_NS);

	for (uint64_t r = 0; r < ix->rows; r++) {
		uint64_t id = spanidx_pget(ix, SPANIDX_P_ID, r);
		uint64_t parent = spanidx_pget(ix, SPANIDX_P_PARENT, r);
		uint64_t dur = spanidx_pget(ix, SPANIDX_P_DUR_NS, r);
		const char *why = NULL;

		if (parent != 0 && parent == id)
			why = "it is its own parent";
		else if (spanidx_pget(ix, SPANIDX_P_SELF_NS, r) > dur ||
		    spanidx_pget(ix, SPANIDX_P_SELF_INSNS, r) >
		    spanidx_pget(ix, SPANIDX_P_INSNS, r))
			why = "its self figures exceed its totals";
		else if (!funcs_ok &&
		    spanidx_pget(ix, SPANIDX_P_FUNC, r) >= ix->n_funcs)
			why = "its function is not in the table";
		else if (!funcs_ok &&
		    spanidx_pget(ix, SPANIDX_P_CALL_SITE, r) >= ix->n_sites)
			why = "its call site is not in the table";
		else if (!time_ok && spanidx_pget(ix, SPANIDX_P_START_NS, r) +
		    dur < dur)
			why = "it ends past the clock's range";
		else if (!causes_ok && (spanidx_pget(ix, SPANIDX_P_START, r) >=
		    SPANIDX_START_NR ||
		    spanidx_pget(ix, SPANIDX_P_END, r) >= SPANIDX_END_NR ||
		    spanidx_pget(ix, SPANIDX_P_FLAGS, r) > SPANIDX_F_ALL))
			why = "its start, end or flags are unknown";
		else if (!ids_ok && (spanidx_pget(ix, SPANIDX_P_TID, r) >
		    UINT32_MAX || spanidx_pget(ix, SPANIDX_P_PID, r) >
		    UINT32_MAX || (int64_t)spanidx_pget(ix, SPANIDX_P_DEPTH,
		    r) != (int32_t)spanidx_pget(ix, SPANIDX_P_DEPTH, r)))
			why = "its tid, pid or depth is out of range";
		if (why != NULL)
			return error_set(e, ERR_FORMAT, "%s: damaged: row %"
			    PRIu64 " (span %" PRIu64 "): %s", name, r, id, why);
	}
	return 0;
}

static int
check_index(struct spanidx *ix, const char *name, struct error *e)
{
	const uint8_t *h = ix->base;
	uint64_t size, dir_off, funcs_off, threads_off, sites_off, st_off;

	if (ix->size < SPANIDX_HEADER_SIZE || memcmp(h, SPANIDX_MAGIC, 8))
		return error_set(e, ERR_FORMAT, "%s: not a span index", name);
	if (le_get_u32(h + H_VERSION) != SPANIDX_VERSION)
		return error_set(e, ERR_UNSUPPORTED, "%s: span index version "
		    "%u", name, le_get_u32(h + H_VERSION));
	if (le_get_u64(h + H_HEAD_SUM) != xxh64(h, H_HEAD_SUM, 0))
		return error_set(e, ERR_FORMAT, "%s: damaged: the header's "
		    "checksum does not match", name);
	size = le_get_u64(h + H_FILE_SIZE);
	if (size != ix->size)
		return error_set(e, size > ix->size ? ERR_TRUNCATED :
		    ERR_FORMAT, "%s: %zu bytes, the header says %" PRIu64,
		    name, ix->size, size);
	if (le_get_u64(h + H_BODY_SUM) != xxh64(h + SPANIDX_HEADER_SIZE,
	    ix->size - SPANIDX_HEADER_SIZE, 0))
		return error_set(e, ERR_FORMAT, "%s: damaged: the checksum "
		    "does not match", name);
	ix->rows = le_get_u64(h + H_ROWS);
	ix->n_threads = le_get_u64(h + H_THREADS);
	ix->n_funcs = le_get_u64(h + H_FUNCS);
	ix->strtab_size = le_get_u64(h + H_STRTAB_SIZE);
	dir_off = le_get_u64(h + H_DIR_OFF);
	funcs_off = le_get_u64(h + H_FUNCS_OFF);
	threads_off = le_get_u64(h + H_THREADS_OFF);
	st_off = le_get_u64(h + H_STRTAB_OFF);
	ix->n_sites = le_get_u64(h + H_SITES);
	sites_off = le_get_u64(h + H_SITES_OFF);
	if (le_get_u32(h + H_HSIZE) != SPANIDX_HEADER_SIZE ||
	    le_get_u32(h + H_NCOLS) != SPANIDX_NPCOLS ||
	    !inside(dir_off, SPANIDX_NPCOLS, DIR_ENTRY, ix->size) ||
	    !inside(funcs_off, ix->n_funcs, SPANIDX_FUNC_SIZE, ix->size) ||
	    !inside(threads_off, ix->n_threads, SPANIDX_THREAD_SIZE,
	    ix->size) || !inside(sites_off, ix->n_sites, 8, ix->size) ||
	    (ix->rows > 0 && (ix->n_funcs == 0 || ix->n_sites == 0)))
		return error_set(e, ERR_FORMAT, "%s: bad section table", name);
	if (!inside(st_off, ix->strtab_size, 1, ix->size) ||
	    ix->strtab_size == 0 || ix->base[st_off] != '\0' ||
	    ix->base[st_off + ix->strtab_size - 1] != '\0')
		return error_set(e, ERR_FORMAT, "%s: bad string table", name);
	ix->strtab = (const char *)ix->base + st_off;
	ix->funcs = ix->base + funcs_off;
	ix->threads = ix->base + threads_off;
	ix->sites = ix->base + sites_off;
	if (check_cols(ix, name, e) < 0 || check_tables(ix, name, e) < 0)
		return -e->code;
	return check_rows(ix, name, e);
}

int
spanidx_open_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e)
{
	struct stat sb;
	void *p;
	int rc, err;

	memset(ix, 0, sizeof(*ix));
	if (fstat(fd, &sb) < 0)
		return error_set_errno(e, errno, "%s", name);
	if (!S_ISREG(sb.st_mode))
		return error_set(e, ERR_FORMAT, "%s: not a regular file",
		    name);
	if (sb.st_size < SPANIDX_HEADER_SIZE)
		return error_set(e, ERR_TRUNCATED, "%s: %lld bytes, too "
		    "short for a span index", name, (long long)sb.st_size);
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = errno;
	if (p == MAP_FAILED)
		return error_set_errno(e, err, "%s", name);
	ix->base = p;
	ix->size = (size_t)sb.st_size;
	if ((rc = check_index(ix, name, e)) < 0)
		spanidx_close(ix);
	return rc;
}

int
spanidx_open(struct spanidx *ix, const char *path, struct error *e)
{
	int fd, rc, err;

	memset(ix, 0, sizeof(*ix));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		err = errno;
		if (err == ENOENT)
			return error_set(e, ERR_NOTFOUND, "%s: no such file",
			    path);
		return error_set_errno(e, err, "%s", path);
	}
	rc = spanidx_open_fd(ix, fd, path, e);
	close(fd);
	return rc;
}

void
spanidx_close(struct spanidx *ix)
{
	if (ix->base != NULL)
		munmap((void *)ix->base, ix->size);
	memset(ix, 0, sizeof(*ix));
}

const char *
spanidx_str(const struct spanidx *ix, uint32_t off)
{
	return off < ix->strtab_size ? ix->strtab + off : "";
}

void
spanidx_thread(const struct spanidx *ix, uint64_t t, uint32_t *tid,
    uint32_t *pid, uint64_t *spans)
{
	const uint8_t *p = ix->threads + t * SPANIDX_THREAD_SIZE;

	*tid = le_get_u32(p);
	*pid = le_get_u32(p + 4);
	*spans = le_get_u64(p + 8);
}
