/*
 * blkstream_read: the block stream's streaming reader (see blkstream.h
 * and man/ptkit-blocks.5): over a FILE, an fd (read a chunk ahead by a
 * thread of its own) or memory; bounds-checks every length against the
 * bytes that exist, checks the group order, names the byte offset of
 * anything malformed, and hands runs of blocks to the fast path
 * (blks_read_blocks).  The writer is blkstream.c.
 */
#include "fmt/blkstream.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/blkstream_int.h"

/*
 * The reader's window.  A FILE without a buffer of its own (ptspans'
 * stdin) is read straight into it: a pipe's worth (pipebuf.h) at once,
 * copied once.
 */
#define RBUF_SIZE (1024 * 1024)

/*
 * An fd reader's chunks: a thread of the reader's own reads the fd into
 * them, a chunk ahead, and the reader takes them in order.  A record cut
 * by a chunk's end is made whole in the next chunk's head room: what the
 * window still held (less than the reader wanted, at most 64 KiB, the
 * largest header) is copied in front of the new bytes.
 */
#define CHUNK_HEAD (64 * 1024 + 64)
#define CHUNK_DATA (1024 * 1024)
#define CHUNK_MIN (CHUNK_DATA / 4)	/* a pipe read this much, handed on */
#define CHUNKS 4

struct chunk {
	uint8_t *mem;			/* CHUNK_HEAD + CHUNK_DATA */
	size_t n;			/* bytes read, at mem + CHUNK_HEAD */
};

struct feeder {
	int fd;
	int threaded;			/* else read in reader_fill */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cv_full, cv_free;
	struct chunk chunk[CHUNKS];
	struct chunk *full[CHUNKS];	/* ring, in stream order */
	size_t head, n_full;
	struct chunk *free_[CHUNKS];
	size_t n_free;
	int done;			/* the thread read its last chunk */
	int err;			/* errno of a failed read, or 0 */
	int stop;
	int started;			/* a chunk was read (by its reader) */
	struct chunk *cur;		/* the window's, the reader's */
};

struct blks_reader {
	FILE *in;		/* NULL for a memory or fd reader */
	struct feeder *fd;	/* an fd reader's, or NULL */
	int refill;		/* in or fd: the window can be filled */
	char *name;
	uint8_t *own;		/* FILE mode window storage */
	const uint8_t *buf;	/* window: buf[pos..len) unread */
	size_t len, pos;
	uint64_t base;		/* stream offset of buf[0] */
	int eof;		/* no more bytes beyond the window */
	int state;		/* 0 reading, 1 after EOS, <0 error code */
	struct error saved;
	struct blks_header hdr;
	char *snapshot;
	int in_thread;
	uint32_t tid, nr_threads;
	uint64_t prev_ip, prev_time;
	uint64_t unknown;
	char str[BLKS_PAYLOAD_MAX + 8];	/* strings of the last record */
	size_t str_used;
	uint8_t payload[BLKS_PAYLOAD_MAX];
};

/*
 * Reads into c until it holds min bytes or the fd ends; returns 0, or an
 * errno.  *end is set at the end of the stream.
 */
