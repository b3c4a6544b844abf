/* Tests for lib/blkstream: round trips, framing errors, JSON Lines. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt/blkstream.h"
#include "base/error.h"
#include "base/jsonw.h"
#include "tap.h"

static const struct blks_header test_header = {
	.flags = BLKS_HDR_TIMED,
	.decoder = BLKS_DECODER_NATIVE,
	.time_shift = 31,
	.time_mult = 581029125,
	.time_zero = 18444502336406842448ULL,
	.time_base_ns = 1000000,
	.snapshot = "/tmp/snap/20261129T084500Z-0123abcd",
};

/* One of each record type, with values that stress the encoding. */
static struct blks_record recs[16];
static size_t nr_recs;

static void
add(const struct blks_record *r)
{
	recs[nr_recs++] = *r;
}

static void
build_records(void)
{
	struct blks_record r;

	memset(&r, 0, sizeof(r));
	r.type = BLKS_MAP;
	r.u.map = (struct blks_map){ .pid = 4242, .flags = BLKS_MAP_LIVE,
	    .start = 0x401000, .size = 0x78000, .pgoff = 0x1000,
	    .build_id_size = 20, .name = "/usr/bin/hello",
	    .image = "images/.build-id/ab/cdef/elf" };
	for (int i = 0; i < 20; i++)
		r.u.map.build_id[i] = (uint8_t)(0xab + i);
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_THREAD;
	r.u.thread = (struct blks_thread){ .tid = 4243, .pid = 4242,
	    .flags = BLKS_THREAD_WRAPPED, .trace_bytes = 1 << 20,
	    .name = "hello \"world\"" };
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_GAP;
	r.u.gap = (struct blks_gap){ .cause = BLKS_GAP_RING_START,
	    .ip = 0, .time = 5, .offset = 0, .bytes_skipped = 123,
	    .errcode = 0, .text = "" };
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	r.u.block = (struct blks_block){ .ip = 0x401625, .end_ip = 0x40163a,
	    .ninsn = 7, .iclass = 5, .flags = 0, .mode = 3, .time = 100 };
	add(&r);
	/* backwards in ip and time, kernel addresses, all flags */
	r.u.block = (struct blks_block){ .ip = 0xffffffff81000000ULL,
	    .end_ip = 0xffffffff80ffff00ULL, .ninsn = UINT32_MAX,
	    .iclass = 9, .flags = 3, .mode = 1, .time = 50 };
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_EVENT;
	r.u.event = (struct blks_event){ .kind = BLKS_EV_DISABLED,
	    .flags = BLKS_EVF_ASYNC, .ip = 0x401700, .at = 0x401650,
	    .arg = BLKS_DIS_ASYNC, .time = UINT64_MAX };
	add(&r);
	r.u.event = (struct blks_event){ .kind = BLKS_EV_PAGING,
	    .flags = BLKS_EVF_IP_SUPPRESSED | BLKS_EVF_NON_ROOT,
	    .arg = 0x1234000, .time = 0 };
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_GAP;
	r.u.gap = (struct blks_gap){ .cause = BLKS_GAP_DECODE_ERROR,
	    .ip = 0x401655, .time = 7, .offset = 4096, .bytes_skipped = 77,
	    .errcode = -7, .text = "bad packet" };
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_END;
	r.u.end.tid = 4243;
	for (int i = 0; i < BLKS_C_NR; i++)
		r.u.end.c[i] = (uint64_t)i * 1000003 + 1;
	add(&r);
	memset(&r, 0, sizeof(r));
	r.type = BLKS_EOS;
	r.u.eos.nr_threads = 1;
	add(&r);
}

/* Writes the header and all records; returns the malloc'd bytes. */
static char *
write_stream(size_t *len)
{
	struct blks_writer *w;
	struct error e;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int rc = blks_writer_open_file(&w, f, &test_header, &e);

	for (size_t i = 0; rc == 0 && i < nr_recs; i++)
		rc = blks_write(w, &recs[i], &e);
	if (rc == 0)
		rc = blks_writer_close(w, &e);
	fclose(f);
	if (rc != 0)
		DIAG("write failed: %s", e.msg);
	return buf;
}

