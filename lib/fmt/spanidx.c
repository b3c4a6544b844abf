/*
 * spanidx: see spanidx.h.  The host is little endian (x86-64 is the only
 * target of Intel PT), so values are written and read as they lie in
 * memory; the reader copies each value out with memcpy, never through a
 * misaligned pointer, and the file ends in 8 bytes of slack so that the
 * last row's 8-byte load stays inside the mapping (a column's load may
 * run into the next column's bits, which its mask drops).
 *
 * Header (128 bytes): magic[8], version u32, header size u32, rows u64,
 * threads u64, functions u64, string bytes u64, columns u32, rows a
 * block u32, blocks u64, then the offsets of the function table, the
 * thread table and the string table, the file's size, the XXH64 of bytes
 * [128, the first block's data) (the block directory, which starts at
 * 128, and the tables), the number and the offset of the call sites, and
 * the XXH64 of bytes [0, 120).  The blocks' data starts at the string
 * table's end rounded up to 8.
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

#define MAX_PACKED_BITS 56	/* wider columns are stored as 64 bits */
#define SLACK 8
#define ID_BIAS (1ull << 63)
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
#define H_BLOCK_ROWS 52
#define H_BLOCKS 56
#define H_FUNCS_OFF 64
#define H_THREADS_OFF 72
#define H_STRTAB_OFF 80
#define H_FILE_SIZE 88
#define H_TABLES_SUM 96
#define H_SITES 104
#define H_SITES_OFF 112
#define H_HEAD_SUM 120

static const char *const col_names[SPANIDX_NCOLS] = {
	"id", "parent", "tid", "pid", "depth", "fn", "raw", "module",
	"call_site", "entry", "start_ns", "end_ns", "self_ns", "insns",
	"self_insns", "start", "end", "flags",
};

