/*
 * spanidx: see spanidx.h.  The host is little endian (x86-64 is the only
 * target of Intel PT), so values are written and read as they lie in
 * memory; the reader copies each value out with memcpy, never through a
 * misaligned pointer.
 */
#include "base/le.h"
#include "fmt/spanidx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct col_def {
	const char *name;
	uint8_t type, width;
};

static const struct col_def cols[SPANIDX_NCOLS] = {
	{ "id", SPANIDX_U64, 8 },
	{ "parent", SPANIDX_U64, 8 },
	{ "tid", SPANIDX_U32, 4 },
	{ "pid", SPANIDX_U32, 4 },
	{ "depth", SPANIDX_I32, 4 },
	{ "fn", SPANIDX_U32, 4 },
	{ "raw", SPANIDX_U32, 4 },
	{ "module", SPANIDX_U32, 4 },
	{ "call_site", SPANIDX_U64, 8 },
	{ "entry", SPANIDX_U64, 8 },
	{ "start_ns", SPANIDX_U64, 8 },
	{ "end_ns", SPANIDX_U64, 8 },
	{ "self_ns", SPANIDX_U64, 8 },
	{ "insns", SPANIDX_U64, 8 },
	{ "self_insns", SPANIDX_U64, 8 },
	{ "start", SPANIDX_U8, 1 },
	{ "end", SPANIDX_U8, 1 },
	{ "flags", SPANIDX_U8, 1 },
};

#define DIR_ENTRY 32

const char *
spanidx_col_name(unsigned col)
{
	return col < SPANIDX_NCOLS ? cols[col].name : "unknown";
}

/* ----------------------------------------------------------------- */
/* Writer */

struct str_slot {
	char *s;
	uint32_t off;
};

#define COL_BUF 65536		/* bytes buffered per column */
#define RECENT 64		/* recently interned strings, by address */

struct spanidx_writer {
	FILE *col[SPANIDX_NCOLS];
	uint8_t *buf[SPANIDX_NCOLS];	/* values not yet in col[] */
	size_t n_buf[SPANIDX_NCOLS];
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
};

void
spanidx_writer_free(struct spanidx_writer *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < SPANIDX_NCOLS; i++) {
		if (w->col[i] != NULL)
			fclose(w->col[i]);
		free(w->buf[i]);
	}
	for (size_t i = 0; i < w->cap_slot; i++)
		free(w->slot[i].s);
	free(w->slot);
	free(w->strtab);
	free(w);
}

int
spanidx_writer_new(struct spanidx_writer **out, struct error *e)
{
	struct spanidx_writer *w;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "span index");
	for (int i = 0; i < SPANIDX_NCOLS; i++) {
		if ((w->col[i] = tmpfile()) == NULL) {
			int err = errno;

			spanidx_writer_free(w);
			return error_set_errno(e, err, "span index column");
		}
		if ((w->buf[i] = malloc(COL_BUF)) == NULL) {
			spanidx_writer_free(w);
			return error_set(e, ERR_NOMEM, "span index");
		}
	}
	w->cap_slot = 1024;
	w->slot = calloc(w->cap_slot, sizeof(*w->slot));
	w->strtab_cap = 4096;
	w->strtab = malloc(w->strtab_cap);
	if (w->slot == NULL || w->strtab == NULL) {
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

/* Writes column c's buffered values to its file; 0, or 1 on error. */
static int
col_flush(struct spanidx_writer *w, int c)
{
	size_t n = w->n_buf[c];

	w->n_buf[c] = 0;
	return n > 0 && fwrite(w->buf[c], 1, n, w->col[c]) != n;
}

int
spanidx_add(struct spanidx_writer *w, const struct spanidx_row *r,
    struct error *e)
{
	uint32_t fn, raw, mod;
	int rc, bad = 0;

	if ((rc = intern(w, r->fn, &fn)) < 0 ||
	    (rc = intern(w, r->raw, &raw)) < 0 ||
	    (rc = intern(w, r->module, &mod)) < 0)
		return error_set(e, -rc, "span index strings");
#define PUT(c, v) do { __typeof__(v) v_ = (v); \
	if (w->n_buf[c] + sizeof(v_) > COL_BUF) \
		bad |= col_flush(w, c); \
	memcpy(w->buf[c] + w->n_buf[c], &v_, sizeof(v_)); \
	w->n_buf[c] += sizeof(v_); } while (0)
	PUT(SPANIDX_ID, r->id);
	PUT(SPANIDX_PARENT, r->parent);
	PUT(SPANIDX_TID, r->tid);
	PUT(SPANIDX_PID, r->pid);
	PUT(SPANIDX_DEPTH, r->depth);
	PUT(SPANIDX_FN, fn);
	PUT(SPANIDX_RAW, raw);
	PUT(SPANIDX_MODULE, mod);
	PUT(SPANIDX_CALL_SITE, r->call_site);
	PUT(SPANIDX_ENTRY, r->entry);
	PUT(SPANIDX_START_NS, r->start_ns);
	PUT(SPANIDX_END_NS, r->end_ns);
	PUT(SPANIDX_SELF_NS, r->self_ns);
	PUT(SPANIDX_INSNS, r->insns);
	PUT(SPANIDX_SELF_INSNS, r->self_insns);
	PUT(SPANIDX_START, r->start);
	PUT(SPANIDX_END, r->end);
	PUT(SPANIDX_FLAGS, r->flags);
#undef PUT
	if (bad)
		return error_set_errno(e, errno, "span index column");
	w->rows++;
	return 0;
}