static void
check_map(const struct blks_map *a, const struct blks_map *b)
{
	IS_U64(a->pid, b->pid, "map pid");
	IS_U64(a->flags, b->flags, "map flags");
	IS_U64(a->start, b->start, "map start");
	IS_U64(a->size, b->size, "map size");
	IS_U64(a->pgoff, b->pgoff, "map pgoff");
	IS_INT(a->build_id_size, b->build_id_size, "map build-id size");
	IS_MEM(a->build_id, b->build_id, b->build_id_size, "map build-id");
	IS_STR(a->name, b->name, "map name");
	IS_STR(a->image, b->image, "map image");
}

static void
check_thread(const struct blks_thread *a, const struct blks_thread *b)
{
	IS_U64(a->tid, b->tid, "thread tid");
	IS_U64(a->pid, b->pid, "thread pid");
	IS_U64(a->flags, b->flags, "thread flags");
	IS_U64(a->trace_bytes, b->trace_bytes, "thread trace bytes");
	IS_STR(a->name, b->name, "thread name");
}

static void
check_block(const struct blks_block *a, const struct blks_block *b)
{
	IS_U64(a->ip, b->ip, "block ip");
	IS_U64(a->end_ip, b->end_ip, "block end ip");
	IS_U64(a->ninsn, b->ninsn, "block ninsn");
	IS_INT(a->iclass, b->iclass, "block class");
	IS_INT(a->flags, b->flags, "block flags");
	IS_INT(a->mode, b->mode, "block mode");
	IS_U64(a->time, b->time, "block time");
}

static void
check_event(const struct blks_event *a, const struct blks_event *b)
{
	IS_INT(a->kind, b->kind, "event kind");
	IS_INT(a->flags, b->flags, "event flags");
	IS_U64(a->ip, b->ip, "event ip");
	IS_U64(a->at, b->at, "event at");
	IS_U64(a->arg, b->arg, "event arg");
	IS_U64(a->time, b->time, "event time");
}

static void
check_gap(const struct blks_gap *a, const struct blks_gap *b)
{
	IS_INT(a->cause, b->cause, "gap cause");
	IS_U64(a->ip, b->ip, "gap ip");
	IS_U64(a->time, b->time, "gap time");
	IS_U64(a->offset, b->offset, "gap offset");
	IS_U64(a->bytes_skipped, b->bytes_skipped, "gap bytes skipped");
	IS_INT(a->errcode, b->errcode, "gap errcode");
	IS_STR(a->text, b->text, "gap text");
}

static void
check_record(const struct blks_record *a, const struct blks_record *b)
{
	IS_INT(a->type, b->type, "record type %s", blks_type_name(b->type));
	switch (b->type) {
	case BLKS_MAP:
		check_map(&a->u.map, &b->u.map);
		break;
	case BLKS_THREAD:
		check_thread(&a->u.thread, &b->u.thread);
		break;
	case BLKS_BLOCK:
		check_block(&a->u.block, &b->u.block);
		break;
	case BLKS_EVENT:
		check_event(&a->u.event, &b->u.event);
		break;
	case BLKS_GAP:
		check_gap(&a->u.gap, &b->u.gap);
		break;
	case BLKS_END:
		IS_U64(a->u.end.tid, b->u.end.tid, "end tid");
		IS_MEM(a->u.end.c, b->u.end.c, sizeof(b->u.end.c),
		    "end counters");
		break;
	case BLKS_EOS:
		IS_U64(a->u.eos.nr_threads, b->u.eos.nr_threads,
		    "eos threads");
		break;
	}
}

static void
check_header(const struct blks_header *h)
{
	IS_INT(h->version, BLKS_VERSION, "header version");
	IS_U64(h->flags, test_header.flags, "header flags");
	IS_U64(h->decoder, test_header.decoder, "header decoder");
	IS_U64(h->time_shift, 31, "header time_shift");
	IS_U64(h->time_mult, 581029125, "header time_mult");
	IS_U64(h->time_zero, 18444502336406842448ULL, "header time_zero");
	IS_U64(h->time_base_ns, 1000000, "header time_base_ns");
	IS_STR(h->snapshot, test_header.snapshot, "header snapshot");
}

