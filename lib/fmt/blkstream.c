/* blkstream: see blkstream.h and man/ptkit-blocks.5. */
#include "fmt/blkstream.h"

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonw.h"

#define WBUF_SIZE (256 * 1024)
/* Encoded runs this long are written without a copy through the buffer. */
#define ENCODED_DIRECT (8 * 1024)
/*
 * The reader's window.  A FILE without a buffer of its own (ptspans'
 * stdin) is read straight into it: a pipe's worth (pipebuf.h) at once,
 * copied once.
 */
#define RBUF_SIZE (1024 * 1024)
#define VARINT_MAX 10
/* A record's frame: type byte and the length varint. */
#define FRAME_MAX (1 + VARINT_MAX)
#define BLOCK_MAX BLKS_BLOCK_MAX
_Static_assert(BLKS_BLOCK_MAX >= 2 + 4 * VARINT_MAX + 1,
    "a BLOCK record: frame, four varints, a byte, one byte of slack");

static const char *const type_names[] = {
	NULL, "map", "thread", "block", "event", "gap", "end", "eos",
};

static const char *const event_names[BLKS_EV_KIND_MAX] = {
	NULL, "enabled", "disabled", "async_branch", "overflow", "exec_mode",
	"paging", "tsx", "stop", "vmcs", "exstop", "mwait", "pwre", "pwrx",
	"ptwrite", "cbr",
};

static const char *const gap_names[BLKS_GAP_CAUSE_MAX] = {
	NULL, "decode_error", "unknown_image", "ring_start", "overflow",
	"lost",
};

static const char *const counter_names[BLKS_C_NR] = {
	"blocks", "insns", "events", "gaps", "decode_errors",
	"unknown_image", "overflows", "trace_bytes", "bytes_skipped",
	"psbs", "fallbacks",
};

static const char *const decoder_names[] = { "native", "fast", "perf" };

/* libipt's enum pt_insn_class, in order. */
static const char *const class_names[] = {
	"error", "other", "call", "return", "jump", "cond_jump", "far_call",
	"far_return", "far_jump", "ptwrite",
};

static const char *const mode_names[] = { "unknown", "16", "32", "64" };

#define NAME_OF(table, i) \
	((i) < sizeof(table) / sizeof((table)[0]) && (table)[i] != NULL ? \
	    (table)[i] : "unknown")

const char *
blks_type_name(unsigned type)
{
	return NAME_OF(type_names, type);
}

const char *
blks_event_name(unsigned kind)
{
	return NAME_OF(event_names, kind);
}

const char *
blks_gap_cause_name(unsigned cause)
{
	return NAME_OF(gap_names, cause);
}

const char *
blks_counter_name(unsigned counter)
{
	return NAME_OF(counter_names, counter);
}

const char *
blks_decoder_name(unsigned decoder)
{
	return NAME_OF(decoder_names, decoder);
}

/* ----------------------------------------------------------------- */
/* Encoding primitives */

static uint64_t
zigzag(uint64_t delta)
{
	return blks_zigzag(delta);
}

static uint64_t
unzigzag(uint64_t z)
{
	return blks_unzigzag(z);
}

static size_t
put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void
put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A payload under construction; sized for the largest legal payload. */
struct pbuf {
	uint8_t b[BLKS_PAYLOAD_MAX + 16 * VARINT_MAX + BLKS_BUILD_ID_MAX];
	size_t n;
};

static void
pb_varint(struct pbuf *p, uint64_t v)
{
	p->n += put_varint(p->b + p->n, v);
}

static void
pb_u8(struct pbuf *p, uint8_t v)
{
	p->b[p->n++] = v;
}

static void
pb_bytes(struct pbuf *p, const void *s, size_t len)
{
	memcpy(p->b + p->n, s, len);
	p->n += len;
}

/* ----------------------------------------------------------------- */
/* Writer */

struct blks_writer {
	int fd;			/* -1 when writing to f */
	FILE *f;
	uint8_t buf[WBUF_SIZE];
	size_t used;
	uint64_t flushed;
	int error;		/* sticky negative err_code */
	int in_thread;
	uint32_t tid;
	uint64_t prev_ip, prev_time;
	struct pbuf pb;
};

/* Hands len bytes at p to the fd or FILE. */
static int
writer_out(struct blks_writer *w, const uint8_t *p, size_t len,
    struct error *e)
{
	size_t off = 0;