static uint64_t
align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static int
copy_col(struct spanidx_writer *w, int c, FILE *to)
{
	FILE *from = w->col[c];
	char buf[65536];
	size_t n;

	if (col_flush(w, c) != 0 || fflush(from) != 0 ||
	    fseek(from, 0, SEEK_SET) != 0)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			return -1;
	return ferror(from) ? -1 : 0;
}

static int
write_index(struct spanidx_writer *w, FILE *f)
{
	uint8_t hdr[SPANIDX_HEADER_SIZE] = { 0 };
	uint8_t dir[SPANIDX_NCOLS * DIR_ENTRY] = { 0 };
	static const uint8_t zero[8];
	uint64_t off, col_off[SPANIDX_NCOLS], strtab_off;

	off = SPANIDX_HEADER_SIZE + sizeof(dir);
	for (int i = 0; i < SPANIDX_NCOLS; i++) {
		off = align8(off);
		col_off[i] = off;
		off += w->rows * cols[i].width;
	}
	strtab_off = align8(off);
	memcpy(hdr, SPANIDX_MAGIC, 8);
	le_put_u32(hdr + 8, SPANIDX_VERSION);
	le_put_u32(hdr + 12, SPANIDX_HEADER_SIZE);
	le_put_u64(hdr + 16, w->rows);
	le_put_u32(hdr + 24, SPANIDX_NCOLS);
	le_put_u32(hdr + 28, DIR_ENTRY);
	le_put_u64(hdr + 32, SPANIDX_HEADER_SIZE);
	le_put_u64(hdr + 40, strtab_off);
	le_put_u64(hdr + 48, w->strtab_len);
	for (int i = 0; i < SPANIDX_NCOLS; i++) {
		uint8_t *d = dir + i * DIR_ENTRY;

		strncpy((char *)d, cols[i].name, SPANIDX_COL_NAME);
		d[16] = cols[i].type;
		d[17] = cols[i].width;
		le_put_u64(d + 24, col_off[i]);
	}
	if (fwrite(hdr, sizeof(hdr), 1, f) != 1 ||
	    fwrite(dir, sizeof(dir), 1, f) != 1)
		return -1;
	off = sizeof(hdr) + sizeof(dir);
	for (int i = 0; i < SPANIDX_NCOLS; i++) {
		if (fwrite(zero, 1, col_off[i] - off, f) != col_off[i] - off ||
		    copy_col(w, i, f) < 0)
			return -1;
		off = col_off[i] + w->rows * cols[i].width;
	}
	if (fwrite(zero, 1, strtab_off - off, f) != strtab_off - off ||
	    fwrite(w->strtab, 1, w->strtab_len, f) != w->strtab_len)
		return -1;
	return 0;
}

int
spanidx_writer_finish(struct spanidx_writer *w, const char *path,
    struct error *e)
{
	FILE *f;
	int rc = 0, err;