/* Reads every record back and compares; mode 0 memory, 1 FILE. */
static void
round_trip(const char *buf, size_t len, int use_file)
{
	struct blks_reader *r;
	struct blks_record rec;
	struct error e;
	FILE *f = NULL;
	int rc;

	DIAG("round trip through %s", use_file ? "a FILE" : "memory");
	if (use_file) {
		f = fmemopen((void *)buf, len, "r");
		rc = blks_reader_open(&r, f, "mem", &e);
	} else {
		rc = blks_reader_open_mem(&r, buf, len, "mem", &e);
	}
	IS_INT(rc, 0, "reader opens");
	if (rc != 0) {
		DIAG("%s", e.msg);
		return;
	}
	check_header(blks_reader_header(r));
	for (size_t i = 0; i < nr_recs; i++) {
		rc = blks_read(r, &rec, &e);
		IS_INT(rc, i + 1 < nr_recs ? 1 : 0, "record %zu read", i);
		if (rc < 0) {
			DIAG("%s", e.msg);
			break;
		}
		check_record(&rec, &recs[i]);
	}
	IS_INT(blks_read(r, &rec, &e), 0, "after EOS, reads return 0");
	IS_U64(blks_reader_offset(r), len, "reader consumed every byte");
	blks_reader_free(r);
	if (f != NULL)
		fclose(f);
}

/* Reads everything, returns the final rc and the message. */
static int
read_all(const void *buf, size_t len, struct error *e)
{
	struct blks_reader *r;
	struct blks_record rec;
	int rc = blks_reader_open_mem(&r, buf, len, "s", e);

	if (rc < 0)
		return rc;
	while ((rc = blks_read(r, &rec, e)) > 0)
		;
	blks_reader_free(r);
	return rc;
}

/* Every proper prefix of the stream must fail cleanly as truncated. */
static void
check_prefixes(const char *buf, size_t len)
{
	size_t bad = 0, first_bad = 0;

	for (size_t n = 0; n < len; n++) {
		struct error e;
		int rc = read_all(buf, n, &e);

		/* before the magic is complete, "truncated" is all we know */
		if (rc != -ERR_TRUNCATED) {
			if (bad++ == 0)
				first_bad = n;
		}
	}
	IS_U64(bad, 0, "all %zu prefixes end in ERR_TRUNCATED (first bad: %zu)",
	    len, first_bad);
}

static void
check_errors(const char *good, size_t len)
{
	char *b = malloc(len + 64);
	size_t hlen = BLKS_HEADER_FIXED + strlen(test_header.snapshot);
	struct error e;

	memcpy(b, good, len);
	b[1] = 'X';
	IS_INT(read_all(b, len, &e), -ERR_FORMAT, "bad magic refused");
	IS_STR(e.msg, "s: not a block stream (bad magic at byte 0)",
	    "bad magic message");
	memcpy(b, good, len);
	b[8] = 2;
	IS_INT(read_all(b, len, &e), -ERR_UNSUPPORTED, "version 2 refused");
	IS_STR(e.msg, "s: block stream version 2 (this reader knows 1) at byte 8",
	    "version message");
	/* a MAP record announcing a payload too large */
	memcpy(b, good, len);
	b[hlen + 1] = (char)0xff;
	b[hlen + 2] = (char)0xff;
	b[hlen + 3] = (char)0x7f;
	IS_INT(read_all(b, len, &e), -ERR_FORMAT, "huge length refused");
	DIAG("%s", e.msg);
	OK(strstr(e.msg, "record length 2097151 too large at byte 91") != NULL,
	    "huge length message names the offset");
	/* bytes after EOS */
	memcpy(b, good, len);
	b[len] = 0;
	IS_INT(read_all(b, len + 1, &e), -ERR_FORMAT, "trailing byte refused");
	IS_STR(e.msg, "s: bytes after the end record at byte 325",
	    "trailing byte message");
	/* a BLOCK before any THREAD: the record right after the header */
	memcpy(b, good, hlen);
	b[hlen] = BLKS_BLOCK;
	b[hlen + 1] = 5;
	memset(b + hlen + 2, 0, 5);
	IS_INT(read_all(b, hlen + 7, &e), -ERR_FORMAT, "block outside thread");
	IS_STR(e.msg, "s: block record outside a thread at byte 91",
	    "block outside thread message");
	/* a THREAD whose payload is one byte short for its name */
	memcpy(b, good, hlen);
	memcpy(b + hlen, "\x02\x05\x01\x01\x00\x00\x05", 7);
	IS_INT(read_all(b, hlen + 7, &e), -ERR_FORMAT, "short string");
	IS_STR(e.msg, "s: malformed thread record at byte 91",
	    "short string message");
	/* unknown record types are skipped */
	memcpy(b, good, hlen);
	memcpy(b + hlen, "\x63\x02\xaa\xbb\x07\x01\x00", 7);
	{
		struct blks_reader *r;
		struct blks_record rec;

		IS_INT(blks_reader_open_mem(&r, b, hlen + 7, "s", &e), 0,
		    "open");
		IS_INT(blks_read(r, &rec, &e), 0, "unknown type skipped, EOS");
		IS_U64(blks_reader_unknown(r), 1, "unknown counted");
		blks_reader_free(r);
	}
	free(b);
}