	if (w->f != NULL) {
		if (len > 0 && fwrite(p, 1, len, w->f) != len)
			return error_set_errno(e, errno, "block stream write");
	} else {
		while (off < len) {
			ssize_t n = write(w->fd, p + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return error_set_errno(e, errno,
				    "block stream write");
			off += (size_t)n;
		}
	}
	w->flushed += len;
	return 0;
}

static int
writer_flush(struct blks_writer *w, struct error *e)
{
	int rc = writer_out(w, w->buf, w->used, e);

	if (rc == 0)
		w->used = 0;
	return rc;
}

static int
writer_put(struct blks_writer *w, const void *p, size_t len, struct error *e)
{
	int rc;

	if (w->used + len > sizeof(w->buf)) {
		if ((rc = writer_flush(w, e)) < 0)
			return rc;
	}
	if (len > sizeof(w->buf))
		return error_set(e, ERR_INTERNAL, "record of %zu bytes", len);
	memcpy(w->buf + w->used, p, len);
	w->used += len;
	return 0;
}

static int
write_header(struct blks_writer *w, const struct blks_header *h,
    struct error *e)
{
	uint8_t fixed[BLKS_HEADER_FIXED];
	const char *path = h->snapshot != NULL ? h->snapshot : "";
	size_t plen = strlen(path);
	int rc;