	if ((f = fopen(path, "wbe")) == NULL) {
		err = errno;
		spanidx_writer_free(w);
		return error_set_errno(e, err, "%s", path);
	}
	if (write_index(w, f) < 0)
		rc = error_set_errno(e, errno, "%s", path);
	if (fclose(f) != 0 && rc == 0)
		rc = error_set_errno(e, errno, "%s", path);
	spanidx_writer_free(w);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Reader */

static int
check_dir(struct spanidx *ix, const uint8_t *d, uint32_t n, uint32_t esz,
    const char *path, struct error *e)
{
	for (int c = 0; c < SPANIDX_NCOLS; c++) {
		uint32_t i;

		for (i = 0; i < n; i++) {
			const uint8_t *x = d + (size_t)i * esz;

			if (strncmp((const char *)x, cols[c].name,
			    SPANIDX_COL_NAME) == 0)
				break;
		}
		if (i == n)
			return error_set(e, ERR_FORMAT, "%s: no column %s",
			    path, cols[c].name);
		const uint8_t *x = d + (size_t)i * esz;
		uint64_t off = le_get_u64(x + 24);

		if (x[16] != cols[c].type || x[17] != cols[c].width)
			return error_set(e, ERR_FORMAT, "%s: column %s has "
			    "type %u", path, cols[c].name, x[16]);
		if (off > ix->size || ix->rows > (ix->size - off) /
		    cols[c].width)
			return error_set(e, ERR_TRUNCATED, "%s: column %s "
			    "runs past the end of the file", path,
			    cols[c].name);
		ix->col[c] = ix->base + off;
	}
	return 0;
}

static int
check_index(struct spanidx *ix, const char *path, struct error *e)
{
	const uint8_t *h = ix->base;
	uint32_t hsize, n, esz;
	uint64_t dir_off, st_off;

	if (ix->size < SPANIDX_HEADER_SIZE || memcmp(h, SPANIDX_MAGIC, 8))
		return error_set(e, ERR_FORMAT, "%s: not a span index", path);
	if (le_get_u32(h + 8) != SPANIDX_VERSION)
		return error_set(e, ERR_UNSUPPORTED, "%s: span index version "
		    "%u", path, le_get_u32(h + 8));
	hsize = le_get_u32(h + 12);
	ix->rows = le_get_u64(h + 16);
	n = le_get_u32(h + 24);
	esz = le_get_u32(h + 28);
	dir_off = le_get_u64(h + 32);
	st_off = le_get_u64(h + 40);
	ix->strtab_size = le_get_u64(h + 48);
	if (hsize < SPANIDX_HEADER_SIZE || esz < DIR_ENTRY ||
	    n > 4096 || dir_off > ix->size ||
	    (uint64_t)n * esz > ix->size - dir_off)
		return error_set(e, ERR_FORMAT, "%s: bad column directory",
		    path);
	if (st_off > ix->size || ix->strtab_size > ix->size - st_off ||
	    ix->strtab_size == 0 ||
	    ix->base[st_off + ix->strtab_size - 1] != '\0')
		return error_set(e, ERR_TRUNCATED, "%s: bad string table",
		    path);
	ix->strtab = (const char *)ix->base + st_off;
	return check_dir(ix, ix->base + dir_off, n, esz, path, e);
}

int
spanidx_open(struct spanidx *ix, const char *path, struct error *e)
{
	struct stat sb;
	void *p;
	int fd, rc, err;

	memset(ix, 0, sizeof(*ix));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		err = errno;
		if (err == ENOENT)
			return error_set(e, ERR_NOTFOUND, "%s: no such file",
			    path);
		return error_set_errno(e, err, "%s", path);
	}
	if (fstat(fd, &sb) < 0) {
		err = errno;
		close(fd);
		return error_set_errno(e, err, "%s", path);
	}
	if (sb.st_size < SPANIDX_HEADER_SIZE) {
		close(fd);
		return error_set(e, ERR_TRUNCATED, "%s: %lld bytes, too "
		    "short for a span index", path, (long long)sb.st_size);
	}
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	err = errno;
	close(fd);
	if (p == MAP_FAILED)
		return error_set_errno(e, err, "%s", path);
	ix->base = p;
	ix->size = (size_t)sb.st_size;
	if ((rc = check_index(ix, path, e)) < 0)
		spanidx_close(ix);
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

uint64_t
spanidx_u64(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return le_get_u64((const uint8_t *)ix->col[col] + row * 8);
}

uint32_t
spanidx_u32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return le_get_u32((const uint8_t *)ix->col[col] + row * 4);
}

int32_t
spanidx_i32(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return (int32_t)le_get_u32((const uint8_t *)ix->col[col] + row * 4);
}

uint8_t
spanidx_u8(const struct spanidx *ix, unsigned col, uint64_t row)
{
	return ((const uint8_t *)ix->col[col])[row];
}