static void
check_writer_rules(void)
{
	struct blks_writer *w;
	struct blks_record r;
	struct error e;
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	IS_INT(blks_writer_open_file(&w, f, &test_header, &e), 0, "open");
	memset(&r, 0, sizeof(r));
	r.type = BLKS_BLOCK;
	IS_INT(blks_write(w, &r, &e), -ERR_INVALID, "block outside thread");
	IS_STR(e.msg, "block record outside a thread", "message");
	IS_INT(blks_write(w, &r, &e), -ERR_INVALID, "writer stays failed");
	IS_INT(blks_writer_close(w, &e), -ERR_INVALID, "close reports it");
	fclose(f);
	free(buf);
}

static char *
jsonl_of(const struct blks_record *r)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	struct jsonw w;

	jsonw_init(&w, f);
	blks_jsonl_record(&w, r, 4243);
	STEP(jsonw_finish(&w));
	fclose(f);
	return buf;
}

static void
check_jsonl(void)
{
	const char *want[] = {
	"{\"type\":\"map\",\"pid\":4242,\"start\":\"0x401000\",\"end\":\"0x479000\","
	    "\"pgoff\":\"0x1000\",\"name\":\"/usr/bin/hello\","
	    "\"image\":\"images/.build-id/ab/cdef/elf\",\"build_id\":"
	    "\"abacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbe\",\"missing\":false,"
	    "\"live\":true}\n",
	"{\"type\":\"thread\",\"tid\":4243,\"pid\":4242,\"name\":"
	    "\"hello \\\"world\\\"\",\"trace_bytes\":1048576,\"wrapped\":true}\n",
	"{\"type\":\"gap\",\"tid\":4243,\"cause\":\"ring_start\",\"ip\":\"0x0\","
	    "\"time\":5,\"offset\":0,\"bytes_skipped\":123,\"error\":0,"
	    "\"text\":\"\"}\n",
	"{\"type\":\"block\",\"tid\":4243,\"ip\":\"0x401625\",\"end_ip\":"
	    "\"0x40163a\",\"ninsn\":7,\"class\":\"cond_jump\",\"mode\":\"64\","
	    "\"time\":100}\n",
	"{\"type\":\"block\",\"tid\":4243,\"ip\":\"0xffffffff81000000\","
	    "\"end_ip\":\"0xffffffff80ffff00\",\"ninsn\":4294967295,\"class\":"
	    "\"ptwrite\",\"mode\":\"16\",\"time\":50,\"speculative\":true,"
	    "\"truncated\":true}\n",
	"{\"type\":\"event\",\"tid\":4243,\"kind\":\"disabled\",\"ip\":"
	    "\"0x401700\",\"at\":\"0x401650\",\"reason\":\"async\",\"async\":true,"
	    "\"time\":18446744073709551615}\n",
	"{\"type\":\"event\",\"tid\":4243,\"kind\":\"paging\",\"ip_suppressed\":"
	    "true,\"arg\":\"0x1234000\",\"non_root\":true,\"time\":0}\n",
	"{\"type\":\"gap\",\"tid\":4243,\"cause\":\"decode_error\",\"ip\":"
	    "\"0x401655\",\"time\":7,\"offset\":4096,\"bytes_skipped\":77,"
	    "\"error\":-7,\"text\":\"bad packet\"}\n",
	"{\"type\":\"end\",\"tid\":4243,\"blocks\":1,\"insns\":1000004,"
	    "\"events\":2000007,\"gaps\":3000010,\"decode_errors\":4000013,"
	    "\"unknown_image\":5000016,\"overflows\":6000019,\"trace_bytes\":"
	    "7000022,\"bytes_skipped\":8000025,\"psbs\":9000028,"
	    "\"fallbacks\":10000031}\n",
	"{\"type\":\"eos\",\"threads\":1}\n",
	};

	for (size_t i = 0; i < nr_recs; i++) {
		char *got = jsonl_of(&recs[i]);

		IS_STR(got, want[i], "jsonl of %s",
		    blks_type_name(recs[i].type));
		free(got);
	}
}