	if (plen > BLKS_PATH_MAX)
		return error_set(e, ERR_INVALID,
		    "snapshot path of %zu bytes is too long", plen);
	memcpy(fixed, BLKS_MAGIC, BLKS_MAGIC_LEN);
	put_le(fixed + 8, BLKS_VERSION, 2);
	put_le(fixed + 10, BLKS_HEADER_FIXED + plen, 2);
	put_le(fixed + 12, h->flags, 4);
	put_le(fixed + 16, h->time_shift, 8);
	put_le(fixed + 24, h->time_mult, 8);
	put_le(fixed + 32, h->time_zero, 8);
	put_le(fixed + 40, h->time_base_ns, 8);
	put_le(fixed + 48, h->decoder, 4);
	put_le(fixed + 52, plen, 4);
	if ((rc = writer_put(w, fixed, sizeof(fixed), e)) < 0)
		return rc;
	return writer_put(w, path, plen, e);
}

static int
writer_open(struct blks_writer **out, int fd, FILE *f,
    const struct blks_header *h, struct error *e)
{
	struct blks_writer *w;
	int rc;

	*out = NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return error_set(e, ERR_NOMEM, "block stream writer");
	w->fd = fd;
	w->f = f;
	if ((rc = write_header(w, h, e)) < 0) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int
blks_writer_open_fd(struct blks_writer **out, int fd,
    const struct blks_header *h, struct error *e)
{
	return writer_open(out, fd, NULL, h, e);
}

int
blks_writer_open_file(struct blks_writer **out, FILE *f,
    const struct blks_header *h, struct error *e)
{
	return writer_open(out, -1, f, h, e);
}

uint64_t
blks_writer_bytes(const struct blks_writer *w)
{
	return w->flushed + w->used;
}

static int
pb_string(struct pbuf *p, const char *s, size_t max, const char *what,
    struct error *e)
{
	size_t len = s != NULL ? strlen(s) : 0;

	if (len > max)
		return error_set(e, ERR_INVALID, "%s of %zu bytes is too long",
		    what, len);
	pb_varint(p, len);
	pb_bytes(p, s, len);
	return 0;
}

static int
encode_map(struct pbuf *p, const struct blks_map *m, struct error *e)
{
	int rc;

	if (m->build_id_size > BLKS_BUILD_ID_MAX)
		return error_set(e, ERR_INVALID, "build-id of %u bytes",
		    m->build_id_size);
	pb_varint(p, m->pid);
	pb_varint(p, m->flags);
	pb_varint(p, m->start);
	pb_varint(p, m->size);
	pb_varint(p, m->pgoff);
	pb_u8(p, m->build_id_size);
	pb_bytes(p, m->build_id, m->build_id_size);
	if ((rc = pb_string(p, m->name, BLKS_PATH_MAX, "map name", e)) < 0 ||
	    (rc = pb_string(p, m->image, BLKS_PATH_MAX, "map image path",
	    e)) < 0)
		return rc;
	if (m->symbols == NULL || m->symbols[0] == '\0')
		return 0;
	if (p->n + VARINT_MAX + strlen(m->symbols) > BLKS_PAYLOAD_MAX)
		return error_set(e, ERR_INVALID, "MAP record of %s: paths "
		    "too long together", m->name);
	return pb_string(p, m->symbols, BLKS_PATH_MAX, "map symbols path", e);
}

static int
encode_thread(struct blks_writer *w, const struct blks_thread *t,
    struct error *e)
{
	struct pbuf *p = &w->pb;

	pb_varint(p, t->tid);
	pb_varint(p, t->pid);
	pb_varint(p, t->flags);
	pb_varint(p, t->trace_bytes);
	w->in_thread = 1;
	w->tid = t->tid;
	w->prev_ip = 0;
	w->prev_time = 0;
	return pb_string(p, t->name, BLKS_TEXT_MAX, "thread name", e);
}

/*
 * A block's class, flags and mode side by side (one load where the
 * compiler can), for block_fits and block_byte.
 */
static inline uint32_t
block_bits(const struct blks_block *b)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint16_t lo;

	/* Two loads, no 3-byte copy through memory (a store-forward stall). */
	memcpy(&lo, (const uint8_t *)b + offsetof(struct blks_block, iclass),
	    sizeof(lo));
	return lo | (uint32_t)b->mode << 16;
#else
	return b->iclass | (uint32_t)b->flags << 8 | (uint32_t)b->mode << 16;
#endif
}

_Static_assert(offsetof(struct blks_block, flags) ==
    offsetof(struct blks_block, iclass) + 1 &&
    offsetof(struct blks_block, mode) ==
    offsetof(struct blks_block, iclass) + 2,
    "block_bits reads class, flags and mode as three bytes");

/* Whether class, flags and mode fit their bits of the byte. */
static inline int
block_fits(uint32_t bits)
{
	return (bits & 0xfcfcf0) == 0;
}

/* The byte of a block that fits: class | flags << 4 | mode << 6. */
static inline uint64_t
block_byte(uint32_t bits)
{
	return (bits & 0xf) | (bits >> 4 & 0x30) | (bits >> 10 & 0xc0);
}

static int
block_range_error(const struct blks_block *b, struct error *e)
{
	return error_set(e, ERR_INVALID,
	    "block class %u, flags %u, mode %u out of range", b->iclass,
	    b->flags, b->mode);
}

/*
 * put_varint for the block shapes blks_put_block leaves here: most values
 * still take one byte or two, which one varies, so those are written
 * without a branch (the room has a byte more than any record needs).
 */
static inline uint8_t *
put_varint_fast(uint8_t *p, uint64_t v)
{
	uint64_t two = (v & 0x7f) | 0x80 | (v >> 7) << 8;
	int big = v >= 0x80;

	if (v >= 0x4000)
		return p + put_varint(p, v);
	p[0] = (uint8_t)(big ? two : v);
	p[1] = (uint8_t)(two >> 8);
	return p + 1 + big;
}

/* blks_put_block for the other shapes, out of the hot loop. */
uint8_t * __attribute__((noinline))
blks_put_block_varints(uint8_t *p, uint64_t dip, uint64_t len,
    uint32_t ninsn, uint64_t cls, uint64_t dt)
{
	uint8_t *q = p + 2;

	q = put_varint_fast(q, dip);
	q = put_varint_fast(q, len);
	q = put_varint_fast(q, ninsn);
	*q++ = (uint8_t)cls;
	q = put_varint_fast(q, dt);
	p[0] = BLKS_BLOCK;
	p[1] = (uint8_t)(q - p - 2);
	return q;
}

/* The one encoding of a block: blks_write and blks_write_blocks. */
static inline uint8_t *
put_block(uint8_t *p, const struct blks_block *b, uint64_t cls,
    uint64_t prev_ip, uint64_t prev_time)
{
	return blks_put_block(p, b->ip, b->end_ip, b->ninsn, cls, b->time,
	    prev_ip, prev_time);
}

static void
encode_event(struct blks_writer *w, const struct blks_event *ev)
{
	struct pbuf *p = &w->pb;

	pb_u8(p, ev->kind);
	pb_u8(p, ev->flags);
	pb_varint(p, ev->ip);
	pb_varint(p, ev->at);
	pb_varint(p, ev->arg);
	pb_varint(p, zigzag(ev->time - w->prev_time));
	w->prev_time = ev->time;
}

static int
encode_gap(struct blks_writer *w, const struct blks_gap *g, struct error *e)
{
	struct pbuf *p = &w->pb;

	pb_u8(p, g->cause);
	pb_varint(p, g->ip);
	pb_varint(p, zigzag(g->time - w->prev_time));
	pb_varint(p, g->offset);
	pb_varint(p, g->bytes_skipped);
	pb_varint(p, zigzag((uint64_t)(int64_t)g->errcode));
	w->prev_time = g->time;
	return pb_string(p, g->text, BLKS_TEXT_MAX, "gap text", e);
}

static int
encode_end(struct blks_writer *w, const struct blks_end *end,
    struct error *e)
{
	struct pbuf *p = &w->pb;

