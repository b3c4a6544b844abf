/*
 * blkstream: the block stream's writer (see blkstream.h and
 * man/ptkit-blocks.5): the buffered writer over an fd or a FILE, the
 * encoding of every record, the checks of the group order a writer must
 * keep, and the hot paths that write runs of blocks and runs already
 * encoded.  The reader is blkstream_read.c, the names and the JSON Lines
 * rendering blkstream_jsonl.c.
 */
#include "fmt/blkstream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/blkstream_int.h"
#include "base/fdio.h"

#define WBUF_SIZE (256 * 1024)
/* Encoded runs this long are written without a copy through the buffer. */
#define ENCODED_DIRECT (8 * 1024)
#define BLOCK_MAX BLKS_BLOCK_MAX

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
	int err;

	if (w->f != NULL) {
		if (len > 0 && fwrite(p, 1, len, w->f) != len)
			return error_set_errno(e, errno, "block stream write");
	} else if (fdio_write_all(w->fd, p, len, &err) != len) {
		return error_set_errno(e, err, "block stream write");
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
	if ((m->symbols == NULL || m->symbols[0] == '\0') && m->exec == 0)
		return 0;
	if (p->n + 2 * VARINT_MAX + (m->symbols ? strlen(m->symbols) : 0) >
	    BLKS_PAYLOAD_MAX)
		return error_set(e, ERR_INVALID, "MAP record of %s: paths "
		    "too long together", m->name);
	if ((rc = pb_string(p, m->symbols ? m->symbols : "", BLKS_PATH_MAX,
	    "map symbols path", e)) < 0 || m->exec == 0)
		return rc;
	pb_varint(p, m->exec);
	return 0;
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