static void
check_names(void)
{
	IS_STR(blks_type_name(0), "unknown", "type 0");
	IS_STR(blks_type_name(99), "unknown", "type 99");
	IS_STR(blks_event_name(BLKS_EV_ASYNC_BRANCH), "async_branch",
	    "event name");
	IS_STR(blks_gap_cause_name(BLKS_GAP_UNKNOWN_IMAGE), "unknown_image",
	    "gap name");
	IS_STR(blks_counter_name(BLKS_C_BYTES_SKIPPED), "bytes_skipped",
	    "counter name");
	IS_STR(blks_decoder_name(BLKS_DECODER_PERF), "perf", "decoder name");
}

/*
 * Blocks of every shape the fast paths meet: deltas of one, two and more
 * bytes (both signs), times that go back, ninsn and class bits at their
 * limits.  Deterministic: a fixed linear congruential sequence.
 */
#define NR_SHAPES 3000

static void
make_blocks(struct blks_block *b, size_t n)
{
	static const uint64_t step[] = { 3, 60, 70, 8000, 9000, 1ULL << 20,
	    1ULL << 40, 0 };
	uint64_t x = 12345, ip = 0x400000, t = 1000;

	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		ip += (x >> 60 & 1 ? -1 : 1) * step[x >> 61 & 7];
		t += (x >> 59 & 1) ? (x >> 50 & 0xff) - 100 : 0;
		memset(&b[i], 0, sizeof(b[i]));
		b[i].ip = ip;
		b[i].end_ip = ip + (x >> 20 & 3 ? x >> 8 & 0x3f : x >> 8 & 0xfff);
		b[i].ninsn = (x >> 30 & 7) == 0 ? (uint32_t)(x >> 32) :
		    (uint32_t)(x >> 40 & 0x7f);
		b[i].iclass = x >> 12 & 0xf;
		b[i].flags = x >> 16 & 3;
		b[i].mode = x >> 18 & 3;
		b[i].time = t;
		ip = b[i].end_ip;
	}
}

/* Encoded runs of 8 KiB and more go to the fd without a copy. */
#define ENCODED_DIRECT (8 * 1024)

static size_t longest_encoded;

/*
 * Encodes the k blocks at b the way a decoder worker does (every other
 * one packed first with blks_block_rest) against the delta state of the
 * block before them, and hands the bytes to blks_write_encoded.
 */
static int
write_encoded(struct blks_writer *w, const struct blks_block *b, size_t k,
    const struct blks_block *prev, struct error *e)
{
	static uint8_t buf[2000 * BLKS_BLOCK_MAX];
	uint64_t ip = prev ? prev->end_ip : 0, t = prev ? prev->time : 0;
	uint8_t *p = buf;

	for (size_t i = 0; i < k; i++) {
		uint64_t cls = (uint64_t)blks_class_byte(b[i].iclass,
		    b[i].flags, b[i].mode);
		uint32_t rest = blks_block_rest(b[i].ip, b[i].end_ip,
		    b[i].ninsn, cls);

		if (i % 2 && rest != 0)
			p = blks_put_block_rest(p, b[i].ip, rest, b[i].time, ip,
			    t);
		else
			p = blks_put_block(p, b[i].ip, b[i].end_ip, b[i].ninsn,
			    cls, b[i].time, ip, t);
		ip = b[i].end_ip;
		t = b[i].time;
	}
	if ((size_t)(p - buf) > longest_encoded)
		longest_encoded = (size_t)(p - buf);
	return blks_write_encoded(w, buf, (size_t)(p - buf), ip, t, e);
}

/*
 * Writes blocks one record at a time (runs 0), as runs (1), or encoded
 * outside the writer in runs (2).
 */