	if (end->tid != w->tid)
		return error_set(e, ERR_INVALID,
		    "END for thread %u inside thread %u", end->tid, w->tid);
	pb_varint(p, end->tid);
	pb_varint(p, BLKS_C_NR);
	for (int i = 0; i < BLKS_C_NR; i++)
		pb_varint(p, end->c[i]);
	w->in_thread = 0;
	return 0;
}

/* Checks that r may come now (groups); returns 0 or -ERR_INVALID. */
static int
check_order(const struct blks_writer *w, const struct blks_record *r,
    struct error *e)
{
	int inside = r->type == BLKS_BLOCK || r->type == BLKS_EVENT ||
	    r->type == BLKS_GAP || r->type == BLKS_END;

	if (r->type < BLKS_MAP || r->type > BLKS_EOS)
		return error_set(e, ERR_INVALID, "record type %u", r->type);
	if (inside && !w->in_thread)
		return error_set(e, ERR_INVALID, "%s record outside a thread",
		    blks_type_name(r->type));
	if (!inside && w->in_thread)
		return error_set(e, ERR_INVALID,
		    "%s record inside thread %u", blks_type_name(r->type),
		    w->tid);
	return 0;
}

static int
encode_record(struct blks_writer *w, const struct blks_record *r,
    struct error *e)
{
	switch (r->type) {
	case BLKS_MAP:
		return encode_map(&w->pb, &r->u.map, e);
	case BLKS_THREAD:
		return encode_thread(w, &r->u.thread, e);
	case BLKS_BLOCK:		/* blks_write_blocks() */
		return error_set(e, ERR_INTERNAL, "block through payload");
	case BLKS_EVENT:
		encode_event(w, &r->u.event);
		return 0;
	case BLKS_GAP:
		return encode_gap(w, &r->u.gap, e);
	case BLKS_END:
		return encode_end(w, &r->u.end, e);
	default:
		pb_varint(&w->pb, r->u.eos.nr_threads);
		return 0;
	}
}

int
blks_write_blocks(struct blks_writer *w, const struct blks_block *b,
    size_t n, struct error *e)
{
	uint8_t *p = w->buf + w->used;
	uint64_t prev_ip = w->prev_ip, prev_time = w->prev_time;
	size_t i = 0, room;
	int rc = 0;

	if (w->error != 0)
		return error_set(e, -w->error, "block stream writer failed");
	if (!w->in_thread) {
		rc = error_set(e, ERR_INVALID, "block record outside a thread");
		goto fail;
	}
	while (i < n && rc == 0) {
		/* Blocks that surely fit the buffer: no check each. */
		room = (size_t)(w->buf + sizeof(w->buf) - p) / BLOCK_MAX;
		if (room == 0) {
			w->used = (size_t)(p - w->buf);
			if ((rc = writer_flush(w, e)) < 0)
				break;
			p = w->buf;
			continue;
		}
		for (room = i + (room < n - i ? room : n - i); i < room; i++) {
			uint32_t bits = block_bits(&b[i]);

			if (!block_fits(bits)) {
				rc = block_range_error(&b[i], e);
				break;
			}
			p = put_block(p, &b[i], block_byte(bits), prev_ip,
			    prev_time);
			prev_ip = b[i].end_ip;
			prev_time = b[i].time;
		}
	}
	w->used = (size_t)(p - w->buf);
	w->prev_ip = prev_ip;
	w->prev_time = prev_time;
	if (rc == 0)
		return 0;
fail:
	w->error = rc;
	return rc;
}

int
blks_write_encoded(struct blks_writer *w, const uint8_t *p, size_t len,
    uint64_t last_ip, uint64_t last_time, struct error *e)
{
	int rc;

	if (w->error != 0)
		return error_set(e, -w->error, "block stream writer failed");
	if (!w->in_thread) {
		rc = error_set(e, ERR_INVALID, "block record outside a thread");
		goto fail;
	}
	/* A large run is written where it is: no copy through buf. */
	if (len >= ENCODED_DIRECT) {
		if ((rc = writer_flush(w, e)) < 0 ||
		    (rc = writer_out(w, p, len, e)) < 0)
			goto fail;
	} else if ((rc = writer_put(w, p, len, e)) < 0) {
		goto fail;
	}
	w->prev_ip = last_ip;
	w->prev_time = last_time;
	return 0;
fail:
	w->error = rc;
	return rc;
}

int
blks_write(struct blks_writer *w, const struct blks_record *r,
    struct error *e)
{
	uint8_t frame[FRAME_MAX];
	size_t n;
	int rc;