static int
chunk_read(int fd, struct chunk *c, size_t min, int *end)
{
	ssize_t k;

	c->n = 0;
	while (c->n < min) {
		k = read(fd, c->mem + CHUNK_HEAD + c->n, CHUNK_DATA - c->n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno;
		if (k == 0) {
			*end = 1;
			break;
		}
		c->n += (size_t)k;
	}
	return 0;
}

/*
 * The first chunk is handed on with whatever the first read gives: the
 * stream's header and MAP records come first, and a reader (ptspans)
 * loads the images' symbols from them while the writer is still setting
 * up its decoders.  Later chunks wait for CHUNK_MIN bytes.
 */
static int
feeder_read(struct feeder *f, struct chunk *c, int *end)
{
	size_t min = f->started ? CHUNK_MIN : 1;

	f->started = 1;
	return chunk_read(f->fd, c, min, end);
}

static void *
feeder_thread(void *arg)
{
	struct feeder *f = arg;
	struct chunk *c;
	int end = 0, err;

	/* Cancelled (blks_reader_free) only while blocked in read(). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	for (;;) {
		pthread_mutex_lock(&f->lock);
		while (f->n_free == 0 && !f->stop)
			pthread_cond_wait(&f->cv_free, &f->lock);
		if (f->stop) {
			pthread_mutex_unlock(&f->lock);
			break;
		}
		c = f->free_[--f->n_free];
		pthread_mutex_unlock(&f->lock);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		err = feeder_read(f, c, &end);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_mutex_lock(&f->lock);
		f->full[(f->head + f->n_full++) % CHUNKS] = c;
		if (err != 0 || end) {
			f->err = err;
			f->done = 1;
		}
		pthread_cond_signal(&f->cv_full);
		pthread_mutex_unlock(&f->lock);
		if (err != 0 || end)
			break;
	}
	return NULL;
}

/* The next chunk of the stream, or NULL and *err (0 at its end). */
static struct chunk *
feeder_next(struct feeder *f, int *err)
{
	struct chunk *c = NULL;
	int end = 0;

	*err = 0;
	if (!f->threaded) {
		if (f->done || f->n_free == 0) {
			*err = f->err;
			return NULL;
		}
		c = f->free_[--f->n_free];
		f->err = feeder_read(f, c, &end);
		f->done = f->err != 0 || end;
		return c;
	}
	pthread_mutex_lock(&f->lock);
	while (f->n_full == 0 && !f->done)
		pthread_cond_wait(&f->cv_full, &f->lock);
	if (f->n_full > 0) {
		c = f->full[f->head];
		f->head = (f->head + 1) % CHUNKS;
		f->n_full--;
	} else {
		*err = f->err;
	}
	pthread_mutex_unlock(&f->lock);
	return c;
}

/* Gives c back to be read into again. */
static void
feeder_release(struct feeder *f, struct chunk *c)
{
	if (c == NULL)
		return;
	if (!f->threaded) {
		f->free_[f->n_free++] = c;
		return;
	}
	pthread_mutex_lock(&f->lock);
	f->free_[f->n_free++] = c;
	pthread_cond_signal(&f->cv_free);
	pthread_mutex_unlock(&f->lock);
}

static void
feeder_free(struct feeder *f)
{
	if (f == NULL)
		return;
	if (f->threaded) {
		pthread_mutex_lock(&f->lock);
		f->stop = 1;
		pthread_cond_signal(&f->cv_free);
		pthread_mutex_unlock(&f->lock);
		pthread_cancel(f->thread);
		pthread_join(f->thread, NULL);
		pthread_mutex_destroy(&f->lock);
		pthread_cond_destroy(&f->cv_full);
		pthread_cond_destroy(&f->cv_free);
	}
	for (size_t i = 0; i < CHUNKS; i++)
		free(f->chunk[i].mem);
	free(f);
}

static struct feeder *
feeder_new(int fd)
{
	struct feeder *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->fd = fd;
	for (size_t i = 0; i < CHUNKS; i++) {
		if ((f->chunk[i].mem = malloc(CHUNK_HEAD + CHUNK_DATA)) ==
		    NULL) {
			feeder_free(f);
			return NULL;
		}
		f->free_[f->n_free++] = &f->chunk[i];
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cv_full, NULL);
	pthread_cond_init(&f->cv_free, NULL);
	/* No thread, no harm: reader_fill reads then. */
	f->threaded = pthread_create(&f->thread, NULL, feeder_thread, f) == 0;
	if (!f->threaded) {
		pthread_mutex_destroy(&f->lock);
		pthread_cond_destroy(&f->cv_full);
		pthread_cond_destroy(&f->cv_free);
	}
	return f;
}

/* reader_fill for an fd reader: the next chunks, the window's rest
 * copied in front of them. */
static int
reader_fill_fd(struct blks_reader *r, size_t want, struct error *e)
{
	struct feeder *f = r->fd;
	struct chunk *c;
	size_t left;
	int err;

	while (r->len - r->pos < want && !r->eof) {
		if ((c = feeder_next(f, &err)) == NULL) {
			if (err != 0)
				return error_set_errno(e, err, "%s: read",
				    r->name);
			r->eof = 1;
			break;
		}
		left = r->len - r->pos;
		/* left < want, and no one wants more than a header. */
		if (left > CHUNK_HEAD) {
			feeder_release(f, c);
			return error_set(e, ERR_INTERNAL, "%s: %zu bytes "
			    "wanted at once", r->name, want);
		}
		memcpy(c->mem + CHUNK_HEAD - left, r->buf + r->pos, left);
		feeder_release(f, f->cur);
		f->cur = c;
		r->base += r->pos;
		r->buf = c->mem + CHUNK_HEAD - left;
		r->len = left + c->n;
		r->pos = 0;
	}
	return 0;
}

/* Makes at least want bytes unread in the window if the stream has them. */
static int
reader_fill(struct blks_reader *r, size_t want, struct error *e)
{
	size_t left, n;

	if (r->len - r->pos >= want || r->eof)
		return 0;
	if (r->fd != NULL)
		return reader_fill_fd(r, want, e);
	left = r->len - r->pos;
	memmove(r->own, r->own + r->pos, left);
	r->base += r->pos;
	r->pos = 0;
	r->len = left;
	while (r->len < want && !r->eof) {
		n = fread(r->own + r->len, 1, RBUF_SIZE - r->len, r->in);
		r->len += n;
		if (n == 0) {
			if (ferror(r->in))
				return error_set_errno(e, errno, "%s: read",
				    r->name);
			r->eof = 1;
		}
	}
	return 0;
}

static uint64_t
reader_off(const struct blks_reader *r)
{
	return r->base + r->pos;
}

uint64_t
blks_reader_offset(const struct blks_reader *r)
{
	return reader_off(r);
}

uint64_t
blks_reader_unknown(const struct blks_reader *r)
{
	return r->unknown;
}

const struct blks_header *
blks_reader_header(const struct blks_reader *r)
{
	return &r->hdr;
}

static int
read_header(struct blks_reader *r, struct error *e)
{
	const uint8_t *p;
	uint64_t hsize, plen;
	int rc;

	if ((rc = reader_fill(r, BLKS_HEADER_FIXED, e)) < 0)
		return rc;
	p = r->buf + r->pos;
	if (r->len - r->pos >= BLKS_MAGIC_LEN &&
	    memcmp(p, BLKS_MAGIC, BLKS_MAGIC_LEN) != 0)
		return error_set(e, ERR_FORMAT,
		    "%s: not a block stream (bad magic at byte 0)", r->name);
	if (r->len - r->pos < BLKS_HEADER_FIXED)
		return error_set(e, ERR_TRUNCATED,
		    "%s: header truncated at byte %zu", r->name, r->len);
	r->hdr.version = (uint16_t)get_le(p + 8, 2);
	if (r->hdr.version != BLKS_VERSION)
		return error_set(e, ERR_UNSUPPORTED,
		    "%s: block stream version %u (this reader knows %u) at byte 8",
		    r->name, r->hdr.version, BLKS_VERSION);
	hsize = get_le(p + 10, 2);
	r->hdr.flags = (uint32_t)get_le(p + 12, 4);
	r->hdr.time_shift = get_le(p + 16, 8);
	r->hdr.time_mult = get_le(p + 24, 8);
	r->hdr.time_zero = get_le(p + 32, 8);
	r->hdr.time_base_ns = get_le(p + 40, 8);
	r->hdr.decoder = (uint32_t)get_le(p + 48, 4);
	plen = get_le(p + 52, 4);
	if (plen > BLKS_PATH_MAX || hsize < BLKS_HEADER_FIXED + plen)
		return error_set(e, ERR_FORMAT,
		    "%s: header size %" PRIu64 " cannot hold a path of %"
		    PRIu64 " bytes (byte 10)", r->name, hsize, plen);
	r->pos += BLKS_HEADER_FIXED;
	if ((rc = reader_fill(r, hsize - BLKS_HEADER_FIXED, e)) < 0)
		return rc;
	if (r->len - r->pos < hsize - BLKS_HEADER_FIXED)
		return error_set(e, ERR_TRUNCATED,
		    "%s: header truncated at byte %" PRIu64, r->name,
		    r->base + r->len);
	if ((r->snapshot = malloc(plen + 1)) == NULL)
		return error_set(e, ERR_NOMEM, "%s: header", r->name);
	memcpy(r->snapshot, r->buf + r->pos, plen);
	r->snapshot[plen] = '\0';
	r->hdr.snapshot = r->snapshot;
	r->pos += hsize - BLKS_HEADER_FIXED;
	return 0;
}

static int
reader_new(struct blks_reader **out, FILE *in, int fd, const void *buf,
    size_t len, const char *name, struct error *e)
{
	struct blks_reader *r;
	int rc;

	*out = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->name = strdup(name != NULL ? name : "block stream")) == NULL ||
	    (in != NULL && (r->own = malloc(RBUF_SIZE)) == NULL) ||
	    (fd >= 0 && (r->fd = feeder_new(fd)) == NULL)) {
		blks_reader_free(r);
		return error_set(e, ERR_NOMEM, "%s: out of memory",
		    name != NULL ? name : "block stream");
	}
	r->in = in;
	r->refill = in != NULL || fd >= 0;
	if (in != NULL) {
		r->buf = r->own;
	} else if (fd >= 0) {
		r->buf = (const uint8_t *)"";
	} else {
		r->buf = buf;
		r->len = len;
		r->eof = 1;
	}
	if ((rc = read_header(r, e)) < 0) {
		blks_reader_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int
blks_reader_open(struct blks_reader **out, FILE *in, const char *name,
    struct error *e)
{
	return reader_new(out, in, -1, NULL, 0, name, e);
}

int
blks_reader_open_fd(struct blks_reader **out, int fd, const char *name,
    struct error *e)
{
	return reader_new(out, NULL, fd, NULL, 0, name, e);
}

int
blks_reader_open_mem(struct blks_reader **out, const void *buf, size_t len,
    const char *name, struct error *e)
{
	return reader_new(out, NULL, -1, buf, len, name, e);
}

void
blks_reader_free(struct blks_reader *r)
{
	if (r == NULL)
		return;
	feeder_free(r->fd);
	free(r->own);
	free(r->name);
	free(r->snapshot);
	free(r);
}

/* A bounded cursor over one payload. */
struct cur {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t
cur_varint(struct cur *c)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (c->p >= c->end) {
			c->bad = 1;
			return 0;
		}
		b = *c->p++;
		if (shift == 63 && b > 1) {
			c->bad = 1;	/* more than 64 bits */
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = 1;
	return 0;
}

/* cur_varint for the hot path: most values of a block are one byte. */
static inline uint64_t
cur_varint_fast(struct cur *c)
{
	if (c->p < c->end && *c->p < 0x80)
		return *c->p++;
	return cur_varint(c);
}

static uint32_t
cur_u32(struct cur *c)
{
	uint64_t v = cur_varint(c);

	if (v > UINT32_MAX)
		c->bad = 1;
	return (uint32_t)v;
}

static uint8_t
cur_u8(struct cur *c)
{
	if (c->p >= c->end) {
		c->bad = 1;
		return 0;
	}
	return *c->p++;
}

/* Copies a length-prefixed string into the reader's string area. */
static const char *
cur_string(struct blks_reader *r, struct cur *c, size_t max)
{
	uint64_t len = cur_varint(c);
	char *s;

	if (c->bad || len > max || len > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		return "";
	}
	s = r->str + r->str_used;
	memcpy(s, c->p, len);
	s[len] = '\0';
	r->str_used += len + 1;
	c->p += len;
	return s;
}

static void
decode_map(struct blks_reader *r, struct cur *c, struct blks_map *m)
{
	m->pid = cur_u32(c);
	m->flags = cur_u32(c);
	m->start = cur_varint(c);
	m->size = cur_varint(c);
	m->pgoff = cur_varint(c);
	m->build_id_size = cur_u8(c);
	if (m->build_id_size > BLKS_BUILD_ID_MAX ||
	    m->build_id_size > c->end - c->p) {
		c->bad = 1;
		return;
	}
	memcpy(m->build_id, c->p, m->build_id_size);
	c->p += m->build_id_size;
	m->name = cur_string(r, c, BLKS_PATH_MAX);
	m->image = cur_string(r, c, BLKS_PATH_MAX);
	m->symbols = c->p < c->end ? cur_string(r, c, BLKS_PATH_MAX) : "";
	m->exec = c->p < c->end ? cur_u32(c) : 0;
}

static void
decode_thread(struct blks_reader *r, struct cur *c, struct blks_thread *t)
{
	t->tid = cur_u32(c);
	t->pid = cur_u32(c);
	t->flags = cur_u32(c);
	t->trace_bytes = cur_varint(c);
	t->name = cur_string(r, c, BLKS_TEXT_MAX);
	r->prev_ip = 0;
	r->prev_time = 0;
}

/*
 * A BLOCK payload into *b; the delta state moves on only when c stays
 * good.  The general path and the fast one (read_block_fast) both use it.
 */
static inline void
decode_block(struct blks_reader *r, struct cur *c, struct blks_block *b)
{
	uint64_t ninsn;
	uint8_t cls;

	b->ip = r->prev_ip + unzigzag(cur_varint_fast(c));
	b->end_ip = b->ip + unzigzag(cur_varint_fast(c));
	ninsn = cur_varint_fast(c);
	cls = cur_u8(c);
	b->time = r->prev_time + unzigzag(cur_varint_fast(c));
	if (ninsn > UINT32_MAX)
		c->bad = 1;
	if (c->bad)
		return;
	b->ninsn = (uint32_t)ninsn;
	b->iclass = cls & 0xf;
	b->flags = (cls >> 4) & 0x3;
	b->mode = cls >> 6;
	r->prev_ip = b->end_ip;
	r->prev_time = b->time;
}

static void
decode_event(struct blks_reader *r, struct cur *c, struct blks_event *ev)
{
	ev->kind = cur_u8(c);
	ev->flags = cur_u8(c);
	ev->ip = cur_varint(c);
	ev->at = cur_varint(c);
	ev->arg = cur_varint(c);
	ev->time = r->prev_time + unzigzag(cur_varint(c));
	r->prev_time = ev->time;
}

static void
decode_gap(struct blks_reader *r, struct cur *c, struct blks_gap *g)
{
	uint64_t code;

	g->cause = cur_u8(c);
	g->ip = cur_varint(c);
	g->time = r->prev_time + unzigzag(cur_varint(c));
	g->offset = cur_varint(c);
	g->bytes_skipped = cur_varint(c);
	code = unzigzag(cur_varint(c));
	if ((int64_t)code < INT32_MIN || (int64_t)code > INT32_MAX)
		c->bad = 1;
	g->errcode = (int32_t)(int64_t)code;
	g->text = cur_string(r, c, BLKS_TEXT_MAX);
	r->prev_time = g->time;
}

static void
decode_end(struct cur *c, struct blks_end *end)
{
	uint64_t n;

	end->tid = cur_u32(c);
	n = cur_varint(c);
	for (uint64_t i = 0; i < n && !c->bad; i++) {
		uint64_t v = cur_varint(c);

		if (i < BLKS_C_NR)
			end->c[i] = v;
	}
}

static int
reader_fail(struct blks_reader *r, int rc, struct error *e)
{
	r->state = rc;
	r->saved = *e;
	return rc;
}

/* Checks group order for a record of type at off; 0 or -ERR_FORMAT. */
static int
reader_order(struct blks_reader *r, const struct blks_record *rec,
    uint64_t off, struct error *e)
{
	int inside = rec->type == BLKS_BLOCK || rec->type == BLKS_EVENT ||
	    rec->type == BLKS_GAP || rec->type == BLKS_END;

	if (inside && !r->in_thread)
		return error_set(e, ERR_FORMAT,
		    "%s: %s record outside a thread at byte %" PRIu64,
		    r->name, blks_type_name(rec->type), off);
	if (!inside && r->in_thread)
		return error_set(e, ERR_FORMAT,
		    "%s: %s record inside thread %u at byte %" PRIu64,
		    r->name, blks_type_name(rec->type), r->tid, off);
	return 0;
}

static void
decode_payload(struct blks_reader *r, struct cur *c, struct blks_record *rec)
{
	switch (rec->type) {
	case BLKS_MAP:
		decode_map(r, c, &rec->u.map);
		break;
	case BLKS_THREAD:
		decode_thread(r, c, &rec->u.thread);
		break;
	case BLKS_BLOCK:
		decode_block(r, c, &rec->u.block);
		break;
	case BLKS_EVENT:
		decode_event(r, c, &rec->u.event);
		break;
	case BLKS_GAP:
		decode_gap(r, c, &rec->u.gap);
		break;
	case BLKS_END:
		decode_end(c, &rec->u.end);
		break;
	default:
		rec->u.eos.nr_threads = cur_u32(c);
		break;
	}
}

/* Applies what a well-formed record changes in the group state. */
static int
reader_track(struct blks_reader *r, const struct blks_record *rec,
    uint64_t off, struct error *e)
{
	if (rec->type == BLKS_THREAD) {
		r->in_thread = 1;
		r->tid = rec->u.thread.tid;
		r->nr_threads++;
	} else if (rec->type == BLKS_END) {
		if (rec->u.end.tid != r->tid)
			return error_set(e, ERR_FORMAT,
			    "%s: END for thread %u closes thread %u at byte %"
			    PRIu64, r->name, rec->u.end.tid, r->tid, off);
		r->in_thread = 0;
	} else if (rec->type == BLKS_EOS &&
	    rec->u.eos.nr_threads != r->nr_threads) {
		return error_set(e, ERR_FORMAT,
		    "%s: end record counts %u threads, the stream has %u "
		    "(byte %" PRIu64 ")", r->name, rec->u.eos.nr_threads,
		    r->nr_threads, off);
	}
	return 0;
}

/* After EOS: the stream must end there. */
static int
reader_expect_end(struct blks_reader *r, struct error *e)
{
	int rc;

	if (r->refill && (rc = reader_fill(r, 1, e)) < 0)
		return rc;
	if (r->len > r->pos)
		return error_set(e, ERR_FORMAT,
		    "%s: bytes after the end record at byte %" PRIu64,
		    r->name, reader_off(r));
	return 0;
}

/* Reads a frame and its payload into r->payload; sets *type, *plen. */
static int
read_frame(struct blks_reader *r, uint8_t *type, size_t *plen,
    struct error *e)
{
	uint64_t off = reader_off(r);
	struct cur c;
	uint64_t len;
	int rc;

	if (r->refill && (rc = reader_fill(r, FRAME_MAX, e)) < 0)
		return rc;
	if (r->pos == r->len)
		return error_set(e, ERR_TRUNCATED,
		    "%s: stream ends without its end record at byte %" PRIu64,
		    r->name, off);
	*type = r->buf[r->pos];
	c.p = r->buf + r->pos + 1;
	c.end = r->buf + r->len;
	c.bad = 0;
	len = cur_varint(&c);
	if (c.bad && r->len - r->pos < FRAME_MAX)
		return error_set(e, ERR_TRUNCATED,
		    "%s: record truncated at byte %" PRIu64, r->name, off);
	if (c.bad || len > BLKS_PAYLOAD_MAX)
		return error_set(e, ERR_FORMAT,
		    "%s: record length %" PRIu64 " too large at byte %" PRIu64,
		    r->name, len, off);
	r->pos = (size_t)(c.p - r->buf);
	if (r->refill && (rc = reader_fill(r, len, e)) < 0)
		return rc;
	if (r->len - r->pos < len)
		return error_set(e, ERR_TRUNCATED,
		    "%s: %s record truncated at byte %" PRIu64 " (%" PRIu64
		    " bytes announced, %zu present)", r->name,
		    blks_type_name(*type), off, len, r->len - r->pos);
	memcpy(r->payload, r->buf + r->pos, len);
	r->pos += len;
	*plen = len;
	return 0;
}

/*
 * The common case, a BLOCK record of the usual shape inside a thread,
 * all in the window: decoded where it is, with the checks of the general
 * path (anything else goes there, which also says what is wrong).
 * Returns 1 when done.
 */
static inline int
read_block_fast(struct blks_reader *r, struct blks_record *rec)
{
	struct blks_run run;

	blks_run_begin(r, &run);
	if (!blks_run_next(&run, &rec->u.block))
		return 0;
	rec->type = BLKS_BLOCK;
	blks_run_end(r, &run);
	return 1;
}

int
blks_run_begin(struct blks_reader *r, struct blks_run *run)
{
	run->p = r->buf + r->pos;
	/* No record when the run cannot be used: end == p. */
	run->end = run->p;
	if (r->len - r->pos >= 8)
		run->end = r->buf + r->len - 7;
	run->prev_ip = r->prev_ip;
	run->prev_time = r->prev_time;
	if (r->state != 0 || !r->in_thread) {
		run->end = run->p;
		return 0;
	}
	return 1;
}

void
blks_run_end(struct blks_reader *r, const struct blks_run *run)
{
	r->pos = (size_t)(run->p - r->buf);
	r->prev_ip = run->prev_ip;
	r->prev_time = run->prev_time;
}

size_t
blks_read_blocks(struct blks_reader *r, struct blks_block *b, size_t max)
{
	struct blks_run run;
	size_t n = 0;

	if (!blks_run_begin(r, &run))
		return 0;
	while (n < max && blks_run_next(&run, &b[n]))
		n++;
	blks_run_end(r, &run);
	return n;
}

/* blks_read for everything but the common BLOCK. */
static int __attribute__((noinline))
read_record(struct blks_reader *r, struct blks_record *rec, struct error *e)
{
	uint64_t off;
	size_t plen = 0;
	struct cur c;
	int rc;

	if (r->state < 0) {
		*e = r->saved;
		return r->state;
	}
	if (r->state == 1)
		return 0;
	for (;;) {
		off = reader_off(r);
		memset(rec, 0, sizeof(*rec));
		if ((rc = read_frame(r, &rec->type, &plen, e)) < 0)
			return reader_fail(r, rc, e);
		if (rec->type >= BLKS_MAP && rec->type <= BLKS_EOS)
			break;
		r->unknown++;
	}
	if ((rc = reader_order(r, rec, off, e)) < 0)
		return reader_fail(r, rc, e);
	c.p = r->payload;
	c.end = r->payload + plen;
	c.bad = 0;
	r->str_used = 0;
	decode_payload(r, &c, rec);
	if (c.bad)
		return reader_fail(r, error_set(e, ERR_FORMAT,
		    "%s: malformed %s record at byte %" PRIu64, r->name,
		    blks_type_name(rec->type), off), e);
	if ((rc = reader_track(r, rec, off, e)) < 0)
		return reader_fail(r, rc, e);
	if (rec->type != BLKS_EOS)
		return 1;
	if ((rc = reader_expect_end(r, e)) < 0)
		return reader_fail(r, rc, e);
	r->state = 1;
	return 0;
}

int
blks_read(struct blks_reader *r, struct blks_record *rec, struct error *e)
{
	if (read_block_fast(r, rec))
		return 1;
	return read_record(r, rec, e);
}