static char *
write_blocks(const struct blks_block *b, size_t n, int runs, size_t *len)
{
	struct blks_record r = { .type = BLKS_THREAD };
	struct blks_writer *w;
	struct error e;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int rc;

	r.u.thread = (struct blks_thread){ .tid = 7, .pid = 7, .name = "" };
	rc = blks_writer_open_file(&w, f, &test_header, &e);
	if (rc == 0)
		rc = blks_write(w, &r, &e);
	for (size_t i = 0, k; rc == 0 && i < n; i += k) {
		struct blks_record one = { .type = BLKS_BLOCK };

		k = runs == 2 ? 1 + i * 7 % 2000 : runs ? 1 + i % 700 : 1;
		k = k < n - i ? k : n - i;
		if (runs == 2) {
			rc = write_encoded(w, &b[i], k, i ? &b[i - 1] : NULL,
			    &e);
			continue;
		}
		if (runs) {
			rc = blks_write_blocks(w, &b[i], k, &e);
			continue;
		}
		one.u.block = b[i];
		rc = blks_write(w, &one, &e);
	}
	memset(&r, 0, sizeof(r));
	r.type = BLKS_END;
	r.u.end.tid = 7;
	if (rc == 0)
		rc = blks_write(w, &r, &e);
	r.type = BLKS_EOS;
	r.u.eos.nr_threads = 1;
	if (rc == 0)
		rc = blks_write(w, &r, &e);
	if (blks_writer_close(w, &e) < 0 || rc < 0)
		DIAG("write failed: %s", e.msg);
	fclose(f);
	return buf;
}

/* A pipe's writing end fed from a thread, in pieces of odd sizes. */
struct pipe_feed {
	int fd;
	const char *buf;
	size_t len;
	pthread_t thread;
};