	if (r->type == BLKS_BLOCK)
		return blks_write_blocks(w, &r->u.block, 1, e);
	if (w->error != 0)
		return error_set(e, -w->error, "block stream writer failed");
	if ((rc = check_order(w, r, e)) < 0)
		goto fail;
	w->pb.n = 0;
	if ((rc = encode_record(w, r, e)) < 0)
		goto fail;
	frame[0] = r->type;
	n = 1 + put_varint(frame + 1, w->pb.n);
	if ((rc = writer_put(w, frame, n, e)) < 0 ||
	    (rc = writer_put(w, w->pb.b, w->pb.n, e)) < 0)
		goto fail;
	return 0;
fail:
	w->error = rc;
	return rc;
}

int
blks_writer_close(struct blks_writer *w, struct error *e)
{
	int rc = 0;

	if (w == NULL)
		return 0;
	if (w->error == 0)
		rc = writer_flush(w, e);
	else
		rc = error_set(e, -w->error, "block stream writer failed");
	if (rc == 0 && w->f != NULL && fflush(w->f) != 0)
		rc = error_set_errno(e, errno, "block stream write");
	free(w);
	return rc;
}

/* ----------------------------------------------------------------- */
/* Reader */

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

/* ----------------------------------------------------------------- */
/* JSON Lines */

static void
kv_hex(struct jsonw *w, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	jsonw_kv_string(w, key, buf);
}

void
blks_jsonl_header(struct jsonw *w, const struct blks_header *h)
{
	jsonw_object_begin(w);
	jsonw_kv_string(w, "type", "header");
	jsonw_kv_u64(w, "version", h->version ? h->version : BLKS_VERSION);
	jsonw_kv_string(w, "decoder", blks_decoder_name(h->decoder));
	jsonw_kv_string(w, "snapshot", h->snapshot ? h->snapshot : "");
	jsonw_kv_bool(w, "timed", (h->flags & BLKS_HDR_TIMED) != 0);
	jsonw_kv_u64(w, "time_shift", h->time_shift);
	jsonw_kv_u64(w, "time_mult", h->time_mult);
	jsonw_kv_u64(w, "time_zero", h->time_zero);
	jsonw_kv_u64(w, "time_base_ns", h->time_base_ns);
	jsonw_object_end(w);
	jsonw_newline(w);
}

static void
jsonl_map(struct jsonw *w, const struct blks_map *m)
{
	char bid[2 * BLKS_BUILD_ID_MAX + 1];

	for (unsigned i = 0; i < m->build_id_size && i < BLKS_BUILD_ID_MAX;
	    i++)
		snprintf(bid + 2 * i, 3, "%02x", m->build_id[i]);
	bid[2 * (m->build_id_size <= BLKS_BUILD_ID_MAX ?
	    m->build_id_size : 0)] = '\0';
	jsonw_kv_u64(w, "pid", m->pid);
	kv_hex(w, "start", m->start);
	kv_hex(w, "end", m->start + m->size);
	kv_hex(w, "pgoff", m->pgoff);
	jsonw_kv_string(w, "name", m->name ? m->name : "");
	jsonw_kv_string(w, "image", m->image ? m->image : "");
	jsonw_kv_string(w, "build_id", bid);
	jsonw_kv_bool(w, "missing", (m->flags & BLKS_MAP_MISSING) != 0);
	jsonw_kv_bool(w, "live", (m->flags & BLKS_MAP_LIVE) != 0);
	if (m->flags & BLKS_MAP_JIT) {
		jsonw_kv_bool(w, "jit", 1);
		jsonw_kv_string(w, "symbols", m->symbols ? m->symbols : "");
	}
}

static void
jsonl_block(struct jsonw *w, const struct blks_block *b)
{
	kv_hex(w, "ip", b->ip);
	kv_hex(w, "end_ip", b->end_ip);
	jsonw_kv_u64(w, "ninsn", b->ninsn);
	jsonw_kv_string(w, "class", NAME_OF(class_names, b->iclass));
	jsonw_kv_string(w, "mode", NAME_OF(mode_names, b->mode));
	jsonw_kv_u64(w, "time", b->time);
	if (b->flags & BLKS_BLOCK_SPECULATIVE)
		jsonw_kv_bool(w, "speculative", 1);
	if (b->flags & BLKS_BLOCK_TRUNCATED)
		jsonw_kv_bool(w, "truncated", 1);
}

static void
jsonl_event(struct jsonw *w, const struct blks_event *ev)
{
	jsonw_kv_string(w, "kind", blks_event_name(ev->kind));
	if (ev->flags & BLKS_EVF_IP_SUPPRESSED)
		jsonw_kv_bool(w, "ip_suppressed", 1);
	else
		kv_hex(w, "ip", ev->ip);
	if (ev->kind == BLKS_EV_ASYNC_BRANCH || (ev->kind ==
	    BLKS_EV_DISABLED && ev->arg == BLKS_DIS_ASYNC))
		kv_hex(w, "at", ev->at);
	if (ev->kind == BLKS_EV_DISABLED)
		jsonw_kv_string(w, "reason",
		    ev->arg == BLKS_DIS_ASYNC ? "async" : "sync");
	else if (ev->kind == BLKS_EV_PAGING || ev->kind == BLKS_EV_VMCS)
		kv_hex(w, "arg", ev->arg);
	else
		jsonw_kv_u64(w, "arg", ev->arg);
	if (ev->flags & BLKS_EVF_STATUS_UPDATE)
		jsonw_kv_bool(w, "status_update", 1);
	if (ev->flags & BLKS_EVF_ASYNC)
		jsonw_kv_bool(w, "async", 1);
	if (ev->flags & BLKS_EVF_NON_ROOT)
		jsonw_kv_bool(w, "non_root", 1);
	jsonw_kv_u64(w, "time", ev->time);
}

static void
jsonl_gap(struct jsonw *w, const struct blks_gap *g)
{
	jsonw_kv_string(w, "cause", blks_gap_cause_name(g->cause));
	kv_hex(w, "ip", g->ip);
	jsonw_kv_u64(w, "time", g->time);
	jsonw_kv_u64(w, "offset", g->offset);
	jsonw_kv_u64(w, "bytes_skipped", g->bytes_skipped);
	jsonw_kv_i64(w, "error", g->errcode);
	jsonw_kv_string(w, "text", g->text ? g->text : "");
}

static void
jsonl_end(struct jsonw *w, const struct blks_end *end)
{
	jsonw_kv_u64(w, "tid", end->tid);
	for (int i = 0; i < BLKS_C_NR; i++)
		jsonw_kv_u64(w, counter_names[i], end->c[i]);
}

static void
jsonl_thread(struct jsonw *w, const struct blks_thread *t)
{
	jsonw_kv_u64(w, "tid", t->tid);
	jsonw_kv_u64(w, "pid", t->pid);
	jsonw_kv_string(w, "name", t->name ? t->name : "");
	jsonw_kv_u64(w, "trace_bytes", t->trace_bytes);
	jsonw_kv_bool(w, "wrapped", (t->flags & BLKS_THREAD_WRAPPED) != 0);
}

void
blks_jsonl_record(struct jsonw *w, const struct blks_record *r, uint32_t tid)
{
	jsonw_object_begin(w);
	jsonw_kv_string(w, "type", blks_type_name(r->type));
	if (r->type == BLKS_BLOCK || r->type == BLKS_EVENT ||
	    r->type == BLKS_GAP)
		jsonw_kv_u64(w, "tid", tid);
	switch (r->type) {
	case BLKS_MAP:
		jsonl_map(w, &r->u.map);
		break;
	case BLKS_THREAD:
		jsonl_thread(w, &r->u.thread);
		break;
	case BLKS_BLOCK:
		jsonl_block(w, &r->u.block);
		break;
	case BLKS_EVENT:
		jsonl_event(w, &r->u.event);
		break;
	case BLKS_GAP:
		jsonl_gap(w, &r->u.gap);
		break;
	case BLKS_END:
		jsonl_end(w, &r->u.end);
		break;
	case BLKS_EOS:
		jsonw_kv_u64(w, "threads", r->u.eos.nr_threads);
		break;
	}
	jsonw_object_end(w);
	jsonw_newline(w);
}