static const char *const pcol_names[SPANIDX_NPCOLS] = {
	"id", "parent", "thread", "depth", "function", "call_site",
	"start_ns", "self_ns", "callee_ns", "self_insns", "callee_insns",
	"start", "end", "flags",
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

#define RECENT 64		/* recently interned strings, by address */

struct spanidx_writer {
	/* The block being filled, by stored column; full blocks go to
	 * data (their columns packed) and blocks (their entries). */
	uint64_t blk[SPANIDX_NPCOLS][SPANIDX_BLOCK_ROWS];
	unsigned blk_rows;
	FILE *data, *blocks;
	uint64_t data_bytes, n_blocks;
	uint8_t *pack;			/* one column's bits */
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
	if (w->data != NULL)
		fclose(w->data);
	if (w->blocks != NULL)
		fclose(w->blocks);
	free(w->pack);
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
	if ((w->data = tmpfile()) == NULL || (w->blocks = tmpfile()) == NULL) {
		int err = errno;

		spanidx_writer_free(w);
		return error_set_errno(e, err, "span index blocks");
	}
	w->pack = malloc(SPANIDX_BLOCK_ROWS * 8 + SLACK);
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
	    w->strtab == NULL || w->pack == NULL) {
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
	return (size_t)xxh64(s, strlen(s), 0);
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

/* Counts a span of thread tid, its number in *num (threads are few: a
 * scan from the last). */
static int
thread_count(struct spanidx_writer *w, uint32_t tid, uint32_t pid,
    uint64_t *num)
{
	size_t i;

	if (w->n_thread > 0 && w->thread[w->last_thread].tid == tid &&
	    w->thread[w->last_thread].pid == pid) {
		w->thread[w->last_thread].spans++;
		*num = w->last_thread;
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
	*num = i;
	return 0;
}

static unsigned
width_of(uint64_t range)
{
	unsigned bits;

	if (range == 0)
		return 0;
	bits = 64 - (unsigned)__builtin_clzll(range);
	return bits > MAX_PACKED_BITS ? 64 : bits;
}

static uint64_t
packed_bytes(uint64_t rows, unsigned bits)
{
	return (rows * bits + 7) / 8;
}

/* Packs v[0..n) at bits each, less base, into out; returns the bytes. */
static size_t
pack(uint8_t *out, const uint64_t *v, unsigned n, uint64_t base,
    unsigned bits)
{
	uint64_t acc = 0;
	unsigned nacc = 0;	/* under 8 before each value: 56 bits fit */
	size_t o = 0;

	if (bits == 64) {
		for (unsigned i = 0; i < n; i++)
			le_put_u64(out + 8 * i, v[i] - base);
		return (size_t)n * 8;
	}
	for (unsigned i = 0; i < n && bits > 0; i++) {
		acc |= (v[i] - base) << nacc;
		nacc += bits;
		while (nacc >= 8) {
			out[o++] = (uint8_t)acc;
			acc >>= 8;
			nacc -= 8;
		}
	}
	if (nacc > 0)
		out[o++] = (uint8_t)acc;
	return o;
}

/* The block being filled, packed into data and its entry into blocks;
 * 0, or -1 with errno. */
static int
block_flush(struct spanidx_writer *w)
{
	uint8_t ent[SPANIDX_BLOCK_SIZE] = { 0 };
	uint32_t rel = 0;

	if (w->blk_rows == 0)
		return 0;
	le_put_u64(ent + SPANIDX_B_OFF, w->data_bytes);
	for (unsigned c = 0; c < SPANIDX_NPCOLS; c++) {
		const uint64_t *v = w->blk[c];
		uint64_t min = UINT64_MAX, max = 0;
		unsigned bits;
		size_t n;

		for (unsigned i = 0; i < w->blk_rows; i++) {
			if (v[i] < min)
				min = v[i];
			if (v[i] > max)
				max = v[i];
		}
		bits = width_of(max - min);
		n = pack(w->pack, v, w->blk_rows, min, bits);
		le_put_u64(ent + SPANIDX_B_BASE + 8 * c, min);
		le_put_u32(ent + SPANIDX_B_REL + 4 * c, rel);
		le_put_u32(ent + SPANIDX_B_SUM + 4 * c,
		    (uint32_t)xxh64(w->pack, n, 0));
		ent[SPANIDX_B_BITS + c] = (uint8_t)bits;
		if (n > 0 && fwrite(w->pack, 1, n, w->data) != n)
			return -1;
		rel += (uint32_t)n;
	}
	if (fwrite(ent, 1, sizeof(ent), w->blocks) != sizeof(ent))
		return -1;
	w->data_bytes += rel;
	w->n_blocks++;
	w->blk_rows = 0;
	return 0;
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
	uint64_t num, site, thread;
	unsigned i = w->blk_rows;
	int rc;

	if ((rc = row_check(r, e)) < 0)
		return rc;
	if ((rc = intern(w, r->fn, &f.fn)) < 0 ||
	    (rc = intern(w, r->raw, &f.raw)) < 0 ||
	    (rc = intern(w, r->module, &f.module)) < 0)
		return error_set(e, -rc, "span index strings");
	f.entry = r->entry;
	if ((rc = func_number(w, &f, &num)) < 0 ||
	    (rc = site_number(w, r->call_site, &site)) < 0 ||
	    (rc = thread_count(w, r->tid, r->pid, &thread)) < 0)
		return error_set(e, -rc, "span index tables");
	w->blk[SPANIDX_P_ID][i] = r->id - w->rows + ID_BIAS;
	w->blk[SPANIDX_P_PARENT][i] = r->parent ? r->id - r->parent : 0;
	w->blk[SPANIDX_P_THREAD][i] = thread;
	w->blk[SPANIDX_P_DEPTH][i] = (uint64_t)((int64_t)r->depth + DEPTH_BIAS);
	w->blk[SPANIDX_P_FUNC][i] = num;
	w->blk[SPANIDX_P_CALL_SITE][i] = site;
	w->blk[SPANIDX_P_START_NS][i] = r->start_ns;
	w->blk[SPANIDX_P_SELF_NS][i] = r->self_ns;
	w->blk[SPANIDX_P_CALLEE_NS][i] = r->end_ns - r->start_ns - r->self_ns;
	w->blk[SPANIDX_P_SELF_INSNS][i] = r->self_insns;
	w->blk[SPANIDX_P_CALLEE_INSNS][i] = r->insns - r->self_insns;
	w->blk[SPANIDX_P_START][i] = r->start;
	w->blk[SPANIDX_P_END][i] = r->end;
	w->blk[SPANIDX_P_FLAGS][i] = r->flags;
	w->rows++;
	if (++w->blk_rows == SPANIDX_BLOCK_ROWS && block_flush(w) < 0)
		return error_set_errno(e, errno, "span index blocks");
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

/* The rest of temporary file f copied into o, unhashed. */
static int
copy_spool(FILE *f, uint64_t bytes, struct out *o)
{
	uint8_t in[65536];

	if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
		return -1;
	while (bytes > 0) {
		size_t want = bytes < sizeof(in) ? (size_t)bytes : sizeof(in);

		if (fread(in, 1, want, f) != want) {
			errno = ferror(f) ? errno : EIO;
			return -1;
		}
		if (out_put(o, in, want) < 0)
			return -1;
		bytes -= want;
	}
	return 0;
}

static int
write_index(struct spanidx_writer *w, struct out *o)
{
	uint8_t hdr[SPANIDX_HEADER_SIZE] = { 0 };
	uint64_t funcs_off, threads_off, sites_off, strtab_off, data_off,
	    size;

	if (block_flush(w) < 0) {
		o->err = errno ? errno : EIO;
		return -1;
	}
	funcs_off = SPANIDX_HEADER_SIZE + w->n_blocks * SPANIDX_BLOCK_SIZE;
	threads_off = funcs_off + w->n_func * SPANIDX_FUNC_SIZE;
	sites_off = threads_off + w->n_thread * SPANIDX_THREAD_SIZE;
	strtab_off = sites_off + w->n_site * 8;
	data_off = align8(strtab_off + w->strtab_len);
	size = data_off + w->data_bytes + SLACK;
	memcpy(hdr, SPANIDX_MAGIC, 8);
	le_put_u32(hdr + H_VERSION, SPANIDX_VERSION);
	le_put_u32(hdr + H_HSIZE, SPANIDX_HEADER_SIZE);
	le_put_u64(hdr + H_ROWS, w->rows);
	le_put_u64(hdr + H_THREADS, w->n_thread);
	le_put_u64(hdr + H_FUNCS, w->n_func);
	le_put_u64(hdr + H_STRTAB_SIZE, w->strtab_len);
	le_put_u32(hdr + H_NCOLS, SPANIDX_NPCOLS);
	le_put_u32(hdr + H_BLOCK_ROWS, SPANIDX_BLOCK_ROWS);
	le_put_u64(hdr + H_BLOCKS, w->n_blocks);
	le_put_u64(hdr + H_FUNCS_OFF, funcs_off);
	le_put_u64(hdr + H_THREADS_OFF, threads_off);
	le_put_u64(hdr + H_STRTAB_OFF, strtab_off);
	le_put_u64(hdr + H_FILE_SIZE, size);
	le_put_u64(hdr + H_SITES, w->n_site);
	le_put_u64(hdr + H_SITES_OFF, sites_off);
	/* The header goes last, once the tables' hash is known: a hole. */
	o->off = SPANIDX_HEADER_SIZE;
	if (lseek(o->fd, SPANIDX_HEADER_SIZE, SEEK_SET) < 0) {
		o->err = errno;
		return -1;
	}
	if (copy_spool(w->blocks, w->n_blocks * SPANIDX_BLOCK_SIZE, o) < 0) {
		o->err = errno ? errno : EIO;
		return -1;
	}
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
	if (out_put(o, w->strtab, w->strtab_len) < 0 ||
	    out_zero(o, data_off - o->off) < 0)
		return -1;
	le_put_u64(hdr + H_TABLES_SUM, xxh64_digest(&o->sum));
	if (copy_spool(w->data, w->data_bytes, o) < 0) {
		o->err = errno ? errno : EIO;
		return -1;
	}
	if (out_zero(o, SLACK) < 0 || out_flush(o) < 0)
		return -1;
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

/* Which stored columns of each block have been checked, and the name the
 * messages give the file. */
struct spanidx_lazy {
	uint16_t *ok;			/* n_blocks masks of stored columns */
	char name[];
};

/* The columns checked together: a row's times, its instructions. */
#define PC(c) (1u << (c))
#define TIME_COLS (PC(SPANIDX_P_START_NS) | PC(SPANIDX_P_SELF_NS) | \
    PC(SPANIDX_P_CALLEE_NS))
#define INSN_COLS (PC(SPANIDX_P_SELF_INSNS) | PC(SPANIDX_P_CALLEE_INSNS))
#define ALL_PCOLS ((1u << SPANIDX_NPCOLS) - 1)

/* The stored columns logical column col is read from. */
static unsigned
pcols_of(unsigned col)
{
	switch (col) {
	case SPANIDX_ID: return PC(SPANIDX_P_ID);
	case SPANIDX_PARENT: return PC(SPANIDX_P_ID) | PC(SPANIDX_P_PARENT);
	case SPANIDX_TID: case SPANIDX_PID: return PC(SPANIDX_P_THREAD);
	case SPANIDX_DEPTH: return PC(SPANIDX_P_DEPTH);
	case SPANIDX_FN: case SPANIDX_RAW: case SPANIDX_MODULE:
	case SPANIDX_ENTRY: return PC(SPANIDX_P_FUNC);
	case SPANIDX_CALL_SITE: return PC(SPANIDX_P_CALL_SITE);
	case SPANIDX_START_NS: case SPANIDX_END_NS: case SPANIDX_SELF_NS:
		return TIME_COLS;
	case SPANIDX_INSNS: case SPANIDX_SELF_INSNS: return INSN_COLS;
	case SPANIDX_START: return PC(SPANIDX_P_START);
	case SPANIDX_END: return PC(SPANIDX_P_END);
	case SPANIDX_FLAGS: return PC(SPANIDX_P_FLAGS);
	default: return 0;
	}
}

/* Whether [off, off + n * each) lies inside a file of size bytes. */
static int
inside(uint64_t off, uint64_t n, uint64_t each, uint64_t size)
{
	return off <= size && (each == 0 || n <= (size - off) / each);
}

static uint64_t
block_nrows(const struct spanidx *ix, uint64_t b)
{
	uint64_t first = b << SPANIDX_BLOCK_SHIFT;

	return ix->rows - first < SPANIDX_BLOCK_ROWS ? ix->rows - first :
	    SPANIDX_BLOCK_ROWS;
}

static uint64_t
col_base(const struct spanidx *ix, uint64_t b, unsigned c)
{
	return le_get_u64(spanidx_block(ix, b) + SPANIDX_B_BASE + 8 * c);
}

/* The largest value column c of block b can hold, or UINT64_MAX. */
static uint64_t
col_bound(const struct spanidx *ix, uint64_t b, unsigned c)
{
	unsigned bits = spanidx_block(ix, b)[SPANIDX_B_BITS + c];
	uint64_t base = col_base(ix, b, c), mask = bits >= 64 ? UINT64_MAX :
	    (1ull << bits) - 1;

	return base + mask < base ? UINT64_MAX : base + mask;
}

/* a + b, or UINT64_MAX when that is past the range. */
static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

void
spanidx_block_times(const struct spanidx *ix, uint64_t b, uint64_t *start,
    uint64_t *end)
{
	*start = col_base(ix, b, SPANIDX_P_START_NS);
	*end = sat_add(sat_add(col_bound(ix, b, SPANIDX_P_START_NS),
	    col_bound(ix, b, SPANIDX_P_SELF_NS)),
	    col_bound(ix, b, SPANIDX_P_CALLEE_NS));
}

/* Every block's columns inside the data, of widths the format has. */
static int
check_blocks(struct spanidx *ix, uint64_t data_bytes, const char *name,
    struct error *e)
{
	for (uint64_t b = 0; b < ix->n_blocks; b++) {
		const uint8_t *d = spanidx_block(ix, b);
		uint64_t off = le_get_u64(d + SPANIDX_B_OFF), n = block_nrows(ix,
		    b);

		for (unsigned c = 0; c < SPANIDX_NPCOLS; c++) {
			unsigned bits = d[SPANIDX_B_BITS + c];
			uint64_t rel = le_get_u32(d + SPANIDX_B_REL + 4 * c);

			if (bits > 64 || (bits > MAX_PACKED_BITS && bits != 64))
				return error_set(e, ERR_FORMAT, "%s: block %"
				    PRIu64 ": column %s has %u bits", name, b,
				    pcol_names[c], bits);
			if (!inside(off, 1, rel, data_bytes) ||
			    !inside(off + rel, 1, packed_bytes(n, bits),
			    data_bytes))
				return error_set(e, ERR_FORMAT, "%s: block %"
				    PRIu64 ": column %s runs past the end of "
				    "the file", name, b, pcol_names[c]);
		}
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

/* The largest value stored column c may hold, UINT64_MAX for any. */
static uint64_t
col_limit(const struct spanidx *ix, unsigned c)
{
	switch (c) {
	case SPANIDX_P_THREAD: return ix->n_threads - 1;
	case SPANIDX_P_FUNC: return ix->n_funcs - 1;
	case SPANIDX_P_CALL_SITE: return ix->n_sites - 1;
	case SPANIDX_P_DEPTH: return UINT32_MAX;
	case SPANIDX_P_START: return SPANIDX_START_NR - 1;
	case SPANIDX_P_END: return SPANIDX_END_NR - 1;
	case SPANIDX_P_FLAGS: return SPANIDX_F_ALL;
	default: return UINT64_MAX;
	}
}

static const char *
limit_why(unsigned c)
{
	switch (c) {
	case SPANIDX_P_THREAD: return "its thread is not in the table";
	case SPANIDX_P_FUNC: return "its function is not in the table";
	case SPANIDX_P_CALL_SITE: return "its call site is not in the table";
	case SPANIDX_P_DEPTH: return "its depth is out of range";
	default: return "its start, end or flags are unknown";
	}
}

static int
row_damaged(const struct spanidx *ix, uint64_t row, const char *why,
    struct error *e)
{
	return error_set(e, ERR_FORMAT, "%s: damaged: row %" PRIu64 " (span %"
	    PRIu64 "): %s", ix->lazy->name, row, spanidx_value(ix, SPANIDX_ID,
	    row), why);
}

/*
 * Checks the stored columns want of block b not checked yet: their
 * checksums, then their values where the block's range does not already
 * rule a bad one out (a function number past the table, a span ending
 * past the clock's range).
 */
static int
check_block(const struct spanidx *ix, uint64_t b, unsigned want,
    struct error *e)
{
	const uint8_t *d = spanidx_block(ix, b);
	const uint8_t *data = ix->data + le_get_u64(d + SPANIDX_B_OFF);
	uint64_t n = block_nrows(ix, b), first = b << SPANIDX_BLOCK_SHIFT;
	unsigned todo;

	if (want & TIME_COLS)
		want |= TIME_COLS;
	if (want & INSN_COLS)
		want |= INSN_COLS;
	if ((todo = want & ~(unsigned)ix->lazy->ok[b]) == 0)
		return 0;
	for (unsigned c = 0; c < SPANIDX_NPCOLS; c++) {
		unsigned bits = d[SPANIDX_B_BITS + c];

		if (!(todo & PC(c)))
			continue;
		if ((uint32_t)xxh64(data + le_get_u32(d + SPANIDX_B_REL + 4 * c),
		    packed_bytes(n, bits), 0) != le_get_u32(d + SPANIDX_B_SUM +
		    4 * c))
			return error_set(e, ERR_FORMAT, "%s: damaged: block %"
			    PRIu64 " (rows %" PRIu64 " to %" PRIu64 "): the "
			    "checksum of its %s column does not match",
			    ix->lazy->name, b, first, first + n - 1,
			    pcol_names[c]);
		if (col_bound(ix, b, c) <= col_limit(ix, c))
			continue;
		for (uint64_t r = first; r < first + n; r++)
			if (spanidx_pget(ix, c, r) > col_limit(ix, c))
				return row_damaged(ix, r, limit_why(c), e);
	}
	if ((todo & TIME_COLS) && sat_add(sat_add(col_bound(ix, b,
	    SPANIDX_P_START_NS), col_bound(ix, b, SPANIDX_P_SELF_NS)),
	    col_bound(ix, b, SPANIDX_P_CALLEE_NS)) == UINT64_MAX)
		for (uint64_t r = first; r < first + n; r++)
			if (sat_add(sat_add(spanidx_pget(ix, SPANIDX_P_START_NS,
			    r), spanidx_pget(ix, SPANIDX_P_SELF_NS, r)),
			    spanidx_pget(ix, SPANIDX_P_CALLEE_NS, r)) ==
			    UINT64_MAX)
				return row_damaged(ix, r, "it ends past the "
				    "clock's range", e);
	if ((todo & INSN_COLS) && sat_add(col_bound(ix, b,
	    SPANIDX_P_SELF_INSNS), col_bound(ix, b, SPANIDX_P_CALLEE_INSNS)) ==
	    UINT64_MAX)
		for (uint64_t r = first; r < first + n; r++)
			if (sat_add(spanidx_pget(ix, SPANIDX_P_SELF_INSNS, r),
			    spanidx_pget(ix, SPANIDX_P_CALLEE_INSNS, r)) ==
			    UINT64_MAX)
				return row_damaged(ix, r, "its instructions are "
				    "past the counter's range", e);
	ix->lazy->ok[b] |= (uint16_t)todo;
	return 0;
}

int
spanidx_check(const struct spanidx *ix, uint64_t first, uint64_t end,
    unsigned cols, struct error *e)
{
	unsigned want = 0;
	int rc;

	if (end > ix->rows)
		end = ix->rows;
	if (first >= end)
		return 0;
	for (unsigned c = 0; c < SPANIDX_NCOLS; c++)
		if (cols & SPANIDX_COL(c))
			want |= pcols_of(c);
	for (uint64_t b = first >> SPANIDX_BLOCK_SHIFT;
	    b <= (end - 1) >> SPANIDX_BLOCK_SHIFT; b++)
		if ((rc = check_block(ix, b, want, e)) < 0)
			return rc;
	return 0;
}

static int
check_index(struct spanidx *ix, const char *name, struct error *e)
{
	const uint8_t *h = ix->base;
	uint64_t size, funcs_off, threads_off, sites_off, st_off, data_off;
	uint32_t version;

	if (ix->size < SPANIDX_HEADER_SIZE || memcmp(h, SPANIDX_MAGIC, 8))
		return error_set(e, ERR_FORMAT, "%s: not a span index", name);
	if ((version = le_get_u32(h + H_VERSION)) != SPANIDX_VERSION)
		return error_set(e, ERR_UNSUPPORTED, "%s: span index version "
		    "%u, not %u (written by %s ptspans: run ptspans again)",
		    name, version, SPANIDX_VERSION, version < SPANIDX_VERSION ?
		    "an older" : "a newer");
	if (le_get_u64(h + H_HEAD_SUM) != xxh64(h, H_HEAD_SUM, 0))
		return error_set(e, ERR_FORMAT, "%s: damaged: the header's "
		    "checksum does not match", name);
	size = le_get_u64(h + H_FILE_SIZE);
	if (size != ix->size)
		return error_set(e, size > ix->size ? ERR_TRUNCATED :
		    ERR_FORMAT, "%s: %zu bytes, the header says %" PRIu64,
		    name, ix->size, size);
	ix->rows = le_get_u64(h + H_ROWS);
	ix->n_blocks = le_get_u64(h + H_BLOCKS);
	ix->n_threads = le_get_u64(h + H_THREADS);
	ix->n_funcs = le_get_u64(h + H_FUNCS);
	ix->strtab_size = le_get_u64(h + H_STRTAB_SIZE);
	funcs_off = le_get_u64(h + H_FUNCS_OFF);
	threads_off = le_get_u64(h + H_THREADS_OFF);
	st_off = le_get_u64(h + H_STRTAB_OFF);
	ix->n_sites = le_get_u64(h + H_SITES);
	sites_off = le_get_u64(h + H_SITES_OFF);
	/* The sections lie end to end, in the order the writer puts them. */
	if (le_get_u32(h + H_HSIZE) != SPANIDX_HEADER_SIZE ||
	    le_get_u32(h + H_NCOLS) != SPANIDX_NPCOLS ||
	    le_get_u32(h + H_BLOCK_ROWS) != SPANIDX_BLOCK_ROWS ||
	    ix->rows > UINT64_MAX - SPANIDX_BLOCK_ROWS ||
	    ix->n_blocks != (ix->rows + SPANIDX_BLOCK_ROWS - 1) /
	    SPANIDX_BLOCK_ROWS ||
	    !inside(SPANIDX_HEADER_SIZE, ix->n_blocks, SPANIDX_BLOCK_SIZE,
	    ix->size) ||
	    funcs_off != SPANIDX_HEADER_SIZE + ix->n_blocks *
	    SPANIDX_BLOCK_SIZE ||
	    !inside(funcs_off, ix->n_funcs, SPANIDX_FUNC_SIZE, ix->size) ||
	    threads_off != funcs_off + ix->n_funcs * SPANIDX_FUNC_SIZE ||
	    !inside(threads_off, ix->n_threads, SPANIDX_THREAD_SIZE,
	    ix->size) ||
	    sites_off != threads_off + ix->n_threads * SPANIDX_THREAD_SIZE ||
	    !inside(sites_off, ix->n_sites, 8, ix->size) ||
	    st_off != sites_off + ix->n_sites * 8 ||
	    (ix->rows > 0 && (ix->n_funcs == 0 || ix->n_sites == 0 ||
	    ix->n_threads == 0)))
		return error_set(e, ERR_FORMAT, "%s: bad section table", name);
	if (!inside(st_off, ix->strtab_size, 1, ix->size - SLACK) ||
	    ix->strtab_size == 0 || ix->base[st_off] != '\0' ||
	    ix->base[st_off + ix->strtab_size - 1] != '\0')
		return error_set(e, ERR_FORMAT, "%s: bad string table", name);
	data_off = align8(st_off + ix->strtab_size);
	if (data_off > ix->size - SLACK)
		return error_set(e, ERR_FORMAT, "%s: bad string table", name);
	/* the slack, which no checksum covers, is zero or the file damaged */
	if (le_get_u64(ix->base + ix->size - SLACK) != 0)
		return error_set(e, ERR_FORMAT, "%s: damaged: its last %d "
		    "bytes are not zero", name, SLACK);
	if (le_get_u64(h + H_TABLES_SUM) != xxh64(h + SPANIDX_HEADER_SIZE,
	    data_off - SPANIDX_HEADER_SIZE, 0))
		return error_set(e, ERR_FORMAT, "%s: damaged: the checksum "
		    "does not match", name);
	ix->blocks = ix->base + SPANIDX_HEADER_SIZE;
	ix->strtab = (const char *)ix->base + st_off;
	ix->funcs = ix->base + funcs_off;
	ix->threads = ix->base + threads_off;
	ix->sites = ix->base + sites_off;
	ix->data = ix->base + data_off;
	if (check_tables(ix, name, e) < 0)
		return -e->code;
	return check_blocks(ix, ix->size - SLACK - data_off, name, e);
}

static int
open_fd(struct spanidx *ix, int fd, const char *name, int lazy,
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
	if ((rc = check_index(ix, name, e)) < 0) {
		spanidx_close(ix);
		return rc;
	}
	if ((ix->lazy = malloc(sizeof(*ix->lazy) + strlen(name) + 1)) == NULL ||
	    (ix->lazy->ok = calloc(ix->n_blocks + 1, sizeof(uint16_t))) ==
	    NULL) {
		free(ix->lazy);
		ix->lazy = NULL;
		spanidx_close(ix);
		return error_set(e, ERR_NOMEM, "%s", name);
	}
	strcpy(ix->lazy->name, name);
	if (!lazy && (rc = spanidx_check(ix, 0, ix->rows, SPANIDX_COLS_ALL,
	    e)) < 0)
		spanidx_close(ix);
	return rc < 0 ? rc : 0;
}

int
spanidx_open_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e)
{
	return open_fd(ix, fd, name, 0, e);
}

int
spanidx_open_lazy_fd(struct spanidx *ix, int fd, const char *name,
    struct error *e)
{
	return open_fd(ix, fd, name, 1, e);
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
spanidx_reseal(uint8_t *buf, size_t n)
{
	uint64_t nb, st_off, st_size, data_off;

	if (n < SPANIDX_HEADER_SIZE + SLACK)
		return;
	le_put_u64(buf + H_FILE_SIZE, n);
	nb = le_get_u64(buf + H_BLOCKS);
	st_off = le_get_u64(buf + H_STRTAB_OFF);
	st_size = le_get_u64(buf + H_STRTAB_SIZE);
	if (inside(SPANIDX_HEADER_SIZE, nb, SPANIDX_BLOCK_SIZE, n) &&
	    inside(st_off, st_size, 1, n - SLACK) &&
	    (data_off = align8(st_off + st_size)) <= n - SLACK &&
	    data_off >= SPANIDX_HEADER_SIZE) {
		for (uint64_t b = 0; b < nb; b++) {
			uint8_t *d = buf + SPANIDX_HEADER_SIZE + b *
			    SPANIDX_BLOCK_SIZE;
			uint64_t off = le_get_u64(d + SPANIDX_B_OFF), rows;

			rows = le_get_u64(buf + H_ROWS) - (b << SPANIDX_BLOCK_SHIFT);
			if (rows > SPANIDX_BLOCK_ROWS)
				rows = SPANIDX_BLOCK_ROWS;
			for (unsigned c = 0; c < SPANIDX_NPCOLS; c++) {
				uint64_t rel = le_get_u32(d + SPANIDX_B_REL + 4 * c);
				uint64_t len = packed_bytes(rows,
				    d[SPANIDX_B_BITS + c] > 64 ? 64 :
				    d[SPANIDX_B_BITS + c]);

				if (inside(off, 1, rel, n - SLACK - data_off) &&
				    inside(off + rel, 1, len, n - SLACK - data_off))
					le_put_u32(d + SPANIDX_B_SUM + 4 * c,
					    (uint32_t)xxh64(buf + data_off + off +
					    rel, len, 0));
			}
		}
		le_put_u64(buf + H_TABLES_SUM, xxh64(buf + SPANIDX_HEADER_SIZE,
		    data_off - SPANIDX_HEADER_SIZE, 0));
	}
	le_put_u64(buf + H_HEAD_SUM, xxh64(buf, H_HEAD_SUM, 0));
}

void
spanidx_close(struct spanidx *ix)
{
	if (ix->base != NULL)
		munmap((void *)ix->base, ix->size);
	if (ix->lazy != NULL)
		free(ix->lazy->ok);
	free(ix->lazy);
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