static void *
pipe_feed_thread(void *arg)
{
	struct pipe_feed *pf = arg;
	size_t off = 0, piece = 1;
	ssize_t k;

	while (off < pf->len) {
		piece = piece * 7 % 300007 + 1;
		k = write(pf->fd, pf->buf + off, piece < pf->len - off ? piece :
		    pf->len - off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	close(pf->fd);
	return NULL;
}

/*
 * Reads them back through a FILE (fd_mode 0) or a pipe's fd
 * (blks_reader_open_fd), with blks_read_blocks when batch.
 */
static void
read_blocks_from(const char *buf, size_t len, const struct blks_block *want,
    size_t n, int batch, int fd_mode)
{
	struct blks_block got[64];
	struct blks_reader *r;
	struct blks_record rec;
	struct error e;
	struct pipe_feed pf = { -1, buf, len, 0 };
	int fds[2] = { -1, -1 };
	FILE *f = NULL;
	size_t k = 0, bad = 0, fast = 0, m;
	int rc;

	if (fd_mode) {
		if (pipe(fds) < 0) {
			OK(0, "a pipe");
			return;
		}
		pf.fd = fds[1];
		pthread_create(&pf.thread, NULL, pipe_feed_thread, &pf);
		rc = blks_reader_open_fd(&r, fds[0], "blocks", &e);
	} else {
		f = fmemopen((void *)buf, len, "rb");
		rc = blks_reader_open(&r, f, "blocks", &e);
	}
	if (rc < 0) {
		OK(0, "open the block stream");
		if (fd_mode) {
			close(fds[0]);
			pthread_join(pf.thread, NULL);
		}
		return;
	}
	for (;;) {
		m = batch ? blks_read_blocks(r, got, 1 + k % 64) : 0;
		for (size_t i = 0; i < m; i++, k++)
			bad += k >= n || memcmp(&got[i], &want[k], 24) != 0 ||
			    got[i].time != want[k].time;
		fast += m;
		if (m > 0)
			continue;
		if ((rc = blks_read(r, &rec, &e)) <= 0)
			break;
		if (rec.type != BLKS_BLOCK)
			continue;
		bad += k >= n || memcmp(&rec.u.block, &want[k], 24) != 0 ||
		    rec.u.block.time != want[k].time;
		k++;
	}
	IS_INT(rc, 0, "read to the end record");
	IS_U64(k, n, "every block read back");
	IS_U64(bad, 0, "each equal to the one written");
	if (batch) {
		DIAG("%zu of %zu blocks by blks_read_blocks", fast, n);
		OK(fast > n / 4 && fast < n, "many, not all, by blks_read_blocks");
	}
	blks_reader_free(r);
	if (f != NULL)
		fclose(f);
	if (fd_mode) {
		/* First: a writer left with bytes to write gets EPIPE. */
		close(fds[0]);
		pthread_join(pf.thread, NULL);
	}
}

static void
read_blocks(const char *buf, size_t len, const struct blks_block *want,
    size_t n, int batch)
{
	read_blocks_from(buf, len, want, n, batch, 0);
}

/*
 * The reader of an fd: a stream of some megabytes through a pipe, its
 * records cut by the reader's chunks and the writer's pieces anywhere;
 * a stream cut short; a read that fails.
 */
static void
check_fd_reader(void)
{
	size_t n = 400000, len;
	struct blks_block *b = calloc(n, sizeof(*b));
	struct blks_reader *r;
	struct error e;
	char *a;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	make_blocks(b, n);
	a = write_blocks(b, n, 1, &len);
	DIAG("a stream of %zu bytes through a pipe", len);
	OK(len > 3 * 1024 * 1024, "longer than three chunks");
	read_blocks_from(a, len, b, n, 0, 1);
	read_blocks_from(a, len, b, n, 1, 1);
	free(a);
	free(b);
	if ((fd = open("/", O_RDONLY | O_DIRECTORY)) >= 0) {
		IS_INT(blks_reader_open_fd(&r, fd, "dir", &e), -ERR_IO,
		    "an fd that cannot be read: -ERR_IO");
		IS_STR(e.msg, "dir: read: Is a directory", "saying why");
		close(fd);
	}
}

static void
check_block_paths(void)
{
	static struct blks_block b[NR_SHAPES];
	struct blks_writer *w;
	struct blks_block bad;
	struct error e;
	size_t la, lb;
	char *a, *c;
	FILE *f;

	make_blocks(b, NR_SHAPES);
	a = write_blocks(b, NR_SHAPES, 0, &la);
	c = write_blocks(b, NR_SHAPES, 1, &lb);
	OK(a != NULL && c != NULL && la == lb && memcmp(a, c, la) == 0,
	    "blks_write_blocks writes the bytes of blks_write");
	free(c);
	c = write_blocks(b, NR_SHAPES, 2, &lb);
	OK(a != NULL && c != NULL && la == lb && memcmp(a, c, la) == 0,
	    "blks_put_block(_rest) and blks_write_encoded: the same bytes");
	DIAG("longest encoded run: %zu bytes", longest_encoded);
	OK(longest_encoded >= ENCODED_DIRECT,
	    "runs long enough to be written without a copy");
	read_blocks(a, la, b, NR_SHAPES, 0);
	read_blocks(a, la, b, NR_SHAPES, 1);
	free(a);
	free(c);

	f = fopen("/dev/null", "wb");
	STEP(blks_writer_open_file(&w, f, &test_header, &e));
	IS_INT(blks_write_blocks(w, b, 1, &e), -ERR_INVALID,
	    "blocks outside a thread");
	IS_STR(e.msg, "block record outside a thread", "says so");
	IS_INT(blks_writer_close(w, &e), -ERR_INVALID,
	    "closing the failed writer says it failed");
	STEP(blks_writer_open_file(&w, f, &test_header, &e));
	{
		struct blks_record t = { .type = BLKS_THREAD };

		t.u.thread.name = "";
		STEP(blks_write(w, &t, &e));
	}
	bad = b[1];
	bad.iclass = 2;
	bad.flags = 1;
	bad.mode = 4;
	IS_INT(blks_write_blocks(w, (struct blks_block[]){ b[0], bad }, 2,
	    &e), -ERR_INVALID, "a block whose mode does not fit");
	IS_STR(e.msg, "block class 2, flags 1, mode 4 out of range",
	    "says which");
	IS_INT(blks_write_blocks(w, b, 1, &e), -ERR_INVALID,
	    "the writer stays failed");
	IS_INT(blks_writer_close(w, &e), -ERR_INVALID,
	    "and so does its close");
	fclose(f);
}

/* t_blkstream FILE: writes the test stream to FILE (fuzz seed corpus). */
int
main(int argc, char *argv[])
{
	char *buf;
	size_t len = 0;

	build_records();
	buf = write_stream(&len);
	if (argc > 1) {
		FILE *f = fopen(argv[1], "wb");
		int ok = f != NULL && fwrite(buf, 1, len, f) == len;

		ok = f != NULL && fclose(f) == 0 && ok;
		free(buf);
		return !ok;
	}
	DIAG("stream of %zu records is %zu bytes", nr_recs, len);
	IS_U64(len, 325, "stream size (compact encoding)");
	round_trip(buf, len, 0);
	round_trip(buf, len, 1);
	check_prefixes(buf, len);
	check_errors(buf, len);
	check_writer_rules();
	check_jsonl();
	check_names();
	check_block_paths();
	check_fd_reader();
	free(buf);
	return tap_done();
}
